/*
 * process.c — the `process` backend (rung os_process): the guest agent as a daemon in its
 * own session, pid namespace and empty network namespace, each command a separate process.
 *
 * Honest about what it is: os_process, not container. It shares the host's kernel and,
 * read-only, the host's filesystem — a command can read whatever its uid can read on the
 * host. What it does draw: a separate process tree the host can kill whole (a pid namespace
 * whose init is the agent, so killing the agent kills everything in it) with a /proc of its
 * own (process_mounts.c), its own IPC namespace, resource limits (rlimits from config), a
 * scrubbed environment, its own disk (a size-limited tmpfs holding the work directory, at
 * the spec's work_dir, and /tmp), as root an unprivileged uid of its own per sandbox
 * (process_uid.c), commands with no capability and no_new_privs (the agent's harden.c), and
 * `egress: closed` enforced by an empty network namespace (loopback only: no route
 * anywhere, not even to the host's own loopback), and `egress: allowlist` through the SDK's
 * proxy (msb/egress.h): that namespace, a forwarder in the agent, a unix socket out (its
 * directory alone of the state directory bound into the sandbox, and its uid's alone).
 *
 * Everything else — the state directory, the key's lock, reuse, disposal, every sandbox
 * operation — is the SDK's driver (msb/driver.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/disk.h>
#include <msb/driver.h>
#include <msb/launch.h>
#include <msb/netns.h>

#include "process_mounts.h"
#include "process_uid.h"

/* The default range of per-sandbox uids: far above any distribution's users and apart from
 * bwrap's per-sandbox ids (1000000 and up). */
#define PROCESS_UID_BASE 2000000L
#define PROCESS_UID_COUNT 1000000L

typedef struct process_ctx {
	long uid, gid; /* -1: run as the host process's own user (uid: host, or msb unprivileged) */
	bool per_sandbox; /* as root, without uid: one uid of its own per sandbox, from the range */
	long uid_base, uid_count;
	uint64_t disk; /* the sandbox's disk ceiling (bytes) */
	msb_netns_spare *netns; /* the next sandbox's network namespace, made during this start */
} process_ctx;

static void ctx_free(void *p)
{
	process_ctx *pc = p;
	if (pc)
		msb_netns_spare_free(pc->netns);
	free(pc);
}

/*
 * The agent's own process — pid 1 of the new pid namespace, in the mount namespace the
 * launch made — before its exec: the sandbox's view of the host's tree (process_mounts.c),
 * then a /proc of its own, which also resolves the program's fd (see process_start).
 * Async-signal-safe: it may run on the host's memory (msb/launch.h).
 */
static int prepare(void *arg, const char **stage)
{
	errno = 0;
	if (process_view_build(arg, stage) < 0)
		return errno ? errno : EIO;
	*stage = "mounting its own /proc";
	return process_view_proc() < 0 ? (errno ? errno : EIO) : 0;
}

/*
 * The uid this sandbox runs as: its own from the range (as root, by default), the one
 * configured, or -1 (msb's own: `uid: host`, or msb unprivileged).
 */
static msb_errc sandbox_uid(const process_ctx *pc, const msb_driver_box *box, long *uid,
			    long *gid, msb_error *err)
{
	*uid = pc->uid;
	*gid = pc->gid;
	if (!pc->per_sandbox)
		return MSB_OK;
	msb_errc rc = process_uid_take(box, pc->uid_base, pc->uid_count, uid, err);
	*gid = *uid;
	return rc;
}

/*
 * The spec's work_dir becomes a mount point in the sandbox's mount namespace. Made on the
 * host when missing — which only root may do: unprivileged, a work_dir that is not there
 * already is refused rather than served at another path than the spec says.
 */
static msb_errc check_work_dir(const msb_driver_box *box, msb_error *err)
{
	const char *wd = box->spec->work_dir;
	struct stat st;
	if (!wd || wd[0] != '/' || strlen(wd) >= 4096)
		return msb_error_set(err, MSB_E_BACKEND, "backend process: refused spec %s: work_dir "
				     "must be an absolute path", box->spec->kind);
	if (geteuid() != 0 && (stat(wd, &st) != 0 || !S_ISDIR(st.st_mode)))
		return msb_error_set(err, MSB_E_BACKEND,
				     "backend process: refused spec %s: its work_dir %s does not exist "
				     "on this host and msb (uid %ld, not root) cannot make its mount "
				     "point; create the directory, or run msb as root",
				     box->spec->kind, wd, (long)geteuid());
	return MSB_OK;
}

/*
 * `egress: allowlist`: the directory of the host proxy's socket (<dir>/egress, into `dir`),
 * made this sandbox's alone. Its disk hides the state directory, so the sandbox reaches the
 * directory only through the bind process_mounts.c makes of it; the bind's root is this
 * directory itself, so its own mode is what the guest's uid meets — its owner, 0700: the
 * forwarder (the agent's uid) gets through, any other uid (another sandbox's, whatever path
 * it might find) is refused by the kernel, though the proxy makes px itself 0666 (and anew
 * at every acquire: the directory is the gate that lasts). The sandbox directory goes back to
 * owner-only: the driver opened it (0711) for boundaries whose guest walks the host's path.
 */
static msb_errc egress_dir_own(const msb_driver_box *box, long uid, long gid, char *dir,
			       size_t cap, msb_error *err)
{
	dir[0] = '\0';
	if (!box->egress_socket)
		return MSB_OK;
	const char *slash = strrchr(box->egress_socket, '/');
	size_t n = slash ? (size_t)(slash - box->egress_socket) : 0;
	if (!n || n >= cap)
		return msb_error_set(err, MSB_E_BACKEND, "backend process: sandbox %s: the egress "
				     "socket %s has no usable directory", box->name,
				     box->egress_socket);
	memcpy(dir, box->egress_socket, n);
	dir[n] = '\0';
	/* As root the guest runs as `uid` (the host's own when -1); unprivileged, as msb's own
	 * uid, the owner already. */
	if ((uid >= 0 && geteuid() == 0 && chown(dir, (uid_t)uid, (gid_t)gid) < 0) ||
	    chmod(dir, 0700) < 0 || chmod(box->dir, 0700) < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend process: sandbox %s: "
					   "making %s its own", box->name, dir);
	return MSB_OK;
}

static msb_errc process_start(void *ctx, const msb_driver_box *box, msb_error *err)
{
	const process_ctx *pc = ctx;
	/*
	 * A process shares the host's filesystem: the host's is the one image it can run. The
	 * router refuses any other at route time (the descriptor's `images`); this is for a
	 * host that calls the plugin without a router.
	 */
	const char *image = box->spec->image;
	if (image && *image && strcmp(image, "host"))
		return msb_error_set(err, MSB_E_VALUE, "backend process: image \"%s\" refused: a "
				     "process sandbox runs on the host's filesystem, so only "
				     "\"host\" or no image can run here", image);
	long uid, gid;
	msb_errc rc = check_work_dir(box, err);
	if (rc == MSB_OK)
		rc = sandbox_uid(pc, box, &uid, &gid, err);
	if (rc != MSB_OK)
		return rc;
	msb_agent_config cfg = box->config->agent;
	cfg.work_dir = box->spec->work_dir; /* really there, in the sandbox's mount namespace */
	cfg.work_alias = NULL;
	cfg.uid = uid;
	cfg.gid = gid;
	process_view view = { .state_dir = box->config->state_dir, .work_dir = box->spec->work_dir,
			      .uid = uid >= 0 ? (uid_t)uid : 0, .gid = gid >= 0 ? (gid_t)gid : 0 };
	snprintf(view.disk_opts, sizeof view.disk_opts, "size=%llu,mode=0755",
		 (unsigned long long)pc->disk);
	msb_driver_egress_agent_config(box, &cfg);
	char egress_dir[4200];
	rc = egress_dir_own(box, uid, gid, egress_dir, sizeof egress_dir, err);
	if (rc != MSB_OK)
		return rc;
	view.egress_dir = egress_dir[0] ? egress_dir : NULL;
	char **argv = NULL;
	char listen_fd[16];
	snprintf(listen_fd, sizeof listen_fd, "%d", MSB_LAUNCH_LISTEN_FD);
	rc = msb_agent_config_argv(box->config->agent_path, "--listen-fd", listen_fd, &cfg, -1, &argv,
				   err);
	if (rc != MSB_OK)
		return rc;
	/* The agent's program, opened before the sandbox's mounts may hide its path (an agent
	 * under /tmp or the state directory): handed in as fd 5 and exec'd by that. */
	int program = open(argv[0], O_PATH | O_CLOEXEC);
	if (program < 0) {
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend process: sandbox %s: "
					 "exec %s failed: it cannot be opened", box->name, argv[0]);
		free(argv);
		return rc;
	}
	/* Unprivileged: a user namespace maps msb's uid to root inside, so it may own a netns. */
	char uid_map[64], gid_map[64];
	snprintf(uid_map, sizeof uid_map, "0 %ld 1\n", (long)geteuid());
	snprintf(gid_map, sizeof gid_map, "0 %ld 1\n", (long)getegid());
	msb_launch l = MSB_LAUNCH_INIT;
	l.argv = argv;
	l.exec_path = "/proc/self/fd/5";
	l.keep_fds = &program;
	l.n_keep_fds = 1;
	if (geteuid() != 0)
		l.uid_map = uid_map, l.gid_map = gid_map;
	/* The empty network namespace is what `egress: closed` means here: the one made ahead,
	 * its loopback up already, or a new one. The next start's is made on a thread of its
	 * own meanwhile (msb/netns.h). */
	l.netns_fd = msb_netns_spare_take(pc->netns);
	msb_netns_spare_refill(pc->netns);
	l.unshare_flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET;
	l.prepare = prepare;
	l.prepare_arg = &view;
	rc = msb_launch_agent(box, &l, err);
	if (rc != MSB_OK)
		msb_error_prefix(err, "backend process: ");
	if (l.netns_fd >= 0)
		close(l.netns_fd);
	close(program);
	free(argv);
	return rc;
}

/*
 * The driver SIGKILLs the recorded pid after this (pid_ends_all): the agent is its pid
 * namespace's init, and the kernel kills everything in the namespace — daemons that left
 * their command's session included — before the init itself is gone. Nothing else of this
 * boundary outlives it (no mounts, no cgroups).
 */
static bool process_stop(void *ctx, const msb_driver_box *box, msb_disposal_failure *failure)
{
	(void)ctx, (void)failure;
	/*
	 * The uid goes back only once nothing runs as it: the agent (its pid namespace's init,
	 * whose death takes every process in the namespace first) is killed here, before the
	 * driver's own SIGKILL, and waited for (bounded; a zombie init has no live member left).
	 */
	pid_t pid = msb_driver_read_live_pid(box);
	/* Opened before the kill, after the start time was checked: this process, not a
	 * recycled pid; readable the moment it is gone, though it is not our child. */
	int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (pid > 0 && kill(pid, SIGKILL) == 0) {
		struct pollfd pf = { .fd = pidfd, .events = POLLIN };
		for (int i = 0; i < 500 && msb_driver_pid_running(pid); i++)
			if (pidfd < 0 || poll(&pf, 1, 5000) <= 0)
				usleep(1000);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (pid <= 0 || !msb_driver_pid_running(pid))
		process_uid_release(box);
	return false; /* nothing left that the driver's SIGKILL does not end */
}

/*
 * The kernel never applies RLIMIT_NPROC to uid 0's processes (copy_process exempts root), and
 * this boundary has no cgroup to fall back on: a process limit for commands that run as root
 * would hold nothing, so it is refused rather than kept as a promise.
 */
static msb_errc process_configure(void *ctx, const msb_node *config, const msb_driver_config *driver,
				  msb_error *err)
{
	const process_ctx *pc = ctx;
	bool as_root = pc->per_sandbox ? false : pc->uid >= 0 ? pc->uid == 0 : geteuid() == 0;
	if (driver->agent.rlimits.nproc && as_root)
		return msb_node_error(err, msb_node_get(config, "rlimit_nproc"), MSB_E_CONFIG,
				      "rlimit_nproc would bind nothing: the commands run as root, whose "
				      "processes the kernel exempts from it; leave uid: unset (a uid of "
				      "its own per sandbox) or set it to an unprivileged uid, or leave "
				      "rlimit_nproc unset");
	return MSB_OK;
}

/* uid_range: "FIRST-LAST", both whole numbers, 0 < FIRST <= LAST < 2^31. */
static msb_errc read_uid_range(const msb_node *config, process_ctx *pc, msb_error *err)
{
	const char *text = NULL;
	msb_errc rc = msb_node_string(config, "uid_range", &text, err);
	if (rc != MSB_OK || !text)
		return rc;
	char *end;
	errno = 0;
	long long first = strtoll(text, &end, 10), last = -1;
	if (!errno && end != text && *end == '-' && end[1] >= '0' && end[1] <= '9') {
		const char *from = end + 1;
		last = strtoll(from, &end, 10);
	}
	if (errno || *end || first <= 0 || last < first || last > 0x7fffffff)
		return msb_node_error(err, msb_node_get(config, "uid_range"), MSB_E_CONFIG,
				      "expected FIRST-LAST, two unprivileged uids (0 < FIRST <= LAST <= "
				      "2147483647), e.g. 2000000-2999999");
	pc->uid_base = (long)first;
	pc->uid_count = (long)(last - first + 1);
	return MSB_OK;
}

/*
 * uid: absent — as root, a uid of its own per sandbox (uid_range); unprivileged, msb's own
 * (mapped to root of a user namespace it alone is in). `host` — msb's own, written out
 * because as root it means commands run as uid 0 (without capabilities). A number — that
 * one uid for every sandbox (as root only).
 */
static msb_errc read_ids(const msb_node *config, process_ctx *pc, msb_error *err)
{
	const msb_node *u = msb_node_get(config, "uid");
	uint64_t uid = UINT64_MAX, gid = UINT64_MAX;
	bool host = u && u->kind == MSB_NODE_SCALAR && !strcmp(u->scalar, "host");
	msb_errc rc = host ? MSB_OK : msb_node_uint(config, "uid", &uid, err);
	if (rc == MSB_OK)
		rc = msb_node_uint(config, "gid", &gid, err);
	if (rc == MSB_OK && uid != UINT64_MAX && geteuid() != 0)
		rc = msb_node_error(err, u, MSB_E_CONFIG,
				    "uid needs msb to run as root (it runs as uid %ld)",
				    (long)geteuid());
	if (rc == MSB_OK && ((uid != UINT64_MAX && uid > 0x7fffffff) ||
			     (gid != UINT64_MAX && gid > 0x7fffffff)))
		rc = msb_node_error(err, msb_node_get(config, uid > 0x7fffffff ? "uid" : "gid"),
				    MSB_E_CONFIG, "not a valid id");
	if (rc == MSB_OK && gid != UINT64_MAX && uid == UINT64_MAX)
		rc = msb_node_error(err, msb_node_get(config, "gid"), MSB_E_CONFIG,
				    "gid goes with a numeric uid (a per-sandbox uid has the gid of the "
				    "same number; uid: host keeps msb's own)");
	if (rc == MSB_OK)
		rc = read_uid_range(config, pc, err);
	if (rc == MSB_OK && msb_node_get(config, "uid_range") && (host || uid != UINT64_MAX))
		rc = msb_node_error(err, msb_node_get(config, "uid_range"), MSB_E_CONFIG,
				    "uid_range is for per-sandbox uids: it cannot go with uid: %s",
				    host ? "host" : u->scalar);
	if (rc != MSB_OK)
		return rc;
	pc->uid = uid == UINT64_MAX ? -1 : (long)uid;
	pc->gid = gid == UINT64_MAX ? pc->uid : (long)gid;
	pc->per_sandbox = !host && uid == UINT64_MAX && geteuid() == 0;
	return MSB_OK;
}

static msb_errc process_adopted(void *ctx, const char *old_dir, const msb_driver_box *box,
			       msb_error *err)
{
	(void)ctx;
	return process_uid_moved(old_dir, box, err);
}

static msb_errc process_init(const msb_node *config, const msb_host *host,
			     msb_backend_instance **self, msb_error *err)
{
	static const char *const keys[] = { "uid", "gid", "uid_range", "disk", NULL };
	process_ctx *pc = calloc(1, sizeof *pc);
	if (!pc)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	pc->uid_base = PROCESS_UID_BASE;
	pc->uid_count = PROCESS_UID_COUNT;
	pc->disk = MSB_DISK_DEFAULT;
	msb_errc rc = read_ids(config, pc, err);
	if (rc == MSB_OK)
		rc = msb_disk_read(config, "process", &pc->disk, err);
	if (rc == MSB_OK)
		rc = msb_netns_spare_new(&pc->netns, err);
	if (rc != MSB_OK) {
		free(pc);
		return rc;
	}
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = "process";
	b.ctx = pc;
	b.ctx_free = ctx_free;
	b.start = process_start;
	b.stop = process_stop;
	b.pid_ends_all = true; /* the agent is its pid namespace's init */
	b.configure = process_configure;
	/* The egress socket's directory is bound back at its own path (process_mounts.c). */
	b.egress = true;
	/*
	 * Warm pools (issue 22): the agent listens on a socket made at start, the work dir is
	 * bound into its mount namespace by fd, and the uid record follows the rename.
	 */
	b.adoptable = true;
	b.adopted = process_adopted;
	return msb_driver_init(&b, config, host, keys, self, err);
}

MSB_BACKEND_DEFINE(
	.name = "process",
	/* os_process: a separate process tree, sharing the host's kernel and filesystem. */
	.isolation = "os_process",
	.declarations = MSB_DRIVER_EGRESS_DECLARATIONS,
	.init = process_init,
	MSB_DRIVER_OPERATIONS,
	.adopt = msb_driver_adopt,
	/* The host's filesystem is the one root it has: any other image is refused at route
	 * time by the router (SandboxCapabilityNotSupported), before a sandbox is started. */
	.images = MSB_WORDS("host"));
