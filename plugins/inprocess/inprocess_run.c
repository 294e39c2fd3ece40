/*
 * inprocess_run.c — exec and run_code in the fake: nothing is evaluated. Each is recorded,
 * and answered with the first scripted output whose `match` is a substring of the command
 * line (exec) or of the program (run_code). The two script lists are separate on purpose:
 * a test asserting a program was evaluated must not be satisfied by a shell command that
 * happens to contain the same text.
 */
#include <stdlib.h>
#include <string.h>

#include "inprocess.h"

static msb_errc refuse_disposed(const msb_sandbox_handle *h, const char *op, msb_error *err)
{
	if (!h->sb->disposed)
		return MSB_OK;
	return msb_error_set(err, MSB_E_BACKEND,
			     "inprocess: %s on the '%s' sandbox of thread '%s', which was disposed", op,
			     h->sb->kind, h->sb->thread_id);
}

static msb_errc capped(msb_buf *buf, const char *text, size_t max, bool *truncated, msb_error *err)
{
	size_t len = strlen(text);
	*truncated = max && len > max;
	return msb_buf_append(buf, text, *truncated ? max : len, err);
}

static msb_errc answer(struct msb_backend_instance *self, const inproc_script *scripts, size_t n,
		       const char *subject, size_t max_output, msb_exec_result *res, msb_error *err)
{
	const char *out = self->default_stdout, *errtext = "";
	int code = 0;
	for (size_t i = 0; i < n; i++)
		if (strstr(subject, scripts[i].match)) {
			out = scripts[i].out;
			errtext = scripts[i].err;
			code = scripts[i].exit_code;
			break;
		}
	memset(res, 0, sizeof *res);
	res->exit_code = code;
	msb_errc rc = capped(&res->out, out, max_output, &res->out_truncated, err);
	if (!rc)
		rc = capped(&res->err, errtext, max_output, &res->err_truncated, err);
	return rc;
}

msb_errc inproc_exec(msb_sandbox_handle *h, const msb_exec_request *req, msb_exec_result *res,
		     msb_error *err)
{
	if (!req->argv || !req->argv[0])
		return msb_error_set(err, MSB_E_VALUE, "inprocess: exec needs an argv with a program");
	msb_buf line = { 0 };
	for (size_t i = 0; req->argv[i]; i++) {
		if ((i && msb_buf_append(&line, " ", 1, err)) ||
		    msb_buf_append(&line, req->argv[i], strlen(req->argv[i]), err)) {
			msb_buf_free(&line);
			return MSB_E_NOMEM;
		}
	}
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	inproc_record_add(self, "exec", (const char *)line.data);
	msb_errc rc = refuse_disposed(h, "exec", err);
	if (!rc)
		rc = answer(self, self->outputs, self->n_outputs, (const char *)line.data, req->max_output,
			    res, err);
	pthread_mutex_unlock(&self->lock);
	msb_buf_free(&line);
	return rc;
}

msb_errc inproc_run_code(msb_sandbox_handle *h, const char *code, double timeout,
			 msb_exec_result *res, msb_error *err)
{
	(void)timeout; /* nothing runs, so nothing can overrun */
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	inproc_record_add(self, "run_code", code ? code : "");
	msb_errc rc = refuse_disposed(h, "run_code", err);
	if (!rc)
		rc = answer(self, self->programs, self->n_programs, code ? code : "", 0, res, err);
	pthread_mutex_unlock(&self->lock);
	return rc;
}

/*
 * The streamed exec of a fake that evaluates nothing: the scripted answer, capped and
 * flagged exactly as exec's, delivered as one stdout chunk then one stderr chunk. stdin_fd
 * is never read (nothing would consume it) and the environment changes nothing.
 */
msb_errc inproc_exec_stream(msb_sandbox_handle *h, const msb_exec_request *req,
			    const msb_exec_stream *stream, msb_exec_result *res, msb_error *err)
{
	msb_errc rc = inproc_exec(h, req, res, err);
	if (rc != MSB_OK)
		return rc;
	if (res->out.len)
		stream->on_output(stream->ctx, MSB_STREAM_STDOUT, res->out.data, res->out.len);
	if (res->err.len)
		stream->on_output(stream->ctx, MSB_STREAM_STDERR, res->err.data, res->err.len);
	msb_buf_free(&res->out);
	msb_buf_free(&res->err);
	return MSB_OK;
}
