/*
 * bwrap.c — the `bwrap` backend (rung `container`): a boundary driver for msb/driver.h.
 *
 * Each sandbox is a long-lived bubblewrap whose command is the static guest agent; the
 * driver does everything else (names, state directory, the cross-process lock, forwarding
 * operations, disposal bookkeeping). This file supplies the boundary: start (cgroup, layout,
 * seccomp, launch) and stop (kill by cgroup, remove it).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/cgroup.h>
#include <msb/driver.h>
#include <msb/netns.h>

#include "bwrap_argv.h"
#include "bwrap_config.h"
#include "bwrap_launch.h"
#include "bwrap_seccomp.h"

typedef struct bwrap_ctx {
	msb_bwrap_config cfg;
	msb_buf bpf; /* the compiled seccomp filter, built once per instance */
	msb_cgroup_spare *spare; /* the next sandbox's cgroup, made during this one's start */
	msb_netns_spare *netns;  /* and its network namespace */
} bwrap_ctx;

static void ctx_free(void *p)
{
	bwrap_ctx *ctx = p;
	if (!ctx)
		return;
	msb_cgroup_spare_free(ctx->spare);
	msb_netns_spare_free(ctx->netns);
	msb_bwrap_config_free(&ctx->cfg);
	msb_buf_free(&ctx->bpf);
	free(ctx);
}

static void path_in(char *out, size_t n, const msb_driver_box *box, const char *leaf)
{
	snprintf(out, n, "%s/%s", box->dir, leaf);
}

/*
 * bwrap resolves a --bind-fd source back to its path and opens that as the sandbox's user,
 * so that user must be able to traverse down to the box directory. Search permission alone
 * (o+x, never o+r) is added to msb's own directories on the way: the state directory and
 * below, and an ancestor named msb* (the driver's defaults, /run/msb and /var/lib/msb, are
 * made 0700). Any other directory is the operator's and is never changed: one that is not
 * searchable is refused, naming it. The work directory stays 0700 and belongs to the
 * sandbox's user.
 */
static msb_errc make_traversable(const msb_driver_box *box, long uid, msb_error *err)
{
	const char *state = box->config->state_dir;
	size_t state_len = strlen(state);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", box->dir);
	for (char *slash = path + strlen(path); slash; slash = strrchr(path, '/')) {
		*slash = '\0';
		if (slash == path)
			break; /* "/" itself */
		struct stat st;
		if (stat(path, &st) != 0)
			return msb_error_set_errno(err, MSB_E_OS, errno, "bwrap: cannot stat %s", path);
		if (st.st_mode & S_IXOTH)
			continue;
		const char *base = strrchr(path, '/') + 1;
		bool ours = (strlen(path) >= state_len && strncmp(path, state, state_len) == 0) ||
			    strncmp(base, "msb", 3) == 0;
		if (!ours || st.st_uid != geteuid() || chmod(path, (st.st_mode & 07777) | S_IXOTH) != 0)
			return msb_error_set(err, MSB_E_BACKEND,
					     "bwrap: %s is not searchable by the sandbox's user (uid %ld), which "
					     "bwrap needs to bind the sandbox's directories; choose a state_dir "
					     "below searchable directories",
					     path, uid);
	}
	return MSB_OK;
}

/*
 * The box directory and the work directory, owned as needed. The agent's socket is made by
 * the launch (bwrap_launch.c) at box->socket_path, in the box directory, which nothing in
 * the sandbox can reach: the guest has no path to it to replace or redirect, and only msb's
 * user can connect to it. It reaches the agent as an open listening socket (--listen-fd).
 */
static msb_errc prepare_dirs(const msb_driver_box *box, long uid, long gid, msb_error *err)
{
	if (uid < 0)
		return MSB_OK;
	msb_errc rc = make_traversable(box, uid, err);
	if (rc)
		return rc;
	if (chmod(box->dir, 0711) != 0 || chown(box->work_dir, (uid_t)uid, (gid_t)gid) != 0)
		return msb_error_set_errno(err, MSB_E_OS, errno,
					   "bwrap: cannot hand %s to the sandbox's user %ld", box->dir, uid);
	return MSB_OK;
}

/* A cgroup left by an earlier start of this box (one that died) is ended first. */
static msb_errc clear_stale_cgroup(const bwrap_ctx *ctx, const msb_driver_box *box, msb_error *err)
{
	char file[PATH_MAX];
	path_in(file, sizeof file, box, "cgroup");
	msb_cgroup *old = NULL;
	if (msb_cgroup_load(file, &old, NULL) != MSB_OK)
		return MSB_OK;
	msb_errc rc = msb_cgroup_destroy(old, ctx->cfg.stop_timeout, err);
	msb_cgroup_free(old);
	if (!rc)
		unlink(file);
	return rc;
}

typedef struct start_state {
	int fds[MSB_BWRAP_FD_COUNT];
	int log_fd;   /* bwrap's stdout and stderr: the write end of a pipe only start reads */
	int err_fd;   /* our (read) end of it */
	msb_agent_client *client; /* greeting the agent from launch on */
	char **agent_argv;
	char **argv;
	msb_cgroup *cgroup;
	int netns_fd; /* the network namespace made ahead, if any: the launch joins it */
} start_state;

static void start_state_free(start_state *s)
{
	for (int i = 0; i < MSB_BWRAP_FD_COUNT; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	if (s->log_fd >= 0)
		close(s->log_fd);
	if (s->err_fd >= 0)
		close(s->err_fd);
	msb_agent_client_close(s->client);
	free(s->agent_argv);
	msb_bwrap_argv_free(s->argv);
	msb_cgroup_free(s->cgroup);
	if (s->netns_fd >= 0)
		close(s->netns_fd);
}

static msb_errc open_path(const char *path, int flags, int *fd, msb_error *err)
{
	*fd = open(path, flags | O_CLOEXEC);
	if (*fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "bwrap: cannot open %s", path);
	return MSB_OK;
}

static msb_errc open_files(const bwrap_ctx *ctx, const msb_driver_box *box, start_state *s,
			   msb_error *err)
{
	msb_errc rc = msb_bwrap_seccomp_fd(&ctx->bpf, &s->fds[0], err);
	if (!rc)
		/* The work directory is a tmpfs inside (disk:); its slot holds /dev/null, so no
		 * fd of a host directory reaches the sandbox. */
		rc = open_path("/dev/null", O_RDONLY, &s->fds[1], err);
	if (!rc)
		rc = open_path(box->config->agent_path, O_PATH, &s->fds[2], err);
	/*
	 * No host file is handed to the sandbox as its output: bwrap's (and so the agent's)
	 * stdout and stderr are a pipe that start alone reads, for the reason a start failed,
	 * and closes once the agent answers. A log file there would be a host file every process
	 * of the sandbox could reopen through /proc/1/fd when it runs as msb's own user.
	 */
	int errpipe[2];
	if (!rc && pipe2(errpipe, O_CLOEXEC) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "bwrap: cannot create a pipe");
	if (!rc) {
		s->err_fd = errpipe[0];
		s->log_fd = errpipe[1];
	}
	return rc;
}

static msb_errc build_argv(const bwrap_ctx *ctx, const msb_driver_box *box, const char *root,
			   start_state *s, msb_error *err)
{
	char listen_fd[16];
	snprintf(listen_fd, sizeof listen_fd, "%d", MSB_BWRAP_FD_LISTEN);
	/* The image's User is the sandbox's own uid in bwrap's user namespace (--uid below),
	 * so the agent starts as it and has nothing to drop. */
	msb_driver_box as_is = *box;
	as_is.has_image_user = false;
	msb_errc rc = msb_driver_agent_argv(&as_is, "--listen-fd", listen_fd, box->spec->work_dir,
					    NULL, -1, &s->agent_argv, err);
	if (rc)
		return rc;
	/* The agent is bound into the sandbox; its host path means nothing there. */
	s->agent_argv[0] = (char *)MSB_BWRAP_GUEST_AGENT;
	char egress_dir[PATH_MAX] = "", egress_hosts[PATH_MAX + 8] = "";
	if (box->egress_socket) {
		snprintf(egress_dir, sizeof egress_dir, "%s", box->egress_socket);
		char *slash = strrchr(egress_dir, '/');
		if (slash)
			*slash = '\0';
		snprintf(egress_hosts, sizeof egress_hosts, "%s/" MSB_EGRESS_HOSTS_LEAF, egress_dir);
		/* The forwarder's low ports are opened in a namespace made here, then joined. */
		rc = s->netns_fd < 0 ? msb_netns_make(&s->netns_fd, err) : MSB_OK;
		if (!rc)
			rc = msb_egress_netns_low_ports(s->netns_fd, err);
		if (rc)
			return rc;
	}
	msb_bwrap_layout layout = {
		.egress_dir = egress_dir[0] ? egress_dir : NULL,
		.egress_hosts = egress_hosts[0] ? egress_hosts : NULL,
		.image_root = root,
		.work_guest = box->spec->work_dir,
		.work_fd = MSB_BWRAP_FD_WORK,
		.agent_fd = MSB_BWRAP_FD_AGENT,
		.seccomp_fd = MSB_BWRAP_FD_SECCOMP,
		.tmp_size = ctx->cfg.tmp_size,
		.work_disk = ctx->cfg.disk,
		.netns_joined = s->netns_fd >= 0,
		.sandbox_ids = box->has_image_user,
		.sandbox_uid = box->image_uid,
		.sandbox_gid = box->image_gid,
	};
	return msb_bwrap_argv(ctx->cfg.bwrap, &layout, (const char *const *)s->agent_argv, &s->argv, err);
}

/* The greeting's meanwhile (see record_and_greet): the next start's cgroup and network
 * namespace. */
static void refill_spares(void *p)
{
	bwrap_ctx *ctx = p;
	msb_cgroup_spare_refill(ctx->spare);
	msb_netns_spare_refill(ctx->netns);
}

/*
 * Greet the agent while bwrap builds the sandbox: the connection waits in the socket's queue
 * until the agent accepts it, so the answer comes the moment the agent serves. bwrap's
 * stderr is the death watch (every process of the sandbox holds it), and what bwrap wrote
 * there says why a sandbox died. The pid is recorded first, when msb would otherwise wait;
 * a bwrap that failed at once is still reported in its own words, not as a pid that could
 * not be recorded because it was already gone.
 */
static msb_errc record_and_greet(bwrap_ctx *ctx, const msb_driver_box *box, start_state *s, pid_t pid,
				 msb_error *err)
{
	msb_error pid_err = MSB_ERROR_INIT;
	msb_errc recorded = msb_driver_write_pid(box, pid, &pid_err);
	/* Our copy of the write end; the sandbox holds its own. */
	close(s->log_fd);
	s->log_fd = -1;
	char said[1024] = "";
	bool died = false;
	msb_error why = MSB_ERROR_INIT;
	/* bwrap builds the sandbox for ~5 ms: the next start's spares are made meanwhile, once
	 * the greeting is queued, so however long that takes it never holds the answer back. */
	msb_errc rc = msb_agent_client_greet_meanwhile(box->socket_path, s->err_fd,
						       box->config->start_timeout, refill_spares,
						       ctx, said, sizeof said, &died, &s->client,
						       &why);
	said[strcspn(said, "\n")] = '\0';
	if (rc == MSB_OK) {
		if ((rc = recorded))
			msb_error_move(err, &pid_err);
	} else if (died) {
		rc = msb_error_set(err, MSB_E_BACKEND, "bwrap: sandbox %s: the sandbox exited before its "
				   "agent answered%s%s", box->name, said[0] ? ": " : "", said);
	} else if (rc == MSB_E_TIMEOUT) {
		rc = msb_error_set(err, MSB_E_BACKEND, "bwrap: sandbox %s: the agent did not answer "
				   "within %.1f s%s%s", box->name, box->config->start_timeout,
				   said[0] ? ": " : "", said);
	} else {
		msb_error_move(err, &why);
		rc = msb_error_prefix(err, "bwrap: sandbox %s: ", box->name);
	}
	msb_error_clear(&why);
	msb_error_clear(&pid_err);
	return rc;
}

/*
 * The sandbox's cgroup: the spare made during an earlier start, its limits already written
 * (*limited), or else one made now, named after the sandbox, whose limits launch_limited
 * writes.
 */
static msb_errc take_cgroup(bwrap_ctx *ctx, const msb_driver_box *box, msb_cgroup **cg,
			    bool *limited, msb_error *err)
{
	*limited = (*cg = msb_cgroup_spare_take(ctx->spare)) != NULL;
	if (*limited)
		return MSB_OK;
	msb_errc rc = msb_cgroup_prepare(ctx->cfg.cgroup_parent, box->name, &ctx->cfg.limits, cg, err);
	if (rc == MSB_E_OS && geteuid() != 0)
		msb_error_prefix(err, "bwrap: sandbox %s: its limits need cgroups msb cannot create "
				 "as a non-root user (config memory: 0, pids: 0, cpus: 0 runs without "
				 "them): ", box->name);
	return rc;
}

/*
 * Launch bwrap, and write the cgroup's limits while it starts (unless `cgroup` is NULL: a
 * spare's are written): bwrap is born in the cgroup, but the limits come a moment later,
 * while bubblewrap (msb's own code, and then the agent) builds the sandbox. They are in
 * force before start waits for the agent, so before any command can reach it. A launch
 * that failed is reported in its own words before a limit that could not be written.
 */
static msb_errc launch_limited(const msb_bwrap_launch *launch, const msb_cgroup *cgroup, pid_t *pid,
			       msb_error *err)
{
	msb_bwrap_launching launching;
	msb_errc rc = msb_bwrap_launch_start(launch, &launching, err);
	if (rc)
		return rc;
	msb_error limit_err = MSB_ERROR_INIT;
	msb_errc limits = cgroup ? msb_cgroup_apply(cgroup, &limit_err) : MSB_OK;
	rc = msb_bwrap_launch_finish(&launching, pid, err);
	if (!rc && limits) {
		rc = limits;
		msb_error_move(err, &limit_err);
	}
	msb_error_clear(&limit_err);
	return rc;
}

/* A sandbox is of the image root it started from: a re-imported image is a new one. */
static msb_errc bwrap_identity(void *p, const msb_spec *spec, char *out, size_t size,
			       msb_error *err)
{
	const bwrap_ctx *ctx = p;
	return msb_images_identity(&ctx->cfg.images, "bwrap", spec->image, out, size, err);
}

/* The store image's digest (msb/backend.h image_digest), for the observer and the router. */
static msb_errc bwrap_image_digest(void *p, const msb_spec *spec, char *out, size_t size,
				msb_error *err)
{
	const bwrap_ctx *ctx = p;
	return msb_images_digest(&ctx->cfg.images, spec->image, out, size, err);
}

/* The store image's Env, for every command the agent runs (msb/image.h). */
static msb_errc bwrap_image_config(void *p, const msb_spec *spec, const char *const **env,
				msb_error *err)
{
	const bwrap_ctx *ctx = p;
	return msb_images_env(&ctx->cfg.images, spec->image, env, err);
}

/* The store image's User, as the uid and gid inside the sandbox's user namespace. */
static msb_errc bwrap_image_user(void *p, const msb_spec *spec, long *uid, long *gid,
				 msb_error *err)
{
	const bwrap_ctx *ctx = p;
	return msb_images_user(&ctx->cfg.images, spec->image, uid, gid, err);
}

static msb_errc bwrap_start(void *p, const msb_driver_box *box, msb_error *err)
{
	bwrap_ctx *ctx = p;
	const char *root = NULL;
	msb_errc rc = msb_images_resolve(&ctx->cfg.images, "bwrap", box->spec->image, &root, err);
	if (rc)
		return rc;
	start_state s = { .fds = { -1, -1, -1 }, .log_fd = -1, .err_fd = -1, .netns_fd = -1 };
	char cgfile[PATH_MAX];
	path_in(cgfile, sizeof cgfile, box, "cgroup");
	rc = clear_stale_cgroup(ctx, box, err);
	long uid, gid;
	msb_bwrap_config_ids(&ctx->cfg, box->name, &uid, &gid);
	if (!rc)
		rc = prepare_dirs(box, uid, gid, err);
	if (!rc)
		rc = open_files(ctx, box, &s, err);
	if (!rc) {
		s.netns_fd = msb_netns_spare_take(ctx->netns);
		rc = build_argv(ctx, box, root, &s, err);
	}
	bool limited = false;
	if (!rc)
		rc = take_cgroup(ctx, box, &s.cgroup, &limited, err);
	/* Saved before anything joins it, so a crash from here on still leaves disposal the list. */
	if (!rc)
		rc = msb_cgroup_save(s.cgroup, cgfile, err);
	pid_t pid = 0;
	if (!rc) {
		msb_bwrap_launch launch = {
			.argv = s.argv,
			.listen_path = box->socket_path,
			.log_fd = s.log_fd,
			.cgroup = s.cgroup,
			.netns_fd = s.netns_fd,
			.uid = uid,
			.gid = gid,
			.reaper = box->config->agent_path,
		};
		memcpy(launch.fds, s.fds, sizeof launch.fds);
		rc = launch_limited(&launch, limited ? NULL : s.cgroup, &pid, err);
	}
	if (!rc)
		rc = record_and_greet(ctx, box, &s, pid, err);
	if (!rc && box->greeted) {
		*box->greeted = s.client;
		s.client = NULL;
	}
	if (rc && s.cgroup && msb_cgroup_destroy(s.cgroup, ctx->cfg.stop_timeout, NULL) == MSB_OK)
		unlink(cgfile);
	start_state_free(&s);
	return rc;
}

/*
 * Everything of the sandbox is in its cgroup and nothing else is (its keeper, bwrap, bwrap's
 * init and what they start), so one kill by cgroup ends it all at once:
 * the driver need not ask the agent to SHUTDOWN first (pid_ends_all, below). Without a
 * cgroup, the driver's SIGKILL of bwrap does it: bwrap's death takes its init (by
 * --die-with-parent), and the init's death the pid namespace.
 */
static bool bwrap_stop(void *p, const msb_driver_box *box, msb_disposal_failure *failure)
{
	const bwrap_ctx *ctx = p;
	char file[PATH_MAX];
	path_in(file, sizeof file, box, "cgroup");
	msb_cgroup *cg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_cgroup_load(file, &cg, &err);
	if (rc == MSB_E_NOT_FOUND) {
		msb_error_clear(&err);
		return false; /* never got as far as a cgroup: nothing of ours to end */
	}
	if (!rc)
		rc = msb_cgroup_destroy(cg, ctx->cfg.stop_timeout, &err);
	msb_cgroup_free(cg);
	if (!rc)
		unlink(file);
	else
		msb_disposal_failure_set(failure, rc == MSB_E_TIMEOUT ? MSB_DISPOSAL_TIMEOUT : MSB_DISPOSAL_UNKNOWN,
					 "bwrap: sandbox %s: %s", box->name, msb_error_message(&err));
	msb_error_clear(&err);
	return rc != MSB_OK; /* true: failed (msb/driver.h) */
}

static msb_errc bwrap_init(const msb_node *config, const msb_host *host, msb_backend_instance **self,
			   msb_error *err)
{
	bwrap_ctx *ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return msb_error_set(err, MSB_E_NOMEM, "bwrap: out of memory");
	msb_errc rc = msb_bwrap_config_read(config, &ctx->cfg, err);
	if (!rc)
		rc = msb_bwrap_seccomp_compile(&ctx->bpf, err);
	if (!rc)
		rc = msb_cgroup_spare_new(ctx->cfg.cgroup_parent, &ctx->cfg.limits, &ctx->spare, err);
	if (!rc)
		rc = msb_netns_spare_new(&ctx->netns, err);
	/* Spares a host left when it died (msb/cgroup.h): nothing else would remove them. */
	if (!rc)
		msb_cgroup_spares_sweep(ctx->cfg.cgroup_parent);
	if (rc) {
		ctx_free(ctx);
		return rc;
	}
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = "bwrap";
	b.ctx = ctx;
	b.ctx_free = ctx_free;
	b.start = bwrap_start;
	b.stop = bwrap_stop;
	b.pid_ends_all = true;
	b.identity = bwrap_identity;
	b.image_digest = bwrap_image_digest;
	b.image_config = bwrap_image_config;
	b.image_user = bwrap_image_user;
	/* The proxy's socket directory is bound in (bwrap_argv.c); the namespace is loopback. */
	b.egress = true;
	/*
	 * Warm pools (issue 22): the agent's socket and the work dir's bind were made at start,
	 * and the cgroup is found through <dir>/cgroup, so a renamed sandbox runs on unchanged.
	 */
	b.adoptable = true;
	static const char *const keys[] = { MSB_BWRAP_CONFIG_KEYS, NULL };
	return msb_driver_init(&b, config, host, keys, self, err);
}

MSB_BACKEND_DEFINE(
	.name = "bwrap",
	.isolation = "container",
	.declarations = MSB_DRIVER_EGRESS_DECLARATIONS,
	.init = bwrap_init,
	MSB_DRIVER_OPERATIONS,
	.adopt = msb_driver_adopt);
