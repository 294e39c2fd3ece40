/*
 * cgroup.c — creating a sandbox's cgroup (one directory per hierarchy a limit needs, plus a
 * kill handle), writing its limits, saving and loading its directory list, and joining it
 * (the caller, or a child born inside it).
 * Tearing it down is cgroup_destroy.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h> /* struct clone_args, CLONE_INTO_CGROUP */
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup_internal.h"

void msb_cgroup_dir_paths(msb_cgroup_member_dir *d)
{
	snprintf(d->procs, sizeof d->procs, "%s/cgroup.procs", d->path);
	snprintf(d->join, sizeof d->join, "%s/%s", d->path, d->v2 ? "cgroup.procs" : "tasks");
}

msb_errc msb_cgroup_write(const char *dir, const char *file, const char *text, msb_error *err)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "cgroups: cannot open %s", path);
	size_t len = strlen(text);
	ssize_t n = write(fd, text, len);
	int saved = errno;
	close(fd);
	if (n != (ssize_t)len)
		return msb_error_set_errno(err, MSB_E_OS, n < 0 ? saved : EIO,
					   "cgroups: cannot write \"%s\" to %s", text, path);
	return MSB_OK;
}

/* mkdir -p of `path` below an existing `root`; an existing directory is fine. */
static msb_errc make_dirs(const char *root, const char *rel, msb_error *err)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", root, rel) >= (int)sizeof path)
		return msb_error_set(err, MSB_E_VALUE, "cgroups: path %s/%s is too long", root, rel);
	for (char *p = path + strlen(root) + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return msb_error_set_errno(err, MSB_E_OS, errno, "cgroups: cannot create %s", path);
		*p = c;
		if (!c)
			return MSB_OK;
	}
}

/*
 * A v2 controller works in a child only when every ancestor lists it in
 * cgroup.subtree_control ("no internal processes": those ancestors hold no process of ours).
 */
static msb_errc enable_v2(const msb_cgroup_mount *m, const char *parent, const char *controller,
			  msb_error *err)
{
	char word[64];
	snprintf(word, sizeof word, "+%s", controller);
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", m->path);
	const char *rest = parent;
	for (;;) {
		msb_errc rc = msb_cgroup_write(dir, "cgroup.subtree_control", word, err);
		if (rc)
			return rc;
		if (!*rest)
			return MSB_OK;
		const char *slash = strchr(rest, '/');
		size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
		size_t used = strlen(dir);
		if (used + n + 2 > sizeof dir)
			return msb_error_set(err, MSB_E_VALUE, "cgroups: parent %s is too long", parent);
		dir[used] = '/';
		memcpy(dir + used + 1, rest, n);
		dir[used + 1 + n] = '\0';
		rest += n + (slash ? 1 : 0);
	}
}

/* The directory for `m` in cg, added when first needed. */
static msb_cgroup_member_dir *dir_for(msb_cgroup *cg, const msb_cgroup_mount *m, const char *parent,
			       const char *name, msb_error *err)
{
	char path[sizeof cg->dirs[0].path];
	if (snprintf(path, sizeof path, "%s/%s/%s", m->path, parent, name) >= (int)sizeof path) {
		msb_error_set(err, MSB_E_VALUE, "cgroups: %s/%s/%s is too long", m->path, parent, name);
		return NULL;
	}
	for (size_t i = 0; i < cg->len; i++)
		if (strcmp(cg->dirs[i].path, path) == 0)
			return &cg->dirs[i];
	if (cg->len == MSB_CGROUP_MAX_DIRS) {
		msb_error_set(err, MSB_E_VALUE, "cgroups: more than %d hierarchies", MSB_CGROUP_MAX_DIRS);
		return NULL;
	}
	/*
	 * The parents exist after the first sandbox, so the leaf is tried first (each mkdir of
	 * an existing parent costs a system call on every start). A parent another process
	 * removes while empty, between our mkdirs, is made again.
	 */
	int made = mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : errno;
	for (int attempt = 0; made == ENOENT && attempt < 5; attempt++) {
		if (make_dirs(m->path, parent, err))
			return NULL;
		made = mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : errno;
	}
	if (made) {
		msb_error_set_errno(err, MSB_E_OS, made, "cgroups: cannot create %s", path);
		return NULL;
	}
	msb_cgroup_member_dir *d = &cg->dirs[cg->len++];
	memcpy(d->path, path, sizeof path);
	d->v2 = m->v2;
	msb_cgroup_dir_paths(d);
	return d;
}

/*
 * Refuse a limit nothing mounted can enforce, naming the limit and the controller; but only
 * after a fresh read of the mounts, as `mounts` may be a kept copy (msb_cgroup_mounts_read).
 */
static const msb_cgroup_mount *need(msb_cgroup_mounts *mounts, const char *controller,
				    const char *what, msb_error *err)
{
	const msb_cgroup_mount *m = msb_cgroup_mounts_find(mounts, controller);
	if (!m) {
		msb_cgroup_mounts_forget();
		if (msb_cgroup_mounts_read(mounts, err))
			return NULL;
		m = msb_cgroup_mounts_find(mounts, controller);
	}
	if (!m)
		msb_error_set(err, MSB_E_BACKEND,
			      "cgroups: a %s limit is configured but no mounted hierarchy (v1 or v2) carries "
			      "the %s controller, so it could not be enforced; refusing rather than "
			      "running without it",
			      what, controller);
	return m;
}

/*
 * Find the hierarchy for `controller` (refusing a limit nothing mounted carries), enable it
 * on the way down in v2, make the directory and mark it for msb_cgroup_apply.
 */
static msb_errc prepare_limit(msb_cgroup *cg, msb_cgroup_mounts *mounts, const char *parent,
			      const char *name, const char *controller, const char *what,
			      unsigned limit, msb_error *err)
{
	const msb_cgroup_mount *m = need(mounts, controller, what, err);
	if (!m || (m->v2 && enable_v2(m, parent, controller, err)))
		return err ? err->code : MSB_E_BACKEND;
	msb_cgroup_member_dir *d = dir_for(cg, m, parent, name, err);
	if (!d)
		return err ? err->code : MSB_E_OS;
	d->limits |= limit;
	return MSB_OK;
}

static msb_errc write_memory(const msb_cgroup_member_dir *d, uint64_t bytes, msb_error *err)
{
	char text[32];
	snprintf(text, sizeof text, "%" PRIu64, bytes);
	msb_errc rc = msb_cgroup_write(d->path, d->v2 ? "memory.max" : "memory.limit_in_bytes", text, err);
	if (rc)
		return rc;
	/*
	 * Swap would let a hog exceed the ceiling by paging out; hold memory+swap to the same
	 * figure. Absent when the kernel has no swap accounting, which leaves nothing to hold.
	 */
	char probe[PATH_MAX + 32];
	const char *swap = d->v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes";
	snprintf(probe, sizeof probe, "%s/%s", d->path, swap);
	if (access(probe, F_OK) == 0)
		rc = msb_cgroup_write(d->path, swap, d->v2 ? "0" : text, err);
	return rc;
}

static msb_errc write_pids(const msb_cgroup_member_dir *d, uint64_t pids, msb_error *err)
{
	char text[32];
	snprintf(text, sizeof text, "%" PRIu64, pids);
	return msb_cgroup_write(d->path, "pids.max", text, err);
}

static msb_errc write_cpu(const msb_cgroup_member_dir *d, double cpus, msb_error *err)
{
	const long period = 100000; /* 100 ms, the kernel's default CFS period */
	long quota = (long)(cpus * (double)period);
	if (quota < 1000)
		quota = 1000; /* the kernel's floor */
	char text[64];
	if (d->v2) {
		snprintf(text, sizeof text, "%ld %ld", quota, period);
		return msb_cgroup_write(d->path, "cpu.max", text, err);
	}
	snprintf(text, sizeof text, "%ld", period);
	msb_errc rc = msb_cgroup_write(d->path, "cpu.cfs_period_us", text, err);
	if (rc)
		return rc;
	snprintf(text, sizeof text, "%ld", quota);
	return msb_cgroup_write(d->path, "cpu.cfs_quota_us", text, err);
}

/*
 * The kill handle: a v2 directory when the v2 mount is writable (cgroup.kill, kernel 5.14+,
 * ends every member in one write, forks in flight included); otherwise the v1 freezer, so
 * the members can be stopped before they are signalled and cannot fork past the kill.
 */
static msb_errc add_kill_handle(msb_cgroup *cg, const msb_cgroup_mounts *mounts, const char *parent,
				const char *name, msb_error *err)
{
	const msb_cgroup_mount *v2 = msb_cgroup_mounts_v2(mounts);
	if (v2 && access(v2->path, W_OK) == 0)
		return dir_for(cg, v2, parent, name, err) ? MSB_OK : err ? err->code : MSB_E_OS;
	/* Neither writable (msb is not root, nothing delegated): no kill handle. Disposal then
	 * relies on the engine's own teardown (bwrap's pid namespace), and any limit asked for
	 * has already been refused above, never dropped. */
	const msb_cgroup_mount *fz = msb_cgroup_mounts_find(mounts, "freezer");
	if (fz && !fz->v2 && access(fz->path, W_OK) == 0) {
		msb_cgroup_member_dir *d = dir_for(cg, fz, parent, name, err);
		if (!d)
			return err ? err->code : MSB_E_OS;
		d->freezer = true;
	}
	return MSB_OK;
}

msb_errc msb_cgroup_prepare(const char *parent, const char *name, const msb_cgroup_limits *limits,
			    msb_cgroup **out, msb_error *err)
{
	*out = NULL;
	if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return msb_error_set(err, MSB_E_VALUE, "cgroups: name \"%s\" is not one path component",
				     name ? name : "");
	if (!parent || parent[0] == '/' || strstr(parent, ".."))
		return msb_error_set(err, MSB_E_VALUE,
				     "cgroups: parent \"%s\" must be a relative path without \"..\"",
				     parent ? parent : "");
	/* Refused before any directory is made, whatever the hierarchies' own paths add. */
	if (strlen(parent) + strlen(name) + 2 > MSB_CGROUP_PATH_MAX)
		return msb_error_set(err, MSB_E_VALUE,
				     "cgroups: %s/%s is too long: a cgroup directory's path is at most "
				     "%d bytes here",
				     parent, name, MSB_CGROUP_PATH_MAX - 1);
	msb_cgroup_mounts *mounts = calloc(1, sizeof *mounts);
	msb_cgroup *cg = calloc(1, sizeof *cg);
	msb_errc rc = (!mounts || !cg) ? msb_error_set(err, MSB_E_NOMEM, "cgroups: out of memory")
				       : msb_cgroup_mounts_read(mounts, err);
	if (!rc)
		cg->limits = *limits;
	if (!rc && limits->memory_bytes)
		rc = prepare_limit(cg, mounts, parent, name, "memory", "memory", MSB_CGROUP_LIMIT_MEMORY, err);
	if (!rc && limits->pids)
		rc = prepare_limit(cg, mounts, parent, name, "pids", "process-count", MSB_CGROUP_LIMIT_PIDS, err);
	if (!rc && limits->cpus > 0)
		rc = prepare_limit(cg, mounts, parent, name, "cpu", "CPU", MSB_CGROUP_LIMIT_CPU, err);
	if (!rc)
		rc = add_kill_handle(cg, mounts, parent, name, err);
	free(mounts);
	if (rc) {
		if (cg)
			msb_cgroup_destroy(cg, 1.0, NULL);
		msb_cgroup_free(cg);
		return rc;
	}
	*out = cg;
	return MSB_OK;
}

msb_errc msb_cgroup_apply(const msb_cgroup *cg, msb_error *err)
{
	msb_errc rc = MSB_OK;
	for (size_t i = 0; i < cg->len && !rc; i++) {
		const msb_cgroup_member_dir *d = &cg->dirs[i];
		if (d->limits & MSB_CGROUP_LIMIT_MEMORY)
			rc = write_memory(d, cg->limits.memory_bytes, err);
		if (!rc && (d->limits & MSB_CGROUP_LIMIT_PIDS))
			rc = write_pids(d, cg->limits.pids, err);
		if (!rc && (d->limits & MSB_CGROUP_LIMIT_CPU))
			rc = write_cpu(d, cg->limits.cpus, err);
	}
	return rc;
}

msb_errc msb_cgroup_create(const char *parent, const char *name, const msb_cgroup_limits *limits,
			   msb_cgroup **out, msb_error *err)
{
	msb_errc rc = msb_cgroup_prepare(parent, name, limits, out, err);
	if (rc || (rc = msb_cgroup_apply(*out, err)) == MSB_OK)
		return rc;
	msb_cgroup_destroy(*out, 1.0, NULL);
	msb_cgroup_free(*out);
	*out = NULL;
	return rc;
}

msb_errc msb_cgroup_save(const msb_cgroup *cg, const char *file, msb_error *err)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", file) >= (int)sizeof tmp)
		return msb_error_set(err, MSB_E_VALUE, "cgroups: path %s is too long", file);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return msb_error_set_errno(err, MSB_E_OS, errno, "cgroups: cannot write %s", tmp);
	for (size_t i = 0; i < cg->len; i++)
		fprintf(f, "%s %s\n", cg->dirs[i].v2 ? "v2" : cg->dirs[i].freezer ? "freezer" : "v1",
			cg->dirs[i].path);
	/* No fsync: the file matters while the host runs; after a reboot its cgroups are gone. */
	bool ok = fflush(f) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, file) != 0) {
		int saved = errno;
		unlink(tmp);
		return msb_error_set_errno(err, MSB_E_OS, saved, "cgroups: cannot save %s", file);
	}
	return MSB_OK;
}

msb_errc msb_cgroup_load(const char *file, msb_cgroup **out, msb_error *err)
{
	*out = NULL;
	FILE *f = fopen(file, "re");
	if (!f)
		return msb_error_set_errno(err, errno == ENOENT ? MSB_E_NOT_FOUND : MSB_E_OS, errno,
					   "cgroups: cannot read %s", file);
	msb_cgroup *cg = calloc(1, sizeof *cg);
	if (!cg) {
		fclose(f);
		return msb_error_set(err, MSB_E_NOMEM, "cgroups: out of memory");
	}
	char kind[16], path[PATH_MAX];
	msb_errc rc = MSB_OK;
	while (fscanf(f, "%15s %4095s", kind, path) == 2) {
		/* Only cgroup directories are ever removed from here: a tampered file stops. */
		if (cg->len == MSB_CGROUP_MAX_DIRS || strncmp(path, "/sys/fs/cgroup/", 15) != 0 ||
		    strstr(path, "/../") || strlen(path) >= sizeof cg->dirs[0].path) {
			rc = msb_error_set(err, MSB_E_VALUE, "cgroups: %s names \"%s\", not a cgroup directory",
					   file, path);
			break;
		}
		msb_cgroup_member_dir *d = &cg->dirs[cg->len++];
		strcpy(d->path, path);
		d->v2 = strcmp(kind, "v2") == 0;
		d->freezer = strcmp(kind, "freezer") == 0;
		msb_cgroup_dir_paths(d);
	}
	fclose(f);
	if (rc) {
		free(cg);
		return rc;
	}
	*out = cg;
	return MSB_OK;
}

/* Write "0" to `d`'s join file: open/write/close only. 0 or an errno. */
static int join_dir(const msb_cgroup_member_dir *d)
{
	int fd = open(d->join, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ssize_t n = write(fd, "0", 1);
	int saved = errno;
	close(fd);
	return n == 1 ? 0 : n < 0 ? saved : EIO;
}

int msb_cgroup_join_all_but(const msb_cgroup *cg, ssize_t skip)
{
	for (size_t i = 0; i < cg->len; i++) {
		int e = (ssize_t)i == skip ? 0 : join_dir(&cg->dirs[i]);
		if (e)
			return e;
	}
	return 0;
}

int msb_cgroup_join_self(const msb_cgroup *cg)
{
	return msb_cgroup_join_all_but(cg, -1);
}

/* clone3 as fork, the child placed in the cgroup2 directory open at `dir_fd`. */
static pid_t clone_into(int dir_fd)
{
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)dir_fd;
	return (pid_t)syscall(SYS_clone3, &args, sizeof args);
}

ssize_t msb_cgroup_v2_index(const msb_cgroup *cg)
{
	for (size_t i = 0; i < cg->len; i++)
		if (cg->dirs[i].v2)
			return (ssize_t)i;
	return -1;
}

pid_t msb_cgroup_fork(const msb_cgroup *cg, int *join_error)
{
	*join_error = 0;
	ssize_t v2 = msb_cgroup_v2_index(cg);
	pid_t pid = -1;
	if (v2 >= 0) {
		int fd = open(cg->dirs[v2].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		pid = clone_into(fd);
		int saved = errno;
		close(fd);
		errno = saved;
		/* Out of memory or processes is the answer; anything else is clone3 missing,
		 * refused by a seccomp policy, or CLONE_INTO_CGROUP unknown: fork and join. */
		if (pid < 0 && (errno == EAGAIN || errno == ENOMEM))
			return -1;
		if (pid < 0)
			v2 = -1;
	}
	if (pid < 0)
		pid = fork();
	if (pid == 0)
		*join_error = msb_cgroup_join_all_but(cg, v2);
	return pid;
}

size_t msb_cgroup_count(const msb_cgroup *cg)
{
	return cg ? cg->len : 0;
}

const char *msb_cgroup_dir(const msb_cgroup *cg, size_t i)
{
	return cg && i < cg->len ? cg->dirs[i].path : NULL;
}

void msb_cgroup_free(msb_cgroup *cg)
{
	free(cg);
}
