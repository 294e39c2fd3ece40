/*
 * config_internal.h — what the sandbox.yaml reader's files share inside libmsb: the arena
 * that owns a parsed document and everything built from it, and the positioned refusal
 * helpers. Private to core/lib/config*.c and yaml*.c; the public view is msb/config.h.
 *
 * Why an arena: a loaded configuration is thousands of small strings and nodes that all
 * live exactly as long as the msb_config does, and the specs built from it borrow them.
 * One owner freed once cannot leak a piece on an error path half-way through a mapping.
 */
#ifndef MSB_CONFIG_INTERNAL_H
#define MSB_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/config.h>
#include <msb/node.h>

typedef struct msb_arena msb_arena;

msb_arena *msb_arena_new(void);
void msb_arena_free(msb_arena *arena);
/* Zeroed memory that lives until msb_arena_free; NULL when out of memory. */
void *msb_arena_alloc(msb_arena *arena, size_t size);
char *msb_arena_strndup(msb_arena *arena, const char *s, size_t n);
/* Bytes handed out so far (what the reader holds a document's budget against). */
size_t msb_arena_total(const msb_arena *arena);
char *msb_arena_strdup(msb_arena *arena, const char *s);
char *msb_arena_printf(msb_arena *arena, const char *fmt, ...) MSB_PRINTF(2, 3);

/* The document's arena, so the schema reader allocates what it builds beside the tree. */
msb_arena *msb_config_doc_arena(msb_config_doc *doc);

/*
 * Refuse at `at` with MSB_E_CONFIG: "file:line:column: key.path: " + sentence. `at` may be
 * NULL (no position known).
 */
msb_errc msb_config_refuse(msb_error *err, const msb_node *at, const char *fmt, ...)
	MSB_PRINTF(3, 4);
/*
 * Turn an error some other layer raised about a value (a vocabulary word, a size) into a
 * positioned MSB_E_CONFIG refusal, keeping its sentence word for word.
 */
msb_errc msb_config_reposition(msb_error *err, const msb_node *at);
/* The position of a map's key rather than its value (an unknown or misplaced key). */
msb_node msb_config_key_at(const msb_node *map, size_t i);

/* ---- positioned reads of one value node (config_read.c) ------------------------------ */

/* Refuse a node that is not a scalar: "expected <expected>, found a mapping". */
msb_errc msb_config_scalar(const msb_node *n, const char *expected, msb_error *err);
/* Refuse a node that is not a mapping: "expected <expected>, found a sequence". */
msb_errc msb_config_map(const msb_node *n, const char *expected, msb_error *err);
/*
 * Refuse a key not in `allowed` (NULL-terminated), at the key's own position, naming what
 * the mapping takes and the nearest known key when the unknown one looks like a typo.
 */
msb_errc msb_config_keys(const msb_node *map, const char *const *allowed, msb_error *err);
msb_errc msb_config_string(const msb_node *n, const char **out, msb_error *err);
msb_errc msb_config_bool(const msb_node *n, bool *out, msb_error *err);
msb_errc msb_config_uint(const msb_node *n, uint64_t *out, msb_error *err);
msb_errc msb_config_size(const msb_node *n, uint64_t *out, msb_error *err);
/* One vocabulary word, keeping msb_word_parse's sentence (the retired 'process' included). */
msb_errc msb_config_word(const msb_node *n, msb_axis axis, int *value, msb_error *err);
/*
 * A sequence of words of one axis: refuses an unknown word or one listed twice at the
 * item's position. *words (optional) receives the words as a NULL-terminated arena array.
 */
msb_errc msb_config_words(msb_arena *arena, const msb_node *n, msb_axis axis, msb_set *set,
			  const char *const **words, msb_error *err);
/* A sequence of strings as a NULL-terminated arena array. */
msb_errc msb_config_strings(msb_arena *arena, const msb_node *n, const char *const **out,
			    msb_error *err);
/*
 * A transfer-limits mapping (max_bytes_per_file, max_total_bytes: sizes; max_files: a whole
 * number). Fields not written keep *limits' values; *stated gets a bit per field written.
 */
msb_errc msb_config_limits(const msb_node *n, msb_transfer_limits *limits, unsigned *stated,
			   msb_error *err);

/* ---- the loaded configuration (config_load.c and its parts) -------------------------- */

typedef struct msb_config_entry {
	const msb_node *node;          /* backends[i] */
	const msb_node *name_node;     /* may be NULL */
	const msb_node *plugin_node;
	const msb_node *config;        /* may be NULL */
	const msb_node *decl_node;     /* may be NULL */
	/* What `declarations:` states; NULL fields are unstated, as in a descriptor. */
	msb_declarations narrow;
	msb_transfer_limits limits_in, limits_out;
	unsigned limits_in_stated, limits_out_stated;
	const msb_node *limits_node;
	bool observes_egress;
	const char *resolved;          /* the plugin file, after msb_plugin_resolve */
	const msb_plugin *plugin;
	msb_backend *backend;
} msb_config_entry;

struct msb_config {
	msb_config_doc *doc;
	msb_arena *arena;
	const char *file;
	const char *base_dir;          /* the file's directory: relative paths are read from it */
	const char *plugin_path;       /* ':'-joined, or NULL */
	unsigned probe_ms;             /* msb_config_options.probe_timeout_ms */
	msb_router_options router;
	const msb_node *router_node;
	const msb_node *selected_node;
	msb_config_entry *entries;
	size_t n_entries;
	msb_backend **backends;        /* opened, in registration order */
	size_t n_backends;
	msb_spec *specs;
	size_t n_specs;
	msb_loader *loader;
	/* Warm pools (issue 22): `pool:` per spec (parallel to specs), `pool_dir:`. */
	unsigned *pool_sizes;
	const msb_node **pool_nodes;
	const char *pool_dir;
	const msb_node *pool_dir_node;
};

/* Phase 2 readers. */
msb_errc msb_config_read_router(msb_config *cfg, const msb_node *n, msb_error *err);
msb_errc msb_config_read_backends(msb_config *cfg, const msb_node *n, msb_error *err);
msb_errc msb_config_read_declarations(msb_config *cfg, msb_config_entry *e, msb_error *err);
/* After the entry's plugin is loaded: refuse a field that widens it, at that field's line. */
msb_errc msb_config_check_declarations(msb_config *cfg, msb_config_entry *e, msb_error *err);
msb_errc msb_config_read_specs(msb_config *cfg, const msb_node *n, msb_error *err);
/* `pool_dir:` (config_pool.c). */
msb_errc msb_config_read_pool_dir(msb_config *cfg, const msb_node *n, msb_error *err);
/* After msb_router_new: the warm pools the specs ask for, attached to `router`. */
msb_errc msb_config_attach_pools(msb_config *cfg, msb_router *router, msb_error *err);
/* At load, with backends open: refuse a pool no backend could serve (by building them). */
msb_errc msb_config_check_pools(msb_config *cfg, msb_error *err);
/* Phase 3: load the plugins; then (open_backends) initialise them. */
msb_errc msb_config_load_plugins(msb_config *cfg, msb_error *err);
/*
 * Narrow an opened backend's declarations (its instance's) by the entry's `declarations:`
 * (config_declarations.c): each widening refused at its field's line, unwritten limit
 * fields kept at the instance's ceiling.
 */
msb_errc msb_config_narrow_backend(msb_config *cfg, msb_config_entry *e, msb_error *err);
msb_errc msb_config_open_backends(msb_config *cfg, const msb_host *host, msb_error *err);

/*
 * Replace ${VAR} in `text` (refusing an unset or malformed one at `at`); $${ is a literal ${.
 * `len` <= `max`; a result longer than `max` bytes is refused (an expansion multiplies what
 * the file says).
 */
msb_errc msb_yaml_expand(msb_arena *arena, const msb_node *at, const char *text, size_t len,
			 size_t max, char **out, size_t *out_len, int *expanded, msb_error *err);

#endif
