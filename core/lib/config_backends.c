/*
 * config_backends.c — the `backends:` sequence: which plugin file serves each entry, in
 * registration order (which is the preference under per_spec selection), loading the
 * plugins and opening the backends.
 *
 * An entry's `name:` is optional and, when written, must equal the name the plugin itself
 * declares. The router, `selected:`, every refusal and every log line use the plugin's
 * name, so an entry named otherwise would be a second spelling of one backend that nothing
 * else reads — a `selected: fast` silently not meaning the entry the operator labelled fast.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

/* The declaration fields a plugin states; on an entry they belong under `declarations:`. */
static const char *const bare_fields[] = { "capabilities", "limits", "egress_modes", "os_families",
					   "isolation_scopes", "observes_egress", NULL };

static msb_errc refuse_bare_fields(const msb_node *entry, msb_error *err)
{
	for (size_t i = 0; i < entry->len; i++) {
		const char *key = entry->pairs[i].key;
		msb_node at = msb_config_key_at(entry, i);
		for (size_t j = 0; bare_fields[j]; j++)
			if (strcmp(key, bare_fields[j]) == 0)
				return msb_config_refuse(
					err, &at,
					"declaration field '%s' written bare on a backend entry: a bare field is "
					"read by nothing, and a field nobody reads falls back to its silence rule "
					"(on egress_modes that refuses everything, on limits it widens the "
					"ceiling); narrow the plugin's declarations under 'declarations: { %s: "
					"… }' instead",
					key, key);
		if (strcmp(key, "isolation") == 0)
			return msb_config_refuse(
				err, &at,
				"'isolation' cannot be set on a backend entry: the rung is the plugin's own "
				"claim about the boundary it draws; to require more, raise router.min_isolation "
				"or a spec's min_isolation");
	}
	return MSB_OK;
}

static msb_errc read_entry(msb_config *cfg, const msb_node *n, msb_config_entry *e, msb_error *err)
{
	static const char *const keys[] = { "name", "plugin", "config", "declarations", NULL };
	msb_errc rc = msb_config_map(n, "a backend entry (a mapping with plugin:, and optionally name:, "
				     "config:, declarations:)", err);
	if (rc == MSB_OK)
		rc = refuse_bare_fields(n, err);
	if (rc == MSB_OK)
		rc = msb_config_keys(n, keys, err);
	if (rc != MSB_OK)
		return rc;
	e->node = n;
	e->plugin_node = msb_node_get(n, "plugin");
	if (!e->plugin_node)
		return msb_config_refuse(err, n, "a backend entry needs 'plugin:' (a plugin file path, or a "
					 "bare name looked up on plugin_path and $MSB_PLUGIN_PATH)");
	const char *ref;
	if ((rc = msb_config_string(e->plugin_node, &ref, err)) != MSB_OK)
		return rc;
	if (!*ref)
		return msb_config_refuse(err, e->plugin_node, "expected a plugin file or name, found ''");
	if ((e->name_node = msb_node_get(n, "name"))) {
		const char *name;
		if ((rc = msb_config_string(e->name_node, &name, err)) != MSB_OK)
			return rc;
	}
	const msb_node *config = msb_node_get(n, "config");
	e->config = config && !msb_node_is_null(config) ? config : NULL;
	if (e->config && (rc = msb_config_map(e->config, "a mapping of the plugin's settings", err)) != MSB_OK)
		return rc;
	const msb_node *decl = msb_node_get(n, "declarations");
	e->decl_node = decl && !msb_node_is_null(decl) ? decl : NULL;
	return e->decl_node ? msb_config_read_declarations(cfg, e, err) : MSB_OK;
}

msb_errc msb_config_read_backends(msb_config *cfg, const msb_node *n, msb_error *err)
{
	if (!n)
		return msb_config_refuse(err, msb_config_doc_root(cfg->doc),
					 "'backends:' is required: a sequence of backend entries in "
					 "registration order");
	if (n->kind != MSB_NODE_SEQ || n->len == 0)
		return msb_config_refuse(err, n, "expected a non-empty sequence of backend entries, found %s",
					 n->kind == MSB_NODE_SEQ ? "an empty one" : n->kind == MSB_NODE_MAP ? "a mapping" : "a scalar");
	cfg->entries = msb_arena_alloc(cfg->arena, n->len * sizeof *cfg->entries);
	if (!cfg->entries)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	cfg->n_entries = n->len;
	for (size_t i = 0; i < n->len; i++) {
		msb_errc rc = read_entry(cfg, n->items[i], &cfg->entries[i], err);
		if (rc != MSB_OK)
			return rc;
	}
	return MSB_OK;
}

/* A plugin reference that is a relative path is read from the file's directory, not the cwd. */
static const char *anchored_ref(msb_config *cfg, const char *ref)
{
	if (!strchr(ref, '/') || ref[0] == '/')
		return ref;
	return msb_arena_printf(cfg->arena, "%s/%s", cfg->base_dir, ref);
}

msb_errc msb_config_load_plugins(msb_config *cfg, msb_error *err)
{
	msb_errc rc = msb_loader_new(&cfg->loader, err);
	if (rc == MSB_OK)
		msb_loader_set_probe(cfg->loader, cfg->probe_ms);
	for (size_t i = 0; rc == MSB_OK && i < cfg->n_entries; i++) {
		msb_config_entry *e = &cfg->entries[i];
		const char *ref = anchored_ref(cfg, e->plugin_node->scalar);
		char *resolved = NULL;
		if (!ref)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		rc = msb_plugin_resolve(ref, cfg->plugin_path, &resolved, err);
		if (rc == MSB_OK) {
			e->resolved = msb_arena_strdup(cfg->arena, resolved);
			free(resolved);
			rc = e->resolved ? msb_loader_load(cfg->loader, e->resolved, &e->plugin, err)
					 : msb_error_set(err, MSB_E_NOMEM, "out of memory");
		}
		if (rc != MSB_OK) {
			/* The loader's code is kept: a refused plugin is the loader's refusal, not a typo. */
			const msb_node *at = e->plugin_node;
			msb_error_prefix(err, "%s:%u:%u: %s: ", at->file, at->line, at->column, at->path);
			return rc;
		}
		if (e->decl_node && (rc = msb_config_check_declarations(cfg, e, err)) != MSB_OK)
			return rc;
		const char *want;
		if (e->name_node && strcmp((want = e->name_node->scalar), msb_plugin_name(e->plugin)) != 0)
			return msb_config_refuse(err, e->name_node,
						 "entry name '%s' differs from the name plugin '%s' declares ('%s'); "
						 "the router, 'selected:' and every message use the plugin's name, so "
						 "write name: %s or leave name: out",
						 want, e->resolved, msb_plugin_name(e->plugin), msb_plugin_name(e->plugin));
	}
	if (rc == MSB_OK && cfg->router.selected) {
		bool found = false;
		for (size_t i = 0; i < cfg->n_entries && !found; i++)
			found = strcmp(msb_plugin_name(cfg->entries[i].plugin), cfg->router.selected) == 0;
		if (!found)
			rc = msb_config_refuse(err, cfg->selected_node,
					       "selected backend '%s' is not registered under backends:", cfg->router.selected);
	}
	return rc;
}

msb_errc msb_config_open_backends(msb_config *cfg, const msb_host *host, msb_error *err)
{
	cfg->backends = msb_arena_alloc(cfg->arena, cfg->n_entries * sizeof *cfg->backends);
	if (!cfg->backends)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < cfg->n_entries; i++) {
		msb_config_entry *e = &cfg->entries[i];
		/* The entry narrows what the configured instance declares, field by field (at its line). */
		msb_errc rc = msb_backend_open(e->plugin, e->config, NULL, host, &e->backend, err);
		if (rc == MSB_OK && (rc = msb_config_narrow_backend(cfg, e, err)) != MSB_OK) {
			msb_backend_close(e->backend);
			e->backend = NULL;
			return rc;
		}
		if (rc != MSB_OK) {
			/* A plugin refusing its config: node positions it already; anything else gets the entry's. */
			if (!strstr(msb_error_message(err), cfg->file))
				msb_error_prefix(err, "%s:%u:%u: %s: ", cfg->file, e->node->line, e->node->column,
						 e->node->path);
			return rc;
		}
		cfg->backends[cfg->n_backends++] = e->backend;
	}
	return MSB_OK;
}
