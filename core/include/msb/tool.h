/*
 * msb/tool.h — one sandboxed tool call, run the way every sandbox workload's tool has to be
 * run (host API; the C form of the seed's SandboxToolSession and sandboxed_tool).
 *
 * A host builds one msb_tool_session per tool, from its router, the caller context its
 * request handler reads the key from, and the workload's spec. The session holds host
 * configuration only: anything derived from a caller (the key, the call's id, its guest
 * path) is made per call and dies with it, because one session serves every concurrent call
 * to its tool. msb_tool_session_call then:
 *
 *   1. reads the key from the caller context now (never from model input) and names the
 *      call with an unguessable id (getrandom); the id is the call's guest path under the
 *      spec's work_dir and, at `call` isolation scope, the key's call_id;
 *   2. acquires the sandbox; a refused acquire becomes a short sentence the model reads,
 *      carrying the error's name and never the backend's own message (which can carry an
 *      endpoint): the detail goes to the host's log line instead;
 *   3. runs the host's body with the sandbox and the call path;
 *   4. ALWAYS reclaims the call path, whether the body answered, refused or failed. A
 *      reclaim that failed is a data-retention failure: the router's reclaim policy is
 *      applied first (dispose by default, so the next call cannot read what this one left;
 *      a host opts down on the router, never per tool), then the host's on_reclaim_failure
 *      hears what became of the sandbox;
 *   5. at `call` scope disposes the call's sandbox;
 *   6. emits ToolCallEnded through the router's observer, with every key the call touched.
 */
#ifndef MSB_TOOL_H
#define MSB_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/outputs.h>
#include <msb/router.h>
#include <msb/sandbox.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A call id: 96 random bits as 24 lowercase hex digits. */
#define MSB_TOOL_CALL_ID_LEN 24

/* The reclaim bound a session gets when it sets none, in seconds. */
#define MSB_TOOL_DEFAULT_RECLAIM_TIMEOUT 30.0

/*
 * A call's own guest path that is still in the sandbox, and what was done about it (the
 * seed's ReclaimFailure). Every pointer is borrowed for the duration of the callback.
 */
typedef struct msb_reclaim_failure {
	const char *tool;                 /* the tool's name, as the model sees it */
	const char *call;                 /* the call's id */
	const msb_key *key;               /* the sandbox's effective key */
	const char *path;                 /* the absolute guest path left behind */
	const char *reason;               /* why the removal did not happen, in msb's words */
	msb_reclaim_outcome disposal;     /* disposed, failed (the key is now unclean) or kept */
	const msb_disposal_failure *disposal_failure; /* when disposal is FAILED; else NULL */
} msb_reclaim_failure;

/*
 * A session's configuration. Callers allocate it: start from MSB_TOOL_OPTIONS_INIT.
 */
typedef struct msb_tool_options {
	uint32_t struct_size;
	const char *name;        /* the tool's name, as declared to the model; required */
	double reclaim_timeout;  /* seconds the removal gets (handed to the backend's reclaim, which
				  * bounds its own call); finite and > 0. The disposal a failed
				  * removal leads to is bounded by the backend's dispose. */
	/* Told after the reclaim policy was applied; may be NULL (the log line still goes out). */
	void (*on_reclaim_failure)(void *ctx, const msb_reclaim_failure *failure);
	void *on_reclaim_failure_ctx;
	/* Where detail lines go (a refused acquire's message, a failed reclaim); NULL: stderr. */
	void (*log)(void *ctx, const char *line);
	void *log_ctx;
	/* Where this workload's landing artifacts go (borrowed); the body hands it to
	 * msb_collect_outputs. Required when the spec lands anything. */
	msb_output_sink *output_sink;
} msb_tool_options;

#define MSB_TOOL_OPTIONS_INIT \
	{ (uint32_t)sizeof(msb_tool_options), NULL, MSB_TOOL_DEFAULT_RECLAIM_TIMEOUT, NULL, NULL, NULL, NULL, NULL }

typedef struct msb_tool_session msb_tool_session;

/*
 * Build the session for one tool. `router` and `caller` are borrowed and must outlive it;
 * `spec` is copied. Attach nothing when unconfigured: with a NULL router, or a router with
 * no backend registered, this returns MSB_OK with *out NULL, and the host exposes no tool
 * (a model is never shown a capability it does not have). Refuses (MSB_E_VALUE) no name, a
 * reclaim_timeout that is not finite and positive, a work_dir with no component below the
 * root (a call path there could not be reclaimed), and a spec declaring outputs without
 * requiring files_out; refuses a spec that lands artifacts with no output_sink
 * (SandboxOutputSinkRequired: the tool could not honour its own spec); refuses whatever
 * msb_router_ensure_can_serve refuses for the spec, with that refusal's code: a backend that
 * cannot honour the spec is a misconfiguration, never a quiet degrade.
 */
msb_errc msb_tool_session_new(msb_router *router, const msb_caller_context *caller,
			      const msb_spec *spec, const msb_tool_options *options,
			      msb_tool_session **out, msb_error *err);
void msb_tool_session_free(msb_tool_session *session);

const char *msb_tool_session_name(const msb_tool_session *session);
const msb_spec *msb_tool_session_spec(const msb_tool_session *session);
/* The sink the wiring checks ran against: the one to hand msb_collect_outputs. May be NULL. */
msb_output_sink *msb_tool_session_output_sink(const msb_tool_session *session);

/*
 * The host's tool body. It gets the acquired sandbox, the call's guest path (a name: nothing
 * is created there until the body writes) and the call's id, writes what the model reads into
 * `answer`, and returns MSB_OK; or fails with an error, which msb_tool_session_call returns
 * after the cleanup. The sandbox handle is the call's: do not release it.
 */
typedef msb_errc (*msb_tool_body)(void *ctx, msb_sandbox *sandbox, const char *call_path,
				  const char *call_id, msb_buf *answer, msb_error *err);

/* What one call handed back. Zero-initialise; free with msb_tool_answer_free. */
typedef struct msb_tool_answer {
	msb_buf text;      /* what the model reads: the body's answer, or the refusal sentence */
	msb_errc refusal;  /* MSB_OK when the body ran; else why the call was refused before it */
	char call[MSB_TOOL_CALL_ID_LEN + 1];
} msb_tool_answer;

void msb_tool_answer_free(msb_tool_answer *answer);

/*
 * Run one call (steps 1-6 above). Returns MSB_OK when the model has something to read in
 * answer->text — the body's answer, or a refusal sentence (answer->refusal says which);
 * returns the body's own failure otherwise, after the cleanup, which never masks it.
 */
msb_errc msb_tool_session_call(msb_tool_session *session, msb_tool_body body, void *ctx,
			       msb_tool_answer *answer, msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
