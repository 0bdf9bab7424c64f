// SPDX-License-Identifier: Apache-2.0
//
// Shared support of the benchmark programs; see bench.h.
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/bench/bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bench_die(const char *fmt, ...)
{
	va_list ap;
	fputs("\nbench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

// ---- samples

void bench_samples_add(struct bench_samples *s, uint64_t x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			bench_die("out of memory for samples");
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	s->sorted = false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void samples_sort(struct bench_samples *s)
{
	if (!s->sorted && s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	s->sorted = true;
}

uint64_t bench_samples_pct(struct bench_samples *s, double p)
{
	if (!s->n)
		return 0;
	samples_sort(s);
	size_t rank = (size_t)ceil(p / 100.0 * (double)s->n);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return s->v[rank - 1];
}

uint64_t bench_samples_max(struct bench_samples *s)
{
	return bench_samples_pct(s, 100);
}

uint64_t bench_samples_min(struct bench_samples *s)
{
	return bench_samples_pct(s, 0);
}

double bench_samples_mean(const struct bench_samples *s)
{
	double sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += (double)s->v[i];
	return s->n ? sum / (double)s->n : 0;
}

void bench_samples_free(struct bench_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

// ---- JSON

void bj_init(struct bench_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

// Separator and key for a new member at the current depth.
static void bj_member(struct bench_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (key)
		fprintf(j->f, "\"%s\":", key);
}

static void bj_open(struct bench_json *j, const char *key, char c)
{
	bj_member(j, key);
	fputc(c, j->f);
	if (++j->depth >= 32)
		bench_die("JSON nesting too deep");
	j->need_comma[j->depth] = false;
}

void bj_obj(struct bench_json *j, const char *key)
{
	bj_open(j, key, '{');
}

void bj_arr(struct bench_json *j, const char *key)
{
	bj_open(j, key, '[');
}

void bj_obj_end(struct bench_json *j)
{
	fputc('}', j->f);
	j->depth--;
}

void bj_arr_end(struct bench_json *j)
{
	fputc(']', j->f);
	j->depth--;
}

void bj_u64(struct bench_json *j, const char *key, uint64_t v)
{
	bj_member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void bj_i64(struct bench_json *j, const char *key, int64_t v)
{
	bj_member(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void bj_f64(struct bench_json *j, const char *key, double v)
{
	bj_member(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);
}

void bj_str(struct bench_json *j, const char *key, const char *v)
{
	bj_member(j, key);
	fputc('"', j->f);
	for (const char *p = v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(j->f, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			fprintf(j->f, "\\u%04x", *p);
		else
			fputc(*p, j->f);
	}
	fputc('"', j->f);
}

void bj_bool(struct bench_json *j, const char *key, bool v)
{
	bj_member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void bj_latency(struct bench_json *j, const char *key, struct bench_samples *s)
{
	bj_obj(j, key);
	bj_u64(j, "n", s->n);
	bj_u64(j, "min_ns", bench_samples_min(s));
	bj_u64(j, "p50_ns", bench_samples_pct(s, 50));
	bj_u64(j, "p99_ns", bench_samples_pct(s, 99));
	bj_u64(j, "max_ns", bench_samples_max(s));
	bj_f64(j, "mean_ns", bench_samples_mean(s));
	bj_obj_end(j);
}

static unsigned log2_bucket(uint64_t x)
{
	return x < 2 ? 0 : 63 - (unsigned)__builtin_clzll(x);
}

void bj_histogram(struct bench_json *j, const char *key, struct bench_samples *s)
{
	uint64_t counts[64] = {0};
	unsigned lo = 63, hi = 0;
	for (size_t i = 0; i < s->n; i++) {
		unsigned b = log2_bucket(s->v[i]);
		counts[b]++;
		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
	}
	if (!s->n)
		lo = hi = 0;
	bj_obj(j, key);
	bj_arr(j, "edges_ns");
	for (unsigned b = lo; b <= hi + 1 && b < 64; b++)
		bj_u64(j, NULL, 1ull << b);
	bj_arr_end(j);
	bj_arr(j, "counts");
	for (unsigned b = lo; b <= hi; b++)
		bj_u64(j, NULL, counts[b]);
	bj_arr_end(j);
	bj_obj_end(j);
}

void bench_begin(struct bench_json *j, const char *scenario, const char *status)
{
	bj_init(j, stdout);
	bj_obj(j, NULL);
	bj_str(j, "scenario", scenario);
	bj_str(j, "status", status);
}

void bench_end(struct bench_json *j)
{
	bj_obj_end(j);
	fputc('\n', j->f);
	fflush(j->f);
}

// ---- progress

static uint64_t progress_last;
static bool progress_open;

void bench_progress(const char *tag, const char *fmt, ...)
{
	uint64_t now = bench_now_ns();
	if (progress_open && now - progress_last < 200000000ull)
		return;
	progress_last = now;
	progress_open = true;
	char line[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "\r\033[K[%s] %s", tag, line);
	fflush(stderr);
}

void bench_progress_done(void)
{
	if (progress_open)
		fputs("\r\033[K", stderr);
	progress_open = false;
}

// ---- arguments

const char *bench_arg_str(int argc, char **argv, const char *name, const char *def)
{
	size_t len = strlen(name);
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], name, len) && argv[i][len] == '=')
			return argv[i] + len + 1;
	return def;
}

uint64_t bench_arg_u64(int argc, char **argv, const char *name, uint64_t def)
{
	const char *s = bench_arg_str(argc, argv, name, NULL);
	if (!s)
		return def;
	char *end;
	uint64_t v = strtoull(s, &end, 0);
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10, end++;
		break;
	case 'M':
	case 'm':
		v <<= 20, end++;
		break;
	case 'G':
	case 'g':
		v <<= 30, end++;
		break;
	}
	if (*end)
		bench_die("bad value for %s: '%s'", name, s);
	return v;
}
