/*
 * confine_internal.h — what the confinement sources share and nothing else sees: how one
 * component or one whole path is opened beneath a directory fd, and how a failed lookup is
 * turned into a refusal that names the path.
 */
#ifndef MSB_CONFINE_INTERNAL_H
#define MSB_CONFINE_INTERNAL_H

#include <stdbool.h>

#include <msb/confine.h>
#include <msb/error.h>

/* Deepest directory tree a recursive remove descends: each level holds one fd open. */
#define CONFINE_MAX_DEPTH 512

/* Whether `path` names the working directory itself ("" or "."). */
bool confine_is_root(const char *path);

/*
 * Open the directory that holds `path`'s last component, and point *leaf at that component
 * inside `path`. `create` makes missing directories on the way (never through a link). The
 * fd is O_PATH, for *at calls only; close it. `op` names the calling operation in refusals.
 */
msb_errc confine_open_parent(int root_fd, const char *op, const char *path, bool create,
			     int *dir_fd, const char **leaf, msb_error *err);

/* Open directory `path` itself as an O_PATH fd, walking it (and creating it when `create`). */
msb_errc confine_open_dir(int root_fd, const char *op, const char *path, bool create,
			  int *dir_fd, msb_error *err);

/*
 * Open `path` itself with `oflags` (O_NOFOLLOW and O_CLOEXEC are added): one openat2 where
 * the kernel has it, the component walk otherwise.
 */
msb_errc confine_open_leaf(int root_fd, const char *op, const char *path, int oflags, int *fd,
			   msb_error *err);

/*
 * Turn errno `e`, from looking up `path` for `op`, into a refusal. ELOOP, ENOTDIR and EXDEV are
 * re-examined without following anything, so that a symlink on the way is named as the
 * escape it would be rather than reported as a bare errno.
 */
msb_errc confine_fail(int root_fd, const char *op, const char *path, int e, msb_error *err);

/* The msb_errc an errno maps to (ENOENT MSB_E_NOT_FOUND, …). */
msb_errc confine_errno_code(int e);

#endif
