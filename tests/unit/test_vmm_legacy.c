// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's PIT channel 2 and CMOS clock (linux/vmm/vmm_legacy.c), compiled
// into this test, driven through its ports as Linux's TSC calibration
// (quick_pit_calibrate: mode 0, count 0xffff, MSB polling; pit_calibrate_tsc:
// the output bit in port 0x61) and wall-clock read (mach_get_cmos_time) use
// them. Properties: the count falls at 1.193182 MHz of the host's monotonic
// clock while the gate is high and holds while it is low; the latch command
// freezes a value until both halves are read; mode 0's output rises once the
// count has passed; CMOS gives the host's UTC time in BCD, never "update in
// progress"; ports that are not these are left to the caller.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "linux/vmm/vmm_legacy.c"

static void out(uint16_t port, uint8_t v)
{
	assert_true(legacy_io(port, true, &v, 1));
}

static uint8_t in(uint16_t port)
{
	uint8_t v = 0;

	assert_true(legacy_io(port, false, &v, 1));
	return v;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

#define I8254_HZ 1193182ull // the PIT's input clock, as the test knows it (not PIT_HZ)

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// The ticks between two reads lie between the PIT ticks of the time between
// them at the least (LO) and at the most (HI), whatever the load: the
// counter runs on the same monotonic clock.
static void assert_ticks(unsigned ticks, uint64_t lo_ns, uint64_t hi_ns)
{
	assert_in_range(ticks, lo_ns * I8254_HZ / 1000000000ull,
			hi_ns * I8254_HZ / 1000000000ull + 1);
}

// Channel 2, LSB then MSB, mode 0, binary; gate on, speaker off; 0xffff.
static void start_count(uint16_t count)
{
	out(PORT_SYS_CTRL_B, SYS_B_GATE2);
	out(PORT_PIT_MODE, 0xb0);
	out(PORT_PIT_CH2, (uint8_t)count);
	out(PORT_PIT_CH2, (uint8_t)(count >> 8));
}

static uint16_t read_count(void)
{
	uint8_t lo = in(PORT_PIT_CH2);

	return (uint16_t)(lo | in(PORT_PIT_CH2) << 8);
}

static void test_counts_down_at_pit_rate(void **state)
{
	(void)state;
	start_count(0xffff);
	uint64_t t0 = mono_ns();
	uint16_t a = read_count();
	uint64_t t1 = mono_ns();
	sleep_ms(20);
	uint64_t t2 = mono_ns();
	uint16_t b = read_count();
	uint64_t t3 = mono_ns();
	assert_true(a > b);
	assert_ticks(a - b, t2 - t1, t3 - t0);
	assert_int_equal(in(PORT_SYS_CTRL_B)&SYS_B_OUT2, 0); // not yet at zero
}

static void test_gate_low_holds_the_count(void **state)
{
	(void)state;
	start_count(0xffff);
	out(PORT_SYS_CTRL_B, 0); // gate off
	uint16_t a = read_count();
	sleep_ms(10);
	assert_int_equal(read_count(), a);
	out(PORT_SYS_CTRL_B, SYS_B_GATE2);
	sleep_ms(10);
	assert_true(read_count() < a);
}

static void test_latch_freezes_until_both_halves_read(void **state)
{
	(void)state;
	start_count(0xffff);
	uint64_t t0 = mono_ns();
	out(PORT_PIT_MODE, 0x80); // latch channel 2
	uint64_t t1 = mono_ns();
	uint8_t lo = in(PORT_PIT_CH2);
	sleep_ms(5); // the counter moves on, the latch does not
	uint8_t hi = in(PORT_PIT_CH2);
	uint16_t latched = (uint16_t)(lo | hi << 8);
	uint64_t t2 = mono_ns();
	uint16_t now = read_count();
	uint64_t t3 = mono_ns();
	assert_true(latched > now);
	assert_ticks(latched - now, t2 - t1, t3 - t0);
}

static void test_mode0_output_after_terminal_count(void **state)
{
	(void)state;
	start_count(1193); // 1 ms
	assert_int_equal(in(PORT_SYS_CTRL_B)&SYS_B_OUT2, 0);
	sleep_ms(3);
	assert_int_equal(in(PORT_SYS_CTRL_B)&SYS_B_OUT2, SYS_B_OUT2);
	assert_int_equal(in(PORT_SYS_CTRL_B)&SYS_B_GATE2, SYS_B_GATE2); // as written
}

static int from_bcd(uint8_t v)
{
	return (v >> 4) * 10 + (v & 0xf);
}

static uint8_t cmos(uint8_t reg)
{
	out(PORT_CMOS_INDEX, reg | 0x80); // bit 7: the NMI mask, not the index
	return in(PORT_CMOS_DATA);
}

static void test_cmos_time_is_the_hosts(void **state)
{
	struct tm tm;
	time_t t = time(NULL);

	(void)state;
	gmtime_r(&t, &tm);
	assert_int_equal(cmos(CMOS_STATUS_A) & 0x80, 0);    // never updating
	assert_int_equal(cmos(CMOS_STATUS_B) & 0x06, 0x02); // BCD, 24-hour
	assert_int_equal(cmos(CMOS_STATUS_D), 0x80);
	assert_int_equal(from_bcd(cmos(CMOS_YEAR)), tm.tm_year % 100);
	assert_int_equal(from_bcd(cmos(CMOS_CENTURY)), 19 + tm.tm_year / 100);
	assert_int_equal(from_bcd(cmos(CMOS_MONTH)), tm.tm_mon + 1);
	int min = from_bcd(cmos(CMOS_MINUTES)), hour = from_bcd(cmos(CMOS_HOURS));
	assert_in_range((hour * 60 + min - (tm.tm_hour * 60 + tm.tm_min) + 1440) % 1440, 0, 1);
	// RAM outside the clock keeps what is written; the clock ignores writes.
	out(PORT_CMOS_INDEX, 0x40);
	out(PORT_CMOS_DATA, 0x5a);
	assert_int_equal(cmos(0x40), 0x5a);
	out(PORT_CMOS_INDEX, CMOS_STATUS_A);
	out(PORT_CMOS_DATA, 0x80);
	assert_int_equal(cmos(CMOS_STATUS_A) & 0x80, 0);
}

static void test_other_ports_not_taken(void **state)
{
	uint8_t v = 0;

	(void)state;
	assert_false(legacy_io(0x40, false, &v, 1)); // channel 0
	assert_false(legacy_io(0x3f8, true, &v, 1));
	assert_false(legacy_io(PORT_PIT_CH2, false, &v, 2)); // not a byte access
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counts_down_at_pit_rate),
	    cmocka_unit_test(test_gate_low_holds_the_count),
	    cmocka_unit_test(test_latch_freezes_until_both_halves_read),
	    cmocka_unit_test(test_mode0_output_after_terminal_count),
	    cmocka_unit_test(test_cmos_time_is_the_hosts),
	    cmocka_unit_test(test_other_ports_not_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
