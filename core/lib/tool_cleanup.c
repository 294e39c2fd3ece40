/*
 * tool_cleanup.c — what a tool call leaves behind: its guest path removed, a removal that
 * did not happen answered by the router's reclaim policy and then reported, and a call-scoped
 * sandbox disposed.
 *
 * Order matters: the policy is applied BEFORE the host is told, so the notification says
 * what became of the sandbox rather than asking the host to arrange it — acquire is
 * get-or-create, and a sandbox left warm while a host callback decides would hand the next
 * call whatever this one could not take back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_internal.h"

/*
 * A call-scoped sandbox is disposed when its call returns whatever the policy says: KEEP keeps
 * a sandbox warm for the next call, and a call-scoped one has no next call to serve.
 */
static msb_reclaim_outcome dispose_now(const msb_tool_session *s, const msb_key *key,
				       msb_disposal_failure *failure)
{
	return msb_router_dispose(s->router, key, failure) ? MSB_RECLAIM_OUTCOME_DISPOSED
							   : MSB_RECLAIM_OUTCOME_FAILED;
}

static void report(const msb_tool_session *s, const char *call_id, const msb_key *key,
		   const char *path, const char *reason, msb_reclaim_outcome outcome,
		   const msb_disposal_failure *failure)
{
	/* Logged whether or not the host listens: what is left stays readable by every later
	 * call in that sandbox, and a callback that swallows it would take the record with it. */
	tool_log(s, "call %s: %s was not reclaimed: %s; the sandbox was %s%s%s", call_id, path, reason,
		 msb_reclaim_outcome_name(outcome), failure ? ": " : "",
		 failure && failure->detail ? failure->detail : "");
	if (!s->on_reclaim_failure)
		return;
	const msb_reclaim_failure event = {
		.tool = s->name,
		.call = call_id,
		.key = key,
		.path = path,
		.reason = reason,
		.disposal = outcome,
		.disposal_failure = outcome == MSB_RECLAIM_OUTCOME_FAILED ? failure : NULL,
	};
	s->on_reclaim_failure(s->on_reclaim_failure_ctx, &event);
}

void tool_cleanup(const msb_tool_session *s, msb_sandbox *sandbox, msb_scope scope,
		  const char *call_id, const char *call_path)
{
	const msb_key *key = msb_sandbox_key(sandbox);
	bool disposed = false;
	if (call_path) {
		msb_error err = MSB_ERROR_INIT;
		/* The path is this call's own, under work_dir, with an unguessable name: there is no
		 * model-chosen component, so reclaim owes no confinement check before removing it. */
		msb_errc rc = msb_sandbox_reclaim(sandbox, call_path, s->spec.work_dir,
						  s->reclaim_timeout, &err);
		if (rc) {
			char reason[1024];
			snprintf(reason, sizeof reason, "the removal failed (%s): %s", msb_errc_name(rc),
				 msb_error_message(&err));
			msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
			msb_reclaim_outcome outcome = scope == MSB_SCOPE_CALL
							      ? dispose_now(s, key, &failure)
							      : msb_router_reclaim_failed(s->router, key, &failure);
			disposed = outcome != MSB_RECLAIM_OUTCOME_KEPT;
			report(s, call_id, key, call_path, reason, outcome,
			       outcome == MSB_RECLAIM_OUTCOME_FAILED ? &failure : NULL);
			msb_disposal_failure_free(&failure);
		}
		msb_error_clear(&err);
	}
	if (scope == MSB_SCOPE_CALL && !disposed) {
		msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
		if (!msb_router_dispose(s->router, key, &failure))
			tool_log(s, "call %s: its call-scoped sandbox was not disposed (%s): %s", call_id,
				 msb_word_name(MSB_AXIS_DISPOSAL_CODE, (int)failure.code),
				 failure.detail ? failure.detail : "");
		msb_disposal_failure_free(&failure);
	}
}
