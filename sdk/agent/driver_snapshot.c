/*
 * driver_snapshot.c — the `snapshot` capability's operations for a boundary driver (issue
 * 22): names, their directories <state_dir>/snapshots/<name>/, listing and removal here;
 * what a snapshot holds and how a sandbox is forked from it, the boundary's
 * (msb_boundary.snapshot_save, and its start given box->from_snapshot).
 *
 * A name is [A-Za-z0-9._-]{1,64} not starting with '.': it becomes a path component, so
 * anything else is refused (ValueError) before a path is built from it.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver_internal.h"

#define SNAPSHOT_NAME_MAX 64

static bool name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > SNAPSHOT_NAME_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static msb_errc check(const msb_backend_instance *inst, const char *op, const char *name,
		      msb_error *err)
{
	if (!inst->boundary.snapshot_save)
		return msb_error_set(err, MSB_E_NOT_IMPLEMENTED, "backend %s: %s refused: this "
				     "backend cannot snapshot a sandbox", inst->boundary.name, op);
	if (name && !name_ok(name))
		return msb_error_set(err, MSB_E_VALUE, "backend %s: %s refused: snapshot name "
				     "'%.80s' is not 1 to %d of [A-Za-z0-9._-] (not starting with '.')",
				     inst->boundary.name, op, name, SNAPSHOT_NAME_MAX);
	return MSB_OK;
}

/* <state_dir>/snapshots[/<name>], heap; NULL when out of memory. */
static char *snap_path(const msb_backend_instance *inst, const char *name)
{
	char *root = msb_driver_path(inst->config.state_dir, "snapshots");
	if (!root || !name)
		return root;
	char *p = msb_driver_path(root, name);
	free(root);
	return p;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

msb_errc msb_driver_snapshot_save(msb_sandbox_handle *h, const char *name, msb_error *err)
{
	msb_backend_instance *inst = h->inst;
	msb_errc rc = check(inst, "snapshot save", name, err);
	if (rc != MSB_OK)
		return rc;
	char *root = snap_path(inst, NULL), *dir = snap_path(inst, name);
	if (!root || !dir)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	else if (mkdir(root, 0700) < 0 && errno != EEXIST)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: mkdir %s",
					 inst->boundary.name, root);
	else if (mkdir(dir, 0700) < 0)
		rc = errno == EEXIST
			     ? msb_error_set(err, MSB_E_VALUE, "backend %s: snapshot save refused: "
					     "a snapshot named '%s' exists (remove it first)",
					     inst->boundary.name, name)
			     : msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: mkdir %s",
						   inst->boundary.name, dir);
	else if ((rc = inst->boundary.snapshot_save(inst->boundary.ctx, &h->paths.box, dir, err)))
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); /* no half snapshot stays */
	free(root);
	free(dir);
	return rc;
}

msb_errc msb_driver_snapshot_start(msb_backend_instance *inst, const msb_key *key,
				   const msb_spec *spec, const char *name, msb_sandbox_handle **out,
				   msb_error *err)
{
	msb_errc rc = check(inst, "snapshot start", name, err);
	if (rc != MSB_OK)
		return rc;
	char *dir = snap_path(inst, name);
	struct stat st;
	if (!dir)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	else if (stat(dir, &st) != 0)
		rc = msb_error_set(err, MSB_E_VALUE, "backend %s: snapshot start refused: no "
				   "snapshot named '%s'", inst->boundary.name, name);
	else
		rc = msb_driver_acquire_from(inst, key, spec, dir, out, err);
	free(dir);
	return rc;
}

msb_errc msb_driver_snapshot_list(msb_backend_instance *inst, msb_buf *out, msb_error *err)
{
	msb_errc rc = check(inst, "snapshot list", NULL, err);
	char *root = rc == MSB_OK ? snap_path(inst, NULL) : NULL;
	if (rc == MSB_OK && !root)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	DIR *d = root ? opendir(root) : NULL;
	for (struct dirent *e; rc == MSB_OK && d && (e = readdir(d));) {
		if (!name_ok(e->d_name))
			continue; /* ".", "..", and what no save made */
		rc = msb_buf_append(out, e->d_name, strlen(e->d_name), err);
		if (rc == MSB_OK)
			rc = msb_buf_append(out, "\n", 1, err);
	}
	if (d)
		closedir(d);
	free(root);
	return rc;
}

msb_errc msb_driver_snapshot_remove(msb_backend_instance *inst, const char *name, msb_error *err)
{
	msb_errc rc = check(inst, "snapshot remove", name, err);
	char *dir = rc == MSB_OK ? snap_path(inst, name) : NULL;
	struct stat st;
	if (rc == MSB_OK && !dir)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	else if (rc == MSB_OK && lstat(dir, &st) != 0)
		rc = msb_error_set(err, MSB_E_VALUE, "backend %s: snapshot remove refused: no "
				   "snapshot named '%s'", inst->boundary.name, name);
	else if (rc == MSB_OK && nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: removing snapshot "
					 "'%s'", inst->boundary.name, name);
	free(dir);
	return rc;
}
