/*
 * main.c — msb-agent: the sandbox's resident supervisor, run inside the boundary.
 *
 * Statically linked against libc alone, so the same binary runs in a process sandbox, as
 * the command of a bubblewrap or gVisor container whose root has no libraries, and as a
 * microVM's /init. The command line is msb_agent_config_argv()'s (msb/agent.h).
 *
 * --listen (a socket path) and --listen-fd (a socket made by the launcher) serve each
 * connection in a process of its own (listen.c). The listening process is the child
 * subreaper that owns every command's leftovers, reaps them, and kills them all on SHUTDOWN
 * or SIGTERM.
 *
 * `msb-agent --reap` is another job for the same small static binary, outside the sandbox:
 * what a launcher's resident process execs once it has started its sandbox (bwrap's
 * keeper, gVisor's reaper). It only reaps, until no child is left, and can report one
 * child's status (reap_main). That process was a copy of the host or shared its memory, and
 * one that stays alive pins a copy of every page the host writes afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>
#include <msb/egress.h>
#include <msb/unix_socket.h>

#include "agent_internal.h"

agent_conf agent;

volatile sig_atomic_t agent_terminating;

static void on_term(int sig)
{
	(void)sig;
	agent_terminating = 1;
}

static void die(const char *fmt, ...) MSB_PRINTF(1, 2);
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "msb-agent: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

typedef struct options {
	const char *listen_path, *fds, *device;
	int listen_fd;
	int ready_fd;
	long uid, gid;
	size_t n_run_code;
	const char *egress_socket;     /* --egress-socket: the host proxy's (egress_forward.c) */
	agent_egress_transport egress_transport; /* --egress-transport fd|relay|mux|shared */
	char *egress_names[MSB_EGRESS_MAX_NAMES];
	size_t n_egress_names;
	unsigned egress_ports[MSB_EGRESS_MAX_PORTS];
	size_t n_egress_ports;
} options;

static uint64_t parse_u64(const char *flag, const char *v)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-')
		die("%s needs a whole number", flag);
	return (uint64_t)n;
}

static void push_run_code(options *o, const char *arg)
{
	char **v = realloc(agent.run_code, (o->n_run_code + 2) * sizeof *v);
	if (!v)
		die("%s", "out of memory");
	v[o->n_run_code++] = (char *)arg;
	v[o->n_run_code] = NULL;
	agent.run_code = v;
}

/* The image's Env: a name, '=', anything; at most 1024 entries. */
static void push_env(const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || agent.n_image_env >= 1024)
		die("--env needs NAME=VALUE (at most 1024): %.64s", arg);
	char **v = realloc(agent.image_env, (agent.n_image_env + 2) * sizeof *v);
	if (!v)
		die("%s", "out of memory");
	v[agent.n_image_env++] = (char *)arg;
	v[agent.n_image_env] = NULL;
	agent.image_env = v;
}

static void parse_args(int argc, char **argv, options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i];
		if (i + 1 >= argc)
			die("%s needs a value", f);
		const char *v = argv[++i];
		if (!strcmp(f, "--listen"))
			o->listen_path = v;
		else if (!strcmp(f, "--listen-fd"))
			o->listen_fd = (int)parse_u64(f, v);
		else if (!strcmp(f, "--fd"))
			o->fds = v;
		else if (!strcmp(f, "--device"))
			o->device = v;
		else if (!strcmp(f, "--work-dir"))
			agent.work_dir = v;
		else if (!strcmp(f, "--work-alias"))
			agent.work_alias = v;
		else if (!strcmp(f, "--ready-fd"))
			o->ready_fd = (int)parse_u64(f, v);
		else if (!strcmp(f, "--timeout"))
			agent.default_timeout_ms = (uint64_t)(strtod(v, NULL) * 1000.0);
		else if (!strcmp(f, "--max-output"))
			agent.default_max_output = parse_u64(f, v);
		else if (!strcmp(f, "--run-code"))
			push_run_code(o, v);
		else if (!strcmp(f, "--rlimit-cpu"))
			agent.rlimits.cpu_seconds = parse_u64(f, v);
		else if (!strcmp(f, "--rlimit-as"))
			agent.rlimits.as_bytes = parse_u64(f, v);
		else if (!strcmp(f, "--rlimit-nofile"))
			agent.rlimits.nofile = parse_u64(f, v);
		else if (!strcmp(f, "--rlimit-nproc"))
			agent.rlimits.nproc = parse_u64(f, v);
		else if (!strcmp(f, "--rlimit-fsize"))
			agent.rlimits.fsize_bytes = parse_u64(f, v);
		else if (!strcmp(f, "--path"))
			agent.path_env = v;
		else if (!strcmp(f, "--env"))
			push_env(v);
		else if (!strcmp(f, "--uid"))
			o->uid = (long)parse_u64(f, v);
		else if (!strcmp(f, "--gid"))
			o->gid = (long)parse_u64(f, v);
		else if (!strcmp(f, "--egress-socket"))
			o->egress_socket = v;
		else if (!strcmp(f, "--egress-transport")) {
			static const char *const words[] = { "fd", "relay", "mux", "shared" };
			size_t w = 0;
			while (w < 4 && strcmp(v, words[w]))
				w++;
			if (w == 4)
				die("%s takes fd, relay, mux or shared, not %s", f, v);
			o->egress_transport = (agent_egress_transport)w;
		}
		else if (!strcmp(f, "--egress-name") && o->n_egress_names < MSB_EGRESS_MAX_NAMES)
			o->egress_names[o->n_egress_names++] = (char *)v;
		else if (!strcmp(f, "--egress-port") && o->n_egress_ports < MSB_EGRESS_MAX_PORTS) {
			uint64_t port = parse_u64(f, v);
			if (port == 0 || port > 65535)
				die("%s needs a port number", f);
			o->egress_ports[o->n_egress_ports++] = (unsigned)port;
		} else
			die("unknown option %s", f);
	}
	if (!agent.work_dir || agent.work_dir[0] != '/')
		die("%s", "--work-dir needs an absolute directory");
	if (!!o->listen_path + (o->listen_fd >= 0) + !!o->fds + !!o->device != 1)
		die("%s", "exactly one of --listen, --listen-fd, --fd, --device is needed");
	if (!agent.default_timeout_ms)
		agent.default_timeout_ms = 60000;
	if (!agent.default_max_output)
		agent.default_max_output = 1024 * 1024;
	if (!agent.path_env)
		agent.path_env = "/usr/local/bin:/usr/bin:/bin";
	if (!agent.run_code)
		push_run_code(o, "sh");
	if (!o->egress_socket != !o->n_egress_ports)
		die("%s", "--egress-socket and --egress-port go together");
}

/*
 * The user the commands run as (an image's User, say) owns the work directory it writes in:
 * a root agent that will drop to another uid hands it over first, while it still can. Only
 * the directory itself: it was just made (a tmpfs, a fresh mount point), and a tree it held
 * would be the host's to own, not the guest's.
 */
static void hand_over_work_dir(const options *o)
{
	struct stat st;
	if (o->uid < 0 || geteuid() != 0 || stat(".", &st) < 0)
		return;
	if (st.st_uid == (uid_t)o->uid && (o->gid < 0 || st.st_gid == (gid_t)o->gid))
		return;
	if (chown(".", (uid_t)o->uid, o->gid >= 0 ? (gid_t)o->gid : (gid_t)-1) < 0)
		die("cannot hand the work dir %s to uid %ld: %s", agent.work_dir, o->uid,
		    strerror(errno));
}

/* Drop to the configured uid/gid, after everything that needed privilege is done. */
static void drop_privileges(const options *o)
{
	char why[128];
	if (agent_harden_caps(why, sizeof why) < 0)
		die("cannot make the agent unreachable from its commands: %s", why);
	if (o->gid >= 0 && (setgroups(0, NULL) < 0 || setgid((gid_t)o->gid) < 0))
		die("cannot drop to gid %ld: %s", o->gid, strerror(errno));
	if (o->uid >= 0 && setuid((uid_t)o->uid) < 0)
		die("cannot drop to uid %ld: %s", o->uid, strerror(errno));
	/* Last, after the id change (which resets the dumpable flag): see harden.c. */
	if (agent_harden_finish(why, sizeof why) < 0)
		die("cannot make the agent unreachable from its commands: %s", why);
}

static void drop_for_forwarder(const void *o)
{
	drop_privileges(o);
}

void agent_signal_ready(int fd)
{
	if (fd < 0)
		return;
	ssize_t n = write(fd, "R", 1);
	(void)n;
	close(fd);
}

/*
 * Owner only: whoever can connect can run commands as the agent. The socket is made before
 * any privilege drop, so the host (its owner) keeps the only way in.
 */
static int listen_on(const char *path)
{
	int fd = msb_unix_listen_owner_only(path);
	if (fd < 0)
		die("cannot listen on %s: %s", path, strerror(errno));
	return fd;
}

/*
 * --listen-fd: a socket the launcher made, bound and listening, e.g. one only the host's
 * user can connect to, or one that host connections were queued on before the agent ran.
 */
static int adopt_listener(int fd)
{
	int listening = 0;
	socklen_t len = sizeof listening;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening)
		die("--listen-fd %d is not a listening socket", fd);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

static int serve_listen(const options *o)
{
	int lfd = o->listen_path ? listen_on(o->listen_path) : adopt_listener(o->listen_fd);
	drop_privileges(o);
	int rc = agent_serve_listen(lfd, o->ready_fd);
	agent_bg_cleanup();
	if (o->listen_path)
		unlink(o->listen_path);
	return rc;
}

static int serve_fds(const options *o)
{
	int rfd, wfd;
	if (sscanf(o->fds, "%d,%d", &rfd, &wfd) != 2) {
		if (sscanf(o->fds, "%d", &rfd) != 1)
			die("--fd needs RFD or RFD,WFD, not %s", o->fds);
		wfd = rfd;
	}
	drop_privileges(o);
	agent_signal_ready(o->ready_fd);
	bool shutdown = false;
	agent_serve_stream(rfd, wfd, &shutdown);
	agent_kill_descendants();
	agent_bg_cleanup();
	return 0;
}

static int serve_device(const options *o)
{
	/*
	 * An agent that drops to another uid could not reopen its root-owned port: it opens it
	 * once, before, and keeps it (a port is open by one process at a time, so no command
	 * can take it between two host connections either).
	 */
	int held = -1;
	if (o->uid >= 0 && geteuid() == 0 &&
	    (held = open(o->device, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		die("cannot open %s: %s", o->device, strerror(errno));
	drop_privileges(o);
	agent_signal_ready(o->ready_fd);
	bool shutdown = false;
	/* A serial port outlives a host connection: serve it again after the peer goes. */
	while (!shutdown && !agent_terminating) {
		int fd = held >= 0 ? held : open(o->device, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			die("cannot open %s: %s", o->device, strerror(errno));
		unsigned long frames = agent_serve_stream(fd, fd, &shutdown);
		if (fd != held)
			close(fd);
		/* A port with no host on it reads as closed at once: do not spin on it. */
		if (frames == 0) {
			struct timespec ts = { 0, 100 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	agent_kill_descendants();
	agent_bg_cleanup();
	return 0;
}

/*
 * --reap: wait for every child until none is left (a child subreaper, which the caller set
 * and exec keeps, also gets the orphans of its descendants), then exit 0. With
 * `--status-fd N --status-of PID`, the wait status of child PID (an int, in the host's
 * order) is written to fd N the moment it is reaped, and N closed: how a launcher that
 * execs the reaper while its engine still runs (gVisor's, during `runsc run`) still
 * learns how the engine ended, without staying a copy of the host meanwhile.
 */
static int reap_all(int status_fd, pid_t status_of)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			return 0;
		if (pid == status_of && status_fd >= 0) {
			ssize_t n = write(status_fd, &status, sizeof status);
			(void)n;
			close(status_fd);
			status_fd = -1;
		}
	}
}

/* A whole decimal number in [min, max], or -1. */
static long whole_number(const char *s, long min, long max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	return errno || end == s || *end || v < min || v > max ? -1 : v;
}

/* msb-agent --reap [--status-fd N --status-of PID] */
static int reap_main(int argc, char **argv)
{
	if (argc == 2)
		return reap_all(-1, 0);
	bool shaped = argc == 6 && !strcmp(argv[2], "--status-fd") && !strcmp(argv[4], "--status-of");
	long fd = shaped ? whole_number(argv[3], 0, INT_MAX) : -1;
	long pid = shaped ? whole_number(argv[5], 1, INT_MAX) : -1;
	if (fd < 0 || pid < 0 || fcntl((int)fd, F_GETFD) < 0) {
		fprintf(stderr, "msb-agent: --reap takes nothing, or --status-fd <an open fd> "
				"--status-of <a child's pid>\n");
		return 2;
	}
	return reap_all((int)fd, (pid_t)pid);
}

/*
 * A launcher that execs the agent through /proc/self/fd/N (it opened the program before its
 * mounts could hide the path: the process backend) leaves it named "N": take the name of
 * argv[0] again, so `ps` and whoever looks for the agent by name find it.
 */
static void name_self(const char *argv0)
{
	char comm[17] = "";
	prctl(PR_GET_NAME, comm, 0, 0, 0);
	if (!comm[0] || strspn(comm, "0123456789") != strlen(comm))
		return;
	const char *base = strrchr(argv0, '/');
	prctl(PR_SET_NAME, base ? base + 1 : argv0, 0, 0, 0);
}

int main(int argc, char **argv)
{
	/* A launcher may exec us with signals blocked (a posix_spawn-like start does). */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (argc >= 2 && !strcmp(argv[1], "--reap"))
		return reap_main(argc, argv);
	options o = { .listen_fd = -1, .ready_fd = -1, .uid = -1, .gid = -1 };
	/*
	 * A closed 0, 1 or 2 would be reused by the first socket or pipe; fill it. (run.c copes
	 * without, for a boundary that has no /dev/null yet.)
	 */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0) {
			int n = open("/dev/null", O_RDWR);
			if (n > 2)
				close(n);
		}
	parse_args(argc, argv, &o);
	name_self(argv[0]);
	agent.supervisor = getpid();
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	agent.statx_fix = agent_statx_shim();
	if (mkdir(agent.work_dir, 0700) < 0 && errno != EEXIST)
		die("cannot create work dir %s", agent.work_dir);
	if (chdir(agent.work_dir) < 0)
		die("cannot enter work dir %s", agent.work_dir);
	hand_over_work_dir(&o);
	if (o.egress_socket && o.egress_transport != AGENT_EGRESS_SHARED) {
		if (agent_egress_start(o.egress_socket, o.egress_transport, o.egress_names, o.n_egress_names,
				       o.egress_ports, o.n_egress_ports, drop_for_forwarder, &o) < 0)
			die("%s", "the egress forwarder could not start");
	}
	agent.egress_proxy = o.egress_socket != NULL;
	if (o.listen_path || o.listen_fd >= 0)
		return serve_listen(&o);
	if (o.fds)
		return serve_fds(&o);
	return serve_device(&o);
}
