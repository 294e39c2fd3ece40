/*
 * sandbox.c — the host-facing sandbox: each operation gated by the capability the serving
 * backend declares, then handed to it.
 *
 * The gate runs before the backend is reached, so a backend that does not declare a
 * capability is never asked to serve it (and need not implement a refusal of its own). The
 * exception is reclaim, which nothing gates: it is the cleanup a caller runs in a path that
 * reports rather than raises, and a cleanup that could be refused would leak a directory
 * per call.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "router_internal.h"

msb_errc router_sandbox_gate(const msb_sandbox *s, msb_capability cap, const char *op,
			     msb_error *err)
{
	const msb_backend *b = s->slot->backend;
	if (b->decl.capabilities & MSB_BIT(cap))
		return MSB_OK;
	return msb_error_set(err, MSB_E_NOT_IMPLEMENTED,
			     "sandbox backend '%s' does not declare the %s capability, so %s is refused "
			     "before it reaches the backend; require %s in the '%s' spec so the router "
			     "routes it to a backend that serves it",
			     b->name, msb_word_name(MSB_AXIS_CAPABILITY, (int)cap), op,
			     msb_word_name(MSB_AXIS_CAPABILITY, (int)cap), s->spec.kind);
}

/* working_directory NULL means the spec's work_dir. */
static const char *wd(const msb_sandbox *s, const char *working_directory)
{
	return working_directory ? working_directory : s->spec.work_dir;
}

void msb_sandbox_release(msb_sandbox *sandbox)
{
	if (!sandbox)
		return;
	router_slot_unref(sandbox->slot);
	free(sandbox->strings);
	free(sandbox->spec_storage);
	free(sandbox);
}

const msb_key *msb_sandbox_key(const msb_sandbox *sandbox)
{
	return &sandbox->key;
}

const msb_spec *msb_sandbox_spec(const msb_sandbox *sandbox)
{
	return &sandbox->spec;
}

const msb_backend *msb_sandbox_backend(const msb_sandbox *sandbox)
{
	return sandbox->slot->backend;
}

const struct msb_effective_state *msb_sandbox_effective_state(const msb_sandbox *sandbox)
{
	return &sandbox->state;
}

/* Output over the call's cap is cut there and flagged, as the contract promises, whatever
 * the backend did. */
static void hold_output(msb_buf *b, bool *truncated, size_t max)
{
	if (!max || b->len <= max)
		return;
	b->len = max;
	b->data[max] = '\0';
	*truncated = true;
}

/*
 * Every limit applies in both directions: what goes in is held to the spec's files_in as
 * what comes out is to its files_out, here, so that no backend — and no host that skips the
 * command line — carries more into a sandbox than the workload was allowed. One write is
 * one file of a transfer, so all three caps bound it. Stdin and a run_code program are
 * bytes going in too, one file's worth each.
 */
static msb_errc hold_in(const msb_sandbox *s, const char *what, const char *name, uint64_t len,
			bool is_file, msb_error *err)
{
	const msb_transfer_limits *l = &s->spec.files_in;
	if (len > l->max_bytes_per_file)
		return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
				     "%s '%s' is %" PRIu64 " bytes, over this workload's files_in "
				     "max_bytes_per_file of %" PRIu64 "; refused before it reached the "
				     "sandbox", what, name, len, l->max_bytes_per_file);
	if (is_file && len > l->max_total_bytes)
		return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
				     "%s '%s' is %" PRIu64 " bytes, over this workload's files_in "
				     "max_total_bytes of %" PRIu64 "; refused before it reached the "
				     "sandbox", what, name, len, l->max_total_bytes);
	if (is_file && l->max_files == 0)
		return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
				     "%s '%s' is refused: this workload's files_in max_files is 0", what,
				     name);
	return MSB_OK;
}

msb_errc msb_sandbox_exec(msb_sandbox *s, const msb_exec_request *req, msb_exec_result *res,
			  msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_EXEC, "exec", err);
	if (rc == MSB_OK && req->stdin_data)
		rc = hold_in(s, "the standard input of", req->argv && req->argv[0] ? req->argv[0] : "",
			     req->stdin_len, false, err);
	if (rc)
		return rc;
	msb_exec_request r = *req;
	r.working_directory = wd(s, req->working_directory);
	rc = s->slot->backend->ops->exec(s->slot->handle, &r, res, err);
	if (rc == MSB_OK) {
		hold_output(&res->out, &res->out_truncated, req->max_output);
		hold_output(&res->err, &res->err_truncated, req->max_output);
	}
	return rc;
}

/*
 * An appended operation exists only where the plugin's descriptor is large enough to hold
 * it (a plugin built before it was appended has a smaller struct_size: the field would be
 * read past its end) and is set. The refusal names what a host needs to pick another
 * backend: the operation, the backend and the file it came from.
 */
static msb_errc refuse_missing_op(const msb_sandbox *s, const char *op, msb_error *err)
{
	const msb_backend *b = s->slot->backend;
	return msb_error_set(err, MSB_E_NOT_IMPLEMENTED,
			     "%s refused: sandbox backend '%s' (plugin %s) does not implement the "
			     "%s operation%s; say `streaming: true` in the '%s' spec so the router "
			     "routes it to a backend that serves it",
			     op, b->name, msb_plugin_file(b->plugin), op,
			     MSB_BACKEND_HAS(b->ops, exec_stream) ? ""
			     : " (it was built before the operation was appended to the descriptor)",
			     s->spec.kind);
}

bool msb_sandbox_can_stream(const msb_sandbox *s)
{
	const struct msb_backend_v27 *ops = s->slot->backend->ops;
	return (s->slot->backend->decl.capabilities & MSB_BIT(MSB_CAP_EXEC)) &&
	       MSB_BACKEND_OP(ops, exec_stream);
}

msb_errc msb_sandbox_exec_stream(msb_sandbox *s, const msb_exec_request *req,
				 const msb_exec_stream *stream, msb_exec_result *res,
				 msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_EXEC, "exec_stream", err);
	if (rc)
		return rc;
	const struct msb_backend_v27 *ops = s->slot->backend->ops;
	if (!msb_sandbox_can_stream(s))
		return refuse_missing_op(s, "exec_stream", err);
	if (!stream || stream->struct_size < sizeof(msb_exec_stream) || !stream->on_output)
		return msb_error_set(err, MSB_E_VALUE,
				     "exec_stream refused: the stream table is missing, has no "
				     "on_output, or its struct_size predates msb_exec_stream; "
				     "initialise it with MSB_EXEC_STREAM_INIT");
	for (const char *const *e = stream->env; e && *e; e++) {
		const char *why;
		if (!msb_env_entry_valid(*e, &why))
			return msb_error_set(err, MSB_E_VALUE,
					     "exec_stream refused: environment entry '%.64s' %s",
					     *e, why);
	}
	msb_exec_request r = *req;
	r.working_directory = wd(s, req->working_directory);
	memset(res, 0, sizeof *res);
	return ops->exec_stream(s->slot->handle, &r, stream, res, err);
}

msb_errc msb_sandbox_run_code(msb_sandbox *s, const char *code, double timeout,
			      msb_exec_result *res, msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_RUN_CODE, "run_code", err);
	if (rc == MSB_OK && code)
		rc = hold_in(s, "the run_code program of kind", s->spec.kind, strlen(code), false, err);
	return rc ? rc : s->slot->backend->ops->run_code(s->slot->handle, code, timeout, res, err);
}

msb_errc msb_sandbox_write_file(msb_sandbox *s, const char *path, const void *data, size_t len,
				const char *working_directory, msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_FILES_IN, "write_file", err);
	if (rc == MSB_OK)
		rc = hold_in(s, "file", path ? path : "", len, true, err);
	return rc ? rc
		  : s->slot->backend->ops->write_file(s->slot->handle, path, data, len,
						       wd(s, working_directory), err);
}

msb_errc msb_sandbox_stat_file(msb_sandbox *s, const char *path, const char *working_directory,
			       msb_entry *entry, bool *found, msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_FILES_OUT, "stat_file", err);
	return rc ? rc
		  : s->slot->backend->ops->stat_file(s->slot->handle, path, wd(s, working_directory),
						      entry, found, err);
}

/*
 * A backend must refuse a file over the cap, never hand it over; one that hands it over is
 * refused here, naming it, so no third-party plugin can carry a host past its own transfer
 * ceiling. Nothing it sent is kept.
 */
static msb_errc refuse_over_cap(const msb_sandbox *s, const char *path, msb_buf *out, size_t had,
				uint64_t max_bytes, msb_error *err)
{
	size_t got = out->len - had;
	if (had) {
		out->len = had;
		out->data[had] = '\0';
	} else {
		msb_buf_free(out);
	}
	return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
			     "sandbox backend '%s' answered read_file of '%s' with %zu bytes, over the "
			     "%" PRIu64 "-byte cap of the call, which it should have refused; refused "
			     "here, nothing of it kept",
			     s->slot->backend->name, path, got, max_bytes);
}

msb_errc msb_sandbox_read_file(msb_sandbox *s, const char *path, const char *working_directory,
			       uint64_t max_bytes, msb_buf *out, msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_FILES_OUT, "read_file", err);
	if (rc)
		return rc;
	size_t had = out->len;
	rc = s->slot->backend->ops->read_file(s->slot->handle, path, wd(s, working_directory),
					      max_bytes, out, err);
	if (rc == MSB_OK && out->len > had && out->len - had > max_bytes)
		rc = refuse_over_cap(s, path, out, had, max_bytes, err);
	return rc;
}

msb_errc msb_sandbox_list_dir(msb_sandbox *s, const char *path, const char *working_directory,
			      msb_entry_list *out, msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_FILES_LIST, "list_dir", err);
	return rc ? rc
		  : s->slot->backend->ops->list_dir(s->slot->handle, path, wd(s, working_directory),
						     out, err);
}

msb_errc msb_sandbox_remove(msb_sandbox *s, const char *path, const char *working_directory,
			    bool recursive, msb_error *err)
{
	msb_errc rc = router_sandbox_gate(s, MSB_CAP_FILES_DELETE, "remove", err);
	return rc ? rc
		  : s->slot->backend->ops->remove(s->slot->handle, path, wd(s, working_directory),
						   recursive, err);
}

msb_errc msb_sandbox_reclaim(msb_sandbox *s, const char *directory, const char *working_directory,
			     double timeout, msb_error *err)
{
	/* Ungated on purpose: see the file comment. */
	return s->slot->backend->ops->reclaim(s->slot->handle, directory, wd(s, working_directory),
					      timeout, err);
}
