// SPDX-License-Identifier: GPL-2.0
/*
 * The I/O APIC of a /dev/kvm VM on x86 (slat_kvm_irq.h): 24 pins in MMIO at
 * 0xfec00000 (IOREGSEL at 0x00, IOWIN at 0x10, version 0x11), driven by the
 * VMM's KVM_IRQ_LINE: an edge-triggered pin delivers on a rising edge, a
 * level-triggered one while asserted, once per EOI (remote IRR). Fixed and
 * lowest-priority delivery (the first LAPIC that matches), physical or flat
 * logical destinations. An EOI of a pin's vector is its acknowledgement
 * (slat_irq_acked: the PIT's reinjection), an unmask a mask notice. Not
 * emulated: SMI/ExtINT delivery modes (logged once, dropped).
 */
#include "slat_kvm_irq.h"

#define REDIR_MASKED  (1ull << 16)
#define REDIR_LEVEL   (1ull << 15)
#define REDIR_REMOTE  (1ull << 14)
#define REDIR_LOGICAL (1ull << 11)
#define REDIR_RO      (REDIR_REMOTE | (1ull << 12)) /* remote IRR, delivery status */

/* The flat logical model: a destination bit set in the LAPIC's LDR. */
static bool lapic_matches(struct slat_lapic *l, u32 id, u32 dest, bool logical)
{
	u32 ldr = *(u32 *)(l->regs + 0xd0) >> 24;

	return logical ? (ldr & dest) != 0 : (dest == 0xff || dest == id);
}

int slat_irq_deliver(struct slat_vm *vm, u32 dest, bool logical, u32 mode, u8 vector, bool level)
{
	struct slat_lapic *l;
	unsigned long id;
	int n = 0;

	rcu_read_lock(); /* a vCPU closing meanwhile frees its LAPIC after this */
	xa_for_each (&vm->kvcpus, id, l) {
		if (!lapic_matches(l, id, dest, logical))
			continue;
		slat_lapic_deliver(l, mode, vector, level);
		n++;
		if (mode == SLAT_DM_LOWEST)
			break;
	}
	rcu_read_unlock();
	return n;
}

void slat_ioapic_init(struct slat_ioapic *io)
{
	unsigned int i;

	spin_lock_init(&io->lock);
	for (i = 0; i < SLAT_IOAPIC_PINS; i++)
		io->redir[i] = REDIR_MASKED;
}

/* Deliver pin `pin` if it should fire now (lock held); the LAPIC is set after. */
static bool pin_fires(struct slat_ioapic *io, u32 pin, bool edge_rise)
{
	u64 r = io->redir[pin];

	if (r & REDIR_MASKED)
		return false;
	if (!(r & REDIR_LEVEL))
		return edge_rise;
	if (!(io->level >> pin & 1) || (r & REDIR_REMOTE))
		return false;
	io->redir[pin] |= REDIR_REMOTE;
	return true;
}

static void fire(struct slat_irqchip *c, u64 r)
{
	u32 mode = r >> 8 & 7;

	if (mode != 0 && mode != 1) {
		pr_info_once("slat: I/O APIC: delivery mode %u not emulated\n", mode);
		return;
	}
	slat_irq_deliver(c->vm, r >> 56, r & REDIR_LOGICAL, mode, r & 0xff, r & REDIR_LEVEL);
}

int slat_ioapic_set_line(struct slat_irqchip *c, u32 pin, bool level)
{
	struct slat_ioapic *io = &c->ioapic;
	unsigned long f;
	bool rise, go;
	u64 r;

	if (pin >= SLAT_IOAPIC_PINS)
		return -EINVAL;
	spin_lock_irqsave(&io->lock, f);
	rise = level && !(io->level >> pin & 1);
	io->level = level ? io->level | 1u << pin : io->level & ~(1u << pin);
	go = pin_fires(io, pin, rise);
	r = io->redir[pin];
	spin_unlock_irqrestore(&io->lock, f);
	if (go)
		fire(c, r);
	return 0;
}

void slat_ioapic_eoi(struct slat_irqchip *c, u8 vector)
{
	struct slat_ioapic *io = &c->ioapic;
	u64 again[SLAT_IOAPIC_PINS];
	unsigned int i, n = 0;
	unsigned long f;
	u32 acked = 0;

	spin_lock_irqsave(&io->lock, f);
	for (i = 0; i < SLAT_IOAPIC_PINS; i++) {
		if ((io->redir[i] & 0xff) != vector)
			continue;
		acked |= 1u << i;
		if (!(io->redir[i] & REDIR_LEVEL))
			continue;
		io->redir[i] &= ~REDIR_REMOTE;
		if (pin_fires(io, i, false)) /* still asserted: once more */
			again[n++] = io->redir[i];
	}
	spin_unlock_irqrestore(&io->lock, f);
	for (i = 0; i < SLAT_IOAPIC_PINS; i++)
		if (acked & 1u << i)
			slat_irq_acked(c, KVM_IRQCHIP_IOAPIC, i);
	for (i = 0; i < n; i++)
		fire(c, again[i]);
}

static u32 read_window(struct slat_ioapic *io)
{
	u32 sel = io->ioregsel & 0xff;

	if (sel == 0x00)
		return io->id << 24;
	if (sel == 0x01)
		return (SLAT_IOAPIC_PINS - 1) << 16 | 0x11; /* max redirection entry, version */
	if (sel == 0x02)
		return io->id << 24; /* arbitration ID */
	if (sel >= 0x10 && sel < 0x10 + 2 * SLAT_IOAPIC_PINS) {
		u64 r = io->redir[(sel - 0x10) / 2];
		return sel & 1 ? (u32)(r >> 32) : (u32)r;
	}
	return 0;
}

/* A write to the window (lock held): true when a level pin must be re-checked. */
static bool write_window(struct slat_ioapic *io, u32 val, u32 *pin)
{
	u32 sel = io->ioregsel & 0xff;
	u64 *r;

	if (sel == 0x00) {
		io->id = val >> 24 & 0xf;
		return false;
	}
	if (sel < 0x10 || sel >= 0x10 + 2 * SLAT_IOAPIC_PINS)
		return false;
	*pin = (sel - 0x10) / 2;
	r = &io->redir[*pin];
	if (sel & 1)
		*r = (*r & 0xffffffffull) | (u64)(val & 0xff000000) << 32;
	else
		*r = (*r & (0xffffffff00000000ull | REDIR_RO)) | (val & ~(u32)REDIR_RO);
	return true;
}

bool slat_ioapic_mmio(struct slat_irqchip *c, u32 off, bool write, u32 *val)
{
	struct slat_ioapic *io = &c->ioapic;
	unsigned long f;
	bool check = false, go = false, unmasked = false;
	u32 pin = 0;
	u64 r = 0, before = 0;

	spin_lock_irqsave(&io->lock, f);
	if (off == 0x00) {
		if (write)
			io->ioregsel = *val;
		else
			*val = io->ioregsel;
	} else if (off == 0x10) {
		if (write) {
			u32 sel = io->ioregsel & 0xff;

			if (sel >= 0x10 && sel < 0x10 + 2 * SLAT_IOAPIC_PINS)
				before = io->redir[(sel - 0x10) / 2];
			check = write_window(io, *val, &pin);
		} else
			*val = read_window(io);
	} else if (!write) {
		*val = 0;
	}
	if (check) { /* an unmasked level pin that is asserted fires now */
		go = pin_fires(io, pin, false);
		r = io->redir[pin];
		unmasked = (before & REDIR_MASKED) && !(r & REDIR_MASKED);
	}
	spin_unlock_irqrestore(&io->lock, f);
	if (unmasked)
		slat_irq_unmasked(c, KVM_IRQCHIP_IOAPIC, pin);
	if (go)
		fire(c, r);
	return true;
}

void slat_ioapic_get(struct slat_irqchip *c, struct kvm_ioapic_state *s)
{
	struct slat_ioapic *io = &c->ioapic;
	unsigned long f;
	unsigned int i;

	BUILD_BUG_ON(ARRAY_SIZE(s->redirtbl) != SLAT_IOAPIC_PINS);
	memset(s, 0, sizeof(*s));
	spin_lock_irqsave(&io->lock, f);
	s->base_address = SLAT_IOAPIC_BASE;
	s->ioregsel = io->ioregsel;
	s->id = io->id;
	s->irr = io->level;
	for (i = 0; i < SLAT_IOAPIC_PINS; i++)
		s->redirtbl[i].bits = io->redir[i];
	spin_unlock_irqrestore(&io->lock, f);
}

/*
 * The whole image or nothing (the base cannot move: -EINVAL); then every
 * level pin still asserted and not in service fires, as after a write.
 */
int slat_ioapic_set(struct slat_irqchip *c, const struct kvm_ioapic_state *s)
{
	struct slat_ioapic *io = &c->ioapic;
	u64 go[SLAT_IOAPIC_PINS];
	unsigned int i, n = 0;
	unsigned long f;

	if (s->base_address != SLAT_IOAPIC_BASE || s->id > 0xf || s->irr >> SLAT_IOAPIC_PINS)
		return -EINVAL;
	spin_lock_irqsave(&io->lock, f);
	io->ioregsel = s->ioregsel;
	io->id = s->id;
	io->level = s->irr;
	for (i = 0; i < SLAT_IOAPIC_PINS; i++)
		io->redir[i] = s->redirtbl[i].bits & ~(1ull << 12); /* no delivery pending */
	for (i = 0; i < SLAT_IOAPIC_PINS; i++)
		if ((io->redir[i] & REDIR_LEVEL) && pin_fires(io, i, false))
			go[n++] = io->redir[i];
	spin_unlock_irqrestore(&io->lock, f);
	for (i = 0; i < n; i++)
		fire(c, go[i]);
	return 0;
}
