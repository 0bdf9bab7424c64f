// SPDX-License-Identifier: Apache-2.0
//
// Turning the boot CPU into a hypervisor and the firmware into the primary VM
// (recipe A of docs/arm64-primary.md), per-CPU bring-up for PSCI CPU_ON, and
// the shutdown path.
//
// arch_enter_hypervisor() runs in the firmware-loaded image at EL2 on the
// firmware's tables. It builds Slat's EL2 tables in the reserved region,
// switches TTBR0_EL2 to them and calls hyp_start() *in the resident copy*,
// which sets up everything that must outlive the firmware (console, the
// primary VM and its stage-2, per-CPU records, vectors) in the copy's own
// globals and runs the boot CPU's vCPU: an ERET back into the firmware-loaded
// image at EL1. From then on only the copy runs at EL2. The VM and vCPU side
// (core/vm_arch.h) is in vm.c.
#include "arch/arch.h"
#include "arch/arm64/el2_regs.h"
#include "arch/arm64/hyp.h"
#include "core/hv.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/vm_arch.h"

// What the firmware-loaded image hands to the resident copy.
struct arm64_boot_args {
	struct slat_plan *plan;
	struct arm64_el2_mmu mmu; // Slat's EL2 tables
	uint64_t fw_ttbr0_el2;	  // the firmware's, for its EL1 continuation
	uint64_t fw_vbar_el2;
	uint64_t start_ticks;
	// RAM as the firmware's memory map gave it, before firmware flash and ROM
	// joined the plan's Normal ranges: what the primary may deposit or share.
	uint64_t ram[PLAN_MAX_RANGES][2];
	unsigned nram;
};

// ---- resident state -------------------------------------------------------
struct vm arm64_primary;
struct arm64_cpu_features arm64_cpu;
static struct slat_plan hyp_plan;
static struct arm64_el2_mmu hyp_mmu;
static struct vcpu hyp_vcpus[ARM64_MAX_CPUS];
static struct arm64_pcpu hyp_pcpus[ARM64_MAX_CPUS];
static uint64_t hyp_ram[PLAN_MAX_RANGES][2];

void arm64_secondary_main(struct arm64_pcpu *pc);

#define MPIDR_AFF_MASK 0xff00ffffffull

struct slat_plan *arm64_resident_plan(void)
{
	return &hyp_plan;
}

struct arm64_pcpu *arm64_this_pcpu(void)
{
	return (struct arm64_pcpu *)(uintptr_t)read_sysreg("tpidr_el2");
}

unsigned arm64_pcpu_index(void)
{
	return (unsigned)(arm64_this_pcpu() - hyp_pcpus);
}

struct arm64_pcpu *arm64_pcpu_bind(struct vcpu *v)
{
	struct arm64_pcpu *pc = &hyp_pcpus[v->index];

	pc->vcpu = v;
	return pc;
}

struct vcpu *arm64_vcpu_claim(struct vm *vm, uint64_t mpidr)
{
	struct vcpu *v = vm_vcpu_for(vm, mpidr & MPIDR_AFF_MASK);

	if (v && !vcpu_has_run(v))
		vcpu_arch_init(v);
	return v;
}

// ---- CPU features -----------------------------------------------------------
static void cpu_features_init(void)
{
	struct arm64_id_regs id = {
	    .pfr0 = read_sysreg(SYSREG_ID_AA64PFR0_EL1),
	    .pfr1 = read_sysreg(SYSREG_ID_AA64PFR1_EL1),
	    .mmfr1 = read_sysreg(SYSREG_ID_AA64MMFR1_EL1),
	    .isar1 = read_sysreg(SYSREG_ID_AA64ISAR1_EL1),
	    .isar2 = read_sysreg(SYSREG_ID_AA64ISAR2_EL1),
	};

	if (sysreg_field(id.pfr1, 27, 24)) // ID_AA64SMFR0_EL1 exists with SME
		id.smfr0 = read_sysreg(SYSREG_ID_AA64SMFR0_EL1);
	arm64_features_decode(&id, &arm64_cpu);
	// Touching ICC_SRE_EL2 without the system registers is UNDEFINED at EL2.
	if (arm64_cpu.gic_sysregs)
		arm64_cpu.sre_el2 = read_sysreg(SYSREG_ICC_SRE_EL2);
}

static void report_gic(void)
{
	if (!arm64_cpu.gic_sysregs)
		log_info("slat: GIC CPU interface: memory-mapped (GICv2; no GIC system registers), "
			 "passed through\n");
	else
		log_info("slat: GIC CPU interface: system registers (GICv3; firmware ICC_SRE_EL2 "
			 "0x%llx), passed through\n",
			 (unsigned long long)arm64_cpu.sre_el2);
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

static void report_s2(const struct vm *vm)
{
	const struct arm64_s2 *s2 = &vm->arch.s2;
	struct slat_mm_counts mc;

	vm_arch_mm_counts(vm, &mc);
	log_info("slat: stage-2 for vm %s: %u-bit IPA, VTCR_EL2 0x%llx, VTTBR_EL2 0x%llx\n",
		 vm->name, s2->ipa_bits, (unsigned long long)s2->vtcr,
		 (unsigned long long)s2->vttbr);
	log_info("slat: stage-2 leaves: %llu x 1G, %llu x 2M, %llu x 4K; %llu table pages\n",
		 (unsigned long long)s2->blocks_1g, (unsigned long long)s2->blocks_2m,
		 (unsigned long long)s2->pages_4k, (unsigned long long)mc.table_pages);
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
		};
	}
	return true;
}

// The resident copy's entry, at EL2 on Slat's tables and the firmware's stack
// with interrupts masked. Returns only on failure (nothing changed for EL1).
static int64_t hyp_start(struct arm64_boot_args *a, uint64_t resume_pc, uint64_t el1_sp)
{
	struct vm *vm = &arm64_primary;

	hyp_plan = *a->plan;
	hyp_mmu = a->mmu;
	hyp_mmu.vbar = (uint64_t)(uintptr_t)arm64_el2_vectors;

	// The copy's globals are a snapshot of the loaded image's: re-create every
	// pointer that could still point into that image.
	arch_console_init(&hyp_plan.fw);
	log_set_level((enum log_level)hyp_plan.log_level);
	arm64_mm_backend_init(&hyp_plan.region);
	vm_init(vm, 0, "primary", "stage-2", &hyp_plan.region, hyp_vcpus, ARM64_MAX_CPUS);

	if (hyp_mmu.vbar & 0x7ff) { // VBAR_EL2 ignores bits [10:0]
		log_err("arm64: EL2 vectors at 0x%llx are not 2 KiB aligned\n",
			(unsigned long long)hyp_mmu.vbar);
		return -1;
	}
	if (!percpu_init()) {
		log_err("arm64: no room for per-CPU stacks in Slat's region\n");
		return -1;
	}
	cpu_features_init();
	report_gic();
	if (vm_arch_init(vm))
		return -1;
	vm->arch.start_cnt = a->start_ticks; // the primary runs since Slat took over
	for (unsigned i = 0; i < a->nram; i++) {
		hyp_ram[i][0] = a->ram[i][0];
		hyp_ram[i][1] = a->ram[i][1];
	}
	arm64_hv_boot_ranges((const uint64_t(*)[2])hyp_ram, a->nram);
	report_s2(vm);
	log_info("slat: HCR_EL2 0x%llx, region 0x%llx-0x%llx (%llu KiB used)\n",
		 (unsigned long long)vm->arch.hcr, (unsigned long long)hyp_plan.region.base,
		 (unsigned long long)(hyp_plan.region.base + hyp_plan.region.size - 1),
		 (unsigned long long)(hyp_plan.region.used / 1024));

	// Secondaries read the image, their records and the EL2 settings with
	// caches off: make them visible at the point of coherency.
	arm64_dcache_clean_inval_poc(hyp_plan.region.base, hyp_plan.region.used);

	struct vcpu *v = arm64_vcpu_claim(vm, read_sysreg(SYSREG_MPIDR_EL1));
	v->arch.entry_pc = resume_pc;
	v->arch.entry_sp = el1_sp;
	el1_from_fw_el2(a);
	log_info("slat: firmware dropped to EL1 on cpu %u; vm primary running\n", v->index);
	vcpu_arch_run(v);
	arm64_park(); // not reached: the vCPU never comes back here
}

// A CPU started through PSCI CPU_ON, MMU on, on its own EL2 stack; `pc` was
// bound to its vCPU by the CPU_ON call.
void arm64_secondary_main(struct arm64_pcpu *pc)
{
	struct vcpu *v = pc->vcpu;

	// The state the OS expects from CPU_ON: EL1, MMU and caches off.
	write_sysreg("sctlr_el1", SCTLR_EL1_RES1);
	write_sysreg("cpacr_el1", 0);
	isb();
	log_debug("slat: cpu %u (MPIDR 0x%llx) entering the primary at 0x%llx\n", v->index,
		  (unsigned long long)v->hw_id, (unsigned long long)v->arch.entry_pc);
	vcpu_arch_run(v);
}

// ---- shutdown ---------------------------------------------------------------
void arm64_park(void)
{
	for (;;)
		__asm__ volatile("wfe");
}

void arm64_vm_shutdown(struct vm *vm, struct arm64_frame *f, bool reset, uint64_t psci_fn)
{
	if (!vm_begin_shutdown(vm))
		arm64_park(); // another CPU is already shutting the machine down

	vm_teardown_and_report(vm, reset ? "reset" : "power-off");
	hv_print_summary();
	log_info("slat: %s\n", reset ? "resetting" : "powering off");
	log_flush();
	uint64_t ret = arm64_smc4(psci_fn, f->x[1], f->x[2], 0);
	log_err("slat: firmware refused %s (%lld); halting\n", reset ? "reset" : "power-off",
		(long long)ret);
	log_flush();
	arm64_park();
}

// ---- firmware-loaded side ---------------------------------------------------
static uint64_t resident_addr(const struct slat_plan *plan, const void *sym)
{
	return (uint64_t)(uintptr_t)sym - plan->image_base + plan->resident_base;
}

unsigned long long arch_region_extra(void)
{
	return 0; // stage-2 always has 1 GiB blocks with the 4 KiB granule
}

int arch_enter_hypervisor(struct slat_plan *plan)
{
	struct arm64_boot_args a = {
	    .plan = plan,
	    .fw_ttbr0_el2 = read_sysreg("ttbr0_el2"),
	    .fw_vbar_el2 = read_sysreg("vbar_el2"),
	    .start_ticks = read_sysreg("cntpct_el0"),
	};

	for (unsigned i = 0; i < plan->n_ranges; i++) {
		if (plan->ranges[i].kind != PLAN_MEM_NORMAL)
			continue;
		a.ram[a.nram][0] = plan->ranges[i].base;
		a.ram[a.nram++][1] = plan->ranges[i].size;
	}
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
