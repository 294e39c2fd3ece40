/*
 * sink_display.c — the one line a model is shown for a landed artifact, from a host template.
 *
 * A template rather than a callback so that sandbox.yaml can carry it; a template rather than
 * a printf format so that a host string can never become a format-string bug. The host path
 * has no placeholder on purpose: the display reaches the transcript, the handle never does.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/outputs.h>

#include "sink_internal.h"

#define DEFAULT_DISPLAY "{name} ({bytes} bytes)"

typedef struct placeholder {
	const char *token;
	size_t len;
} placeholder;

static const placeholder placeholders[] = {
	{ "{name}", 6 },
	{ "{bytes}", 7 },
	{ "{media_type}", 12 },
};

/* Which placeholder starts at `p`, or -1. */
static int placeholder_at(const char *p)
{
	for (int i = 0; i < 3; i++)
		if (strncmp(p, placeholders[i].token, placeholders[i].len) == 0)
			return i;
	return -1;
}

msb_errc msb_sink_display_check(const char *tmpl, msb_error *err)
{
	if (!tmpl)
		return MSB_OK;
	for (const char *p = tmpl; *p; p++) {
		if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
			p++;
			continue;
		}
		if (*p == '{') {
			int i = placeholder_at(p);
			if (i < 0)
				return msb_error_set(err, MSB_E_VALUE,
						     "display template '%s' has an unknown placeholder at "
						     "'%.16s'; known: {name}, {bytes}, {media_type}",
						     tmpl, p);
			p += placeholders[i].len - 1;
		} else if (*p == '}') {
			return msb_error_set(err, MSB_E_VALUE,
					     "display template '%s' has a lone '}' (write '}}')", tmpl);
		}
	}
	return MSB_OK;
}

static msb_errc append(msb_buf *b, const char *s, size_t n, msb_error *err)
{
	return msb_buf_append(b, s, n, err);
}

msb_errc msb_sink_display_format(const char *tmpl, const msb_artifact *artifact, char **out,
				 msb_error *err)
{
	if (!tmpl)
		tmpl = DEFAULT_DISPLAY;
	msb_buf b = { 0 };
	msb_errc rc = MSB_OK;
	char bytes[32];
	snprintf(bytes, sizeof bytes, "%zu", artifact->len);
	for (const char *p = tmpl; *p && rc == MSB_OK; p++) {
		if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
			rc = append(&b, p, 1, err);
			p++;
			continue;
		}
		int i = *p == '{' ? placeholder_at(p) : -1;
		if (i < 0) {
			rc = append(&b, p, 1, err);
			continue;
		}
		const char *value = i == 0 ? artifact->name : i == 1 ? bytes : artifact->media_type;
		if (!value)
			value = "";
		rc = append(&b, value, strlen(value), err);
		p += placeholders[i].len - 1;
	}
	if (rc == MSB_OK && !b.data)
		rc = append(&b, "", 0, err);
	if (rc != MSB_OK) {
		msb_buf_free(&b);
		return rc;
	}
	*out = (char *)b.data;
	return MSB_OK;
}

msb_errc msb_sink_landed_fill(const char *tmpl, const msb_artifact *a, const char *handle,
			      const char *display_name, msb_landed_artifact *landed, msb_error *err)
{
	msb_landed_artifact l = { 0 };
	l.name = strdup(a->name);
	l.media_type = a->media_type ? strdup(a->media_type) : NULL;
	l.handle = handle ? strdup(handle) : NULL;
	msb_errc rc = MSB_OK;
	if (!l.name || (handle && !l.handle) || (a->media_type && !l.media_type)) {
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory landing '%s'", a->name);
	} else {
		msb_artifact shown = *a;
		if (display_name)
			shown.name = display_name;
		rc = msb_sink_display_format(tmpl, &shown, &l.display, err);
	}
	if (rc != MSB_OK) {
		msb_landed_artifact_free(&l);
		return rc;
	}
	*landed = l;
	return MSB_OK;
}
