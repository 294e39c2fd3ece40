/*
 * node.c — typed, positioned reads over a parsed configuration tree. Every refusal carries
 * `file:line:column: key.path:` so a host or a plugin author finds the mistake at once.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/node.h>

msb_errc msb_node_error(msb_error *err, const msb_node *at, msb_errc code, const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	va_start(ap, fmt);
	msb_error_vset(err, code, fmt, ap);
	va_end(ap);
	if (at)
		msb_error_prefix(err, "%s:%u:%u: %s: ", at->file ? at->file : "<memory>", at->line,
				 at->column, at->path && *at->path ? at->path : "(document)");
	return code;
}

const msb_node *msb_node_get(const msb_node *map, const char *key)
{
	if (!map || map->kind != MSB_NODE_MAP)
		return NULL;
	for (size_t i = 0; i < map->len; i++)
		if (strcmp(map->pairs[i].key, key) == 0)
			return map->pairs[i].value;
	return NULL;
}

bool msb_node_is_null(const msb_node *node)
{
	if (!node || node->kind != MSB_NODE_SCALAR || !node->plain)
		return node == NULL;
	const char *s = node->scalar;
	return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
	       strcmp(s, "NULL") == 0;
}

/* Edit distance, bounded: only "is this within two edits" matters for a suggestion. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 99;
	size_t prev[64], cur[64];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof *prev);
	}
	return prev[lb];
}

const char *msb_node_nearest_key(const char *key, const char *const *allowed)
{
	const char *nearest = NULL;
	size_t best = 3;
	for (size_t j = 0; allowed[j]; j++) {
		size_t d = distance(key, allowed[j]);
		if (d < best) {
			best = d;
			nearest = allowed[j];
		}
	}
	/* Failing a near spelling, a key cut short ("egress" for egress_modes) is a likely slip. */
	for (size_t j = 0; !nearest && allowed[j]; j++)
		if (strlen(key) >= 4 && strncmp(key, allowed[j], strlen(key)) == 0)
			nearest = allowed[j];
	return nearest;
}

msb_errc msb_node_check_keys(const msb_node *map, const char *const *allowed, msb_error *err)
{
	if (!map)
		return MSB_OK;
	if (map->kind != MSB_NODE_MAP)
		return msb_node_error(err, map, MSB_E_CONFIG, "expected a mapping");
	for (size_t i = 0; i < map->len; i++) {
		bool ok = false;
		for (size_t j = 0; allowed[j] && !ok; j++)
			ok = strcmp(allowed[j], map->pairs[i].key) == 0;
		if (ok)
			continue;
		char known[512] = "";
		size_t used = 0;
		for (size_t j = 0; allowed[j] && used < sizeof known; j++) {
			int n = snprintf(known + used, sizeof known - used, "%s%s", j ? ", " : "", allowed[j]);
			if (n < 0)
				break;
			used += (size_t)n;
		}
		msb_node where = *map->pairs[i].value;
		where.line = map->pairs[i].key_line;
		where.column = map->pairs[i].key_column;
		const char *nearest = msb_node_nearest_key(map->pairs[i].key, allowed);
		if (nearest)
			return msb_node_error(err, &where, MSB_E_CONFIG,
					      "unknown key '%s' (did you mean '%s'?; this mapping takes: %s)",
					      map->pairs[i].key, nearest, known);
		return msb_node_error(err, &where, MSB_E_CONFIG, "unknown key '%s' (this mapping takes: %s)",
				      map->pairs[i].key, known);
	}
	return MSB_OK;
}

static msb_errc scalar_at(const msb_node *map, const char *key, const msb_node **out,
			  const char *expected, msb_error *err)
{
	const msb_node *n = msb_node_get(map, key);
	*out = n;
	if (!n)
		return MSB_OK;
	if (n->kind != MSB_NODE_SCALAR)
		return msb_node_error(err, n, MSB_E_CONFIG, "expected %s, found a %s", expected,
				      n->kind == MSB_NODE_MAP ? "mapping" : "sequence");
	return MSB_OK;
}

msb_errc msb_node_string(const msb_node *map, const char *key, const char **out, msb_error *err)
{
	const msb_node *n;
	msb_errc rc = scalar_at(map, key, &n, "a string", err);
	if (rc == MSB_OK && n)
		*out = n->scalar;
	return rc;
}

msb_errc msb_node_bool(const msb_node *map, const char *key, bool *out, msb_error *err)
{
	const msb_node *n;
	msb_errc rc = scalar_at(map, key, &n, "true or false", err);
	if (rc != MSB_OK || !n)
		return rc;
	if (strcmp(n->scalar, "true") == 0)
		*out = true;
	else if (strcmp(n->scalar, "false") == 0)
		*out = false;
	else
		return msb_node_error(err, n, MSB_E_CONFIG, "expected true or false, found '%s'", n->scalar);
	return MSB_OK;
}

static msb_errc parse_whole(const char *text, uint64_t *out, const char **rest)
{
	if (!isdigit((unsigned char)*text))
		return MSB_E_VALUE;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno == ERANGE)
		return MSB_E_VALUE;
	*out = v;
	*rest = end;
	return MSB_OK;
}

msb_errc msb_node_uint(const msb_node *map, const char *key, uint64_t *out, msb_error *err)
{
	const msb_node *n;
	msb_errc rc = scalar_at(map, key, &n, "a whole number", err);
	if (rc != MSB_OK || !n)
		return rc;
	const char *rest;
	uint64_t v;
	if (parse_whole(n->scalar, &v, &rest) != MSB_OK || *rest)
		return msb_node_error(err, n, MSB_E_CONFIG, "expected a whole number, found '%s'", n->scalar);
	*out = v;
	return MSB_OK;
}

msb_errc msb_parse_size(const char *text, uint64_t *out, msb_error *err)
{
	static const struct { const char *unit; uint64_t mult; } units[] = {
		{ "", 1 }, { "B", 1 }, { "KiB", 1024ull }, { "MiB", 1024ull * 1024 },
		{ "GiB", 1024ull * 1024 * 1024 }, { "TiB", 1024ull * 1024 * 1024 * 1024 },
		{ "KB", 1000ull }, { "MB", 1000ull * 1000 }, { "GB", 1000ull * 1000 * 1000 },
		{ "TB", 1000ull * 1000 * 1000 * 1000 },
	};
	const char *rest;
	uint64_t v;
	if (parse_whole(text, &v, &rest) != MSB_OK)
		goto bad;
	while (*rest == ' ')
		rest++;
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		if (strcmp(rest, units[i].unit) != 0)
			continue;
		if (v > UINT64_MAX / units[i].mult)
			return msb_error_set(err, MSB_E_VALUE, "size '%s' does not fit in 64 bits", text);
		*out = v * units[i].mult;
		return MSB_OK;
	}
bad:
	return msb_error_set(err, MSB_E_VALUE,
			     "'%s' is not a size (a whole number of bytes, optionally with B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)",
			     text);
}

msb_errc msb_parse_seconds(const char *text, double *out, msb_error *err)
{
	static const struct { const char *unit; double mult; } units[] = {
		{ "", 1 }, { "s", 1 }, { "ms", 0.001 }, { "m", 60 }, { "h", 3600 },
	};
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (end == text || errno || !isfinite(v) || v < 0 || !isdigit((unsigned char)*text))
		goto bad;
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		/* Every deadline is milliseconds in 64 bits; a longer wait would wrap around to
		 * an immediate one. */
		if (v * units[i].mult > MSB_SECONDS_MAX)
			return msb_error_set(err, MSB_E_VALUE,
					     "duration '%s' is longer than the longest msb keeps (%.0f s, "
					     "about 31 years)", text, MSB_SECONDS_MAX);
		*out = v * units[i].mult;
		return MSB_OK;
	}
bad:
	return msb_error_set(err, MSB_E_VALUE,
			     "'%s' is not a duration (seconds, optionally with ms, s, m or h)", text);
}

typedef msb_errc (*literal_parser)(const char *, void *, msb_error *);

static msb_errc typed_scalar(const msb_node *map, const char *key, void *out, const char *expected,
			     literal_parser parse, msb_error *err)
{
	const msb_node *n;
	msb_errc rc = scalar_at(map, key, &n, expected, err);
	if (rc != MSB_OK || !n)
		return rc;
	rc = parse(n->scalar, out, err);
	if (rc != MSB_OK) {
		/* Copied first: msb_node_error frees err's message before formatting into it. */
		char *why = strdup(msb_error_message(err));
		msb_node_error(err, n, MSB_E_CONFIG, "%s", why ? why : "unreadable value");
		free(why);
		return MSB_E_CONFIG;
	}
	return MSB_OK;
}

static msb_errc size_parser(const char *t, void *o, msb_error *e) { return msb_parse_size(t, o, e); }
static msb_errc seconds_parser(const char *t, void *o, msb_error *e) { return msb_parse_seconds(t, o, e); }

msb_errc msb_node_size(const msb_node *map, const char *key, uint64_t *out, msb_error *err)
{
	return typed_scalar(map, key, out, "a size", size_parser, err);
}

msb_errc msb_node_seconds(const msb_node *map, const char *key, double *out, msb_error *err)
{
	return typed_scalar(map, key, out, "a duration", seconds_parser, err);
}

msb_errc msb_node_cpus(const msb_node *map, const char *key, double *out, msb_error *err)
{
	const msb_node *n = msb_node_get(map, key);
	if (!n)
		return MSB_OK;
	char *end = NULL;
	double v = n->kind == MSB_NODE_SCALAR ? strtod(n->scalar, &end) : -1;
	/* An empty value is not "none", and NaN passes every comparison. */
	if (!end || end == n->scalar || *end || !isfinite(v) || v < 0 || v > 4096)
		return msb_node_error(err, n, MSB_E_CONFIG,
				      "expected a number of CPUs (e.g. 0.5, 2), or 0 for none");
	/* A quota under the kernel's 1 ms per 100 ms period would be raised to it, unsaid. */
	if (v > 0 && v < 0.01)
		return msb_node_error(err, n, MSB_E_CONFIG,
				      "%s CPUs is below the kernel's smallest quota, 0.01 (1 ms of "
				      "every 100 ms); use 0 for none", n->scalar);
	*out = v;
	return MSB_OK;
}

msb_errc msb_node_strings(const msb_node *map, const char *key, const char ***out, msb_error *err)
{
	const msb_node *n = msb_node_get(map, key);
	if (!n)
		return MSB_OK;
	if (n->kind != MSB_NODE_SEQ)
		return msb_node_error(err, n, MSB_E_CONFIG, "expected a sequence of strings");
	const char **list = calloc(n->len + 1, sizeof *list);
	if (!list)
		return msb_node_error(err, n, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		if (n->items[i]->kind != MSB_NODE_SCALAR) {
			free(list);
			return msb_node_error(err, n->items[i], MSB_E_CONFIG, "expected a string");
		}
		list[i] = n->items[i]->scalar;
	}
	*out = list;
	return MSB_OK;
}
