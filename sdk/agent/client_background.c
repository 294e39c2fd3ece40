/*
 * client_background.c — the agent client's background operations (msb/background.h):
 * BG_START, BG_READ, BG_SIGNAL and BG_LIST, and the decoding of their replies.
 *
 * A status is believed only as far as an honest agent could say it: every field it needs
 * present and of its size, an id of a handle's shape, a signal that exists, a ring within
 * MSB_AGENT_MAX_OUTPUT; a read's output no longer than it asked for; a listing no longer
 * than MSB_AGENT_BG_MAX. Anything else is MSB_E_PROTOCOL and none of it is kept.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <msb/agent.h>
#include <msb/node.h>

#include "client_internal.h"

/* How long an answer without a wait of its own may take. */
#define BG_CALL_TIMEOUT 30.0
/* A read's default bound per stream (as the agent's). */
#define BG_READ_DEFAULT ((uint64_t)1 << 20)

static msb_errc bad(const char *what, msb_error *err)
{
	return msb_error_set(err, MSB_E_PROTOCOL,
			     "agent protocol: a background command's status refused: %s", what);
}

enum { HAVE_ID = 1, HAVE_PID = 2, HAVE_RUNNING = 4, HAVE_RING = 8, HAVE_OUT = 16,
       HAVE_ERR = 32, HAVE_STARTED = 64, HAVE_EXIT = 128 };

static msb_errc status_field(const msb_agent_field *f, msb_bg_status *st, unsigned *have,
			     msb_error *err)
{
	uint32_t v;
	uint64_t u;
	msb_errc rc = MSB_OK;
	switch (f->tag) {
	case MSB_TAG_BG_ID:
		if (f->len < 1 || f->len > MSB_BG_ID_MAX)
			return bad("an id of no handle's length", err);
		memcpy(st->id, f->value, f->len);
		st->id[f->len] = '\0';
		if (!msb_bg_id_valid(st->id))
			return bad("an id that is not [0-9a-z]", err);
		*have |= HAVE_ID;
		return MSB_OK;
	case MSB_TAG_PID:
		rc = msb_agent_field_u64(f, &u, err);
		if (rc == MSB_OK && u > INT32_MAX)
			return bad("a pid no kernel gives", err);
		st->pid = (int64_t)u;
		*have |= HAVE_PID;
		return rc;
	case MSB_TAG_RUNNING:
		rc = msb_agent_field_u32(f, &v, err);
		st->running = v != 0;
		*have |= HAVE_RUNNING;
		return rc;
	case MSB_TAG_RING:
		rc = msb_agent_field_u64(f, &st->ring, err);
		if (rc == MSB_OK && (st->ring == 0 || st->ring > MSB_AGENT_MAX_OUTPUT))
			return bad("a ring outside 1 byte .. MSB_AGENT_MAX_OUTPUT", err);
		*have |= HAVE_RING;
		return rc;
	case MSB_TAG_WRITTEN_OUT:
		*have |= HAVE_OUT;
		return msb_agent_field_u64(f, &st->out_written, err);
	case MSB_TAG_WRITTEN_ERR:
		*have |= HAVE_ERR;
		return msb_agent_field_u64(f, &st->err_written, err);
	case MSB_TAG_STARTED_MS:
		rc = msb_agent_field_u64(f, &u, err);
		st->started = (double)u / 1000.0;
		*have |= HAVE_STARTED;
		return rc;
	case MSB_TAG_COMMAND:
		if (f->len > MSB_BG_COMMAND_MAX || memchr(f->value, '\0', f->len))
			return bad("a command line over its bound or holding a NUL", err);
		memcpy(st->command, f->value, f->len);
		st->command[f->len] = '\0';
		return MSB_OK;
	case MSB_TAG_EXIT_CODE:
		rc = msb_agent_field_u32(f, &v, err);
		st->exit_code = (int)(int32_t)v;
		*have |= HAVE_EXIT;
		return rc;
	case MSB_TAG_SIGNAL:
		rc = msb_agent_field_u32(f, &v, err);
		if (rc == MSB_OK && v > 128)
			return bad("a signal that does not exist", err);
		st->signal = (int)v;
		return rc;
	case MSB_TAG_FLAGS:
		rc = msb_agent_field_u32(f, &v, err);
		st->timed_out = v & MSB_AGENT_F_TIMED_OUT;
		return rc;
	default:
		return MSB_OK;
	}
}

/* One BG_STATUS field's value: its own fields, all a status needs. */
static msb_errc status_decode(const unsigned char *data, size_t len, msb_bg_status *st,
			      msb_error *err)
{
	memset(st, 0, sizeof *st);
	msb_agent_reader r = { .data = data, .len = len };
	unsigned have = 0;
	for (;;) {
		msb_agent_field f;
		bool done;
		msb_errc rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc == MSB_OK && !done)
			rc = status_field(&f, st, &have, err);
		if (rc != MSB_OK)
			return rc;
		if (done)
			break;
	}
	unsigned need = HAVE_ID | HAVE_PID | HAVE_RUNNING | HAVE_RING | HAVE_OUT | HAVE_ERR |
			HAVE_STARTED | (st->running ? 0 : HAVE_EXIT);
	return (have & need) == need ? MSB_OK : bad("a field it needs is missing", err);
}

/* A read's stream: no longer than asked for. */
static msb_errc take(msb_buf *into, const msb_agent_field *f, uint64_t max, const char *name,
		     msb_error *err)
{
	if ((uint64_t)into->len + f->len > max)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: the agent answered bg_read with more %s than "
				     "the %" PRIu64 " bytes asked for; refused", name, max);
	return msb_buf_append(into, f->value, f->len, err);
}

static msb_errc reply_field(uint16_t type, const msb_agent_field *f, uint64_t max,
			    msb_bg_output *out, msb_bg_list *list, unsigned *statuses,
			    msb_error *err)
{
	msb_bg_status st;
	msb_errc rc;
	switch (f->tag) {
	case MSB_TAG_BG_STATUS:
		if (type != MSB_AGENT_BG_LIST && *statuses)
			return bad("more than one in a reply about one command", err);
		if (type == MSB_AGENT_BG_LIST && *statuses >= MSB_AGENT_BG_MAX)
			return bad("more of them than a sandbox holds", err);
		if ((rc = status_decode(f->value, f->len, &st, err)) != MSB_OK)
			return rc;
		(*statuses)++;
		if (type != MSB_AGENT_BG_LIST) {
			out->status = st;
			return MSB_OK;
		}
		msb_bg_status *grown = realloc(list->items, (list->n + 1) * sizeof *grown);
		if (!grown)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory listing background commands");
		grown[list->n++] = st;
		list->items = grown;
		return MSB_OK;
	case MSB_TAG_STDOUT:
	case MSB_TAG_STDERR:
		if (type != MSB_AGENT_BG_READ)
			return MSB_OK;
		return f->tag == MSB_TAG_STDOUT ? take(&out->out, f, max, "stdout", err)
						: take(&out->err, f, max, "stderr", err);
	case MSB_TAG_START_OUT:
		return type == MSB_AGENT_BG_READ ? msb_agent_field_u64(f, &out->out_start, err) : MSB_OK;
	case MSB_TAG_START_ERR:
		return type == MSB_AGENT_BG_READ ? msb_agent_field_u64(f, &out->err_start, err) : MSB_OK;
	default:
		return MSB_OK;
	}
}

msb_errc msb_agent_bg_reply_decode(uint16_t type, const unsigned char *payload, size_t len,
				   uint64_t max_bytes, msb_bg_output *out, msb_bg_list *list,
				   msb_error *err)
{
	msb_agent_reader r = { .data = payload, .len = len };
	unsigned statuses = 0;
	msb_errc rc = MSB_OK;
	for (;;) {
		msb_agent_field f;
		bool done;
		rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc != MSB_OK || done)
			break;
		if ((rc = reply_field(type, &f, max_bytes, out, list, &statuses, err)) != MSB_OK)
			break;
	}
	if (rc == MSB_OK && type != MSB_AGENT_BG_LIST && !statuses)
		rc = bad("the reply has none", err);
	/* Offsets that say the bytes lie past what the command wrote: no honest agent's. */
	if (rc == MSB_OK && type == MSB_AGENT_BG_READ &&
	    (out->out_start > out->status.out_written ||
	     out->out.len > out->status.out_written - out->out_start ||
	     out->err_start > out->status.err_written ||
	     out->err.len > out->status.err_written - out->err_start))
		rc = bad("its output lies past what the command wrote", err);
	return rc;
}

/* One background request, its reply decoded into out / list. */
static msb_errc bg_call(msb_agent_client *c, uint16_t type, msb_buf *p, double wait,
			uint64_t max_bytes, msb_bg_output *out, msb_bg_list *list, msb_error *err)
{
	double timeout = msb_agent_default_timeout(c, BG_CALL_TIMEOUT);
	int64_t queue = msb_agent_deadline_after(timeout);
	int64_t deadline = msb_agent_deadline_after(timeout + wait);
	msb_buf reply = { 0 };
	uint64_t bound = type == MSB_AGENT_BG_LIST ? (uint64_t)MSB_AGENT_BG_MAX * 1024u : 2 * max_bytes;
	msb_errc rc = msb_agent_call(c, type, p, queue, deadline, MSB_E_QUEUED_TIMEOUT,
				     msb_agent_reply_bound(bound), &reply, err);
	msb_buf_free(p);
	if (rc == MSB_OK)
		rc = msb_agent_bg_reply_decode(type, reply.data, reply.len, max_bytes, out, list, err);
	msb_buf_free(&reply);
	return rc;
}

msb_errc msb_agent_bg_start(msb_agent_client *c, const msb_exec_request *req,
			    const char *const *env, msb_bg_status *started, msb_error *err)
{
	if (!req->argv || !req->argv[0])
		return msb_error_set(err, MSB_E_VALUE, "bg_start refused: an empty argv");
	msb_errc rc = msb_agent_check_run_request("bg_start", req->timeout, req->stdin_data,
						  req->stdin_len, err);
	if (rc)
		return rc;
	msb_buf p = { 0 };
	rc = msb_agent_put_exec_fields(&p, req, env, err);
	if (rc == MSB_OK && req->timeout > 0)
		rc = msb_agent_put_u64(&p, MSB_TAG_TIMEOUT_MS,
				       (uint64_t)(fmin(req->timeout, MSB_SECONDS_MAX) * 1000.0) + 1u, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	msb_bg_output out = { 0 };
	rc = bg_call(c, MSB_AGENT_BG_START, &p, 0, 0, &out, NULL, err);
	if (rc == MSB_OK)
		*started = out.status;
	msb_bg_output_free(&out);
	return rc;
}

static msb_errc put_id(msb_buf *p, const char *op, const char *id, msb_error *err)
{
	if (!msb_bg_id_valid(id))
		return msb_error_set(err, MSB_E_VALUE,
				     "%s refused: '%.40s' is not a background command's handle "
				     "([0-9a-z], 1 to %d of them)", op, id ? id : "", MSB_BG_ID_MAX);
	return msb_agent_put_str(p, MSB_TAG_BG_ID, id, err);
}

msb_errc msb_agent_bg_read(msb_agent_client *c, const char *id, const msb_bg_read *rq,
			   msb_bg_output *out, msb_error *err)
{
	memset(out, 0, sizeof *out);
	if (isnan(rq->wait) || rq->wait < 0)
		return msb_error_set(err, MSB_E_VALUE, "bg_read refused: its wait is not a "
				     "number of seconds >= 0");
	uint64_t max = rq->max_bytes ? rq->max_bytes : BG_READ_DEFAULT;
	if (max > MSB_AGENT_MAX_OUTPUT)
		max = MSB_AGENT_MAX_OUTPUT;
	double wait = fmin(rq->wait, 600.0);
	msb_buf p = { 0 };
	msb_errc rc = put_id(&p, "bg_read", id, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&p, MSB_TAG_OFFSET_OUT, rq->out_offset, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&p, MSB_TAG_OFFSET_ERR, rq->err_offset, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&p, MSB_TAG_MAX_BYTES, max, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&p, MSB_TAG_WAIT_MS, (uint64_t)(wait * 1000.0), err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(&p, MSB_TAG_UNTIL_EXIT, rq->until_exit, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	rc = bg_call(c, MSB_AGENT_BG_READ, &p, wait, max, out, NULL, err);
	if (rc == MSB_OK) {
		out->out_dropped = out->out_start > rq->out_offset ? out->out_start - rq->out_offset : 0;
		out->err_dropped = out->err_start > rq->err_offset ? out->err_start - rq->err_offset : 0;
	} else {
		msb_bg_output_free(out);
	}
	return rc;
}

msb_errc msb_agent_bg_signal(msb_agent_client *c, const char *id, int signal, msb_error *err)
{
	if (signal < 1 || signal > 64)
		return msb_error_set(err, MSB_E_VALUE, "bg_signal refused: signal %d does not exist "
				     "(1..64)", signal);
	msb_buf p = { 0 };
	msb_errc rc = put_id(&p, "bg_signal", id, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(&p, MSB_TAG_SIGNAL, (uint32_t)signal, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return msb_agent_simple(c, MSB_AGENT_BG_SIGNAL, &p, 0, err);
}

msb_errc msb_agent_bg_list(msb_agent_client *c, msb_bg_list *out, msb_error *err)
{
	memset(out, 0, sizeof *out);
	msb_buf p = { 0 };
	msb_bg_output unused = { 0 };
	msb_errc rc = bg_call(c, MSB_AGENT_BG_LIST, &p, 0, 0, &unused, out, err);
	if (rc != MSB_OK)
		msb_bg_list_free(out);
	return rc;
}
