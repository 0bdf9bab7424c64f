// SPDX-License-Identifier: Apache-2.0
//
// Support shared by the hosted benchmark programs in tools/bench/: a monotonic
// clock, sample sets with percentiles and log2 histograms, a small streaming
// JSON writer (each program prints one JSON object on stdout, collected by
// tools/bench_run.py), a throttled progress line on stderr, key=value
// arguments. (Modelled per-operation costs: arch/host/host_be.h.)
//
// These programs are user-space tools, not part of mm/ or core/: they may use
// libc freely.
#ifndef SLAT_TOOLS_BENCH_H
#define SLAT_TOOLS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// ---- time
uint64_t bench_now_ns(void);

// ---- samples (nanoseconds or counts)
struct bench_samples {
	uint64_t *v;
	size_t n, cap;
	bool sorted;
};
void bench_samples_add(struct bench_samples *s, uint64_t x);
// Percentile p in [0, 100] by nearest rank; 0 on an empty set.
uint64_t bench_samples_pct(struct bench_samples *s, double p);
uint64_t bench_samples_max(struct bench_samples *s);
uint64_t bench_samples_min(struct bench_samples *s);
double bench_samples_mean(const struct bench_samples *s);
void bench_samples_free(struct bench_samples *s);

// ---- JSON writer: keys are ignored inside arrays (pass NULL).
struct bench_json {
	FILE *f;
	int depth;
	bool need_comma[32];
};
void bj_init(struct bench_json *j, FILE *f);
void bj_obj(struct bench_json *j, const char *key);
void bj_obj_end(struct bench_json *j);
void bj_arr(struct bench_json *j, const char *key);
void bj_arr_end(struct bench_json *j);
void bj_u64(struct bench_json *j, const char *key, uint64_t v);
void bj_i64(struct bench_json *j, const char *key, int64_t v);
// Non-finite doubles are written as null (tools/bench_check.py rejects them).
void bj_f64(struct bench_json *j, const char *key, double v);
void bj_str(struct bench_json *j, const char *key, const char *v);
void bj_bool(struct bench_json *j, const char *key, bool v);
// {"p50_ns":..,"p99_ns":..,"max_ns":..,"min_ns":..,"mean_ns":..,"n":..}
void bj_latency(struct bench_json *j, const char *key, struct bench_samples *s);
// {"edges_ns":[...],"counts":[...]}: log2 buckets [2^k, 2^(k+1)) from the
// smallest to the largest non-empty one (0 ns falls in the first bucket).
void bj_histogram(struct bench_json *j, const char *key, struct bench_samples *s);

// Opens the program's top-level object with its scenario name and status
// ("ok" or "unavailable"); bench_end closes it.
void bench_begin(struct bench_json *j, const char *scenario, const char *status);
void bench_end(struct bench_json *j);

// ---- progress line on stderr ("\r[b4] 4K per-leaf  37%"), at most 5 per
// second; bench_progress_done ends the line.
void bench_progress(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_progress_done(void);

// ---- arguments: NAME=VALUE words on the command line; quick=1 is common.
uint64_t bench_arg_u64(int argc, char **argv, const char *name, uint64_t def);
const char *bench_arg_str(int argc, char **argv, const char *name, const char *def);

// ---- die with a message (benchmarks have no recovery path)
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define BENCH_KIB (1024ull)
#define BENCH_MIB (1024ull * 1024)
#define BENCH_GIB (1024ull * 1024 * 1024)

#endif
