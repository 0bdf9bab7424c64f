// SPDX-License-Identifier: Apache-2.0
//
// slat.cfg: Slat's boot configuration, read from the ESP next to slat.efi.
//
// The file is plain text, one `key = value` per line; `#` starts a comment
// outside double quotes; a value may be double-quoted to keep leading or
// trailing blanks or a `#`. Keys:
//
//   loader   = \EFI\slat\vmlinuz.efi   next image the primary VM starts
//   initrd   = \EFI\slat\initrd.img    initial ramdisk handed to the loader
//   cmdline  = console=ttyAMA0 quiet   load options (kernel command line)
//   log      = error|warn|info|debug   Slat's console verbosity
//   zap      = slot|all                memslot invalidation policy (A/B runs)
//   region_arg = no|yes                yes: append slat.region=BASE,SIZE to the
//                                      load options (tests, debugging); default
//                                      no: the loader gets cmdline unchanged
//   hypervisor = on|off                off: start the loader exactly as usual
//                                      but without taking the virtualization
//                                      mode (the boot benchmark's baseline)
//   nested_reclaim = recursive|none    nested SVM's shadow pages: orphans
//                                      reclaimed recursively (default), or
//                                      left to the quota (benchmark baseline)
//   nested_quota = 256                 nested SVM's shadow pages at most
//                                      (16-4096): past it the oldest are zapped
//                                      and refaulted
//
// Paths are ESP paths; `/` is accepted and turned into `\`. Every problem is
// reported with its line number; the offending line is ignored and the value
// keeps its default, so a bad line never leaves a half-set configuration.
// Parsing is pure (no firmware, no allocation) so it is unit-tested hosted.
#ifndef SLAT_CORE_CONFIG_H
#define SLAT_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define CFG_PATH_MAX	256
#define CFG_CMDLINE_MAX 1024
#define CFG_MSG_MAX	160

enum cfg_log_level {
	CFG_LOG_ERROR,
	CFG_LOG_WARN,
	CFG_LOG_INFO,
	CFG_LOG_DEBUG,
};

enum cfg_zap_mode {
	CFG_ZAP_SLOT, // invalidate only the memslot's range (default)
	CFG_ZAP_ALL,  // invalidate every root (kept for side-by-side measurement)
};

enum cfg_nested_reclaim {
	CFG_RECLAIM_RECURSIVE, // orphaned shadow pages go with their last parent (default)
	CFG_RECLAIM_NONE,      // the pre-2020 behaviour, for side-by-side measurement
};

#define CFG_NESTED_QUOTA_MIN	 16
#define CFG_NESTED_QUOTA_MAX	 4096
#define CFG_NESTED_QUOTA_DEFAULT 256

struct slat_config {
	char loader[CFG_PATH_MAX];
	char initrd[CFG_PATH_MAX]; // empty: no initrd
	char cmdline[CFG_CMDLINE_MAX];
	enum cfg_log_level log_level;
	enum cfg_zap_mode zap_mode;
	bool region_arg; // append slat.region=BASE,SIZE to the load options
	bool hypervisor; // false: no virtualization mode, the loader runs bare
	enum cfg_nested_reclaim nested_reclaim;
	unsigned int nested_quota; // shadow pages of nested SVM at most
	unsigned int errors;	   // lines ignored because they were wrong
	unsigned int warnings;	   // lines accepted with a remark (e.g. duplicate key)
};

enum cfg_severity { CFG_WARNING, CFG_ERROR };

// Called once per problem; `line` is 1-based, `msg` is a complete sentence.
typedef void (*cfg_diag_fn)(void *ctx, enum cfg_severity sev, unsigned int line, const char *msg);

// Fills `cfg` with the built-in defaults; the caller supplies the
// architecture's loader, initrd and command line (any may be NULL for empty).
void cfg_set_defaults(struct slat_config *cfg, const char *loader, const char *initrd,
		      const char *cmdline);

// Applies the text of slat.cfg on top of what `cfg` holds. Returns the number
// of lines ignored as errors (0 when the file was clean). Never fails as a
// whole: a file that is not text (NUL bytes) is one error and changes nothing.
unsigned int cfg_parse(struct slat_config *cfg, const char *text, size_t len, cfg_diag_fn diag,
		       void *ctx);

const char *cfg_log_level_name(enum cfg_log_level level);
const char *cfg_zap_mode_name(enum cfg_zap_mode mode);

#endif
