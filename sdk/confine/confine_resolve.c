/*
 * confine_resolve.c — looking a path up beneath a directory fd without ever following a link.
 *
 * Two ways, chosen once per process: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS resolves a whole path in one call and fails it if any component is a
 * link or leaves the fd's tree; on a kernel without openat2 (before 5.6, or a seccomp policy
 * answering ENOSYS) the same guarantee comes from opening one component at a time with
 * O_NOFOLLOW | O_DIRECTORY, each relative to the fd of the one before. Both hold under a
 * concurrent rename: every step is relative to an fd already open, never to a path string
 * re-resolved later, which is the gap a resolve-then-write check leaves open.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine_internal.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define RESOLVE_CONFINED (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
/* openat2 answers EAGAIN when a concurrent rename made a lookup unverifiable; it is retried. */
#define OPENAT2_RETRIES 16

/* -1: not decided yet; 0: openat2 when the kernel has it; 1: the walk, forced. */
static atomic_int forced = -1;
/* -1: not probed; 0: no openat2; 1: openat2 works. */
static atomic_int kernel_has_openat2 = -1;

void msb_confine_force_fallback(bool force)
{
	atomic_store(&forced, force ? 1 : 0);
}

static bool fallback_forced(void)
{
	int f = atomic_load(&forced);
	if (f < 0) {
		const char *env = getenv("MSB_CONFINE_FALLBACK");
		int want = env && env[0] && strcmp(env, "0") != 0;
		int expected = -1;
		atomic_compare_exchange_strong(&forced, &expected, want);
		f = atomic_load(&forced);
	}
	return f == 1;
}

static int raw_openat2(int dir_fd, const char *path, int oflags, unsigned long long resolve)
{
	struct open_how how = { .flags = (unsigned long long)oflags, .mode = 0, .resolve = resolve };
	for (int i = 0; i < OPENAT2_RETRIES; i++) {
		long fd = syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
		if (fd >= 0 || errno != EAGAIN)
			return (int)fd;
	}
	return -1;
}

bool msb_confine_uses_openat2(void)
{
	if (fallback_forced())
		return false;
	int has = atomic_load(&kernel_has_openat2);
	if (has < 0) {
		int fd = raw_openat2(AT_FDCWD, "/", O_PATH | O_CLOEXEC, RESOLVE_NO_SYMLINKS);
		has = fd >= 0;
		if (fd >= 0)
			close(fd);
		atomic_store(&kernel_has_openat2, has);
	}
	return has == 1;
}

/*
 * One directory component (no '/'), never through a link. The walk opens the component
 * itself (O_PATH | O_NOFOLLOW yields the link, not its target) and looks at what it holds,
 * so "that was a link" is decided on the object opened, not on a second lookup a concurrent
 * rename could answer differently.
 */
static int must_be_dir(int fd)
{
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		int e = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int open_component(int dir_fd, const char *name)
{
	if (msb_confine_uses_openat2())
		return must_be_dir(
			raw_openat2(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, RESOLVE_CONFINED));
	return must_be_dir(openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
}

msb_errc confine_errno_code(int e)
{
	switch (e) {
	case ENOENT:
		return MSB_E_NOT_FOUND;
	case ENOTDIR:
		return MSB_E_NOT_DIR;
	case EISDIR:
		return MSB_E_IS_DIR;
	case EACCES:
	case EPERM:
		return MSB_E_PERMISSION;
	case ENOMEM:
		return MSB_E_NOMEM;
	case ELOOP:
	case EXDEV:
	case ENAMETOOLONG:
		return MSB_E_VALUE;
	default:
		return MSB_E_OS;
	}
}

/*
 * The first component of `path` (walked without following) that is a symlink, copied into
 * `found`; false when none is. Used only to word a refusal the kernel already made, so a
 * race here changes the sentence, never the outcome.
 */
static bool first_link(int root_fd, const char *path, char *found, size_t size)
{
	char walked[PATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof walked)
		return false;
	memcpy(walked, path, len + 1);
	for (char *p = walked;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		struct stat st;
		if (fstatat(root_fd, walked, &st, AT_SYMLINK_NOFOLLOW) != 0)
			return false;
		if (S_ISLNK(st.st_mode)) {
			size_t n = strlen(walked);
			if (n >= size)
				n = size - 1;
			memcpy(found, walked, n);
			found[n] = '\0';
			return true;
		}
		if (saved == '\0' || !S_ISDIR(st.st_mode))
			return false;
		*p = saved;
	}
}

msb_errc confine_fail(int root_fd, const char *op, const char *path, int e, msb_error *err)
{
	if (e == ELOOP || e == ENOTDIR || e == EXDEV) {
		char link[PATH_MAX];
		bool linked = first_link(root_fd, path, link, sizeof link);
		/*
		 * The protocol's read of a link at the final component is the OS error a
		 * no-follow open raises (ELOOP); only a path through a linked parent — a way
		 * out of the working directory — is the value error.
		 */
		if (linked && strcmp(link, path) == 0 && strcmp(op, "read_file") == 0)
			return msb_error_set_errno(err, MSB_E_OS, ELOOP,
						   "read_file '%s': it is a symbolic link, which a read "
						   "never follows", path);
		if (linked)
			return msb_error_set(err, MSB_E_VALUE,
					     "%s refused '%s': '%s' is a symbolic link, and a path "
					     "through or onto a link could leave the working directory",
					     op, path, link);
		if (e != ENOTDIR)
			return msb_error_set(err, MSB_E_VALUE,
					     "%s refused '%s': resolving it would leave the working "
					     "directory or cross a link (%s)",
					     op, path, strerror(e));
	}
	if (e == ENAMETOOLONG)
		return msb_error_set(err, MSB_E_VALUE, "%s refused '%.64s…': the name is too long (%s)",
				     op, path, strerror(e));
	return msb_error_set_errno(err, confine_errno_code(e), e, "%s '%s'", op, path);
}

/* Walk `count` bytes of `path` component by component from `root_fd`. */
static msb_errc walk(int root_fd, const char *op, const char *path, size_t count, bool create,
		     int *dir_fd, msb_error *err)
{
	char name[NAME_MAX + 1];
	int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "%s '%s': dup", op, path);
	size_t at = 0;
	while (at < count) {
		const char *slash = memchr(path + at, '/', count - at);
		size_t n = (slash ? (size_t)(slash - path) : count) - at;
		if (n > NAME_MAX) { /* only a host-given root gets here unchecked */
			close(fd);
			return confine_fail(root_fd, op, path, ENAMETOOLONG, err);
		}
		memcpy(name, path + at, n);
		name[n] = '\0';
		int next = open_component(fd, name);
		if (next < 0 && errno == ENOENT && create) {
			/* 0777 less the umask, as mkdir(1) would; EEXIST is a racing creator. */
			if (mkdirat(fd, name, 0777) != 0 && errno != EEXIST) {
				int e = errno;
				close(fd);
				return confine_fail(root_fd, op, path, e, err);
			}
			next = open_component(fd, name);
		}
		int e = errno;
		close(fd);
		if (next < 0)
			return confine_fail(root_fd, op, path, e, err);
		fd = next;
		at += n + 1;
	}
	*dir_fd = fd;
	return MSB_OK;
}

msb_errc confine_open_parent(int root_fd, const char *op, const char *path, bool create,
			     int *dir_fd, const char **leaf, msb_error *err)
{
	const char *slash = strrchr(path, '/');
	*leaf = slash ? slash + 1 : path;
	size_t count = slash ? (size_t)(slash - path) : 0;
	if (count == 0 || create || !msb_confine_uses_openat2())
		return walk(root_fd, op, path, count, create, dir_fd, err);
	char dir[PATH_MAX];
	memcpy(dir, path, count);
	dir[count] = '\0';
	int fd = must_be_dir(
		raw_openat2(root_fd, dir, O_PATH | O_NOFOLLOW | O_CLOEXEC, RESOLVE_CONFINED));
	if (fd < 0)
		return confine_fail(root_fd, op, path, errno, err);
	*dir_fd = fd;
	return MSB_OK;
}

msb_errc confine_open_dir(int root_fd, const char *op, const char *path, bool create,
			  int *dir_fd, msb_error *err)
{
	return walk(root_fd, op, path, strlen(path), create, dir_fd, err);
}

msb_errc confine_open_leaf(int root_fd, const char *op, const char *path, int oflags, int *fd,
			   msb_error *err)
{
	oflags |= O_NOFOLLOW | O_CLOEXEC;
	if (msb_confine_uses_openat2()) {
		int got = raw_openat2(root_fd, path, oflags, RESOLVE_CONFINED);
		if (got < 0)
			return confine_fail(root_fd, op, path, errno, err);
		*fd = got;
		return MSB_OK;
	}
	int dir_fd;
	const char *leaf;
	msb_errc rc = confine_open_parent(root_fd, op, path, false, &dir_fd, &leaf, err);
	if (rc != MSB_OK)
		return rc;
	int got = openat(dir_fd, leaf, oflags);
	int e = errno;
	close(dir_fd);
	if (got < 0)
		return confine_fail(root_fd, op, path, e, err);
	*fd = got;
	return MSB_OK;
}

msb_errc msb_confine_open_root(const char *directory, int *root_fd, msb_error *err)
{
	if (!directory || directory[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "working directory '%s' is not absolute",
				     directory ? directory : "(null)");
	size_t len = strlen(directory);
	if (len >= PATH_MAX)
		return msb_error_set(err, MSB_E_VALUE, "working directory '%.64s…' is over PATH_MAX",
				     directory);
	/* Host-chosen, so "a//b" and a trailing '/' are tolerated; ".." is not. */
	char rel[PATH_MAX];
	size_t out = 0;
	for (const char *seg = directory; *seg;) {
		while (*seg == '/')
			seg++;
		size_t n = strcspn(seg, "/");
		if (n == 2 && seg[0] == '.' && seg[1] == '.')
			return msb_error_set(err, MSB_E_VALUE,
					     "working directory '%s' has a '..' segment", directory);
		if (n && !(n == 1 && seg[0] == '.')) {
			if (out)
				rel[out++] = '/';
			memcpy(rel + out, seg, n);
			out += n;
		}
		seg += n;
	}
	rel[out] = '\0';
	int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (slash < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "opening '/'");
	if (out == 0) {
		*root_fd = slash;
		return MSB_OK;
	}
	int fd;
	msb_errc rc = confine_open_leaf(slash, "open working directory", rel, O_PATH, &fd, err);
	if (rc == MSB_OK && (fd = must_be_dir(fd)) < 0)
		rc = confine_fail(slash, "open working directory", rel, errno, err);
	close(slash);
	if (rc != MSB_OK)
		return rc;
	*root_fd = fd;
	return MSB_OK;
}
