// SPDX-License-Identifier: Apache-2.0
//
// A virtio block device over virtio-mmio (the virtio 1.x register layout,
// version 2; one split virtqueue), serving a disk image file as the guest's
// /dev/vda. Facts from the OASIS virtio 1.1 specification: 4.2 (MMIO
// transport), 2.6 (split virtqueues) and 5.2 (block device).
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

#include "vmm.h"

// MMIO registers (offsets from vm.virtio_base).
#define VMMIO_MAGIC	       0x000
#define VMMIO_VERSION	       0x004
#define VMMIO_DEVICE_ID	       0x008
#define VMMIO_VENDOR_ID	       0x00c
#define VMMIO_DEV_FEATURES     0x010
#define VMMIO_DEV_FEATURES_SEL 0x014
#define VMMIO_DRV_FEATURES     0x020
#define VMMIO_DRV_FEATURES_SEL 0x024
#define VMMIO_QUEUE_SEL	       0x030
#define VMMIO_QUEUE_NUM_MAX    0x034
#define VMMIO_QUEUE_NUM	       0x038
#define VMMIO_QUEUE_READY      0x044
#define VMMIO_QUEUE_NOTIFY     0x050
#define VMMIO_INT_STATUS       0x060
#define VMMIO_INT_ACK	       0x064
#define VMMIO_STATUS	       0x070
#define VMMIO_QUEUE_DESC_LO    0x080
#define VMMIO_QUEUE_DESC_HI    0x084
#define VMMIO_QUEUE_AVAIL_LO   0x090
#define VMMIO_QUEUE_AVAIL_HI   0x094
#define VMMIO_QUEUE_USED_LO    0x0a0
#define VMMIO_QUEUE_USED_HI    0x0a4
#define VMMIO_CONFIG_GEN       0x0fc
#define VMMIO_CONFIG	       0x100

#define VIRTIO_MAGIC	     0x74726976u // "virt"
#define VIRTIO_VENDOR	     0x54414c53u // "SLAT"
#define VIRTIO_ID_BLOCK	     2
#define QUEUE_NUM_MAX	     128
#define BLK_SEG_MAX	     (QUEUE_NUM_MAX - 2) // a header and a status descriptor
#define STATUS_FEAT_OK	     0x08
#define STATUS_NEEDS_RST     0x40
#define INT_USED_BUFFER	     0x1
#define INT_CONFIG_CHANGE    0x2
#define F_BLK_SEG_MAX	     (1ull << 2)
#define F_BLK_RO	     (1ull << 5)
#define F_BLK_FLUSH	     (1ull << 9)
#define F_VERSION_1	     (1ull << 32)
#define DESC_F_NEXT	     1
#define DESC_F_WRITE	     2
#define AVAIL_F_NO_INTERRUPT 1

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

struct vq {
	uint32_t num;
	bool ready;
	uint64_t desc, avail, used; // guest-physical addresses
	uint16_t last_avail;	    // the next avail ring entry to take
	uint16_t used_idx;	    // the device's copy of used->idx
};

struct vblk {
	pthread_mutex_t lock;
	const char *path;
	int fd;
	bool ro;
	uint64_t sectors;
	uint32_t dev_features_sel, drv_features_sel;
	uint64_t drv_features;
	uint32_t status, queue_sel, isr;
	bool irq_level;
	struct vq q;
	uint8_t config[CFG_BYTES];
	unsigned long reads, writes, flushes, ids, errors;
	uint64_t read_bytes, write_bytes;
};

static struct vblk blk = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

// One descriptor as the guest wrote it.
struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

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
	fprintf(stderr,
		"slat-vmm: disk %s: %llu sectors (%llu KiB)%s, virtio-mmio at 0x%llx, %s %u\n",
		path, (unsigned long long)blk.sectors, (unsigned long long)(blk.sectors / 2),
		read_only ? ", read-only" : "", (unsigned long long)vm.virtio_base, vm.irq_kind,
		vm.virtio_irq);
}

static uint64_t device_features(void)
{
	return F_VERSION_1 | F_BLK_SEG_MAX | F_BLK_FLUSH | (blk.ro ? F_BLK_RO : 0);
}

// Guest memory [addr, addr + len), or NULL when any of it is not RAM.
static uint8_t *guest_range(uint64_t addr, uint64_t len)
{
	if (addr < vm.ram_base || addr - vm.ram_base > vm.mem_size ||
	    len > vm.mem_size - (addr - vm.ram_base))
		return NULL;
	return vm.mem + (addr - vm.ram_base);
}

static void update_irq(void)
{
	bool level = blk.isr != 0;

	if (level != blk.irq_level) {
		blk.irq_level = level;
		set_irq_line(vm.virtio_irq, level);
	}
}

static void reset_device(void)
{
	blk.status = 0;
	blk.drv_features = 0;
	blk.dev_features_sel = blk.drv_features_sel = blk.queue_sel = 0;
	blk.q = (struct vq){0};
	blk.isr = 0;
	update_irq();
}

// The guest broke a rule of the ring: say what, once, and stop the queue.
static void __attribute__((format(printf, 1, 2))) needs_reset(const char *fmt, ...)
{
	va_list ap;

	blk.errors++;
	if (!(blk.status & STATUS_NEEDS_RST)) {
		fputs("slat-vmm: virtio-blk: guest error: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputs("; device needs reset\n", stderr);
	}
	blk.status |= STATUS_NEEDS_RST;
	blk.q.ready = false;
	blk.isr |= INT_CONFIG_CHANGE; // how a device tells the driver its status changed
	update_irq();
}

static bool read_desc(uint16_t i, struct desc *d)
{
	const uint8_t *p = guest_range(blk.q.desc + 16ull * i, 16);

	if (!p)
		return false;
	d->addr = get64(p, 0);
	d->len = get32(p, 8);
	d->flags = get16(p, 12);
	d->next = get16(p, 14);
	return true;
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

// Walks the chain at HEAD into R; false (after needs_reset()) when it is
// malformed: the header first (device-readable, 16 bytes), the data, then a
// one-byte device-writable status.
static bool parse_chain(uint16_t head, struct request *r)
{
	struct desc d;
	uint16_t i = head;
	const uint8_t *h;

	r->ndata = 0;
	for (unsigned n = 0;; n++) {
		if (n >= blk.q.num || i >= blk.q.num || !read_desc(i, &d)) {
			needs_reset("descriptor chain at %u loops or leaves the table", head);
			return false;
		}
		if (!guest_range(d.addr, d.len)) {
			needs_reset("descriptor %u points outside guest memory (0x%llx + 0x%x)", i,
				    (unsigned long long)d.addr, d.len);
			return false;
		}
		if (n == 0) {
			if (d.len < 16 || (d.flags & DESC_F_WRITE)) {
				needs_reset("request %u: no 16-byte readable header", head);
				return false;
			}
			h = guest_range(d.addr, 16);
			r->type = get32(h, 0);
			r->sector = get64(h, 8);
		} else if (!(d.flags & DESC_F_NEXT)) {
			if (d.len < 1 || !(d.flags & DESC_F_WRITE)) {
				needs_reset("request %u: no writable status byte", head);
				return false;
			}
			r->status = guest_range(d.addr, 1);
			return true;
		} else {
			r->data[r->ndata++] = d;
		}
		if (!(d.flags & DESC_F_NEXT)) {
			needs_reset("request %u: no status descriptor", head);
			return false;
		}
		i = d.next;
	}
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
	static struct request r; // under blk.lock
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
		blk.errors++;
	*r.status = st;
	return true;
}

// Takes every request the guest made available, completes each in the used
// ring (the ring's index published after its entry), then interrupts.
static void process_queue(void)
{
	struct vq *q = &blk.q;
	uint8_t *avail = guest_range(q->avail, 6 + 2ull * q->num);
	uint8_t *used = guest_range(q->used, 6 + 8ull * q->num);
	uint16_t avail_idx;
	bool any = false;

	if (!q->ready || (blk.status & STATUS_NEEDS_RST))
		return;
	avail_idx = __atomic_load_n((uint16_t *)(avail + 2), __ATOMIC_ACQUIRE);
	if ((uint16_t)(avail_idx - q->last_avail) > q->num) {
		needs_reset("avail index %u is %u entries ahead of the device", avail_idx,
			    (uint16_t)(avail_idx - q->last_avail));
		return;
	}
	while (q->last_avail != avail_idx) {
		uint16_t head = get16(avail, 4 + 2u * (q->last_avail % q->num));
		uint32_t written = 0;
		uint8_t *e = used + 4 + 8u * (q->used_idx % q->num);

		if (!do_request(head, &written))
			return;
		put32(e, 0, head);
		put32(e, 4, written);
		q->used_idx++;
		__atomic_store_n((uint16_t *)(used + 2), q->used_idx, __ATOMIC_RELEASE);
		q->last_avail++;
		any = true;
	}
	if (any && !(get16(avail, 0) & AVAIL_F_NO_INTERRUPT)) {
		blk.isr |= INT_USED_BUFFER;
		update_irq();
	}
}

// QueueReady = 1: the rings must lie in guest memory.
static void queue_ready(uint32_t val)
{
	struct vq *q = &blk.q;

	if (!val) {
		q->ready = false;
		return;
	}
	if (!q->num || !guest_range(q->desc, 16ull * q->num) ||
	    !guest_range(q->avail, 6 + 2ull * q->num) || !guest_range(q->used, 6 + 8ull * q->num)) {
		needs_reset("queue of %u entries placed outside guest memory", q->num);
		return;
	}
	q->ready = true;
}

// Status: FEATURES_OK stays set only for features the device offered,
// VERSION_1 among them.
static void status_write(uint32_t val)
{
	if (!val) {
		reset_device();
		return;
	}
	if ((val & STATUS_FEAT_OK) && !(blk.status & STATUS_FEAT_OK) &&
	    ((blk.drv_features & ~device_features()) || !(blk.drv_features & F_VERSION_1)))
		val &= ~(uint32_t)STATUS_FEAT_OK;
	blk.status = val | (blk.status & STATUS_NEEDS_RST);
}

static uint32_t reg_read(uint32_t off)
{
	switch (off) {
	case VMMIO_MAGIC:
		return VIRTIO_MAGIC;
	case VMMIO_VERSION:
		return 2;
	case VMMIO_DEVICE_ID:
		return VIRTIO_ID_BLOCK;
	case VMMIO_VENDOR_ID:
		return VIRTIO_VENDOR;
	case VMMIO_DEV_FEATURES:
		return blk.dev_features_sel > 1
			   ? 0
			   : (uint32_t)(device_features() >> (32 * blk.dev_features_sel));
	case VMMIO_QUEUE_NUM_MAX:
		return blk.queue_sel == 0 ? QUEUE_NUM_MAX : 0;
	case VMMIO_QUEUE_READY:
		return blk.queue_sel == 0 && blk.q.ready;
	case VMMIO_INT_STATUS:
		return blk.isr;
	case VMMIO_STATUS:
		return blk.status;
	default:
		return 0; // write-only registers and the gaps; CONFIG_GEN stays 0
	}
}

static void set_half(uint64_t *a, bool high, uint32_t val)
{
	*a = high ? (*a & 0xffffffffull) | (uint64_t)val << 32 : (*a & ~0xffffffffull) | val;
}

static void reg_write(uint32_t off, uint32_t val)
{
	struct vq *q = &blk.q;
	bool q0 = blk.queue_sel == 0;

	switch (off) {
	case VMMIO_DEV_FEATURES_SEL:
		blk.dev_features_sel = val;
		break;
	case VMMIO_DRV_FEATURES:
		if (blk.drv_features_sel <= 1)
			set_half(&blk.drv_features, blk.drv_features_sel, val);
		break;
	case VMMIO_DRV_FEATURES_SEL:
		blk.drv_features_sel = val;
		break;
	case VMMIO_QUEUE_SEL:
		blk.queue_sel = val;
		break;
	case VMMIO_QUEUE_NUM:
		if (q0 && !q->ready)
			q->num = val && val <= QUEUE_NUM_MAX && !(val & (val - 1)) ? val : 0;
		break;
	case VMMIO_QUEUE_READY:
		if (q0)
			queue_ready(val);
		break;
	case VMMIO_QUEUE_NOTIFY:
		if (val == 0)
			process_queue();
		break;
	case VMMIO_INT_ACK:
		blk.isr &= ~val;
		update_irq();
		break;
	case VMMIO_STATUS:
		status_write(val);
		break;
	case VMMIO_QUEUE_DESC_LO:
	case VMMIO_QUEUE_DESC_HI:
		if (q0 && !q->ready)
			set_half(&q->desc, off == VMMIO_QUEUE_DESC_HI, val);
		break;
	case VMMIO_QUEUE_AVAIL_LO:
	case VMMIO_QUEUE_AVAIL_HI:
		if (q0 && !q->ready)
			set_half(&q->avail, off == VMMIO_QUEUE_AVAIL_HI, val);
		break;
	case VMMIO_QUEUE_USED_LO:
	case VMMIO_QUEUE_USED_HI:
		if (q0 && !q->ready)
			set_half(&q->used, off == VMMIO_QUEUE_USED_HI, val);
		break;
	default:
		break; // read-only registers
	}
}

bool virtio_blk_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size)
{
	uint64_t off = addr - vm.virtio_base;

	if (blk.fd < 0 || addr < vm.virtio_base || off >= VIRTIO_MMIO_SIZE)
		return false;
	pthread_mutex_lock(&blk.lock);
	if (off >= VMMIO_CONFIG) { // any width; writes ignored (no writable fields)
		off -= VMMIO_CONFIG;
		if (!write)
			for (unsigned i = 0; i < size; i++)
				data[i] = off + i < CFG_BYTES ? blk.config[off + i] : 0;
	} else if (size != 4 || (off & 3)) {
		if (!write)
			memset(data, 0, size); // registers are 32-bit wide only
	} else if (write) {
		reg_write((uint32_t)off, get32(data, 0));
	} else {
		put32(data, 0, reg_read((uint32_t)off));
	}
	pthread_mutex_unlock(&blk.lock);
	return true;
}

void virtio_blk_summary(void)
{
	if (blk.fd < 0)
		return;
	fprintf(stderr,
		"slat-vmm: disk %s: %lu reads (%llu KiB), %lu writes (%llu KiB), %lu flushes, %lu "
		"errors\n",
		blk.path, blk.reads, (unsigned long long)(blk.read_bytes >> 10), blk.writes,
		(unsigned long long)(blk.write_bytes >> 10), blk.flushes, blk.errors);
}
