/*
 * driver_ops.c — the sandbox operations of an agent-backed backend: each is one request to
 * the sandbox's agent (msb/agent.h), which confines, runs and bounds it inside the boundary.
 */
#include <stdlib.h>

#include "driver_internal.h"

/* Every failure names the backend and the sandbox it came from. */
static msb_errc said(const msb_sandbox_handle *h, msb_errc rc, msb_error *err)
{
	if (rc != MSB_OK)
		msb_error_prefix(err, "backend %s: sandbox %s: ", h->inst->boundary.name, h->paths.name);
	return rc;
}

void msb_driver_release(msb_sandbox_handle *h)
{
	if (!h)
		return;
	msb_agent_client_close(h->client);
	driver_paths_free(&h->paths);
	free(h);
}

const msb_driver_box *msb_driver_sandbox_box(const msb_sandbox_handle *h)
{
	return &h->paths.box;
}

/*
 * The cap a call runs under: its own, or else the backend's configured max_output — sent to
 * the agent explicitly rather than as "your default", so that the client holds the agent's
 * answer to the cap the operator wrote, not to the agent's hard ceiling (an agent a guest
 * replaced knows no default of ours).
 */
static size_t output_cap(const msb_sandbox_handle *h, size_t asked)
{
	uint64_t configured = h->inst->config.agent.default_max_output;
	/* 0 configured is the agent's own default, which msb-agent documents as 1 MiB. */
	return asked ? asked : configured ? (size_t)configured : (size_t)MSB_MIB;
}

msb_errc msb_driver_exec(msb_sandbox_handle *h, const msb_exec_request *req,
			 msb_exec_result *res, msb_error *err)
{
	msb_exec_request r = *req;
	r.max_output = output_cap(h, req->max_output);
	return said(h, msb_agent_exec(h->client, &r, NULL, res, err), err);
}

msb_errc msb_driver_run_code(msb_sandbox_handle *h, const char *code, double timeout,
			     msb_exec_result *res, msb_error *err)
{
	return said(h, msb_agent_run_code(h->client, code, timeout, output_cap(h, 0), res, err), err);
}

msb_errc msb_driver_write_file(msb_sandbox_handle *h, const char *path, const void *data,
			       size_t len, const char *working_directory, msb_error *err)
{
	return said(h, msb_agent_write_file(h->client, path, data, len, working_directory, err), err);
}

msb_errc msb_driver_stat_file(msb_sandbox_handle *h, const char *path,
			      const char *working_directory, msb_entry *entry, bool *found,
			      msb_error *err)
{
	return said(h, msb_agent_stat_file(h->client, path, working_directory, entry, found, err), err);
}

msb_errc msb_driver_read_file(msb_sandbox_handle *h, const char *path,
			      const char *working_directory, uint64_t max_bytes, msb_buf *out,
			      msb_error *err)
{
	return said(h, msb_agent_read_file(h->client, path, working_directory, max_bytes, out, err), err);
}

msb_errc msb_driver_list_dir(msb_sandbox_handle *h, const char *path,
			     const char *working_directory, msb_entry_list *out, msb_error *err)
{
	return said(h, msb_agent_list_dir(h->client, path, working_directory, out, err), err);
}

msb_errc msb_driver_remove(msb_sandbox_handle *h, const char *path,
			   const char *working_directory, bool recursive, msb_error *err)
{
	return said(h, msb_agent_remove(h->client, path, working_directory, recursive, err), err);
}

msb_errc msb_driver_reclaim(msb_sandbox_handle *h, const char *directory,
			    const char *working_directory, double timeout, msb_error *err)
{
	return said(h, msb_agent_reclaim(h->client, directory, working_directory, timeout, err), err);
}

msb_errc msb_driver_exec_stream(msb_sandbox_handle *h, const msb_exec_request *req,
				const msb_exec_stream *stream, msb_exec_result *res, msb_error *err)
{
	return said(h, msb_agent_exec_stream(h->client, req, stream, res, err), err);
}

/* A background command's ring is the call's max_output, else the backend's configured cap. */
msb_errc msb_driver_bg_start(msb_sandbox_handle *h, const msb_exec_request *req,
			     const char *const *env, msb_bg_status *started, msb_error *err)
{
	msb_exec_request r = *req;
	r.max_output = output_cap(h, req->max_output);
	return said(h, msb_agent_bg_start(h->client, &r, env, started, err), err);
}

msb_errc msb_driver_bg_read(msb_sandbox_handle *h, const char *id, const msb_bg_read *rq,
			    msb_bg_output *out, msb_error *err)
{
	return said(h, msb_agent_bg_read(h->client, id, rq, out, err), err);
}

msb_errc msb_driver_bg_signal(msb_sandbox_handle *h, const char *id, int signal, msb_error *err)
{
	return said(h, msb_agent_bg_signal(h->client, id, signal, err), err);
}

msb_errc msb_driver_bg_list(msb_sandbox_handle *h, msb_bg_list *out, msb_error *err)
{
	return said(h, msb_agent_bg_list(h->client, out, err), err);
}

msb_errc msb_driver_image_digest(msb_backend_instance *inst, const msb_spec *spec, char *out,
				 size_t size, msb_error *err)
{
	if (size)
		out[0] = '\0';
	if (!inst->boundary.image_digest || !size)
		return MSB_OK;
	return inst->boundary.image_digest(inst->boundary.ctx, spec, out, size, err);
}
