/*
 * router.c — building a router: the selection mode, the floor judged at construction, and
 * the warnings a per_spec registration owes its host.
 *
 * Construction is where a misconfigured deployment is stopped, so a deployment cannot start
 * with the feature apparently enabled and quietly unsafe: under `fixed` the one backend it
 * will ever use is resolved and held against the floor here, not at first use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router_internal.h"

static const char *rung(msb_isolation iso)
{
	const char *w = msb_word_name(MSB_AXIS_ISOLATION, (int)iso);
	return w ? w : "?";
}

static void options_warn(const msb_router_options *o, const char *message)
{
	if (o->warn)
		o->warn(o->warn_ctx, message);
	else
		fprintf(stderr, "msb: warning: %s\n", message);
}

/* Copy what the caller passed, reading only the fields its struct_size says it has. */
static msb_errc options_read(const msb_router_options *in, msb_router_options *out, msb_error *err)
{
	const msb_router_options defaults = MSB_ROUTER_OPTIONS_INIT;
	*out = defaults;
	if (!in)
		return MSB_OK;
	if (in->struct_size < offsetof(msb_router_options, warn_ctx) + sizeof in->warn_ctx)
		return msb_error_set(err, MSB_E_VALUE,
				     "router options: struct_size %u is smaller than any msb_router_options "
				     "this library knows (%zu); initialise them with MSB_ROUTER_OPTIONS_INIT",
				     (unsigned)in->struct_size, sizeof *in);
	memcpy(out, in, sizeof *out);
	out->struct_size = (uint32_t)sizeof *out;
	if ((int)out->min_isolation < 0 || out->min_isolation >= MSB_ISO__COUNT)
		return msb_error_set(err, MSB_E_VALUE,
				     "router options: min_isolation %d is not a rung on the ladder (%s)",
				     (int)out->min_isolation, router_ladder());
	if ((int)out->min_isolation_scope < 0 || out->min_isolation_scope >= MSB_SCOPE__COUNT)
		return msb_error_set(err, MSB_E_VALUE,
				     "router options: min_isolation_scope %d is not a scope (conversation, call)",
				     (int)out->min_isolation_scope);
	if ((int)out->selection < 0 || out->selection > MSB_SELECTION_PER_SPEC)
		return msb_error_set(err, MSB_E_VALUE, "router options: selection %d is neither fixed nor per_spec",
				     (int)out->selection);
	if ((int)out->reclaim < 0 || out->reclaim > MSB_RECLAIM_KEEP)
		return msb_error_set(err, MSB_E_VALUE, "router options: reclaim %d is neither dispose nor keep",
				     (int)out->reclaim);
	/* A deny list that silently never matches would read as protection and provide none. */
	if (out->denied_capabilities & ~(MSB_BIT(MSB_CAP__COUNT) - 1))
		return msb_error_set(err, MSB_E_VALUE,
				     "router options: denied_capabilities holds a value that is not a capability");
	if (out->denied_identities & ~(MSB_BIT(MSB_IDENTITY__COUNT) - 1))
		return msb_error_set(err, MSB_E_VALUE,
				     "router options: denied_identities holds a value that is not an identity");
	return MSB_OK;
}

static msb_errc resolve_fixed(msb_router *r, msb_error *err)
{
	if (r->n_backends == 0)
		return MSB_OK; /* nothing runs, so nothing reaches anything; acquire says so */
	const msb_backend *b = r->backends[0];
	if (r->selected) {
		b = NULL;
		for (size_t i = 0; i < r->n_backends && !b; i++)
			if (strcmp(r->backends[i]->name, r->selected) == 0)
				b = r->backends[i];
		if (!b) {
			size_t need = 1;
			for (size_t i = 0; i < r->n_backends; i++)
				need += strlen(r->backends[i]->name) + 4;
			char *names = calloc(1, need);
			if (!names)
				return msb_error_set(err, MSB_E_NOMEM, "out of memory");
			for (size_t i = 0; i < r->n_backends; i++) {
				if (i)
					strcat(names, ", ");
				strcat(names, r->backends[i]->name);
			}
			msb_error_set(err, MSB_E_NO_BACKEND,
				      "sandbox backend '%s' is not registered (registered: %s)", r->selected,
				      names);
			free(names);
			return MSB_E_NO_BACKEND;
		}
	}
	if (!msb_isolation_meets(b->isolation, r->opt.min_isolation))
		return msb_error_set(
			err, MSB_E_BACKEND_NOT_PERMITTED,
			"sandbox backend '%s' declares '%s' isolation, below this host's '%s' "
			"minimum-isolation floor (ladder, weakest first: %s). Refused rather than "
			"degraded: falling back to a stronger backend would hide the misconfiguration, "
			"and proceeding with the weaker one would break the boundary the host asked "
			"for. A host that means to run here lowers the floor explicitly with min_isolation.",
			b->name, rung(b->isolation), rung(r->opt.min_isolation), router_ladder());
	r->fixed = b;
	return MSB_OK;
}

/*
 * Under per_spec no one backend is resolved, so the floor is judged across the whole
 * registration: refused only when nothing clears it. A backend below it is kept (dispose
 * and dispose_scope still reach it, so it must not be dropped from the registration) and
 * never routed to; the router says so once, here, since a route that succeeds discards
 * the refusals it passed over and the misconfiguration would otherwise go unmentioned.
 */
static msb_errc judge_per_spec(msb_router *r, msb_error *err)
{
	if (r->n_backends == 0)
		return msb_error_set(err, MSB_E_NO_BACKEND,
				     "no sandbox backend is registered, so per_spec selection has nothing to route to");
	bool any = false;
	for (size_t i = 0; i < r->n_backends; i++)
		any |= msb_isolation_meets(r->backends[i]->isolation, r->opt.min_isolation);
	if (!any) {
		/* Name every backend's rung: the host has to see which one to replace. */
		char *list = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&list, &len);
		for (size_t i = 0; f && i < r->n_backends; i++)
			fprintf(f, "%s'%s' declares '%s'", i ? ", " : "", r->backends[i]->name,
				rung(r->backends[i]->isolation));
		if (!f || fclose(f) != 0) {
			free(list);
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		}
		msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED,
			      "no registered sandbox backend clears this host's '%s' minimum-isolation "
			      "floor (ladder, weakest first: %s): %s. Under per_spec selection nothing "
			      "could ever serve a workload; register a backend that clears the floor, or "
			      "lower it explicitly with min_isolation",
			      rung(r->opt.min_isolation), router_ladder(), list);
		free(list);
		return MSB_E_BACKEND_NOT_PERMITTED;
	}
	for (size_t i = 0; i < r->n_backends; i++) {
		const msb_backend *b = r->backends[i];
		if (msb_isolation_meets(b->isolation, r->opt.min_isolation))
			continue;
		char *line = NULL;
		if (asprintf(&line,
			     "sandbox backend '%s' declares '%s' isolation, below this host's '%s' "
			     "minimum-isolation floor: under per_spec selection it stays registered, so "
			     "dispose and dispose_scope still reach what it holds, and no workload is "
			     "ever routed to it",
			     b->name, rung(b->isolation), rung(r->opt.min_isolation)) >= 0) {
			options_warn(&r->opt, line);
			free(line);
		}
	}
	return MSB_OK;
}

msb_errc msb_router_new(msb_backend *const *backends, size_t n_backends,
			const msb_router_options *options, msb_router **out, msb_error *err)
{
	*out = NULL;
	msb_router_options opt;
	msb_errc rc = options_read(options, &opt, err);
	if (rc)
		return rc;
	if (opt.selection == MSB_SELECTION_PER_SPEC && opt.selected)
		return msb_error_set(err, MSB_E_VALUE,
				     "router options: selected '%s' pins one backend and per_spec selection "
				     "routes each spec to the first registered backend that passes every "
				     "check; the two cannot be combined. Drop selected (routing then starts at "
				     "the first registered backend, so reorder the backends if the pinned one "
				     "should keep serving), or keep fixed selection",
				     opt.selected);
	for (size_t i = 0; i < n_backends; i++)
		if (!backends[i])
			return msb_error_set(err, MSB_E_VALUE, "router: backend %zu is NULL; each entry "
					     "must be a backend opened with msb_backend_open", i);

	msb_router *r = calloc(1, sizeof *r);
	if (!r)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->settled, NULL);
	r->opt = opt;
	r->n_backends = n_backends;
	r->backends = calloc(n_backends ? n_backends : 1, sizeof *r->backends);
	r->selected = opt.selected ? strdup(opt.selected) : NULL;
	if (!r->backends || (opt.selected && !r->selected)) {
		msb_router_free(r);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	r->opt.selected = r->selected;
	if (n_backends)
		memcpy(r->backends, backends, n_backends * sizeof *backends);

	rc = opt.selection == MSB_SELECTION_FIXED ? resolve_fixed(r, err) : judge_per_spec(r, err);
	if (rc) {
		msb_router_free(r);
		return rc;
	}
	*out = r;
	return MSB_OK;
}

size_t msb_router_backend_count(const msb_router *router)
{
	return router->n_backends;
}

const msb_backend *msb_router_backend_at(const msb_router *router, size_t i)
{
	return i < router->n_backends ? router->backends[i] : NULL;
}

const msb_router_options *msb_router_get_options(const msb_router *router)
{
	return &router->opt;
}
