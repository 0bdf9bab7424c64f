// SPDX-License-Identifier: GPL-2.0
/*
 * The 8254 PIT of a /dev/kvm VM on x86 (KVM_CREATE_PIT2; docs/kvm-api.md):
 * three counters at ports 0x40-0x42 with the control word at 0x43, and, when
 * the VMM asks for KVM_PIT_SPEAKER_DUMMY, port 0x61's gate of counter 2 and
 * its output, answered in the module without an exit to the VMM. Written
 * from Intel's 82C54 datasheet and KVM's behaviour; the state is KVM's
 * struct kvm_pit_channel_state, so that KVM_GET/SET_PIT2 carry it unchanged.
 *
 * Counters 1 and 2 are computed from the time their count was loaded.
 * Counter 0 drives IRQ0 (GSI 0, through the routing to the 8259 and the I/O
 * APIC) from an hrtimer: modes 0, 1 and 4 fire once, 2 and 3 periodically
 * (a period below min_period_us is raised to it, as KVM does), and only with
 * the in-kernel I/O APIC (KVM_CREATE_IRQCHIP without split) and while the
 * HPET has not taken IRQ0 over (KVM_PIT_FLAGS_HPET_LEGACY).
 *
 * Lost ticks are reinjected by default, as KVM does: a tick is raised only
 * once the previous one was acknowledged (an EOI of GSI 0 at the 8259 or at
 * the I/O APIC, slat_pit_acked); ticks that expire meanwhile are counted and
 * raised one per acknowledgement. Unmasking GSI 0 forgets them.
 * KVM_REINJECT_CONTROL turns this off (every tick raised at once).
 *
 * Locking: `lock` (a mutex: the VMM's ioctls and the vCPUs' port accesses)
 * guards the channels; the hrtimer's callback reads only the atomics and
 * the period, which are set while the timer is stopped.
 */
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "slat_kvm_irq.h"

#define PIT_HZ	       1193182u /* the 14.31818 MHz crystal / 12 */
#define PIT_PORT_BASE  0x40
#define PIT_PORT_CTRL  0x43
#define SPEAKER_PORT   0x61
#define RW_LSB	       1 /* access modes of the control word (and read/write states) */
#define RW_MSB	       2
#define RW_WORD	       3    /* LSB then MSB */
#define RW_WORD_HI     4    /* the MSB of a word is next */
#define MODE_NONE      0xff /* KVM's "never programmed" */
#define SPEAKER_GATE   0x01
#define SPEAKER_DATA   0x02
#define SPEAKER_OUT2   0x20
#define SPEAKER_REFRSH 0x10

static unsigned int min_period_us = 200;
module_param(min_period_us, uint, 0644);
MODULE_PARM_DESC(min_period_us, "shortest periodic PIT period in us (KVM's min_timer_period_us)");

struct slat_pit {
	struct mutex lock;
	struct kvm_pit_channel_state ch[3];
	u32 flags;	   /* KVM_PIT_FLAGS_HPET_LEGACY, _SPEAKER_DATA_ON */
	bool speaker_port; /* KVM_PIT_SPEAKER_DUMMY: port 0x61 is answered here */
	struct hrtimer timer;
	s64 period; /* counter 0's, in ns; 0 never armed */
	bool periodic;
	atomic_t reinject; /* KVM's default 1 */
	atomic_t pending;  /* ticks not yet acknowledged (reinject) */
	atomic_t acked;	   /* the last tick raised was acknowledged */
	struct slat_vm *vm;
};

static s64 ticks_of(s64 ns)
{
	return ns <= 0 ? 0 : (s64)mul_u64_u32_div(ns, PIT_HZ, NSEC_PER_SEC);
}

/* Time since counter `i` started counting its current count. */
static s64 elapsed_ns(struct slat_pit *p, u32 i)
{
	if (i)
		return ktime_get_ns() - p->ch[i].count_load_time;
	if (!p->period)
		return 0;
	return p->period - ktime_to_ns(hrtimer_get_remaining(&p->timer));
}

/* The counting element now (the count is never 0: 0 loads as 0x10000). */
static u32 current_count(struct slat_pit *p, u32 i)
{
	struct kvm_pit_channel_state *c = &p->ch[i];
	u64 d = ticks_of(elapsed_ns(p, i));
	u32 n = c->count ?: 0x10000;

	switch (c->mode) {
	case 0:
	case 1:
	case 4:
	case 5: /* one-shot modes wrap round and go on counting */
		return (n - d) & 0xffff;
	case 3: /* square wave: counts down by two */
		return n - (u32)((2 * d) % n);
	default: /* rate generator */
		return n - (u32)(d % n);
	}
}

static int current_out(struct slat_pit *p, u32 i)
{
	struct kvm_pit_channel_state *c = &p->ch[i];
	u64 d = ticks_of(elapsed_ns(p, i));
	u32 n = c->count ?: 0x10000;

	switch (c->mode) {
	case 1: /* one-shot: low from the trigger to the terminal count */
		return d < n;
	case 2: /* rate generator: a one-tick low pulse each period */
		return d && d % n == 0;
	case 3: /* square wave: high for the first half */
		return d % n < (n + 1) / 2;
	case 4:
	case 5: /* strobes: one tick at the terminal count */
		return d == n;
	default: /* mode 0: high at the terminal count */
		return d >= n;
	}
}

/* ---- IRQ0 ---- */

static void raise_irq0(struct slat_pit *p)
{
	struct slat_irqchip *c = READ_ONCE(p->vm->irqchip);
	int st;

	if (!c)
		return;
	slat_route_irq_line(c, 0, true, &st);
	slat_route_irq_line(c, 0, false, &st);
}

/* A tick may go out: without reinjection always, with it once acknowledged. */
static void tick(struct slat_pit *p)
{
	if (atomic_read(&p->reinject) && !atomic_xchg(&p->acked, 0))
		return;
	raise_irq0(p);
}

static enum hrtimer_restart pit_expired(struct hrtimer *t)
{
	struct slat_pit *p = container_of(t, struct slat_pit, timer);

	if (atomic_read(&p->reinject))
		atomic_inc(&p->pending);
	tick(p);
	if (!p->periodic)
		return HRTIMER_NORESTART;
	hrtimer_add_expires_ns(t, p->period);
	return HRTIMER_RESTART;
}

static void forget_ticks(struct slat_pit *p)
{
	atomic_set(&p->pending, 0);
	atomic_set(&p->acked, 1);
}

void slat_pit_acked(struct slat_vm *vm)
{
	struct slat_pit *p = READ_ONCE(vm->pit);

	if (!p || !atomic_read(&p->reinject))
		return;
	atomic_set(&p->acked, 1);
	smp_mb(); /* acked before pending is read; pit_expired counts first */
	if (atomic_dec_if_positive(&p->pending) > 0)
		tick(p); /* a tick that expired meanwhile */
}

void slat_pit_unmasked(struct slat_vm *vm)
{
	struct slat_pit *p = READ_ONCE(vm->pit);

	if (p && atomic_read(&p->reinject))
		forget_ticks(p);
}

/* ---- counter 0's timer (lock held) ---- */

/* KVM's condition: the in-kernel I/O APIC, and IRQ0 not given to the HPET. */
static bool irq0_wired(struct slat_pit *p)
{
	struct slat_irqchip *c = READ_ONCE(p->vm->irqchip);

	return c && !c->split && !(p->flags & KVM_PIT_FLAGS_HPET_LEGACY);
}

static void stop_timer(struct slat_pit *p)
{
	hrtimer_cancel(&p->timer);
}

static void start_timer(struct slat_pit *p, u32 count, bool periodic)
{
	s64 ns = (s64)mul_u64_u32_div(count, NSEC_PER_SEC, PIT_HZ);

	if (!irq0_wired(p))
		return;
	stop_timer(p);
	p->periodic = periodic;
	/* Guests cannot make the host take an interrupt every few ns. */
	if (periodic && ns < (s64)min_period_us * NSEC_PER_USEC) {
		pr_info_ratelimited("slat: PIT period %lld ns raised to %u us\n", ns,
				    min_period_us);
		ns = (s64)min_period_us * NSEC_PER_USEC;
	}
	p->period = ns;
	forget_ticks(p);
	hrtimer_start(&p->timer, ktime_add_ns(ktime_get(), ns), HRTIMER_MODE_ABS);
}

/* A new count for counter `i` (0 means 0x10000); counter 0 (re)starts its timer. */
static void load_count(struct slat_pit *p, u32 i, u32 val)
{
	struct kvm_pit_channel_state *c = &p->ch[i];

	c->count = val ?: 0x10000;
	if (i) {
		c->count_load_time = ktime_get_ns();
		return;
	}
	switch (c->mode) {
	case 0:
	case 1:
	case 4:
		start_timer(p, c->count, false);
		break;
	case 2:
	case 3:
		start_timer(p, c->count, true);
		break;
	default:
		stop_timer(p);
	}
}

/* ---- ports ---- */

static void latch_count(struct slat_pit *p, u32 i)
{
	struct kvm_pit_channel_state *c = &p->ch[i];

	if (c->count_latched)
		return; /* the first latch holds until read */
	c->latched_count = current_count(p, i);
	c->count_latched = c->rw_mode;
}

static void latch_status(struct slat_pit *p, u32 i)
{
	struct kvm_pit_channel_state *c = &p->ch[i];

	if (c->status_latched)
		return;
	c->status = current_out(p, i) << 7 | c->rw_mode << 4 | c->mode << 1 | c->bcd;
	c->status_latched = 1;
}

static void write_control(struct slat_pit *p, u8 val)
{
	u32 i = val >> 6, rw = val >> 4 & 3;
	struct kvm_pit_channel_state *c;

	if (i == 3) { /* read-back: bit 5 clear latches counts, bit 4 clear status */
		for (i = 0; i < 3; i++) {
			if (!(val & 2u << i))
				continue;
			if (!(val & 0x20))
				latch_count(p, i);
			if (!(val & 0x10))
				latch_status(p, i);
		}
		return;
	}
	if (!rw) {
		latch_count(p, i); /* counter latch command */
		return;
	}
	c = &p->ch[i];
	c->rw_mode = rw;
	c->read_state = rw;
	c->write_state = rw;
	c->mode = val >> 1 & 7;
	if (c->mode > 5)
		c->mode -= 4; /* 6 and 7 are modes 2 and 3 */
	c->bcd = val & 1;
}

static void write_count(struct slat_pit *p, u32 i, u8 val)
{
	struct kvm_pit_channel_state *c = &p->ch[i];

	switch (c->write_state) {
	case RW_MSB:
		load_count(p, i, (u32)val << 8);
		break;
	case RW_WORD:
		c->write_latch = val;
		c->write_state = RW_WORD_HI;
		break;
	case RW_WORD_HI:
		load_count(p, i, c->write_latch | (u32)val << 8);
		c->write_state = RW_WORD;
		break;
	default:
		load_count(p, i, val);
	}
}

static u8 read_count(struct slat_pit *p, u32 i)
{
	struct kvm_pit_channel_state *c = &p->ch[i];
	u8 r;

	if (c->status_latched) {
		c->status_latched = 0;
		return c->status;
	}
	if (c->count_latched) {
		if (c->count_latched == RW_MSB) {
			c->count_latched = 0;
			return c->latched_count >> 8;
		}
		r = c->latched_count & 0xff;
		/* a word's low byte first, then its high byte */
		c->count_latched = c->count_latched == RW_WORD ? RW_MSB : 0;
		return r;
	}
	switch (c->read_state) {
	case RW_MSB:
		return current_count(p, i) >> 8;
	case RW_WORD:
		c->read_state = RW_WORD_HI;
		return current_count(p, i) & 0xff;
	case RW_WORD_HI:
		c->read_state = RW_WORD;
		return current_count(p, i) >> 8;
	default:
		return current_count(p, i) & 0xff;
	}
}

/* Counter 2's gate: a rising edge restarts modes 1, 2, 3 and 5. */
static void set_gate2(struct slat_pit *p, bool gate)
{
	struct kvm_pit_channel_state *c = &p->ch[2];

	bool retrigger = c->mode == 1 || c->mode == 2 || c->mode == 3 || c->mode == 5;

	if (gate && !c->gate && retrigger)
		c->count_load_time = ktime_get_ns();
	c->gate = gate;
}

/* Port 0x61 as KVM's speaker device: gate, data, counter 2's output, refresh. */
static u8 speaker_read(struct slat_pit *p)
{
	u8 refresh = (ktime_get_ns() >> 14) & 1; /* toggles about every 15 us */

	return (p->flags & KVM_PIT_FLAGS_SPEAKER_DATA_ON ? SPEAKER_DATA : 0) |
	       (p->ch[2].gate ? SPEAKER_GATE : 0) | (current_out(p, 2) ? SPEAKER_OUT2 : 0) |
	       (refresh ? SPEAKER_REFRSH : 0);
}

static void speaker_write(struct slat_pit *p, u8 val)
{
	if (val & SPEAKER_DATA)
		p->flags |= KVM_PIT_FLAGS_SPEAKER_DATA_ON;
	else
		p->flags &= ~KVM_PIT_FLAGS_SPEAKER_DATA_ON;
	set_gate2(p, val & SPEAKER_GATE);
}

bool slat_pit_port(struct slat_vm *vm, u16 port, bool out, u32 *val)
{
	struct slat_pit *p = READ_ONCE(vm->pit);

	if (!p)
		return false;
	if (port == SPEAKER_PORT && !p->speaker_port)
		return false; /* the VMM's (QEMU asks for no dummy speaker) */
	if (port != SPEAKER_PORT && (port < PIT_PORT_BASE || port > PIT_PORT_CTRL))
		return false;
	mutex_lock(&p->lock);
	if (port == SPEAKER_PORT && out)
		speaker_write(p, *val);
	else if (port == SPEAKER_PORT)
		*val = speaker_read(p);
	else if (port == PIT_PORT_CTRL && out)
		write_control(p, *val);
	else if (port == PIT_PORT_CTRL)
		*val = 0; /* the control word is write-only */
	else if (out)
		write_count(p, port - PIT_PORT_BASE, *val);
	else
		*val = read_count(p, port - PIT_PORT_BASE);
	mutex_unlock(&p->lock);
	return true;
}

/* ---- the VMM's ioctls ---- */

static void pit_reset(struct slat_pit *p)
{
	u32 i;

	p->flags = 0;
	for (i = 0; i < 3; i++) {
		p->ch[i].mode = MODE_NONE;
		p->ch[i].gate = i != 2;
		load_count(p, i, 0);
	}
	forget_ticks(p);
}

static long pit_create(struct slat_vm *vm, u32 flags)
{
	struct slat_pit *p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	long rc = 0;

	if (!p)
		return -ENOMEM;
	mutex_init(&p->lock);
	hrtimer_init(&p->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	p->timer.function = pit_expired;
	p->vm = vm;
	p->speaker_port = flags & KVM_PIT_SPEAKER_DUMMY;
	atomic_set(&p->reinject, 1);
	mutex_lock(&p->lock);
	pit_reset(p);
	mutex_unlock(&p->lock);
	mutex_lock(&vm->lock);
	if (vm->pit)
		rc = -EEXIST;
	else
		WRITE_ONCE(vm->pit, p);
	mutex_unlock(&vm->lock);
	if (rc)
		kfree(p);
	return rc;
}

/*
 * KVM_SET_PIT(2): the channels as given, then each count loaded again (so
 * counters 1 and 2 restart now, as in KVM); turning HPET_LEGACY on stops
 * counter 0's timer. Nothing in the image is refused (KVM checks none of
 * it): a count of 0 is 0x10000, an unknown mode stops counter 0.
 */
static void pit_set(struct slat_pit *p, const struct kvm_pit_channel_state *ch, u32 flags)
{
	u32 i;

	mutex_lock(&p->lock);
	memcpy(p->ch, ch, sizeof(p->ch));
	p->flags = flags;
	for (i = 0; i < 3; i++)
		load_count(p, i, p->ch[i].count);
	if (flags & KVM_PIT_FLAGS_HPET_LEGACY)
		stop_timer(p);
	mutex_unlock(&p->lock);
}

static long pit_state(struct slat_pit *p, void __user *up, bool set, bool v2)
{
	struct kvm_pit_state2 s;
	size_t len = v2 ? sizeof(s) : sizeof(struct kvm_pit_state);

	BUILD_BUG_ON(sizeof(struct kvm_pit_state) != sizeof(s.channels));
	if (set) {
		memset(&s, 0, sizeof(s));
		if (copy_from_user(&s, up, len))
			return -EFAULT;
		pit_set(p, s.channels, v2 ? s.flags : p->flags);
		return 0;
	}
	memset(&s, 0, sizeof(s));
	mutex_lock(&p->lock);
	memcpy(s.channels, p->ch, sizeof(s.channels));
	s.flags = p->flags;
	mutex_unlock(&p->lock);
	return copy_to_user(up, &s, len) ? -EFAULT : 0;
}

static long pit_reinject(struct slat_pit *p, void __user *up)
{
	struct kvm_reinject_control rc;

	if (copy_from_user(&rc, up, sizeof(rc)))
		return -EFAULT;
	mutex_lock(&p->lock);
	if (rc.pit_reinject && !atomic_read(&p->reinject))
		forget_ticks(p);
	atomic_set(&p->reinject, !!rc.pit_reinject);
	mutex_unlock(&p->lock);
	return 0;
}

/*
 * The PIT's VM ioctls, as KVM 6.1 answers them: KVM_CREATE_PIT2 (any flags;
 * KVM_PIT_SPEAKER_DUMMY answers port 0x61) and KVM_CREATE_PIT (the dummy
 * speaker) once, -EEXIST after; without an irqchip the PIT is made, as KVM
 * makes it, but counter 0 never raises IRQ0. The others -ENXIO without a PIT.
 */
long slat_pit_ioctl(struct slat_vm *vm, unsigned int cmd, void __user *up)
{
	struct slat_pit *p = READ_ONCE(vm->pit);
	struct kvm_pit_config cfg;

	switch (cmd) {
	case KVM_CREATE_PIT2:
		if (copy_from_user(&cfg, up, sizeof(cfg)))
			return -EFAULT;
		return pit_create(vm, cfg.flags);
	case KVM_CREATE_PIT:
		return pit_create(vm, KVM_PIT_SPEAKER_DUMMY);
	}
	if (!p)
		return -ENXIO;
	switch (cmd) {
	case KVM_GET_PIT:
	case KVM_SET_PIT:
		return pit_state(p, up, cmd == KVM_SET_PIT, false);
	case KVM_GET_PIT2:
	case KVM_SET_PIT2:
		return pit_state(p, up, cmd == KVM_SET_PIT2, true);
	case KVM_REINJECT_CONTROL:
		return pit_reinject(p, up);
	}
	return -ENOTTY;
}

/* With the VM: the timer stopped before anything it reaches is freed. */
void slat_pit_free(struct slat_pit *p)
{
	if (!p)
		return;
	hrtimer_cancel(&p->timer);
	kfree(p);
}
