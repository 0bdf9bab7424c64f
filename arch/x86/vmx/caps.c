// SPDX-License-Identifier: Apache-2.0
//
// VMX capabilities: IA32_FEATURE_CONTROL, the control fields computed from
// the capability MSRs (SDM vol. 3, A.3-A.5: the low half of each MSR holds
// the bits that must be 1, the high half the bits that may be 1; with
// VMX_BASIC bit 55 the TRUE_* MSRs give the real must-be-1 set), and the
// CR0/CR4 fixed bits (A.7, A.8). Nothing here is hard-coded per CPU model.
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/vmx/vmx.h"
#include "core/log.h"

// Wanted bits of one control, adjusted by its capability MSR. `need` must
// all survive; returns false otherwise.
static bool adjust(uint32_t msr, uint32_t want, uint32_t need, uint32_t *out)
{
	uint64_t cap = rdmsr(msr);
	uint32_t must = (uint32_t)cap, may = (uint32_t)(cap >> 32);

	*out = (want | must) & may;
	return (*out & need) == need;
}

const char *vmx_config_init(struct vmx_config *c)
{
	*c = (struct vmx_config){0};
	c->basic = rdmsr(MSR_VMX_BASIC);
	c->misc = rdmsr(MSR_VMX_MISC);
	bool t = c->basic & (1ull << 55);

	if (((c->basic >> 50) & 0xf) != 6)
		return "the VMCS memory type is not write-back";
	// NMI exiting: kicks (an INIT for a CPU whose guest runs without exits).
	// Virtual NMIs where the CPU has them: the guest's NMI blocking then
	// stays the guest's (arch/x86/nmi.c).
	if (!adjust(t ? MSR_VMX_TRUE_PINBASED : MSR_VMX_PINBASED, PIN_NMI_EXIT | PIN_VIRTUAL_NMI,
		    PIN_NMI_EXIT, &c->pin))
		return "no NMI exiting";
	c->vnmi = c->pin & PIN_VIRTUAL_NMI;
	// CR3 load/store exiting stay off where the TRUE MSR allows it; HLT and
	// MWAIT exiting are switched on only while a CPU is parked.
	uint32_t proc_need = PROC_SECONDARY | PROC_MSR_BITMAPS | PROC_IO_BITMAPS;
	if (!adjust(t ? MSR_VMX_TRUE_PROCBASED : MSR_VMX_PROCBASED, proc_need, proc_need, &c->proc))
		return "no secondary controls, MSR bitmaps or I/O bitmaps";
	// NMI-window exiting (needs virtual NMIs): switched on per CPU while an
	// NMI is held for the guest.
	c->nmi_window = c->vnmi && ((rdmsr(t ? MSR_VMX_TRUE_PROCBASED : MSR_VMX_PROCBASED) >> 32) &
				    PROC_NMI_WINDOW);
	uint32_t p2_need = PROC2_EPT | PROC2_UNRESTRICTED;
	// RDTSCP, INVPCID and XSAVES must be enabled where the CPU has them, or
	// the guest gets #UD for instructions CPUID advertises.
	uint32_t p2_want = p2_need | PROC2_VPID | PROC2_RDTSCP | PROC2_INVPCID | PROC2_XSAVES;
	if (!adjust(MSR_VMX_PROCBASED2, p2_want, p2_need, &c->proc2))
		return "no EPT or no unrestricted guest";
	uint32_t exit_need =
	    EXIT_HOST_64 | EXIT_SAVE_PAT | EXIT_LOAD_PAT | EXIT_SAVE_EFER | EXIT_LOAD_EFER;
	if (!adjust(t ? MSR_VMX_TRUE_EXIT : MSR_VMX_EXIT, exit_need | EXIT_SAVE_DEBUG, exit_need,
		    &c->exit))
		return "VM-exit controls (64-bit host, PAT and EFER switching)";
	uint32_t entry_need = ENTRY_LOAD_PAT | ENTRY_LOAD_EFER | ENTRY_IA32E_GUEST;
	if (!adjust(t ? MSR_VMX_TRUE_ENTRY : MSR_VMX_ENTRY, entry_need | ENTRY_LOAD_DEBUG,
		    entry_need, &c->entry))
		return "VM-entry controls (IA-32e guest, PAT and EFER loading)";
	c->entry &= ~ENTRY_IA32E_GUEST; // set per CPU from the guest's EFER.LMA

	c->ept_vpid = rdmsr(MSR_VMX_EPT_VPID_CAP);
	uint64_t e = c->ept_vpid;
	if (!(e & (1ull << 6)))
		return "EPT without 4-level page walks";
	c->ept_wb = e & (1ull << 14);
	c->ept_2m = e & (1ull << 16);
	c->ept_1g = e & (1ull << 17);
	c->invept_single = (e & (1ull << 20)) && (e & (1ull << 25));
	c->invept_all = (e & (1ull << 20)) && (e & (1ull << 26));
	if (!c->ept_wb || !(c->invept_single || c->invept_all))
		return "EPT without write-back tables or INVEPT";
	c->vpid = c->proc2 & PROC2_VPID;
	c->invvpid_single = (e & (1ull << 32)) && (e & (1ull << 41));
	c->invvpid_all = (e & (1ull << 32)) && (e & (1ull << 42));
	if (c->vpid && !(c->invvpid_single || c->invvpid_all))
		c->vpid = false, c->proc2 &= ~PROC2_VPID; // tagged TLB entries we could not flush
	c->unrestricted = true;

	c->cr0_fixed0 = rdmsr(MSR_VMX_CR0_FIXED0);
	c->cr0_fixed1 = rdmsr(MSR_VMX_CR0_FIXED1);
	c->cr4_fixed0 = rdmsr(MSR_VMX_CR4_FIXED0);
	c->cr4_fixed1 = rdmsr(MSR_VMX_CR4_FIXED1);
	// Owned CR0 bits: what the CPU forces to 1 (NE; PE and PG are lifted by
	// unrestricted guest) or to 0, and PG, whose changes need EFER.LMA and
	// the IA-32e entry control updated. Owned CR4 bits: VMXE and every bit
	// the CPU cannot set.
	c->cr0_mask = (c->cr0_fixed0 & ~(CR0_PE | CR0_PG)) | ~c->cr0_fixed1 | CR0_PG;
	c->cr4_mask = c->cr4_fixed0 | ~c->cr4_fixed1;
	c->cr0_mask &= 0xffffffffull;
	c->cr4_mask &= 0xffffffffull;
	return NULL;
}

bool vmx_cpu_prepare(const struct vmx_config *c, unsigned cpu)
{
	uint64_t fc = rdmsr(MSR_IA32_FEATURE_CONTROL);

	if (!(fc & FEATCTL_LOCKED)) {
		// Unlocked (Bochs, some firmware): enable VMX outside SMX and lock,
		// as firmware normally does. The lock stays until reset.
		fc |= FEATCTL_LOCKED | FEATCTL_VMX_OUTSIDE_SMX;
		wrmsr(MSR_IA32_FEATURE_CONTROL, fc);
		fc = rdmsr(MSR_IA32_FEATURE_CONTROL);
	}
	if (!(fc & FEATCTL_VMX_OUTSIDE_SMX)) {
		log_err("vmx: cpu %u: IA32_FEATURE_CONTROL 0x%llx forbids VMX outside SMX\n", cpu,
			(unsigned long long)fc);
		return false;
	}
	uint64_t cr0 = (read_cr0() | c->cr0_fixed0) & c->cr0_fixed1;
	uint64_t cr4 = (read_cr4() | c->cr4_fixed0) & c->cr4_fixed1;
	if ((cr0 & c->cr0_fixed0) != c->cr0_fixed0 || (cr4 & c->cr4_fixed0) != c->cr4_fixed0) {
		log_err("vmx: cpu %u: CR0/CR4 cannot meet the VMX fixed bits\n", cpu);
		return false;
	}
	write_cr0(cr0);
	write_cr4(cr4);
	return true;
}

void vmx_report_config(const struct vmx_config *c)
{
	log_info("vmx: controls pin 0x%x proc 0x%x proc2 0x%x exit 0x%x entry 0x%x (from %s "
		 "capability MSRs); virtual NMIs %s, NMI-window exiting %s\n",
		 c->pin, c->proc, c->proc2, c->exit, c->entry,
		 c->basic & (1ull << 55) ? "TRUE" : "default", c->vnmi ? "yes" : "no",
		 c->nmi_window ? "yes" : "no");
	log_info("vmx: CR0 fixed0 0x%llx fixed1 0x%llx, CR4 fixed0 0x%llx fixed1 0x%llx; owned "
		 "CR0 0x%llx CR4 0x%llx\n",
		 (unsigned long long)c->cr0_fixed0, (unsigned long long)c->cr0_fixed1,
		 (unsigned long long)c->cr4_fixed0, (unsigned long long)c->cr4_fixed1,
		 (unsigned long long)c->cr0_mask, (unsigned long long)c->cr4_mask);
}
