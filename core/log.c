// SPDX-License-Identifier: Apache-2.0
//
// Console log and the small printf-style formatter behind it. Freestanding:
// no libc, so the same file runs in slat.efi and in the hosted build.
#include "core/log.h"

#include <stdbool.h>
#include <stdint.h>

// ---- formatter ----------------------------------------------------------
// It emits the text in pieces through `out`.
typedef void (*log_out_fn)(void *ctx, const char *text, size_t len);

struct spec {
	bool left; // '-': pad on the right
	bool zero; // '0': pad with zeros
	unsigned width;
	int length; // 0: int, 1: long, 2: long long
};

static size_t emit_padded(log_out_fn out, void *ctx, const struct spec *sp, const char *text,
			  size_t len, bool numeric_neg)
{
	size_t pad = sp->width > len ? sp->width - len : 0;
	size_t total = len + pad;
	char fill = sp->zero && !sp->left ? '0' : ' ';

	// A zero-padded negative number keeps its sign in front of the zeros.
	if (numeric_neg && fill == '0') {
		out(ctx, text, 1);
		text++;
		len--;
	}
	if (!sp->left) {
		for (; pad; pad--)
			out(ctx, &fill, 1);
	}
	out(ctx, text, len);
	for (; pad; pad--)
		out(ctx, " ", 1);
	return total;
}

// Writes `v` in `base` into the end of `buf` (size >= 24); returns the start.
static char *utoa(char *end, unsigned long long v, unsigned base, bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char *p = end;

	do {
		*--p = digits[v % base];
		v /= base;
	} while (v);
	return p;
}

static unsigned long long arg_unsigned(va_list *ap, int length)
{
	if (length == 2)
		return va_arg(*ap, unsigned long long);
	if (length == 1)
		return va_arg(*ap, unsigned long);
	return va_arg(*ap, unsigned int);
}

static long long arg_signed(va_list *ap, int length)
{
	if (length == 2)
		return va_arg(*ap, long long);
	if (length == 1)
		return va_arg(*ap, long);
	return va_arg(*ap, int);
}

static const char *parse_spec(const char *f, struct spec *sp)
{
	*sp = (struct spec){0};
	for (;; f++) {
		if (*f == '-')
			sp->left = true;
		else if (*f == '0')
			sp->zero = true;
		else
			break;
	}
	while (*f >= '0' && *f <= '9')
		sp->width = sp->width * 10 + (unsigned)(*f++ - '0');
	while (*f == 'l' && sp->length < 2) {
		sp->length++;
		f++;
	}
	return f;
}

static size_t format_one(log_out_fn out, void *ctx, char conv, const struct spec *sp, va_list *ap)
{
	char buf[24];
	char *end = buf + sizeof(buf);
	char *p;

	switch (conv) {
	case 'd':
	case 'i': {
		long long v = arg_signed(ap, sp->length);
		unsigned long long mag =
		    v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
		p = utoa(end, mag, 10, false);
		if (v < 0)
			*--p = '-';
		return emit_padded(out, ctx, sp, p, (size_t)(end - p), v < 0);
	}
	case 'u':
		p = utoa(end, arg_unsigned(ap, sp->length), 10, false);
		return emit_padded(out, ctx, sp, p, (size_t)(end - p), false);
	case 'x':
	case 'X':
		p = utoa(end, arg_unsigned(ap, sp->length), 16, conv == 'X');
		return emit_padded(out, ctx, sp, p, (size_t)(end - p), false);
	case 'p':
		p = utoa(end, (uintptr_t)va_arg(*ap, void *), 16, false);
		*--p = 'x';
		*--p = '0';
		return emit_padded(out, ctx, sp, p, (size_t)(end - p), false);
	case 'c':
		buf[0] = (char)va_arg(*ap, int);
		return emit_padded(out, ctx, sp, buf, 1, false);
	case 's': {
		const char *s = va_arg(*ap, const char *);
		size_t n = 0;
		if (!s)
			s = "(null)";
		while (s[n])
			n++;
		return emit_padded(out, ctx, sp, s, n, false);
	}
	case '%':
		out(ctx, "%", 1);
		return 1;
	default:
		// Unknown directive: show it rather than guess at the argument.
		out(ctx, "%?", 2);
		return 2;
	}
}

static size_t log_vformat(log_out_fn out, void *ctx, const char *fmt, va_list ap)
{
	size_t total = 0;
	va_list args;

	va_copy(args, ap);
	while (*fmt) {
		const char *lit = fmt;
		while (*fmt && *fmt != '%')
			fmt++;
		if (fmt != lit) {
			out(ctx, lit, (size_t)(fmt - lit));
			total += (size_t)(fmt - lit);
		}
		if (!*fmt)
			break;
		struct spec sp;
		fmt = parse_spec(fmt + 1, &sp);
		if (!*fmt)
			break; // a lone '%' at the end prints nothing
		total += format_one(out, ctx, *fmt++, &sp, &args);
	}
	va_end(args);
	return total;
}

struct strbuf {
	char *buf;
	size_t size; // capacity including the NUL
	size_t used; // characters stored (< size)
};

static void strbuf_out(void *ctx, const char *text, size_t len)
{
	struct strbuf *sb = ctx;

	for (size_t i = 0; i < len && sb->used + 1 < sb->size; i++)
		sb->buf[sb->used++] = text[i];
}

static size_t log_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct strbuf sb = {buf, size, 0};
	size_t n = log_vformat(strbuf_out, &sb, fmt, ap);

	if (size)
		buf[sb.used] = '\0';
	return n;
}

size_t log_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	size_t n = log_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

// ---- log ----------------------------------------------------------------

static struct log_sink log_sink_current;
// The firmware's text console while boot services are up (log_set_mirror).
static struct log_sink log_mirror;
static unsigned log_mirror_cpu;
static bool log_mirror_held;
static enum log_level log_level_current = LOG_INFO;
static unsigned (*log_cpu_id)(void);
// 0 when free; otherwise the holder's CPU id + 1, or LOG_OWNER_ANON when no
// CPU-id hook is installed.
static unsigned log_owner;
#define LOG_OWNER_ANON (~0u)

// Returns false when this CPU already holds `owner` (a message printed from
// an exception handler that interrupted a message): it then goes through
// without taking the lock, and must not release it.
static bool owner_lock(unsigned *owner)
{
	unsigned me = log_cpu_id ? log_cpu_id() + 1 : LOG_OWNER_ANON;

	if (me != LOG_OWNER_ANON && __atomic_load_n(owner, __ATOMIC_RELAXED) == me)
		return false; // only this CPU ever stores `me`
	for (;;) {
		unsigned expected = 0;
		if (__atomic_compare_exchange_n(owner, &expected, me, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
		while (__atomic_load_n(owner, __ATOMIC_RELAXED))
			;
	}
}

static void owner_unlock(unsigned *owner, bool taken)
{
	if (taken)
		__atomic_store_n(owner, 0, __ATOMIC_RELEASE);
}

// ---- the ring -----------------------------------------------------------
// Copies of this image get its base relocations, which shift every pointer it
// initialised: so none points to a ring (log_ring_moved is set at run time,
// a later copy keeps it, as the region stays) and data follows the header.
static struct {
	struct log_ring h;
	char data[LOG_RING_EARLY];
} log_ring_early = {.h.size = LOG_RING_EARLY};
static struct log_ring *log_ring_moved; // the region's ring, once attached
static bool log_ring_detached;		// this copy runs as the primary: no ring

static struct log_ring *ring_here(void)
{
	return log_ring_detached ? 0 : log_ring_moved ? log_ring_moved : &log_ring_early.h;
}

static char *ring_at(struct log_ring *r, uint64_t pos)
{
	return (char *)(r + 1) + pos % r->size;
}

static void ring_put(struct log_ring *r, const char *text, size_t len)
{
	bool taken = owner_lock(&r->lock);

	for (size_t i = 0; taken && i < len; i++) // a nested message is left out
		*ring_at(r, r->end++) = text[i];
	owner_unlock(&r->lock, taken);
}

void log_ring_attach(void *mem, size_t bytes)
{
	struct log_ring *old = ring_here(), *r = mem;
	uint64_t keep = old ? old->end : 0;

	if (!old || bytes <= sizeof(*r))
		return;
	keep = keep < old->size ? keep : old->size;
	keep = keep < bytes - sizeof(*r) ? keep : bytes - sizeof(*r);
	// Positions stay bytes since boot: the new ring starts where the old ends.
	*r = (struct log_ring){.end = old->end - keep, .size = bytes - sizeof(*r)};
	for (uint64_t pos = r->end; pos < old->end; pos++)
		*ring_at(r, pos) = *ring_at(old, pos);
	r->end = old->end;
	log_ring_moved = r;
}

void log_ring_detach(void)
{
	log_ring_detached = true;
}

void log_ring_share(intptr_t delta)
{
	*(struct log_ring **)((uintptr_t)&log_ring_moved + (uintptr_t)delta) = log_ring_moved;
}

long log_ring_read(uint64_t pos, char *out, size_t len, uint64_t *first, uint64_t *end)
{
	struct log_ring *r = ring_here();
	long n = -1;
	bool taken = r && owner_lock(&r->lock);

	if (!r)
		return -1;
	uint64_t oldest = r->end > r->size ? r->end - r->size : 0;
	*end = r->end;
	*first = pos < oldest ? oldest : pos; // bytes already overwritten are skipped
	if (pos <= r->end)
		n = (long)(r->end - *first < len ? r->end - *first : len);
	for (long i = 0; i < n; i++)
		out[i] = *ring_at(r, *first + (uint64_t)i);
	owner_unlock(&r->lock, taken);
	return n;
}

void log_set_cpu_id(unsigned (*cpu_id)(void))
{
	log_cpu_id = cpu_id;
}

void log_set_sink(const struct log_sink *sink)
{
	log_sink_current = sink ? *sink : (struct log_sink){0};
}

void log_set_level(enum log_level level)
{
	log_level_current = level;
}

enum log_level log_get_level(void)
{
	return log_level_current;
}

// Messages are staged in a small buffer so the sink sees few, larger writes.
struct log_stage {
	char buf[128];
	size_t used;
	bool mirror; // to log_mirror only (a second pass: lines stay whole)
};

static void stage_flush(struct log_stage *st)
{
	struct log_ring *r = ring_here();

	if (st->used && st->mirror)
		log_mirror.write(log_mirror.ctx, st->buf, st->used);
	if (st->used && r && !st->mirror)
		ring_put(r, st->buf, st->used);
	if (st->used && log_sink_current.write && !st->mirror)
		log_sink_current.write(log_sink_current.ctx, st->buf, st->used);
	st->used = 0;
}

static void stage_out(void *ctx, const char *text, size_t len)
{
	struct log_stage *st = ctx;

	for (size_t i = 0; i < len; i++) {
		if (st->used == sizeof(st->buf))
			stage_flush(st);
		st->buf[st->used++] = text[i];
	}
}

static void log_stage_message(struct log_stage *st, const char *prefix, const char *fmt, va_list ap)
{
	for (; prefix && *prefix; prefix++)
		stage_out(st, prefix, 1);
	log_vformat(stage_out, st, fmt, ap);
	stage_flush(st);
}

static void log_vprintf_prefixed(const char *prefix, bool mirror, const char *fmt, va_list ap)
{
	struct log_stage st = {.used = 0};
	va_list again;

	va_copy(again, ap);
	bool taken = owner_lock(&log_owner);
	log_stage_message(&st, prefix, fmt, ap);
	// Only the CPU that installed the mirror calls the firmware.
	st.mirror = mirror && log_mirror.write && !log_mirror_held &&
		    (!log_cpu_id || log_cpu_id() == log_mirror_cpu);
	if (st.mirror)
		log_stage_message(&st, prefix, fmt, again);
	owner_unlock(&log_owner, taken);
	va_end(again);
}

void log_printf(enum log_level level, const char *fmt, ...)
{
	static const char *const prefixes[] = {
	    [LOG_ERROR] = "error: ",
	    [LOG_WARN] = "warning: ",
	    [LOG_INFO] = 0,
	    [LOG_DEBUG] = 0,
	};
	va_list ap;

	if (level > log_level_current || (!log_sink_current.write && !ring_here()))
		return;
	va_start(ap, fmt);
	log_vprintf_prefixed((unsigned)level <= LOG_DEBUG ? prefixes[level] : 0, level == LOG_ERROR,
			     fmt, ap);
	va_end(ap);
}

void log_screen(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprintf_prefixed(0, true, fmt, ap);
	va_end(ap);
}

void log_set_mirror(const struct log_sink *sink)
{
	log_mirror = sink ? *sink : (struct log_sink){0};
	log_mirror_cpu = log_cpu_id ? log_cpu_id() : 0;
}

void log_mirror_hold(bool hold)
{
	log_mirror_held = hold;
}

void log_mirror_unshare(intptr_t delta)
{
	*(struct log_sink *)((uintptr_t)&log_mirror + (uintptr_t)delta) = (struct log_sink){0};
}

void log_flush(void)
{
	if (log_sink_current.flush)
		log_sink_current.flush(log_sink_current.ctx);
}

bool log_once_first(struct log_once *set, uint64_t key)
{
	bool first = true;

	while (__atomic_exchange_n(&set->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&set->lock, __ATOMIC_RELAXED))
			;
	for (unsigned i = 0; i < set->n && first; i++)
		first = set->keys[i] != key;
	if (first && set->n < LOG_ONCE_KEYS)
		set->keys[set->n++] = key;
	else if (first)
		first = false; // set full: stay quiet
	__atomic_store_n(&set->lock, 0, __ATOMIC_RELEASE);
	return first;
}
