/*
 * host_tool_args.c — the door's argument check: the guest's arguments against the typed
 * signature the tool declared, host-side, before anything runs.
 *
 * A check in a guest shim runs where model-written code can read, edit or skip it, so it is
 * decoration; this one is the control. It proves names, arity and types; anything deeper
 * (a value's range, a string's meaning) is the tool body's own duty, because it is host code
 * and knows what its arguments mean. Every sentence here reaches the guest, and the ones that
 * quote guest text quote it bounded.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistr.h>

#include "host_tool_internal.h"

/* Generous for anything a caller meant; short enough that quoting it costs nothing. */
#define MAX_ECHOED 120

void host_tool_quote(char *dst, size_t size, const char *guest)
{
	if (!size)
		return;
	size_t n = 0, limit = size - 1 < MAX_ECHOED ? size - 1 : MAX_ECHOED;
	const char *p = guest ? guest : "";
	for (; *p && n < limit; p++)
		/* A refusal lands in a transcript and a log line: no control bytes, no half-runes. */
		dst[n++] = (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f ? '?' : *p;
	dst[n] = '\0';
	if (*p && size - n > sizeof " (truncated)")
		strcat(dst, " (truncated)");
}

static bool type_fits(msb_arg_type declared, const msb_host_tool_arg *a)
{
	if (a->type == declared)
		return declared != MSB_ARG_DOUBLE || isfinite(a->v.d);
	/* JSON does not tell 1 from 1.0; a double parameter takes an integer. */
	return declared == MSB_ARG_DOUBLE && a->type == MSB_ARG_INT64;
}

static const char *given_type(const msb_host_tool_arg *a)
{
	const char *name = msb_arg_type_name(a->type);
	return name ? name : "an unknown type";
}

msb_errc host_tool_args_match(const host_tool *t, const msb_host_tool_arg *args, size_t n_args,
			      const msb_host_tool_arg **ordered, char *why, size_t why_size)
{
	char quoted[MAX_ECHOED + 16];
	if (n_args && !args) {
		snprintf(why, why_size, "arguments for host tool '%s' were announced and not given", t->name);
		return MSB_E_TYPE;
	}
	for (size_t i = 0; i < t->n_params; i++)
		ordered[i] = NULL;
	for (size_t j = 0; j < n_args; j++) {
		const msb_host_tool_arg *a = &args[j];
		size_t i = 0;
		while (i < t->n_params && !(a->name && strcmp(a->name, t->params[i].name) == 0))
			i++;
		if (i == t->n_params) {
			host_tool_quote(quoted, sizeof quoted, a->name);
			snprintf(why, why_size, "host tool '%s' takes no argument '%s'", t->name, quoted);
			return MSB_E_TYPE;
		}
		const msb_host_tool_param *p = &t->params[i];
		if (ordered[i]) {
			snprintf(why, why_size, "argument '%s' of host tool '%s' was given twice", p->name,
				 t->name);
			return MSB_E_TYPE;
		}
		if (!type_fits(p->type, a)) {
			snprintf(why, why_size, "argument '%s' of host tool '%s' must be %s %s, not %s",
				 p->name, t->name, p->type == MSB_ARG_INT64 ? "an" : "a",
				 p->type == MSB_ARG_DOUBLE ? "finite double" : msb_arg_type_name(p->type),
				 a->type == p->type ? "a non-finite number" : given_type(a));
			return MSB_E_TYPE;
		}
		if (p->type == MSB_ARG_STRING &&
		    (!a->v.s || u8_check((const uint8_t *)a->v.s, strlen(a->v.s)) != NULL)) {
			snprintf(why, why_size, "argument '%s' of host tool '%s' must be valid UTF-8 text",
				 p->name, t->name);
			return MSB_E_VALUE;
		}
		ordered[i] = a;
	}
	for (size_t i = 0; i < t->n_params; i++)
		if (!ordered[i]) {
			snprintf(why, why_size, "host tool '%s' needs argument '%s' (%s)", t->name,
				 t->params[i].name, msb_arg_type_name(t->params[i].type));
			return MSB_E_TYPE;
		}
	return MSB_OK;
}
