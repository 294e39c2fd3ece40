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

static msb_errc parse_entry(const msb_agent_field *f, msb_entry_list *list, msb_error *err)
{
	if (f->len < 9 || f->value[0] >= MSB_ENTRY__COUNT || memchr(f->value + 9, '\0', f->len - 9))
		return msb_error_set(err, MSB_E_PROTOCOL, "agent protocol: a malformed entry");
	uint64_t size = 0;
	for (int i = 7; i >= 0; i--)
		size = size << 8 | f->value[1 + i];
	char *path = strndup((const char *)f->value + 9, f->len - 9);
	if (!path)
		return msb_error_set(err, MSB_E_NOMEM, "agent client: out of memory");
	msb_errc rc = msb_entry_list_add(list, path, (msb_entry_kind)f->value[0], (int64_t)size, err);
	free(path);
	return rc;
}

/* A request whose reply holds ENTRY fields (and FOUND / DATA). */
static msb_errc entries_call(msb_agent_client *c, uint16_t type, msb_buf *p, double timeout,
			     msb_entry_list *list, bool *found, msb_buf *data, msb_error *err)
{
	int64_t deadline = msb_agent_deadline_after(msb_agent_default_timeout(c, timeout));
	msb_buf reply = { 0 };
	msb_errc rc = msb_agent_call(c, type, p, deadline, deadline, MSB_E_TIMEOUT, &reply, err);
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
		rc = entries_call(c, MSB_AGENT_STAT_FILE, &p, 0, &list, found, NULL, err);
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
	rc = entries_call(c, MSB_AGENT_READ_FILE, &p, 0, NULL, NULL, out, err);
	/* A file over the cap is the agent's to refuse; one that sends it anyway is not
	 * believed, and nothing of what it sent is kept. */
	if (rc == MSB_OK && out->len - had > max_bytes)
		rc = msb_error_set(err, MSB_E_PROTOCOL,
				   "agent protocol: the agent answered read_file of '%s' with %zu bytes, "
				   "more than the %" PRIu64 " asked for; refused", path, out->len - had,
				   max_bytes);
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
	return entries_call(c, MSB_AGENT_LIST_DIR, &p, 0, out, NULL, NULL, err);
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
