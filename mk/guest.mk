# SPDX-License-Identifier: Apache-2.0
#
# Guest material from Debian, never vendored: Debian's current cloud kernel
# (resolved through the metapackage) and a busybox-static initramfs whose /init
# runs tests/guest/NAME.sh (kernel argument slat.test=NAME) or a shell.
# Cached under build/guest/ARCH; tools/guest.sh downloads only what is missing.

GUEST_ARCHES := aarch64 x86_64
.PHONY: guest $(addprefix guest-,$(GUEST_ARCHES))

guest: guest-$(ARCH)
$(addprefix guest-,$(GUEST_ARCHES)): guest-%: $(DEPS_STAMP)
	$(Q)bash tools/guest.sh $*
