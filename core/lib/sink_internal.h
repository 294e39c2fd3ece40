/*
 * sink_internal.h — the display template the file-system sink renders.
 */
#ifndef MSB_SINK_INTERNAL_H
#define MSB_SINK_INTERNAL_H

#include <msb/outputs.h>

/* Refuse a template with an unknown placeholder or a lone '}'. NULL is the default (valid). */
msb_errc msb_sink_display_check(const char *tmpl, msb_error *err);
/* Render `tmpl` (NULL: the default) for `artifact`; *out heap-allocated. */
msb_errc msb_sink_display_format(const char *tmpl, const msb_artifact *artifact, char **out,
				 msb_error *err);

/*
 * Fill `landed` for an artifact that was delivered: its name and media type copied,
 * `handle` (the host's reference) copied, and the display rendered from `tmpl` with {name}
 * read as `display_name` (the artifact's own name when NULL). On failure nothing is kept.
 */
msb_errc msb_sink_landed_fill(const char *tmpl, const msb_artifact *artifact, const char *handle,
			      const char *display_name, msb_landed_artifact *landed, msb_error *err);

#endif
