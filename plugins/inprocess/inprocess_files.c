/*
 * inprocess_files.c — the fake's file tree: a flat list of absolute guest paths and their
 * bytes, directories implied by what sits under them (as in the seed's fake).
 *
 * Confinement is lexical here because there is nothing else to resolve: no link can exist
 * in this tree, so the SDK's check (absolute paths, '.', '..', empty segments and
 * backslashes refused; the working directory itself refused for anything that writes or
 * removes) is the whole of it. An operation on a disposed sandbox is refused, as an engine
 * whose container is gone would refuse it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/confine.h>

#include "inprocess.h"

static msb_errc resolve(const msb_sandbox_handle *h, const char *path, const char *wd, bool allow_root,
			const char *op, char **full, msb_error *err)
{
	if (h->sb->disposed)
		return msb_error_set(err, MSB_E_BACKEND,
				     "inprocess: %s on the '%s' sandbox of thread '%s', which was disposed",
				     op, h->sb->kind, h->sb->thread_id);
	if (!wd || wd[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "inprocess: %s: working directory '%s' is not absolute",
				     op, wd ? wd : "");
	msb_errc rc = msb_confine_relative(path, wd, &path, err);
	if (rc == MSB_OK)
		rc = msb_confine_check_path(path, allow_root, err);
	if (rc)
		return rc;
	size_t wl = strlen(wd);
	while (wl > 1 && wd[wl - 1] == '/')
		wl--;
	bool root = !*path || strcmp(path, ".") == 0;
	int n = root ? asprintf(full, "%.*s", (int)wl, wd)
		     : asprintf(full, "%.*s%s%s", (int)wl, wd, wl == 1 ? "" : "/", path);
	if (n < 0)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	return MSB_OK;
}

/* Whether `p` sits strictly under directory `dir`. */
static bool under(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1)
		return p[0] == '/' && p[1] != '\0';
	return strncmp(p, dir, n) == 0 && p[n] == '/';
}

static inproc_file *file_at(inproc_sandbox *sb, const char *full)
{
	for (size_t i = 0; i < sb->n_files; i++)
		if (strcmp(sb->files[i].path, full) == 0)
			return &sb->files[i];
	return NULL;
}

static bool dir_at(const inproc_sandbox *sb, const char *full)
{
	for (size_t i = 0; i < sb->n_files; i++)
		if (under(sb->files[i].path, full))
			return true;
	return false;
}

/* The first proper ancestor of `full` that is a file, if any: a path cannot pass through one. */
static const char *file_ancestor(inproc_sandbox *sb, const char *full)
{
	for (size_t i = 0; i < sb->n_files; i++)
		if (under(full, sb->files[i].path))
			return sb->files[i].path;
	return NULL;
}

static void file_drop(inproc_sandbox *sb, size_t i)
{
	free(sb->files[i].path);
	free(sb->files[i].data);
	sb->files[i] = sb->files[--sb->n_files];
}

msb_errc inproc_write_file(msb_sandbox_handle *h, const char *path, const void *data, size_t len,
			   const char *working_directory, msb_error *err)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	char *full = NULL;
	msb_errc rc = resolve(h, path, working_directory, false, "write_file", &full, err);
	inproc_sandbox *sb = h->sb;
	if (rc)
		goto out;
	inproc_record_add(self, "write_file", full);
	if (dir_at(sb, full)) {
		rc = msb_error_set(err, MSB_E_IS_DIR, "inprocess: write_file '%s': a directory is there", path);
		goto out;
	}
	if (file_ancestor(sb, full)) {
		rc = msb_error_set(err, MSB_E_NOT_DIR, "inprocess: write_file '%s': '%s' is a file, not a directory",
				   path, file_ancestor(sb, full));
		goto out;
	}
	unsigned char *copy = malloc(len ? len : 1);
	if (!copy) {
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
		goto out;
	}
	if (len)
		memcpy(copy, data, len);
	inproc_file *f = file_at(sb, full);
	if (f) {
		/* Replaced whole under the lock: a reader sees the old bytes or the new. */
		free(f->data);
		f->data = copy;
		f->len = len;
		goto out;
	}
	if (sb->n_files == sb->cap_files) {
		size_t cap = sb->cap_files ? sb->cap_files * 2 : 8;
		inproc_file *grown = realloc(sb->files, cap * sizeof *grown);
		if (!grown) {
			free(copy);
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
			goto out;
		}
		sb->files = grown;
		sb->cap_files = cap;
	}
	sb->files[sb->n_files++] = (inproc_file){ full, copy, len };
	full = NULL;
out:
	pthread_mutex_unlock(&self->lock);
	free(full);
	return rc;
}

static const char *relative(const char *full, const char *wd_full)
{
	size_t n = strlen(wd_full);
	if (strcmp(full, wd_full) == 0)
		return "";
	return full + n + (n == 1 ? 0 : 1);
}

msb_errc inproc_stat_file(msb_sandbox_handle *h, const char *path, const char *working_directory,
			  msb_entry *entry, bool *found, msb_error *err)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	char *full = NULL;
	*found = false;
	msb_errc rc = resolve(h, path, working_directory, true, "stat_file", &full, err);
	if (!rc) {
		inproc_file *f = file_at(h->sb, full);
		bool dir = !f && dir_at(h->sb, full);
		if (f || dir) {
			entry->path = strdup(strcmp(path, ".") == 0 ? "" : path);
			entry->kind = f ? MSB_ENTRY_FILE : MSB_ENTRY_DIRECTORY;
			entry->size_bytes = f ? (int64_t)f->len : -1;
			*found = entry->path != NULL;
			if (!entry->path)
				rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
		}
	}
	pthread_mutex_unlock(&self->lock);
	free(full);
	return rc;
}

msb_errc inproc_read_file(msb_sandbox_handle *h, const char *path, const char *working_directory,
			  uint64_t max_bytes, msb_buf *out, msb_error *err)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	char *full = NULL;
	msb_errc rc = resolve(h, path, working_directory, true, "read_file", &full, err);
	if (!rc) {
		inproc_file *f = file_at(h->sb, full);
		if (!f && dir_at(h->sb, full))
			rc = msb_error_set(err, MSB_E_IS_DIR, "inprocess: read_file '%s' is a directory", path);
		else if (!f)
			rc = msb_error_set(err, MSB_E_NOT_FOUND, "inprocess: read_file: no such file: '%s'", path);
		else if ((uint64_t)f->len > max_bytes)
			/* Refused, never truncated: a short read taken for a whole one is worse. */
			rc = msb_error_set(err, MSB_E_TRANSFER_CAP_EXCEEDED,
					   "inprocess: '%s' is %zu bytes and the caller allowed %llu", path,
					   f->len, (unsigned long long)max_bytes);
		else
			rc = msb_buf_append(out, f->data, f->len, err);
	}
	pthread_mutex_unlock(&self->lock);
	free(full);
	return rc;
}

msb_errc inproc_list_dir(msb_sandbox_handle *h, const char *path, const char *working_directory,
			 msb_entry_list *out, msb_error *err)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	char *full = NULL, *base = NULL;
	inproc_sandbox *sb = h->sb;
	msb_errc rc = resolve(h, path, working_directory, true, "list_dir", &full, err);
	if (!rc)
		rc = resolve(h, "", working_directory, true, "list_dir", &base, err);
	if (rc)
		goto out;
	bool root = strcmp(full, base) == 0;
	if (file_at(sb, full)) {
		rc = msb_error_set(err, MSB_E_NOT_DIR, "inprocess: list_dir '%s' is a file", path);
		goto out;
	}
	if (!root && !dir_at(sb, full)) {
		rc = msb_error_set(err, MSB_E_NOT_FOUND, "inprocess: list_dir: no such directory: '%s'", path);
		goto out;
	}
	/* One level: a grandchild names its own parent, listed once as a directory. */
	size_t n = strlen(full) + (strlen(full) == 1 ? 0 : 1);
	for (size_t i = 0; i < sb->n_files && !rc; i++) {
		const char *p = sb->files[i].path;
		if (!under(p, full))
			continue;
		const char *slash = strchr(p + n, '/');
		char *child = slash ? strndup(p, (size_t)(slash - p)) : strdup(p);
		if (!child) {
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
			break;
		}
		const char *rel = relative(child, base);
		bool seen = false;
		for (size_t j = 0; j < out->len && !seen; j++)
			seen = strcmp(out->items[j].path, rel) == 0;
		if (!seen)
			rc = msb_entry_list_add(out, rel, slash ? MSB_ENTRY_DIRECTORY : MSB_ENTRY_FILE,
						slash ? -1 : (int64_t)sb->files[i].len, err);
		free(child);
	}
out:
	pthread_mutex_unlock(&self->lock);
	free(full);
	free(base);
	return rc;
}

static size_t remove_under(inproc_sandbox *sb, const char *full)
{
	size_t n = 0;
	for (size_t i = 0; i < sb->n_files;) {
		if (strcmp(sb->files[i].path, full) == 0 || under(sb->files[i].path, full)) {
			file_drop(sb, i);
			n++;
		} else {
			i++;
		}
	}
	return n;
}

msb_errc inproc_remove(msb_sandbox_handle *h, const char *path, const char *working_directory,
		       bool recursive, msb_error *err)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	char *full = NULL;
	msb_errc rc = resolve(h, path, working_directory, false, "remove", &full, err);
	if (!rc) {
		inproc_record_add(self, "remove", full);
		if (file_at(h->sb, full))
			remove_under(h->sb, full);
		else if (!dir_at(h->sb, full))
			rc = msb_error_set(err, MSB_E_NOT_FOUND, "inprocess: remove: no such file: '%s'", path);
		else if (!recursive)
			rc = msb_error_set(err, MSB_E_IS_DIR,
					   "inprocess: refusing to remove directory '%s' without recursive", path);
		else
			remove_under(h->sb, full);
	}
	pthread_mutex_unlock(&self->lock);
	free(full);
	return rc;
}

msb_errc inproc_reclaim(msb_sandbox_handle *h, const char *directory, const char *working_directory,
			double timeout, msb_error *err)
{
	(void)working_directory; /* where it sits, never where to run from */
	(void)timeout;
	struct msb_backend_instance *self = h->self;
	msb_errc rc = MSB_OK;
	pthread_mutex_lock(&self->lock);
	inproc_record_add(self, "reclaim", directory ? directory : "");
	if (h->sb->disposed)
		rc = msb_error_set(err, MSB_E_BACKEND, "inprocess: reclaim on a disposed sandbox");
	else if (!directory || directory[0] != '/' || strcmp(directory, "/") == 0)
		rc = msb_error_set(err, MSB_E_VALUE,
				   "inprocess: reclaim '%s': the directory must be absolute and not the root",
				   directory ? directory : "");
	else
		remove_under(h->sb, directory); /* absent is success: cleanup never reports twice */
	pthread_mutex_unlock(&self->lock);
	return rc;
}
