/*
 * plugins/qemu/qemu_guest.c — assembling the microVM's root file system, an initramfs.
 *
 * Per sandbox, because the agent's argv (its work directory, limits) is baked in as
 * /msb/agent.args: the archive is ~3 MB and written in a few milliseconds, far below the
 * boot it feeds, and it keeps every VM's guest exactly what its spec asked for.
 *
 * The guest has no userland of its own beyond busybox (Debian's busybox-static, fetched with
 * the kernel): the cloud kernel has no 9p to borrow the host's, and a VM that shares the
 * host's files would undo the point of the rung.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "initramfs.h"
#include "qemu_internal.h"
#include "vminit.h"

/*
 * The modules the guest needs, in load order (each after what it depends on). A kernel that
 * builds one in has no file for it, and the list skips it.
 */
static const char *const modules[] = {
	"kernel/drivers/virtio/virtio_ring.ko",
	"kernel/drivers/virtio/virtio.ko",
	"kernel/drivers/virtio/virtio_mmio.ko",
	"kernel/drivers/char/virtio_console.ko",
};
#define N_MODULES (sizeof modules / sizeof modules[0])

/* What a store image's root adds: its disk, its file system, and the overlay over it. */
static const char *const image_modules[] = {
	"kernel/drivers/block/virtio_blk.ko",
	"kernel/lib/libcrc32c.ko",
	"kernel/fs/erofs/erofs.ko",
	"kernel/fs/overlayfs/overlay.ko",
};
#define N_IMAGE_MODULES (sizeof image_modules / sizeof image_modules[0])

static const char *const dirs[] = { "bin", "sbin", "usr", "usr/bin", "usr/sbin", "dev", "proc",
				     "sys", "tmp", "msb", "lib", "lib/modules", "etc", "root" };
#define N_DIRS (sizeof dirs / sizeof dirs[0])

typedef struct entries {
	msb_initramfs_entry *items;
	size_t len, cap;
	char **owned; /* strings the entries point into */
	size_t n_owned, cap_owned;
} entries;

static char *keep(entries *e, char *s)
{
	if (!s)
		return NULL;
	if (e->n_owned == e->cap_owned) {
		size_t cap = e->cap_owned ? e->cap_owned * 2 : 64;
		char **v = realloc(e->owned, cap * sizeof *v);
		if (!v) {
			free(s);
			return NULL;
		}
		e->owned = v;
		e->cap_owned = cap;
	}
	return e->owned[e->n_owned++] = s;
}

/* a + b + c as a string the entries own. */
static char *join(entries *e, const char *a, const char *b, const char *c)
{
	char *s = NULL;
	if (asprintf(&s, "%s%s%s", a, b, c) < 0)
		return NULL;
	return keep(e, s);
}

static bool add(entries *e, msb_initramfs_entry item)
{
	if (!item.guest_path)
		return false;
	if (e->len == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 512;
		msb_initramfs_entry *v = realloc(e->items, cap * sizeof *v);
		if (!v)
			return false;
		e->items = v;
		e->cap = cap;
	}
	e->items[e->len++] = item;
	return true;
}

static void entries_free(entries *e)
{
	for (size_t i = 0; i < e->n_owned; i++)
		free(e->owned[i]);
	free(e->owned);
	free(e->items);
}

/*
 * busybox's applets as links, from busybox.applets (`busybox --list-full`, written by
 * fetch-guest.sh): the guest then has sh, ls, cat… on the PATH without running an
 * installer at every boot.
 */
static bool add_applets(entries *e, const char *guest_dir)
{
	char *list = join(e, guest_dir, "/busybox.applets", "");
	FILE *f = list ? fopen(list, "re") : NULL;
	if (!f)
		return list != NULL; /* no list: busybox alone, reachable as /bin/busybox */
	char line[256];
	bool ok = true;
	while (ok && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '/' || strstr(line, "..") || !strcmp(line, "bin/busybox"))
			continue;
		if (strncmp(line, "bin/", 4) && strncmp(line, "sbin/", 5) &&
		    strncmp(line, "usr/bin/", 8) && strncmp(line, "usr/sbin/", 9))
			continue;
		ok = add(e, (msb_initramfs_entry){ join(e, line, "", ""), S_IFLNK | 0777, NULL,
						  "/bin/busybox", strlen("/bin/busybox") });
	}
	fclose(f);
	return ok;
}

/* Add module `rel` (under guest_dir/modules) to the archive and its line to `list`. */
static bool add_module(entries *e, const char *guest_dir, const char *rel, char *list)
{
	char *host = join(e, guest_dir, "/modules/", rel);
	struct stat st;
	if (!host || stat(host, &st) != 0)
		return host != NULL;
	const char *base = strrchr(rel, '/') + 1;
	char *guest = join(e, "lib/modules/", base, "");
	bool ok = add(e, (msb_initramfs_entry){ guest, S_IFREG | 0644, host, NULL, 0 });
	strcat(list, "/");
	strcat(list, guest ? guest : "");
	strcat(list, "\n");
	return ok;
}

static msb_errc assemble(const qemu_ctx *ctx, const char *agent_path, const char *path,
			 const char *agent_args, size_t args_len, bool probe_only, bool image,
			 msb_error *err)
{
	entries e = { 0 };
	bool ok = true;
	for (size_t i = 0; i < N_DIRS; i++)
		ok = ok && add(&e, (msb_initramfs_entry){ dirs[i], S_IFDIR | 0755, NULL, NULL, 0 });
	/*
	 * The probe's /init is the program itself; a sandbox's is a link to /msb/init, which a
	 * store image's root sees too (/msb is bound in): a clone's identity step runs it there.
	 */
	if (probe_only)
		ok = ok && add(&e, (msb_initramfs_entry){ "init", S_IFREG | 0755, ctx->init_path,
							  NULL, 0 });
	if (!probe_only) {
		ok = ok && add(&e, (msb_initramfs_entry){ "msb/init", S_IFREG | 0755, ctx->init_path,
							  NULL, 0 });
		ok = ok && add(&e, (msb_initramfs_entry){ "init", S_IFLNK | 0777, NULL,
							  MSB_QEMU_GUEST_INIT,
							  strlen(MSB_QEMU_GUEST_INIT) });
		ok = ok && add(&e, (msb_initramfs_entry){ "msb/agent", S_IFREG | 0755, agent_path,
							  NULL, 0 });
		ok = ok && add(&e, (msb_initramfs_entry){ "msb/agent.args", S_IFREG | 0644, NULL,
							  agent_args, args_len });
		char *busybox = join(&e, ctx->guest_dir, "/busybox", "");
		ok = ok && add(&e, (msb_initramfs_entry){ "bin/busybox", S_IFREG | 0755, busybox,
							  NULL, 0 });
		ok = ok && add_applets(&e, ctx->guest_dir);
		/* The load list names only modules this kernel ships as files. */
		char list[(N_MODULES + N_IMAGE_MODULES) * 64] = "";
		for (size_t i = 0; ok && i < N_MODULES; i++)
			ok = add_module(&e, ctx->guest_dir, modules[i], list);
		for (size_t i = 0; ok && image && i < N_IMAGE_MODULES; i++)
			ok = add_module(&e, ctx->guest_dir, image_modules[i], list);
		if (image)
			ok = ok && add(&e, (msb_initramfs_entry){ "msb/image", S_IFREG | 0644, NULL,
								  "erofs\n", 6 });
		char *mods = keep(&e, strdup(list));
		ok = ok && mods && add(&e, (msb_initramfs_entry){ "msb/modules", S_IFREG | 0644, NULL,
								  mods, strlen(mods) });
	}
	msb_errc rc = ok ? msb_initramfs_write(path, e.items, e.len, err)
			 : msb_error_set(err, MSB_E_NOMEM, "qemu: out of memory assembling the guest");
	entries_free(&e);
	return rc;
}

msb_errc qemu_guest_initramfs(const qemu_ctx *ctx, const char *agent_path, const char *path,
			      const char *agent_args, size_t args_len, bool probe_only,
			      msb_error *err)
{
	return assemble(ctx, agent_path, path, agent_args, args_len, probe_only, false, err);
}

msb_errc qemu_guest_initramfs_image(const qemu_ctx *ctx, const char *agent_path,
				    const char *path, const char *agent_args, size_t args_len,
				    msb_error *err)
{
	return assemble(ctx, agent_path, path, agent_args, args_len, false, true, err);
}
