/*
 * fixture.c — the conformance kit's own test backend, honest or broken by one defect.
 *
 * Each sandbox is a directory on the host under a temp dir made at init; a guest path P is
 * <sandbox>/fs/P. File operations go through the SDK confinement helpers; exec forks /bin/sh
 * on the host in the mapped working directory, in a session of its own and — for `closed`
 * egress — a network namespace of its own with nothing in it. It is a test fixture: no
 * boundary is drawn, and it declares rung `none`.
 *
 * Its disposal engine deletes the way an unprivileged engine would: a directory without its
 * owner's write bit cannot be emptied, whoever runs the fixture. That is what lets the
 * disposal suite provoke a failed delete deterministically, as root too.
 *
 * Built once per FIXTURE_DEFECT (tests/conformance/local.mk); each defect is one lie a real
 * backend could tell, and tests/conformance asserts the case meant to catch it does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/cgroup.h>
#include <msb/confine.h>

#define DEFECT_NONE 0
#define DEFECT_FAKE_RUN_CODE 1   /* declares run_code, answers without evaluating */
#define DEFECT_IGNORE_WD 2       /* file operations ignore the working directory */
#define DEFECT_FOLLOW_SYMLINK 3  /* stat/read follow a link */
#define DEFECT_SILENT_DISPOSE 4  /* a failed delete reported as done */
#define DEFECT_LEAK_CALLS 5      /* declares call scope, ignores call_id */
#define DEFECT_JOIN_ARGV 6       /* argv joined into a shell string */
#define DEFECT_KILL_CHILD_ONLY 7 /* a timeout kills the child, not its tree */
#define DEFECT_OPEN_EGRESS 8     /* declares closed, shares the host's network */
#define DEFECT_TRUNCATE_READ 9   /* read_file truncates at max_bytes */
#define DEFECT_NO_OUTPUT_CAP 10  /* ignores max_output */
#define DEFECT_ALLOWLIST_OPEN 11 /* declares allowlist, lets everything through */
#define DEFECT_ALLOWLIST_SHUT 12 /* declares allowlist, lets nothing through */
#define DEFECT_SCOPE_MISCOUNT 13 /* dispose_scope deletes, then says it deleted nothing */
#define DEFECT_SHALLOW_DISPOSE 14 /* dispose empties the work dir's files, leaves its directories */
#define DEFECT_CRASH 15          /* stat_file aborts the process */
#define DEFECT_HANG 16           /* read_file never returns */
#define DEFECT_RACY_ACQUIRE 17   /* acquire checks its registry, then writes it, unlocked */
#define DEFECT_EXIT 18           /* stat_file ends the process with exit(3) */
#define DEFECT_SHARE_THREADS 19  /* two conversations (thread ids) share one sandbox */
#define DEFECT_RUN_CODE_NO_TIMEOUT 20 /* run_code drops the caller's timeout */
#define DEFECT_CLEAR_TRUNCATION 21 /* output capped, truncation flags cleared */
#define DEFECT_WRITE_FOLLOWS_LINK 22 /* write_file opens the naive way, following a link */
#define DEFECT_BUFFERED_STREAM 23 /* has exec_stream, but delivers everything at the end */
/*
 * Declares rung container, and its commands keep every capability: they are started with
 * no agent, so nothing empties their bounding set (what msb-agent's harden.c does for
 * every driver backend — which is why no container fixture can make rung/no-capabilities
 * fail). As root only; its commands run in a cgroup of their own (pids, memory), so the
 * rung suite's limit probes hold instead of loading the host.
 */
#define DEFECT_KEEP_CAPS 24

/* The two allowlist defects are the only builds that declare allowlist at all: an honest
 * allowlist needs a proxy this fixture does not have. */
#define FIXTURE_ALLOWLIST (FIXTURE_DEFECT == DEFECT_ALLOWLIST_OPEN || FIXTURE_DEFECT == DEFECT_ALLOWLIST_SHUT)

#ifndef FIXTURE_DEFECT
#define FIXTURE_DEFECT DEFECT_NONE
#endif
#ifndef FIXTURE_NAME
#define FIXTURE_NAME "fixture"
#endif

/* Sizes chosen so every joined path provably fits: the fixture lives in a temp dir. */
#define ROOT_MAX 1024
#define DIR_MAX (ROOT_MAX + 40)
#define GUEST_MAX 1024
#define HOST_MAX (DIR_MAX + 4 + GUEST_MAX + 2)

struct msb_backend_instance {
	char root[ROOT_MAX];
	bool netns;               /* whether a child can have a network namespace of its own */
	msb_declarations decl;
	pthread_mutex_t lock;
	msb_cgroup *cg;           /* DEFECT_KEEP_CAPS: where its commands run */
};

struct msb_sandbox_handle {
	msb_backend_instance *self;
	char fs[DIR_MAX + 4];     /* host path of the guest's "/" */
	char work_dir[GUEST_MAX]; /* guest path */
	bool own_netns;           /* run commands in an empty network namespace */
};

/* ---- naming ------------------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
		h = (h ^ *p) * 1099511628211u;
	return (h ^ 0xff) * 1099511628211u; /* a separator, so ("ab","c") != ("a","bc") */
}

static uint64_t key_hash(const msb_key *key)
{
	uint64_t h = fnv(14695981039346656037u, key->scope);
	if (FIXTURE_DEFECT != DEFECT_SHARE_THREADS)
		h = fnv(h, key->thread_id);
	h = fnv(h, key->agent_dir);
	if (FIXTURE_DEFECT != DEFECT_LEAK_CALLS)
		h = fnv(h, key->call_id);
	return h;
}

static void sandbox_dir(const msb_backend_instance *self, const msb_key *key, const char *kind,
			char *buf, size_t size)
{
	snprintf(buf, size, "%s/%016llx-%016llx", self->root, (unsigned long long)key_hash(key),
		 (unsigned long long)fnv(14695981039346656037u, kind));
}

/* ---- the disposal engine ------------------------------------------------------------- */

/* Remove `name` under dirfd, refusing (EACCES) to empty a directory its owner cannot write. */
static int delete_at(int at, const char *name)
{
	struct stat st;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(at, name, 0) == 0 ? 0 : -errno;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		rc = (st.st_mode & S_IWUSR) ? delete_at(dirfd(d), e->d_name) : -EACCES;
	}
	closedir(d);
	if (rc == 0 && unlinkat(at, name, AT_REMOVEDIR) != 0)
		rc = -errno;
	return rc;
}

/* Delete every sandbox directory whose name starts with `prefix` (or whose meta matches). */
static bool delete_where(msb_backend_instance *self, const char *prefix, const char *scope,
			 const char *thread, uint64_t *count, msb_disposal_failure *failure)
{
	bool failed = false;
	pthread_mutex_lock(&self->lock);
	DIR *d = opendir(self->root);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (scope) {
			char meta[ROOT_MAX + 300], line[1024] = "", want[1024];
			snprintf(meta, sizeof(meta), "%s/%s/meta", self->root, e->d_name);
			FILE *f = fopen(meta, "r");
			size_t n = f ? fread(line, 1, sizeof(line) - 1, f) : 0;
			if (f)
				fclose(f);
			line[n] = '\0';
			snprintf(want, sizeof(want), "%s\n%s\n", scope, thread);
			if (strcmp(line, want) != 0)
				continue;
		}
		int rc = delete_at(dirfd(d), e->d_name);
		if (rc == 0) {
			if (count)
				++*count;
		} else if (!failed) {
			failed = true;
			msb_disposal_failure_set(failure, MSB_DISPOSAL_REFUSED,
						 "fixture: deleting sandbox %s: %s", e->d_name, strerror(-rc));
		}
	}
	if (d)
		closedir(d);
	pthread_mutex_unlock(&self->lock);
	return failed;
}

/* ---- backend operations ---------------------------------------------------------------- */

/* Whether a child may unshare a network namespace here (root, or unprivileged user ns). */
static bool probe_netns(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : 1);
	int status = 0;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static msb_errc fx_init(const msb_node *config, const msb_host *host, msb_backend_instance **out,
			msb_error *err)
{
	/* The allowlist builds take the kit's test map (and read nothing of it: no proxy). */
	static const char *const keys[] = { FIXTURE_ALLOWLIST ? "egress_test_hosts" : NULL, NULL };
	msb_errc rc = msb_node_check_keys(config, keys, err);
	if (rc != MSB_OK)
		return rc;
	msb_backend_instance *self = calloc(1, sizeof(*self));
	if (!self)
		return msb_error_set(err, MSB_E_NOMEM, "fixture: out of memory");
	const char *tmp = getenv("TMPDIR");
	snprintf(self->root, sizeof(self->root), "%s/msb-conf-fixture-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(self->root)) {
		int e = errno;
		free(self);
		return msb_error_set_errno(err, MSB_E_OS, e, "fixture: making its temp dir");
	}
	/* The confinement helpers refuse a symlinked ancestor; /tmp may be one elsewhere. */
	char real[PATH_MAX];
	if (realpath(self->root, real) && strlen(real) < sizeof(self->root))
		snprintf(self->root, sizeof(self->root), "%s", real);
	pthread_mutex_init(&self->lock, NULL);
	self->netns = probe_netns();
	if (FIXTURE_DEFECT == DEFECT_KEEP_CAPS) {
		msb_cgroup_limits lim = { .memory_bytes = 512 * MSB_MIB, .pids = 256 };
		char parent[64];
		snprintf(parent, sizeof parent, "msb-conf-keep-caps-%ld", (long)getpid());
		rc = geteuid() == 0 ? msb_cgroup_create(parent, "commands", &lim, &self->cg, err)
				    : msb_error_set(err, MSB_E_CONFIG, FIXTURE_NAME ": needs root");
		if (rc != MSB_OK) {
			rmdir(self->root);
			free(self);
			return rc;
		}
	}
	/* Static: the loader reads these after init returns. */
	static const char *const closed[] = { "closed", NULL }, *const none[] = { NULL };
	static const char *const both[] = { "closed", "allowlist", NULL };
	self->decl.egress_modes = (self->netns || FIXTURE_DEFECT == DEFECT_OPEN_EGRESS)
					  ? (FIXTURE_ALLOWLIST ? both : closed) : none;
	*out = self;
	return MSB_OK;
}

static void fx_fini(msb_backend_instance *self)
{
	if (!self)
		return;
	/* Whatever a test left behind goes with the instance: make it writable, then delete. */
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "chmod -R u+w \"$1\" 2>/dev/null; rm -rf \"$1\"", "sh",
		      self->root, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (self->cg) {
		/* Its cgroup, then the parent this process made for it (one per hierarchy). */
		size_t n = msb_cgroup_count(self->cg);
		char parents[8][PATH_MAX];
		for (size_t i = 0; i < n && i < 8; i++) {
			snprintf(parents[i], sizeof parents[i], "%s", msb_cgroup_dir(self->cg, i));
			*strrchr(parents[i], '/') = '\0';
		}
		msb_cgroup_destroy(self->cg, 5, NULL);
		msb_cgroup_free(self->cg);
		for (size_t i = 0; i < n && i < 8; i++)
			rmdir(parents[i]);
	}
	pthread_mutex_destroy(&self->lock);
	free(self);
}

static const msb_declarations *fx_instance_declarations(msb_backend_instance *self)
{
	return &self->decl;
}

static msb_errc mkdirs_host(const char *path, msb_error *err)
{
	char buf[HOST_MAX];
	if (strlen(path) >= sizeof(buf))
		return msb_error_set(err, MSB_E_VALUE, "fixture: path too long");
	memcpy(buf, path, strlen(path) + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return msb_error_set_errno(err, MSB_E_OS, errno, "fixture: mkdir %s", buf);
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return msb_error_set_errno(err, MSB_E_OS, errno, "fixture: mkdir %s", buf);
	return MSB_OK;
}

/*
 * DEFECT_RACY_ACQUIRE: the sandbox gets a random name kept in a registry file, looked up and
 * then written without a lock — callers racing for one key each find no entry, each make a
 * sandbox of their own, and the last registry write wins.
 */
static void racy_registry(char *dir, size_t size)
{
	char registry[DIR_MAX + 8], id[32] = "";
	snprintf(registry, sizeof(registry), "%s.id", dir);
	FILE *f = fopen(registry, "r");
	if (f) {
		if (!fgets(id, sizeof(id), f))
			id[0] = '\0';
		fclose(f);
	}
	if (!id[0]) {
		usleep(20 * 1000); /* whatever a real engine does between the check and the write */
		snprintf(id, sizeof(id), "%08lx", (unsigned long)random());
		f = fopen(registry, "w");
		if (f) {
			fputs(id, f);
			fclose(f);
		}
	}
	size_t len = strlen(dir);
	snprintf(dir + len, size - len, "-%s", id);
}

static msb_errc fx_acquire(msb_backend_instance *self, const msb_key *key, const msb_spec *spec,
			   msb_sandbox_handle **out, msb_error *err)
{
	if (!spec->work_dir || spec->work_dir[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "fixture: work_dir must be absolute");
	msb_sandbox_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return msb_error_set(err, MSB_E_NOMEM, "fixture: out of memory");
	if (strlen(spec->work_dir) >= GUEST_MAX)
		return msb_error_set(err, MSB_E_VALUE, "fixture: work_dir too long");
	char dir[DIR_MAX], meta[DIR_MAX + 8], work[HOST_MAX];
	sandbox_dir(self, key, spec->kind, dir, sizeof(dir));
	if (FIXTURE_DEFECT == DEFECT_RACY_ACQUIRE)
		racy_registry(dir, sizeof(dir));
	snprintf(h->fs, sizeof(h->fs), "%s/fs", dir);
	snprintf(h->work_dir, sizeof(h->work_dir), "%s", spec->work_dir);
	snprintf(work, sizeof(work), "%s%s", h->fs, spec->work_dir);
	h->self = self;
	if (spec->egress == MSB_EGRESS_ALLOWLIST)
		h->own_netns = self->netns && FIXTURE_DEFECT == DEFECT_ALLOWLIST_SHUT;
	else
		h->own_netns = self->netns && FIXTURE_DEFECT != DEFECT_OPEN_EGRESS;
	pthread_mutex_lock(&self->lock);
	msb_errc rc = mkdirs_host(work, err);
	snprintf(meta, sizeof(meta), "%s/meta", dir);
	FILE *f = rc == MSB_OK ? fopen(meta, "w") : NULL;
	if (f) {
		fprintf(f, "%s\n%s\n", key->scope, key->thread_id);
		fclose(f);
	} else if (rc == MSB_OK) {
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "fixture: writing %s", meta);
	}
	pthread_mutex_unlock(&self->lock);
	if (rc != MSB_OK) {
		free(h);
		return rc;
	}
	*out = h;
	return MSB_OK;
}

/* DEFECT_SHALLOW_DISPOSE: every file of the key's sandboxes goes, every directory stays. */
static void delete_files_only(msb_backend_instance *self, const char *prefix)
{
	DIR *d = opendir(self->root);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		char dir[ROOT_MAX + 300];
		snprintf(dir, sizeof(dir), "%s/%s/fs", self->root, e->d_name);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/usr/bin/find", "find", dir, "-type", "f", "-delete", (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	if (d)
		closedir(d);
}

static bool fx_dispose(msb_backend_instance *self, const msb_key *key, msb_disposal_failure *failure)
{
	char prefix[40];
	snprintf(prefix, sizeof(prefix), "%016llx-", (unsigned long long)key_hash(key));
	if (FIXTURE_DEFECT == DEFECT_SHALLOW_DISPOSE) {
		delete_files_only(self, prefix);
		return false; /* the lie: directories the workload made outlive the dispose */
	}
	bool failed = delete_where(self, prefix, NULL, NULL, NULL, failure);
	if (FIXTURE_DEFECT == DEFECT_SILENT_DISPOSE && failed) {
		msb_disposal_failure_free(failure);
		return false; /* the lie: the delete did not land, and nothing is said */
	}
	return failed;
}

static void fx_dispose_scope(msb_backend_instance *self, const char *scope, const char *thread_id,
			     msb_scope_purge *purge)
{
	memset(purge, 0, sizeof(*purge));
	purge->has_undisposed = delete_where(self, NULL, scope, thread_id, &purge->disposed, &purge->undisposed);
	if (FIXTURE_DEFECT == DEFECT_SCOPE_MISCOUNT)
		purge->disposed = 0; /* the lie: the count a caller reads is not what happened */
}

static void fx_release(msb_sandbox_handle *h)
{
	free(h);
}

/* ---- exec ------------------------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void enter_empty_netns(void)
{
	if (unshare(CLONE_NEWNET) == 0)
		return;
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
		_exit(126);
	char map[64];
	int fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "deny", 4);
		close(fd);
	}
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		_exit(126);
	close(fd);
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, map, strlen(map));
		close(fd);
	}
}

/* Read what is ready on fd into buf, keeping at most cap bytes; false at EOF. */
static bool drain(int fd, msb_buf *buf, size_t cap, bool *truncated)
{
	char chunk[8192];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n <= 0)
		return n < 0 && (errno == EINTR || errno == EAGAIN);
	size_t keep = (size_t)n;
	if (FIXTURE_DEFECT != DEFECT_NO_OUTPUT_CAP) {
		size_t room = buf->len < cap ? cap - buf->len : 0;
		if (keep > room) {
			keep = room;
			*truncated = true;
		}
	}
	if (keep)
		msb_buf_append(buf, chunk, keep, NULL);
	return true;
}

static msb_errc run_argv(msb_sandbox_handle *h, const char *const *argv, const char *wd,
			 double timeout, size_t max_output, const void *in, size_t in_len,
			 msb_exec_result *res, msb_error *err)
{
	memset(res, 0, sizeof(*res));
	char cwd[HOST_MAX];
	snprintf(cwd, sizeof(cwd), "%s%s", h->fs, wd ? wd : h->work_dir);
	size_t cap = max_output ? max_output : 16 * MSB_MIB;
	int pin[2], pout[2], perr[2];
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC))
		return msb_error_set_errno(err, MSB_E_OS, errno, "fixture: pipe");
	char *joined = NULL;
	if (FIXTURE_DEFECT == DEFECT_JOIN_ARGV) {
		/* The lie: a command line rebuilt from the argv and handed to a shell. */
		size_t n = 1;
		for (size_t i = 0; argv[i]; i++)
			n += strlen(argv[i]) + 1;
		joined = calloc(1, n);
		for (size_t i = 0; joined && argv[i]; i++) {
			strcat(joined, argv[i]);
			strcat(joined, argv[i + 1] ? " " : "");
		}
	}
	bool closed = h->own_netns;
	pid_t pid = fork();
	if (pid == 0) {
		if (h->self->cg && msb_cgroup_join_self(h->self->cg) != 0)
			_exit(126);
		setsid();
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		if (closed)
			enter_empty_netns();
		if (chdir(cwd) != 0)
			_exit(126);
		signal(SIGPIPE, SIG_DFL);
		if (joined)
			execl("/bin/sh", "sh", "-c", joined, (char *)NULL);
		else
			execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	free(joined);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	if (pid < 0) {
		close(pin[1]);
		close(pout[0]);
		close(perr[0]);
		return msb_error_set_errno(err, MSB_E_OS, errno, "fixture: fork");
	}
	if (in_len)
		(void)!write(pin[1], in, in_len); /* small inputs only: it is a fixture */
	close(pin[1]);
	double deadline = now() + (timeout > 0 ? timeout : 3600);
	bool out_open = true, err_open = true;
	while (out_open || err_open) {
		double left = deadline - now();
		if (left <= 0) {
			res->timed_out = true;
			break;
		}
		struct pollfd fds[2] = { { out_open ? pout[0] : -1, POLLIN, 0 },
					 { err_open ? perr[0] : -1, POLLIN, 0 } };
		if (poll(fds, 2, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			out_open = drain(pout[0], &res->out, cap, &res->out_truncated);
		if (fds[1].revents)
			err_open = drain(perr[0], &res->err, cap, &res->err_truncated);
	}
	int status = 0;
	if (res->timed_out) {
		if (FIXTURE_DEFECT == DEFECT_KILL_CHILD_ONLY)
			kill(pid, SIGKILL); /* the lie: the child goes, its children stay */
		else
			kill(-pid, SIGKILL);
	}
	waitpid(pid, &status, 0);
	close(pout[0]);
	close(perr[0]);
	if (FIXTURE_DEFECT == DEFECT_CLEAR_TRUNCATION)
		res->out_truncated = res->err_truncated = false; /* the lie: cut, and not said */
	if (WIFSIGNALED(status)) {
		res->term_signal = WTERMSIG(status);
		res->exit_code = 128 + res->term_signal;
	} else {
		res->exit_code = WEXITSTATUS(status);
	}
	return MSB_OK;
}

static msb_errc fx_exec(msb_sandbox_handle *h, const msb_exec_request *req, msb_exec_result *res,
			msb_error *err)
{
	return run_argv(h, req->argv, req->working_directory, req->timeout, req->max_output,
			req->stdin_data, req->stdin_len, res, err);
}

static msb_errc fx_run_code(msb_sandbox_handle *h, const char *code, double timeout,
			    msb_exec_result *res, msb_error *err)
{
	if (FIXTURE_DEFECT == DEFECT_FAKE_RUN_CODE) {
		/* The lie: a canned answer shaped like the real one. */
		memset(res, 0, sizeof(*res));
		return msb_buf_append(&res->out, "rc-42-canned\n", 13, err);
	}
	const char *argv[] = { "sh", "-c", code, NULL };
	if (FIXTURE_DEFECT == DEFECT_RUN_CODE_NO_TIMEOUT)
		timeout = 0; /* the lie: the caller's bound is dropped on the way */
	return run_argv(h, argv, NULL, timeout, 0, NULL, 0, res, err);
}

/* ---- files ----------------------------------------------------------------------------- */

/* An absolute path inside the working directory is the relative one (the protocol's rule). */
#define RELATIVE(h, path, wd, err)                                                        \
	do {                                                                              \
		msb_errc rel_rc_ = msb_confine_relative(path, (wd) ? (wd) : (h)->work_dir, &(path), err); \
		if (rel_rc_ != MSB_OK)                                                    \
			return rel_rc_;                                                   \
	} while (0)

/* mkdir -p of a host path (a write creates its working directory: caller-creates). */
static void make_dirs(char *p)
{
	for (char *c = p + 1; *c; c++)
		if (*c == '/') {
			*c = '\0';
			mkdir(p, 0755);
			*c = '/';
		}
	mkdir(p, 0755);
}

static msb_errc open_wd(msb_sandbox_handle *h, const char *wd, int *fd, msb_error *err)
{
	char host[HOST_MAX];
	if (FIXTURE_DEFECT == DEFECT_IGNORE_WD || !wd)
		wd = h->work_dir; /* the lie (under DEFECT_IGNORE_WD): every call lands in work_dir */
	if (wd[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "fixture: working directory '%s' is not absolute", wd);
	snprintf(host, sizeof(host), "%s%s", h->fs, wd);
	return msb_confine_open_root(host, fd, err);
}

/* DEFECT_FOLLOW_SYMLINK: the path checked lexically, then opened the naive way. */
static msb_errc naive_path(msb_sandbox_handle *h, const char *path, const char *wd, char *host,
			   size_t size, msb_error *err)
{
	msb_errc rc = msb_confine_check_path(path, true, err);
	if (rc == MSB_OK)
		snprintf(host, size, "%s%s/%s", h->fs, wd ? wd : h->work_dir, path);
	return rc;
}

static msb_errc fx_write_file(msb_sandbox_handle *h, const char *path, const void *data, size_t len,
			      const char *wd, msb_error *err)
{
	RELATIVE(h, path, wd, err);
	int fd;
	msb_errc rc = open_wd(h, wd, &fd, err);
	if (rc != MSB_OK && wd && wd[0] == '/' && FIXTURE_DEFECT != DEFECT_IGNORE_WD) {
		char host[HOST_MAX];
		snprintf(host, sizeof(host), "%s%s", h->fs, wd);
		struct stat st;
		if (stat(host, &st) != 0 && errno == ENOENT) {
			make_dirs(host);
			msb_error_clear(err);
			rc = open_wd(h, wd, &fd, err);
		}
	}
	if (rc != MSB_OK)
		return rc;
	if (FIXTURE_DEFECT == DEFECT_WRITE_FOLLOWS_LINK) {
		/* The lie: a host-side write checked lexically, then opened the naive way. */
		close(fd);
		char host[PATH_MAX * 3];
		if ((rc = naive_path(h, path, wd, host, sizeof(host), err)) != MSB_OK)
			return rc;
		FILE *f = fopen(host, "w");
		if (!f)
			return msb_error_set_errno(err, MSB_E_OS, errno, "fixture: %s", host);
		fwrite(data, 1, len, f);
		fclose(f);
		return MSB_OK;
	}
	rc = msb_confine_write_file(fd, path, data, len, MSB_CONFINE_CREATE_PARENTS, err);
	close(fd);
	return rc;
}

static msb_errc fx_stat_file(msb_sandbox_handle *h, const char *path, const char *wd,
			     msb_entry *entry, bool *found, msb_error *err)
{
	RELATIVE(h, path, wd, err);
	if (FIXTURE_DEFECT == DEFECT_CRASH)
		abort(); /* what the supervisor in `msb conformance` must survive and name */
	if (FIXTURE_DEFECT == DEFECT_EXIT)
		exit(3); /* no signal, no verdict: the supervisor must still name the case */
	if (FIXTURE_DEFECT == DEFECT_FOLLOW_SYMLINK) {
		char host[PATH_MAX * 3];
		struct stat st;
		msb_errc rc = naive_path(h, path, wd, host, sizeof(host), err);
		if (rc != MSB_OK)
			return rc;
		*found = stat(host, &st) == 0;
		entry->path = strdup(path);
		entry->kind = !*found ? MSB_ENTRY_OTHER : S_ISDIR(st.st_mode) ? MSB_ENTRY_DIRECTORY : MSB_ENTRY_FILE;
		entry->size_bytes = *found && S_ISREG(st.st_mode) ? st.st_size : -1;
		return MSB_OK;
	}
	int fd;
	msb_errc rc = open_wd(h, wd, &fd, err);
	if (rc != MSB_OK)
		return rc;
	rc = msb_confine_stat(fd, path, entry, found, err);
	close(fd);
	return rc;
}

static msb_errc fx_read_file(msb_sandbox_handle *h, const char *path, const char *wd,
			     uint64_t max_bytes, msb_buf *out, msb_error *err)
{
	RELATIVE(h, path, wd, err);
	while (FIXTURE_DEFECT == DEFECT_HANG)
		pause(); /* never returns: the supervisor's --case-timeout must end it */
	if (FIXTURE_DEFECT == DEFECT_FOLLOW_SYMLINK || FIXTURE_DEFECT == DEFECT_TRUNCATE_READ) {
		char host[PATH_MAX * 3], chunk[4096];
		msb_errc rc = naive_path(h, path, wd, host, sizeof(host), err);
		if (rc != MSB_OK)
			return rc;
		FILE *f = fopen(host, "rb");
		if (!f)
			return msb_error_set_errno(err, MSB_E_NOT_FOUND, errno, "fixture: %s", path);
		size_t n;
		while (out->len < max_bytes && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			msb_buf_append(out, chunk, out->len + n > max_bytes ? max_bytes - out->len : n, NULL);
		fclose(f);
		return MSB_OK;
	}
	int fd;
	msb_errc rc = open_wd(h, wd, &fd, err);
	if (rc != MSB_OK)
		return rc;
	rc = msb_confine_read_file(fd, path, max_bytes, out, err);
	close(fd);
	return rc;
}

static msb_errc fx_list_dir(msb_sandbox_handle *h, const char *path, const char *wd,
			    msb_entry_list *out, msb_error *err)
{
	RELATIVE(h, path, wd, err);
	int fd;
	msb_errc rc = open_wd(h, wd, &fd, err);
	if (rc != MSB_OK)
		return rc;
	rc = msb_confine_list_dir(fd, path, out, err);
	close(fd);
	return rc;
}

static msb_errc fx_remove(msb_sandbox_handle *h, const char *path, const char *wd, bool recursive,
			  msb_error *err)
{
	RELATIVE(h, path, wd, err);
	int fd;
	msb_errc rc = open_wd(h, wd, &fd, err);
	if (rc != MSB_OK)
		return rc;
	rc = msb_confine_remove(fd, path, recursive, err);
	close(fd);
	return rc;
}

static msb_errc fx_reclaim(msb_sandbox_handle *h, const char *directory, const char *wd,
			   double timeout, msb_error *err)
{
	char dir[HOST_MAX], base[HOST_MAX];
	if (!directory || directory[0] != '/' || !wd || wd[0] != '/')
		return msb_error_set(err, MSB_E_VALUE, "fixture: reclaim needs absolute paths");
	snprintf(dir, sizeof(dir), "%s%s", h->fs, directory);
	snprintf(base, sizeof(base), "%s%s", h->fs, wd);
	return msb_confine_reclaim(dir, base, err);
}

/*
 * FIXTURE_MINIMAL states nothing but egress: capabilities then read as {exec, files_in} and
 * scopes as {conversation}, which is what the kit's NOT APPLICABLE verdicts are tested on.
 */
#ifdef FIXTURE_MINIMAL
#define FIXTURE_DECLARATIONS { .egress_modes = MSB_WORDS("closed") }
#elif FIXTURE_ALLOWLIST
#define FIXTURE_DECLARATIONS                                                                    \
	{                                                                                       \
		.capabilities = MSB_WORDS("exec", "files_in"),                                  \
		.egress_modes = MSB_WORDS("closed", "allowlist"),                               \
	}
#else
#define FIXTURE_DECLARATIONS                                                                    \
	{                                                                                       \
		.capabilities = MSB_WORDS("exec", "run_code", "files_in", "files_out", "files_list", \
					  "files_delete"),                                      \
		.egress_modes = MSB_WORDS("closed"),                                            \
		.isolation_scopes = MSB_WORDS("conversation", "call"),                          \
	}
#endif

#if FIXTURE_DEFECT == DEFECT_BUFFERED_STREAM
/* A stream in name only: the buffered exec, its output handed over once the command ended. */
static msb_errc fx_exec_stream(msb_sandbox_handle *h, const msb_exec_request *req,
			       const msb_exec_stream *stream, msb_exec_result *res, msb_error *err)
{
	msb_errc rc = fx_exec(h, req, res, err);
	if (rc == MSB_OK && res->out.len)
		stream->on_output(stream->ctx, MSB_STREAM_STDOUT, res->out.data, res->out.len);
	if (rc == MSB_OK && res->err.len)
		stream->on_output(stream->ctx, MSB_STREAM_STDERR, res->err.data, res->err.len);
	msb_buf_free(&res->out);
	msb_buf_free(&res->err);
	return rc;
}
#define FIXTURE_STREAM_OP .exec_stream = fx_exec_stream,
#else
/* The honest fixture has no exec_stream: the stream suite is held against the agent's. */
#define FIXTURE_STREAM_OP
#endif

MSB_BACKEND_DEFINE(
	.name = FIXTURE_NAME,
	.isolation = FIXTURE_DEFECT == DEFECT_KEEP_CAPS ? "container" : "none",
	.declarations = FIXTURE_DECLARATIONS,
	.init = fx_init,
	.fini = fx_fini,
	.instance_declarations = fx_instance_declarations,
	.acquire = fx_acquire,
	.dispose = fx_dispose,
	.dispose_scope = fx_dispose_scope,
	.release = fx_release,
	.exec = fx_exec,
	.run_code = fx_run_code,
	.write_file = fx_write_file,
	.stat_file = fx_stat_file,
	.read_file = fx_read_file,
	.list_dir = fx_list_dir,
	.remove = fx_remove,
	.reclaim = fx_reclaim,
	FIXTURE_STREAM_OP
);
