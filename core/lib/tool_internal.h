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
};

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
