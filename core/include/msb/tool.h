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
#include <msb/host_tools.h>
#include <msb/observer.h>
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
 * A label on what the model reads (the seed's SourceIntegrity, and the host's own
 * confidentiality vocabulary, carried verbatim and never interpreted by msb).
 */
typedef enum msb_integrity {
	MSB_INTEGRITY_UNSET = 0,  /* no label stated */
	MSB_INTEGRITY_TRUSTED,    /* value AND presence independent of everything the call touched */
	MSB_INTEGRITY_UNTRUSTED,  /* what the call produced, or anything derived from it */
} msb_integrity;

/* "trusted", "untrusted"; NULL for UNSET or outside the enum. */
const char *msb_integrity_name(msb_integrity integrity);

typedef struct msb_label {
	msb_integrity integrity;
	const char *confidentiality; /* the host's word, opaque; NULL: none stated */
} msb_label;

/*
 * A session's configuration. Callers allocate it: start from MSB_TOOL_OPTIONS_INIT. Fields
 * after output_sink are read only when struct_size covers them, so a host built against an
 * older header keeps its behaviour.
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
	/*
	 * The call's own label: what the model reads of a plain answer, and what every
	 * unlabelled item of an itemised answer carries. An UNSET integrity reads as untrusted:
	 * a call ran guest code, so what it produced is the guest's.
	 */
	msb_label call_label;
	/*
	 * How restrictive a confidentiality word is, in the host's vocabulary: a rank (higher is
	 * more restrictive), or negative for a word the host does not know, which refuses the
	 * result naming it. NULL: items may only carry the call's own confidentiality (or none),
	 * because msb cannot order words it does not own.
	 */
	int (*confidentiality_rank)(void *ctx, const char *confidentiality);
	void *confidentiality_ctx;
	/*
	 * Told once per served acquire, before the body runs, with the posture that held: the
	 * C form of the seed's effective-state record. A refused call tells nothing. The state is
	 * borrowed for the callback; msb_effective_states_record keeps one entry per tool.
	 */
	void (*on_effective_state)(void *ctx, const char *tool, const msb_effective_state *state);
	void *on_effective_state_ctx;
	/* The host-tool registry the tool's programs call into (borrowed; must be sealed, so
	 * the surface recorded is the surface served). May be NULL. */
	msb_host_tools *host_tools;
} msb_tool_options;

#define MSB_TOOL_OPTIONS_INIT \
	{ (uint32_t)sizeof(msb_tool_options), NULL, MSB_TOOL_DEFAULT_RECLAIM_TIMEOUT, NULL, NULL, \
	  NULL, NULL, NULL, { MSB_INTEGRITY_UNSET, NULL }, NULL, NULL, NULL, NULL, NULL }

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

/* ---- an answer of several items, each with its own label (or the call's) ---------- */

/*
 * A tool body may answer with a list of items instead of one string, so a host's
 * information-flow policy can label and hide each separately: standing guidance stays
 * readable while everything the call produced is hidden. LABEL AS LITTLE AS YOU CAN, AND
 * NEVER EVERY ITEM: a per-item label replaces the item's whole label, confidentiality
 * included; an unlabelled item takes the call's label, which is what keeps the host's own
 * classification. What may be TRUSTED is narrow: text whose value and whose presence are
 * independent of everything the call touched — a count, an exit status, or a line emitted
 * only on failure all fail that test.
 */
typedef struct msb_tool_items msb_tool_items;

/* An item carrying the call's label. The bytes are copied. */
msb_errc msb_tool_items_add(msb_tool_items *items, const void *text, size_t len, msb_error *err);
/*
 * An item carrying its own label (the seed's labelled_result_item). Refuses (MSB_E_VALUE) an
 * UNTRUSTED label — the untrusted item is the one holding what the call produced, and it
 * takes the call's label unlabelled — and a label with no integrity. Copied.
 */
msb_errc msb_tool_items_add_labelled(msb_tool_items *items, const void *text, size_t len,
				     const msb_label *label, msb_error *err);

typedef struct msb_tool_item {
	msb_buf text;
	bool labelled;    /* the item carried its own label */
	msb_label label;  /* its own, or the call's; strings owned by the result */
} msb_tool_item;

/* What one itemised call handed back. Zero-initialise; free with msb_tool_result_free. */
typedef struct msb_tool_result {
	msb_tool_item *items;
	size_t n_items;
	/* The combined label, the most restrictive across every item: untrusted if any item is,
	 * and the highest-ranked confidentiality. Strings owned by the result. */
	msb_label label;
	msb_errc refusal; /* as msb_tool_answer's: a refusal is one unlabelled item */
	char call[MSB_TOOL_CALL_ID_LEN + 1];
	void *storage_;   /* private */
} msb_tool_result;

void msb_tool_result_free(msb_tool_result *result);

typedef msb_errc (*msb_tool_items_body)(void *ctx, msb_sandbox *sandbox, const char *call_path,
					const char *call_id, msb_tool_items *items,
					msb_error *err);

/*
 * Run one call whose body answers in items; otherwise exactly msb_tool_session_call. A body
 * that answered with every item labelled — or with no item at all — has left nothing to
 * carry the call's own label: the call fails (MSB_E_VALUE) after the cleanup, and the model
 * is shown nothing of it. So does an item whose confidentiality the host cannot rank.
 */
msb_errc msb_tool_session_call_items(msb_tool_session *session, msb_tool_items_body body,
				     void *ctx, msb_tool_result *result, msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
