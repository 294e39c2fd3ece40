/*
 * env.c — checking one "NAME=value" environment entry of a per-exec environment.
 *
 * Names are checked and values are not: a name outside [A-Za-z_][A-Za-z0-9_]* is one a
 * shell cannot read back and that several programs parse differently (an entry "=x", or
 * "A-B=x", is silently dropped by some and kept by others), so a typo would read as "not
 * set" in one guest and set in another. Values are the caller's bytes, opaque here.
 */
#include <stddef.h>

#include <msb/stream.h>

static int name_char(char c, int first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (!first && c >= '0' && c <= '9');
}

int msb_env_entry_valid(const char *entry, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (!entry || !*entry || *entry == '=') {
		*why = "has no name";
		return 0;
	}
	for (const char *p = entry; *p != '='; p++) {
		if (!*p) {
			*why = "has no '=' (NAME=value)";
			return 0;
		}
		if (!name_char(*p, p == entry)) {
			*why = "has a name that is not [A-Za-z_][A-Za-z0-9_]*";
			return 0;
		}
	}
	return 1;
}
