// SPDX-License-Identifier: Apache-2.0
//
// The shootdown of the x86 primary's SLAT (arch/x86/slat.c): after the engine
// has invalidated the primary's identity map, the caller returns only once no
// other CPU can still run the primary on a stale translation.
//
// A generation per shootdown; each CPU records, in host mode just before it
// enters the primary, the generation its entry flushes for. Per CPU:
//
//   x86_shoot_exit   first thing on every exit of the primary (in_guest = 0)
//   x86_shoot_enter  last thing before every entry: in_guest = 1, then it
//                    loads the generation; true: flush in this entry
//
// The store of in_guest precedes the load of the generation (both seq_cst),
// so a CPU the shooter sees outside guest mode enters with the new generation
// and flushes: the shooter waits only for CPUs in guest mode that have not
// acknowledged, after kicking them out (their exit clears in_guest).
//
// A CPU is briefly seen in guest mode and unacknowledged while it enters
// (between its two stores), so only the deadline decides that a CPU never
// answered: a second look after the wait would report a CPU that is just
// entering with the new generation (the t_x86_svm_secondary flake).
//
// Pure (atomics only, time and kicks are callbacks): hosted-tested under
// ThreadSanitizer in tests/unit/test_shootdown_mt.c.
#ifndef SLAT_ARCH_X86_SLAT_SHOOT_H
#define SLAT_ARCH_X86_SLAT_SHOOT_H

#include <stdbool.h>
#include <stdint.h>

#define X86_SHOOT_CPUS 8u // X86_MAX_CPUS (static_assert in arch/x86/slat.c)

struct x86_shoot {
	uint64_t gen;
	struct {
		uint64_t acked;
		uint32_t in_guest;
	} __attribute__((aligned(64))) cpu[X86_SHOOT_CPUS];
};

// How a shootdown waits: `now` (any monotonic tick), `ticks` of it per CPU
// at most, `kick` (make `cpu` leave the primary) again every `rekick` polls.
struct x86_shoot_wait {
	uint64_t (*now)(void *ctx);
	void (*kick)(void *ctx, unsigned cpu);
	void (*relax)(void *ctx); // one poll's pause
	void *ctx;
	uint64_t ticks;
	uint32_t rekick;
};

// What one shootdown saw: its generation, the CPUs it kicked and waited
// for, those that missed the deadline (a bit per CPU), its polls in all.
struct x86_shoot_result {
	uint64_t gen;
	uint32_t kicked_mask;
	uint32_t late_mask;
	uint64_t polls;
};

void x86_shoot_exit(struct x86_shoot *s, unsigned cpu);
bool x86_shoot_enter(struct x86_shoot *s, unsigned cpu);
// The shootdown of CPU `self` (which is in host mode, not waited for).
struct x86_shoot_result x86_shoot_run(struct x86_shoot *s, unsigned self,
				      const struct x86_shoot_wait *w);

#endif
