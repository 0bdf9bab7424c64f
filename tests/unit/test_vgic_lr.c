// SPDX-License-Identifier: GPL-2.0
// (GPL-2.0: it compiles slat.ko's linux/slat/slat_vgic_lr.h.)
//
// The list-register logic of slat.ko's in-kernel GICv3 and GICv2
// (linux/slat/slat_vgic_lr.h), hosted: which interrupts go into Slat's list
// registers and in which order, the form of each (state, priority, group,
// EOI for level-triggered ones, the HW form for the virtual timer), and what
// the guest's changes mean after the run (acknowledged, ended, an edge that
// arrived meanwhile); for GICv2 the SGIs' source vCPUs (one lr per source,
// one at a time), group 0, GICD_SGIR's targets and ITARGETSR's choice.
// Exact values throughout.
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
#define WITH_STATE(lr, st)                                                                         \
	(((lr) & ~(3ull << HC_VGIC_LR_STATE_SHIFT)) | (u64)(st) << HC_VGIC_LR_STATE_SHIFT)
#define PRIO(lr) ((unsigned)((lr) >> HC_VGIC_LR_PRIO_SHIFT) & 0xff)

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

// ---- GICv2 ----

// SGI 3 from vCPU 2: vINTID 3 | 2 << 10, group 0, pending; the source leaves
// the mask while the lr carries it.
static void v2_sgi_lr_names_its_source(void **state)
{
	struct vgic_irq sgi = {.edge = true, .enabled = true, .prio = 0xa0};
	bool latch;
	u32 vintid;
	u64 lr;

	(void)state;
	vgic_v2_sgi_raise(&sgi, 1u << 2);
	assert_true(sgi.latch);
	assert_true(vgic_irq_pending(&sgi));
	lr = vgic_v2_lr_load(&sgi, 3, &vintid, &latch);
	assert_int_equal(vintid, 3 | 2u << 10);
	assert_int_equal(lr, 3 | 2ull << 10 | 0xa0ull << HC_VGIC_LR_PRIO_SHIFT |
				 1ull << HC_VGIC_LR_STATE_SHIFT);
	assert_false(lr & HC_VGIC_LR_GROUP1);
	assert_true(latch);
	assert_int_equal(sgi.src, 0);
	assert_false(sgi.latch);
}

// Two sources pending: one lr at a time, the lowest source first, with EOI so
// that its deactivation exits; the other follows after it.
static void v2_two_sources_one_at_a_time(void **state)
{
	struct vgic_irq sgi = {.edge = true, .enabled = true, .prio = 0x80};
	bool latch;
	u32 vintid;
	u64 lr;

	(void)state;
	vgic_v2_sgi_raise(&sgi, 1u << 4);
	vgic_v2_sgi_raise(&sgi, 1u << 1);
	lr = vgic_v2_lr_load(&sgi, 5, &vintid, &latch);
	assert_int_equal(lr, 5 | 1ull << 10 | 0x80ull << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_EOI |
				 1ull << HC_VGIC_LR_STATE_SHIFT);
	assert_int_equal(sgi.src, 1u << 4); // the other still pending
	assert_true(sgi.latch);
	// The guest acknowledges it (GICC_IAR 5 | 1 << 10): active from vCPU 1.
	assert_true(vgic_v2_lr_sync(&sgi, vintid, WITH_STATE(lr, VGIC_LR_ACTIVE), latch));
	assert_true(sgi.active);
	assert_int_equal(sgi.act_src, 1);
	assert_int_equal(sgi.src, 1u << 4);
	// In service: its lr is the active one only, EOI still asked.
	lr = vgic_v2_lr_load(&sgi, 5, &vintid, &latch);
	assert_int_equal(lr, 5 | 1ull << 10 | 0x80ull << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_EOI |
				 2ull << HC_VGIC_LR_STATE_SHIFT);
	assert_false(latch);
	assert_true(vgic_v2_lr_sync(&sgi, vintid, WITH_STATE(lr, 0), latch)); // EOIR
	assert_false(sgi.active);
	// Then vCPU 4's, the last one: no EOI.
	lr = vgic_v2_lr_load(&sgi, 5, &vintid, &latch);
	assert_int_equal(vintid, 5 | 4u << 10);
	assert_int_equal(lr, 5 | 4ull << 10 | 0x80ull << HC_VGIC_LR_PRIO_SHIFT |
				 1ull << HC_VGIC_LR_STATE_SHIFT);
	assert_int_equal(sgi.src, 0);
	assert_false(sgi.latch);
}

// Not acknowledged: the lr comes back pending and its source with it.
static void v2_pending_lr_gives_back_its_source(void **state)
{
	struct vgic_irq sgi = {.edge = true, .enabled = true};
	bool latch;
	u32 vintid;
	u64 lr;

	(void)state;
	vgic_v2_sgi_raise(&sgi, 1u << 2);
	lr = vgic_v2_lr_load(&sgi, 3, &vintid, &latch);
	assert_int_equal(sgi.src, 0);
	assert_true(vgic_v2_lr_sync(&sgi, vintid, lr, latch));
	assert_int_equal(sgi.src, 1u << 2);
	assert_true(sgi.latch);
	assert_false(sgi.active);
}

// An lr naming the same SGI from another source is not this one's: nothing
// changes; the right one then gives back its own source only.
static void v2_other_source_leaves_it_alone(void **state)
{
	struct vgic_irq sgi = {.edge = true, .enabled = true};
	bool latch;
	u32 vintid;
	u64 lr;

	(void)state;
	vgic_v2_sgi_raise(&sgi, 1u << 1);
	lr = vgic_v2_lr_load(&sgi, 3, &vintid, &latch);
	vgic_v2_sgi_raise(&sgi, 1u << 2); // vCPU 2 sends it while the guest runs
	assert_false(vgic_v2_lr_sync(&sgi, 3 | 2u << 10, WITH_STATE(lr, VGIC_LR_ACTIVE), latch));
	assert_int_equal(sgi.src, 1u << 2);
	assert_false(sgi.active);
	assert_false(vgic_v2_lr_sync(&sgi, vintid, (lr & ~0x1c00ull) | 2u << 10, latch));
	assert_int_equal(sgi.src, 1u << 2);
	assert_true(vgic_v2_lr_sync(&sgi, vintid, lr, latch)); // still pending
	assert_int_equal(sgi.src, 1u << 1 | 1u << 2);
}

// Active from vCPU 1 and sent again by vCPU 1: one lr, pending and active.
static void v2_same_source_again_while_active(void **state)
{
	struct vgic_irq sgi = {.edge = true, .enabled = true, .active = true, .act_src = 1};
	bool latch;
	u32 vintid;
	u64 lr;

	(void)state;
	vgic_v2_sgi_raise(&sgi, 1u << 1);
	lr = vgic_v2_lr_load(&sgi, 0, &vintid, &latch);
	assert_int_equal(lr, 1ull << 10 | 3ull << HC_VGIC_LR_STATE_SHIFT);
	assert_true(latch);
	assert_int_equal(sgi.src, 0);
	// GICD_CPENDSGIR / SPENDSGIR keep the latch with the mask.
	vgic_v2_sgi_raise(&sgi, 0x81);
	assert_true(sgi.latch);
	vgic_v2_sgi_clear(&sgi, 0x81);
	assert_int_equal(sgi.src, 0);
	assert_false(sgi.latch);
}

// Not SGIs: the GICv3 forms in group 0, the vINTID the INTID.
static void v2_spi_and_timer_are_group0(void **state)
{
	struct vgic_irq spi = {.line = true, .prio = 0x80};
	struct vgic_irq timer = {.line = true, .active = true, .prio = 0x40};
	bool latch;
	u32 vintid;
	u64 lr;

	(void)state;
	lr = vgic_v2_lr_load(&spi, 48, &vintid, &latch);
	assert_int_equal(vintid, 48);
	assert_int_equal(lr, 48 | 0x80ull << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_EOI |
				 1ull << HC_VGIC_LR_STATE_SHIFT);
	assert_true(vgic_v2_lr_sync(&spi, vintid, WITH_STATE(lr, VGIC_LR_ACTIVE), latch));
	assert_true(spi.active);
	lr = vgic_v2_lr_load(&timer, 27, &vintid, &latch);
	assert_int_equal(lr, 27 | 0x40ull << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_HW |
				 27ull << HC_VGIC_LR_PINTID_SHIFT | 2ull << HC_VGIC_LR_STATE_SHIFT);
}

// GICD_SGIR's TargetListFilter over the vCPUs that exist (0-3 here).
static void v2_sgir_targets(void **state)
{
	(void)state;
	assert_int_equal(vgic_v2_sgir_targets(0u << 24 | 0x06u << 16 | 3, 0, 0x0f), 0x06);
	assert_int_equal(vgic_v2_sgir_targets(0u << 24 | 0xf2u << 16, 0, 0x0f), 0x02);
	assert_int_equal(vgic_v2_sgir_targets(1u << 24 | 0xffu << 16, 1, 0x0f), 0x0d);
	assert_int_equal(vgic_v2_sgir_targets(2u << 24, 3, 0x0f), 0x08);
	assert_int_equal(vgic_v2_sgir_targets(3u << 24 | 0xffu << 16, 0, 0x0f), 0);
	assert_int_equal(vgic_v2_vintid(15, 7), 15 | 7u << 10);
	assert_int_equal(vgic_v2_vintid(16, 7), 16); // a PPI has no source
}

// ITARGETSR: the lowest vCPU of the mask, none for 0 (KVM's choice).
static void v2_spi_goes_to_the_lowest_target(void **state)
{
	(void)state;
	assert_int_equal(vgic_v2_spi_cpu(0), -1);
	assert_int_equal(vgic_v2_spi_cpu(0x0c), 2);
	assert_int_equal(vgic_v2_spi_cpu(0x81), 0);
	assert_int_equal(vgic_v2_spi_cpu(0x80), 7);
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
	    cmocka_unit_test(v2_sgi_lr_names_its_source),
	    cmocka_unit_test(v2_two_sources_one_at_a_time),
	    cmocka_unit_test(v2_pending_lr_gives_back_its_source),
	    cmocka_unit_test(v2_other_source_leaves_it_alone),
	    cmocka_unit_test(v2_same_source_again_while_active),
	    cmocka_unit_test(v2_spi_and_timer_are_group0),
	    cmocka_unit_test(v2_sgir_targets),
	    cmocka_unit_test(v2_spi_goes_to_the_lowest_target),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
