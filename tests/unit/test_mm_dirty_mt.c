// SPDX-License-Identifier: Apache-2.0
//
// Dirty logging under concurrency (also run under TSan): two writer threads
// write pages of a logging slot (a write that finds no writable translation
// faults first, as a CPU does) while the main thread harvests, with
// KVM_GET_DIRTY_LOG's clearing form or with get + clear-range. No write is lost:
// a write that began after harvest k had returned is reported by a later
// harvest (the last one runs after the writers stopped), and no page that was
// never written is ever reported.
#include <pthread.h>
#include <sched.h>

#include "mm_test.h"

#define HPA	0x100000000ull
#define PAGES	2048 // 8 MiB
#define WORDS	(PAGES / 64)
#define WRITERS 2
#define ROUNDS	200  // harvests at least, while the writers run
#define WRITES	4000 // writes each writer makes at least before they stop

struct mt {
	struct s2_vm *vm;
	struct s2_root *root;
	uint64_t done_harvests; // atomic: harvests that have returned
	unsigned stop;		// atomic: the writers end
	bool manual;		// harvests: get + clear-range (else get-and-clear)
	// Per page, written by the page's writer only: the highest harvest count
	// seen before a write to it began (+1; 0: never written).
	uint64_t must_follow[PAGES];
	unsigned errors[WRITERS]; // unexpected fault results
	uint64_t writes[WRITERS]; // atomic: progress
};

struct wr {
	struct mt *m;
	unsigned k;
};

static void *writer(void *arg)
{
	struct wr *w = arg;
	struct mt *m = w->m;
	uint64_t seed = 12345 + w->k;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t p = ((seed >> 33) % (PAGES / WRITERS)) * WRITERS + w->k; // own pages
		uint64_t gpa = p * 4096;
		uint64_t seen = __atomic_load_n(&m->done_harvests, __ATOMIC_ACQUIRE);
		struct s2_xlate x;

		s2_translate(m->vm, m->root, gpa, &x);
		if (!x.mapped || !(x.prot & S2_PROT_W)) {
			int r = s2_fault(m->vm, m->root, gpa, S2_PROT_W, NULL);
			m->errors[w->k] += r != S2_FAULT_MAPPED && r != S2_FAULT_RETRY;
			if (r != S2_FAULT_MAPPED)
				continue; // not written: retried by a later iteration
		}
		if (seen + 1 > m->must_follow[p])
			m->must_follow[p] = seen + 1;
		__atomic_fetch_add(&m->writes[w->k], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void harvest(struct mt *m, uint64_t k, uint64_t *last_report)
{
	uint64_t bm[WORDS];

	if (!m->manual) {
		assert_int_equal(s2_slot_dirty_get(m->vm, 0, 1, 0, PAGES, bm, true), 0);
	} else {
		assert_int_equal(s2_slot_dirty_get(m->vm, 0, 1, 0, PAGES, bm, false), 0);
		assert_int_equal(s2_slot_dirty_clear(m->vm, 0, 1, 0, PAGES, bm), 0);
	}
	for (uint64_t p = 0; p < PAGES; p++)
		if ((bm[p / 64] >> (p % 64)) & 1)
			last_report[p] = k;
	__atomic_store_n(&m->done_harvests, k, __ATOMIC_RELEASE);
}

static void no_write_lost(bool manual)
{
	static struct mt m;
	static uint64_t last_report[PAGES];
	struct mmt t;
	pthread_t th[WRITERS];
	struct wr w[WRITERS];

	mmt_init(&t, &s2_fmt_ept4);
	memset(&m, 0, sizeof(m));
	memset(last_report, 0, sizeof(last_report));
	m.vm = t.vm;
	m.manual = manual;
	m.root = t.root;
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, PAGES * 4096ull, HPA, S2_SLOT_DIRTY_LOG), 0);
	for (unsigned i = 0; i < WRITERS; i++) {
		w[i] = (struct wr){&m, i};
		assert_int_equal(pthread_create(&th[i], NULL, writer, &w[i]), 0);
	}
	uint64_t k = 0;
	// Bounded by the writers' progress, not by time: harvests go on until
	// both have written enough (the test's watchdog ends a hang).
	while (k < ROUNDS || __atomic_load_n(&m.writes[0], __ATOMIC_RELAXED) < WRITES ||
	       __atomic_load_n(&m.writes[1], __ATOMIC_RELAXED) < WRITES) {
		harvest(&m, ++k, last_report);
		sched_yield(); // let the writers take the mmu lock between harvests
	}
	__atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	harvest(&m, ++k, last_report); // after the last write
	uint64_t written = 0;
	for (uint64_t p = 0; p < PAGES; p++) {
		if (m.must_follow[p]) {
			written++;
			// The write that began after harvest must_follow - 1 returned
			// is in a later report.
			assert_true(last_report[p] >= m.must_follow[p]);
		} else {
			assert_int_equal(last_report[p], 0); // never written, never reported
		}
	}
	assert_true(written > PAGES / 2);
	for (unsigned i = 0; i < WRITERS; i++)
		assert_int_equal(m.errors[i], 0);
	mmt_fini(&t);
}

static void test_no_write_lost_get_and_clear(void **state)
{
	no_write_lost(false);
}

static void test_no_write_lost_clear_range(void **state)
{
	no_write_lost(true);
}

// Logging turned on and off while writers fault (QEMU's migration start and
// end): the slot's pages are RAM all along, so no fault may answer MMIO. A
// fault that meets the slot's INVALID copy during the change retries (an
// MMIO answer there is an exit the VMM cannot take: on arm64 an access
// without a syndrome became KVM_EXIT_INTERNAL_ERROR).
#define TOGGLES 400

struct flip {
	struct mt *m;
	unsigned k;
	uint64_t mmio, faults; // atomic
};

static void *flip_writer(void *arg)
{
	struct flip *f = arg;
	struct mt *m = f->m;
	uint64_t seed = 777 + f->k;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t gpa = ((seed >> 33) % PAGES) * 4096;
		int r = s2_fault(m->vm, m->root, gpa, S2_PROT_W, NULL);

		__atomic_fetch_add(&f->mmio, r == S2_FAULT_MMIO, __ATOMIC_RELAXED);
		m->errors[f->k] +=
		    r != S2_FAULT_MAPPED && r != S2_FAULT_RETRY && r != S2_FAULT_MMIO;
		__atomic_fetch_add(&f->faults, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_flags_change_never_mmio(void **state)
{
	static struct mt m;
	struct mmt t;
	pthread_t th[WRITERS];
	struct flip f[WRITERS];

	mmt_init(&t, &s2_fmt_ept4);
	memset(&m, 0, sizeof(m));
	m.vm = t.vm;
	m.root = t.root;
	assert_int_equal(s2_slot_add(t.vm, 0, 1, 0, PAGES * 4096ull, HPA, 0), 0);
	for (unsigned i = 0; i < WRITERS; i++) {
		f[i] = (struct flip){.m = &m, .k = i};
		assert_int_equal(pthread_create(&th[i], NULL, flip_writer, &f[i]), 0);
	}
	// Bounded by progress: every toggle, and faults between them.
	for (unsigned i = 0; i < TOGGLES; i++) {
		unsigned flags = i % 2 ? 0 : S2_SLOT_DIRTY_LOG;
		uint64_t before = __atomic_load_n(&f[0].faults, __ATOMIC_RELAXED);

		assert_int_equal(s2_slot_set_flags(t.vm, 0, 1, flags), 0);
		while (__atomic_load_n(&f[0].faults, __ATOMIC_RELAXED) < before + 4)
			sched_yield();
	}
	__atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < WRITERS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(m.errors[i], 0);
		assert_int_equal(f[i].mmio, 0);
	}
	mmt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_write_lost_get_and_clear),
	    cmocka_unit_test(test_no_write_lost_clear_range),
	    cmocka_unit_test(test_flags_change_never_mmio),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
