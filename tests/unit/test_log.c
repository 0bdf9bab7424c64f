// SPDX-License-Identifier: Apache-2.0
//
// core/log: the freestanding formatter (compared with what libc's snprintf
// prints for the same directives), truncation, levels and prefixes, and the
// sink contract.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/log.h"

// Formats with both log_snprintf and libc; they must agree exactly.
#define SAME_AS_LIBC(...)                                                                          \
	do {                                                                                       \
		char ours[128], libc[128];                                                         \
		size_t n = log_snprintf(ours, sizeof(ours), __VA_ARGS__);                          \
		int m = snprintf(libc, sizeof(libc), __VA_ARGS__);                                 \
		assert_string_equal(ours, libc);                                                   \
		assert_int_equal(n, (size_t)m);                                                    \
	} while (0)

static void test_directives_match_libc(void **state)
{
	SAME_AS_LIBC("plain text");
	SAME_AS_LIBC("%d %d %d %i", 0, -1, 2147483647, -2147483647 - 1);
	SAME_AS_LIBC("%u %x %X", 4294967295u, 0xdeadbeefu, 0xabcdefu);
	SAME_AS_LIBC("%ld %lu %lx", -5L, 7UL, 0x1234UL);
	SAME_AS_LIBC("%lld %llu %llx", -9223372036854775807LL - 1, 18446744073709551615ULL,
		     0xfedcba9876543210ULL);
	SAME_AS_LIBC("[%5d] [%-5d] [%05d] [%05d]", 42, 42, 42, -42);
	SAME_AS_LIBC("[%08x] [%016llx] [%2x]", 0x1fu, 0xd810000000002bULL, 0xabcu);
	SAME_AS_LIBC("[%s] [%10s] [%-10s] [%c] [%3c] [%%]", "abc", "right", "left", 'z', 'q');
	SAME_AS_LIBC("%p", (void *)0x1234);
}

static void test_null_string_and_unknown_directive(void **state)
{
	char buf[64];
	const char *nul = NULL;

	log_snprintf(buf, sizeof(buf), "%s", nul);
	assert_string_equal(buf, "(null)");
	// An unknown directive shows up as "%?" and consumes no argument, so the
	// next directive still gets its own value.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-invalid-specifier"
	log_snprintf(buf, sizeof(buf), "%q|%d", 5);
#pragma clang diagnostic pop
	assert_string_equal(buf, "%?|5");
}

static void test_truncation_reports_full_length(void **state)
{
	char buf[8];

	memset(buf, 'X', sizeof(buf));
	assert_int_equal(log_snprintf(buf, sizeof(buf), "%s-%d", "abcdef", 12345), 12);
	assert_string_equal(buf, "abcdef-"); // 7 characters and the NUL
	assert_int_equal(log_snprintf(buf, 0, "%d", 123), 3);
	assert_int_equal(buf[0], 'a'); // size 0: nothing written
}

// A sink that records everything written and counts flushes.
struct capture {
	char text[512];
	size_t len;
	unsigned writes, flushes;
};

static void capture_write(void *ctx, const char *text, size_t len)
{
	struct capture *c = ctx;

	assert_true(c->len + len < sizeof(c->text));
	memcpy(c->text + c->len, text, len);
	c->len += len;
	c->text[c->len] = '\0';
	c->writes++;
}

static void capture_flush(void *ctx)
{
	((struct capture *)ctx)->flushes++;
}

static int capture_setup(void **state)
{
	static struct capture c;

	memset(&c, 0, sizeof(c));
	struct log_sink sink = {capture_write, capture_flush, &c};
	log_set_sink(&sink);
	log_set_level(LOG_INFO);
	*state = &c;
	return 0;
}

static int capture_teardown(void **state)
{
	log_set_sink(NULL);
	log_set_level(LOG_INFO);
	return 0;
}

static void test_levels_and_prefixes(void **state)
{
	struct capture *c = *state;

	log_err("e%d\n", 1);
	log_warn("w\n");
	log_info("i\n");
	log_debug("d\n"); // below the default level: dropped
	assert_string_equal(c->text, "error: e1\nwarning: w\ni\n");
	log_set_level(LOG_ERROR);
	log_warn("hidden\n");
	log_err("shown\n");
	log_set_level(LOG_DEBUG);
	log_debug("dbg\n");
	assert_string_equal(c->text, "error: e1\nwarning: w\ni\nerror: shown\ndbg\n");
	assert_int_equal(log_get_level(), LOG_DEBUG);
}

static unsigned fake_cpu;
static unsigned fake_cpu_id(void)
{
	return fake_cpu;
}

// The screen mirror (the firmware's ConOut): error lines and log_screen()'s,
// from the CPU that installed it only, none while held; the main sink gets
// everything as before.
static void test_mirror_gets_errors_and_screen_lines(void **state)
{
	struct capture *c = *state;
	static struct capture m;
	struct log_sink mirror = {capture_write, NULL, &m};

	memset(&m, 0, sizeof(m));
	log_set_cpu_id(fake_cpu_id);
	fake_cpu = 0;
	log_set_mirror(&mirror);
	log_info("info\n");
	log_warn("warn\n");
	log_err("err %d\n", 1);
	log_screen("starting %s\n", "x");
	fake_cpu = 1; // another CPU: main sink only
	log_err("ap\n");
	fake_cpu = 0;
	log_mirror_hold(true);
	log_err("held\n");
	log_mirror_hold(false);
	assert_string_equal(m.text, "error: err 1\nstarting x\n");
	assert_string_equal(c->text, "info\nwarning: warn\nerror: err 1\nstarting x\nerror: ap\n"
				     "error: held\n");
	// A line longer than the staging buffer reaches each sink whole.
	memset(c, 0, sizeof(*c)), memset(&m, 0, sizeof(m));
	log_err("%0200d\n", 7);
	assert_int_equal(c->len, 208);
	assert_int_equal(m.len, 208);
	assert_string_equal(c->text, m.text);
	memset(&m, 0, sizeof(m));
	log_set_mirror(NULL);
	log_set_cpu_id(NULL);
	log_err("after\n");
	assert_string_equal(m.text, "");
}

static void test_long_message_arrives_whole_and_flush_reaches_sink(void **state)
{
	struct capture *c = *state;
	char line[300];

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	log_info("%s|\n", line);
	assert_int_equal(c->len, 301);
	assert_int_equal(c->text[299], '|');
	assert_true(c->writes >= 2); // staged through the 128-byte buffer
	assert_int_equal(c->flushes, 0);
	log_flush();
	assert_int_equal(c->flushes, 1);
}

// An exception handler that prints while its CPU is inside log_printf: with
// the CPU-id hook the nested message goes through instead of deadlocking.
static struct capture nested_capture;
static int nested_pending;

static unsigned always_cpu0(void)
{
	return 0;
}

static void reentering_write(void *ctx, const char *text, size_t len)
{
	capture_write(ctx, text, len);
	if (nested_pending) {
		nested_pending = 0;
		log_err("from the handler\n");
	}
}

static void test_same_cpu_reentry_does_not_deadlock(void **state)
{
	struct log_sink sink = {reentering_write, NULL, &nested_capture};

	memset(&nested_capture, 0, sizeof(nested_capture));
	log_set_sink(&sink);
	log_set_cpu_id(always_cpu0);
	nested_pending = 1;
	alarm(10); // a deadlock kills the test binary instead of hanging the run
	log_info("outer\n");
	log_info("after\n"); // the lock was released exactly once
	alarm(0);
	log_set_cpu_id(NULL);
	log_set_sink(NULL);
	assert_string_equal(nested_capture.text, "outer\nerror: from the handler\nafter\n");
}

static void test_no_sink_discards(void **state)
{
	log_set_sink(NULL);
	log_err("nowhere\n"); // must not crash
	log_flush();
}

// The ring (log_ring_*): what the primary reads through HC_LOG_READ.
static long ring_read(uint64_t pos, char *out, size_t len, uint64_t *first, uint64_t *end)
{
	memset(out, 0, len);
	return log_ring_read(pos, out, len, first, end);
}

static void test_ring_keeps_positions_across_attach_and_wrap(void **state)
{
	static union {
		struct log_ring h;
		char bytes[sizeof(struct log_ring) + 64];
	} mem;
	char out[256];
	uint64_t first, end, start;

	log_set_sink(NULL); // the ring fills without a sink
	log_set_level(LOG_INFO);
	assert_true(ring_read(0, out, 0, &first, &start) == 0);
	log_info("early %d\n", 1);
	log_debug("below the level\n");
	assert_int_equal(ring_read(start, out, sizeof(out), &first, &end), 8);
	assert_string_equal(out, "early 1\n");
	assert_true(first == start && end == start + 8);
	// Into a 64-byte ring: the early bytes move with their positions.
	log_ring_attach(&mem, sizeof(mem));
	assert_int_equal(mem.h.size, 64);
	assert_int_equal(ring_read(start + 6, out, sizeof(out), &first, &end), 2);
	assert_string_equal(out, "1\n");
	log_err("x\n");
	assert_int_equal(ring_read(start + 8, out, sizeof(out), &first, &end), 9);
	assert_string_equal(out, "error: x\n");
	// 100 bytes more: only the last 64 stay; an older position skips to them.
	for (int i = 0; i < 10; i++)
		log_info("line %04d\n", i);
	assert_true(end + 100 == start + 117);
	assert_int_equal(ring_read(start, out, sizeof(out), &first, &end), 64);
	assert_true(first == start + 117 - 64 && end == start + 117);
	assert_memory_equal(out + 64 - 10, "line 0009\n", 10);
	assert_memory_equal(out, "003\nline 0004\n", 14);
	// A window of 5 bytes, the end exactly, and past the end.
	assert_int_equal(ring_read(end - 10, out, 5, &first, &end), 5);
	assert_memory_equal(out, "line 0009", 5);
	assert_int_equal(ring_read(end, out, sizeof(out), &first, &end), 0);
	assert_int_equal(ring_read(end + 1, out, sizeof(out), &first, &end), -1);
	// Detached (this copy runs as the primary): nothing more goes in.
	log_ring_detach();
	log_info("not kept\n");
	assert_int_equal(ring_read(0, out, sizeof(out), &first, &end), -1);
	assert_int_equal(mem.h.end, start + 117);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_directives_match_libc),
	    cmocka_unit_test(test_null_string_and_unknown_directive),
	    cmocka_unit_test(test_truncation_reports_full_length),
	    cmocka_unit_test_setup_teardown(test_levels_and_prefixes, capture_setup,
					    capture_teardown),
	    cmocka_unit_test_setup_teardown(test_long_message_arrives_whole_and_flush_reaches_sink,
					    capture_setup, capture_teardown),
	    cmocka_unit_test_setup_teardown(test_mirror_gets_errors_and_screen_lines, capture_setup,
					    capture_teardown),
	    cmocka_unit_test(test_same_cpu_reentry_does_not_deadlock),
	    cmocka_unit_test(test_no_sink_discards),
	    cmocka_unit_test(test_ring_keeps_positions_across_attach_and_wrap), // last: detaches
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
