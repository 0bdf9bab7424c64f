# SPDX-License-Identifier: Apache-2.0
#
# `make image`: a GPT disk image for a USB stick (tools/image.sh;
# docs/real-hardware.md). It holds what `make run` puts on its ESP (mk/boot.mk's
# RUN_FILES_<arch>: slat.cfg, Debian's kernel, Slat's guest initramfs) with
# slat.efi as the removable-media default loader.
#
#   make image                      build/aarch64/slat.img (ARCH as `make run`'s)
#   make image ARCH=x86_64          build/x86_64/slat.img
#   make image SIGN=1               slat.efi signed with sbsign; the key and
#                                   certificate are SIGN_KEY / SIGN_CERT, by
#                                   default Debian's snakeoil TEST key (its private
#                                   key is public: never enroll it on a real box)
#   make image SIGN=1 SIGN_ALSO=slat/vmlinuz   also sign these ESP files (the
#                                   loader Slat starts: the firmware verifies it too)
#   IMAGE=PATH                      write the image there instead
#   IMAGE_CFG=FILE                  this slat.cfg instead of `make run`'s
#   IMAGE_FILES="SRC=ESP_PATH ..."  more files on the ESP (as RUN_FILES)

IMAGE ?= $(BUILD)/$(ARCH)/slat.img
IMAGE_CFG ?=
IMAGE_FILES ?=
SIGN ?= 0
SNAKEOIL_KEY_ENC := /usr/share/ovmf/PkKek-1-snakeoil.key
SNAKEOIL_CERT    := /usr/share/ovmf/PkKek-1-snakeoil.pem
# Debian ships the snakeoil key encrypted with the pass phrase "snakeoil"
# (/usr/share/doc/ovmf/README.Debian); sbsign would ask for it on the
# terminal, so the build decrypts a copy once.
SNAKEOIL_KEY     := $(BUILD)/sign/PkKek-1-snakeoil.key
SIGN_KEY  ?= $(SNAKEOIL_KEY)
SIGN_CERT ?= $(SNAKEOIL_CERT)
SIGN_ALSO ?=

IMAGE_ESP_FILES := $(if $(IMAGE_CFG),$(filter-out %=slat.cfg,$(RUN_FILES_$(ARCH))) \
	$(IMAGE_CFG)=slat.cfg,$(RUN_FILES_$(ARCH))) $(IMAGE_FILES)
IMAGE_SIGN_ENV := $(if $(filter 1,$(SIGN)),IMAGE_SIGN_KEY=$(SIGN_KEY) IMAGE_SIGN_CERT=$(SIGN_CERT) \
	IMAGE_SIGN_PATHS='$(SIGN_ALSO)',)

$(SNAKEOIL_KEY): | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(Q)openssl pkey -in $(SNAKEOIL_KEY_ENC) -passin pass:snakeoil -out $@
	@echo "image: decrypted Debian's snakeoil TEST key into $@ (public key material, test only)"

IMAGE_SNAKEOIL := $(if $(filter 1,$(SIGN)),$(filter $(SNAKEOIL_KEY),$(SIGN_KEY)),)

.PHONY: image
image: deps $(BUILD)/$(ARCH)/slat.efi $(RUN_DEPS_$(ARCH)) $(IMAGE_SNAKEOIL)
	$(if $(RUN_FILES_$(ARCH)),,$(error make image: no ESP files for ARCH=$(ARCH) CPU=$(CPU)))
	$(if $(SIGN_ALSO),$(if $(filter 1,$(SIGN)),,$(error make image: SIGN_ALSO needs SIGN=1)))
	$(Q)$(if $(IMAGE_SNAKEOIL),echo "image: WARNING: slat.efi signed with Debian's snakeoil TEST key" \
		"(its private key is public): for emulators only; never enroll it on a real box",true)
	$(Q)$(IMAGE_SIGN_ENV) bash tools/image.sh $(ARCH) $(IMAGE) $(BUILD)/$(ARCH)/slat.efi \
		$(IMAGE_ESP_FILES)
