/*
 * sandbox_bg.c — the host-facing background operations (msb/background.h): gated by the
 * exec capability like exec, and reaching the backend only where its plugin's descriptor
 * holds the operation (MSB_BACKEND_OP: a plugin built before the operations were appended
 * has a smaller struct_size, and the field would be read past its end).
 */
#include <string.h>

#include "router_internal.h"

static msb_errc refuse_missing(const msb_sandbox *s, const char *op, msb_error *err)
{
	const msb_backend *b = s->slot->backend;
	return msb_error_set(err, MSB_E_NOT_IMPLEMENTED,
			     "%s refused: sandbox backend '%s' (plugin %s) does not implement the "
			     "%s operation%s, so it cannot keep a background command",
			     op, b->name, msb_plugin_file(b->plugin), op,
			     MSB_BACKEND_HAS(b->ops, bg_list)
				     ? ""
				     : " (it was built before the background operations were "
				       "appended to the descriptor)");
}

bool msb_sandbox_can_background(const msb_sandbox *s)
{
	const struct msb_backend_v27 *ops = s->slot->backend->ops;
	return (s->slot->backend->decl.capabilities & MSB_BIT(MSB_CAP_EXEC)) &&
	       MSB_BACKEND_OP(ops, bg_start) && MSB_BACKEND_OP(ops, bg_read) &&
	       MSB_BACKEND_OP(ops, bg_signal) && MSB_BACKEND_OP(ops, bg_list);
}

/* The gate and the operation's presence, for each of the four. */
static msb_errc reach(const msb_sandbox *s, const char *op, bool present, msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_EXEC, op, err);
	if (rc == MSB_OK && !present)
		rc = refuse_missing(s, op, err);
	return rc;
}

static msb_errc check_id(const char *op, const char *id, msb_error *err)
{
	if (msb_bg_id_valid(id))
		return MSB_OK;
	return msb_error_set(err, MSB_E_VALUE,
			     "%s refused: '%.40s' is not a background command's handle ([0-9a-z], "
			     "1 to %d of them)", op, id ? id : "", MSB_BG_ID_MAX);
}

msb_errc msb_sandbox_bg_start(msb_sandbox *s, const msb_exec_request *req,
			      const char *const *env, msb_bg_status *started, msb_error *err)
{
	const struct msb_backend_v27 *ops = s->slot->backend->ops;
	msb_errc rc = reach(s, "bg_start", MSB_BACKEND_OP(ops, bg_start) != NULL, err);
	if (rc)
		return rc;
	if (!req->argv || !req->argv[0])
		return msb_error_set(err, MSB_E_VALUE, "bg_start refused: an empty argv");
	for (const char *const *e = env; e && *e; e++) {
		const char *why;
		if (!msb_env_entry_valid(*e, &why))
			return msb_error_set(err, MSB_E_VALUE,
					     "bg_start refused: environment entry '%.64s' %s", *e, why);
	}
	msb_exec_request r = *req;
	r.working_directory = req->working_directory ? req->working_directory : s->spec.work_dir;
	memset(started, 0, sizeof *started);
	return ops->bg_start(s->slot->handle, &r, env, started, err);
}

msb_errc msb_sandbox_bg_read(msb_sandbox *s, const char *id, const msb_bg_read *rq,
			     msb_bg_output *out, msb_error *err)
{
	const struct msb_backend_v27 *ops = s->slot->backend->ops;
	memset(out, 0, sizeof *out);
	msb_errc rc = reach(s, "bg_read", MSB_BACKEND_OP(ops, bg_read) != NULL, err);
	if (rc == MSB_OK)
		rc = check_id("bg_read", id, err);
	if (rc == MSB_OK && !(rq->wait >= 0))
		rc = msb_error_set(err, MSB_E_VALUE, "bg_read refused: its wait is not a number of "
				   "seconds >= 0");
	return rc ? rc : ops->bg_read(s->slot->handle, id, rq, out, err);
}

msb_errc msb_sandbox_bg_signal(msb_sandbox *s, const char *id, int signal, msb_error *err)
{
	const struct msb_backend_v27 *ops = s->slot->backend->ops;
	msb_errc rc = reach(s, "bg_signal", MSB_BACKEND_OP(ops, bg_signal) != NULL, err);
	if (rc == MSB_OK)
		rc = check_id("bg_signal", id, err);
	if (rc == MSB_OK && (signal < 1 || signal > 64))
		rc = msb_error_set(err, MSB_E_VALUE,
				   "bg_signal refused: signal %d does not exist (1..64)", signal);
	return rc ? rc : ops->bg_signal(s->slot->handle, id, signal, err);
}

msb_errc msb_sandbox_bg_list(msb_sandbox *s, msb_bg_list *out, msb_error *err)
{
	const struct msb_backend_v27 *ops = s->slot->backend->ops;
	memset(out, 0, sizeof *out);
	msb_errc rc = reach(s, "bg_list", MSB_BACKEND_OP(ops, bg_list) != NULL, err);
	return rc ? rc : ops->bg_list(s->slot->handle, out, err);
}
