/*
 * driver_adopt.c — a warm-pool entry becoming a key's sandbox (issue 22, msb/pool.h).
 *
 * A sandbox's name is a hash of its key, so the entry's directory is renamed to the key's
 * name: everything the driver and the boundary keep is under that directory, and the
 * boundary states (.adoptable) that the running sandbox does not care where its directory
 * is now. Both locks are held, the key's first: the key's so no acquire of it starts a
 * sandbox meanwhile, the entry's so a disposal or another adopt of it waits and then finds
 * the name gone. Nothing ever takes the lock of a key and then a pool entry's in the other
 * order (an entry is never a caller's key: the router refuses its scope), so no deadlock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver_internal.h"

static bool boundary_adoptable(const msb_boundary *b)
{
	return b->struct_size >= offsetof(msb_boundary, adoptable) + sizeof b->adoptable &&
	       b->adoptable;
}

static msb_errc adopted_hook(msb_backend_instance *inst, const char *old_dir,
			     const driver_paths *to, msb_error *err)
{
	const msb_boundary *b = &inst->boundary;
	if (b->struct_size < offsetof(msb_boundary, adopted) + sizeof b->adopted || !b->adopted)
		return MSB_OK;
	return b->adopted(b->ctx, old_dir, &to->box, err);
}

/* Under both locks: check the entry and rename it to the key's name. */
static msb_errc move(msb_backend_instance *inst, driver_paths *to, driver_paths *from,
		     const msb_key *entry, const msb_key *key, const msb_spec *spec, bool *renamed,
		     bool *taken, msb_error *err)
{
	const char *bn = inst->boundary.name;
	struct stat st;
	driver_key ke, kk;
	driver_key_from(entry, &ke);
	driver_key_from(key, &kk);
	if (lstat(to->dir, &st) == 0) {
		*taken = true; /* the key's own (from an earlier run): the entry is left as it was */
		return MSB_OK;
	}
	if (lstat(from->dir, &st) != 0 || !driver_meta_matches(from, &ke, false))
		return msb_error_set(err, MSB_E_NOT_FOUND, "backend %s: pool entry %s is gone (disposed, "
				     "or adopted by another caller)", bn, from->name);
	bool alive = msb_driver_read_live_pid(&from->box) != 0 &&
		     (!inst->boundary.alive || inst->boundary.alive(inst->boundary.ctx, &from->box));
	if (!alive)
		return msb_error_set(err, MSB_E_NOT_FOUND, "backend %s: pool entry %s is not running",
				     bn, from->name);
	char identity[DRIVER_IDENTITY_MAX] = "";
	msb_errc rc = MSB_OK;
	if (inst->boundary.identity)
		rc = inst->boundary.identity(inst->boundary.ctx, spec, identity, sizeof identity, err);
	if (rc != MSB_OK)
		return rc;
	if (!driver_identity_matches(from, identity))
		return msb_error_set(err, MSB_E_VALUE, "backend %s: pool entry %s is stale: it was started "
				     "from another image than the '%s' spec names now", bn, from->name,
				     spec->kind);
	if (rename(from->dir, to->dir) != 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "backend %s: adopting pool entry %s: "
					   "rename %s to %s", bn, from->name, from->dir, to->dir);
	*renamed = true;
	/* The key's metadata replaces the entry's in one rename: never a directory without. */
	driver_paths next = *to;
	next.meta = msb_driver_path(to->dir, "meta.new");
	if (!next.meta)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	unlink(next.meta);
	rc = driver_meta_write(&next, &kk, spec->kind, err);
	if (rc == MSB_OK && rename(next.meta, to->meta) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "backend %s: adopting pool entry %s: "
					 "rename %s", bn, from->name, next.meta);
	free(next.meta);
	if (rc == MSB_OK)
		rc = adopted_hook(inst, from->dir, to, err);
	return rc;
}

msb_errc msb_driver_adopt(msb_backend_instance *inst, const msb_key *entry, const msb_key *key,
			  const msb_spec *spec, msb_sandbox_handle **out, msb_error *err)
{
	if (!boundary_adoptable(&inst->boundary))
		return msb_error_set(err, MSB_E_NOT_IMPLEMENTED, "backend %s: refused to adopt: its "
				     "boundary does not say a running sandbox survives a rename, so it "
				     "serves no pool", inst->boundary.name);
	if (spec->egress == MSB_EGRESS_ALLOWLIST)
		return msb_error_set(err, MSB_E_VALUE, "backend %s: refused to adopt under egress: "
				     "allowlist: the entry's proxy was bound for the pool's key",
				     inst->boundary.name);
	driver_paths to = { 0 }, from = { 0 };
	char name[36];
	msb_driver_sandbox_name(inst->config.state_dir, key, spec->kind, name);
	msb_errc rc = driver_paths_make(inst, name, &to, err);
	msb_driver_sandbox_name(inst->config.state_dir, entry, spec->kind, name);
	if (rc == MSB_OK && (rc = driver_paths_make(inst, name, &from, err)) != MSB_OK) {
		driver_paths_free(&to);
		return rc;
	}
	if (rc != MSB_OK)
		return rc;
	int lt = driver_lock(&to, err);
	int lf = lt < 0 ? -1 : driver_lock(&from, err);
	bool renamed = false, taken = false;
	if (lf < 0) {
		rc = MSB_E_BACKEND;
	} else {
		rc = move(inst, &to, &from, entry, key, spec, &renamed, &taken, err);
		if (rc != MSB_OK && renamed) {
			/* Renamed but not finished: the key holds it now, so its disposal is the key's. */
			msb_disposal_failure f = { 0 };
			driver_teardown(inst, &to, &f);
			msb_disposal_failure_free(&f);
		}
	}
	struct stat st;
	if (lf >= 0) {
		if (lstat(from.dir, &st) < 0 && errno == ENOENT)
			driver_unlock_remove(&from, lf);
		else
			close(lf);
	}
	if (lt >= 0) {
		if (rc != MSB_OK && lstat(to.dir, &st) < 0 && errno == ENOENT)
			driver_unlock_remove(&to, lt);
		else
			close(lt);
	}
	driver_paths_free(&to);
	driver_paths_free(&from);
	if (rc != MSB_OK || taken)
		return rc; /* taken: MSB_OK and no handle, as the contract says */
	/* The key's sandbox now: acquire finds it live and of this identity, and connects. */
	return msb_driver_acquire(inst, key, spec, out, err);
}
