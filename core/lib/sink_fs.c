/*
 * sink_fs.c — the file-system sink: land each artifact under a root, and nowhere else.
 *
 * This is msb's one boundary of its own, on the way out: guest-chosen names and bytes
 * written into a host directory. The seed's Python sink resolves a destination and then
 * writes it, and admits the gap between the two. Here the root is opened once as a directory
 * fd and every destination is created beneath it by msb/confine.h, which never follows a
 * link at any level and never re-resolves a path string, so a link planted before or during
 * delivery is refused (SandboxLandingNotConfined) rather than written through.
 *
 * What no fd-based lookup prevents: a process that can write both inside root and outside
 * it can rename a directory the write already opened out of root, and the write follows the
 * directory. That process already holds the outside; a guest's output never does.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/confine.h>
#include <msb/outputs.h>

#include "sink_internal.h"

typedef struct fs_sink {
	int root_fd;
	char *root;          /* canonical absolute path, for handles only */
	msb_landing_existing existing;
	char *display;       /* template; NULL: the default */
	bool sync;
} fs_sink;

static void fs_sink_destroy(void *ctx)
{
	fs_sink *s = ctx;
	if (!s)
		return;
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s->root);
	free(s->display);
	free(s);
}

/* Re-code what the confinement helper answered into the sink's own refusals. */
static msb_errc landing_refusal(const msb_artifact *a, msb_errc rc, msb_error *inner,
				msb_error *err)
{
	msb_errc out;
	if (rc == MSB_E_VALUE)
		/* Neither host path is named: this family may be shown to the model verbatim. */
		out = msb_error_set(err, MSB_E_LANDING_NOT_CONFINED,
				    "artifact '%s' does not stay inside the directory it lands in, so "
				    "it was not written (%s)",
				    a->name, msb_error_message(inner));
	else if (rc == MSB_E_LANDING_EXISTS)
		out = msb_error_set(err, MSB_E_LANDING_EXISTS,
				    "artifact '%s' is already there and this sink does not replace "
				    "what it finds (existing=replace lands over it): a name is not "
				    "fresh just because this call is",
				    a->name);
	else
		out = msb_error_set(err, rc, "file-system sink: artifact '%s' was not written: %s",
				    a->name, msb_error_message(inner));
	msb_error_clear(inner);
	return out;
}

/* The handle is the destination's absolute path: the host's, never shown to the model. */
static msb_errc fill_landed(const fs_sink *s, const msb_artifact *a, msb_landed_artifact *landed,
			    msb_error *err)
{
	char *handle = NULL;
	if (asprintf(&handle, "%s/%s", strcmp(s->root, "/") == 0 ? "" : s->root, a->name) < 0)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory landing '%s'", a->name);
	msb_errc rc = msb_sink_landed_fill(s->display, a, handle, NULL, landed, err);
	free(handle);
	return rc;
}

static msb_errc fs_sink_deliver(void *ctx, const msb_artifact *a, msb_landed_artifact *landed,
				msb_error *err)
{
	fs_sink *s = ctx;
	msb_errc rc = msb_validate_artifact_name(a->name, err);
	if (rc != MSB_OK)
		return rc;
	unsigned flags = MSB_CONFINE_CREATE_PARENTS;
	if (s->existing == MSB_LANDING_REFUSE)
		flags |= MSB_CONFINE_EXCLUSIVE;
	if (s->sync)
		flags |= MSB_CONFINE_SYNC;
	msb_error inner = MSB_ERROR_INIT;
	rc = msb_confine_write_file(s->root_fd, a->name, a->content, a->len, flags, &inner);
	if (rc != MSB_OK)
		return landing_refusal(a, rc, &inner, err);
	return fill_landed(s, a, landed, err);
}

msb_errc msb_file_system_sink_new(const char *root, const msb_file_system_sink_options *options,
				  msb_output_sink **out, msb_error *err)
{
	msb_file_system_sink_options opts = MSB_FILE_SYSTEM_SINK_OPTIONS_INIT;
	if (options) {
		if (options->struct_size < sizeof opts)
			return msb_error_set(err, MSB_E_VALUE,
					     "file-system sink options are %u bytes; this library "
					     "expects %zu (start from MSB_FILE_SYSTEM_SINK_OPTIONS_INIT)",
					     options->struct_size, sizeof opts);
		opts = *options;
	}
	if (!root || !root[0])
		return msb_error_set(err, MSB_E_VALUE, "file-system sink: no root directory given; "
				     "every artifact lands beneath the root the host names");
	msb_errc rc = msb_sink_display_check(opts.display, err);
	if (rc != MSB_OK)
		return rc;
	fs_sink *s = calloc(1, sizeof *s);
	msb_output_sink *sink = calloc(1, sizeof *sink);
	if (!s || !sink) {
		free(s);
		free(sink);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory for a file-system sink");
	}
	s->existing = opts.existing;
	s->sync = opts.sync;
	/* The root is the host's own choice, so its path may go through links; what lands
	 * beneath it may not. realpath once, and open that. */
	s->root = realpath(root, NULL);
	s->root_fd = s->root ? open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (s->root_fd < 0) {
		int e = errno;
		fs_sink_destroy(s);
		free(sink);
		return msb_error_set_errno(err, e == ENOENT ? MSB_E_NOT_FOUND : e == ENOTDIR ? MSB_E_NOT_DIR : MSB_E_OS,
					   e, "file-system sink: root '%s' cannot be opened as a directory", root);
	}
	if (opts.display && !(s->display = strdup(opts.display))) {
		fs_sink_destroy(s);
		free(sink);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory for a file-system sink");
	}
	*sink = (msb_output_sink)MSB_OUTPUT_SINK_INIT;
	sink->ctx = s;
	sink->deliver = fs_sink_deliver;
	sink->destroy = fs_sink_destroy;
	*out = sink;
	return MSB_OK;
}
