/*
 * bwrap_cgroup.c — the cgroup helpers the bwrap backend limits and kills with (msb/cgroup.h),
 * against this machine's real hierarchies: limits written where the detected controller
 * lives, a fork beyond pids.max refused, a daemon that left its session killed by destroy,
 * every directory removed, and the refusals. Skips (77) where msb cannot create cgroups
 * (not root, or nothing mounted).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

#include <msb/cgroup.h>
#include <msb/spawn.h>

#include "cgroup_internal.h"
#include "msb_test.h"

static char name[64];

static bool file_holds(const char *dir, const char *file, const char *want)
{
	char path[4200], got[128] = "";
	snprintf(path, sizeof path, "%s/%s", dir, file);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(got, sizeof got, f) != NULL;
	fclose(f);
	got[strcspn(got, "\n")] = '\0';
	return ok && strcmp(got, want) == 0;
}

/* The directory of `cg` whose path contains `needle` (a hierarchy's mount name), or NULL. */
static const char *dir_with(const msb_cgroup *cg, const char *file)
{
	for (size_t i = 0; i < msb_cgroup_count(cg); i++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", msb_cgroup_dir(cg, i), file);
		if (access(path, F_OK) == 0)
			return msb_cgroup_dir(cg, i);
	}
	return NULL;
}

/* The test's cgroup with the limits most cases use: 64 MiB, 16 tasks, half a CPU. */
static msb_cgroup *limited_cgroup(void)
{
	msb_cgroup_limits lim = { 64 * 1024 * 1024, 16, 0.5 };
	msb_cgroup *cg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_create("msb-test", name, &lim, &cg, &err), MSB_OK);
	return cg;
}

/*
 * Whether `cg`'s directories hold the limits {64 MiB, 16 tasks, half a CPU} (`limited`), or
 * what the kernel gives a new cgroup: no limit of any kind.
 */
static void assert_limits(const msb_cgroup *cg, bool limited)
{
	const char *mem = dir_with(cg, "memory.limit_in_bytes");
	if (mem)
		assert_true(file_holds(mem, "memory.limit_in_bytes",
				       limited ? "67108864" : "9223372036854771712"));
	else
		assert_true(file_holds(dir_with(cg, "memory.max"), "memory.max", limited ? "67108864" : "max"));
	assert_true(file_holds(dir_with(cg, "pids.max"), "pids.max", limited ? "16" : "max"));
	const char *cpu = dir_with(cg, "cpu.cfs_quota_us");
	if (cpu)
		assert_true(file_holds(cpu, "cpu.cfs_quota_us", limited ? "50000" : "-1"));
	else
		assert_true(file_holds(dir_with(cg, "cpu.max"), "cpu.max",
				       limited ? "50000 100000" : "max 100000"));
}

/* Destroy `cg` and check every one of its directories is gone. */
static void destroy_and_check_removed(msb_cgroup *cg)
{
	msb_error err = MSB_ERROR_INIT;
	size_t n = msb_cgroup_count(cg);
	char dirs[8][4096];
	for (size_t i = 0; i < n; i++)
		snprintf(dirs[i], sizeof dirs[i], "%s", msb_cgroup_dir(cg, i));
	assert_int_equal(msb_cgroup_destroy(cg, 5.0, &err), MSB_OK);
	msb_cgroup_free(cg);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(access(dirs[i], F_OK), -1);
}

static void limits_are_written_and_dirs_removed(void **state)
{
	(void)state;
	msb_cgroup *cg = limited_cgroup();
	assert_limits(cg, true);
	destroy_and_check_removed(cg);
}

/*
 * The two halves of create: prepare makes every directory a limit needs and writes no limit
 * (what a backend launches into), apply writes them all.
 */
static void prepare_writes_no_limit_until_apply(void **state)
{
	(void)state;
	msb_cgroup_limits lim = { 64 * 1024 * 1024, 16, 0.5 };
	msb_cgroup *cg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_prepare("msb-test", name, &lim, &cg, &err), MSB_OK);
	assert_limits(cg, false);
	assert_int_equal(msb_cgroup_apply(cg, &err), MSB_OK);
	assert_limits(cg, true);
	destroy_and_check_removed(cg);
}

/*
 * A limit that cannot be written after prepare (here: its directory removed behind msb's
 * back) is refused by apply, naming the file, and the rest of the cgroup still goes.
 */
static void apply_refuses_a_limit_it_cannot_write(void **state)
{
	(void)state;
	msb_cgroup_limits lim = { 0, 16, 0 };
	msb_cgroup *cg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_prepare("msb-test", name, &lim, &cg, &err), MSB_OK);
	const char *pids = dir_with(cg, "pids.max");
	assert_non_null(pids);
	char gone[4096];
	snprintf(gone, sizeof gone, "%s", pids);
	assert_int_equal(rmdir(gone), 0);
	assert_int_equal(msb_cgroup_apply(cg, &err), MSB_E_OS);
	assert_non_null(strstr(msb_error_message(&err), "cgroups: cannot open"));
	assert_non_null(strstr(msb_error_message(&err), "pids.max"));
	msb_error_clear(&err);
	destroy_and_check_removed(cg);
}

/* A child joins, then forks a daemon that leaves its session and double-forks. */
static void fork_bomb_is_held_and_daemon_is_killed(void **state)
{
	(void)state;
	msb_cgroup_limits lim = { 0, 8, 0 };
	msb_cgroup *cg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_create("msb-test", name, &lim, &cg, &err), MSB_OK);
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		if (msb_cgroup_join_self(cg) != 0)
			_exit(2);
		int made = 0;
		for (int i = 0; i < 50; i++) {
			pid_t p = fork();
			if (p == 0) {
				setsid();
				if (fork() == 0)
					for (;;)
						pause();
				_exit(0);
			}
			if (p < 0)
				break;
			made++;
		}
		ssize_t w = write(pipefd[1], &made, sizeof made);
		(void)w;
		for (;;)
			pause();
	}
	close(pipefd[1]);
	int made = -1;
	assert_int_equal(read(pipefd[0], &made, sizeof made), (ssize_t)sizeof made);
	close(pipefd[0]);
	/* 8 tasks at most: the child and what it managed before fork failed with EAGAIN. */
	assert_true(made > 0 && made < 8);
	assert_true(msb_cgroup_populated(cg));
	assert_int_equal(msb_cgroup_destroy(cg, 5.0, &err), MSB_OK);
	assert_false(msb_cgroup_populated(cg));
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	msb_cgroup_free(cg);
}

/* Whether `pid` is listed in `dir`/cgroup.procs. */
static bool member_of(const char *dir, pid_t pid)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	long p;
	bool found = false;
	while (!found && fscanf(f, "%ld", &p) == 1)
		found = p == (long)pid;
	fclose(f);
	return found;
}

/*
 * `child` is in every directory of `cg` and this process in none; then destroy ends it
 * (SIGKILL) and removes them, and `cg` is freed.
 */
static void assert_born_inside_then_destroy(msb_cgroup *cg, pid_t child)
{
	for (size_t i = 0; i < msb_cgroup_count(cg); i++) {
		assert_true(member_of(msb_cgroup_dir(cg, i), child));
		assert_false(member_of(msb_cgroup_dir(cg, i), getpid()));
	}
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_destroy(cg, 5.0, &err), MSB_OK);
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	msb_cgroup_free(cg);
}

/* The first member listed in `dir`/cgroup.procs other than this process; false: none. */
static bool member_pid(const char *dir, long *pid)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	bool found = false;
	while (f && !found && fscanf(f, "%ld", pid) == 1)
		found = *pid != (long)getpid();
	if (f)
		fclose(f);
	return found;
}

/* Kill every member of cgroup `dir` and remove it; true when it is still there. */
static bool end_cgroup_dir(const char *dir)
{
	if (access(dir, F_OK) != 0)
		return false;
	long pid;
	for (int n = 0; n < 1000 && member_pid(dir, &pid); n++)
		kill((pid_t)pid, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return rmdir(dir) != 0 && errno != ENOENT;
}

/* msb_cgroup_fork: the child is in every directory (v1 and the v2 kill handle alike) before
 * it runs anything of its own, and the parent is in none of them. */
static void a_child_of_msb_cgroup_fork_is_born_in_every_directory(void **state)
{
	(void)state;
	msb_cgroup *cg = limited_cgroup();
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	int join = -1;
	pid_t child = msb_cgroup_fork(cg, &join);
	assert_true(child >= 0);
	if (child == 0) {
		char c = join ? 'F' : 'J';
		ssize_t w = write(pipefd[1], &c, 1);
		(void)w;
		for (;;)
			pause();
	}
	close(pipefd[1]);
	assert_int_equal(join, 0);
	char c = 0;
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);
	assert_int_equal(c, 'J');
	assert_true(msb_cgroup_count(cg) >= 3);
	assert_born_inside_then_destroy(cg, child);
}

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define SPAWN_SHARES 1 /* msb/cgroup.h: elsewhere the child is msb_cgroup_fork's */
#else
#define SPAWN_SHARES 0
#endif

static volatile int spawned_join = -1;

/* Records its join error where a child sharing memory leaves it for the parent, then execs. */
static int record_and_sleep(void *arg, int join_error)
{
	(void)arg;
	spawned_join = join_error;
	if (join_error)
		_exit(125);
	execl("/bin/sleep", "sleep", "30", (char *)NULL);
	_exit(127);
}

/*
 * msb_cgroup_spawn_shared: the child is born inside every directory like msb_cgroup_fork's,
 * shares the caller's memory until it execs (its write is there once the call returns), and
 * the caller is in none of them.
 */
static void a_shared_spawn_is_born_in_every_directory(void **state)
{
	(void)state;
	msb_cgroup *cg = limited_cgroup();
	static char stack[MSB_SPAWN_STACK_MIN] __attribute__((aligned(16)));
	spawned_join = -1;
	pid_t child = msb_cgroup_spawn_shared(cg, record_and_sleep, NULL, stack, sizeof stack);
	assert_true(child > 0);
	assert_int_equal(spawned_join, SPAWN_SHARES ? 0 : -1);
	assert_born_inside_then_destroy(cg, child);
}

/*
 * Where clone3 is refused (a seccomp profile answering ENOSYS, as container runtimes' default
 * profiles do), msb_cgroup_fork falls back to fork and joins every directory, the v2 one
 * included, before returning in the child: still born inside before it runs anything.
 */
static void without_clone3_the_child_still_joins_every_directory(void **state)
{
	(void)state;
	msb_cgroup *cg = limited_cgroup();
	/* The grandchild is reparented here (main is a subreaper) and reaped here. */
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t outer = fork();
	assert_true(outer >= 0);
	if (outer == 0) {
		long said[2] = { -1, 0 };
		scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
		if (!f || seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) ||
		    seccomp_load(f) || syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS)
			_exit(2); /* clone3 not refused: the fallback would not be what runs */
		int join = -1;
		pid_t c = msb_cgroup_fork(cg, &join);
		if (c == 0) {
			said[0] = (long)getpid();
			said[1] = join;
			ssize_t w = write(pipefd[1], said, sizeof said);
			(void)w;
			for (;;)
				pause();
		}
		_exit(c > 0 ? 0 : 3);
	}
	close(pipefd[1]);
	int status;
	assert_int_equal(waitpid(outer, &status, 0), outer);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	long said[2] = { -1, -1 };
	assert_int_equal(read(pipefd[0], said, sizeof said), (ssize_t)sizeof said);
	close(pipefd[0]);
	assert_int_equal(said[1], 0);
	assert_born_inside_then_destroy(cg, (pid_t)said[0]);
}

static void save_and_load_round_trip_and_refuse_tampering(void **state)
{
	(void)state;
	msb_cgroup_limits lim = { 0, 4, 0 };
	msb_cgroup *cg = NULL, *back = NULL;
	msb_error err = MSB_ERROR_INIT;
	char file[] = "/tmp/msb-cgroup-test-XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(msb_cgroup_create("msb-test", name, &lim, &cg, &err), MSB_OK);
	assert_int_equal(msb_cgroup_save(cg, file, &err), MSB_OK);
	assert_int_equal(msb_cgroup_load(file, &back, &err), MSB_OK);
	assert_int_equal(msb_cgroup_count(back), msb_cgroup_count(cg));
	assert_string_equal(msb_cgroup_dir(back, 0), msb_cgroup_dir(cg, 0));
	assert_int_equal(msb_cgroup_destroy(back, 5.0, &err), MSB_OK);
	msb_cgroup_free(back);
	msb_cgroup_free(cg);

	FILE *f = fopen(file, "w");
	fputs("v1 /home/someone\n", f);
	fclose(f);
	assert_int_equal(msb_cgroup_load(file, &back, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "not a cgroup directory"));
	assert_null(back);
	/* A path longer than a handle holds is refused too, not cut short. */
	f = fopen(file, "w");
	fprintf(f, "v1 /sys/fs/cgroup/pids/%0*d\n", MSB_CGROUP_PATH_MAX, 0);
	fclose(f);
	assert_int_equal(msb_cgroup_load(file, &back, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "not a cgroup directory"));
	assert_null(back);
	unlink(file);
	msb_error_clear(&err);
}

/* ---- detection, on synthetic layouts --------------------------------------------- */

static char layout[64];

static void write_file(const char *dir, const char *leaf, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, leaf);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void detect(const char *mountinfo_text, msb_cgroup_mounts *m)
{
	write_file(layout, "mountinfo", mountinfo_text);
	char path[128];
	snprintf(path, sizeof path, "%s/mountinfo", layout);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_mounts_parse(path, m, &err), MSB_OK);
}

/* Pure v2: every controller is found on the one cgroup2 mount; no freezer hierarchy. */
static void pure_v2_is_detected(void **state)
{
	(void)state;
	char v2[128], text[512];
	snprintf(v2, sizeof v2, "%s/v2", layout);
	mkdir(v2, 0755);
	write_file(v2, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	snprintf(text, sizeof text,
		 "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		 "30 23 0:26 / %s rw,nosuid,nodev shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", v2);
	msb_cgroup_mounts m;
	detect(text, &m);
	assert_int_equal(m.len, 1);
	const msb_cgroup_mount *mem = msb_cgroup_mounts_find(&m, "memory");
	assert_non_null(mem);
	assert_true(mem->v2);
	assert_string_equal(mem->path, v2);
	assert_ptr_equal(msb_cgroup_mounts_find(&m, "pids"), mem);
	assert_ptr_equal(msb_cgroup_mounts_find(&m, "cpu"), mem);
	assert_null(msb_cgroup_mounts_find(&m, "freezer"));
	assert_ptr_equal(msb_cgroup_mounts_v2(&m), mem);
}

/* Hybrid (this machine's kind): controllers on v1, v2 holding hugetlb only; a combined
 * cpu,cpuacct hierarchy; optional fields and an escaped space in a mount point. */
static void hybrid_is_detected(void **state)
{
	(void)state;
	char v2[128], text[1024];
	snprintf(v2, sizeof v2, "%s/uni fied", layout);
	mkdir(v2, 0755);
	write_file(v2, "cgroup.controllers", "hugetlb\n");
	char escaped[160];
	snprintf(escaped, sizeof escaped, "%s/uni\\040fied", layout);
	snprintf(text, sizeof text,
		 "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct\n"
		 "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime master:1 shared:9 - cgroup cgroup rw,memory\n"
		 "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
		 "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
		 "41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw\n", escaped);
	msb_cgroup_mounts m;
	detect(text, &m);
	assert_int_equal(m.len, 5);
	const msb_cgroup_mount *cpu = msb_cgroup_mounts_find(&m, "cpu");
	assert_non_null(cpu);
	assert_false(cpu->v2);
	assert_string_equal(cpu->path, "/sys/fs/cgroup/cpu,cpuacct");
	assert_ptr_equal(msb_cgroup_mounts_find(&m, "cpuacct"), cpu);
	assert_string_equal(msb_cgroup_mounts_find(&m, "memory")->path, "/sys/fs/cgroup/memory");
	assert_false(msb_cgroup_mounts_find(&m, "pids")->v2);
	/* "rw" and "xattr" are flags, not controllers; "systemd" is a name, not one either. */
	assert_null(msb_cgroup_mounts_find(&m, "xattr"));
	assert_null(msb_cgroup_mounts_find(&m, "systemd"));
	const msb_cgroup_mount *h = msb_cgroup_mounts_find(&m, "hugetlb");
	assert_non_null(h);
	assert_true(h->v2);
	assert_string_equal(h->path, v2);
	assert_null(msb_cgroup_mounts_find(&m, "freezer"));
}

/* Nothing mounted: every controller is absent (and a limit would be refused). */
static void nothing_mounted_finds_nothing(void **state)
{
	(void)state;
	msb_cgroup_mounts m;
	detect("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", &m);
	assert_int_equal(m.len, 0);
	assert_null(msb_cgroup_mounts_find(&m, "memory"));
	assert_null(msb_cgroup_mounts_v2(&m));
}

static bool lists_v2_at(const char *dir)
{
	msb_cgroup_mounts m;
	if (msb_cgroup_mounts_read(&m, NULL) != MSB_OK)
		return false;
	for (size_t i = 0; i < m.len; i++)
		if (m.items[i].v2 && strcmp(m.items[i].path, dir) == 0)
			return true;
	return false;
}

/*
 * The child of kept_mounts_follow_mounts_and_namespaces; what it returns is the first step
 * that failed. It runs in its own mount namespace, which ends with it, mounts and all.
 */
static int kept_mounts_steps(const char *a, const char *b)
{
	if (lists_v2_at(a)) /* the first read, kept, in the old namespace */
		return 1;
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("cgroup2", a, "cgroup2", 0, NULL) != 0)
		return 2;
	/* Nothing told the old namespace's poll file: only the namespace check can see this. */
	if (!lists_v2_at(a))
		return 3;
	if (mount("cgroup2", b, "cgroup2", 0, NULL) != 0)
		return 4;
	if (!lists_v2_at(b)) /* the poll file's event */
		return 5;
	if (umount(b) != 0 || lists_v2_at(b))
		return 6;
	if (!lists_v2_at(a)) /* unchanged: the kept copy, still right */
		return 7;
	return 0;
}

/*
 * msb_cgroup_mounts_read keeps what it parsed; the copy must follow a mount, an unmount and
 * a move to another mount namespace, or a sandbox would be limited in a hierarchy that is
 * gone (or refused one that is there).
 */
static void kept_mounts_follow_mounts_and_namespaces(void **state)
{
	(void)state;
	char a[] = "/tmp/msb-cgroup-mnt-a-XXXXXX", b[] = "/tmp/msb-cgroup-mnt-b-XXXXXX";
	assert_non_null(mkdtemp(a));
	assert_non_null(mkdtemp(b));
	pid_t pid = fork();
	if (pid == 0)
		_exit(kept_mounts_steps(a, b));
	int status = 0;
	waitpid(pid, &status, 0);
	rmdir(a);
	rmdir(b);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
		fail_msg("mounting a cgroup2 in a new mount namespace failed here");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- made ahead (msb_cgroup_spare) ----------------------------------------------------- */

/* The parent the spare cases use: its own, so only their spares are ever in it. */
static void spare_parent(char *out, size_t n)
{
	snprintf(out, n, "msb-test/%s-spare", name);
}

/* How many `spare-<pid>-` directories of `pid` the memory hierarchy holds under the parent. */
static int spares_of(long pid)
{
	char parent[96], dir[160], prefix[48];
	spare_parent(parent, sizeof parent);
	snprintf(dir, sizeof dir, "/sys/fs/cgroup/memory/%s", parent);
	snprintf(prefix, sizeof prefix, "spare-%ld-", pid);
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d)
		closedir(d);
	return n;
}

static msb_cgroup_spare *spare_holder(void)
{
	char parent[96];
	spare_parent(parent, sizeof parent);
	msb_cgroup_limits lim = { 64 * 1024 * 1024, 16, 0.5 };
	msb_cgroup_spare *s = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_spare_new(parent, &lim, &s, &err), MSB_OK);
	return s;
}

/*
 * None for a one-shot start; from the second start on, the next one's cgroup is made with
 * its limits written, taken whole, named for this process; the one not taken is removed
 * with its holder.
 */
static void a_spare_is_made_from_the_second_start_and_taken_ready(void **state)
{
	(void)state;
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* counted in the v1 memory hierarchy, which this machine kind mounts */
	msb_cgroup_spare *s = spare_holder();
	assert_null(msb_cgroup_spare_take(s));
	msb_cgroup_spare_refill(s);
	assert_int_equal(spares_of(getpid()), 0);
	assert_null(msb_cgroup_spare_take(s));
	msb_cgroup_spare_refill(s);
	assert_int_equal(spares_of(getpid()), 1);
	msb_cgroup *cg = msb_cgroup_spare_take(s);
	assert_non_null(cg);
	assert_limits(cg, true);
	char prefix[48];
	snprintf(prefix, sizeof prefix, "/spare-%ld-", (long)getpid());
	assert_non_null(strstr(msb_cgroup_dir(cg, 0), prefix));
	assert_null(msb_cgroup_spare_take(s)); /* taken: gone from the holder */
	msb_cgroup_spare_refill(s);
	assert_int_equal(spares_of(getpid()), 2); /* the taken one and the next */
	destroy_and_check_removed(cg);
	/*
	 * The spare made last, emptied from under the holder in one hierarchy, as a script
	 * tidying empty cgroups would: not handed out (the start makes its own), and what was
	 * left of it removed.
	 */
	char parent[96], leaf[256] = "", dir[600];
	spare_parent(parent, sizeof parent);
	snprintf(dir, sizeof dir, "/sys/fs/cgroup/memory/%s", parent);
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		if (strncmp(e->d_name, "spare-", 6) == 0)
			snprintf(leaf, sizeof leaf, "%s", e->d_name);
	closedir(d);
	assert_true(leaf[0] != '\0');
	snprintf(dir, sizeof dir, "/sys/fs/cgroup/memory/%s/%s", parent, leaf);
	assert_int_equal(rmdir(dir), 0);
	assert_null(msb_cgroup_spare_take(s));
	snprintf(dir, sizeof dir, "/sys/fs/cgroup/pids/%s/%s", parent, leaf);
	assert_int_equal(access(dir, F_OK), -1);
	msb_cgroup_spare_free(s);
	assert_int_equal(spares_of(getpid()), 0);
}

/*
 * A host that died holding spares left their directories: the sweep removes the one it
 * never used, keeps the one it had put a sandbox in while a process of that sandbox lives,
 * removes that one too once it is empty, and never touches a live process's spare.
 */
static void the_sweep_removes_only_a_dead_hosts_unused_spares(void **state)
{
	(void)state;
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip();
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t dead = fork();
	if (dead == 0) {
		msb_cgroup_spare *s = spare_holder();
		msb_cgroup_spare_take(s);
		msb_cgroup_spare_take(s);
		msb_cgroup_spare_refill(s);
		msb_cgroup *used = msb_cgroup_spare_take(s);
		int join = 0;
		pid_t member = used ? msb_cgroup_fork(used, &join) : -1;
		if (member == 0) {
			/* Its pid only once it is in every hierarchy: the v1 joins are its own, after
			 * the fork, and a sweep before them would find its v1 directories empty. */
			pid_t self = getpid();
			if (join || write(pipefd[1], &self, sizeof self) != (ssize_t)sizeof self)
				_exit(1);
			pause();
			_exit(0);
		}
		close(pipefd[1]);
		msb_cgroup_spare_refill(s);
		_exit(member > 0 ? 0 : 1); /* a crash: the holder is never freed */
	}
	close(pipefd[1]);
	pid_t member = -1;
	assert_int_equal(read(pipefd[0], &member, sizeof member), (ssize_t)sizeof member);
	close(pipefd[0]);
	int status;
	assert_int_equal(waitpid(dead, &status, 0), dead);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(spares_of(dead), 2);
	msb_cgroup_spare *mine = spare_holder();
	msb_cgroup_spare_take(mine);
	msb_cgroup_spare_take(mine);
	msb_cgroup_spare_refill(mine);
	char parent[96];
	spare_parent(parent, sizeof parent);
	assert_true(msb_cgroup_spares_sweep(parent) >= 1);
	assert_int_equal(spares_of(dead), 1);      /* the one in use */
	assert_int_equal(spares_of(getpid()), 1); /* ours, alive */
	kill(member, SIGKILL);
	assert_int_equal(waitpid(member, NULL, 0), member); /* ours to reap: we are the subreaper */
	for (int i = 0; i < 200 && spares_of(dead); i++) {
		msb_cgroup_spares_sweep(parent); /* the member's exit takes the kernel a moment */
		nanosleep(&(struct timespec){ 0, 5 * 1000000L }, NULL);
	}
	assert_int_equal(spares_of(dead), 0);
	msb_cgroup_spare_free(mine);
	assert_int_equal(spares_of(getpid()), 0);
}

static void bad_names_are_refused(void **state)
{
	(void)state;
	msb_cgroup_limits lim = { 0, 4, 0 };
	msb_cgroup *cg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_cgroup_create("msb-test", "a/../b", &lim, &cg, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "not one path component"));
	assert_int_equal(msb_cgroup_create("/abs", "x", &lim, &cg, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "relative path"));
	/* A parent too long for a cgroup path (MSB_CGROUP_PATH_MAX): refused, nothing made. */
	char parent[MSB_CGROUP_PATH_MAX + 8];
	memset(parent, 'p', sizeof parent - 1);
	parent[sizeof parent - 1] = '\0';
	assert_int_equal(msb_cgroup_create(parent, "x", &lim, &cg, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "is too long"));
	assert_non_null(strstr(msb_error_message(&err), "at most 1023 bytes"));
	assert_null(cg);
	char made[MSB_CGROUP_PATH_MAX + 64];
	snprintf(made, sizeof made, "/sys/fs/cgroup/pids/%.16s", parent);
	assert_int_equal(access(made, F_OK), -1);
	msb_error_clear(&err);
}

int main(void)
{
	snprintf(layout, sizeof layout, "/tmp/msb-cgroup-layout-XXXXXX");
	if (!mkdtemp(layout))
		return 1;
	const struct CMUnitTest detection[] = {
		cmocka_unit_test(pure_v2_is_detected),
		cmocka_unit_test(hybrid_is_detected),
		cmocka_unit_test(nothing_mounted_finds_nothing),
	};
	int detect_failed = cmocka_run_group_tests(detection, NULL, NULL);
	char rm[96];
	snprintf(rm, sizeof rm, "rm -rf %s", layout);
	if (system(rm) != 0)
		detect_failed++;
	if (geteuid() != 0) {
		printf("skip: creating cgroups needs root here (detection cases ran)\n");
		return detect_failed ? 1 : MSB_TEST_SKIP;
	}
	snprintf(name, sizeof name, "t-%ld", (long)getpid());
	/* Orphans of the daemon case come back here to be reaped, not to a pid 1 that may not. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(limits_are_written_and_dirs_removed),
		cmocka_unit_test(prepare_writes_no_limit_until_apply),
		cmocka_unit_test(apply_refuses_a_limit_it_cannot_write),
		cmocka_unit_test(fork_bomb_is_held_and_daemon_is_killed),
		cmocka_unit_test(a_child_of_msb_cgroup_fork_is_born_in_every_directory),
		cmocka_unit_test(without_clone3_the_child_still_joins_every_directory),
		cmocka_unit_test(a_shared_spawn_is_born_in_every_directory),
		cmocka_unit_test(save_and_load_round_trip_and_refuse_tampering),
		cmocka_unit_test(bad_names_are_refused),
		cmocka_unit_test(kept_mounts_follow_mounts_and_namespaces),
		cmocka_unit_test(a_spare_is_made_from_the_second_start_and_taken_ready),
		cmocka_unit_test(the_sweep_removes_only_a_dead_hosts_unused_spares),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	/*
	 * What a failed case left (an assertion ends a case before its destroy): every member
	 * of the cases' cgroups killed, the spare cases' included, then their directories and
	 * the parents removed.
	 */
	const char *roots[] = { "memory", "pids", "cpu", "freezer", "unified", "" };
	for (int round = 0; round < 100; round++) {
		bool left = false;
		for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
			char path[512];
			snprintf(path, sizeof path, "/sys/fs/cgroup/%s/msb-test/%s", roots[i], name);
			left = end_cgroup_dir(path) || left;
			snprintf(path, sizeof path, "/sys/fs/cgroup/%s/msb-test/%s-spare", roots[i], name);
			DIR *d = opendir(path);
			for (struct dirent *e; d && (e = readdir(d));) {
				char spare[800];
				snprintf(spare, sizeof spare, "%s/%s", path, e->d_name);
				if (strncmp(e->d_name, "spare-", 6) == 0)
					left = end_cgroup_dir(spare) || left;
			}
			if (d)
				closedir(d);
			left = end_cgroup_dir(path) || left;
		}
		if (!left)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000000L }, NULL);
	}
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
		char path[256];
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s/msb-test", roots[i]);
		rmdir(path);
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return failed || detect_failed;
}
