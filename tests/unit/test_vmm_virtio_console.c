// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's virtio console (linux/vmm/vmm_virtio_console.c, over the shared
// transport of vmm_virtio_mmio.c), compiled into this test with a fake guest
// memory; its output goes to a memory stream instead of stdout, and stdin's
// bytes are handed to virtio_console_input() as the reader thread does. The
// test drives the MMIO registers as Linux's virtio_mmio driver does and
// posts split-virtqueue buffers. Properties: the device is a console with
// VERSION_1 only and two queues; the bytes of the transmitq's buffers reach
// the output exactly and in order; stdin's bytes fill the posted receive
// buffers exactly, in order, across a chain's descriptors, with the used
// length the bytes written and the used-buffer interrupt raised; with no
// buffer posted (or before DRIVER_OK) the bytes are kept and delivered once
// a buffer is posted; a broken chain (outside guest memory, looping, the
// wrong direction) gets DEVICE_NEEDS_RESET and no completion, and input kept
// meanwhile is delivered after the driver's reset.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "linux/vmm/vmm_virtio_mmio.c"
#include "linux/vmm/vmm_virtio_console.c"

// Where x86 puts the console (RAM from 0).
#define CON_BASE 0xd0000200ull
#define CON_GSI	 17u

#define MEM_SIZE (1u << 20)
#define QNUM	 8u
#define RXQ	 0x1000u // receiveq: descriptors, avail ring +0x1000, used +0x2000
#define TXQ	 0x4000u // transmitq, the same
#define AVAIL	 0x1000u
#define USED	 0x2000u
#define BUF	 0x8000u // buffers, 0x100 apart

struct vm vm;
static int irq_level = -1; // what set_irq_line said last
static char *out_buf;
static size_t out_len;
static uint16_t avail_idx[2];

void set_irq_line(uint32_t line, bool level)
{
	assert_int_equal(line, CON_GSI);
	irq_level = level;
}

static uint32_t rd(uint32_t off)
{
	uint8_t b[4];

	assert_true(virtio_console_mmio(CON_BASE + off, false, b, 4));
	return get32(b, 0);
}

static void wr(uint32_t off, uint32_t val)
{
	uint8_t b[4];

	put32(b, 0, val);
	assert_true(virtio_console_mmio(CON_BASE + off, true, b, 4));
}

static uint32_t qbase(unsigned q)
{
	return q == CON_RECEIVEQ ? RXQ : TXQ;
}

static void queue_init(unsigned q)
{
	uint32_t b = qbase(q);

	wr(VMMIO_QUEUE_SEL, q);
	assert_int_equal(rd(VMMIO_QUEUE_NUM_MAX), QUEUE_NUM_MAX);
	wr(VMMIO_QUEUE_NUM, QNUM);
	wr(VMMIO_QUEUE_DESC_LO, b);
	wr(VMMIO_QUEUE_DESC_HI, 0);
	wr(VMMIO_QUEUE_AVAIL_LO, b + AVAIL);
	wr(VMMIO_QUEUE_AVAIL_HI, 0);
	wr(VMMIO_QUEUE_USED_LO, b + USED);
	wr(VMMIO_QUEUE_USED_HI, 0);
	wr(VMMIO_QUEUE_READY, 1);
	assert_int_equal(rd(VMMIO_QUEUE_READY), 1);
}

// Reset, ACKNOWLEDGE, DRIVER, VERSION_1, FEATURES_OK, both queues; DRIVER_OK
// when DRIVER_OK is true.
static void driver_init(bool driver_ok)
{
	wr(VMMIO_STATUS, 0);
	memset(vm.mem, 0, MEM_SIZE);
	avail_idx[0] = avail_idx[1] = 0;
	wr(VMMIO_STATUS, 1 | 2);
	wr(VMMIO_DRV_FEATURES_SEL, 0);
	wr(VMMIO_DRV_FEATURES, 0);
	wr(VMMIO_DRV_FEATURES_SEL, 1);
	wr(VMMIO_DRV_FEATURES, (uint32_t)(F_VERSION_1 >> 32));
	wr(VMMIO_STATUS, 1 | 2 | STATUS_FEAT_OK);
	assert_int_equal(rd(VMMIO_STATUS) & STATUS_FEAT_OK, STATUS_FEAT_OK);
	queue_init(CON_RECEIVEQ);
	queue_init(CON_TRANSMITQ);
	if (driver_ok)
		wr(VMMIO_STATUS, 1 | 2 | STATUS_FEAT_OK | STATUS_DRIVER_OK);
}

// Descriptor I of queue Q: the buffer at guest address ADDR.
static void put_desc(unsigned q, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	uint8_t *d = vm.mem + qbase(q) + 16 * i;

	put64(d, 0, addr);
	put32(d, 8, len);
	put16(d, 12, flags);
	put16(d, 14, next);
}

// Makes the chain at HEAD available on queue Q (no notify).
static void make_avail(unsigned q, uint16_t head)
{
	uint8_t *avail = vm.mem + qbase(q) + AVAIL;

	put16(avail, 4 + 2 * (avail_idx[q] % QNUM), head);
	put16(avail, 2, ++avail_idx[q]);
}

static uint16_t used_idx(unsigned q)
{
	return get16(vm.mem + qbase(q) + USED, 2);
}

// Used entry N of queue Q: its head and length.
static void expect_used(unsigned q, unsigned n, uint32_t head, uint32_t len)
{
	const uint8_t *e = vm.mem + qbase(q) + USED + 4 + 8 * (n % QNUM);

	assert_int_equal(get32(e, 0), head);
	assert_int_equal(get32(e, 4), len);
}

static void input(const char *s)
{
	virtio_console_input((const uint8_t *)s, strlen(s));
}

static int setup(void **state)
{
	(void)state;
	vm.mem = calloc(1, MEM_SIZE);
	vm.mem_size = MEM_SIZE;
	vm.ram_base = 0;
	vm.console_base = CON_BASE;
	vm.console_irq = CON_GSI;
	vm.irq_kind = "GSI";
	memset(&con, 0, sizeof(con));
	pthread_mutex_init(&con.dev.lock, NULL);
	pthread_cond_init(&con.space, NULL);
	out_buf = NULL;
	out_len = 0;
	con.out = open_memstream(&out_buf, &out_len);
	assert_non_null(con.out);
	virtio_console_init();
	irq_level = -1;
	driver_init(true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fclose(con.out);
	free(out_buf);
	free(vm.mem);
	return 0;
}

static void test_identity_and_features(void **state)
{
	(void)state;
	assert_int_equal(rd(VMMIO_MAGIC), VIRTIO_MAGIC);
	assert_int_equal(rd(VMMIO_VERSION), 2);
	assert_int_equal(rd(VMMIO_DEVICE_ID), 3);
	wr(VMMIO_DEV_FEATURES_SEL, 0);
	assert_int_equal(rd(VMMIO_DEV_FEATURES), 0); // no SIZE, MULTIPORT, EMERG_WRITE
	wr(VMMIO_DEV_FEATURES_SEL, 1);
	assert_int_equal(rd(VMMIO_DEV_FEATURES), 1); // VERSION_1
	wr(VMMIO_QUEUE_SEL, 2);
	assert_int_equal(rd(VMMIO_QUEUE_NUM_MAX), 0); // two queues only
	// MULTIPORT (bit 1) was not offered: FEATURES_OK is refused.
	wr(VMMIO_STATUS, 0);
	wr(VMMIO_STATUS, 1 | 2);
	wr(VMMIO_DRV_FEATURES_SEL, 0);
	wr(VMMIO_DRV_FEATURES, 1u << 1);
	wr(VMMIO_DRV_FEATURES_SEL, 1);
	wr(VMMIO_DRV_FEATURES, 1);
	wr(VMMIO_STATUS, 1 | 2 | STATUS_FEAT_OK);
	assert_int_equal(rd(VMMIO_STATUS) & STATUS_FEAT_OK, 0);
	uint8_t b[4];
	assert_false(virtio_console_mmio(CON_BASE + VIRTIO_MMIO_SIZE, false, b, 4));
}

// Two buffers on the transmitq, the first a chain of two descriptors: their
// bytes, and only those, in order.
static void test_transmit_exact(void **state)
{
	(void)state;
	memcpy(vm.mem + BUF, "hello, XXXX", 11);
	memcpy(vm.mem + BUF + 0x100, "world\nYYYY", 10);
	memcpy(vm.mem + BUF + 0x200,
	       "\x01\x00\xff"
	       "bye",
	       6);
	put_desc(CON_TRANSMITQ, 0, BUF, 7, DESC_F_NEXT, 1);
	put_desc(CON_TRANSMITQ, 1, BUF + 0x100, 6, 0, 0);
	put_desc(CON_TRANSMITQ, 2, BUF + 0x200, 6, 0, 0);
	make_avail(CON_TRANSMITQ, 0);
	make_avail(CON_TRANSMITQ, 2);
	wr(VMMIO_QUEUE_NOTIFY, CON_TRANSMITQ);
	assert_int_equal(out_len, 19);
	assert_memory_equal(out_buf,
			    "hello, world\n\x01\x00\xff"
			    "bye",
			    19);
	assert_int_equal(used_idx(CON_TRANSMITQ), 2);
	expect_used(CON_TRANSMITQ, 0, 0, 0);
	expect_used(CON_TRANSMITQ, 1, 2, 0);
	assert_int_equal(rd(VMMIO_INT_STATUS), INT_USED_BUFFER);
	assert_int_equal(irq_level, 1);
	wr(VMMIO_INT_ACK, INT_USED_BUFFER);
	assert_int_equal(irq_level, 0);
	assert_int_equal(used_idx(CON_RECEIVEQ), 0);
	// A notify with nothing new sends nothing more.
	wr(VMMIO_QUEUE_NOTIFY, CON_TRANSMITQ);
	assert_int_equal(out_len, 19);
	assert_int_equal(con.tx_bytes, 19);
}

// 13 bytes into an 8-byte buffer and a chain of 4 + 4: 8, then 4 + 1.
static void test_receive_exact(void **state)
{
	(void)state;
	memset(vm.mem + BUF, '.', 0x300);
	put_desc(CON_RECEIVEQ, 0, BUF, 8, DESC_F_WRITE, 0);
	put_desc(CON_RECEIVEQ, 1, BUF + 0x100, 4, DESC_F_WRITE | DESC_F_NEXT, 2);
	put_desc(CON_RECEIVEQ, 2, BUF + 0x200, 4, DESC_F_WRITE, 0);
	make_avail(CON_RECEIVEQ, 0);
	make_avail(CON_RECEIVEQ, 1);
	wr(VMMIO_QUEUE_NOTIFY, CON_RECEIVEQ);
	assert_int_equal(used_idx(CON_RECEIVEQ), 0); // nothing to give yet
	assert_int_equal(irq_level, -1);
	input("abcdefghijklm");
	assert_int_equal(used_idx(CON_RECEIVEQ), 2);
	expect_used(CON_RECEIVEQ, 0, 0, 8);
	expect_used(CON_RECEIVEQ, 1, 1, 5);
	assert_memory_equal(vm.mem + BUF, "abcdefgh.", 9);
	assert_memory_equal(vm.mem + BUF + 0x100, "ijkl.", 5);
	assert_memory_equal(vm.mem + BUF + 0x200, "m...", 4);
	assert_int_equal(rd(VMMIO_INT_STATUS), INT_USED_BUFFER);
	assert_int_equal(irq_level, 1);
	assert_int_equal(con.rx_bytes, 13);
	assert_int_equal(con.len, 0);
	assert_int_equal(used_idx(CON_TRANSMITQ), 0);
	assert_int_equal(out_len, 0); // nothing echoed by the device
}

// No buffer posted: the bytes wait, no interrupt; each buffer posted later
// takes the next of them.
static void test_input_waits_for_buffers(void **state)
{
	(void)state;
	input("xyz");
	input("w");
	assert_int_equal(used_idx(CON_RECEIVEQ), 0);
	assert_int_equal(irq_level, -1);
	assert_int_equal(con.len, 4);
	put_desc(CON_RECEIVEQ, 0, BUF, 2, DESC_F_WRITE, 0);
	make_avail(CON_RECEIVEQ, 0);
	wr(VMMIO_QUEUE_NOTIFY, CON_RECEIVEQ);
	assert_int_equal(used_idx(CON_RECEIVEQ), 1);
	expect_used(CON_RECEIVEQ, 0, 0, 2);
	assert_memory_equal(vm.mem + BUF, "xy", 2);
	assert_int_equal(irq_level, 1);
	wr(VMMIO_INT_ACK, INT_USED_BUFFER);
	assert_int_equal(irq_level, 0);
	put_desc(CON_RECEIVEQ, 1, BUF + 0x100, 16, DESC_F_WRITE, 0);
	make_avail(CON_RECEIVEQ, 1);
	wr(VMMIO_QUEUE_NOTIFY, CON_RECEIVEQ);
	assert_int_equal(used_idx(CON_RECEIVEQ), 2);
	expect_used(CON_RECEIVEQ, 1, 1, 2);
	assert_memory_equal(vm.mem + BUF + 0x100, "zw", 2);
	assert_int_equal(irq_level, 1);
	assert_int_equal(con.len, 0);
}

// Buffers posted before DRIVER_OK: the input waits for DRIVER_OK.
static void test_input_waits_for_driver_ok(void **state)
{
	(void)state;
	driver_init(false);
	put_desc(CON_RECEIVEQ, 0, BUF, 8, DESC_F_WRITE, 0);
	make_avail(CON_RECEIVEQ, 0);
	wr(VMMIO_QUEUE_NOTIFY, CON_RECEIVEQ);
	input("ok");
	assert_int_equal(used_idx(CON_RECEIVEQ), 0);
	wr(VMMIO_STATUS, 1 | 2 | STATUS_FEAT_OK | STATUS_DRIVER_OK);
	assert_int_equal(used_idx(CON_RECEIVEQ), 1);
	expect_used(CON_RECEIVEQ, 0, 0, 2);
	assert_memory_equal(vm.mem + BUF, "ok", 2);
	assert_int_equal(irq_level, 1);
}

// DEVICE_NEEDS_RESET with a configuration-change interrupt, no completion,
// nothing more from either queue until the driver resets the device; the
// input kept meanwhile arrives once it has.
static void expect_needs_reset(unsigned q, const char *kept)
{
	assert_int_equal(used_idx(q), 0);
	assert_int_equal(rd(VMMIO_STATUS) & STATUS_NEEDS_RST, STATUS_NEEDS_RST);
	assert_int_equal(rd(VMMIO_INT_STATUS), INT_CONFIG_CHANGE);
	assert_int_equal(irq_level, 1);
	assert_int_equal(con.dev.errors, 1);
	assert_int_equal(out_len, 0);
	wr(VMMIO_QUEUE_NOTIFY, q);
	input("!");
	assert_int_equal(used_idx(q), 0);
	assert_int_equal(out_len, 0);
	driver_init(true);
	assert_int_equal(irq_level, 0);
	put_desc(CON_RECEIVEQ, 0, BUF, 16, DESC_F_WRITE, 0);
	make_avail(CON_RECEIVEQ, 0);
	wr(VMMIO_QUEUE_NOTIFY, CON_RECEIVEQ);
	assert_int_equal(used_idx(CON_RECEIVEQ), 1);
	expect_used(CON_RECEIVEQ, 0, 0, (uint32_t)strlen(kept) + 1);
	assert_memory_equal(vm.mem + BUF, kept, strlen(kept));
	assert_int_equal(vm.mem[BUF + strlen(kept)], '!');
}

static void test_receive_outside_memory(void **state)
{
	(void)state;
	put_desc(CON_RECEIVEQ, 0, MEM_SIZE - 4, 8, DESC_F_WRITE, 0); // runs off the end
	make_avail(CON_RECEIVEQ, 0);
	input("abc");
	expect_needs_reset(CON_RECEIVEQ, "abc");
}

static void test_receive_readable_buffer(void **state)
{
	(void)state;
	put_desc(CON_RECEIVEQ, 0, BUF, 8, 0, 0); // the device cannot write it
	make_avail(CON_RECEIVEQ, 0);
	input("abc");
	assert_int_equal(vm.mem[BUF], 0);
	expect_needs_reset(CON_RECEIVEQ, "abc");
}

static void test_transmit_chain_that_loops(void **state)
{
	(void)state;
	memcpy(vm.mem + BUF, "loop", 4);
	put_desc(CON_TRANSMITQ, 0, BUF, 4, DESC_F_NEXT, 1);
	put_desc(CON_TRANSMITQ, 1, BUF, 4, DESC_F_NEXT, 0);
	make_avail(CON_TRANSMITQ, 0);
	wr(VMMIO_QUEUE_NOTIFY, CON_TRANSMITQ);
	expect_needs_reset(CON_TRANSMITQ, "");
}

static void test_transmit_writable_buffer(void **state)
{
	(void)state;
	memcpy(vm.mem + BUF, "oops", 4);
	put_desc(CON_TRANSMITQ, 0, BUF, 4, DESC_F_WRITE, 0);
	make_avail(CON_TRANSMITQ, 0);
	wr(VMMIO_QUEUE_NOTIFY, CON_TRANSMITQ);
	expect_needs_reset(CON_TRANSMITQ, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_identity_and_features, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transmit_exact, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_receive_exact, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_input_waits_for_buffers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_input_waits_for_driver_ok, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_receive_outside_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_receive_readable_buffer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transmit_chain_that_loops, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transmit_writable_buffer, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
