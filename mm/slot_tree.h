// SPDX-License-Identifier: Apache-2.0
//
// Balanced (AVL) search tree over nodes embedded in their owners: no
// allocation, unique 64-bit keys, every operation O(log n). The memslot sets
// (mm/slots.c) keep two per set: by guest-physical base and by slot id.
// Not thread-safe: the caller guarantees that nobody reads a tree it changes.
#ifndef SLAT_MM_SLOT_TREE_H
#define SLAT_MM_SLOT_TREE_H

#include <stdint.h>

struct s2_tnode {
	struct s2_tnode *l, *r;
	uint64_t key;
	int32_t h; // height of the subtree rooted here (leaf: 1)
};

// Every function adds the number of nodes it looked at to *visits (the
// update-cost test bounds it by a multiple of log2 n).
void s2_tree_insert(struct s2_tnode **root, struct s2_tnode *n, uint64_t *visits);
// Unlinks the node with `key` (which must be in the tree).
void s2_tree_remove(struct s2_tnode **root, uint64_t key, uint64_t *visits);
struct s2_tnode *s2_tree_find(const struct s2_tnode *root, uint64_t key, uint64_t *visits);
// The node with the largest key <= `key` (NULL: none).
struct s2_tnode *s2_tree_floor(const struct s2_tnode *root, uint64_t key, uint64_t *visits);

#endif
