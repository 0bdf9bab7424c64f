// SPDX-License-Identifier: Apache-2.0
//
// A virtio block device over virtio-mmio (the virtio 1.x register layout,
// version 2; one split virtqueue), serving a disk image file as the guest's
// /dev/vda. The transport, the rings and the guest-memory checks are
// vmm_virtio_mmio.c's; this file is the block device of the OASIS virtio 1.1
// specification, 5.2.
//
// Features offered: VERSION_1, SEG_MAX, FLUSH, and RO for --disk FILE,ro.
// Requests: IN, OUT, FLUSH (fdatasync), GET_ID (the file's name); anything
// else completes with UNSUPP. Requests run to completion in the vCPU thread
// that wrote QueueNotify, under the device's lock; completion raises its
// interrupt line (level) until the guest acknowledges it through InterruptACK.
//
// A guest that breaks the ring's rules (a descriptor outside its memory, a
// chain that loops or lacks its header or status, a queue placed outside its
// memory) gets DEVICE_NEEDS_RESET in the status register and one message on
// stderr; the device then ignores the queue until the guest resets it. The
// VMM and the other vCPUs keep running. A request that is well formed but
// reaches past the end of the disk, or writes a read-only one, ends with
// IOERR, as a disk would answer.
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm_virtio.h"

#define VIRTIO_ID_BLOCK 2
#define BLK_SEG_MAX	(QUEUE_NUM_MAX - 2) // a header and a status descriptor
#define F_BLK_SEG_MAX	(1ull << 2)
#define F_BLK_RO	(1ull << 5)
#define F_BLK_FLUSH	(1ull << 9)

#define BLK_T_IN     0
#define BLK_T_OUT    1
#define BLK_T_FLUSH  4
#define BLK_T_GET_ID 8
#define BLK_S_OK     0
#define BLK_S_IOERR  1
#define BLK_S_UNSUPP 2
#define BLK_ID_BYTES 20
#define SECTOR	     512ull

// The block device's configuration space: capacity (u64, sectors), size_max
// (u32, not offered), seg_max (u32).
#define CFG_CAPACITY 0
#define CFG_SEG_MAX  12
#define CFG_BYTES    16

struct vblk {
	struct virtio_dev dev;
	const char *path;
	int fd;
	bool ro;
	uint64_t sectors;
	uint8_t config[CFG_BYTES];
	unsigned long reads, writes, flushes, ids;
	uint64_t read_bytes, write_bytes;
};

static void blk_notify(struct virtio_dev *d, unsigned q);

static struct vblk blk = {
    .dev = {.lock = PTHREAD_MUTEX_INITIALIZER, .name = "virtio-blk"},
    .fd = -1,
};

// The device's identity, features and place (vm.virtio_base, vm.virtio_irq).
static void blk_dev_init(void)
{
	struct virtio_dev *d = &blk.dev;

	d->name = "virtio-blk";
	d->device_id = VIRTIO_ID_BLOCK;
	d->features = F_VERSION_1 | F_BLK_SEG_MAX | F_BLK_FLUSH | (blk.ro ? F_BLK_RO : 0);
	d->base = vm.virtio_base;
	d->irq = vm.virtio_irq;
	d->nqueues = 1;
	d->config = blk.config;
	d->config_len = CFG_BYTES;
	d->notify = blk_notify;
	d->present = true;
}

void virtio_blk_open(const char *path, bool read_only)
{
	struct stat st;

	blk.fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (blk.fd < 0)
		usage_error("--disk %s: %s", path, strerror(errno));
	if (fstat(blk.fd, &st) < 0 || !S_ISREG(st.st_mode))
		usage_error("--disk %s: not a regular file", path);
	if ((uint64_t)st.st_size < SECTOR)
		usage_error("--disk %s: %lld bytes, less than one 512-byte sector", path,
			    (long long)st.st_size);
	// Two VMs writing one image would corrupt it: one writer or many readers.
	if (flock(blk.fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0)
		usage_error("--disk %s: in use by another VM (%s)", path, strerror(errno));
	blk.path = path;
	blk.ro = read_only;
	blk.sectors = (uint64_t)st.st_size / SECTOR;
	put64(blk.config, CFG_CAPACITY, blk.sectors);
	put32(blk.config, CFG_SEG_MAX, BLK_SEG_MAX);
	blk_dev_init();
	fprintf(stderr,
		"slat-vmm: disk %s: %llu sectors (%llu KiB)%s, virtio-mmio at 0x%llx, %s %u\n",
		path, (unsigned long long)blk.sectors, (unsigned long long)(blk.sectors / 2),
		read_only ? ", read-only" : "", (unsigned long long)vm.virtio_base, vm.irq_kind,
		vm.virtio_irq);
}

// Full transfers of LEN bytes at byte offset OFF of the image.
static bool disk_io(bool write, uint8_t *buf, uint64_t len, uint64_t off)
{
	while (len) {
		ssize_t n = write ? pwrite(blk.fd, buf, len, (off_t)off)
				  : pread(blk.fd, buf, len, (off_t)off);

		if (n <= 0)
			return false;
		buf += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return true;
}

struct request {
	uint32_t type;
	uint64_t sector;
	struct desc data[QUEUE_NUM_MAX];
	unsigned ndata;
	uint8_t *status;
};

// The chain at HEAD as a request in R; false (after virtio_needs_reset())
// when it is malformed: the header first (device-readable, 16 bytes), the
// data, then a one-byte device-writable status.
static bool parse_chain(uint16_t head, struct request *r)
{
	static struct desc chain[QUEUE_NUM_MAX]; // under the device's lock
	unsigned n = virtq_chain(&blk.dev, &blk.dev.q[0], head, chain);
	const struct desc *last;
	const uint8_t *h;

	if (!n)
		return false;
	last = &chain[n - 1];
	if (chain[0].len < 16 || (chain[0].flags & DESC_F_WRITE)) {
		virtio_needs_reset(&blk.dev, "request %u: no 16-byte readable header", head);
		return false;
	}
	if (n < 2) {
		virtio_needs_reset(&blk.dev, "request %u: no status descriptor", head);
		return false;
	}
	if (last->len < 1 || !(last->flags & DESC_F_WRITE)) {
		virtio_needs_reset(&blk.dev, "request %u: no writable status byte", head);
		return false;
	}
	h = guest_range(chain[0].addr, 16);
	r->type = get32(h, 0);
	r->sector = get64(h, 8);
	r->ndata = n - 2;
	memcpy(r->data, chain + 1, r->ndata * sizeof(*chain));
	r->status = guest_range(last->addr, 1);
	return true;
}

// Reads or writes the data descriptors; their direction must match.
static uint8_t rw_request(const struct request *r, uint32_t *written)
{
	bool write = r->type == BLK_T_OUT;
	uint64_t off = r->sector * SECTOR, total = 0;

	for (unsigned k = 0; k < r->ndata; k++) {
		if (!!(r->data[k].flags & DESC_F_WRITE) == write)
			return BLK_S_IOERR; // a read into a read-only buffer, or the reverse
		total += r->data[k].len;
	}
	if (r->sector > blk.sectors || total > (blk.sectors - r->sector) * SECTOR || total % SECTOR)
		return BLK_S_IOERR;
	if (write && blk.ro)
		return BLK_S_IOERR;
	for (unsigned k = 0; k < r->ndata; k++) {
		const struct desc *d = &r->data[k];

		if (!disk_io(write, guest_range(d->addr, d->len), d->len, off))
			return BLK_S_IOERR;
		off += d->len;
	}
	if (write) {
		blk.writes++;
		blk.write_bytes += total;
	} else {
		blk.reads++;
		blk.read_bytes += total;
		*written += (uint32_t)total;
	}
	return BLK_S_OK;
}

static uint8_t id_request(const struct request *r, uint32_t *written)
{
	char id[BLK_ID_BYTES] = {0};
	const char *base = strrchr(blk.path, '/');

	if (r->ndata != 1 || !(r->data[0].flags & DESC_F_WRITE))
		return BLK_S_IOERR;
	const char *name = base ? base + 1 : blk.path;
	uint32_t n;

	memcpy(id, name, strnlen(name, sizeof(id))); // no NUL when 20 long, as the spec allows
	n = r->data[0].len < BLK_ID_BYTES ? r->data[0].len : BLK_ID_BYTES;
	memcpy(guest_range(r->data[0].addr, n), id, n);
	*written += n;
	blk.ids++;
	return BLK_S_OK;
}

// One request; false when the chain was malformed (nothing to complete).
static bool do_request(uint16_t head, uint32_t *written)
{
	static struct request r; // under the device's lock
	uint8_t st;

	if (!parse_chain(head, &r))
		return false;
	*written = 1; // the status byte
	switch (r.type) {
	case BLK_T_IN:
	case BLK_T_OUT:
		st = rw_request(&r, written);
		break;
	case BLK_T_FLUSH:
		st = fdatasync(blk.fd) == 0 || blk.ro ? BLK_S_OK : BLK_S_IOERR;
		blk.flushes++;
		break;
	case BLK_T_GET_ID:
		st = id_request(&r, written);
		break;
	default:
		st = BLK_S_UNSUPP;
		break;
	}
	if (st == BLK_S_IOERR)
		blk.dev.errors++;
	*r.status = st;
	return true;
}

// Takes every request the guest made available on queue 0, completes each
// in the used ring, then interrupts. Under the device's lock.
static void blk_notify(struct virtio_dev *d, unsigned qi)
{
	struct vq *q = &d->q[qi];
	uint16_t head;
	bool any = false;

	while (virtq_pop(d, q, &head)) {
		uint32_t written = 0;

		if (!do_request(head, &written))
			return; // the device needs a reset: no completion
		virtq_push(q, head, written);
		any = true;
	}
	if (any)
		virtq_interrupt(d, q);
}

bool virtio_blk_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size)
{
	return virtio_mmio_access(&blk.dev, addr, write, data, size);
}

void virtio_blk_summary(void)
{
	if (blk.fd < 0)
		return;
	fprintf(stderr,
		"slat-vmm: disk %s: %lu reads (%llu KiB), %lu writes (%llu KiB), %lu flushes, %lu "
		"errors\n",
		blk.path, blk.reads, (unsigned long long)(blk.read_bytes >> 10), blk.writes,
		(unsigned long long)(blk.write_bytes >> 10), blk.flushes, blk.dev.errors);
}
