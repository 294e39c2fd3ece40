/*
 * vocab.c — every axis's words, written down exactly once. The enum order in msb/vocab.h is
 * each ordered axis's rank; this table only spells it.
 */
#include <stdio.h>
#include <string.h>

#include <msb/vocab.h>

typedef struct axis_words {
	const char *axis;
	int count;
	const char *const *words;
} axis_words;

static const char *const isolation_words[] = { "none", "runtime", "os_process", "container",
					       "hardened_container", "microvm", "vm" };
static const char *const egress_words[] = { "unrestricted", "allowlist", "closed" };
static const char *const capability_words[] = { "exec", "run_code", "host_tools",
						"files_in", "files_out", "files_list",
						"files_delete", "snapshot", "attached_identity" };
static const char *const os_family_words[] = { "posix", "windows" };
static const char *const scope_words[] = { "conversation", "call" };
static const char *const identity_words[] = { "app", "user" };
static const char *const disposal_words[] = { "refused", "timeout", "unreachable", "unlisted",
					      "unknown" };
static const char *const disposition_words[] = { "land", "consume" };
static const char *const entry_kind_words[] = { "file", "directory", "symlink", "other" };

#define AXIS(name, words, n) { name, n, words }
static const axis_words axes[MSB_AXIS__COUNT] = {
	[MSB_AXIS_ISOLATION] = AXIS("isolation", isolation_words, MSB_ISO__COUNT),
	[MSB_AXIS_EGRESS] = AXIS("egress mode", egress_words, MSB_EGRESS__COUNT),
	[MSB_AXIS_CAPABILITY] = AXIS("capability", capability_words, MSB_CAP__COUNT),
	[MSB_AXIS_OS_FAMILY] = AXIS("OS family", os_family_words, MSB_OS__COUNT),
	[MSB_AXIS_SCOPE] = AXIS("isolation scope", scope_words, MSB_SCOPE__COUNT),
	[MSB_AXIS_IDENTITY] = AXIS("identity", identity_words, MSB_IDENTITY__COUNT),
	[MSB_AXIS_DISPOSAL_CODE] = AXIS("disposal code", disposal_words, MSB_DISPOSAL__COUNT),
	[MSB_AXIS_DISPOSITION] = AXIS("output disposition", disposition_words, MSB_DISPOSITION__COUNT),
	[MSB_AXIS_ENTRY_KIND] = AXIS("entry kind", entry_kind_words, MSB_ENTRY__COUNT),
};

/* Compile-time check that every table has exactly one word per enum member. */
_Static_assert(sizeof isolation_words / sizeof *isolation_words == MSB_ISO__COUNT, "isolation");
_Static_assert(sizeof egress_words / sizeof *egress_words == MSB_EGRESS__COUNT, "egress");
_Static_assert(sizeof capability_words / sizeof *capability_words == MSB_CAP__COUNT, "caps");
_Static_assert(sizeof os_family_words / sizeof *os_family_words == MSB_OS__COUNT, "os");
_Static_assert(sizeof scope_words / sizeof *scope_words == MSB_SCOPE__COUNT, "scope");
_Static_assert(sizeof identity_words / sizeof *identity_words == MSB_IDENTITY__COUNT, "identity");
_Static_assert(sizeof disposal_words / sizeof *disposal_words == MSB_DISPOSAL__COUNT, "disposal");
_Static_assert(sizeof disposition_words / sizeof *disposition_words == MSB_DISPOSITION__COUNT, "disp");
_Static_assert(sizeof entry_kind_words / sizeof *entry_kind_words == MSB_ENTRY__COUNT, "entry");

static const axis_words *axis_get(msb_axis axis)
{
	return ((int)axis >= 0 && axis < MSB_AXIS__COUNT) ? &axes[axis] : NULL;
}

const char *msb_axis_name(msb_axis axis)
{
	const axis_words *a = axis_get(axis);
	return a ? a->axis : "unknown axis";
}

int msb_axis_count(msb_axis axis)
{
	const axis_words *a = axis_get(axis);
	return a ? a->count : 0;
}

const char *msb_word_name(msb_axis axis, int value)
{
	const axis_words *a = axis_get(axis);
	if (!a || value < 0 || value >= a->count)
		return NULL;
	return a->words[value];
}

static void words_join(const axis_words *a, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < a->count && used < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", a->words[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

msb_errc msb_word_parse(msb_axis axis, const char *word, int *value, msb_error *err)
{
	const axis_words *a = axis_get(axis);
	if (!a)
		return msb_error_set(err, MSB_E_VALUE, "unknown vocabulary axis %d", (int)axis);
	if (!word)
		return msb_error_set(err, MSB_E_VALUE, "no %s given", a->axis);
	for (int i = 0; i < a->count; i++) {
		if (strcmp(a->words[i], word) == 0) {
			*value = i;
			return MSB_OK;
		}
	}
	if (axis == MSB_AXIS_ISOLATION && strcmp(word, "process") == 0)
		return msb_error_set(err, MSB_E_VALUE,
				     "'process' is a retired isolation rung and is not 'os_process': "
				     "it once meant no boundary at all (now 'none'), and reading it as "
				     "a separate OS process would rank it two rungs higher than it "
				     "claimed; declare 'none' or 'os_process' for what the backend draws");
	char known[256];
	words_join(a, known, sizeof known);
	return msb_error_set(err, MSB_E_VALUE, "unknown %s '%s' (known: %s)", a->axis, word, known);
}

msb_errc msb_set_parse(msb_axis axis, const char *const *words, msb_set *set, msb_error *err)
{
	msb_set out = 0;
	for (size_t i = 0; words && words[i]; i++) {
		int v;
		msb_errc rc = msb_word_parse(axis, words[i], &v, err);
		if (rc != MSB_OK)
			return rc;
		if (out & MSB_BIT(v))
			return msb_error_set(err, MSB_E_VALUE, "%s '%s' is listed twice",
					     msb_axis_name(axis), words[i]);
		out |= MSB_BIT(v);
	}
	*set = out;
	return MSB_OK;
}

int msb_set_format(msb_axis axis, msb_set set, char *buf, size_t size)
{
	const axis_words *a = axis_get(axis);
	int total = 0;
	if (size)
		buf[0] = '\0';
	if (!a)
		return 0;
	for (int i = 0; i < a->count; i++) {
		if (!(set & MSB_BIT(i)))
			continue;
		size_t at = (size_t)total < size ? (size_t)total : size;
		int n = snprintf(buf + at, size - at, "%s%s", total ? ", " : "", a->words[i]);
		if (n < 0)
			return total;
		total += n;
	}
	return total;
}
