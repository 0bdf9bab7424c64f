// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kvm on x86 (docs/kvm-api.md): the vCPU state of the KVM API over
 * Slat's register page (KVM_GET/SET_REGS, KVM_GET/SET_SREGS), the VMM's
 * CPUID table (KVM_SET_CPUID2, checked by Slat against what it gives a
 * secondary: KVM_GET_SUPPORTED_CPUID) and the MSRs Slat keeps per vCPU
 * (KVM_GET/SET_MSRS), with ABI 1.3; with ABI 1.4 KVM's interrupts without
 * an in-kernel irqchip (KVM_INTERRUPT, request_interrupt_window,
 * KVM_EXIT_IRQ_WINDOW_OPEN) and the in-kernel irqchip (KVM_CREATE_IRQCHIP:
 * local APICs, an I/O APIC and the 8259 pair, slat_kvm_irq.h), with
 * KVM_IRQ_LINE, KVM_SIGNAL_MSI, KVM_GET/SET_IRQCHIP and the wait-for-SIPI
 * states of KVM_GET/SET_MP_STATE; the 8254 PIT (slat_kvm_pit.c).
 */
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/timekeeping.h>
#include <asm/msr-index.h>
#include <asm/tsc.h>

#include "slat_kvm.h"
#include "slat_kvm_irq.h"

#define X86_MAX_CPUID		256 /* KVM_MAX_CPUID_ENTRIES */
#define APIC_BASE_RESET		0xfee00800ull
#define APIC_BASE_BSP		0x100ull
#define APIC_BASE_ENABLE	0x800ull
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
    MSR_IA32_TSC_ADJUST,
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

/* ABI 1.9: a vCPU's x87/SSE state (KVM_GET/SET_FPU). */
static bool x86_fpu_ok(void)
{
	return (slat_hv_version & 0xffff) >= 9;
}

/* ABI 1.5: IA32_TSC_DEADLINE exits to the module (the LAPIC's timer). */
static bool x86_deadline_ok(void)
{
	return (slat_hv_version & 0xffff) >= 5;
}

/* ABI 1.13: every MSR Slat does not keep exits to the module (x86_msr_exit). */
static bool x86_msr_exits_ok(void)
{
	return (slat_hv_version & 0xffff) >= 13;
}

/* ABI 1.15: a TSC offset per vCPU (HC_MSR_TSC_OFFSET); before, the host's TSC. */
static bool x86_tsc_offset_ok(void)
{
	return (slat_hv_version & 0xffff) >= 15;
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
	case KVM_CAP_SET_IDENTITY_MAP_ADDR:
		return 1;
	case KVM_CAP_ADJUST_CLOCK: /* KVM_GET/SET_CLOCK: the flags they know */
		return KVM_CLOCK_TSC_STABLE | KVM_CLOCK_REALTIME | KVM_CLOCK_HOST_TSC;
	case KVM_CAP_IRQ_ROUTING: /* KVM_SET_GSI_ROUTING: the number of routes */
		return x86_irq_ok() ? 4096 : 0;
	case KVM_CAP_SPLIT_IRQCHIP:
	case KVM_CAP_IRQ_INJECT_STATUS:
		return x86_irq_ok();
	case KVM_CAP_IRQCHIP: /* local APICs, an I/O APIC, the 8259s */
	case KVM_CAP_SIGNAL_MSI:
	case KVM_CAP_PIT: /* the 8254 (slat_kvm_pit.c), as KVM 6.1 answers */
	case KVM_CAP_PIT2:
	case KVM_CAP_PIT_STATE2:
	case KVM_CAP_REINJECT_CONTROL:
		return x86_irq_ok();
	case KVM_CAP_TSC_DEADLINE_TIMER: /* the LAPIC's, through Slat's MSR exits */
		return x86_deadline_ok();
	case KVM_CAP_USER_NMI:
		return x86_nmi_ok();
	case KVM_CAP_GET_TSC_KHZ:
		return 1;
	case KVM_CAP_MSR_PLATFORM_INFO: /* the guest's reads through ABI 1.13 */
		return x86_msr_exits_ok();
	case KVM_CAP_VCPU_EVENTS: /* ABI 1.11: slat_kvm_x86_state.c */
		return slat_kvm_x86_events_ok();
	case KVM_CAP_SYNC_REGS: /* kvm_run's s.regs (slat_kvm_x86_state.c) */
		return slat_kvm_x86_events_ok() ? SLAT_KVM_X86_SYNC_FIELDS : 0;
	default:
		return -1;
	}
}

int slat_kvm_arch_vm_type(unsigned long type, unsigned int *ipa_bits)
{
	return type ? -EINVAL : 0; /* KVM_X86_DEFAULT_VM only */
}

/*
 * The VM's irqchip (the I/O APIC in the module, or only its routes with
 * `split`): once (-EEXIST), before any vCPU (`busy`: KVM answers -EINVAL to
 * KVM_CREATE_IRQCHIP and -EEXIST to the split capability).
 */
long slat_irqchip_install(struct slat_vm *vm, bool split, u32 pins, long busy)
{
	struct slat_irqchip *c = kzalloc(sizeof(*c), GFP_KERNEL);
	long rc = 0;

	if (!c)
		return -ENOMEM;
	slat_ioapic_init(&c->ioapic);
	slat_pic_init(&c->pic);
	spin_lock_init(&c->route_lock);
	c->vm = vm;
	c->split = split;
	c->split_pins = pins;
	mutex_lock(&vm->lock);
	if (vm->irqchip)
		rc = -EEXIST;
	else if (!xa_empty(&vm->vcpus))
		rc = busy;
	else
		WRITE_ONCE(vm->irqchip, c);
	mutex_unlock(&vm->lock);
	if (rc)
		kfree(c);
	return rc;
}

/* KVM's rules: once, before any vCPU (-EEXIST, -EINVAL). */
static long x86_create_irqchip(struct slat_vm *vm)
{
	if (!x86_irq_ok())
		return -ENOTTY;
	return slat_irqchip_install(vm, false, 0, -EINVAL);
}

/*
 * KVM_IRQ_LINE(_STATUS): GSI `irq` through the routing table (slat_kvm_route.c;
 * without one, GSI 0-23 are the I/O APIC's pins); _STATUS writes KVM's status
 * back over `irq`.
 */
static long x86_irq_line(struct slat_vm *vm, void __user *up, bool status)
{
	struct slat_irqchip *c = READ_ONCE(vm->irqchip);
	struct kvm_irq_level l;
	int st = 0;
	long rc;

	if (!c)
		return -ENXIO;
	if (copy_from_user(&l, up, sizeof(l)))
		return -EFAULT;
	rc = slat_route_irq_line(c, l.irq, l.level, &st);
	if (rc || !status)
		return rc;
	l.status = st;
	return copy_to_user(up, &l, sizeof(l)) ? -EFAULT : 0;
}

/*
 * KVM_SIGNAL_MSI: an MSI write decoded as the local APICs see it (address
 * 0xfeeXXXXX: destination in bits 19:12, logical in bit 2; data: vector,
 * delivery mode, trigger). KVM's answer: how many LAPICs took it.
 */
static long x86_signal_msi(struct slat_vm *vm, void __user *up)
{
	struct kvm_msi m;
	int r;

	if (!READ_ONCE(vm->irqchip))
		return -EINVAL; /* KVM's answer without an irqchip */
	if (copy_from_user(&m, up, sizeof(m)))
		return -EFAULT;
	if (m.flags)
		return -EINVAL; /* no device IDs */
	r = slat_msi_deliver(vm, m.address_lo, m.address_hi, m.data);
	slat_irq_trace("signal-msi", m.address_lo, m.data, 0, r);
	return r;
}

/* KVM_GET/SET_IRQCHIP: the 8259 master (chip 0), slave (1), the I/O APIC (2). */
static long x86_irqchip_state(struct slat_vm *vm, void __user *up, bool set)
{
	struct slat_irqchip *c = READ_ONCE(vm->irqchip);
	struct kvm_irqchip *k;
	long rc = 0;

	if (!c || c->split)
		return -ENXIO; /* KVM: the in-kernel I/O APIC and PICs only */
	k = memdup_user(up, sizeof(*k));
	if (IS_ERR(k))
		return PTR_ERR(k);
	if (k->chip_id == KVM_IRQCHIP_PIC_MASTER || k->chip_id == KVM_IRQCHIP_PIC_SLAVE) {
		if (set)
			slat_pic_set(c, k->chip_id, &k->chip.pic);
		else
			slat_pic_get(c, k->chip_id, &k->chip.pic);
		rc = set || !copy_to_user(up, k, sizeof(*k)) ? 0 : -EFAULT;
	} else if (k->chip_id != KVM_IRQCHIP_IOAPIC)
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

/* KVM_ENABLE_CAP on the VM: the split irqchip; anything else -EINVAL, as KVM. */
static long x86_enable_cap(struct slat_vm *vm, void __user *up)
{
	struct kvm_enable_cap cap;

	if (copy_from_user(&cap, up, sizeof(cap)))
		return -EFAULT;
	if (cap.flags)
		return -EINVAL;
	if (cap.cap == KVM_CAP_SPLIT_IRQCHIP && x86_irq_ok())
		return slat_route_enable_split(vm, cap.args[0]);
	if (cap.cap == KVM_CAP_MSR_PLATFORM_INFO && x86_msr_exits_ok()) {
		WRITE_ONCE(vm->kvm_no_platform_info, !cap.args[0]);
		return 0;
	}
	return -EINVAL;
}

/*
 * KVM_GET/SET_CLOCK: the VM's clock in ns, from the host's boot-time clock
 * plus the VM's offset (0 when the VM was made), as KVM counts it. No guest
 * reads it: Slat's CPUID offers no kvmclock. SET with KVM_CLOCK_REALTIME
 * adds the real time elapsed since `realtime`, as KVM.
 */
static long x86_clock(struct slat_kvm_vm *kvm, void __user *up, bool set)
{
	struct kvm_clock_data d;
	u64 now = ktime_get_boottime_ns();

	if (!set) {
		memset(&d, 0, sizeof(d));
		d.clock = now + kvm->clock_offset;
		d.flags = KVM_CLOCK_REALTIME | KVM_CLOCK_HOST_TSC;
		d.realtime = ktime_get_real_ns();
		d.host_tsc = rdtsc();
		return copy_to_user(up, &d, sizeof(d)) ? -EFAULT : 0;
	}
	if (copy_from_user(&d, up, sizeof(d)))
		return -EFAULT;
	if (d.flags & ~(KVM_CLOCK_TSC_STABLE | KVM_CLOCK_REALTIME | KVM_CLOCK_HOST_TSC))
		return -EINVAL;
	if (d.flags & KVM_CLOCK_REALTIME) {
		u64 real = ktime_get_real_ns();

		if (real > d.realtime)
			d.clock += real - d.realtime;
	}
	kvm->clock_offset = d.clock - now;
	return 0;
}

long slat_kvm_arch_vm_ioctl(struct slat_kvm_vm *kvm, unsigned int cmd, void __user *up)
{
	switch (cmd) {
	case KVM_ENABLE_CAP:
		return x86_enable_cap(kvm->vm, up);
	case KVM_SET_GSI_ROUTING:
		return slat_route_set(READ_ONCE(kvm->vm->irqchip), up);
	case KVM_GET_CLOCK:
	case KVM_SET_CLOCK:
		return x86_clock(kvm, up, cmd == KVM_SET_CLOCK);
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
	case KVM_IRQ_LINE_STATUS:
		return x86_irq_line(kvm->vm, up, cmd == KVM_IRQ_LINE_STATUS);
	case KVM_SIGNAL_MSI:
		return x86_signal_msi(kvm->vm, up);
	case KVM_GET_IRQCHIP:
	case KVM_SET_IRQCHIP:
		return x86_irqchip_state(kvm->vm, up, cmd == KVM_SET_IRQCHIP);
	case KVM_CREATE_PIT:
	case KVM_CREATE_PIT2:
	case KVM_GET_PIT:
	case KVM_SET_PIT:
	case KVM_GET_PIT2:
	case KVM_SET_PIT2:
	case KVM_REINJECT_CONTROL:
		return x86_irq_ok() ? slat_pit_ioctl(kvm->vm, cmd, up) : -ENOTTY;
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
	u64 apic_base;		   /* the VMM's IA32_APIC_BASE (x86_apic_base_ok) */
	/* MSRs the module keeps for the VMM (x86_kept_msr): kvmclock, MTRRs */
	u64 kvmclock[4];
	u64 mtrr_def, mtrr_fixed[11], mtrr_var[16];
	u64 mcg_status, mcg_ctl, mc_bank[4 * 32];
	u64 platform_info; /* MSR_PLATFORM_INFO: the VMM's (the guest reads it) */
	u64 tsc_offset;	   /* Slat's for this vCPU: the guest's TSC - the host's */
	u64 tsc_adjust;	   /* IA32_TSC_ADJUST (x86_tsc_guest_write) */
	/* A string IN (x86_string_io) the VMM is answering: where its data goes. */
	bool str_in;
	u64 str_gpa;
	u32 str_bytes;
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
static u64 x86_apic_base_reset(struct slat_kvm_vcpu *v);

/* ---- The guest's TSC: KVM's offset, IA32_TSC and IA32_TSC_ADJUST ---- */

/* Sets Slat's offset of a stopped vCPU (ABI 1.15) and the LAPIC's copy. */
static int x86_tsc_offset_set(struct slat_kvm_vcpu *v, u64 offset)
{
	struct slat_kvm_x86 *x = v->arch;
	struct hc_msr_entry *e;
	struct page *pg;
	u64 r[3] = {0};
	int rc;

	if (!x86_tsc_offset_ok())
		return 0; /* the guest's TSC stays the host's */
	pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!pg)
		return -ENOMEM;
	e = page_address(pg);
	e->index = HC_MSR_TSC_OFFSET;
	e->data = offset;
	rc = slat_errno(
	    slat_call(HC_VCPU_MSRS, v->vc->vm->id, v->vc->index, slat_pa(pg), 1, 1, 0, r));
	__free_page(pg);
	if (!rc && r[0] != 1)
		rc = -EIO;
	if (rc)
		return rc;
	x->tsc_offset = offset;
	if (x->lapic)
		slat_lapic_set_tsc_offset(x->lapic, offset);
	return 0;
}

/*
 * The VMM's write of IA32_TSC (KVM_SET_MSRS; 0 at vCPU creation), as KVM's
 * kvm_synchronize_tsc: 0, or a value within a second of what the VM's last
 * write would read now, lines the vCPU up with the others (the VM's last
 * offset); any other value gives it a new offset, the VM's from then on.
 * IA32_TSC_ADJUST does not change.
 */
static int x86_tsc_host_write(struct slat_kvm_vcpu *v, u64 data)
{
	struct slat_vm *vm = v->vc->vm;
	u64 hz = tsc_khz * 1000ull, offset = data - rdtsc(), now, expect;
	int rc;

	mutex_lock(&vm->lock);
	now = ktime_get_ns();
	if (vm->kvm_tsc_written && tsc_khz) {
		expect = vm->kvm_tsc_write +
			 mul_u64_u32_div(now - vm->kvm_tsc_write_ns, tsc_khz, NSEC_PER_MSEC);
		if (!data || (data < expect + hz && data + hz > expect))
			offset = vm->kvm_tsc_offset;
	}
	rc = x86_tsc_offset_set(v, offset);
	if (!rc) {
		vm->kvm_tsc_offset = offset;
		vm->kvm_tsc_write = data;
		vm->kvm_tsc_write_ns = now;
		vm->kvm_tsc_written = true;
	}
	mutex_unlock(&vm->lock);
	return rc;
}

/* The vCPU's CPUID (KVM_SET_CPUID2) offers IA32_TSC_ADJUST (leaf 7 EBX bit 1). */
static bool x86_has_tsc_adjust(const struct slat_kvm_x86 *x)
{
	u32 i;

	for (i = 0; i < x->ncpuid; i++)
		if (x->cpuid[i].function == 7 && x->cpuid[i].index == 0)
			return x->cpuid[i].ebx & 2;
	return false;
}

/*
 * The guest's WRMSR of IA32_TSC or IA32_TSC_ADJUST, as KVM's
 * kvm_set_msr_common: either moves the offset by the change it makes, and
 * IA32_TSC_ADJUST with it, so that a VMM's offset survives the guest's
 * adjustments. Without TSC_ADJUST in the vCPU's CPUID, KVM ignores the
 * write of IA32_TSC_ADJUST (no #GP).
 */
static int x86_tsc_guest_write(struct slat_kvm_vcpu *v, u32 index, u64 data)
{
	struct slat_kvm_x86 *x = v->arch;
	u64 adj;
	int rc;

	if (index == MSR_IA32_TSC)
		adj = data - (rdtsc() + x->tsc_offset);
	else if (x86_has_tsc_adjust(x))
		adj = data - x->tsc_adjust;
	else
		return 0;
	rc = x86_tsc_offset_set(v, x->tsc_offset + adj);
	if (!rc)
		x->tsc_adjust += adj;
	return rc;
}

int slat_kvm_arch_vcpu_create(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = kzalloc(sizeof(*x), GFP_KERNEL);
	int rc;

	if (!x)
		return -ENOMEM;
	v->arch = x;
	v->inited = true;
	x->apic_base = x86_apic_base_reset(v);
	x->platform_info = MSR_PLATFORM_INFO_CPUID_FAULT; /* KVM's initial value */
	rc = x86_vcpu_list(v, x) ?: x86_tsc_host_write(v, 0); /* KVM's at vCPU creation */
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

/* KVM_GET/SET_REGS on a kernel copy (also kvm_run's sync_regs). */
int slat_kvm_x86_regs_k(struct slat_kvm_vcpu *v, struct kvm_regs *k, bool set)
{
	struct hc_regs_x86 *r = kzalloc(sizeof(*r), GFP_KERNEL);
	unsigned int i;
	int rc;

	if (!r)
		return -ENOMEM;
	rc = x86_regs(v, r, false);
	if (!rc && set) {
		for (i = 0; i < 16; i++)
			r->gpr[i] = *gpr_of(k, i);
		r->rip = k->rip;
		r->rflags = k->rflags;
		r->flags |= HC_REGS_X86_KEEP_PENDING; /* ABI 1.11: as KVM, unless RIP moved */
		rc = x86_regs(v, r, true); /* Slat refuses reserved RFLAGS bits: -EINVAL */
	} else if (!rc) {
		memset(k, 0, sizeof(*k));
		for (i = 0; i < 16; i++)
			*gpr_of(k, i) = r->gpr[i];
		k->rip = r->rip;
		k->rflags = r->rflags;
	}
	kfree(r);
	return rc;
}

static long x86_get_set_regs(struct slat_kvm_vcpu *v, void __user *up, bool set)
{
	struct kvm_regs k;
	int rc;

	if (set && copy_from_user(&k, up, sizeof(k)))
		return -EFAULT;
	rc = slat_kvm_x86_regs_k(v, &k, set);
	if (!rc && !set && copy_to_user(up, &k, sizeof(k)))
		rc = -EFAULT;
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

static u64 x86_apic_base_reset(struct slat_kvm_vcpu *v)
{
	return APIC_BASE_RESET | (v->id == 0 ? APIC_BASE_BSP : 0);
}

/* The reset value, or the one the VMM set last. */
static u64 x86_apic_base(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = v->arch;

	return x->apic_base;
}

static u32 x86_guest_maxphyaddr(struct slat_kvm_x86 *x)
{
	u32 i;

	for (i = 0; x->cpuid && i < x->ncpuid; i++)
		if (x->cpuid[i].function == 0x80000008)
			return x->cpuid[i].eax & 0xff;
	return 36; /* KVM's answer without the leaf */
}

/*
 * A new IA32_APIC_BASE from the VMM (KVM_SET_SREGS, KVM_SET_MSRS), kept as
 * KVM keeps it (and reported back, run->apic_base too), but for its reserved
 * bits: 7:0, 9, x2APIC enable (10: the guest's CPUID has no x2APIC), and
 * those above the guest's MAXPHYADDR. KVM's in-kernel LAPIC records a new
 * base without moving its page (a warning, "APIC base relocation is
 * unsupported"), and so does the module's LAPIC (its page stays at
 * 0xfee00000); turning the in-kernel LAPIC off (bit 11 clear) is refused:
 * Slat's LAPIC is always on. The guest's own RDMSR is Slat's and reads the
 * reset value.
 */
static bool x86_apic_base_ok(struct slat_kvm_vcpu *v, u64 val)
{
	struct slat_kvm_x86 *x = v->arch;

	if (x->lapic && !(val & APIC_BASE_ENABLE))
		return false;
	return !(val & (0x6ffull | ~0ull << x86_guest_maxphyaddr(x)));
}

#define LAPIC_TPR 0x80

/*
 * CR8 is the local APIC's TPR bits 7:4 (SDM 10.8.6.1): KVM's KVM_GET_SREGS,
 * KVM_SET_SREGS and run->cr8 go through the in-kernel LAPIC. Without one the
 * module keeps no TPR: CR8 reads 0.
 */
static u64 x86_cr8(struct slat_kvm_vcpu *v)
{
	struct slat_lapic *l = slat_kvm_x86_lapic(v);
	u32 tpr = 0;

	if (l)
		slat_lapic_mmio(l, LAPIC_TPR, false, &tpr);
	return (tpr >> 4) & 0xf;
}

static void x86_set_cr8(struct slat_kvm_vcpu *v, u64 cr8)
{
	u32 tpr = (cr8 & 0xf) << 4;

	slat_lapic_mmio(slat_kvm_x86_lapic(v), LAPIC_TPR, true, &tpr);
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
	s->cr8 = x86_cr8(v);
	s->apic_base = x86_apic_base(v);
}

/*
 * What Slat cannot hold is refused rather than dropped, with a debug line
 * (dynamic debug: a VMM's bad arguments must not fill the kernel log, and
 * KVM logs none): a TPR (CR8) without the in-kernel LAPIC, an APIC base
 * other than the reset one, a pending interrupt. The CR8 of a vCPU with a
 * LAPIC is its TPR (written by the caller once the rest is accepted).
 */
static int sregs_from_kvm(struct slat_kvm_vcpu *v, const struct kvm_sregs *s, struct hc_regs_x86 *r)
{
	unsigned int i;

	if ((s->cr8 && !slat_kvm_x86_lapic(v)) || !x86_apic_base_ok(v, s->apic_base)) {
		pr_debug("slat: KVM_SET_SREGS: CR8 0x%llx, APIC base 0x%llx refused\n", s->cr8,
			 s->apic_base);
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(s->interrupt_bitmap); i++)
		if (s->interrupt_bitmap[i]) {
			pr_debug("slat: KVM_SET_SREGS: a pending interrupt refused\n");
			return -EINVAL;
		}
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
	struct kvm_sregs *s = kzalloc(sizeof(*s), GFP_KERNEL);
	int rc = s ? 0 : -ENOMEM;

	if (!rc && set && copy_from_user(s, up, sizeof(*s)))
		rc = -EFAULT;
	if (!rc)
		rc = slat_kvm_x86_sregs_k(v, s, set);
	if (!rc && !set && copy_to_user(up, s, sizeof(*s)))
		rc = -EFAULT;
	kfree(s);
	return rc;
}

/* KVM_GET/SET_SREGS on a kernel copy (also kvm_run's sync_regs). */
int slat_kvm_x86_sregs_k(struct slat_kvm_vcpu *v, struct kvm_sregs *s, bool set)
{
	struct hc_regs_x86 *r = kzalloc(sizeof(*r), GFP_KERNEL);
	int rc = r ? 0 : -ENOMEM;

	if (!rc)
		rc = x86_regs(v, r, false);
	if (!rc && set) {
		rc = sregs_from_kvm(v, s, r);
		r->flags |= HC_REGS_X86_KEEP_PENDING; /* ABI 1.11: as KVM, unless RIP moved */
		if (!rc)
			rc = x86_regs(v, r, true); /* Slat's VMRUN checks: -EINVAL */
		if (!rc)
			((struct slat_kvm_x86 *)v->arch)->apic_base = s->apic_base;
		if (!rc && slat_kvm_x86_lapic(v))
			x86_set_cr8(v, s->cr8);
		else if (rc == -EINVAL)
			pr_debug("slat: KVM_SET_SREGS refused: CR0 0x%llx CR4 0x%llx "
				 "EFER 0x%llx CS 0x%x attr 0x%x\n",
				 s->cr0, s->cr4, s->efer, s->cs.selector, r->cs.attr);
	} else if (!rc) {
		sregs_to_kvm(v, r, s);
	}
	kfree(r);
	return rc;
}

#define MSR_KVM_WALL_CLOCK_OLD	 0x11
#define MSR_KVM_SYSTEM_TIME_OLD	 0x12
#define MSR_KVM_WALL_CLOCK_NEW_	 0x4b564d00
#define MSR_KVM_SYSTEM_TIME_NEW_ 0x4b564d01

static bool mtrr_type_ok(u64 t)
{
	return t == 0 || t == 1 || t == 4 || t == 5 || t == 6; /* UC WC WT WP WB */
}

/* The slot of a fixed-range MTRR (SDM 11.11.2.2), or -1. */
static int mtrr_fixed_slot(u32 index)
{
	if (index == 0x250)
		return 0;
	if (index == 0x258 || index == 0x259)
		return 1 + index - 0x258;
	if (index >= 0x268 && index <= 0x26f)
		return 3 + index - 0x268;
	return -1;
}

/*
 * The MSRs the module keeps itself, for the VMM's KVM_GET/SET_MSRS only:
 * 1 done, 0 not one of them (Slat's), -1 a value KVM refuses.
 *  - IA32_APIC_BASE: as KVM_GET/SET_SREGS (x86_apic_base_ok): with the
 *    in-kernel LAPIC 0xfee00800, with the BSP bit on vCPU 0 (Slat's LAPIC
 *    does not move or turn off), another value refused; without one, kept.
 *  - IA32_TSC: the host's TSC plus the vCPU's offset; a write sets the
 *    offset (x86_tsc_host_write). IA32_TSC_ADJUST: kept, its writes stored
 *    only when the vCPU's CPUID offers it, and never moving the TSC (KVM's).
 *  - kvmclock's MSRs (both numberings): kept; no guest uses them, Slat's
 *    CPUID offers no kvmclock.
 *  - the MTRRs (default type, fixed and variable ranges): kept, checked as
 *    KVM checks them; the guest's CPUID has no MTRR (Slat clears it), so the
 *    guest cannot reach them.
 *  - machine check: MCG_STATUS, MCG_CTL and 32 banks' CTL/STATUS/ADDR/MISC
 *    (QEMU writes its own bank values when KVM_CAP_MCE is 0): kept, MCi_CTL
 *    0 or all ones as KVM wants; the guest's accesses are Slat's (#GP).
 */
static u64 x86_apic_base(struct slat_kvm_vcpu *v);

static int x86_kept_msr(struct slat_kvm_vcpu *v, struct slat_kvm_x86 *x, u32 index, bool set,
			u64 *data)
{
	u64 *p = NULL;
	int slot, i;

	switch (index) {
	case MSR_IA32_APICBASE: /* as KVM_GET/SET_SREGS */
		if (set && !x86_apic_base_ok(v, *data))
			return -1;
		if (set)
			x->apic_base = *data;
		if (!set)
			*data = x86_apic_base(v);
		return 1;
	case MSR_IA32_TSC:
		if (set)
			return x86_tsc_host_write(v, *data) ? -1 : 1;
		*data = rdtsc() + x->tsc_offset;
		return 1;
	case MSR_IA32_TSC_ADJUST:
		if (!set || x86_has_tsc_adjust(x))
			p = &x->tsc_adjust;
		else
			return 1;
		break;
	case MSR_IA32_MCG_STATUS:
		p = &x->mcg_status;
		break;
	case MSR_PLATFORM_INFO: /* any value from the VMM, as KVM (no CPUID faulting) */
		p = &x->platform_info;
		break;
	case MSR_IA32_MCG_CTL:
		p = &x->mcg_ctl;
		break;
	case MSR_KVM_WALL_CLOCK_OLD:
	case MSR_KVM_SYSTEM_TIME_OLD:
		p = &x->kvmclock[index - MSR_KVM_WALL_CLOCK_OLD];
		break;
	case MSR_KVM_WALL_CLOCK_NEW_:
	case MSR_KVM_SYSTEM_TIME_NEW_:
		p = &x->kvmclock[2 + index - MSR_KVM_WALL_CLOCK_NEW_];
		break;
	case MSR_MTRRdefType:
		if (set && ((*data & ~0xcffull) || !mtrr_type_ok(*data & 0xff)))
			return -1;
		p = &x->mtrr_def;
		break;
	default:
		slot = mtrr_fixed_slot(index);
		if (slot >= 0) {
			for (i = 0; set && i < 8; i++)
				if (!mtrr_type_ok(*data >> (8 * i) & 0xff))
					return -1;
			p = &x->mtrr_fixed[slot];
		} else if (index >= 0x200 && index < 0x210) {
			/* PHYSBASE: a type in 7:0, 11:8 reserved; PHYSMASK: 10:0 reserved */
			if (set && (index & 1 ? (*data & 0x7ff) != 0
					      : (*data & 0xf00) || !mtrr_type_ok(*data & 0xff)))
				return -1;
			p = &x->mtrr_var[index - 0x200];
		} else if (index >= MSR_IA32_MC0_CTL && index < MSR_IA32_MC0_CTL + 4 * 32) {
			if (set && !(index & 3) && *data && (*data | 1 << 10 | 1) != ~0ull)
				return -1; /* KVM: a bank's CTL is 0 or all ones */
			p = &x->mc_bank[index - MSR_IA32_MC0_CTL];
		} else {
			return 0;
		}
	}
	if (set)
		*p = *data;
	else
		*data = *p;
	return 1;
}

/* Slat's VCPU_MSRS on entries [first, first + n) of the VMM's list: how many it did. */
static long x86_slat_msrs(struct slat_kvm_vcpu *v, struct kvm_msrs __user *up, u32 first, u32 n,
			  bool set, struct page *pg)
{
	struct hc_msr_entry *list = page_address(pg);
	struct kvm_msr_entry e;
	u64 r[3];
	u32 i;
	int rc;

	if (!n)
		return 0;
	memset(list, 0, n * sizeof(*list));
	for (i = 0; i < n; i++) {
		if (copy_from_user(&e, &up->entries[first + i], sizeof(e)))
			return -EFAULT;
		list[i].index = e.index;
		list[i].data = e.data;
	}
	rc = slat_errno(
	    slat_call(HC_VCPU_MSRS, v->vc->vm->id, v->vc->index, slat_pa(pg), n, set, 0, r));
	if (rc)
		return rc;
	for (i = 0; !set && i < r[0]; i++)
		if (put_user(list[i].data, &up->entries[first + i].data))
			return -EFAULT;
	return (long)r[0];
}

/*
 * KVM_GET/SET_MSRS: the number of MSRs done (stops at the first refused one).
 * Runs of Slat's MSRs go to Slat in one call; the module's own in between.
 */
static long x86_msrs(struct slat_kvm_vcpu *v, struct kvm_msrs __user *up, bool set)
{
	struct slat_kvm_x86 *x = v->arch;
	struct kvm_msr_entry e;
	struct page *pg;
	u32 n, i, run = 0;
	long done = 0, rc = 0;

	if (get_user(n, &up->nmsrs))
		return -EFAULT;
	if (n > HC_MSR_MAX)
		return -E2BIG; /* KVM's MAX_IO_MSRS is the same 256 */
	pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!pg)
		return -ENOMEM;
	for (i = 0; i <= n; i++) {
		int k = 0;

		if (i < n) {
			if (copy_from_user(&e, &up->entries[i], sizeof(e))) {
				rc = -EFAULT;
				break;
			}
			k = x86_kept_msr(v, x, e.index, set, &e.data);
			if (k == 0) {
				run++; /* Slat's: with the run */
				continue;
			}
		}
		/* the run of Slat's MSRs before entry i */
		rc = x86_slat_msrs(v, up, i - run, run, set, pg);
		if (rc < 0)
			break;
		done += rc;
		if (rc < run || i == n || k < 0)
			break;
		run = 0;
		if (!set && put_user(e.data, &up->entries[i].data)) {
			rc = -EFAULT;
			break;
		}
		done++;
	}
	__free_page(pg);
	return rc < 0 ? rc : done;
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

/*
 * Bits QEMU sets in the table itself whatever KVM_GET_SUPPORTED_CPUID says
 * (target/i386/kvm/kvm.c, kvm_arch_get_supported_cpuid): MCE, MTRR, MCA and
 * PAT in leaf 1 EDX and their AMD aliases in 0x80000001 EDX, TOPOEXT in
 * 0x80000001 ECX, KVM_FEATURE_MSI_EXT_DEST_ID in 0x40000001 EAX. Where Slat
 * does not offer one of them, the module clears it (logged once) instead of
 * refusing the table: the guest does not see it. Any other bit beyond
 * Slat's is still -EINVAL.
 */
struct x86_vmm_bits {
	u32 leaf;
	u8 reg; /* 0 EAX .. 3 EDX */
	u32 bits;
};
static const struct x86_vmm_bits x86_vmm_added[] = {
    {1, 3, 1u << 7 | 1u << 12 | 1u << 14 | 1u << 16},
    {0x80000001, 3, 1u << 7 | 1u << 12 | 1u << 14 | 1u << 16},
    {0x80000001, 2, 1u << 22},
    {0x40000001, 0, 1u << 15},
};

static u32 *entry_reg(struct hc_cpuid_entry *e, u8 reg)
{
	u32 *const r[4] = {&e->eax, &e->ebx, &e->ecx, &e->edx};

	return r[reg];
}

static void x86_clear_vmm_bits(struct hc_cpuid_entry *tab, u32 n)
{
	struct hc_cpuid_entry *sup;
	struct page *pg;
	u64 ns;
	u32 i, j, k;

	if (x86_supported(&pg, &ns)) {
		if (pg)
			__free_page(pg);
		return; /* Slat's check refuses what it would have cleared */
	}
	sup = page_address(pg);
	for (i = 0; i < n; i++)
		for (j = 0; j < ARRAY_SIZE(x86_vmm_added); j++) {
			const struct x86_vmm_bits *b = &x86_vmm_added[j];
			u32 have = 0, *r, drop;

			if (tab[i].function != b->leaf)
				continue;
			for (k = 0; k < ns; k++)
				if (sup[k].function == b->leaf)
					have = *entry_reg(&sup[k], b->reg);
			r = entry_reg(&tab[i], b->reg);
			drop = *r & b->bits & ~have;
			if (drop) {
				pr_info_once("slat: KVM_SET_CPUID2: leaf 0x%x reg %u bits 0x%x "
					     "(which QEMU adds itself) are not offered: cleared\n",
					     b->leaf, b->reg, drop);
				*r &= ~drop;
			}
		}
	__free_page(pg);
}

/* The table is the one set last, entry for entry (KVM's check after KVM_RUN). */
static bool x86_cpuid_same(const struct slat_kvm_x86 *x, const struct hc_cpuid_entry *tab, u32 n)
{
	return n == x->ncpuid && (!n || !memcmp(tab, x->cpuid, n * sizeof(*tab)));
}

/*
 * KVM_SET_CPUID2: Slat checks the table (-EINVAL for a feature it lacks).
 * Once the vCPU has run, only the same table again is accepted (-EINVAL
 * otherwise), as KVM 6.1 answers: a guest's features do not change under it.
 */
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
	x86_clear_vmm_bits(tab, n);
	if (READ_ONCE(v->vc->stats.runs)) { /* the vCPU has run */
		rc = x86_cpuid_same(x, tab, n) ? 0 : -EINVAL;
		goto out;
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
 * KVM_GET/SET_FPU (ABI 1.9): struct kvm_fpu is the FXSAVE64 image's first 416
 * bytes in other words: ST0-7 at 32, FCW 0, FSW 2, FTW 4, FOP 6, FIP 8, FDP
 * 16, XMM0-15 at 160, MXCSR 24. An MXCSR the CPU refuses is -EINVAL.
 */
static long x86_fpu(struct slat_kvm_vcpu *v, struct kvm_fpu __user *up, bool set)
{
	struct kvm_fpu *k;
	struct page *pg;
	u8 *fx;
	u64 r[3];
	long rc;

	if (!x86_fpu_ok())
		return -ENOTTY;
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	pg = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!k || !pg) {
		rc = -ENOMEM;
		goto out;
	}
	fx = page_address(pg);
	if (set) {
		rc = -EFAULT;
		if (copy_from_user(k, up, sizeof(*k)))
			goto out;
		memcpy(fx + 0, &k->fcw, 2);
		memcpy(fx + 2, &k->fsw, 2);
		fx[4] = k->ftwx;
		memcpy(fx + 6, &k->last_opcode, 2);
		memcpy(fx + 8, &k->last_ip, 8);
		memcpy(fx + 16, &k->last_dp, 8);
		memcpy(fx + 24, &k->mxcsr, 4);
		memcpy(fx + 32, k->fpr, sizeof(k->fpr));
		memcpy(fx + 160, k->xmm, sizeof(k->xmm));
	}
	rc = slat_errno(
	    slat_call(HC_VCPU_FPU, v->vc->vm->id, v->vc->index, slat_pa(pg), set, 0, 0, r));
	if (rc || set)
		goto out;
	memcpy(&k->fcw, fx + 0, 2);
	memcpy(&k->fsw, fx + 2, 2);
	k->ftwx = fx[4];
	memcpy(&k->last_opcode, fx + 6, 2);
	memcpy(&k->last_ip, fx + 8, 8);
	memcpy(&k->last_dp, fx + 16, 8);
	memcpy(&k->mxcsr, fx + 24, 4);
	memcpy(k->fpr, fx + 32, sizeof(k->fpr));
	memcpy(k->xmm, fx + 160, sizeof(k->xmm));
	rc = copy_to_user(up, k, sizeof(*k)) ? -EFAULT : 0;
out:
	kfree(k);
	if (pg)
		__free_page(pg);
	return rc;
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

	struct slat_lapic *l = slat_kvm_x86_lapic(v);

	if (!x86_irq_ok())
		return -ENOTTY;
	if (l && !v->vc->vm->irqchip->split)
		return -ENXIO; /* the in-kernel PIC owns interrupts, as in KVM */
	if (copy_from_user(&irq, up, sizeof(irq)))
		return -EFAULT;
	if (irq.irq >= 256)
		return -EINVAL;
	if (l) {
		/* Split irqchip: the VMM's 8259 output, taken through LINT0 (KVM's
		 * pending_external_vector): one at a time, -EEXIST as KVM. */
		if (l->extint >= 0)
			return -EEXIST;
		l->extint = irq.irq;
		return 0;
	}
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

atomic_t *slat_kvm_x86_nmis(struct slat_kvm_vcpu *v)
{
	return x86_nmis(v);
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

/*
 * KVM_SET_VAPIC_ADDR: the guest page where KVM would mirror the TPR for a
 * VMM's TPR-patching option ROM (QEMU's kvmvapic, which activates it only
 * for Windows guests). 0, no mirror, is the state a vCPU starts in and the
 * one QEMU sets at every reset; the module keeps no mirror, so another
 * address is -EINVAL. -EINVAL without a local APIC, as KVM.
 */
static long x86_vapic_addr(struct slat_kvm_vcpu *v, struct kvm_vapic_addr __user *up)
{
	struct kvm_vapic_addr a;

	if (!slat_kvm_x86_lapic(v))
		return -EINVAL;
	if (copy_from_user(&a, up, sizeof(a)))
		return -EFAULT;
	if (a.vapic_addr) {
		pr_info_once("slat: KVM_SET_VAPIC_ADDR 0x%llx: no TPR mirror (-EINVAL)\n",
			     a.vapic_addr);
		return -EINVAL;
	}
	return 0;
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
	case KVM_GET_FPU:
	case KVM_SET_FPU:
		return x86_fpu(v, up, cmd == KVM_SET_FPU);
	case KVM_SET_VAPIC_ADDR:
		return x86_vapic_addr(v, up);
	case KVM_NMI:
		return x86_nmi(v);
	case KVM_GET_LAPIC:
	case KVM_SET_LAPIC:
		return x86_lapic_state(v, up, cmd == KVM_SET_LAPIC);
	case KVM_GET_TSC_KHZ: /* the guest's TSC is the host's */
		return tsc_khz ? (long)tsc_khz : -EIO;
	case KVM_GET_VCPU_EVENTS: /* slat_kvm_x86_state.c */
	case KVM_SET_VCPU_EVENTS:
		return slat_kvm_x86_vcpu_events(v, up, cmd == KVM_SET_VCPU_EVENTS);
	default:
		return -ENOTTY; /* KVM_GET/SET_XSAVE, debug registers, ... not yet */
	}
}

/*
 * The vector offered to Slat went in (Slat cleared HC_IRQ_VALID): IRR to ISR,
 * once, before anything is offered again (a RUN may end preempted right
 * after delivering it).
 */
static void x86_retire_irq(struct slat_lapic *l, struct hc_run *hr)
{
	if (hr->irq & HC_IRQ_VALID)
		return;
	if (l->queued_extint) { /* the 8259's vector: nothing of the LAPIC's */
		l->queued_extint = false;
		l->extint = -1;
	} else if (l->queued >= 0) {
		slat_lapic_accept(l, l->queued);
		l->queued = -1;
	}
}

/*
 * An ExtINT that LINT0 takes now: the VMM's 8259 output (split irqchip,
 * KVM_INTERRUPT), or the module's 8259 pair asserting INT.
 */
static bool x86_extint_ready(struct slat_lapic *l)
{
	struct slat_irqchip *c = l->vm->irqchip;

	if (!slat_lapic_accepts_extint(l))
		return false;
	return l->extint >= 0 || (!c->split && slat_pic_output(c));
}

/* The module's 8259s assert INT to this vCPU, which cannot take it yet. */
static bool x86_pic_waits(struct slat_lapic *l, struct hc_run *hr)
{
	return !(hr->irq & HC_IRQ_VALID) && l->extint < 0 && x86_extint_ready(l) && !hr->irq_ready;
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
	/* ExtINT first: the PPR does not hold it back. The module's 8259s are
	 * acknowledged (INTA) only when Slat delivers at this entry, as a CPU
	 * takes INTR: a guest that masks the line before its next STI must not
	 * get the vector (the window is asked for meanwhile). */
	if (x86_extint_ready(l) && (l->extint >= 0 || hr->irq_ready)) {
		if (l->extint < 0)
			l->extint = slat_pic_intack(l->vm->irqchip);
		l->queued_extint = true;
		hr->irq = HC_IRQ_VALID | l->extint;
		return;
	}
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

static int x86_string_in_done(struct slat_kvm_vcpu *v);

/* Before each entry: the VMM's window request, or the LAPIC's vector; NMIs. */
int slat_kvm_arch_vcpu_ready(struct slat_kvm_vcpu *v)
{
	struct kvm_run *kr = page_address(v->run);
	struct hc_run *hr = page_address(v->vc->run);
	struct slat_lapic *l = slat_kvm_x86_lapic(v);
	int rc = x86_string_in_done(v);

	if (rc)
		return rc;
	hr->msr_exits = x86_msr_exits_ok(); /* x86_msr_exit answers them */
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
	/* Split irqchip: the VMM's 8259 asks for the window (KVM: only while
	 * LINT0 would take an ExtINT and none is pending); the module's 8259s
	 * ask for it while their INT waits for the guest. */
	hr->irq_window = (v->vc->vm->irqchip->split && READ_ONCE(kr->request_interrupt_window) &&
			  l->extint < 0 && slat_lapic_accepts_extint(l)) ||
			 x86_pic_waits(l, hr);
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
	else if (gpa - SLAT_IOAPIC_BASE < SLAT_IOAPIC_SIZE && !v->vc->vm->irqchip->split)
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

	if (wait_event_interruptible(
		l->wq, (if_set && (slat_lapic_pending(l) >= 0 || x86_extint_ready(l))) ||
			   atomic_read(&l->nmis) > 0 || slat_lapic_start_event(l))) {
		kr->exit_reason = KVM_EXIT_INTR;
		return -EINTR;
	}
	/* Slat completed the HLT, and an STI shadow ends with it: with IF set
	 * and no vector held, one set now goes in at the next entry (the
	 * module's 8259s acknowledge on that; Slat's irq_ready saw the shadow). */
	if (if_set && !(hr->irq & HC_IRQ_VALID))
		hr->irq_ready = 1;
	return SLAT_KVM_REENTER;
}

/*
 * An MSR the guest reads or writes that Slat leaves to the module (ABI 1.5's
 * IA32_TSC_DEADLINE; with 1.13 every MSR Slat does not keep), completed at
 * the next entry. IA32_TSC_DEADLINE: the LAPIC's timer, or, without an
 * in-kernel LAPIC, writes ignored and reads 0 as KVM. MSR_PLATFORM_INFO:
 * read-only, readable while KVM_CAP_MSR_PLATFORM_INFO is on. IA32_TSC
 * writes and IA32_TSC_ADJUST: the vCPU's TSC offset (x86_tsc_guest_write).
 * Any other MSR takes #GP(0), as KVM answers an MSR it does not emulate
 * (Slat before 1.13 sends no other: read as 0).
 */
static int x86_msr_exit(struct slat_kvm_vcpu *v, struct slat_lapic *l, struct hc_run *hr)
{
	struct slat_kvm_x86 *x = v->arch;
	u32 index = hr->u.msr.index;
	bool write = hr->u.msr.is_write;

	hr->u.msr.fault = 0;
	if (index == HC_MSR_TSC_DEADLINE) {
		if (write && l)
			slat_lapic_set_tsc_deadline(l, hr->u.msr.data);
		if (!write)
			hr->u.msr.data = l ? slat_lapic_tsc_deadline(l) : 0;
	} else if (index == MSR_PLATFORM_INFO && !write &&
		   !READ_ONCE(v->vc->vm->kvm_no_platform_info)) {
		hr->u.msr.data = x->platform_info;
	} else if (index == MSR_IA32_TSC_ADJUST && !write) {
		hr->u.msr.data = x->tsc_adjust;
	} else if ((index == MSR_IA32_TSC || index == MSR_IA32_TSC_ADJUST) && write) {
		return x86_tsc_guest_write(v, index, hr->u.msr.data) ?: SLAT_KVM_REENTER;
	} else if (x86_msr_exits_ok()) {
		hr->u.msr.fault = 1;
	} else {
		pr_info_once("slat: MSR exit for 0x%x: read as 0\n", index);
		hr->u.msr.data = 0;
	}
	return SLAT_KVM_REENTER;
}

/*
 * Port I/O of the module's 8259s (not with the split irqchip) and PIT (with
 * or without an irqchip, as KVM): answered here, an IN's value completed by
 * Slat at the next entry.
 */
static bool x86_legacy_pio(struct slat_kvm_vcpu *v, struct hc_run *hr)
{
	struct slat_irqchip *c = READ_ONCE(v->vc->vm->irqchip);
	u32 val = (u32)hr->u.io.data;
	bool done;

	if (hr->u.io.count != 1)
		return false;
	done = (c && !c->split &&
		slat_pic_port(c, hr->u.io.port, hr->u.io.size, hr->u.io.is_out, &val)) ||
	       slat_pit_port(v->vc->vm, hr->u.io.port, hr->u.io.is_out, &val);
	if (done && !hr->u.io.is_out)
		hr->u.io.data = hr->u.io.size == 1 ? (u8)val : val;
	return done;
}

static int x86_irqchip_exit(struct slat_kvm_vcpu *v, struct slat_lapic *l, struct hc_run *hr,
			    struct kvm_run *kr)
{
	bool split = v->vc->vm->irqchip->split;
	int eoi;

	x86_retire_irq(l, hr); /* what the VMM reads of the LAPIC shows it in service */
	/* KVM: 1 with the in-kernel PIC; split, whether KVM_INTERRUPT would be
	 * taken now (IF, no shadow, LINT0 in ExtINT mode, none pending). */
	kr->ready_for_interrupt_injection =
	    !split || (hr->irq_ready && l->extint < 0 && slat_lapic_accepts_extint(l));
	if (hr->reason == HC_EXIT_MMIO && x86_irqchip_mmio(v, l, hr)) {
		eoi = READ_ONCE(l->eoi_exit);
		if (eoi < 0)
			return SLAT_KVM_REENTER;
		/* The EOI of a level-triggered vector, for the VMM's I/O APIC. */
		WRITE_ONCE(l->eoi_exit, -1);
		slat_irq_trace("eoi-exit", eoi, v->id, 0, 0);
		kr->exit_reason = KVM_EXIT_IOAPIC_EOI;
		kr->eoi.vector = eoi;
		return SLAT_KVM_TO_VMM;
	}
	if (hr->reason == HC_EXIT_IRQ_WINDOW && !split)
		return SLAT_KVM_REENTER; /* the module's 8259s asked: INTA at the entry */
	if (hr->reason == HC_EXIT_IRQ_WINDOW) {
		kr->exit_reason = KVM_EXIT_IRQ_WINDOW_OPEN;
		return SLAT_KVM_TO_VMM;
	}
	if (hr->reason == HC_EXIT_HALT)
		return x86_halt(l, hr, kr);
	if (hr->reason == HC_EXIT_MSR)
		return x86_msr_exit(v, l, hr);
	return SLAT_KVM_GENERIC;
}

/*
 * String I/O (INS, OUTS, with or without REP), which Slat leaves to the VMM
 * as an internal exit at the instruction: emulated here for a guest without
 * paging (a BIOS: SeaBIOS reads fw_cfg with REP INSB), where a linear
 * address is the guest-physical one. Each exit carries what fits in the run
 * page's data area (64 bytes) as KVM_EXIT_IO with that count; RDI/RSI and
 * RCX move by it and RIP stays on a REP instruction until RCX is 0, so the
 * instruction continues at the next entry. Data goes through the VMM's
 * mapping of the slots. 0 (not this: the generic internal error), or as
 * slat_kvm_arch_exit.
 */
#define SVM_EXIT_IOIO 0x7b
#define VMX_EXIT_IO   30
#define CR0_PE	      1ull
#define CR0_PG	      (1ull << 31)
#define RFLAGS_DF     (1ull << 10)

static u64 masked_add(u64 old, s64 delta, u64 mask)
{
	return (old & ~mask) | ((old + delta) & mask);
}

static int x86_string_io(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr)
{
	struct slat_kvm_x86 *x = v->arch;
	bool op32, ad32, repz = false, in;
	const struct hc_x86_seg *seg = NULL;
	struct hc_regs_x86 *r;
	u8 insn[15], op = 0;
	u32 len, size, n;
	u64 mask, count, la;
	s64 step;
	int rc = 0;

	if (hr->u.fail.hw_reason != SVM_EXIT_IOIO && hr->u.fail.hw_reason != VMX_EXIT_IO)
		return SLAT_KVM_GENERIC;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	if (x86_regs(v, r, false) || (r->cr0 & CR0_PG) ||
	    slat_slot_rw(v->vc->vm, r->cs.base + (r->rip & 0xffffffff), insn, sizeof(insn), false))
		goto generic; /* paging: a linear address needs a walk the module lacks */
	op32 = ad32 = (r->cr0 & CR0_PE) && (r->cs.attr >> 10 & 1);
	for (len = 0; len < sizeof(insn); len++) {
		op = insn[len];
		if (op == 0x66)
			op32 = !op32;
		else if (op == 0x67)
			ad32 = !ad32;
		else if (op == 0xf3 || op == 0xf2)
			repz = true;
		else if (op == 0x26)
			seg = &r->es;
		else if (op == 0x2e)
			seg = &r->cs;
		else if (op == 0x36)
			seg = &r->ss;
		else if (op == 0x3e)
			seg = &r->ds;
		else if (op == 0x64)
			seg = &r->fs;
		else if (op == 0x65)
			seg = &r->gs;
		else
			break;
	}
	if (len >= sizeof(insn) || op < 0x6c || op > 0x6f)
		goto generic;
	len++;
	in = op <= 0x6d;
	size = op & 1 ? (op32 ? 4 : 2) : 1;
	mask = ad32 ? 0xffffffffull : 0xffffull;
	count = repz ? r->gpr[1] & mask : 1; /* RCX */
	if (!count) {
		r->rip += len;
		goto set;
	}
	/* Upward in blocks; one element at a time when DF counts down. */
	n = (r->rflags & RFLAGS_DF) ? 1
				    : min_t(u64, count, (PAGE_SIZE - SLAT_KVM_PIO_OFFSET) / size);
	step = (r->rflags & RFLAGS_DF) ? -(s64)size : (s64)n * size;
	kr->exit_reason = KVM_EXIT_IO;
	kr->io.direction = in ? KVM_EXIT_IO_IN : KVM_EXIT_IO_OUT;
	kr->io.size = size;
	kr->io.port = r->gpr[2] & 0xffff; /* DX */
	kr->io.count = n;
	kr->io.data_offset = SLAT_KVM_PIO_OFFSET;
	if (in) {
		la = r->es.base + (r->gpr[7] & mask); /* ES:eDI, no override */
		x->str_in = true;
		x->str_gpa = la & 0xffffffffull;
		x->str_bytes = n * size;
		r->gpr[7] = masked_add(r->gpr[7], step, mask);
	} else {
		la = (seg ? seg : &r->ds)->base + (r->gpr[6] & mask); /* DS:eSI */
		if (slat_slot_rw(v->vc->vm, la & 0xffffffffull, (u8 *)kr + SLAT_KVM_PIO_OFFSET,
				 n * size, false))
			goto generic;
		r->gpr[6] = masked_add(r->gpr[6], step, mask);
	}
	if (repz)
		r->gpr[1] = masked_add(r->gpr[1], -(s64)n, mask);
	if (!repz || !(r->gpr[1] & mask))
		r->rip += len;
	rc = SLAT_KVM_TO_VMM;
set:
	if (x86_regs(v, r, true)) {
		x->str_in = false;
		rc = SLAT_KVM_GENERIC;
	}
	kfree(r);
	return rc ?: SLAT_KVM_REENTER;
generic:
	kfree(r);
	return SLAT_KVM_GENERIC;
}

/* The VMM answered a string IN: its data into guest memory, before the next entry. */
static int x86_string_in_done(struct slat_kvm_vcpu *v)
{
	struct slat_kvm_x86 *x = v->arch;
	struct kvm_run *kr = page_address(v->run);

	if (!x || !x->str_in)
		return 0;
	x->str_in = false;
	return slat_slot_rw(v->vc->vm, x->str_gpa, (u8 *)kr + SLAT_KVM_PIO_OFFSET, x->str_bytes,
			    true);
}

/*
 * Every exit reports the guest's IF and whether KVM_INTERRUPT would be taken,
 * and, as KVM's post_kvm_run_save, IA32_APIC_BASE: QEMU copies run->apic_base
 * into its APIC's state after each KVM_RUN and puts it back with
 * KVM_SET_MSRS on a migration's destination (kvm_put_apicbase asserts
 * success), so it must be the value KVM_GET_SREGS and the MSR read give;
 * and CR8, the LAPIC's TPR, which QEMU puts back with KVM_SET_SREGS.
 */
int slat_kvm_arch_exit(struct slat_kvm_vcpu *v, struct hc_run *hr, struct kvm_run *kr)
{
	struct slat_lapic *l = slat_kvm_x86_lapic(v);
	int rc;

	kr->apic_base = x86_apic_base(v);
	kr->cr8 = x86_cr8(v);
	if (hr->reason == HC_EXIT_INTERNAL) {
		rc = x86_string_io(v, hr, kr);
		if (rc != SLAT_KVM_GENERIC)
			return rc;
	}
	if (!x86_irq_ok())
		return SLAT_KVM_GENERIC;
	if (hr->reason == HC_EXIT_IO && x86_legacy_pio(v, hr))
		return SLAT_KVM_REENTER;
	kr->if_flag = hr->if_flag;
	kr->ready_for_interrupt_injection = hr->irq_ready;
	if (l)
		return x86_irqchip_exit(v, l, hr, kr);
	if (hr->reason == HC_EXIT_MSR)
		return x86_msr_exit(v, NULL, hr);
	if (hr->reason != HC_EXIT_IRQ_WINDOW)
		return SLAT_KVM_GENERIC;
	kr->exit_reason = KVM_EXIT_IRQ_WINDOW_OPEN;
	return SLAT_KVM_TO_VMM;
}
