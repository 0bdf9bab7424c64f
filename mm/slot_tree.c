// SPDX-License-Identifier: Apache-2.0
//
// AVL tree over embedded nodes (see mm/slot_tree.h). Invariant kept by every
// change: at each node the heights of the two subtrees differ by at most 1,
// so the height is below 1.45 log2(n + 2) and every walk is O(log n).
// Recursion depth is the height (about 22 for 32764 slots).
#include "mm/slot_tree.h"

#include <stddef.h>

static int32_t ht(const struct s2_tnode *n)
{
	return n ? n->h : 0;
}

static void fix(struct s2_tnode *n)
{
	int32_t a = ht(n->l), b = ht(n->r);

	n->h = 1 + (a > b ? a : b);
}

static struct s2_tnode *rot_right(struct s2_tnode *n)
{
	struct s2_tnode *l = n->l;

	n->l = l->r;
	l->r = n;
	fix(n);
	fix(l);
	return l;
}

static struct s2_tnode *rot_left(struct s2_tnode *n)
{
	struct s2_tnode *r = n->r;

	n->r = r->l;
	r->l = n;
	fix(n);
	fix(r);
	return r;
}

// Restores the AVL invariant at `n` after one of its subtrees changed height by 1.
static struct s2_tnode *balance(struct s2_tnode *n)
{
	int32_t b = ht(n->l) - ht(n->r);

	fix(n);
	if (b > 1) {
		if (ht(n->l->l) < ht(n->l->r))
			n->l = rot_left(n->l);
		return rot_right(n);
	}
	if (b < -1) {
		if (ht(n->r->r) < ht(n->r->l))
			n->r = rot_right(n->r);
		return rot_left(n);
	}
	return n;
}

static struct s2_tnode *insert(struct s2_tnode *t, struct s2_tnode *n, uint64_t *visits)
{
	if (!t) {
		n->l = n->r = NULL;
		n->h = 1;
		return n;
	}
	(*visits)++;
	if (n->key < t->key)
		t->l = insert(t->l, n, visits);
	else
		t->r = insert(t->r, n, visits);
	return balance(t);
}

void s2_tree_insert(struct s2_tnode **root, struct s2_tnode *n, uint64_t *visits)
{
	*root = insert(*root, n, visits);
}

static struct s2_tnode *remove_min(struct s2_tnode *t, struct s2_tnode **min, uint64_t *visits)
{
	(*visits)++;
	if (!t->l) {
		*min = t;
		return t->r;
	}
	t->l = remove_min(t->l, min, visits);
	return balance(t);
}

static struct s2_tnode *remove(struct s2_tnode *t, uint64_t key, uint64_t *visits)
{
	if (!t)
		return NULL;
	(*visits)++;
	if (key < t->key) {
		t->l = remove(t->l, key, visits);
	} else if (key > t->key) {
		t->r = remove(t->r, key, visits);
	} else {
		struct s2_tnode *l = t->l, *r = t->r, *m;

		if (!r)
			return l;
		r = remove_min(r, &m, visits);
		m->l = l;
		m->r = r;
		return balance(m);
	}
	return balance(t);
}

void s2_tree_remove(struct s2_tnode **root, uint64_t key, uint64_t *visits)
{
	*root = remove(*root, key, visits);
}

struct s2_tnode *s2_tree_find(const struct s2_tnode *t, uint64_t key, uint64_t *visits)
{
	while (t) {
		(*visits)++;
		if (key == t->key)
			return (struct s2_tnode *)t;
		t = key < t->key ? t->l : t->r;
	}
	return NULL;
}

struct s2_tnode *s2_tree_floor(const struct s2_tnode *t, uint64_t key, uint64_t *visits)
{
	const struct s2_tnode *best = NULL;

	while (t) {
		(*visits)++;
		if (key == t->key)
			return (struct s2_tnode *)t;
		if (key < t->key) {
			t = t->l;
		} else {
			best = t;
			t = t->r;
		}
	}
	return (struct s2_tnode *)best;
}
