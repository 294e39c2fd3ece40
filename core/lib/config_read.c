/*
 * config_read.c — reading one sandbox.yaml value as the schema expects it, refusing at the
 * value's own position with what was found and what was expected. The schema files
 * (config_router.c, config_backends.c, config_specs.c) read through these and nothing else,
 * so every refusal has one shape.
 */
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

static const char *kind_name(const msb_node *n)
{
	switch (n->kind) {
	case MSB_NODE_MAP: return "a mapping";
	case MSB_NODE_SEQ: return "a sequence";
	default: return msb_node_is_null(n) ? "nothing (null)" : "a scalar";
	}
}

msb_errc msb_config_scalar(const msb_node *n, const char *expected, msb_error *err)
{
	if (n->kind != MSB_NODE_SCALAR)
		return msb_config_refuse(err, n, "expected %s, found %s", expected, kind_name(n));
	return MSB_OK;
}

msb_errc msb_config_map(const msb_node *n, const char *expected, msb_error *err)
{
	if (n->kind != MSB_NODE_MAP)
		return msb_config_refuse(err, n, "expected %s, found %s", expected, kind_name(n));
	return MSB_OK;
}

msb_errc msb_config_keys(const msb_node *map, const char *const *allowed, msb_error *err)
{
	for (size_t i = 0; i < map->len; i++) {
		const char *key = map->pairs[i].key;
		bool ok = false;
		for (size_t j = 0; allowed[j] && !ok; j++)
			ok = strcmp(allowed[j], key) == 0;
		if (ok)
			continue;
		char known[512] = "";
		size_t used = 0;
		for (size_t j = 0; allowed[j] && used < sizeof known; j++) {
			int n = snprintf(known + used, sizeof known - used, "%s%s", j ? ", " : "", allowed[j]);
			used += n > 0 ? (size_t)n : 0;
		}
		const char *nearest = msb_node_nearest_key(key, allowed);
		msb_node at = msb_config_key_at(map, i);
		if (nearest)
			return msb_config_refuse(err, &at,
						 "unknown key '%s' (did you mean '%s'?); expected one of: %s",
						 key, nearest, known);
		return msb_config_refuse(err, &at, "unknown key '%s'; expected one of: %s", key, known);
	}
	return MSB_OK;
}

msb_errc msb_config_string(const msb_node *n, const char **out, msb_error *err)
{
	msb_errc rc = msb_config_scalar(n, "a string", err);
	if (rc != MSB_OK)
		return rc;
	if (msb_node_is_null(n))
		return msb_config_refuse(err, n, "expected a string, found nothing (null)");
	*out = n->scalar;
	return MSB_OK;
}

msb_errc msb_config_bool(const msb_node *n, bool *out, msb_error *err)
{
	msb_errc rc = msb_config_scalar(n, "true or false", err);
	if (rc != MSB_OK)
		return rc;
	/* Only the two words: YAML 1.1's yes/no/on/off are exactly the kind of guess refused here. */
	if (strcmp(n->scalar, "true") == 0)
		*out = true;
	else if (strcmp(n->scalar, "false") == 0)
		*out = false;
	else
		return msb_config_refuse(err, n, "expected true or false, found '%s'", n->scalar);
	return MSB_OK;
}

msb_errc msb_config_uint(const msb_node *n, uint64_t *out, msb_error *err)
{
	msb_errc rc = msb_config_scalar(n, "a whole number", err);
	if (rc != MSB_OK)
		return rc;
	const char *s = n->scalar;
	uint64_t v = 0;
	bool any = false;
	for (; *s >= '0' && *s <= '9'; s++, any = true) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return msb_config_refuse(err, n, "'%s' does not fit in 64 bits", n->scalar);
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (!any || *s)
		return msb_config_refuse(err, n, "expected a whole number, found '%s'", n->scalar);
	*out = v;
	return MSB_OK;
}

msb_errc msb_config_size(const msb_node *n, uint64_t *out, msb_error *err)
{
	msb_errc rc = msb_config_scalar(n, "a size such as 8MiB", err);
	if (rc != MSB_OK)
		return rc;
	if (msb_parse_size(n->scalar, out, err) != MSB_OK)
		return msb_config_reposition(err, n);
	return MSB_OK;
}

msb_errc msb_config_word(const msb_node *n, msb_axis axis, int *value, msb_error *err)
{
	char expected[64];
	snprintf(expected, sizeof expected, "one %s word", msb_axis_name(axis));
	msb_errc rc = msb_config_scalar(n, expected, err);
	if (rc != MSB_OK)
		return rc;
	if (msb_word_parse(axis, n->scalar, value, err) != MSB_OK)
		return msb_config_reposition(err, n);
	return MSB_OK;
}

msb_errc msb_config_words(msb_arena *arena, const msb_node *n, msb_axis axis, msb_set *set,
			  const char *const **words, msb_error *err)
{
	if (n->kind != MSB_NODE_SEQ)
		return msb_config_refuse(err, n, "expected a sequence of %s words (e.g. [%s]), found %s",
					 msb_axis_name(axis), msb_word_name(axis, 0), kind_name(n));
	const char **list = msb_arena_alloc(arena, (n->len + 1) * sizeof *list);
	if (!list)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	msb_set out = 0;
	for (size_t i = 0; i < n->len; i++) {
		int v;
		msb_errc rc = msb_config_word(n->items[i], axis, &v, err);
		if (rc != MSB_OK)
			return rc;
		if (out & MSB_BIT(v))
			return msb_config_refuse(err, n->items[i],
						 "%s '%s' is listed twice; a set names each word once",
						 msb_axis_name(axis), n->items[i]->scalar);
		out |= MSB_BIT(v);
		list[i] = n->items[i]->scalar;
	}
	*set = out;
	if (words)
		*words = list;
	return MSB_OK;
}

msb_errc msb_config_strings(msb_arena *arena, const msb_node *n, const char *const **out,
			    msb_error *err)
{
	if (n->kind != MSB_NODE_SEQ)
		return msb_config_refuse(err, n, "expected a sequence of strings, found %s", kind_name(n));
	const char **list = msb_arena_alloc(arena, (n->len + 1) * sizeof *list);
	if (!list)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		msb_errc rc = msb_config_string(n->items[i], &list[i], err);
		if (rc != MSB_OK)
			return rc;
	}
	*out = list;
	return MSB_OK;
}

msb_errc msb_config_limits(const msb_node *n, msb_transfer_limits *limits, unsigned *stated,
			   msb_error *err)
{
	static const char *const keys[] = { "max_bytes_per_file", "max_total_bytes", "max_files", NULL };
	msb_errc rc = msb_config_map(n, "a mapping of max_bytes_per_file, max_total_bytes, max_files", err);
	if (rc == MSB_OK)
		rc = msb_config_keys(n, keys, err);
	const msb_node *v;
	*stated = 0;
	if (rc == MSB_OK && (v = msb_node_get(n, "max_bytes_per_file"))) {
		rc = msb_config_size(v, &limits->max_bytes_per_file, err);
		*stated |= 1u;
	}
	if (rc == MSB_OK && (v = msb_node_get(n, "max_total_bytes"))) {
		rc = msb_config_size(v, &limits->max_total_bytes, err);
		*stated |= 2u;
	}
	if (rc == MSB_OK && (v = msb_node_get(n, "max_files"))) {
		rc = msb_config_uint(v, &limits->max_files, err);
		*stated |= 4u;
	}
	return rc;
}
