// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kvm on x86 (docs/kvm-api.md): the vCPU state of the KVM API over
 * Slat's register page (KVM_GET/SET_REGS, KVM_GET/SET_SREGS), the VMM's
 * CPUID table (KVM_SET_CPUID2, checked by Slat against what it gives a
 * secondary: KVM_GET_SUPPORTED_CPUID) and the MSRs Slat keeps per vCPU
 * (KVM_GET/SET_MSRS), with ABI 1.3; with ABI 1.4 KVM's interrupts without
 * an in-kernel irqchip (KVM_INTERRUPT, request_interrupt_window,
 * KVM_EXIT_IRQ_WINDOW_OPEN) and the in-kernel irqchip (KVM_CREATE_IRQCHIP:
 * local APICs and an I/O APIC, slat_kvm_irq.h; no 8259 PIC), with
 * KVM_IRQ_LINE, KVM_SIGNAL_MSI, KVM_GET/SET_IRQCHIP and the wait-for-SIPI
 * states of KVM_GET/SET_MP_STATE.
 */
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/msr-index.h>
#include <asm/tsc.h>

#include "slat_kvm.h"
#include "slat_kvm_irq.h"

#define X86_MAX_CPUID		256 /* KVM_MAX_CPUID_ENTRIES */
#define APIC_BASE_RESET		0xfee00800ull
#define APIC_BASE_BSP		0x100ull
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)

/* The MSRs Slat keeps per vCPU that a VMM can save and restore. */
static const u32 x86_saved_msrs[] = {
    MSR_IA32_SYSENTER_CS,
    MSR_IA32_SYSENTER_ESP,
    MSR_IA32_SYSENTER_EIP,
    MSR_STAR,
    MSR_LSTAR,
    MSR_CSTAR,
    MSR_SYSCALL_MASK,
    MSR_KERNEL_GS_BASE,
    MSR_IA32_CR_PAT,
};

/* Slat delivers the VMM's interrupts (ABI 1.4): KVM_INTERRUPT and the irqchip. */
static bool x86_irq_ok(void)
{
	return (slat_hv_version & 0xffff) >= 4;
}

/* ABI 1.8: Slat delivers NMIs (KVM_NMI, the LAPIC's NMI IPIs and MSIs). */
static bool x86_nmi_ok(void)
{
	return (slat_hv_version & 0xffff) >= 8;
}

/* ABI 1.5: IA32_TSC_DEADLINE exits to the module (the LAPIC's timer). */
static bool x86_deadline_ok(void)
{
	return (slat_hv_version & 0xffff) >= 5;
}

bool slat_kvm_arch_offered(void)
{
	return (slat_hv_version & 0xffff) >= 3; /* ABI 1.3: CPUID and MSRs */
}

unsigned int slat_kvm_arch_max_vcpus(unsigned int limit)
{
	return limit;
}

long slat_kvm_arch_cap(long cap)
{
	switch (cap) {
	case KVM_CAP_EXT_CPUID:
	case KVM_CAP_MP_STATE:
	case KVM_CAP_SET_TSS_ADDR: /* accepted and unused, as on KVM's SVM */
		return 1;
	case KVM_CAP_IRQCHIP: /* local APICs and an I/O APIC, no PIC */
	case KVM_CAP_SIGNAL_MSI:
		return x86_irq_ok();
	case KVM_CAP_TSC_DEADLINE_TIMER: /* the LAPIC's, through Slat's MSR exits */
		return x86_deadline_ok();
	case KVM_CAP_USER_NMI:
		return x86_nmi_ok();
	case KVM_CAP_GET_TSC_KHZ:
		return 1;
	default:
		return -1;
	}
}

int slat_kvm_arch_vm_type(unsigned long type, unsigned int *ipa_bits)
{
	return type ? -EINVAL : 0; /* KVM_X86_DEFAULT_VM only */
}

/* KVM's rules: once, before any vCPU (-EEXIST, -EINVAL). */
static long x86_create_irqchip(struct slat_vm *vm)
{
	struct slat_irqchip *c;
	long rc = 0;

	if (!x86_irq_ok())
		return -ENOTTY;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	slat_ioapic_init(&c->ioapic);
	c->vm = vm;
	mutex_lock(&vm->lock);
	if (vm->irqchip)
		rc = -EEXIST;
	else if (!xa_empty(&vm->vcpus))
		rc = -EINVAL;
	else
		WRITE_ONCE(vm->irqchip, c);
	mutex_unlock(&vm->lock);
	if (rc)
		kfree(c);
	return rc;
}

/* KVM_IRQ_LINE: GSI 0-23 are the I/O APIC's pins (no PIC, no routing table). */
static long x86_irq_line(struct slat_vm *vm, void __user *up)
{
	struct kvm_irq_level l;

	if (!READ_ONCE(vm->irqchip))
		return -ENXIO;
	if (copy_from_user(&l, up, sizeof(l)))
		return -EFAULT;
	return slat_ioapic_set_line(vm->irqchip, l.irq, l.level);
}

/*
 * KVM_SIGNAL_MSI: an MSI write decoded as the local APICs see it (address
 * 0xfeeXXXXX: destination in bits 19:12, logical in bit 2; data: vector,
 * delivery mode, trigger). KVM's answer: how many LAPICs took it.
 */
static long x86_signal_msi(struct slat_vm *vm, void __user *up)
{
	struct kvm_msi m;
	u32 mode;

	if (!READ_ONCE(vm->irqchip))
		return -EINVAL; /* KVM's answer without an irqchip */
	if (copy_from_user(&m, up, sizeof(m)))
		return -EFAULT;
	if (m.flags || m.address_hi || (m.address_lo >> 20) != 0xfee)
		return -EINVAL; /* no device IDs, no x2APIC destinations */
	mode = m.data >> 8 & 7;
	if (!slat_dm_emulated(mode)) {
		pr_info_once("slat: MSI delivery mode %u (SMI, ExtINT) not emulated\n", mode);
		return 0;
	}
	return slat_irq_deliver(vm, m.address_lo >> 12 & 0xff, m.address_lo & 4, mode,
				m.data & 0xff, m.data & (1u << 15));
}

/* KVM_GET/SET_IRQCHIP: the I/O APIC (chip 2); there is no PIC (chips 0, 1). */
static long x86_irqchip_state(struct slat_vm *vm, void __user *up, bool set)
{
	struct slat_irqchip *c = READ_ONCE(vm->irqchip);
	struct kvm_irqchip *k;
	long rc = 0;

	if (!c)
		return -ENXIO;
	k = memdup_user(up, sizeof(*k));
	if (IS_ERR(k))
		return PTR_ERR(k);
	if (k->chip_id != KVM_IRQCHIP_IOAPIC)
		rc = -EINVAL;
	else if (set)
		rc = slat_ioapic_set(c, &k->chip.ioapic);
	else {
		slat_ioapic_get(c, &k->chip.ioapic);
		rc = copy_to_user(up, k, sizeof(*k)) ? -EFAULT : 0;
	}
	kfree(k);
	return rc;
}

long slat_kvm_arch_vm_ioctl(struct slat_kvm_vm *kvm, unsigned int cmd, void __user *up)
{
	switch (cmd) {
	case KVM_SET_TSS_ADDR:
	case KVM_SET_IDENTITY_MAP_ADDR:
		return 0; /* VMX real-mode helpers; SVM needs neither */
	case KVM_SET_NR_MMU_PAGES:
		/* A shadow-paging budget; Slat's SLAT tables come from the
		 * deposit. KVM's lower bound (KVM_MIN_ALLOC_MMU_PAGES) holds. */
		return (unsigned long)up < 64 ? -EINVAL : 0;
	case KVM_CREATE_IRQCHIP:
		return x86_create_irqchip(kvm->vm);
	case KVM_IRQ_LINE:
		return x86_irq_line(kvm->vm, up);
	case KVM_SIGNAL_MSI:
		return x86_signal_msi(kvm->vm, up);
	case KVM_GET_IRQCHIP:
	case KVM_SET_IRQCHIP:
		return x86_irqchip_state(kvm->vm, up, cmd == KVM_SET_IRQCHIP);
	default:
		return -ENOTTY;
	}
}

/* ---- system ioctls ---- */

/* A page Slat fills (CPUID_SUPPORTED); the entries in *n. */
static int x86_supported(struct page **pg, u64 *n)
{
	u64 r[3];
	long st;

	*pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!*pg)
		return -ENOMEM;
	st = slat_call(HC_CPUID_SUPPORTED, slat_pa(*pg), 0, 0, 0, 0, 0, r);
	*n = r[0];
	return slat_errno(st);
}

static void to_kvm_entry(const struct hc_cpuid_entry *h, struct kvm_cpuid_entry2 *k)
{
	memset(k, 0, sizeof(*k));
	k->function = h->function;
	k->index = h->index;
	k->flags = h->flags & HC_CPUID_F_INDEXED ? KVM_CPUID_FLAG_SIGNIFCANT_INDEX : 0;
	k->eax = h->eax;
	k->ebx = h->ebx;
	k->ecx = h->ecx;
	k->edx = h->edx;
}

/* `n` entries of `tab` into the VMM's struct kvm_cpuid2; -E2BIG as KVM. */
static int put_cpuid2(struct kvm_cpuid2 __user *up, const struct hc_cpuid_entry *tab, u32 n)
{
	struct kvm_cpuid_entry2 e;
	u32 nent, i;

	if (get_user(nent, &up->nent))
		return -EFAULT;
	if (nent < n)
		return -E2BIG;
	for (i = 0; i < n; i++) {
		to_kvm_entry(&tab[i], &e);
		if (copy_to_user(&up->entries[i], &e, sizeof(e)))
			return -EFAULT;
	}
	return put_user(n, &up->nent);
}

static long x86_get_supported_cpuid(struct kvm_cpuid2 __user *up)
{
	struct page *pg;
	u64 n;
	int rc = x86_supported(&pg, &n);

	if (!rc)
		rc = put_cpuid2(up, page_address(pg), (u32)n);
	if (pg)
		__free_page(pg);
	return rc;
}

/* KVM_GET_MSR_INDEX_LIST: nmsrs is set before the size check, as KVM does. */
static long x86_msr_index_list(struct kvm_msr_list __user *up, const u32 *list, u32 n)
{
	u32 room;

	if (get_user(room, &up->nmsrs) || put_user(n, &up->nmsrs))
		return -EFAULT;
	if (room < n)
		return -E2BIG;
	return copy_to_user(up->indices, list, n * sizeof(u32)) ? -EFAULT : 0;
}

long slat_kvm_arch_dev_ioctl(unsigned int cmd, void __user *up)
{
	struct kvm_cpuid2 __user *c = up;

	switch (cmd) {
	case KVM_GET_SUPPORTED_CPUID:
		return x86_get_supported_cpuid(up);
	case KVM_GET_EMULATED_CPUID: /* Slat emulates no instruction beyond the CPU's */
		return put_user(0, &c->nent);
	case KVM_GET_MSR_INDEX_LIST:
		return x86_msr_index_list(up, x86_saved_msrs, ARRAY_SIZE(x86_saved_msrs));
	case KVM_GET_MSR_FEATURE_INDEX_LIST:
		return x86_msr_index_list(up, NULL, 0);
	default:
		return -ENOTTY;
	}
}

/* ---- vCPUs ---- */

struct slat_kvm_x86 {
	struct hc_cpuid_entry *cpuid; /* the table last set (KVM_GET_CPUID2) */
	u32 ncpuid;
	struct slat_lapic *lapic;  /* with KVM_CREATE_IRQCHIP before the vCPU */
	struct hc_regs_x86 *reset; /* with a LAPIC: Slat's reset state, for INIT */
	bool listed;		   /* in the VM's vcpus (and kvcpus with a LAPIC) */
	atomic_t nmis;		   /* KVM_NMI without a LAPIC: not yet offered to Slat */
};

struct slat_lapic *slat_kvm_x86_lapic(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = v->arch;

	return x ? x->lapic : NULL;
}

/* Under the VM's lock, so that KVM_CREATE_IRQCHIP sees every vCPU made. */
static int x86_vcpu_list(struct slat_kvm_vcpu *v, struct slat_kvm_x86 *x)
{
	struct slat_vm *vm = v->vc->vm;
	int rc = 0;

	mutex_lock(&vm->lock);
	if (vm->irqchip) {
		x->lapic = slat_lapic_new(v);
		rc = x->lapic ? 0 : -ENOMEM;
	}
	rc = rc ?: xa_insert(&vm->vcpus, v->id, xa_mk_value(1), GFP_KERNEL);
	if (!rc && x->lapic) {
		rc = xa_insert(&vm->kvcpus, v->id, x->lapic, GFP_KERNEL);
		if (rc)
			xa_erase(&vm->vcpus, v->id);
	}
	x->listed = !rc;
	mutex_unlock(&vm->lock);
	return rc;
}

static int x86_regs(struct slat_kvm_vcpu *v, struct hc_regs_x86 *r, bool set);

int slat_kvm_arch_vcpu_create(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = kzalloc(sizeof(*x), GFP_KERNEL);
	int rc;

	if (!x)
		return -ENOMEM;
	v->arch = x;
	v->inited = true;
	rc = x86_vcpu_list(v, x);
	if (rc || !x->lapic)
		return rc;
	/* The state a new vCPU has is the state INIT gives back. */
	x->reset = kzalloc(sizeof(*x->reset), GFP_KERNEL);
	return x->reset ? x86_regs(v, x->reset, false) : -ENOMEM;
}

void slat_kvm_arch_vcpu_free(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = v->arch;
	struct slat_vm *vm = v->vc->vm;

	if (!x)
		return;
	if (x->listed) {
		mutex_lock(&vm->lock);
		xa_erase(&vm->vcpus, v->id);
		if (x->lapic)
			xa_erase(&vm->kvcpus, v->id);
		mutex_unlock(&vm->lock);
	}
	slat_lapic_free(x->lapic); /* after RCU: an IPI may be looking at it */
	kfree(x->reset);
	kfree(x->cpuid);
	kfree(x);
	v->arch = NULL;
}

/* Slat's register page, read (and written back after `change` when set). */
static int x86_regs(struct slat_kvm_vcpu *v, struct hc_regs_x86 *r, bool set)
{
	return slat_vcpu_regs_k(v->vc, r, set);
}

/* struct kvm_regs order -> Slat's encoding order (RAX RCX RDX RBX RSP RBP RSI RDI R8..). */
static u64 *gpr_of(struct kvm_regs *k, unsigned int i)
{
	u64 *const map[16] = {&k->rax, &k->rcx, &k->rdx, &k->rbx, &k->rsp, &k->rbp,
			      &k->rsi, &k->rdi, &k->r8,	 &k->r9,  &k->r10, &k->r11,
			      &k->r12, &k->r13, &k->r14, &k->r15};
	return map[i];
}

static long x86_get_set_regs(struct slat_kvm_vcpu *v, void __user *up, bool set)
{
	struct hc_regs_x86 *r = kzalloc(sizeof(*r), GFP_KERNEL);
	struct kvm_regs k;
	unsigned int i;
	int rc;

	if (!r)
		return -ENOMEM;
	rc = set && copy_from_user(&k, up, sizeof(k)) ? -EFAULT : x86_regs(v, r, false);
	if (!rc && set) {
		for (i = 0; i < 16; i++)
			r->gpr[i] = *gpr_of(&k, i);
		r->rip = k.rip;
		r->rflags = k.rflags;
		rc = x86_regs(v, r, true); /* Slat refuses reserved RFLAGS bits: -EINVAL */
	} else if (!rc) {
		memset(&k, 0, sizeof(k));
		for (i = 0; i < 16; i++)
			*gpr_of(&k, i) = r->gpr[i];
		k.rip = r->rip;
		k.rflags = r->rflags;
		rc = copy_to_user(up, &k, sizeof(k)) ? -EFAULT : 0;
	}
	kfree(r);
	return rc;
}

/* Slat's segment attributes: type(3:0) S(4) DPL(6:5) P(7) AVL(8) L(9) D/B(10) G(11). */
static void seg_to_kvm(const struct hc_x86_seg *h, struct kvm_segment *k)
{
	memset(k, 0, sizeof(*k));
	k->base = h->base;
	k->limit = h->limit;
	k->selector = h->sel;
	k->type = h->attr & 0xf;
	k->s = h->attr >> 4 & 1;
	k->dpl = h->attr >> 5 & 3;
	k->present = h->attr >> 7 & 1;
	k->avl = h->attr >> 8 & 1;
	k->l = h->attr >> 9 & 1;
	k->db = h->attr >> 10 & 1;
	k->g = h->attr >> 11 & 1;
	k->unusable = !k->present; /* as KVM's SVM reports it */
}

static void seg_from_kvm(const struct kvm_segment *k, struct hc_x86_seg *h)
{
	h->base = k->base;
	h->limit = k->limit;
	h->sel = k->selector;
	/* An unusable segment is a not-present one on SVM (KVM does the same). */
	h->attr = k->unusable ? 0
			      : (k->type & 0xf) | (k->s & 1) << 4 | (k->dpl & 3) << 5 |
				    (k->present & 1) << 7 | (k->avl & 1) << 8 | (k->l & 1) << 9 |
				    (k->db & 1) << 10 | (k->g & 1) << 11;
}

static u64 x86_apic_base(struct slat_kvm_vcpu *v)
{
	return APIC_BASE_RESET | (v->id == 0 ? APIC_BASE_BSP : 0);
}

static void sregs_to_kvm(struct slat_kvm_vcpu *v, const struct hc_regs_x86 *r, struct kvm_sregs *s)
{
	memset(s, 0, sizeof(*s));
	seg_to_kvm(&r->cs, &s->cs);
	seg_to_kvm(&r->ds, &s->ds);
	seg_to_kvm(&r->es, &s->es);
	seg_to_kvm(&r->fs, &s->fs);
	seg_to_kvm(&r->gs, &s->gs);
	seg_to_kvm(&r->ss, &s->ss);
	seg_to_kvm(&r->tr, &s->tr);
	seg_to_kvm(&r->ldtr, &s->ldt);
	s->gdt.base = r->gdt_base;
	s->gdt.limit = r->gdt_limit;
	s->idt.base = r->idt_base;
	s->idt.limit = r->idt_limit;
	s->cr0 = r->cr0;
	s->cr2 = r->cr2;
	s->cr3 = r->cr3;
	s->cr4 = r->cr4;
	s->efer = r->efer;
	s->apic_base = x86_apic_base(v);
}

/*
 * What Slat cannot hold is refused rather than dropped: a TPR (CR8), an
 * APIC base other than the reset one and a pending interrupt all need the
 * local APIC Slat does not have yet.
 */
static int sregs_from_kvm(struct slat_kvm_vcpu *v, const struct kvm_sregs *s, struct hc_regs_x86 *r)
{
	unsigned int i;

	if (s->cr8 || s->apic_base != x86_apic_base(v))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(s->interrupt_bitmap); i++)
		if (s->interrupt_bitmap[i])
			return -EINVAL;
	seg_from_kvm(&s->cs, &r->cs);
	seg_from_kvm(&s->ds, &r->ds);
	seg_from_kvm(&s->es, &r->es);
	seg_from_kvm(&s->fs, &r->fs);
	seg_from_kvm(&s->gs, &r->gs);
	seg_from_kvm(&s->ss, &r->ss);
	seg_from_kvm(&s->tr, &r->tr);
	seg_from_kvm(&s->ldt, &r->ldtr);
	r->gdt_base = s->gdt.base;
	r->gdt_limit = s->gdt.limit;
	r->idt_base = s->idt.base;
	r->idt_limit = s->idt.limit;
	r->cr0 = s->cr0;
	r->cr2 = s->cr2;
	r->cr3 = s->cr3;
	r->cr4 = s->cr4;
	r->efer = s->efer;
	return 0;
}

static long x86_get_set_sregs(struct slat_kvm_vcpu *v, void __user *up, bool set)
{
	struct hc_regs_x86 *r = kzalloc(sizeof(*r), GFP_KERNEL);
	struct kvm_sregs *s = kzalloc(sizeof(*s), GFP_KERNEL);
	int rc = !r || !s ? -ENOMEM : 0;

	if (!rc && set && copy_from_user(s, up, sizeof(*s)))
		rc = -EFAULT;
	if (!rc)
		rc = x86_regs(v, r, false);
	if (!rc && set) {
		rc = sregs_from_kvm(v, s, r);
		if (!rc)
			rc = x86_regs(v, r, true); /* Slat's VMRUN checks: -EINVAL */
	} else if (!rc) {
		sregs_to_kvm(v, r, s);
		rc = copy_to_user(up, s, sizeof(*s)) ? -EFAULT : 0;
	}
	kfree(s);
	kfree(r);
	return rc;
}

/* KVM_GET/SET_MSRS: the number of MSRs done (stops at the first refused one). */
static long x86_msrs(struct slat_kvm_vcpu *v, struct kvm_msrs __user *up, bool set)
{
	struct hc_msr_entry *list;
	struct kvm_msr_entry e;
	struct page *pg;
	u32 n, i;
	u64 r[3];
	long st;
	int rc = 0;

	if (get_user(n, &up->nmsrs))
		return -EFAULT;
	if (n > HC_MSR_MAX)
		return -E2BIG; /* KVM's MAX_IO_MSRS is the same 256 */
	pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!pg)
		return -ENOMEM;
	list = page_address(pg);
	for (i = 0; i < n && !rc; i++) {
		if (copy_from_user(&e, &up->entries[i], sizeof(e)))
			rc = -EFAULT;
		list[i].index = e.index;
		list[i].data = e.data;
	}
	st = rc ? HC_OK
		: slat_call(HC_VCPU_MSRS, v->vc->vm->id, v->vc->index, slat_pa(pg), n, set, 0, r);
	if (!rc)
		rc = slat_errno(st);
	for (i = 0; !rc && !set && i < r[0]; i++)
		if (put_user(list[i].data, &up->entries[i].data))
			rc = -EFAULT;
	__free_page(pg);
	return rc ? rc : (long)r[0];
}

/* The vCPU's CPUID (KVM_SET_CPUID2) offers the TSC-deadline timer. */
static bool x86_has_deadline(const struct slat_kvm_x86 *x)
{
	u32 i;

	for (i = 0; i < x->ncpuid; i++)
		if (x->cpuid[i].function == 1)
			return x->cpuid[i].ecx & CPUID1_ECX_TSC_DEADLINE;
	return false;
}

/* KVM_SET_CPUID2: Slat checks the table (-EINVAL for a feature it lacks). */
static long x86_set_cpuid2(struct slat_kvm_vcpu *v, struct kvm_cpuid2 __user *up)
{
	struct slat_kvm_x86 *x = v->arch;
	struct hc_cpuid_entry *tab = NULL;
	struct kvm_cpuid_entry2 e;
	struct page *pg;
	u32 n, i;
	u64 r[3];
	int rc = 0;

	if (get_user(n, &up->nent))
		return -EFAULT;
	if (n > X86_MAX_CPUID)
		return -E2BIG;
	if (n > HC_CPUID_MAX)
		return -E2BIG; /* Slat's table holds 128 leaves */
	pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (n)
		tab = kcalloc(n, sizeof(*tab), GFP_KERNEL);
	if (!pg || (n && !tab)) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (copy_from_user(&e, &up->entries[i], sizeof(e))) {
			rc = -EFAULT;
			goto out;
		}
		tab[i] = (struct hc_cpuid_entry){
		    .function = e.function,
		    .index = e.index,
		    .flags = e.flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX ? HC_CPUID_F_INDEXED : 0,
		    .eax = e.eax,
		    .ebx = e.ebx,
		    .ecx = e.ecx,
		    .edx = e.edx};
	}
	memcpy(page_address(pg), tab, n * sizeof(*tab));
	rc = slat_errno(
	    slat_call(HC_VCPU_SET_CPUID, v->vc->vm->id, v->vc->index, slat_pa(pg), n, 0, 0, r));
	if (!rc) {
		swap(x->cpuid, tab);
		x->ncpuid = n;
		if (slat_kvm_x86_lapic(v))
			slat_lapic_set_deadline_ok(slat_kvm_x86_lapic(v), x86_has_deadline(x));
	}
out:
	kfree(tab);
	if (pg)
		__free_page(pg);
	return rc;
}

static long x86_get_cpuid2(struct slat_kvm_vcpu *v, struct kvm_cpuid2 __user *up)
{
	struct slat_kvm_x86 *x = v->arch;

	return put_cpuid2(up, x->cpuid, x->ncpuid);
}

/*
 * KVM_INTERRUPT without an in-kernel irqchip: the vector waits in Slat's run
 * page until the guest can take it (Slat clears it once delivered); a second
 * one before that is -EEXIST, as in KVM.
 */
static long x86_interrupt(struct slat_kvm_vcpu *v, struct kvm_interrupt __user *up)
{
	struct hc_run *hr = page_address(v->vc->run);
	struct kvm_interrupt irq;

	if (!x86_irq_ok())
		return -ENOTTY;
	if (slat_kvm_x86_lapic(v))
		return -ENXIO; /* the in-kernel LAPIC owns interrupts, as in KVM */
	if (copy_from_user(&irq, up, sizeof(irq)))
		return -EFAULT;
	if (irq.irq >= 256)
		return -EINVAL;
	if (hr->irq & HC_IRQ_VALID)
		return -EEXIST;
	hr->irq = HC_IRQ_VALID | irq.irq;
	return 0;
}

/* Where the vCPU's NMIs wait to be offered: its LAPIC's count, or its own. */
static atomic_t *x86_nmis(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = v->arch;

	return x->lapic ? &x->lapic->nmis : &x->nmis;
}

/*
 * KVM_NMI: one more NMI for the vCPU, delivered by Slat once the guest is not
 * in an NMI handler. At most two wait (as in KVM: one may be delivered while
 * the next is held); more merge, as NMIs do in hardware.
 */
static long x86_nmi(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = v->arch;

	if (!x86_nmi_ok())
		return -ENOTTY;
	if (x->lapic)
		slat_lapic_nmi(x->lapic);
	else
		atomic_add_unless(&x->nmis, 1, 2); /* taken at the next KVM_RUN */
	return 0;
}

/*
 * Without an in-kernel irqchip only RUNNABLE exists (KVM says the same);
 * with one also the two states of a vCPU waiting to be started (the LAPIC's).
 */
static long x86_mp_state(struct slat_kvm_vcpu *v, struct kvm_mp_state __user *up, bool set)
{
	struct slat_lapic *l = slat_kvm_x86_lapic(v);
	struct kvm_mp_state mp = {.mp_state = KVM_MP_STATE_RUNNABLE};

	if (!set) {
		if (l)
			mp.mp_state = slat_lapic_mp_state(l);
		return copy_to_user(up, &mp, sizeof(mp)) ? -EFAULT : 0;
	}
	if (copy_from_user(&mp, up, sizeof(mp)))
		return -EFAULT;
	if (l)
		return slat_lapic_set_mp_state(l, mp.mp_state);
	return mp.mp_state == KVM_MP_STATE_RUNNABLE ? 0 : -EINVAL;
}

/* KVM_GET/SET_LAPIC: the register page; -EINVAL without a local APIC, as KVM. */
static long x86_lapic_state(struct slat_kvm_vcpu *v, void __user *up, bool set)
{
	struct slat_lapic *l = slat_kvm_x86_lapic(v);
	struct kvm_lapic_state *s;
	long rc = 0;

	BUILD_BUG_ON(sizeof(s->regs) != SLAT_APIC_PAGE_BYTES);
	if (!l)
		return -EINVAL;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	if (set) {
		rc = copy_from_user(s, up, sizeof(*s)) ? -EFAULT : slat_lapic_set(l, (u8 *)s->regs);
		if (!rc) /* the vector offered to Slat is the old state's */
			((struct hc_run *)page_address(v->vc->run))->irq = 0;
	} else {
		slat_lapic_get(l, (u8 *)s->regs);
		rc = copy_to_user(up, s, sizeof(*s)) ? -EFAULT : 0;
	}
	kfree(s);
	return rc;
}

long slat_kvm_arch_vcpu_ioctl(struct slat_kvm_vcpu *v, unsigned int cmd, void __user *up)
{
	switch (cmd) {
	case KVM_GET_REGS:
	case KVM_SET_REGS:
		return x86_get_set_regs(v, up, cmd == KVM_SET_REGS);
	case KVM_GET_SREGS:
	case KVM_SET_SREGS:
		return x86_get_set_sregs(v, up, cmd == KVM_SET_SREGS);
	case KVM_GET_MSRS:
	case KVM_SET_MSRS:
		return x86_msrs(v, up, cmd == KVM_SET_MSRS);
	case KVM_SET_CPUID2:
		return x86_set_cpuid2(v, up);
	case KVM_GET_CPUID2:
		return x86_get_cpuid2(v, up);
	case KVM_GET_MP_STATE:
	case KVM_SET_MP_STATE:
		return x86_mp_state(v, up, cmd == KVM_SET_MP_STATE);
	case KVM_INTERRUPT:
		return x86_interrupt(v, up);
	case KVM_NMI:
		return x86_nmi(v);
	case KVM_GET_LAPIC:
	case KVM_SET_LAPIC:
		return x86_lapic_state(v, up, cmd == KVM_SET_LAPIC);
	case KVM_GET_TSC_KHZ: /* the guest's TSC is the host's */
		return tsc_khz ? (long)tsc_khz : -EIO;
	default:
		return -ENOTTY; /* KVM_GET_FPU, KVM_GET_VCPU_EVENTS, ... not yet */
	}
}

/*
 * The vector offered to Slat went in (Slat cleared HC_IRQ_VALID): IRR to ISR,
 * once, before anything is offered again (a RUN may end preempted right
 * after delivering it).
 */
static void x86_retire_irq(struct slat_lapic *l, struct hc_run *hr)
{
	if (l->queued >= 0 && !(hr->irq & HC_IRQ_VALID)) {
		slat_lapic_accept(l, l->queued);
		l->queued = -1;
	}
}

/*
 * With a local APIC: its highest deliverable vector goes to Slat (which
 * delivers it once the guest can take it). The thread is recorded first, so
 * that an interrupt set after the check kicks it out of Slat.
 */
static void x86_offer_irq(struct slat_lapic *l, struct hc_run *hr)
{
	int vec;

	WRITE_ONCE(l->task, current);
	smp_mb(); /* the task before the check; kick() reads in the other order */
	x86_retire_irq(l, hr);
	if (hr->irq & HC_IRQ_VALID)
		return;
	vec = slat_lapic_pending(l);
	if (vec >= 0) {
		l->queued = vec;
		hr->irq = HC_IRQ_VALID | vec;
	}
}

/*
 * INIT and STARTUP, applied by the vCPU's own thread (Slat's registers change
 * only while the vCPU is stopped): INIT loads the reset state, STARTUP real
 * mode at vector << 12 (CS = vector << 8, IP 0: the SDM's MP start-up);
 * anything the old state had offered to Slat is dropped.
 */
static int x86_apply_start(struct slat_kvm_vcpu *v, bool init, int sipi)
{
	struct slat_kvm_x86 *x = v->arch;
	struct hc_run *hr = page_address(v->vc->run);
	struct hc_regs_x86 *r;
	int rc;

	if (!init && sipi < 0)
		return 0;
	r = kmemdup(x->reset, sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	if (sipi >= 0) {
		r->cs.sel = (u16)(sipi << 8);
		r->cs.base = (u64)sipi << 12;
		r->rip = 0;
	}
	hr->irq = 0;
	rc = x86_regs(v, r, true);
	kfree(r);
	return rc;
}

/* A vCPU not yet started waits in the kernel for INIT and STARTUP. */
static int x86_start_events(struct slat_kvm_vcpu *v, struct slat_lapic *l)
{
	bool init;
	int sipi, rc;

	for (;;) {
		bool run = slat_lapic_take_start(l, &init, &sipi);

		rc = x86_apply_start(v, init, sipi);
		if (rc || run)
			return rc;
		if (wait_event_interruptible(l->wq, slat_lapic_start_event(l)))
			return -EINTR; /* KVM_EXIT_INTR */
	}
}

/*
 * One waiting NMI goes to Slat when Slat holds none (it says so at each exit;
 * one offered but not taken, a RUN refused, stays in hr->nmi).
 */
static void x86_offer_nmi(struct slat_kvm_vcpu *v, struct hc_run *hr)
{
	if (!x86_nmi_ok() || hr->nmi || (hr->nmi_state & HC_NMI_HELD))
		return;
	if (atomic_add_unless(x86_nmis(v), -1, 0))
		hr->nmi = 1;
}

/* Before each entry: the VMM's window request, or the LAPIC's vector; NMIs. */
int slat_kvm_arch_vcpu_ready(struct slat_kvm_vcpu *v)
{
	struct kvm_run *kr = page_address(v->run);
	struct hc_run *hr = page_address(v->vc->run);
	struct slat_lapic *l = slat_kvm_x86_lapic(v);
	int rc;

	if (!x86_irq_ok())
		return 0;
	x86_offer_nmi(v, hr);
	if (!l) {
		hr->irq_window = READ_ONCE(kr->request_interrupt_window) ? 1 : 0;
		return 0;
	}
	rc = x86_start_events(v, l);
	if (!rc)
		x86_offer_irq(l, hr);
	return rc;
}

/* The thread leaves KVM_RUN: nothing may kick it any more. */
void slat_kvm_arch_vcpu_done(struct slat_kvm_vcpu *v)
{
	struct slat_lapic *l = slat_kvm_x86_lapic(v);

	if (l)
		WRITE_ONCE(l->task, NULL);
}

/* An access to the LAPIC's page or the I/O APIC's window: answered here. */
static bool x86_irqchip_mmio(struct slat_kvm_vcpu *v, struct slat_lapic *l, struct hc_run *hr)
{
	u64 gpa = hr->u.mmio.gpa;
	u32 val = (u32)hr->u.mmio.data;
	bool ok;

	if (gpa - SLAT_APIC_BASE < 0x1000)
		ok = hr->u.mmio.len == 4 &&
		     slat_lapic_mmio(l, gpa - SLAT_APIC_BASE, hr->u.mmio.is_write, &val);
	else if (gpa - SLAT_IOAPIC_BASE < SLAT_IOAPIC_SIZE)
		ok = hr->u.mmio.len == 4 && !(gpa & 3) &&
		     slat_ioapic_mmio(v->vc->vm->irqchip, gpa - SLAT_IOAPIC_BASE,
				      hr->u.mmio.is_write, &val);
	else
		return false;
	if (!ok) {
		pr_info_once("slat: APIC access of %u bytes at 0x%llx not emulated\n",
			     hr->u.mmio.len, gpa);
		val = 0;
	}
	if (!hr->u.mmio.is_write)
		hr->u.mmio.data = val; /* Slat completes the read at the next entry */
	return true;
}

/* HLT with a local APIC: wait in the kernel for an interrupt the guest takes. */
static int x86_halt(struct slat_lapic *l, struct hc_run *hr, struct kvm_run *kr)
{
	bool if_set = hr->if_flag;

	if (wait_event_interruptible(l->wq, (if_set && slat_lapic_pending(l) >= 0) ||
						atomic_read(&l->nmis) > 0 ||
						slat_lapic_start_event(l))) {
		kr->exit_reason = KVM_EXIT_INTR;
		return -EINTR;
	}
	return SLAT_KVM_REENTER;
}

/*
 * IA32_TSC_DEADLINE (ABI 1.5's MSR exit; Slat sends no other MSR): the LAPIC's
 * timer, or, without an in-kernel LAPIC, writes ignored and reads 0 as KVM.
 * The instruction completes at the next entry.
 */
static int x86_msr_exit(struct slat_lapic *l, struct hc_run *hr)
{
	if (hr->u.msr.index != HC_MSR_TSC_DEADLINE) {
		pr_info_once("slat: MSR exit for 0x%x: read as 0\n", hr->u.msr.index);
		hr->u.msr.data = 0;
	} else if (hr->u.msr.is_write) {
		if (l)
			slat_lapic_set_tsc_deadline(l, hr->u.msr.data);
	} else {
		hr->u.msr.data = l ? slat_lapic_tsc_deadline(l) : 0;
	}
	return SLAT_KVM_REENTER;
}

static int x86_irqchip_exit(struct slat_kvm_vcpu *v, struct slat_lapic *l, struct hc_run *hr,
			    struct kvm_run *kr)
{
	x86_retire_irq(l, hr); /* what the VMM reads of the LAPIC shows it in service */
	kr->ready_for_interrupt_injection = 1; /* as KVM with an in-kernel irqchip */
	if (hr->reason == HC_EXIT_MMIO && x86_irqchip_mmio(v, l, hr))
		return SLAT_KVM_REENTER;
	if (hr->reason == HC_EXIT_HALT)
		return x86_halt(l, hr, kr);
	if (hr->reason == HC_EXIT_MSR)
		return x86_msr_exit(l, hr);
	return SLAT_KVM_GENERIC;
}

/* Every exit reports the guest's IF and whether KVM_INTERRUPT would be taken. */
int slat_kvm_arch_exit(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr)
{
	struct slat_lapic *l = slat_kvm_x86_lapic(v);

	if (!x86_irq_ok())
		return SLAT_KVM_GENERIC;
	kr->if_flag = hr->if_flag;
	kr->ready_for_interrupt_injection = hr->irq_ready;
	if (l)
		return x86_irqchip_exit(v, l, hr, kr);
	if (hr->reason == HC_EXIT_MSR)
		return x86_msr_exit(NULL, hr);
	if (hr->reason != HC_EXIT_IRQ_WINDOW)
		return SLAT_KVM_GENERIC;
	kr->exit_reason = KVM_EXIT_IRQ_WINDOW_OPEN;
	return SLAT_KVM_TO_VMM;
}
