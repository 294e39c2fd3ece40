/*
 * tool_session.c — building a tool session: the refusals a host meets when it wires a tool,
 * made at wiring time so that no call ever discovers them.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_internal.h"

/*
 * How many directories deep `work_dir` sits once "." and ".." are read. A call path is one
 * component below work_dir and the reclaim removes it recursively, so a work_dir of "/" would
 * put every call path one component from the root — a shape no backend removes, so every call
 * would report a retention failure it could do nothing about.
 */
static size_t work_dir_depth(const char *work_dir)
{
	size_t depth = 0;
	const char *p = work_dir;
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			depth -= depth > 0;
		else if (n && !(n == 1 && p[0] == '.'))
			depth++;
		p += n;
	}
	return depth;
}

/*
 * The spec's outputs against what the tool can do with them. Both refusals are made here,
 * after the attach gate, because a tool that cannot honour its own spec should not ship: the
 * failure would otherwise happen inside the sandbox, where the reason is hardest to see.
 */
static msb_errc check_outputs(const msb_tool_options *o, const msb_spec *spec, msb_error *err)
{
	bool lands = spec->outputs_named_at_call_time;
	for (size_t i = 0; i < spec->n_declared_outputs && !lands; i++)
		lands = spec->declared_outputs[i].disposition == MSB_DISPOSITION_LAND;
	if (lands && !o->output_sink)
		return msb_error_set(err, MSB_E_OUTPUT_SINK_REQUIRED,
				     "tool '%s': the '%s' workload lands artifacts%s and the tool was "
				     "given no output_sink to land them in",
				     o->name, spec->kind,
				     spec->outputs_named_at_call_time ? " (named at call time)" : "");
	if ((spec->n_declared_outputs || spec->outputs_named_at_call_time) &&
	    !(spec->requires & MSB_BIT(MSB_CAP_FILES_OUT)))
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': the '%s' workload declares outputs and does not require "
				     "'files_out'; grow `requires` from what you declare, or the "
				     "capability match never asks whether the backend can read them back",
				     o->name, spec->kind);
	return MSB_OK;
}

static msb_errc check_options(const msb_tool_options *o, const msb_spec *spec, msb_error *err)
{
	if (!o || o->struct_size < offsetof(msb_tool_options, output_sink) + sizeof o->output_sink)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool session: options missing, or their struct_size predates "
				     "msb_tool_options; start from MSB_TOOL_OPTIONS_INIT");
	if (!o->name || !*o->name)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool session: no name; a tool needs the name the model sees, which "
				     "every log line and ReclaimFailure carries");
	if (!isfinite(o->reclaim_timeout) || o->reclaim_timeout <= 0)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': reclaim_timeout must be a finite positive number of "
				     "seconds, not %g; it bounds a removal that runs after every call, so "
				     "an unbounded one is a call that may never return",
				     o->name, o->reclaim_timeout);
	if (!spec)
		return msb_error_set(err, MSB_E_VALUE, "tool '%s': no spec given; the spec is the "
				     "workload every call's sandbox is acquired for", o->name);
	msb_errc rc = msb_spec_validate(spec, err);
	if (rc)
		return msb_error_prefix(err, "tool '%s': ", o->name);
	if (work_dir_depth(spec->work_dir) < 1)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': the '%s' workload's work_dir is '%s', which leaves a "
				     "call's own path one component from the guest root; reclaiming one "
				     "recursively is refused at that depth, so every call would keep its "
				     "files. Give the workload a directory of its own",
				     o->name, spec->kind, spec->work_dir);
	return check_outputs(o, spec, err);
}

/* Whether a host's options struct is large enough to hold `field` (it may predate it). */
#define OPTION_GIVEN(o, field) \
	((o)->struct_size >= offsetof(msb_tool_options, field) + sizeof (o)->field)

/*
 * The options after output_sink: the call's label, the host's confidentiality order, the
 * effective-state callback and the host-tool registry. Each is read only when the host's
 * struct holds it.
 */
static msb_errc take_later_options(msb_tool_session *s, const msb_tool_options *o, msb_error *err)
{
	s->call_label.integrity = MSB_INTEGRITY_UNTRUSTED;
	if (OPTION_GIVEN(o, call_label)) {
		if (o->call_label.integrity == MSB_INTEGRITY_TRUSTED)
			s->call_label.integrity = MSB_INTEGRITY_TRUSTED;
		else if (o->call_label.integrity != MSB_INTEGRITY_UNSET &&
			 o->call_label.integrity != MSB_INTEGRITY_UNTRUSTED)
			return msb_error_set(err, MSB_E_VALUE, "tool '%s': call_label's integrity %d "
					     "is not an msb_integrity", o->name,
					     (int)o->call_label.integrity);
		if (o->call_label.confidentiality &&
		    !(s->call_confidentiality = strdup(o->call_label.confidentiality)))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		s->call_label.confidentiality = s->call_confidentiality;
	}
	if (OPTION_GIVEN(o, confidentiality_ctx)) {
		s->confidentiality_rank = o->confidentiality_rank;
		s->confidentiality_ctx = o->confidentiality_ctx;
	}
	if (s->confidentiality_rank && s->call_confidentiality &&
	    s->confidentiality_rank(s->confidentiality_ctx, s->call_confidentiality) < 0)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': the call's own confidentiality '%.64s' is not a word "
				     "the host's confidentiality_rank knows",
				     o->name, s->call_confidentiality);
	if (OPTION_GIVEN(o, on_effective_state_ctx)) {
		s->on_effective_state = o->on_effective_state;
		s->on_effective_state_ctx = o->on_effective_state_ctx;
	}
	msb_host_tools *reg = OPTION_GIVEN(o, host_tools) ? o->host_tools : NULL;
	if (reg && !msb_host_tools_sealed(reg))
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': its host-tool registry is not sealed; seal it with "
				     "msb_host_tools_aggregate_seal first, so the surface the host "
				     "classified is the surface served and recorded",
				     o->name);
	size_t n = reg ? msb_host_tools_count(reg) : 0;
	if (!(s->host_tool_names = calloc(n + 1, sizeof *s->host_tool_names)))
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (!(s->host_tool_names[i] = strdup(msb_host_tools_name_at(reg, i))))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	return MSB_OK;
}

static void free_later_options(msb_tool_session *s)
{
	for (size_t i = 0; s->host_tool_names && s->host_tool_names[i]; i++)
		free(s->host_tool_names[i]);
	free(s->host_tool_names);
	free(s->call_confidentiality);
}

msb_errc msb_tool_session_new(msb_router *router, const msb_caller_context *caller,
			      const msb_spec *spec, const msb_tool_options *options,
			      msb_tool_session **out, msb_error *err)
{
	*out = NULL;
	/* Nothing configured is a choice the host made: attach no tool, and say nothing. */
	if (!router || msb_router_backend_count(router) == 0)
		return MSB_OK;
	msb_errc rc = check_options(options, spec, err);
	if (rc)
		return rc;
	if (!caller || !caller->scope || !caller->thread_id)
		return msb_error_set(err, MSB_E_VALUE,
				     "tool '%s': a caller context with scope and thread_id callbacks is "
				     "required; the key must be read from the host's request at call time",
				     options->name);
	/* A backend that cannot honour the spec is a misconfiguration, refused here rather
	 * than shipped as a tool whose every call degrades. */
	const msb_backend *chosen = NULL;
	if ((rc = msb_router_ensure_can_serve(router, spec, &chosen, err)))
		return msb_error_prefix(err, "tool '%s': ", options->name);
	msb_tool_session *s = calloc(1, sizeof *s);
	if (!s)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	s->name = strdup(options->name);
	if (!s->name || (rc = router_spec_copy(spec, &s->spec, &s->spec_storage, err))) {
		free(s->name);
		free(s);
		return rc ? rc : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	s->router = router;
	s->caller = caller;
	s->reclaim_timeout = options->reclaim_timeout;
	s->on_reclaim_failure = options->on_reclaim_failure;
	s->on_reclaim_failure_ctx = options->on_reclaim_failure_ctx;
	s->log = options->log;
	s->log_ctx = options->log_ctx;
	s->output_sink = options->output_sink;
	if ((rc = take_later_options(s, options, err))) {
		msb_tool_session_free(s);
		return rc;
	}
	*out = s;
	return MSB_OK;
}

void msb_tool_session_free(msb_tool_session *s)
{
	if (!s)
		return;
	free_later_options(s);
	free(s->spec_storage);
	free(s->name);
	free(s);
}

const char *msb_tool_session_name(const msb_tool_session *s)
{
	return s->name;
}

const msb_spec *msb_tool_session_spec(const msb_tool_session *s)
{
	return &s->spec;
}

msb_output_sink *msb_tool_session_output_sink(const msb_tool_session *s)
{
	return s->output_sink;
}

void tool_log(const msb_tool_session *s, const char *fmt, ...)
{
	char line[2048];
	int n = snprintf(line, sizeof line, "tool '%s': ", s->name);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof line)
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	if (s->log)
		s->log(s->log_ctx, line);
	else
		fprintf(stderr, "msb: %s\n", line);
}
