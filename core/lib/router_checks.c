/*
 * router_checks.c — the six checks, and the route they choose under per_spec.
 *
 * Order is the seed's: the denials (statements about the spec against this host's posture,
 * so no backend property softens them), then per backend the floor, capabilities, OS family,
 * the images it runs (when it states them), transfer ceilings, egress and isolation scope.
 * Each check is a few bit and integer (for images, string) comparisons on declarations the
 * loader resolved once, and nothing is formatted or allocated unless a refusal is being
 * reported: ensure_can_serve on a spec that passes is on a host's per-call path.
 *
 * The closed-egress-vs-allowlist-spec warning. The seed's quickstart still says
 * ensure_can_serve buys "the closed-egress-vs-allowlist-spec warning, which acquire
 * deliberately stays silent about". That warning belonged to the rule 0.19 removed: a
 * backend confining more than the spec asked was served with a warning. Since 0.19 that
 * case is a SandboxEgressNotEnforced refusal on both paths, and the old implementation's
 * own tests assert no warning is logged by either. So the warning fires under no condition:
 * ensure_can_serve and acquire both refuse, and both stay silent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router_internal.h"

static const char *word(msb_axis axis, int v)
{
	const char *w = msb_word_name(axis, v);
	return w ? w : "?";
}

const char *router_ladder(void)
{
	return "none, runtime, os_process, container, hardened_container, microvm, vm";
}

msb_isolation router_effective_floor(const msb_router *r, const msb_spec *spec)
{
	/* A spec may raise the host's floor for itself and never lower it. */
	if (spec->min_isolation != MSB_UNSET && spec->min_isolation > (int)r->opt.min_isolation)
		return (msb_isolation)spec->min_isolation;
	return r->opt.min_isolation;
}

msb_scope router_effective_scope(const msb_router *r, const msb_spec *spec)
{
	return spec->isolation_scope > r->opt.min_isolation_scope ? spec->isolation_scope
								  : r->opt.min_isolation_scope;
}

/* A set's words for a message; `none` when it is empty. */
static const char *set_words(msb_axis axis, msb_set set, char *buf, size_t size, const char *none)
{
	if (!set)
		return none;
	msb_set_format(axis, set, buf, size);
	return buf;
}

msb_errc router_check_denials(const msb_router *r, const msb_spec *spec, msb_error *err)
{
	char words[256];
	msb_set caps = spec->requires & r->opt.denied_capabilities;
	if (caps)
		return !err ? MSB_E_CAPABILITY_DENIED
			    : msb_error_set(err, MSB_E_CAPABILITY_DENIED,
					    "the '%s' workload requires %s, which this host's router denies "
					    "outright (denied_capabilities). A hard stop rather than a missing "
					    "feature: whatever backend is registered, this posture refuses the "
					    "capability; serve the workload on a host that permits it, or narrow "
					    "what it requires",
					    spec->kind, set_words(MSB_AXIS_CAPABILITY, caps, words, sizeof words, ""));
	msb_set ids = spec->identities & r->opt.denied_identities;
	if (ids)
		return !err ? MSB_E_IDENTITY_DENIED
			    : msb_error_set(err, MSB_E_IDENTITY_DENIED,
					    "the '%s' workload's host tools exercise %s authority, which this "
					    "host's router denies outright (denied_identities). Remove the tools "
					    "declaring that identity from the workload, or serve it on a host "
					    "whose posture permits them",
					    spec->kind, set_words(MSB_AXIS_IDENTITY, ids, words, sizeof words, ""));
	return MSB_OK;
}

static msb_errc check_floor(const msb_router *r, const msb_backend *b, const msb_spec *spec,
			    msb_error *err)
{
	msb_isolation floor = router_effective_floor(r, spec);
	if (msb_isolation_meets(b->isolation, floor))
		return MSB_OK;
	if (!err)
		return MSB_E_BACKEND_NOT_PERMITTED;
	return msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED,
			     "the '%s' workload requires at least '%s' isolation (the stricter of this "
			     "host's '%s' floor and the spec's own), and sandbox backend '%s' declares '%s' "
			     "(ladder, weakest first: %s). A spec may raise the host's floor and never lower "
			     "it, so the workload is refused rather than served behind a boundary it was "
			     "written not to trust",
			     spec->kind, word(MSB_AXIS_ISOLATION, (int)floor),
			     word(MSB_AXIS_ISOLATION, (int)r->opt.min_isolation), b->name,
			     word(MSB_AXIS_ISOLATION, (int)b->isolation), router_ladder());
}

/* What the spec asks for: a fork of a snapshot (issue 22) needs `snapshot` whether or not
 * the spec says so. */
static inline msb_set required_caps(const msb_spec *spec)
{
	return spec->requires | (spec->from_snapshot ? MSB_BIT(MSB_CAP_SNAPSHOT) : 0);
}

static msb_errc check_capabilities(const msb_backend *b, const msb_spec *spec, msb_error *err)
{
	msb_set missing = required_caps(spec) & ~b->decl.capabilities;
	if (!missing)
		return MSB_OK;
	if (!err)
		return MSB_E_CAPABILITY_NOT_SUPPORTED;
	char miss[256], have[256];
	return msb_error_set(err, MSB_E_CAPABILITY_NOT_SUPPORTED,
			     "sandbox backend '%s' does not support %s, which the '%s' workload requires "
			     "(it declares %s). Refused rather than attempted: a workload that reaches for "
			     "a capability the backend never implemented fails inside the sandbox, where "
			     "the reason is hardest to see",
			     b->name, set_words(MSB_AXIS_CAPABILITY, missing, miss, sizeof miss, ""),
			     spec->kind,
			     set_words(MSB_AXIS_CAPABILITY, b->decl.capabilities, have, sizeof have, "nothing"));
}

/*
 * A spec that streams needs the exec_stream operation, appended to the descriptor after
 * ABI 27 first shipped: a plugin built before it (struct_size too small) or leaving it NULL
 * cannot serve it, and is refused here rather than at the first streamed call.
 */
static msb_errc check_streaming(const msb_backend *b, const msb_spec *spec, msb_error *err)
{
	if (!spec->streaming || MSB_BACKEND_OP(b->ops, exec_stream))
		return MSB_OK;
	if (!err)
		return MSB_E_CAPABILITY_NOT_SUPPORTED;
	return msb_error_set(err, MSB_E_CAPABILITY_NOT_SUPPORTED,
			     "sandbox backend '%s' (plugin %s) does not implement the exec_stream "
			     "operation, which the '%s' workload asks for (streaming: true)%s",
			     b->name, msb_plugin_file(b->plugin), spec->kind,
			     MSB_BACKEND_HAS(b->ops, exec_stream)
				     ? ""
				     : ": the plugin was built before the operation was appended to "
				       "the descriptor");
}

static msb_errc check_os_family(const msb_backend *b, const msb_spec *spec, msb_error *err)
{
	/* An unstated os_families is the absence of an answer: it refuses only a spec that asks. */
	if (spec->requires_os_family == MSB_UNSET ||
	    (b->decl.os_families & MSB_BIT(spec->requires_os_family)))
		return MSB_OK;
	if (!err)
		return MSB_E_OS_FAMILY_NOT_SUPPORTED;
	char served[64];
	return msb_error_set(err, MSB_E_OS_FAMILY_NOT_SUPPORTED,
			     "sandbox backend '%s' hands out %s, and the '%s' workload is written for a "
			     "'%s' guest. Its commands, its scripts and the paths it composes assume that "
			     "shape, so running it here would fail at the first command rather than here. "
			     "Register a backend serving that family, or attach a workload written for the "
			     "one this backend has",
			     b->name,
			     set_words(MSB_AXIS_OS_FAMILY, b->decl.os_families, served, sizeof served,
				       "no guest whose shape it states"),
			     spec->kind, word(MSB_AXIS_OS_FAMILY, spec->requires_os_family));
}

/*
 * A backend that states the images it can run (msb/backend.h: `images`, appended for issue
 * 21) refuses a spec naming another here, at route time, rather than at its first command
 * or its acquire: the process backend shares the host's filesystem and so has the host's
 * image alone. SandboxCapabilityNotSupported, because that is the seed's refusal for a
 * backend lacking what a workload needs (running that image), and it is what per_spec
 * falls through on to the next backend. A spec naming no image asks for the default.
 */
static bool serves_image(const msb_backend *b, const msb_spec *spec)
{
	const char *const *images = MSB_BACKEND_HAS(b->ops, images) ? b->ops->images : NULL;
	if (!images || !spec->image || !*spec->image)
		return true;
	for (; *images; images++)
		if (strcmp(*images, spec->image) == 0)
			return true;
	return false;
}

static msb_errc check_image(const msb_backend *b, const msb_spec *spec, msb_error *err)
{
	if (serves_image(b, spec))
		return MSB_OK;
	if (!err)
		return MSB_E_CAPABILITY_NOT_SUPPORTED;
	char names[256] = "";
	size_t n = 0;
	for (const char *const *i = b->ops->images; *i && n < sizeof names; i++)
		n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", *i);
	return msb_error_set(err, MSB_E_CAPABILITY_NOT_SUPPORTED,
			     "sandbox backend '%s' cannot run image '%s', which the '%s' workload names: "
			     "it runs only the images it declares (%s)%s. Refused at route time rather "
			     "than at the first command; serve the workload on a backend that runs "
			     "images from the store (bwrap, gvisor, qemu)",
			     b->name, spec->image, spec->kind, names,
			     strcmp(names, "host") == 0
				     ? ", because its sandboxes share the host's filesystem and so have "
				       "no root but the host's to run a program from"
				     : "");
}

static msb_errc check_one_direction(const msb_backend *b, const msb_spec *spec, const char *direction,
				    const msb_transfer_limits *ask, const msb_transfer_limits *ceiling,
				    msb_error *err)
{
	if (msb_transfer_limits_within(ask, ceiling))
		return MSB_OK;
	if (!err)
		return MSB_E_TRANSFER_LIMITS_NOT_PERMITTED;
	/* Name every field over its ceiling: fixing one at a time would take three rounds. */
	char over[512];
	size_t n = 0;
	over[0] = '\0';
	const struct {
		const char *field;
		uint64_t ask, ceiling;
	} fields[] = {
		{ "max_bytes_per_file", ask->max_bytes_per_file, ceiling->max_bytes_per_file },
		{ "max_total_bytes", ask->max_total_bytes, ceiling->max_total_bytes },
		{ "max_files", ask->max_files, ceiling->max_files },
	};
	for (size_t i = 0; i < 3; i++)
		if (fields[i].ask > fields[i].ceiling && n < sizeof over)
			n += (size_t)snprintf(over + n, sizeof over - n, "%s%s.%s asks %llu and the ceiling is %llu",
					      n ? "; " : "", direction, fields[i].field,
					      (unsigned long long)fields[i].ask,
					      (unsigned long long)fields[i].ceiling);
	return msb_error_set(err, MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			     "the '%s' workload declares %s limits above what sandbox backend '%s' allows "
			     "(%s). Refused rather than clamped: a workload served a smaller cap than it "
			     "declared fails part-way through a collection, and a partial artifact set is "
			     "worse than none because the model cannot tell what it did not get",
			     spec->kind, direction, b->name, over);
}

static msb_errc check_limits(const msb_backend *b, const msb_spec *spec, msb_error *err)
{
	msb_errc rc = check_one_direction(b, spec, "files_in", &spec->files_in,
					  &b->decl.limits.files_in, err);
	if (rc)
		return rc;
	return check_one_direction(b, spec, "files_out", &spec->files_out, &b->decl.limits.files_out, err);
}

static msb_errc check_egress(const msb_backend *b, const msb_spec *spec, msb_error *err)
{
	/* Resolved, not matched: exactly the asked mode, or refused, in both directions. */
	if (b->decl.egress_modes & MSB_BIT(spec->egress))
		return MSB_OK;
	if (!err)
		return MSB_E_EGRESS_NOT_ENFORCED;
	char modes[64];
	return msb_error_set(err, MSB_E_EGRESS_NOT_ENFORCED,
			     "sandbox backend '%s' cannot enforce the '%s' egress the '%s' workload runs in "
			     "(it enforces %s). A workload is served in exactly the mode it declares or "
			     "refused, never a different one: a more open mode silently widens what it "
			     "reaches and a more isolated one changes the posture it was built for",
			     b->name, word(MSB_AXIS_EGRESS, (int)spec->egress), spec->kind,
			     set_words(MSB_AXIS_EGRESS, b->decl.egress_modes, modes, sizeof modes, "nothing"));
}

static msb_errc check_scope(const msb_router *r, const msb_backend *b, const msb_spec *spec,
			    msb_error *err)
{
	msb_scope scope = router_effective_scope(r, spec);
	if (b->decl.isolation_scopes & MSB_BIT(scope))
		return MSB_OK;
	if (!err)
		return MSB_E_SCOPE_NOT_ENFORCED;
	char scopes[64];
	return msb_error_set(err, MSB_E_SCOPE_NOT_ENFORCED,
			     "the '%s' workload needs '%s' isolation scope (the stricter of this host's "
			     "'%s' floor and the spec's '%s'), and sandbox backend '%s' serves %s. Refused "
			     "rather than shared: every call would succeed with the separation absent",
			     spec->kind, word(MSB_AXIS_SCOPE, (int)scope),
			     word(MSB_AXIS_SCOPE, (int)r->opt.min_isolation_scope),
			     word(MSB_AXIS_SCOPE, (int)spec->isolation_scope), b->name,
			     set_words(MSB_AXIS_SCOPE, b->decl.isolation_scopes, scopes, sizeof scopes,
				       "no scope at all"));
}

msb_errc router_check_backend(const msb_router *r, const msb_backend *b, const msb_spec *spec,
			      msb_error *err)
{
	msb_errc rc;
	if ((rc = check_floor(r, b, spec, err)) || (rc = check_capabilities(b, spec, err)) ||
	    (rc = check_streaming(b, spec, err)) ||
	    (rc = check_os_family(b, spec, err)) || (rc = check_image(b, spec, err)) ||
	    (rc = check_limits(b, spec, err)) ||
	    (rc = check_egress(b, spec, err)) || (rc = check_scope(r, b, spec, err)))
		return rc;
	return MSB_OK;
}

/*
 * Every backend refused: quote each one's own refusal, in registration order. The code is
 * the rule router.h states: the one they share; else the first floor-clearing backend's;
 * else SandboxBackendNotPermitted. Never NoSandboxBackend, which means nothing configured.
 */
static msb_errc refuse_per_spec(const msb_router *r, const msb_spec *spec, msb_error *err)
{
	msb_errc common = router_check_backend(r, r->backends[0], spec, NULL);
	bool shared = true;
	for (size_t i = 1; i < r->n_backends; i++)
		shared &= router_check_backend(r, r->backends[i], spec, NULL) == common;
	if (!shared) {
		common = MSB_E_BACKEND_NOT_PERMITTED;
		msb_isolation floor = router_effective_floor(r, spec);
		for (size_t i = 0; i < r->n_backends; i++)
			if (msb_isolation_meets(r->backends[i]->isolation, floor)) {
				common = router_check_backend(r, r->backends[i], spec, NULL);
				break;
			}
	}
	if (!err)
		return common;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return msb_error_set(err, common, "no registered sandbox backend can serve the '%s' workload",
				     spec->kind);
	fprintf(f, "no registered sandbox backend can serve the '%s' workload under per_spec "
		   "selection, each refusing it in registration order:", spec->kind);
	for (size_t i = 0; i < r->n_backends; i++) {
		msb_error one = MSB_ERROR_INIT;
		router_check_backend(r, r->backends[i], spec, &one);
		fprintf(f, " [%zu] '%s' (%s): %s.", i + 1, r->backends[i]->name, msb_errc_name(one.code),
			msb_error_message(&one));
		msb_error_clear(&one);
	}
	fclose(f);
	msb_error_set(err, common, "%s", text ? text : "");
	free(text);
	return common;
}

/*
 * The same checks as router_check_backend, as one predicate with the spec's floor and
 * scope computed once: this is what per_spec runs against every registered backend before
 * the one that serves, so it stays a handful of compares and never formats.
 */
static inline bool passes(const msb_backend *b, const msb_spec *spec, msb_isolation floor,
			  msb_set scope_bit)
{
	const msb_effective_declarations *d = &b->decl;
	return msb_isolation_meets(b->isolation, floor) && !(required_caps(spec) & ~d->capabilities) &&
	       (spec->requires_os_family == MSB_UNSET ||
		(d->os_families & MSB_BIT(spec->requires_os_family))) &&
	       msb_transfer_limits_within(&spec->files_in, &d->limits.files_in) &&
	       msb_transfer_limits_within(&spec->files_out, &d->limits.files_out) &&
	       (d->egress_modes & MSB_BIT(spec->egress)) && (d->isolation_scopes & scope_bit) &&
	       (!spec->streaming || MSB_BACKEND_OP(b->ops, exec_stream)) && serves_image(b, spec);
}

msb_errc router_route(const msb_router *r, const msb_spec *spec, const msb_backend **chosen,
		      msb_error *err)
{
	*chosen = NULL;
	msb_errc rc = router_check_denials(r, spec, err);
	if (rc)
		return rc;
	if (r->opt.selection == MSB_SELECTION_FIXED) {
		if (!r->fixed)
			return MSB_OK;
		if (passes(r->fixed, spec, router_effective_floor(r, spec),
			   MSB_BIT(router_effective_scope(r, spec)))) {
			*chosen = r->fixed;
			return MSB_OK;
		}
		return router_check_backend(r, r->fixed, spec, err);
	}
	/* Registration order is the preference; the first to pass every check serves. */
	msb_isolation floor = router_effective_floor(r, spec);
	msb_set scope_bit = MSB_BIT(router_effective_scope(r, spec));
	for (size_t i = 0; i < r->n_backends; i++)
		if (passes(r->backends[i], spec, floor, scope_bit)) {
			*chosen = r->backends[i];
			return MSB_OK;
		}
	return refuse_per_spec(r, spec, err);
}

msb_errc msb_router_check_backend(const msb_router *router, size_t i, const msb_spec *spec,
				  msb_error *err)
{
	if (!router || !spec || i >= router->n_backends)
		return msb_error_set(err, MSB_E_VALUE, "router: no registered backend %zu", i);
	msb_errc rc = router_check_denials(router, spec, err);
	if (rc)
		return rc;
	return router_check_backend(router, router->backends[i], spec, err);
}

msb_errc msb_router_ensure_can_serve(msb_router *router, const msb_spec *spec,
				     const msb_backend **chosen, msb_error *err)
{
	const msb_backend *b = NULL;
	if (chosen)
		*chosen = NULL;
	if (!spec)
		return msb_error_set(err, MSB_E_VALUE, "ensure_can_serve: no spec given; the spec is "
				     "the workload whose serving is checked");
	msb_errc rc = msb_spec_validate(spec, err);
	if (rc == MSB_OK)
		rc = router_route(router, spec, &b, err);
	if (chosen)
		*chosen = b;
	return rc;
}
