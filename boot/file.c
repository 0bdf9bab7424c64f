// SPDX-License-Identifier: Apache-2.0
//
// ESP file access through the Simple File System protocol (UEFI 2.10, 13.4
// and 13.5) and file device paths (10.3.5.4).
#include "boot/file.h"

#include "core/log.h"
#include "core/mem.h"

#define ESP_PATH_MAX 256

bool ascii_to_ucs2(const char *in, CHAR16 *out, size_t cap)
{
	size_t i = 0;

	for (; in[i]; i++) {
		if (i + 1 >= cap)
			return false;
		out[i] = (CHAR16)(unsigned char)in[i];
	}
	out[i] = 0;
	return cap > 0;
}

EFI_STATUS esp_open(struct esp *esp, EFI_BOOT_SERVICES *bs, EFI_HANDLE image)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL, fs_guid = SIMPLE_FILE_SYSTEM_PROTOCOL;
	EFI_LOADED_IMAGE *li;
	EFI_FILE_IO_INTERFACE *fs;
	EFI_STATUS s;

	*esp = (struct esp){.bs = bs};
	s = bs->HandleProtocol(image, &li_guid, (void **)&li);
	if (EFI_ERROR(s))
		return s;
	esp->device = li->DeviceHandle;
	s = bs->HandleProtocol(esp->device, &fs_guid, (void **)&fs);
	if (EFI_ERROR(s))
		return s;
	return fs->OpenVolume(fs, &esp->root);
}

static EFI_STATUS open_file(struct esp *esp, const char *path, EFI_FILE_HANDLE *f)
{
	CHAR16 wpath[ESP_PATH_MAX];

	if (!esp->root || !ascii_to_ucs2(path, wpath, ESP_PATH_MAX))
		return EFI_INVALID_PARAMETER;
	return esp->root->Open(esp->root, f, wpath, EFI_FILE_MODE_READ, 0);
}

bool esp_exists(struct esp *esp, const char *path)
{
	EFI_FILE_HANDLE f;

	if (EFI_ERROR(open_file(esp, path, &f)))
		return false;
	f->Close(f);
	return true;
}

static EFI_STATUS file_size(EFI_BOOT_SERVICES *bs, EFI_FILE_HANDLE f, uint64_t *size)
{
	EFI_GUID info_guid = EFI_FILE_INFO_ID;
	UINTN len = 0;
	EFI_FILE_INFO *info = NULL;
	EFI_STATUS s = f->GetInfo(f, &info_guid, &len, NULL);

	if (s != EFI_BUFFER_TOO_SMALL)
		return EFI_ERROR(s) ? s : EFI_DEVICE_ERROR;
	s = bs->AllocatePool(EfiLoaderData, len, (void **)&info);
	if (EFI_ERROR(s))
		return s;
	s = f->GetInfo(f, &info_guid, &len, info);
	if (!EFI_ERROR(s))
		*size = info->FileSize;
	bs->FreePool(info);
	return s;
}

EFI_STATUS esp_read(struct esp *esp, const char *path, EFI_MEMORY_TYPE mem_type, uint64_t max,
		    void **data, uint64_t *size)
{
	EFI_FILE_HANDLE f;
	EFI_STATUS s = open_file(esp, path, &f);
	uint64_t len = 0;
	void *buf = NULL;

	if (EFI_ERROR(s))
		return s;
	s = file_size(esp->bs, f, &len);
	if (!EFI_ERROR(s) && len > max)
		s = EFI_BAD_BUFFER_SIZE;
	if (!EFI_ERROR(s))
		s = esp->bs->AllocatePool(mem_type, len + 1, &buf);
	if (!EFI_ERROR(s)) {
		UINTN got = len;
		s = f->Read(f, &got, buf);
		if (!EFI_ERROR(s) && got != len)
			s = EFI_DEVICE_ERROR;
	}
	f->Close(f);
	if (EFI_ERROR(s)) {
		if (buf)
			esp->bs->FreePool(buf);
		return s;
	}
	((char *)buf)[len] = '\0';
	*data = buf;
	*size = len;
	return EFI_SUCCESS;
}

static size_t device_path_size(const EFI_DEVICE_PATH *dp)
{
	const uint8_t *p = (const uint8_t *)dp;
	size_t total = 0;

	for (;;) {
		const EFI_DEVICE_PATH *n = (const EFI_DEVICE_PATH *)(p + total);
		size_t len = (size_t)n->Length[0] | ((size_t)n->Length[1] << 8);
		if (n->Type == END_DEVICE_PATH_TYPE && n->SubType == END_ENTIRE_DEVICE_PATH_SUBTYPE)
			return total; // without the end node
		if (len < 4)
			return 0;
		total += len;
	}
}

EFI_DEVICE_PATH *esp_file_device_path(struct esp *esp, const char *path)
{
	EFI_GUID dp_guid = DEVICE_PATH_PROTOCOL;
	EFI_DEVICE_PATH *dev;
	size_t plen = 0;

	if (EFI_ERROR(esp->bs->HandleProtocol(esp->device, &dp_guid, (void **)&dev)))
		return NULL;
	while (path[plen])
		plen++;
	size_t dev_len = device_path_size(dev);
	size_t node_len = 4 + (plen + 1) * sizeof(CHAR16);
	uint8_t *out;

	if (node_len > 0xffff ||
	    EFI_ERROR(esp->bs->AllocatePool(EfiLoaderData, dev_len + node_len + 4, (void **)&out)))
		return NULL;
	memcpy(out, dev, dev_len);
	EFI_DEVICE_PATH *node = (EFI_DEVICE_PATH *)(out + dev_len);
	node->Type = MEDIA_DEVICE_PATH;
	node->SubType = MEDIA_FILEPATH_DP;
	node->Length[0] = (uint8_t)node_len;
	node->Length[1] = (uint8_t)(node_len >> 8);
	CHAR16 *name = (CHAR16 *)(out + dev_len + 4);
	for (size_t i = 0; i <= plen; i++) {
		CHAR16 c = (CHAR16)(unsigned char)path[i];
		memcpy(&name[i], &c, sizeof(c)); // the node is only 2-byte aligned
	}
	EFI_DEVICE_PATH *end = (EFI_DEVICE_PATH *)(out + dev_len + node_len);
	end->Type = END_DEVICE_PATH_TYPE;
	end->SubType = END_ENTIRE_DEVICE_PATH_SUBTYPE;
	end->Length[0] = 4;
	end->Length[1] = 0;
	return (EFI_DEVICE_PATH *)out;
}
