// SPDX-License-Identifier: Apache-2.0
//
// The SVM host: set-up in the resident copy (the shared host environment of
// arch/x86/host_env.c, I/O and MSR permission maps, NPT, per-CPU VMCBs), deprivileging each CPU,
// and the exit dispatcher that feeds the shared x86 layer (arch/x86/vcpu.h).
// docs/svm-primary.md describes the flow.
#include "arch/arch.h"
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/svm/svm.h"
#include "core/log.h"
#include "core/mem.h"

struct svm_host svm_host;
static struct slat_plan svm_plan;
static struct svm_npt_stats svm_npt;

// ---- small CPU helpers -----------------------------------------------------------
static void vmsave(uint64_t pa)
{
	__asm__ volatile("vmsave %%rax" : : "a"(pa) : "memory");
}

// ---- permission maps -------------------------------------------------------------------
static void iopm_build(uint8_t *iopm)
{
	for (uint32_t port = 0; port < 0x10000; port++) {
		if (x86_io_intercepted((uint16_t)port))
			iopm[port / 8] |= (uint8_t)(1u << (port % 8));
	}
}

// MSRPM: 2 bits (read, write) per MSR in three 2 KiB ranges.
static void msrpm_set(uint8_t *pm, uint32_t msr, bool rd, bool wr)
{
	uint32_t base;

	if (msr <= 0x1fff)
		base = 0;
	else if (msr >= 0xc0000000u && msr <= 0xc0001fffu)
		base = 0x800, msr -= 0xc0000000u;
	else if (msr >= 0xc0010000u && msr <= 0xc0011fffu)
		base = 0x1000, msr -= 0xc0010000u;
	else
		return;
	uint32_t bit = msr * 2;
	if (rd)
		pm[base + bit / 8] |= (uint8_t)(1u << (bit % 8));
	if (wr)
		pm[base + (bit + 1) / 8] |= (uint8_t)(1u << ((bit + 1) % 8));
}

static void msrpm_build(uint8_t *pm)
{
	for (unsigned i = 0; i < x86_n_msr_intercepts; i++) {
		const struct x86_msr_intercept *m = &x86_msr_intercepts[i];
		if (m->vmx_only)
			continue;
		for (uint32_t msr = m->first; msr <= m->last; msr++)
			msrpm_set(pm, msr, m->read, m->write);
	}
}

// ---- vCPU operations for the shared layer ----------------------------------------------
static void *vmcb_of(struct vcpu *v)
{
	return (void *)(uintptr_t)((struct svm_cpu *)v->arch.backend)->vmcb_pa;
}

static uint64_t op_read_cr(struct vcpu *v, unsigned n)
{
	void *vmcb = vmcb_of(v);

	switch (n) {
	case 0:
		return *vmcb64(vmcb, VMCB_CR0);
	case 2:
		return *vmcb64(vmcb, VMCB_CR2);
	case 3:
		return *vmcb64(vmcb, VMCB_CR3);
	default:
		return *vmcb64(vmcb, VMCB_CR4);
	}
}

static uint64_t op_read_efer(struct vcpu *v)
{
	return *vmcb64(vmcb_of(v), VMCB_EFER) & ~EFER_SVME;
}

static void op_write_efer(struct vcpu *v, uint64_t efer)
{
	void *vmcb = vmcb_of(v);

	// SVME stays set (QEMU refuses VMRUN otherwise); LMA stays as the CPU has it.
	*vmcb64(vmcb, VMCB_EFER) =
	    (efer & ~EFER_LMA) | EFER_SVME | (*vmcb64(vmcb, VMCB_EFER) & EFER_LMA);
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
}

static uint64_t op_read_rflags(struct vcpu *v)
{
	return *vmcb64(vmcb_of(v), VMCB_RFLAGS);
}

static void op_read_seg(struct vcpu *v, enum x86_seg_reg s, struct x86_seg *out)
{
	static const unsigned off[] = {VMCB_ES, VMCB_CS, VMCB_SS, VMCB_DS, VMCB_FS, VMCB_GS};
	void *vmcb = vmcb_of(v);

	out->sel = *vmcb16(vmcb, off[s]);
	out->attr = *vmcb16(vmcb, off[s] + 2);
	out->limit = *vmcb32(vmcb, off[s] + 4);
	out->base = *vmcb64(vmcb, off[s] + 8);
}

static void op_inject(struct vcpu *v, unsigned vector, bool has_error, uint32_t error)
{
	uint64_t ev = vector | EVENTINJ_TYPE_EXC | EVENTINJ_VALID;

	if (has_error)
		ev |= EVENTINJ_ERR_VALID | ((uint64_t)error << 32);
	*vmcb64(vmcb_of(v), VMCB_EVENTINJ) = ev;
}

static bool exit_has_nrip(uint64_t code)
{
	return code == SVM_EXIT_CPUID || code == SVM_EXIT_MSR || code == SVM_EXIT_HLT ||
	       code == SVM_EXIT_MWAIT || code == SVM_EXIT_MWAIT_C || code == SVM_EXIT_VMMCALL ||
	       code == SVM_EXIT_XSETBV || code == SVM_EXIT_IOIO;
}

static unsigned op_insn_len(struct vcpu *v)
{
	struct svm_cpu *c = v->arch.backend;
	void *vmcb = vmcb_of(v);
	uint64_t rip = *vmcb64(vmcb, VMCB_RIP);

	if (c->next_rip)
		return (unsigned)(c->next_rip - rip);
	if ((svm_host.features & SVM_FEAT_NRIPS) && exit_has_nrip(*vmcb64(vmcb, VMCB_EXITCODE)) &&
	    *vmcb64(vmcb, VMCB_NRIP) > rip)
		return (unsigned)(*vmcb64(vmcb, VMCB_NRIP) - rip);
	return 0;
}

static enum x86_action op_wait(struct vcpu *v, const struct x86_exit *e);
static void op_deliver_nmi(struct vcpu *v);

static const struct x86_vcpu_ops svm_ops = {
    .read_cr = op_read_cr,
    .read_efer = op_read_efer,
    .write_efer = op_write_efer,
    .read_rflags = op_read_rflags,
    .read_seg = op_read_seg,
    .inject = op_inject,
    .insn_len = op_insn_len,
    .wait = op_wait,
    .deliver_nmi = op_deliver_nmi,
};

// vcpu_arch_run() on SVM: the VMRUN loop (svm_entry.S), entered on the
// host's stack. svm_launch() jumps there after deprivileging the CPU; the
// VMCB must hold the guest's full state.
static void svm_vcpu_run(struct vcpu *v)
{
	svm_run(v->arch.backend);
}

static const struct x86_vm_ops svm_vm_ops = {
    .run = svm_vcpu_run,
    .mm_counts = svm_mm_counts,
    .teardown = svm_npt_teardown,
    .kick = x86_kick_nmi,
};

// ---- VMCB set-up ---------------------------------------------------------------------------
static void set_seg(void *vmcb, unsigned off, uint16_t sel, uint16_t attr, uint32_t limit,
		    uint64_t base)
{
	*vmcb16(vmcb, off) = sel;
	*vmcb16(vmcb, off + 2) = attr;
	*vmcb32(vmcb, off + 4) = limit;
	*vmcb64(vmcb, off + 8) = base;
}

// A code/data segment of the live CPU, from its GDT descriptor.
static void seg_from_gdt(void *vmcb, unsigned off, uint16_t sel, uint64_t gdt, uint16_t gdt_limit)
{
	uint64_t d = 0;

	if ((sel & ~7u) && (sel | 7u) <= gdt_limit && !(sel & 4))
		memcpy(&d, (const void *)(uintptr_t)(gdt + (sel & ~7u)), 8);
	uint16_t attr = (uint16_t)(((d >> 40) & 0xff) | (((d >> 52) & 0xf) << 8));
	uint32_t limit = (uint32_t)((d & 0xffff) | ((d >> 32) & 0xf0000));
	if (d & (1ull << 55))
		limit = (limit << 12) | 0xfff;
	uint64_t base = ((d >> 16) & 0xffffff) | (((d >> 56) & 0xff) << 24);
	set_seg(vmcb, off, sel, attr, limit, base);
}

static void vmcb_control(struct svm_cpu *c, void *vmcb)
{
	*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) =
	    INT3_NMI | INT3_CPUID | INT3_HLT | INT3_INVLPGA | INT3_IOIO | INT3_MSR | INT3_SHUTDOWN;
	*vmcb32(vmcb, VMCB_INTERCEPT_MISC2) = INT4_VMRUN | INT4_VMMCALL | INT4_VMLOAD |
					      INT4_VMSAVE | INT4_STGI | INT4_CLGI | INT4_SKINIT |
					      INT4_MWAIT | INT4_MWAIT_COND | INT4_XSETBV;
	*vmcb64(vmcb, VMCB_IOPM_PA) = svm_host.iopm_pa;
	*vmcb64(vmcb, VMCB_MSRPM_PA) = svm_host.msrpm_pa;
	*vmcb32(vmcb, VMCB_ASID) = SVM_ASID;
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
	*vmcb64(vmcb, VMCB_NP_ENABLE) = 1;
	*vmcb64(vmcb, VMCB_N_CR3) = svm_host.npt_root;
	c->hlt_intercept = true;
}

// The guest state of the calling CPU (all but RIP, RSP, RFLAGS, RAX, which
// svm_launch sets).
static void vmcb_guest_from_live(struct svm_cpu *c, void *vmcb)
{
	uint16_t gl, il;
	uint64_t gb, ib;

	read_gdtr(&gb, &gl);
	read_idtr(&ib, &il);
	vmsave(c->vmcb_pa); // FS, GS, TR, LDTR, KernelGSBase, STAR/LSTAR/CSTAR/SFMASK, SYSENTER
	seg_from_gdt(vmcb, VMCB_CS, read_cs(), gb, gl);
	seg_from_gdt(vmcb, VMCB_SS, read_ss(), gb, gl);
	seg_from_gdt(vmcb, VMCB_DS, read_ds(), gb, gl);
	seg_from_gdt(vmcb, VMCB_ES, read_es(), gb, gl);
	if (!*vmcb16(vmcb, VMCB_TR + 2)) // a null TR: give it a busy 64-bit TSS type
		*vmcb16(vmcb, VMCB_TR + 2) = 0x8b;
	set_seg(vmcb, VMCB_GDTR, 0, 0, gl, gb);
	set_seg(vmcb, VMCB_IDTR, 0, 0, il, ib);
	*vmcb64(vmcb, VMCB_CR0) = read_cr0();
	*vmcb64(vmcb, VMCB_CR2) = read_cr2();
	*vmcb64(vmcb, VMCB_CR3) = read_cr3();
	*vmcb64(vmcb, VMCB_CR4) = read_cr4();
	*vmcb64(vmcb, VMCB_EFER) = rdmsr(MSR_EFER); // SVME already set
	*vmcb64(vmcb, VMCB_DR6) = read_dr6();
	*vmcb64(vmcb, VMCB_DR7) = read_dr7();
	*vmcb64(vmcb, VMCB_G_PAT) = rdmsr(MSR_IA32_PAT);
	*vmcb8(vmcb, VMCB_CPL) = 0;
}

// The state a STARTUP IPI gives an AP (after INIT): real mode at vector << 12.
static void vmcb_sipi_reset(struct svm_cpu *c, uint8_t vector)
{
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;
	struct vcpu *v = c->vcpu;

	set_seg(vmcb, VMCB_CS, (uint16_t)(vector << 8), 0x9b, 0xffff, (uint64_t)vector << 12);
	set_seg(vmcb, VMCB_DS, 0, 0x93, 0xffff, 0);
	set_seg(vmcb, VMCB_ES, 0, 0x93, 0xffff, 0);
	set_seg(vmcb, VMCB_SS, 0, 0x93, 0xffff, 0);
	set_seg(vmcb, VMCB_FS, 0, 0x93, 0xffff, 0);
	set_seg(vmcb, VMCB_GS, 0, 0x93, 0xffff, 0);
	set_seg(vmcb, VMCB_GDTR, 0, 0, 0xffff, 0);
	set_seg(vmcb, VMCB_IDTR, 0, 0, 0xffff, 0);
	set_seg(vmcb, VMCB_LDTR, 0, 0x82, 0xffff, 0);
	set_seg(vmcb, VMCB_TR, 0, 0x8b, 0xffff, 0);
	*vmcb64(vmcb, VMCB_CR0) = 0x60000010;
	*vmcb64(vmcb, VMCB_CR2) = 0;
	*vmcb64(vmcb, VMCB_CR3) = 0;
	*vmcb64(vmcb, VMCB_CR4) = 0;
	*vmcb64(vmcb, VMCB_EFER) = EFER_SVME;
	*vmcb64(vmcb, VMCB_DR6) = 0xffff0ff0;
	*vmcb64(vmcb, VMCB_DR7) = 0x400;
	*vmcb64(vmcb, VMCB_RFLAGS) = 2;
	*vmcb64(vmcb, VMCB_RIP) = 0;
	*vmcb64(vmcb, VMCB_RSP) = 0;
	*vmcb64(vmcb, VMCB_RAX) = 0;
	*vmcb64(vmcb, VMCB_G_PAT) = 0x0007040600070406ull;
	*vmcb64(vmcb, VMCB_KGSBASE) = 0;
	*vmcb64(vmcb, VMCB_STAR) = 0;
	*vmcb64(vmcb, VMCB_LSTAR) = 0;
	*vmcb64(vmcb, VMCB_CSTAR) = 0;
	*vmcb64(vmcb, VMCB_SFMASK) = 0;
	*vmcb64(vmcb, VMCB_SYSENTER_CS) = 0;
	*vmcb64(vmcb, VMCB_SYSENTER_ESP) = 0;
	*vmcb64(vmcb, VMCB_SYSENTER_EIP) = 0;
	*vmcb8(vmcb, VMCB_CPL) = 0;
	*vmcb64(vmcb, VMCB_EVENTINJ) = 0;
	*vmcb64(vmcb, VMCB_INT_SHADOW) = 0;
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_FLUSH_ALL;
	*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) |= INT3_HLT; // parked again until the OS idles
	c->hlt_intercept = true;
	memset(v->arch.gpr, 0, sizeof(v->arch.gpr));
	v->arch.gpr[X86_RDX] = cpuid(1, 0).eax; // family/model/stepping, as after RESET/INIT
	v->arch.rip = 0;
	log_debug("svm: vcpu%u starts at %04x:0000 (SIPI)\n", v->index, (unsigned)vector << 8);
}

// ---- exits ------------------------------------------------------------------------------------
// A parked CPU (HLT with interrupts off, MWAIT) waits here a little for its
// mailbox instead of bouncing straight back into the guest.
static void park_briefly(struct vcpu *v)
{
	for (unsigned i = 0; i < 20000 && !x86_mailbox_pending(v); i++)
		pause();
}

// ops->wait: HLT or MWAIT.
static enum x86_action op_wait(struct vcpu *v, const struct x86_exit *e)
{
	struct svm_cpu *c = v->arch.backend;
	void *vmcb = vmcb_of(v);

	if (e->kind == X86_EXIT_HLT && (*vmcb64(vmcb, VMCB_RFLAGS) & (1u << 9))) {
		// An OS idle loop (interrupts on): let it halt natively from now on.
		*vmcb32(vmcb, VMCB_INTERCEPT_MISC1) &= ~INT3_HLT;
		c->hlt_intercept = false;
		return X86_CONTINUE; // RIP unchanged: the HLT runs again, unintercepted
	}
	park_briefly(v);
	x86_skip_insn(v); // MWAIT: a wake-up; the caller re-checks its condition
	return X86_CONTINUE;
}

static void op_deliver_nmi(struct vcpu *v)
{
	*vmcb64(vmcb_of(v), VMCB_EVENTINJ) = 2 | EVENTINJ_TYPE_NMI | EVENTINJ_VALID;
}

// The exit entry: decode, the shared policy, apply.
void svm_handle_exit(struct svm_cpu *c)
{
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;
	struct vcpu *v = c->vcpu;
	const struct svm_exit_fields f = {
	    .code = *vmcb64(vmcb, VMCB_EXITCODE),
	    .info1 = *vmcb64(vmcb, VMCB_EXITINFO1),
	    .info2 = *vmcb64(vmcb, VMCB_EXITINFO2),
	};
	uint64_t intinfo = *vmcb64(vmcb, VMCB_EXITINTINFO);
	struct x86_exit e;
	uint8_t vector;

	svm_decode_exit(&f, &e);
	*vmcb8(vmcb, VMCB_TLB_CONTROL) = TLB_CONTROL_NONE; // the last VMRUN flushed
	v->arch.gpr[X86_RAX] = *vmcb64(vmcb, VMCB_RAX);
	v->arch.gpr[X86_RSP] = *vmcb64(vmcb, VMCB_RSP);
	v->arch.rip = *vmcb64(vmcb, VMCB_RIP);
	c->next_rip = e.next_rip;
	*vmcb64(vmcb, VMCB_EVENTINJ) = 0;
	// An intercepted NMI stays pending (held by GIF = 0): take it in the
	// host, whose NMI vector just returns, before the policy decides what
	// it was.
	if (e.kind == X86_EXIT_NMI)
		__asm__ volatile("stgi; nop; nop; clgi" ::: "memory");

	x86_apply_action(v, x86_handle_exit(v, &e));

	// An event whose delivery the exit interrupted is delivered again, unless
	// the handler queued an exception of its own.
	if ((intinfo & EVENTINJ_VALID) && !(*vmcb64(vmcb, VMCB_EVENTINJ) & EVENTINJ_VALID))
		*vmcb64(vmcb, VMCB_EVENTINJ) = intinfo;
	*vmcb64(vmcb, VMCB_RIP) = v->arch.rip;
	*vmcb64(vmcb, VMCB_RAX) = v->arch.gpr[X86_RAX];
	*vmcb64(vmcb, VMCB_RSP) = v->arch.gpr[X86_RSP];
	if (x86_mailbox_poll(v, &vector))
		vmcb_sipi_reset(c, vector);
}

void svm_host_exception(uint64_t *f)
{
	log_err("svm: host exception %llu (error 0x%llx) at RIP 0x%llx, RSP 0x%llx, CR2 0x%llx on "
		"cpu %u\n",
		(unsigned long long)f[0], (unsigned long long)f[1], (unsigned long long)f[2],
		(unsigned long long)f[5], (unsigned long long)read_cr2(), arch_cpu_id());
	log_flush();
}

// ---- set-up (resident copy, called from the loaded image) ----------------------------------
static bool percpu_init(struct region *r)
{
	for (unsigned i = 0; i < X86_MAX_CPUS; i++) {
		struct svm_cpu *c = &svm_host.cpus[i];
		uint64_t stack = region_alloc(r, SVM_STACK_PAGES, 4096);
		c->vmcb_pa = region_alloc(r, 1, 4096);
		c->hsave_pa = region_alloc(r, 1, 4096);
		if (!stack || !c->vmcb_pa || !c->hsave_pa)
			return false;
		c->host_stack_top = stack + SVM_STACK_PAGES * 4096ull;
		c->host_cr3 = svm_host.env.cr3;
		c->gdtr_base = svm_host.env.gdt;
		c->idtr_base = svm_host.env.idt;
		c->host_entry = (uint64_t)(uintptr_t)svm_run;
	}
	return true;
}

int svm_resident_init(struct svm_boot_args *a)
{
	struct region *r = &svm_plan.region;

	// The copy's globals are a snapshot of the loaded image's: re-create
	// every pointer before use.
	svm_plan = *a->plan;
	memset(&svm_host, 0, sizeof(svm_host));
	arch_console_init(&svm_plan.fw);
	log_set_level((enum log_level)svm_plan.log_level);
	svm_mm_init(r);
	if (x86_vm_init("NPT", &svm_vm_ops, &svm_plan.region, a->tsc_start, a->tsc_hz, &a->power) !=
	    0)
		return -1;
	svm_host.features = a->features;
	svm_host.xsave = cpuid(1, 0).ecx & (1u << 26);
	x86_primary.arch.apic_base = rdmsr(MSR_IA32_APIC_BASE) & 0xffffff000ull;
	// The boot CPU (running this) takes vCPU record 0; APs follow in the
	// order the firmware starts them.
	x86_vcpu_for_apic(cpuid(1, 0).ebx >> 24);

	unsigned phys_bits = cpuid(0x80000008u, 0).eax & 0xff;
	svm_host.iopm_pa = region_alloc(r, 3, 4096);
	svm_host.msrpm_pa = region_alloc(r, 2, 4096);
	if (!x86_host_env_build(r, &svm_plan, svm_idt_stubs, &svm_host.env) || !svm_host.iopm_pa ||
	    !svm_host.msrpm_pa || !percpu_init(r)) {
		log_err("svm: no room in Slat's region for the host's tables\n");
		return -1;
	}
	x86_primary.arch.host_map_top = svm_host.env.map_top;
	iopm_build((uint8_t *)(uintptr_t)svm_host.iopm_pa);
	msrpm_build((uint8_t *)(uintptr_t)svm_host.msrpm_pa);
	if (!svm_npt_build(&svm_plan, x86_primary.arch.apic_base, phys_bits, &svm_host.npt_root,
			   &svm_npt))
		return -1;
	struct slat_mm_counts mc;
	svm_mm_counts(&mc);
	log_info("slat: NPT for vm primary: %u-bit guest-physical space mapped, nCR3 0x%llx, ASID "
		 "%u\n",
		 phys_bits < 40 ? phys_bits : 40, (unsigned long long)svm_host.npt_root, SVM_ASID);
	log_info("slat: NPT leaves: %llu x 1G, %llu x 2M, %llu x 4K; %llu table pages; local APIC "
		 "page 0x%llx read-only\n",
		 (unsigned long long)svm_npt.leaves_1g, (unsigned long long)svm_npt.leaves_2m,
		 (unsigned long long)svm_npt.leaves_4k, (unsigned long long)mc.table_pages,
		 (unsigned long long)x86_primary.arch.apic_base);
	log_info("slat: power-off ports PM1a 0x%x PM1b 0x%x, reset 0x%x, S5 SLP_TYP %s%u; PM timer "
		 "0x%x\n",
		 a->power.pm1a_cnt, a->power.pm1b_cnt, a->power.reset_port,
		 a->power.s5_known ? "" : "unknown ", a->power.s5_slp_typ, a->power.pm_tmr);
	log_info("slat: region 0x%llx-0x%llx (%llu KiB used), TSC %llu kHz\n",
		 (unsigned long long)r->base, (unsigned long long)(r->base + r->size - 1),
		 (unsigned long long)(r->used / 1024), (unsigned long long)(a->tsc_hz / 1000));
	return 0;
}

struct svm_cpu *svm_resident_cpu_prepare(void)
{
	uint32_t apic_id = cpuid(1, 0).ebx >> 24;
	struct vcpu *v = x86_vcpu_for_apic(apic_id);

	if (!v) {
		log_err("svm: no vCPU record left for APIC ID %u; it stays outside Slat\n",
			apic_id);
		return NULL;
	}
	struct svm_cpu *c = &svm_host.cpus[v->index];
	void *vmcb = (void *)(uintptr_t)c->vmcb_pa;

	c->vcpu = v;
	c->gprs = v->arch.gpr;
	v->arch.backend = c;
	v->arch.ops = &svm_ops;
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, c->hsave_pa);
	memset(vmcb, 0, 4096);
	vmcb_control(c, vmcb);
	vmcb_guest_from_live(c, vmcb);
	if (svm_host.xsave) // the host executes XSETBV for the guest (vcpu.h)
		write_cr4(read_cr4() | CR4_OSXSAVE);
	vcpu_set_running(v);
	log_info("slat: cpu %u (APIC ID %u) enters guest mode\n", v->index, apic_id);
	return c;
}
