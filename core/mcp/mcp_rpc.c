/*
 * mcp_rpc.c — the MCP server's message loop: bounded line framing, JSON-RPC 2.0 shapes, the
 * lifecycle (initialize, then the initialized notification, then requests) and version
 * negotiation.
 *
 * A line is read with a bound (MSB_MCP_MAX_LINE) and never past it: an over-long line is
 * answered with an invalid-request error and skipped to its end, so a client cannot make the
 * server buffer without limit. Every reply is one line written whole and flushed, because the
 * client reads the transport line by line.
 */
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

const char *const msb_mcp_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
					 NULL };

int msb_mcp_notify(msb_mcp_server *s, json_t *msg);

static int emit(msb_mcp_server *s, json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!text)
		return -1;
	int rc = fputs(text, s->out) < 0 || fputc('\n', s->out) < 0 || fflush(s->out) != 0 ? -1 : 0;
	free(text);
	return rc;
}

int msb_mcp_notify(msb_mcp_server *s, json_t *msg)
{
	return emit(s, msg);
}

static int reply(msb_mcp_server *s, json_t *id, json_t *result)
{
	return emit(s, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static int reply_error(msb_mcp_server *s, json_t *id, int code, const char *message)
{
	json_t *nid = id ? id : json_null();
	int rc = emit(s, json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", nid, "error",
				   "code", code, "message", message));
	if (!id)
		json_decref(nid);
	return rc;
}

/* The revision to answer with: the client's when this server speaks it, else its newest. */
static const char *negotiate(const char *asked)
{
	for (size_t i = 0; asked && msb_mcp_versions[i]; i++)
		if (strcmp(asked, msb_mcp_versions[i]) == 0)
			return msb_mcp_versions[i];
	return msb_mcp_versions[0];
}

static json_t *initialize(msb_mcp_server *s, json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	snprintf(s->version, sizeof s->version, "%s", negotiate(asked));
	s->initialized = true;
	char instructions[512];
	snprintf(instructions, sizeof instructions,
		 "Each tool runs in a sandbox msb keeps for this conversation; files persist between "
		 "calls until the operator disposes it. Commands are argv lists, never shell strings. "
		 "Output is capped per stream, and the result says when it was cut.");
	return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}, s:s}", "protocolVersion", s->version,
			 "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "msb",
			 "version", PACKAGE_VERSION, "instructions", instructions);
}

/* One message; returns -1 only when the output cannot be written. */
static int handle(msb_mcp_server *s, json_t *msg)
{
	if (!json_is_object(msg))
		/* a batch (an array) was dropped in 2025-06-18; none is accepted */
		return reply_error(s, NULL, MSB_MCP_INVALID_REQUEST,
				   "a message must be one JSON-RPC object (batches are not accepted)");
	json_t *id = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
	bool is_request = id != NULL;
	if (id && !json_is_string(id) && !json_is_integer(id))
		return reply_error(s, NULL, MSB_MCP_INVALID_REQUEST, "an id is a string or an integer");
	if (!version || strcmp(version, "2.0") != 0 || (!method && is_request))
		return is_request ? reply_error(s, id, MSB_MCP_INVALID_REQUEST,
						"not a JSON-RPC 2.0 request")
				  : 0; /* a response from the client, or noise: nothing answers it */
	if (!method)
		return 0;
	json_t *params = json_object_get(msg, "params");
	if (params && !json_is_object(params))
		return is_request ? reply_error(s, id, MSB_MCP_INVALID_PARAMS, "params must be an object")
				  : 0;
	if (!is_request)
		return 0; /* notifications: initialized, cancelled, roots/list_changed… need no answer */
	if (strcmp(method, "initialize") == 0)
		return reply(s, id, initialize(s, params));
	if (strcmp(method, "ping") == 0)
		return reply(s, id, json_object());
	if (!s->initialized)
		return reply_error(s, id, MSB_MCP_INVALID_REQUEST,
				   "the session is not initialized: send initialize first");
	if (strcmp(method, "tools/list") == 0)
		return reply(s, id, msb_mcp_tools_list(s));
	if (strcmp(method, "tools/call") == 0) {
		const char *name = json_string_value(json_object_get(params, "name"));
		json_t *args = json_object_get(params, "arguments");
		if (!name)
			return reply_error(s, id, MSB_MCP_INVALID_PARAMS, "tools/call needs a tool name");
		if (args && !json_is_object(args))
			return reply_error(s, id, MSB_MCP_INVALID_PARAMS, "arguments must be an object");
		int code = 0;
		char message[512] = "";
		/* A client that wants progress names a token: streamed output is sent against it. */
		json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
		s->progress_token = json_is_string(token) || json_is_integer(token) ? token : NULL;
		json_t *result = msb_mcp_tools_call(s, name, args, &code, message, sizeof message);
		s->progress_token = NULL;
		return result ? reply(s, id, result) : reply_error(s, id, code, message);
	}
	char message[200];
	snprintf(message, sizeof message, "method '%.100s' is not served here", method);
	return reply_error(s, id, MSB_MCP_METHOD_NOT_FOUND, message);
}

/*
 * Read one line into *buf (grown as needed, never past the bound). 1: a line; 0: end of
 * input; -1: the line was longer than the bound (consumed to its end, nothing kept).
 */
static int read_line(FILE *in, char **buf, size_t *cap, size_t *len)
{
	*len = 0;
	bool over = false;
	int c;
	while ((c = getc(in)) != EOF && c != '\n') {
		if (over)
			continue;
		if (*len + 1 >= *cap) {
			size_t next = *cap ? *cap * 2 : 4096;
			if (next > MSB_MCP_MAX_LINE + 1)
				next = MSB_MCP_MAX_LINE + 1;
			char *grown = *len + 1 < next ? realloc(*buf, next) : NULL;
			if (!grown) {
				over = true;
				continue;
			}
			*buf = grown;
			*cap = next;
		}
		(*buf)[(*len)++] = (char)c;
	}
	if (over)
		return -1;
	if (c == EOF && *len == 0)
		return 0;
	(*buf)[*len] = '\0';
	return 1;
}

int msb_mcp_serve(msb_mcp_server *s, FILE *in)
{
	char *buf = NULL;
	size_t cap = 0, len = 0;
	int status = 0;
	for (int got; status == 0 && (got = read_line(in, &buf, &cap, &len)) != 0;) {
		if (got < 0) {
			status = reply_error(s, NULL, MSB_MCP_INVALID_REQUEST,
					     "message longer than the server reads (16 MiB)");
			continue;
		}
		if (len && buf[len - 1] == '\r')
			buf[--len] = '\0';
		if (len == 0)
			continue;
		json_error_t jerr;
		json_t *msg = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
		if (!msg) {
			status = reply_error(s, NULL, MSB_MCP_PARSE_ERROR, "not JSON");
			continue;
		}
		status = handle(s, msg);
		json_decref(msg);
	}
	free(buf);
	return status ? 1 : 0;
}
