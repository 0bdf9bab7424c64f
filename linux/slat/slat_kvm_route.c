// SPDX-License-Identifier: GPL-2.0
/*
 * GSI routing of a /dev/kvm VM on x86 (docs/kvm-api.md): KVM_SET_GSI_ROUTING's
 * table, through which KVM_IRQ_LINE reaches an I/O APIC pin or sends an MSI,
 * and KVM_CAP_SPLIT_IRQCHIP (the local APICs here, the I/O APIC and the 8259s
 * in the VMM). Without a table the routing is KVM's default one: GSI 0-23 are
 * the I/O APIC's pins, and 0-15 also the 8259s'. Written from KVM's API
 * documentation (Documentation/virt/kvm/api.rst, Linux 6.1).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "slat_kvm_irq.h"

#define SLAT_MAX_ROUTES 4096 /* KVM_MAX_IRQ_ROUTES on x86 */

/* Diagnostics: the first irq_trace interrupt messages of each kind logged. */
static int irq_trace;
module_param(irq_trace, int, 0644);
MODULE_PARM_DESC(irq_trace, "log the first N MSIs, GSI lines and EOI exits (0: none)");

void slat_irq_trace(const char *what, u32 a, u32 b, u32 c, int r)
{
	static atomic_t n = ATOMIC_INIT(0);

	if (irq_trace > 0 && atomic_inc_return(&n) <= irq_trace)
		pr_info("slat: irq %s 0x%x 0x%x 0x%x -> %d\n", what, a, b, c, r);
}
#define SLAT_SPLIT_MAX_PINS 24 /* MAX_NR_RESERVED_IOAPIC_PINS */

/* One KVM_SET_GSI_ROUTING table, replaced whole (RCU: KVM_IRQ_LINE reads it). */
struct slat_routes {
	struct rcu_head rcu;
	u32 n;
	struct kvm_irq_routing_entry e[];
};

/*
 * An MSI as KVM decodes it (destination bits 19:12, logical bit 2; data:
 * vector, delivery mode, trigger), whatever the address's upper bits: QEMU's
 * APIC window passes its offset (0x2004 for 0xfee02004). How many LAPICs took
 * it; -EINVAL for address_hi, which only x2APIC destinations use.
 */
int slat_msi_deliver(struct slat_vm *vm, u32 addr_lo, u32 addr_hi, u32 data)
{
	u32 mode = data >> 8 & 7;
	int r;

	if (addr_hi)
		return -EINVAL; /* no x2APIC destinations */
	if (!slat_dm_emulated(mode)) {
		pr_info_once("slat: MSI delivery mode %u (SMI, ExtINT) not emulated\n", mode);
		return 0;
	}
	r = slat_irq_deliver(vm, addr_lo >> 12 & 0xff, addr_lo & 4, mode, data & 0xff,
			     data & (1u << 15));
	return r;
}

/* KVM's checks of one entry (virt/kvm/irqchip.c, arch/x86/kvm/irq_comm.c). */
static int route_ok(const struct slat_irqchip *c, const struct kvm_irq_routing_entry *e)
{
	if (e->gsi >= SLAT_MAX_ROUTES || e->flags)
		return -EINVAL;
	switch (e->type) {
	case KVM_IRQ_ROUTING_IRQCHIP:
		if (c->split) /* the VMM's I/O APIC and PIC: no in-kernel pins */
			return -EINVAL;
		if (e->u.irqchip.irqchip == KVM_IRQCHIP_IOAPIC)
			return e->u.irqchip.pin < SLAT_IOAPIC_PINS ? 0 : -EINVAL;
		if (e->u.irqchip.irqchip == KVM_IRQCHIP_PIC_MASTER ||
		    e->u.irqchip.irqchip == KVM_IRQCHIP_PIC_SLAVE)
			return e->u.irqchip.pin < 8 ? 0 : -EINVAL;
		return -EINVAL;
	case KVM_IRQ_ROUTING_MSI:
		return 0;
	default:
		return -EINVAL; /* S390 adapters, Hyper-V SINT, Xen event channels */
	}
}

long slat_route_set(struct slat_irqchip *c, struct kvm_irq_routing __user *up)
{
	struct slat_routes *t, *old;
	u32 n, i, flags;
	int rc = 0;

	if (!c)
		return -EINVAL; /* KVM: no irqchip, no routing */
	if (get_user(n, &up->nr) || get_user(flags, &up->flags))
		return -EFAULT;
	if (n > SLAT_MAX_ROUTES || flags)
		return -EINVAL;
	t = kvzalloc(struct_size(t, e, n), GFP_KERNEL_ACCOUNT);
	if (!t)
		return -ENOMEM;
	t->n = n;
	if (n && copy_from_user(t->e, up->entries, n * sizeof(t->e[0])))
		rc = -EFAULT;
	for (i = 0; !rc && i < n; i++)
		rc = route_ok(c, &t->e[i]);
	if (rc) {
		kvfree(t);
		return rc;
	}
	spin_lock(&c->route_lock);
	old = rcu_dereference_protected(c->routes, lockdep_is_held(&c->route_lock));
	rcu_assign_pointer(c->routes, t);
	spin_unlock(&c->route_lock);
	if (old) {
		synchronize_rcu();
		kvfree(old);
	}
	return 0;
}

void slat_route_free(struct slat_irqchip *c)
{
	kvfree(rcu_dereference_protected(c->routes, true));
}

/* KVM's sum of the routes' answers: -1 while none took it (masked). */
static int status_add(int st, int r)
{
	return r < 0 ? st : r + (st < 0 ? 0 : st);
}

/*
 * One route of `gsi` to `level`, its answer added to *st as KVM counts it
 * (an MSI: the LAPICs reached, -1 for none; an I/O APIC pin 1; an 8259 pin
 * -1 masked, 0 coalesced, 1). 0 or -errno.
 */
static int route_fire(struct slat_irqchip *c, const struct kvm_irq_routing_entry *e, bool level,
		      int *st)
{
	u32 chip = e->u.irqchip.irqchip, pin = e->u.irqchip.pin;
	int r;

	if (e->type == KVM_IRQ_ROUTING_MSI) {
		if (!level)
			return 0; /* an MSI has no falling edge */
		r = slat_msi_deliver(c->vm, e->u.msi.address_lo, e->u.msi.address_hi,
				     e->u.msi.data);
		if (r < 0)
			return r;
		*st = status_add(*st, r ? r : -1);
		return 0;
	}
	if (chip == KVM_IRQCHIP_PIC_MASTER || chip == KVM_IRQCHIP_PIC_SLAVE) {
		r = slat_pic_set_line(c, pin + (chip == KVM_IRQCHIP_PIC_SLAVE ? 8 : 0), level);
		*st = status_add(*st, r);
		return 0;
	}
	r = slat_ioapic_set_line(c, pin, level); /* route_ok: IOAPIC */
	if (!r)
		*st = status_add(*st, 1);
	return r;
}

/*
 * KVM's default table (KVM_CREATE_IRQCHIP): GSI 0-15 to the 8259 pin and
 * the I/O APIC pin of the same number, 16-23 to the I/O APIC only. (QEMU
 * sets its own, with GSI 0 on I/O APIC pin 2.)
 */
static int default_route_fire(struct slat_irqchip *c, u32 gsi, bool level, int *st)
{
	int r;

	if (gsi >= SLAT_IOAPIC_PINS)
		return -EINVAL; /* docs: KVM ignores it; the module's checkers want the error */
	r = slat_ioapic_set_line(c, gsi, level);
	if (r)
		return r;
	*st = status_add(*st, 1);
	if (gsi < SLAT_PIC_PINS)
		*st = status_add(*st, slat_pic_set_line(c, gsi, level));
	return 0;
}

/* Whether (chip, pin) is a route of GSI 0 (KVM finds a pin's GSI the same way). */
static bool pin_is_gsi0(struct slat_irqchip *c, u32 chip, u32 pin)
{
	struct slat_routes *t;
	bool hit = false;
	u32 i;

	rcu_read_lock();
	t = rcu_dereference(c->routes);
	if (!t)
		hit = pin == 0 && chip != KVM_IRQCHIP_PIC_SLAVE;
	for (i = 0; t && i < t->n && !hit; i++)
		hit = t->e[i].gsi == 0 && t->e[i].type == KVM_IRQ_ROUTING_IRQCHIP &&
		      t->e[i].u.irqchip.irqchip == chip && t->e[i].u.irqchip.pin == pin;
	rcu_read_unlock();
	return hit;
}

void slat_irq_acked(struct slat_irqchip *c, u32 chip, u32 pin)
{
	if (READ_ONCE(c->vm->pit) && pin_is_gsi0(c, chip, pin))
		slat_pit_acked(c->vm);
}

void slat_irq_unmasked(struct slat_irqchip *c, u32 chip, u32 pin)
{
	if (READ_ONCE(c->vm->pit) && pin_is_gsi0(c, chip, pin))
		slat_pit_unmasked(c->vm);
}

/*
 * KVM_IRQ_LINE(_STATUS): every route of `gsi`; KVM's status is the sum of
 * the routes' answers (-1: none took it). A GSI without a route does
 * nothing (status -1). Without a table, KVM's default routing.
 */
int slat_route_irq_line(struct slat_irqchip *c, u32 gsi, bool level, int *status)
{
	struct slat_routes *t;
	int rc = 0, st = -1;
	u32 i;

	rcu_read_lock();
	t = rcu_dereference(c->routes);
	if (t) {
		for (i = 0; i < t->n && rc >= 0; i++)
			if (t->e[i].gsi == gsi)
				rc = route_fire(c, &t->e[i], level, &st);
	}
	rcu_read_unlock();
	if (t)
		goto out;
	if (c->split)
		goto out; /* an empty table until the VMM sets one */
	rc = default_route_fire(c, gsi, level, &st);
out:
	if (gsi >= 16) /* PCI INTx: the ISA lines (timer, serial) would fill the log */
		slat_irq_trace("gsi", gsi, level, t ? t->n : 0, rc < 0 ? rc : st);
	if (rc < 0)
		return rc;
	*status = st;
	return 0;
}

/*
 * KVM_ENABLE_CAP(KVM_CAP_SPLIT_IRQCHIP): local APICs in the module, args[0]
 * I/O APIC pins (at most 24) in the VMM, whose level-triggered vectors end
 * with KVM_EXIT_IOAPIC_EOI. KVM's refusals: too many pins -EINVAL, an
 * irqchip or a vCPU already -EEXIST.
 */
long slat_route_enable_split(struct slat_vm *vm, u64 pins)
{
	if (pins > SLAT_SPLIT_MAX_PINS)
		return -EINVAL;
	return slat_irqchip_install(vm, true, (u32)pins, -EEXIST);
}
