// SPDX-License-Identifier: Apache-2.0
//
// Test and benchmark hooks of the SLAT engine: baselines that the benchmarks
// measure the engine's mechanisms against, and switches the unit tests use.
// Not part of the production API (mm/s2.h): no production path includes this
// header (tools/mm_callgraph.py does not check it; `grep` does).
#ifndef SLAT_MM_S2_TESTHOOKS_H
#define SLAT_MM_S2_TESTHOOKS_H

#include "mm/s2.h"

// B3 baseline (mm/roots.c): root get and put take the mmu lock for write, as
// before lock-light root management. Off (read lock) by default.
void s2_vm_set_root_lock_write(struct s2_vm *vm, bool write);

// B4 baseline (mm/map.c): unmaps [gpa, gpa + size) the way per-page teardown
// worked before batched teardown: one walk over the tree, and for each leaf
// as it is zapped its own invalidation and (by the CMO policy) its own clean
// to PoC; emptied tables are removed with their own invalidation too.
// Returns 0 or a negative S2_E_*.
int s2_unmap_per_leaf(struct s2_vm *vm, struct s2_root *root, uint64_t gpa, uint64_t size);

#endif
