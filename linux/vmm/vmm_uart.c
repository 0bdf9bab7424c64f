// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's 8250/16550A UART (x86: COM1, ports 0x3f8, IRQ 4; arm64: MMIO
// at 0x9000000, one byte per register, SPI 1): what the guest sends goes to
// stdout (line-buffered), what arrives on stdin is the guest's input. The
// architecture decodes the address and passes the register number.
//
// Input: a reader thread moves stdin into rx[], which the guest drains one
// byte per RBR read; LSR.DR says a byte is there and, with IER.RDI, IIR says
// "received data" (it outranks "transmitter empty") and IRQ 4 stays high
// until rx[] is empty. Nothing is dropped: when rx[] is full the reader
// stops reading stdin until the guest has read some. A FIFO reset (FCR bit 1)
// does not discard input the guest has not been shown. On a terminal, stdin
// is switched to byte-at-a-time without local echo (the guest echoes) and
// restored when slat-vmm exits. With --console virtio the same reader feeds
// the virtio console (vmm_virtio_console.c) instead, and the UART gets no
// input (its output stays: the kernel's messages).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include "vmm.h"

#define UART_RBR_THR 0 // DLL with DLAB
#define UART_IER     1 // DLM with DLAB
#define UART_IIR_FCR 2
#define UART_LCR     3
#define UART_MCR     4
#define UART_LSR     5
#define UART_MSR     6
#define UART_SCR     7

#define LCR_DLAB      0x80
#define IER_RDI	      0x01
#define IER_THRI      0x02
#define IIR_NO_INT    0x01
#define IIR_THRI      0x02
#define IIR_RDI	      0x04
#define IIR_FIFO      0xc0 // FIFOs enabled (a 16550A)
#define FCR_FIFO      0x01
#define LSR_DR	      0x01
#define LSR_THRE_TEMT 0x60
#define MCR_LOOP      0x10
#define MSR_IDLE      0xb0 // DCD, DSR, CTS

static struct termios saved_tty;
static bool tty_changed;

void uart_init(void)
{
	pthread_mutex_init(&vm.uart.lock, NULL);
	pthread_cond_init(&vm.uart.rx_space, NULL);
}

static void uart_flush_locked(struct uart *u)
{
	if (u->out_len) {
		fwrite(u->out, 1, u->out_len, stdout);
		u->out_len = 0;
	}
	fflush(stdout);
}

void uart_flush(void)
{
	pthread_mutex_lock(&vm.uart.lock);
	uart_flush_locked(&vm.uart);
	pthread_mutex_unlock(&vm.uart.lock);
}

static void uart_putc(struct uart *u, uint8_t ch)
{
	u->out[u->out_len++] = (char)ch;
	if (ch == '\n' || u->out_len == sizeof(u->out))
		uart_flush_locked(u);
}

static bool rx_ready(const struct uart *u)
{
	return u->rx_head != u->rx_tail;
}

// IRQ 4 follows "an enabled interrupt is pending": received data, or the
// transmitter-empty interrupt.
static void uart_update_irq(struct uart *u)
{
	bool level =
	    ((u->ier & IER_THRI) && u->thr_empty_irq) || ((u->ier & IER_RDI) && rx_ready(u));

	if (level == u->irq_level)
		return;
	u->irq_level = level;
	set_irq_line(vm.uart_irq, level);
}

static uint8_t uart_iir(struct uart *u)
{
	uint8_t fifo = (u->fcr & FCR_FIFO) ? IIR_FIFO : 0;

	if ((u->ier & IER_RDI) && rx_ready(u))
		return fifo | IIR_RDI; // until the data is read
	if ((u->ier & IER_THRI) && u->thr_empty_irq) {
		u->thr_empty_irq = false; // reading IIR clears the THRE interrupt
		return fifo | IIR_THRI;
	}
	return fifo | IIR_NO_INT;
}

// MSR in loopback mode: CTS = RTS, DSR = DTR, RI = OUT1, DCD = OUT2.
static uint8_t uart_msr(const struct uart *u)
{
	if (u->mcr & MCR_LOOP)
		return (uint8_t)((u->mcr & 0x0f) << 4);
	return MSR_IDLE;
}

static uint8_t uart_rx_pop(struct uart *u)
{
	uint8_t ch;

	if (!rx_ready(u) || (u->mcr & MCR_LOOP))
		return 0;
	ch = u->rx[u->rx_head];
	u->rx_head = (u->rx_head + 1) % UART_RX_BUF;
	u->rx_bytes++;
	pthread_cond_signal(&u->rx_space);
	return ch;
}

static uint8_t uart_read(struct uart *u, unsigned reg)
{
	bool dlab = u->lcr & LCR_DLAB;

	switch (reg) {
	case UART_RBR_THR:
		return dlab ? u->dll : uart_rx_pop(u);
	case UART_IER:
		return dlab ? u->dlm : u->ier;
	case UART_IIR_FCR:
		return uart_iir(u);
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		return LSR_THRE_TEMT | (rx_ready(u) && !(u->mcr & MCR_LOOP) ? LSR_DR : 0);
	case UART_MSR:
		return uart_msr(u);
	default:
		return u->scr;
	}
}

static void uart_write(struct uart *u, unsigned reg, uint8_t val)
{
	bool dlab = u->lcr & LCR_DLAB;

	switch (reg) {
	case UART_RBR_THR:
		if (dlab) {
			u->dll = val;
		} else {
			if (!(u->mcr & MCR_LOOP))
				uart_putc(u, val);
			u->thr_empty_irq = true; // sent at once: empty again
		}
		break;
	case UART_IER:
		if (dlab) {
			u->dlm = val;
		} else {
			if ((val & IER_THRI) && !(u->ier & IER_THRI))
				u->thr_empty_irq = true; // enabling THRI with THR empty
			u->ier = val & 0x0f;
		}
		break;
	case UART_IIR_FCR:
		u->fcr = val & 0xc9; // FIFO enable, DMA mode, trigger; the resets self-clear
		break;
	case UART_LCR:
		u->lcr = val;
		break;
	case UART_MCR:
		u->mcr = val & 0x1f;
		break;
	case UART_SCR:
		u->scr = val;
		break;
	default:
		break; // LSR and MSR are read-only
	}
}

// Register REG (0..7) of SIZE bytes: only byte accesses are decoded.
bool uart_access(unsigned reg, bool write, uint8_t *data, unsigned size)
{
	struct uart *u = &vm.uart;

	if (reg >= 8 || size != 1)
		return false;
	pthread_mutex_lock(&u->lock);
	if (write)
		uart_write(u, reg, *data);
	else
		*data = uart_read(u, reg);
	uart_update_irq(u);
	pthread_mutex_unlock(&u->lock);
	return true;
}

// Stdin's bytes into rx[], waiting while it is full.
static void uart_rx_push(struct uart *u, const uint8_t *buf, size_t n)
{
	pthread_mutex_lock(&u->lock);
	for (size_t i = 0; i < n; i++) {
		while ((u->rx_tail + 1) % UART_RX_BUF == u->rx_head)
			pthread_cond_wait(&u->rx_space, &u->lock);
		u->rx[u->rx_tail] = buf[i];
		u->rx_tail = (u->rx_tail + 1) % UART_RX_BUF;
		uart_update_irq(u);
	}
	pthread_mutex_unlock(&u->lock);
}

// Moves what stdin gives to the console until EOF: the UART's rx[], or with
// --console virtio the virtio console (one device takes stdin, never both).
static void *uart_reader(void *arg)
{
	uint8_t buf[256];

	(void)arg;
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

		if (n <= 0)
			return NULL; // EOF or error: the guest gets no more input
		if (vm.console_virtio)
			virtio_console_input(buf, (size_t)n);
		else
			uart_rx_push(&vm.uart, buf, (size_t)n);
	}
}

static void restore_tty(void)
{
	if (tty_changed)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
}

// A terminal on stdin: the guest sees each key at once and echoes it itself.
// Ctrl-C still ends slat-vmm (ISIG stays on).
static void raw_tty(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty) < 0)
		return;
	t = saved_tty;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_iflag &= ~(tcflag_t)ICRNL; // Enter sends CR, as on a serial line
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0) {
		tty_changed = true;
		atexit(restore_tty);
	}
}

void uart_start_input(void)
{
	pthread_t t;

	raw_tty();
	errno = pthread_create(&t, NULL, uart_reader, NULL);
	if (errno)
		die("cannot start the console input thread");
	pthread_detach(t);
}
