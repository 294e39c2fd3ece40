/*
 * bench_bwrap.c — what a `bwrap` sandbox costs, against the bare engine in the same run.
 *
 *   bare:   fork + exec `bwrap <the backend's exact flags, seccomp filter and binds> true`,
 *           as the sandbox's user, and wait for it
 *   bare, to nothing left: the same, then also wait until bwrap's init (which bwrap does not
 *           wait for) is gone with its namespaces — what a disposal that verifies must wait
 *           for; the bench is a subreaper, so that init is its child
 *   bare, network namespace made ahead: to nothing left, bwrap started in an empty network
 *           namespace made before the clock starts and told to keep it (--share-net), as
 *           the backend's starts are from an instance's third on (msb/netns.h): the bare
 *           engine's own share of such a start. The target is still taken against bare,
 *           which makes its namespace itself, as a bare run of the same isolation must
 *   bare, killed: the same bwrap born in a cgroup with the backend's default limits, running
 *           a command that waits; timed from the kill to the cgroup's last directory removed
 *           (msb_cgroup_destroy): what the kernel alone makes any verified disposal of such
 *           a sandbox cost, without msb's agent, lock or state directory
 *   agent:  start msb-agent on the host (no boundary) as a sandbox starts it — on a socket
 *           made first, the host's HELLO queued — until it answers, then stop it
 *   cold:   acquire + exec `true` + dispose through the real plugin (cgroups included), a
 *           new key each round in one instance: from its third start on, each finds its
 *           cgroup and network namespace made during the one before (msb/cgroup.h,
 *           msb/netns.h), as an agent host's sandboxes after its first do
 *   cold, an instance's first start: the same cycle in an instance opened for it, which has
 *           nothing made ahead (a one-shot `msb exec`); opening it is not timed
 *   warm:   exec `true` in an acquired sandbox (a socket round trip + a fork in the guest)
 *
 * Targets (issue 7): cold <= 1.1 x (bare + agent); warm < 1 ms and 5x faster than bare.
 * Median of ROUNDS rounds; ms per operation.
 *
 * MSB_BENCH_HOST_MIB=N makes the benchmark a large host first (N MiB written, so a fork
 * must copy its page tables): what an agent runtime embedding libmsb pays per sandbox.
 * MSB_BENCH_ROUNDS_OUT=FILE writes every round's figures there, for paired comparisons.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>
#include <msb/config.h>
#include <msb/driver.h>
#include <msb/loader.h>
#include <msb/netns.h>
#include <msb/unix_socket.h>

#include "bwrap_argv.h"
#include "bwrap_config.h"
#include "bwrap_launch.h"
#include "bwrap_seccomp.h"
#include "bench_cycle.h"
#include "msb_test.h"

#define ROUNDS 21
#define WARM_N 200
#define AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"
#define PLUGIN MSB_TEST_MODULE("plugins/bwrap", "bwrap")

static char state[64];
static char bare_dir[128];

static void die(const char *what, const msb_error *err)
{
	fprintf(stderr, "bench_bwrap: %s: %s\n", what, err ? msb_error_message(err) : strerror(errno));
	exit(1);
}

/* ---- bare: bwrap with the backend's flags, running `true` ---------------------------- */

static char **bare_argv;
static char **ahead_argv; /* the same, keeping the network namespace it is started in */
static int bare_fds[3]; /* seccomp, work, agent: no agent socket for `true` */
static long drop_uid = -1;

static void bare_prepare(void)
{
	msb_error err = MSB_ERROR_INIT;
	char work[160];
	snprintf(bare_dir, sizeof bare_dir, "%s/bare", state);
	snprintf(work, sizeof work, "%s/work", bare_dir);
	if (mkdir(bare_dir, 0711) || mkdir(work, 0700))
		die("mkdir", NULL);
	if (geteuid() == 0) {
		drop_uid = 65534;
		if (chmod(state, 0711) || chown(work, 65534, 65534))
			die("chown", NULL);
	}
	msb_buf bpf = { 0 };
	if (msb_bwrap_seccomp_compile(&bpf, &err) || msb_bwrap_seccomp_fd(&bpf, &bare_fds[0], &err))
		die("seccomp", &err);
	msb_buf_free(&bpf);
	bare_fds[1] = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bare_fds[2] = open(AGENT, O_PATH | O_CLOEXEC);
	msb_bwrap_layout layout = {
		.image_root = NULL,
		.work_guest = MSB_DEFAULT_WORK_DIR,
		.work_fd = MSB_BWRAP_FD_WORK,
		.agent_fd = MSB_BWRAP_FD_AGENT,
		.seccomp_fd = MSB_BWRAP_FD_SECCOMP,
		.tmp_size = 64u << 20,
	};
	const char *cmd[] = { "true", NULL };
	if (msb_bwrap_argv("/usr/bin/bwrap", &layout, cmd, &bare_argv, &err))
		die("argv", &err);
	layout.netns_joined = true;
	if (msb_bwrap_argv("/usr/bin/bwrap", &layout, cmd, &ahead_argv, &err))
		die("argv", &err);
}

/* In a child: the bare run's files on bwrap's fd numbers (stdout on `out` unless -1), the
 * sandbox's user, then bwrap with `argv`. */
static _Noreturn void bare_exec(char **argv, int out)
{
	int high[3];
	for (int i = 0; i < 3; i++)
		high[i] = fcntl(bare_fds[i], F_DUPFD_CLOEXEC, 64);
	for (int i = 0; i < 3; i++)
		dup2(high[i], MSB_BWRAP_FD_SECCOMP + i);
	lseek(MSB_BWRAP_FD_SECCOMP, 0, SEEK_SET);
	if (out >= 0)
		dup2(out, 1);
	if (drop_uid >= 0 && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
			      setresuid(65534, 65534, 65534)))
		_exit(126);
	char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
	execve(argv[0], argv, envp);
	_exit(127);
}

/* With `netns` >= 0: bwrap started in that namespace, made ahead, and keeping it. */
static double bare_once(bool to_nothing_left, int netns)
{
	double t = bench_now_ms();
	pid_t p = fork();
	if (p == 0) {
		if (netns >= 0 && setns(netns, CLONE_NEWNET) != 0)
			_exit(125);
		bare_exec(netns >= 0 ? ahead_argv : bare_argv, -1);
	}
	int status;
	waitpid(p, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_bwrap: bare bwrap failed (status %d)\n", status);
		exit(1);
	}
	while (to_nothing_left && waitpid(-1, NULL, 0) > 0)
		;
	return bench_now_ms() - t;
}

/* What a sandbox started in a network namespace made ahead (msb/netns.h) leaves to bwrap. */
static double bare_ahead_once(void)
{
	int netns;
	msb_error err = MSB_ERROR_INIT;
	if (msb_netns_make(&netns, &err))
		die("network namespace", &err);
	double t = bare_once(true, netns);
	close(netns);
	return t;
}

/* ---- bare, killed: the floor of a disposal that verifies --------------------------- */

static char **wait_argv; /* the bare flags, running a command that says it runs, then waits */
static msb_cgroup_limits default_limits;

static void bare_kill_prepare(void)
{
	msb_error err = MSB_ERROR_INIT;
	msb_bwrap_config cfg;
	if (msb_bwrap_config_read(NULL, &cfg, &err))
		die("bwrap defaults", &err);
	default_limits = cfg.limits;
	msb_bwrap_config_free(&cfg);
	msb_bwrap_layout layout = {
		.work_guest = MSB_DEFAULT_WORK_DIR,
		.work_fd = MSB_BWRAP_FD_WORK,
		.agent_fd = MSB_BWRAP_FD_AGENT,
		.seccomp_fd = MSB_BWRAP_FD_SECCOMP,
		.tmp_size = 64u << 20,
	};
	const char *cmd[] = { "sh", "-c", "echo; exec sleep 1000", NULL };
	if (msb_bwrap_argv("/usr/bin/bwrap", &layout, cmd, &wait_argv, &err))
		die("argv", &err);
}

static double bare_kill_once(int round)
{
	msb_error err = MSB_ERROR_INIT;
	char parent[96], leaf[32];
	snprintf(parent, sizeof parent, "msb-bench/%s", strrchr(state, '/') + 1);
	snprintf(leaf, sizeof leaf, "bare-kill-%d", round);
	msb_cgroup *cg = NULL;
	if (msb_cgroup_create(parent, leaf, &default_limits, &cg, &err))
		die("bare cgroup", &err);
	int said[2];
	if (pipe(said))
		die("pipe", NULL);
	int join = 0;
	pid_t p = msb_cgroup_fork(cg, &join);
	if (p == 0) {
		if (join)
			_exit(125);
		bare_exec(wait_argv, said[1]);
	}
	close(said[1]);
	char byte;
	if (p < 0 || read(said[0], &byte, 1) != 1)
		die("the waiting bare bwrap did not start", NULL);
	close(said[0]);
	double t = bench_now_ms();
	if (msb_cgroup_destroy(cg, 10.0, &err))
		die("bare cgroup destroy", &err);
	double d = bench_now_ms() - t;
	msb_cgroup_free(cg);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return d;
}

/* ---- agent: start on the host until HELLO ------------------------------------------- */

/*
 * The agent started as the sandbox starts it: on a listening socket made first (--listen-fd),
 * with the host's HELLO already queued on it, until the answer is read. No poll interval
 * between the agent listening and the host noticing, as there is none in the sandbox.
 */
static double agent_once(void)
{
	msb_error err = MSB_ERROR_INIT;
	char work[160];
	char sock[160];
	snprintf(sock, sizeof sock, "%s/agent.sock", bare_dir);
	snprintf(work, sizeof work, "%s/work", bare_dir);
	msb_agent_config cfg = MSB_AGENT_CONFIG_INIT;
	cfg.work_dir = work;
	char **argv = NULL;
	if (msb_agent_config_argv(AGENT, "--listen-fd", "3", &cfg, -1, &argv, &err))
		die("agent argv", &err);
	double t = bench_now_ms();
	int lfd = msb_unix_listen(sock);
	if (lfd < 0)
		die("agent socket", NULL);
	msb_agent_client *c = NULL;
	if (msb_agent_client_greet_start(sock, 5, &c, &err))
		die("greet", &err);
	pid_t p = fork();
	if (p == 0) {
		dup2(lfd, 3);
		execv(argv[0], argv);
		_exit(127);
	}
	close(lfd);
	if (msb_agent_client_greet_finish(c, 5, &err))
		die("agent did not answer", &err);
	double d = bench_now_ms() - t;
	msb_agent_shutdown(c, 5, NULL);
	msb_agent_client_close(c);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	free(argv);
	return d;
}

/* ---- the plugin ------------------------------------------------------------------- */

static const struct msb_backend_v27 *ops;
static msb_backend_instance *self;
static msb_spec spec;
static const msb_plugin *plugin;
static msb_config_doc *first_doc; /* the config of the instances opened for one start each */

static void plugin_open(msb_loader **loader, msb_backend **backend, msb_config_doc **doc)
{
	msb_error err = MSB_ERROR_INIT;
	char yaml[512];
	snprintf(yaml, sizeof yaml,
		 "state_dir: %s/plugin\nagent: %s\ncgroup_parent: msb-bench/%s\n", state, AGENT,
		 strrchr(state, '/') + 1);
	if (msb_config_doc_parse(yaml, strlen(yaml), "<bench>", doc, &err) ||
	    msb_loader_new(loader, &err) || msb_loader_load(*loader, PLUGIN, &plugin, &err) ||
	    msb_backend_open(plugin, msb_config_doc_root(*doc), NULL, NULL, backend, &err))
		die("open the bwrap plugin", &err);
	snprintf(yaml, sizeof yaml,
		 "state_dir: %s/first\nagent: %s\ncgroup_parent: msb-bench/%s-first\n", state,
		 AGENT, strrchr(state, '/') + 1);
	if (msb_config_doc_parse(yaml, strlen(yaml), "<bench>", &first_doc, &err))
		die("config", &err);
	ops = msb_backend_ops(*backend);
	self = msb_backend_instance_of(*backend);
	msb_spec_init(&spec, "bench");
}

static void exec_true(msb_sandbox_handle *h)
{
	msb_error err = MSB_ERROR_INIT;
	if (!bench_exec_true(ops, h, &err))
		die("exec true", &err);
}

static double split[3][ROUNDS]; /* acquire, first exec, dispose */

static double cold_once(int i)
{
	char thread[32];
	snprintf(thread, sizeof thread, "cold-%d", i);
	bench_cycle c;
	const char *failed = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (!bench_cold_cycle(ops, self, &spec, thread, &c, &failed, &err))
		die(failed, &err);
	split[0][i] = c.acquire;
	split[1][i] = c.exec;
	split[2][i] = c.dispose;
	return c.acquire + c.exec + c.dispose;
}

/* The cold cycle of an instance's first start: nothing made ahead for it (msb/cgroup.h,
 * msb/netns.h), as for a one-shot `msb exec`. Opening and closing the instance is not timed. */
static double first_once(int i)
{
	msb_error err = MSB_ERROR_INIT;
	msb_backend *b = NULL;
	if (msb_backend_open(plugin, msb_config_doc_root(first_doc), NULL, NULL, &b, &err))
		die("open the bwrap plugin", &err);
	char thread[32];
	snprintf(thread, sizeof thread, "first-%d", i);
	bench_cycle c;
	const char *failed = NULL;
	if (!bench_cold_cycle(msb_backend_ops(b), msb_backend_instance_of(b), &spec, thread, &c,
			      &failed, &err))
		die(failed, &err);
	msb_backend_close(b);
	return c.acquire + c.exec + c.dispose;
}

int main(void)
{
	if (system("bwrap --unshare-all --ro-bind / / true 2>/dev/null") != 0) {
		printf("skip: bwrap cannot make its namespaces here\n");
		return 0;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* The state directory on tmpfs by default, as the driver's runtime-directory default
	 * intends (each create or unlink costs a millisecond on this machine's ext4); set
	 * MSB_BENCH_STATE_PARENT=/tmp to measure it on the disk. */
	const char *parent = getenv("MSB_BENCH_STATE_PARENT");
	struct stat st;
	if (!parent)
		parent = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	snprintf(state, sizeof state, "%s/msb-bench-bwrap-XXXXXX", parent);
	if (!mkdtemp(state))
		die("mkdtemp", NULL);
	bare_prepare();
	const char *host_mib = getenv("MSB_BENCH_HOST_MIB");
	size_t host_bytes = host_mib ? (size_t)strtoul(host_mib, NULL, 10) << 20 : 0;
	volatile char *host = host_bytes ? malloc(host_bytes) : NULL;
	for (size_t i = 0; host && i < host_bytes; i += 4096)
		host[i] = 1;
	msb_loader *loader = NULL;
	msb_backend *backend = NULL;
	msb_config_doc *doc = NULL;
	plugin_open(&loader, &backend, &doc);

	double bare[ROUNDS], bare_full[ROUNDS], bare_ahead[ROUNDS], bare_kill[ROUNDS], agent[ROUNDS],
		cold[ROUNDS], first[ROUNDS], warm[ROUNDS];
	bare_kill_prepare();
	bare_once(true, -1);
	cold_once(0); /* warm the page cache for both */
	for (int r = 0; r < ROUNDS; r++) {
		bare[r] = bare_once(false, -1);
		while (waitpid(-1, NULL, 0) > 0) /* the init bwrap left behind, unmeasured */
			;
		bare_full[r] = bare_once(true, -1);
		bare_ahead[r] = bare_ahead_once();
		bare_kill[r] = bare_kill_once(r);
		agent[r] = agent_once();
		cold[r] = cold_once(r);
		first[r] = first_once(r);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	/* MSB_BENCH_ROUNDS_OUT=FILE: every round's figures, before the medians take the noise
	 * out (a round's cold cycle and its baselines ran within ~20 ms of each other). */
	const char *rounds_out = getenv("MSB_BENCH_ROUNDS_OUT");
	FILE *rf = rounds_out ? fopen(rounds_out, "we") : NULL;
	for (int r = 0; rf && r < ROUNDS; r++)
		fprintf(rf, "bare %.3f bare_full %.3f agent %.3f cold %.3f acquire %.3f exec %.3f "
			"dispose %.3f\n", bare[r], bare_full[r], agent[r], cold[r], split[0][r],
			split[1][r], split[2][r]);
	if (rf)
		fclose(rf);
	msb_key key = { "bench", "warm", "a", "" };
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (ops->acquire(self, &key, &spec, &h, &err))
		die("acquire", &err);
	exec_true(h);
	for (int r = 0; r < ROUNDS; r++) {
		double t = bench_now_ms();
		for (int i = 0; i < WARM_N; i++)
			exec_true(h);
		warm[r] = (bench_now_ms() - t) / WARM_N;
	}
	ops->release(h);
	msb_disposal_failure f = { 0 };
	ops->dispose(self, &key, &f);
	msb_disposal_failure_free(&f);

	/* Each round's own ratio too: its cold cycle and baselines ran within ~20 ms of each
	 * other, so a drift of the machine's speed between rounds cancels out of it. */
	double per_round[ROUNDS];
	for (int r = 0; r < ROUNDS; r++)
		per_round[r] = cold[r] / (bare[r] + agent[r]);
	double pr = bench_median(per_round, ROUNDS);
	double b = bench_median(bare, ROUNDS), bf = bench_median(bare_full, ROUNDS),
	       ba = bench_median(bare_ahead, ROUNDS),
	       a = bench_median(agent, ROUNDS), c = bench_median(cold, ROUNDS),
	       w = bench_median(warm, ROUNDS);
	/* Context for the figures: other work on the machine shows in every hop of a cold start. */
	double load = -1;
	FILE *lf = fopen("/proc/loadavg", "re");
	if (lf) {
		if (fscanf(lf, "%lf", &load) != 1)
			load = -1;
		fclose(lf);
	}
	printf("(median of %d rounds; state dir in %s; load average %.2f on %ld CPUs; host %zu MiB "
	       "written)\n", ROUNDS, parent, load, sysconf(_SC_NPROCESSORS_ONLN), host_bytes >> 20);
	printf("bare bwrap <same flags> true     %8.3f ms\n", b);
	printf("bare, to nothing left            %8.3f ms\n", bf);
	printf("bare, to nothing left, its network namespace made ahead: %.3f ms\n", ba);
	printf("bare, killed by cgroup: kill to gone %6.3f ms   (no verified disposal takes less)\n",
	       bench_median(bare_kill, ROUNDS));
	printf("agent start on the host (HELLO)  %8.3f ms\n", a);
	printf("cold acquire+exec true+dispose   %8.3f ms   %.2fx (bare + agent)   target <= 1.10x\n", c,
	       c / (b + a));
	printf("                                              %.2fx (bare to nothing left + agent)\n",
	       c / (bf + a));
	printf("                                              %.2fx (median of each round's own ratio)\n",
	       pr);
	printf("                                              %.2fx (bare to nothing left, network "
	       "namespace made ahead, + agent)\n", c / (ba + a));
	printf("cold, an instance's first start  %8.3f ms   %.2fx (bare + agent): nothing made ahead\n",
	       bench_median(first, ROUNDS), bench_median(first, ROUNDS) / (b + a));
	printf("  acquire / first exec / dispose   %.3f / %.3f / %.3f ms\n",
	       bench_median(split[0], ROUNDS), bench_median(split[1], ROUNDS),
	       bench_median(split[2], ROUNDS));
	printf("warm exec true                   %8.3f ms   bare/warm %.1fx        target < 1 ms, >= 5x\n", w,
	       b / w);

	msb_backend_close(backend);
	msb_loader_free(loader);
	msb_config_doc_free(doc);
	msb_bwrap_argv_free(bare_argv);
	msb_bwrap_argv_free(ahead_argv);
	msb_config_doc_free(first_doc);
	msb_bwrap_argv_free(wait_argv);
	free((void *)host);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s; rmdir /sys/fs/cgroup/*/msb-bench/%s "
		 "/sys/fs/cgroup/*/msb-bench/%s-first /sys/fs/cgroup/*/msb-bench 2>/dev/null",
		 state, strrchr(state, '/') + 1, strrchr(state, '/') + 1);
	return system(cmd) == 0 ? 0 : 0;
}
