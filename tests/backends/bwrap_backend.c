/*
 * bwrap_backend.c — the real `bwrap` plugin, loaded through the loader API and driven
 * through its descriptor: every operation, sharing across processes, the read-only root,
 * closed egress, the escape and limit cases (fork bomb, memory hog, a 10 GB write, a daemon
 * that leaves its process group, blocked syscalls, no capabilities), and a leak check at
 * the end. Skips (77) only where the kernel forbids the namespaces bwrap needs.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <cmocka.h>

#include "bwrap_fixture.h"
#include "../../sdk/lib/proc_stat.h"
#include "backend_cases.h"
#include "netns_probe.h"
#include "stand_in.h"

static backend_fixture fx;
static msb_spec spec;

static msb_sandbox_handle *acquire(const char *thread, const char *call_id)
{
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, thread, call_id);
	assert_non_null(h);
	return h;
}

static const char *err_of(const msb_exec_result *r)
{
	return r->err.data ? (const char *)r->err.data : "";
}

/* ---- every operation --------------------------------------------------------------- */

static void every_operation(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire("ops", NULL);
	const char *wd = spec.work_dir;
	backend_check_file_ops(&fx, h, wd);

	msb_exec_result r = backend_run(&fx, h, 10, 0, "cat dir/a.txt; pwd; echo oops >&2; exit 3");
	assert_string_equal(backend_out(&r), "hello\n/msb/work\n");
	assert_string_equal(err_of(&r), "oops\n");
	assert_int_equal(r.exit_code, 3);
	msb_exec_result_free(&r);

	backend_check_code_remove_reclaim(&fx, h, wd, 10);
	fx.ops->release(h);
	backend_dispose(&fx, "ops", NULL);
}

/* ---- sharing and isolation --------------------------------------------------------- */

/* A second process (its own loader and instance) meets the same filesystem by key. */
static void two_processes_share_one_key(void **state)
{
	(void)state;
	int status;
	/* The writer: another process with its own loader and instance on the same state dir,
	 * which exits once it has written. */
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		backend_fixture mine;
		if (bwrap_fixture_open(&mine, fx.state, "", NULL))
			_exit(10);
		msb_key k = backend_key("shared", NULL);
		msb_sandbox_handle *h = NULL;
		if (mine.ops->acquire(mine.self, &k, &spec, &h, NULL))
			_exit(11);
		if (mine.ops->write_file(h, "from-child.txt", "child", 5, spec.work_dir, NULL))
			_exit(12);
		mine.ops->release(h);
		backend_fixture_close(&mine);
		_exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* The sandbox outlived the process that made it. */
	msb_sandbox_handle *h = acquire("shared", NULL);
	msb_buf buf = { 0 };
	assert_int_equal(fx.ops->read_file(h, "from-child.txt", spec.work_dir, 64, &buf, NULL), MSB_OK);
	assert_int_equal(buf.len, 5);
	assert_memory_equal(buf.data, "child", 5);
	msb_buf_free(&buf);
	fx.ops->release(h);

	/* A different key never sees it. */
	msb_sandbox_handle *other = acquire("other", NULL);
	bool found = true;
	msb_entry e = { 0 };
	assert_int_equal(fx.ops->stat_file(other, "from-child.txt", spec.work_dir, &e, &found, NULL), MSB_OK);
	assert_false(found);
	fx.ops->release(other);
	backend_dispose(&fx, "shared", NULL);
	backend_dispose(&fx, "other", NULL);
}

/* call scope: call_id is part of the sandbox's name. */
static void call_ids_are_separate_sandboxes(void **state)
{
	(void)state;
	msb_sandbox_handle *a = acquire("calls", "c1");
	msb_sandbox_handle *b = acquire("calls", "c2");
	assert_int_equal(fx.ops->write_file(a, "only-c1", "1", 1, spec.work_dir, NULL), MSB_OK);
	bool found = true;
	msb_entry e = { 0 };
	assert_int_equal(fx.ops->stat_file(b, "only-c1", spec.work_dir, &e, &found, NULL), MSB_OK);
	assert_false(found);
	fx.ops->release(a);
	fx.ops->release(b);
	msb_scope_purge purge = { 0 };
	fx.ops->dispose_scope(fx.self, "test", "calls", &purge);
	assert_false(purge.has_undisposed);
	assert_int_equal(purge.disposed, 2);
	msb_scope_purge_free(&purge);
}

/* ---- the boundary ------------------------------------------------------------------ */

static void root_is_read_only_and_work_dir_writable(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire("ro", NULL);
	msb_exec_result r = backend_run(&fx, h, 10, 0, "touch /usr/x 2>&1; touch /x 2>&1; echo w > /msb/work/w && cat /msb/work/w; "
				      "echo t > /tmp/t && cat /tmp/t; ls /etc");
	assert_non_null(strstr(backend_out(&r), "/usr/x': Read-only file system"));
	assert_non_null(strstr(backend_out(&r), "/x': Read-only file system"));
	assert_non_null(strstr(backend_out(&r), "w\nt\n"));
	/* Only the pieces of /etc a program needs: no shadow, no ssh, no resolv.conf. */
	assert_null(strstr(backend_out(&r), "shadow"));
	assert_null(strstr(backend_out(&r), "ssh"));
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "ro", NULL);
}

static void egress_is_closed(void **state)
{
	(void)state;
	/* A listener in the host's network namespace, on loopback. */
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(lfd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t alen = sizeof a;
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(listen(lfd, 4), 0);
	int port = ntohs(a.sin_port);

	msb_sandbox_handle *h = acquire("net", NULL);
	msb_exec_result r = backend_run(&fx, h, 10, 0,
			       "python3 - <<'EOF'\n"
			       "import socket, errno\n"
			       "s = socket.socket()\n"
			       "s.settimeout(2)\n"
			       "try:\n"
			       "    s.connect(('127.0.0.1', %d)); print('connected')\n"
			       "except OSError as e: print('refused', e.errno)\n"
			       "try:\n"
			       "    socket.socket(40, socket.SOCK_STREAM); print('vsock opened')\n"
			       "except OSError as e: print('vsock', e.errno)\n"
			       "import os; print(sorted(os.listdir('/sys/class/net')) if os.path.exists('/sys/class/net') else 'nosys')\n"
			       "EOF\n"
			       "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '",
			       port);
	/* The sandbox's loopback is its own: nothing listens there. */
	assert_non_null(strstr(backend_out(&r), "refused 111"));
	assert_null(strstr(backend_out(&r), "connected"));
	/* vsock reaches the hypervisor host past any network namespace: refused by seccomp. */
	assert_non_null(strstr(backend_out(&r), "vsock 97"));
	/* One interface: lo. */
	assert_non_null(strstr(backend_out(&r), "\nlo\n"));
	assert_null(strstr(backend_out(&r), "eth"));
	msb_exec_result_free(&r);
	/* And the host's listener never saw a connection. */
	assert_int_equal(accept(lfd, NULL, NULL), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	close(lfd);
	fx.ops->release(h);
	backend_dispose(&fx, "net", NULL);
}

static void blocked_syscalls_and_no_capabilities(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire("sys", NULL);
	msb_exec_result r = backend_run(&fx, h, 10, 0,
			       "unshare -U true 2>&1; unshare -n true 2>&1; "
			       "python3 - <<'EOF'\n"
			       "import ctypes, os\n"
			       "libc = ctypes.CDLL(None, use_errno=True)\n"
			       "for name, nr, args in [('keyctl', 250, (0, 0, 0)), ('ptrace', 101, (0, 0, 0)),\n"
			       "                       ('bpf', 321, (0, 0, 0)), ('mount', 165, (0, 0, 0)),\n"
			       "                       ('kexec_load', 246, (0, 0, 0)), ('setns', 308, (0, 0, 0)),\n"
			       "                       ('pidfd_getfd', 438, (0, 0, 0))]:\n"
			       "    rc = libc.syscall(nr, *args)\n"
			       "    print(name, rc, ctypes.get_errno())\n"
			       "EOF\n"
			       "grep -E '^Cap(Eff|Bnd|Prm)' /proc/self/status; id -u");
	const char *out = backend_out(&r);
	assert_non_null(strstr(out, "unshare failed: Operation not permitted"));
	/* EPERM (1) from the filter, for each. */
	assert_non_null(strstr(out, "keyctl -1 1\n"));
	assert_non_null(strstr(out, "ptrace -1 1\n"));
	assert_non_null(strstr(out, "bpf -1 1\n"));
	assert_non_null(strstr(out, "mount -1 1\n"));
	assert_non_null(strstr(out, "kexec_load -1 1\n"));
	assert_non_null(strstr(out, "setns -1 1\n"));
	assert_non_null(strstr(out, "pidfd_getfd -1 1\n"));
	/* No capability at all, not even in the bounding set: no CAP_SYS_ADMIN inside. */
	assert_non_null(strstr(out, "CapPrm:\t0000000000000000"));
	assert_non_null(strstr(out, "CapEff:\t0000000000000000"));
	assert_non_null(strstr(out, "CapBnd:\t0000000000000000"));
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "sys", NULL);
}

/*
 * Nothing of the host leaks in through a file descriptor: bwrap's init and the agent hold
 * no directory (a directory fd from outside the root is a classic way out: openat(fd, "..")),
 * and no host file at all (their output is a pipe), which /proc/1/fd would let any process
 * of the sandbox reopen when it runs as msb's own user.
 */
static void no_host_descriptors_inside(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire("fds", NULL);
	/* bwrap's init's fds are listed; the agent's are not even that (it is not dumpable:
	 * tests/hostile/hostile.sh attacks that), which is checked too. */
	msb_exec_result r = backend_run(&fx, h, 10, 0, "agent=$(tr -d ' ' < /proc/1/task/1/children); n=0; "
				      "for f in /proc/1/fd/*; do "
				      "[ -d \"$f\" ] && echo \"dirfd $f\"; "
				      "case $(readlink $f) in /dev/null|pipe:*|socket:*|anon_inode:*) ;; "
				      "*) echo \"hostfile $f $(readlink $f)\";; esac; n=$((n+1)); done; echo \"fds $n\"; "
				      "ls /proc/$agent/fd/ >/dev/null 2>&1 && echo agent-fds-listed; "
				      "for f in /proc/$agent/fd/*; do readlink $f && echo agent-fd-read; done");
	assert_null(strstr(backend_out(&r), "dirfd"));
	assert_null(strstr(backend_out(&r), "hostfile"));
	assert_null(strstr(backend_out(&r), "agent-fd"));
	assert_non_null(strstr(backend_out(&r), "fds "));
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "fds", NULL);
}

/*
 * The agent's socket is nowhere the guest can reach: msb makes it in the box directory,
 * owner-only, and hands it to the agent open. So no guest can replace it with a link to
 * another host socket, or connect to it from another user: the host reaches the agent or
 * nothing.
 */
static void the_agents_socket_is_out_of_the_guests_reach(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire("socket", NULL);
	msb_exec_result r = backend_run(&fx, h, 10, 0,
					"ls -A /msb; find / -xdev -type s 2>/dev/null | wc -l");
	assert_string_equal(backend_out(&r), "bin\nwork\n0\n");
	msb_exec_result_free(&r);
	struct stat st;
	assert_int_equal(lstat(msb_driver_sandbox_box(h)->socket_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 077, 0);
	fx.ops->release(h);
	/* A fresh handle (a new connection through the state directory) still works. */
	h = acquire("socket", NULL);
	r = backend_run(&fx, h, 10, 0, "echo still-the-agent");
	assert_string_equal(backend_out(&r), "still-the-agent\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "socket", NULL);
}

/* ---- limits ------------------------------------------------------------------------ */

/* The first line of `file` in the sandbox's cgroup directory that has it. */
static bool cgroup_file(msb_sandbox_handle *h, const char *file, char *out, size_t n)
{
	char list[512], kind[16], dir[400];
	snprintf(list, sizeof list, "%s/cgroup", msb_driver_sandbox_box(h)->dir);
	FILE *f = fopen(list, "re");
	if (!f)
		return false;
	bool found = false;
	while (!found && fscanf(f, "%15s %399s", kind, dir) == 2) {
		char path[460];
		snprintf(path, sizeof path, "%s/%s", dir, file);
		FILE *g = fopen(path, "re");
		if (g) {
			found = fgets(out, (int)n, g) != NULL;
			fclose(g);
		}
	}
	fclose(f);
	return found;
}

/*
 * The last component of the sandbox's cgroup directories (the same in every hierarchy): its
 * name, or a spare's that an earlier start made for it (msb/cgroup.h).
 */
static void cgroup_leaf(msb_sandbox_handle *h, char *out, size_t n)
{
	char list[512], kind[16], dir[400] = "";
	snprintf(list, sizeof list, "%s/cgroup", msb_driver_sandbox_box(h)->dir);
	FILE *f = fopen(list, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%15s %399s", kind, dir), 2);
	fclose(f);
	snprintf(out, n, "%s", strrchr(dir, '/') + 1);
}

/* The pid of the sandbox's keeper: the parent of bwrap, whose pid the driver recorded. */
static long keeper_of(msb_sandbox_handle *h)
{
	long bwrap_pid = 0, keeper = 0;
	FILE *f = fopen(msb_driver_sandbox_box(h)->pid_path, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &bwrap_pid), 1);
	fclose(f);
	char path[64], stat[512] = "";
	snprintf(path, sizeof path, "/proc/%ld/stat", bwrap_pid);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(stat, sizeof stat, f));
	fclose(f);
	assert_int_equal(sscanf(strrchr(stat, ')') + 2, "%*c %ld", &keeper), 1);
	return keeper;
}

/*
 * The keeper lives as long as the sandbox. Left a fork of the host, it would keep a copy of
 * every page the host writes after the acquire: a host that rewrites 64 MiB would leave each
 * of its sandboxes holding 64 MiB. It execs `msb-agent --reap` instead (a small static
 * program), a moment after it forked bwrap.
 */
static void keeper_does_not_pin_host_memory(void **state)
{
	(void)state;
	char *mem = NULL;
	msb_sandbox_handle *h = backend_acquire_while_host_writes(&fx, &spec, "pin", &mem);
	assert_non_null(h);
	long kib = backend_rss_kib_settled(keeper_of(h), 16 * 1024);
	free(mem);
	fx.ops->release(h);
	backend_dispose(&fx, "pin", NULL);
	assert_true(kib > 0 && kib < 16 * 1024);
}

/*
 * The limits are written while bwrap builds the sandbox, not before it starts: they must
 * all be in force by the time acquire returns, before any command can reach the agent.
 * The sandbox's keeper, bwrap, bwrap's init and the agent are members already.
 */
static void limits_are_in_force_when_acquire_returns(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	msb_sandbox_handle *h = acquire("limits-at-once", NULL);
	char mem[32] = "", pids[32] = "", quota[32] = "", current[32] = "";
	if (!cgroup_file(h, "memory.limit_in_bytes", mem, sizeof mem))
		assert_true(cgroup_file(h, "memory.max", mem, sizeof mem));
	assert_int_equal(atoll(mem), 96LL * 1024 * 1024);
	assert_true(cgroup_file(h, "pids.max", pids, sizeof pids));
	assert_int_equal(atol(pids), 48);
	if (cgroup_file(h, "cpu.cfs_quota_us", quota, sizeof quota))
		assert_int_equal(atol(quota), 100000);
	else
		assert_true(cgroup_file(h, "cpu.max", quota, sizeof quota) &&
			    strncmp(quota, "100000 ", 7) == 0);
	assert_true(cgroup_file(h, "pids.current", current, sizeof current));
	assert_true(atol(current) >= 4);
	/* The keeper (bwrap's parent) is in the sandbox's cgroup too. */
	char path[64], cgroups[4096] = "";
	snprintf(path, sizeof path, "/proc/%ld/cgroup", keeper_of(h));
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	size_t got = fread(cgroups, 1, sizeof cgroups - 1, f);
	fclose(f);
	cgroups[got] = '\0';
	char leaf[128];
	cgroup_leaf(h, leaf, sizeof leaf);
	assert_non_null(strstr(cgroups, leaf));
	fx.ops->release(h);
	backend_dispose(&fx, "limits-at-once", NULL);
}

/* The value of `field` in /proc/<pid>/status ("self" for pid 0), newline included. */
static void status_field(long pid, const char *field, char *out, size_t n)
{
	char path[64], line[256];
	if (pid)
		snprintf(path, sizeof path, "/proc/%ld/status", pid);
	else
		snprintf(path, sizeof path, "/proc/self/status");
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	out[0] = '\0';
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, strlen(field)) == 0)
			snprintf(out, n, "%s", line + strlen(field));
	fclose(f);
	assert_true(out[0] != '\0');
}

/*
 * From an instance's third start on, a sandbox starts in a cgroup its previous start made
 * ahead (msb/cgroup.h), limits written; the one made during the last start is removed with
 * the instance. The launch runs on the host's CPU until bwrap execs (msb/spawn.h), and
 * nothing stays pinned: not the host, not bwrap, not what runs inside.
 */
static void starts_use_a_cgroup_made_ahead_and_pin_nothing(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(bwrap_fixture_open(&mine, NULL, "", &err), MSB_OK);
	char host_cpus[256], spare[48];
	status_field(0, "Cpus_allowed_list:", host_cpus, sizeof host_cpus);
	snprintf(spare, sizeof spare, "spare-%ld-", (long)getpid());
	static const char *const threads[] = { "ahead-1", "ahead-2", "ahead-3" };
	for (int i = 0; i < 3; i++) {
		msb_key k = backend_key(threads[i], NULL);
		msb_sandbox_handle *h = NULL;
		assert_int_equal(mine.ops->acquire(mine.self, &k, &spec, &h, &err), MSB_OK);
		char leaf[128], mem[32] = "", pids[32] = "", cpus[256];
		cgroup_leaf(h, leaf, sizeof leaf);
		if (i < 2)
			assert_string_equal(leaf, msb_driver_sandbox_box(h)->name);
		else
			assert_int_equal(strncmp(leaf, spare, strlen(spare)), 0);
		if (!cgroup_file(h, "memory.limit_in_bytes", mem, sizeof mem))
			assert_true(cgroup_file(h, "memory.max", mem, sizeof mem));
		assert_int_equal(atoll(mem), 96LL * 1024 * 1024);
		assert_true(cgroup_file(h, "pids.max", pids, sizeof pids));
		assert_int_equal(atol(pids), 48);
		status_field(0, "Cpus_allowed_list:", cpus, sizeof cpus);
		assert_string_equal(cpus, host_cpus);
		status_field(keeper_of(h), "Cpus_allowed_list:", cpus, sizeof cpus);
		assert_string_equal(cpus, host_cpus);
		msb_exec_result r = backend_run(&mine, h, 10, 0, "grep Cpus_allowed_list: /proc/self/status");
		assert_int_equal(r.exit_code, 0);
		assert_string_equal(strchr(backend_out(&r), ':') + 1, host_cpus);
		msb_exec_result_free(&r);
		mine.ops->release(h);
	}
	for (int i = 0; i < 3; i++)
		backend_dispose(&mine, threads[i], NULL);
	backend_fixture_close(&mine);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
}

/*
 * From an instance's third start on, a sandbox's network namespace is one its previous
 * start made ahead (msb/netns.h), which the launch joined before bwrap ran: the keeper
 * shares it then, where before it stayed in the host's. Each is the sandbox's alone, holds
 * only its loopback, up, and nothing is left after close.
 */
static void starts_use_a_network_namespace_made_ahead(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		printf("skipped: only root makes a network namespace ahead (msb/netns.h)\n");
		skip();
	}
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(bwrap_fixture_open(&mine, NULL, "", &err), MSB_OK);
	static const char *const threads[] = { "net-1", "net-2", "net-3", "net-4" };
	unsigned long host = netns_probe_of(0), seen[4];
	for (int i = 0; i < 4; i++) {
		msb_key k = backend_key(threads[i], NULL);
		msb_sandbox_handle *h = NULL;
		assert_int_equal(mine.ops->acquire(mine.self, &k, &spec, &h, &err), MSB_OK);
		msb_exec_result r = backend_run(&mine, h, 10, 0,
				"stat -L -c %%i /proc/self/ns/net; "
				"tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
				"python3 -c \"import socket; l = socket.socket(); l.bind(('127.0.0.1', 0)); "
				"l.listen(); socket.create_connection(l.getsockname()); print('lo carries')\"");
		assert_int_equal(r.exit_code, 0);
		char *after = NULL;
		seen[i] = strtoul(backend_out(&r), &after, 10);
		assert_string_equal(after, "\nlo\nlo carries\n");
		msb_exec_result_free(&r);
		assert_true(seen[i] != host);
		for (int j = 0; j < i; j++)
			assert_true(seen[i] != seen[j]);
		unsigned long keeper = netns_probe_of(keeper_of(h));
		if (i < 2)
			assert_true(keeper == host);
		else
			assert_true(keeper == seen[i]);
		mine.ops->release(h);
	}
	for (int i = 0; i < 4; i++)
		backend_dispose(&mine, threads[i], NULL);
	backend_fixture_close(&mine);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
}

static void fork_bomb_is_held(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	msb_sandbox_handle *h = acquire("bomb", NULL);
	/* 200 sleepers against pids.max 48: the shell's forks start failing. */
	msb_exec_result r = backend_run(&fx, h, 20, 0, "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done 2>&1 | head -n 1; "
				      "echo made; exit 0");
	assert_non_null(strstr(backend_out(&r), "fork"));
	msb_exec_result_free(&r);
	/* The limit is what refused them, and it held. */
	char events[64] = "", current[32] = "";
	assert_true(cgroup_file(h, "pids.events", events, sizeof events));
	assert_true(cgroup_file(h, "pids.current", current, sizeof current));
	long max_hits = 0;
	assert_int_equal(sscanf(events, "max %ld", &max_hits), 1);
	assert_true(max_hits > 0);
	assert_true(atol(current) <= 48);
	/* The host still forks. */
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	assert_true(p > 0);
	waitpid(p, NULL, 0);
	/* And the sandbox answers again: the agent ended what the bombing command left. */
	r = backend_run(&fx, h, 10, 0, "echo alive");
	assert_string_equal(backend_out(&r), "alive\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "bomb", NULL);
}

static void memory_hog_is_killed(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	msb_sandbox_handle *h = acquire("hog", NULL);
	msb_exec_result r = backend_run(&fx, h, 30, 0, "python3 -c 'b = bytearray(400 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096]); print(\"survived\")'; "
				      "echo status $?");
	/* The memory cgroup's OOM killer takes the hog (SIGKILL: 128 + 9). */
	assert_null(strstr(backend_out(&r), "survived"));
	assert_non_null(strstr(backend_out(&r), "status 137"));
	msb_exec_result_free(&r);
	/* It was the sandbox's memory cgroup that held it: its peak usage reached the ceiling
	 * and never passed it (v1; a v2 kernel says so in memory.events instead). */
	char peak[32] = "", ceiling[32] = "";
	if (cgroup_file(h, "memory.max_usage_in_bytes", peak, sizeof peak)) {
		assert_true(cgroup_file(h, "memory.limit_in_bytes", ceiling, sizeof ceiling));
		assert_int_equal(atoll(peak), atoll(ceiling));
		assert_int_equal(atoll(ceiling), 96LL * 1024 * 1024);
	} else {
		assert_true(cgroup_file(h, "memory.events", peak, sizeof peak));
	}
	/* The sandbox's agent survives its workload's OOM. */
	r = backend_run(&fx, h, 10, 0, "echo alive");
	assert_string_equal(backend_out(&r), "alive\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "hog", NULL);
}

static void ten_gigabytes_are_bounded(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire("disk", NULL);
	msb_exec_result r = backend_run(&fx, h, 30, 0, "dd if=/dev/zero of=big bs=1M count=10240 2>/dev/null; echo status $?; "
				      "stat -c %%s big");
	/* rlimit_fsize 16MiB: dd is stopped by SIGXFSZ (128 + 25) at the limit, not at 10 GB. */
	assert_non_null(strstr(backend_out(&r), "status 153"));
	assert_non_null(strstr(backend_out(&r), "\n16777216\n"));
	msb_exec_result_free(&r);
	/* /tmp is a small tmpfs of its own. */
	r = backend_run(&fx, h, 30, 0, "dd if=/dev/zero of=/tmp/big bs=1M count=100 2>&1 | grep -o 'No space left'");
	assert_string_equal(backend_out(&r), "No space left\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "disk", NULL);
}

static long count_procs(const char *procs)
{
	FILE *f = fopen(procs, "re");
	if (!f)
		return -1;
	long n = 0, pid;
	while (fscanf(f, "%ld", &pid) == 1)
		n++;
	fclose(f);
	return n;
}

/* Whether a member of `procs` is, in its own (innermost) pid namespace, pid `inner`. */
static bool nspid_member(const char *procs, long inner)
{
	FILE *f = fopen(procs, "re");
	if (!f)
		return false;
	long pid;
	bool found = false;
	while (!found && fscanf(f, "%ld", &pid) == 1) {
		char path[64], line[256];
		snprintf(path, sizeof path, "/proc/%ld/status", pid);
		FILE *st = fopen(path, "re");
		if (!st)
			continue;
		while (fgets(line, sizeof line, st)) {
			if (strncmp(line, "NSpid:", 6) == 0) {
				char *last = strrchr(line, '\t');
				found = last && strtol(last + 1, NULL, 10) == inner && strchr(line + 6, '\t') != last;
				break;
			}
		}
		fclose(st);
	}
	fclose(f);
	return found;
}

/* A daemon that leaves its session and process group is still killed at dispose. */
static void escaped_daemon_dies_at_dispose(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	msb_sandbox_handle *h = acquire("daemon", NULL);
	const msb_driver_box *box = msb_driver_sandbox_box(h);
	char cgfile[512], pids_procs[512] = "";
	snprintf(cgfile, sizeof cgfile, "%s/cgroup", box->dir);
	FILE *f = fopen(cgfile, "re");
	assert_non_null(f);
	char kind[16], dir[400];
	char dirs[8][400];
	int ndirs = 0;
	while (fscanf(f, "%15s %399s", kind, dir) == 2 && ndirs < 8) {
		snprintf(dirs[ndirs++], sizeof dirs[0], "%s", dir);
		if (strstr(dir, "/pids/"))
			snprintf(pids_procs, sizeof pids_procs, "%s/cgroup.procs", dir);
	}
	fclose(f);
	assert_true(ndirs > 0);
	assert_true(pids_procs[0]);

	msb_exec_result r = backend_run(&fx, h, 10, 0, "setsid sh -c 'sleep 1000 & echo $!' > daemon.pid; sleep 0.2; "
				      "cat daemon.pid; cat /proc/1/stat | cut -d' ' -f2; ls /proc | grep -c '^[0-9]'");
	assert_int_equal(r.exit_code, 0);
	long daemon = 0, inside = 0;
	char init_comm[32] = "";
	assert_int_equal(sscanf(backend_out(&r), "%ld %31s %ld", &daemon, init_comm, &inside), 3);
	msb_exec_result_free(&r);
	assert_true(daemon > 1);
	/* Every process of the sandbox's pid namespace is a member, the daemon and the
	 * sandbox's init included: the cgroup was in place before anything ran. */
	assert_true(nspid_member(pids_procs, 1));
	assert_true(nspid_member(pids_procs, daemon));
	long before = count_procs(pids_procs);
	assert_true(before >= inside - 3); /* `ls`, `grep` and the shell have gone since */
	pid_t bwrap_pid = msb_driver_read_live_pid(box);
	assert_true(bwrap_pid > 0);
	fx.ops->release(h);
	backend_dispose(&fx, "daemon", NULL);
	/* Nothing of it is left: no member, no cgroup directory, no bwrap. */
	for (int i = 0; i < ndirs; i++)
		assert_int_equal(access(dirs[i], F_OK), -1);
	for (int i = 0; i < 200 && msb_driver_pid_running(bwrap_pid); i++)
		usleep(10000);
	assert_false(msb_driver_pid_running(bwrap_pid));
}

/* Timeouts kill the whole tree, wall-clock; output caps truncate and say so. */
static void timeout_and_output_cap(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire("limits", NULL);
	const char *argv[] = { "sh", "-c", "sleep 30 & sleep 30", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 0.5 };
	msb_exec_result r = { 0 };
	msb_error err = MSB_ERROR_INIT;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fx.ops->exec(h, &req, &r, &err), MSB_OK);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(r.timed_out);
	assert_true((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 < 5.0);
	msb_exec_result_free(&r);
	/* Neither sleeper survived the timeout. */
	r = backend_run(&fx, h, 10, 0, "for i in 1 2 3 4 5 6 7 8 9 10; do "
		      "n=$(ps -eo stat=,comm= | awk '$1 !~ /Z/ && $2 == \"sleep\"' | wc -l); "
		      "[ $n = 0 ] && break; done; echo $n");
	assert_string_equal(backend_out(&r), "0\n");
	msb_exec_result_free(&r);

	const char *yes[] = { "sh", "-c", "yes | head -c 100000", NULL };
	msb_exec_request capped = { .argv = yes, .timeout = 10, .max_output = 1000 };
	assert_int_equal(fx.ops->exec(h, &capped, &r, &err), MSB_OK);
	assert_true(r.out_truncated);
	assert_int_equal(r.out.len, 1000);
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "limits", NULL);
}

/* A sandbox whose agent died is replaced on the next acquire, and nothing of it is left. */
static void a_dead_sandbox_is_replaced(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	msb_sandbox_handle *h = acquire("dies", NULL);
	const msb_driver_box *box = msb_driver_sandbox_box(h);
	char cgfile[512], first_dir[400] = "", kind[16];
	snprintf(cgfile, sizeof cgfile, "%s/cgroup", box->dir);
	FILE *f = fopen(cgfile, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%15s %399s", kind, first_dir), 2);
	fclose(f);
	pid_t old = msb_driver_read_live_pid(box);
	/* The agent is the init's only child; killing it ends the sandbox. */
	const char *argv[] = { "sh", "-c", "kill -KILL $(cat /proc/1/task/1/children)", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 5 };
	msb_exec_result r = { 0 };
	fx.ops->exec(h, &req, &r, NULL);
	msb_exec_result_free(&r);
	fx.ops->release(h);
	for (int i = 0; i < 200 && msb_driver_pid_running(old); i++)
		usleep(10000);
	assert_false(msb_driver_pid_running(old));

	h = acquire("dies", NULL);
	r = backend_run(&fx, h, 10, 0, "echo again");
	assert_string_equal(backend_out(&r), "again\n");
	msb_exec_result_free(&r);
	assert_true(msb_driver_read_live_pid(msb_driver_sandbox_box(h)) != old);
	fx.ops->release(h);
	backend_dispose(&fx, "dies", NULL);
	assert_int_equal(access(first_dir, F_OK), -1);
}

/* `user: per-sandbox`: each sandbox runs as ids of its own, and owns its work directory. */
static void per_sandbox_ids(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS(); /* root, to give sandboxes ids of their own */
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(bwrap_fixture_open(&mine, NULL, "user: per-sandbox\nid_base: 3000000\nid_count: 1000\n",
					    &err), MSB_OK);
	long ids[2];
	for (int i = 0; i < 2; i++) {
		msb_key k = backend_key(i ? "ids-b" : "ids-a", NULL);
		msb_sandbox_handle *h = NULL;
		assert_int_equal(mine.ops->acquire(mine.self, &k, &spec, &h, &err), MSB_OK);
		const char *argv[] = { "sh", "-c", "id -u; id -g", NULL };
		msb_exec_request req = { .argv = argv, .timeout = 10 };
		msb_exec_result r = { 0 };
		assert_int_equal(mine.ops->exec(h, &req, &r, &err), MSB_OK);
		long uid = -1, gid = -1;
		assert_int_equal(sscanf(backend_out(&r), "%ld %ld", &uid, &gid), 2);
		msb_exec_result_free(&r);
		assert_true(uid >= 3000000 && uid < 3001000);
		assert_int_equal(gid, uid);
		struct stat st;
		assert_int_equal(stat(msb_driver_sandbox_box(h)->work_dir, &st), 0);
		assert_int_equal((long)st.st_uid, uid);
		assert_int_equal(st.st_mode & 0777, 0700);
		ids[i] = uid;
		mine.ops->release(h);
	}
	/* These two names hash apart in a range of 1000 (fixed keys, so fixed names). */
	assert_true(ids[0] != ids[1]);
	msb_scope_purge purge = { 0 };
	mine.ops->dispose_scope(mine.self, "test", "ids-a", &purge);
	mine.ops->dispose_scope(mine.self, "test", "ids-b", &purge);
	assert_false(purge.has_undisposed);
	msb_scope_purge_free(&purge);
	backend_fixture_close(&mine);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
}

/*
 * Opening the backend sweeps the spares a dead host left under its cgroup parent (a pid
 * gone, or a pid reused by a process that started later), and leaves a live host's.
 */
static void opening_sweeps_a_dead_hosts_spares(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip();
	backend_fixture mine;
	char dir[64] = "/tmp/msb-bwrap-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	memcpy(backend_fixture_made[backend_fixture_made_n++], dir, sizeof dir);
	char parent[160], path[400];
	snprintf(parent, sizeof parent, "/sys/fs/cgroup/memory/msb-test/%s", strrchr(dir, '/') + 1);
	mkdir("/sys/fs/cgroup/memory/msb-test", 0755);
	assert_int_equal(mkdir(parent, 0755), 0);
	unsigned long long started = 0;
	char run_state;
	assert_true(msb_proc_start_time(getpid(), &started, &run_state));
	char names[3][80];
	snprintf(names[0], sizeof names[0], "spare-999999999-%llu-0", started); /* no such pid */
	snprintf(names[1], sizeof names[1], "spare-%ld-%llu-0", (long)getpid(), started + 1);
	snprintf(names[2], sizeof names[2], "spare-%ld-%llu-0", (long)getpid(), started); /* live */
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", parent, names[i]);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(bwrap_fixture_open(&mine, dir, "", &err), MSB_OK);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", parent, names[i]);
		assert_int_equal(access(path, F_OK) == 0, i == 2);
	}
	snprintf(path, sizeof path, "%s/%s", parent, names[2]);
	assert_int_equal(rmdir(path), 0);
	backend_fixture_close(&mine);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
}

/* ---- disposal is truthful ---------------------------------------------------------- */

/* Write "0" (the writer) into `procs`. */
static bool join(const char *procs)
{
	FILE *f = fopen(procs, "we");
	if (!f)
		return false;
	bool ok = fputs("0", f) >= 0;
	return fclose(f) == 0 && ok;
}

/* This process's cgroup.procs in the v1 pids hierarchy, from /proc/self/cgroup. */
static bool own_pids_procs(char *out, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		char *p = strstr(line, ":pids:");
		if (p) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(out, n, "/sys/fs/cgroup/pids%s/cgroup.procs", strcmp(p + 6, "/") ? p + 6 : "");
			found = true;
		}
	}
	fclose(f);
	return found;
}

/*
 * A member that cannot be killed (here: the test itself, which destroy never signals)
 * keeps the cgroup alive: dispose says so with a timeout failure rather than reporting
 * success, and a later dispose, once the member is gone, finishes the job.
 */
static void a_dispose_that_did_not_land_says_so(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	char home[512];
	if (!own_pids_procs(home, sizeof home))
		skip();
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(bwrap_fixture_open(&mine, NULL, "stop_timeout: 300ms\n", &err), MSB_OK);
	msb_key k = backend_key("stuck", NULL);
	msb_sandbox_handle *h = NULL;
	assert_int_equal(mine.ops->acquire(mine.self, &k, &spec, &h, &err), MSB_OK);
	char dir[256], cgfile[300], pids_procs[512] = "";
	snprintf(dir, sizeof dir, "%s", msb_driver_sandbox_box(h)->dir);
	snprintf(cgfile, sizeof cgfile, "%s/cgroup", dir);
	mine.ops->release(h);
	FILE *f = fopen(cgfile, "re");
	assert_non_null(f);
	char kind[16], path[400];
	while (fscanf(f, "%15s %399s", kind, path) == 2)
		if (strstr(path, "/pids/"))
			snprintf(pids_procs, sizeof pids_procs, "%s/cgroup.procs", path);
	fclose(f);
	if (!pids_procs[0])
		skip();
	assert_true(join(pids_procs));

	msb_disposal_failure fail = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool reported = mine.ops->dispose(mine.self, &k, &fail);
	assert_true(join(home));
	assert_true(reported);
	assert_int_equal(fail.code, MSB_DISPOSAL_TIMEOUT);
	assert_non_null(strstr(fail.detail, "could not be removed"));
	msb_disposal_failure_free(&fail);

	/* The member is gone now: the next dispose lands, and nothing is left. */
	assert_false(mine.ops->dispose(mine.self, &k, &fail));
	assert_int_equal(access(dir, F_OK), -1);
	backend_fixture_close(&mine);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
}

/* ---- refusals ---------------------------------------------------------------------- */

static void unknown_image_is_refused(void **state)
{
	(void)state;
	msb_spec s = spec;
	s.image = "no-such-image";
	msb_key k = backend_key("img", NULL);
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(fx.ops->acquire(fx.self, &k, &s, &h, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "no-such-image"));
	assert_non_null(strstr(msb_error_message(&err), "not configured"));
	msb_error_clear(&err);
	backend_dispose(&fx, "img", NULL);
}

/*
 * A state directory below a directory the sandbox's user cannot search is refused, naming
 * that directory, and the operator's directory is left as it was.
 */
static void unsearchable_state_parent_is_refused(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS(); /* as root only does msb hand directories to another user */
	char parent[64], state_dir[96];
	snprintf(parent, sizeof parent, "/tmp/operator-closed-XXXXXX");
	assert_non_null(mkdtemp(parent)); /* 0700 */
	snprintf(state_dir, sizeof state_dir, "%s/state", parent);
	assert_int_equal(mkdir(state_dir, 0700), 0);
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(bwrap_fixture_open(&mine, state_dir, "", &err), MSB_OK);
	msb_key k = backend_key("closed", NULL);
	msb_sandbox_handle *h = NULL;
	assert_int_equal(mine.ops->acquire(mine.self, &k, &spec, &h, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), parent));
	assert_non_null(strstr(msb_error_message(&err), "not searchable"));
	msb_error_clear(&err);
	struct stat st;
	assert_int_equal(stat(parent, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	msb_disposal_failure f = { 0 };
	assert_false(mine.ops->dispose(mine.self, &k, &f));
	msb_disposal_failure_free(&f);
	backend_fixture_close(&mine);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
	rmdir(parent);
}

/* A directory the sandbox's user can enter, for a stand-in agent binary `name` (its path
 * in `agent`). */
static void stand_in_dir(char dir[64], char *agent, size_t n, const char *name)
{
	snprintf(dir, 64, "/tmp/msb-stand-in-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(agent, n, "%s/%s", dir, name);
}

/*
 * Acquire one sandbox with `agent` as the agent binary (`extra`: more config); what acquire
 * said into `said`; then `dir` removed. Whatever happens, nothing may be left behind.
 */
static msb_errc acquire_with_agent(const char *dir, const char *agent, const char *extra,
				   char *said, size_t n)
{
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(backend_fixture_state(&mine, NULL, "/tmp/msb-bwrap-test-XXXXXX", &err), MSB_OK);
	char parent[96];
	bwrap_fixture_cgroup_parent(&mine, parent, sizeof parent);
	assert_int_equal(backend_fixture_load(&mine, BWRAP_PLUGIN, &err,
					      "state_dir: %s\nagent: %s\ncgroup_parent: %s\n%s",
					      mine.state, agent, parent, extra),
			 MSB_OK);
	msb_key k = backend_key("stand-in", NULL);
	msb_sandbox_handle *h = NULL;
	msb_errc rc = mine.ops->acquire(mine.self, &k, &spec, &h, &err);
	snprintf(said, n, "%s", msb_error_message(&err));
	msb_error_clear(&err);
	backend_fixture_close(&mine);
	int leaks = bwrap_fixture_leaks(&mine);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(leaks, 0);
	return rc;
}

/*
 * The keeper shares msb's memory until it execs the agent binary as its reaper, so it can
 * never stay as it is: an agent binary that cannot be executed fails the start, saying so,
 * and leaves nothing behind.
 */
static void a_keeper_that_cannot_become_the_reaper_fails_the_start(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	char dir[64], agent[96], cmd[512], said[512];
	stand_in_dir(dir, agent, sizeof agent, "msb-agent");
	snprintf(cmd, sizeof cmd, "cp %s %s && chmod 0644 %s", BACKEND_FIXTURE_AGENT, agent, agent);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(acquire_with_agent(dir, agent, "", said, sizeof said), MSB_E_BACKEND);
	assert_non_null(strstr(said, "keeper's reaper"));
	assert_non_null(strstr(said, "Permission denied"));
}

/*
 * The agent's socket is made at <state_dir>/sk-…/agent.sock: a state directory so deep that
 * no unix socket address could hold that path is refused when the backend opens, naming the
 * directory and the limit, rather than failing every start later.
 */
static void a_state_dir_too_deep_for_its_sockets_is_refused(void **state)
{
	(void)state;
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(backend_fixture_state(&mine, NULL, "/tmp/msb-bwrap-test-XXXXXX", &err), MSB_OK);
	char deep[160];
	snprintf(deep, sizeof deep, "%s/%s", mine.state,
		 "a-state-directory-deep-enough-that-no-socket-address-holds-its-sockets");
	assert_int_equal(mkdir(deep, 0700), 0);
	msb_errc rc = backend_fixture_load(&mine, BWRAP_PLUGIN, &err, "state_dir: %s\nagent: %s\n",
					   deep, BACKEND_FIXTURE_AGENT);
	char said[512];
	snprintf(said, sizeof said, "%s", msb_error_message(&err));
	msb_error_clear(&err);
	backend_fixture_close(&mine);
	assert_int_equal(rmdir(deep), 0);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
	assert_int_equal(rc, MSB_E_CONFIG);
	assert_non_null(strstr(said, deep));
	assert_non_null(strstr(said, "would not fit a unix socket address"));
}

/* A shell script for agent (`body` after a line that execs the real agent for the keeper's
 * --reap), started with start_timeout 0.5 s; what acquire said into `said`. */
static msb_errc start_with_stand_in(const char *body, char *said, size_t n)
{
	char dir[64], agent[96];
	stand_in_dir(dir, agent, sizeof agent, "agent.sh");
	FILE *f = fopen(agent, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n[ \"$1\" = --reap ] && exec %s --reap\n%s\n", BACKEND_FIXTURE_AGENT, body);
	fclose(f);
	assert_int_equal(chmod(agent, 0755), 0);
	return acquire_with_agent(dir, agent, "start_timeout: 0.5\n", said, n);
}

/*
 * An agent that never answers the greeting queued at launch fails the start at
 * start_timeout; one that hangs up on it (and lives on) is reported as refusing it, not as a
 * sandbox that died.
 */
static void an_agent_that_does_not_answer_fails_the_start(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS();
	char said[512];
	assert_int_equal(start_with_stand_in("exec sleep 30", said, sizeof said), MSB_E_BACKEND);
	assert_non_null(strstr(said, "the agent did not answer within 0.5 s"));
	assert_int_equal(start_with_stand_in(STAND_IN_HANGS_UP(6), said, sizeof said),
			 MSB_E_PROTOCOL);
	assert_non_null(strstr(said, "the agent refused its greeting"));
	assert_non_null(strstr(said, "reading a frame failed")); /* reset: the HELLO went unread */
}

/*
 * A start that bwrap itself refuses (here: an image root the sandbox's user cannot read)
 * fails the acquire with bwrap's own words, and leaves nothing behind.
 */
static void a_failed_start_says_why(void **state)
{
	(void)state;
	BWRAP_NEED_CGROUPS(); /* as root the sandbox runs as another user than msb */
	char closed[64], root[96], extra[160];
	snprintf(closed, sizeof closed, "/tmp/operator-closed-XXXXXX");
	assert_non_null(mkdtemp(closed)); /* 0700: nobody cannot enter */
	snprintf(root, sizeof root, "%s/root", closed);
	assert_int_equal(mkdir(root, 0755), 0);
	assert_int_equal(mkdir(strcat(strcpy((char[128]){ 0 }, root), "/usr"), 0755), 0);
	snprintf(extra, sizeof extra, "images:\n  closed: %s\n", root);
	backend_fixture mine;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(bwrap_fixture_open(&mine, NULL, extra, &err), MSB_OK);
	msb_spec s = spec;
	s.image = "closed";
	msb_key k = backend_key("closed-image", NULL);
	msb_sandbox_handle *h = NULL;
	assert_int_equal(mine.ops->acquire(mine.self, &k, &s, &h, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "exited before its agent answered"));
	assert_non_null(strstr(msb_error_message(&err), "bwrap: "));
	msb_error_clear(&err);
	msb_disposal_failure f = { 0 };
	assert_false(mine.ops->dispose(mine.self, &k, &f));
	msb_disposal_failure_free(&f);
	backend_fixture_close(&mine);
	assert_int_equal(bwrap_fixture_leaks(&mine), 0);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", closed);
	assert_int_equal(system(cmd), 0);
}

/* A configured image root: only its entries are there (no host /usr). */
static char image_root[64];

static void configured_image_is_the_root(void **state)
{
	(void)state;
	msb_spec s = spec;
	s.image = "tiny";
	msb_sandbox_handle *h = NULL;
	msb_key k = backend_key("tiny", NULL);
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = fx.ops->acquire(fx.self, &k, &s, &h, &err);
	if (rc)
		fprintf(stderr, "%s\n", msb_error_message(&err));
	assert_int_equal(rc, MSB_OK);
	assert_int_equal(fx.ops->write_file(h, "x", "y", 1, s.work_dir, &err), MSB_OK);
	bool found = false;
	msb_entry e = { 0 };
	assert_int_equal(fx.ops->stat_file(h, "x", s.work_dir, &e, &found, &err), MSB_OK);
	assert_true(found);
	free(e.path);
	/* No shell in this image: the host's /usr is not there to provide one. */
	const char *argv[] = { "/usr/bin/true", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 5 };
	msb_exec_result r = { 0 };
	rc = fx.ops->exec(h, &req, &r, &err);
	assert_true(rc != MSB_OK || r.exit_code != 0);
	msb_exec_result_free(&r);
	msb_error_clear(&err);
	fx.ops->release(h);
	backend_dispose(&fx, "tiny", NULL);
}

int main(void)
{
	char why[256];
	if (!bwrap_fixture_usable(why, sizeof why)) {
		printf("skip: %s\n", why);
		return MSB_TEST_SKIP;
	}
	/* Orphaned keepers of disposed sandboxes come back here to be reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	snprintf(image_root, sizeof image_root, "/tmp/msb-bwrap-image-XXXXXX");
	if (!mkdtemp(image_root) || chmod(image_root, 0755) != 0)
		return 1;
	char marker[128];
	snprintf(marker, sizeof marker, "%s/etc", image_root);
	mkdir(marker, 0755);
	char extra[256];
	snprintf(extra, sizeof extra, "images:\n  tiny: %s\n", image_root);
	msb_error err = MSB_ERROR_INIT;
	if (bwrap_fixture_open(&fx, NULL, extra, &err)) {
		fprintf(stderr, "cannot open the bwrap plugin: %s\n", msb_error_message(&err));
		return 1;
	}
	msb_spec_init(&spec, "bwrap-test");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_operation),
		cmocka_unit_test(two_processes_share_one_key),
		cmocka_unit_test(call_ids_are_separate_sandboxes),
		cmocka_unit_test(root_is_read_only_and_work_dir_writable),
		cmocka_unit_test(egress_is_closed),
		cmocka_unit_test(blocked_syscalls_and_no_capabilities),
		cmocka_unit_test(the_agents_socket_is_out_of_the_guests_reach),
		cmocka_unit_test(no_host_descriptors_inside),
		cmocka_unit_test(limits_are_in_force_when_acquire_returns),
		cmocka_unit_test(starts_use_a_cgroup_made_ahead_and_pin_nothing),
		cmocka_unit_test(starts_use_a_network_namespace_made_ahead),
		cmocka_unit_test(opening_sweeps_a_dead_hosts_spares),
		cmocka_unit_test(keeper_does_not_pin_host_memory),
		cmocka_unit_test(fork_bomb_is_held),
		cmocka_unit_test(memory_hog_is_killed),
		cmocka_unit_test(ten_gigabytes_are_bounded),
		cmocka_unit_test(escaped_daemon_dies_at_dispose),
		cmocka_unit_test(timeout_and_output_cap),
		cmocka_unit_test(a_dead_sandbox_is_replaced),
		cmocka_unit_test(per_sandbox_ids),
		cmocka_unit_test(a_dispose_that_did_not_land_says_so),
		cmocka_unit_test(unknown_image_is_refused),
		cmocka_unit_test(unsearchable_state_parent_is_refused),
		cmocka_unit_test(a_failed_start_says_why),
		cmocka_unit_test(an_agent_that_does_not_answer_fails_the_start),
		cmocka_unit_test(a_keeper_that_cannot_become_the_reaper_fails_the_start),
		cmocka_unit_test(a_state_dir_too_deep_for_its_sockets_is_refused),
		cmocka_unit_test(configured_image_is_the_root),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	/* A failed case returns early; its sandbox is disposed here, before the leak check. */
	static const char *const threads[] = { "ops", "shared", "other", "calls", "ro", "net", "sys",
					       "bomb", "hog", "disk", "daemon", "img", "tiny", "decoy",
					       "limits", "dies", "fds", "limits-at-once", "pin" };
	for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
		msb_scope_purge purge = { 0 };
		fx.ops->dispose_scope(fx.self, "test", threads[i], &purge);
		msb_scope_purge_free(&purge);
	}
	backend_fixture_close(&fx);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	int leaks = bwrap_fixture_leaks(&fx);
	/*
	 * Every keeper was reparented here (subreaper): none may still be running. A keeper's
	 * cgroup is empty once its exit is past the point of no return, a moment before it is a
	 * zombie to reap, hence a short grace period; a keeper that leaked lives on past it.
	 */
	for (int tries = 0; waitpid(-1, NULL, WNOHANG) >= 0; tries++) {
		if (tries == 200) {
			fprintf(stderr, "leak: a process this test started (a sandbox's keeper) is "
				"still running\n");
			leaks++;
			break;
		}
		usleep(5000);
	}
	rmdir(marker);
	rmdir(image_root);
	leaks += backend_fixture_sweep(bwrap_fixture_sweep_parents);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return failed || leaks ? 1 : 0;
}
