// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's virtio-blk device (linux/vmm/vmm_virtio_blk.c, over the shared
// transport of vmm_virtio_mmio.c), compiled into
// this test with a fake guest memory and a disk image in a temporary file.
// The test drives the MMIO registers as Linux's virtio_mmio driver does and
// builds split-virtqueue requests in guest memory. Properties: reads and
// writes move exactly the sectors asked for, with the used ring, the
// interrupt status and the interrupt line as the virtio 1.1 spec says; a
// request past the end or a write to a read-only disk completes with IOERR
// and changes nothing; a guest that breaks the ring's rules (a descriptor
// outside its memory, a chain that loops, a queue outside its memory) gets
// DEVICE_NEEDS_RESET, no completion, and nothing more until it resets the
// device; FEATURES_OK is refused without VERSION_1. With RAM from 1 GiB (the
// arm64 layout) the same requests work at the same offsets into RAM, and a
// descriptor just below RAM is outside guest memory.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "linux/vmm/vmm_virtio_mmio.c"
#include "linux/vmm/vmm_virtio_blk.c"

// Where the architecture puts the device (x86's place and line, RAM from 0).
#define GPA_VIRTIO_BLK 0xd0000000ull
#define VIRTIO_BLK_GSI 16u

#define MEM_SIZE (1u << 20)
#define SECTORS	 64u
#define QNUM	 8u
#define DESC	 0x1000u // descriptor table
#define AVAIL	 0x2000u
#define USED	 0x3000u
#define HDR	 0x4000u // request headers, 16 bytes each
#define DATA	 0x8000u
#define STATUS	 0xf000u

struct vm vm;
static uint64_t ram_base;  // guest-physical address of vm.mem[0]: 0, or arm64's
static int irq_level = -1; // what set_irq_line said last
static unsigned irq_calls;
static char disk_path[64];

void set_irq_line(uint32_t line, bool level)
{
	assert_int_equal(line, VIRTIO_BLK_GSI);
	irq_level = level;
	irq_calls++;
}

void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	fail_msg("usage_error: %s", fmt);
	abort();
}

static uint8_t sector_byte(unsigned sector, unsigned i)
{
	return (uint8_t)(sector * 7 + i);
}

static uint32_t rd(uint32_t off)
{
	uint8_t b[4];

	assert_true(virtio_blk_mmio(GPA_VIRTIO_BLK + off, false, b, 4));
	return get32(b, 0);
}

static void wr(uint32_t off, uint32_t val)
{
	uint8_t b[4];

	put32(b, 0, val);
	assert_true(virtio_blk_mmio(GPA_VIRTIO_BLK + off, true, b, 4));
}

// ACKNOWLEDGE, DRIVER, features, FEATURES_OK, the queue, DRIVER_OK.
static void driver_init(uint64_t features)
{
	wr(VMMIO_STATUS, 0);
	wr(VMMIO_STATUS, 1 | 2);
	wr(VMMIO_DRV_FEATURES_SEL, 0);
	wr(VMMIO_DRV_FEATURES, (uint32_t)features);
	wr(VMMIO_DRV_FEATURES_SEL, 1);
	wr(VMMIO_DRV_FEATURES, (uint32_t)(features >> 32));
	wr(VMMIO_STATUS, 1 | 2 | STATUS_FEAT_OK);
	wr(VMMIO_QUEUE_SEL, 0);
	wr(VMMIO_QUEUE_NUM, QNUM);
	wr(VMMIO_QUEUE_DESC_LO, (uint32_t)(ram_base + DESC));
	wr(VMMIO_QUEUE_DESC_HI, (uint32_t)((ram_base + DESC) >> 32));
	wr(VMMIO_QUEUE_AVAIL_LO, (uint32_t)(ram_base + AVAIL));
	wr(VMMIO_QUEUE_AVAIL_HI, (uint32_t)((ram_base + AVAIL) >> 32));
	wr(VMMIO_QUEUE_USED_LO, (uint32_t)(ram_base + USED));
	wr(VMMIO_QUEUE_USED_HI, (uint32_t)((ram_base + USED) >> 32));
	wr(VMMIO_QUEUE_READY, 1);
	wr(VMMIO_STATUS, 1 | 2 | STATUS_FEAT_OK | 4);
}

// Descriptor I for the buffer at offset OFF into RAM (guest-physical
// ram_base + OFF, modulo 2^64: a "negative" OFF is below RAM).
static void put_desc(unsigned i, uint64_t off, uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *d = vm.mem + DESC + 16 * i;

	put64(d, 0, ram_base + off);
	put32(d, 8, len);
	put16(d, 12, flags);
	put16(d, 14, next);
}

static uint16_t avail_idx;

// A request of `type` at `sector` whose data is one buffer of `len` bytes,
// as descriptors 0 (header), 1 (data) and 2 (status); then QueueNotify.
static void submit(uint32_t type, uint64_t sector, uint32_t len)
{
	put32(vm.mem + HDR, 0, type);
	put32(vm.mem + HDR, 4, 0);
	put64(vm.mem + HDR, 8, sector);
	vm.mem[STATUS] = 0xff;
	put_desc(0, HDR, 16, DESC_F_NEXT, 1);
	put_desc(1, DATA, len, DESC_F_NEXT | (type == BLK_T_OUT ? 0 : DESC_F_WRITE), 2);
	put_desc(2, STATUS, 1, DESC_F_WRITE, 0);
	put16(vm.mem + AVAIL, 4 + 2 * (avail_idx % QNUM), 0);
	avail_idx++;
	put16(vm.mem + AVAIL, 2, avail_idx);
	wr(VMMIO_QUEUE_NOTIFY, 0);
}

static uint16_t used_idx(void)
{
	return get16(vm.mem + USED, 2);
}

static int setup(void **state, bool read_only)
{
	int fd;
	uint8_t buf[SECTOR];

	(void)state;
	vm.mem = calloc(1, MEM_SIZE);
	vm.mem_size = MEM_SIZE;
	vm.ram_base = ram_base;
	vm.virtio_base = GPA_VIRTIO_BLK;
	vm.virtio_irq = VIRTIO_BLK_GSI;
	vm.irq_kind = "GSI";
	snprintf(disk_path, sizeof(disk_path), "/tmp/slat-vblk-XXXXXX");
	fd = mkstemp(disk_path);
	assert_true(fd >= 0);
	for (unsigned s = 0; s < SECTORS; s++) {
		for (unsigned i = 0; i < SECTOR; i++)
			buf[i] = sector_byte(s, i);
		assert_int_equal(write(fd, buf, SECTOR), SECTOR);
	}
	close(fd);
	memset(&blk, 0, sizeof(blk));
	pthread_mutex_init(&blk.dev.lock, NULL);
	blk.fd = -1;
	virtio_blk_open(disk_path, read_only);
	irq_level = -1;
	irq_calls = 0;
	avail_idx = 0;
	driver_init(F_VERSION_1 | F_BLK_FLUSH);
	return 0;
}

// RAM from 1 GiB, as on arm64.
static int setup_high(void **state)
{
	ram_base = 0x40000000;
	return setup(state, false);
}

static int setup_rw(void **state)
{
	return setup(state, false);
}

static int setup_ro(void **state)
{
	return setup(state, true);
}

static int teardown(void **state)
{
	(void)state;
	ram_base = 0;
	close(blk.fd);
	blk.fd = -1;
	unlink(disk_path);
	free(vm.mem);
	return 0;
}

static void file_sector(unsigned s, uint8_t *buf)
{
	FILE *f = fopen(disk_path, "rb");

	assert_non_null(f);
	assert_int_equal(fseek(f, (long)s * SECTOR, SEEK_SET), 0);
	assert_int_equal(fread(buf, 1, SECTOR, f), SECTOR);
	fclose(f);
}

static void test_identity_and_features(void **state)
{
	(void)state;
	assert_int_equal(rd(VMMIO_MAGIC), VIRTIO_MAGIC);
	assert_int_equal(rd(VMMIO_VERSION), 2);
	assert_int_equal(rd(VMMIO_DEVICE_ID), VIRTIO_ID_BLOCK);
	assert_int_equal(rd(VMMIO_QUEUE_NUM_MAX), QUEUE_NUM_MAX);
	wr(VMMIO_DEV_FEATURES_SEL, 1);
	assert_int_equal(rd(VMMIO_DEV_FEATURES), 1); // VERSION_1
	uint8_t cap[8];
	assert_true(virtio_blk_mmio(GPA_VIRTIO_BLK + VMMIO_CONFIG, false, cap, 8));
	assert_int_equal(get64(cap, 0), SECTORS);
	assert_int_equal(rd(VMMIO_STATUS) & STATUS_FEAT_OK, STATUS_FEAT_OK);
	// Without VERSION_1 the device keeps FEATURES_OK clear.
	wr(VMMIO_STATUS, 0);
	wr(VMMIO_STATUS, 1 | 2);
	wr(VMMIO_DRV_FEATURES_SEL, 1);
	wr(VMMIO_DRV_FEATURES, 0);
	wr(VMMIO_STATUS, 1 | 2 | STATUS_FEAT_OK);
	assert_int_equal(rd(VMMIO_STATUS) & STATUS_FEAT_OK, 0);
	// Outside the device's 0x200 bytes: not its access.
	uint8_t b[4];
	assert_false(virtio_blk_mmio(GPA_VIRTIO_BLK + VIRTIO_MMIO_SIZE, false, b, 4));
}

static void test_read_two_sectors(void **state)
{
	(void)state;
	submit(BLK_T_IN, 3, 2 * SECTOR);
	assert_int_equal(vm.mem[STATUS], BLK_S_OK);
	assert_int_equal(used_idx(), 1);
	assert_int_equal(get32(vm.mem + USED, 4), 0);		   // the head
	assert_int_equal(get32(vm.mem + USED, 8), 2 * SECTOR + 1); // data + status
	for (unsigned i = 0; i < 2 * SECTOR; i++)
		assert_int_equal(vm.mem[DATA + i], sector_byte(3 + i / SECTOR, i % SECTOR));
	assert_int_equal(vm.mem[DATA + 2 * SECTOR], 0); // not one byte more
	assert_int_equal(rd(VMMIO_INT_STATUS), INT_USED_BUFFER);
	assert_int_equal(irq_level, 1);
	wr(VMMIO_INT_ACK, INT_USED_BUFFER);
	assert_int_equal(irq_level, 0);
	assert_int_equal(irq_calls, 2);
	assert_int_equal(blk.reads, 1);
}

static void test_write_one_sector(void **state)
{
	uint8_t got[SECTOR];

	(void)state;
	memset(vm.mem + DATA, 0xa5, SECTOR);
	submit(BLK_T_OUT, 5, SECTOR);
	assert_int_equal(vm.mem[STATUS], BLK_S_OK);
	assert_int_equal(get32(vm.mem + USED, 8), 1); // only the status written
	file_sector(5, got);
	for (unsigned i = 0; i < SECTOR; i++)
		assert_int_equal(got[i], 0xa5);
	file_sector(4, got); // the neighbours untouched
	assert_int_equal(got[SECTOR - 1], sector_byte(4, SECTOR - 1));
	file_sector(6, got);
	assert_int_equal(got[0], sector_byte(6, 0));
	submit(BLK_T_FLUSH, 0, 0);
	assert_int_equal(blk.flushes, 1);
}

static void test_past_the_end_is_ioerr(void **state)
{
	(void)state;
	memset(vm.mem + DATA, 0, 2 * SECTOR);
	submit(BLK_T_IN, SECTORS - 1, 2 * SECTOR);
	assert_int_equal(vm.mem[STATUS], BLK_S_IOERR);
	assert_int_equal(vm.mem[DATA], 0); // nothing read
	assert_int_equal(used_idx(), 1);   // completed, as a disk answers
	assert_int_equal(blk.dev.errors, 1);
	assert_int_equal(rd(VMMIO_STATUS) & STATUS_NEEDS_RST, 0);
}

static void test_read_only_refuses_writes(void **state)
{
	uint8_t got[SECTOR];

	(void)state;
	wr(VMMIO_DEV_FEATURES_SEL, 0);
	assert_int_equal(rd(VMMIO_DEV_FEATURES) & F_BLK_RO, F_BLK_RO);
	memset(vm.mem + DATA, 0x5a, SECTOR);
	submit(BLK_T_OUT, 2, SECTOR);
	assert_int_equal(vm.mem[STATUS], BLK_S_IOERR);
	file_sector(2, got);
	assert_int_equal(got[0], sector_byte(2, 0));
	submit(BLK_T_IN, 2, SECTOR);
	assert_int_equal(vm.mem[STATUS], BLK_S_OK);
}

// A broken ring: no completion, DEVICE_NEEDS_RESET and a config interrupt;
// later notifies do nothing until a reset and a new set-up.
static void expect_needs_reset(void)
{
	assert_int_equal(used_idx(), 0);
	assert_int_equal(vm.mem[STATUS], 0xff);
	assert_int_equal(rd(VMMIO_STATUS) & STATUS_NEEDS_RST, STATUS_NEEDS_RST);
	assert_int_equal(rd(VMMIO_INT_STATUS), INT_CONFIG_CHANGE);
	assert_int_equal(blk.dev.errors, 1);
	wr(VMMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(), 0);
	wr(VMMIO_STATUS, 0);
	assert_int_equal(rd(VMMIO_STATUS), 0);
	assert_int_equal(irq_level, 0);
	driver_init(F_VERSION_1);
	avail_idx = 0;
	put16(vm.mem + AVAIL, 2, 0);
	submit(BLK_T_IN, 0, SECTOR);
	assert_int_equal(vm.mem[STATUS], BLK_S_OK);
	assert_int_equal(used_idx(), 1);
}

// A read of sector 0 with data descriptor 1 as given (the broken part) and
// status descriptor 2; made available at head 0, then notified.
static void submit_broken(uint64_t addr, uint16_t flags, uint16_t next)
{
	put32(vm.mem + HDR, 0, BLK_T_IN);
	put64(vm.mem + HDR, 8, 0);
	vm.mem[STATUS] = 0xff;
	put_desc(0, HDR, 16, DESC_F_NEXT, 1);
	put_desc(1, addr, SECTOR, flags, next);
	put_desc(2, STATUS, 1, DESC_F_WRITE, 0);
	put16(vm.mem + AVAIL, 4, 0);
	put16(vm.mem + AVAIL, 2, ++avail_idx);
	wr(VMMIO_QUEUE_NOTIFY, 0);
}

static void test_descriptor_outside_memory(void **state)
{
	(void)state;
	submit_broken(MEM_SIZE - 256, DESC_F_NEXT | DESC_F_WRITE, 2); // runs off the end
	expect_needs_reset();
}

static void test_chain_that_loops(void **state)
{
	(void)state;
	submit_broken(DATA, DESC_F_NEXT | DESC_F_WRITE, 0); // back to the header
	expect_needs_reset();
}

static void test_descriptor_below_ram(void **state)
{
	(void)state;
	assert_int_equal(vm.ram_base, 0x40000000);
	submit_broken((uint64_t)0 - SECTOR, DESC_F_NEXT | DESC_F_WRITE, 2); // ends at the base
	expect_needs_reset();
}

static void test_queue_outside_memory(void **state)
{
	(void)state;
	wr(VMMIO_STATUS, 0);
	wr(VMMIO_STATUS, 1 | 2);
	wr(VMMIO_QUEUE_NUM, QNUM);
	wr(VMMIO_QUEUE_DESC_LO, 0);
	wr(VMMIO_QUEUE_DESC_HI, 1); // 4 GiB: no memory there
	wr(VMMIO_QUEUE_READY, 1);
	assert_int_equal(rd(VMMIO_QUEUE_READY), 0);
	vm.mem[STATUS] = 0xff;
	expect_needs_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_identity_and_features, setup_rw, teardown),
	    cmocka_unit_test_setup_teardown(test_read_two_sectors, setup_rw, teardown),
	    cmocka_unit_test_setup_teardown(test_write_one_sector, setup_rw, teardown),
	    cmocka_unit_test_setup_teardown(test_past_the_end_is_ioerr, setup_rw, teardown),
	    cmocka_unit_test_setup_teardown(test_read_only_refuses_writes, setup_ro, teardown),
	    cmocka_unit_test_setup_teardown(test_descriptor_outside_memory, setup_rw, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_that_loops, setup_rw, teardown),
	    cmocka_unit_test_setup_teardown(test_queue_outside_memory, setup_rw, teardown),
	    cmocka_unit_test_setup_teardown(test_read_two_sectors, setup_high, teardown),
	    cmocka_unit_test_setup_teardown(test_write_one_sector, setup_high, teardown),
	    cmocka_unit_test_setup_teardown(test_descriptor_below_ram, setup_high, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
