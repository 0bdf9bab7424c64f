// SPDX-License-Identifier: Apache-2.0
//
// The SVM back end's set-up in the resident copy: the shared host
// environment, permission maps, NPT and per-CPU VMCBs, and the preparation
// of each CPU before svm_launch deprivileges it. docs/svm-primary.md
// describes the flow; the layout mirrors vmx/vmx.c.
#include "arch/arch.h"
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/svm/nested.h"
#include "arch/x86/svm/svm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/vm_arch.h"

struct svm_host svm_host;
static struct slat_plan svm_plan;
static struct svm_npt_stats svm_npt;

// vcpu_arch_run() on SVM: the VMRUN loop (svm_entry.S), on the host's
// stack; the VMCB holds the guest's full state. Never returns.
static void svm_vcpu_run(struct vcpu *v)
{
	svm_run(v->arch.backend);
}

void svm_host_entry(struct svm_cpu *c)
{
	vcpu_arch_run(c->vcpu);
	x86_park(); // not reached: there is no caller to return to
}

static const struct x86_vm_ops svm_vm_ops = {
    .run = svm_vcpu_run,
    .mm_counts = svm_mm_counts,
    .teardown = svm_npt_teardown,
    .kick = x86_kick_nmi,
    .irq_window = svm_irq_window,
    .summary = svm_summary,
};

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
		c->host_entry = (uint64_t)(uintptr_t)svm_host_entry;
		c->run_vmcb_pa = c->vmcb_pa;
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
	svm_iopm_build((uint8_t *)(uintptr_t)svm_host.iopm_pa);
	svm_msrpm_build((uint8_t *)(uintptr_t)svm_host.msrpm_pa);
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
	if (!svm_hv_init(r, &svm_plan))
		log_warn("slat: secondary VMs unavailable\n");
	if (svm_nested_init(r, &svm_plan))
		log_info("slat: nested SVM offered to the primary (NPT02 in the shadow engine, %s "
			 "reclaim of orphans, quota %u shadow pages)\n",
			 svm_plan.nested_reclaim == CFG_RECLAIM_NONE ? "no" : "recursive",
			 svm_plan.nested_quota);
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
	v->arch.ops = &svm_vcpu_ops;
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, c->hsave_pa);
	memset(vmcb, 0, 4096);
	svm_vmcb_control(c, vmcb);
	svm_vmcb_guest_from_live(c, vmcb);
	c->vmload = 1;	    // the first VMRUN loads what guest_from_live saved
	if (svm_host.xsave) // the host executes XSETBV for the guest (vcpu.h)
		write_cr4(read_cr4() | CR4_OSXSAVE);
	vcpu_set_running(v);
	log_info("slat: cpu %u (APIC ID %u) enters guest mode\n", v->index, apic_id);
	return c;
}
