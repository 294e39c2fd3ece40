/*
 * sink_store.c — the file-store sink: each artifact lands at "<call_id>/<name>" in a host's
 * store, recorded before it is written, and only when it is text.
 *
 * The order of one delivery is the contract, and each step is where it is for a reason:
 *   1. the name and the call id are checked, so nothing below sees a path that could climb;
 *   2. bytes that are not UTF-8 are refused (SandboxLandingNotText): the store holds text a
 *      model reads back, and re-coding guest bytes would hand it something the guest never
 *      wrote;
 *   3. an existing destination is refused (SandboxLandingExists), never replaced: a store more
 *      than one call lands in is a channel between them if a landing can overwrite;
 *   4. the landing is recorded into provenance — before the write, so nothing ever reaches
 *      the store unrecorded, and a landing whose record failed is not written at all;
 *   5. the store's own exclusive put writes it, so a destination taken between 3 and 5 is
 *      still SandboxLandingExists rather than a replacement.
 * Steps 2 and 3 run before 4 so that provenance holds only what was really meant to land.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <unistr.h>

#include <msb/outputs.h>
#include <msb/store.h>

#include "sink_internal.h"

typedef struct store_sink {
	const msb_file_store *store; /* borrowed */
	msb_errc (*provenance)(void *ctx, const msb_landing_record *record, msb_error *err);
	void *provenance_ctx;
	char *display;
} store_sink;

static void store_sink_destroy(void *ctx)
{
	store_sink *s = ctx;
	if (s)
		free(s->display);
	free(s);
}

static msb_errc sha256_hex(const unsigned char *data, size_t len, char out[65], msb_error *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
		return msb_error_set(err, MSB_E_OS, "file-store sink: libcrypto could not digest "
				     "an artifact for its provenance record");
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
	return MSB_OK;
}

/* The call id is host-minted, but it becomes a path component: it must be exactly one. */
static msb_errc check_call_id(const char *call_id, const char *name, msb_error *err)
{
	if (!call_id || !*call_id)
		return msb_error_set(err, MSB_E_VALUE,
				     "file-store sink: artifact '%s' came with no call id; this sink "
				     "lands '<call_id>/<name>' and is per_call, so collect with the "
				     "host-minted call id",
				     name);
	if (strchr(call_id, '/') || msb_validate_artifact_name(call_id, NULL) != MSB_OK)
		return msb_error_set(err, MSB_E_VALUE,
				     "file-store sink: call id '%s' is not a single path component, so "
				     "'%s' was not landed",
				     call_id, name);
	return MSB_OK;
}

static msb_errc store_sink_deliver(void *ctx, const msb_artifact *a, msb_landed_artifact *landed,
				   msb_error *err)
{
	store_sink *s = ctx;
	msb_errc rc = msb_validate_artifact_name(a->name, err);
	if (rc == MSB_OK)
		rc = check_call_id(a->call_id, a->name, err);
	if (rc != MSB_OK)
		return rc;
	if (a->len && u8_check(a->content, a->len) != NULL)
		return msb_error_set(err, MSB_E_LANDING_NOT_TEXT,
				     "artifact '%s' is not UTF-8 text, and the file store holds text: "
				     "it was refused rather than re-coded (%zu bytes)",
				     a->name, a->len);
	size_t n = strlen(a->call_id) + 1 + strlen(a->name) + 1;
	char *path = malloc(n);
	if (!path)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory landing '%s'", a->name);
	snprintf(path, n, "%s/%s", a->call_id, a->name);

	bool there = false;
	if ((rc = s->store->exists(s->store->ctx, path, &there, err)) != MSB_OK) {
		msb_error_prefix(err, "file-store sink: could not tell whether '%s' exists: ", path);
		goto out;
	}
	if (there) {
		rc = msb_error_set(err, MSB_E_LANDING_EXISTS,
				   "artifact '%s' is already in the store at '%s', and the file-store "
				   "sink never replaces what it finds",
				   a->name, path);
		goto out;
	}
	if (s->provenance) {
		msb_landing_record rec = {
			.path = path,
			.name = a->name,
			.call_id = a->call_id,
			.kind = a->kind,
			.media_type = a->media_type,
			.bytes = a->len,
		};
		if ((rc = sha256_hex(a->content, a->len, rec.sha256, err)) != MSB_OK)
			goto out;
		msb_error why = MSB_ERROR_INIT;
		if ((rc = s->provenance(s->provenance_ctx, &rec, &why)) != MSB_OK) {
			rc = msb_error_set(err, rc,
					   "artifact '%s' was not landed: its provenance record could "
					   "not be made (%s), and nothing lands unrecorded",
					   a->name, why.code ? msb_error_message(&why) : "no reason given");
			msb_error_clear(&why);
			goto out;
		}
	}
	if ((rc = s->store->put(s->store->ctx, path, a->content, a->len, err)) != MSB_OK) {
		if (rc != MSB_E_LANDING_EXISTS)
			msb_error_prefix(err, "file-store sink: '%s' was not written: ", path);
		goto out;
	}
	/* the display names the store path: it is what the model reads the file back by */
	rc = msb_sink_landed_fill(s->display, a, path, path, landed, err);
out:
	free(path);
	return rc;
}

msb_errc msb_file_store_sink_new(const msb_file_store *store,
				 const msb_file_store_sink_options *options, msb_output_sink **out,
				 msb_error *err)
{
	*out = NULL;
	msb_file_store_sink_options opts = MSB_FILE_STORE_SINK_OPTIONS_INIT;
	if (options) {
		if (options->struct_size < sizeof opts)
			return msb_error_set(err, MSB_E_VALUE,
					     "file-store sink options are %u bytes; this library expects "
					     "%zu (start from MSB_FILE_STORE_SINK_OPTIONS_INIT)",
					     options->struct_size, sizeof opts);
		opts = *options;
	}
	if (!store || store->struct_size < sizeof(msb_file_store) || !store->put ||
	    !store->exists)
		return msb_error_set(err, MSB_E_VALUE,
				     "file-store sink: the store is missing, predates msb_file_store "
				     "(start from MSB_FILE_STORE_INIT), or has no put or exists");
	msb_errc rc = msb_sink_display_check(opts.display, err);
	if (rc != MSB_OK)
		return rc;
	store_sink *s = calloc(1, sizeof *s);
	msb_output_sink *sink = calloc(1, sizeof *sink);
	if (!s || !sink || (opts.display && !(s->display = strdup(opts.display)))) {
		store_sink_destroy(s);
		free(sink);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory for a file-store sink");
	}
	s->store = store;
	s->provenance = opts.provenance;
	s->provenance_ctx = opts.provenance_ctx;
	*sink = (msb_output_sink)MSB_OUTPUT_SINK_INIT;
	sink->ctx = s;
	sink->per_call = true; /* "<call_id>/<name>": collect_outputs must be given the id */
	sink->deliver = store_sink_deliver;
	sink->destroy = store_sink_destroy;
	*out = sink;
	return MSB_OK;
}
