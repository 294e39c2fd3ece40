/*
 * confine_remove.c — removing paths beneath a working directory, and the backend's reclaim.
 *
 * A recursive remove is the operation most easily turned against the host: a guest that
 * swaps a subdirectory for a link to / while the walk is under way wants the walk to follow
 * it. So every directory is opened O_NOFOLLOW relative to its parent's fd, every entry is
 * unlinked relative to the fd of the directory that holds it, and a link is only ever
 * unlinked as a link. A directory that turns into a link between the unlink that said
 * "directory" and the open is refused by the open, never followed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine_internal.h"

/* Passes over one directory before concluding that something keeps refilling it. */
#define EMPTY_PASSES 8

static msb_errc empty_tree(int dir_fd, const char *path, int depth, msb_error *err);

/* Remove entry `name` of `dir_fd`, descending when it is a directory. */
static msb_errc remove_entry(int dir_fd, const char *name, const char *path, int depth,
			     msb_error *err)
{
	if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT)
		return MSB_OK;
	if (errno != EISDIR && errno != EPERM)
		return msb_error_set_errno(err, confine_errno_code(errno), errno,
					   "remove '%s': entry '%s'", path, name);
	int sub = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (sub < 0) {
		if (errno == ENOENT)
			return MSB_OK;
		return msb_error_set_errno(err, confine_errno_code(errno), errno,
					   "remove '%s': entry '%s' (not followed)", path, name);
	}
	msb_errc rc = empty_tree(sub, path, depth + 1, err);
	if (rc != MSB_OK)
		return rc;
	if (unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		return msb_error_set_errno(err, confine_errno_code(errno), errno,
					   "remove '%s': directory '%s'", path, name);
	return MSB_OK;
}

/* Remove everything inside open directory `dir_fd` (consumed). */
static msb_errc empty_tree(int dir_fd, const char *path, int depth, msb_error *err)
{
	if (depth > CONFINE_MAX_DEPTH) {
		close(dir_fd);
		return msb_error_set(err, MSB_E_OS,
				     "remove '%s': the tree is more than %d directories deep", path,
				     CONFINE_MAX_DEPTH);
	}
	DIR *d = fdopendir(dir_fd);
	if (!d) {
		int e = errno;
		close(dir_fd);
		return msb_error_set_errno(err, MSB_E_OS, e, "remove '%s'", path);
	}
	msb_errc rc = MSB_OK;
	for (int pass = 0; rc == MSB_OK && pass < EMPTY_PASSES; pass++) {
		bool saw = false;
		struct dirent *de;
		rewinddir(d);
		while (rc == MSB_OK && (de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			saw = true;
			rc = remove_entry(dirfd(d), de->d_name, path, depth, err);
		}
		if (!saw)
			break;
	}
	closedir(d);
	return rc;
}

msb_errc msb_confine_remove(int root_fd, const char *path, bool recursive, msb_error *err)
{
	msb_errc rc = msb_confine_check_path(path, false, err);
	if (rc != MSB_OK)
		return rc;
	int dir_fd;
	const char *leaf;
	rc = confine_open_parent(root_fd, "remove", path, false, &dir_fd, &leaf, err);
	if (rc == MSB_E_NOT_FOUND) {
		msb_error_clear(err); /* not there is success: cleanup must not fail twice */
		return MSB_OK;
	}
	if (rc != MSB_OK)
		return rc;
	struct stat st;
	if (fstatat(dir_fd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		int e = errno;
		close(dir_fd);
		return e == ENOENT ? MSB_OK : confine_fail(root_fd, "remove", path, e, err);
	}
	if (!S_ISDIR(st.st_mode)) {
		/* A link, FIFO or file: unlinked as itself, never followed. */
		if (unlinkat(dir_fd, leaf, 0) != 0 && errno != ENOENT)
			rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "remove '%s'",
						 path);
	} else if (!recursive) {
		/* Empty or not: a backend that cannot enumerate could not tell the two apart. */
		rc = msb_error_set(err, MSB_E_IS_DIR,
				   "remove refused '%s': it is a directory and recursive was not asked",
				   path);
	} else {
		rc = remove_entry(dir_fd, leaf, path, 0, err);
	}
	close(dir_fd);
	return rc;
}

msb_errc msb_confine_reclaim(const char *directory, const char *working_directory,
			     msb_error *err)
{
	if (!directory || directory[0] != '/' || !working_directory || working_directory[0] != '/')
		return msb_error_set(err, MSB_E_VALUE,
				     "reclaim refused '%s': it and its working directory '%s' must "
				     "both be absolute",
				     directory ? directory : "(null)",
				     working_directory ? working_directory : "(null)");
	/* Trailing slashes are spelling, not meaning, on either side. */
	size_t wd_len = strlen(working_directory), d_len = strlen(directory);
	while (wd_len > 1 && working_directory[wd_len - 1] == '/')
		wd_len--;
	while (d_len > 1 && directory[d_len - 1] == '/')
		d_len--;
	char dir[PATH_MAX];
	if (d_len >= sizeof dir)
		return msb_error_set(err, MSB_E_VALUE, "reclaim refused '%.64s…': over PATH_MAX",
				     directory);
	memcpy(dir, directory, d_len);
	dir[d_len] = '\0';
	const char *rel;
	if (wd_len == 1)
		rel = dir + 1;
	else if (strncmp(dir, working_directory, wd_len) != 0 ||
		 (dir[wd_len] != '/' && dir[wd_len] != '\0'))
		return msb_error_set(err, MSB_E_VALUE,
				     "reclaim refused '%s': it is not under working directory '%s'",
				     directory, working_directory);
	else
		rel = dir + wd_len + (dir[wd_len] == '/');
	msb_errc rc = msb_confine_check_path(rel, false, err);
	if (rc != MSB_OK)
		return msb_error_prefix(err, "reclaim '%s': ", directory);
	int root_fd;
	rc = msb_confine_open_root(working_directory, &root_fd, err);
	if (rc == MSB_E_NOT_FOUND) {
		msb_error_clear(err); /* no working directory, so no directory under it */
		return MSB_OK;
	}
	if (rc != MSB_OK)
		return rc;
	rc = msb_confine_remove(root_fd, rel, true, err);
	close(root_fd);
	return rc;
}
