/*
 * mount_plan.c — msb_mount_plan_apply (msb/mount_plan.h): a container's root, built and
 * entered from inside a fresh mount namespace, then the privileges a guest must not hold
 * dropped. Runs in a child that may share the host's memory: system calls only, on the
 * plan's own strings, paths joined on the stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <msb/mount_plan.h>

#define FAIL(what)                                                                        \
	do {                                                                              \
		*stage = (what);                                                          \
		return errno ? errno : EIO;                                               \
	} while (0)

/* root + guest into buf (no allocation); false when it does not fit. */
static bool join(char *buf, const char *root, const char *guest)
{
	size_t a = strlen(root), b = strlen(guest);
	if (a + b + 2 > PATH_MAX)
		return false;
	memcpy(buf, root, a);
	if (guest[0] != '/')
		buf[a++] = '/';
	memcpy(buf + a, guest, b + 1);
	return true;
}

/* mkdir -p of path's parents (and of path itself when `dir`), else an empty file at path. */
static int make_point(char *path, bool dir)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = mkdir(path, 0755);
		*p = '/';
		if (rc < 0 && errno != EEXIST)
			return -1;
	}
	if (dir)
		return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Bind host at root+guest, then make it read-only (unless writable), nosuid and nodev. */
static int bind_one(const char *root, const char *host, const char *guest, bool writable,
		    const char **stage)
{
	char at[PATH_MAX];
	struct stat st;
	errno = ENAMETOOLONG;
	if (!join(at, root, guest))
		FAIL("a bind's path");
	if (stat(host, &st) < 0)
		FAIL("a bind's host path");
	if (make_point(at, S_ISDIR(st.st_mode)) < 0)
		FAIL("a bind's mount point");
	if (mount(host, at, NULL, MS_BIND | MS_REC, NULL) < 0)
		FAIL("bind mount");
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | (writable ? 0 : MS_RDONLY);
	/* Device nodes are usable only where /dev binds them. */
	if (strncmp(guest, "/dev/", 5) != 0)
		flags |= MS_NODEV;
	if (mount(NULL, at, NULL, flags, NULL) < 0)
		FAIL("read-only remount of a bind");
	return 0;
}

static int mount_tmpfs(const char *root, const char *guest, const char *opts, const char **stage)
{
	char at[PATH_MAX];
	errno = ENAMETOOLONG;
	if (!join(at, root, guest))
		FAIL("a tmpfs path");
	if (make_point(at, true) < 0)
		FAIL("a tmpfs mount point");
	if (mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		FAIL("tmpfs mount");
	return 0;
}

static int make_dev(const char *root, const char **stage)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty", NULL };
	int rc = mount_tmpfs(root, "/dev", "mode=0755", stage);
	for (size_t i = 0; rc == 0 && nodes[i]; i++) {
		char host[32] = "/dev/", guest[32] = "/dev/";
		strcat(host, nodes[i]);
		strcat(guest, nodes[i]);
		rc = bind_one(root, host, guest, true, stage);
	}
	char at[PATH_MAX];
	if (rc == 0 && join(at, root, "/dev/fd") && symlink("/proc/self/fd", at) < 0 && errno != EEXIST)
		FAIL("/dev/fd");
	/*
	 * A devpts instance of the sandbox's own (a streamed exec's terminal, msb exec -t): the
	 * guest's ptys are numbered and seen apart from the host's.
	 */
	if (rc != 0)
		return rc;
	errno = ENAMETOOLONG;
	if (!join(at, root, "/dev/pts") || make_point(at, true) < 0)
		FAIL("the /dev/pts mount point");
	if (mount("devpts", at, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
		FAIL("mounting /dev/pts");
	if (join(at, root, "/dev/ptmx") && symlink("pts/ptmx", at) < 0 && errno != EEXIST)
		FAIL("/dev/ptmx");
	return 0;
}

/* The ambient set, then every capability the process holds (the bounding set went first). */
static int drop_caps(const char **stage)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		FAIL("clearing the ambient set");
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		FAIL("capset");
	return 0;
}

int msb_mount_plan_apply(const msb_mount_plan *plan, const char **stage)
{
	int rc;
	errno = 0;
	/* Nothing mounted from here on may propagate back into the host's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		FAIL("making every mount private");
	if (mount("tmpfs", plan->root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		FAIL("the new root's tmpfs");
	for (size_t i = 0; i < plan->n_binds; i++)
		if ((rc = bind_one(plan->root, plan->binds[i].host, plan->binds[i].guest,
				   plan->binds[i].writable, stage)))
			return rc;
	if (plan->tmp && (rc = mount_tmpfs(plan->root, "/tmp", "mode=1777", stage)))
		return rc;
	if (plan->dev && (rc = make_dev(plan->root, stage)))
		return rc;
	if (plan->proc) {
		char at[PATH_MAX];
		errno = ENAMETOOLONG;
		if (!join(at, plan->root, "/proc") || make_point(at, true) < 0)
			FAIL("the /proc mount point");
		if (mount("proc", at, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			FAIL("mounting /proc");
	}
	/* Every mount point exists now: the root itself becomes read-only. */
	if (mount(NULL, plan->root, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		FAIL("read-only remount of the new root");
	if (chdir(plan->root) < 0)
		FAIL("chdir into the new root");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		FAIL("pivot_root");
	/* The old root is stacked under the new one: detach it, so no host path is left. */
	if (umount2(".", MNT_DETACH) < 0)
		FAIL("detaching the old root");
	if (chdir("/") < 0)
		FAIL("chdir /");
	if (plan->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		FAIL("no_new_privs");
	if (plan->drop_caps) {
		/* The bounding set goes while CAP_SETPCAP is still held; the rest after setuid. */
		for (int cap = 0; cap <= 63; cap++)
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
				FAIL("dropping the bounding set");
	}
	if (plan->gid >= 0 && (syscall(SYS_setgroups, 0, NULL) < 0 ||
			       syscall(SYS_setresgid, plan->gid, plan->gid, plan->gid) < 0))
		FAIL("setting the gid");
	if (plan->uid >= 0 && syscall(SYS_setresuid, plan->uid, plan->uid, plan->uid) < 0)
		FAIL("setting the uid");
	if (plan->drop_caps && (rc = drop_caps(stage)))
		return rc;
	return 0;
}
