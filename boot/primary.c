// SPDX-License-Identifier: Apache-2.0
//
// The primary VM's boot flow (see primary.h).
#include "boot/primary.h"

#include "arch/arch.h"
#include "boot/file.h"
#include "boot/handoff.h"
#include "boot/loader.h"
#include "boot/resident.h"
#include "core/config.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/plan.h"

#define SLAT_CFG_PATH	 "\\slat.cfg"
#define SLAT_CFG_MAX	 (64u << 10)
#define SLAT_REGION_SIZE (4ull << 20)
#define SLAT_LOG_RING_PAGES 64 // 256 KiB of Slat's log for the primary to read
#define CMDLINE_EXTRA	 64

static struct slat_plan boot_plan;
static struct slat_config boot_cfg;
static char boot_cmdline[CFG_CMDLINE_MAX + CMDLINE_EXTRA];
static EFI_HANDLE boot_image;

// Linux's name for the UART arch_console_init() drives on each architecture
// (arch_name()): a PL011 on arm64, a 16550 on x86.
static const struct {
	const char *arch;
	const char *cmdline;
} default_cmdlines[] = {
    {"aarch64", "console=ttyAMA0"},
    {"x86_64", "console=ttyS0"},
};

static bool name_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

// The command line when slat.cfg gives none: the console on Slat's UART.
static const char *default_cmdline(void)
{
	for (unsigned i = 0; i < sizeof(default_cmdlines) / sizeof(default_cmdlines[0]); i++) {
		if (name_eq(arch_name(), default_cmdlines[i].arch))
			return default_cmdlines[i].cmdline;
	}
	log_warn("slat: no default console for %s; the kernel picks its own\n", arch_name());
	return "";
}

static void cfg_diag(void *ctx, enum cfg_severity sev, unsigned int line, const char *msg)
{
	if (sev == CFG_ERROR)
		log_err("slat.cfg:%u: %s\n", line, msg);
	else
		log_warn("slat.cfg:%u: %s\n", line, msg);
}

// Returns true when slat.cfg exists (parsed, problems reported).
static bool read_config(struct esp *esp, struct slat_config *cfg)
{
	void *text;
	uint64_t len;

	cfg_set_defaults(cfg, "\\slat\\vmlinuz", "\\slat\\initrd.img", default_cmdline());
	EFI_STATUS s = esp_read(esp, SLAT_CFG_PATH, EfiLoaderData, SLAT_CFG_MAX, &text, &len);
	if (s == EFI_NOT_FOUND)
		return false;
	if (EFI_ERROR(s)) {
		log_err("slat.cfg: cannot read it (0x%llx); using the defaults\n",
			(unsigned long long)s);
		return true;
	}
	unsigned bad = cfg_parse(cfg, text, (size_t)len, cfg_diag, NULL);
	log_info("slat: slat.cfg read (%u line%s ignored): loader %s, initrd %s\n", bad,
		 bad == 1 ? "" : "s", cfg->loader, cfg->initrd[0] ? cfg->initrd : "(none)");
	esp->bs->FreePool(text);
	return true;
}

// ---- memory description ---------------------------------------------------
static bool memtype_is_mmio(uint32_t type)
{
	return type == EfiMemoryMappedIO || type == EfiMemoryMappedIOPortSpace;
}

static void plan_add(struct slat_plan *p, uint64_t base, uint64_t size, enum plan_mem_kind kind)
{
	if (p->n_ranges) {
		struct plan_range *last = &p->ranges[p->n_ranges - 1];
		if (last->kind == kind && last->base + last->size == base) {
			last->size += size;
			return;
		}
	}
	if (p->n_ranges < PLAN_MAX_RANGES)
		p->ranges[p->n_ranges++] = (struct plan_range){base, size, kind};
	else
		log_warn("slat: memory map has more than %u ranges; rest left as device\n",
			 PLAN_MAX_RANGES);
}

// Reads the memory map into sorted, merged ranges. Memory the firmware can
// cache (EFI_MEMORY_WB) and that is not MMIO is Normal; the rest is Device.
static EFI_STATUS plan_memory(EFI_BOOT_SERVICES *bs, struct slat_plan *p)
{
	UINTN size = 0, key, dsize;
	UINT32 dver;
	EFI_MEMORY_DESCRIPTOR *map = NULL;
	EFI_STATUS s = bs->GetMemoryMap(&size, NULL, &key, &dsize, &dver);

	if (s != EFI_BUFFER_TOO_SMALL)
		return EFI_ERROR(s) ? s : EFI_DEVICE_ERROR;
	size += 8 * dsize;
	if (EFI_ERROR((s = bs->AllocatePool(EfiLoaderData, size, (void **)&map))))
		return s;
	if (EFI_ERROR((s = bs->GetMemoryMap(&size, map, &key, &dsize, &dver)))) {
		bs->FreePool(map);
		return s;
	}
	unsigned n = (unsigned)(size / dsize);
	// Insertion sort by address (edk2 already sorts; firmware need not).
	for (unsigned i = 1; i < n; i++) {
		for (unsigned j = i; j > 0; j--) {
			EFI_MEMORY_DESCRIPTOR *a = (void *)((uint8_t *)map + (j - 1) * dsize);
			EFI_MEMORY_DESCRIPTOR *b = (void *)((uint8_t *)map + j * dsize);
			if (a->PhysicalStart <= b->PhysicalStart)
				break;
			EFI_MEMORY_DESCRIPTOR t = *a;
			*a = *b;
			*b = t;
		}
	}
	p->n_ranges = 0;
	for (unsigned i = 0; i < n; i++) {
		const EFI_MEMORY_DESCRIPTOR *d = (void *)((uint8_t *)map + i * dsize);
		bool normal = !memtype_is_mmio(d->Type) && (d->Attribute & EFI_MEMORY_WB);
		log_debug("memmap: 0x%012llx-0x%012llx type %2u attr 0x%llx -> %s\n",
			  (unsigned long long)d->PhysicalStart,
			  (unsigned long long)(d->PhysicalStart + d->NumberOfPages * 4096 - 1),
			  d->Type, (unsigned long long)d->Attribute, normal ? "normal" : "device");
		plan_add(p, d->PhysicalStart, d->NumberOfPages * 4096,
			 normal ? PLAN_MEM_NORMAL : PLAN_MEM_DEVICE);
	}
	bs->FreePool(map);
	return EFI_SUCCESS;
}

// ---- the flow ---------------------------------------------------------------
static EFI_STATUS image_base(EFI_BOOT_SERVICES *bs, EFI_HANDLE image, uint64_t *base)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_LOADED_IMAGE *li;
	EFI_STATUS s = bs->HandleProtocol(image, &li_guid, (void **)&li);

	if (!EFI_ERROR(s))
		*base = (uint64_t)(uintptr_t)li->ImageBase;
	return s;
}

static EFI_STATUS prepare_plan(EFI_HANDLE image, EFI_BOOT_SERVICES *bs, const struct fw_info *fw,
			       struct slat_plan *p)
{
	EFI_STATUS s;

	*p = (struct slat_plan){.fw = *fw,
				.log_level = (unsigned)log_get_level(),
				.zap_mode = (unsigned)boot_cfg.zap_mode,
				.nested_reclaim = (unsigned)boot_cfg.nested_reclaim,
				.nested_quota = boot_cfg.nested_quota};
	if (EFI_ERROR((s = image_base(bs, image, &p->image_base))) ||
	    EFI_ERROR((
		s = resident_alloc_region(bs, SLAT_REGION_SIZE + arch_region_extra(), &p->region))))
		return s;
	p->resident_base = p->region.base;
	if (EFI_ERROR((s = resident_copy_image(p->image_base, &p->region, &p->image_size))))
		return s;
	// The log ring moves into the region, shared with the resident copy made
	// just before (core/log.h); 4 MiB always leave room for it.
	uint64_t ring = region_alloc(&p->region, SLAT_LOG_RING_PAGES, 4096);
	log_ring_attach((void *)(uintptr_t)ring, ring ? SLAT_LOG_RING_PAGES * 4096 : 0);
	log_ring_share((intptr_t)(p->resident_base - p->image_base));
	log_mirror_unshare((intptr_t)(p->resident_base - p->image_base)); // the host's copy
	if (EFI_ERROR((s = plan_memory(bs, p)))) {
		log_err("slat: cannot read the memory map (0x%llx)\n", (unsigned long long)s);
		return s;
	}
	log_info("slat: region 0x%llx-0x%llx reserved; resident image %llu KiB copied from "
		 "0x%llx\n",
		 (unsigned long long)p->region.base,
		 (unsigned long long)(p->region.base + p->region.size - 1),
		 (unsigned long long)(p->image_size / 1024), (unsigned long long)p->image_base);
	return EFI_SUCCESS;
}

// The load options: slat.cfg's cmdline exactly, plus slat.region=BASE,SIZE
// only when slat.cfg asks for it (region_arg = yes) and there is a region.
static const char *loader_cmdline(void)
{
	if (!boot_cfg.region_arg || !boot_cfg.hypervisor)
		return boot_cfg.cmdline;
	log_snprintf(boot_cmdline, sizeof(boot_cmdline), "%s%sslat.region=0x%llx,0x%llx",
		     boot_cfg.cmdline, boot_cfg.cmdline[0] ? " " : "",
		     (unsigned long long)boot_plan.region.base,
		     (unsigned long long)boot_plan.region.size);
	return boot_cmdline;
}

// The hand-off's entry (boot/handoff.h): runs in the copy of slat.efi, so
// it reads this copy's boot_cfg and boot_plan, and `arg` is on the stack.
static EFI_STATUS start_loader(void *arg)
{
	struct esp *esp = arg;
	struct loader_request req = {
	    .loader = boot_cfg.loader,
	    .initrd = boot_cfg.initrd,
	    .cmdline = loader_cmdline(),
	};
	return loader_start(boot_image, esp, &req);
}

// Under Secure Boot, whether the firmware will start the loader is asked
// before Slat takes anything (one LoadImage more): a loader it refuses leaves
// the machine to the firmware, untouched, instead of to a hypervisor with
// nothing to run.
static EFI_STATUS check_loader_trusted(EFI_HANDLE image, EFI_SYSTEM_TABLE *st, struct esp *esp)
{
	if (!loader_secure_boot_on(st))
		return EFI_SUCCESS;
	return loader_check(image, esp, boot_cfg.loader);
}

EFI_STATUS boot_primary(EFI_HANDLE image, EFI_SYSTEM_TABLE *st, const struct fw_info *fw,
			bool *hand_back)
{
	EFI_BOOT_SERVICES *bs = st->BootServices;
	struct esp esp;
	EFI_STATUS s = esp_open(&esp, bs, image);

	if (EFI_ERROR(s)) {
		log_err("slat: cannot open the ESP (0x%llx)\n", (unsigned long long)s);
		return s;
	}
	bool have_cfg = read_config(&esp, &boot_cfg);
	log_set_level((enum log_level)boot_cfg.log_level);
	if (!esp_exists(&esp, boot_cfg.loader)) {
		if (!have_cfg) {
			log_info("slat: no slat.cfg and no %s on the ESP: nothing to boot\n",
				 boot_cfg.loader);
			return EFI_SUCCESS;
		}
		log_err("slat: loader %s not found on the ESP\n", boot_cfg.loader);
		return EFI_NOT_FOUND;
	}
	if (EFI_ERROR((s = check_loader_trusted(image, st, &esp)))) {
		*hand_back = true;
		return s;
	}
	boot_image = image;
	if (!boot_cfg.hypervisor) {
		// The benchmark's baseline: the same firmware, the same hand-off and
		// loader, without Slat's region or the virtualization mode.
		log_info("slat: hypervisor = off: starting the loader without taking the "
			 "virtualization mode\n");
	} else {
		if (EFI_ERROR((s = prepare_plan(image, bs, fw, &boot_plan))))
			return s;
		// From the take-over on this copy runs as the primary: not in the ring.
		log_ring_detach();
		// No firmware call while the CPUs change mode; then it is up again:
		// the firmware's, deprivileged, or untouched when this failed.
		log_mirror_hold(true);
		int entered = arch_enter_hypervisor(&boot_plan);
		log_mirror_hold(false);
		if (entered != 0) {
			log_err("slat: could not become the hypervisor; the firmware keeps the "
				"machine\n");
			return EFI_UNSUPPORTED;
		}
	}
	// From here on (hypervisor on): the primary VM, deprivileged.
	struct handoff h = {.image = image, .st = st, .fw = fw, .entry = start_loader, .arg = &esp};
	s = handoff_run(&h);
	log_warn("slat: no copy for the hand-off (0x%llx); starting the loader from slat.efi's "
		 "own image, which stays EfiLoaderCode\n",
		 (unsigned long long)s);
	return start_loader(&esp);
}
