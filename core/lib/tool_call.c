/*
 * tool_call.c — running one tool call: the key read now, the call named, the sandbox
 * acquired or the refusal the model reads, the body, the cleanup, and ToolCallEnded.
 *
 * The call's state lives on this function's stack and nowhere else: one session serves every
 * concurrent call to its tool, and a path held on the session would be handed to two calls
 * at once, the first to finish removing it from under the other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "tool_internal.h"

/* The key a call touched, owned by the call: the caller's strings live only until its next read. */
typedef struct touched_key {
	msb_key key;
	char *strings;
} touched_key;

static msb_errc key_keep(touched_key *t, const msb_key *k)
{
	const char *parts[4] = { k->scope, k->thread_id, k->agent_dir, k->call_id };
	size_t len[4], total = 0;
	for (int i = 0; i < 4; i++)
		total += (len[i] = strlen(parts[i] ? parts[i] : "")) + 1;
	char *p = t->strings = malloc(total);
	if (!p)
		return MSB_E_NOMEM;
	const char **dst[4] = { &t->key.scope, &t->key.thread_id, &t->key.agent_dir, &t->key.call_id };
	for (int i = 0; i < 4; i++) {
		memcpy(p, parts[i] ? parts[i] : "", len[i] + 1);
		*dst[i] = p;
		p += len[i] + 1;
	}
	return MSB_OK;
}

/*
 * 96 bits from the kernel's CSPRNG. The id names the call's guest path, and a path a model
 * or a neighbouring call could guess is one it could write into ahead of the call.
 */
static msb_errc call_id_new(char out[MSB_TOOL_CALL_ID_LEN + 1], msb_error *err)
{
	unsigned char raw[MSB_TOOL_CALL_ID_LEN / 2];
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return msb_error_set_errno(err, MSB_E_OS, errno,
						   "tool call: no random bytes to name the call by");
		got += (size_t)n;
	}
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof raw; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[MSB_TOOL_CALL_ID_LEN] = '\0';
	return MSB_OK;
}

/*
 * The sentence the model reads when there is no sandbox. Fixed text carrying the error's
 * name: a tool answer is persisted into the transcript, and a backend's own message can
 * carry an endpoint, an account or a tenant id, so the message goes to the log instead.
 */
static const char *refusal_sentence(msb_errc rc)
{
	switch (rc) {
	case MSB_E_IMPORT:
		return "the sandbox backend is not installed";
	case MSB_E_NO_BACKEND:
		return "no sandbox backend is configured";
	case MSB_E_UNCLEAN:
		return "this conversation's sandbox could not be cleaned up and is held closed";
	default:
		return "sandbox unavailable";
	}
}

static msb_errc answer_refusal(msb_buf *text, msb_errc why, const char *sentence, msb_error *err)
{
	text->len = 0;
	char line[512];
	snprintf(line, sizeof line, "Error: %s (%s) — degrading to T0 (LLM self-check only)", sentence,
		 msb_errc_name(why));
	return msb_buf_append(text, line, strlen(line), err);
}

static void tool_call_ended(const msb_tool_session *s, const char *call_id, const touched_key *t,
			    msb_errc failed)
{
	const msb_observer *o = msb_router_get_options(s->router)->observer;
	if (!o || !o->tool_call_ended)
		return; /* a host that registers none builds no event */
	const msb_key *keys[1] = { t->strings ? &t->key : NULL };
	const msb_tool_call_ended event = {
		.call = call_id,
		.tool = s->name,
		.keys = keys,
		.n_keys = t->strings ? 1 : 0,
		.error = failed ? msb_errc_name(failed) : NULL,
	};
	msb_observer_tool_call_ended(o, &event);
}

static char *call_path_new(const char *work_dir, const char *call_id)
{
	size_t n = strlen(work_dir);
	while (n > 1 && work_dir[n - 1] == '/')
		n--;
	char *path = malloc(n + 1 + MSB_TOOL_CALL_ID_LEN + 1);
	if (path)
		sprintf(path, "%.*s/%s", (int)n, work_dir, call_id);
	return path;
}

/* The posture that held, handed to the host before the body runs: a refused call never gets here. */
static void tell_effective_state(const msb_tool_session *s, const msb_sandbox *sandbox,
				 const char *call_id)
{
	if (!s->on_effective_state)
		return;
	msb_effective_state state = *msb_sandbox_effective_state(sandbox);
	state.call = call_id;
	state.host_tools = (const char *const *)s->host_tool_names;
	s->on_effective_state(s->on_effective_state_ctx, s->name, &state);
}

msb_errc tool_run(msb_tool_session *s, const tool_invoke *inv, char *call, msb_errc *refusal,
		  msb_error *err)
{
	*refusal = MSB_OK;
	call[0] = '\0';
	char call_id[MSB_TOOL_CALL_ID_LEN + 1];
	msb_errc rc = call_id_new(call_id, err);
	if (rc)
		return rc;
	memcpy(call, call_id, sizeof call_id);
	msb_buf *text = inv->refusal_text;

	touched_key touched = { 0 };
	msb_sandbox *sandbox = NULL;
	char *path = NULL;
	msb_error local = MSB_ERROR_INIT;
	msb_errc failed = MSB_OK; /* the body's failure, or ours; never a refusal */

	/* Read now, from the host's request: a key captured earlier would cross conversations. */
	msb_key key;
	if ((rc = msb_caller_key(s->caller, call_id, &key, &local))) {
		tool_log(s, "no key for call %s: %s", call_id, msb_error_message(&local));
		*refusal = rc;
		text->len = 0;
		char line[256];
		snprintf(line, sizeof line,
			 "Error: no active thread context — %s must be called from within a thread",
			 s->name);
		failed = msb_buf_append(text, line, strlen(line), err);
		goto ended;
	}
	/* The key this call addresses: at call scope the call id names the sandbox. */
	msb_scope scope = router_effective_scope(s->router, &s->spec);
	msb_key effective = key;
	effective.call_id = scope == MSB_SCOPE_CALL ? call_id : "";
	if ((failed = key_keep(&touched, &effective))) {
		msb_error_set(err, MSB_E_NOMEM, "out of memory");
		goto ended;
	}
	if ((rc = msb_router_acquire(s->router, &key, &s->spec, &sandbox, &local))) {
		tool_log(s, "call %s: sandbox refused (%s): %s", call_id, msb_errc_name(rc),
			 msb_error_message(&local));
		*refusal = rc;
		failed = answer_refusal(text, rc, refusal_sentence(rc), err);
		goto ended;
	}
	tell_effective_state(s, sandbox, call_id);
	if (!(path = call_path_new(s->spec.work_dir, call_id))) {
		failed = msb_error_set(err, MSB_E_NOMEM, "out of memory");
		goto cleanup;
	}
	failed = inv->run(inv->ctx, sandbox, path, call_id, &local);
	if (failed) {
		if (local.code == MSB_OK)
			msb_error_set(&local, failed, "tool '%s': the body failed and said nothing more",
				      s->name);
		if (err)
			msb_error_move(err, &local);
	}
cleanup:
	/* After a result, a refusal and a failure alike: a call cannot forget a path it held. */
	if (path)
		tool_cleanup(s, sandbox, scope, call_id, path);
	else if (scope == MSB_SCOPE_CALL)
		tool_cleanup(s, sandbox, scope, call_id, NULL);
	msb_sandbox_release(sandbox);
ended:
	tool_call_ended(s, call_id, &touched, failed);
	free(touched.strings);
	free(path);
	msb_error_clear(&local);
	return failed;
}

/* ---- a plain answer: one string, the call's label ---------------------------------- */

typedef struct plain_call {
	msb_tool_body body;
	void *ctx;
	msb_buf *answer;
} plain_call;

static msb_errc plain_run(void *ctx, msb_sandbox *sandbox, const char *call_path,
			  const char *call_id, msb_error *err)
{
	plain_call *p = ctx;
	return p->body(p->ctx, sandbox, call_path, call_id, p->answer, err);
}

msb_errc msb_tool_session_call(msb_tool_session *s, msb_tool_body body, void *ctx,
			       msb_tool_answer *answer, msb_error *err)
{
	answer->refusal = MSB_OK;
	answer->call[0] = '\0';
	if (!body)
		return msb_error_set(err, MSB_E_VALUE, "tool '%s': no body to run", s->name);
	plain_call p = { body, ctx, &answer->text };
	const tool_invoke inv = { plain_run, &p, &answer->text };
	return tool_run(s, &inv, answer->call, &answer->refusal, err);
}

void msb_tool_answer_free(msb_tool_answer *answer)
{
	if (answer)
		msb_buf_free(&answer->text);
}
