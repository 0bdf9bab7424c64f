// SPDX-License-Identifier: Apache-2.0
//
// The two PC legacy devices a Linux guest polls while it boots, even on a
// hardware-reduced ACPI platform: channel 2 of the 8254 PIT (with its gate
// and output in port 0x61), which the kernel's fast TSC calibration reads in
// a loop of up to 50000 iterations per counter value, and the MC146818 CMOS
// clock, whose update-in-progress bit the wall-clock read waits on. Ports
// that read as all ones make both loops run to their limits, each read an
// exit to this VMM (on Slat a hypercall round trip). Emulated:
//
//   PIT: channel 2 only (channels 0 and 1, and the read-back command, stay
//        unanswered), modes 0 (interrupt on terminal count) and 2/3 (rate
//        and square wave: the count reloads), binary counting, LSB/MSB/both
//        access, the counter-latch command; counting at 1.193182 MHz of the
//        host's monotonic clock while the gate (port 0x61 bit 0) is high.
//   CMOS: the time and date registers from the host's UTC clock in BCD and
//        24-hour mode, status registers A-D (never "update in progress",
//        "time valid"), the century at 0x32; the rest is 128 bytes of RAM.
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "vmm.h"
#include "vmm_x86_layout.h"

#define PIT_HZ 1193182ull

#define PIT_CW_CHANNEL(cw) ((cw) >> 6)
#define PIT_CW_ACCESS(cw)  (((cw) >> 4) & 3)
#define PIT_CW_MODE(cw)	   (((cw) >> 1) & 7)
#define PIT_ACCESS_LATCH   0
#define PIT_ACCESS_LSB	   1
#define PIT_ACCESS_MSB	   2
#define PIT_ACCESS_BOTH	   3
#define SYS_B_GATE2	   0x01
#define SYS_B_SPEAKER	   0x02
#define SYS_B_OUT2	   0x20

#define CMOS_SECONDS  0x00
#define CMOS_MINUTES  0x02
#define CMOS_HOURS    0x04
#define CMOS_WEEKDAY  0x06
#define CMOS_MDAY     0x07
#define CMOS_MONTH    0x08
#define CMOS_YEAR     0x09
#define CMOS_STATUS_A 0x0a // divider 32.768 kHz, 1024 Hz rate; UIP (bit 7) clear
#define CMOS_STATUS_B 0x0b // 24-hour mode, BCD (bit 2 clear)
#define CMOS_STATUS_C 0x0c
#define CMOS_STATUS_D 0x0d // bit 7: the time is valid
#define CMOS_CENTURY  0x32

struct pit2 {
	uint8_t sys_b;	 // port 0x61 bits 0-1 as written
	uint8_t mode;	 // 0..5
	uint8_t access;	 // PIT_ACCESS_*
	bool write_msb;	 // the next count byte written is the MSB
	bool read_msb;	 // the next byte read is the MSB
	bool latched;	 // latch holds a count until both halves are read
	bool loaded;	 // a count was written since the mode was set
	uint16_t reload; // the count written (0 means 65536)
	uint16_t latch;
	uint64_t start_ns; // when counting (re)started, while the gate is high
	uint64_t held;	   // ticks counted before the gate last went low
};

struct legacy {
	pthread_mutex_t lock;
	struct pit2 pit;
	uint8_t cmos_index;
	uint8_t cmos_ram[128];
};

static struct legacy lg = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cmos_ram = {[CMOS_STATUS_A] = 0x26, [CMOS_STATUS_B] = 0x02, [CMOS_STATUS_D] = 0x80}};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Ticks counted since the count was loaded, while the gate was high.
static uint64_t pit_ticks(const struct pit2 *p)
{
	uint64_t ticks = p->held;

	if (p->loaded && (p->sys_b & SYS_B_GATE2))
		ticks += (uint64_t)((unsigned __int128)(now_ns() - p->start_ns) * PIT_HZ /
				    1000000000ull);
	return ticks;
}

static uint32_t pit_period(const struct pit2 *p)
{
	return p->reload ? p->reload : 65536u;
}

// The counting element: mode 0 counts down through zero and wraps at 16
// bits; modes 2 and 3 reload at the end of each period (mode 3 counts by
// two, its output the upper half of the period).
static uint16_t pit_count(const struct pit2 *p)
{
	uint64_t ticks = pit_ticks(p);
	uint32_t period = pit_period(p);

	if (!p->loaded)
		return 0;
	if (p->mode == 2)
		return (uint16_t)(period - ticks % period);
	if (p->mode == 3)
		return (uint16_t)((period - (2 * ticks) % period) & ~1u);
	return (uint16_t)(period - ticks); // mode 0 (and 1, 4, 5 alike)
}

static bool pit_out(const struct pit2 *p)
{
	uint64_t ticks = pit_ticks(p);
	uint32_t period = pit_period(p);

	if (!p->loaded)
		return p->mode != 0; // mode 0's output is low from the mode write on
	if (p->mode == 2)
		return ticks % period != period - 1;
	if (p->mode == 3)
		return ticks % period < (period + 1) / 2;
	return ticks >= period;
}

static void pit_mode_write(struct pit2 *p, uint8_t cw)
{
	if (PIT_CW_CHANNEL(cw) != 2)
		return; // channels 0 and 1, read-back: not emulated
	if (PIT_CW_ACCESS(cw) == PIT_ACCESS_LATCH) {
		if (!p->latched) {
			p->latch = pit_count(p);
			p->latched = true;
			p->read_msb = p->access == PIT_ACCESS_MSB;
		}
		return;
	}
	p->access = PIT_CW_ACCESS(cw);
	p->mode = PIT_CW_MODE(cw) > 5 ? PIT_CW_MODE(cw) - 4 : PIT_CW_MODE(cw); // 6, 7 alias 2, 3
	p->write_msb = p->access == PIT_ACCESS_MSB;
	p->read_msb = p->access == PIT_ACCESS_MSB;
	p->latched = false;
	p->loaded = false;
	p->held = 0;
}

static void pit_count_write(struct pit2 *p, uint8_t val)
{
	if (p->write_msb)
		p->reload = (uint16_t)((p->reload & 0x00ff) | val << 8);
	else
		p->reload = (uint16_t)((p->reload & 0xff00) | val);
	if (p->access == PIT_ACCESS_BOTH && !p->write_msb) {
		p->write_msb = true; // the LSB: the count is complete with the MSB
		return;
	}
	p->write_msb = p->access == PIT_ACCESS_MSB;
	p->loaded = true; // a new count starts counting at once
	p->held = 0;
	p->start_ns = now_ns();
}

static uint8_t pit_count_read(struct pit2 *p)
{
	uint16_t c = p->latched ? p->latch : pit_count(p);
	bool msb = p->read_msb;

	if (p->access == PIT_ACCESS_BOTH)
		p->read_msb = !p->read_msb;
	if (p->latched && (p->access != PIT_ACCESS_BOTH || msb))
		p->latched = false;
	return msb ? (uint8_t)(c >> 8) : (uint8_t)c;
}

// Port 0x61: the gate stops and resumes counting (the ticks so far are kept).
static void sys_b_write(struct pit2 *p, uint8_t val)
{
	bool was = p->sys_b & SYS_B_GATE2, is = val & SYS_B_GATE2;

	if (was && !is)
		p->held = pit_ticks(p);
	p->sys_b = val & (SYS_B_GATE2 | SYS_B_SPEAKER);
	if (!was && is)
		p->start_ns = now_ns();
}

static uint8_t bcd(int v)
{
	return (uint8_t)((v / 10) << 4 | (v % 10));
}

static uint8_t cmos_read(uint8_t index)
{
	struct tm tm;
	time_t t = time(NULL);

	gmtime_r(&t, &tm);
	switch (index) {
	case CMOS_SECONDS:
		return bcd(tm.tm_sec > 59 ? 59 : tm.tm_sec);
	case CMOS_MINUTES:
		return bcd(tm.tm_min);
	case CMOS_HOURS:
		return bcd(tm.tm_hour);
	case CMOS_WEEKDAY:
		return bcd(tm.tm_wday + 1);
	case CMOS_MDAY:
		return bcd(tm.tm_mday);
	case CMOS_MONTH:
		return bcd(tm.tm_mon + 1);
	case CMOS_YEAR:
		return bcd(tm.tm_year % 100);
	case CMOS_CENTURY:
		return bcd(19 + tm.tm_year / 100);
	default:
		return lg.cmos_ram[index];
	}
}

static void cmos_write(uint8_t index, uint8_t val)
{
	// The clock keeps the host's time; status registers A-D keep their
	// fixed meaning (no alarm, periodic or update interrupts to offer).
	if (index <= CMOS_YEAR || index == CMOS_CENTURY ||
	    (index >= CMOS_STATUS_A && index <= CMOS_STATUS_D))
		return;
	lg.cmos_ram[index] = val;
}

static void legacy_access(uint16_t port, bool write, uint8_t *data)
{
	struct pit2 *p = &lg.pit;

	switch (port) {
	case PORT_PIT_CH2:
		if (write)
			pit_count_write(p, *data);
		else
			*data = pit_count_read(p);
		break;
	case PORT_PIT_MODE:
		if (write)
			pit_mode_write(p, *data);
		else
			*data = 0xff; // the mode register is write-only
		break;
	case PORT_SYS_CTRL_B:
		if (write)
			sys_b_write(p, *data);
		else
			*data = (uint8_t)(p->sys_b | (pit_out(p) ? SYS_B_OUT2 : 0));
		break;
	case PORT_CMOS_INDEX:
		if (write)
			lg.cmos_index = *data & 0x7f;
		else
			*data = 0xff;
		break;
	default: // PORT_CMOS_DATA
		if (write)
			cmos_write(lg.cmos_index, *data);
		else
			*data = cmos_read(lg.cmos_index);
		break;
	}
}

bool legacy_io(uint16_t port, bool write, uint8_t *data, unsigned size)
{
	if (size != 1 ||
	    (port != PORT_PIT_CH2 && port != PORT_PIT_MODE && port != PORT_SYS_CTRL_B &&
	     port != PORT_CMOS_INDEX && port != PORT_CMOS_DATA))
		return false;
	pthread_mutex_lock(&lg.lock);
	legacy_access(port, write, data);
	pthread_mutex_unlock(&lg.lock);
	return true;
}
