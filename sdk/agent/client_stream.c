/*
 * client_stream.c — the host's side of a streamed exec: one EXEC_STREAM request, the OUTPUT
 * frames handed to the caller's callback as they arrive, the caller's stdin forwarded as
 * INPUT frames, then the result.
 *
 * The agent is untrusted (a guest's user can replace it): every OUTPUT is checked before
 * the callback sees it — its request id, its stream, and the running total of its stream
 * against the cap the request asked for — so a guest can neither make the host hold nor
 * show more than it allowed. Deadlines are msb_agent_exec's: a deadline gone before the
 * request goes out is SandboxQueuedTimeout, the reply is awaited for the deadline plus the
 * grace in which the agent kills the tree and answers.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <msb/agent.h>

#include "client_internal.h"

/* How much of the caller's stdin one INPUT frame carries. */
#define INPUT_CHUNK 65536

static msb_errc build_request(const msb_exec_request *req, const msb_exec_stream *st,
			      msb_buf *p, msb_error *err)
{
	msb_errc rc = msb_agent_put_exec_fields(p, req, st->env, err);
	if (rc == MSB_OK && st->stdin_fd >= 0)
		rc = msb_agent_put_u32(p, MSB_TAG_STDIN_OPEN, 1, err);
	if (rc == MSB_OK && st->rows)
		rc = msb_agent_put_u32(p, MSB_TAG_ROWS, st->rows, err);
	if (rc == MSB_OK && st->cols)
		rc = msb_agent_put_u32(p, MSB_TAG_COLS, st->cols, err);
	return rc;
}

static msb_errc check_stream(const msb_exec_request *req, const msb_exec_stream *st,
			     msb_error *err)
{
	if (!req->argv || !req->argv[0])
		return msb_error_set(err, MSB_E_VALUE, "exec_stream refused: an empty argv");
	if (!st || st->struct_size < sizeof *st || !st->on_output)
		return msb_error_set(err, MSB_E_VALUE,
				     "exec_stream refused: the stream table is missing, has no "
				     "on_output, or its struct_size predates msb_exec_stream");
	if (!st->rows != !st->cols)
		return msb_error_set(err, MSB_E_VALUE,
				     "exec_stream refused: a terminal needs both rows and cols (%u x %u)",
				     st->rows, st->cols);
	if (st->resize_fd >= 0 && (!st->get_size || !st->rows))
		return msb_error_set(err, MSB_E_VALUE,
				     "exec_stream refused: resize_fd without a terminal or get_size");
	for (const char *const *e = st->env; e && *e; e++) {
		const char *why;
		if (!msb_env_entry_valid(*e, &why))
			return msb_error_set(err, MSB_E_VALUE,
					     "exec_stream refused: environment entry '%.64s' %s", *e, why);
	}
	return msb_agent_check_run_request("exec_stream", req->timeout, req->stdin_data,
					   req->stdin_len, err);
}

typedef struct exchange {
	msb_agent_client *c;
	int rfd, wfd;
	uint32_t id;
	int64_t deadline;
	uint64_t most;          /* per stream */
	uint64_t got[2];
	const msb_exec_stream *st;
	bool stdin_open;
	bool resize_open;
	bool done;              /* the result frame was read whole: the connection is in step */
	msb_buf frame;
} exchange;

/* One OUTPUT frame, checked, to the callback. */
static msb_errc take_output(exchange *x, msb_error *err)
{
	uint32_t stream;
	const unsigned char *data;
	size_t len;
	msb_errc rc = msb_agent_output_decode(x->frame.data, x->frame.len, &stream, &data, &len, err);
	if (rc != MSB_OK)
		return rc;
	uint64_t *got = &x->got[stream - 1];
	if (len > x->most - *got)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: the agent streamed more than the %" PRIu64
				     " bytes of %s exec_stream was allowed; refused, and nothing "
				     "past the cap was delivered", x->most,
				     stream == MSB_STREAM_STDOUT ? "stdout" : "stderr");
	*got += len;
	if (len)
		x->st->on_output(x->st->ctx, (msb_stream_id)stream, data, len);
	return MSB_OK;
}

/* Forward what the caller's stdin has now; its end becomes an INPUT with EOF. */
static msb_errc forward_stdin(exchange *x, msb_error *err)
{
	unsigned char chunk[INPUT_CHUNK];
	ssize_t n;
	while ((n = read(x->st->stdin_fd, chunk, sizeof chunk)) < 0 && errno == EINTR)
		;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return MSB_OK;
	msb_buf p = { 0 };
	msb_errc rc;
	if (n > 0) {
		rc = msb_agent_put(&p, MSB_TAG_DATA, chunk, (size_t)n, err);
	} else {
		/* End of file, or a stdin that cannot be read: either way, no more comes. */
		x->stdin_open = false;
		rc = msb_agent_put_u32(&p, MSB_TAG_EOF, 1, err);
	}
	if (rc == MSB_OK)
		rc = msb_agent_frame_write(x->wfd, MSB_AGENT_INPUT, x->id, &p, err);
	msb_buf_free(&p);
	return rc;
}

/* The terminal changed size: drain the notification, send the new size. */
static msb_errc forward_resize(exchange *x, msb_error *err)
{
	char drain[64];
	ssize_t n;
	while ((n = read(x->st->resize_fd, drain, sizeof drain)) < 0 && errno == EINTR)
		;
	if (n == 0) {
		x->resize_open = false; /* its writer is gone: no size change can come */
		return MSB_OK;
	}
	uint16_t rows = x->st->rows, cols = x->st->cols;
	x->st->get_size(x->st->ctx, &rows, &cols);
	if (!rows || !cols)
		return MSB_OK;
	msb_buf p = { 0 };
	msb_errc rc = msb_agent_put_u32(&p, MSB_TAG_ROWS, rows, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(&p, MSB_TAG_COLS, cols, err);
	if (rc == MSB_OK)
		rc = msb_agent_frame_write(x->wfd, MSB_AGENT_RESIZE, x->id, &p, err);
	msb_buf_free(&p);
	return rc;
}

/* One frame from the agent; *done once it is the result. */
static msb_errc take_frame(exchange *x, msb_exec_result *res, bool *done, msb_error *err)
{
	msb_agent_header h;
	msb_errc rc = msb_agent_frame_read(x->rfd, x->deadline, &h, &x->frame, NULL, err);
	if (rc == MSB_E_TIMEOUT)
		return msb_error_set(err, MSB_E_TIMEOUT,
				     "agent protocol: the agent did not finish exec_stream in time");
	if (rc != MSB_OK)
		return rc;
	if (h.version != MSB_AGENT_PROTOCOL_VERSION)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: the agent speaks version %u, this client "
				     "speaks version %u", h.version, MSB_AGENT_PROTOCOL_VERSION);
	/* A stale reply to an earlier request on a shared stream: skipped, as read_reply does. */
	if (msb_agent_client_shared(x->c) && h.id != x->id && (h.type & MSB_AGENT_REPLY) &&
	    (int32_t)(x->id - h.id) > 0)
		return MSB_OK;
	if (h.id == x->id && h.type == MSB_AGENT_OUTPUT)
		return take_output(x, err);
	if (h.id != x->id || h.type != (MSB_AGENT_EXEC_STREAM | MSB_AGENT_REPLY))
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: exec_stream #%u answered by type 0x%x #%u",
				     x->id, h.type, h.id);
	*done = x->done = true;
	rc = msb_agent_reply_status(&x->frame, MSB_AGENT_EXEC_STREAM, err);
	return rc == MSB_OK ? msb_agent_parse_exec_reply(&x->frame, res, err) : rc;
}

static msb_errc converse(exchange *x, msb_exec_result *res, msb_error *err)
{
	bool done = false;
	msb_errc rc = MSB_OK;
	while (rc == MSB_OK && !done) {
		struct pollfd p[3] = { { .fd = x->rfd, .events = POLLIN },
				       { .fd = x->stdin_open ? x->st->stdin_fd : -1, .events = POLLIN },
				       { .fd = x->resize_open ? x->st->resize_fd : -1, .events = POLLIN } };
		int wait = -1;
		if (x->deadline > 0) {
			int64_t left = x->deadline - msb_agent_now_ms();
			if (left <= 0)
				return msb_error_set(err, MSB_E_TIMEOUT,
						     "agent protocol: the agent did not finish "
						     "exec_stream in time");
			wait = left > 60000 ? 60000 : (int)left;
		}
		int n = poll(p, 3, wait);
		if (n < 0 && errno != EINTR)
			return msb_error_set_errno(err, MSB_E_OS, errno, "exec_stream: poll");
		if (n <= 0)
			continue;
		/* The agent first (its output never waits behind our input), then the size, so a
		 * resize reaches the terminal before the input typed after it. */
		if (p[0].revents)
			rc = take_frame(x, res, &done, err);
		if (rc == MSB_OK && !done && p[2].revents)
			rc = forward_resize(x, err);
		if (rc == MSB_OK && !done && p[1].revents)
			rc = forward_stdin(x, err);
	}
	return rc;
}

msb_errc msb_agent_exec_stream(msb_agent_client *c, const msb_exec_request *req,
			       const msb_exec_stream *st, msb_exec_result *res, msb_error *err)
{
	msb_errc rc = check_stream(req, st, err);
	if (rc != MSB_OK)
		return rc;
	memset(res, 0, sizeof *res);
	int64_t queue, reply;
	uint64_t timeout_ms;
	msb_agent_run_deadlines(req->timeout, &queue, &reply, &timeout_ms);
	msb_buf p = { 0 };
	rc = build_request(req, st, &p, err);
	exchange x = { .c = c, .deadline = reply, .st = st, .stdin_open = st->stdin_fd >= 0,
		       .resize_open = st->resize_fd >= 0 };
	x.most = req->max_output && req->max_output < MSB_AGENT_MAX_OUTPUT ? req->max_output
									   : MSB_AGENT_MAX_OUTPUT;
	if (rc == MSB_OK)
		rc = msb_agent_conn_take(c, MSB_AGENT_EXEC_STREAM, queue, MSB_E_QUEUED_TIMEOUT, &x.rfd,
					 &x.wfd, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	/* What is left of the deadline when the request goes out is what the agent enforces. */
	if (req->timeout > 0) {
		int64_t left = queue - msb_agent_now_ms();
		rc = left > 0 ? msb_agent_put_u64(&p, MSB_TAG_TIMEOUT_MS, (uint64_t)left, err)
			      : msb_error_set(err, MSB_E_QUEUED_TIMEOUT,
					      "exec_stream was not started: its %.3f s deadline passed "
					      "before it reached the sandbox", req->timeout);
	}
	x.id = msb_agent_next_id(c);
	bool tried = rc == MSB_OK;
	if (rc == MSB_OK)
		rc = msb_agent_frame_write(x.wfd, MSB_AGENT_EXEC_STREAM, x.id, &p, err);
	if (rc == MSB_OK)
		rc = converse(&x, res, err);
	/* In step: nothing sent, or the result read whole (an agent's refusal included). */
	bool in_step = !tried || x.done;
	msb_agent_conn_give(c, x.rfd, x.wfd, in_step);
	if (rc != MSB_OK)
		msb_exec_result_free(res);
	msb_buf_free(&x.frame);
	msb_buf_free(&p);
	return rc;
}
