// SPDX-License-Identifier: Apache-2.0
//
// A virtio console over virtio-mmio (--console virtio): the guest's
// /dev/hvc0, with slat-vmm's stdin and stdout at the other end. The
// transport is vmm_virtio_mmio.c's; this file is the console device of the
// OASIS virtio 1.1 specification, 5.3, with one port and no optional
// feature (VERSION_1 only: no MULTIPORT, SIZE or EMERG_WRITE), so queue 0 is
// the port's receiveq and queue 1 its transmitq.
//
// transmitq: each buffer's bytes go to stdout as they are, at the guest's
// QueueNotify (in that vCPU thread), and the buffer is returned at once.
// receiveq: the stdin reader (vmm_uart.c) hands its bytes to
// virtio_console_input(); they wait in pending[] until the guest has posted
// receive buffers and set DRIVER_OK, then fill those buffers in order, each
// returned with the number of bytes written, and the used-buffer interrupt
// is raised. Nothing is dropped: while pending[] is full the reader waits.
// A chain with a descriptor of the wrong direction, like any other broken
// ring, gets DEVICE_NEEDS_RESET (vmm_virtio_mmio.c).
#include <stdio.h>
#include <string.h>

#include "vmm_virtio.h"

#define VIRTIO_ID_CONSOLE 3
#define CON_RECEIVEQ	  0
#define CON_TRANSMITQ	  1
#define CON_PENDING	  4096

struct vcon {
	struct virtio_dev dev;
	pthread_cond_t space;		  // the reader waits here while pending[] is full
	uint8_t pending[CON_PENDING];	  // input not yet in a guest buffer
	size_t head, len;		  // pending[head..head + len), circular
	FILE *out;			  // NULL: stdout
	unsigned long rx_bytes, tx_bytes; // delivered to / sent by the guest
};

static void con_notify(struct virtio_dev *d, unsigned q);
static void con_driver_ok(struct virtio_dev *d);

static struct vcon con = {
    .dev = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .space = PTHREAD_COND_INITIALIZER,
};

// The device at vm.console_base on line vm.console_irq.
void virtio_console_init(void)
{
	struct virtio_dev *d = &con.dev;

	d->name = "virtio-console";
	d->device_id = VIRTIO_ID_CONSOLE;
	d->features = F_VERSION_1;
	d->base = vm.console_base;
	d->irq = vm.console_irq;
	d->nqueues = 2;
	d->config = NULL; // no SIZE, no MULTIPORT: nothing in the config space
	d->config_len = 0;
	d->notify = con_notify;
	d->driver_ok = con_driver_ok;
	d->present = true;
	fprintf(stderr, "slat-vmm: console: virtio-mmio at 0x%llx, %s %u (hvc0)\n",
		(unsigned long long)vm.console_base, vm.irq_kind, vm.console_irq);
}

// Whether every descriptor of CHAIN[0..n) is WRITE (device-writable) or not.
static bool chain_direction(const struct desc *chain, unsigned n, bool write)
{
	for (unsigned i = 0; i < n; i++)
		if (!!(chain[i].flags & DESC_F_WRITE) != write)
			return false;
	return true;
}

// Pending bytes into CHAIN's buffers: how many were written.
static uint32_t fill_chain(const struct desc *chain, unsigned n)
{
	uint32_t written = 0;

	for (unsigned i = 0; i < n && con.len; i++) {
		uint8_t *p = guest_range(chain[i].addr, chain[i].len); // virtq_chain checked it

		for (uint32_t k = 0; k < chain[i].len && con.len; k++) {
			p[k] = con.pending[con.head];
			con.head = (con.head + 1) % CON_PENDING;
			con.len--;
			written++;
		}
	}
	return written;
}

// Moves pending input into the receive buffers the guest has posted; a
// buffer is taken only when there is input for it. Under the lock.
static void deliver(void)
{
	static struct desc chain[QUEUE_NUM_MAX]; // under the lock
	struct virtio_dev *d = &con.dev;
	struct vq *q = &d->q[CON_RECEIVEQ];
	uint16_t head;
	bool any = false;

	if (!(d->status & STATUS_DRIVER_OK))
		return;
	while (con.len && virtq_pop(d, q, &head)) {
		unsigned n = virtq_chain(d, q, head, chain);
		uint32_t written;

		if (!n)
			return;
		if (!chain_direction(chain, n, true)) {
			virtio_needs_reset(d, "receive buffer %u is not device-writable", head);
			return;
		}
		written = fill_chain(chain, n);
		con.rx_bytes += written;
		virtq_push(q, head, written);
		any = true;
	}
	if (any) {
		virtq_interrupt(d, q);
		pthread_cond_signal(&con.space);
	}
}

// The guest's output buffers to stdout, each returned with 0 bytes written.
static void transmit(void)
{
	static struct desc chain[QUEUE_NUM_MAX]; // under the lock
	struct virtio_dev *d = &con.dev;
	struct vq *q = &d->q[CON_TRANSMITQ];
	FILE *out = con.out ? con.out : stdout;
	uint16_t head;
	bool any = false;

	while (virtq_pop(d, q, &head)) {
		unsigned n = virtq_chain(d, q, head, chain);

		if (!n)
			break;
		if (!chain_direction(chain, n, false)) {
			virtio_needs_reset(d, "transmit buffer %u is device-writable", head);
			break;
		}
		for (unsigned i = 0; i < n; i++) {
			fwrite(guest_range(chain[i].addr, chain[i].len), 1, chain[i].len, out);
			con.tx_bytes += chain[i].len;
		}
		virtq_push(q, head, 0);
		any = true;
	}
	fflush(out);
	if (any)
		virtq_interrupt(d, q);
}

static void con_notify(struct virtio_dev *d, unsigned q)
{
	(void)d;
	if (q == CON_RECEIVEQ)
		deliver(); // new buffers: input may have waited for them
	else
		transmit();
}

static void con_driver_ok(struct virtio_dev *d)
{
	(void)d;
	deliver();
}

// N bytes of stdin (the reader thread): kept in order until a receive
// buffer takes them; waits while pending[] is full.
void virtio_console_input(const uint8_t *buf, size_t n)
{
	pthread_mutex_lock(&con.dev.lock);
	while (n) {
		while (con.len == CON_PENDING)
			pthread_cond_wait(&con.space, &con.dev.lock);
		while (n && con.len < CON_PENDING) {
			con.pending[(con.head + con.len) % CON_PENDING] = *buf++;
			con.len++;
			n--;
		}
		deliver();
	}
	pthread_mutex_unlock(&con.dev.lock);
}

bool virtio_console_mmio(uint64_t addr, bool write, uint8_t *data, unsigned size)
{
	return virtio_mmio_access(&con.dev, addr, write, data, size);
}

void virtio_console_summary(void)
{
	if (!con.dev.present)
		return;
	fprintf(stderr, "slat-vmm: console: %lu bytes in, %lu out, %lu errors\n", con.rx_bytes,
		con.tx_bytes, con.dev.errors);
}
