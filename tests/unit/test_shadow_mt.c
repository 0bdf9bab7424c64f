// SPDX-License-Identifier: Apache-2.0
//
// Nested shadow MMU under concurrency (also built under ThreadSanitizer):
// lockless software walkers translate through the shadow table inside their
// read sections while L1 repeatedly drops and rebuilds part of its EPT12
// (emulated writes that recursively reclaim shadow pages, then faults that
// rebuild them). A walker must only ever see the right translation or none:
// a table page freed too early is poisoned by the hosted allocator (and
// ASan-poisoned, and a race for TSan), which the walkers would read (I2.3).
#include <pthread.h>
#include <sched.h>

#include "mm/sync.h"
#include "shadow_test.h"

#define MiB	 (1024ull * 1024)
#define GiB	 (1024ull * MiB)
#define WALKERS	 3
#define REGIONS	 4
#define PAGES	 8
#define ROUNDS	 150
#define DATA_GPA (4 * MiB)

static struct sht t;
static struct sh_page *root;
static uint32_t stop;
static uint64_t bad, seen_mapped, seen_unmapped;

static uint64_t l2_of(unsigned r, unsigned p)
{
	return (uint64_t)r * GiB + p * SHT_PAGE;
}

static uint64_t l1_of(unsigned r, unsigned p)
{
	return DATA_GPA + (r * PAGES + p) * SHT_PAGE;
}

static void *walker(void *arg)
{
	unsigned cpu = (unsigned)(uintptr_t)arg;
	uint64_t mapped = 0, unmapped = 0, wrong = 0;

	do { // at least one pass, however late the thread starts
		sh_walk_enter(t.m, cpu);
		for (unsigned r = 0; r < REGIONS; r++) {
			for (unsigned p = 0; p < PAGES; p++) {
				struct s2_xlate x;

				sh_translate(t.m, root, l2_of(r, p), &x);
				if (!x.mapped)
					unmapped++;
				else if (x.hpa == sht_hpa(&t, l1_of(r, p)))
					mapped++;
				else
					wrong++;
			}
		}
		sh_walk_exit(t.m, cpu);
		sched_yield();
	} while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE));
	__atomic_fetch_add(&bad, wrong, __ATOMIC_RELAXED);
	__atomic_fetch_add(&seen_mapped, mapped, __ATOMIC_RELAXED);
	__atomic_fetch_add(&seen_unmapped, unmapped, __ATOMIC_RELAXED);
	return NULL;
}

static void touch_region(unsigned r)
{
	for (unsigned p = 0; p < PAGES; p++)
		sht_touch(&t, root, l2_of(r, p), S2_PROT_R);
}

static void yield_cpu(void)
{
	sched_yield();
}

static void test_walkers_never_see_freed_tables(void **state)
{
	pthread_t w[WALKERS];
	uint64_t e1[REGIONS], x1[REGIONS];

	mm_sync_set_relax(yield_cpu);
	sht_init(&t, 8 * MiB);
	uint64_t root_gpa = sht_new_table(&t);
	assert_int_equal(sh_root_get(t.m, 0, root_gpa, &root), 0);
	for (unsigned r = 0; r < REGIONS; r++) {
		for (unsigned p = 0; p < PAGES; p++)
			sht_map(&t, root_gpa, l2_of(r, p), l1_of(r, p), S2_PROT_RWX);
		e1[r] = sht_entry(&t, root_gpa, l2_of(r, 0), 1);
		x1[r] = sht_read(&t, e1[r]);
		touch_region(r);
	}
	for (uintptr_t i = 0; i < WALKERS; i++)
		pthread_create(&w[i], NULL, walker, (void *)(i + 1));

	for (unsigned round = 0; round < ROUNDS; round++) {
		unsigned r = round % REGIONS;

		sht_l1_write(&t, e1[r], 0);	// level-0 SP reclaimed, freed after walkers
		sht_l1_write(&t, e1[r], x1[r]); // L1 maps it again
		touch_region(r);
		if (round % 16 == 0)
			sched_yield();
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < WALKERS; i++)
		pthread_join(w[i], NULL);

	struct sh_stats s = sht_stats(&t);
	assert_int_equal(bad, 0);
	assert_true(seen_mapped > 0);
	assert_int_equal(s.zapped_orphans, ROUNDS);
	assert_int_equal(s.pending_free, 0); // every walker left: all freed
	assert_int_equal(s.freed, ROUNDS);
	assert_int_equal(sh_check(t.m), 0);
	sh_root_put(t.m, root);
	sht_fini(&t);
	mm_sync_set_relax(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_walkers_never_see_freed_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
