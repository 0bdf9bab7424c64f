// SPDX-License-Identifier: Apache-2.0
//
// arch/host's benchmark side: the cost model charges exactly the configured
// time per operation, fast-free mode skips the quarantine, and a host_vcpu's
// private TLB drops what the engine invalidates (and only that).
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "arch/host/host_be.h"
#include "arch/host/host_vcpu.h"
#include "arch/x86/fmt_x86.h"
#include "mm/s2.h"

#define MIB (1024ull * 1024)

struct rig {
	struct host_be *be;
	struct s2_vm *vm;
	struct host_vcpus set;
	void *mem; // guest memory of slot 1: [0, 4 MiB)
};

static void rig_up(struct rig *r, const struct host_costs *costs)
{
	r->be = host_be_new();
	r->be->costs = *costs;
	struct s2_vm_config cfg = host_be_config(r->be, &s2_fmt_ept4);
	assert_int_equal(s2_vm_create(&cfg, &r->vm), 0);
	host_vcpus_init(&r->set, r->be, r->vm);
	r->mem = aligned_alloc(2 * MIB, 4 * MIB);
	assert_non_null(r->mem);
	assert_int_equal(s2_slot_add(r->vm, 0, 1, 0, 4 * MIB, (uint64_t)(uintptr_t)r->mem, 0), 0);
}

static void rig_down(struct rig *r)
{
	host_vcpus_fini(&r->set);
	s2_vm_destroy(r->vm);
	assert_int_equal(host_be_free(r->be), 0);
	free(r->mem);
}

static struct host_counts counts(struct rig *r)
{
	struct host_counts c;

	host_be_counts(r->be, &c);
	return c;
}

static void test_cost_per_operation(void **state)
{
	const struct host_costs costs = {.inval_context_ns = 7000,
					 .inval_range_ns = 300,
					 .inval_page_ns = 50,
					 .cmo_4k_ns = 400,
					 .kick_ns = 1000,
					 .kick_ack_ns = 2000};
	struct rig r;

	rig_up(&r, &costs);
	uint64_t c0 = counts(&r).cost_ns;
	r.be->ops.kick_reload(r.be, r.vm);
	assert_int_equal(counts(&r).cost_ns - c0, 1000); // no vCPU in guest mode: no ack
	r.be->ops.inval_range(r.be, r.vm, 0, 3 * 4096);
	assert_int_equal(counts(&r).cost_ns - c0, 1000 + 300 + 3 * 50);
	r.be->ops.inval_context(r.be, r.vm);
	r.be->ops.cmo_clean_inval(r.be, 0, 2 * 4096);
	assert_int_equal(counts(&r).cost_ns - c0, 1000 + 450 + 7000 + 800);
	rig_down(&r);
}

struct spinner {
	struct host_vcpu *v;
	_Atomic int started, stop;
};

// A vCPU that stays in guest mode writing one word until told to stop.
static void *spin_guest(void *p)
{
	struct spinner *s = p;

	assert_int_equal(host_vcpu_write(s->v, 0, 1), 0);
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->stop))
		host_vcpu_write(s->v, 0, 2);
	host_vcpu_exit_guest(s->v);
	return NULL;
}

static void test_kick_charges_each_ack(void **state)
{
	const struct host_costs costs = {.kick_ns = 1000, .kick_ack_ns = 2000};
	struct rig r;
	struct spinner s = {0};
	pthread_t t;

	rig_up(&r, &costs);
	s.v = host_vcpu_new(&r.set);
	assert_int_equal(pthread_create(&t, NULL, spin_guest, &s), 0);
	while (!atomic_load(&s.started))
		sched_yield();
	struct host_counts c0 = counts(&r);
	r.be->ops.kick_reload(r.be, r.vm); // returns once the vCPU acknowledged
	struct host_counts c1 = counts(&r);
	atomic_store(&s.stop, 1);
	pthread_join(t, NULL);
	assert_int_equal(c1.kicks - c0.kicks, 1);
	assert_int_equal(c1.kick_acks - c0.kick_acks, 1);
	assert_int_equal(c1.cost_ns - c0.cost_ns, 1000 + 2000);
	host_vcpu_free(s.v);
	rig_down(&r);
}

static void test_fast_free_skips_quarantine(void **state)
{
	struct host_be *be = host_be_new();
	uint64_t pa = be->ops.page_alloc(be, 1, 4096);

	be->ops.page_free(be, pa, 1);
	assert_int_equal(be->q_len, 1); // default: poisoned, quarantined
	be->fast_free = true;
	pa = be->ops.page_alloc(be, 1, 4096);
	be->ops.page_free(be, pa, 1);
	assert_int_equal(be->q_len, 1); // freed at once
	assert_int_equal(host_be_free(be), 0);
}

static void test_vcpu_tlb_drops_invalidated_range(void **state)
{
	const struct host_costs none = {0};
	const uint64_t a = 0x1000, b = 3 * MIB; // two different 2 MiB leaves
	struct rig r;

	rig_up(&r, &none);
	struct host_vcpu *v = host_vcpu_new(&r.set);
	assert_int_equal(host_vcpu_write(v, a, 1), 0);
	assert_int_equal(host_vcpu_write(v, b, 2), 0);
	assert_true(host_vcpu_tlb_holds(v, a));
	assert_true(host_vcpu_tlb_holds(v, b));
	uint64_t misses = v->tlb_misses;
	uint64_t got;
	assert_int_equal(host_vcpu_read(v, b, &got), 0);
	assert_int_equal(got, 2);
	assert_int_equal(v->tlb_misses, misses); // a hit
	// A one-page range invalidation from the backend (as the engine
	// issues them) drops a's 2 MiB leaf, which it overlaps, and keeps b's.
	r.be->ops.inval_range(r.be, r.vm, a, 4096);
	assert_false(host_vcpu_tlb_holds(v, a));
	assert_true(host_vcpu_tlb_holds(v, b));
	// A large range (scanned, not hashed) drops b's leaf only.
	assert_int_equal(host_vcpu_write(v, a, 3), 0);
	r.be->ops.inval_range(r.be, r.vm, 2 * MIB, 2 * MIB);
	assert_true(host_vcpu_tlb_holds(v, a));
	assert_false(host_vcpu_tlb_holds(v, b));
	assert_int_equal(host_vcpu_write(v, b, 4), 0);
	// A context invalidation drops everything.
	r.be->ops.inval_context(r.be, r.vm);
	assert_false(host_vcpu_tlb_holds(v, a));
	assert_false(host_vcpu_tlb_holds(v, b));
	host_vcpu_free(v);
	rig_down(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cost_per_operation),
	    cmocka_unit_test(test_kick_charges_each_ack),
	    cmocka_unit_test(test_fast_free_skips_quarantine),
	    cmocka_unit_test(test_vcpu_tlb_drops_invalidated_range),
	};
	alarm(60); // a lost acknowledgement hangs a kick: kill the binary instead
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	alarm(0);
	return r;
}
