// SPDX-License-Identifier: Apache-2.0
//
// x86 capability probe and report. MSRs are read only when CPUID says they
// exist (VM_CR with SVM; IA32_FEATURE_CONTROL with VMX or SMX; the VMX MSRs
// with VMX, PROCBASED_CTLS2 only when the secondary controls may be enabled,
// EPT_VPID_CAP only when EPT or VPID may be enabled).
#include "arch/arch.h"
#include "arch/x86/caps.h"
#include "arch/x86/cpu.h"
#include "arch/x86/x86_boot.h"
#include "core/log.h"

static struct arch_caps x86_caps_rec;

const struct arch_caps *x86_caps(void)
{
	return &x86_caps_rec;
}

const char *arch_name(void)
{
	return "x86_64";
}

static void regs_to_chars(char *dst, const uint32_t *regs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		for (unsigned b = 0; b < 4; b++)
			dst[4 * i + b] = (char)(regs[i] >> (8 * b));
	}
	dst[4 * n] = '\0';
}

static void probe_ident(struct arch_caps *c)
{
	struct cpuid_regs r = cpuid(0, 0);
	uint32_t v[3] = {r.ebx, r.edx, r.ecx};

	c->max_leaf = r.eax;
	regs_to_chars(c->vendor, v, 3);
	r = cpuid(1, 0);
	c->leaf1_ecx = r.ecx;
	c->stepping = r.eax & 0xf;
	c->family = (r.eax >> 8) & 0xf;
	c->model = (r.eax >> 4) & 0xf;
	if (c->family == 0xf)
		c->family += (r.eax >> 20) & 0xff;
	if (c->family == 0x6 || c->family >= 0xf)
		c->model |= ((r.eax >> 16) & 0xf) << 4;
	c->hypervisor_bit = r.ecx & (1u << 31);
	c->vmx = r.ecx & (1u << 5);
	c->smx = r.ecx & (1u << 6);
	c->max_ext_leaf = cpuid(0x80000000, 0).eax;
	if (c->max_ext_leaf >= 0x80000004) {
		uint32_t b[12];
		for (unsigned i = 0; i < 3; i++) {
			r = cpuid(0x80000002 + i, 0);
			b[4 * i] = r.eax, b[4 * i + 1] = r.ebx, b[4 * i + 2] = r.ecx,
			      b[4 * i + 3] = r.edx;
		}
		regs_to_chars(c->brand, b, 12);
	}
	if (c->hypervisor_bit) {
		r = cpuid(0x40000000, 0);
		uint32_t h[3] = {r.ebx, r.ecx, r.edx};
		regs_to_chars(c->hv_vendor, h, 3);
	}
}

static void probe_svm(struct arch_caps *c)
{
	if (c->max_ext_leaf < 0x80000001)
		return;
	c->svm = cpuid(0x80000001, 0).ecx & (1u << 2);
	if (!c->svm)
		return;
	c->vm_cr = rdmsr(MSR_VM_CR);
	if (c->max_ext_leaf >= 0x8000000a) {
		struct cpuid_regs r = cpuid(0x8000000a, 0);
		c->svm_rev = r.eax & 0xff;
		c->svm_asids = r.ebx;
		c->svm_features = r.edx;
	}
}

static void probe_vmx(struct arch_caps *c)
{
	if (c->vmx || c->smx)
		c->feature_control = rdmsr(MSR_IA32_FEATURE_CONTROL);
	if (!c->vmx)
		return;
	c->vmx_basic = rdmsr(MSR_VMX_BASIC);
	bool true_ctls = c->vmx_basic & (1ull << 55);
	c->vmx_procbased = rdmsr(true_ctls ? MSR_VMX_TRUE_PROCBASED : MSR_VMX_PROCBASED);
	c->vmx_secondary = (c->vmx_procbased >> 32) & (1u << 31);
	if (!c->vmx_secondary)
		return;
	c->vmx_procbased2 = rdmsr(MSR_VMX_PROCBASED2);
	uint32_t allowed1 = (uint32_t)(c->vmx_procbased2 >> 32);
	if (allowed1 & (VMX_PROC2_EPT | VMX_PROC2_VPID))
		c->vmx_ept_vpid = rdmsr(MSR_VMX_EPT_VPID_CAP);
}

const struct arch_caps *arch_probe(const struct fw_info *fw)
{
	struct arch_caps *c = &x86_caps_rec;

	*c = (struct arch_caps){0};
	probe_ident(c);
	probe_svm(c);
	probe_vmx(c);
	return c;
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static bool bit(uint64_t v, unsigned n)
{
	return (v >> n) & 1;
}

static void report_svm(const struct arch_caps *c)
{
	uint32_t f = c->svm_features;

	log_info("svm: SVM %s\n", yes_no(c->svm));
	if (!c->svm)
		return;
	log_info("svm: revision %u, %u ASIDs, VM_CR 0x%llx (SVMDIS %s, LOCK %s)\n", c->svm_rev,
		 c->svm_asids, (unsigned long long)c->vm_cr, yes_no(c->vm_cr & VM_CR_SVMDIS),
		 yes_no(c->vm_cr & VM_CR_LOCK));
	log_info("svm: NPT %s, NRIPS %s, VMCB clean bits %s, flush-by-ASID %s, decode assists %s "
		 "(CPUID 0x8000000A EDX 0x%x)\n",
		 yes_no(f & SVM_FEAT_NP), yes_no(f & SVM_FEAT_NRIPS),
		 yes_no(f & SVM_FEAT_VMCB_CLEAN), yes_no(f & SVM_FEAT_FLUSH_BY_ASID),
		 yes_no(f & SVM_FEAT_DECODE_ASSISTS), f);
	log_info("svm: LBR virt %s, SVM lock %s, TSC rate %s, pause filter %s, pause threshold %s, "
		 "AVIC %s, VMSAVE virt %s, vGIF %s, GMET %s, vNMI %s\n",
		 yes_no(f & SVM_FEAT_LBRV), yes_no(f & SVM_FEAT_SVML),
		 yes_no(f & SVM_FEAT_TSC_RATE), yes_no(f & SVM_FEAT_PAUSE_FILTER),
		 yes_no(f & SVM_FEAT_PAUSE_THRESH), yes_no(f & SVM_FEAT_AVIC),
		 yes_no(f & SVM_FEAT_VMSAVE_VIRT), yes_no(f & SVM_FEAT_VGIF),
		 yes_no(f & SVM_FEAT_GMET), yes_no(f & SVM_FEAT_VNMI));
}

static const char *vmx_memtype_name(unsigned t)
{
	return t == 6 ? "WB" : t == 0 ? "UC" : "other";
}

static void report_vmx_ept(const struct arch_caps *c)
{
	uint64_t e = c->vmx_ept_vpid;

	log_info("vmx: EPT_VPID_CAP 0x%016llx\n", (unsigned long long)e);
	log_info("vmx: EPT 4-level %s, 5-level %s, execute-only %s, WB %s, UC %s, 2M pages %s, "
		 "1G pages %s, A/D bits %s\n",
		 yes_no(bit(e, 6)), yes_no(bit(e, 7)), yes_no(bit(e, 0)), yes_no(bit(e, 14)),
		 yes_no(bit(e, 8)), yes_no(bit(e, 16)), yes_no(bit(e, 17)), yes_no(bit(e, 21)));
	log_info("vmx: INVEPT %s (single-context %s, all-context %s), INVVPID %s (address %s, "
		 "single-context %s, all-context %s, single-context-retaining-globals %s)\n",
		 yes_no(bit(e, 20)), yes_no(bit(e, 25)), yes_no(bit(e, 26)), yes_no(bit(e, 32)),
		 yes_no(bit(e, 40)), yes_no(bit(e, 41)), yes_no(bit(e, 42)), yes_no(bit(e, 43)));
}

static void report_vmx(const struct arch_caps *c)
{
	uint64_t fc = c->feature_control, b = c->vmx_basic;

	log_info("vmx: VMX %s\n", yes_no(c->vmx));
	if (!c->vmx)
		return;
	log_info("vmx: IA32_FEATURE_CONTROL 0x%llx (locked %s, VMX outside SMX %s)\n",
		 (unsigned long long)fc, yes_no(fc & FEATCTL_LOCKED),
		 yes_no(fc & FEATCTL_VMX_OUTSIDE_SMX));
	log_info("vmx: VMX_BASIC 0x%016llx: revision 0x%x, VMXON region %u bytes, memory type %s, "
		 "TRUE controls %s\n",
		 (unsigned long long)b, (unsigned)(b & 0x7fffffff), (unsigned)((b >> 32) & 0x1fff),
		 vmx_memtype_name((unsigned)((b >> 50) & 0xf)), yes_no(bit(b, 55)));
	log_info("vmx: secondary controls %s\n", yes_no(c->vmx_secondary));
	if (!c->vmx_secondary)
		return;
	uint32_t p2 = (uint32_t)(c->vmx_procbased2 >> 32);
	log_info("vmx: PROCBASED_CTLS2 allowed-1 0x%08x: EPT %s, VPID %s, unrestricted guest %s, "
		 "VMCS shadowing %s, PML %s, RDTSCP %s, INVPCID %s, XSAVES %s\n",
		 p2, yes_no(p2 & VMX_PROC2_EPT), yes_no(p2 & VMX_PROC2_VPID),
		 yes_no(p2 & VMX_PROC2_UNRESTRICTED), yes_no(p2 & VMX_PROC2_VMCS_SHADOW),
		 yes_no(p2 & VMX_PROC2_PML), yes_no(p2 & VMX_PROC2_RDTSCP),
		 yes_no(p2 & VMX_PROC2_INVPCID), yes_no(p2 & VMX_PROC2_XSAVES));
	if (p2 & (VMX_PROC2_EPT | VMX_PROC2_VPID))
		report_vmx_ept(c);
}

void arch_report(const struct arch_caps *c)
{
	log_info("cpu: vendor %s, family 0x%x model 0x%x stepping %u\n", c->vendor, c->family,
		 c->model, c->stepping);
	if (c->brand[0])
		log_info("cpu: %s\n", c->brand);
	if (c->hypervisor_bit)
		log_info("cpu: hypervisor bit set (CPUID 0x40000000 vendor \"%s\")\n",
			 c->hv_vendor);
	report_svm(c);
	report_vmx(c);
}

const char *arch_virt_unusable(const struct arch_caps *c)
{
	if (c->svm) {
		if (c->vm_cr & VM_CR_SVMDIS)
			return "AMD SVM is disabled by the firmware (VM_CR.SVMDIS)";
		if (!(c->svm_features & SVM_FEAT_NP))
			return "AMD SVM without nested paging (NPT)";
		return NULL;
	}
	if (c->vmx) {
		uint64_t fc = c->feature_control;
		if ((fc & FEATCTL_LOCKED) && !(fc & FEATCTL_VMX_OUTSIDE_SMX))
			return "Intel VMX is disabled by the firmware (IA32_FEATURE_CONTROL locked "
			       "without VMX outside SMX)";
		if (!c->vmx_secondary || !((c->vmx_procbased2 >> 32) & VMX_PROC2_EPT))
			return "Intel VMX without EPT";
		return NULL;
	}
	return "this CPU offers neither AMD SVM nor Intel VMX";
}
