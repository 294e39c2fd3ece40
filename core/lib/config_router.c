/*
 * config_router.c — the `router:` section (every construction option of the router) and
 * building the router from a loaded configuration.
 *
 * Absent options keep MSB_ROUTER_OPTIONS_INIT's values, which are the production posture
 * (floor microvm, scope conversation, fixed selection, reclaim dispose): a section left out
 * is never weaker than one written out in full.
 */
#include <string.h>

#include "config_internal.h"

static msb_errc read_selection(const msb_node *n, msb_selection *out, msb_error *err)
{
	msb_errc rc = msb_config_scalar(n, "fixed or per_spec", err);
	if (rc != MSB_OK)
		return rc;
	if (strcmp(n->scalar, "fixed") == 0)
		*out = MSB_SELECTION_FIXED;
	else if (strcmp(n->scalar, "per_spec") == 0)
		*out = MSB_SELECTION_PER_SPEC;
	else
		return msb_config_refuse(err, n, "unknown selection '%s' (known: fixed, per_spec)", n->scalar);
	return MSB_OK;
}

static msb_errc read_reclaim(const msb_node *n, msb_reclaim_policy *out, msb_error *err)
{
	msb_errc rc = msb_config_scalar(n, "dispose or keep", err);
	if (rc != MSB_OK)
		return rc;
	if (strcmp(n->scalar, "dispose") == 0)
		*out = MSB_RECLAIM_DISPOSE;
	else if (strcmp(n->scalar, "keep") == 0)
		*out = MSB_RECLAIM_KEEP;
	else
		return msb_config_refuse(err, n, "unknown reclaim policy '%s' (known: dispose, keep)", n->scalar);
	return MSB_OK;
}

msb_errc msb_config_read_router(msb_config *cfg, const msb_node *n, msb_error *err)
{
	static const char *const keys[] = { "min_isolation", "min_isolation_scope", "selection",
					    "selected", "denied_capabilities", "denied_identities",
					    "reclaim", NULL };
	msb_router_options *o = &cfg->router;
	cfg->router_node = n;
	if (!n || msb_node_is_null(n))
		return MSB_OK;
	msb_errc rc = msb_config_map(n, "a mapping of router options", err);
	if (rc == MSB_OK)
		rc = msb_config_keys(n, keys, err);
	const msb_node *v;
	int word;
	if (rc == MSB_OK && (v = msb_node_get(n, "min_isolation")) &&
	    (rc = msb_config_word(v, MSB_AXIS_ISOLATION, &word, err)) == MSB_OK)
		o->min_isolation = (msb_isolation)word;
	if (rc == MSB_OK && (v = msb_node_get(n, "min_isolation_scope")) &&
	    (rc = msb_config_word(v, MSB_AXIS_SCOPE, &word, err)) == MSB_OK)
		o->min_isolation_scope = (msb_scope)word;
	if (rc == MSB_OK && (v = msb_node_get(n, "selection")))
		rc = read_selection(v, &o->selection, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "selected"))) {
		cfg->selected_node = v;
		rc = msb_config_string(v, &o->selected, err);
	}
	if (rc == MSB_OK && (v = msb_node_get(n, "denied_capabilities")))
		rc = msb_config_words(cfg->arena, v, MSB_AXIS_CAPABILITY, &o->denied_capabilities, NULL, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "denied_identities")))
		rc = msb_config_words(cfg->arena, v, MSB_AXIS_IDENTITY, &o->denied_identities, NULL, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "reclaim")))
		rc = read_reclaim(v, &o->reclaim, err);
	/* Said here, at the line, rather than by the router later without one. */
	if (rc == MSB_OK && o->selected && o->selection == MSB_SELECTION_PER_SPEC)
		rc = msb_config_refuse(err, cfg->selected_node,
				       "'selected' pins one backend, and selection per_spec routes each spec to "
				       "the first registered backend that passes every check; drop one of the two "
				       "(registration order is the preference under per_spec)");
	return rc;
}

msb_errc msb_config_router(msb_config *cfg, msb_router **out, msb_error *err)
{
	if (cfg->n_backends == 0)
		return msb_error_set(err, MSB_E_NO_BACKEND,
				     "%s: no backend is open (the configuration was loaded without opening them)",
				     cfg->file);
	msb_errc rc = msb_router_new(cfg->backends, cfg->n_backends, &cfg->router, out, err);
	if (rc == MSB_OK && (rc = msb_config_attach_pools(cfg, *out, err)) != MSB_OK) {
		msb_router_free(*out);
		*out = NULL;
		return rc;
	}
	if (rc == MSB_E_BACKEND_NOT_PERMITTED && cfg->router.selection == MSB_SELECTION_FIXED) {
		/*
		 * The fixed backend below the floor: positioned at the entry refused (the pinned
		 * one, else the first), and at the floor's own line when the file writes it.
		 */
		const msb_config_entry *e = &cfg->entries[0];
		for (size_t i = 0; cfg->router.selected && i < cfg->n_entries; i++)
			if (cfg->entries[i].backend &&
			    strcmp(msb_backend_name(cfg->entries[i].backend), cfg->router.selected) == 0)
				e = &cfg->entries[i];
		const msb_node *floor = cfg->router_node && !msb_node_is_null(cfg->router_node)
						? msb_node_get(cfg->router_node, "min_isolation")
						: NULL;
		if (floor)
			msb_error_prefix(err, "%s:%u:%u: %s (floor at %s:%u:%u, router.min_isolation): ",
					 cfg->file, e->node->line, e->node->column, e->node->path,
					 cfg->file, floor->line, floor->column);
		else
			msb_error_prefix(err, "%s:%u:%u: %s (floor: the default, router.min_isolation "
					 "unwritten): ",
					 cfg->file, e->node->line, e->node->column, e->node->path);
	} else if (rc != MSB_OK && cfg->router_node) {
		msb_error_prefix(err, "%s: router: ", cfg->file);
	}
	return rc;
}
