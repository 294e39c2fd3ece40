/*
 * client_files.c — the agent client's file operations: each carries a path and the guest
 * working directory it is confined to (the agent does the confining), and decodes the
 * entries, presence or bytes its reply holds.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <msb/agent.h>

#include "client_internal.h"

/* PATH and WORKDIR, which every file operation carries. */
static msb_errc put_path(msb_buf *p, const char *path, const char *wd, msb_error *err)
{
	if (!path || !wd)
		return msb_error_set(err, MSB_E_VALUE,
				     "file operation refused: a path and a working directory are required");
	msb_errc rc = msb_agent_put_str(p, MSB_TAG_PATH, path, err);
	return rc == MSB_OK ? msb_agent_put_str(p, MSB_TAG_WORKDIR, wd, err) : rc;
}

msb_errc msb_agent_write_file(msb_agent_client *c, const char *path, const void *data,
			      size_t len, const char *wd, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = msb_agent_put(&p, MSB_TAG_DATA, data, len, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return msb_agent_simple(c, MSB_AGENT_WRITE_FILE, &p, 0, err);
}

/*
 * An entry is believed only as far as an honest agent could have said it: a known kind, a
 * size that is a size or -1 (unknown), a path of at most MSB_AGENT_ENTRY_PATH_MAX bytes with
 * no NUL, and no more of them than MSB_AGENT_MAX_ENTRIES (each costs an allocation here, so
 * a 64 MiB reply of empty names would cost the host far more than 64 MiB).
 */
static msb_errc parse_entry(const msb_agent_field *f, msb_entry_list *list, msb_error *err)
{
	if (f->len < 9 || f->value[0] >= MSB_ENTRY__COUNT || memchr(f->value + 9, '\0', f->len - 9))
		return msb_error_set(err, MSB_E_PROTOCOL, "agent protocol: a malformed entry");
	if (f->len - 9 > MSB_AGENT_ENTRY_PATH_MAX)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: an entry's path of %u bytes is over the %u "
				     "a path may have; refused", f->len - 9, MSB_AGENT_ENTRY_PATH_MAX);
	if (list->len >= MSB_AGENT_MAX_ENTRIES)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: the agent described more than %u entries in "
				     "one reply; refused", MSB_AGENT_MAX_ENTRIES);
	uint64_t size = 0;
	for (int i = 7; i >= 0; i--)
		size = size << 8 | f->value[1 + i];
	if ((int64_t)size < -1)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: an entry's size of %" PRId64 " bytes is no size; "
				     "refused", (int64_t)size);
	char *path = strndup((const char *)f->value + 9, f->len - 9);
	if (!path)
		return msb_error_set(err, MSB_E_NOMEM, "agent client: out of memory");
	msb_errc rc = msb_entry_list_add(list, path, (msb_entry_kind)f->value[0], (int64_t)size, err);
	free(path);
	return rc;
}

/* A request whose reply holds ENTRY fields (and FOUND / DATA). */
static msb_errc entries_call(msb_agent_client *c, uint16_t type, msb_buf *p, double timeout,
			     uint32_t max_reply, msb_entry_list *list, bool *found, msb_buf *data,
			     uint64_t max_data, msb_error *err)
{
	int64_t deadline = msb_agent_deadline_after(msb_agent_default_timeout(c, timeout));
	msb_buf reply = { 0 };
	msb_errc rc = msb_agent_call(c, type, p, deadline, deadline, MSB_E_TIMEOUT, max_reply,
				     &reply, err);
	size_t had = data ? data->len : 0;
	msb_buf_free(p);
	msb_agent_reader r = { .data = reply.data, .len = reply.len };
	while (rc == MSB_OK) {
		msb_agent_field f;
		bool done;
		uint32_t v;
		rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc != MSB_OK || done)
			break;
		if (f.tag == MSB_TAG_ENTRY && list)
			rc = parse_entry(&f, list, err);
		else if (f.tag == MSB_TAG_FOUND && found && (rc = msb_agent_field_u32(&f, &v, err)) == MSB_OK)
			*found = v != 0;
		else if (f.tag == MSB_TAG_DATA && data && (uint64_t)(data->len - had) + f.len > max_data)
			rc = msb_error_set(err, MSB_E_PROTOCOL,
					   "agent protocol: the agent answered read_file with %zu "
					   "bytes, more than the %" PRIu64 " asked for; refused",
					   data->len - had + (size_t)f.len, max_data);
		else if (f.tag == MSB_TAG_DATA && data)
			rc = msb_buf_append(data, f.value, f.len, err);
	}
	msb_buf_free(&reply);
	return rc;
}

msb_errc msb_agent_stat_file(msb_agent_client *c, const char *path, const char *wd,
			     msb_entry *entry, bool *found, msb_error *err)
{
	msb_buf p = { 0 };
	msb_entry_list list = { 0 };
	*found = false;
	memset(entry, 0, sizeof *entry);
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = entries_call(c, MSB_AGENT_STAT_FILE, &p, 0, msb_agent_reply_bound(0), &list, found,
				  NULL, 0, err);
	else
		msb_buf_free(&p);
	if (rc == MSB_OK && *found && list.len != 1)
		rc = msb_error_set(err, MSB_E_PROTOCOL, "agent protocol: stat_file found '%s' but "
				   "described %zu entries", path, list.len);
	if (rc == MSB_OK && *found) {
		*entry = list.items[0];
		list.len = 0;
	}
	msb_entry_list_free(&list);
	if (rc != MSB_OK)
		*found = false;
	return rc;
}

msb_errc msb_agent_read_file(msb_agent_client *c, const char *path, const char *wd,
			     uint64_t max_bytes, msb_buf *out, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&p, MSB_TAG_MAX_BYTES, max_bytes, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	size_t had = out->len;
	/* A file over the cap is the agent's to refuse; one that sends it anyway is not
	 * believed, and nothing of what it sent is kept — nor allocated: its frame's length
	 * is held to the cap before the frame is read. */
	rc = entries_call(c, MSB_AGENT_READ_FILE, &p, 0, msb_agent_reply_bound(max_bytes), NULL,
			  NULL, out, max_bytes, err);
	if (rc != MSB_OK)
		msb_error_prefix(err, "read_file of '%s': ", path);
	if (rc != MSB_OK && had) {
		out->len = had;
		out->data[had] = '\0';
	} else if (rc != MSB_OK) {
		msb_buf_free(out);
	}
	return rc;
}

msb_errc msb_agent_list_dir(msb_agent_client *c, const char *path, const char *wd,
			    msb_entry_list *out, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	size_t had = out->len;
	rc = entries_call(c, MSB_AGENT_LIST_DIR, &p, 0, MSB_AGENT_MAX_PAYLOAD, out, NULL, NULL, 0,
			  err);
	/* Nothing of a refused listing is kept: the host never acts on half of a lie. */
	while (rc != MSB_OK && out->len > had)
		free(out->items[--out->len].path);
	if (rc != MSB_OK && !out->len) {
		free(out->items);
		out->items = NULL;
	}
	return rc;
}

msb_errc msb_agent_remove(msb_agent_client *c, const char *path, const char *wd, bool recursive,
			  msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(&p, MSB_TAG_RECURSIVE, recursive, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return msb_agent_simple(c, MSB_AGENT_REMOVE, &p, 0, err);
}

msb_errc msb_agent_reclaim(msb_agent_client *c, const char *directory, const char *wd,
			   double timeout, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, directory, wd, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return msb_agent_simple(c, MSB_AGENT_RECLAIM, &p, timeout, err);
}
