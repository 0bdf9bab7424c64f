// SPDX-License-Identifier: GPL-2.0
// (GPL-2.0: it compiles slat.ko's linux/slat/slat_vgic_lr.h.)
//
// The list-register logic of slat.ko's in-kernel GICv3
// (linux/slat/slat_vgic_lr.h), hosted: which interrupts go into Slat's list
// registers and in which order, the form of each (state, priority, group,
// EOI for level-triggered ones, the HW form for the virtual timer), and what
// the guest's changes mean after the run (acknowledged, ended, an edge that
// arrived meanwhile). Exact values throughout.
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/hcall_abi.h"

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#include "linux/slat/slat_vgic_lr.h"

#define STATE(lr) ((unsigned)((lr) >> HC_VGIC_LR_STATE_SHIFT))
#define PRIO(lr)  ((unsigned)((lr) >> HC_VGIC_LR_PRIO_SHIFT) & 0xff)

static void pending_follows_latch_or_level(void **state)
{
	struct vgic_irq edge = {.edge = true, .line = true};
	struct vgic_irq level = {.line = true};

	(void)state;
	assert_false(vgic_irq_pending(&edge)); // an edge input's level means nothing
	edge.latch = true;
	assert_true(vgic_irq_pending(&edge));
	assert_true(vgic_irq_pending(&level));
	level.line = false;
	assert_false(vgic_irq_pending(&level));
	level.latch = true; // ISPENDR on a level interrupt
	assert_true(vgic_irq_pending(&level));
}

// Six candidates for four list registers: the active one first, then by
// priority, INTID breaking ties; the two left out set *more.
static void picks_active_first_then_priority(void **state)
{
	struct vgic_irq irq[6] = {
	    {.prio = 0xa0, .latch = true},  {.prio = 0x20, .latch = true},
	    {.prio = 0xf0, .active = true}, {.prio = 0x20, .latch = true},
	    {.prio = 0x80, .latch = true},  {.prio = 0xc0, .latch = true},
	};
	const u32 intid[6] = {40, 33, 27, 3, 48, 50};
	struct vgic_pick picks[4];
	unsigned n = 0;
	bool more = false;

	(void)state;
	for (unsigned i = 0; i < 6; i++)
		vgic_pick(picks, &n, 4, (struct vgic_pick){&irq[i], intid[i]}, &more);
	assert_int_equal(n, 4);
	assert_true(more);
	assert_int_equal(picks[0].intid, 27); // active, though of the lowest priority
	assert_int_equal(picks[1].intid, 3);  // 0x20, the lower INTID
	assert_int_equal(picks[2].intid, 33); // 0x20
	assert_int_equal(picks[3].intid, 48); // 0x80; 40 (0xa0) and 50 (0xc0) wait
}

static void picks_all_when_they_fit(void **state)
{
	struct vgic_irq a = {.prio = 0x80, .latch = true}, b = {.prio = 0x10, .latch = true};
	struct vgic_pick picks[4];
	unsigned n = 0;
	bool more = false;

	(void)state;
	vgic_pick(picks, &n, 4, (struct vgic_pick){&a, 40}, &more);
	vgic_pick(picks, &n, 4, (struct vgic_pick){&b, 41}, &more);
	assert_int_equal(n, 2);
	assert_false(more);
	assert_int_equal(picks[0].intid, 41);
	// No list registers known yet (before Slat's first answer): nothing, more.
	n = 0;
	vgic_pick(picks, &n, 0, (struct vgic_pick){&a, 40}, &more);
	assert_int_equal(n, 0);
	assert_true(more);
}

static void lr_forms(void **state)
{
	struct vgic_irq sgi = {.edge = true, .latch = true, .prio = 0xa0};
	struct vgic_irq spi = {.line = true, .prio = 0x80};
	struct vgic_irq timer = {.line = true, .active = true, .prio = 0x40};
	u64 lr;

	(void)state;
	lr = vgic_lr_value(&sgi, 5);
	assert_int_equal(lr & HC_VGIC_LR_VINTID_MASK, 5);
	assert_int_equal(STATE(lr), VGIC_LR_PENDING);
	assert_int_equal(PRIO(lr), 0xa0);
	assert_true(lr & HC_VGIC_LR_GROUP1);
	assert_false(lr & (HC_VGIC_LR_EOI | HC_VGIC_LR_HW)); // an edge needs no resampling
	lr = vgic_lr_value(&spi, 48);
	assert_int_equal(lr, 48 | 0x80ull << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_GROUP1 |
				 HC_VGIC_LR_EOI | 1ull << HC_VGIC_LR_STATE_SHIFT);
	spi.active = true; // still high while in service: pending and active
	assert_int_equal(STATE(vgic_lr_value(&spi, 48)), VGIC_LR_PENDING | VGIC_LR_ACTIVE);
	// The timer: the HW form naming physical PPI 27, active or pending, never both.
	lr = vgic_lr_value(&timer, 27);
	assert_int_equal(lr, 27 | 0x40ull << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_GROUP1 |
				 HC_VGIC_LR_HW | 27ull << HC_VGIC_LR_PINTID_SHIFT |
				 2ull << HC_VGIC_LR_STATE_SHIFT);
	timer.active = false;
	assert_int_equal(STATE(vgic_lr_value(&timer, 27)), VGIC_LR_PENDING);
	// PPI 27 made edge-triggered by the guest is an ordinary interrupt.
	timer.edge = true;
	timer.latch = true;
	assert_false(vgic_lr_value(&timer, 27) & HC_VGIC_LR_HW);
}

// An edge into an lr, the guest acknowledges it, then ends it.
static void sync_ack_then_end(void **state)
{
	struct vgic_irq sgi = {.edge = true, .latch = true, .enabled = true};
	bool latch;
	u64 lr;

	(void)state;
	lr = vgic_lr_load(&sgi, 5, &latch);
	assert_true(latch);
	assert_false(sgi.latch); // the lr carries it now
	lr = (lr & ~(3ull << HC_VGIC_LR_STATE_SHIFT)) | 2ull << HC_VGIC_LR_STATE_SHIFT;
	assert_true(vgic_lr_sync(&sgi, 5, lr, latch)); // acknowledged: active
	assert_true(sgi.active);
	assert_false(sgi.latch);
	lr = vgic_lr_load(&sgi, 5, &latch);
	assert_int_equal(STATE(lr), VGIC_LR_ACTIVE);
	assert_true(vgic_lr_sync(&sgi, 5, lr & ~(3ull << HC_VGIC_LR_STATE_SHIFT), latch));
	assert_false(sgi.active); // deactivated
	assert_false(vgic_irq_pending(&sgi));
}

// Not acknowledged: the latch comes back. A second edge during the run is
// kept even when the first was taken.
static void sync_keeps_latches(void **state)
{
	struct vgic_irq sgi = {.edge = true, .latch = true};
	bool latch;
	u64 lr;

	(void)state;
	lr = vgic_lr_load(&sgi, 5, &latch);
	assert_true(vgic_lr_sync(&sgi, 5, lr, latch)); // still pending
	assert_true(sgi.latch);
	lr = vgic_lr_load(&sgi, 5, &latch);
	sgi.latch = true; // another SGI while the vCPU runs
	lr = (lr & ~(3ull << HC_VGIC_LR_STATE_SHIFT)) | 2ull << HC_VGIC_LR_STATE_SHIFT;
	assert_true(vgic_lr_sync(&sgi, 5, lr, latch));
	assert_true(sgi.active);
	assert_true(sgi.latch); // the new one: pending and active next time
	assert_int_equal(STATE(vgic_lr_value(&sgi, 5)), VGIC_LR_PENDING | VGIC_LR_ACTIVE);
}

// A level interrupt: its pending state is the line's, not a latch.
static void sync_level_follows_the_line(void **state)
{
	struct vgic_irq spi = {.line = true};
	bool latch;
	u64 lr;

	(void)state;
	lr = vgic_lr_load(&spi, 48, &latch);
	assert_false(latch);
	spi.line = false; // the device dropped it while the guest ran
	assert_true(vgic_lr_sync(&spi, 48, lr, latch));
	assert_false(vgic_irq_pending(&spi));
	assert_false(spi.active);
}

static void sync_ignores_another_intid(void **state)
{
	struct vgic_irq spi = {.line = true, .active = true};
	bool latch;
	u64 lr;

	(void)state;
	lr = vgic_lr_load(&spi, 48, &latch);
	assert_false(vgic_lr_sync(&spi, 48, (lr & ~HC_VGIC_LR_VINTID_MASK) | 49, latch));
	assert_true(spi.active); // unchanged
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(pending_follows_latch_or_level),
	    cmocka_unit_test(picks_active_first_then_priority),
	    cmocka_unit_test(picks_all_when_they_fit),
	    cmocka_unit_test(lr_forms),
	    cmocka_unit_test(sync_ack_then_end),
	    cmocka_unit_test(sync_keeps_latches),
	    cmocka_unit_test(sync_level_follows_the_line),
	    cmocka_unit_test(sync_ignores_another_intid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
