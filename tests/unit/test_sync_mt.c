// SPDX-License-Identifier: Apache-2.0
//
// mm/sync under threads (also built under ThreadSanitizer): mutual exclusion
// of the spinlock and the rwlock with 8 threads (counter invariants checked
// inside the critical sections, exact acquisition counts at the end),
// contended-wait counting and writer preference with a deterministic
// hand-over, and the epoch scheme: a reader inside a read section keeps
// seeing valid memory while a writer unlinks the object and waits for a grace
// period; the object is poisoned and freed only after the reader has left.
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mm/sync.h"
#include "mm_queries.h"

// cmocka's asserts may only fail on the main thread: worker threads count
// failures, and each test asserts the count is zero after joining.
static uint32_t thread_failures;
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__atomic_fetch_add(&thread_failures, 1, __ATOMIC_RELAXED);                 \
	} while (0)

#define THREADS 8
#define ROUNDS	4000

static void yield_cpu(void)
{
	sched_yield();
}

static int setup(void **state)
{
	mm_sync_set_relax(yield_cpu);
	return 0;
}

static void wait_until(const uint32_t *p, uint32_t v)
{
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
		sched_yield();
}

// ---- spinlock exclusion -------------------------------------------------------

static struct mm_spinlock spin;
static uint64_t spin_counter; // plain: protected by spin
static uint32_t spin_inside;

static void *spin_worker(void *arg)
{
	for (int i = 0; i < ROUNDS; i++) {
		mm_spin_lock(&spin);
		CHECK((__atomic_fetch_add(&spin_inside, 1, __ATOMIC_RELAXED)) == (0));
		spin_counter++;
		__atomic_fetch_sub(&spin_inside, 1, __ATOMIC_RELAXED);
		mm_spin_unlock(&spin);
	}
	return NULL;
}

static void test_spin_exclusion(void **state)
{
	pthread_t t[THREADS];
	struct mm_spin_stats st;

	mm_spin_init(&spin);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, spin_worker, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(thread_failures, 0);
	assert_int_equal(spin_counter, THREADS * ROUNDS);
	mm_spin_stats(&spin, &st);
	assert_int_equal(st.acquired, THREADS * ROUNDS);
	assert_true(st.contended <= st.acquired);
}

// ---- rwlock exclusion -----------------------------------------------------------

static struct mm_rwlock rw;
static uint64_t pair_a, pair_b; // plain: written only under the write lock
static uint32_t readers_in, writers_in;
static uint64_t reads_done, writes_done;

static void *rw_worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (int i = 0; i < ROUNDS; i++) {
		if ((i + id) % 8 == 0) {
			mm_rwlock_write_lock(&rw);
			CHECK((__atomic_fetch_add(&writers_in, 1, __ATOMIC_RELAXED)) == (0));
			CHECK((__atomic_load_n(&readers_in, __ATOMIC_RELAXED)) == (0));
			pair_a++;
			pair_b++;
			__atomic_fetch_sub(&writers_in, 1, __ATOMIC_RELAXED);
			mm_rwlock_write_unlock(&rw);
			__atomic_fetch_add(&writes_done, 1, __ATOMIC_RELAXED);
		} else {
			mm_rwlock_read_lock(&rw);
			__atomic_fetch_add(&readers_in, 1, __ATOMIC_RELAXED);
			CHECK((__atomic_load_n(&writers_in, __ATOMIC_RELAXED)) == (0));
			CHECK(pair_a == pair_b);
			__atomic_fetch_sub(&readers_in, 1, __ATOMIC_RELAXED);
			mm_rwlock_read_unlock(&rw);
			__atomic_fetch_add(&reads_done, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void test_rwlock_exclusion(void **state)
{
	pthread_t t[THREADS];
	struct mm_rwlock_stats st;

	mm_rwlock_init(&rw);
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, rw_worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(thread_failures, 0);
	assert_int_equal(pair_a, writes_done);
	assert_int_equal(pair_b, writes_done);
	assert_int_equal(writes_done, THREADS * ROUNDS / 8);
	mm_rwlock_stats(&rw, &st);
	assert_int_equal(st.write_acquired, writes_done);
	assert_int_equal(st.read_acquired, reads_done);
	assert_true(st.read_contended <= st.read_acquired);
	assert_true(st.write_contended <= st.write_acquired);
	assert_false(mm_rwlock_is_locked(&rw));
}

// ---- deterministic contention ---------------------------------------------------

static struct mm_rwlock hand;
static uint32_t got_lock;

static void *hand_reader(void *arg)
{
	mm_rwlock_read_lock(&hand);
	__atomic_store_n(&got_lock, 1, __ATOMIC_RELEASE);
	mm_rwlock_read_unlock(&hand);
	return NULL;
}

static void *hand_writer(void *arg)
{
	mm_rwlock_write_lock(&hand);
	__atomic_store_n(&got_lock, 2, __ATOMIC_RELEASE);
	mm_rwlock_write_unlock(&hand);
	return NULL;
}

// A reader blocked by a writer counts one contended read; a writer waiting
// for a reader makes the reader's should_yield true, keeps new readers out
// (writer preference) and counts one contended write.
static void test_rwlock_contention_counted(void **state)
{
	pthread_t t;
	struct mm_rwlock_stats st;

	mm_rwlock_init(&hand);
	got_lock = 0;
	mm_rwlock_write_lock(&hand);
	pthread_create(&t, NULL, hand_reader, NULL);
	wait_until(&hand.readers_waiting, 1);
	assert_true(mm_rwlock_should_yield(&hand)); // the writer sees a waiting reader
	assert_int_equal(__atomic_load_n(&got_lock, __ATOMIC_ACQUIRE), 0);
	mm_rwlock_write_unlock(&hand);
	pthread_join(t, NULL);
	assert_int_equal(got_lock, 1);

	mm_rwlock_read_lock(&hand);
	assert_false(mm_rwlock_should_yield(&hand));
	pthread_create(&t, NULL, hand_writer, NULL);
	wait_until(&hand.writers_waiting, 1);
	assert_true(mm_rwlock_should_yield(&hand));
	assert_false(mm_rwlock_try_read_lock(&hand)); // writer preference
	assert_int_equal(__atomic_load_n(&got_lock, __ATOMIC_ACQUIRE), 1);
	mm_rwlock_read_unlock(&hand);
	pthread_join(t, NULL);
	assert_int_equal(thread_failures, 0);
	assert_int_equal(got_lock, 2);

	mm_rwlock_stats(&hand, &st);
	assert_int_equal(st.read_acquired, 2);
	assert_int_equal(st.write_acquired, 2);
	assert_int_equal(st.read_contended, 1);
	assert_int_equal(st.write_contended, 1);
}

// ---- epoch: grace period with a live reader -------------------------------------

#define MAGIC 0x0123456789abcdefull

struct obj {
	uint64_t magic;
	uint64_t payload[7];
	struct mm_epoch_node node;
};

static struct mm_epoch_cpu ep_cpus[THREADS + 2];
static struct mm_epoch ep;
static struct obj *shared_obj;
static uint32_t reader_inside, writer_done, freed_count;

static void obj_free(void *p)
{
	struct obj *o = p;

	memset(o, 0xdd, sizeof(*o));
	free(o);
	__atomic_fetch_add(&freed_count, 1, __ATOMIC_RELEASE);
}

static struct obj *obj_new(void)
{
	struct obj *o = malloc(sizeof(*o));

	o->magic = MAGIC;
	for (int i = 0; i < 7; i++)
		o->payload[i] = MAGIC ^ (uint64_t)i;
	return o;
}

static void obj_check(const struct obj *o)
{
	CHECK(o->magic == MAGIC);
	for (int i = 0; i < 7; i++)
		CHECK(o->payload[i] == (MAGIC ^ (uint64_t)i));
}

static void *gp_reader(void *arg)
{
	int cpu = mm_epoch_claim_cpu(&ep);

	CHECK(cpu >= 0);
	mm_epoch_enter(&ep, (uint32_t)cpu);
	struct obj *o = __atomic_load_n(&shared_obj, __ATOMIC_ACQUIRE);
	__atomic_store_n(&reader_inside, 1, __ATOMIC_RELEASE);
	// Stay inside until the writer has unlinked and started a grace period.
	while (__atomic_load_n(&ep.gp_seq, __ATOMIC_ACQUIRE) == 0)
		sched_yield();
	for (int i = 0; i < 200; i++) {
		obj_check(o);
		CHECK((__atomic_load_n(&freed_count, __ATOMIC_ACQUIRE)) == (0));
		CHECK((__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE)) == (0));
		sched_yield();
	}
	obj_check(o);
	mm_epoch_exit(&ep, (uint32_t)cpu);
	mm_epoch_release_cpu(&ep, (uint32_t)cpu);
	return NULL;
}

static void *gp_writer(void *arg)
{
	struct obj *old = __atomic_exchange_n(&shared_obj, NULL, __ATOMIC_ACQ_REL);

	mm_epoch_defer(&ep, &old->node, obj_free, old);
	CHECK(mm_epoch_barrier(&ep) == 1); // waits for the reader
	__atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_epoch_reader_keeps_memory(void **state)
{
	pthread_t r, w;
	struct mm_epoch_stats st;

	mm_epoch_init(&ep, ep_cpus, THREADS + 2);
	shared_obj = obj_new();
	reader_inside = writer_done = freed_count = 0;
	pthread_create(&r, NULL, gp_reader, NULL);
	wait_until(&reader_inside, 1);
	pthread_create(&w, NULL, gp_writer, NULL);
	pthread_join(r, NULL);
	pthread_join(w, NULL);
	assert_int_equal(thread_failures, 0);
	assert_int_equal(freed_count, 1);
	mm_epoch_stats(&ep, &st);
	assert_int_equal(st.waits, 1); // the writer had to wait for the reader
	assert_int_equal(st.reclaimed, 1);
	assert_int_equal(st.pending, 0);
}

// ---- epoch stress: readers traverse while writers replace and defer --------------

#define SLOTS	 8
#define REPLACES 1500
#define READERS	 5
#define WRITERS	 2
static struct obj *table[SLOTS];
static uint32_t stop;
static uint64_t replaced;

static void *stress_reader(void *arg)
{
	int cpu = mm_epoch_claim_cpu(&ep);

	CHECK(cpu >= 0);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		mm_epoch_enter(&ep, (uint32_t)cpu);
		for (int s = 0; s < SLOTS; s++) {
			struct obj *o = __atomic_load_n(&table[s], __ATOMIC_ACQUIRE);
			obj_check(o);
		}
		mm_epoch_exit(&ep, (uint32_t)cpu);
	}
	mm_epoch_release_cpu(&ep, (uint32_t)cpu);
	return NULL;
}

static void *stress_writer(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (int i = 0; i < REPLACES; i++) {
		struct obj *n = obj_new();
		struct obj *old =
		    __atomic_exchange_n(&table[(i * 3 + id) % SLOTS], n, __ATOMIC_ACQ_REL);
		mm_epoch_defer(&ep, &old->node, obj_free, old);
		__atomic_fetch_add(&replaced, 1, __ATOMIC_RELAXED);
		if (i % 64 == 63)
			mm_epoch_barrier(&ep);
		else
			mm_epoch_poll(&ep);
	}
	return NULL;
}

static void test_epoch_stress(void **state)
{
	pthread_t r[READERS], w[WRITERS];
	struct mm_epoch_stats st;

	mm_epoch_init(&ep, ep_cpus, THREADS + 2);
	freed_count = 0;
	stop = 0;
	replaced = 0;
	for (int s = 0; s < SLOTS; s++)
		table[s] = obj_new();
	for (int i = 0; i < READERS; i++)
		pthread_create(&r[i], NULL, stress_reader, NULL);
	for (uintptr_t i = 0; i < WRITERS; i++)
		pthread_create(&w[i], NULL, stress_writer, (void *)i);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	mm_epoch_barrier(&ep);

	mm_epoch_stats(&ep, &st);
	assert_int_equal(thread_failures, 0);
	assert_int_equal(replaced, WRITERS * REPLACES);
	assert_int_equal(st.deferred, WRITERS * REPLACES);
	assert_int_equal(st.reclaimed, WRITERS * REPLACES);
	assert_int_equal(freed_count, WRITERS * REPLACES);
	assert_int_equal(st.pending, 0);
	for (int s = 0; s < SLOTS; s++)
		free(table[s]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spin_exclusion),
	    cmocka_unit_test(test_rwlock_exclusion),
	    cmocka_unit_test(test_rwlock_contention_counted),
	    cmocka_unit_test(test_epoch_reader_keeps_memory),
	    cmocka_unit_test(test_epoch_stress),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
