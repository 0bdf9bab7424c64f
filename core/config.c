// SPDX-License-Identifier: Apache-2.0
//
// slat.cfg parser. See config.h for the format. Freestanding: no libc.
#include "core/config.h"

#include <stdint.h>

// A bounded, always-terminated string builder for diagnostics.
struct msg {
	char buf[CFG_MSG_MAX];
	size_t len;
};

static void msg_add(struct msg *m, const char *s, size_t n)
{
	while (n-- && *s && m->len + 1 < sizeof(m->buf))
		m->buf[m->len++] = *s++;
	m->buf[m->len] = '\0';
}

static void msg_str(struct msg *m, const char *s)
{
	msg_add(m, s, SIZE_MAX);
}

// A view into the file text: never NUL-terminated, never copied until accepted.
struct span {
	const char *p;
	size_t n;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static struct span trim(struct span s)
{
	while (s.n && is_blank(s.p[0])) {
		s.p++;
		s.n--;
	}
	while (s.n && is_blank(s.p[s.n - 1]))
		s.n--;
	return s;
}

static struct span span_of(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return (struct span){s, n};
}

static bool span_is(struct span s, const char *word)
{
	size_t i = 0;
	for (; i < s.n; i++)
		if (word[i] == '\0' || word[i] != s.p[i])
			return false;
	return word[i] == '\0';
}

struct parser {
	struct slat_config *cfg;
	cfg_diag_fn diag;
	void *ctx;
	unsigned int line;
	unsigned int seen; // bit per key already set by this file
};

static void report(struct parser *ps, enum cfg_severity sev, struct msg *m)
{
	if (sev == CFG_ERROR)
		ps->cfg->errors++;
	else
		ps->cfg->warnings++;
	if (ps->diag)
		ps->diag(ps->ctx, sev, ps->line, m->buf);
}

// "<what> '<text>'; <consequence>" with the quoted text cut to fit.
static void complain(struct parser *ps, enum cfg_severity sev, const char *what, struct span text,
		     const char *consequence)
{
	struct msg m = {.len = 0};
	msg_str(&m, what);
	if (text.p) {
		msg_str(&m, " '");
		msg_add(&m, text.p, text.n > 40 ? 40 : text.n);
		msg_str(&m, text.n > 40 ? "...'" : "'");
	}
	msg_str(&m, "; ");
	msg_str(&m, consequence);
	report(ps, sev, &m);
}

static const struct span no_text = {0, 0};

// Strips the comment and, if the value is quoted, the quotes. Returns false
// (and reports) for an unterminated quote.
static bool unquote_value(struct parser *ps, struct span *v)
{
	size_t i;

	*v = trim(*v);
	if (v->n && v->p[0] == '"') {
		for (i = 1; i < v->n && v->p[i] != '"'; i++)
			;
		if (i == v->n) {
			complain(ps, CFG_ERROR, "unterminated quote", no_text,
				 "line ignored, default kept");
			return false;
		}
		struct span rest = trim((struct span){v->p + i + 1, v->n - i - 1});
		if (rest.n && rest.p[0] != '#') {
			complain(ps, CFG_ERROR, "text after the closing quote", rest,
				 "line ignored, default kept");
			return false;
		}
		*v = (struct span){v->p + 1, i - 1};
		return true;
	}
	for (i = 0; i < v->n && v->p[i] != '#'; i++)
		;
	*v = trim((struct span){v->p, i});
	return true;
}

static bool copy_value(struct parser *ps, struct span v, char *dst, size_t cap, bool is_path)
{
	if (v.n + 1 > cap) {
		complain(ps, CFG_ERROR, "value too long", v, "line ignored, default kept");
		return false;
	}
	for (size_t i = 0; i < v.n; i++) {
		unsigned char c = (unsigned char)v.p[i];
		if (c < 0x20 || c == 0x7f || (is_path && (c == '"' || c == '*' || c == '?'))) {
			complain(ps, CFG_ERROR,
				 is_path ? "character not allowed in an ESP path"
					 : "control character in value",
				 v, "line ignored, default kept");
			return false;
		}
	}
	if (is_path && v.n && v.p[0] != '\\' && v.p[0] != '/') {
		complain(ps, CFG_ERROR, "path must start at the ESP root ('\\' or '/')", v,
			 "line ignored, default kept");
		return false;
	}
	for (size_t i = 0; i < v.n; i++)
		dst[i] = (is_path && v.p[i] == '/') ? '\\' : v.p[i];
	dst[v.n] = '\0';
	return true;
}

static const char *const log_names[] = {"error", "warn", "info", "debug"};
static const char *const zap_names[] = {"slot", "all"};
static const char *const reclaim_names[] = {"recursive", "none"};
static const char *const no_yes_names[] = {"no", "yes"};
static const char *const off_on_names[] = {"off", "on"};

// A decimal number in [lo, hi].
static bool number(struct parser *ps, struct span v, unsigned int lo, unsigned int hi,
		   unsigned int *out)
{
	unsigned long long n = 0;
	size_t i = 0;

	for (; i < v.n && v.p[i] >= '0' && v.p[i] <= '9' && n <= hi; i++)
		n = n * 10 + (unsigned)(v.p[i] - '0');
	if (!v.n || i != v.n || n < lo || n > hi) {
		complain(ps, CFG_ERROR, "not a number in range:", v, "line ignored, default kept");
		return false;
	}
	*out = (unsigned int)n;
	return true;
}

static bool choose(struct parser *ps, struct span v, const char *const *names, unsigned int count,
		   unsigned int *out)
{
	for (unsigned int i = 0; i < count; i++) {
		if (span_is(v, names[i])) {
			*out = i;
			return true;
		}
	}
	complain(ps, CFG_ERROR, "unknown value", v, "line ignored, default kept");
	return false;
}

enum key_id {
	KEY_LOADER,
	KEY_INITRD,
	KEY_CMDLINE,
	KEY_LOG,
	KEY_ZAP,
	KEY_REGION_ARG,
	KEY_HYPERVISOR,
	KEY_NESTED_RECLAIM,
	KEY_NESTED_QUOTA,
	KEY_COUNT
};
static const char *const key_names[KEY_COUNT] = {
    "loader",	  "initrd",	"cmdline",	  "log",	 "zap",
    "region_arg", "hypervisor", "nested_reclaim", "nested_quota"};

static void apply(struct parser *ps, enum key_id key, struct span v)
{
	struct slat_config *cfg = ps->cfg;
	unsigned int choice;
	bool ok = false;

	switch (key) {
	case KEY_LOADER:
		if (v.n == 0) {
			complain(ps, CFG_ERROR, "empty loader path", no_text,
				 "line ignored, default kept");
			return;
		}
		ok = copy_value(ps, v, cfg->loader, sizeof(cfg->loader), true);
		break;
	case KEY_INITRD:
		ok = copy_value(ps, v, cfg->initrd, sizeof(cfg->initrd), true);
		break;
	case KEY_CMDLINE:
		ok = copy_value(ps, v, cfg->cmdline, sizeof(cfg->cmdline), false);
		break;
	case KEY_LOG:
		ok = choose(ps, v, log_names, 4, &choice);
		if (ok)
			cfg->log_level = (enum cfg_log_level)choice;
		break;
	case KEY_ZAP:
		ok = choose(ps, v, zap_names, 2, &choice);
		if (ok)
			cfg->zap_mode = (enum cfg_zap_mode)choice;
		break;
	case KEY_REGION_ARG:
		ok = choose(ps, v, no_yes_names, 2, &choice);
		if (ok)
			cfg->region_arg = choice == 1;
		break;
	case KEY_HYPERVISOR:
		ok = choose(ps, v, off_on_names, 2, &choice);
		if (ok)
			cfg->hypervisor = choice == 1;
		break;
	case KEY_NESTED_RECLAIM:
		ok = choose(ps, v, reclaim_names, 2, &choice);
		if (ok)
			cfg->nested_reclaim = (enum cfg_nested_reclaim)choice;
		break;
	case KEY_NESTED_QUOTA:
		ok = number(ps, v, CFG_NESTED_QUOTA_MIN, CFG_NESTED_QUOTA_MAX, &cfg->nested_quota);
		break;
	case KEY_COUNT:
		break;
	}
	if (ok && (ps->seen & (1u << key)))
		complain(ps, CFG_WARNING, "key set twice:", span_of(key_names[key]),
			 "the later value wins");
	if (ok)
		ps->seen |= 1u << key;
}

static void parse_line(struct parser *ps, struct span line)
{
	struct span s = trim(line);
	size_t eq;

	if (s.n == 0 || s.p[0] == '#')
		return;
	for (eq = 0; eq < s.n && s.p[eq] != '='; eq++)
		;
	if (eq == s.n) {
		complain(ps, CFG_ERROR, "expected 'key = value', found", s, "line ignored");
		return;
	}
	struct span key = trim((struct span){s.p, eq});
	struct span value = {s.p + eq + 1, s.n - eq - 1};
	for (unsigned int k = 0; k < KEY_COUNT; k++) {
		if (span_is(key, key_names[k])) {
			if (unquote_value(ps, &value))
				apply(ps, (enum key_id)k, value);
			return;
		}
	}
	complain(ps, CFG_ERROR, "unknown key", key,
		 "line ignored (keys: loader, initrd, cmdline, log, zap, region_arg, hypervisor, "
		 "nested_reclaim, nested_quota)");
}

static void set_str(char *dst, size_t cap, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < cap; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

void cfg_set_defaults(struct slat_config *cfg, const char *loader, const char *initrd,
		      const char *cmdline)
{
	set_str(cfg->loader, sizeof(cfg->loader), loader);
	set_str(cfg->initrd, sizeof(cfg->initrd), initrd);
	set_str(cfg->cmdline, sizeof(cfg->cmdline), cmdline);
	cfg->log_level = CFG_LOG_INFO;
	cfg->zap_mode = CFG_ZAP_SLOT;
	cfg->nested_reclaim = CFG_RECLAIM_RECURSIVE;
	cfg->nested_quota = CFG_NESTED_QUOTA_DEFAULT;
	cfg->region_arg = false;
	cfg->hypervisor = true;
	cfg->errors = 0;
	cfg->warnings = 0;
}

unsigned int cfg_parse(struct slat_config *cfg, const char *text, size_t len, cfg_diag_fn diag,
		       void *ctx)
{
	struct parser ps = {.cfg = cfg, .diag = diag, .ctx = ctx, .line = 0, .seen = 0};
	unsigned int errors_before = cfg->errors;
	size_t start = 0;

	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\0') {
			struct msg m = {.len = 0};
			msg_str(&m,
				"file contains NUL bytes, not a text file; ignored, defaults kept");
			report(&ps, CFG_ERROR, &m);
			return cfg->errors - errors_before;
		}
	}
	// A UTF-8 byte-order mark (Windows editors write one) is not part of line 1.
	if (len >= 3 && (unsigned char)text[0] == 0xef && (unsigned char)text[1] == 0xbb &&
	    (unsigned char)text[2] == 0xbf)
		start = 3;
	for (size_t i = start; i <= len; i++) {
		if (i == len || text[i] == '\n') {
			ps.line++;
			parse_line(&ps, (struct span){text + start, i - start});
			start = i + 1;
		}
	}
	return cfg->errors - errors_before;
}

const char *cfg_log_level_name(enum cfg_log_level level)
{
	return (unsigned int)level < 4 ? log_names[level] : "?";
}

const char *cfg_zap_mode_name(enum cfg_zap_mode mode)
{
	return (unsigned int)mode < 2 ? zap_names[mode] : "?";
}
