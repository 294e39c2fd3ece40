/*
 * plugins/qemu/qemu_snapshot.c — the `snapshot` capability (issue 22): a running microVM's
 * whole state saved under a name, and new sandboxes forked from it.
 *
 * The guest's files live in its own memory (its initramfs, a store image's overlay on a
 * tmpfs; nothing is shared with the host but a read-only image disk), so the VM's
 * migration state is the sandbox: memory, files and running processes. Saving stops the
 * VM, migrates it (all of its RAM, whether booted or a template clone) into
 * <snapshot>/state, and runs it on. A fork starts QEMU with the same machine (vm.kind: the
 * RAM's backend and the image disk), loads the state, and takes its own identity like a
 * template clone (entropy reseeded, clock, hostname): it is the source at save time, with
 * an RNG of its own. The state's SHA-256 is recorded and checked before each fork: a
 * snapshot that fails it is refused, never booted fresh in its place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qemu_internal.h"

msb_errc qemu_vm_kind_write(const char *dir, bool ram_backend, const char *block, msb_error *err)
{
	char *path = msb_driver_path(dir, "vm.kind");
	FILE *f = path ? fopen(path, "we") : NULL;
	bool ok = f && fprintf(f, "ram=%s\nblock=%s\n", ram_backend ? "backend" : "machine",
			       block ? block : "") > 0;
	ok = f && fclose(f) == 0 && ok;
	msb_errc rc = ok ? MSB_OK : msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: "
							 "writing %s", path ? path : "vm.kind");
	free(path);
	return rc;
}

/* Read vm.kind in `dir`: *block heap (NULL for none). */
static msb_errc kind_read(const char *dir, bool *ram_backend, char **block, msb_error *err)
{
	char *path = msb_driver_path(dir, "vm.kind");
	FILE *f = path ? fopen(path, "re") : NULL;
	char line[4200];
	*ram_backend = false;
	*block = NULL;
	bool seen = false;
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "ram=", 4)) {
			*ram_backend = !strcmp(line + 4, "backend");
			seen = true;
		} else if (!strncmp(line, "block=", 6) && line[6]) {
			free(*block);
			*block = strdup(line + 6);
		}
	}
	if (f)
		fclose(f);
	msb_errc rc = seen ? MSB_OK : msb_error_set(err, MSB_E_BACKEND, "backend qemu: %s is "
						    "missing or unreadable: this VM's machine is "
						    "unknown", path ? path : "vm.kind");
	free(path);
	return rc;
}

static msb_errc write_text(const char *dir, const char *leaf, const char *text, msb_error *err)
{
	char *path = msb_driver_path(dir, leaf);
	FILE *f = path ? fopen(path, "we") : NULL;
	bool ok = f && fputs(text, f) >= 0;
	ok = f && fclose(f) == 0 && ok;
	msb_errc rc = ok ? MSB_OK : msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: "
							 "writing %s", path ? path : leaf);
	free(path);
	return rc;
}

msb_errc qemu_snapshot_save(void *p, const msb_driver_box *box, const char *snap_dir,
			    msb_error *err)
{
	const qemu_ctx *ctx = p;
	bool ram_backend;
	char *block = NULL;
	msb_errc rc = kind_read(box->dir, &ram_backend, &block, err);
	char *state = msb_driver_path(snap_dir, "state");
	if (rc == MSB_OK && !state)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (rc == MSB_OK) {
		rc = qemu_vm_save(ctx, box, state, false, err);
		/* The source runs on whatever the save said. */
		msb_error cont = MSB_ERROR_INIT;
		if (qemu_vm_cont(box, &cont) != MSB_OK && rc == MSB_OK) {
			msb_error_move(err, &cont);
			rc = err->code;
		}
		msb_error_clear(&cont);
	}
	char sum[66];
	if (rc == MSB_OK && !qemu_file_sha256(state, sum))
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: reading %s", state);
	if (rc == MSB_OK)
		rc = qemu_vm_kind_write(snap_dir, ram_backend, block, err);
	if (rc == MSB_OK) {
		sum[64] = '\n';
		sum[65] = '\0';
		rc = write_text(snap_dir, "ready", sum, err);
	}
	free(state);
	free(block);
	return rc;
}

msb_errc qemu_snapshot_start(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err)
{
	const char *snap = box->from_snapshot;
	bool ram_backend;
	char *block = NULL;
	msb_errc rc = kind_read(snap, &ram_backend, &block, err);
	char *state = msb_driver_path(snap, "state"), *ready = msb_driver_path(snap, "ready");
	char *initrd = msb_driver_path(box->dir, "initramfs.cpio");
	if (rc == MSB_OK && (!state || !ready || !initrd))
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	char want[80] = "", got[65] = "";
	FILE *f = rc == MSB_OK ? fopen(ready, "re") : NULL;
	if (f) {
		if (!fgets(want, sizeof want, f))
			want[0] = '\0';
		fclose(f);
	}
	want[strcspn(want, "\n")] = '\0';
	if (rc == MSB_OK && (!qemu_file_sha256(state, got) || strcmp(want, got)))
		rc = msb_error_set(err, MSB_E_BACKEND, "backend qemu: sandbox %s: snapshot %s "
				   "refused: its state is unreadable or its SHA-256 is not the one "
				   "recorded at its save (corrupt or altered)", box->name, snap);
	/*
	 * The loaded state replaces all of the guest's memory; QEMU only needs the machine it
	 * was saved from: the same kernel and devices, any initramfs (/init alone here).
	 */
	if (rc == MSB_OK)
		rc = qemu_guest_initramfs(ctx, NULL, initrd, NULL, 0, true, err);
	if (rc == MSB_OK)
		rc = qemu_vm_restore(ctx, box, initrd, block, NULL, ram_backend, state, err);
	if (rc == MSB_OK)
		rc = qemu_vm_clone_ready(ctx, box, err);
	if (rc == MSB_OK)
		rc = qemu_vm_kind_write(box->dir, ram_backend, block, err);
	if (initrd)
		unlink(initrd);
	free(initrd);
	free(state);
	free(ready);
	free(block);
	return rc;
}
