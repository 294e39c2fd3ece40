/*
 * msb/config.h — sandbox.yaml: the host's policy, its backends and its workload specs in one
 * strict file (host API). doc/sandbox.yaml.5 is the reference for the file itself.
 *
 * Loading is in three phases, each refusing before the next begins, so a typo is reported
 * before any plugin code runs: (1) the YAML is parsed into an msb_node tree with positions,
 * (2) the schema is read — every key known, every word in the vocabulary, every size
 * parsable — and the specs are built and validated, (3) the plugins are loaded and the
 * backends opened in registration order. Every refusal is MSB_E_CONFIG (or the loader's or
 * the plugin's own code) with "file:line:column: key.path: what was wrong, what was expected".
 *
 * Nothing here picks a default that a typo could reach: an unknown key is refused, never
 * ignored, and every default is the seed's strict one (floor microvm, egress closed).
 */
#ifndef MSB_CONFIG_H
#define MSB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/backend.h>
#include <msb/error.h>
#include <msb/loader.h>
#include <msb/node.h>
#include <msb/router.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version this host reads (`version: 1`). */
#define MSB_CONFIG_VERSION 1

/*
 * Bounds on one document, so that no text can exhaust the stack or the memory of the host
 * reading it: mappings and sequences nest at most MSB_CONFIG_MAX_DEPTH levels, and the
 * parsed tree (nodes, values after ${VAR} expansion, and every node's key path, which
 * repeats its parents' keys) holds at most MSB_CONFIG_MAX_TREE bytes. Both are far beyond
 * any real sandbox.yaml; past either the file is refused (MSB_E_CONFIG) at the node.
 */
#define MSB_CONFIG_MAX_DEPTH 64
#define MSB_CONFIG_MAX_TREE ((size_t)64 << 20)
/*
 * The largest sandbox.yaml file read (msb_config_doc_load): the text is read with this bound
 * and refused as soon as it is passed, never read to its end first. Only a regular file is
 * read: a FIFO would hang the reader until someone wrote to it, a device could be endless.
 */
#define MSB_CONFIG_MAX_FILE ((size_t)4 << 20)

/* ---- the YAML layer: a document as an msb_node tree ----------------------------------- */

/*
 * A parsed YAML document. Refused: bad syntax (with libyaml's position), a second document,
 * a duplicate key, anchors and aliases (so merge keys too: what a value is must be readable
 * where it is written), explicit tags, non-scalar keys, a NUL character (\0) in a key or
 * value (every string msb reads would end there), a `${VAR}` whose variable is unset, and a
 * document past the bounds above. `${VAR}` in a scalar value is replaced by the variable's
 * value (keys are never expanded); `$${` writes a literal `${`. A value that came from the
 * environment is never read as null, whatever it expands to.
 */
typedef struct msb_config_doc msb_config_doc;

msb_errc msb_config_doc_load(const char *path, msb_config_doc **out, msb_error *err);
/* Parse `len` bytes of text; `name` is what positions call the file ("<memory>" if NULL). */
msb_errc msb_config_doc_parse(const char *text, size_t len, const char *name,
			      msb_config_doc **out, msb_error *err);
/* The root node (a map, for any sandbox.yaml), or NULL for an empty document. */
const msb_node *msb_config_doc_root(const msb_config_doc *doc);
void msb_config_doc_free(msb_config_doc *doc);

/* ---- the schema --------------------------------------------------------------------- */

typedef struct msb_config msb_config;

typedef struct msb_config_options {
	uint32_t struct_size;
	/*
	 * false: stop after loading and validating the plugins, without initialising any
	 * backend (what `msb plugins` shows). msb_config_router needs them opened.
	 */
	bool open_backends;
	/* Handed to every backend's init (logging, egress reports); NULL: stderr. */
	const msb_host *host;
	/* Where the router's warnings go (one line each); NULL: stderr. */
	void (*warn)(void *ctx, const char *message);
	void *warn_ctx;
	/* The router's observer; may be NULL. */
	const msb_observer *observer;
	/*
	 * Appended (issue 18): when non-zero, each plugin is probe-loaded in a short-lived
	 * child first, with this time bound (msb_loader_set_probe). Read only when struct_size
	 * covers it; 0, the default, loads in this process directly.
	 */
	unsigned probe_timeout_ms;
} msb_config_options;

#define MSB_CONFIG_OPTIONS_INIT { (uint32_t)sizeof(msb_config_options), true, NULL, NULL, NULL, NULL, 0 }

/*
 * Read `path` (phases 1–3 above) into *out. `options` may be NULL (MSB_CONFIG_OPTIONS_INIT).
 * On failure nothing is left loaded or open.
 */
msb_errc msb_config_load(const char *path, const msb_config_options *options, msb_config **out,
			 msb_error *err);
/*
 * Phases 1 and 2 only, on `len` bytes of text: every refusal msb_config_load makes before a
 * plugin is loaded, and nothing loaded. `name` is what positions call the file ("<memory>"
 * if NULL); relative plugin_path entries are read from its directory. Specs, router options
 * and plugin_path are read; there are no plugins and no backends (both counts 0), so
 * msb_config_router refuses it. Free with msb_config_free.
 */
msb_errc msb_config_parse(const char *text, size_t len, const char *name,
			  const msb_config_options *options, msb_config **out, msb_error *err);
/* Close every backend, unload every plugin, free the tree. NULL is fine. */
void msb_config_free(msb_config *cfg);

const char *msb_config_file(const msb_config *cfg);
const msb_node *msb_config_root(const msb_config *cfg);
/* The plugin search path the file states (":"-joined), or NULL. */
const char *msb_config_plugin_path(const msb_config *cfg);
msb_loader *msb_config_loader(const msb_config *cfg);

/* The router options the file states, with the observer and warning callback filled in. */
const msb_router_options *msb_config_router_options(const msb_config *cfg);
/* Build a router over the opened backends with those options. The config must outlive it. */
msb_errc msb_config_router(msb_config *cfg, msb_router **out, msb_error *err);

/* Backends in registration order (empty when loaded with open_backends false). */
size_t msb_config_backend_count(const msb_config *cfg);
msb_backend *msb_config_backend_at(const msb_config *cfg, size_t i);
/* The backend entry each plugin was loaded for (in registration order), and its node. */
size_t msb_config_plugin_count(const msb_config *cfg);
const msb_plugin *msb_config_plugin_at(const msb_config *cfg, size_t i);
const msb_node *msb_config_backend_node(const msb_config *cfg, size_t i);

/* Specs in file order. Strings are owned by the config. */
size_t msb_config_spec_count(const msb_config *cfg);
const msb_spec *msb_config_spec_at(const msb_config *cfg, size_t i);
/* The spec of `kind`, or NULL. */
const msb_spec *msb_config_spec(const msb_config *cfg, const char *kind);
/* As msb_config_spec, refusing (MSB_E_VALUE) an unknown kind by naming the ones the file has. */
msb_errc msb_config_spec_find(const msb_config *cfg, const char *kind, const msb_spec **out,
			      msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
