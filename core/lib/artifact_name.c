/*
 * artifact_name.c — the narrow invariant a landing name meets, and the key two names that
 * are one file at the destination share.
 *
 * Both the name and the bytes are the guest's, and this is where a name first reaches host
 * state. The invariant is deliberately narrow: what is legal at a destination differs between
 * a blob container, NTFS and a file store, so a library that guessed would be wrong for two
 * of the three. Unicode work is libunistring's, never a hand-made table: a table would be
 * stale for the next Unicode version and wrong in ways no test here would notice.
 */
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <uninorm.h>
#include <unistr.h>

#include <msb/outputs.h>

#include "outputs_internal.h"

static msb_errc refuse(msb_error *err, const char *name, const char *why)
{
	return msb_error_set(err, MSB_E_ARTIFACT_NAME_INVALID, "artifact name '%s' %s", name, why);
}

static msb_errc check_segments(const char *name, msb_error *err)
{
	for (const char *seg = name;;) {
		size_t n = strcspn(seg, "/");
		if (n == 2 && seg[0] == '.' && seg[1] == '.')
			return refuse(err, name, "contains a '..' traversal segment");
		if (n == 0 || (n == 1 && seg[0] == '.'))
			return refuse(err, name,
				      "contains an empty or '.' segment, which names no directory of its "
				      "own: it is the same file as the spelling without it, and two "
				      "spellings of one file would land as two artifacts");
		if (seg[n] == '\0')
			return MSB_OK;
		seg += n + 1;
	}
}

msb_errc msb_validate_artifact_name(const char *name, msb_error *err)
{
	if (!name || !name[0])
		return msb_error_set(err, MSB_E_ARTIFACT_NAME_INVALID, "an artifact name must be a non-empty relative path");
	if (strchr(name, '\\'))
		return refuse(err, name,
			      "contains a backslash; the protocol has one path grammar and '\\' is not "
			      "a separator in it, whatever the guest or the host runs");
	if (name[0] == '/')
		return refuse(err, name,
			      "is absolute, and a landing name is relative: where it lands is the "
			      "host's to decide, not the guest's");
	msb_errc rc = check_segments(name, err);
	if (rc != MSB_OK)
		return rc;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20)
			return msb_error_set(err, MSB_E_ARTIFACT_NAME_INVALID,
					     "artifact name '%s' contains a control character (ASCII "
					     "%u); no filesystem accepts one",
					     name, (unsigned)*p);
	size_t len = strlen(name);
	if (u8_check((const uint8_t *)name, len) != NULL)
		return refuse(err, name,
			      "is not valid UTF-8, the interchange form for every name crossing "
			      "this boundary");
	if (len > MSB_MAX_ARTIFACT_NAME_BYTES)
		return msb_error_set(err, MSB_E_ARTIFACT_NAME_INVALID,
				     "artifact name '%s' is %zu bytes of UTF-8, over the %d-byte ceiling",
				     name, len, MSB_MAX_ARTIFACT_NAME_BYTES);
	return MSB_OK;
}

/* Copy libunistring's counted result into a NUL-terminated string. */
static msb_errc terminate(uint8_t *res, size_t n, const char *name, char **out, msb_error *err)
{
	if (!res)
		return msb_error_set(err, MSB_E_NOMEM, "normalising artifact name '%s' failed", name);
	char *s = malloc(n + 1);
	if (!s) {
		free(res);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory normalising '%s'", name);
	}
	memcpy(s, res, n);
	s[n] = '\0';
	free(res);
	*out = s;
	return MSB_OK;
}

msb_errc msb_artifact_name_nfc(const char *name, char **out, msb_error *err)
{
	size_t n = 0;
	uint8_t *res = u8_normalize(UNINORM_NFC, (const uint8_t *)name, strlen(name), NULL, &n);
	return terminate(res, n, name, out, err);
}

msb_errc msb_artifact_collision_key(const char *name, char **key, msb_error *err)
{
	/* u8_tolower with UNINORM_NFC lower-cases and composes in one pass, so NFC and NFD
	 * spellings of one name, in either case, meet at one key. */
	size_t n = 0;
	uint8_t *res = u8_tolower((const uint8_t *)name, strlen(name), NULL, UNINORM_NFC, NULL, &n);
	return terminate(res, n, name, key, err);
}
