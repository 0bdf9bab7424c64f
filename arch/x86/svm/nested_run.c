// SPDX-License-Identifier: Apache-2.0
//
// Nested SVM: L1's VMRUN. vmcb12 is checked as the CPU checks a VMCB
// (VMEXIT_INVALID otherwise), vmcb02 is built from it and from Slat's own
// policy, and L2 runs in the CPU's one VMRUN loop and exit entry until one
// of its exits belongs to L1.
//
// vmcb02's intercepts are L1's plus Slat's: NMIs (Slat's kicks and the
// primary's own NMIs), shutdown, every SVM instruction, and port I/O and MSRs
// through permission maps that are L1's OR Slat's, so that L2 can reach
// nothing L1 itself could not (VM_HSAVE_PA, the power ports, ...). An exit
// only Slat asked for is Slat's to handle; every other one is reflected.
#include "arch/x86/cpu.h"
#include "arch/x86/hv.h"
#include "arch/x86/slat.h"
#include "arch/x86/svm/nested.h"
#include "core/log.h"
#include "core/mem.h"
#include "mm/shadow.h"

#define IOIO_SIZE_SHIFT	 4 // EXITINFO1 bits 6:4: 1, 2 or 4 bytes
#define MSRPM_BYTES	 8192
#define IOPM_BYTES	 12288
#define EVENTINJ_TYPE(e) (((e) >> 8) & 7)

// Intercept bits Slat always keeps in vmcb02.
#define NESTED_MISC1 (INT3_NMI | INT3_SMI | INT3_SHUTDOWN | INT3_IOIO | INT3_MSR)
#define NESTED_MISC2 (INT4_VMRUN | INT4_VMLOAD | INT4_VMSAVE | INT4_STGI | INT4_CLGI | INT4_SKINIT)

// ---- vmcb12 checks (APM vol. 2, 15.5.1) ----------------------------------------------
#define EFER_KNOWN                                                                                 \
	(EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE | EFER_SVME | EFER_LMSLE | EFER_FFXSR |         \
	 EFER_TCE | EFER_AUTOIBRS)
#define CR0_CD	     (1ull << 30)
#define CR0_NW	     (1ull << 29)
#define SEG_ATTR_L   (1u << 9)
#define SEG_ATTR_D   (1u << 10)
#define CR3_MBZ_LONG 0xfff0000000000000ull

static bool l1_map_ok(uint64_t pa, uint64_t bytes)
{
	for (uint64_t off = 0; off < bytes; off += 4096)
		if (!svm_nested_l1_ram(pa + off, 4096))
			return false;
	return !(pa & 0xfff);
}

// L2's state as VMRUN checks it, read from vmcb02 (the copy that runs):
// vmcb12 is L1's memory, which another of its CPUs may change after a check.
static bool vmcb02_state_ok(void *v02)
{
	uint64_t efer = *vmcb64(v02, VMCB_EFER), cr0 = *vmcb64(v02, VMCB_CR0);
	uint64_t cr4 = *vmcb64(v02, VMCB_CR4), cr3 = *vmcb64(v02, VMCB_CR3);
	uint16_t cs_attr = *vmcb16(v02, VMCB_CS + 2);
	uint64_t inj = *vmcb64(v02, VMCB_EVENTINJ);
	unsigned type = EVENTINJ_TYPE(inj);
	bool long_paging = (efer & EFER_LME) && (cr0 & CR0_PG);

	// Event types 1, 5, 6 and 7 are reserved; an exception cannot be vector 2.
	if ((inj & EVENTINJ_VALID) && (type == 1 || type >= 5 || (type == 3 && (inj & 0xff) == 2)))
		return false;
	if (efer & ~EFER_KNOWN)
		return false;
	if ((!(cr0 & CR0_CD) && (cr0 & CR0_NW)) || (cr0 >> 32) || (cr4 >> 32))
		return false;
	if ((*vmcb64(v02, VMCB_DR6) >> 32) || (*vmcb64(v02, VMCB_DR7) >> 32))
		return false;
	if (long_paging && (!(cr4 & CR4_PAE) || !(cr0 & CR0_PE) || (cr3 & CR3_MBZ_LONG)))
		return false;
	if (long_paging && (cs_attr & SEG_ATTR_L) && (cs_attr & SEG_ATTR_D))
		return false;
	return x86_pat_ok(*vmcb64(v02, VMCB_G_PAT)); // L1's own when L2 uses its NPT
}

static bool vmcb12_control_ok(struct svm_nested_cpu *n, void *v12)
{
	uint32_t misc1 = *vmcb32(v12, VMCB_INTERCEPT_MISC1);

	if (!(*vmcb32(v12, VMCB_INTERCEPT_MISC2) & INT4_VMRUN) || !*vmcb32(v12, VMCB_ASID))
		return false;
	// The maps' addresses are read once, checked, and kept (vmcb12 is L1's:
	// another of its CPUs may rewrite it at any time).
	n->msrpm12 = misc1 & INT3_MSR ? *vmcb64(v12, VMCB_MSRPM_PA) & ~0xfffull : 0;
	n->iopm12 = misc1 & INT3_IOIO ? *vmcb64(v12, VMCB_IOPM_PA) & ~0xfffull : 0;
	if ((n->msrpm12 && !l1_map_ok(n->msrpm12, MSRPM_BYTES)) ||
	    (n->iopm12 && !l1_map_ok(n->iopm12, IOPM_BYTES))) {
		n->msrpm12 = n->iopm12 = 0;
		return false;
	}
	return true;
}

static void vmexit_invalid(void *v12)
{
	*vmcb64(v12, VMCB_EXITCODE) = SVM_EXIT_ERR;
	*vmcb64(v12, VMCB_EXITINFO1) = 0;
	*vmcb64(v12, VMCB_EXITINFO2) = 0;
	NESTED_COUNT(bad_vmcb12);
}

// ---- vmcb02 ------------------------------------------------------------------------
// dst = L1's map (0: none) OR Slat's.
static void merge_map(uint64_t dst, uint64_t l1, const uint64_t slat, unsigned bytes)
{
	bool use_l1 = l1 != 0;
	uint64_t *d = (uint64_t *)(uintptr_t)dst;
	const uint64_t *a = (const uint64_t *)(uintptr_t)l1, *b = (const uint64_t *)(uintptr_t)slat;

	for (unsigned i = 0; i < bytes / 8; i++)
		d[i] = use_l1 ? a[i] | b[i] : b[i];
}

static const unsigned state_segs[] = {VMCB_ES, VMCB_CS, VMCB_SS, VMCB_DS, VMCB_GDTR, VMCB_IDTR};
static const unsigned state_regs[] = {VMCB_CR0, VMCB_CR2,    VMCB_CR3, VMCB_CR4, VMCB_DR6,
				      VMCB_DR7, VMCB_RFLAGS, VMCB_RIP, VMCB_RSP, VMCB_RAX};

static void build_vmcb02(struct svm_cpu *c, void *v12, bool np)
{
	void *v01 = (void *)(uintptr_t)c->vmcb_pa;
	void *v02 = (void *)(uintptr_t)c->nested.vmcb02_pa;
	uint32_t misc1 = *vmcb32(v12, VMCB_INTERCEPT_MISC1);

	memset(v02, 0, 4096);
	// Control: L1's intercepts and Slat's, the merged maps, L2's interrupt
	// state as L1 set it (no AVIC, no vGIF: not offered).
	*vmcb32(v02, VMCB_INTERCEPT_CR) = *vmcb32(v12, VMCB_INTERCEPT_CR);
	*vmcb32(v02, VMCB_INTERCEPT_DR) = *vmcb32(v12, VMCB_INTERCEPT_DR);
	*vmcb32(v02, VMCB_INTERCEPT_EXC) = *vmcb32(v12, VMCB_INTERCEPT_EXC);
	*vmcb32(v02, VMCB_INTERCEPT_MISC1) = misc1 | NESTED_MISC1;
	*vmcb32(v02, VMCB_INTERCEPT_MISC2) = *vmcb32(v12, VMCB_INTERCEPT_MISC2) | NESTED_MISC2;
	merge_map(c->nested.msrpm_pa, c->nested.msrpm12, svm_host.msrpm_pa, MSRPM_BYTES);
	merge_map(c->nested.iopm_pa, c->nested.iopm12, svm_host.iopm_pa, IOPM_BYTES);
	*vmcb64(v02, VMCB_MSRPM_PA) = c->nested.msrpm_pa;
	*vmcb64(v02, VMCB_IOPM_PA) = c->nested.iopm_pa;
	*vmcb64(v02, VMCB_TSC_OFFSET) =
	    *vmcb64(v01, VMCB_TSC_OFFSET) + *vmcb64(v12, VMCB_TSC_OFFSET);
	*vmcb32(v02, VMCB_ASID) = NESTED_ASID;
	// V_TPR, V_IRQ, V_INTR_PRIO, V_IGN_TPR, V_INTR_MASKING, V_INTR_VECTOR.
	*vmcb64(v02, VMCB_VINTR) = *vmcb64(v12, VMCB_VINTR) & 0x000000ff011f01ffull;
	*vmcb64(v02, VMCB_INT_SHADOW) = *vmcb64(v12, VMCB_INT_SHADOW) & 1;
	*vmcb64(v02, VMCB_NP_ENABLE) = 1; // NPT02, or NPT01 when L1 uses no nested paging
	*vmcb64(v02, VMCB_EVENTINJ) = *vmcb64(v12, VMCB_EVENTINJ);
	// State: what VMRUN loads from vmcb12; FS, GS, TR, ... as the CPU has
	// them now (L1 VMLOADed L2's: they are in L1's VMCB, svm_vmcb_save_state).
	for (unsigned i = 0; i < sizeof(state_segs) / sizeof(state_segs[0]); i++)
		memcpy((uint8_t *)v02 + state_segs[i], (uint8_t *)v12 + state_segs[i], 16);
	for (unsigned i = 0; i < sizeof(state_regs) / sizeof(state_regs[0]); i++)
		*vmcb64(v02, state_regs[i]) = *vmcb64(v12, state_regs[i]);
	*vmcb8(v02, VMCB_CPL) = *vmcb8(v12, VMCB_CPL);
	*vmcb64(v02, VMCB_EFER) = *vmcb64(v12, VMCB_EFER) | EFER_SVME;
	*vmcb64(v02, VMCB_G_PAT) = np ? *vmcb64(v12, VMCB_G_PAT) : *vmcb64(v01, VMCB_G_PAT);
	svm_nested_copy_hidden(v02, v01);
}

// ---- which exits are L1's ---------------------------------------------------------
static bool bit_set(uint64_t map_pa, uint64_t bit)
{
	return (((const uint8_t *)(uintptr_t)map_pa)[bit / 8] >> (bit % 8)) & 1;
}

static bool l1_wants_msr(const struct svm_nested_cpu *n, uint32_t msr, bool write)
{
	static const uint32_t base[3] = {0, 0xc0000000u, 0xc0010000u};

	if (!n->msrpm12)
		return false;
	for (unsigned i = 0; i < 3; i++)
		if (msr - base[i] < 0x2000)
			return bit_set(n->msrpm12, i * 0x4000ull + (msr - base[i]) * 2 + write);
	return true; // outside the map: always intercepted
}

static bool l1_wants_io(const struct svm_nested_cpu *n, uint64_t info1)
{
	unsigned port = (unsigned)(info1 >> 16), size = (info1 >> IOIO_SIZE_SHIFT) & 7;

	if (!n->iopm12)
		return false;
	for (unsigned i = 0; i < (size ? size : 1) && i < 4; i++)
		if (bit_set(n->iopm12, port + i))
			return true;
	return false;
}

// True when L1's intercepts cover this exit of L2.
static bool l1_wants(const struct svm_cpu *c, void *v12, uint64_t code, uint64_t info1)
{
	if (code < 0x20)
		return *vmcb32(v12, VMCB_INTERCEPT_CR) & (1u << code);
	if (code < 0x40)
		return *vmcb32(v12, VMCB_INTERCEPT_DR) & (1u << (code - 0x20));
	if (code < 0x60)
		return *vmcb32(v12, VMCB_INTERCEPT_EXC) & (1u << (code - 0x40));
	if (code == SVM_EXIT_IOIO)
		return l1_wants_io(&c->nested, info1);
	if (code == SVM_EXIT_MSR)
		return l1_wants_msr(&c->nested, (uint32_t)c->vcpu->arch.gpr[X86_RCX], info1 != 0);
	if (code < 0x80)
		return *vmcb32(v12, VMCB_INTERCEPT_MISC1) & (1u << (code - 0x60));
	if (code < 0xa0)
		return *vmcb32(v12, VMCB_INTERCEPT_MISC2) & (1u << (code - 0x80));
	return true; // NPF (L1's nested paging), and anything newer
}

// ---- L2's exits ----------------------------------------------------------------------
// L2 runs in the CPU's own VMRUN loop (svm_entry.S) with c->run_vmcb_pa on
// vmcb02, as KVM runs a vCPU in guest mode in its one loop: every exit comes
// through svm_handle_exit, which asks c->nested.in_l2 and hands L2's here.
struct l2_exit {
	uint64_t code, info1, info2, intinfo;
};

static void inject_l2(void *v02, unsigned vector, bool gp)
{
	*vmcb64(v02, VMCB_EVENTINJ) = vector | EVENTINJ_TYPE_EXC | EVENTINJ_VALID |
				      (gp ? EVENTINJ_ERR_VALID : 0); // error code 0
}

// An NMI exit of L2: Slat's kick (a shootdown: seen by leaving guest mode;
// an INIT waiting for this vCPU: L1 gets an interrupt exit so that the
// primary's exit path sees it), or the primary's own NMI, which is L1's.
static bool l2_nmi(struct svm_cpu *c, void *v12, struct l2_exit *x)
{
	struct vcpu *v = c->vcpu;

	svm_take_host_nmi();
	if (x86_consume_kick(v)) {
		if (!x86_mailbox_pending(v))
			return true;
		x->code = SVM_EXIT_INTR;
		return false;
	}
	x86_nmi_raise(&v->arch.nmi); // injected into L1 once its GIF is set again
	if (!(*vmcb32(v12, VMCB_INTERCEPT_MISC1) & INT3_NMI))
		x->code = SVM_EXIT_INTR; // L1 lets L2 take NMIs: L1 gets it, after an exit
	return false;
}

// Slat's part of an L2 exit: true when L2 re-enters, false when the exit
// (possibly rewritten in *x) goes to L1.
static bool l2_exit_is_slats(struct svm_cpu *c, void *v12, bool np, struct l2_exit *x)
{
	static struct log_once refused;
	void *v02 = (void *)(uintptr_t)c->nested.vmcb02_pa;
	uint64_t err12;

	switch (x->code) {
	case SVM_EXIT_NMI:
		return l2_nmi(c, v12, x);
	case SVM_EXIT_SMI: // the host's (svm_take_host_smi); L1 sees it if it asked
		if (svm_take_host_smi()) {
			x->code = SVM_EXIT_NMI;
			return l2_nmi(c, v12, x);
		}
		return !l1_wants(c, v12, x->code, x->info1);
	case SVM_EXIT_NPF:
		if (!np) { // L1 gave L2 its own memory map: L2 left it
			if (log_once_first(&refused, x->code))
				log_warn("svm: nested: L2 touched 0x%llx, outside the primary's "
					 "memory: L1 gets a shutdown exit\n",
					 (unsigned long long)x->info2);
			x->code = SVM_EXIT_SHUTDOWN;
			return false;
		}
		if (svm_nested_npf(c, c->nested.ncr3, x->info1, x->info2, &err12))
			return true;
		if (err12 == ~0ull)
			x->code = SVM_EXIT_SHUTDOWN;
		else
			x->info1 = err12;
		return false;
	case SVM_EXIT_SHUTDOWN:
	case SVM_EXIT_ERR:
		return false;
	default:
		break;
	}
	if (l1_wants(c, v12, x->code, x->info1))
		return false;
	// Only Slat asked for it: L2 has no SVM (#UD) and no access to what
	// Slat keeps from the primary (#GP).
	if (x->code >= SVM_EXIT_VMRUN && x->code <= SVM_EXIT_SKINIT)
		inject_l2(v02, X86_EXC_UD, false);
	else
		inject_l2(v02, X86_EXC_GP, true);
	return true;
}

// Before each entry of L2: L2's translations flushed (NPT02 changes,
// INVLPGA and a new root are covered, and a CPU that flushes by ASID has one
// ASID for every L2: docs/nested-svm.md) and the current shadow root (a
// reclaim may have replaced it).
static void l2_entry_prepare(struct svm_cpu *c)
{
	void *v02 = (void *)(uintptr_t)c->nested.vmcb02_pa;
	bool np = c->nested.np;

	*vmcb8(v02, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
	c->nested.flush = false;
	*vmcb64(v02, VMCB_N_CR3) = !np		    ? svm_host.npt_root
				   : c->nested.root ? sh_root_pa(c->nested.root)
						    : svm_nested_empty_root();
}

// The CPU goes back to L1: its VMCB, its hidden state (the CPU holds L2's:
// saved into vmcb02 for svm_nested_vmexit, which hands them to L1's VMCB).
static void l2_leave(struct svm_cpu *c, const struct l2_exit *x)
{
	svm_vmsave(c->nested.vmcb02_pa);
	c->nested.in_l2 = false;
	c->run_vmcb_pa = c->vmcb_pa;
	c->run_sti = 0;
	svm_nested_vmexit(c, x->code, x->info1, x->info2, x->intinfo);
}

bool svm_nested_exit(struct svm_cpu *c)
{
	void *v12 = (void *)(uintptr_t)c->nested.vmcb12_pa;
	void *v02 = (void *)(uintptr_t)c->nested.vmcb02_pa;
	struct l2_exit x = {
	    .code = *vmcb64(v02, VMCB_EXITCODE),
	    .info1 = *vmcb64(v02, VMCB_EXITINFO1),
	    .info2 = *vmcb64(v02, VMCB_EXITINFO2),
	    .intinfo = *vmcb64(v02, VMCB_EXITINTINFO),
	};

	NESTED_COUNT(l2_exits);
	*vmcb64(v02, VMCB_EVENTINJ) = 0;
	if (!l2_exit_is_slats(c, v12, c->nested.np, &x)) {
		l2_leave(c, &x);
		return false;
	}
	// An event whose delivery the exit interrupted goes in again, unless
	// Slat queued an exception of its own.
	svm_event_redeliver(v02, x.intinfo);
	l2_entry_prepare(c);
	return true;
}

// L1's VMRUN: checked, vmcb02 built, and the CPU's next VMRUN enters L2.
void svm_nested_vmrun(struct svm_cpu *c, uint64_t vmcb12_pa)
{
	void *v12 = (void *)(uintptr_t)vmcb12_pa;
	void *v01 = (void *)(uintptr_t)c->vmcb_pa;
	bool np = *vmcb64(v12, VMCB_NP_ENABLE) & 1;
	uint64_t ncr3 = *vmcb64(v12, VMCB_N_CR3), root4;

	NESTED_COUNT(vmruns);
	svm_nested_before_write(vmcb12_pa);
	c->nested.vmcb12_pa = vmcb12_pa;
	c->nested.la57 = *vmcb64(v01, VMCB_CR4) & CR4_LA57;
	if (!(*vmcb64(v12, VMCB_EFER) & EFER_SVME) || !vmcb12_control_ok(&c->nested, v12)) {
		vmexit_invalid(v12);
		return;
	}
	svm_vmcb_save_state(c);
	build_vmcb02(c, v12, np);
	if (!vmcb02_state_ok((void *)(uintptr_t)c->nested.vmcb02_pa)) {
		vmexit_invalid(v12);
		return;
	}
	if (np && svm_nested_npt12_root(c, ncr3, &root4)) {
		if (!svm_nested_root(c, root4)) {
			vmexit_invalid(v12); // no memory for a shadow root (logged)
			return;
		}
	} else if (np) {
		svm_nested_root_drop(c); // nothing mapped: the first access faults
	}
	c->nested.np = np;
	c->nested.ncr3 = ncr3;
	*vmcb64(v12, VMCB_EVENTINJ) = 0; // the CPU takes it at VMRUN
	l2_entry_prepare(c);
	// vmcb02's hidden state is L1's VMCB's (build_vmcb02): VMLOADed when
	// the host rewrote that one, else the CPU holds it already.
	c->nested.in_l2 = true;
	c->run_vmcb_pa = c->nested.vmcb02_pa;
	// Physical interrupts: with V_INTR_MASKING they are masked by the
	// host's IF, which is L1's at its VMRUN; without, by L2's own IF.
	c->run_sti = (*vmcb64(v01, VMCB_RFLAGS) & RFLAGS_IF) ? 1 : 0;
}
