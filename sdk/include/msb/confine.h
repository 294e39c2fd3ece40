/*
 * msb/confine.h — file operations that cannot leave a working directory (backend SDK).
 *
 * Every sandbox file operation takes a POSIX path relative to a working directory, and a
 * model chose that path. These helpers do the operation so that nothing escapes: the
 * working directory is opened once as a directory fd, and every lookup below it is made by
 * the kernel with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
 * where it has that call, or by an O_NOFOLLOW | O_DIRECTORY openat walk one component at a
 * time where it does not. Either way a symlink is never followed — not in a parent, not at
 * the leaf — so there is no gap between checking a path and using it for a guest to swap a
 * directory for a link in.
 *
 * What is refused, each with the path named (MSB_E_VALUE unless said otherwise):
 *   - lexically: "" and "." (the working directory itself) for anything that writes or
 *     removes; an absolute path; a ".." or "." segment anywhere; an empty segment ("a//b",
 *     a trailing "/"); a backslash (the protocol has one path grammar and '\' is not a
 *     separator in it — the seed refuses it for guest paths too); a segment over NAME_MAX
 *     or a path over PATH_MAX;
 *   - by the filesystem: a symlinked parent, landing on a symlink (write/read/remove refuse
 *     it; stat and list report it as a link and never follow it), reading anything but a
 *     regular file (a FIFO is opened O_NONBLOCK and refused, never waited on).
 * Other failures map errno to a code: ENOENT MSB_E_NOT_FOUND, ENOTDIR MSB_E_NOT_DIR, EISDIR
 * MSB_E_IS_DIR, EACCES/EPERM MSB_E_PERMISSION, ENOMEM MSB_E_NOMEM, anything else MSB_E_OS.
 *
 * These depend on libc and on sdk/lib/{error,buf}.c alone, so the static guest agent compiles
 * the same sources. All functions are thread-safe; fds are O_CLOEXEC.
 */
#ifndef MSB_CONFINE_H
#define MSB_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Open an absolute directory (a sandbox's working directory, a sink's root) as the fd every
 * other call here resolves beneath. No component of `directory` may be a symlink: a guest
 * that can replace an ancestor of its working directory could otherwise move it. Close the
 * fd with close(2).
 */
msb_errc msb_confine_open_root(const char *directory, int *root_fd, msb_error *err);

/*
 * Lexical check alone: MSB_OK when `path` is a relative path these helpers would look up.
 * `allow_root` admits "" and "." (listing or stat-ing the working directory itself).
 */
/*
 * The protocol resolves a path against the working directory and refuses only what escapes:
 * an absolute `path` inside `working_directory` (or equal to it) is the relative path it
 * names there (*rel points into `path`; "" for the directory itself); a relative path is
 * left as it is; any other absolute path is refused (MSB_E_VALUE) as outside it.
 */
msb_errc msb_confine_relative(const char *path, const char *working_directory, const char **rel,
			      msb_error *err);
msb_errc msb_confine_check_path(const char *path, bool allow_root, msb_error *err);

/* msb_confine_write_file flags. */
#define MSB_CONFINE_CREATE_PARENTS 0x1u /* mkdir the missing parents (never through a link) */
#define MSB_CONFINE_EXCLUSIVE 0x2u      /* refuse an existing destination: MSB_E_LANDING_EXISTS */
#define MSB_CONFINE_SYNC 0x4u           /* fsync the file before it is renamed into place */

/*
 * Write `len` bytes to `path` atomically: a temporary file is created O_EXCL beside the
 * destination, filled, and swapped into place (renameat2 RENAME_EXCHANGE, then the old file
 * unlinked; a plain rename where there is nothing to replace), so a reader sees the old file
 * or the new, never half, and a failed write leaves no temporary behind. The destination is
 * never opened, so a hard link there loses its name and keeps its outside inode untouched.
 * A symlink at the destination is refused rather than replaced; so is a directory
 * (MSB_E_IS_DIR).
 */
msb_errc msb_confine_write_file(int root_fd, const char *path, const void *data, size_t len,
				unsigned flags, msb_error *err);

/*
 * Append the whole of regular file `path` to `out`. A file larger than `max_bytes` is refused
 * (MSB_E_TRANSFER_CAP_EXCEEDED, naming the file and the cap), never truncated, and at most
 * `max_bytes` bytes of it are ever read (plus one probe byte to catch a file that grew).
 */
msb_errc msb_confine_read_file(int root_fd, const char *path, uint64_t max_bytes, msb_buf *out,
			       msb_error *err);

/*
 * lstat `path`: a symlink is described as one (size -1), never followed. *found is false,
 * and MSB_OK returned, when nothing is there — including a missing parent. entry->path is a
 * heap copy of `path` (free it). Directories and other non-regular entries have size -1.
 * "" and "." describe the working directory itself.
 */
msb_errc msb_confine_stat(int root_fd, const char *path, msb_entry *entry, bool *found,
			  msb_error *err);

/*
 * Append the entries of directory `path` ("" or "." for the working directory) to `out`,
 * sorted by name, each with its path relative to the working directory. Symlinks are listed
 * as symlinks. A `path` that is itself a link is refused.
 */
msb_errc msb_confine_list_dir(int root_fd, const char *path, msb_entry_list *out,
			      msb_error *err);

/*
 * Remove `path`, the seed's three rules: a path that is not there is success (cleanup runs
 * on failure paths and must not report a second failure over the first); a link is removed,
 * never followed; a directory is refused without `recursive` (MSB_E_IS_DIR), empty or not.
 * The recursive walk opens every directory O_NOFOLLOW and unlinks links as links.
 */
msb_errc msb_confine_remove(int root_fd, const char *path, bool recursive, msb_error *err);

/* Create directory `path` and every missing parent, never through a link. Existing is fine. */
msb_errc msb_confine_mkdirs(int root_fd, const char *path, msb_error *err);

/*
 * The backend's reclaim: remove absolute `directory`, which must sit strictly under absolute
 * `working_directory`, and everything beneath it. A directory that is not there (or whose
 * working directory is not there) is success; anything else is an error.
 */
msb_errc msb_confine_reclaim(const char *directory, const char *working_directory,
			     msb_error *err);

/*
 * Whether lookups go through openat2 (true) or the O_NOFOLLOW walk (false). openat2 is used
 * when the kernel has it, unless the environment variable MSB_CONFINE_FALLBACK is set to a
 * non-empty value other than "0" when first asked, or msb_confine_force_fallback(true) was
 * called — both exist so that tests exercise the walk on a kernel that has openat2.
 */
bool msb_confine_uses_openat2(void);
void msb_confine_force_fallback(bool force);

#ifdef __cplusplus
}
#endif
#endif
