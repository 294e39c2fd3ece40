/*
 * store_tools.c — "<prefix>_ls" and "<prefix>_read": the model reads a store, and nothing
 * else, and never writes it.
 *
 * Read-only by construction rather than by a flag: the tools copy the store's list and read
 * operations out of the vtable and never hold its put, so no argument a model crafts can reach
 * a write. The path is model input: it is checked lexically here and resolved by the store
 * (the directory store confines it beneath its root with kernel primitives).
 *
 * Every answer the model reads is fixed text plus what the store holds: a missing file, a
 * directory, a file over the read cap and bytes that are not text each get their own
 * sentence, and the store's own error message (which can carry a host path) goes nowhere
 * near the answer.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistr.h>

#include <msb/store.h>

struct msb_store_tools {
	void *ctx;
	msb_errc (*list)(void *ctx, const char *dir, msb_entry_list *out, msb_error *err);
	msb_errc (*read)(void *ctx, const char *path, uint64_t max_bytes, msb_buf *out,
			 msb_error *err);
	char ls_name[MSB_STORE_TOOLS_MAX_PREFIX + 4];
	char read_name[MSB_STORE_TOOLS_MAX_PREFIX + 6];
	uint64_t max_read;
	size_t max_entries;
	const msb_observer *observer;
	const msb_caller_context *caller;
};

static msb_errc check_prefix(const char *prefix, msb_error *err)
{
	size_t n = prefix ? strlen(prefix) : 0;
	bool ok = n > 0 && n <= MSB_STORE_TOOLS_MAX_PREFIX && prefix[0] >= 'a' && prefix[0] <= 'z';
	for (size_t i = 1; ok && i < n; i++)
		ok = (prefix[i] >= 'a' && prefix[i] <= 'z') || (prefix[i] >= '0' && prefix[i] <= '9') ||
		     prefix[i] == '_';
	if (ok)
		return MSB_OK;
	return msb_error_set(err, MSB_E_VALUE,
			     "store tools: prefix '%.*s%s' is not [a-z][a-z0-9_]* of at most %d bytes; "
			     "the prefix is what keeps two stores' tools from sharing a name",
			     64, prefix ? prefix : "", n > 64 ? "…" : "", MSB_STORE_TOOLS_MAX_PREFIX);
}

msb_errc msb_store_tools_new(const msb_file_store *store, const char *prefix,
			     const msb_store_tools_options *options, msb_store_tools **out,
			     msb_error *err)
{
	*out = NULL;
	msb_store_tools_options opts = MSB_STORE_TOOLS_OPTIONS_INIT;
	if (options) {
		if (options->struct_size < sizeof opts)
			return msb_error_set(err, MSB_E_VALUE,
					     "store tools options are %u bytes; this library expects %zu "
					     "(start from MSB_STORE_TOOLS_OPTIONS_INIT)",
					     options->struct_size, sizeof opts);
		opts = *options;
	}
	if (!store || store->struct_size < sizeof(msb_file_store) || !store->list || !store->read)
		return msb_error_set(err, MSB_E_VALUE,
				     "store tools: the store is missing, predates msb_file_store, or "
				     "has no list or read to serve them with");
	msb_errc rc = check_prefix(prefix, err);
	if (rc != MSB_OK)
		return rc;
	msb_store_tools *t = calloc(1, sizeof *t);
	if (!t)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory for store tools");
	t->ctx = store->ctx;
	t->list = store->list;
	t->read = store->read;
	snprintf(t->ls_name, sizeof t->ls_name, "%s_ls", prefix);
	snprintf(t->read_name, sizeof t->read_name, "%s_read", prefix);
	t->max_read = opts.max_read_bytes ? opts.max_read_bytes : MSB_STORE_TOOLS_DEFAULT_MAX_READ;
	t->max_entries = opts.max_entries ? opts.max_entries : MSB_STORE_TOOLS_DEFAULT_MAX_ENTRIES;
	t->observer = opts.observer;
	t->caller = opts.caller;
	*out = t;
	return MSB_OK;
}

void msb_store_tools_free(msb_store_tools *t)
{
	free(t);
}

const char *msb_store_tools_ls_name(const msb_store_tools *t)
{
	return t->ls_name;
}

const char *msb_store_tools_read_name(const msb_store_tools *t)
{
	return t->read_name;
}

const char *msb_store_tools_ls_schema(void)
{
	return "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	       "\"description\":\"a directory in the store, relative; empty or absent for the "
	       "root\"}},\"additionalProperties\":false}";
}

const char *msb_store_tools_read_schema(void)
{
	return "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	       "\"description\":\"a file in the store, relative, as listed\"}},"
	       "\"required\":[\"path\"],\"additionalProperties\":false}";
}

static msb_errc say(msb_buf *answer, msb_error *err, const char *fmt, ...) MSB_PRINTF(3, 4);
static msb_errc say(msb_buf *answer, msb_error *err, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return msb_error_set(err, MSB_E_NOMEM, "store tools: could not format an answer");
	return msb_buf_append(answer, line, strlen(line), err);
}

/* A model-supplied path, shown back to it: bounded, and only when it is printable text. */
static const char *shown(const char *path)
{
	if (!path)
		return "";
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "(a path with control characters)";
	return strlen(path) > 200 ? "(a path over 200 bytes)" : path;
}

/* Lexical check of a model-supplied path; an empty one is the root where `allow_root`. */
static bool path_ok(const char *path, bool allow_root)
{
	if (!path || !*path)
		return allow_root;
	return msb_validate_artifact_name(path, NULL) == MSB_OK;
}

msb_errc msb_store_tools_ls(msb_store_tools *t, const char *call, const char *path,
			    msb_buf *answer, msb_error *err)
{
	(void)call;
	answer->len = 0;
	if (!path_ok(path, true))
		return say(answer, err, "Error: '%s' is not a path in the store (a relative path, "
			   "no '..', no empty segment).", shown(path));
	msb_entry_list list = { 0 };
	msb_error local = MSB_ERROR_INIT;
	msb_errc rc = t->list(t->ctx, path ? path : "", &list, &local);
	if (rc == MSB_E_NOT_FOUND)
		rc = say(answer, err, "Error: there is no directory '%s' in the store.", shown(path));
	else if (rc == MSB_E_NOT_DIR)
		rc = say(answer, err, "Error: '%s' is a file, not a directory; read it with %s.",
			 shown(path), t->read_name);
	else if (rc != MSB_OK)
		rc = say(answer, err, "Error: '%s' could not be listed (%s).", shown(path),
			 msb_errc_name(rc));
	else if (list.len == 0)
		rc = say(answer, err, "(empty)");
	for (size_t i = 0; rc == MSB_OK && local.code == MSB_OK && i < list.len; i++) {
		if (i == t->max_entries) {
			rc = say(answer, err, "… and %zu more entries not listed\n", list.len - i);
			break;
		}
		const msb_entry *e = &list.items[i];
		const char *name = strrchr(e->path, '/');
		name = name ? name + 1 : e->path;
		if (e->kind == MSB_ENTRY_DIRECTORY)
			rc = say(answer, err, "%s/\n", shown(name));
		else if (e->kind == MSB_ENTRY_FILE)
			rc = say(answer, err, "%s (%" PRId64 " bytes)\n", shown(name), e->size_bytes);
		/* anything else (a link, a device) is not the store's to show */
	}
	msb_entry_list_free(&list);
	msb_error_clear(&local);
	return rc;
}

static void observe_read(const msb_store_tools *t, const char *call, const char *path,
			 uint64_t bytes, bool found)
{
	if (!t->observer || !t->observer->store_file_read)
		return; /* a host that registers none builds no event */
	msb_key key;
	msb_error e = MSB_ERROR_INIT;
	bool keyed = t->caller && msb_caller_key(t->caller, call, &key, &e) == MSB_OK;
	msb_error_clear(&e);
	const msb_store_file_read event = {
		.key = keyed ? &key : NULL,
		.call = call,
		.name = path,
		.bytes = bytes,
		.found = found,
	};
	msb_observer_store_file_read(t->observer, &event);
}

msb_errc msb_store_tools_read(msb_store_tools *t, const char *call, const char *path,
			      msb_buf *answer, msb_error *err)
{
	answer->len = 0;
	if (!path_ok(path, false)) {
		observe_read(t, call, shown(path), 0, false);
		return say(answer, err, "Error: '%s' is not a file path in the store (a relative "
			   "path, no '..', no empty segment).", shown(path));
	}
	msb_buf content = { 0 };
	msb_error local = MSB_ERROR_INIT;
	msb_errc rc = t->read(t->ctx, path, t->max_read, &content, &local);
	bool found = rc == MSB_OK;
	if (rc == MSB_OK && content.len && u8_check((const uint8_t *)content.data, content.len)) {
		found = false;
		rc = say(answer, err, "Error: '%s' is not text, so it is not shown.", shown(path));
	} else if (rc == MSB_OK) {
		rc = msb_buf_append(answer, content.data, content.len, err);
	} else if (rc == MSB_E_NOT_FOUND || rc == MSB_E_NOT_DIR) {
		rc = say(answer, err, "Error: there is no file '%s' in the store.", shown(path));
	} else if (rc == MSB_E_IS_DIR) {
		rc = say(answer, err, "Error: '%s' is a directory; list it with %s.", shown(path),
			 t->ls_name);
	} else if (rc == MSB_E_TRANSFER_CAP_EXCEEDED) {
		rc = say(answer, err, "Error: '%s' is larger than the %" PRIu64 " bytes %s reads, "
			 "so none of it is shown.", shown(path), t->max_read, t->read_name);
	} else if (rc == MSB_E_NOMEM) {
		msb_error_move(err, &local);
	} else {
		rc = say(answer, err, "Error: '%s' could not be read (%s).", shown(path),
			 msb_errc_name(rc));
	}
	observe_read(t, call, path, found ? content.len : 0, found);
	msb_buf_free(&content);
	msb_error_clear(&local);
	return rc;
}
