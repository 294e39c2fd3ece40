/*
 * mcp_tools.c — the sandbox surface as MCP tools: which are listed, their exact schemas,
 * and each call over libmsb.
 *
 * A tool is listed only when the kind's serving backend declares the capability behind it,
 * so a model is never shown something it cannot do. Every schema is closed
 * (additionalProperties false) and the server enforces the schema itself, because nothing
 * obliges a client to: an argument outside it — a "scope" or "thread" above all — is refused
 * by name, since the sandbox key is the operator's and a key a model can supply is a key that
 * crosses conversations.
 *
 * What the model reads is lossless: text that is UTF-8 is passed as text; bytes that are not
 * are passed base64 beside a lossy rendering, never re-coded in place. Caps and truncation
 * are stated in every result that has them.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>
#include <unistr.h>

#include <msb/outputs.h>
#include <msb/stream.h>

#include "mcp.h"

/* ---- values the model reads -------------------------------------------------------- */

static json_t *base64_of(const unsigned char *data, size_t len)
{
	size_t cap = 4 * ((len + 2) / 3) + 1;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	int n = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	json_t *v = n >= 0 ? json_stringn(out, (size_t)n) : NULL;
	free(out);
	return v;
}

/* Bytes as a JSON string: exact when UTF-8, else each invalid byte as U+FFFD (*exact false). */
static json_t *text_of(const unsigned char *data, size_t len, bool *exact)
{
	*exact = !len || u8_check(data, len) == NULL;
	if (*exact)
		return json_stringn((const char *)data, len);
	char *out = malloc(3 * len + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		ucs4_t uc;
		int n = u8_mbtouc_unsafe(&uc, data + i, len - i);
		if (n > 0 && u8_check(data + i, (size_t)n) == NULL) {
			memcpy(out + o, data + i, (size_t)n);
			o += (size_t)n;
			i += (size_t)n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	json_t *v = json_stringn(out, o);
	free(out);
	return v;
}

/* Set `key` to the bytes as text, and `key`_base64 to the exact bytes when they are not text. */
static void set_bytes(json_t *obj, const char *key, const unsigned char *data, size_t len)
{
	bool exact;
	json_object_set_new(obj, key, text_of(data, len, &exact));
	if (!exact) {
		char b64[64];
		snprintf(b64, sizeof b64, "%s_base64", key);
		json_object_set_new(obj, b64, base64_of(data, len));
	}
}

/* A result: the structured value, serialised into the text block as the spec recommends. */
static json_t *result_of(json_t *structured, bool is_error)
{
	char *text = json_dumps(structured, JSON_COMPACT);
	json_t *r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text",
			      text ? text : "{}", "structuredContent", structured, "isError", is_error);
	free(text);
	return r;
}

/* A refusal: the seed's error name, and msb's sentence. */
static json_t *refusal_of(const char *name, const char *sentence)
{
	char *text = NULL;
	if (asprintf(&text, "%s: %s", name, sentence) < 0)
		text = NULL;
	json_t *r = json_pack("{s:[{s:s, s:s}], s:{s:s, s:s}, s:b}", "content", "type", "text", "text",
			      text ? text : name, "structuredContent", "error", name, "message",
			      sentence, "isError", 1);
	free(text);
	return r;
}

static json_t *error_result(msb_error *err)
{
	json_t *r = refusal_of(msb_errc_name(err->code), msb_error_message(err));
	msb_error_clear(err);
	return r;
}

/* ---- the tool table ---------------------------------------------------------------- */

typedef struct call_ctx {
	msb_mcp_server *s;
	const msb_mcp_kind *k;
	json_t *args;
	msb_sandbox *sb;
} call_ctx;

typedef struct tool_def {
	const char *name;
	int capability;         /* msb_capability the backend must declare */
	const char *description;
	const char *schema;     /* the input schema, exact */
	const char *const *allowed;
	json_t *(*call)(call_ctx *c, msb_error *err);
} tool_def;

static json_t *call_exec(call_ctx *c, msb_error *err);
static json_t *call_run_code(call_ctx *c, msb_error *err);
static json_t *call_write_file(call_ctx *c, msb_error *err);
static json_t *call_read_file(call_ctx *c, msb_error *err);
static json_t *call_list_dir(call_ctx *c, msb_error *err);
static json_t *call_stat(call_ctx *c, msb_error *err);
static json_t *call_remove(call_ctx *c, msb_error *err);
static json_t *call_collect(call_ctx *c, msb_error *err);
static json_t *call_exec_background(call_ctx *c, msb_error *err);
static json_t *call_bg_output(call_ctx *c, msb_error *err);
static json_t *call_bg_signal(call_ctx *c, msb_error *err);
static json_t *call_bg_list(call_ctx *c, msb_error *err);

#define PATH_PROP "\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"relative to the sandbox's working directory\"}"
#define TIMEOUT_PROP "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"seconds, wall-clock from the call\"}"

static const char *const EXEC_ARGS[] = { "argv", "timeout", "stdin", NULL };
static const char *const RUN_ARGS[] = { "code", "timeout", NULL };
static const char *const WRITE_ARGS[] = { "path", "content", "content_base64", NULL };
static const char *const READ_ARGS[] = { "path", "max_bytes", NULL };
static const char *const PATH_ARGS[] = { "path", NULL };
static const char *const REMOVE_ARGS[] = { "path", "recursive", NULL };
static const char *const NO_ARGS[] = { NULL };
static const char *const BG_OUTPUT_ARGS[] = { "id", "stdout_offset", "stderr_offset", "wait",
					      "until_exit", NULL };
static const char *const BG_SIGNAL_ARGS[] = { "id", "signal", NULL };
#define BG_ID_PROP "\"id\":{\"type\":\"string\",\"pattern\":\"^[0-9a-z]{1,32}$\",\"description\":\"what exec_background returned\"}"

static const tool_def TOOLS[] = {
	{ "exec", MSB_CAP_EXEC,
	  "Run a program in the sandbox: argv is the program and its arguments (no shell "
	  "unless you name one). Returns exit_code, stdout and stderr; each stream is capped "
	  "and the result says when it was cut.",
	  "{\"type\":\"object\",\"properties\":{\"argv\":{\"type\":\"array\",\"items\":{\"type\":"
	  "\"string\"},\"minItems\":1}," TIMEOUT_PROP ",\"stdin\":{\"type\":\"string\"}},"
	  "\"required\":[\"argv\"],\"additionalProperties\":false}",
	  EXEC_ARGS, call_exec },
	{ "run_code", MSB_CAP_RUN_CODE,
	  "Run a program in the kind's language interpreter. Returns exit_code, stdout and stderr.",
	  "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\"}," TIMEOUT_PROP "},"
	  "\"required\":[\"code\"],\"additionalProperties\":false}",
	  RUN_ARGS, call_run_code },
	{ "write_file", MSB_CAP_FILES_IN,
	  "Write a file in the sandbox (created or replaced atomically): content as text, or "
	  "content_base64 for bytes.",
	  "{\"type\":\"object\",\"properties\":{" PATH_PROP ",\"content\":{\"type\":\"string\"},"
	  "\"content_base64\":{\"type\":\"string\",\"contentEncoding\":\"base64\"}},"
	  "\"required\":[\"path\"],\"additionalProperties\":false}",
	  WRITE_ARGS, call_write_file },
	{ "read_file", MSB_CAP_FILES_OUT,
	  "Read a file of the sandbox whole; a file larger than max_bytes is refused, never cut.",
	  "{\"type\":\"object\",\"properties\":{" PATH_PROP ",\"max_bytes\":{\"type\":\"integer\","
	  "\"minimum\":1}},\"required\":[\"path\"],\"additionalProperties\":false}",
	  READ_ARGS, call_read_file },
	{ "list_dir", MSB_CAP_FILES_LIST,
	  "List a directory of the sandbox; links are listed as links.",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
	  "\"additionalProperties\":false}",
	  PATH_ARGS, call_list_dir },
	{ "stat", MSB_CAP_FILES_OUT,
	  "Whether a path exists in the sandbox, and what it is (file, directory, symlink) and its size.",
	  "{\"type\":\"object\",\"properties\":{" PATH_PROP "},\"required\":[\"path\"],"
	  "\"additionalProperties\":false}",
	  PATH_ARGS, call_stat },
	{ "remove", MSB_CAP_FILES_DELETE,
	  "Remove a path of the sandbox (a directory only with recursive); absent is success.",
	  "{\"type\":\"object\",\"properties\":{" PATH_PROP ",\"recursive\":{\"type\":\"boolean\"}},"
	  "\"required\":[\"path\"],\"additionalProperties\":false}",
	  REMOVE_ARGS, call_remove },
	{ "collect", MSB_CAP_FILES_OUT,
	  "Collect the kind's declared outputs, each returned as an embedded resource.",
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  NO_ARGS, call_collect },
	{ "exec_background", MSB_CAP_EXEC,
	  "Start a program in the sandbox and leave it running (a server, a long build): returns "
	  "its id at once. Its output is kept in a ring per stream (the newest bytes); read it "
	  "with bg_output, stop it with bg_signal, see all with bg_list. timeout bounds its life.",
	  "{\"type\":\"object\",\"properties\":{\"argv\":{\"type\":\"array\",\"items\":{\"type\":"
	  "\"string\"},\"minItems\":1}," TIMEOUT_PROP ",\"stdin\":{\"type\":\"string\"}},"
	  "\"required\":[\"argv\"],\"additionalProperties\":false}",
	  EXEC_ARGS, call_exec_background },
	{ "bg_output", MSB_CAP_EXEC,
	  "A background program's output from the offsets given (0: all still held), and its "
	  "status; waits up to `wait` seconds for more output (or, with until_exit, for its end). "
	  "Says how many bytes the ring dropped before the offsets asked; pass the returned "
	  "next offsets to read on.",
	  "{\"type\":\"object\",\"properties\":{" BG_ID_PROP ",\"stdout_offset\":{\"type\":"
	  "\"integer\",\"minimum\":0},\"stderr_offset\":{\"type\":\"integer\",\"minimum\":0},"
	  "\"wait\":{\"type\":\"number\",\"minimum\":0},\"until_exit\":{\"type\":\"boolean\"}},"
	  "\"required\":[\"id\"],\"additionalProperties\":false}",
	  BG_OUTPUT_ARGS, call_bg_output },
	{ "bg_signal", MSB_CAP_EXEC,
	  "Send a signal (TERM by default) to a background program's process group.",
	  "{\"type\":\"object\",\"properties\":{" BG_ID_PROP ",\"signal\":{\"enum\":[\"TERM\","
	  "\"KILL\",\"INT\",\"HUP\",\"USR1\",\"USR2\"]}},\"required\":[\"id\"],"
	  "\"additionalProperties\":false}",
	  BG_SIGNAL_ARGS, call_bg_signal },
	{ "bg_list", MSB_CAP_EXEC,
	  "The sandbox's background programs, running or ended, oldest first.",
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  NO_ARGS, call_bg_list },
};
#define N_TOOLS (sizeof TOOLS / sizeof *TOOLS)

static bool listed(const tool_def *t, const msb_mcp_kind *k)
{
	if (!(k->capabilities & MSB_BIT(t->capability)))
		return false;
	if (t->call == call_exec_background || t->call == call_bg_output ||
	    t->call == call_bg_signal || t->call == call_bg_list)
		return k->background;
	return t->call != call_collect || k->spec->n_declared_outputs > 0;
}

static void tool_name(const msb_mcp_server *s, const tool_def *t, const msb_mcp_kind *k,
		      char *out, size_t size)
{
	if (s->n_kinds == 1)
		snprintf(out, size, "%s", t->name);
	else
		snprintf(out, size, "%s_%s", k->kind, t->name);
}

json_t *msb_mcp_tools_list(const msb_mcp_server *s)
{
	json_t *tools = json_array();
	for (size_t i = 0; tools && i < s->n_kinds; i++) {
		const msb_mcp_kind *k = &s->kinds[i];
		for (size_t j = 0; j < N_TOOLS; j++) {
			if (!listed(&TOOLS[j], k))
				continue;
			char name[160], desc[640];
			tool_name(s, &TOOLS[j], k, name, sizeof name);
			snprintf(desc, sizeof desc, "%s (kind '%s', backend '%s')", TOOLS[j].description,
				 k->kind, k->backend);
			json_t *schema = json_loads(TOOLS[j].schema, 0, NULL);
			json_array_append_new(tools, json_pack("{s:s, s:s, s:o}", "name", name,
							       "description", desc, "inputSchema",
							       schema));
		}
	}
	return json_pack("{s:o}", "tools", tools);
}

/* ---- arguments ---------------------------------------------------------------------- */

/* The schema, enforced: NULL when `args` fits, else the tool error the model reads. */
static json_t *check_args(const tool_def *t, json_t *args)
{
	const char *key;
	json_t *v;
	json_object_foreach(args, key, v) {
		bool known = false;
		for (size_t i = 0; t->allowed[i] && !known; i++)
			known = strcmp(key, t->allowed[i]) == 0;
		if (known)
			continue;
		char sentence[400];
		bool keyish = !strcmp(key, "scope") || !strcmp(key, "thread") ||
			      !strcmp(key, "thread_id") || !strcmp(key, "agent") ||
			      !strcmp(key, "agent_dir") || !strcmp(key, "call_id") || !strcmp(key, "key");
		snprintf(sentence, sizeof sentence,
			 "argument '%.64s' is not in %s's input schema%s", key, t->name,
			 keyish ? "; the sandbox key is the operator's, set when the server was "
				  "started, and no tool argument can name one"
				: "");
		return refusal_of("ValueError", sentence);
	}
	return NULL;
}

static json_t *bad_arg(const char *tool, const char *arg, const char *want)
{
	char sentence[300];
	snprintf(sentence, sizeof sentence, "%s: '%s' must be %s", tool, arg, want);
	return refusal_of("ValueError", sentence);
}

static const char *string_arg(json_t *args, const char *name)
{
	return json_string_value(json_object_get(args, name));
}

/* The timeout a call asked for: 0 (the backend's default) when absent; -1 when invalid. */
static double timeout_arg(const msb_mcp_server *s, json_t *args)
{
	json_t *v = json_object_get(args, "timeout");
	if (!v)
		return 0;
	double t = json_number_value(v);
	if (!json_is_number(v) || !isfinite(t) || t <= 0 || t > s->max_timeout)
		return -1;
	return t;
}

/* ---- the calls ----------------------------------------------------------------------- */

static json_t *exec_result(const msb_exec_result *res, double timeout, size_t max_output)
{
	json_t *o = json_object();
	json_object_set_new(o, "exit_code", json_integer(res->exit_code));
	if (res->term_signal)
		json_object_set_new(o, "signal", json_integer(res->term_signal));
	json_object_set_new(o, "timed_out", json_boolean(res->timed_out));
	set_bytes(o, "stdout", res->out.data, res->out.len);
	set_bytes(o, "stderr", res->err.data, res->err.len);
	json_object_set_new(o, "stdout_truncated", json_boolean(res->out_truncated));
	json_object_set_new(o, "stderr_truncated", json_boolean(res->err_truncated));
	if (max_output)
		json_object_set_new(o, "max_output_bytes", json_integer((json_int_t)max_output));
	if (res->timed_out)
		json_object_set_new(o, "timeout_seconds", json_real(timeout));
	return result_of(o, res->timed_out);
}

/*
 * Progress for a streamed exec: each chunk of output, as the guest wrote it, is one
 * notifications/progress whose `progress` is the bytes delivered so far (it only grows) and
 * whose `message` is the chunk as text; the bytes are also kept for the final result, which
 * reads as an unstreamed exec's. Nothing is held past the per-stream cap: the agent delivers
 * at most that much of each stream.
 */
typedef struct progress {
	msb_mcp_server *s;
	msb_buf out, err;
	uint64_t sent;
} progress;

static void on_chunk(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	progress *p = ctx;
	msb_buf *into = stream == MSB_STREAM_STDERR ? &p->err : &p->out;
	if (msb_buf_append(into, data, len, NULL) != MSB_OK)
		return;
	p->sent += len;
	bool exact;
	json_t *text = text_of(data, len, &exact);
	msb_mcp_notify(p->s, json_pack("{s:s, s:s, s:{s:O, s:I, s:o?}}", "jsonrpc", "2.0", "method",
				       "notifications/progress", "params", "progressToken",
				       p->s->progress_token, "progress", (json_int_t)p->sent,
				       "message", text));
}

static msb_errc exec_with_progress(call_ctx *c, const msb_exec_request *req, msb_exec_result *res,
				   msb_error *err)
{
	progress p = { .s = c->s };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.ctx = &p;
	st.on_output = on_chunk;
	msb_errc rc = msb_sandbox_exec_stream(c->sb, req, &st, res, err);
	if (rc == MSB_OK) {
		msb_buf_free(&res->out);
		msb_buf_free(&res->err);
		res->out = p.out;
		res->err = p.err;
	} else {
		msb_buf_free(&p.out);
		msb_buf_free(&p.err);
	}
	return rc;
}

/*
 * exec's and exec_background's arguments (argv, timeout, stdin) into `req`; NULL when they
 * fit (req->argv then to be freed), else the tool error the model reads.
 */
static json_t *exec_args(call_ctx *c, const char *tool, msb_exec_request *req, bool *nomem)
{
	json_t *argv = json_object_get(c->args, "argv");
	size_t n = json_array_size(argv);
	*nomem = false;
	if (!json_is_array(argv) || n == 0 || n > 4096)
		return bad_arg(tool, "argv", "a non-empty array of strings (at most 4096)");
	const char **list = calloc(n + 1, sizeof *list);
	if (!list) {
		*nomem = true;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!(list[i] = json_string_value(json_array_get(argv, i))) ||
		    strlen(list[i]) != json_string_length(json_array_get(argv, i))) {
			free(list);
			return bad_arg(tool, "argv", "an array of strings without NUL bytes");
		}
	double timeout = timeout_arg(c->s, c->args);
	json_t *in = json_object_get(c->args, "stdin");
	if (timeout < 0 || (in && !json_is_string(in))) {
		free(list);
		return timeout < 0 ? bad_arg(tool, "timeout", "a positive number of seconds within the server's maximum")
				   : bad_arg(tool, "stdin", "a string");
	}
	*req = (msb_exec_request){ .argv = list, .timeout = timeout };
	if (in) {
		req->stdin_data = json_string_value(in);
		req->stdin_len = json_string_length(in);
	}
	return NULL;
}

static json_t *call_exec(call_ctx *c, msb_error *err)
{
	msb_exec_request req;
	bool nomem;
	json_t *refused = exec_args(c, "exec", &req, &nomem);
	if (refused || nomem)
		return refused;
	const char **list = (const char **)req.argv;
	double timeout = req.timeout;
	msb_exec_result res = { 0 };
	/* Streamed only where the client asked for progress and the backend can stream. */
	msb_errc rc = c->s->progress_token && msb_sandbox_can_stream(c->sb)
			      ? exec_with_progress(c, &req, &res, err)
			      : msb_sandbox_exec(c->sb, &req, &res, err);
	free(list);
	json_t *r = rc ? error_result(err) : exec_result(&res, timeout, req.max_output);
	msb_exec_result_free(&res);
	return r;
}

static json_t *call_run_code(call_ctx *c, msb_error *err)
{
	const char *code = string_arg(c->args, "code");
	if (!code)
		return bad_arg("run_code", "code", "a string");
	double timeout = timeout_arg(c->s, c->args);
	if (timeout < 0)
		return bad_arg("run_code", "timeout", "a positive number of seconds within the server's maximum");
	msb_exec_result res = { 0 };
	msb_errc rc = msb_sandbox_run_code(c->sb, code, timeout, &res, err);
	json_t *r = rc ? error_result(err) : exec_result(&res, timeout, 0);
	msb_exec_result_free(&res);
	return r;
}

static json_t *call_write_file(call_ctx *c, msb_error *err)
{
	const char *path = string_arg(c->args, "path");
	json_t *text = json_object_get(c->args, "content");
	json_t *b64 = json_object_get(c->args, "content_base64");
	if (!path)
		return bad_arg("write_file", "path", "a string");
	if (!!text == !!b64 || (text && !json_is_string(text)) || (b64 && !json_is_string(b64)))
		return bad_arg("write_file", "content", "given as exactly one of content or content_base64, a string");
	const unsigned char *data;
	size_t len;
	unsigned char *decoded = NULL;
	if (text) {
		data = (const unsigned char *)json_string_value(text);
		len = json_string_length(text);
	} else {
		const char *in = json_string_value(b64);
		size_t in_len = json_string_length(b64);
		decoded = malloc(in_len / 4 * 3 + 3);
		int n = decoded && in_len % 4 == 0
				? EVP_DecodeBlock(decoded, (const unsigned char *)in, (int)in_len)
				: -1;
		if (n < 0) {
			free(decoded);
			return bad_arg("write_file", "content_base64", "base64 (RFC 4648, padded)");
		}
		len = (size_t)n;
		/* EVP_DecodeBlock counts padding as zero bytes: take them off again */
		for (size_t i = in_len; i > 0 && in[i - 1] == '=' && len > 0; i--)
			len--;
		data = decoded;
	}
	msb_errc rc = msb_sandbox_write_file(c->sb, path, data, len, NULL, err);
	free(decoded);
	if (rc)
		return error_result(err);
	return result_of(json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)len), false);
}

static json_t *call_read_file(call_ctx *c, msb_error *err)
{
	const char *path = string_arg(c->args, "path");
	if (!path)
		return bad_arg("read_file", "path", "a string");
	uint64_t cap = c->k->spec->files_out.max_bytes_per_file;
	json_t *mb = json_object_get(c->args, "max_bytes");
	if (mb) {
		if (!json_is_integer(mb) || json_integer_value(mb) < 1)
			return bad_arg("read_file", "max_bytes", "a positive integer");
		if ((uint64_t)json_integer_value(mb) < cap)
			cap = (uint64_t)json_integer_value(mb);
	}
	msb_buf out = { 0 };
	msb_errc rc = msb_sandbox_read_file(c->sb, path, NULL, cap, &out, err);
	if (rc) {
		msb_buf_free(&out);
		return error_result(err);
	}
	json_t *o = json_pack("{s:s, s:I, s:I}", "path", path, "bytes", (json_int_t)out.len,
			      "max_bytes", (json_int_t)cap);
	set_bytes(o, "content", out.data, out.len);
	msb_buf_free(&out);
	return result_of(o, false);
}

static const char *kind_word(msb_entry_kind k)
{
	return msb_word_name(MSB_AXIS_ENTRY_KIND, (int)k);
}

static json_t *entry_of(const msb_entry *e)
{
	json_t *o = json_object();
	set_bytes(o, "path", (const unsigned char *)e->path, strlen(e->path));
	json_object_set_new(o, "kind", json_string(kind_word(e->kind)));
	if (e->size_bytes >= 0)
		json_object_set_new(o, "size", json_integer(e->size_bytes));
	return o;
}

static json_t *call_list_dir(call_ctx *c, msb_error *err)
{
	const char *path = string_arg(c->args, "path");
	if (json_object_get(c->args, "path") && !path)
		return bad_arg("list_dir", "path", "a string");
	msb_entry_list list = { 0 };
	msb_errc rc = msb_sandbox_list_dir(c->sb, path && *path ? path : ".", NULL, &list, err);
	if (rc) {
		msb_entry_list_free(&list);
		return error_result(err);
	}
	json_t *entries = json_array();
	for (size_t i = 0; i < list.len; i++)
		json_array_append_new(entries, entry_of(&list.items[i]));
	msb_entry_list_free(&list);
	return result_of(json_pack("{s:o}", "entries", entries), false);
}

static json_t *call_stat(call_ctx *c, msb_error *err)
{
	const char *path = string_arg(c->args, "path");
	if (!path)
		return bad_arg("stat", "path", "a string");
	msb_entry e = { 0 };
	bool found = false;
	msb_errc rc = msb_sandbox_stat_file(c->sb, path, NULL, &e, &found, err);
	if (rc) {
		free(e.path);
		return error_result(err);
	}
	json_t *o = found ? entry_of(&e) : json_pack("{s:s}", "path", path);
	json_object_set_new(o, "exists", json_boolean(found));
	free(e.path);
	return result_of(o, false);
}

static json_t *call_remove(call_ctx *c, msb_error *err)
{
	const char *path = string_arg(c->args, "path");
	json_t *rec = json_object_get(c->args, "recursive");
	if (!path)
		return bad_arg("remove", "path", "a string");
	if (rec && !json_is_boolean(rec))
		return bad_arg("remove", "recursive", "a boolean");
	if (msb_sandbox_remove(c->sb, path, NULL, json_is_true(rec), err))
		return error_result(err);
	return result_of(json_pack("{s:s, s:b}", "path", path, "removed", 1), false);
}

/* ---- collect: each declared output as an embedded resource --------------------------- */

typedef struct held {
	json_t *content;   /* the content blocks */
	json_t *artifacts; /* the structured list */
	const char *kind;
} held;

static msb_errc hold_deliver(void *ctx, const msb_artifact *a, msb_landed_artifact *landed,
			     msb_error *err)
{
	held *h = ctx;
	char uri[600];
	snprintf(uri, sizeof uri, "msb://%s/%s", h->kind, a->name);
	bool exact = !a->len || u8_check(a->content, a->len) == NULL;
	json_t *res = json_pack("{s:s, s:s?}", "uri", uri, "mimeType", a->media_type);
	if (exact)
		json_object_set_new(res, "text", json_stringn((const char *)a->content, a->len));
	else
		json_object_set_new(res, "blob", base64_of(a->content, a->len));
	json_array_append_new(h->content, json_pack("{s:s, s:o}", "type", "resource", "resource", res));
	json_array_append_new(h->artifacts, json_pack("{s:s, s:I, s:s?, s:b}", "name", a->name,
						     "bytes", (json_int_t)a->len, "media_type",
						     a->media_type, "text", exact));
	landed->name = strdup(a->name);
	landed->display = strdup(a->name);
	if (!landed->name || !landed->display)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	return MSB_OK;
}

static json_t *call_collect(call_ctx *c, msb_error *err)
{
	held h = { json_array(), json_array(), c->k->kind };
	msb_output_sink sink = MSB_OUTPUT_SINK_INIT;
	sink.ctx = &h;
	sink.normalization = MSB_NAME_NONE;
	sink.deliver = hold_deliver;
	msb_landed_artifacts landed = { 0 };
	msb_errc rc = msb_collect_outputs(c->sb, c->k->spec, &sink, NULL, &landed, err);
	msb_landed_artifacts_free(&landed);
	if (rc) {
		json_decref(h.content);
		json_decref(h.artifacts);
		return error_result(err);
	}
	json_t *structured = json_pack("{s:o}", "artifacts", h.artifacts);
	char *text = json_dumps(structured, JSON_COMPACT);
	json_array_insert_new(h.content, 0, json_pack("{s:s, s:s}", "type", "text", "text",
						      text ? text : "{}"));
	free(text);
	return json_pack("{s:o, s:o, s:b}", "content", h.content, "structuredContent", structured,
			 "isError", 0);
}

/* ---- dispatch ------------------------------------------------------------------------ */

/* Acquire-time refusals the router makes say msb's own sentence; anything else from a
 * backend's acquire can carry an endpoint, so the model reads only its name. */
static bool router_sentence(msb_errc rc)
{
	switch (rc) {
	case MSB_E_UNCLEAN:
	case MSB_E_BACKEND_NOT_PERMITTED:
	case MSB_E_CAPABILITY_NOT_SUPPORTED:
	case MSB_E_CAPABILITY_DENIED:
	case MSB_E_EGRESS_NOT_ENFORCED:
	case MSB_E_SCOPE_NOT_ENFORCED:
	case MSB_E_OS_FAMILY_NOT_SUPPORTED:
	case MSB_E_TRANSFER_LIMITS_NOT_PERMITTED:
	case MSB_E_NO_BACKEND:
		return true;
	default:
		return false;
	}
}

static void random_call_id(char out[25])
{
	unsigned char raw[12] = { 0 };
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		memset(raw, 0x5a, sizeof raw);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

json_t *msb_mcp_tools_call(msb_mcp_server *s, const char *name, json_t *args, int *code,
			   char *message, size_t message_size)
{
	const tool_def *t = NULL;
	const msb_mcp_kind *k = NULL;
	for (size_t i = 0; !t && i < s->n_kinds; i++)
		for (size_t j = 0; !t && j < N_TOOLS; j++) {
			char full[160];
			tool_name(s, &TOOLS[j], &s->kinds[i], full, sizeof full);
			if (listed(&TOOLS[j], &s->kinds[i]) && strcmp(full, name) == 0) {
				t = &TOOLS[j];
				k = &s->kinds[i];
			}
		}
	if (!t) {
		*code = MSB_MCP_INVALID_PARAMS;
		snprintf(message, message_size, "unknown tool '%.100s'", name);
		return NULL;
	}
	json_t *empty = NULL;
	if (!args)
		args = empty = json_object();
	json_t *refused = check_args(t, args);
	if (refused) {
		json_decref(empty);
		return refused;
	}
	/* At call scope each call gets a sandbox of its own, disposed when the call returns. */
	msb_scope floor = msb_config_router_options(s->cfg)->min_isolation_scope;
	bool per_call = k->spec->isolation_scope == MSB_SCOPE_CALL || floor == MSB_SCOPE_CALL;
	char call_id[25] = "";
	msb_key key = s->key;
	if (per_call) {
		random_call_id(call_id);
		key.call_id = call_id;
	}
	msb_error err = MSB_ERROR_INIT;
	msb_sandbox *sb = NULL;
	json_t *r;
	msb_errc rc = msb_router_acquire(s->router, &key, k->spec, &sb, &err);
	if (rc) {
		fprintf(stderr, "msb mcp: %s: acquire refused: %s: %s\n", name, msb_errc_name(rc),
			msb_error_message(&err));
		r = refusal_of(msb_errc_name(rc), router_sentence(rc) ? msb_error_message(&err)
								      : "the sandbox is unavailable");
		msb_error_clear(&err);
	} else {
		call_ctx c = { s, k, args, sb };
		r = t->call(&c, &err);
		msb_error_clear(&err);
		if (per_call)
			msb_router_dispose(s->router, msb_sandbox_key(sb), NULL);
		msb_sandbox_release(sb);
	}
	json_decref(empty);
	if (!r) {
		*code = MSB_MCP_INTERNAL_ERROR;
		snprintf(message, message_size, "out of memory");
	}
	return r;
}

/* ---- background programs (msb/background.h) ---------------------------------------- */

static json_t *bg_status_of(const msb_bg_status *st)
{
	json_t *o = json_pack("{s:s, s:I, s:b, s:I, s:I, s:I, s:s}", "id", st->id, "pid",
			      (json_int_t)st->pid, "running", st->running, "ring_bytes",
			      (json_int_t)st->ring, "stdout_written", (json_int_t)st->out_written,
			      "stderr_written", (json_int_t)st->err_written, "command", st->command);
	if (o && !st->running) {
		json_object_set_new(o, "exit_code", json_integer(st->exit_code));
		json_object_set_new(o, "signal", json_integer(st->signal));
		json_object_set_new(o, "timed_out", json_boolean(st->timed_out));
	}
	return o;
}

static json_t *call_exec_background(call_ctx *c, msb_error *err)
{
	msb_exec_request req;
	bool nomem;
	json_t *refused = exec_args(c, "exec_background", &req, &nomem);
	if (refused || nomem)
		return refused;
	msb_bg_status st;
	msb_errc rc = msb_sandbox_bg_start(c->sb, &req, NULL, &st, err);
	free((void *)req.argv);
	return rc ? error_result(err) : result_of(bg_status_of(&st), false);
}

/* A non-negative integer argument (0 when absent); false when it is something else. */
static bool offset_arg(json_t *args, const char *name, uint64_t *v)
{
	json_t *j = json_object_get(args, name);
	*v = 0;
	if (!j)
		return true;
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

static json_t *call_bg_output(call_ctx *c, msb_error *err)
{
	const char *id = string_arg(c->args, "id");
	msb_bg_read rq = { 0 };
	json_t *wait = json_object_get(c->args, "wait");
	json_t *until = json_object_get(c->args, "until_exit");
	if (!id || !msb_bg_id_valid(id))
		return bad_arg("bg_output", "id", "what exec_background returned");
	if (!offset_arg(c->args, "stdout_offset", &rq.out_offset) ||
	    !offset_arg(c->args, "stderr_offset", &rq.err_offset))
		return bad_arg("bg_output", "stdout_offset/stderr_offset", "integers >= 0");
	rq.wait = wait ? json_number_value(wait) : 0;
	if ((wait && !json_is_number(wait)) || !isfinite(rq.wait) || rq.wait < 0 ||
	    rq.wait > c->s->max_timeout)
		return bad_arg("bg_output", "wait", "a number of seconds within the server's maximum");
	if (until && !json_is_boolean(until))
		return bad_arg("bg_output", "until_exit", "a boolean");
	rq.until_exit = until && json_is_true(until);
	msb_bg_output out;
	if (msb_sandbox_bg_read(c->sb, id, &rq, &out, err) != MSB_OK)
		return error_result(err);
	json_t *o = json_object();
	json_object_set_new(o, "status", bg_status_of(&out.status));
	set_bytes(o, "stdout", out.out.data, out.out.len);
	set_bytes(o, "stderr", out.err.data, out.err.len);
	json_object_set_new(o, "stdout_dropped", json_integer((json_int_t)out.out_dropped));
	json_object_set_new(o, "stderr_dropped", json_integer((json_int_t)out.err_dropped));
	json_object_set_new(o, "next_stdout_offset",
			    json_integer((json_int_t)(out.out_start + out.out.len)));
	json_object_set_new(o, "next_stderr_offset",
			    json_integer((json_int_t)(out.err_start + out.err.len)));
	msb_bg_output_free(&out);
	return result_of(o, false);
}

static json_t *call_bg_signal(call_ctx *c, msb_error *err)
{
	static const struct { const char *name; int number; } names[] = {
		{ "TERM", 15 }, { "KILL", 9 }, { "INT", 2 }, { "HUP", 1 }, { "USR1", 10 }, { "USR2", 12 },
	};
	const char *id = string_arg(c->args, "id");
	const char *name = json_object_get(c->args, "signal") ? string_arg(c->args, "signal") : "TERM";
	if (!id || !msb_bg_id_valid(id))
		return bad_arg("bg_signal", "id", "what exec_background returned");
	int sig = 0;
	for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
		if (!strcmp(name, names[i].name))
			sig = names[i].number;
	if (!sig)
		return bad_arg("bg_signal", "signal", "one of TERM, KILL, INT, HUP, USR1, USR2");
	if (msb_sandbox_bg_signal(c->sb, id, sig, err) != MSB_OK)
		return error_result(err);
	return result_of(json_pack("{s:s, s:s}", "id", id, "signal", name), false);
}

static json_t *call_bg_list(call_ctx *c, msb_error *err)
{
	msb_bg_list list;
	if (msb_sandbox_bg_list(c->sb, &list, err) != MSB_OK)
		return error_result(err);
	json_t *items = json_array();
	for (size_t i = 0; i < list.n; i++)
		json_array_append_new(items, bg_status_of(&list.items[i]));
	msb_bg_list_free(&list);
	return result_of(json_pack("{s:o}", "programs", items), false);
}
