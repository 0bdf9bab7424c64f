// SPDX-License-Identifier: Apache-2.0
//
// slat.cfg parser: every accepted form, and every bad line reported with its
// line number while the rest of the configuration stays exactly as it was.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"

struct diag_log {
	unsigned int count;
	unsigned int lines[16];
	enum cfg_severity sev[16];
	char msgs[16][CFG_MSG_MAX];
};

static void record(void *ctx, enum cfg_severity sev, unsigned int line, const char *msg)
{
	struct diag_log *d = ctx;
	if (d->count < 16) {
		d->lines[d->count] = line;
		d->sev[d->count] = sev;
		snprintf(d->msgs[d->count], CFG_MSG_MAX, "%s", msg);
	}
	d->count++;
}

static void defaults(struct slat_config *cfg)
{
	cfg_set_defaults(cfg, "\\slat\\vmlinuz", "\\slat\\initrd.img", "console=ttyAMA0");
}

static unsigned int parse(struct slat_config *cfg, struct diag_log *d, const char *text)
{
	memset(d, 0, sizeof(*d));
	return cfg_parse(cfg, text, strlen(text), record, d);
}

static void test_defaults_survive_empty_file(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d, ""), 0);
	assert_string_equal(cfg.loader, "\\slat\\vmlinuz");
	assert_string_equal(cfg.initrd, "\\slat\\initrd.img");
	assert_string_equal(cfg.cmdline, "console=ttyAMA0");
	assert_int_equal(cfg.log_level, CFG_LOG_INFO);
	assert_int_equal(cfg.zap_mode, CFG_ZAP_SLOT);
	assert_false(cfg.region_arg); // load options exactly as cmdline says
	assert_true(cfg.hypervisor);
	assert_int_equal(cfg.nested_reclaim, CFG_RECLAIM_RECURSIVE);
	assert_int_equal(d.count, 0);
}

static void test_all_keys_comments_and_blanks(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d,
			       "# Slat configuration\r\n"
			       "\n"
			       "  loader = /EFI/debian/vmlinuz.efi   # forward slashes\r\n"
			       "initrd=\\EFI\\debian\\initrd.img\n"
			       "cmdline = console=ttyS0 root=/dev/vda1 quiet\n"
			       "log = debug\n"
			       "zap = all"),
			 0);
	assert_string_equal(cfg.loader, "\\EFI\\debian\\vmlinuz.efi");
	assert_string_equal(cfg.initrd, "\\EFI\\debian\\initrd.img");
	assert_string_equal(cfg.cmdline, "console=ttyS0 root=/dev/vda1 quiet");
	assert_int_equal(cfg.log_level, CFG_LOG_DEBUG);
	assert_int_equal(cfg.zap_mode, CFG_ZAP_ALL);
	assert_int_equal(d.count, 0);
}

static void test_quoted_value_keeps_hash_and_blanks(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d, "cmdline = \" a#b  \"  # comment\n"), 0);
	assert_string_equal(cfg.cmdline, " a#b  ");
}

static void test_empty_initrd_means_none(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d, "initrd =\n"), 0);
	assert_string_equal(cfg.initrd, "");
}

static void test_bad_lines_report_line_and_keep_defaults(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	unsigned int errors = parse(&cfg, &d,
				    "log = info\n"	     // 1 fine
				    "colour = blue\n"	     // 2 unknown key
				    "just some words\n"	     // 3 no '='
				    "log = loud\n"	     // 4 unknown value
				    "loader = vmlinuz\n"     // 5 relative path
				    "loader = \\a*b\n"	     // 6 bad path character
				    "cmdline = \"unclosed\n" // 7 unterminated quote
				    "loader =\n"	     // 8 empty loader
				    "cmdline = \"a\" b\n"    // 9 text after quote
				    "zap = slot\n");	     // 10 fine
	assert_int_equal(errors, 8);
	assert_int_equal(cfg.errors, 8);
	assert_int_equal(d.count, 8);
	unsigned int want[] = {2, 3, 4, 5, 6, 7, 8, 9};
	for (unsigned int i = 0; i < 8; i++) {
		assert_int_equal(d.lines[i], want[i]);
		assert_int_equal(d.sev[i], CFG_ERROR);
	}
	assert_non_null(strstr(d.msgs[0], "unknown key 'colour'"));
	assert_non_null(strstr(d.msgs[2], "unknown value 'loud'"));
	assert_non_null(strstr(d.msgs[3], "ESP root"));
	// Nothing the bad lines named took effect.
	assert_string_equal(cfg.loader, "\\slat\\vmlinuz");
	assert_string_equal(cfg.cmdline, "console=ttyAMA0");
	assert_int_equal(cfg.log_level, CFG_LOG_INFO);
}

static void test_duplicate_key_warns_and_later_wins(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d, "log = warn\nlog = error\n"), 0);
	assert_int_equal(cfg.log_level, CFG_LOG_ERROR);
	assert_int_equal(d.count, 1);
	assert_int_equal(d.sev[0], CFG_WARNING);
	assert_int_equal(d.lines[0], 2);
	assert_int_equal(cfg.warnings, 1);
}

static void test_too_long_value_is_refused_whole(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	char text[CFG_CMDLINE_MAX + 32];
	defaults(&cfg);
	strcpy(text, "cmdline = ");
	memset(text + 10, 'x', CFG_CMDLINE_MAX);
	text[10 + CFG_CMDLINE_MAX] = '\0';
	assert_int_equal(parse(&cfg, &d, text), 1);
	assert_string_equal(cfg.cmdline, "console=ttyAMA0");
	assert_non_null(strstr(d.msgs[0], "too long"));
	// One byte less fits exactly.
	text[10 + CFG_CMDLINE_MAX - 1] = '\0';
	assert_int_equal(parse(&cfg, &d, text), 0);
	assert_int_equal(strlen(cfg.cmdline), CFG_CMDLINE_MAX - 1);
}

static void test_binary_file_changes_nothing(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	static const char blob[] = "loader = \\x\n\0\x01\x02garbage";
	defaults(&cfg);
	memset(&d, 0, sizeof(d));
	assert_int_equal(cfg_parse(&cfg, blob, sizeof(blob), record, &d), 1);
	assert_string_equal(cfg.loader, "\\slat\\vmlinuz");
	assert_non_null(strstr(d.msgs[0], "not a text file"));
}

static void test_bom_and_control_characters(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d, "\xef\xbb\xbflog = warn\ncmdline = a\x01z\n"), 1);
	assert_int_equal(cfg.log_level, CFG_LOG_WARN);
	assert_int_equal(d.lines[0], 2);
	assert_string_equal(cfg.cmdline, "console=ttyAMA0");
}

static void test_region_arg_and_hypervisor_keys(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d, "region_arg = yes\nhypervisor = off # baseline\n"), 0);
	assert_true(cfg.region_arg);
	assert_false(cfg.hypervisor);
	assert_int_equal(parse(&cfg, &d, "region_arg = no\nhypervisor = on\n"), 0);
	assert_false(cfg.region_arg);
	assert_true(cfg.hypervisor);
	assert_int_equal(d.count, 0);
}

// nested_reclaim: the benchmark's baseline; anything else is refused and
// the default (recursive) stays.
static void test_nested_reclaim_key(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(parse(&cfg, &d, "nested_reclaim = none\n"), 0);
	assert_int_equal(cfg.nested_reclaim, CFG_RECLAIM_NONE);
	assert_int_equal(parse(&cfg, &d, "nested_reclaim = recursive\n"), 0);
	assert_int_equal(cfg.nested_reclaim, CFG_RECLAIM_RECURSIVE);
	assert_int_equal(parse(&cfg, &d, "nested_reclaim = off\n"), 1);
	assert_non_null(strstr(d.msgs[0], "unknown value"));
	assert_int_equal(cfg.nested_reclaim, CFG_RECLAIM_RECURSIVE);
}

// nested_quota: a number in range; anything else is refused and the default
// (256) stays.
static void test_nested_quota_key(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	assert_int_equal(cfg.nested_quota, 256);
	assert_int_equal(parse(&cfg, &d, "nested_quota = 24\n"), 0);
	assert_int_equal(cfg.nested_quota, 24);
	assert_int_equal(parse(&cfg, &d, "nested_quota = 4096\n"), 0);
	assert_int_equal(cfg.nested_quota, 4096);
	const char *bad[] = {"nested_quota = 15\n",  "nested_quota = 4097\n",
			     "nested_quota = 1e3\n", "nested_quota =\n",
			     "nested_quota = -20\n", "nested_quota = 99999999999999999999999\n"};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&cfg, &d, bad[i]), 1);
		assert_non_null(strstr(d.msgs[0], "not a number in range"));
		assert_int_equal(cfg.nested_quota, 4096);
	}
}

static void test_bad_region_arg_and_hypervisor_values(void **state)
{
	struct slat_config cfg;
	struct diag_log d;
	defaults(&cfg);
	unsigned int errors = parse(&cfg, &d,
				    "region_arg = yes\n"   // 1 fine
				    "region_arg = 1\n"	   // 2 not yes/no
				    "hypervisor = no\n"	   // 3 not on/off
				    "hypervisor =\n"	   // 4 empty
				    "region_arg = YES\n"); // 5 case matters
	assert_int_equal(errors, 4);
	assert_int_equal(d.count, 4);
	unsigned int want[] = {2, 3, 4, 5};
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(d.lines[i], want[i]);
		assert_int_equal(d.sev[i], CFG_ERROR);
		assert_non_null(strstr(d.msgs[i], "unknown value"));
	}
	// The good line held; the bad ones changed nothing.
	assert_true(cfg.region_arg);
	assert_true(cfg.hypervisor);
}

static void test_names(void **state)
{
	assert_string_equal(cfg_log_level_name(CFG_LOG_DEBUG), "debug");
	assert_string_equal(cfg_zap_mode_name(CFG_ZAP_ALL), "all");
	assert_string_equal(cfg_zap_mode_name((enum cfg_zap_mode)7), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_survive_empty_file),
	    cmocka_unit_test(test_all_keys_comments_and_blanks),
	    cmocka_unit_test(test_quoted_value_keeps_hash_and_blanks),
	    cmocka_unit_test(test_empty_initrd_means_none),
	    cmocka_unit_test(test_bad_lines_report_line_and_keep_defaults),
	    cmocka_unit_test(test_duplicate_key_warns_and_later_wins),
	    cmocka_unit_test(test_too_long_value_is_refused_whole),
	    cmocka_unit_test(test_binary_file_changes_nothing),
	    cmocka_unit_test(test_bom_and_control_characters),
	    cmocka_unit_test(test_region_arg_and_hypervisor_keys),
	    cmocka_unit_test(test_nested_reclaim_key),
	    cmocka_unit_test(test_nested_quota_key),
	    cmocka_unit_test(test_bad_region_arg_and_hypervisor_values),
	    cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
