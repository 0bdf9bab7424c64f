// SPDX-License-Identifier: Apache-2.0
//
// What slat-vmm's virtio devices share (vmm_virtio_mmio.c): the virtio-mmio
// register file (virtio 1.x layout, version 2), split virtqueues, descriptor
// chain walking with its guest-memory bounds checks, DEVICE_NEEDS_RESET for a
// guest that breaks a ring's rules, and the level interrupt line. Facts from
// the OASIS virtio 1.1 specification: 4.2 (MMIO transport), 2.6 (split
// virtqueues). A device (vmm_virtio_blk.c, vmm_virtio_console.c) embeds a
// struct virtio_dev and handles its queues' notifications.
//
// Locking: every field is under the device's lock, which
// virtio_mmio_access() takes around the device's notify() and kick(); a
// device's own entry points (e.g. console input) take it themselves.
#ifndef SLAT_VMM_VIRTIO_H
#define SLAT_VMM_VIRTIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vmm.h"

// MMIO registers (offsets from the device's base).
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
#define QUEUE_NUM_MAX	     128
#define VIRTIO_QUEUES_MAX    2
#define STATUS_DRIVER_OK     0x04
#define STATUS_FEAT_OK	     0x08
#define STATUS_NEEDS_RST     0x40
#define INT_USED_BUFFER	     0x1
#define INT_CONFIG_CHANGE    0x2
#define F_VERSION_1	     (1ull << 32)
#define DESC_F_NEXT	     1
#define DESC_F_WRITE	     2
#define AVAIL_F_NO_INTERRUPT 1

struct vq {
	uint32_t num;
	bool ready;
	uint64_t desc, avail, used; // guest-physical addresses
	uint16_t last_avail;	    // the next avail ring entry to take
	uint16_t used_idx;	    // the device's copy of used->idx
};

// One descriptor as the guest wrote it.
struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

struct virtio_dev {
	pthread_mutex_t lock;
	const char *name; // in messages: "virtio-blk", "virtio-console"
	uint32_t device_id;
	uint64_t features; // offered
	uint64_t base;	   // guest-physical address of the registers
	uint32_t irq;	   // the line set_irq_line() takes
	unsigned nqueues;  // 1..VIRTIO_QUEUES_MAX
	const uint8_t *config;
	uint32_t config_len;
	// QueueNotify for queue Q (< nqueues), under the lock.
	void (*notify)(struct virtio_dev *d, unsigned q);
	// The driver set DRIVER_OK (optional), under the lock.
	void (*driver_ok)(struct virtio_dev *d);
	bool present;
	uint32_t dev_features_sel, drv_features_sel;
	uint64_t drv_features;
	uint32_t status, queue_sel, isr;
	bool irq_level;
	struct vq q[VIRTIO_QUEUES_MAX];
	unsigned long errors; // guest errors (DEVICE_NEEDS_RESET) and the device's own
};

// Guest memory [addr, addr + len), or NULL when any of it is not RAM.
uint8_t *guest_range(uint64_t addr, uint64_t len);

// An access to D's registers; false when ADDR is not D's (or D is absent).
bool virtio_mmio_access(struct virtio_dev *d, uint64_t addr, bool write, uint8_t *data,
			unsigned size);

// The guest broke a rule of a ring: say what (once), stop the queues, set
// DEVICE_NEEDS_RESET and raise the configuration-change interrupt.
void __attribute__((format(printf, 2, 3)))
virtio_needs_reset(struct virtio_dev *d, const char *fmt, ...);

// The next head the driver made available on Q; false when there is none,
// the queue is not ready, or the device needs a reset (which a bad avail
// index causes here).
bool virtq_pop(struct virtio_dev *d, struct vq *q, uint16_t *head);

// The chain at HEAD into OUT (room for QUEUE_NUM_MAX): its length, or 0
// after virtio_needs_reset() when it loops, leaves the table or points
// outside guest memory. Every descriptor returned lies in guest memory.
unsigned virtq_chain(struct virtio_dev *d, struct vq *q, uint16_t head, struct desc *out);

// Completes HEAD with LEN bytes written (the entry, then the index).
void virtq_push(struct vq *q, uint16_t head, uint32_t len);

// A used-buffer notification, unless the driver asked for none.
void virtq_interrupt(struct virtio_dev *d, struct vq *q);

#endif
