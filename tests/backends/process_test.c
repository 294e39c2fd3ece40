/*
 * process_test.c — the `process` backend, for real: loaded with the loader like any plugin,
 * every operation through its descriptor, sandboxes shared across processes by key,
 * disposal that leaves no process (checked by pid namespace) and no directory, closed
 * egress against a listener the test runs on the host's loopback, and a guest that forks
 * without end, eats memory, writes a huge file, burns CPU or detaches a daemon.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/driver.h>
#include <msb/loader.h>
#include <msb/pool.h>

#include "msb_test.h"
#include "netns_probe.h"
#include "stand_in.h"

#define PLUGIN MSB_TEST_MODULE("plugins/process", "process")
#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"
#define HELPER_BUILT MSB_TOP_BUILDDIR "/tests/backends/process_helper"
/*
 * The helper as the sandbox can run it. A process sandbox sees the host's tree read-only
 * except its own /tmp and /dev/shm, so a build tree under /tmp (where CI may clone) is out
 * of its sight: the group setup copies the helper to a directory of its own under /var/tmp,
 * readable by the sandbox's unprivileged uid, and removes it at the end.
 */
static char helper_dir[64], helper_path[96];
#define HELPER helper_path
#define WORK MSB_DEFAULT_WORK_DIR

static char state_dir[64];

/* A flat `config:` map of scalars, built the way the config loader would. */
typedef struct cfg {
	msb_node root;
	msb_node_pair pairs[16];
	msb_node vals[16];
} cfg;

static void cfg_add(cfg *c, const char *key, const char *value)
{
	size_t i = c->root.len++;
	c->vals[i] = (msb_node){ .kind = MSB_NODE_SCALAR, .file = "<test>", .path = key,
				 .line = 1, .column = 1, .scalar = value };
	c->pairs[i] = (msb_node_pair){ .key = key, .key_line = 1, .key_column = 1,
				       .value = &c->vals[i] };
}

static void cfg_init(cfg *c)
{
	memset(c, 0, sizeof *c);
	c->root = (msb_node){ .kind = MSB_NODE_MAP, .file = "<test>", .path = "config", .line = 1,
			      .column = 1, .pairs = c->pairs };
	cfg_add(c, "state_dir", state_dir);
	cfg_add(c, "agent", AGENT);
	cfg_add(c, "run_code", "sh");
	cfg_add(c, "timeout", "30");
}

typedef struct fixture {
	msb_loader *loader;
	msb_backend *backend;
	const struct msb_backend_v27 *ops;
	msb_backend_instance *inst;
	msb_spec spec;
} fixture;

static void fixture_open(fixture *f, cfg *c)
{
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *plugin;
	memset(f, 0, sizeof *f);
	if (msb_loader_new(&f->loader, &err) != MSB_OK ||
	    msb_loader_load(f->loader, PLUGIN, &plugin, &err) != MSB_OK ||
	    msb_backend_open(plugin, &c->root, NULL, NULL, &f->backend, &err) != MSB_OK) {
		fprintf(stderr, "opening the process backend: %s\n", msb_error_message(&err));
		fail();
	}
	f->ops = msb_backend_ops(f->backend);
	f->inst = msb_backend_instance_of(f->backend);
	msb_spec_init(&f->spec, "default");
}

static void fixture_close(fixture *f)
{
	msb_backend_close(f->backend);
	msb_loader_free(f->loader);
}

static msb_sandbox_handle *acquire(fixture *f, const msb_key *key)
{
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (f->ops->acquire(f->inst, key, &f->spec, &h, &err) != MSB_OK) {
		fprintf(stderr, "acquire: %s\n", msb_error_message(&err));
		fail();
	}
	return h;
}

static msb_exec_result run(fixture *f, msb_sandbox_handle *h, double timeout,
			   const char *const *argv)
{
	msb_exec_request req = { .argv = argv, .timeout = timeout };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (f->ops->exec(h, &req, &res, &err) != MSB_OK) {
		fprintf(stderr, "exec %s: %s\n", argv[0], msb_error_message(&err));
		fail();
	}
	return res;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static pid_t agent_pid(msb_sandbox_handle *h)
{
	return msb_driver_read_live_pid(msb_driver_sandbox_box(h));
}

/* The pid namespace of `pid` ("pid:[4026…]"), so processes inside can be counted from here. */
static void pid_ns_of(pid_t pid, char *out, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/ns/pid", (long)pid);
	ssize_t len = readlink(path, out, n - 1);
	out[len > 0 ? len : 0] = '\0';
}

/* Live (non-zombie) processes in pid namespace `ns`. */
static int count_in_ns(const char *ns)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int count = 0;
	while ((de = readdir(d))) {
		char path[300], link[64];
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/ns/pid", de->d_name);
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, ns))
			continue;
		if (msb_driver_pid_running((pid_t)atol(de->d_name)))
			count++;
	}
	closedir(d);
	return count;
}


static bool path_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static bool dispose_key(fixture *f, const msb_key *key, msb_disposal_failure *failure)
{
	return f->ops->dispose(f->inst, key, failure);
}

static void test_names(void **state)
{
	/* call scope folds call_id in; the fields are length-prefixed, never concatenated. */
	msb_key a = { "s", "t", "d", "" }, b = { "s", "t", "d", "call-1" };
	msb_key c = { "ab", "c", "", "" }, d = { "a", "bc", "", "" };
	char na[36], nb[36], nc[36], nd[36], nk[36];
	msb_driver_sandbox_name("/s", &a, "default", na);
	msb_driver_sandbox_name("/s", &b, "default", nb);
	msb_driver_sandbox_name("/s", &c, "default", nc);
	msb_driver_sandbox_name("/s", &d, "default", nd);
	msb_driver_sandbox_name("/s", &a, "other", nk);
	assert_string_not_equal(na, nb);
	assert_string_not_equal(nc, nd);
	assert_string_not_equal(na, nk);
	/* One key in two state directories: two names, so no engine-global id collides. */
	char other_dir[36];
	msb_driver_sandbox_name("/elsewhere", &a, "default", other_dir);
	assert_string_not_equal(na, other_dir);
	assert_int_equal(strlen(na), 35);
	assert_memory_equal(na, "sk-", 3);
	assert_int_equal(strspn(na + 3, "0123456789abcdef"), 32);
	/* The name leads with its scope and thread, then its whole key, then the kind too. */
	assert_memory_equal(na, nb, 11);
	assert_memory_not_equal(na + 11, nb + 11, 8);
	assert_memory_equal(na, nk, 19);
	assert_memory_not_equal(na + 19, nk + 19, 16);
	assert_memory_not_equal(nc + 3, nd + 3, 8);
	/* A key made of path syntax still names a plain hex directory. */
	msb_key evil = { "../../etc", "/x", "..", "a/b" };
	msb_driver_sandbox_name("/s", &evil, "../k", na);
	assert_int_equal(strspn(na + 3, "0123456789abcdef"), 32);
}

static void test_config_refused(void **state)
{
	cfg c;
	cfg_init(&c);
	cfg_add(&c, "rlimit_nprocs", "5"); /* a typo must not read as "not stated" */
	msb_loader *loader;
	const msb_plugin *plugin;
	msb_backend *b = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, PLUGIN, &plugin, &err), MSB_OK);
	assert_int_not_equal(msb_backend_open(plugin, &c.root, NULL, NULL, &b, &err), MSB_OK);
	assert_int_equal(err.code, MSB_E_CONFIG);
	assert_non_null(strstr(msb_error_message(&err), "rlimit_nprocs"));
	msb_error_clear(&err);
	/* Values of the wrong shape, each refused naming the key and why. */
	static const struct {
		const char *key, *value, *words;
	} bad[] = {
		{ "state_dir", "relative/dir", "must be an absolute path" },
		{ "max_output", "64MiB", "per-stream ceiling" },
		{ "timeout", "0", "positive duration" },
		{ "rlimit_nproc", "many", "rlimit_nproc" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cfg_init(&c);
		if (!strcmp(bad[i].key, "state_dir"))
			c.vals[0].scalar = bad[i].value;
		else if (!strcmp(bad[i].key, "timeout"))
			c.vals[3].scalar = bad[i].value;
		else
			cfg_add(&c, bad[i].key, bad[i].value);
		assert_int_not_equal(msb_backend_open(plugin, &c.root, NULL, NULL, &b, &err), MSB_OK);
		assert_int_equal(err.code, MSB_E_CONFIG);
		if (!strstr(msb_error_message(&err), bad[i].words))
			fail_msg("%s: %s", bad[i].key, msb_error_message(&err));
		msb_error_clear(&err);
	}
	/* A process limit on root's commands would hold nothing: refused, unless they run as
	 * another uid (test_limits_hold shows it holding then) — as each sandbox's own uid
	 * does by default. */
	if (geteuid() == 0) {
		cfg_init(&c);
		cfg_add(&c, "rlimit_nproc", "24");
		assert_int_equal(msb_backend_open(plugin, &c.root, NULL, NULL, &b, &err), MSB_OK);
		msb_backend_close(b);
		cfg_add(&c, "uid", "host");
		assert_int_not_equal(msb_backend_open(plugin, &c.root, NULL, NULL, &b, &err), MSB_OK);
		assert_int_equal(err.code, MSB_E_CONFIG);
		assert_non_null(strstr(msb_error_message(&err), "rlimit_nproc would bind nothing"));
		msb_error_clear(&err);
		c.vals[c.root.len - 1].scalar = "0";
		assert_int_not_equal(msb_backend_open(plugin, &c.root, NULL, NULL, &b, &err), MSB_OK);
		assert_non_null(strstr(msb_error_message(&err), "rlimit_nproc would bind nothing"));
		msb_error_clear(&err);
	}
	/* A state directory another user could tamper with is refused. */
	if (geteuid() == 0) {
		char foreign[128], nested[160];
		snprintf(foreign, sizeof foreign, "%s/foreign", state_dir);
		snprintf(nested, sizeof nested, "%s/state", foreign);
		assert_int_equal(mkdir(foreign, 0755), 0);
		assert_int_equal(chown(foreign, 65534, 65534), 0);
		cfg_init(&c);
		c.vals[0].scalar = nested; /* state_dir */
		assert_int_not_equal(msb_backend_open(plugin, &c.root, NULL, NULL, &b, &err), MSB_OK);
		assert_int_equal(err.code, MSB_E_CONFIG);
		assert_non_null(strstr(msb_error_message(&err), "belongs to uid 65534"));
		msb_error_clear(&err);
	}
	/* The declarations are exactly what the driver implements, and os_process. */
	assert_int_equal(msb_plugin_isolation(plugin), MSB_ISO_OS_PROCESS);
	const msb_effective_declarations *d = msb_plugin_declarations(plugin);
	msb_set want = MSB_BIT(MSB_CAP_EXEC) | MSB_BIT(MSB_CAP_RUN_CODE) |
		       MSB_BIT(MSB_CAP_FILES_IN) | MSB_BIT(MSB_CAP_FILES_OUT) |
		       MSB_BIT(MSB_CAP_FILES_LIST) | MSB_BIT(MSB_CAP_FILES_DELETE);
	assert_int_equal(d->capabilities, want);
	/* closed by its empty namespace; allowlist by the SDK's proxy, every decision observed. */
	assert_int_equal(d->egress_modes, MSB_BIT(MSB_EGRESS_CLOSED) | MSB_BIT(MSB_EGRESS_ALLOWLIST));
	assert_true(d->observes_egress);
	assert_int_equal(d->isolation_scopes,
			 MSB_BIT(MSB_SCOPE_CONVERSATION) | MSB_BIT(MSB_SCOPE_CALL));
	/* The guest is the agent's, a POSIX program: a spec asking for posix is served. */
	assert_int_equal(d->os_families, MSB_BIT(MSB_OS_POSIX));
	assert_false(d->unstated & MSB_DECL_OS_FAMILIES);
	msb_loader_free(loader);
}

/* An agent that cannot start is reported with its reason, and leaves nothing behind. */
static void test_agent_missing(void **state)
{
	cfg c;
	cfg_init(&c);
	c.vals[1].scalar = "/nonexistent/msb-agent"; /* agent */
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "missing", "t", "agent", "" };
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(f.ops->acquire(f.inst, &key, &f.spec, &h, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "exec /nonexistent/msb-agent failed"));
	msb_error_clear(&err);
	char name[36], dir[160];
	msb_driver_sandbox_name(state_dir, &key, "default", name);
	snprintf(dir, sizeof dir, "%s/%s", state_dir, name);
	assert_false(path_exists(dir));
	fixture_close(&f);
}

/*
 * Acquire with a stand-in agent, a shell script of `body`, and start_timeout 0.5 s: the
 * code, and what acquire said in `said`. The failed start leaves no sandbox directory.
 */
static msb_errc acquire_with_stand_in(const char *body, char *said, size_t n)
{
	char agent[96];
	snprintf(agent, sizeof agent, "%s.stand-in.sh", state_dir);
	FILE *sh = fopen(agent, "w");
	assert_non_null(sh);
	fprintf(sh, "#!/bin/sh\n%s\n", body);
	fclose(sh);
	assert_int_equal(chmod(agent, 0755), 0);
	cfg c;
	cfg_init(&c);
	c.vals[1].scalar = agent;
	cfg_add(&c, "start_timeout", "0.5");
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "stand-in", "t", "agent", "" };
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = f.ops->acquire(f.inst, &key, &f.spec, &h, &err);
	snprintf(said, n, "%s", msb_error_message(&err));
	msb_error_clear(&err);
	char name[36], dir[160];
	msb_driver_sandbox_name(state_dir, &key, "default", name);
	snprintf(dir, sizeof dir, "%s/%s", state_dir, name);
	bool left = path_exists(dir);
	fixture_close(&f);
	unlink(agent);
	assert_false(left);
	return rc;
}

/*
 * The greeting waits in the agent's socket before the agent runs: an agent that never
 * answers it fails the start at start_timeout, with its log's last words; one that hangs up
 * on it and lives on is reported as refusing it, not as an agent that died.
 */
static void test_agent_that_does_not_answer(void **state)
{
	(void)state;
	char said[512];
	assert_int_equal(acquire_with_stand_in("echo waiting >&2; exec sleep 30", said, sizeof said),
			 MSB_E_BACKEND);
	assert_non_null(strstr(said, "did not become ready in time"));
	assert_non_null(strstr(said, "waiting"));
	assert_int_equal(acquire_with_stand_in(STAND_IN_HANGS_UP(4), said, sizeof said),
			 MSB_E_PROTOCOL);
	assert_non_null(strstr(said, "the agent refused its greeting"));
	assert_non_null(strstr(said, "reading a frame failed")); /* reset: the HELLO went unread */
}

static void test_operations(void **state)
{
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "ops", "t", "agent", "" };
	msb_sandbox_handle *h = acquire(&f, &key);
	msb_error err = MSB_ERROR_INIT;

	msb_exec_result r = run(&f, h, 10, (const char *const[]){ "echo", "a b", NULL });
	assert_string_equal((char *)r.out.data, "a b\n");
	msb_exec_result_free(&r);

	assert_int_equal(f.ops->run_code(h, "echo code; exit 2", 10, &r, &err), MSB_OK);
	assert_string_equal((char *)r.out.data, "code\n");
	assert_int_equal(r.exit_code, 2);
	msb_exec_result_free(&r);

	/* files_in, then the same file seen by a command: one work directory. */
	assert_int_equal(f.ops->write_file(h, "dir/a.txt", "hello", 5, WORK, &err), MSB_OK);
	r = run(&f, h, 10, (const char *const[]){ "cat", "dir/a.txt", NULL });
	assert_string_equal((char *)r.out.data, "hello");
	msb_exec_result_free(&r);

	msb_buf buf = { 0 };
	assert_int_equal(f.ops->read_file(h, "dir/a.txt", WORK, 100, &buf, &err), MSB_OK);
	assert_string_equal((char *)buf.data, "hello");
	msb_buf_free(&buf);
	assert_int_equal(f.ops->read_file(h, "dir/a.txt", WORK, 2, &buf, &err),
			 MSB_E_TRANSFER_CAP_EXCEEDED);
	msb_error_clear(&err);
	msb_buf_free(&buf);

	msb_entry e = { 0 };
	bool found = false;
	assert_int_equal(f.ops->stat_file(h, "dir/a.txt", WORK, &e, &found, &err), MSB_OK);
	assert_true(found);
	assert_int_equal(e.kind, MSB_ENTRY_FILE);
	assert_int_equal(e.size_bytes, 5);
	free(e.path);

	r = run(&f, h, 10, (const char *const[]){ "ln", "-s", "/etc/passwd", "dir/link", NULL });
	msb_exec_result_free(&r);
	msb_entry_list list = { 0 };
	assert_int_equal(f.ops->list_dir(h, "dir", WORK, &list, &err), MSB_OK);
	assert_int_equal(list.len, 2);
	assert_string_equal(list.items[0].path, "dir/a.txt");
	assert_string_equal(list.items[1].path, "dir/link");
	assert_int_equal(list.items[1].kind, MSB_ENTRY_SYMLINK);
	msb_entry_list_free(&list);
	/* Confined in the guest: a link is never followed (a link read is the OS error), an escape never made. */
	assert_int_equal(f.ops->read_file(h, "dir/link", WORK, 1 << 20, &buf, &err), MSB_E_OS);
	msb_error_clear(&err);
	assert_int_equal(f.ops->write_file(h, "../escape", "x", 1, WORK, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "../escape"));
	/* What was refused, by whom: the backend, the sandbox, the op and the agent. */
	assert_non_null(strstr(msb_error_message(&err), "backend process: sandbox sk-"));
	assert_non_null(strstr(msb_error_message(&err), "write_file (msb-agent): "));
	msb_error_clear(&err);

	assert_int_equal(f.ops->remove(h, "dir", WORK, false, &err), MSB_E_IS_DIR);
	msb_error_clear(&err);
	assert_int_equal(f.ops->remove(h, "dir", WORK, true, &err), MSB_OK);
	assert_int_equal(f.ops->stat_file(h, "dir", WORK, &e, &found, &err), MSB_OK);
	assert_false(found);

	r = run(&f, h, 10, (const char *const[]){ "mkdir", "-p", "run-1/x/y", NULL });
	msb_exec_result_free(&r);
	assert_int_equal(f.ops->reclaim(h, WORK "/run-1", WORK, 10, &err), MSB_OK);
	assert_int_equal(f.ops->reclaim(h, WORK "/run-1", WORK, 10, &err), MSB_OK); /* gone is fine */
	assert_int_equal(f.ops->stat_file(h, "run-1", WORK, &e, &found, &err), MSB_OK);
	assert_false(found);

	const msb_driver_box *box = msb_driver_sandbox_box(h);
	char dir[256];
	snprintf(dir, sizeof dir, "%s", box->dir);
	f.ops->release(h);
	msb_disposal_failure fail_ = { 0 };
	assert_false(dispose_key(&f, &key, &fail_));
	assert_false(path_exists(dir));
	fixture_close(&f);
}

/* A child process: acquire `key`, leave a file named after itself, report the agent's pid. */
static void child_acquire(const msb_key *key, int report_fd, int index)
{
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_sandbox_handle *h = acquire(&f, key);
	char name[32];
	snprintf(name, sizeof name, "from-%d", index);
	msb_error err = MSB_ERROR_INIT;
	if (f.ops->write_file(h, name, "x", 1, WORK, &err) != MSB_OK)
		_exit(2);
	pid_t pid = agent_pid(h);
	if (write(report_fd, &pid, sizeof pid) != sizeof pid)
		_exit(3);
	f.ops->release(h);
	fixture_close(&f);
	_exit(0);
}

static void test_two_processes_one_sandbox(void **state)
{
	msb_key key = { "shared", "t", "agent", "" };
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			child_acquire(&key, p[1], i);
	}
	close(p[1]);
	pid_t agents[2] = { 0, 0 };
	for (int i = 0; i < 2; i++) {
		int status;
		assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(read(p[0], agents, sizeof agents), sizeof agents);
	close(p[0]);
	assert_true(agents[0] > 0);
	assert_int_equal(agents[0], agents[1]); /* the race met one sandbox */

	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_sandbox_handle *h = acquire(&f, &key);
	assert_int_equal(agent_pid(h), agents[0]); /* the sandbox outlived both processes */
	msb_entry_list list = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(f.ops->list_dir(h, "", WORK, &list, &err), MSB_OK);
	assert_int_equal(list.len, 2);
	assert_string_equal(list.items[0].path, "from-0");
	assert_string_equal(list.items[1].path, "from-1");
	msb_entry_list_free(&list);
	f.ops->release(h);
	msb_disposal_failure fl = { 0 };
	assert_false(dispose_key(&f, &key, &fl));
	assert_false(msb_driver_pid_running(agents[0]));
	fixture_close(&f);
}

typedef struct racer {
	fixture *f;
	const msb_key *key;
	pid_t agent;
} racer;

static void *race_acquire(void *arg)
{
	racer *r = arg;
	msb_sandbox_handle *h = NULL;
	if (r->f->ops->acquire(r->f->inst, r->key, &r->f->spec, &h, NULL) == MSB_OK) {
		r->agent = agent_pid(h);
		r->f->ops->release(h);
	}
	return NULL;
}

static void test_threads_race_one_sandbox(void **state)
{
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "threads", "t", "agent", "" };
	racer r[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (racer){ .f = &f, .key = &key };
		pthread_create(&t[i], NULL, race_acquire, &r[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_true(r[0].agent > 0);
	for (int i = 1; i < 4; i++)
		assert_int_equal(r[i].agent, r[0].agent);
	msb_disposal_failure fl = { 0 };
	assert_false(dispose_key(&f, &key, &fl));
	fixture_close(&f);
}

/* The sandbox directory of (key, "default"), host side. */
static void box_dir(const msb_key *key, char *dir, size_t n)
{
	char name[36];
	msb_driver_sandbox_name(state_dir, key, "default", name);
	snprintf(dir, n, "%s/%s", state_dir, name);
}

struct adopter {
	fixture *f;
	const msb_key *entry, *key;
	msb_errc rc;
	msb_sandbox_handle *h;
};

static void *race_adopt(void *arg)
{
	struct adopter *a = arg;
	a->rc = a->f->ops->adopt(a->f->inst, a->entry, a->key, &a->f->spec, &a->h, NULL);
	return NULL;
}

/*
 * Warm pools (issue 22): adopt renames a running pool entry to a key — same agent, same
 * files, the entry's name gone — once: a second adopt of it, or two racing, get one sandbox
 * between them; a key that has its own leaves the entry untouched.
 */
static void test_adopt(void **state)
{
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	assert_true(MSB_BACKEND_HAS(f.ops, adopt) && f.ops->adopt);
	msb_key e1 = { MSB_POOL_SCOPE, "bp", "", "e1" }, e2 = { MSB_POOL_SCOPE, "bp", "", "e2" };
	msb_key k1 = { "adopt", "t", "", "k1" }, k3 = { "adopt", "t", "", "k3" },
		k4 = { "adopt", "t", "", "k4" };
	msb_error err = MSB_ERROR_INIT;
	msb_sandbox_handle *h = acquire(&f, &e1);
	pid_t agent = agent_pid(h);
	assert_int_equal(f.ops->write_file(h, "from-entry", "x", 1, WORK, &err), MSB_OK);
	f.ops->release(h);

	h = NULL;
	assert_int_equal(f.ops->adopt(f.inst, &e1, &k1, &f.spec, &h, &err), MSB_OK);
	assert_non_null(h);
	assert_int_equal(agent_pid(h), agent); /* the very sandbox, not a new start */
	char dir[160], want[160];
	box_dir(&k1, want, sizeof want);
	assert_string_equal(msb_driver_sandbox_box(h)->dir, want);
	msb_entry e;
	bool found = false;
	assert_int_equal(f.ops->stat_file(h, "from-entry", WORK, &e, &found, &err), MSB_OK);
	assert_true(found);
	free(e.path);
	box_dir(&e1, dir, sizeof dir);
	assert_false(path_exists(dir));
	f.ops->release(h);
	/* As root each sandbox holds a uid of its own: its host-wide record follows the rename,
	 * or the uid would read as free and be handed to a second live sandbox. */
	char uid_file[200], text[32] = "", rec[96], owner[200] = "";
	snprintf(uid_file, sizeof uid_file, "%s/uid", want);
	FILE *u = fopen(uid_file, "re");
	if (u) {
		assert_non_null(fgets(text, sizeof text, u));
		fclose(u);
		snprintf(rec, sizeof rec, "/run/msb/process-uids/%ld", atol(text));
		FILE *r = fopen(rec, "re");
		assert_non_null(r);
		assert_non_null(fgets(owner, sizeof owner, r));
		fclose(r);
		owner[strcspn(owner, "\n")] = '\0';
		assert_string_equal(owner, want);
	} else {
		assert_true(geteuid() != 0); /* unprivileged: no uid of its own, nothing to follow */
	}
	/* Claimed: a second adopt of e1 finds nothing, and leaves nothing of k3. */
	h = NULL;
	assert_int_equal(f.ops->adopt(f.inst, &e1, &k3, &f.spec, &h, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "is gone"));
	msb_error_clear(&err);
	box_dir(&k3, dir, sizeof dir);
	assert_false(path_exists(dir));
	/* k1 has its own: MSB_OK, no handle, e2 untouched. */
	f.ops->release(acquire(&f, &e2));
	h = NULL;
	assert_int_equal(f.ops->adopt(f.inst, &e2, &k1, &f.spec, &h, &err), MSB_OK);
	assert_null(h);
	box_dir(&e2, dir, sizeof dir);
	assert_true(path_exists(dir));
	/* Two threads race for e2: one gets it, the other is refused. */
	struct adopter a[2] = { { &f, &e2, &k3, MSB_OK, NULL }, { &f, &e2, &k4, MSB_OK, NULL } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, race_adopt, &a[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	int won = (a[0].rc == MSB_OK && a[0].h) + (a[1].rc == MSB_OK && a[1].h);
	assert_int_equal(won, 1);
	assert_true(a[0].rc == MSB_E_NOT_FOUND || a[1].rc == MSB_E_NOT_FOUND);
	for (int i = 0; i < 2; i++)
		if (a[i].h)
			f.ops->release(a[i].h);
	assert_false(path_exists(dir));
	msb_scope_purge purge = { 0 };
	f.ops->dispose_scope(f.inst, "adopt", "t", &purge);
	assert_int_equal(purge.disposed, 2); /* k1 and the race's winner */
	msb_scope_purge_free(&purge);
	fixture_close(&f);
}

/* An agent that died (killed from outside) is replaced by the next acquire, not reused. */
static void test_dead_agent_restarted(void **state)
{
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "restart", "t", "agent", "" };
	msb_sandbox_handle *h = acquire(&f, &key);
	pid_t first = agent_pid(h);
	f.ops->release(h);
	assert_int_equal(kill(first, SIGKILL), 0);
	for (int i = 0; i < 400 && msb_driver_pid_running(first); i++)
		sleep_ms(5);
	h = acquire(&f, &key);
	pid_t second = agent_pid(h);
	assert_true(second > 0 && second != first);
	msb_exec_result r = run(&f, h, 10, (const char *const[]){ "echo", "alive", NULL });
	assert_string_equal((char *)r.out.data, "alive\n");
	msb_exec_result_free(&r);
	f.ops->release(h);
	msb_disposal_failure fl = { 0 };
	assert_false(dispose_key(&f, &key, &fl));
	fixture_close(&f);
}

static void test_dispose_kills_escaped_daemon(void **state)
{
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "daemon", "t", "agent", "" };
	msb_sandbox_handle *h = acquire(&f, &key);
	/* A daemon that leaves its command's session and process group, and a plain child. */
	msb_exec_result r = run(&f, h, 10, (const char *const[]){
		"sh", "-c", "setsid sh -c 'sleep 1000' </dev/null >/dev/null 2>&1 & "
			    "sleep 1000 </dev/null >/dev/null 2>&1 & echo started", NULL });
	assert_string_equal((char *)r.out.data, "started\n");
	msb_exec_result_free(&r);
	pid_t agent = agent_pid(h);
	char ns[64];
	pid_ns_of(agent, ns, sizeof ns);
	assert_true(strlen(ns) > 0);
	assert_true(count_in_ns(ns) >= 3); /* agent, daemon, child (and a connection server) */
	char dir[256];
	snprintf(dir, sizeof dir, "%s", msb_driver_sandbox_box(h)->dir);
	f.ops->release(h);
	msb_disposal_failure fl = { 0 };
	assert_false(dispose_key(&f, &key, &fl));
	assert_null(fl.detail);
	for (int i = 0; i < 200 && count_in_ns(ns) > 0; i++)
		sleep_ms(5);
	assert_int_equal(count_in_ns(ns), 0);
	assert_false(path_exists(dir));
	fixture_close(&f);
}

static void test_dispose_scope_counts(void **state)
{
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key k1 = { "scope-x", "thread-1", "a1", "" }, k2 = { "scope-x", "thread-1", "a2", "c9" };
	msb_key other = { "scope-x", "thread-2", "a1", "" };
	msb_sandbox_handle *h1 = acquire(&f, &k1), *h2 = acquire(&f, &k2), *h3 = acquire(&f, &other);
	pid_t p1 = agent_pid(h1), p2 = agent_pid(h2), p3 = agent_pid(h3);
	assert_true(p1 != p2 && p2 != p3);
	f.ops->release(h1);
	f.ops->release(h2);
	msb_scope_purge purge = { 0 };
	f.ops->dispose_scope(f.inst, "scope-x", "thread-1", &purge);
	assert_int_equal(purge.disposed, 2);
	assert_false(purge.has_undisposed);
	assert_true(!msb_driver_pid_running(p1) && !msb_driver_pid_running(p2));
	assert_int_equal(agent_pid(h3), p3); /* another thread's sandbox is untouched */
	f.ops->release(h3);
	f.ops->dispose_scope(f.inst, "scope-x", "thread-2", &purge);
	assert_int_equal(purge.disposed, 3);
	msb_scope_purge_free(&purge);
	fixture_close(&f);
}

/* Make <state_dir>/<name>/ holding a copy of `meta`: a sandbox directory with no process. */
static void plant_box(const char *name, const char *meta)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "mkdir %s/%s && cp %s %s/%s/meta", state_dir, name, meta, state_dir,
		 name);
	assert_int_equal(system(cmd), 0);
}

/*
 * dispose reads the metadata of names that begin with the key's hashes only, and of names
 * of the earlier form ("sb-"), so a sandbox an earlier msb started is still found. A
 * directory whose name is another key's is left alone even when its metadata claims this
 * key: a name is never a sandbox of a key it was not made from.
 */
static void test_dispose_reads_matching_names(void **state)
{
	(void)state;
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "names", "t", "agent", "" }, other = { "names", "u", "agent", "" };
	msb_sandbox_handle *h = acquire(&f, &key);
	f.ops->release(h);
	char name[36], other_name[36], meta[200], path[200];
	msb_driver_sandbox_name(state_dir, &key, "default", name);
	msb_driver_sandbox_name(state_dir, &other, "default", other_name);
	snprintf(meta, sizeof meta, "%s/%s/meta", state_dir, name);
	const char *legacy = "sb-0123456789abcdef0123456789abcdef";
	plant_box(legacy, meta);
	plant_box(other_name, meta);
	msb_disposal_failure fl = { 0 };
	assert_false(dispose_key(&f, &key, &fl));
	snprintf(path, sizeof path, "%s/%s", state_dir, name);
	assert_false(path_exists(path));
	snprintf(path, sizeof path, "%s/%s", state_dir, legacy);
	assert_false(path_exists(path));
	snprintf(path, sizeof path, "%s/%s", state_dir, other_name);
	assert_true(path_exists(path));
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -r %s", path);
	assert_int_equal(system(cmd), 0);
	msb_disposal_failure_free(&fl);
	fixture_close(&f);
}

static void test_dispose_failure_is_reported(void **state)
{
	if (geteuid() != 0) {
		printf("needs root to mount a tmpfs that pins the sandbox's directory\n");
		skip();
	}
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "pinned", "t", "agent", "" };
	msb_sandbox_handle *h = acquire(&f, &key);
	char mnt[300];
	snprintf(mnt, sizeof mnt, "%s/mnt", msb_driver_sandbox_box(h)->work_dir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	assert_int_equal(mount("tmpfs", mnt, "tmpfs", 0, "size=1m"), 0);
	f.ops->release(h);
	msb_disposal_failure fl = { 0 };
	/* A directory that cannot be removed is never reported as disposed. */
	assert_true(dispose_key(&f, &key, &fl));
	assert_non_null(fl.detail);
	assert_non_null(strstr(fl.detail, "could not be removed"));
	msb_disposal_failure_free(&fl);
	msb_scope_purge purge = { 0 };
	f.ops->dispose_scope(f.inst, "pinned", "t", &purge);
	assert_int_equal(purge.disposed, 0);
	assert_true(purge.has_undisposed);
	msb_scope_purge_free(&purge);
	assert_int_equal(umount(mnt), 0);
	assert_false(dispose_key(&f, &key, &fl));
	fixture_close(&f);
}

static void test_egress_closed(void **state)
{
	/* A listener on the host's loopback, which the host itself can reach. */
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(l, 4), 0);
	socklen_t len = sizeof sa;
	getsockname(l, (struct sockaddr *)&sa, &len);
	char port[16];
	snprintf(port, sizeof port, "%u", ntohs(sa.sin_port));
	int probe = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(probe, (struct sockaddr *)&sa, sizeof sa), 0);
	close(probe);

	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "egress", "t", "agent", "" };
	msb_sandbox_handle *h = acquire(&f, &key);
	msb_exec_result r = run(&f, h, 10, (const char *const[]){ HELPER, "connect", port, NULL });
	assert_int_equal(r.exit_code, 1);
	assert_non_null(strstr((char *)r.err.data, "connect:"));
	msb_exec_result_free(&r);
	/* The namespace holds a loopback and nothing else. */
	r = run(&f, h, 10, (const char *const[]){ "cat", "/proc/self/net/dev", NULL });
	int ifaces = 0;
	for (char *p = (char *)r.out.data; (p = strchr(p, ':')); p++)
		ifaces++;
	assert_int_equal(ifaces, 1);
	assert_non_null(strstr((char *)r.out.data, "lo:"));
	msb_exec_result_free(&r);
	f.ops->release(h);
	msb_disposal_failure fl = { 0 };
	assert_false(dispose_key(&f, &key, &fl));
	fixture_close(&f);
	close(l);
}

/* The network namespace this process holds a descriptor of (the plugin's spare), or 0;
 * waits up to 2 s for the one a start's refill makes on a thread. */
static unsigned long held_net_ns(void)
{
	unsigned long ino = 0;
	for (int i = 0; i < 400; i++) {
		netns_probe_held(&ino);
		if (ino)
			break;
		sleep_ms(5);
	}
	return ino;
}

/*
 * From an instance's third start on, a sandbox's network namespace is the one its previous
 * start made ahead (msb/netns.h), which the host held until then; each is the sandbox's
 * alone and holds a loopback that answers, and nothing else.
 */
static void test_network_namespace_made_ahead(void **state)
{
	if (geteuid() != 0) {
		printf("skipped: only root makes a network namespace ahead (msb/netns.h)\n");
		skip();
	}
	cfg c;
	cfg_init(&c);
	fixture f;
	fixture_open(&f, &c);
	static const char *const threads[] = { "ahead-1", "ahead-2", "ahead-3", "ahead-4" };
	unsigned long host = netns_probe_of(0), seen[4], spare = 0;
	for (int i = 0; i < 4; i++) {
		msb_key key = { "ahead", threads[i], "agent", "" };
		msb_sandbox_handle *h = acquire(&f, &key);
		seen[i] = netns_probe_of(agent_pid(h));
		assert_true(seen[i] != host);
		for (int j = 0; j < i; j++)
			assert_true(seen[i] != seen[j]);
		if (i >= 2)
			assert_true(seen[i] == spare);
		spare = i >= 1 ? held_net_ns() : 0;
		if (i >= 1)
			assert_true(spare != 0 && spare != seen[i]);
		/* Its loopback is up (refused, not unreachable), and only it is there. */
		msb_exec_result r = run(&f, h, 10, (const char *const[]){ HELPER, "connect", "9", NULL });
		assert_non_null(strstr((char *)r.err.data, "Connection refused"));
		msb_exec_result_free(&r);
		r = run(&f, h, 10, (const char *const[]){ "cat", "/proc/self/net/dev", NULL });
		assert_non_null(strstr((char *)r.out.data, "lo:"));
		assert_null(strchr(strstr((char *)r.out.data, "lo:") + 3, ':'));
		msb_exec_result_free(&r);
		f.ops->release(h);
	}
	for (int i = 0; i < 4; i++) {
		msb_key key = { "ahead", threads[i], "agent", "" };
		msb_disposal_failure fl = { 0 };
		assert_false(dispose_key(&f, &key, &fl));
	}
	fixture_close(&f);
	/* The spare not taken is closed with the instance. */
	assert_int_equal(held_net_ns(), 0);
}

static void test_limits_hold(void **state)
{
	/* As root, RLIMIT_NPROC binds only once the sandbox runs as another uid. */
	bool root = geteuid() == 0;
	cfg c;
	cfg_init(&c);
	if (root)
		cfg_add(&c, "uid", "65534");
	cfg_add(&c, "rlimit_nproc", "24");
	cfg_add(&c, "rlimit_as", "256MiB");
	cfg_add(&c, "rlimit_fsize", "8MiB");
	cfg_add(&c, "rlimit_cpu", "1");
	cfg_add(&c, "rlimit_nofile", "40");
	fixture f;
	fixture_open(&f, &c);
	msb_key key = { "limits", "t", "agent", "" };
	msb_sandbox_handle *h = acquire(&f, &key);
	msb_error err = MSB_ERROR_INIT;

	msb_exec_result r;
	if (root) {
		r = run(&f, h, 10, (const char *const[]){ "id", "-u", NULL });
		assert_string_equal((char *)r.out.data, "65534\n");
		msb_exec_result_free(&r);
		/* The guest cannot reach its own supervisor's socket (owner only, root's; and the
		 * state directory is hidden under the sandbox's disk). */
		const char *sock = msb_driver_sandbox_box(h)->socket_path;
		r = run(&f, h, 10, (const char *const[]){ HELPER, "unix", sock, NULL });
		assert_int_equal(r.exit_code, 1);
		assert_true(strstr((char *)r.err.data, "denied") ||
			    strstr((char *)r.err.data, "No such file"));
		msb_exec_result_free(&r);
	}

	/* Open files: the limit the command sees is the configured one. */
	r = run(&f, h, 10, (const char *const[]){ "sh", "-c", "ulimit -n", NULL });
	assert_string_equal((char *)r.out.data, "40\n");
	msb_exec_result_free(&r);

	/* Memory: a small allocation works, a big one is refused by RLIMIT_AS. */
	r = run(&f, h, 10, (const char *const[]){ HELPER, "alloc", "16", NULL });
	assert_int_equal(r.exit_code, 0);
	msb_exec_result_free(&r);
	r = run(&f, h, 10, (const char *const[]){ HELPER, "alloc", "1024", NULL });
	assert_int_equal(r.exit_code, 3);
	msb_exec_result_free(&r);

	/* A huge file stops at RLIMIT_FSIZE. */
	r = run(&f, h, 20, (const char *const[]){ "sh", "-c", "head -c 100000000 /dev/zero > big", NULL });
	assert_int_not_equal(r.exit_code, 0);
	msb_exec_result_free(&r);
	msb_entry e = { 0 };
	bool found = false;
	assert_int_equal(f.ops->stat_file(h, "big", WORK, &e, &found, &err), MSB_OK);
	assert_true(found);
	assert_true(e.size_bytes <= 8 * 1024 * 1024);
	free(e.path);

	/* CPU: a busy loop is stopped by RLIMIT_CPU, well before the wall-clock timeout. */
	r = run(&f, h, 20, (const char *const[]){ "sh", "-c", "while :; do :; done", NULL });
	assert_false(r.timed_out);
	assert_true(r.term_signal == SIGXCPU || r.term_signal == SIGKILL);
	msb_exec_result_free(&r);

	/* A fork bomb saturates RLIMIT_NPROC and no further. */
	pid_t agent = agent_pid(h);
	char ns[64];
	pid_ns_of(agent, ns, sizeof ns);
	r = run(&f, h, 3, (const char *const[]){ "sh", "-c", "b() { b | b & }; b; sleep 1", NULL });
	msb_exec_result_free(&r);
	sleep_ms(300);
	assert_true(count_in_ns(ns) <= 24);
	f.ops->release(h);
	msb_disposal_failure fl = { 0 };
	assert_false(dispose_key(&f, &key, &fl));
	for (int i = 0; i < 400 && count_in_ns(ns) > 0; i++)
		sleep_ms(5);
	assert_int_equal(count_in_ns(ns), 0);
	fixture_close(&f);
}

/* Nothing of this suite may outlive it: no process mentions its state directory. */
static int leaked_agents(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int leaked = 0;
	while ((de = readdir(d))) {
		char path[300], cmd[4096];
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, cmd, sizeof cmd - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[n] = '\0';
		if (strstr(cmd, state_dir) && strstr(cmd, "msb-agent")) {
			fprintf(stderr, "leaked: pid %s: %s\n", de->d_name, cmd);
			leaked++;
		}
	}
	closedir(d);
	return leaked;
}

static void test_zz_nothing_left(void **state)
{
	assert_int_equal(leaked_agents(), 0);
	DIR *d = opendir(state_dir);
	struct dirent *de;
	int left = 0;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "sk-", 3) || !strncmp(de->d_name, "sb-", 3)) {
			fprintf(stderr, "left behind: %s/%s\n", state_dir, de->d_name);
			left++;
		}
	closedir(d);
	assert_int_equal(left, 0);
}

static int group_setup(void **state)
{
	if (access(AGENT, X_OK) != 0) {
		fprintf(stderr, "msb-agent is not built at %s\n", AGENT);
		return -1;
	}
	snprintf(state_dir, sizeof state_dir, "/tmp/msb-process-test-XXXXXX");
	if (!mkdtemp(state_dir))
		return -1;
	snprintf(helper_dir, sizeof helper_dir, "/var/tmp/msb-process-helper-XXXXXX");
	if (!mkdtemp(helper_dir) || chmod(helper_dir, 0755) != 0)
		return -1;
	snprintf(helper_path, sizeof helper_path, "%s/process_helper", helper_dir);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 0755 '%s'", HELPER_BUILT, helper_path,
		 helper_path);
	return system(cmd) == 0 ? 0 : -1;
}

/* Unmount whatever a failed test left mounted under the state directory. */
static void unmount_leftovers(void)
{
	FILE *m = fopen("/proc/self/mounts", "r");
	char line[4096];
	while (m && fgets(line, sizeof line, m)) {
		char dev[256], dir[3000];
		if (sscanf(line, "%255s %2999s", dev, dir) == 2 &&
		    !strncmp(dir, state_dir, strlen(state_dir)))
			umount2(dir, MNT_DETACH);
	}
	if (m)
		fclose(m);
}

/* Whatever a failed test left: dispose every sandbox in the state dir, then remove it. */
static int group_teardown(void **state)
{
	unmount_leftovers();
	cfg c;
	cfg_init(&c);
	msb_loader *loader;
	const msb_plugin *plugin;
	msb_backend *b;
	if (msb_loader_new(&loader, NULL) == MSB_OK &&
	    msb_loader_load(loader, PLUGIN, &plugin, NULL) == MSB_OK &&
	    msb_backend_open(plugin, &c.root, NULL, NULL, &b, NULL) == MSB_OK) {
		const char *scopes[][2] = { { "ops", "t" }, { "shared", "t" }, { "daemon", "t" },
					    { "scope-x", "thread-1" }, { "scope-x", "thread-2" },
					    { "pinned", "t" }, { "egress", "t" }, { "limits", "t" },
					    { "threads", "t" }, { "restart", "t" }, { "ahead", "ahead-1" },
					    { "ahead", "ahead-2" }, { "ahead", "ahead-3" }, { "ahead", "ahead-4" },
					    { "adopt", "t" }, { MSB_POOL_SCOPE, "bp" } };
		for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++) {
			msb_scope_purge purge = { 0 };
			msb_backend_ops(b)->dispose_scope(msb_backend_instance_of(b), scopes[i][0],
							  scopes[i][1], &purge);
			msb_scope_purge_free(&purge);
		}
		msb_backend_close(b);
	}
	msb_loader_free(loader);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'%s%s%s", state_dir, helper_dir[0] ? " '" : "",
		 helper_dir, helper_dir[0] ? "'" : "");
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_config_refused),
		cmocka_unit_test(test_agent_missing),
		cmocka_unit_test(test_agent_that_does_not_answer),
		cmocka_unit_test(test_operations),
		cmocka_unit_test(test_two_processes_one_sandbox),
		cmocka_unit_test(test_threads_race_one_sandbox),
		cmocka_unit_test(test_dead_agent_restarted),
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_dispose_kills_escaped_daemon),
		cmocka_unit_test(test_dispose_scope_counts),
		cmocka_unit_test(test_dispose_reads_matching_names),
		cmocka_unit_test(test_dispose_failure_is_reported),
		cmocka_unit_test(test_egress_closed),
		cmocka_unit_test(test_network_namespace_made_ahead),
		cmocka_unit_test(test_limits_hold),
		cmocka_unit_test(test_zz_nothing_left),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
