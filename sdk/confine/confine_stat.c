/*
 * confine_stat.c — describing and listing paths beneath a working directory.
 *
 * Both are lstat-like at the leaf: a symlink is reported as a symlink, with size -1, because
 * a name handed back with its type erased is a name read without the warning. The parents
 * are still resolved without following, because a stat through a link reports a type and a
 * size from outside the working directory even when no byte crosses.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine_internal.h"

static void describe(const struct stat *st, msb_entry_kind *kind, int64_t *size)
{
	*size = -1;
	if (S_ISREG(st->st_mode)) {
		*kind = MSB_ENTRY_FILE;
		*size = (int64_t)st->st_size;
	} else if (S_ISDIR(st->st_mode)) {
		*kind = MSB_ENTRY_DIRECTORY;
	} else if (S_ISLNK(st->st_mode)) {
		*kind = MSB_ENTRY_SYMLINK;
	} else {
		*kind = MSB_ENTRY_OTHER;
	}
}

static msb_errc fill_entry(msb_entry *entry, const char *path, const struct stat *st,
			   msb_error *err)
{
	char *copy = strdup(path);
	if (!copy)
		return msb_error_set(err, MSB_E_NOMEM, "stat_file '%s': out of memory", path);
	entry->path = copy;
	describe(st, &entry->kind, &entry->size_bytes);
	return MSB_OK;
}

msb_errc msb_confine_stat(int root_fd, const char *path, msb_entry *entry, bool *found,
			  msb_error *err)
{
	*found = false;
	msb_errc rc = msb_confine_check_path(path, true, err);
	if (rc != MSB_OK)
		return rc;
	struct stat st;
	if (confine_is_root(path)) {
		if (fstat(root_fd, &st) != 0)
			return msb_error_set_errno(err, MSB_E_OS, errno, "stat_file '%s'", path);
		*found = true;
		return fill_entry(entry, path, &st, err);
	}
	int dir_fd;
	const char *leaf;
	rc = confine_open_parent(root_fd, "stat_file", path, false, &dir_fd, &leaf, err);
	if (rc == MSB_E_NOT_FOUND) {
		/* Nothing is there: a missing parent means a missing file, not a failure. */
		msb_error_clear(err);
		return MSB_OK;
	}
	if (rc != MSB_OK)
		return rc;
	int st_rc = fstatat(dir_fd, leaf, &st, AT_SYMLINK_NOFOLLOW);
	int e = errno;
	close(dir_fd);
	if (st_rc != 0)
		return e == ENOENT ? MSB_OK : confine_fail(root_fd, "stat_file", path, e, err);
	*found = true;
	return fill_entry(entry, path, &st, err);
}

typedef struct listed {
	char *name;
	msb_entry_kind kind;
	int64_t size;
} listed;

static int by_name(const void *a, const void *b)
{
	return strcmp(((const listed *)a)->name, ((const listed *)b)->name);
}

static void listed_free(listed *items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(items[i].name);
	free(items);
}

/* Read every entry of open directory `fd` (consumed) into a name-sorted array. */
static msb_errc read_entries(int fd, const char *path, listed **out, size_t *count,
			     msb_error *err)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return msb_error_set_errno(err, MSB_E_OS, e, "list_dir '%s'", path);
	}
	listed *items = NULL;
	size_t n = 0, cap = 0;
	msb_errc rc = MSB_OK;
	struct dirent *de;
	errno = 0;
	while (rc == MSB_OK && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* gone since readdir saw it */
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			listed *grown = realloc(items, cap * sizeof *items);
			if (!grown) {
				rc = msb_error_set(err, MSB_E_NOMEM, "list_dir '%s': out of memory", path);
				break;
			}
			items = grown;
		}
		items[n].name = strdup(de->d_name);
		if (!items[n].name) {
			rc = msb_error_set(err, MSB_E_NOMEM, "list_dir '%s': out of memory", path);
			break;
		}
		describe(&st, &items[n].kind, &items[n].size);
		n++;
		errno = 0;
	}
	if (rc == MSB_OK && errno != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "list_dir '%s'", path);
	closedir(d);
	if (rc != MSB_OK) {
		listed_free(items, n);
		return rc;
	}
	if (n)
		qsort(items, n, sizeof *items, by_name);
	*out = items;
	*count = n;
	return MSB_OK;
}

msb_errc msb_confine_list_dir(int root_fd, const char *path, msb_entry_list *out,
			      msb_error *err)
{
	msb_errc rc = msb_confine_check_path(path, true, err);
	if (rc != MSB_OK)
		return rc;
	bool at_root = confine_is_root(path);
	int fd;
	if (at_root) {
		fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return msb_error_set_errno(err, confine_errno_code(errno), errno,
						   "list_dir '%s'", path);
	} else {
		/* Not O_DIRECTORY: with O_NOFOLLOW a link is then ELOOP, unmistakably, and
		 * O_NONBLOCK keeps a FIFO from holding the open. */
		rc = confine_open_leaf(root_fd, "list_dir", path, O_RDONLY | O_NONBLOCK, &fd, err);
		if (rc != MSB_OK)
			return rc;
		struct stat st;
		if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
			close(fd);
			return msb_error_set(err, MSB_E_NOT_DIR, "list_dir refused '%s': not a directory",
					     path);
		}
	}
	listed *items = NULL;
	size_t n = 0;
	rc = read_entries(fd, path, &items, &n, err);
	char full[PATH_MAX * 2];
	for (size_t i = 0; rc == MSB_OK && i < n; i++) {
		if (at_root)
			snprintf(full, sizeof full, "%s", items[i].name);
		else
			snprintf(full, sizeof full, "%s/%s", path, items[i].name);
		rc = msb_entry_list_add(out, full, items[i].kind, items[i].size, err);
	}
	listed_free(items, n);
	return rc;
}
