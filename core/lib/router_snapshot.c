/*
 * router_snapshot.c — the `snapshot` capability through the router (issue 22): save an
 * acquired sandbox under a name, list and remove the names. Starting a sandbox from one is
 * an acquire whose spec names it (msb_spec.from_snapshot; router_acquire.c).
 *
 * Each call reaches only a backend that declares `snapshot` (the loader made sure such a
 * plugin has all four operations); one that does not is refused before it is asked, naming
 * the backend, as every capability gate does.
 */
#include <stdlib.h>
#include <string.h>

#include "router_internal.h"

static bool has_snapshot(const msb_backend *b)
{
	return (b->decl.capabilities & MSB_BIT(MSB_CAP_SNAPSHOT)) &&
	       MSB_BACKEND_OP(b->ops, snapshot_save) && MSB_BACKEND_OP(b->ops, snapshot_remove) &&
	       MSB_BACKEND_OP(b->ops, snapshot_list) && MSB_BACKEND_OP(b->ops, snapshot_start);
}

msb_errc msb_sandbox_snapshot_save(msb_sandbox *s, const char *name, msb_error *err)
{
	const msb_backend *b = s->slot->backend;
	if (!has_snapshot(b))
		return msb_error_set(err, MSB_E_NOT_IMPLEMENTED,
				     "snapshot save refused: sandbox backend '%s' does not declare the "
				     "snapshot capability; require snapshot in the '%s' spec so the "
				     "router routes it to a backend that serves it", b->name,
				     s->spec.kind);
	return msb_backend_result("snapshot_save",
				  b->ops->snapshot_save(s->slot->handle, name, err), err);
}

msb_errc msb_router_snapshot_list(msb_router *r, msb_buf *out, msb_error *err)
{
	for (size_t i = 0; i < r->n_backends; i++) {
		const msb_backend *b = r->backends[i];
		if (!has_snapshot(b))
			continue;
		msb_buf names = { 0 };
		msb_errc rc = b->ops->snapshot_list(b->self, &names, err);
		if (rc != MSB_OK) {
			msb_buf_free(&names);
			return msb_backend_result("snapshot_list", rc, err);
		}
		/* "<backend>\t<name>\n" per snapshot. */
		for (size_t at = 0; rc == MSB_OK && at < names.len;) {
			const char *p = (const char *)names.data + at;
			const char *nl = memchr(p, '\n', names.len - at);
			size_t n = nl ? (size_t)(nl - p) : names.len - at;
			if (!(rc = msb_buf_append(out, b->name, strlen(b->name), err)) &&
			    !(rc = msb_buf_append(out, "\t", 1, err)) &&
			    !(rc = msb_buf_append(out, p, n, err)))
				rc = msb_buf_append(out, "\n", 1, err);
			at += n + 1;
		}
		msb_buf_free(&names);
		if (rc != MSB_OK)
			return rc;
	}
	return MSB_OK;
}

msb_errc msb_router_snapshot_remove(msb_router *r, const char *name, msb_error *err)
{
	bool any = false;
	for (size_t i = 0; i < r->n_backends; i++) {
		const msb_backend *b = r->backends[i];
		if (!has_snapshot(b))
			continue;
		any = true;
		msb_error one = MSB_ERROR_INIT;
		msb_errc rc = b->ops->snapshot_remove(b->self, name, &one);
		if (rc == MSB_OK) {
			msb_error_clear(&one);
			return MSB_OK;
		}
		if (rc != MSB_E_VALUE) {
			msb_error_move(err, &one);
			return msb_backend_result("snapshot_remove", rc, err);
		}
		msb_error_clear(&one);
	}
	return msb_error_set(err, MSB_E_VALUE, "snapshot remove refused: %s", any
			     ? "no backend that declares snapshot has a snapshot of that name"
			     : "no registered backend declares the snapshot capability");
}
