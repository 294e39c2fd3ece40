/*
 * plugins/qemu/qemu_image.c — a store image as the microVM's root: the image's unpacked root
 * (msb/image_store.h) turned into a read-only erofs block image once per image digest,
 * cached beside the image as <images_dir>/images/<hex>/rootfs.erofs, and handed to QEMU as a
 * read-only virtio-blk drive. msb-qemu-init mounts it under an overlay whose upper layer is
 * guest RAM, so a sandbox writes where it likes and the cached block image never changes.
 *
 * erofs with lz4: the guest kernel has it as a module, mkfs.erofs builds a 173 MB Debian
 * root in about half a second, and it is read-only by construction — what the cache needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/image_store.h>
#include <msb/node.h>

#include "qemu_internal.h"

#define BLOCK_NAME "rootfs.erofs"

/* mkfs.erofs -zlz4 <tmp> <root>, run as QEMU is; its stderr kept in <tmp>.log for the refusal. */
static msb_errc build_block(const qemu_ctx *ctx, const char *root, const char *tmp,
			    msb_error *err)
{
	char log[4300];
	snprintf(log, sizeof log, "%s.log", tmp);
	char *argv[] = { ctx->mkfs_erofs, "-zlz4", "--quiet", (char *)tmp, (char *)root, NULL };
	int status = 0;
	msb_errc rc = qemu_launch_run(argv, log, &status, err);
	if (rc)
		return msb_error_prefix(err, "backend qemu: an image's disk is built with erofs-utils "
					"(install it, or set mkfs_erofs:)");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		unlink(log);
		return MSB_OK;
	}
	char tail[600];
	msb_driver_file_tail(log, tail, sizeof tail);
	unlink(log);
	unlink(tmp);
	return msb_error_set(err, MSB_E_BACKEND, "backend qemu: %s could not build the block "
			     "image of %s (status %d): %s", argv[0], root, status, tail);
}

msb_errc qemu_image_block(const qemu_ctx *ctx, const char *image, char **block, msb_error *err)
{
	*block = NULL;
	msb_image_record rec;
	msb_errc rc = msb_image_inspect(ctx->images_dir, image, &rec, err);
	if (rc) {
		/* A bad spec, as on every backend: MSB_E_VALUE, whatever the store answered. */
		char why[600];
		snprintf(why, sizeof why, "%s", msb_error_message(err));
		msb_error_clear(err);
		return msb_error_set(err, MSB_E_VALUE, "backend qemu: image \"%s\" refused: it is "
				     "neither \"busybox\" nor in the image store (%s)", image, why);
	}
	char *path = msb_driver_path(rec.dir, BLOCK_NAME);
	char *lock = msb_driver_path(rec.dir, BLOCK_NAME ".lock");
	rc = path && lock ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	struct stat st;
	if (!rc && stat(path, &st) != 0) {
		/* One builder per digest however many sandboxes start at once; the rest wait. */
		int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 || flock(fd, LOCK_EX) != 0)
			rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: lock %s",
						 lock);
		if (!rc && stat(path, &st) != 0) {
			char tmp[4200];
			snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
			unlink(tmp);
			rc = build_block(ctx, rec.root, tmp, err);
			if (!rc && rename(tmp, path) != 0)
				rc = msb_error_set_errno(err, MSB_E_BACKEND, errno,
							 "backend qemu: rename %s", tmp);
		}
		if (fd >= 0)
			close(fd);
	}
	/* QEMU reads ',' in an option value as a separator. */
	if (!rc && strchr(path, ','))
		rc = msb_error_set(err, MSB_E_CONFIG, "backend qemu: images_dir %s refused: QEMU "
				   "cannot take a path holding ','", ctx->images_dir);
	if (!rc) {
		*block = path;
		path = NULL;
	}
	free(path);
	free(lock);
	msb_image_record_free(&rec);
	return rc;
}

char **qemu_image_argv(char **argv, const char *block)
{
	size_t n = 0;
	while (argv[n])
		n++;
	char **out = calloc(n + 5, sizeof *out);
	char *drive = NULL;
	if (!out || asprintf(&drive, "id=msbimg,file=%s,format=raw,if=none,readonly=on", block) < 0) {
		free(out);
		return NULL;
	}
	memcpy(out, argv, n * sizeof *out);
	out[n] = "-drive";
	out[n + 1] = drive;
	out[n + 2] = "-device";
	out[n + 3] = "virtio-blk-device,drive=msbimg";
	return out;
}

msb_errc qemu_image_run_code_read(qemu_ctx *ctx, const msb_node *config, msb_error *err)
{
	const msb_node *map = msb_node_get(config, "image_run_code");
	if (!map || msb_node_is_null(map))
		return MSB_OK;
	if (map->kind != MSB_NODE_MAP)
		return msb_node_error(err, map, MSB_E_CONFIG, "image_run_code: expected a map of "
				      "image names to a run_code argv (e.g. {python: [python3]})");
	ctx->image_run_code = calloc(map->len ? map->len : 1, sizeof *ctx->image_run_code);
	if (!ctx->image_run_code)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < map->len; i++) {
		const msb_node_pair *p = &map->pairs[i];
		const char **words = NULL;
		msb_errc rc = msb_node_strings(map, p->key, &words, err);
		if (rc)
			return rc;
		size_t n = 0;
		while (words && words[n])
			n++;
		if (n == 0 || !words[0][0]) {
			free(words);
			return msb_node_error(err, p->value, MSB_E_CONFIG, "image_run_code: %s needs "
					      "a program (e.g. [python3])", p->key);
		}
		qemu_image_run_code *e = &ctx->image_run_code[ctx->n_image_run_code++];
		e->image = strdup(p->key);
		e->argv = calloc(n + 1, sizeof *e->argv);
		for (size_t k = 0; e->argv && k < n; k++)
			e->argv[k] = strdup(words[k]);
		free(words);
		bool ok = e->image && e->argv;
		for (size_t k = 0; ok && k < n; k++)
			ok = e->argv[k] != NULL;
		if (!ok)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	return MSB_OK;
}

const char *const *qemu_image_run_code_for(const qemu_ctx *ctx, const char *image)
{
	for (size_t i = 0; image && i < ctx->n_image_run_code; i++)
		if (!strcmp(ctx->image_run_code[i].image, image))
			return (const char *const *)ctx->image_run_code[i].argv;
	return NULL;
}

void qemu_image_run_code_free(qemu_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_image_run_code; i++) {
		free(ctx->image_run_code[i].image);
		for (char **a = ctx->image_run_code[i].argv; a && *a; a++)
			free(*a);
		free(ctx->image_run_code[i].argv);
	}
	free(ctx->image_run_code);
	ctx->image_run_code = NULL;
	ctx->n_image_run_code = 0;
}
