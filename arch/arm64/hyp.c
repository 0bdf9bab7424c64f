// SPDX-License-Identifier: Apache-2.0
//
// Turning the boot CPU into a hypervisor and the firmware into the primary VM
// (recipe A of docs/arm64-primary.md), per-CPU bring-up for PSCI CPU_ON, and
// the shutdown path.
//
// arch_enter_hypervisor() runs in the firmware-loaded image at EL2 on the
// firmware's tables. It builds Slat's EL2 tables in the reserved region,
// switches TTBR0_EL2 to them and calls hyp_start() *in the resident copy*,
// which sets up everything that must outlive the firmware (console, stage-2,
// per-CPU records, vectors) in the copy's own globals and ERETs back into the
// firmware-loaded image at EL1. From then on only the copy runs at EL2.
#include "arch/arch.h"
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hyp.h"
#include "core/log.h"
#include "core/mem.h"

// What the firmware-loaded image hands to the resident copy.
struct arm64_boot_args {
	struct slat_plan *plan;
	struct arm64_el2_mmu mmu; // Slat's EL2 tables
	uint64_t fw_ttbr0_el2;	  // the firmware's, for its EL1 continuation
	uint64_t fw_vbar_el2;
	uint64_t start_ticks;
};

// ---- resident state -------------------------------------------------------
struct vm arm64_primary;
struct arm64_hyp_regs arm64_hyp;
static struct slat_plan hyp_plan;
static struct arm64_el2_mmu hyp_mmu;
static struct arm64_s2 hyp_s2;
static struct vcpu hyp_vcpus[ARM64_MAX_CPUS];
static struct arm64_pcpu hyp_pcpus[ARM64_MAX_CPUS];
static uint64_t hyp_start_ticks, hyp_tick_hz;
static int hyp_shutting_down;

void arm64_secondary_main(struct arm64_pcpu *pc);

#define MPIDR_AFF_MASK 0xff00ffffffull

uint64_t arm64_uptime_us(void)
{
	uint64_t now = read_sysreg("cntpct_el0");

	// (ticks * 10^6) stays below 2^64 for years at the usual counter rates.
	return hyp_tick_hz ? (now - hyp_start_ticks) * 1000000 / hyp_tick_hz : 0;
}

bool arm64_in_slat_region(uint64_t pa, uint64_t len)
{
	return region_overlaps(&hyp_plan.region, pa, len);
}

struct arm64_pcpu *arm64_this_pcpu(void)
{
	return (struct arm64_pcpu *)(uintptr_t)read_sysreg("tpidr_el2");
}

struct arm64_pcpu *arm64_pcpu_for(uint64_t mpidr)
{
	struct vcpu *v = vm_vcpu_for(&arm64_primary, mpidr & MPIDR_AFF_MASK);

	if (!v)
		return NULL;
	struct arm64_pcpu *pc = &hyp_pcpus[v->index];
	pc->vcpu = v;
	pc->mpidr = mpidr & MPIDR_AFF_MASK;
	return pc;
}

bool arm64_vm_is_shutting_down(void)
{
	return __atomic_load_n(&hyp_shutting_down, __ATOMIC_ACQUIRE);
}

// ---- EL2 register values --------------------------------------------------
static bool cpu_has_pauth(void)
{
	uint64_t isar1 = read_sysreg(SYSREG_ID_AA64ISAR1_EL1);
	uint64_t isar2 = read_sysreg(SYSREG_ID_AA64ISAR2_EL1);

	return sysreg_field(isar1, 7, 4) || sysreg_field(isar1, 11, 8) ||
	       sysreg_field(isar1, 27, 24) || sysreg_field(isar1, 31, 28) ||
	       sysreg_field(isar2, 15, 12) || sysreg_field(isar2, 11, 8);
}

static void hyp_regs_init(void)
{
	uint64_t pfr0 = read_sysreg(SYSREG_ID_AA64PFR0_EL1);
	uint64_t pfr1 = read_sysreg("S3_0_C0_C4_1");
	uint64_t mmfr1 = read_sysreg(SYSREG_ID_AA64MMFR1_EL1);

	// IMO/FMO/AMO stay clear: interrupts go straight to the primary (no vGIC).
	arm64_hyp.hcr = HCR_RW | HCR_TSC | HCR_VM;
	if (cpu_has_pauth())
		arm64_hyp.hcr |= HCR_API | HCR_APK;
	arm64_hyp.cptr = read_sysreg("cptr_el2") & ~(CPTR_TFP | CPTR_TZ | CPTR_TSM);
	arm64_hyp.cnthctl = 3; // EL1PCTEN | EL1PCEN: EL1 owns its physical counter and timer
	arm64_hyp.vtcr = hyp_s2.vtcr;
	arm64_hyp.vttbr = hyp_s2.vttbr;
	arm64_hyp.has_sve = sysreg_field(pfr0, 35, 32) != 0;
	arm64_hyp.has_sme = sysreg_field(pfr1, 27, 24) != 0;
	arm64_hyp.has_pan = sysreg_field(mmfr1, 23, 20) != 0;
}

// Everything EL2 holds for one CPU. Called on each CPU before it first enters
// the primary.
void arm64_load_el2_state(struct arm64_pcpu *pc)
{
	write_sysreg("vbar_el2", hyp_mmu.vbar);
	write_sysreg("tpidr_el2", (uint64_t)(uintptr_t)pc);
	write_sysreg("cptr_el2", arm64_hyp.cptr);
	isb();
	if (arm64_hyp.has_sve)
		write_sysreg(SYSREG_ZCR_EL2, 0xf); // the largest vector length the CPU has
	if (arm64_hyp.has_sme)
		write_sysreg(SYSREG_SMCR_EL2, 0xf);
	write_sysreg("cnthctl_el2", arm64_hyp.cnthctl);
	write_sysreg("cntvoff_el2", 0);
	write_sysreg("mdcr_el2", (read_sysreg("pmcr_el0") >> 11) & 0x1f); // HPMN = PMCR_EL0.N
	write_sysreg("hstr_el2", 0);
	write_sysreg("vpidr_el2", read_sysreg(SYSREG_MIDR_EL1));
	write_sysreg("vmpidr_el2", read_sysreg(SYSREG_MPIDR_EL1));
	write_sysreg(SYSREG_ICC_SRE_EL2, 0xf); // SRE | DFB | DIB | Enable (EL1 may use SRE)
	isb();
	write_sysreg(SYSREG_ICC_SRE_EL1, 0x7);
	write_sysreg("vtcr_el2", arm64_hyp.vtcr);
	write_sysreg("vttbr_el2", arm64_hyp.vttbr);
	write_sysreg("hcr_el2", arm64_hyp.hcr);
	isb();
	__asm__ volatile("tlbi vmalls12e1" ::: "memory");
	dsb(nsh);
	isb();
	vcpu_set_running(pc->vcpu);
}

// EL1 takes over the firmware's EL2 regime: same tables, same attributes.
static void el1_from_fw_el2(const struct arm64_boot_args *a)
{
	uint64_t sctlr2 = read_sysreg("sctlr_el2"), tcr2 = read_sysreg("tcr_el2");
	uint64_t keep = SCTLR_M | SCTLR_A | SCTLR_C | SCTLR_SA | SCTLR_I | SCTLR_WXN;
	uint64_t tcr1 = (tcr2 & 0xffff)		      // T0SZ, IRGN0, ORGN0, SH0, TG0
			| ((tcr2 & 0x3f) << 16)	      // T1SZ = T0SZ
			| (1ull << 23)		      // EPD1: no TTBR1 walks
			| (2ull << 30)		      // TG1 = 4 KiB
			| (((tcr2 >> 16) & 7) << 32)  // IPS = PS
			| (((tcr2 >> 20) & 1) << 37)  // TBI0 = TBI
			| (((tcr2 >> 21) & 3) << 39); // HA, HD

	write_sysreg("sctlr_el1",
		     SCTLR_EL1_RES1 | (sctlr2 & keep) | SCTLR_SA0 | SCTLR_NTWI | SCTLR_NTWE);
	write_sysreg("tcr_el1", tcr1);
	write_sysreg("mair_el1", read_sysreg("mair_el2"));
	write_sysreg("amair_el1", 0);
	write_sysreg("ttbr0_el1", a->fw_ttbr0_el2);
	write_sysreg("ttbr1_el1", 0);
	write_sysreg("vbar_el1", a->fw_vbar_el2);
	write_sysreg("cpacr_el1", 3ull << 20); // FP/SIMD at EL1 and EL0
	isb();
}

static void report_s2(void)
{
	struct slat_mm_counts mc;

	arm64_mm_counts(&mc);
	log_info("slat: stage-2 for vm primary: %u-bit IPA, VTCR_EL2 0x%llx, VTTBR_EL2 0x%llx\n",
		 hyp_s2.ipa_bits, (unsigned long long)hyp_s2.vtcr,
		 (unsigned long long)hyp_s2.vttbr);
	log_info("slat: stage-2 leaves: %llu x 1G, %llu x 2M, %llu x 4K; %llu table pages\n",
		 (unsigned long long)hyp_s2.blocks_1g, (unsigned long long)hyp_s2.blocks_2m,
		 (unsigned long long)hyp_s2.pages_4k, (unsigned long long)mc.table_pages);
}

static bool percpu_init(void)
{
	for (unsigned i = 0; i < ARM64_MAX_CPUS; i++) {
		uint64_t stack = region_alloc(&hyp_plan.region, ARM64_STACK_PAGES, 4096);
		if (!stack)
			return false;
		hyp_pcpus[i] = (struct arm64_pcpu){
		    .stack_top = stack + ARM64_STACK_PAGES * 4096ull,
		    .mmu = &hyp_mmu,
		    .index = i,
		};
	}
	return true;
}

// The resident copy's entry, at EL2 on Slat's tables and the firmware's stack
// with interrupts masked. Returns only on failure (nothing changed for EL1).
static int64_t hyp_start(struct arm64_boot_args *a, uint64_t resume_pc, uint64_t el1_sp)
{
	hyp_plan = *a->plan;
	hyp_mmu = a->mmu;
	hyp_mmu.vbar = (uint64_t)(uintptr_t)arm64_el2_vectors;
	hyp_start_ticks = a->start_ticks;
	hyp_tick_hz = read_sysreg("cntfrq_el0");

	// The copy's globals are a snapshot of the loaded image's: re-create every
	// pointer that could still point into that image.
	arch_console_init(&hyp_plan.fw);
	log_set_level((enum log_level)hyp_plan.log_level);
	arm64_mm_backend_init(&hyp_plan.region);
	vm_init(&arm64_primary, 0, "primary", "stage-2", &hyp_plan.region, hyp_vcpus,
		ARM64_MAX_CPUS);

	if (hyp_mmu.vbar & 0x7ff) { // VBAR_EL2 ignores bits [10:0]
		log_err("arm64: EL2 vectors at 0x%llx are not 2 KiB aligned\n",
			(unsigned long long)hyp_mmu.vbar);
		return -1;
	}
	if (!percpu_init()) {
		log_err("arm64: no room for per-CPU stacks in Slat's region\n");
		return -1;
	}
	if (!arm64_s2_build_primary(&hyp_plan.region, &hyp_plan, &hyp_s2))
		return -1;
	report_s2();
	hyp_regs_init();
	log_info("slat: HCR_EL2 0x%llx, region 0x%llx-0x%llx (%llu KiB used)\n",
		 (unsigned long long)arm64_hyp.hcr, (unsigned long long)hyp_plan.region.base,
		 (unsigned long long)(hyp_plan.region.base + hyp_plan.region.size - 1),
		 (unsigned long long)(hyp_plan.region.used / 1024));

	// Secondaries read the image, their records and the EL2 settings with
	// caches off: make them visible at the point of coherency.
	arm64_dcache_clean_inval_poc(hyp_plan.region.base, hyp_plan.region.used);

	struct arm64_pcpu *pc = arm64_pcpu_for(read_sysreg(SYSREG_MPIDR_EL1));
	arm64_load_el2_state(pc);
	el1_from_fw_el2(a);
	log_info("slat: firmware dropped to EL1 on cpu %u; vm primary running\n", pc->index);
	arm64_eret_to_el1(resume_pc, el1_sp, 0, pc->stack_top);
}

// A CPU started through PSCI CPU_ON, MMU on, on its own EL2 stack.
void arm64_secondary_main(struct arm64_pcpu *pc)
{
	arm64_load_el2_state(pc);
	// The state the OS expects from CPU_ON: EL1, MMU and caches off.
	write_sysreg("sctlr_el1", SCTLR_EL1_RES1);
	write_sysreg("cpacr_el1", 0);
	isb();
	log_debug("slat: cpu %u (MPIDR 0x%llx) entering the primary at 0x%llx\n", pc->index,
		  (unsigned long long)pc->mpidr, (unsigned long long)pc->guest_entry);
	arm64_eret_to_el1(pc->guest_entry, 0, pc->guest_context, pc->stack_top);
}

// ---- shutdown ---------------------------------------------------------------
static __attribute__((noreturn)) void park(void)
{
	for (;;)
		__asm__ volatile("wfe");
}

void arm64_vm_shutdown(struct arm64_frame *f, bool reset, uint64_t psci_fn)
{
	if (__atomic_exchange_n(&hyp_shutting_down, 1, __ATOMIC_ACQ_REL))
		park(); // another CPU is already shutting the machine down

	struct exit_summary s = {.event = reset ? "reset" : "power-off"};
	s.uptime_us = arm64_uptime_us();
	arm64_mm_counts(&s.live);
	arm64_s2_teardown(&hyp_s2, &s.teardown_pages, &s.teardown_invalidations);
	vm_print_exit_summary(&arm64_primary, &s);
	log_info("slat: %s\n", reset ? "resetting" : "powering off");
	log_flush();
	uint64_t ret = arm64_smc4(psci_fn, f->x[1], f->x[2], 0);
	log_err("slat: firmware refused %s (%lld); halting\n", reset ? "reset" : "power-off",
		(long long)ret);
	log_flush();
	park();
}

// ---- firmware-loaded side ---------------------------------------------------
static uint64_t resident_addr(const struct slat_plan *plan, const void *sym)
{
	return (uint64_t)(uintptr_t)sym - plan->image_base + plan->resident_base;
}

int arch_enter_hypervisor(struct slat_plan *plan)
{
	struct arm64_boot_args a = {
	    .plan = plan,
	    .fw_ttbr0_el2 = read_sysreg("ttbr0_el2"),
	    .fw_vbar_el2 = read_sysreg("vbar_el2"),
	    .start_ticks = read_sysreg("cntpct_el0"),
	};

	if (!arm64_plan_add_fw_cacheable(plan))
		log_warn("arm64: memory plan full; some firmware memory stays Device\n");
	if (!arm64_el2_mmu_build(&plan->region, plan, &a.mmu))
		return -1;
	arm64_el2_switch_ttbr0(a.mmu.ttbr0);
	int64_t rc = arm64_call_then_drop(resident_addr(plan, (const void *)hyp_start), &a);
	if (rc != 0) {
		// Still at EL2 and nothing else changed: give the firmware its tables back.
		write_sysreg("vbar_el2", a.fw_vbar_el2);
		arm64_el2_switch_ttbr0(a.fw_ttbr0_el2);
		return -1;
	}
	return 0;
}
