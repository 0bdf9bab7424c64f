// SPDX-License-Identifier: Apache-2.0
//
// PSCI as the primary VM sees it (Arm DEN 0022, function IDs in section 5).
// Every CPU enters Slat first: CPU_ON starts the target at Slat's EL2 entry,
// which then enters the OS at EL1; a CPU_SUSPEND to a power-down state resumes
// there too. Power-off and reset go through Slat's shutdown (teardown and exit
// summary). The other calls that would resume a CPU at an address Slat did not
// choose (SYSTEM_SUSPEND, CPU_FREEZE, CPU_DEFAULT_SUSPEND) are refused;
// everything else in the PSCI range goes to the firmware unchanged, and any
// other SMC gets the SMCCC "unknown function" answer.
#include "arch/arm64/hyp.h"
#include "core/log.h"
#include "core/mem.h"

#define PSCI_CPU_SUSPEND       0x01u
#define PSCI_CPU_ON	       0x03u
#define PSCI_SYSTEM_OFF	       0x84000008u
#define PSCI_SYSTEM_RESET      0x84000009u
#define PSCI_FEATURES	       0x8400000au
#define PSCI_CPU_FREEZE	       0x8400000bu
#define PSCI_CPU_DEFAULT_SUSP  0x0cu
#define PSCI_SYSTEM_SUSPEND    0x0eu
#define PSCI_SYSTEM_RESET2     0x12u

// SMCCC architecture calls (owner 0). Slat answers these itself: SMCCC 1.1
// is what lets the primary's kernel use its conduit for the vendor-hypervisor
// UID query (arm_smccc_1_1_invoke); no firmware workaround is offered.
#define SMCCC_VERSION	    0x80000000u
#define SMCCC_ARCH_FEATURES 0x80000001u
#define SMCCC_VERSION_1_1   0x10001u

#define PSCI_RET_NOT_SUPPORTED	  ((uint64_t)-1)
#define PSCI_RET_INVALID_PARAMS	  ((uint64_t)-2)
#define PSCI_RET_ALREADY_ON	  ((uint64_t)-4)
#define PSCI_RET_ON_PENDING	  ((uint64_t)-5)
#define PSCI_RET_INTERNAL_FAILURE ((uint64_t)-6)

#define PSCI_AFFINITY_INFO_64 0xc4000004u
#define AFF_ON		      0
#define AFF_ON_PENDING	      2

// 0x84000000 + n (SMC32) or 0xc4000000 + n (SMC64), n < 0x20.
static bool psci_decode(uint32_t fid, unsigned *n)
{
	if ((fid & ~0x4000001fu) != 0x84000000u)
		return false;
	*n = fid & 0x1f;
	return true;
}

static bool is64(uint32_t fid)
{
	return fid & 0x40000000u;
}

static uint64_t forward(const struct arm64_frame *f)
{
	return arm64_smc4(f->x[0], f->x[1], f->x[2], f->x[3]);
}

// Functions Slat refuses because the CPU would come back outside Slat.
static bool refused(unsigned n)
{
	return n == PSCI_SYSTEM_SUSPEND || n == PSCI_CPU_DEFAULT_SUSP ||
	       n == (PSCI_CPU_FREEZE & 0x1f);
}

// What the firmware says about `target` before Slat gives it a vCPU record:
// a record, once claimed, is never released (core/vm.c), so an MPIDR no CPU
// has must not take one, and a CPU that is already on must keep its entry.
// Returns 0 to go on, or the answer CPU_ON must give.
static uint64_t cpu_on_precheck(uint64_t target)
{
	uint64_t aff = arm64_smc4(PSCI_AFFINITY_INFO_64, target, 0, 0);

	if (aff == PSCI_RET_INVALID_PARAMS)
		return PSCI_RET_INVALID_PARAMS;
	if (aff == AFF_ON)
		return PSCI_RET_ALREADY_ON;
	if (aff == AFF_ON_PENDING)
		return PSCI_RET_ON_PENDING;
	return 0;
}

static uint64_t psci_cpu_on(struct vm *vm, struct arm64_frame *f, bool wide)
{
	uint64_t mask = wide ? ~0ull : 0xffffffffull;
	uint64_t target = f->x[1] & mask, entry = f->x[2] & mask, ctx = f->x[3] & mask;
	uint64_t early = cpu_on_precheck(target);

	if (early)
		return early;
	struct vcpu *v = arm64_vcpu_claim(vm, target);

	if (!v) {
		log_err("slat: CPU_ON 0x%llx: no room for another CPU (max %u)\n",
			(unsigned long long)target, ARM64_MAX_CPUS);
		return PSCI_RET_INTERNAL_FAILURE;
	}
	v->arch.entry_pc = entry;
	v->arch.entry_x0 = ctx;
	v->arch.entry_sp = 0;
	struct arm64_pcpu *pc = arm64_pcpu_bind(v);
	// The new CPU reads its record with the MMU and caches off (its vCPU only
	// once its MMU is on).
	arm64_dcache_clean_inval_poc((uint64_t)(uintptr_t)pc, sizeof(*pc));
	uint64_t ret = arm64_smc4(f->x[0], target, (uint64_t)(uintptr_t)arm64_secondary_entry,
				  (uint64_t)(uintptr_t)pc);
	log_debug("slat: CPU_ON 0x%llx entry 0x%llx: %lld\n", (unsigned long long)target,
		  (unsigned long long)entry, (long long)ret);
	return ret;
}

// Does CPU_SUSPEND's power_state ask for a power-down state? The StateType
// bit is 16 in the original format and 30 in the extended one (FEATURES of
// CPU_SUSPEND, flag bit 1), asked of the firmware once.
static bool suspend_is_powerdown(uint64_t power_state)
{
	static int extended = -1;

	if (extended < 0) {
		uint64_t flags = arm64_smc4(PSCI_FEATURES, 0xc4000000u | PSCI_CPU_SUSPEND, 0, 0);
		extended = (int64_t)flags >= 0 && (flags & 2) ? 1 : 0;
	}
	return arm64_psci_suspend_is_powerdown(power_state, extended == 1);
}

// CPU_SUSPEND: a standby state returns to the caller and goes through as is.
// A power-down state resumes (when the firmware really powers the CPU down)
// at an entry point with the MMU off, like CPU_ON: Slat asks the firmware to
// resume at its own EL2 entry, which enters the OS's entry point at EL1 with
// its context id. If the call returns instead (an interrupt was pending, or
// the firmware only did a standby, as QEMU does), the caller gets its answer.
static uint64_t psci_cpu_suspend(struct vcpu *v, struct arm64_frame *f, bool wide)
{
	uint64_t mask = wide ? ~0ull : 0xffffffffull;

	if (!suspend_is_powerdown(f->x[1] & mask))
		return forward(f);
	v->arch.entry_pc = f->x[2] & mask;
	v->arch.entry_x0 = f->x[3] & mask;
	v->arch.entry_sp = 0;
	struct arm64_pcpu *pc = arm64_pcpu_bind(v);
	arm64_dcache_clean_inval_poc((uint64_t)(uintptr_t)pc, sizeof(*pc));
	return arm64_smc4(f->x[0], f->x[1], (uint64_t)(uintptr_t)arm64_secondary_entry,
			  (uint64_t)(uintptr_t)pc);
}

static uint64_t psci_features(const struct arm64_frame *f)
{
	unsigned n;

	if ((uint32_t)f->x[1] == SMCCC_VERSION)
		return 0;
	if (!psci_decode((uint32_t)f->x[1], &n) || refused(n))
		return PSCI_RET_NOT_SUPPORTED;
	return forward(f);
}

void arm64_psci_call(struct vcpu *v, struct arm64_frame *f)
{
	uint32_t fid = (uint32_t)f->x[0];
	unsigned n;

	if (fid == SMCCC_VERSION) {
		f->x[0] = SMCCC_VERSION_1_1;
		return;
	}
	if (!psci_decode(fid, &n)) {		  // also SMCCC_ARCH_FEATURES: no workaround offered
		f->x[0] = PSCI_RET_NOT_SUPPORTED; // SMCCC: unknown function identifier
		return;
	}
	switch (n) {
	case PSCI_CPU_ON:
		f->x[0] = psci_cpu_on(v->vm, f, is64(fid));
		return;
	case PSCI_CPU_SUSPEND:
		f->x[0] = psci_cpu_suspend(v, f, is64(fid));
		return;
	case PSCI_SYSTEM_OFF & 0x1f:
		arm64_vm_shutdown(v->vm, f, false, PSCI_SYSTEM_OFF);
	case PSCI_SYSTEM_RESET & 0x1f:
		arm64_vm_shutdown(v->vm, f, true, PSCI_SYSTEM_RESET);
	case PSCI_SYSTEM_RESET2:
		arm64_vm_shutdown(v->vm, f, true, fid);
	case PSCI_FEATURES & 0x1f:
		f->x[0] = psci_features(f);
		return;
	default:
		// VERSION, CPU_OFF, AFFINITY_INFO, MIGRATE*, and the rest: the firmware
		// answers (CPU_OFF does not come back when it succeeds).
		f->x[0] = refused(n) ? PSCI_RET_NOT_SUPPORTED : forward(f);
		return;
	}
}
