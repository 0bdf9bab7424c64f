// SPDX-License-Identifier: Apache-2.0
//
// Nested SVM: L1's virtual SVM state (EFER.SVME, GIF), the SVM instructions
// Slat emulates for L1 (VMLOAD, VMSAVE, STGI, CLGI, INVLPGA; VMRUN goes on
// in nested_run.c) with their architectural checks, and the #VMEXIT that
// hands an L2 exit to L1. AMD APM vol. 2, chapter 15 and appendix B.
//
// L1's GIF: STGI and CLGI always exit. While L1's GIF is clear, Slat injects
// no NMI into it and sets V_INTR_MASKING in L1's VMCB: physical interrupts
// are then masked by the host's IF at VMRUN, which is clear in Slat, so they
// stay pending until L1's STGI, as the architecture has it (KVM runs its
// #VMEXIT path with interrupts enabled and GIF clear).
#include "arch/x86/cpu.h"
#include "arch/x86/svm/nested.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/region.h"

struct svm_nested_stats svm_nested_stats;
static bool nested_on;

bool svm_nested_init(struct region *r, const struct slat_plan *plan)
{
	for (unsigned i = 0; i < X86_MAX_CPUS; i++) {
		struct svm_nested_cpu *n = &svm_host.cpus[i].nested;

		n->vmcb02_pa = region_alloc(r, 1, 4096);
		n->msrpm_pa = region_alloc(r, 2, 4096);
		n->iopm_pa = region_alloc(r, 3, 4096);
		n->gif = true;
		if (!n->vmcb02_pa || !n->msrpm_pa || !n->iopm_pa) {
			log_warn("svm: no room in Slat's region for nested SVM\n");
			return false;
		}
	}
	if (!svm_nested_mmu_init(plan))
		return false;
	nested_on = true;
	x86_nested_svm = true;
	return true;
}

// ---- L1's EFER.SVME and GIF -------------------------------------------------------
uint64_t svm_nested_efer_view(struct svm_cpu *c, uint64_t efer)
{
	return (efer & ~EFER_SVME) | (c->nested.svme ? EFER_SVME : 0);
}

static void set_gif(struct svm_cpu *c, bool on)
{
	uint64_t *vintr = vmcb64((void *)(uintptr_t)c->vmcb_pa, VMCB_VINTR);

	c->nested.gif = on;
	*vintr = on ? *vintr & ~VMCB_VINTR_MASKING : *vintr | VMCB_VINTR_MASKING;
}

void svm_nested_efer_write(struct svm_cpu *c, uint64_t efer)
{
	bool svme = nested_on && (efer & EFER_SVME);

	if (c->nested.svme && !svme) { // SVM off: GIF set, no nested state kept
		set_gif(c, true);
		svm_nested_root_drop(c);
	}
	c->nested.svme = svme;
}

void svm_nested_reset(struct svm_cpu *c)
{
	c->nested.in_l2 = false; // the CPU's VMRUN enters L1's VMCB again
	c->run_vmcb_pa = c->vmcb_pa;
	c->run_sti = 0;
	svm_nested_root_drop(c);
	c->nested.svme = false;
	set_gif(c, true);
}

bool svm_nested_gif(const struct svm_cpu *c)
{
	return c->nested.gif;
}

// ---- VMLOAD / VMSAVE ------------------------------------------------------------------
// The state VMLOAD and VMSAVE move: FS, GS, TR, LDTR with their hidden parts,
// KernelGSBase, STAR, LSTAR, CSTAR, SFMASK, SYSENTER_CS/ESP/EIP.
void svm_nested_copy_hidden(void *dst, const void *src)
{
	static const unsigned segs[] = {VMCB_FS, VMCB_GS, VMCB_TR, VMCB_LDTR};
	static const unsigned msrs[] = {VMCB_KGSBASE,	   VMCB_STAR,	     VMCB_LSTAR,
					VMCB_CSTAR,	   VMCB_SFMASK,	     VMCB_SYSENTER_CS,
					VMCB_SYSENTER_ESP, VMCB_SYSENTER_EIP};

	for (unsigned i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		memcpy((uint8_t *)dst + segs[i], (const uint8_t *)src + segs[i], 16);
	for (unsigned i = 0; i < sizeof(msrs) / sizeof(msrs[0]); i++)
		*vmcb64(dst, msrs[i]) = *vmcb64((void *)src, msrs[i]);
}

// L1's hidden state lives in the CPU between exits (svm_cpu.vmload): saved
// into its VMCB first, changed there, loaded again before its next VMRUN.
static void vmload_emulate(struct svm_cpu *c, uint64_t pa)
{
	svm_vmcb_save_state(c);
	svm_nested_copy_hidden((void *)(uintptr_t)c->vmcb_pa, (const void *)(uintptr_t)pa);
	c->vmload = 1;
}

static void vmsave_emulate(struct svm_cpu *c, uint64_t pa)
{
	svm_nested_before_write(pa);
	svm_vmcb_save_state(c);
	svm_nested_copy_hidden((void *)(uintptr_t)pa, (const void *)(uintptr_t)c->vmcb_pa);
}

// ---- the instructions ---------------------------------------------------------------
// rAX as the instruction's address: 64 bits in long mode, else 32.
static uint64_t insn_rax(struct vcpu *v)
{
	uint64_t rax = v->arch.gpr[X86_RAX];

	return (v->arch.ops->read_efer(v) & EFER_LMA) ? rax : (uint32_t)rax;
}

bool svm_nested_insn(struct svm_cpu *c, uint64_t code)
{
	struct vcpu *v = c->vcpu;

	if (!nested_on || code == SVM_EXIT_SKINIT)
		return false; // the policy's #UD (SKINIT is not offered)
	// #UD without EFER.SVME or outside protected mode, then #GP at CPL > 0.
	if (!c->nested.svme || !(v->arch.ops->read_cr(v, 0) & CR0_PE)) {
		x86_inject_ud(v);
		return true;
	}
	if (x86_guest_cpl(v) > 0) {
		x86_inject_gp0(v);
		return true;
	}
	uint64_t pa = insn_rax(v);
	bool takes_page =
	    code == SVM_EXIT_VMRUN || code == SVM_EXIT_VMLOAD || code == SVM_EXIT_VMSAVE;
	if (takes_page && ((pa & 0xfff) || !svm_nested_l1_ram(pa, VMCB_SVM_PAGE))) {
		x86_inject_gp0(v); // not a page of L1's RAM
		return true;
	}
	if (!x86_skip_insn(v))
		return true; // #UD queued
	switch (code) {
	case SVM_EXIT_VMRUN:
		svm_nested_vmrun(c, pa);
		break;
	case SVM_EXIT_VMLOAD:
		vmload_emulate(c, pa);
		break;
	case SVM_EXIT_VMSAVE:
		vmsave_emulate(c, pa);
		break;
	case SVM_EXIT_STGI:
		set_gif(c, true);
		break;
	case SVM_EXIT_CLGI:
		set_gif(c, false);
		break;
	case SVM_EXIT_INVLPGA: // L2's TLB is flushed at every entry; one more is asked for
		c->nested.flush = true;
		break;
	default:
		break;
	}
	return true;
}

// ---- #VMEXIT to L1 ---------------------------------------------------------------
static const unsigned l2_segs[] = {VMCB_ES, VMCB_CS, VMCB_SS, VMCB_DS, VMCB_GDTR, VMCB_IDTR};
static const unsigned l2_regs[] = {VMCB_CR0, VMCB_CR2,	  VMCB_CR3, VMCB_CR4, VMCB_DR6,
				   VMCB_DR7, VMCB_RFLAGS, VMCB_RIP, VMCB_RSP, VMCB_RAX};

void svm_nested_vmexit(struct svm_cpu *c, uint64_t code, uint64_t info1, uint64_t info2,
		       uint64_t intinfo)
{
	void *v01 = (void *)(uintptr_t)c->vmcb_pa;
	void *v02 = (void *)(uintptr_t)c->nested.vmcb02_pa;
	void *v12 = (void *)(uintptr_t)c->nested.vmcb12_pa;
	struct vcpu *v = c->vcpu;

	// L2's state as the #VMEXIT saves it.
	for (unsigned i = 0; i < sizeof(l2_segs) / sizeof(l2_segs[0]); i++)
		memcpy((uint8_t *)v12 + l2_segs[i], (uint8_t *)v02 + l2_segs[i], 16);
	for (unsigned i = 0; i < sizeof(l2_regs) / sizeof(l2_regs[0]); i++)
		*vmcb64(v12, l2_regs[i]) = *vmcb64(v02, l2_regs[i]);
	*vmcb8(v12, VMCB_CPL) = *vmcb8(v02, VMCB_CPL);
	// SVME stays as L1 gave it (vmcb02 always has it: QEMU requires it).
	*vmcb64(v12, VMCB_EFER) =
	    (*vmcb64(v02, VMCB_EFER) & ~EFER_SVME) | (*vmcb64(v12, VMCB_EFER) & EFER_SVME);
	*vmcb64(v12, VMCB_RAX) = *vmcb64(v02, VMCB_RAX);
	// The exit, the interrupt shadow, V_TPR and V_IRQ (taken or not).
	*vmcb64(v12, VMCB_EXITCODE) = code;
	*vmcb64(v12, VMCB_EXITINFO1) = info1;
	*vmcb64(v12, VMCB_EXITINFO2) = info2;
	*vmcb64(v12, VMCB_EXITINTINFO) = intinfo;
	*vmcb64(v12, VMCB_INT_SHADOW) = *vmcb64(v02, VMCB_INT_SHADOW) & 1;
	uint64_t keep = 0x1ffull; // V_TPR (7:0), V_IRQ (8)
	*vmcb64(v12, VMCB_VINTR) =
	    (*vmcb64(v12, VMCB_VINTR) & ~keep) | (*vmcb64(v02, VMCB_VINTR) & keep);
	*vmcb64(v12, VMCB_EVENTINJ) = 0;
	*vmcb64(v12, VMCB_NRIP) = 0; // NRIPS is not offered

	// The CPU now holds L2's FS, GS, TR, ... (L1 saves them with VMSAVE).
	svm_nested_copy_hidden(v01, v02);
	c->vmload = 1;
	c->vmsaved = true;
	// L1 resumes after its VMRUN with its own RAX and RSP, L2's other GPRs
	// (VMRUN and #VMEXIT leave those alone), and GIF clear.
	v->arch.gpr[X86_RAX] = *vmcb64(v01, VMCB_RAX);
	v->arch.gpr[X86_RSP] = *vmcb64(v01, VMCB_RSP);
	set_gif(c, false);
	NESTED_COUNT(vmexits);
}

// ---- figures ----------------------------------------------------------------------
void svm_nested_summary(void)
{
	const struct svm_nested_stats *s = &svm_nested_stats;

	if (!nested_on)
		return;
	log_info("slat: nested SVM: %llu VMRUNs, %llu exits to L1 (%llu L2 exits), NPT02 faults "
		 "%llu fixed, %llu reflected; %llu L1 pages write-protected, %llu writes emulated, "
		 "%llu pages given back; %llu invalid VMCBs, %llu without shadow memory\n",
		 (unsigned long long)s->vmruns, (unsigned long long)s->vmexits,
		 (unsigned long long)s->l2_exits, (unsigned long long)s->npf_fixed,
		 (unsigned long long)s->npf_reflected, (unsigned long long)s->wp_pages,
		 (unsigned long long)s->emulated_writes, (unsigned long long)s->unprotects,
		 (unsigned long long)s->bad_vmcb12, (unsigned long long)s->nospc);
	svm_nested_mmu_summary();
}
