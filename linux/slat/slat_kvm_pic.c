// SPDX-License-Identifier: GPL-2.0
/*
 * The 8259A pair of a /dev/kvm VM on x86 (KVM_CREATE_IRQCHIP without the split
 * capability; docs/kvm-api.md): a master at ports 0x20/0x21 and a slave at
 * 0xa0/0xa1 cascaded on the master's IR2, and the PIIX edge/level control
 * registers (ELCR) at 0x4d0/0x4d1, answered in the module without an exit to
 * the VMM. Written from Intel's 8259A datasheet and KVM's behaviour (the
 * state is KVM's struct kvm_pic_state, so that KVM_GET/SET_IRQCHIP carry it
 * unchanged): ICW1-ICW4, OCW1 (IMR), OCW2 (non-specific and specific EOI,
 * rotation), OCW3 (IRR/ISR read select, poll, special mask), auto-EOI,
 * special fully nested mode, edge or level inputs.
 *
 * The master's output is the INTR line of the vCPUs whose local APIC takes
 * ExtINT through LINT0 (slat_lapic_accepts_extint, as KVM's
 * kvm_apic_accept_pic_intr): when it rises, the first such vCPU is kicked,
 * and its thread acknowledges the interrupt (INTA, slat_pic_intack) when it
 * offers the vector to Slat before an entry.
 *
 * Locking: `lock` (irqs off: the PIT's hrtimer raises IRQ0) guards the two
 * chips; kicks and acknowledgement notices are given after it is dropped.
 */
#include <linux/slab.h>

#include "slat_kvm_irq.h"

#define ICW1_ICW4   0x01 /* ICW4 follows */
#define ICW1_SINGLE 0x02
#define ICW1_LEVEL  0x08
#define ICW1_INIT   0x10
#define OCW3_SEL    0x08 /* bit 3 with bit 4 clear: OCW3, both clear: OCW2 */
#define OCW3_POLL   0x04
#define OCW3_RR	    0x02 /* read-register command valid */
#define OCW3_ESMM   0x40 /* special-mask command valid */
#define ICW4_AEOI   0x02
#define ICW4_SFNM   0x10
#define CASCADE_PIN 2
#define NO_IRQ	    8 /* "no priority level": lower than any pin */

/* What a chip operation leaves to do once the lock is dropped. */
struct pic_after {
	u32 acked;  /* pins (0-15) whose in-service bit was cleared */
	u32 unmask; /* pins (0-15) unmasked in IMR */
};

static struct kvm_pic_state *chip_of(struct slat_pic *p, u32 pin)
{
	return &p->chip[pin >> 3];
}

/*
 * The highest-priority pin set in `bits` as its priority level (0 the
 * highest: pin priority_add, then upwards round the ring), or NO_IRQ.
 */
static u32 best_level(const struct kvm_pic_state *s, u8 bits)
{
	u32 lvl;

	for (lvl = 0; lvl < 8; lvl++)
		if (bits & 1u << ((lvl + s->priority_add) & 7))
			return lvl;
	return NO_IRQ;
}

static bool is_master(struct slat_pic *p, const struct kvm_pic_state *s)
{
	return s == &p->chip[0];
}

/*
 * The pin this chip would interrupt with now, or -1: the best request not
 * masked must beat every pin in service (special mask mode lets through any
 * pin not itself in service; in special fully nested mode the master does
 * not count the cascade as in service, so a higher slave pin gets through).
 */
static int chip_request(struct slat_pic *p, struct kvm_pic_state *s)
{
	u8 in_service = s->isr;
	u32 want;

	want = best_level(s, s->irr & ~s->imr);
	if (want == NO_IRQ)
		return -1;
	if (s->special_mask)
		in_service &= s->imr;
	if (s->special_fully_nested_mode && is_master(p, s))
		in_service &= ~(1u << CASCADE_PIN);
	if (want >= best_level(s, in_service))
		return -1;
	return (want + s->priority_add) & 7;
}

/*
 * One input of a chip changes to `level`. Edge pins latch a rising edge in
 * IRR; level pins (ELCR) follow the line. -1 when masked, 0 when the
 * request was already there (coalesced), 1 otherwise: KVM's line status.
 */
static int chip_input(struct kvm_pic_state *s, u32 n, bool level)
{
	u8 bit = 1u << n;
	int fresh = !(s->irr & bit);

	if (!level) {
		s->last_irr &= ~bit;
		if (s->elcr & bit)
			s->irr &= ~bit;
		return (s->imr & bit) ? -1 : 1;
	}
	if ((s->elcr & bit) || !(s->last_irr & bit))
		s->irr |= bit;
	else
		fresh = 0; /* an edge pin held high: no new edge */
	s->last_irr |= bit;
	return (s->imr & bit) ? -1 : fresh;
}

/*
 * Recompute the cascade and the master's output (lock held). The slave's
 * request is an edge on the master's IR2, as its INT line is wired. Returns
 * whether the output rose (the caller kicks a vCPU).
 */
static bool update_output(struct slat_pic *p)
{
	bool was = p->output;

	if (chip_request(p, &p->chip[1]) >= 0) {
		chip_input(&p->chip[0], CASCADE_PIN, true);
		chip_input(&p->chip[0], CASCADE_PIN, false);
	}
	p->output = chip_request(p, &p->chip[0]) >= 0;
	return p->output && !was;
}

/* Pin `n` of chip `s` leaves service (EOI or auto-EOI). */
static void end_service(struct slat_pic *p, struct kvm_pic_state *s, u32 n, struct pic_after *a)
{
	s->isr &= ~(1u << n);
	a->acked |= 1u << (n + (is_master(p, s) ? 0 : 8));
}

/* INTA on one chip for pin n: into service, an edge request consumed. */
static void chip_ack(struct slat_pic *p, struct kvm_pic_state *s, u32 n, struct pic_after *a)
{
	s->isr |= 1u << n;
	if (!(s->elcr & 1u << n))
		s->irr &= ~(1u << n);
	if (!s->auto_eoi)
		return;
	if (s->rotate_on_auto_eoi)
		s->priority_add = (n + 1) & 7;
	end_service(p, s, n, a);
}

/* The vCPU to interrupt: the first whose LAPIC takes ExtINT (KVM's choice). */
static void kick_taker(struct slat_vm *vm)
{
	struct slat_lapic *l;
	unsigned long id;

	rcu_read_lock();
	xa_for_each (&vm->kvcpus, id, l) {
		if (slat_lapic_accepts_extint(l)) {
			slat_lapic_kick(l);
			break;
		}
	}
	rcu_read_unlock();
}

/* Unlock, then kick, acknowledge and unmask as the operation left them. */
static void pic_unlock(struct slat_irqchip *c, unsigned long f, bool rose,
		       const struct pic_after *a)
{
	u32 pin;

	spin_unlock_irqrestore(&c->pic.lock, f);
	if (rose)
		kick_taker(c->vm);
	for (pin = 0; pin < SLAT_PIC_PINS; pin++) {
		u32 chip = pin < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE;

		if (a->acked & 1u << pin)
			slat_irq_acked(c, chip, pin & 7);
		if (a->unmask & 1u << pin)
			slat_irq_unmasked(c, chip, pin & 7);
	}
}

int slat_pic_set_line(struct slat_irqchip *c, u32 pin, bool level)
{
	struct slat_pic *p = &c->pic;
	struct pic_after a = {};
	unsigned long f;
	bool rose;
	int st;

	if (pin >= SLAT_PIC_PINS)
		return -EINVAL;
	spin_lock_irqsave(&p->lock, f);
	st = chip_input(chip_of(p, pin), pin & 7, level);
	rose = update_output(p);
	pic_unlock(c, f, rose, &a);
	return st;
}

bool slat_pic_output(struct slat_irqchip *c)
{
	return READ_ONCE(c->pic.output);
}

/*
 * The INTA cycle: the vector of the best request, master then (on IR2) the
 * slave; a request that went away meanwhile answers the spurious IR7 of
 * the chip concerned, as the 8259A does.
 */
int slat_pic_intack(struct slat_irqchip *c)
{
	struct slat_pic *p = &c->pic;
	struct kvm_pic_state *m = &p->chip[0], *s = &p->chip[1];
	struct pic_after a = {};
	unsigned long f;
	int n, n2, vec;
	bool rose;

	spin_lock_irqsave(&p->lock, f);
	n = chip_request(p, m);
	if (n < 0) {
		vec = m->irq_base + 7;
	} else {
		chip_ack(p, m, n, &a);
		if (n == CASCADE_PIN) {
			n2 = chip_request(p, s);
			if (n2 >= 0)
				chip_ack(p, s, n2, &a);
			vec = s->irq_base + (n2 >= 0 ? n2 : 7);
		} else {
			vec = m->irq_base + n;
		}
	}
	p->output = false;
	rose = update_output(p);
	pic_unlock(c, f, rose, &a);
	return vec;
}

/* ICW1: start of initialisation; the chip forgets its masks and requests. */
static void chip_init(struct slat_pic *p, struct kvm_pic_state *s, u8 icw1, struct pic_after *a)
{
	if (icw1 & (ICW1_SINGLE | ICW1_LEVEL))
		pr_info_once("slat: 8259 ICW1 0x%x: single or level mode not emulated\n", icw1);
	s->init4 = icw1 & ICW1_ICW4;
	s->last_irr = 0;
	s->irr &= s->elcr; /* edge requests drop; level lines stay asserted */
	s->imr = 0;
	/* What was in service is done (acknowledged: the PIT waits for it). */
	a->acked |= (u32)s->isr << (is_master(p, s) ? 0 : 8);
	s->isr = 0;
	s->priority_add = 0;
	s->special_mask = 0;
	s->read_reg_select = 0;
	s->poll = 0;
	if (!s->init4) {
		s->special_fully_nested_mode = 0;
		s->auto_eoi = 0;
	}
	s->init_state = 1; /* ICW2 next */
}

/* OCW2: EOIs and priority rotation. */
static void chip_ocw2(struct slat_pic *p, struct kvm_pic_state *s, u8 val, struct pic_after *a)
{
	u32 cmd = val >> 5, n = val & 7, lvl;

	switch (cmd) {
	case 0: /* rotate in auto-EOI mode: clear */
	case 4: /* rotate in auto-EOI mode: set */
		s->rotate_on_auto_eoi = cmd == 4;
		return;
	case 1: /* non-specific EOI */
	case 5: /* rotate on non-specific EOI */
		lvl = best_level(s, s->isr);
		if (lvl == NO_IRQ)
			return;
		n = (lvl + s->priority_add) & 7;
		if (cmd == 5)
			s->priority_add = (n + 1) & 7;
		end_service(p, s, n, a);
		return;
	case 3: /* specific EOI */
		end_service(p, s, n, a);
		return;
	case 6: /* set priority: pin n becomes the lowest */
		s->priority_add = (n + 1) & 7;
		return;
	case 7: /* rotate on specific EOI */
		s->priority_add = (n + 1) & 7;
		end_service(p, s, n, a);
		return;
	default: /* 2: no operation */
		return;
	}
}

static void chip_write_cmd(struct slat_pic *p, struct kvm_pic_state *s, u8 val, struct pic_after *a)
{
	if (val & ICW1_INIT) {
		chip_init(p, s, val, a);
	} else if (val & OCW3_SEL) {
		if (val & OCW3_POLL)
			s->poll = 1;
		if (val & OCW3_RR)
			s->read_reg_select = val & 1;
		if (val & OCW3_ESMM)
			s->special_mask = (val >> 5) & 1;
	} else {
		chip_ocw2(p, s, val, a);
	}
}

/* The data port: OCW1 (IMR) in operation, ICW2-ICW4 during initialisation. */
static void chip_write_data(struct slat_pic *p, struct kvm_pic_state *s, u8 val,
			    struct pic_after *a)
{
	switch (s->init_state) {
	case 1: /* ICW2: the vector base */
		s->irq_base = val & 0xf8;
		s->init_state = 2;
		return;
	case 2: /* ICW3: the cascade wiring, which is fixed here */
		s->init_state = s->init4 ? 3 : 0;
		return;
	case 3: /* ICW4 */
		s->special_fully_nested_mode = !!(val & ICW4_SFNM);
		s->auto_eoi = !!(val & ICW4_AEOI);
		s->init_state = 0;
		return;
	default: /* OCW1 */
		a->unmask |= (u32)(s->imr & ~val) << (is_master(p, s) ? 0 : 8);
		s->imr = val;
		return;
	}
}

/*
 * A poll (OCW3 P, then a read): the best request is acknowledged as by INTA
 * and its pin read back with bit 7 set; 0 when there is none.
 */
static u8 chip_poll(struct slat_pic *p, struct kvm_pic_state *s, struct pic_after *a)
{
	int n = chip_request(p, s);

	s->poll = 0;
	if (n < 0)
		return 0;
	chip_ack(p, s, n, a);
	if (!is_master(p, s)) { /* the cascade's request on the master is consumed */
		p->chip[0].irr &= ~(1u << CASCADE_PIN);
		p->chip[0].isr &= ~(1u << CASCADE_PIN);
	}
	return 0x80 | n;
}

static u8 chip_read(struct slat_pic *p, struct kvm_pic_state *s, bool data, struct pic_after *a)
{
	if (s->poll)
		return chip_poll(p, s, a);
	if (data)
		return s->imr;
	return s->read_reg_select ? s->isr : s->irr;
}

bool slat_pic_port(struct slat_irqchip *c, u16 port, u32 size, bool out, u32 *val)
{
	struct slat_pic *p = &c->pic;
	struct kvm_pic_state *s;
	struct pic_after a = {};
	unsigned long f;
	bool rose;

	if (port != 0x20 && port != 0x21 && port != 0xa0 && port != 0xa1 && port != 0x4d0 &&
	    port != 0x4d1)
		return false;
	if (size != 1) { /* KVM too answers wider accesses with nothing */
		pr_info_once("slat: 8259 access of %u bytes at port 0x%x ignored\n", size, port);
		if (!out)
			*val = 0;
		return true;
	}
	spin_lock_irqsave(&p->lock, f);
	s = &p->chip[port >= 0xa0 && port < 0x4d0 ? 1 : 0];
	if (port >= 0x4d0) {
		s = &p->chip[port & 1];
		if (out)
			s->elcr = *val & s->elcr_mask;
		else
			*val = s->elcr;
	} else if (out && (port & 1)) {
		chip_write_data(p, s, *val, &a);
	} else if (out) {
		chip_write_cmd(p, s, *val, &a);
	} else {
		*val = chip_read(p, s, port & 1, &a);
	}
	rose = update_output(p);
	pic_unlock(c, f, rose, &a);
	return true;
}

/* KVM's reset values: the ELCR bits a PIIX lets the OS set (IRQ 0-2, 8, 13 fixed edge). */
void slat_pic_init(struct slat_pic *p)
{
	memset(p, 0, sizeof(*p));
	spin_lock_init(&p->lock);
	p->chip[0].elcr_mask = 0xf8;
	p->chip[1].elcr_mask = 0xde;
}

void slat_pic_get(struct slat_irqchip *c, u32 chip, struct kvm_pic_state *st)
{
	unsigned long f;

	spin_lock_irqsave(&c->pic.lock, f);
	*st = c->pic.chip[chip];
	spin_unlock_irqrestore(&c->pic.lock, f);
}

/*
 * KVM_SET_IRQCHIP: the image as given (KVM checks none of it; every field
 * is a byte the code above reads with masks), then the output recomputed.
 */
void slat_pic_set(struct slat_irqchip *c, u32 chip, const struct kvm_pic_state *st)
{
	struct pic_after a = {};
	unsigned long f;
	bool rose;

	spin_lock_irqsave(&c->pic.lock, f);
	c->pic.chip[chip] = *st;
	rose = update_output(&c->pic);
	pic_unlock(c, f, rose, &a);
}
