// SPDX-License-Identifier: Apache-2.0
//
// Turning every CPU into a VMX root-mode host and the firmware into the
// primary VM (docs/vmx-primary.md).
//
// The resident copy's side. launch.c (loaded image) calls vmx_resident_init(),
// which builds everything that must outlive the firmware (console, host
// tables, EPT, per-CPU records, bitmaps) in the copy's globals; then each CPU
// enters vmx_resident_cpu_start() through vmx_call_then_launch(), which
// VMLAUNCHes it with a guest state copied from itself, so the firmware
// continues in the loaded image at the instruction after the call, as a
// guest.
#include "arch/arch.h"
#include "arch/x86/cpu.h"
#include "arch/x86/vcpu.h"
#include "arch/x86/vmx/vmx.h"
#include "arch/x86/vmx/vmx_primary.h"
#include "core/log.h"
#include "core/vm_arch.h"
#include "core/mem.h"

// ---- resident state ---------------------------------------------------------
struct vmx_config vmx_cfg;
struct vmx_host vmx_host;
struct slat_plan vmx_plan;
static struct vmx_pcpu vmx_pcpus[X86_MAX_CPUS];
static struct vmx_ept_counts vmx_ept;
static int vmx_ready; // the resident copy is set up (APs may launch)

static void mm_counts(struct slat_mm_counts *out)
{
	vmx_ept_mm_counts(out);
}

static void vmx_vcpu_run(struct vcpu *v);

// x86_vm_ops.irq_window: interrupts on for a few instructions in root
// operation (an NMI meanwhile goes to vmx_host_nmi as always).
static void vmx_irq_window(struct vcpu *v)
{
	(void)v;
	__asm__ volatile("sti; nop; nop; nop; nop; cli" ::: "memory");
}

static const struct x86_vm_ops vmx_vm_ops = {
    .run = vmx_vcpu_run,
    .mm_counts = mm_counts,
    .teardown = vmx_ept_teardown,
    .kick = x86_kick_nmi,
    .irq_window = vmx_irq_window,
};

static uint32_t this_apic_id(void)
{
	return cpuid(1, 0).ebx >> 24;
}

// ---- bitmaps -------------------------------------------------------------------
static void msr_bitmap_set(uint8_t *bm, uint32_t msr, bool write)
{
	unsigned off = write ? 2048 : 0;

	if (msr >= 0xc0000000u) {
		off += 1024;
		msr -= 0xc0000000u;
	}
	if (msr < 0x2000)
		bm[off + msr / 8] |= (uint8_t)(1u << (msr % 8));
}

static void bitmaps_init(void)
{
	uint8_t *msr = (uint8_t *)(uintptr_t)vmx_host.msr_bitmap;
	uint8_t *io_a = (uint8_t *)(uintptr_t)vmx_host.io_bitmap_a;
	uint8_t *io_b = (uint8_t *)(uintptr_t)vmx_host.io_bitmap_b;

	// The MSRs the shared policy handles (msr.c); everything else passes.
	for (unsigned i = 0; i < x86_n_msr_intercepts; i++) {
		const struct x86_msr_intercept *m = &x86_msr_intercepts[i];
		for (uint32_t n = m->first; n <= m->last; n++) {
			if (m->read)
				msr_bitmap_set(msr, n, false);
			if (m->write)
				msr_bitmap_set(msr, n, true);
		}
	}
	// The ports the shared layer watches (power-off, reset).
	for (uint32_t p = 0; p < 0x10000; p++) {
		if (!x86_io_intercepted((uint16_t)p))
			continue;
		uint8_t *bm = p < 0x8000 ? io_a : io_b;
		bm[(p & 0x7fff) / 8] |= (uint8_t)(1u << (p % 8));
	}
}

// ---- per-CPU launch ----------------------------------------------------------------
// vcpu_arch_run() on VT-x: the primary's run loop with the calling CPU's
// current VMCS (prepared by cpu_launch), on the CPU's host stack: the
// firmware's stack, which the guest goes on using, is left at the VMLAUNCH.
// Returns only when VMLAUNCH failed.
static void vmx_vcpu_run(struct vcpu *v)
{
	struct vmx_pcpu *pc = v->arch.backend;

	vcpu_set_running(v);
	// APs start parked (the firmware's AP loop): HLT/MWAIT exit.
	if (!pc->bsp && !vmx_cfg.native_sipi) // native: a real INIT always exits
		vmx_set_parked(pc, true);
	log_info("slat: cpu %u (APIC ID %u) enters VMX guest mode\n", pc->index, pc->apic_id);
	vmx_call_on_stack(vmx_primary_loop, pc, pc->stack_top);
}

static struct vmx_pcpu *pcpu_claim(void)
{
	struct vcpu *v = x86_vcpu_for_apic(this_apic_id());

	if (!v)
		return NULL;
	struct vmx_pcpu *pc = &vmx_pcpus[v->index];
	pc->vcpu = v;
	v->arch.backend = pc;
	v->arch.ops = &vmx_vcpu_ops;
	pc->index = v->index;
	pc->apic_id = (uint32_t)v->hw_id;
	pc->bsp = rdmsr(MSR_IA32_APIC_BASE) & (1u << 8);
	return pc;
}

// VMXON, a fresh VMCS from this CPU's state, VMLAUNCH. Returns only on
// failure, with VMX off again and CR0/CR4 restored.
static int64_t cpu_launch(uint64_t rip, uint64_t rsp)
{
	struct vmx_pcpu *pc = pcpu_claim();
	uint64_t cr0 = read_cr0(), cr4 = read_cr4();

	if (!pc) {
		log_err("vmx: cpu with APIC ID %u: no vCPU record left (max %u)\n", this_apic_id(),
			X86_MAX_CPUS);
		return -1;
	}
	pc->cr0_shadow = cr0;
	if (!vmx_cpu_prepare(&vmx_cfg, pc->index))
		return -1;
	uint32_t rev = (uint32_t)vmx_cfg.basic & 0x7fffffff;
	*(uint32_t *)(uintptr_t)pc->vmxon_pa = rev;
	*(uint32_t *)(uintptr_t)pc->vmcs_pa = rev;
	const char *fail = NULL;
	if (!vmx_on(pc->vmxon_pa))
		fail = "VMXON";
	else if (!vmx_clear(pc->vmcs_pa) || !vmx_ptrld(pc->vmcs_pa))
		fail = "VMCLEAR/VMPTRLD";
	else if (!vmx_vmcs_setup(pc, rip, rsp))
		fail = "VMCS setup";
	if (!fail) {
		// Nothing cached from before may survive: all contexts, all VPIDs.
		vmx_invept(INVEPT_ALL, 0);
		if (vmx_cfg.vpid)
			vmx_invvpid(INVVPID_ALL, 0, 0);
		vcpu_arch_run(pc->vcpu); // returns only if VMLAUNCH failed
		uint64_t err = vmread(VMCS_INSN_ERROR);
		log_err("vmx: cpu %u: VMLAUNCH failed: VM-instruction error %llu (%s)\n", pc->index,
			(unsigned long long)err, vmx_insn_error_name(err));
		fail = "VMLAUNCH";
		vmx_off();
	} else {
		log_err("vmx: cpu %u: %s failed\n", pc->index, fail);
		if (read_cr4() & CR4_VMXE)
			vmx_off();
	}
	write_cr4(cr4);
	write_cr0(cr0);
	return -1;
}

static bool percpu_init(void)
{
	for (unsigned i = 0; i < X86_MAX_CPUS; i++) {
		struct vmx_pcpu *pc = &vmx_pcpus[i];
		uint64_t stack = region_alloc(&vmx_plan.region, VMX_STACK_PAGES, 4096);
		*pc = (struct vmx_pcpu){
		    .vmxon_pa = region_alloc(&vmx_plan.region, 1, 4096),
		    .vmcs_pa = region_alloc(&vmx_plan.region, 1, 4096),
		    .stack_top = stack + VMX_STACK_PAGES * 4096ull,
		    .index = i,
		};
		if (!stack || !pc->vmxon_pa || !pc->vmcs_pa)
			return false;
	}
	return true;
}

static void report_ept(void)
{
	unsigned bits = 0;
	while (bits < 64 && (1ull << bits) < vmx_ept.top)
		bits++;
	log_info("slat: EPT for vm primary (mm/ engine): 4-level, %u-bit guest-physical space, "
		 "EPTP 0x%llx, VPID %s, %s\n",
		 bits, (unsigned long long)vmx_host.eptp, vmx_cfg.vpid ? "1" : "off",
		 vmx_cfg.invept_single ? "INVEPT single-context" : "INVEPT all-context");
	log_info("slat: EPT leaves: %llu x 1G, %llu x 2M, %llu x 4K; %llu table pages; local APIC "
		 "page 0x%llx %s\n",
		 (unsigned long long)vmx_ept.leaves_1g, (unsigned long long)vmx_ept.leaves_2m,
		 (unsigned long long)vmx_ept.leaves_4k, (unsigned long long)vmx_ept.table_pages,
		 (unsigned long long)x86_primary.arch.apic_base,
		 vmx_cfg.native_sipi ? "read-write" : "read-only");
}

// The resident copy's set-up, called from the loaded image on the boot CPU
// (firmware page tables and stack, boot services up). Nothing changes for
// the firmware here; returns 0 when every CPU may launch.
int vmx_resident_init(struct vmx_boot_args *a)
{
	vmx_plan = *a->plan;
	// The copy's globals are a snapshot of the loaded image's: re-create
	// every pointer that could still point into that image.
	arch_console_init(&vmx_plan.fw);
	log_set_level((enum log_level)vmx_plan.log_level);
	if (x86_vm_init("EPT", &vmx_vm_ops, &vmx_plan.region, a->tsc_start, a->tsc_hz, &a->power) !=
	    0)
		return -1;
	x86_primary.arch.apic_base = rdmsr(MSR_IA32_APIC_BASE) & ~0xfffull;
	x86_vcpu_for_apic(this_apic_id()); // the boot CPU is vcpu0 (APs launch first)

	const char *why = vmx_config_init(&vmx_cfg);
	if (why) {
		log_err("vmx: unusable: %s\n", why);
		return -1;
	}
	vmx_cfg.native_sipi = a->native_sipi;
	vmx_report_config(&vmx_cfg);
	if (!percpu_init() || !vmx_host_build(&vmx_plan.region, &vmx_plan, &vmx_host)) {
		log_err("vmx: no room for host tables or per-CPU state in Slat's region\n");
		return -1;
	}
	x86_primary.arch.host_map_top = vmx_host.env.map_top;
	if (!vmx_ept_build(&vmx_plan.region, &vmx_plan, &vmx_cfg, x86_primary.arch.apic_base,
			   &vmx_host.eptp, &vmx_ept))
		return -1;
	report_ept();
	bitmaps_init();
	if (!vmx_hv_init(&vmx_plan.region, &vmx_plan))
		log_warn("slat: secondary VMs unavailable\n");
	log_info("slat: power-off port 0x%x, reset port 0x%x; region 0x%llx-0x%llx (%llu KiB "
		 "used)\n",
		 a->power.pm1a_cnt, a->power.reset_port, (unsigned long long)vmx_plan.region.base,
		 (unsigned long long)(vmx_plan.region.base + vmx_plan.region.size - 1),
		 (unsigned long long)(vmx_plan.region.used / 1024));
	__atomic_store_n(&vmx_ready, 1, __ATOMIC_RELEASE);
	return 0;
}

// The resident copy's entry on each CPU, boot CPU last (through
// vmx_call_then_launch, interrupts masked). Returns only on failure.
int64_t vmx_resident_cpu_start(void *unused, uint64_t rip, uint64_t rsp)
{
	if (!__atomic_load_n(&vmx_ready, __ATOMIC_ACQUIRE))
		return -1;
	return cpu_launch(rip, rsp);
}
