// SPDX-License-Identifier: Apache-2.0
//
// Loading and starting the next loader (see loader.h). The initrd protocol is
// the one Linux's EFI stub documents (drivers/firmware/efi/libstub, "initrd
// media device path"): LoadFile2 with BootPolicy FALSE returns the whole file.
#include "boot/loader.h"

#include "core/log.h"
#include "core/mem.h"

#define LINUX_INITRD_MEDIA_GUID                                                                    \
	{                                                                                          \
		0x5568e427, 0x68fc, 0x4f3d,                                                        \
		{                                                                                  \
			0xac, 0x74, 0xca, 0x55, 0x52, 0x31, 0xcc, 0x68                             \
		}                                                                                  \
	}
#define LOAD_FILE2_PROTOCOL_GUID                                                                   \
	{                                                                                          \
		0x4006c0c1, 0xfcb3, 0x403e,                                                        \
		{                                                                                  \
			0x99, 0x6d, 0x4a, 0x6c, 0x87, 0x24, 0xe0, 0x6d                             \
		}                                                                                  \
	}
#define LOADER_MAX_INITRD (1ull << 30)

// The vendor media node plus the end node, packed as the spec lays them out.
struct __attribute__((packed)) initrd_device_path {
	EFI_DEVICE_PATH vendor;
	EFI_GUID guid;
	EFI_DEVICE_PATH end;
};

static struct {
	EFI_LOAD_FILE_PROTOCOL proto; // LoadFile2 has LoadFile's layout
	const void *data;
	uint64_t size;
} initrd_lf2;

static struct initrd_device_path initrd_dp = {
    .vendor = {MEDIA_DEVICE_PATH, MEDIA_VENDOR_DP, {20, 0}},
    .guid = LINUX_INITRD_MEDIA_GUID,
    .end = {END_DEVICE_PATH_TYPE, END_ENTIRE_DEVICE_PATH_SUBTYPE, {4, 0}},
};

static EFI_STATUS EFIAPI initrd_load_file(struct _EFI_LOAD_FILE_PROTOCOL *self,
					  EFI_DEVICE_PATH *path, BOOLEAN boot_policy, UINTN *size,
					  VOID *buf)
{
	if (self != &initrd_lf2.proto || !size || boot_policy)
		return EFI_INVALID_PARAMETER;
	if (!buf || *size < initrd_lf2.size) {
		*size = initrd_lf2.size;
		return EFI_BUFFER_TOO_SMALL;
	}
	memcpy(buf, initrd_lf2.data, initrd_lf2.size);
	*size = initrd_lf2.size;
	return EFI_SUCCESS;
}

static EFI_STATUS install_initrd(struct esp *esp, const char *path)
{
	EFI_GUID dp_guid = DEVICE_PATH_PROTOCOL, lf2_guid = LOAD_FILE2_PROTOCOL_GUID;
	EFI_HANDLE handle = NULL;
	void *data;
	uint64_t size;
	EFI_STATUS s = esp_read(esp, path, EfiLoaderData, LOADER_MAX_INITRD, &data, &size);

	if (EFI_ERROR(s)) {
		log_err("slat: cannot read initrd %s (0x%llx)\n", path, (unsigned long long)s);
		return s;
	}
	initrd_lf2.proto.LoadFile = initrd_load_file;
	initrd_lf2.data = data;
	initrd_lf2.size = size;
	s = esp->bs->InstallMultipleProtocolInterfaces(&handle, &dp_guid, &initrd_dp, &lf2_guid,
						       &initrd_lf2.proto, NULL);
	if (EFI_ERROR(s))
		log_err("slat: cannot install the initrd LoadFile2 protocol (0x%llx)\n",
			(unsigned long long)s);
	else
		log_info("slat: initrd %s, %llu KiB, offered via LoadFile2\n", path,
			 (unsigned long long)(size / 1024));
	return s;
}

static EFI_STATUS set_load_options(EFI_BOOT_SERVICES *bs, EFI_HANDLE child, const char *cmdline)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_LOADED_IMAGE *li;
	size_t n = 0;
	CHAR16 *w;

	while (cmdline[n])
		n++;
	EFI_STATUS s = bs->HandleProtocol(child, &li_guid, (void **)&li);
	if (!EFI_ERROR(s))
		s = bs->AllocatePool(EfiLoaderData, (n + 1) * sizeof(CHAR16), (void **)&w);
	if (EFI_ERROR(s))
		return s;
	ascii_to_ucs2(cmdline, w, n + 1);
	li->LoadOptions = w;
	li->LoadOptionsSize = (UINT32)((n + 1) * sizeof(CHAR16));
	return EFI_SUCCESS;
}

bool loader_secure_boot_on(EFI_SYSTEM_TABLE *st)
{
	EFI_GUID global = EFI_GLOBAL_VARIABLE;
	UINT8 on = 0;
	UINTN size = sizeof(on);
	EFI_STATUS s = st->RuntimeServices->GetVariable(L"SecureBoot", &global, NULL, &size, &on);

	return !EFI_ERROR(s) && size == sizeof(on) && on == 1;
}

// LoadImage's two refusals by the platform's policy (UEFI 2.10, 7.4):
// EFI_ACCESS_DENIED, nothing loaded; EFI_SECURITY_VIOLATION, loaded but not
// to be started (the caller unloads it). Under Secure Boot both mean the
// image has no signature the firmware's db trusts (or one its dbx revokes).
static bool refused_by_policy(EFI_STATUS s)
{
	return s == EFI_ACCESS_DENIED || s == EFI_SECURITY_VIOLATION;
}

// Logs why LoadImage of `loader` failed and unloads what it left loaded.
static void report_load_failure(EFI_BOOT_SERVICES *bs, const char *loader, EFI_STATUS s,
				EFI_HANDLE child)
{
	if (s == EFI_SECURITY_VIOLATION && child)
		bs->UnloadImage(child);
	if (refused_by_policy(s))
		log_err(
		    "slat: Secure Boot: the firmware refused %s (LoadImage 0x%llx: no signature "
		    "it trusts); sign it with a key in the firmware's db (make image SIGN=1 "
		    "SIGN_ALSO=slat/vmlinuz, docs/real-hardware.md)\n",
		    loader, (unsigned long long)s);
	else
		log_err("slat: LoadImage %s failed (0x%llx)\n", loader, (unsigned long long)s);
}

EFI_STATUS loader_check(EFI_HANDLE parent, struct esp *esp, const char *loader)
{
	EFI_BOOT_SERVICES *bs = esp->bs;
	EFI_HANDLE child = NULL;
	EFI_DEVICE_PATH *dp = esp_file_device_path(esp, loader);
	EFI_STATUS s;

	if (!dp) {
		log_err("slat: no device path for %s\n", loader);
		return EFI_OUT_OF_RESOURCES;
	}
	s = bs->LoadImage(FALSE, parent, dp, NULL, 0, &child);
	if (EFI_ERROR(s)) {
		report_load_failure(bs, loader, s, child);
		return s;
	}
	bs->UnloadImage(child);
	log_info("slat: Secure Boot: the firmware accepts %s\n", loader);
	return EFI_SUCCESS;
}

EFI_STATUS loader_start(EFI_HANDLE parent, struct esp *esp, const struct loader_request *req)
{
	EFI_BOOT_SERVICES *bs = esp->bs;
	EFI_HANDLE child = NULL;
	EFI_DEVICE_PATH *dp = esp_file_device_path(esp, req->loader);
	EFI_STATUS s;

	if (!dp) {
		log_err("slat: no device path for %s\n", req->loader);
		return EFI_OUT_OF_RESOURCES;
	}
	if (req->initrd[0] && EFI_ERROR((s = install_initrd(esp, req->initrd))))
		return s;
	s = bs->LoadImage(FALSE, parent, dp, NULL, 0, &child);
	if (EFI_ERROR(s)) {
		report_load_failure(bs, req->loader, s, child);
		return s;
	}
	// An empty cmdline means no load options at all, as when the boot
	// manager starts an image from a boot option without optional data.
	s = req->cmdline[0] ? set_load_options(bs, child, req->cmdline) : EFI_SUCCESS;
	if (EFI_ERROR(s)) {
		log_err("slat: cannot set load options (0x%llx)\n", (unsigned long long)s);
		return s;
	}
	log_screen("slat: starting %s with \"%s\"\n", req->loader, req->cmdline);
	log_flush();
	s = bs->StartImage(child, NULL, NULL);
	log_err("slat: %s returned 0x%llx\n", req->loader, (unsigned long long)s);
	return EFI_ERROR(s) ? s : EFI_ABORTED;
}
