/*
 * files.c — the agent's file operations, confined beneath the request's working directory.
 *
 * The guest's own view of the filesystem is what the host asked about, so the confinement
 * runs here, inside the boundary, with the SDK's openat2/O_NOFOLLOW helpers (msb/confine.h):
 * the path a model chose never reaches a plain open(). This is defence in depth — the
 * boundary is the engine's — and it is also what makes a boundary sharing the host's
 * filesystem (the process backend) safe to offer file operations at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/agent.h>
#include <msb/confine.h>

#include "agent_internal.h"

char *agent_map_path(const char *path)
{
	const char *alias = agent.work_alias;
	size_t n = alias ? strlen(alias) : 0;
	if (n && strncmp(path, alias, n) == 0 && (path[n] == '\0' || path[n] == '/')) {
		size_t total = strlen(agent.work_dir) + strlen(path + n) + 1;
		char *out = malloc(total);
		if (out)
			snprintf(out, total, "%s%s", agent.work_dir, path + n);
		return out;
	}
	return strdup(path);
}

static msb_errc put_entry(msb_buf *reply, const msb_entry *e, msb_error *err)
{
	size_t plen = strlen(e->path);
	unsigned char *raw = malloc(9 + plen);
	if (!raw)
		return msb_error_set(err, MSB_E_NOMEM, "msb-agent: out of memory");
	raw[0] = (unsigned char)e->kind;
	uint64_t size = (uint64_t)e->size_bytes;
	for (int i = 0; i < 8; i++)
		raw[1 + i] = (unsigned char)(size >> (8 * i));
	memcpy(raw + 9, e->path, plen);
	msb_errc rc = msb_agent_put(reply, MSB_TAG_ENTRY, raw, 9 + plen, err);
	free(raw);
	return rc;
}

static msb_errc stat_op(int root, const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	msb_entry entry = { 0 };
	bool found = false;
	msb_errc rc = msb_confine_stat(root, req->path, &entry, &found, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(reply, MSB_TAG_FOUND, found, err);
	if (rc == MSB_OK && found)
		rc = put_entry(reply, &entry, err);
	free(entry.path);
	return rc;
}

static msb_errc list_op(int root, const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	msb_entry_list list = { 0 };
	msb_errc rc = msb_confine_list_dir(root, req->path, &list, err);
	for (size_t i = 0; rc == MSB_OK && i < list.len; i++)
		rc = put_entry(reply, &list.items[i], err);
	msb_entry_list_free(&list);
	return rc;
}

static msb_errc read_op(int root, const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	/*
	 * Read straight into the reply, behind a field header whose length is set once the file
	 * is read: no buffer the size of the file made and dropped, and one copy of it less.
	 */
	size_t at = reply->len;
	msb_errc rc = msb_agent_put(reply, MSB_TAG_DATA, NULL, 0, err);
	if (rc != MSB_OK)
		return rc;
	/* The reply must fit a frame: a cap above what one can carry is a cap the frame sets. */
	uint64_t room = MSB_AGENT_MAX_PAYLOAD - reply->len;
	uint64_t cap = req->max_bytes < room ? req->max_bytes : room;
	rc = msb_confine_read_file(root, req->path, cap, reply, err);
	if (rc == MSB_OK) {
		size_t n = reply->len - at - MSB_AGENT_FIELD_HEADER_SIZE;
		for (int i = 0; i < 4; i++)
			reply->data[at + 2 + i] = (unsigned char)(n >> (8 * i));
	}
	return rc;
}

/* mkdir -p of a guest directory: a write creates its working directory (caller-creates). */
static int make_dirs(const char *dir)
{
	char *p = strdup(dir);
	if (!p)
		return -1;
	int rc = 0;
	for (char *c = p + 1; rc == 0; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char saved = *c;
		*c = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			rc = -1;
		*c = saved;
		if (!saved)
			break;
	}
	free(p);
	return rc;
}

static msb_errc file_op(const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	const char *rel;
	msb_errc rc = req->type == MSB_AGENT_RECLAIM || !req->workdir
			      ? (rel = req->path, MSB_OK)
			      : msb_confine_relative(req->path, req->workdir, &rel, err);
	if (rc != MSB_OK)
		return rc;
	msb_agent_request local = *req;
	local.path = (char *)rel;
	req = &local;
	char *workdir = agent_map_path(req->workdir);
	if (!workdir)
		return msb_error_set(err, MSB_E_NOMEM, "msb-agent: out of memory");
	if (req->type == MSB_AGENT_RECLAIM) {
		char *dir = agent_map_path(req->path);
		rc = dir ? msb_confine_reclaim(dir, workdir, err)
			 : msb_error_set(err, MSB_E_NOMEM, "msb-agent: out of memory");
		free(dir);
		free(workdir);
		return rc;
	}
	int root = -1;
	rc = msb_confine_open_root(workdir, &root, err);
	struct stat st;
	if (rc != MSB_OK && req->type == MSB_AGENT_WRITE_FILE && stat(workdir, &st) < 0 &&
	    errno == ENOENT && make_dirs(workdir) == 0) {
		msb_error_clear(err);
		rc = msb_confine_open_root(workdir, &root, err);
	}
	free(workdir);
	if (rc != MSB_OK)
		return rc;
	switch (req->type) {
	case MSB_AGENT_WRITE_FILE:
		rc = msb_confine_write_file(root, req->path, req->data, req->data_len,
					    MSB_CONFINE_CREATE_PARENTS, err);
		break;
	case MSB_AGENT_STAT_FILE:
		rc = stat_op(root, req, reply, err);
		break;
	case MSB_AGENT_READ_FILE:
		rc = read_op(root, req, reply, err);
		break;
	case MSB_AGENT_LIST_DIR:
		rc = list_op(root, req, reply, err);
		break;
	case MSB_AGENT_REMOVE:
		rc = msb_confine_remove(root, req->path, req->recursive, err);
		break;
	default:
		rc = msb_error_set(err, MSB_E_PROTOCOL, "msb-agent: %s is not a file operation",
				   msb_agent_type_name(req->type));
	}
	close(root);
	return rc;
}

msb_errc agent_file_op(const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	msb_errc rc = file_op(req, reply, err);
	/* The confinement helpers say what was wrong with the path; say who and which op. */
	if (rc != MSB_OK)
		msb_error_prefix(err, "%s (msb-agent): ", msb_agent_type_name(req->type));
	return rc;
}
