/*
 * config_declarations.c — a backend entry's `declarations:`, which may only NARROW what
 * its plugin declares.
 *
 * The operator's use for it is a deployment that offers less than the engine could: no
 * egress proxy here, so {closed} alone; a smaller transfer ceiling than the plugin's. A
 * widening is refused rather than clamped, because a declaration is what the router trusts
 * in place of the engine, and one the engine cannot back is a posture nobody enforces.
 * Each field is checked on its own against the plugin's effective declarations, so the
 * refusal points at the line that widens.
 */
#include <stdio.h>
#include <string.h>

#include "plugin_internal.h"

#include "config_internal.h"

static const char *const decl_keys[] = { "capabilities", "limits", "egress_modes", "os_families",
					  "isolation_scopes", "observes_egress", NULL };

static msb_errc read_limits(msb_config_entry *e, const msb_node *n, msb_error *err)
{
	static const char *const keys[] = { "files_in", "files_out", NULL };
	msb_errc rc = msb_config_map(n, "a mapping with files_in and/or files_out", err);
	if (rc == MSB_OK)
		rc = msb_config_keys(n, keys, err);
	const msb_node *v;
	if (rc == MSB_OK && (v = msb_node_get(n, "files_in")))
		rc = msb_config_limits(v, &e->limits_in, &e->limits_in_stated, err);
	if (rc == MSB_OK && (v = msb_node_get(n, "files_out")))
		rc = msb_config_limits(v, &e->limits_out, &e->limits_out_stated, err);
	e->limits_node = n;
	return rc;
}

msb_errc msb_config_read_declarations(msb_config *cfg, msb_config_entry *e, msb_error *err)
{
	const msb_node *n = e->decl_node;
	msb_errc rc = msb_config_map(n, "a mapping of declaration fields to narrow", err);
	if (rc == MSB_OK)
		rc = msb_config_keys(n, decl_keys, err);
	static const struct { const char *key; msb_axis axis; size_t offset; } sets[] = {
		{ "capabilities", MSB_AXIS_CAPABILITY, offsetof(msb_declarations, capabilities) },
		{ "egress_modes", MSB_AXIS_EGRESS, offsetof(msb_declarations, egress_modes) },
		{ "os_families", MSB_AXIS_OS_FAMILY, offsetof(msb_declarations, os_families) },
		{ "isolation_scopes", MSB_AXIS_SCOPE, offsetof(msb_declarations, isolation_scopes) },
	};
	for (size_t i = 0; rc == MSB_OK && i < sizeof sets / sizeof *sets; i++) {
		const msb_node *v = msb_node_get(n, sets[i].key);
		msb_set unused;
		if (v)
			rc = msb_config_words(cfg->arena, v, sets[i].axis, &unused,
					      (const char *const **)((char *)&e->narrow + sets[i].offset), err);
	}
	const msb_node *v;
	if (rc == MSB_OK && (v = msb_node_get(n, "observes_egress")) &&
	    (rc = msb_config_bool(v, &e->observes_egress, err)) == MSB_OK)
		e->narrow.observes_egress = &e->observes_egress;
	if (rc == MSB_OK && (v = msb_node_get(n, "limits")))
		rc = read_limits(e, v, err);
	return rc;
}

/* Check one stated field on its own, so a refusal names its line. */
static msb_errc check_one(const msb_effective_declarations *base, const msb_declarations *one,
			  const msb_node *at, const char *what, msb_error *err)
{
	msb_effective_declarations out;
	if (msb_declarations_narrow(base, one, what, &out, err) != MSB_OK)
		return msb_config_reposition(err, at);
	return MSB_OK;
}

static void fill_unstated(msb_transfer_limits *l, unsigned stated, const msb_transfer_limits *base)
{
	if (!(stated & 1u))
		l->max_bytes_per_file = base->max_bytes_per_file;
	if (!(stated & 2u))
		l->max_total_bytes = base->max_total_bytes;
	if (!(stated & 4u))
		l->max_files = base->max_files;
}

/*
 * Check the entry's declarations field by field against `base`, each refusal positioned at
 * its own field's line. A limits mapping that names some fields keeps `base`'s value for the
 * rest: an unwritten field is not a request, so it is filled from the ceiling it narrows (the
 * plugin's at load, the configured instance's at open). The narrowed result goes to `out`
 * when it is not NULL.
 */
static msb_errc narrow_entry(msb_config *cfg, msb_config_entry *e,
			     const msb_effective_declarations *base, const char *what,
			     msb_effective_declarations *out, msb_error *err)
{
	if (e->limits_node) {
		msb_sandbox_limits *l = msb_arena_alloc(cfg->arena, sizeof *l);
		if (!l)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		l->files_in = e->limits_in;
		l->files_out = e->limits_out;
		fill_unstated(&l->files_in, e->limits_in_stated, &base->limits.files_in);
		fill_unstated(&l->files_out, e->limits_out_stated, &base->limits.files_out);
		e->narrow.limits = l;
	}
	const msb_declarations fields[] = {
		{ .capabilities = e->narrow.capabilities },
		{ .egress_modes = e->narrow.egress_modes },
		{ .os_families = e->narrow.os_families },
		{ .isolation_scopes = e->narrow.isolation_scopes },
		{ .observes_egress = e->narrow.observes_egress },
		{ .limits = e->narrow.limits },
	};
	const char *keys[] = { "capabilities", "egress_modes", "os_families", "isolation_scopes",
			       "observes_egress", "limits" };
	for (size_t i = 0; i < sizeof fields / sizeof *fields - 1; i++) {
		const msb_node *at = msb_node_get(e->decl_node, keys[i]);
		if (!at)
			continue;
		msb_errc rc = check_one(base, &fields[i], at, what, err);
		if (rc != MSB_OK)
			return rc;
	}
	/* Each written ceiling alone, the rest at base's, so a widening names its own line. */
	static const char *const limit_fields[] = { "max_bytes_per_file", "max_total_bytes",
						    "max_files" };
	for (int dir = 0; e->limits_node && dir < 2; dir++) {
		const msb_node *d = msb_node_get(e->limits_node, dir ? "files_out" : "files_in");
		unsigned stated = dir ? e->limits_out_stated : e->limits_in_stated;
		for (unsigned f = 0; d && f < 3; f++) {
			if (!(stated & (1u << f)))
				continue;
			msb_sandbox_limits one = base->limits;
			msb_transfer_limits *t = dir ? &one.files_out : &one.files_in;
			const msb_transfer_limits *src = dir ? &e->limits_out : &e->limits_in;
			if (f == 0)
				t->max_bytes_per_file = src->max_bytes_per_file;
			else if (f == 1)
				t->max_total_bytes = src->max_total_bytes;
			else
				t->max_files = src->max_files;
			const msb_node *at = msb_node_get(d, limit_fields[f]);
			const msb_declarations only = { .limits = &one };
			msb_errc rc = check_one(base, &only, at ? at : d, what, err);
			if (rc != MSB_OK)
				return rc;
		}
	}
	if (out && msb_declarations_narrow(base, &e->narrow, what, out, err) != MSB_OK)
		return msb_config_reposition(err, e->decl_node);
	return MSB_OK;
}

msb_errc msb_config_check_declarations(msb_config *cfg, msb_config_entry *e, msb_error *err)
{
	return narrow_entry(cfg, e, msb_plugin_declarations(e->plugin), msb_plugin_name(e->plugin),
			    NULL, err);
}

msb_errc msb_config_narrow_backend(msb_config *cfg, msb_config_entry *e, msb_error *err)
{
	if (!e->decl_node)
		return MSB_OK;
	msb_backend *b = e->backend;
	size_t n = strlen(b->name) + 32;
	char *what = msb_arena_alloc(cfg->arena, n);
	if (!what)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	snprintf(what, n, "backend %s: declarations", b->name);
	return narrow_entry(cfg, e, &b->decl, what, &b->decl, err);
}
