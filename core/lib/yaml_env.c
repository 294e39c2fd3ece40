/*
 * yaml_env.c — `${VAR}` in sandbox.yaml values.
 *
 * An unset variable is refused rather than read as empty: a `root: ${STATE}/sandboxes` that
 * silently became `/sandboxes` is exactly the kind of default a typo must never reach. A
 * variable that is set but empty is taken as written (the operator said so). `$${` is the
 * escape for a literal `${`; any other `$` is literal.
 *
 * The result is bounded by what the document may still hold (the reader's budget): a line of
 * a thousand `${VAR}` over a long variable would otherwise make gigabytes of one value.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static bool name_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Append to a malloc'ed buffer; false when out of memory. */
static bool grow_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t want = (*cap ? *cap * 2 : 64);
		while (want < *len + n + 1)
			want *= 2;
		char *p = realloc(*buf, want);
		if (!p)
			return false;
		*buf = p;
		*cap = want;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return true;
}

static msb_errc refuse_too_long(const msb_node *at, size_t max, msb_error *err)
{
	return msb_config_refuse(err, at,
				 "value refused: its ${VAR} expansions would take the document past the "
				 "%u MiB a parsed sandbox.yaml may hold (%zu bytes were left)",
				 (unsigned)(MSB_CONFIG_MAX_TREE >> 20), max);
}

msb_errc msb_yaml_expand(msb_arena *arena, const msb_node *at, const char *text, size_t len,
			 size_t max, char **out, size_t *out_len, int *expanded, msb_error *err)
{
	*expanded = 0;
	if (!memchr(text, '$', len)) {
		*out = msb_arena_strndup(arena, text, len);
		*out_len = len;
		return *out ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	char *buf = NULL;
	size_t blen = 0, bcap = 0;
	msb_errc rc = MSB_OK;
	size_t i = 0;
	while (i < len && rc == MSB_OK) {
		const char *piece = text + i;
		size_t n = 1;
		if (text[i] == '$' && i + 2 < len && text[i + 1] == '$' && text[i + 2] == '{') {
			piece = "${";
			n = 2;
			i += 3;
			*expanded = 1;
		} else if (text[i] == '$' && i + 1 < len && text[i + 1] == '{') {
			size_t start = i + 2, end = start;
			while (end < len && name_char(text[end]))
				end++;
			if (end == len || text[end] != '}' || end == start || !name_start(text[start])) {
				rc = msb_config_refuse(err, at,
						       "malformed variable reference in '%.*s': expected ${NAME} with NAME "
						       "made of letters, digits and '_' (write $${ for a literal ${)",
						       (int)len, text);
				break;
			}
			/* The whole name, however long: a cut one would read some other variable. */
			char *name = strndup(text + start, end - start);
			if (!name) {
				rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
				break;
			}
			const char *value = getenv(name);
			if (!value)
				rc = msb_config_refuse(err, at,
						       "environment variable '%s' is not set (referenced as ${%s}); set it, "
						       "or write $${%s} for the literal text",
						       name, name, name);
			free(name);
			if (!value)
				break;
			piece = value;
			n = strlen(value);
			i = end + 1;
			*expanded = 1;
		} else {
			i++;
		}
		if (n > max - blen)
			rc = refuse_too_long(at, max, err);
		else if (!grow_append(&buf, &blen, &bcap, piece, n))
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	if (rc == MSB_OK) {
		*out = msb_arena_strndup(arena, buf ? buf : "", blen);
		*out_len = blen;
		if (!*out)
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	free(buf);
	return rc;
}
