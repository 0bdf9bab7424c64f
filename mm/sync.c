// SPDX-License-Identifier: Apache-2.0
//
// Spinlock, MMU reader-writer lock and epoch-based deferred free (see sync.h).
// Generic C on __atomic builtins; the same file runs in slat.efi and hosted.
#include "mm/sync.h"

#define RELAXED __ATOMIC_RELAXED
#define ACQUIRE __ATOMIC_ACQUIRE
#define RELEASE __ATOMIC_RELEASE
#define SEQCST	__ATOMIC_SEQ_CST

static void (*relax_hook)(void);
static bool (*need_resched_hook)(void);

void mm_sync_set_relax(void (*relax)(void))
{
	__atomic_store_n(&relax_hook, relax, RELAXED);
}

void mm_sync_set_need_resched(bool (*need_resched)(void))
{
	__atomic_store_n(&need_resched_hook, need_resched, RELAXED);
}

void mm_sync_relax(void)
{
	void (*fn)(void) = __atomic_load_n(&relax_hook, RELAXED);

	if (fn)
		fn();
	else
		__atomic_signal_fence(SEQCST);
}

static void count(uint64_t *c)
{
	__atomic_fetch_add(c, 1, RELAXED);
}

static uint64_t peek(const uint64_t *c)
{
	return __atomic_load_n(c, RELAXED);
}

// ---- spinlock ---------------------------------------------------------------

void mm_spin_init(struct mm_spinlock *l)
{
	*l = (struct mm_spinlock)MM_SPINLOCK_INIT;
}

void mm_spin_lock(struct mm_spinlock *l)
{
	if (!__atomic_exchange_n(&l->locked, 1, ACQUIRE)) {
		count(&l->acquired);
		return;
	}
	// Contended: spin on plain loads (no cache-line ping-pong), retry the
	// exchange only when the lock looks free.
	do {
		while (__atomic_load_n(&l->locked, RELAXED))
			mm_sync_relax();
	} while (__atomic_exchange_n(&l->locked, 1, ACQUIRE));
	count(&l->acquired);
	count(&l->contended);
}

void mm_spin_unlock(struct mm_spinlock *l)
{
	__atomic_store_n(&l->locked, 0, RELEASE);
}

void mm_spin_stats(const struct mm_spinlock *l, struct mm_spin_stats *out)
{
	out->acquired = peek(&l->acquired);
	out->contended = peek(&l->contended);
}

// ---- reader-writer lock -----------------------------------------------------

void mm_rwlock_init(struct mm_rwlock *l)
{
	*l = (struct mm_rwlock)MM_RWLOCK_INIT;
}

// One attempt: succeeds when no writer holds or waits (writer preference).
static bool read_try_once(struct mm_rwlock *l)
{
	uint32_t s;

	if (__atomic_load_n(&l->writers_waiting, RELAXED))
		return false;
	s = __atomic_load_n(&l->state, RELAXED);
	while (!(s & MM_RW_WRITER)) {
		if (__atomic_compare_exchange_n(&l->state, &s, s + 1, true, ACQUIRE, RELAXED))
			return true;
	}
	return false;
}

bool mm_rwlock_try_read_lock(struct mm_rwlock *l)
{
	if (!read_try_once(l))
		return false;
	count(&l->read_acquired);
	return true;
}

void mm_rwlock_read_lock(struct mm_rwlock *l)
{
	if (mm_rwlock_try_read_lock(l))
		return;
	__atomic_fetch_add(&l->readers_waiting, 1, RELAXED);
	do
		mm_sync_relax();
	while (!read_try_once(l));
	__atomic_fetch_sub(&l->readers_waiting, 1, RELAXED);
	count(&l->read_acquired);
	count(&l->read_contended);
}

void mm_rwlock_read_unlock(struct mm_rwlock *l)
{
	__atomic_fetch_sub(&l->state, 1, RELEASE);
}

static bool write_try_once(struct mm_rwlock *l)
{
	uint32_t s = 0;

	if (__atomic_load_n(&l->state, RELAXED))
		return false;
	return __atomic_compare_exchange_n(&l->state, &s, MM_RW_WRITER, false, ACQUIRE, RELAXED);
}

bool mm_rwlock_try_write_lock(struct mm_rwlock *l)
{
	if (!write_try_once(l))
		return false;
	count(&l->write_acquired);
	return true;
}

void mm_rwlock_write_lock(struct mm_rwlock *l)
{
	if (mm_rwlock_try_write_lock(l))
		return;
	// Announce first: from here on new readers hold back, so the reader
	// count can only drain.
	__atomic_fetch_add(&l->writers_waiting, 1, RELAXED);
	do
		mm_sync_relax();
	while (!write_try_once(l));
	__atomic_fetch_sub(&l->writers_waiting, 1, RELAXED);
	count(&l->write_acquired);
	count(&l->write_contended);
}

void mm_rwlock_write_unlock(struct mm_rwlock *l)
{
	__atomic_store_n(&l->state, 0, RELEASE);
}

bool mm_rwlock_is_write_locked(const struct mm_rwlock *l)
{
	return (__atomic_load_n(&l->state, RELAXED) & MM_RW_WRITER) != 0;
}

bool mm_rwlock_should_yield(const struct mm_rwlock *l)
{
	bool (*resched)(void) = __atomic_load_n(&need_resched_hook, RELAXED);
	bool waiting = __atomic_load_n(&l->writers_waiting, RELAXED) != 0;

	if (mm_rwlock_is_write_locked(l))
		waiting = waiting || __atomic_load_n(&l->readers_waiting, RELAXED) != 0;
	return waiting || (resched && resched());
}

void mm_rwlock_yield_read(struct mm_rwlock *l)
{
	count(&l->yields);
	mm_rwlock_read_unlock(l);
	mm_sync_relax();
	mm_rwlock_read_lock(l);
}

void mm_rwlock_yield_write(struct mm_rwlock *l)
{
	count(&l->yields);
	mm_rwlock_write_unlock(l);
	mm_sync_relax();
	mm_rwlock_write_lock(l);
}

void mm_rwlock_stats(const struct mm_rwlock *l, struct mm_rwlock_stats *out)
{
	out->read_acquired = peek(&l->read_acquired);
	out->write_acquired = peek(&l->write_acquired);
	out->read_contended = peek(&l->read_contended);
	out->write_contended = peek(&l->write_contended);
	out->yields = peek(&l->yields);
}

// ---- epochs -----------------------------------------------------------------
//
// Why it is safe. A reader publishes (epoch it read << 1 | 1) with a seq_cst
// store followed by a full fence before it loads any shared pointer. A writer
// unlinks, issues a full fence, starts grace period N (seq_cst increment of
// gp_seq) and then loads every CPU's state. Either the writer's load sees the
// reader's publication, and then it waits for that reader unless the reader
// read an epoch >= N (in which case the reader's loads come after the
// increment and hence after the unlink), or it does not see it, and then by the
// store-buffering rule the reader's later loads see the unlink. The reader's
// exit is a release store that the writer's scan acquires, so everything the
// reader did happens before the free.

void mm_epoch_init(struct mm_epoch *e, struct mm_epoch_cpu *cpus, uint32_t ncpus)
{
	for (uint32_t i = 0; i < ncpus; i++)
		cpus[i] = (struct mm_epoch_cpu){0};
	*e = (struct mm_epoch){0};
	e->cpus = cpus;
	e->ncpus = ncpus;
	e->tail = &e->head;
}

void mm_epoch_enter(struct mm_epoch *e, uint32_t cpu)
{
	struct mm_epoch_cpu *c = &e->cpus[cpu];
	uint64_t ep;

	if (c->nest++)
		return;
	ep = __atomic_load_n(&e->gp_seq, SEQCST);
	__atomic_store_n(&c->state, (ep << 1) | 1, SEQCST);
	__atomic_thread_fence(SEQCST);
}

void mm_epoch_exit(struct mm_epoch *e, uint32_t cpu)
{
	struct mm_epoch_cpu *c = &e->cpus[cpu];

	if (--c->nest)
		return;
	__atomic_store_n(&c->state, 0, RELEASE);
}

bool mm_epoch_in_read(const struct mm_epoch *e, uint32_t cpu)
{
	return e->cpus[cpu].nest != 0;
}

// True once no CPU is still inside a read section entered before grace period
// `target` started. With `wait` false, gives up at the first such CPU.
static bool gp_readers_gone(struct mm_epoch *e, uint64_t target, bool wait, bool *waited)
{
	for (uint32_t i = 0; i < e->ncpus; i++) {
		for (;;) {
			uint64_t s = __atomic_load_n(&e->cpus[i].state, SEQCST);

			if (!(s & 1) || (s >> 1) >= target)
				break;
			if (!wait)
				return false;
			*waited = true;
			mm_sync_relax();
		}
	}
	// Pairs with each reader's release exit: its accesses happen before
	// whatever the caller frees next.
	__atomic_thread_fence(ACQUIRE);
	return true;
}

static uint64_t gp_start(struct mm_epoch *e)
{
	__atomic_thread_fence(SEQCST); // the caller's unlinks come first
	return __atomic_add_fetch(&e->gp_seq, 1, SEQCST);
}

static void gp_end(struct mm_epoch *e, uint64_t seq, bool waited)
{
	uint64_t cur = __atomic_load_n(&e->gp_done, ACQUIRE);

	while (cur < seq &&
	       !__atomic_compare_exchange_n(&e->gp_done, &cur, seq, true, RELEASE, ACQUIRE))
		;
	count(&e->grace_periods);
	if (waited)
		count(&e->waits);
}

void mm_epoch_synchronize(struct mm_epoch *e)
{
	bool waited = false;
	uint64_t seq = gp_start(e);

	gp_readers_gone(e, seq, true, &waited);
	gp_end(e, seq, waited);
}

void mm_epoch_defer(struct mm_epoch *e, struct mm_epoch_node *node, mm_epoch_fn fn, void *obj)
{
	node->fn = fn;
	node->obj = obj;
	node->next = NULL;
	__atomic_thread_fence(SEQCST); // the caller's unlink before reading gp_seq
	mm_spin_lock(&e->lock);
	// Read under the lock so that the FIFO stays sorted by seq.
	node->seq = __atomic_load_n(&e->gp_seq, SEQCST);
	*e->tail = node;
	e->tail = &node->next;
	__atomic_store_n(&e->pending, e->pending + 1, RELAXED);
	mm_spin_unlock(&e->lock);
	count(&e->deferred);
}

// Detaches the nodes whose grace period has ended and runs their callbacks.
static size_t run_due(struct mm_epoch *e)
{
	uint64_t done = __atomic_load_n(&e->gp_done, ACQUIRE);
	struct mm_epoch_node *list, *n;
	size_t ran = 0;

	mm_spin_lock(&e->lock);
	list = e->head;
	n = NULL;
	// A node is due when a grace period numbered above its seq has ended.
	while (e->head && e->head->seq < done) {
		n = e->head;
		e->head = n->next;
		ran++;
	}
	if (!e->head)
		e->tail = &e->head;
	if (n)
		n->next = NULL;
	else
		list = NULL;
	__atomic_store_n(&e->pending, e->pending - ran, RELAXED);
	mm_spin_unlock(&e->lock);

	while (list) {
		struct mm_epoch_node *next = list->next; // the callback may free list

		list->fn(list->obj);
		count(&e->reclaimed);
		list = next;
	}
	return ran;
}

// True when the oldest deferred node still needs a grace period to end.
static bool gp_needed(struct mm_epoch *e)
{
	bool need;

	mm_spin_lock(&e->lock);
	need = e->head && e->head->seq >= __atomic_load_n(&e->gp_done, ACQUIRE);
	mm_spin_unlock(&e->lock);
	return need;
}

size_t mm_epoch_poll(struct mm_epoch *e)
{
	bool waited = false;

	if (!__atomic_load_n(&e->pending, RELAXED))
		return 0;
	if (gp_needed(e)) {
		uint64_t seq = gp_start(e);

		if (gp_readers_gone(e, seq, false, &waited))
			gp_end(e, seq, false);
	}
	return run_due(e);
}

size_t mm_epoch_barrier(struct mm_epoch *e)
{
	mm_epoch_synchronize(e);
	return run_due(e);
}

void mm_epoch_stats(const struct mm_epoch *e, struct mm_epoch_stats *out)
{
	out->grace_periods = peek(&e->grace_periods);
	out->waits = peek(&e->waits);
	out->deferred = peek(&e->deferred);
	out->reclaimed = peek(&e->reclaimed);
	out->pending = peek(&e->pending);
}
