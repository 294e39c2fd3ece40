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
#include <string.h>

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

msb_errc msb_config_check_declarations(msb_config *cfg, msb_config_entry *e, msb_error *err)
{
	const msb_effective_declarations *base = msb_plugin_declarations(e->plugin);
	const char *what = msb_plugin_name(e->plugin);
	/*
	 * A limits mapping that names some fields keeps the plugin's value for the rest: the
	 * declarations object carries the whole ceiling, and an unnamed field is not a request.
	 */
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
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		const msb_node *at = msb_node_get(e->decl_node, keys[i]);
		if (!at)
			continue;
		msb_errc rc = check_one(base, &fields[i], at, what, err);
		if (rc != MSB_OK)
			return rc;
	}
	return MSB_OK;
}
