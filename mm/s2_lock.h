// SPDX-License-Identifier: Apache-2.0
//
// Minimal locks private to mm/ (spinning reader-writer lock and spinlock on
// __atomic builtins), with counts of acquisitions and contended waits.
// Waiters call the VM backend's cpu_relax hook.
#ifndef SLAT_MM_S2_LOCK_H
#define SLAT_MM_S2_LOCK_H

#include <stdbool.h>
#include <stdint.h>

struct s2_rwlock {
	uint32_t v; // bit 31 writer, bit 30 writer waiting, low bits readers
};
struct s2_spin {
	uint32_t v;
};
typedef void (*s2_relax_fn)(void *ctx);

// Each returns true when it had to wait.
bool s2_rw_read_lock(struct s2_rwlock *l, s2_relax_fn relax, void *ctx);
void s2_rw_read_unlock(struct s2_rwlock *l);
bool s2_rw_write_lock(struct s2_rwlock *l, s2_relax_fn relax, void *ctx);
void s2_rw_write_unlock(struct s2_rwlock *l);
bool s2_spin_lock(struct s2_spin *l, s2_relax_fn relax, void *ctx);
void s2_spin_unlock(struct s2_spin *l);

#endif
