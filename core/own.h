// SPDX-License-Identifier: Apache-2.0
//
// Frame ownership (issue 14; the secondary-VM layer, core/hv*.c, uses it): who
// owns each 4 KiB frame of RAM, kept apart from any SLAT entry. A frame is the
// primary's (the default: costs nothing), Slat's, shared with VM n or donated
// to VM n. Slat's boot-time region and the RAM map are fixed ranges given at
// init; every other non-primary frame has a 4-byte record in a radix tree
// whose node pages come from a page source the caller provides (memory the
// primary deposits). See docs/ownership.md.
//
// Requests (a range or a list of frames) are all-or-nothing: every frame is
// checked first; on any refusal, or when the page source runs dry ("needs
// memory"), no frame changes and every node page taken is given back.
//
// Concurrency: updates are serialised by the table's lock. own_get() takes no
// lock and may run concurrently with updates: each frame's record is read
// atomically (a request's frames become visible one by one); node pages are
// given back to the source only after a grace period in which every lookup
// that could still see them has ended. Never call own_get() from the page
// source's callbacks (the update waiting for its grace period holds the lock).
#ifndef SLAT_CORE_OWN_H
#define SLAT_CORE_OWN_H

#include <stdbool.h>
#include <stdint.h>

#define OWN_FRAME_SHIFT 12
#define OWN_FRAME_SIZE	(1ull << OWN_FRAME_SHIFT)
#define OWN_PFN_BITS	40u		 // frames below 2^52 bytes
#define OWN_VM_MAX	((1u << 30) - 1) // VM ids 1..OWN_VM_MAX; 0 is the primary
#define OWN_MAX_RANGES	16u		 // RAM ranges and fixed Slat ranges, each
#define OWN_LIST_MAX	512u		 // frames in one list (one page of frame numbers)
#define OWN_RANGE_MAX	(1ull << 20)	 // frames in one range request (4 GiB)

enum own_state {
	OWN_PRIMARY = 0,
	OWN_SHARED = 1,	 // with VM `vm`; the primary keeps access
	OWN_DONATED = 2, // to VM `vm`; the primary lost access
	OWN_SLAT = 3,	 // Slat's (its region, or claimed deposited memory)
};

// Distinct codes; negative so that they can be returned in a register as-is.
enum own_err {
	OWN_OK = 0,
	OWN_E_NOT_OWNED = -2,	   // not in the state the request needs from its owner
	OWN_E_SLAT = -3,	   // the frame is Slat's
	OWN_E_OTHER_VM = -4,	   // the frame is shared with or donated to another VM
	OWN_E_ALREADY_SHARED = -5, // share/donate of a frame already shared with this VM
	OWN_E_RANGE = -6,	   // outside RAM, or the range wraps
	OWN_E_ALIGN = -7,	   // address or size not a multiple of 4 KiB
	OWN_E_TOO_MANY = -8,	   // more frames than one request may carry
	OWN_E_NOMEM = -9,	   // the page source ran dry: deposit and retry
	OWN_E_BAD_VM = -10,	   // VM id 0 or above OWN_VM_MAX (or non-0 for CLAIM/RELEASE)
	OWN_E_BAD_OP = -11,
};

enum own_op {
	OWN_OP_SHARE,	// primary -> shared(vm)
	OWN_OP_UNSHARE, // shared(vm) -> primary
	OWN_OP_DONATE,	// primary -> donated(vm)
	OWN_OP_RECLAIM, // donated(vm) -> primary (the caller zeroes the frames first)
	OWN_OP_CLAIM,	// primary -> Slat (deposit), vm must be 0
	OWN_OP_RELEASE, // Slat (claimed) -> primary (withdraw), vm must be 0
	OWN_OP_COUNT,
};

// Node pages: 4 KiB, 4 KiB-aligned, zeroed. alloc returns NULL when dry.
// relax (may be NULL) is called in every spin loop (the lock, grace periods):
// PAUSE / YIELD in slat.efi, sched_yield hosted.
struct own_page_src {
	void *(*alloc)(void *ctx);
	void (*free)(void *ctx, void *page);
	void *ctx;
	void (*relax)(void);
};

struct own_range {
	uint64_t first_pfn;
	uint64_t npfn;
};

struct own_table {
	struct own_page_src src;
	struct own_range ram[OWN_MAX_RANGES];
	struct own_range slat[OWN_MAX_RANGES];
	unsigned nram, nslat;
	uint64_t top[8]; // level-0 entries: node address | live child count
	uint64_t nodes;	 // node pages held (exact)
	uint32_t lock;
	uint32_t epoch; // grace periods: lookups count themselves in active[epoch & 1]
	uint32_t active[2];
};

// Fails (OWN_E_RANGE / OWN_E_ALIGN / OWN_E_TOO_MANY) on unaligned, wrapping,
// beyond-OWN_PFN_BITS or too many ranges; byte addresses and sizes.
int own_init(struct own_table *t, const struct own_page_src *src, const uint64_t (*ram)[2],
	     unsigned nram, const uint64_t (*slat)[2], unsigned nslat);

// [pa, pa + size): a multiple of 4 KiB, at most OWN_RANGE_MAX frames.
// *bad (may be NULL): the byte address of the refused frame when one is.
int own_range_op(struct own_table *t, enum own_op op, uint32_t vm, uint64_t pa, uint64_t size,
		 uint64_t *bad);

// A list of frame numbers (duplicates act once). *bad: index of the refused one.
int own_list_op(struct own_table *t, enum own_op op, uint32_t vm, const uint64_t *pfn, uint64_t n,
		uint64_t *bad);

// Lock-free lookup. OWN_E_RANGE for a frame outside RAM.
int own_get(struct own_table *t, uint64_t pfn, enum own_state *state, uint32_t *vm);

// Gives every node page back (every frame becomes the primary's again). No
// lookup or update may run concurrently.
void own_destroy(struct own_table *t);

static inline uint64_t own_nodes(const struct own_table *t)
{
	return __atomic_load_n(&t->nodes, __ATOMIC_RELAXED);
}

#endif
