// SPDX-License-Identifier: Apache-2.0
//
// core/log from several threads at once: each message reaches the sink as one
// unbroken run (the lock serialises whole messages, as between CPUs on the
// UART), and nothing is lost. Also runs under ThreadSanitizer.
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/log.h"

#define THREADS	 4
#define MESSAGES 300
#define MSG_LEN	 200 // longer than the log's staging buffer: several writes

static char sink_buf[THREADS * MESSAGES * (MSG_LEN + 1) + 1];
static size_t sink_len;
static int sink_busy; // set while a write is in progress: overlap detector
static unsigned overlaps;

static void sink_write(void *ctx, const char *text, size_t len)
{
	if (__atomic_exchange_n(&sink_busy, 1, __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
	sched_yield(); // widen the window so a missing lock shows as an overlap
	memcpy(sink_buf + sink_len, text, len);
	sink_len += len;
	__atomic_store_n(&sink_busy, 0, __ATOMIC_RELEASE);
}

static void *writer(void *arg)
{
	char body[MSG_LEN];
	char c = (char)('A' + (int)(intptr_t)arg);

	memset(body, c, sizeof(body) - 1);
	body[sizeof(body) - 1] = '\0';
	for (int i = 0; i < MESSAGES; i++)
		log_info("%s\n", body);
	return NULL;
}

static void test_messages_never_interleave(void **state)
{
	pthread_t t[THREADS];
	struct log_sink sink = {sink_write, NULL, NULL};

	log_set_sink(&sink);
	for (intptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	log_set_sink(NULL);

	assert_int_equal(overlaps, 0);
	assert_int_equal(sink_len, (size_t)THREADS * MESSAGES * MSG_LEN);
	unsigned per_thread[THREADS] = {0};
	for (size_t off = 0; off < sink_len; off += MSG_LEN) {
		char c = sink_buf[off];
		assert_true(c >= 'A' && c < 'A' + THREADS);
		for (size_t k = 0; k < MSG_LEN - 1; k++)
			assert_int_equal(sink_buf[off + k], c); // one message, one thread
		assert_int_equal(sink_buf[off + MSG_LEN - 1], '\n');
		per_thread[c - 'A']++;
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(per_thread[i], MESSAGES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_messages_never_interleave),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
