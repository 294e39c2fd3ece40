/*
 * confine_path.c — the lexical half of confinement: which relative paths are ever looked up.
 *
 * The kernel (openat2, or the O_NOFOLLOW walk) is what keeps a lookup inside the working
 * directory; this check exists so that a path that could only mean an escape, or names one
 * file in two spellings, is refused with a sentence saying why before any syscall is made.
 */
#include <limits.h>
#include <string.h>

#include "confine_internal.h"

bool confine_is_root(const char *path)
{
	return path && (path[0] == '\0' || strcmp(path, ".") == 0);
}

static msb_errc check_segment(const char *path, const char *seg, size_t len, msb_error *err)
{
	if (len == 0)
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%s' has an empty segment ('a//b' or a trailing '/'), which "
				     "names the same file as the spelling without it",
				     path);
	if (len == 1 && seg[0] == '.')
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%s' has a '.' segment, which names the same file as the "
				     "spelling without it",
				     path);
	if (len == 2 && seg[0] == '.' && seg[1] == '.')
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%s' has a '..' segment; paths are confined to the working "
				     "directory and '..' could only lead out of it",
				     path);
	if (len > NAME_MAX)
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%.64s…' has a %zu-byte segment, over the filesystem's "
				     "NAME_MAX of %d (ENAMETOOLONG)",
				     path, len, NAME_MAX);
	return MSB_OK;
}

msb_errc msb_confine_check_path(const char *path, bool allow_root, msb_error *err)
{
	if (!path)
		return msb_error_set(err, MSB_E_VALUE, "no path given");
	size_t len = strlen(path);
	if (len >= PATH_MAX)
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%.64s…' is %zu bytes, over PATH_MAX (%d) (ENAMETOOLONG)",
				     path, len, PATH_MAX);
	if (confine_is_root(path)) {
		if (allow_root)
			return MSB_OK;
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%s' names the working directory itself, which this "
				     "operation never writes over or removes",
				     path);
	}
	if (path[0] == '/')
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%s' is absolute; paths are relative to the working directory",
				     path);
	if (strchr(path, '\\'))
		return msb_error_set(err, MSB_E_VALUE,
				     "path '%s' contains a backslash, which is not a separator in the "
				     "protocol's one (POSIX) path grammar",
				     path);
	const char *seg = path;
	for (;;) {
		const char *slash = strchr(seg, '/');
		size_t seg_len = slash ? (size_t)(slash - seg) : strlen(seg);
		msb_errc rc = check_segment(path, seg, seg_len, err);
		if (rc != MSB_OK)
			return rc;
		if (!slash)
			return MSB_OK;
		seg = slash + 1;
	}
}

msb_errc msb_confine_relative(const char *path, const char *working_directory, const char **rel,
			      msb_error *err)
{
	*rel = path;
	if (!path || path[0] != '/' || !working_directory)
		return MSB_OK;
	size_t n = strlen(working_directory);
	while (n > 1 && working_directory[n - 1] == '/')
		n--;
	if (n == 1 && working_directory[0] == '/') {
		*rel = path + 1;
		return MSB_OK;
	}
	if (strncmp(path, working_directory, n) == 0 && (path[n] == '\0' || path[n] == '/')) {
		*rel = path[n] ? path + n + 1 : "";
		return MSB_OK;
	}
	return msb_error_set(err, MSB_E_VALUE, "path '%s' is outside the working directory '%s'", path,
			     working_directory);
}
