/*
 * tool_internal.h — what a tool session is, shared by tool_session.c (building one),
 * tool_call.c (running a call) and tool_cleanup.c (what a call leaves behind). Private to
 * core/lib.
 */
#ifndef MSB_TOOL_INTERNAL_H
#define MSB_TOOL_INTERNAL_H

#include <msb/tool.h>

#include "router_internal.h"

struct msb_tool_session {
	msb_router *router;             /* borrowed */
	const msb_caller_context *caller; /* borrowed */
	msb_spec spec;                  /* deep copy; its pointers live in spec_storage */
	void *spec_storage;
	char *name;
	double reclaim_timeout;
	void (*on_reclaim_failure)(void *ctx, const msb_reclaim_failure *failure);
	void *on_reclaim_failure_ctx;
	void (*log)(void *ctx, const char *line);
	void *log_ctx;
	msb_output_sink *output_sink;   /* borrowed */
	msb_label call_label;           /* integrity resolved (UNSET reads as untrusted) */
	char *call_confidentiality;     /* call_label's confidentiality, owned */
	int (*confidentiality_rank)(void *ctx, const char *confidentiality);
	void *confidentiality_ctx;
	void (*on_effective_state)(void *ctx, const char *tool, const msb_effective_state *state);
	void *on_effective_state_ctx;
	char **host_tool_names;         /* NULL-terminated copy of the sealed registry's names */
};

/* A tool body's result, as the runner sees it: run it, and say where a refusal goes. */
typedef struct tool_invoke {
	msb_errc (*run)(void *ctx, msb_sandbox *sandbox, const char *call_path, const char *call_id,
			msb_error *err);
	void *ctx;
	msb_buf *refusal_text; /* what the model reads when no body ran */
} tool_invoke;

/* Steps 1-6 of msb/tool.h around one body; the call's id is written to `call`. */
msb_errc tool_run(msb_tool_session *s, const tool_invoke *invoke, char *call, msb_errc *refusal,
		  msb_error *err);

/*
 * Check a body's items against the label rules and move them into `result`, each
 * unlabelled item taking the call's label and the combined label computed. MSB_E_VALUE when
 * no item is left to carry the call's label, or a confidentiality cannot be ranked.
 */
msb_errc tool_items_finish(const msb_tool_session *s, msb_tool_items *items,
			   msb_tool_result *result, msb_error *err);
msb_tool_items *tool_items_new(void);
void tool_items_free(msb_tool_items *items);

/* One detail line to the host's log, prefixed with the tool's name. */
void tool_log(const msb_tool_session *s, const char *fmt, ...) MSB_PRINTF(2, 3);

/*
 * Remove the call's path from `sandbox` and, when that fails, apply the reclaim policy and
 * tell the host; at call scope, dispose the call's sandbox. Reports, never fails: it runs
 * after the body, whose answer or failure it must not replace.
 */
void tool_cleanup(const msb_tool_session *s, msb_sandbox *sandbox, msb_scope scope,
		  const char *call_id, const char *call_path);

#endif
