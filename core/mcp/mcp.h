/*
 * mcp.h — `msb mcp`: a Model Context Protocol server on stdio over one sandbox.yaml, for the
 * agent clients that reach tools by MCP rather than by linking libmsb.
 *
 * JSON-RPC 2.0, one message per line (the stdio transport). The server exposes, for each kind
 * the operator names, the sandbox surface as tools — each listed only when the kind's backend
 * declares the capability behind it, each with an exact input schema. The sandbox key is the
 * operator's (the command line, or the environment the client launches the server with),
 * never a tool argument: a key a model can supply lets one conversation address another's
 * sandbox, so no schema has a place for one and an unknown argument is refused.
 *
 * Split: mcp_rpc.c reads and answers messages (framing, bounds, the lifecycle, version
 * negotiation); mcp_tools.c is the tool table and each tool's call over libmsb.
 */
#ifndef MSB_MCP_H
#define MSB_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include <msb/config.h>
#include <msb/msb.h>

/* The protocol revisions this server speaks, newest first; the first is offered by default. */
extern const char *const msb_mcp_versions[];

/* The longest message line read, in bytes: beyond it the line is refused, never buffered. */
#define MSB_MCP_MAX_LINE (16u * 1024u * 1024u) /* an 8 MiB file, base64, in JSON */

typedef struct msb_mcp_kind {
	const char *kind;
	const msb_spec *spec;
	msb_set capabilities;  /* the serving backend's effective capabilities */
	const char *backend;
	bool background;       /* its plugin has the background operations (mcp_bg.c's tools) */
} msb_mcp_kind;

typedef struct msb_mcp_server {
	msb_config *cfg;
	msb_router *router;
	msb_mcp_kind *kinds;
	size_t n_kinds;
	msb_key key;           /* the operator's */
	double max_timeout;    /* the longest timeout a call may ask for, seconds */
	bool initialized;
	char version[16];      /* the negotiated revision */
	FILE *out;
	json_t *progress_token; /* the current tools/call's _meta.progressToken, or NULL */
} msb_mcp_server;

/* Write one notification line (stolen reference). 0, or -1 when the output cannot be written. */
int msb_mcp_notify(msb_mcp_server *server, json_t *notification);

/* Serve until `in` ends. Returns 0, or 1 when the output could not be written. */
int msb_mcp_serve(msb_mcp_server *server, FILE *in);

/* tools/list's result. */
json_t *msb_mcp_tools_list(const msb_mcp_server *server);
/*
 * tools/call: the result object (content, structuredContent, isError), or NULL with `code`
 * and `message` set for a JSON-RPC error (an unknown tool, arguments the schema refuses).
 */
json_t *msb_mcp_tools_call(msb_mcp_server *server, const char *name, json_t *arguments,
			   int *code, char *message, size_t message_size);

/* JSON-RPC error codes. */
enum {
	MSB_MCP_PARSE_ERROR = -32700,
	MSB_MCP_INVALID_REQUEST = -32600,
	MSB_MCP_METHOD_NOT_FOUND = -32601,
	MSB_MCP_INVALID_PARAMS = -32602,
	MSB_MCP_INTERNAL_ERROR = -32603,
};

#endif
