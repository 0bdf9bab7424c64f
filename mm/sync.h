// SPDX-License-Identifier: Apache-2.0
//
// Freestanding synchronisation primitives of the SLAT engine: a spinlock, the
// reader-writer lock used as the MMU lock, and an epoch (RCU-like) scheme for
// freeing memory that lock-free walkers may still be reading.
//
// Everything here is generic C on __atomic builtins: no OS, no malloc, no
// #ifdef. The same code runs in slat.efi (CPUs are physical CPU indexes) and
// hosted under pthreads (each thread claims a CPU slot once and passes its
// index). Callers embed every object (locks, per-CPU slots, deferred-free
// nodes) in their own structures.
//
// Waiting. Every spin loop calls the relax hook (mm_sync_set_relax): slat.efi
// installs PAUSE / YIELD; hosted tests install sched_yield so that 8 threads on
// 2 cores make progress. Without a hook a spin is a plain compiler barrier.
//
// Statistics. Counters are updated with relaxed atomics and may be read at any
// time with the *_stats() functions; in single-threaded use they are exact.
// A "contended" count is the number of acquisitions that found the lock
// unavailable on their first attempt and had to wait (not the spin count).
#ifndef SLAT_MM_SYNC_H
#define SLAT_MM_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// ---- hooks ----------------------------------------------------------------

// Called once per iteration of every spin loop. NULL: compiler barrier only.
// Install during single-threaded bring-up (the pointer is read relaxed).
void mm_sync_set_relax(void (*relax)(void));
// Calls the relax hook (for callers with their own wait loops).
void mm_sync_relax(void);

// Asked by mm_rwlock_should_yield(): returns true when the calling CPU has
// other work pending (an interrupt, a request, a test's yield injector).
// NULL (default): never.
void mm_sync_set_need_resched(bool (*need_resched)(void));

// ---- spinlock ---------------------------------------------------------------

// Test-and-test-and-set lock. Not recursive. Zero-initialised is unlocked.
struct mm_spinlock {
	uint32_t locked; // 0 free, 1 held
	uint32_t reserved;
	uint64_t acquired;  // successful acquisitions (lock and trylock)
	uint64_t contended; // acquisitions that had to wait
};

#define MM_SPINLOCK_INIT                                                                           \
	{                                                                                          \
		0                                                                                  \
	}

void mm_spin_init(struct mm_spinlock *l);
void mm_spin_lock(struct mm_spinlock *l);
void mm_spin_unlock(struct mm_spinlock *l);

struct mm_spin_stats {
	uint64_t acquired;
	uint64_t contended;
};
void mm_spin_stats(const struct mm_spinlock *l, struct mm_spin_stats *out);

// ---- reader-writer lock (the MMU lock) --------------------------------------

// Writer-preferring: once a writer waits, new readers wait too, so a stream of
// readers cannot starve a writer (the MMU lock's writers are rare: memslot
// updates, zap-all). Not recursive: a CPU holding the read lock must not take
// it again (a waiting writer would deadlock it), nor upgrade.
//
// Long read-side (or write-side) operations poll mm_rwlock_should_yield() at
// bounded intervals; on true they finish what must be finished before the
// lock is dropped (e.g. a pending TLB flush) and call mm_rwlock_yield_read() /
// mm_rwlock_yield_write(), then restart from a saved position.
//
// Zero-initialised is unlocked.
struct mm_rwlock {
	uint32_t state;		  // MM_RW_WRITER | number of readers
	uint32_t writers_waiting; // writers spinning for the lock (not the holder)
	uint32_t readers_waiting; // readers spinning for the lock
	uint32_t reserved;
	uint64_t read_acquired;
	uint64_t write_acquired;
	uint64_t read_contended;
	uint64_t write_contended;
	uint64_t yields;
};

#define MM_RWLOCK_INIT                                                                             \
	{                                                                                          \
		0                                                                                  \
	}
#define MM_RW_WRITER 0x80000000u

void mm_rwlock_init(struct mm_rwlock *l);
void mm_rwlock_read_lock(struct mm_rwlock *l);
void mm_rwlock_read_unlock(struct mm_rwlock *l);
void mm_rwlock_write_lock(struct mm_rwlock *l);
void mm_rwlock_write_unlock(struct mm_rwlock *l);
bool mm_rwlock_try_read_lock(struct mm_rwlock *l);
bool mm_rwlock_try_write_lock(struct mm_rwlock *l);

// For assertions: the lock is held for write (by anyone).
bool mm_rwlock_is_write_locked(const struct mm_rwlock *l);

// Asked by a holder. Read holder: a writer is waiting. Write holder: anybody
// is waiting. Either: the need-resched hook says so.
bool mm_rwlock_should_yield(const struct mm_rwlock *l);

// Drop the lock, relax once, take it again in the same mode; counts a yield.
// Everything read under the lock before must be considered stale afterwards.
void mm_rwlock_yield_read(struct mm_rwlock *l);
void mm_rwlock_yield_write(struct mm_rwlock *l);

struct mm_rwlock_stats {
	uint64_t read_acquired;
	uint64_t write_acquired;
	uint64_t read_contended;
	uint64_t write_contended;
	uint64_t yields;
};
void mm_rwlock_stats(const struct mm_rwlock *l, struct mm_rwlock_stats *out);

// ---- epoch-based deferred free ----------------------------------------------

// Readers bracket every access to shared, lock-free-reachable memory with
// mm_epoch_enter(e, cpu) / mm_epoch_exit(e, cpu). A CPU outside a read section
// is quiescent. Writers unlink an object (release store or CAS), then either
// call mm_epoch_synchronize() and free it, or hand it to mm_epoch_defer(): the
// callback runs only after a grace period that *began after the defer call*
// has ended, i.e. after every CPU that was inside a read section at that time
// has left it. Callbacks run from mm_epoch_poll() / mm_epoch_barrier(), on the
// CPU that calls them, outside any lock of this module.
//
// Rules:
// - `cpu` is the caller's own slot index, < ncpus: in slat.efi the physical
//   CPU index; hosted a slot from the tests' mm_epoch_claim_cpu(). A slot is used by one
//   thread of execution at a time (its nesting count is not atomic).
// - Read sections nest; only the outermost exit makes the CPU quiescent.
// - Never call mm_epoch_synchronize() / mm_epoch_barrier() inside a read
//   section (it would wait for itself). mm_epoch_defer() and mm_epoch_poll()
//   are fine anywhere (poll never waits).
// - A read section must not block on a lock held by a CPU that is waiting for
//   a grace period.

// One per CPU; 64-byte aligned so that CPUs do not share cache lines.
struct mm_epoch_cpu {
	uint64_t state;	  // 0 quiescent, else (epoch << 1) | 1 at outermost enter
	uint32_t nest;	  // read-section depth, owner CPU only
	uint32_t claimed; // 1 while a hosted thread owns the slot
	uint8_t pad[48];
} __attribute__((aligned(64)));

struct mm_epoch_node;
typedef void (*mm_epoch_fn)(void *obj);

// Embedded by the caller (usually in the object to free); must stay valid until
// its callback has started. The callback may free the memory holding it.
struct mm_epoch_node {
	struct mm_epoch_node *next;
	mm_epoch_fn fn;
	void *obj;
	uint64_t seq; // the grace period sequence when deferred
};

struct mm_epoch {
	uint64_t gp_seq;  // grace periods started (each start increments it)
	uint64_t gp_done; // highest sequence whose grace period has ended
	struct mm_epoch_cpu *cpus;
	uint32_t ncpus;
	uint32_t reserved;
	struct mm_spinlock lock; // deferred FIFO
	struct mm_epoch_node *head;
	struct mm_epoch_node **tail;
	uint64_t pending; // nodes on the FIFO
	// statistics
	uint64_t grace_periods; // grace periods completed (synchronize or poll)
	uint64_t waits;		// grace periods that had to wait for a reader
	uint64_t deferred;	// mm_epoch_defer() calls
	uint64_t reclaimed;	// callbacks run
};

// `cpus` holds `ncpus` slots (zeroed here). `e` and `cpus` live as long as any
// user does.
void mm_epoch_init(struct mm_epoch *e, struct mm_epoch_cpu *cpus, uint32_t ncpus);

void mm_epoch_enter(struct mm_epoch *e, uint32_t cpu);
void mm_epoch_exit(struct mm_epoch *e, uint32_t cpu);
bool mm_epoch_in_read(const struct mm_epoch *e, uint32_t cpu); // for assertions

// Waits until every CPU that is inside a read section now has left it.
void mm_epoch_synchronize(struct mm_epoch *e);

// Queues fn(obj) to run after a grace period that begins after this call. The
// object must already be unreachable for new readers.
void mm_epoch_defer(struct mm_epoch *e, struct mm_epoch_node *node, mm_epoch_fn fn, void *obj);

// Never waits: ends a grace period if no reader holds one back, then runs the
// callbacks that are due. Returns how many ran.
size_t mm_epoch_poll(struct mm_epoch *e);

// Waits for a grace period and runs every callback deferred before the call.
// Returns how many ran.
size_t mm_epoch_barrier(struct mm_epoch *e);

struct mm_epoch_stats {
	uint64_t grace_periods;
	uint64_t waits;
	uint64_t deferred;
	uint64_t reclaimed;
	uint64_t pending;
};
void mm_epoch_stats(const struct mm_epoch *e, struct mm_epoch_stats *out);

#endif
