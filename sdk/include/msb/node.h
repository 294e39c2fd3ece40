/*
 * msb/node.h — a parsed configuration tree, with positions.
 *
 * sandbox.yaml is parsed once (in core, with libyaml) into this tree; a backend's `config:`
 * node reaches its init() as one, so a plugin reads its settings without linking a YAML
 * parser and reports a mistake with the same `file:line:column: key.path: …` shape the host
 * uses for everything else. The tree is read-only to its readers; core owns it.
 */
#ifndef MSB_NODE_H
#define MSB_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum msb_node_kind {
	MSB_NODE_SCALAR = 0,
	MSB_NODE_MAP,
	MSB_NODE_SEQ,
} msb_node_kind;

typedef struct msb_node msb_node;

typedef struct msb_node_pair {
	const char *key;
	unsigned key_line, key_column;
	msb_node *value;
} msb_node_pair;

struct msb_node {
	msb_node_kind kind;
	const char *file;     /* the file it came from, for messages; may be "<memory>" */
	const char *path;     /* its key path from the document root: "backends[0].config.root" */
	unsigned line, column; /* 1-based */
	bool plain;           /* a scalar written unquoted (so `null`, `~` and `` read as null) */
	const char *scalar;   /* MSB_NODE_SCALAR: the text */
	size_t len;           /* MSB_NODE_MAP: pairs; MSB_NODE_SEQ: items */
	msb_node_pair *pairs;
	msb_node **items;
};

/* The value under `key` in a map, or NULL (also NULL when `map` is NULL or not a map). */
const msb_node *msb_node_get(const msb_node *map, const char *key);
/* Whether the node is an unquoted null (`~`, `null`, or nothing). */
bool msb_node_is_null(const msb_node *node);

/*
 * Refuse a map key not in `allowed` (NULL-terminated), naming it with its position and the
 * keys the map takes: a typo must never read as "not stated".
 */
msb_errc msb_node_check_keys(const msb_node *map, const char *const *allowed, msb_error *err);
/*
 * The allowed key a typo most likely meant (within two edits, or `key` cut short), or NULL:
 * what msb_node_check_keys and sandbox.yaml's own checks suggest.
 */
const char *msb_node_nearest_key(const char *key, const char *const *allowed);

/*
 * Typed reads. Each takes the map and a key; an absent key leaves *out as it was (the
 * caller's default) and returns MSB_OK; a present one of the wrong shape is refused with
 * MSB_E_CONFIG naming file:line:column, the key path and what was expected.
 */
msb_errc msb_node_string(const msb_node *map, const char *key, const char **out, msb_error *err);
msb_errc msb_node_bool(const msb_node *map, const char *key, bool *out, msb_error *err);
msb_errc msb_node_uint(const msb_node *map, const char *key, uint64_t *out, msb_error *err);
/* A size: a whole number of bytes, or one with a unit (KiB MiB GiB KB MB GB, B). */
msb_errc msb_node_size(const msb_node *map, const char *key, uint64_t *out, msb_error *err);
/* A duration in seconds: "30", "1.5", "250ms", "2s", "5m"; at most MSB_SECONDS_MAX. */
#define MSB_SECONDS_MAX 1e9
msb_errc msb_node_seconds(const msb_node *map, const char *key, double *out, msb_error *err);
/* A number of CPUs for a CPU quota: 0 (none), or a decimal from 0.01 to 4096 ("0.5"). */
msb_errc msb_node_cpus(const msb_node *map, const char *key, double *out, msb_error *err);
/*
 * A sequence of scalars, returned as a NULL-terminated array of borrowed strings in one
 * allocation (free() it). *out is left alone when the key is absent.
 */
msb_errc msb_node_strings(const msb_node *map, const char *key, const char ***out, msb_error *err);

/* Parse a size or duration literal on its own (what the typed reads use). */
msb_errc msb_parse_size(const char *text, uint64_t *out, msb_error *err);
msb_errc msb_parse_seconds(const char *text, double *out, msb_error *err);

/* Refuse at a node's position: "file:line:column: path: " + the formatted sentence. */
msb_errc msb_node_error(msb_error *err, const msb_node *at, msb_errc code, const char *fmt, ...)
	MSB_PRINTF(4, 5);

#ifdef __cplusplus
}
#endif
#endif
