// SPDX-License-Identifier: Apache-2.0
//
// Slat's console log: printf-style messages written to one sink.
//
// The sink is the only thing that differs between builds: in slat.efi it is a
// UART driver (drivers/), usable before and after ExitBootServices and from
// hypervisor exception handlers (it never calls the firmware); hosted it is
// stdout or a test buffer. Each message is formatted and written while a
// spinlock is held, so messages from different CPUs never interleave. With a
// CPU-id hook installed (log_set_cpu_id), a CPU that logs while it already
// holds the lock (an exception handler interrupting a message) goes through
// instead of deadlocking on itself; its text lands inside the interrupted one.
//
// Format directives: %d %i %u %x %X %c %s %p %% with the flags `0` and `-`, a
// field width, and the length modifiers l and ll (EFI targets are LLP64: pass
// 64-bit values as `unsigned long long` with %llx, portable on both builds).
#ifndef SLAT_CORE_LOG_H
#define SLAT_CORE_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level {
	LOG_ERROR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
};

// Where the bytes go. `write` gets text exactly as formatted ("\n" line ends:
// a UART sink turns them into CRLF); `flush` (may be NULL) returns once every
// byte has left the device, e.g. before the machine powers off.
struct log_sink {
	void (*write)(void *ctx, const char *text, size_t len);
	void (*flush)(void *ctx);
	void *ctx;
};

// Installs the sink (NULL: discard everything). Not synchronised with logging
// CPUs: call it during single-threaded bring-up.
void log_set_sink(const struct log_sink *sink);

// Installs the function that names the calling CPU (0, 1, ...), used only to
// let a CPU re-enter the log from an exception handler. NULL (the default):
// no re-entry detection. Call it during single-threaded bring-up.
void log_set_cpu_id(unsigned (*cpu_id)(void));

// Messages above `level` are dropped. Default: LOG_INFO.
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

// Prints one message if `level` is enabled. Errors and warnings are prefixed
// with "error: " / "warning: ". The text is written as given (add "\n").
void log_printf(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// A box whose console is only a screen: a second sink, the firmware's text
// console (boot/), gets the error lines and log_screen()'s (always printed,
// like info) from the CPU that installed it, never from others. It calls the
// firmware, so it must never be reached from the host: log_mirror_unshare()
// clears it in a copy of this image `delta` bytes away (the resident one).
void log_set_mirror(const struct log_sink *sink);
void log_screen(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_mirror_unshare(intptr_t delta);
// Holds the mirror back (while the CPUs change mode) or lets it go on.
void log_mirror_hold(bool hold);

// Waits until the sink has sent everything (no-op without a flush hook).
void log_flush(void);

#define log_err(...)   log_printf(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_printf(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_printf(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_printf(LOG_DEBUG, __VA_ARGS__)

// ---- the ring: Slat's log in its own memory, for the primary (HC_LOG_READ) ----
// Every message that passes the level also goes into a ring, sink or not: a
// small one in the image, then the one log_ring_attach() puts in Slat's
// region, shared with the resident copy (log_ring_share). A position counts
// the bytes logged since boot; a ring holds the last `size` of them.
#define LOG_RING_EARLY 16384u
struct log_ring { // followed by its `size` bytes of data
	uint64_t end, size;
	unsigned lock; // 0 or the writing CPU's id + 1 (every copy takes this one)
};
// Moves the ring into `mem` (`bytes` with the header); bring-up only.
void log_ring_attach(void *mem, size_t bytes);
// This copy stops writing the ring: it is about to run as the primary.
void log_ring_detach(void);
// The copy of this image `delta` bytes away gets this copy's ring.
void log_ring_share(intptr_t delta);
// Up to `len` bytes from `pos` into `out`, or -1 when `pos` is past the end.
// *first: the position of out[0] (past bytes overwritten), *end: the end.
long log_ring_read(uint64_t pos, char *out, size_t len, uint64_t *first, uint64_t *end);

// Formats into `buf` (always NUL-terminated when `size` > 0). Returns the
// length the full text would have, like snprintf.
size_t log_snprintf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// A set of keys already reported, so that a message repeated by a guest
// (an unknown exit code, a faulting page) is logged once per key: at most
// LOG_ONCE_KEYS distinct keys are reported, then the set stays quiet. Zero
// is an empty set. log_once_first() is safe from every CPU, including
// exception handlers (a spin lock, never held across logging).
#define LOG_ONCE_KEYS 8
struct log_once {
	uint64_t keys[LOG_ONCE_KEYS];
	unsigned n;
	int lock;
};
// True the first time `key` is offered to `set` (while the set has room).
bool log_once_first(struct log_once *set, uint64_t key);

#endif
