/*
 * config_load.c — reading a sandbox.yaml end to end, in the three phases msb/config.h
 * describes, and the accessors over the result. The schema's sections are read by
 * config_router.c, config_backends.c (+ config_declarations.c) and config_specs.c.
 */
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static const char *const top_keys[] = { "version", "plugin_path", "router", "backends", "specs", "pool_dir", NULL };

static msb_errc read_version(msb_config *cfg, const msb_node *root, msb_error *err)
{
	const msb_node *v = msb_node_get(root, "version");
	if (!v)
		return msb_config_refuse(err, root,
					 "'version: %d' is required, so that a file written for another "
					 "schema is refused rather than half-read",
					 MSB_CONFIG_VERSION);
	uint64_t version;
	msb_errc rc = msb_config_uint(v, &version, err);
	if (rc == MSB_OK && version != MSB_CONFIG_VERSION)
		rc = msb_config_refuse(err, v, "schema version %s is not one this host reads (expected %d)",
				       v->scalar, MSB_CONFIG_VERSION);
	return rc;
}

/*
 * plugin_path: directories, relative ones read from the file's own directory. Joined in one
 * allocation: joining one by one kept every partial string, quadratic in the entries (30,000
 * one-letter entries took 2.3 GB).
 */
static msb_errc read_plugin_path(msb_config *cfg, const msb_node *n, msb_error *err)
{
	if (!n)
		return MSB_OK;
	const char *const *dirs;
	msb_errc rc = msb_config_strings(cfg->arena, n, &dirs, err);
	if (rc != MSB_OK)
		return rc;
	size_t base = strlen(cfg->base_dir), total = 0;
	for (size_t i = 0; dirs[i]; i++) {
		if (!*dirs[i] || strchr(dirs[i], ':'))
			return msb_config_refuse(err, n->items[i], "a plugin directory cannot be empty or contain ':'");
		total += (dirs[i][0] == '/' ? 0 : base + 1) + strlen(dirs[i]) + 1;
		if (total > MSB_CONFIG_MAX_TREE)
			return msb_config_refuse(err, n, "the joined plugin path passes %u MiB",
						 (unsigned)(MSB_CONFIG_MAX_TREE >> 20));
	}
	if (!dirs[0])
		return MSB_OK;
	char *joined = msb_arena_alloc(cfg->arena, total);
	if (!joined)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	char *p = joined;
	for (size_t i = 0; dirs[i]; i++) {
		if (i)
			*p++ = ':';
		if (dirs[i][0] != '/') {
			p = stpcpy(p, cfg->base_dir);
			*p++ = '/';
		}
		p = stpcpy(p, dirs[i]);
	}
	cfg->plugin_path = joined;
	return MSB_OK;
}

/* Phase 2: every section, before any plugin is loaded. */
static msb_errc read_schema(msb_config *cfg, msb_error *err)
{
	const msb_node *root = msb_config_doc_root(cfg->doc);
	if (!root || msb_node_is_null(root)) {
		msb_node at = { .file = cfg->file, .path = "", .line = 1, .column = 1 };
		return msb_config_refuse(err, &at, "the file is empty; expected a mapping with version: %d and backends:",
					 MSB_CONFIG_VERSION);
	}
	msb_errc rc = msb_config_map(root, "a mapping with version:, backends: and optionally "
				     "plugin_path:, router:, specs:", err);
	if (rc == MSB_OK)
		rc = msb_config_keys(root, top_keys, err);
	if (rc == MSB_OK)
		rc = read_version(cfg, root, err);
	if (rc == MSB_OK)
		rc = read_plugin_path(cfg, msb_node_get(root, "plugin_path"), err);
	if (rc == MSB_OK)
		rc = msb_config_read_router(cfg, msb_node_get(root, "router"), err);
	if (rc == MSB_OK)
		rc = msb_config_read_backends(cfg, msb_node_get(root, "backends"), err);
	if (rc == MSB_OK)
		rc = msb_config_read_specs(cfg, msb_node_get(root, "specs"), err);
	if (rc == MSB_OK)
		rc = msb_config_read_pool_dir(cfg, msb_node_get(root, "pool_dir"), err);
	return rc;
}

/*
 * A configuration over `doc` (taken over: freed with the result or on failure), its
 * positions naming `name`, and phase 2 read. Phase 3 is the caller's.
 */
static msb_errc config_read(msb_config_doc *doc, const char *name, const msb_config_options *options,
			    msb_config **out, msb_error *err)
{
	*out = NULL;
	msb_config *cfg = calloc(1, sizeof *cfg);
	if (!cfg) {
		msb_config_doc_free(doc);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	cfg->doc = doc;
	cfg->arena = msb_config_doc_arena(cfg->doc);
	cfg->file = msb_config_doc_root(cfg->doc) ? msb_config_doc_root(cfg->doc)->file
						  : msb_arena_strdup(cfg->arena, name);
	char *copy = msb_arena_strdup(cfg->arena, name);
	cfg->base_dir = copy ? msb_arena_strdup(cfg->arena, dirname(copy)) : NULL;
	if (!cfg->file || !cfg->base_dir) {
		msb_config_free(cfg);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	msb_router_options ro = MSB_ROUTER_OPTIONS_INIT;
	ro.warn = options->warn;
	ro.warn_ctx = options->warn_ctx;
	ro.observer = options->observer;
	cfg->router = ro;
	if (options->struct_size >= offsetof(msb_config_options, probe_timeout_ms) +
					    sizeof options->probe_timeout_ms)
		cfg->probe_ms = options->probe_timeout_ms;
	msb_errc rc = read_schema(cfg, err);
	if (rc != MSB_OK) {
		msb_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return MSB_OK;
}

static msb_errc check_options(const msb_config_options **options, msb_error *err)
{
	static const msb_config_options defaults = MSB_CONFIG_OPTIONS_INIT;
	if (!*options)
		*options = &defaults;
	/* A host built before the appended fields passes a shorter struct: still served. */
	if ((*options)->struct_size < offsetof(msb_config_options, probe_timeout_ms))
		return msb_error_set(err, MSB_E_VALUE, "msb_config_options struct_size %u is older than this "
				     "library's (%zu)", (*options)->struct_size, sizeof(msb_config_options));
	return MSB_OK;
}

msb_errc msb_config_load(const char *path, const msb_config_options *options, msb_config **out,
			 msb_error *err)
{
	*out = NULL;
	msb_errc rc = check_options(&options, err);
	msb_config_doc *doc = NULL;
	if (rc == MSB_OK)
		rc = msb_config_doc_load(path, &doc, err);
	msb_config *cfg = NULL;
	if (rc == MSB_OK)
		rc = config_read(doc, path, options, &cfg, err);
	if (rc == MSB_OK)
		rc = msb_config_load_plugins(cfg, err);
	if (rc == MSB_OK && options->open_backends)
		rc = msb_config_open_backends(cfg, options->host, err);
	if (rc == MSB_OK && options->open_backends)
		rc = msb_config_check_pools(cfg, err);
	if (rc != MSB_OK) {
		msb_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return MSB_OK;
}

msb_errc msb_config_parse(const char *text, size_t len, const char *name,
			  const msb_config_options *options, msb_config **out, msb_error *err)
{
	*out = NULL;
	if (!name)
		name = "<memory>";
	msb_errc rc = check_options(&options, err);
	msb_config_doc *doc = NULL;
	if (rc == MSB_OK)
		rc = msb_config_doc_parse(text, len, name, &doc, err);
	if (rc == MSB_OK)
		rc = config_read(doc, name, options, out, err);
	return rc;
}

void msb_config_free(msb_config *cfg)
{
	if (!cfg)
		return;
	/* Backends close before their plugins are unloaded: their code lives in the plugin. */
	for (size_t i = cfg->n_backends; i-- > 0;)
		msb_backend_close(cfg->backends[i]);
	msb_loader_free(cfg->loader);
	msb_config_doc_free(cfg->doc);
	free(cfg);
}

const char *msb_config_file(const msb_config *cfg) { return cfg->file; }
const msb_node *msb_config_root(const msb_config *cfg) { return msb_config_doc_root(cfg->doc); }
const char *msb_config_plugin_path(const msb_config *cfg) { return cfg->plugin_path; }
msb_loader *msb_config_loader(const msb_config *cfg) { return cfg->loader; }
const msb_router_options *msb_config_router_options(const msb_config *cfg) { return &cfg->router; }
size_t msb_config_backend_count(const msb_config *cfg) { return cfg->n_backends; }

msb_backend *msb_config_backend_at(const msb_config *cfg, size_t i)
{
	return i < cfg->n_backends ? cfg->backends[i] : NULL;
}

/* A parsed-only configuration (msb_config_parse) has entries but no plugin loaded for them. */
size_t msb_config_plugin_count(const msb_config *cfg) { return cfg->loader ? cfg->n_entries : 0; }

const msb_plugin *msb_config_plugin_at(const msb_config *cfg, size_t i)
{
	return i < msb_config_plugin_count(cfg) ? cfg->entries[i].plugin : NULL;
}

const msb_node *msb_config_backend_node(const msb_config *cfg, size_t i)
{
	return i < cfg->n_entries ? cfg->entries[i].node : NULL;
}

size_t msb_config_spec_count(const msb_config *cfg) { return cfg->n_specs; }

const msb_spec *msb_config_spec_at(const msb_config *cfg, size_t i)
{
	return i < cfg->n_specs ? &cfg->specs[i] : NULL;
}

const msb_spec *msb_config_spec(const msb_config *cfg, const char *kind)
{
	for (size_t i = 0; kind && i < cfg->n_specs; i++)
		if (strcmp(cfg->specs[i].kind, kind) == 0)
			return &cfg->specs[i];
	return NULL;
}

msb_errc msb_config_spec_find(const msb_config *cfg, const char *kind, const msb_spec **out,
			      msb_error *err)
{
	if ((*out = msb_config_spec(cfg, kind)))
		return MSB_OK;
	char known[512] = "";
	size_t used = 0;
	for (size_t i = 0; i < cfg->n_specs && used < sizeof known; i++) {
		int n = snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", cfg->specs[i].kind);
		used += n > 0 ? (size_t)n : 0;
	}
	return msb_error_set(err, MSB_E_VALUE, "%s declares no spec of kind '%s' (kinds: %s)", cfg->file,
			     kind ? kind : "", cfg->n_specs ? known : "none");
}
