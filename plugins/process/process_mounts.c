/*
 * process_mounts.c — the `process` sandbox's own view of the host's filesystem.
 *
 * The boundary shares the host's kernel and (read-only) its files; what it must not share:
 *  - /proc: the host's shows every process of the host — other sandboxes' agents and
 *    commands, the host's own agents — and through /proc/<pid>/{cwd,root,fd,environ,mem}
 *    their files, secrets and memory to any process of the same uid. The sandbox gets a
 *    proc of its own pid namespace: it sees its own processes alone;
 *  - anything writable: a command that can write to a host directory (/tmp, /var/tmp,
 *    /dev/shm, a home) can fill the host's disk, leave files behind disposal, and meet
 *    another sandbox there. The host's tree is made read-only (and nosuid) recursively in the
 *    sandbox's mount namespace, so the one writable place is the sandbox's own disk;
 *  - the state directory, where every sandbox's socket, pid file and `meta` (its scope and
 *    thread names) live: the sandbox's disk is mounted over it, so none of it is visible —
 *    but for one directory under `egress: allowlist`: the sandbox's own <dir>/egress, where
 *    the host's proxy listens (px). The agent's forwarder connects to it by that path, so it
 *    is bound back at the same path, read-only, from a descriptor opened before the disk
 *    hid it; no other sandbox's directory ever appears (process.c makes it its uid's alone);
 *  - the work directory's path: the spec's work_dir (e.g. /msb/work) is where the sandbox's
 *    work directory really is, so `pwd` and `cat /msb/work/x` mean what they say.
 *
 * The disk is a tmpfs with size= (the `disk:` ceiling): a guest that writes past it gets
 * ENOSPC inside, and nothing it writes reaches the host's disk. Its pages are memory (or
 * swap); this boundary has no memory cgroup to charge them to, so the ceiling is what
 * bounds them. It needs no clean-up: the mount belongs to the sandbox's mount namespace and
 * goes with its last process — no mount or loop device is ever left on the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/mount.h>

#include "process_mounts.h"

/* "<a>/<b>" into out (cap bytes) without stdio's locale or allocation. */
static int join(char *out, size_t cap, const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	if (na + 1 + nb + 1 > cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(out, a, na);
	out[na] = '/';
	memcpy(out + na + 1, b, nb + 1);
	return 0;
}

/* Whether `path` is `dir` or beneath it. */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* mkdir -p, each missing directory 0755 (a mount point, empty on the host). */
static int make_path(const char *path)
{
	char p[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -1;
		p[i] = c;
	}
	return 0;
}

/* A directory of the disk, made with `mode` exactly (no umask) and owned as given. */
static int disk_dir(const char *disk, const char *leaf, mode_t mode, uid_t uid, gid_t gid, int *fd)
{
	char p[PATH_MAX];
	if (join(p, sizeof p, disk, leaf) < 0 || mkdir(p, mode) < 0 || chmod(p, mode) < 0 ||
	    chown(p, uid, gid) < 0)
		return -1;
	*fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return *fd < 0 ? -1 : 0;
}

/* Bind the directory open as `fd` at `target` (through /proc/self/fd: the source itself
 * may already be hidden under an earlier mount, e.g. a state directory under /tmp). */
static int bind_fd(int fd, const char *target)
{
	char src[32] = "/proc/self/fd/";
	char num[12];
	size_t n = sizeof num;
	num[--n] = '\0';
	do
		num[--n] = (char)('0' + fd % 10);
	while ((fd /= 10) && n);
	memcpy(src + 14, num + n, sizeof num - n);
	return mount(src, target, NULL, MS_BIND, NULL);
}

/*
 * The sandbox's own egress directory back at its path, once every other mount is in place
 * (a state directory under /tmp is reached through the sandbox's own /tmp by then, so the
 * mount point is made there, or on the disk; never on the host's read-only tree). Read-only
 * and inert as bwrap's --ro-bind: the guest connects to the socket, it never writes there.
 */
static int bind_egress(int fd, const char *path)
{
	struct mount_attr inert = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
						MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC };
	if (make_path(path) < 0 || bind_fd(fd, path) < 0)
		return -1;
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, 0, &inert, sizeof inert);
}

int process_view_build(const process_view *v, const char **stage)
{
	int work = -1, tmp = -1, shm = -1, egress = -1;
	/* Nothing mounted here may propagate back to the host (or from it, half-way). */
	*stage = "private mounts";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	/* The mount point of the work directory, before the host's tree is read-only: an
	 * empty directory on the host (made once, shared by every sandbox; as root only — an
	 * unprivileged msb refuses a work_dir that does not exist, see process.c). */
	*stage = "work_dir's mount point";
	bool on_disk = under(v->work_dir, "/tmp") || under(v->work_dir, "/dev/shm");
	if (!on_disk && make_path(v->work_dir) < 0)
		return -1;
	*stage = "read-only host tree";
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID };
	if (syscall(SYS_mount_setattr, -1, "/", AT_RECURSIVE, &ro, sizeof ro) < 0)
		return -1;
	/* Opened in this mount namespace (a bind's source must be one of its own mounts) and
	 * before the disk covers the state directory: afterwards no path leads to it. */
	*stage = "the egress directory";
	if (v->egress_dir &&
	    (egress = open(v->egress_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	*stage = "the disk (tmpfs)";
	if (mount("msb-disk", v->state_dir, "tmpfs", MS_NOSUID | MS_NODEV, v->disk_opts) < 0)
		return -1;
	*stage = "the disk's directories";
	if (disk_dir(v->state_dir, "work", 0700, v->uid, v->gid, &work) < 0 ||
	    disk_dir(v->state_dir, "tmp", 01777, 0, 0, &tmp) < 0 ||
	    disk_dir(v->state_dir, "shm", 01777, 0, 0, &shm) < 0)
		return -1;
	*stage = "/tmp";
	if (bind_fd(tmp, "/tmp") < 0)
		return -1;
	*stage = "/dev/shm";
	struct stat st;
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && bind_fd(shm, "/dev/shm") < 0)
		return -1;
	/* A work_dir under /tmp or /dev/shm: its mount point is made on the sandbox's own disk. */
	*stage = "work_dir";
	if ((on_disk && make_path(v->work_dir) < 0) || bind_fd(work, v->work_dir) < 0)
		return -1;
	*stage = "the egress directory's bind";
	if (egress >= 0 && bind_egress(egress, v->egress_dir) < 0)
		return -1;
	close(work), close(tmp), close(shm);
	if (egress >= 0)
		close(egress);
	return 0;
}

int process_view_proc(void)
{
	return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}
