// SPDX-License-Identifier: Apache-2.0
//
// core/own under concurrency: lock-free lookups while updates build and free
// node pages (every cycle empties a whole subtree, so every cycle frees pages
// that readers may be walking: ASan sees a use after free if the grace period
// is broken, TSan any unsynchronised access). Two writers serialise on the
// table's lock; readers only ever see states the writers can produce.
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/own.h"
#include "tests/unit/own_src.h"

#define MB	   (1ull << 20)
#define RAM0	   (16 * MB)
#define RAM1	   (1ull << 50)
#define PFN(pa)	   ((pa) >> OWN_FRAME_SHIFT)
#define CYCLES	   500
#define READERS	   2
#define CHURN_PA   RAM1			// shared with VM 1 and back, 2 leaves (writer A)
#define CHURN_LIST PFN(RAM0 + 32 * MB)	// donated to VM 2 and back (writer B)
#define STABLE_PFN PFN(RAM0 + 300 * MB) // donated to VM 7 for the whole test

static const uint64_t ram[2][2] = {{RAM0, 512 * MB}, {RAM1, 8 * MB}};

struct ctx {
	struct own_src src;
	struct own_table t;
	int stop;
	uint64_t reads;
	uint64_t bad_reads;
};

static void *writer_range(void *arg)
{
	struct ctx *c = arg;

	for (int i = 0; i < CYCLES; i++) {
		assert_int_equal(own_range_op(&c->t, OWN_OP_SHARE, 1, CHURN_PA, 8 * MB, NULL),
				 OWN_OK);
		assert_int_equal(own_range_op(&c->t, OWN_OP_UNSHARE, 1, CHURN_PA, 8 * MB, NULL),
				 OWN_OK);
	}
	return NULL;
}

static void *writer_list(void *arg)
{
	struct ctx *c = arg;
	uint64_t list[64];

	for (unsigned i = 0; i < 64; i++)
		list[i] = CHURN_LIST + i * 1024; // one frame per leaf
	for (int i = 0; i < CYCLES; i++) {
		assert_int_equal(own_list_op(&c->t, OWN_OP_DONATE, 2, list, 64, NULL), OWN_OK);
		assert_int_equal(own_list_op(&c->t, OWN_OP_RECLAIM, 2, list, 64, NULL), OWN_OK);
	}
	return NULL;
}

static bool read_ok(struct ctx *c, uint64_t pfn, enum own_state alt, uint32_t altvm)
{
	enum own_state s;
	uint32_t vm;

	if (own_get(&c->t, pfn, &s, &vm) != OWN_OK)
		return false;
	return (s == OWN_PRIMARY && vm == 0) || (s == alt && vm == altvm);
}

static void *reader(void *arg)
{
	struct ctx *c = arg;
	uint64_t n = 0, bad = 0, x = (uint64_t)(uintptr_t)&n;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		bad += !read_ok(c, PFN(CHURN_PA) + (x >> 40) % 2048, OWN_SHARED, 1);
		bad += !read_ok(c, CHURN_LIST + ((x >> 20) % 64) * 1024, OWN_DONATED, 2);
		enum own_state s;
		uint32_t vm;

		own_get(&c->t, STABLE_PFN, &s, &vm);
		bad += s != OWN_DONATED || vm != 7;
		n += 3;
	}
	__atomic_fetch_add(&c->reads, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->bad_reads, bad, __ATOMIC_RELAXED);
	return NULL;
}

static void test_lookups_during_updates(void **state)
{
	static struct ctx c;
	struct own_page_src ps;
	pthread_t w[2], r[READERS];

	memset(&c, 0, sizeof(c));
	ps = own_src_of(&c.src);
	c.src.budget = 1000;
	assert_int_equal(own_init(&c.t, &ps, ram, 2, NULL, 0), OWN_OK);
	assert_int_equal(own_list_op(&c.t, OWN_OP_DONATE, 7, &(uint64_t){STABLE_PFN}, 1, NULL),
			 OWN_OK);
	assert_int_equal(own_nodes(&c.t), 4);
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&r[i], NULL, reader, &c), 0);
	assert_int_equal(pthread_create(&w[0], NULL, writer_range, &c), 0);
	assert_int_equal(pthread_create(&w[1], NULL, writer_list, &c), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	assert_int_equal(c.bad_reads, 0);
	assert_true(c.reads > 0);
	// Every page the churn took came back: the stable frame's 4 remain.
	assert_int_equal(own_nodes(&c.t), 4);
	assert_int_equal(c.src.live, 4);
	// CYCLES cycles x (range: L1, L2, L3 + 2 leaves; list: 64 leaves).
	assert_int_equal(c.src.allocs, 4 + CYCLES * (5 + 64));
	own_destroy(&c.t);
	assert_int_equal(c.src.live, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lookups_during_updates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
