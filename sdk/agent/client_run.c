/*
 * client_run.c — the agent client's program runs: exec and run_code, their deadlines, and
 * the decoding of a run's result.
 *
 * The deadline is wall clock from the call. What is left of it when the request goes out
 * is what the agent enforces; a deadline gone before then is SandboxQueuedTimeout (the
 * program never started), and the reply is awaited for the deadline plus a grace in which
 * the agent kills the tree and answers.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <msb/agent.h>
#include <msb/node.h>

#include "client_internal.h"

/* A stream's bytes joined to what it holds, when they stay within `most`; refused before
 * anything is allocated otherwise (see check_output for why refused, not cut). */
static msb_errc take_stream(uint16_t type, msb_buf *into, const msb_agent_field *f, uint64_t most,
			    const char *name, msb_error *err)
{
	if ((uint64_t)into->len + f->len > most)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: the agent answered %s with %zu bytes of %s, more "
				     "than the %" PRIu64 " per stream it was allowed; refused",
				     msb_agent_type_name(type), into->len + (size_t)f->len, name, most);
	return msb_buf_append(into, f->value, f->len, err);
}

/* kill_reach was added in padding: the layout every built host and plugin agrees on holds. */
_Static_assert(sizeof(void *) != 8 || offsetof(msb_exec_result, out) == 16,
	       "msb_exec_result's layout changed");

static msb_errc parse_exec_reply(uint16_t type, const msb_buf *reply, uint64_t most,
				 msb_exec_result *res, msb_error *err)
{
	msb_agent_reader r = { .data = reply->data, .len = reply->len };
	uint32_t v;
	for (;;) {
		msb_agent_field f;
		bool done;
		msb_errc rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc != MSB_OK || done)
			return rc;
		switch (f.tag) {
		case MSB_TAG_EXIT_CODE:
			rc = msb_agent_field_u32(&f, &v, err);
			res->exit_code = (int)(int32_t)v;
			break;
		case MSB_TAG_SIGNAL:
			rc = msb_agent_field_u32(&f, &v, err);
			/* A signal number no kernel has is a lie the host would print as fact. */
			if (rc == MSB_OK && v > 128)
				rc = msb_error_set(err, MSB_E_PROTOCOL,
						   "agent protocol: the agent answered %s with signal "
						   "%u, which does not exist; refused",
						   msb_agent_type_name(type), v);
			res->term_signal = (int)v;
			break;
		case MSB_TAG_FLAGS:
			rc = msb_agent_field_u32(&f, &v, err);
			res->timed_out = v & MSB_AGENT_F_TIMED_OUT;
			res->out_truncated = v & MSB_AGENT_F_OUT_TRUNCATED;
			res->err_truncated = v & MSB_AGENT_F_ERR_TRUNCATED;
			break;
		case MSB_TAG_KILL_REACH:
			rc = msb_agent_field_u32(&f, &v, err);
			if (rc == MSB_OK && v > MSB_REACH_TREE)
				rc = msb_error_set(err, MSB_E_PROTOCOL,
						   "agent protocol: the agent answered %s with a kill "
						   "reach of %u, which does not exist; refused",
						   msb_agent_type_name(type), v);
			res->kill_reach = (unsigned char)v;
			break;
		case MSB_TAG_STDOUT:
			rc = take_stream(type, &res->out, &f, most, "stdout", err);
			break;
		case MSB_TAG_STDERR:
			rc = take_stream(type, &res->err, &f, most, "stderr", err);
			break;
		default:
			break;
		}
		if (rc != MSB_OK)
			return rc;
	}
}

/*
 * The last reply of a streamed exec (client_stream.c): its output went out as OUTPUT frames,
 * held to the caps there, so the reply itself may carry none — a byte of stdout or stderr in
 * it is refused like any output over a cap.
 */
msb_errc msb_agent_parse_exec_reply(const msb_buf *reply, msb_exec_result *res, msb_error *err)
{
	return parse_exec_reply(MSB_AGENT_EXEC_STREAM, reply, 0, res, err);
}

/* Deadlines of a program run: queue bounded by the timeout, reply by timeout + grace. */
void msb_agent_run_deadlines(double timeout, int64_t *queue, int64_t *reply, uint64_t *timeout_ms)
{
	if (timeout <= 0) {
		*queue = *reply = 0;
		*timeout_ms = 0;
		return;
	}
	if (!(timeout < MSB_SECONDS_MAX))
		timeout = MSB_SECONDS_MAX;
	*queue = msb_agent_deadline_after(timeout);
	*reply = *queue + MSB_AGENT_EXEC_GRACE_MS;
	*timeout_ms = (uint64_t)(timeout * 1000.0);
	if (*timeout_ms == 0)
		*timeout_ms = 1;
}

/*
 * The most output per stream an honest agent can answer with. More than was asked for is an
 * agent that broke the protocol (one that a guest replaced, as its user can): refused, not
 * cut, because an honest agent cuts at the cap itself and flags it, so output past the cap
 * says the agent is not the one the host started — and none of its answer (exit status,
 * flags) can be believed either. `asked` 0 is the agent's default, which is never above
 * MSB_AGENT_MAX_OUTPUT; a driver passes its configured max_output instead of 0, so the cap
 * the operator wrote is the one held here.
 */
static uint64_t output_cap(uint64_t asked)
{
	return asked && asked < MSB_AGENT_MAX_OUTPUT ? asked : MSB_AGENT_MAX_OUTPUT;
}

static msb_errc run(msb_agent_client *c, uint16_t type, msb_buf *payload, double timeout,
		    uint64_t max_output, int64_t queue, int64_t reply_deadline, msb_exec_result *res,
		    msb_error *err)
{
	memset(res, 0, sizeof *res);
	/* What is left of the deadline when the request goes out is what the agent enforces. */
	if (timeout > 0) {
		int64_t left = queue - msb_agent_now_ms();
		if (left <= 0) {
			msb_buf_free(payload);
			return msb_error_set(err, MSB_E_QUEUED_TIMEOUT,
					     "%s was not started: its %.3f s deadline passed before "
					     "it reached the sandbox", msb_agent_type_name(type), timeout);
		}
		msb_errc rc = msb_agent_put_u64(payload, MSB_TAG_TIMEOUT_MS, (uint64_t)left, err);
		if (rc != MSB_OK) {
			msb_buf_free(payload);
			return rc;
		}
	}
	msb_buf reply = { 0 };
	uint64_t most = output_cap(max_output);
	msb_errc rc = msb_agent_call(c, type, payload, queue, reply_deadline, MSB_E_QUEUED_TIMEOUT,
				     msb_agent_reply_bound(2 * most), &reply, err);
	if (rc == MSB_OK)
		rc = parse_exec_reply(type, &reply, most, res, err);
	else if (rc == MSB_E_PROTOCOL)
		msb_error_prefix(err, "%s allowed %" PRIu64 " bytes per stream: ",
				 msb_agent_type_name(type), most);
	if (rc != MSB_OK)
		msb_exec_result_free(res);
	msb_buf_free(&reply);
	msb_buf_free(payload);
	return rc;
}

/* A host's mistake made loud: a timeout that is no number, stdin that has a length only. */
msb_errc msb_agent_check_run_request(const char *op, double timeout, const void *stdin_data,
			      size_t stdin_len, msb_error *err)
{
	if (isnan(timeout))
		return msb_error_set(err, MSB_E_VALUE, "%s refused: its timeout is not a number", op);
	if (stdin_len && !stdin_data)
		return msb_error_set(err, MSB_E_VALUE,
				     "%s refused: stdin_len is %zu but stdin_data is NULL", op, stdin_len);
	return MSB_OK;
}

msb_errc msb_agent_put_exec_fields(msb_buf *p, const msb_exec_request *req,
				   const char *const *env, msb_error *err)
{
	msb_errc rc = MSB_OK;
	for (const char *const *a = req->argv; rc == MSB_OK && *a; a++)
		rc = msb_agent_put_str(p, MSB_TAG_ARG, *a, err);
	for (const char *const *e = env; rc == MSB_OK && e && *e; e++)
		rc = msb_agent_put_str(p, MSB_TAG_ENV, *e, err);
	if (rc == MSB_OK && req->working_directory)
		rc = msb_agent_put_str(p, MSB_TAG_CWD, req->working_directory, err);
	if (rc == MSB_OK && req->max_output)
		rc = msb_agent_put_u64(p, MSB_TAG_MAX_OUTPUT, req->max_output, err);
	if (rc == MSB_OK && req->stdin_data)
		rc = msb_agent_put(p, MSB_TAG_STDIN, req->stdin_data, req->stdin_len, err);
	return rc;
}

msb_errc msb_agent_exec(msb_agent_client *c, const msb_exec_request *req,
			const char *const *env, msb_exec_result *res, msb_error *err)
{
	if (!req->argv || !req->argv[0])
		return msb_error_set(err, MSB_E_VALUE, "exec refused: an empty argv");
	msb_errc checked = msb_agent_check_run_request("exec", req->timeout, req->stdin_data, req->stdin_len, err);
	if (checked)
		return checked;
	int64_t queue, reply;
	uint64_t timeout_ms;
	msb_agent_run_deadlines(req->timeout, &queue, &reply, &timeout_ms);
	msb_buf p = { 0 };
	msb_errc rc = msb_agent_put_exec_fields(&p, req, env, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return run(c, MSB_AGENT_EXEC, &p, req->timeout, req->max_output, queue, reply, res, err);
}

msb_errc msb_agent_run_code(msb_agent_client *c, const char *code, double timeout,
			    size_t max_output, msb_exec_result *res, msb_error *err)
{
	msb_errc checked = msb_agent_check_run_request("run_code", timeout, NULL, 0, err);
	if (checked)
		return checked;
	int64_t queue, reply;
	uint64_t timeout_ms;
	msb_agent_run_deadlines(timeout, &queue, &reply, &timeout_ms);
	msb_buf p = { 0 };
	msb_errc rc = msb_agent_put_str(&p, MSB_TAG_CODE, code, err);
	if (rc == MSB_OK && max_output)
		rc = msb_agent_put_u64(&p, MSB_TAG_MAX_OUTPUT, max_output, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return run(c, MSB_AGENT_RUN_CODE, &p, timeout, max_output, queue, reply, res, err);
}
