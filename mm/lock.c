// SPDX-License-Identifier: Apache-2.0
//
// mm/'s private spinning locks. The rwlock lets a waiting writer stop new
// readers (bit 30) so that a stream of readers cannot starve it.
#include "mm/s2_lock.h"

#define RW_WRITER  (1u << 31)
#define RW_WAITING (1u << 30)
#define RW_READERS (RW_WAITING - 1)

static void relax(s2_relax_fn fn, void *ctx)
{
	if (fn)
		fn(ctx);
}

bool s2_rw_read_lock(struct s2_rwlock *l, s2_relax_fn fn, void *ctx)
{
	bool waited = false;

	for (;;) {
		uint32_t v = __atomic_load_n(&l->v, __ATOMIC_RELAXED);

		if (!(v & (RW_WRITER | RW_WAITING)) &&
		    __atomic_compare_exchange_n(&l->v, &v, v + 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return waited;
		waited = true;
		relax(fn, ctx);
	}
}

void s2_rw_read_unlock(struct s2_rwlock *l)
{
	__atomic_fetch_sub(&l->v, 1, __ATOMIC_RELEASE);
}

bool s2_rw_write_lock(struct s2_rwlock *l, s2_relax_fn fn, void *ctx)
{
	bool waited = false;

	for (;;) {
		uint32_t v = __atomic_load_n(&l->v, __ATOMIC_RELAXED);

		if (!(v & (RW_WRITER | RW_READERS))) {
			if (__atomic_compare_exchange_n(&l->v, &v, RW_WRITER, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return waited;
			continue;
		}
		if (!(v & RW_WAITING))
			__atomic_fetch_or(&l->v, RW_WAITING, __ATOMIC_RELAXED);
		waited = true;
		relax(fn, ctx);
	}
}

void s2_rw_write_unlock(struct s2_rwlock *l)
{
	__atomic_fetch_and(&l->v, ~RW_WRITER, __ATOMIC_RELEASE);
}

bool s2_spin_lock(struct s2_spin *l, s2_relax_fn fn, void *ctx)
{
	bool waited = false;

	while (__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE)) {
		waited = true;
		while (__atomic_load_n(&l->v, __ATOMIC_RELAXED))
			relax(fn, ctx);
	}
	return waited;
}

void s2_spin_unlock(struct s2_spin *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}
