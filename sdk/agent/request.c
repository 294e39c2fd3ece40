/*
 * request.c — decoding a request payload into msb_agent_request, checking what each type needs.
 *
 * The argv and env arrays grow one field at a time, so their size is bounded by the number
 * of fields actually present in a payload already bounded by MSB_AGENT_MAX_PAYLOAD — never
 * by a count the peer states.
 */
#include <stdlib.h>
#include <string.h>

#include <msb/agent.h>

/* A C string copy of a field; refuses an embedded NUL (it would silently cut the string). */
static msb_errc field_cstr(const msb_agent_field *f, const char *what, uint16_t type, char **out,
			   msb_error *err)
{
	if (memchr(f->value, '\0', f->len))
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: %s refused: its %s holds a NUL byte",
				     msb_agent_type_name(type), what);
	char *s = malloc((size_t)f->len + 1);
	if (!s)
		return msb_error_set(err, MSB_E_NOMEM, "agent protocol: out of memory");
	memcpy(s, f->value, f->len);
	s[f->len] = '\0';
	free(*out);
	*out = s;
	return MSB_OK;
}

/* Append a string to a NULL-terminated array. */
static msb_errc vec_push(char ***vec, size_t *n, char *s, msb_error *err)
{
	char **v = realloc(*vec, (*n + 2) * sizeof *v);
	if (!v) {
		free(s);
		return msb_error_set(err, MSB_E_NOMEM, "agent protocol: out of memory");
	}
	v[(*n)++] = s;
	v[*n] = NULL;
	*vec = v;
	return MSB_OK;
}

static msb_errc take_field(msb_agent_request *req, const msb_agent_field *f, msb_error *err)
{
	msb_errc rc = MSB_OK;
	uint32_t u32;
	char *s = NULL;
	switch (f->tag) {
	case MSB_TAG_ARG:
	case MSB_TAG_ENV:
		rc = field_cstr(f, f->tag == MSB_TAG_ARG ? "argument" : "environment entry",
				req->type, &s, err);
		if (rc != MSB_OK)
			return rc;
		if (f->tag == MSB_TAG_ENV && !strchr(s, '=')) {
			free(s);
			return msb_error_set(err, MSB_E_PROTOCOL,
					     "agent protocol: %s refused: an environment entry has no '='",
					     msb_agent_type_name(req->type));
		}
		return f->tag == MSB_TAG_ARG ? vec_push(&req->argv, &req->argc, s, err)
					     : vec_push(&req->env, &req->envc, s, err);
	case MSB_TAG_CWD:
		return field_cstr(f, "working directory", req->type, &req->cwd, err);
	case MSB_TAG_PATH:
		return field_cstr(f, "path", req->type, &req->path, err);
	case MSB_TAG_WORKDIR:
		return field_cstr(f, "working directory", req->type, &req->workdir, err);
	case MSB_TAG_TIMEOUT_MS:
		return msb_agent_field_u64(f, &req->timeout_ms, err);
	case MSB_TAG_MAX_OUTPUT:
		return msb_agent_field_u64(f, &req->max_output, err);
	case MSB_TAG_MAX_BYTES:
		return msb_agent_field_u64(f, &req->max_bytes, err);
	case MSB_TAG_RECURSIVE:
		rc = msb_agent_field_u32(f, &u32, err);
		req->recursive = u32 != 0;
		return rc;
	case MSB_TAG_VERSION:
		return msb_agent_field_u32(f, &req->version, err);
	case MSB_TAG_STDIN_OPEN:
	case MSB_TAG_EOF:
		rc = msb_agent_field_u32(f, &u32, err);
		*(f->tag == MSB_TAG_EOF ? &req->eof : &req->stdin_open) = u32 != 0;
		return rc;
	case MSB_TAG_STREAM:
		return msb_agent_field_u32(f, &req->stream, err);
	case MSB_TAG_ROWS:
		return msb_agent_field_u32(f, &req->rows, err);
	case MSB_TAG_COLS:
		return msb_agent_field_u32(f, &req->cols, err);
	case MSB_TAG_BG_ID:
		return field_cstr(f, "background id", req->type, &req->bg_id, err);
	case MSB_TAG_OFFSET_OUT:
		return msb_agent_field_u64(f, &req->offset_out, err);
	case MSB_TAG_OFFSET_ERR:
		return msb_agent_field_u64(f, &req->offset_err, err);
	case MSB_TAG_WAIT_MS:
		return msb_agent_field_u64(f, &req->wait_ms, err);
	case MSB_TAG_UNTIL_EXIT:
		rc = msb_agent_field_u32(f, &u32, err);
		req->until_exit = u32 != 0;
		return rc;
	case MSB_TAG_SIGNAL:
		return msb_agent_field_u32(f, &req->signal, err);
	case MSB_TAG_STDIN:
	case MSB_TAG_CODE:
	case MSB_TAG_DATA:
		req->data = f->value;
		req->data_len = f->len;
		req->has_data = true;
		return MSB_OK;
	default:
		return MSB_OK; /* unknown tags are skipped: see agent.h */
	}
}

static msb_errc require(bool present, const msb_agent_request *req, const char *what,
			msb_error *err)
{
	if (present)
		return MSB_OK;
	return msb_error_set(err, MSB_E_PROTOCOL, "agent protocol: %s refused: no %s",
			     msb_agent_type_name(req->type), what);
}

/* A terminal size: both given and each fits a winsize field, or neither given. */
static bool size_valid(const msb_agent_request *req)
{
	if (!req->rows && !req->cols)
		return true;
	return req->rows && req->cols && req->rows <= 65535 && req->cols <= 65535;
}

static msb_errc check_required(const msb_agent_request *req, msb_error *err)
{
	msb_errc rc = MSB_OK;
	switch (req->type) {
	case MSB_AGENT_HELLO:
		return require(req->version != 0, req, "protocol version", err);
	case MSB_AGENT_EXEC:
		return require(req->argc > 0, req, "argv (at least the program)", err);
	case MSB_AGENT_RESIZE:
		return require(size_valid(req) && req->rows, req, "terminal size (rows and cols 1..65535)",
			       err);
	case MSB_AGENT_EXEC_STREAM:
		rc = require(req->argc > 0, req, "argv (at least the program)", err);
		if (rc == MSB_OK)
			rc = require(size_valid(req), req, "valid terminal size (rows and cols both "
				     "1..65535, or neither)", err);
		/* A streamed exec's environment is named by the host's caller: every name checked. */
		for (size_t i = 0; rc == MSB_OK && i < req->envc; i++)
			if (!msb_env_entry_valid(req->env[i], NULL))
				rc = msb_error_set(err, MSB_E_PROTOCOL,
						   "agent protocol: exec_stream refused: environment "
						   "entry %zu has a name that is not "
						   "[A-Za-z_][A-Za-z0-9_]*", i + 1);
		return rc;
	case MSB_AGENT_BG_START:
		rc = require(req->argc > 0, req, "argv (at least the program)", err);
		for (size_t i = 0; rc == MSB_OK && i < req->envc; i++)
			if (!msb_env_entry_valid(req->env[i], NULL))
				rc = msb_error_set(err, MSB_E_PROTOCOL,
						   "agent protocol: bg_start refused: environment "
						   "entry %zu has a name that is not "
						   "[A-Za-z_][A-Za-z0-9_]*", i + 1);
		return rc;
	case MSB_AGENT_BG_SIGNAL:
		rc = require(req->signal >= 1 && req->signal <= 64, req, "signal (1..64)", err);
		/* fall through */
	case MSB_AGENT_BG_READ:
		/* The id names a directory of the agent's: its shape is checked before any use. */
		if (rc == MSB_OK)
			rc = require(msb_bg_id_valid(req->bg_id), req,
				     "background id ([0-9a-z], 1 to 32 of them)", err);
		return rc;
	case MSB_AGENT_OUTPUT:
		rc = require(req->stream == MSB_STREAM_STDOUT || req->stream == MSB_STREAM_STDERR,
			     req, "stream (1 stdout or 2 stderr)", err);
		return rc == MSB_OK ? require(req->has_data, req, "data", err) : rc;
	case MSB_AGENT_RUN_CODE:
		return require(req->has_data, req, "code", err);
	case MSB_AGENT_WRITE_FILE:
		rc = require(req->has_data, req, "data", err);
		/* fall through */
	case MSB_AGENT_STAT_FILE:
	case MSB_AGENT_READ_FILE:
	case MSB_AGENT_LIST_DIR:
	case MSB_AGENT_REMOVE:
	case MSB_AGENT_RECLAIM:
		if (rc == MSB_OK)
			rc = require(req->path != NULL, req, "path", err);
		if (rc == MSB_OK)
			rc = require(req->workdir != NULL, req, "working directory", err);
		return rc;
	default:
		return MSB_OK;
	}
}

msb_errc msb_agent_request_decode(uint16_t type, const unsigned char *payload, size_t len,
				  msb_agent_request *req, msb_error *err)
{
	memset(req, 0, sizeof *req);
	req->type = type;
	if (type == 0 || type > MSB_AGENT__TYPE_MAX)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: message type %u refused: this agent knows types "
				     "1..%u", type, MSB_AGENT__TYPE_MAX);
	msb_agent_reader r = { .data = payload, .len = len };
	for (;;) {
		msb_agent_field f;
		bool done;
		msb_errc rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc == MSB_OK && !done)
			rc = take_field(req, &f, err);
		if (rc != MSB_OK) {
			msb_agent_request_free(req);
			return rc;
		}
		if (done)
			break;
	}
	msb_errc rc = check_required(req, err);
	if (rc != MSB_OK)
		msb_agent_request_free(req);
	return rc;
}

static void vec_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

void msb_agent_request_free(msb_agent_request *req)
{
	if (!req)
		return;
	vec_free(req->argv);
	vec_free(req->env);
	free(req->cwd);
	free(req->path);
	free(req->workdir);
	free(req->bg_id);
	uint16_t type = req->type;
	memset(req, 0, sizeof *req);
	req->type = type;
}

msb_errc msb_agent_output_decode(const unsigned char *payload, size_t len, uint32_t *stream,
				 const unsigned char **data, size_t *data_len, msb_error *err)
{
	msb_agent_request req;
	msb_errc rc = msb_agent_request_decode(MSB_AGENT_OUTPUT, payload, len, &req, err);
	if (rc != MSB_OK)
		return rc;
	*stream = req.stream;
	*data = req.data;
	*data_len = req.data_len;
	msb_agent_request_free(&req);
	return MSB_OK;
}
