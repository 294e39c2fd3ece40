/*
 * host_tool_run.c — one run's calls through the one door: the call cap, the name, the
 * identity gate, the arguments, the response ledger, the call, and HostToolCalled.
 *
 * Per run, not per registry: the cap and the ceilings bound what one guest program may cost,
 * so a fresh run starts with a fresh count. Everything that leaves for the guest is a fixed
 * sentence; a tool's own failure detail goes to the host's log, never into a transcript.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_tool_internal.h"

struct msb_host_tool_run {
	msb_host_tools *reg;
	pthread_mutex_t lock;      /* guards the ledger and the minted identity */
	bool has_key;
	msb_key key;
	char *strings;             /* behind key and call */
	const char *call;
	uint64_t calls;            /* every call, refused ones included */
	uint64_t delivered;        /* responses delivered, plus slots reserved by calls in flight */
	uint64_t delivered_bytes;
	bool minted;
	msb_buf user_identity;
};

msb_errc msb_host_tool_run_new(msb_host_tools *reg, const msb_key *key, const char *call,
			       msb_host_tool_run **out, msb_error *err)
{
	*out = NULL;
	msb_host_tool_run *run = calloc(1, sizeof *run);
	const char *parts[5] = { key ? key->scope : NULL, key ? key->thread_id : NULL,
				 key ? key->agent_dir : NULL, key ? key->call_id : NULL, call };
	size_t total = 0;
	for (int i = 0; i < 5; i++)
		total += strlen(parts[i] ? parts[i] : "") + 1;
	if (!run || !(run->strings = malloc(total))) {
		free(run);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	const char *copies[5];
	char *p = run->strings;
	for (int i = 0; i < 5; i++) {
		size_t n = strlen(parts[i] ? parts[i] : "") + 1;
		memcpy(p, parts[i] ? parts[i] : "", n);
		copies[i] = p;
		p += n;
	}
	run->reg = reg;
	run->has_key = key != NULL;
	run->key = (msb_key){ copies[0], copies[1], copies[2], copies[3] };
	run->call = call ? copies[4] : NULL;
	pthread_mutex_init(&run->lock, NULL);
	*out = run;
	return MSB_OK;
}

void msb_host_tool_run_free(msb_host_tool_run *run)
{
	if (!run)
		return;
	/* The minted authority is the user's: not left readable in freed memory. */
	if (run->user_identity.data)
		memset(run->user_identity.data, 0, run->user_identity.cap);
	msb_buf_free(&run->user_identity);
	pthread_mutex_destroy(&run->lock);
	free(run->strings);
	free(run);
}

void msb_host_tool_run_ledger(const msb_host_tool_run *run, uint64_t *calls, uint64_t *delivered,
			      uint64_t *delivered_bytes)
{
	pthread_mutex_t *lock = (pthread_mutex_t *)&run->lock;
	pthread_mutex_lock(lock);
	if (calls)
		*calls = run->calls;
	if (delivered)
		*delivered = run->delivered;
	if (delivered_bytes)
		*delivered_bytes = run->delivered_bytes;
	pthread_mutex_unlock(lock);
}

const msb_host_tools *host_tool_run_registry(const msb_host_tool_run *run)
{
	return run->reg;
}

void msb_host_tool_result_free(msb_host_tool_result *result)
{
	if (!result)
		return;
	msb_buf_free(&result->response);
	free(result->refusal);
	result->refusal = NULL;
}

/* How one call ended, for the result and the event alike. */
typedef struct ending {
	const char *outcome;     /* "served", "refused", "failed", "capped" */
	msb_errc code;
	char sentence[512];
} ending;

static void refuse(ending *e, const char *outcome, msb_errc code, const char *fmt, ...)
	MSB_PRINTF(4, 5);
static void refuse(ending *e, const char *outcome, msb_errc code, const char *fmt, ...)
{
	e->outcome = outcome;
	e->code = code;
	int n = snprintf(e->sentence, sizeof e->sentence, "Error: ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->sentence + n, sizeof e->sentence - (size_t)n, fmt, ap);
	va_end(ap);
}

static void observe(const msb_host_tool_run *run, const char *tool, const host_tool *t,
		    const ending *e, uint64_t bytes)
{
	const msb_observer *o = run->reg->opt.observer;
	if (!o || !o->host_tool_called)
		return;
	const msb_host_tool_called event = {
		.key = run->has_key ? &run->key : NULL,
		.call = run->call,
		.tool = tool,
		.sink = t && t->declared && t->decl.sink == MSB_FLOW_SINK_CAPPED ? t->decl.sink_cap : NULL,
		.identity = t ? host_tool_identity(t) : MSB_UNSET,
		.outcome = e->outcome,
		.response_bytes = bytes,
		.refusal = e->code ? e->sentence : NULL,
	};
	msb_observer_host_tool_called(o, &event);
}

/*
 * The run's user authority, minted on its first USER call. Under run->lock, on purpose: two
 * USER calls racing on a fresh run must not mint twice, and a run is one guest program's
 * budget, so holding its lock through the host's callback stalls that program alone.
 */
static bool user_identity(msb_host_tool_run *run, const host_tool *t, ending *e)
{
	msb_host_tools_options *o = &run->reg->opt;
	if (!o->mint_user_identity) {
		refuse(e, "refused", MSB_E_IDENTITY_DENIED,
		       "host tool '%s' exercises the user's identity, and this host mints none, so "
		       "it cannot be served",
		       t->name);
		return false;
	}
	if (run->minted)
		return true;
	msb_error err = MSB_ERROR_INIT;
	msb_buf minted = { 0 };
	msb_errc rc = o->mint_user_identity(o->mint_ctx, run->has_key ? &run->key : NULL, run->call,
					    &minted, &err);
	if (rc == MSB_OK && !minted.data)
		rc = msb_buf_append(&minted, "", 0, &err);
	if (rc) {
		host_tools_log(run->reg, "host tools: minting the user's identity for '%s' failed (%s): %s",
			       t->name, msb_errc_name(rc), msb_error_message(&err));
		msb_error_clear(&err);
		msb_buf_free(&minted);
		refuse(e, "refused", MSB_E_IDENTITY_DENIED,
		       "host tool '%s' needs the user's identity, which could not be obtained — the "
		       "reason is in the host's log",
		       t->name);
		return false;
	}
	run->user_identity = minted;
	run->minted = true;
	return true;
}

/*
 * Everything knowable before the tool runs, in the seed's order; on success a response slot
 * is reserved, so two calls in flight cannot both deliver against a cap of one.
 */
static bool admit(msb_host_tool_run *run, const char *name, const msb_host_tool_arg *args,
		  size_t n_args, const host_tool **found, const msb_host_tool_arg **ordered, ending *e)
{
	const msb_host_tools_options *o = &run->reg->opt;
	char why[400];
	if (++run->calls > o->max_calls_per_run) {
		refuse(e, "capped", MSB_E_VALUE,
		       "this run's host-tool call cap (%llu) is exhausted — finish with the results "
		       "already delivered and report what remains undone",
		       (unsigned long long)o->max_calls_per_run);
		return false;
	}
	const host_tool *t = *found = name ? host_tools_find(run->reg, name) : NULL;
	if (!t) {
		/* The last refusal quoting the guest's name; past here it is one the host registered. */
		host_tool_quote(why, sizeof why, name);
		refuse(e, "refused", MSB_E_VALUE, "'%s' is not a registered host tool", why);
		return false;
	}
	if (host_tool_identity(t) == MSB_IDENTITY_USER && !user_identity(run, t, e))
		return false;
	msb_errc rc = host_tool_args_match(t, args, n_args, ordered, why, sizeof why);
	if (rc) {
		refuse(e, "refused", rc, "%s", why);
		return false;
	}
	const msb_transfer_limits *l = &o->response_limits;
	if (run->delivered + 1 > l->max_files) {
		refuse(e, "capped", MSB_E_TRANSFER_CAP_EXCEEDED,
		       "this run's delivered-response cap (%llu) is exhausted — finish with the "
		       "results already delivered",
		       (unsigned long long)l->max_files);
		return false;
	}
	if (run->delivered_bytes + 1 > l->max_total_bytes) {
		refuse(e, "capped", MSB_E_TRANSFER_CAP_EXCEEDED,
		       "this run's response byte budget (%llu) is exhausted — finish with the results "
		       "already delivered",
		       (unsigned long long)l->max_total_bytes);
		return false;
	}
	run->delivered++;
	return true;
}

/* The size caps, known only now; commits the bytes or gives the slot back. Under run->lock. */
static void settle(msb_host_tool_run *run, const host_tool *t, size_t size, ending *e)
{
	const msb_transfer_limits *l = &run->reg->opt.response_limits;
	if (size > l->max_bytes_per_file)
		refuse(e, "capped", MSB_E_TRANSFER_CAP_EXCEEDED,
		       "host tool '%s''s response is %zu bytes and the per-response cap allows %llu",
		       t->name, size, (unsigned long long)l->max_bytes_per_file);
	else if (run->delivered_bytes + size > l->max_total_bytes)
		refuse(e, "capped", MSB_E_TRANSFER_CAP_EXCEEDED,
		       "delivering host tool '%s''s %zu-byte response would exceed this run's total "
		       "response cap (%llu bytes)",
		       t->name, size, (unsigned long long)l->max_total_bytes);
	if (e->code)
		run->delivered--;
	else
		run->delivered_bytes += size;
}

msb_errc msb_host_tool_run_call(msb_host_tool_run *run, const char *name,
				const msb_host_tool_arg *args, size_t n_args,
				msb_host_tool_result *result, msb_error *err)
{
	result->code = MSB_OK;
	result->refusal = NULL;
	result->response.len = 0;
	ending e = { .outcome = "served" };
	const msb_host_tool_arg *ordered[MSB_HOST_TOOL_MAX_PARAMS];
	pthread_mutex_lock(&run->lock);
	const host_tool *t = NULL;
	bool admitted = admit(run, name, args, n_args, &t, ordered, &e);
	const char *identity = admitted && run->minted ? (const char *)run->user_identity.data : NULL;
	pthread_mutex_unlock(&run->lock);

	uint64_t bytes = 0;
	if (admitted) {
		/* The lock is not held across the body: it is host code and may take its time. */
		msb_buf out = { 0 };
		msb_error tool_err = MSB_ERROR_INIT;
		int rc = host_tool_ffi_call(t, ordered, identity, &out, &tool_err);
		if (rc) {
			host_tools_log(run->reg, "host tools: '%s' failed (%d, %s): %s", t->name, rc,
				       msb_errc_name(tool_err.code ? tool_err.code : (msb_errc)rc),
				       msb_error_message(&tool_err));
			refuse(&e, "failed", tool_err.code ? tool_err.code : MSB_E_BACKEND,
			       "host tool '%s' failed — the reason is in the host's log", t->name);
		}
		pthread_mutex_lock(&run->lock);
		if (rc)
			run->delivered--;
		else
			settle(run, t, out.len, &e);
		pthread_mutex_unlock(&run->lock);
		if (!e.code) {
			bytes = out.len;
			msb_buf_free(&result->response);
			result->response = out;
		} else {
			msb_buf_free(&out);
		}
		msb_error_clear(&tool_err);
	}
	const char *tool = t ? t->name : NULL;
	char quoted[160];
	if (!t) {
		host_tool_quote(quoted, sizeof quoted, name);
		tool = quoted;
	}
	observe(run, tool, t, &e, bytes);
	if (e.code) {
		result->code = e.code;
		if (!(result->refusal = strdup(e.sentence)))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	return MSB_OK;
}
