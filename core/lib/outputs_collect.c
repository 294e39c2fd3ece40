/*
 * outputs_collect.c — msb_collect_outputs: the seed's four phases, in the seed's order.
 *
 * The order is the contract. (1) What the declaration alone decides is settled before the
 * sandbox is touched, so a kind whose outputs could never land is refused the same way
 * whatever the guest produced. (2) Every output is stat-ed and counted against all three
 * caps before any byte is read: ten thousand files one byte under the per-file cap cost what
 * the cap was written to prevent. (3) The landing outputs are read, and re-counted, because a
 * stat is a promise about a file the guest may still rewrite. (4) Only then is anything
 * delivered: delivery is a push nothing can take back, so every refusal that can come before
 * it does.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <msb/outputs.h>

#include "outputs_internal.h"

typedef struct item {
	const msb_declared_output *decl;
	char *delivered; /* the name the sink receives; NULL unless it lands */
	char *key;       /* its collision key */
	bool present;
	uint64_t size;
	msb_buf content;
} item;

/* The three caps applied to one collection as it is measured. */
typedef struct tally {
	const msb_transfer_limits *limits;
	uint64_t files;
	uint64_t bytes;
} tally;

static msb_errc tally_add(tally *t, const char *path, uint64_t size, msb_error *err)
{
	const msb_transfer_limits *l = t->limits;
	if (size > l->max_bytes_per_file)
		return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
				     "declared output '%s' is %" PRIu64 " bytes, over this workload's "
				     "files_out max_bytes_per_file of %" PRIu64 "; the whole collection "
				     "is refused and nothing is delivered, because a partial set "
				     "reported as success hides what did not come back",
				     path, size, l->max_bytes_per_file);
	if (++t->files > l->max_files)
		return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
				     "declared output '%s' is file number %" PRIu64 " of a collection "
				     "this workload capped at files_out max_files of %" PRIu64,
				     path, t->files, l->max_files);
	t->bytes += size;
	if (t->bytes > l->max_total_bytes)
		return msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
				     "declared output '%s' brings the collection to %" PRIu64 " bytes, "
				     "over this workload's files_out max_total_bytes of %" PRIu64,
				     path, t->bytes, l->max_total_bytes);
	return MSB_OK;
}

static void items_free(item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(items[i].delivered);
		free(items[i].key);
		msb_buf_free(&items[i].content);
	}
	free(items);
}

/* ---- phase 1: the declaration alone ----------------------------------------------- */

static msb_errc check_sink(const msb_spec *spec, const item *items, size_t n,
			   const msb_output_sink *sink, const char *call_id, msb_error *err)
{
	bool lands = false;
	for (size_t i = 0; i < n && !lands; i++)
		lands = items[i].decl->disposition == MSB_DISPOSITION_LAND;
	if (!lands)
		return MSB_OK;
	if (!sink)
		return msb_error_set(err, MSB_E_OUTPUT_SINK_REQUIRED,
				     "the '%s' workload declares outputs that land and collect_outputs "
				     "was given no output sink, so it cannot "
				     "honour its own spec",
				     spec->kind);
	if (sink->struct_size < sizeof *sink || !sink->deliver)
		return msb_error_set(err, MSB_E_VALUE,
				     "collect_outputs refused the output sink given for the '%s' workload: "
				     "it is %u bytes or has no deliver, so nothing could land through it; "
				     "start it from MSB_OUTPUT_SINK_INIT",
				     spec->kind, sink->struct_size);
	if (sink->per_call && (!call_id || !call_id[0]))
		return msb_error_set(err, MSB_E_VALUE,
				     "the output sink files artifacts per call and collect_outputs was "
				     "given no call_id for the '%s' workload; without one a call's file "
				     "could answer for the next call's",
				     spec->kind);
	return MSB_OK;
}

static msb_errc name_one(item *it, const msb_output_sink *sink, msb_error *err)
{
	const msb_declared_output *d = it->decl;
	msb_errc rc = msb_validate_artifact_name(d->path, err);
	if (rc != MSB_OK || d->disposition != MSB_DISPOSITION_LAND)
		return rc;
	const char *name = d->name ? d->name : d->path;
	if (sink && sink->normalization == MSB_NAME_NONE)
		it->delivered = strdup(name);
	else if ((rc = msb_artifact_name_nfc(name, &it->delivered, err)) != MSB_OK)
		return rc;
	if (!it->delivered)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory naming '%s'", name);
	/* Checked in the spelling that is delivered: NFC can lengthen a name. */
	if (strcmp(it->delivered, d->path) != 0 &&
	    (rc = msb_validate_artifact_name(it->delivered, err)) != MSB_OK)
		return rc;
	return msb_artifact_collision_key(it->delivered, &it->key, err);
}

static msb_errc collision(const item *a, const item *b, msb_error *err)
{
	if (strcmp(a->delivered, b->delivered) == 0)
		return msb_error_set(err, MSB_E_ARTIFACT_NAME_COLLISION,
				     "declared outputs '%s' and '%s' both land as '%s'; refused with the "
				     "whole declaration in view, because the host receives artifacts one "
				     "at a time and could never see the collision",
				     a->decl->path, b->decl->path, a->delivered);
	return msb_error_set(err, MSB_E_ARTIFACT_NAME_COLLISION,
			     "declared outputs '%s' and '%s' land as '%s' and '%s', which differ only "
			     "by case or by Unicode normalisation form: one file on Windows and default "
			     "macOS, two on Linux",
			     a->decl->path, b->decl->path, a->delivered, b->delivered);
}

static msb_errc check_names(item *items, size_t n, const msb_output_sink *sink, msb_error *err)
{
	for (size_t i = 0; i < n; i++) {
		msb_errc rc = name_one(&items[i], sink, err);
		if (rc != MSB_OK)
			return rc;
		if (!items[i].key)
			continue;
		for (size_t j = 0; j < i; j++)
			if (items[j].key && strcmp(items[j].key, items[i].key) == 0)
				return collision(&items[j], &items[i], err);
	}
	return MSB_OK;
}

/* ---- phase 2: stat and cap --------------------------------------------------------- */

static const char *kind_word(msb_entry_kind k)
{
	return k == MSB_ENTRY_DIRECTORY ? "directory" : k == MSB_ENTRY_SYMLINK ? "symlink" : "non-regular";
}

static msb_errc stat_one(msb_sandbox *sandbox, const msb_spec *spec, item *it, tally *t,
			 msb_error *err)
{
	const char *path = it->decl->path;
	msb_entry entry = { 0 };
	bool found = false;
	msb_errc rc = msb_sandbox_stat_file(sandbox, path, spec->work_dir, &entry, &found, err);
	msb_entry_kind kind = entry.kind;
	int64_t size = entry.size_bytes;
	free(entry.path);
	if (rc != MSB_OK)
		return msb_error_prefix(err, "collect_outputs: declared output '%s': ", path);
	if (!found) {
		if (!it->decl->required)
			return MSB_OK;
		return msb_error_set(err, MSB_E_OUTPUT_MISSING,
				     "the '%s' workload declares '%s' as a required output and it is "
				     "not there; a workload for which an absence is normal declares it "
				     "required=false and gets the absence as its diagnostic",
				     spec->kind, path);
	}
	if (kind != MSB_ENTRY_FILE)
		return msb_error_set(err, MSB_E_OUTPUT_NOT_REGULAR,
				     "declared output '%s' is a %s entry and only a regular file is ever "
				     "read; a symlink is refused whatever its target, since that "
				     "judgement would be made with the guest's filesystem in view",
				     path, kind_word(kind));
	if (size < 0)
		return msb_error_set(err, MSB_E_OUTPUT_SIZE_UNKNOWN,
				     "declared output '%s' has no determinable size, so no cap can be "
				     "applied to it; refused rather than read as zero",
				     path);
	it->present = true;
	it->size = (uint64_t)size;
	return tally_add(t, path, it->size, err);
}

/* ---- phase 3: read what lands ------------------------------------------------------ */

static msb_errc read_one(msb_sandbox *sandbox, const msb_spec *spec, item *it, tally *t,
			 msb_error *err)
{
	const char *path = it->decl->path;
	uint64_t left = spec->files_out.max_total_bytes - t->bytes;
	uint64_t max = spec->files_out.max_bytes_per_file < left ? spec->files_out.max_bytes_per_file
								   : left;
	msb_errc rc = msb_sandbox_read_file(sandbox, path, spec->work_dir, max, &it->content, err);
	if (rc != MSB_OK)
		return msb_error_prefix(err, "collect_outputs: declared output '%s': ", path);
	/* Re-counted from what arrived: a backend that buffers a whole response can only be
	 * held to the cap after the fact. */
	return tally_add(t, path, it->content.len, err);
}

/* ---- phase 4: deliver -------------------------------------------------------------- */

static msb_errc deliver_one(msb_output_sink *sink, const msb_spec *spec, const item *it,
			    const char *call_id, msb_landed_artifacts *out, msb_error *err)
{
	msb_landed_artifact *grown = realloc(out->items, (out->len + 1) * sizeof *grown);
	if (!grown)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory collecting outputs");
	out->items = grown;
	msb_artifact a = {
		.name = it->delivered,
		.content = it->content.data,
		.len = it->content.len,
		.kind = spec->kind,
		.media_type = it->decl->media_type,
		.call_id = call_id,
	};
	msb_landed_artifact landed = { 0 };
	msb_errc rc = sink->deliver(sink->ctx, &a, &landed, err);
	if (rc != MSB_OK) {
		msb_landed_artifact_free(&landed);
		return rc;
	}
	out->items[out->len++] = landed;
	return MSB_OK;
}

static msb_errc run_phases(msb_sandbox *sandbox, const msb_spec *spec, msb_output_sink *sink,
			   const msb_collect_options *o, item *items, size_t n,
			   msb_landed_artifacts *out, tally *measured, msb_error *err)
{
	msb_errc rc = check_sink(spec, items, n, sink, o->call_id, err);
	if (rc == MSB_OK)
		rc = check_names(items, n, sink, err);
	tally stat_tally = { &spec->files_out, 0, 0 };
	for (size_t i = 0; rc == MSB_OK && i < n; i++)
		rc = stat_one(sandbox, spec, &items[i], &stat_tally, err);
	for (size_t i = 0; rc == MSB_OK && i < n; i++)
		if (items[i].present && items[i].delivered)
			rc = read_one(sandbox, spec, &items[i], measured, err);
	for (size_t i = 0; rc == MSB_OK && i < n; i++)
		if (items[i].present && items[i].delivered)
			rc = deliver_one(sink, spec, &items[i], o->call_id, out, err);
	return rc;
}

static void observe(const msb_collect_options *o, const msb_spec *spec,
		    const msb_landed_artifacts *out, uint64_t bytes, msb_errc rc)
{
	if (!o->observer)
		return;
	msb_outputs_collected ev = {
		.key = o->key,
		.call = o->call_id,
		.kind = spec->kind,
		.files = out->len,
		.bytes = bytes,
		.refusal = rc == MSB_OK ? NULL : msb_errc_name(rc),
	};
	msb_observer_outputs_collected(o->observer, &ev);
}

msb_errc msb_collect_outputs(msb_sandbox *sandbox, const msb_spec *spec, msb_output_sink *sink,
			     const msb_collect_options *options, msb_landed_artifacts *out,
			     msb_error *err)
{
	msb_collect_options o = MSB_COLLECT_OPTIONS_INIT;
	if (options) {
		if (options->struct_size < sizeof o)
			return msb_error_set(err, MSB_E_VALUE,
					     "collect_outputs: its options are %u bytes and this library "
					     "reads %zu, so fields past the end would be garbage "
					     "(start from MSB_COLLECT_OPTIONS_INIT)",
					     options->struct_size, sizeof o);
		o = *options;
	}
	*out = (msb_landed_artifacts){ 0 };
	if (o.n_outputs && !spec->outputs_named_at_call_time)
		return msb_error_set(err, MSB_E_VALUE,
				     "the '%s' workload passed %zu call-time output(s) to collect_outputs "
				     "and its spec does not set outputs_named_at_call_time: without it the "
				     "tool was attached with no sink required and no outbound cap agreed, "
				     "and collecting here would land artifacts behind both checks",
				     spec->kind, o.n_outputs);
	size_t n = spec->n_declared_outputs + o.n_outputs;
	item *items = n ? calloc(n, sizeof *items) : NULL;
	if (n && !items)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory collecting outputs");
	for (size_t i = 0; i < n; i++)
		items[i].decl = i < spec->n_declared_outputs
					? &spec->declared_outputs[i]
					: &o.outputs[i - spec->n_declared_outputs];
	tally measured = { &spec->files_out, 0, 0 };
	msb_errc rc = run_phases(sandbox, spec, sink, &o, items, n, out, &measured, err);
	items_free(items, n);
	observe(&o, spec, out, measured.bytes, rc);
	return rc;
}
