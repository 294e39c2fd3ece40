/*
 * image_unpack.c — applying one layer tar to an image root, confined (msb/image_store.h).
 *
 * libarchive only parses: it decompresses and hands over headers and data. Every file, link
 * and directory is made here, relative to an fd opened beneath the root with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (sdk/confine), so an entry cannot reach outside
 * the root by its name ("..", absolute), by a symlink an earlier entry planted, nor by a hard
 * link's target. libarchive's own disk writer is not used: its safety flags are opt-in and
 * resolve paths as strings, which is the gap a planted symlink walks through.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/confine.h>
#include <msb/image_store.h>

#include "../confine/confine_internal.h"
#include "image_internal.h"

#define WHITEOUT_PREFIX ".wh."
#define WHITEOUT_OPAQUE ".wh..wh..opq"
#define READ_BLOCK (128 * 1024)

/* What one layer is being applied with; refusals name `label` and the entry. */
typedef struct unpack {
	int root_fd;
	const char *label;
	bool whiteouts;
	const msb_image_limits *limits;
	uint64_t *total;
	image_pathset made; /* paths this layer created: an opaque marker keeps them */
} unpack;

/* Prefix whatever failed with the layer and the entry, so a refusal always names both. */
static msb_errc name_entry(const unpack *u, const char *entry, msb_errc rc, msb_error *err)
{
	if (rc != MSB_OK)
		msb_error_prefix(err, "image layer %s: entry \"%s\" refused", u->label, entry);
	return rc;
}

/*
 * A tar name in the form the confinement helpers take: "./" prefixes and trailing slashes
 * dropped (tar writers add both). "" is the root itself. Everything else — an absolute name,
 * "..", an empty or "." segment — is left for msb_confine_check_path to refuse.
 */
static void tar_name_normalize(char *s)
{
	while (s[0] == '.' && s[1] == '/')
		memmove(s, s + 2, strlen(s + 2) + 1);
	if (!strcmp(s, "."))
		s[0] = '\0';
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* "a/b/c" → "a/b" (into out); "" for a top-level name. */
static void parent_of(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (n >= size)
		n = size - 1;
	memcpy(out, path, n);
	out[n] = '\0';
}

/* Remove whatever is at `path` (not following links), so a new entry can take its place. */
static msb_errc clear_path(const unpack *u, const char *path, msb_error *err)
{
	return msb_confine_remove(u->root_fd, path, true, err);
}

/*
 * An opaque marker in directory `dir`: what lower layers put there is hidden, so every child
 * this layer did not itself create is removed (children may come before or after the marker
 * in the tar, so the ones made are remembered, not assumed absent).
 */
static msb_errc apply_opaque(unpack *u, const char *dir, msb_error *err)
{
	msb_errc rc = dir[0] ? msb_confine_mkdirs(u->root_fd, dir, err) : MSB_OK;
	msb_entry_list kids = { 0 };
	if (!rc)
		rc = msb_confine_list_dir(u->root_fd, dir[0] ? dir : ".", &kids, err);
	for (size_t i = 0; !rc && i < kids.len; i++)
		if (!image_pathset_has(&u->made, kids.items[i].path))
			rc = clear_path(u, kids.items[i].path, err);
	msb_entry_list_free(&kids);
	return rc;
}

static msb_errc apply_whiteout(unpack *u, const char *path, msb_error *err)
{
	char dir[PATH_MAX];
	parent_of(path, dir, sizeof dir);
	const char *base = base_of(path);
	if (!strcmp(base, WHITEOUT_OPAQUE))
		return apply_opaque(u, dir, err);
	const char *victim = base + strlen(WHITEOUT_PREFIX);
	if (!*victim || !strcmp(victim, ".") || !strcmp(victim, ".."))
		return msb_error_set(err, MSB_E_VALUE, "a whiteout must name an entry of its directory");
	char target[PATH_MAX];
	int n = snprintf(target, sizeof target, "%s%s%s", dir, dir[0] ? "/" : "", victim);
	if (n < 0 || (size_t)n >= sizeof target)
		return msb_error_set(err, MSB_E_VALUE, "whiteout path too long");
	/* The victim is checked like any name: a whiteout cannot remove what is not beneath. */
	msb_errc rc = msb_confine_check_path(target, false, err);
	return rc ? rc : clear_path(u, target, err);
}

/* Drop setuid, setgid and sticky: a layer's author does not choose who runs with privilege. */
static mode_t plain_mode(mode_t m)
{
	return m & 0777;
}

/* Open the parent of `path` (creating it) and clear the leaf for a new entry. */
static msb_errc open_slot(unpack *u, const char *path, int *dfd, const char **leaf,
			  msb_error *err)
{
	msb_errc rc = confine_open_parent(u->root_fd, "image unpack", path, true, dfd, leaf, err);
	if (rc)
		return rc;
	struct stat st;
	if (fstatat(*dfd, *leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode))
			rc = clear_path(u, path, err);
		else if (unlinkat(*dfd, *leaf, 0) != 0)
			rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "unlink");
	}
	if (rc) {
		close(*dfd);
		*dfd = -1;
	}
	return rc;
}

static msb_errc make_dir(unpack *u, const char *path, mode_t mode, msb_error *err)
{
	struct stat st;
	int dfd;
	const char *leaf;
	msb_errc rc = confine_open_parent(u->root_fd, "image unpack", path, true, &dfd, &leaf, err);
	if (rc)
		return rc;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    unlinkat(dfd, leaf, 0) != 0)
		rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "unlink");
	if (!rc && mkdirat(dfd, leaf, 0700) != 0 && errno != EEXIST)
		rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "mkdir");
	if (!rc) {
		int fd = openat(dfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchmod(fd, plain_mode(mode) | 0700) != 0)
			rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "chmod");
		if (fd >= 0)
			close(fd);
	}
	close(dfd);
	return rc;
}

static msb_errc write_data(unpack *u, struct archive *a, int fd, int64_t size, msb_error *err)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;
	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		/* A sparse or lying header may place data past its stated size. */
		if (off < 0 || (uint64_t)off + len > (uint64_t)size)
			return msb_error_set(err, MSB_E_VALUE, "data past the entry's stated size");
		for (size_t done = 0; done < len;) {
			ssize_t w = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return msb_error_set_errno(err, MSB_E_OS, errno, "write");
			}
			done += (size_t)w;
		}
	}
	if (r != ARCHIVE_EOF)
		return msb_error_set(err, MSB_E_VALUE, "corrupt data: %s", archive_error_string(a));
	/* Holes at the end of a sparse file are not data blocks; the size says where it ends. */
	if (ftruncate(fd, size) != 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "truncate");
	return MSB_OK;
}

static msb_errc make_file(unpack *u, struct archive *a, const char *path, mode_t mode,
			  int64_t size, msb_error *err)
{
	if (size < 0 || (uint64_t)size > u->limits->max_entry_bytes)
		return msb_error_set(err, MSB_E_VALUE, "its size %lld is over the per-file limit of "
				     "%llu bytes", (long long)size,
				     (unsigned long long)u->limits->max_entry_bytes);
	if (*u->total + (uint64_t)size > u->limits->max_total_bytes)
		return msb_error_set(err, MSB_E_VALUE, "the image would pass its total limit of %llu "
				     "bytes", (unsigned long long)u->limits->max_total_bytes);
	*u->total += (uint64_t)size;
	int dfd;
	const char *leaf;
	msb_errc rc = open_slot(u, path, &dfd, &leaf, err);
	if (rc)
		return rc;
	int fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "create");
	if (!rc)
		rc = write_data(u, a, fd, size, err);
	if (!rc && fchmod(fd, plain_mode(mode)) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "chmod");
	if (fd >= 0)
		close(fd);
	close(dfd);
	return rc;
}

static msb_errc make_symlink(unpack *u, const char *path, const char *target, msb_error *err)
{
	if (!target || !*target || strlen(target) >= PATH_MAX)
		return msb_error_set(err, MSB_E_VALUE, "a symlink needs a target under PATH_MAX");
	int dfd;
	const char *leaf;
	msb_errc rc = open_slot(u, path, &dfd, &leaf, err);
	if (rc)
		return rc;
	/* Stored as written and never followed here; the sandbox resolves it in its own root. */
	if (symlinkat(target, dfd, leaf) != 0)
		rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "symlink");
	close(dfd);
	return rc;
}

static msb_errc make_hardlink(unpack *u, const char *path, const char *raw_target,
			      msb_error *err)
{
	char target[PATH_MAX];
	if (strlen(raw_target) >= sizeof target)
		return msb_error_set(err, MSB_E_VALUE, "hard link target too long");
	strcpy(target, raw_target);
	tar_name_normalize(target);
	msb_errc rc = msb_confine_check_path(target, false, err);
	if (rc)
		return msb_error_prefix(err, "hard link target \"%s\"", raw_target);
	int tdfd, dfd;
	const char *tleaf, *leaf;
	rc = confine_open_parent(u->root_fd, "image unpack", target, false, &tdfd, &tleaf, err);
	if (rc)
		return msb_error_prefix(err, "hard link target \"%s\"", raw_target);
	struct stat st;
	if (fstatat(tdfd, tleaf, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) {
		close(tdfd);
		return msb_error_set(err, MSB_E_VALUE, "hard link target \"%s\" is not a file "
				     "already in the image", raw_target);
	}
	rc = open_slot(u, path, &dfd, &leaf, err);
	if (!rc) {
		/* No AT_SYMLINK_FOLLOW: a link to a symlink links the symlink, not what it names. */
		if (linkat(tdfd, tleaf, dfd, leaf, 0) != 0)
			rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "link");
		close(dfd);
	}
	close(tdfd);
	return rc;
}

static msb_errc make_fifo(unpack *u, const char *path, mode_t mode, msb_error *err)
{
	int dfd;
	const char *leaf;
	msb_errc rc = open_slot(u, path, &dfd, &leaf, err);
	if (rc)
		return rc;
	if (mkfifoat(dfd, leaf, plain_mode(mode)) != 0)
		rc = msb_error_set_errno(err, confine_errno_code(errno), errno, "mkfifo");
	close(dfd);
	return rc;
}

static msb_errc apply_entry(unpack *u, struct archive *a, struct archive_entry *e, char *path,
			    msb_error *err)
{
	tar_name_normalize(path);
	if (!path[0])
		return MSB_OK; /* "./": the root itself, which is the store's to own */
	msb_errc rc = msb_confine_check_path(path, false, err);
	if (rc)
		return rc;
	const char *base = base_of(path);
	if (u->whiteouts && !strncmp(base, WHITEOUT_PREFIX, strlen(WHITEOUT_PREFIX)))
		return apply_whiteout(u, path, err);
	const char *hardlink = archive_entry_hardlink(e);
	mode_t mode = archive_entry_mode(e);
	if (hardlink)
		rc = make_hardlink(u, path, hardlink, err);
	else
		switch (archive_entry_filetype(e)) {
		case AE_IFDIR:
			rc = make_dir(u, path, mode, err);
			break;
		case AE_IFREG:
			rc = make_file(u, a, path, mode, archive_entry_size(e), err);
			break;
		case AE_IFLNK:
			rc = make_symlink(u, path, archive_entry_symlink(e), err);
			break;
		case AE_IFIFO:
			rc = make_fifo(u, path, mode, err);
			break;
		case AE_IFCHR:
		case AE_IFBLK:
			/* A device node in an image is a door to the host's hardware; /dev is the
			 * backend's to provide. */
			return msb_error_set(err, MSB_E_VALUE, "device nodes are refused (the "
					     "sandbox's /dev is the backend's)");
		default:
			return msb_error_set(err, MSB_E_VALUE, "entry type 0%o is not a file, "
					     "directory, link or FIFO", (unsigned)archive_entry_filetype(e));
		}
	if (!rc)
		rc = image_pathset_add(&u->made, path, err);
	return rc;
}

msb_errc msb_image_unpack_layer(int root_fd, const char *layer_path, const char *label,
				int whiteouts, const msb_image_limits *limits,
				uint64_t *total_bytes, msb_error *err)
{
	msb_image_limits defaults;
	if (!limits) {
		msb_image_limits_default(&defaults);
		limits = &defaults;
	}
	uint64_t total_local = 0;
	unpack u = { .root_fd = root_fd, .label = label, .whiteouts = whiteouts != 0,
		     .limits = limits, .total = total_bytes ? total_bytes : &total_local };
	struct archive *a = archive_read_new();
	if (!a)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_empty(a);
	int fd = open(layer_path, O_RDONLY | O_CLOEXEC);
	msb_errc rc = MSB_OK;
	if (fd < 0)
		rc = msb_error_set_errno(err, confine_errno_code(errno), errno,
					 "image layer %s: open %s", label, layer_path);
	else if (archive_read_open_fd(a, fd, READ_BLOCK) != ARCHIVE_OK)
		rc = msb_error_set(err, MSB_E_VALUE, "image layer %s: not a tar archive: %s", label,
				   archive_error_string(a));
	uint64_t entries = 0;
	struct archive_entry *e;
	while (!rc) {
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			rc = msb_error_set(err, MSB_E_VALUE, "image layer %s: corrupt after %llu "
					   "entries: %s", label, (unsigned long long)entries,
					   archive_error_string(a));
			break;
		}
		if (++entries > limits->max_entries) {
			rc = msb_error_set(err, MSB_E_VALUE, "image layer %s: more than %llu entries "
					   "refused", label, (unsigned long long)limits->max_entries);
			break;
		}
		const char *name = archive_entry_pathname(e);
		if (!name || strlen(name) >= PATH_MAX) {
			rc = msb_error_set(err, MSB_E_VALUE, "image layer %s: entry %llu refused: no "
					   "name, or one over PATH_MAX", label,
					   (unsigned long long)entries);
			break;
		}
		char path[PATH_MAX];
		strcpy(path, name);
		rc = name_entry(&u, name, apply_entry(&u, a, e, path, err), err);
	}
	archive_read_free(a);
	if (fd >= 0)
		close(fd);
	image_pathset_free(&u.made);
	return rc;
}
