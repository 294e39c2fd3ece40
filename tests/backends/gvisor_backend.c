/*
 * gvisor_backend.c — the real `gvisor` plugin running real gVisor containers (runsc, ptrace
 * platform here): every operation, a second process reaching the same container by key, a
 * read-only image root, closed egress (gVisor's netstack with no device but loopback),
 * timeouts and output caps, the limit cases (a fork bomb against the pids limit, a memory hog
 * against the memory limit), the smallest pids accepted running the conformance kit's heaviest
 * exec, every process runsc starts inside the sandbox's cgroup, a daemon that lives until
 * disposal, call scope, and disposal that leaves no container, cgroup, process, mount or
 * directory (and says so when it would).
 *
 * It skips (77) only when runsc is missing or cannot run a container on this kernel,
 * printing runsc's own words.
 */
#include <dirent.h>
#include <glob.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "gvisor_fixture.h"
#include "backend_cases.h"
#include "cgroup_parents.h"

static backend_fixture fx;
static msb_spec spec;
static msb_sandbox_handle *shared; /* the container most cases share */

/*
 * The cgroup directory of sandbox `name` under controller `ctrl` (its leaf is the name plus
 * a hash of the state directory); false when there is none.
 */
static bool sandbox_cgroup(const char *ctrl, const char *name, char *out, size_t n)
{
	char pattern[256];
	snprintf(pattern, sizeof pattern, "/sys/fs/cgroup/%s/msb/gvisor/%s-*", ctrl, name);
	glob_t g;
	bool found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc == 1;
	if (found)
		snprintf(out, n, "%s", g.gl_pathv[0]);
	globfree(&g);
	return found;
}

/* ---- setup: one container for most cases ------------------------------------------- */

/* msb puts every sandbox under /msb/gvisor in each hierarchy; the test removes what it made. */
static msb_test_cg_parents cg_parents = { .rel = { "msb/gvisor", "msb" } };

static int group_setup(void **state)
{
	(void)state;
	msb_test_cg_note(&cg_parents);
	return backend_setup(&fx, &spec, gvisor_fixture_open,
			     "memory: 512MiB\nrlimit_nproc: 100\nrlimit_as: 160MiB\nmax_output: 65536\n", &shared);
}

static int group_teardown(void **state)
{
	(void)state;
	int rc = backend_teardown(&fx, shared, gvisor_fixture_leaks);
	msb_test_cg_clean(&cg_parents);
	return rc;
}

/* ---- the cases ---------------------------------------------------------------------- */

static void every_operation(void **state)
{
	(void)state;
	msb_sandbox_handle *h = shared;
	const char *wd = spec.work_dir;
	backend_check_file_ops(&fx, h, wd);

	/* The command runs under gVisor's Sentry, which announces itself in dmesg. */
	msb_exec_result r = backend_run(&fx, h, 20, 0, "cat dir/a.txt; pwd; dmesg | grep -c -i gvisor; echo oops >&2; exit 3");
	assert_string_equal(backend_out(&r), "hello\n/msb/work\n1\n");
	assert_string_equal((const char *)r.err.data, "oops\n");
	assert_int_equal(r.exit_code, 3);
	msb_exec_result_free(&r);

	backend_check_code_remove_reclaim(&fx, h, wd, 20);
}

static void closed_egress_and_read_only_root(void **state)
{
	(void)state;
	/* --network=none: gVisor's netstack holds loopback and no device at all. */
	msb_exec_result r = backend_run(&fx, shared, 20, 0, "ls /sys/class/net 2>/dev/null || cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' '");
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(backend_out(&r), "lo\n");
	msb_exec_result_free(&r);
	/* The image root is read-only; the work dir and /tmp are writable. */
	r = backend_run(&fx, shared, 20, 0, "touch /etc/msb-x 2>&1; touch /usr/msb-x 2>&1; touch /tmp/x /msb/work/x && echo writable");
	assert_non_null(strstr(backend_out(&r), "Read-only file system"));
	assert_non_null(strstr(backend_out(&r), "writable"));
	msb_exec_result_free(&r);
	assert_int_equal(access("/etc/msb-x", F_OK), -1);
	/* The host image shows programs and libraries, not the host's secrets. */
	r = backend_run(&fx, shared, 20, 0, "for f in /etc/shadow /etc/ssh /root /home /etc/passwd; do "
		"test -e $f && echo present $f; done; test -x /usr/bin/awk && echo programs");
	assert_string_equal(backend_out(&r), "present /etc/passwd\nprograms\n");
	msb_exec_result_free(&r);
	/* A small host file is copied into the root, not bound (no mount of it): the host's
	 * bytes, read-only. */
	struct stat host_passwd;
	assert_int_equal(stat("/etc/passwd", &host_passwd), 0);
	r = backend_run(&fx, shared, 20, 0, "grep -c ' /etc/passwd ' /proc/mounts; wc -c < /etc/passwd; "
			"{ echo x >> /etc/passwd; } 2>&1; wc -c < /etc/passwd");
	char expect[128];
	int len = snprintf(expect, sizeof expect, "%lld\n", (long long)host_passwd.st_size);
	const char *out = backend_out(&r);
	assert_true(strncmp(out, "0\n", 2) == 0);
	assert_true(strncmp(out + 2, expect, (size_t)len) == 0);
	assert_non_null(strstr(out, "Read-only file system"));
	assert_string_equal(out + strlen(out) - (size_t)len, expect);
	msb_exec_result_free(&r);
	/* Root inside, with no capability at all (bounding set included). */
	r = backend_run(&fx, shared, 20, 0, "grep -E '^Cap(Eff|Bnd)' /proc/self/status | cut -f2");
	assert_string_equal(backend_out(&r), "0000000000000000\n0000000000000000\n");
	msb_exec_result_free(&r);

	/*
	 * The agent's socket directory is writable from inside. Whatever a command plants there
	 * (gVisor refuses replacing the bound socket; a second name is allowed) changes nothing
	 * for the host, which connects through its own hard link — as a second process here.
	 */
	r = backend_run(&fx, shared, 20, 0, "rm -f /.msb/agent.sock; ln -s /run/elsewhere.sock /.msb/agent.sock; "
		"ln -s /run/elsewhere.sock /.msb/other.sock; echo tried");
	assert_string_equal(backend_out(&r), "tried\n");
	msb_exec_result_free(&r);
	struct stat st;
	assert_int_equal(lstat(msb_driver_sandbox_box(shared)->socket_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	backend_fixture other;
	assert_int_equal(gvisor_fixture_open(&other, fx.state, "", NULL), MSB_OK);
	msb_sandbox_handle *again = backend_acquire(&other, &spec, "shared", NULL);
	assert_non_null(again);
	msb_exec_result r2 = { 0 };
	const char *argv[] = { "echo", "same", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	assert_int_equal(other.ops->exec(again, &req, &r2, NULL), MSB_OK);
	assert_string_equal(backend_out(&r2), "same\n");
	msb_exec_result_free(&r2);
	other.ops->release(again);
	backend_fixture_close(&other);
}

static void timeout_and_output_cap(void **state)
{
	(void)state;
	backend_check_timeout_and_output_cap(&fx, shared);
}

static void daemon_lives_until_dispose(void **state)
{
	(void)state;
	backend_check_daemon_lives(&fx, shared);
}

static void fork_bomb_and_memory_hog_are_held(void **state)
{
	(void)state;
	/*
	 * 400 sleepers against rlimit_nproc 100 (which gVisor enforces even for the container's
	 * root): forks fail inside, long before the host's pids limit, and the sandbox answers.
	 * Its own sandbox, so the sleepers it leaves are disposal's to kill.
	 */
	msb_sandbox_handle *bomb = backend_acquire(&fx, &spec, "bomb", NULL);
	assert_non_null(bomb);
	const char *bomb_argv[] = { "sh", "-c",
				    "(i=0; while [ $i -lt 400 ]; do sleep 600 >/dev/null 2>&1 & "
				    "i=$((i+1)); done) 2>/tmp/fork.err; "
				    "grep -c -i -e fork -e resource -e again /tmp/fork.err; echo done",
				    NULL };
	msb_exec_request req = { .argv = bomb_argv, .timeout = 60 };
	msb_exec_result r = { 0 }, after = { 0 };
	msb_errc rc = fx.ops->exec(bomb, &req, &r, NULL);
	const char *after_argv[] = { "echo", "still-here", NULL };
	msb_exec_request req2 = { .argv = after_argv, .timeout = 20 };
	msb_errc rc2 = fx.ops->exec(bomb, &req2, &after, NULL);
	pid_t sandbox = backend_recorded(bomb, "agent.pid");
	/* Disposed before any assertion, so a failure here leaves nothing behind. */
	fx.ops->release(bomb);
	msb_key k = backend_key("bomb", NULL);
	msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool failed = fx.ops->dispose(fx.self, &k, &f);
	msb_disposal_failure_free(&f);
	fprintf(stderr, "# fork bomb: rc %d exit %d out '%s'\n", rc, r.exit_code, backend_out(&r));
	assert_int_equal(rc, MSB_OK);
	assert_non_null(strstr(backend_out(&r), "done"));
	assert_true(atoi(backend_out(&r)) >= 1);
	assert_int_equal(rc2, MSB_OK);
	assert_string_equal(backend_out(&after), "still-here\n");
	msb_exec_result_free(&r);
	msb_exec_result_free(&after);
	assert_false(failed);
	assert_false(msb_driver_pid_running(sandbox));

	/*
	 * A hog asking for more than the memory limit meets rlimit_as inside gVisor and fails
	 * alone; the sandbox answers after it. (Without rlimit_as the host's memory cgroup is
	 * the bound, and what it kills is the whole sandbox: see doc/threat-model.md.)
	 */
	r = backend_run(&fx, shared, 60, 0, "awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo status $?");
	fprintf(stderr, "# hog: exit %d timed_out %d out '%s'\n", r.exit_code, r.timed_out, backend_out(&r));
	assert_non_null(strstr(backend_out(&r), "status"));
	assert_null(strstr(backend_out(&r), "status 0"));
	msb_exec_result_free(&r);
	r = backend_run(&fx, shared, 20, 0, "echo still-here");
	assert_string_equal(backend_out(&r), "still-here\n");
	msb_exec_result_free(&r);
	/* The host's cgroup holds the whole sandbox to the configured memory. */
	char path[512];
	bool v1 = sandbox_cgroup("memory", msb_driver_sandbox_box(shared)->name, path, 300);
	strcat(path, "/memory.limit_in_bytes");
	FILE *lf = v1 ? fopen(path, "re") : NULL;
	assert_true(lf || access("/sys/fs/cgroup/memory", F_OK) != 0);
	if (lf) {
		unsigned long long limit = 0;
		assert_int_equal(fscanf(lf, "%llu", &limit), 1);
		fclose(lf);
		assert_int_equal(limit, 512ull * 1024 * 1024);
	}
}

static void second_process_reaches_the_same_vm(void **state)
{
	(void)state;
	backend_check_second_process(&fx, &spec, shared, gvisor_fixture_open);
}

static void call_scope_vm_is_its_own_and_dispose_leaves_nothing(void **state)
{
	(void)state;
	/* A call's sandbox is another container, with a gVisor sandbox and cgroup of its own. */
	msb_sandbox_handle *h = backend_acquire_call(&fx, &spec);
	pid_t sandbox = backend_recorded(h, "agent.pid");
	assert_true(sandbox > 0 && sandbox != backend_recorded(shared, "agent.pid"));
	char cgroup[512];
	bool v1 = sandbox_cgroup("memory", msb_driver_sandbox_box(h)->name, cgroup, sizeof cgroup);
	/* Its disposal leaves no directory, process or cgroup, and the conversation's container
	 * is untouched. */
	backend_dispose_call(&fx, h, shared);
	assert_false(msb_driver_pid_running(sandbox));
	if (v1)
		assert_int_equal(access(cgroup, F_OK), -1);
}

static void a_dead_sandbox_is_replaced_and_disposed(void **state)
{
	(void)state;
	/* gVisor killed from outside: the next acquire notices and starts a fresh sandbox. */
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "dies", NULL);
	assert_non_null(h);
	pid_t first = backend_recorded(h, "agent.pid");
	char name[64];
	snprintf(name, sizeof name, "%s", msb_driver_sandbox_box(h)->name);
	fx.ops->release(h);
	assert_int_equal(kill(first, SIGKILL), 0);
	for (int i = 0; i < 200 && msb_driver_pid_running(first); i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	h = backend_acquire(&fx, &spec, "dies", NULL);
	assert_non_null(h);
	pid_t second = backend_recorded(h, "agent.pid");
	assert_true(second > 0 && second != first);
	msb_exec_result r = backend_run(&fx, h, 20, 0, "echo fresh");
	assert_string_equal(backend_out(&r), "fresh\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	/* And disposal leaves no container, cgroup or directory of it. */
	backend_dispose(&fx, "dies", NULL);
	assert_false(msb_driver_pid_running(second));
	char cg[512];
	assert_false(sandbox_cgroup("pids", name, cg, sizeof cg));
}

/* Whether `pid` is listed in `dir`/cgroup.procs. */
static bool cgroup_has(const char *dir, long pid)
{
	char path[600];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	long member;
	bool found = false;
	while (f && !found && fscanf(f, "%ld", &member) == 1)
		found = member == pid;
	if (f)
		fclose(f);
	return found;
}

/*
 * Every host process runsc started for a sandbox (the gofer, the sandbox, their ptrace
 * stubs: all name the sandbox's runsc root on their command line) is a member of the
 * sandbox's cgroup, in the pids and the memory hierarchy alike: runsc itself was started
 * inside it, and runsc (--ignore-cgroups) moves nothing out. The limits are msb's.
 */
static void every_runsc_process_is_inside_the_limits(void **state)
{
	(void)state;
	const msb_driver_box *box = msb_driver_sandbox_box(shared);
	char pids[512], memory[512], root[600];
	assert_true(sandbox_cgroup("pids", box->name, pids, sizeof pids));
	bool v1_memory = sandbox_cgroup("memory", box->name, memory, sizeof memory);
	snprintf(root, sizeof root, "--root=%s/runsc", box->dir);
	assert_true(cgroup_has(pids, backend_recorded(shared, "agent.pid")));
	DIR *d = opendir("/proc");
	assert_non_null(d);
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char buf[8192];
		long pid = atol(e->d_name);
		if (pid <= 0 || !gvisor_fixture_cmdline_names(pid, root, true, buf, sizeof buf))
			continue;
		found++;
		if (!cgroup_has(pids, pid) || (v1_memory && !cgroup_has(memory, pid)))
			fprintf(stderr, "process %ld (%s) is outside %s\n", pid, buf, pids);
		assert_true(cgroup_has(pids, pid));
		assert_true(!v1_memory || cgroup_has(memory, pid));
	}
	closedir(d);
	/* At least the gofer and the sandbox. */
	assert_true(found >= 2);
	char path[600];
	snprintf(path, sizeof path, "%s/pids.max", pids);
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	unsigned long long max = 0;
	assert_int_equal(fscanf(f, "%llu", &max), 1);
	fclose(f);
	/* pids is unstated: not the default 4096 but what rlimit_nproc 100 needs, 160 + 40 x 100. */
	assert_int_equal(max, 4160);
}

/*
 * The reaper of `runsc run --detach` lives as long as its sandbox. Left a fork of the host,
 * it would keep a copy of every page the host writes meanwhile, and the host's standard
 * files open (a reader of the host's stdout would wait for the sandbox's end). It execs
 * `msb-agent --reap` with /dev/null on 0, 1 and 2. It is the sandbox process's parent (the
 * subreaper it was reparented to when runsc exited).
 */
static void the_reaper_holds_nothing_of_the_host(void **state)
{
	(void)state;
	char *mem = NULL;
	msb_sandbox_handle *h = backend_acquire_while_host_writes(&fx, &spec, "reaper", &mem);
	assert_non_null(h);
	char path[64], stat[512] = "", fd[3][64] = { "", "", "" };
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)backend_recorded(h, "agent.pid"));
	FILE *f = fopen(path, "re");
	long reaper = 0;
	if (f) {
		if (fgets(stat, sizeof stat, f))
			sscanf(strrchr(stat, ')') + 2, "%*c %ld", &reaper);
		fclose(f);
	}
	long kib = backend_rss_kib_settled(reaper, 16 * 1024);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "/proc/%ld/fd/%d", reaper, i);
		ssize_t got = readlink(path, fd[i], sizeof fd[i] - 1);
		fd[i][got > 0 ? got : 0] = '\0';
	}
	free(mem);
	fx.ops->release(h);
	backend_dispose(&fx, "reaper", NULL);
	assert_true(reaper > 1);
	assert_true(kib > 0 && kib < 16 * 1024);
	for (int i = 0; i < 3; i++)
		assert_string_equal(fd[i], "/dev/null");
}

/*
 * Disposal verifies what it ends, and a step that did not land is a DisposalFailure, never
 * a success: a mount left in the sandbox's directory (here one the test makes in msb's own
 * mount namespace) fails it, and the sandbox stays addressable until a later dispose, once
 * the mount is gone, succeeds. The state dir has a space in its name, which mountinfo
 * escapes (\040): the check must still see the mount as the sandbox's.
 */
static void a_disposal_that_leaves_a_mount_is_reported(void **state)
{
	(void)state;
	char dir[] = "/tmp/msb-gvisor-test sp-XXXXXX";
	assert_non_null(mkdtemp(dir));
	backend_fixture own;
	msb_error err = MSB_ERROR_INIT;
	if (gvisor_fixture_open(&own, dir, "", &err) != MSB_OK)
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
	msb_error_clear(&err);
	msb_sandbox_handle *h = backend_acquire(&own, &spec, "mounted", NULL);
	assert_non_null(h);
	char *chan = msb_driver_path(msb_driver_sandbox_box(h)->dir, "chan");
	char name[64];
	snprintf(name, sizeof name, "%s", msb_driver_sandbox_box(h)->name);
	pid_t sandbox = backend_recorded(h, "agent.pid");
	own.ops->release(h);
	/* An empty directory of the test's own: should the check miss the mount, the
	 * directory's removal reaches nothing but it. */
	char empty[] = "/tmp/msb-gvisor-test-empty-XXXXXX";
	assert_non_null(mkdtemp(empty));
	int m = mount(empty, chan, NULL, MS_BIND, NULL);
	msb_key k = backend_key("mounted", NULL);
	msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool failed = own.ops->dispose(own.self, &k, &f);
	if (m == 0)
		umount2(chan, MNT_DETACH);
	free(chan);
	rmdir(empty);
	backend_dispose(&own, "mounted", NULL);
	backend_fixture_close(&own);
	int leaks = gvisor_fixture_leaks(&own);
	fprintf(stderr, "# mount left: %s\n", f.detail ? f.detail : "(none)");
	assert_int_equal(m, 0);
	assert_true(failed);
	assert_int_equal(f.code, MSB_DISPOSAL_UNKNOWN);
	assert_non_null(strstr(f.detail, name));
	assert_non_null(strstr(f.detail, "still mounted"));
	msb_disposal_failure_free(&f);
	assert_int_equal(leaks, 0);
	assert_false(msb_driver_pid_running(sandbox));
	char cg[512];
	assert_false(sandbox_cgroup("pids", name, cg, sizeof cg));
}

/*
 * A sandbox whose runsc state sits in the shared root an earlier version used
 * (<state_dir>/runsc) is not reported gone: its disposal fails naming that state and the
 * command that ends it, and succeeds once the state is gone.
 */
static void a_sandbox_of_an_earlier_version_is_not_reported_gone(void **state)
{
	(void)state;
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "earlier", NULL);
	assert_non_null(h);
	char name[64], dir[4200], legacy[4400];
	snprintf(name, sizeof name, "%s", msb_driver_sandbox_box(h)->name);
	snprintf(dir, sizeof dir, "%s/runsc", fx.state);
	snprintf(legacy, sizeof legacy, "%s/%s_sandbox:%s.state", dir, name, name);
	fx.ops->release(h);
	int made = mkdir(dir, 0700) == 0 || errno == EEXIST;
	FILE *f = made ? fopen(legacy, "we") : NULL;
	if (f)
		fclose(f);
	msb_key k = backend_key("earlier", NULL);
	msb_disposal_failure fail = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool failed = fx.ops->dispose(fx.self, &k, &fail);
	unlink(legacy);
	rmdir(dir);
	backend_dispose(&fx, "earlier", NULL);
	fprintf(stderr, "# earlier: %s\n", fail.detail ? fail.detail : "(none)");
	assert_non_null(f);
	assert_true(failed);
	assert_int_equal(fail.code, MSB_DISPOSAL_UNKNOWN);
	assert_non_null(strstr(fail.detail, name));
	assert_non_null(strstr(fail.detail, "delete --force"));
	msb_disposal_failure_free(&fail);
}

/*
 * `sh -c script` in `h` with no assertion, so that a sandbox dying under it is still
 * disposed: the call's code (its message printed), the result in *res.
 */
static msb_errc run_kept(backend_fixture *f, msb_sandbox_handle *h, double timeout, const char *script,
			 msb_exec_result *res)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .timeout = timeout };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = f->ops->exec(h, &req, res, &err);
	if (rc)
		fprintf(stderr, "exec %s: %s: %s\n", script, msb_errc_name(rc), msb_error_message(&err));
	msb_error_clear(&err);
	return rc;
}

/* The number in file `name` of cgroup directory `dir` (0: none). */
static unsigned long long cgroup_number(const char *dir, const char *name)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	unsigned long long n = 0;
	if (f && fscanf(f, "%llu", &n) != 1)
		n = 0;
	if (f)
		fclose(f);
	return n;
}

/*
 * The smallest pids the backend accepts really runs, on the real engine: at 360 (and no
 * rlimit_nproc) the conformance kit's heaviest exec — 5 processes at once counting the
 * agent, its tree killed by a timeout — three times over, then forks and a pipeline, and
 * the sandbox that ran them is the one that answers after (at 128, once accepted, they
 * killed it). The host's pids.max is the figure asked for; pids.peak, printed, the headroom.
 */
static void the_smallest_accepted_pids_runs(void **state)
{
	(void)state;
	backend_fixture small;
	msb_error err = MSB_ERROR_INIT;
	msb_errc opened = gvisor_fixture_open(&small, NULL, "pids: 360\n", &err);
	if (opened)
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
	msb_error_clear(&err);
	msb_sandbox_handle *h = opened ? NULL : backend_acquire(&small, &spec, "floor", NULL);
	pid_t agent = h ? backend_recorded(h, "agent.pid") : 0;
	char cg[512] = "";
	bool have_cg = h && sandbox_cgroup("pids", msb_driver_sandbox_box(h)->name, cg, sizeof cg);
	int timed_out = 0;
	for (int i = 0; h && i < 3; i++) {
		msb_exec_result r = { 0 };
		msb_errc rc = run_kept(&small, h, 1.0, "(sleep 2; echo late) & sleep 30; echo not-killed", &r);
		timed_out += (rc == MSB_OK && r.timed_out) || rc == MSB_E_TIMEOUT;
		msb_exec_result_free(&r);
	}
	msb_exec_result after = { 0 };
	msb_errc rc_after = h ? run_kept(&small, h, 30, "i=0; while [ $i -lt 5 ]; do (sleep 0.1; echo x) & "
					 "sleep 0.2; wait; i=$((i+1)); done; echo fork | cat", &after)
			      : MSB_E_BACKEND;
	unsigned long long max = cgroup_number(cg, "pids.max"), peak = cgroup_number(cg, "pids.peak");
	bool same = h && backend_recorded(h, "agent.pid") == agent && msb_driver_pid_running(agent);
	/* Released and disposed before any assertion, so a failure leaves nothing behind. */
	if (h) {
		small.ops->release(h);
		backend_dispose(&small, "floor", NULL);
	}
	backend_fixture_close(&small);
	int leaks = gvisor_fixture_leaks(&small);
	fprintf(stderr, "# pids 360: %d of 3 timed out, then '%s', peak %llu host tasks\n", timed_out,
		backend_out(&after), peak);
	assert_int_equal(opened, MSB_OK);
	assert_non_null(h);
	assert_true(agent > 0);
	assert_int_equal(timed_out, 3);
	assert_int_equal(rc_after, MSB_OK);
	assert_int_equal(after.exit_code, 0);
	assert_string_equal(backend_out(&after), "x\nx\nx\nx\nx\nfork\n");
	msb_exec_result_free(&after);
	assert_true(same);
	assert_true(have_cg);
	assert_int_equal(max, 360);
	assert_false(msb_driver_pid_running(agent));
	assert_int_equal(leaks, 0);
}

/*
 * The reaper execs the agent binary while runsc runs (gvisor_runsc.c): one that cannot be
 * executed fails the start by name, runsc is killed, and nothing is left.
 */
static void a_reaper_that_cannot_exec_fails_the_start(void **state)
{
	(void)state;
	backend_fixture bad;
	msb_error err = MSB_ERROR_INIT;
	char agent[64] = "/tmp/msb-gvisor-noexec-XXXXXX";
	int fd = mkstemp(agent);
	assert_true(fd >= 0);
	close(fd); /* mode 0600: a file, not a program */
	msb_errc rc = backend_fixture_state(&bad, NULL, "/tmp/msb-gvisor-test-XXXXXX", &err);
	if (!rc)
		rc = backend_fixture_load(&bad, GVISOR_PLUGIN, &err, "state_dir: %s\nagent: %s\n",
					  bad.state, agent);
	msb_key k = backend_key("noexec", NULL);
	msb_sandbox_handle *h = NULL;
	msb_errc acquired = rc ? rc : bad.ops->acquire(bad.self, &k, &spec, &h, &err);
	char said[1024];
	snprintf(said, sizeof said, "%s", msb_error_message(&err));
	msb_error_clear(&err);
	if (h) {
		bad.ops->release(h);
		backend_dispose(&bad, "noexec", NULL);
	}
	backend_fixture_close(&bad);
	int leaks = gvisor_fixture_leaks(&bad);
	unlink(agent);
	assert_int_equal(rc, MSB_OK);
	assert_int_equal(acquired, MSB_E_BACKEND);
	if (!strstr(said, "its reaper could not become") || !strstr(said, agent))
		fail_msg("acquire said: %s", said);
	assert_int_equal(leaks, 0);
}

/* ---- refusals that need no container ------------------------------------------------ */

static void config_refusals(void **state)
{
	(void)state;
	backend_fixture bad;
	msb_error err = MSB_ERROR_INIT;
	backend_check_refused(gvisor_fixture_open, gvisor_fixture_leaks, "platform: fast\n",
			      MSB_E_CONFIG, "platform", "fast", NULL);

	/* No engine: refused at init, naming the path and the package. */
	backend_check_refused(gvisor_fixture_open, gvisor_fixture_leaks, "runsc: /nonexistent/runsc\n",
			      MSB_E_CONFIG, "/nonexistent/runsc", "runsc", NULL);

	/*
	 * A pids limit gVisor's own host tasks would exhaust is refused with the minimum and the
	 * reason: 128, once accepted, let the conformance kit's timeout case kill its sandbox.
	 * The minimum itself is accepted and runs (the_smallest_accepted_pids_runs).
	 */
	backend_check_refused(gvisor_fixture_open, gvisor_fixture_leaks, "pids: 128\n",
			      MSB_E_CONFIG, "pids: pids 128 ", "minimum 360", "5 processes at once",
			      "gVisor's own host tasks", "dies whole", "rlimit_nproc", NULL);
	backend_check_refused(gvisor_fixture_open, gvisor_fixture_leaks, "pids: 359\n",
			      MSB_E_CONFIG, "pids 359 ", "minimum 360", NULL);

	/* So is one that rlimit_nproc's processes would exhaust, killing the sandbox whole. */
	backend_check_refused(gvisor_fixture_open, gvisor_fixture_leaks, "pids: 4159\nrlimit_nproc: 100\n",
			      MSB_E_CONFIG, "pids 4159 ", "minimum 4160", "rlimit_nproc 100",
			      "gVisor's own host tasks", "dies whole", NULL);
	/* Below 5 processes rlimit_nproc lowers nothing: the minimum stays 360. */
	backend_check_refused(gvisor_fixture_open, gvisor_fixture_leaks, "pids: 300\nrlimit_nproc: 2\n",
			      MSB_E_CONFIG, "pids 300 ", "minimum 360", "rlimit_nproc 2", NULL);

	backend_check_refused(gvisor_fixture_open, gvisor_fixture_leaks, "memroy: 1GiB\n",
			      MSB_E_CONFIG, "memroy", NULL);

	/* An image the config does not name is refused at acquire, naming what it has. */
	assert_int_equal(gvisor_fixture_open(&bad, NULL, "", &err), MSB_OK);
	msb_key k = backend_key("noimage", NULL);
	msb_sandbox_handle *h = NULL;
	msb_spec other = spec;
	other.image = "python:3.12";
	assert_int_equal(bad.ops->acquire(bad.self, &k, &other, &h, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "python:3.12"));
	assert_non_null(strstr(msb_error_message(&err), "host"));
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(gvisor_fixture_leaks(&bad), 0);
}

int main(void)
{
	char why[1024];
	if (!gvisor_fixture_usable(why, sizeof why)) {
		printf("SKIP: %s\n", why);
		return MSB_TEST_SKIP;
	}
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_reaper_that_cannot_exec_fails_the_start),
		cmocka_unit_test(config_refusals),
		cmocka_unit_test(every_operation),
		cmocka_unit_test(closed_egress_and_read_only_root),
		cmocka_unit_test(timeout_and_output_cap),
		cmocka_unit_test(daemon_lives_until_dispose),
		cmocka_unit_test(second_process_reaches_the_same_vm),
		cmocka_unit_test(fork_bomb_and_memory_hog_are_held),
		cmocka_unit_test(call_scope_vm_is_its_own_and_dispose_leaves_nothing),
		cmocka_unit_test(a_dead_sandbox_is_replaced_and_disposed),
		cmocka_unit_test(every_runsc_process_is_inside_the_limits),
		cmocka_unit_test(the_reaper_holds_nothing_of_the_host),
		cmocka_unit_test(the_smallest_accepted_pids_runs),
		cmocka_unit_test(a_disposal_that_leaves_a_mount_is_reported),
		cmocka_unit_test(a_sandbox_of_an_earlier_version_is_not_reported_gone),
	};
	int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
	int swept = backend_fixture_sweep(gvisor_fixture_sweep_runsc);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return failed || swept ? 1 : 0;
}
