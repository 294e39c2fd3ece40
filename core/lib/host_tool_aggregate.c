/*
 * host_tool_aggregate.c — what the registry means for the model-facing tool, derived once
 * and sealing the registry as it is derived.
 *
 * Taking the aggregate is the moment a host turns the surface into a spec and a
 * classification; a registration after it would be served against policy that never saw it,
 * so the registry refuses every later one. With declarations copied at registration, what
 * the host classified and what a run serves cannot come apart.
 */
#include <stdlib.h>
#include <string.h>

#include "host_tool_internal.h"

/* Every distinct sink cap, verbatim: confidentiality is the host's vocabulary, never ranked here. */
static msb_errc collect_caps(msb_host_tools *reg, msb_error *err)
{
	if (reg->caps)
		return MSB_OK; /* sealed since the first aggregate: the surface cannot have moved */
	reg->caps = calloc(reg->n_tools + 1, sizeof *reg->caps);
	if (!reg->caps)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	size_t n = 0;
	for (size_t i = 0; i < reg->n_tools; i++) {
		const host_tool *t = reg->tools[i];
		if (!t->declared || t->decl.sink != MSB_FLOW_SINK_CAPPED)
			continue;
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = strcmp(reg->caps[j], t->decl.sink_cap) == 0;
		if (!seen)
			reg->caps[n++] = t->decl.sink_cap;
	}
	return MSB_OK;
}

msb_errc msb_host_tools_aggregate_seal(msb_host_tools *reg, msb_host_tools_aggregate *out,
				       msb_error *err)
{
	pthread_mutex_lock(&reg->lock);
	reg->sealed = true;
	msb_host_tools_aggregate a = { .result_integrity = MSB_FLOW_SOURCE_NONE };
	for (size_t i = 0; i < reg->n_tools; i++) {
		const host_tool *t = reg->tools[i];
		/* Sources only: a sink-only or pure tool must not drag the result down, and an
		 * undeclared one fails safe into the weakest tier. */
		msb_flow_source source = t->declared ? t->decl.source : MSB_FLOW_SOURCE_UNTRUSTED;
		if (source != MSB_FLOW_SOURCE_NONE &&
		    (a.result_integrity == MSB_FLOW_SOURCE_NONE || source < a.result_integrity))
			a.result_integrity = source;
		a.has_undeclared |= !t->declared;
		int identity = host_tool_identity(t);
		if (identity != MSB_UNSET)
			a.identities |= MSB_BIT(identity);
	}
	a.requires_approval = (a.identities & MSB_BIT(MSB_IDENTITY_USER)) != 0;
	msb_errc rc = collect_caps(reg, err);
	a.outbound_caps = reg->caps;
	pthread_mutex_unlock(&reg->lock);
	if (rc == MSB_OK)
		*out = a;
	return rc;
}
