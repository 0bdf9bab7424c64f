// SPDX-License-Identifier: Apache-2.0
//
// The primary SLAT's shootdown protocol (see slat_shoot.h).
#include "arch/x86/slat_shoot.h"

void x86_shoot_exit(struct x86_shoot *s, unsigned cpu)
{
	if (cpu < X86_SHOOT_CPUS)
		__atomic_store_n(&s->cpu[cpu].in_guest, 0, __ATOMIC_SEQ_CST);
}

bool x86_shoot_enter(struct x86_shoot *s, unsigned cpu)
{
	if (cpu >= X86_SHOOT_CPUS)
		return false;
	// Invariant: in_guest is visible before this CPU reads the generation
	// (the shooter bumps the generation before it reads in_guest).
	__atomic_store_n(&s->cpu[cpu].in_guest, 1, __ATOMIC_SEQ_CST);
	uint64_t g = __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST);
	if (g == __atomic_load_n(&s->cpu[cpu].acked, __ATOMIC_RELAXED))
		return false;
	__atomic_store_n(&s->cpu[cpu].acked, g, __ATOMIC_RELEASE);
	return true;
}

static bool shoot_stale(const struct x86_shoot *s, unsigned cpu, uint64_t g)
{
	return __atomic_load_n(&s->cpu[cpu].in_guest, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&s->cpu[cpu].acked, __ATOMIC_ACQUIRE) < g;
}

// Waits for one kicked CPU; true when it answered (left guest mode or
// acknowledged `g`) before the deadline.
static bool shoot_wait_cpu(const struct x86_shoot *s, unsigned cpu, uint64_t g,
			   const struct x86_shoot_wait *w, uint64_t deadline, uint64_t *polls)
{
	uint32_t n = 0;

	while (shoot_stale(s, cpu, g)) {
		if (w->now(w->ctx) >= deadline)
			return false;
		if (w->rekick && ++n % w->rekick == 0)
			w->kick(w->ctx, cpu); // a merged or lost kick: kick again
		w->relax(w->ctx);
		(*polls)++;
	}
	return true;
}

struct x86_shoot_result x86_shoot_run(struct x86_shoot *s, unsigned self,
				      const struct x86_shoot_wait *w)
{
	struct x86_shoot_result r = {0};

	r.gen = __atomic_add_fetch(&s->gen, 1, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < X86_SHOOT_CPUS; i++)
		if (i != self && shoot_stale(s, i, r.gen)) {
			w->kick(w->ctx, i);
			r.kicked_mask |= 1u << i;
		}
	// Only the kicked CPUs: one seen outside guest mode (or acknowledged)
	// above enters with the new generation.
	uint64_t deadline = w->now(w->ctx) + w->ticks;
	for (unsigned i = 0; i < X86_SHOOT_CPUS; i++)
		if ((r.kicked_mask & (1u << i)) &&
		    !shoot_wait_cpu(s, i, r.gen, w, deadline, &r.polls))
			r.late_mask |= 1u << i;
	return r;
}
