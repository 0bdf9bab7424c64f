// SPDX-License-Identifier: Apache-2.0
//
// Hosted simulation of an L1 hypervisor that boots and destroys L2 guests on
// top of the nested shadow MMU (mm/shadow.h), for the nested-churn unit test
// and benchmark B5 ("200 cycles of 10 L2 contexts x 2 GiB under a 64 GiB L1").
//
// L1 is an s2_vm over the hosted backend with one memslot (slot 0) covering
// its memory; only the pages L1 uses as EPT12 tables exist (a sparse store
// behind the shadow MMU's guest-memory accessor), data pages are never
// dereferenced. L1 allocates pages from a FIFO free list, so freed pages come
// back late and the table pages of later guests are other pages (as in a real
// L1 kernel), which is what makes leaked shadow pages pile up.
//
// One cycle: boot `contexts` L2 guests (an EPT12 root each, a shadow root
// each), let every L2 touch all its memory (a hardware walk of the shadow
// table first; on a miss the shadow fault, and on "L1 has not mapped it" L1's
// EPT-violation handler, which maps `batch` pages around the address), then
// destroy them all: L1 tears each EPT12 down (bottom-up with 4K writes that
// trap on tracked pages, or by dropping it without writes) and the vCPU puts
// the shadow root.
#ifndef SLAT_TESTS_SHADOW_SIM_H
#define SLAT_TESTS_SHADOW_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "mm/s2.h"
#include "mm/shadow.h"

enum shsim_teardown {
	SHSIM_TEARDOWN_WRITES = 0, // clear leaves, then table entries, bottom-up (KVM as L1)
	SHSIM_TEARDOWN_DROP = 1,   // free the tables without writing them
};

struct shsim_config {
	uint64_t l1_pages; // L1 memory (4 KiB pages), at L1 gpa 0
	unsigned contexts; // L2 guests alive at once
	uint64_t l2_pages; // memory of each L2, all touched once per cycle
	unsigned batch;	   // pages L1 maps per EPT violation (1..512; 0: 512)
	bool non_recursive;
	enum shsim_teardown teardown;
	uint64_t quota; // 0: default max(l1_pages / 50, 64)
};

struct shsim_cycle {
	uint64_t used_peak, chain_peak; // after every L2 touched its memory
	uint64_t used_end, chain_end;	// after every L2 was destroyed
	uint64_t orphans_end;
	uint64_t zapped;      // SPs zapped during the cycle
	uint64_t faults;      // shadow faults during the cycle
	uint64_t l1_exits;    // EPT violations reflected to L1
	uint64_t emul_writes; // writes to tracked pages (emulated), by L1 and L2
	uint64_t l2_emulated; // L2 writes that hit a page still shadowed as an L1 table
};

struct shsim;
struct shsim *shsim_create(const struct shsim_config *cfg);
// Runs one cycle; 0, or a negative error (a fault that could not be resolved).
int shsim_cycle(struct shsim *s, struct shsim_cycle *out);
// Deletes L1's memslot 0 (B5's final "slot-0 delete"): 0 or an S2_E_* error.
int shsim_delete_slot0(struct shsim *s);
struct sh_mmu *shsim_mmu(struct shsim *s);
struct s2_vm *shsim_vm(struct shsim *s);
// Frees everything; returns the backend's leak count (pages never freed).
int64_t shsim_destroy(struct shsim *s);

#endif
