// SPDX-License-Identifier: Apache-2.0
//
// Memslot readers against a writer (also run under TSan): readers look up
// slots while one writer moves, deletes, re-adds and re-flags them. Inside
// one reader section the set never changes (two passes agree, pointer for
// pointer), every slot found is a record the writer published whole (id, base,
// size, backing), and no set shows a slot at its old and its new place at
// once. TSan checks that the writer never writes what a reader reads.
#include <pthread.h>
#include <sched.h>

#include "mm/s2_internal.h" // the slot-set reader section
#include "mm_test.h"

#define NS	    512 // slots
#define PROBES	    48	// slots a reader checks per section
#define ROUNDS	    4	// writer passes over the slots
#define READERS	    2
#define SLOT_GPA(i) ((uint64_t)(i)*8 * KiB)
#define SLOT_HPA(i) (1 * GiB + (uint64_t)(i)*4 * KiB)

struct mt {
	struct s2_vm *vm;
	unsigned done; // atomic
	uint64_t sections[READERS], found[READERS];
	uint64_t torn[READERS], changed[READERS], bad_record[READERS]; // must stay 0
};

struct rd {
	struct mt *m;
	unsigned k;
};

static bool slot_ok(const struct s2_slot *sl, unsigned i, uint64_t base)
{
	return sl->id == i && sl->gpa == base && sl->size == 4 * KiB && sl->hpa == SLOT_HPA(i) &&
	       !(sl->flags & ~(unsigned)S2_SLOT_READONLY);
}

// One reader section: PROBES slots at both places, twice. Counts what it
// must never see (readers do not assert: cmocka's asserts belong to the main
// thread).
static void section(struct mt *m, unsigned k, unsigned seed)
{
	const struct s2_slot *got[PROBES][2];
	struct s2_slot copy[PROBES][2];
	struct s2_slotset *s = s2_slots_enter(m->vm, 0);

	for (unsigned p = 0; p < PROBES; p++) {
		unsigned i = (seed + p * 37) % NS;
		for (unsigned w = 0; w < 2; w++) {
			uint64_t base = SLOT_GPA(i) + w * 4 * KiB;
			got[p][w] = s2_slots_lookup(s, base + 8 * p);
			if (got[p][w]) {
				copy[p][w] = *got[p][w];
				m->bad_record[k] += !slot_ok(&copy[p][w], i, base);
				m->found[k]++;
			}
		}
		m->torn[k] += got[p][0] && got[p][1]; // old and new place at once
	}
	for (unsigned p = 0; p < PROBES; p++) {
		unsigned i = (seed + p * 37) % NS;
		for (unsigned w = 0; w < 2; w++) {
			const struct s2_slot *sl =
			    s2_slots_lookup(s, SLOT_GPA(i) + w * 4 * KiB + 8 * p);
			m->changed[k] +=
			    sl != got[p][w] || (sl && memcmp(sl, &copy[p][w], sizeof(*sl)));
		}
	}
	s2_slots_exit(s);
}

static void *reader(void *arg)
{
	struct rd *r = arg;
	unsigned seed = r->k * 101;

	while (!__atomic_load_n(&r->m->done, __ATOMIC_ACQUIRE)) {
		section(r->m, r->k, seed);
		__atomic_fetch_add(&r->m->sections[r->k], 1, __ATOMIC_RELEASE);
		seed = seed * 1103515245u + 12345u;
	}
	return NULL;
}

// Every reader runs a new section during each round of the writer.
static void wait_readers(struct mt *m)
{
	uint64_t seen[READERS];

	for (unsigned k = 0; k < READERS; k++)
		seen[k] = __atomic_load_n(&m->sections[k], __ATOMIC_ACQUIRE);
	for (unsigned k = 0; k < READERS; k++) {
		while (__atomic_load_n(&m->sections[k], __ATOMIC_ACQUIRE) < seen[k] + 2)
			sched_yield();
	}
}

static unsigned writer_round(struct s2_vm *vm, unsigned round)
{
	unsigned n = 0;

	for (unsigned i = round % 4; i < NS; i += 4) {
		switch ((i / 4 + round) % 3) {
		case 0: // away and back
			assert_int_equal(s2_slot_move(vm, 0, i, SLOT_GPA(i) + 4 * KiB), 0);
			assert_int_equal(s2_slot_move(vm, 0, i, SLOT_GPA(i)), 0);
			break;
		case 1: // gone and back
			assert_int_equal(s2_slot_delete(vm, 0, i), 0);
			assert_int_equal(
			    s2_slot_add(vm, 0, i, SLOT_GPA(i), 4 * KiB, SLOT_HPA(i), 0), 0);
			break;
		default:
			assert_int_equal(s2_slot_set_flags(vm, 0, i, S2_SLOT_READONLY), 0);
			assert_int_equal(s2_slot_set_flags(vm, 0, i, 0), 0);
			break;
		}
		n += 2;
	}
	return n;
}

static void test_readers_never_see_torn_set(void **state)
{
	struct mmt t;
	struct mt m = {0};
	struct rd rd[READERS];
	pthread_t th[READERS];
	struct s2_stats st;
	unsigned updates = NS;

	mmt_init(&t, &s2_fmt_ept4);
	m.vm = t.vm;
	for (unsigned i = 0; i < NS; i++)
		assert_int_equal(s2_slot_add(t.vm, 0, i, SLOT_GPA(i), 4 * KiB, SLOT_HPA(i), 0), 0);
	for (unsigned k = 0; k < READERS; k++) {
		rd[k] = (struct rd){&m, k};
		pthread_create(&th[k], NULL, reader, &rd[k]);
	}
	for (unsigned r = 0; r < ROUNDS; r++) {
		wait_readers(&m);
		updates += writer_round(t.vm, r);
	}
	__atomic_store_n(&m.done, 1, __ATOMIC_RELEASE);
	for (unsigned k = 0; k < READERS; k++) {
		pthread_join(th[k], NULL);
		assert_true(m.sections[k] >= 2 * ROUNDS);
		assert_true(m.found[k] > 0);
		assert_int_equal(m.torn[k], 0);
		assert_int_equal(m.changed[k], 0);
		assert_int_equal(m.bad_record[k], 0);
	}
	s2_vm_stats(t.vm, &st);
	assert_int_equal(st.slot_updates, updates);
	for (unsigned i = 0; i < NS; i++) { // the final set: every slot home
		struct s2_slot sl;
		assert_true(s2_slot_find(t.vm, 0, SLOT_GPA(i), &sl));
		assert_true(slot_ok(&sl, i, SLOT_GPA(i)));
		assert_int_equal(sl.flags, 0);
	}
	mmt_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_readers_never_see_torn_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
