// SPDX-License-Identifier: Apache-2.0
//
// The virtio-mmio transport slat-vmm's virtio devices share (vmm_virtio.h):
// the register file, split virtqueues, chain walking and DEVICE_NEEDS_RESET.
// Facts from the OASIS virtio 1.1 specification, 4.2 and 2.6.
//
// Invariants: a queue is ready only with its three rings in guest memory
// (checked at QueueReady), and every descriptor a device is given lies in
// guest memory (virtq_chain()); once DEVICE_NEEDS_RESET is set no queue is
// ready and nothing more is taken from the rings until the driver resets the
// device (Status = 0).
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vmm_virtio.h"

uint8_t *guest_range(uint64_t addr, uint64_t len)
{
	if (addr < vm.ram_base || addr - vm.ram_base > vm.mem_size ||
	    len > vm.mem_size - (addr - vm.ram_base))
		return NULL;
	return vm.mem + (addr - vm.ram_base);
}

static void update_irq(struct virtio_dev *d)
{
	bool level = d->isr != 0;

	if (level != d->irq_level) {
		d->irq_level = level;
		set_irq_line(d->irq, level);
	}
}

static void reset_device(struct virtio_dev *d)
{
	d->status = 0;
	d->drv_features = 0;
	d->dev_features_sel = d->drv_features_sel = d->queue_sel = 0;
	for (unsigned i = 0; i < VIRTIO_QUEUES_MAX; i++)
		d->q[i] = (struct vq){0};
	d->isr = 0;
	update_irq(d);
}

void virtio_needs_reset(struct virtio_dev *d, const char *fmt, ...)
{
	va_list ap;

	d->errors++;
	if (!(d->status & STATUS_NEEDS_RST)) {
		fprintf(stderr, "slat-vmm: %s: guest error: ", d->name);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputs("; device needs reset\n", stderr);
	}
	d->status |= STATUS_NEEDS_RST;
	for (unsigned i = 0; i < VIRTIO_QUEUES_MAX; i++)
		d->q[i].ready = false;
	d->isr |= INT_CONFIG_CHANGE; // how a device tells the driver its status changed
	update_irq(d);
}

static uint8_t *avail_ring(const struct vq *q)
{
	return guest_range(q->avail, 6 + 2ull * q->num);
}

static uint8_t *used_ring(const struct vq *q)
{
	return guest_range(q->used, 6 + 8ull * q->num);
}

bool virtq_pop(struct virtio_dev *d, struct vq *q, uint16_t *head)
{
	uint8_t *avail;
	uint16_t avail_idx;

	if (!q->ready || (d->status & STATUS_NEEDS_RST))
		return false;
	avail = avail_ring(q); // in memory: checked at QueueReady
	avail_idx = __atomic_load_n((uint16_t *)(avail + 2), __ATOMIC_ACQUIRE);
	if ((uint16_t)(avail_idx - q->last_avail) > q->num) {
		virtio_needs_reset(d, "avail index %u is %u entries ahead of the device", avail_idx,
				   (uint16_t)(avail_idx - q->last_avail));
		return false;
	}
	if (q->last_avail == avail_idx)
		return false;
	*head = get16(avail, 4 + 2u * (q->last_avail % q->num));
	q->last_avail++;
	return true;
}

static bool read_desc(const struct vq *q, uint16_t i, struct desc *out)
{
	const uint8_t *p = guest_range(q->desc + 16ull * i, 16);

	if (!p)
		return false;
	out->addr = get64(p, 0);
	out->len = get32(p, 8);
	out->flags = get16(p, 12);
	out->next = get16(p, 14);
	return true;
}

unsigned virtq_chain(struct virtio_dev *d, struct vq *q, uint16_t head, struct desc *out)
{
	uint16_t i = head;

	for (unsigned n = 0;; n++) {
		// A chain visits each of the num descriptors at most once.
		if (n >= q->num || i >= q->num || !read_desc(q, i, &out[n])) {
			virtio_needs_reset(d, "descriptor chain at %u loops or leaves the table",
					   head);
			return 0;
		}
		if (!guest_range(out[n].addr, out[n].len)) {
			virtio_needs_reset(
			    d, "descriptor %u points outside guest memory (0x%llx + 0x%x)", i,
			    (unsigned long long)out[n].addr, out[n].len);
			return 0;
		}
		if (!(out[n].flags & DESC_F_NEXT))
			return n + 1;
		i = out[n].next;
	}
}

void virtq_push(struct vq *q, uint16_t head, uint32_t len)
{
	uint8_t *used = used_ring(q);
	uint8_t *e = used + 4 + 8u * (q->used_idx % q->num);

	put32(e, 0, head);
	put32(e, 4, len);
	q->used_idx++;
	// The entry is visible before the index that publishes it.
	__atomic_store_n((uint16_t *)(used + 2), q->used_idx, __ATOMIC_RELEASE);
}

void virtq_interrupt(struct virtio_dev *d, struct vq *q)
{
	if (get16(avail_ring(q), 0) & AVAIL_F_NO_INTERRUPT)
		return;
	d->isr |= INT_USED_BUFFER;
	update_irq(d);
}

// QueueReady = 1: the rings must lie in guest memory.
static void queue_ready(struct virtio_dev *d, struct vq *q, uint32_t val)
{
	if (!val) {
		q->ready = false;
		return;
	}
	if (!q->num || !guest_range(q->desc, 16ull * q->num) || !avail_ring(q) || !used_ring(q)) {
		virtio_needs_reset(d, "queue of %u entries placed outside guest memory", q->num);
		return;
	}
	q->ready = true;
}

// Status: FEATURES_OK stays set only for features the device offered,
// VERSION_1 among them.
static void status_write(struct virtio_dev *d, uint32_t val)
{
	uint32_t old = d->status;

	if (!val) {
		reset_device(d);
		return;
	}
	if ((val & STATUS_FEAT_OK) && !(d->status & STATUS_FEAT_OK) &&
	    ((d->drv_features & ~d->features) || !(d->drv_features & F_VERSION_1)))
		val &= ~(uint32_t)STATUS_FEAT_OK;
	d->status = val | (d->status & STATUS_NEEDS_RST);
	if ((d->status & STATUS_DRIVER_OK) && !(old & STATUS_DRIVER_OK) && d->driver_ok)
		d->driver_ok(d);
}

static struct vq *selected_queue(struct virtio_dev *d)
{
	return d->queue_sel < d->nqueues ? &d->q[d->queue_sel] : NULL;
}

static uint32_t reg_read(struct virtio_dev *d, uint32_t off)
{
	struct vq *q = selected_queue(d);

	switch (off) {
	case VMMIO_MAGIC:
		return VIRTIO_MAGIC;
	case VMMIO_VERSION:
		return 2;
	case VMMIO_DEVICE_ID:
		return d->device_id;
	case VMMIO_VENDOR_ID:
		return VIRTIO_VENDOR;
	case VMMIO_DEV_FEATURES:
		return d->dev_features_sel > 1
			   ? 0
			   : (uint32_t)(d->features >> (32 * d->dev_features_sel));
	case VMMIO_QUEUE_NUM_MAX:
		return q ? QUEUE_NUM_MAX : 0;
	case VMMIO_QUEUE_READY:
		return q && q->ready;
	case VMMIO_INT_STATUS:
		return d->isr;
	case VMMIO_STATUS:
		return d->status;
	default:
		return 0; // write-only registers and the gaps; CONFIG_GEN stays 0
	}
}

static void set_half(uint64_t *a, bool high, uint32_t val)
{
	*a = high ? (*a & 0xffffffffull) | (uint64_t)val << 32 : (*a & ~0xffffffffull) | val;
}

// The selected queue's size and ring addresses, writable while it is not
// ready.
static void queue_reg_write(struct vq *q, uint32_t off, uint32_t val)
{
	if (!q || q->ready)
		return;
	switch (off) {
	case VMMIO_QUEUE_NUM:
		q->num = val && val <= QUEUE_NUM_MAX && !(val & (val - 1)) ? val : 0;
		break;
	case VMMIO_QUEUE_DESC_LO:
	case VMMIO_QUEUE_DESC_HI:
		set_half(&q->desc, off == VMMIO_QUEUE_DESC_HI, val);
		break;
	case VMMIO_QUEUE_AVAIL_LO:
	case VMMIO_QUEUE_AVAIL_HI:
		set_half(&q->avail, off == VMMIO_QUEUE_AVAIL_HI, val);
		break;
	case VMMIO_QUEUE_USED_LO:
	case VMMIO_QUEUE_USED_HI:
		set_half(&q->used, off == VMMIO_QUEUE_USED_HI, val);
		break;
	default:
		break;
	}
}

static void reg_write(struct virtio_dev *d, uint32_t off, uint32_t val)
{
	switch (off) {
	case VMMIO_DEV_FEATURES_SEL:
		d->dev_features_sel = val;
		break;
	case VMMIO_DRV_FEATURES:
		if (d->drv_features_sel <= 1)
			set_half(&d->drv_features, d->drv_features_sel, val);
		break;
	case VMMIO_DRV_FEATURES_SEL:
		d->drv_features_sel = val;
		break;
	case VMMIO_QUEUE_SEL:
		d->queue_sel = val;
		break;
	case VMMIO_QUEUE_READY:
		if (selected_queue(d))
			queue_ready(d, selected_queue(d), val);
		break;
	case VMMIO_QUEUE_NOTIFY:
		if (val < d->nqueues && !(d->status & STATUS_NEEDS_RST))
			d->notify(d, val);
		break;
	case VMMIO_INT_ACK:
		d->isr &= ~val;
		update_irq(d);
		break;
	case VMMIO_STATUS:
		status_write(d, val);
		break;
	default:
		queue_reg_write(selected_queue(d), off, val); // others are read-only
		break;
	}
}

bool virtio_mmio_access(struct virtio_dev *d, uint64_t addr, bool write, uint8_t *data,
			unsigned size)
{
	uint64_t off = addr - d->base;

	if (!d->present || addr < d->base || off >= VIRTIO_MMIO_SIZE)
		return false;
	pthread_mutex_lock(&d->lock);
	if (off >= VMMIO_CONFIG) { // any width; writes ignored (no writable fields)
		off -= VMMIO_CONFIG;
		if (!write)
			for (unsigned i = 0; i < size; i++)
				data[i] = off + i < d->config_len ? d->config[off + i] : 0;
	} else if (size != 4 || (off & 3)) {
		if (!write)
			memset(data, 0, size); // registers are 32-bit wide only
	} else if (write) {
		reg_write(d, (uint32_t)off, get32(data, 0));
	} else {
		put32(data, 0, reg_read(d, (uint32_t)off));
	}
	pthread_mutex_unlock(&d->lock);
	return true;
}
