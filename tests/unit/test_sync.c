// SPDX-License-Identifier: Apache-2.0
//
// mm/sync single-threaded: exact statistics of the spinlock and the MMU
// rwlock, try-lock exclusion, the yield query, and the epoch scheme's rules
// (a deferred object is reclaimed only after every reader that could see it
// has left; nesting; slot claiming).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mm/sync.h"
#include "mm_queries.h"

static void test_spin_stats_exact(void **state)
{
	struct mm_spinlock l = MM_SPINLOCK_INIT;
	struct mm_spin_stats st;

	for (int i = 0; i < 5; i++) {
		mm_spin_lock(&l);
		assert_true(mm_spin_is_locked(&l));
		assert_false(mm_spin_trylock(&l)); // held: fails, counts nothing
		mm_spin_unlock(&l);
	}
	assert_true(mm_spin_trylock(&l));
	mm_spin_unlock(&l);
	assert_false(mm_spin_is_locked(&l));
	mm_spin_stats(&l, &st);
	assert_int_equal(st.acquired, 6);
	assert_int_equal(st.contended, 0);
}

static void test_rwlock_modes_and_stats(void **state)
{
	struct mm_rwlock l;
	struct mm_rwlock_stats st;

	mm_rwlock_init(&l);
	mm_rwlock_read_lock(&l);
	assert_true(mm_rwlock_try_read_lock(&l)); // readers share
	assert_false(mm_rwlock_try_write_lock(&l));
	assert_true(mm_rwlock_is_locked(&l));
	assert_false(mm_rwlock_is_write_locked(&l));
	mm_rwlock_read_unlock(&l);
	assert_false(mm_rwlock_try_write_lock(&l)); // one reader left
	mm_rwlock_read_unlock(&l);
	assert_false(mm_rwlock_is_locked(&l));

	mm_rwlock_write_lock(&l);
	assert_true(mm_rwlock_is_write_locked(&l));
	assert_false(mm_rwlock_try_read_lock(&l));
	assert_false(mm_rwlock_try_write_lock(&l));
	mm_rwlock_write_unlock(&l);
	assert_true(mm_rwlock_try_write_lock(&l));
	mm_rwlock_write_unlock(&l);

	mm_rwlock_stats(&l, &st);
	assert_int_equal(st.read_acquired, 2);
	assert_int_equal(st.write_acquired, 2);
	assert_int_equal(st.read_contended, 0);
	assert_int_equal(st.write_contended, 0);
	assert_int_equal(st.yields, 0);

	mm_rwlock_stats_reset(&l);
	mm_rwlock_stats(&l, &st);
	assert_int_equal(st.read_acquired + st.write_acquired, 0);
}

static int resched_calls;
static bool resched_answer;
static bool fake_need_resched(void)
{
	resched_calls++;
	return resched_answer;
}

static void test_rwlock_should_yield(void **state)
{
	struct mm_rwlock l = MM_RWLOCK_INIT;
	struct mm_rwlock_stats st;

	mm_rwlock_read_lock(&l);
	assert_false(mm_rwlock_should_yield(&l));
	mm_sync_set_need_resched(fake_need_resched);
	resched_answer = true;
	assert_true(mm_rwlock_should_yield(&l));
	resched_answer = false;
	assert_false(mm_rwlock_should_yield(&l));
	assert_true(resched_calls >= 2);
	mm_rwlock_yield_read(&l);
	assert_true(mm_rwlock_is_locked(&l)); // held again after the yield
	assert_false(mm_rwlock_is_write_locked(&l));
	mm_rwlock_read_unlock(&l);

	mm_rwlock_write_lock(&l);
	mm_rwlock_yield_write(&l);
	assert_true(mm_rwlock_is_write_locked(&l));
	mm_rwlock_write_unlock(&l);
	mm_sync_set_need_resched(NULL);

	mm_rwlock_stats(&l, &st);
	assert_int_equal(st.yields, 2);
	assert_int_equal(st.read_acquired, 2);
	assert_int_equal(st.write_acquired, 2);
}

// ---- epochs -----------------------------------------------------------------

#define MAGIC 0x5a5a5a5a5a5a5a5aull

struct obj {
	uint64_t magic;
	struct mm_epoch_node node;
	int *freed_flag;
};

static void obj_free(void *p)
{
	struct obj *o = p;

	*o->freed_flag += 1;
	memset(o, 0xdd, sizeof(*o)); // poison, then really free: ASan catches late readers
	free(o);
}

static struct obj *obj_new(int *flag)
{
	struct obj *o = calloc(1, sizeof(*o));

	o->magic = MAGIC;
	o->freed_flag = flag;
	return o;
}

static void test_epoch_defer_waits_for_reader(void **state)
{
	struct mm_epoch_cpu cpus[4];
	struct mm_epoch e;
	struct mm_epoch_stats st;
	int freed = 0;
	struct obj *shared = obj_new(&freed);

	mm_epoch_init(&e, cpus, 4);
	mm_epoch_enter(&e, 2);
	struct obj *seen = __atomic_load_n(&shared, __ATOMIC_ACQUIRE);

	// Writer: unlink, then defer.
	struct obj *old = shared;
	__atomic_store_n(&shared, NULL, __ATOMIC_RELEASE);
	mm_epoch_defer(&e, &old->node, obj_free, old);

	for (int i = 0; i < 3; i++) {
		assert_int_equal(mm_epoch_poll(&e), 0); // CPU 2 still inside
		assert_int_equal(freed, 0);
		assert_int_equal(seen->magic, MAGIC);
	}
	mm_epoch_exit(&e, 2);
	assert_int_equal(mm_epoch_poll(&e), 1);
	assert_int_equal(freed, 1);
	assert_int_equal(mm_epoch_poll(&e), 0);

	mm_epoch_stats(&e, &st);
	assert_int_equal(st.deferred, 1);
	assert_int_equal(st.reclaimed, 1);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.grace_periods, 1); // the failed polls ended none
	assert_int_equal(st.waits, 0);
}

static void test_epoch_nesting(void **state)
{
	struct mm_epoch_cpu cpus[2];
	struct mm_epoch e;
	int freed = 0;
	struct obj *o = obj_new(&freed);

	mm_epoch_init(&e, cpus, 2);
	mm_epoch_enter(&e, 0);
	mm_epoch_enter(&e, 0);
	mm_epoch_defer(&e, &o->node, obj_free, o);
	mm_epoch_exit(&e, 0);
	assert_true(mm_epoch_in_read(&e, 0));
	assert_int_equal(mm_epoch_poll(&e), 0);
	assert_int_equal(freed, 0);
	mm_epoch_exit(&e, 0);
	assert_false(mm_epoch_in_read(&e, 0));
	assert_int_equal(mm_epoch_barrier(&e), 1);
	assert_int_equal(freed, 1);
}

static void test_epoch_reader_after_unlink_does_not_block(void **state)
{
	struct mm_epoch_cpu cpus[2];
	struct mm_epoch e;
	int freed = 0;
	struct obj *a = obj_new(&freed), *b = obj_new(&freed);

	mm_epoch_init(&e, cpus, 2);
	mm_epoch_defer(&e, &a->node, obj_free, a);
	mm_epoch_synchronize(&e); // a grace period ends after a was deferred
	// A reader that enters now cannot see a: a is due even though it reads.
	mm_epoch_enter(&e, 1);
	mm_epoch_defer(&e, &b->node, obj_free, b);
	assert_int_equal(mm_epoch_poll(&e), 1); // a only
	assert_int_equal(freed, 1);
	mm_epoch_exit(&e, 1);
	assert_int_equal(mm_epoch_poll(&e), 1); // now b
	assert_int_equal(freed, 2);
}

static void test_epoch_fifo_order_and_many(void **state)
{
	struct mm_epoch_cpu cpus[1];
	struct mm_epoch e;
	struct mm_epoch_stats st;
	int freed = 0;

	mm_epoch_init(&e, cpus, 1);
	for (int i = 0; i < 100; i++) {
		struct obj *o = obj_new(&freed);

		mm_epoch_defer(&e, &o->node, obj_free, o);
		if (i % 10 == 9)
			mm_epoch_synchronize(&e);
	}
	assert_int_equal(mm_epoch_poll(&e), 100);
	assert_int_equal(freed, 100);
	mm_epoch_stats(&e, &st);
	assert_int_equal(st.deferred, 100);
	assert_int_equal(st.reclaimed, 100);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.grace_periods, 10); // poll found the last 10 due already
}

static void test_epoch_claim(void **state)
{
	struct mm_epoch_cpu cpus[3];
	struct mm_epoch e;

	mm_epoch_init(&e, cpus, 3);
	assert_int_equal(mm_epoch_claim_cpu(&e), 0);
	assert_int_equal(mm_epoch_claim_cpu(&e), 1);
	assert_int_equal(mm_epoch_claim_cpu(&e), 2);
	assert_int_equal(mm_epoch_claim_cpu(&e), -1);
	mm_epoch_release_cpu(&e, 1);
	assert_int_equal(mm_epoch_claim_cpu(&e), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spin_stats_exact),
	    cmocka_unit_test(test_rwlock_modes_and_stats),
	    cmocka_unit_test(test_rwlock_should_yield),
	    cmocka_unit_test(test_epoch_defer_waits_for_reader),
	    cmocka_unit_test(test_epoch_nesting),
	    cmocka_unit_test(test_epoch_reader_after_unlink_does_not_block),
	    cmocka_unit_test(test_epoch_fifo_order_and_many),
	    cmocka_unit_test(test_epoch_claim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
