/*
 * plugins/gvisor/gvisor.c — the `gvisor` backend (rung hardened_container): each sandbox a
 * long-lived gVisor container (runsc run --detach) whose only process is msb's guest
 * agent, reached over a unix socket the agent binds on a dedicated bind mount.
 *
 * What draws the boundary: gVisor's user-space kernel (the Sentry) between every command
 * and the host's kernel, on the platform configured (ptrace where nothing else works), an
 * image root mounted read-only, one writable work directory, no network at all
 * (--network=none), and the host's cgroups limiting memory, pids and CPU of the whole
 * sandbox. The container outlives the msb process that created it; a second process with
 * the same key reaches the same container through the socket in its state directory.
 *
 * Why a long-lived container and the agent, not `runsc run` per command: run costs a whole
 * sandbox start (~0.3 s here) per exec, and loses processes a command leaves behind; the
 * agent makes warm exec a socket round trip plus a fork inside the Sentry.
 *
 * This file is the boundary driver: start (the cgroup, the bundle, runsc run --detach under
 * a reaper, born inside the cgroup) and alive; stop is gvisor_dispose.c (kill by cgroup, drop
 * runsc's state, verify); the SDK's driver does the rest (msb/driver.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/disk.h>
#include <msb/backend.h>
#include <msb/driver.h>

#include "gvisor_internal.h"

#define RUNSC_TIMEOUT 30.0
#define STOP_TIMEOUT 10.0

static const char *const gvisor_keys[] = { GVISOR_CONFIG_KEYS, NULL };

static void ctx_free(void *p)
{
	gvisor_ctx *ctx = p;
	if (!ctx)
		return;
	msb_images_free(&ctx->images);
	free(ctx->runsc);
	free(ctx->platform);
	free(ctx);
}

/* A runsc step that failed: its status and the tail of runsc's log. */
static msb_errc runsc_failed(const msb_driver_box *box, const char *step, int status,
			     const char *log, msb_error *err)
{
	char tail[600];
	msb_driver_file_tail(log, tail, sizeof tail);
	return msb_error_set(err, MSB_E_BACKEND, "backend gvisor: sandbox %s: runsc %s failed "
			     "(status %d): %s", box->name, step, status, tail);
}

/*
 * The sandbox's cgroup, with the configured limits, saved to <dir>/cgroup before anything
 * runs in it: a start that fails from here on still leaves stop the list to kill and remove.
 */
static msb_errc make_cgroup(const gvisor_ctx *ctx, const msb_driver_box *box, msb_cgroup **cg,
			    msb_error *err)
{
	char leaf[64];
	gvisor_cgroup_leaf(box, leaf);
	msb_cgroup_limits limits = { .memory_bytes = ctx->memory, .pids = ctx->pids, .cpus = ctx->cpus };
	msb_errc rc = msb_cgroup_create(GVISOR_CGROUP_PARENT, leaf, &limits, cg, err);
	if (rc != MSB_OK)
		return msb_error_prefix(err, "backend gvisor: sandbox %s: its cgroup: ", box->name);
	char *file = msb_driver_path(box->dir, "cgroup");
	rc = file ? msb_cgroup_save(*cg, file, err) : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	free(file);
	if (rc != MSB_OK) {
		msb_cgroup_destroy(*cg, STOP_TIMEOUT, NULL);
		msb_cgroup_free(*cg);
		*cg = NULL;
	}
	return rc;
}

/* A sandbox is of the image root it started from: a re-imported image is a new one. */
static msb_errc gvisor_identity(void *p, const msb_spec *spec, char *out, size_t size,
				msb_error *err)
{
	const gvisor_ctx *ctx = p;
	return msb_images_identity(&ctx->images, "gvisor", spec->image, out, size, err);
}

/* The store image's digest (msb/backend.h image_digest), for the observer and the router. */
static msb_errc gvisor_image_digest(void *p, const msb_spec *spec, char *out, size_t size,
				msb_error *err)
{
	const gvisor_ctx *ctx = p;
	return msb_images_digest(&ctx->images, spec->image, out, size, err);
}

/* The store image's Env, for every command the agent runs (msb/image.h). */
static msb_errc gvisor_image_config(void *p, const msb_spec *spec, const char *const **env,
				msb_error *err)
{
	const gvisor_ctx *ctx = p;
	return msb_images_env(&ctx->images, spec->image, env, err);
}

/* The store image's User: the agent makes its socket as root, then drops to it. */
static msb_errc gvisor_image_user(void *p, const msb_spec *spec, long *uid, long *gid,
				  msb_error *err)
{
	const gvisor_ctx *ctx = p;
	return msb_images_user(&ctx->images, spec->image, uid, gid, err);
}

static msb_errc gvisor_start(void *p, const msb_driver_box *box, msb_error *err)
{
	const gvisor_ctx *ctx = p;
	const char *root = NULL;
	msb_errc rc = msb_images_resolve(&ctx->images, "gvisor", box->spec->image, &root, err);
	if (rc != MSB_OK)
		return rc;
	char *chan = msb_driver_path(box->dir, "chan");
	char *log = msb_driver_path(box->dir, "runsc.log");
	char *bundle = msb_driver_path(box->dir, "bundle");
	char *pid_file = msb_driver_path(box->dir, "sandbox.pid");
	/* A runsc root of the sandbox's own: its state goes with the sandbox's directory. */
	char *runsc_root = msb_driver_path(box->dir, "runsc");
	msb_cgroup *cg = NULL;
	if (!chan || !log || !bundle || !pid_file || !runsc_root)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (rc == MSB_OK && (mkdir(chan, 0700) < 0 || mkdir(runsc_root, 0700) < 0))
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: sandbox %s: mkdir",
					 box->name);
	if (rc == MSB_OK)
		rc = gvisor_bundle_write(ctx, box, root, chan, err);
	if (rc == MSB_OK)
		rc = make_cgroup(ctx, box, &cg, err);
	int status = 0;
	if (rc == MSB_OK) {
		/* run --detach: create and start in one runsc invocation, returning at once. Under
		 * `egress: allowlist` the forwarder must also connect to the proxy's socket on its
		 * bind: host-uds `all` (create and open; a later flag wins over build_argv's). */
		const char *args[] = { "--host-uds=all", "run", "--detach", "--bundle", bundle,
				       "--pid-file", pid_file, box->name, NULL };
		rc = gvisor_runsc_reaped(ctx, runsc_root, cg, box->egress_socket ? args : args + 1,
					 log, box->config->agent_path,
					 RUNSC_TIMEOUT, &status, err);
		if (rc == MSB_OK && status != 0)
			rc = runsc_failed(box, "run --detach", status, log, err);
	}
	pid_t pid = rc == MSB_OK ? msb_driver_read_pid_file(pid_file) : 0;
	if (rc == MSB_OK && pid <= 0)
		rc = msb_error_set(err, MSB_E_BACKEND, "backend gvisor: sandbox %s: runsc run wrote "
				   "no pid file", box->name);
	if (rc == MSB_OK)
		rc = msb_driver_write_pid(box, pid, err);
	if (rc == MSB_OK)
		rc = msb_driver_link_socket(box, "gvisor", chan, err); /* never through chan */
	msb_cgroup_free(cg);
	free(chan);
	free(log);
	free(bundle);
	free(pid_file);
	free(runsc_root);
	return rc;
}

static bool gvisor_stop(void *p, const msb_driver_box *box, msb_disposal_failure *failure)
{
	(void)p;
	return gvisor_dispose(box, STOP_TIMEOUT, failure); /* true: failed */
}

/* Alive beyond its pid: the host's link to the agent's socket is still a socket. */
static bool gvisor_alive(void *p, const msb_driver_box *box)
{
	(void)p;
	struct stat st;
	return lstat(box->socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid();
}

/*
 * The platform when the config names none: systrap where this runsc has it (the fastest
 * that needs no hardware virtualisation), else ptrace. kvm is never picked unasked: on a
 * host where /dev/kvm is a PVM shim it hangs. Asking runsc costs a process start, so the
 * answer is kept in <state_dir>/platform with the binary's mtime, and asked again only when
 * runsc changed.
 */
static char *default_platform(const char *runsc, const char *state_dir)
{
	struct stat st;
	long long mtime = stat(runsc, &st) == 0 ? (long long)st.st_mtime : -1;
	char cache[4200], word[16] = "";
	long long cached = -2;
	snprintf(cache, sizeof cache, "%s/platform", state_dir);
	FILE *f = fopen(cache, "re");
	if (f) {
		if (fscanf(f, "%15s %lld", word, &cached) != 2)
			cached = -2;
		fclose(f);
	}
	if (cached == mtime && (!strcmp(word, "systrap") || !strcmp(word, "ptrace")))
		return strdup(word);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "'%s' flags 2>&1", runsc);
	FILE *p = strchr(runsc, '\'') ? NULL : popen(cmd, "re");
	bool systrap = false, in_platform = false;
	char line[512];
	/* `runsc flags` describes -platform on the line after its name, listing the choices. */
	while (p && fgets(line, sizeof line, p)) {
		if (in_platform)
			systrap = strstr(line, "systrap") != NULL;
		in_platform = strstr(line, "-platform string") != NULL;
	}
	if (p)
		pclose(p);
	const char *chosen = systrap ? "systrap" : "ptrace";
	char tmp[4300];
	snprintf(tmp, sizeof tmp, "%s.%ld", cache, (long)getpid());
	f = fopen(tmp, "we");
	if (f) {
		fprintf(f, "%s %lld\n", chosen, mtime);
		if (fclose(f) != 0 || rename(tmp, cache) != 0)
			unlink(tmp);
	}
	return strdup(chosen);
}

/*
 * What `pids` must leave gVisor itself. pids is the host's pids cgroup on the whole sandbox,
 * and on the ptrace platform nearly all of what it counts is gVisor's: the gofer (~25 host
 * tasks), the Sentry's Go threads (~30 on 2 CPUs), and one stub process per address space
 * (kept in a pool and reused), which gains a traced thread for every Sentry thread that ever
 * ran it. A sandbox that has worked a while levels off near 25 + 30 x (processes + 4) here:
 * 629 for 16 processes after 80 rounds of 16 short sleepers (cold, 16 cost 280), 213-238
 * for 5 after 2000 rounds of a 5-process pipeline. When the Sentry cannot start a thread
 * the whole sandbox dies (the agent's stream just closes), so a `pids` below this is refused
 * at load, never found out later: with 128 the conformance kit's exec/timeout-kills-tree
 * (5 processes at once) killed its sandbox; the kit itself peaks at 117-154 tasks here.
 *
 * The minimum is BASE + PER_PROCESS x max(rlimit_nproc, PROCESSES): per process a third
 * above the 30 measured, and without rlimit_nproc (nothing then bounds the processes
 * inside) room for the 5 at once the kit needs. Measured on 2 CPUs; the Sentry starts
 * more threads on more CPUs (1 CPU: ~20 per process), so a large host needs more.
 * rlimit_nproc (gVisor enforces it even for the container's root) is what makes a fork
 * bomb fail inside instead of killing the sandbox.
 */
#define HOST_TASKS_BASE 160
#define HOST_TASKS_PER_PROCESS 40
#define HOST_TASKS_PROCESSES 5

/* The smallest `pids` that leaves gVisor its own tasks for `nproc` processes (0: unset). */
static uint64_t pids_minimum(uint64_t nproc)
{
	uint64_t processes = nproc > HOST_TASKS_PROCESSES ? nproc : HOST_TASKS_PROCESSES;
	if (processes > (UINT64_MAX - HOST_TASKS_BASE) / HOST_TASKS_PER_PROCESS)
		return UINT64_MAX;
	return HOST_TASKS_BASE + HOST_TASKS_PER_PROCESS * processes;
}

/* Refuse a `pids` gVisor's own host tasks would exhaust, naming the minimum and why. */
static msb_errc check_pids(const gvisor_ctx *ctx, const msb_node *config, uint64_t nproc,
			   msb_error *err)
{
	uint64_t minimum = pids_minimum(nproc);
	if (ctx->pids >= minimum)
		return MSB_OK;
	const msb_node *at = msb_node_get(config, "pids");
	const char *deflt = at ? "" : " (the default)";
	if (!nproc)
		return msb_node_error(err, at, MSB_E_CONFIG,
				      "pids %llu%s is below the minimum %llu, what %d processes at once "
				      "need: gVisor's own host tasks count against it (%d for the Sentry "
				      "and the gofer plus %d per process inside), and a sandbox that "
				      "reaches its pids limit dies whole; set rlimit_nproc to bound the "
				      "processes inside", (unsigned long long)ctx->pids, deflt,
				      (unsigned long long)minimum, HOST_TASKS_PROCESSES, HOST_TASKS_BASE,
				      HOST_TASKS_PER_PROCESS);
	return msb_node_error(err, at, MSB_E_CONFIG,
			      "pids %llu%s is below the minimum %llu that rlimit_nproc %llu needs: "
			      "gVisor's own host tasks count against it (%d for the Sentry and the "
			      "gofer plus %d per process inside), and a sandbox that reaches its pids "
			      "limit dies whole instead of refusing the fork",
			      (unsigned long long)ctx->pids, deflt, (unsigned long long)minimum,
			      (unsigned long long)nproc, HOST_TASKS_BASE, HOST_TASKS_PER_PROCESS);
}

static msb_errc parse_config(void *p, const msb_node *config, const msb_driver_config *driver,
			     msb_error *err)
{
	gvisor_ctx *ctx = p;
	const char *runsc = "/usr/bin/runsc", *platform = NULL;
	msb_errc rc = msb_node_string(config, "runsc", &runsc, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "platform", &platform, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "memory", &ctx->memory, err);
	if (rc == MSB_OK)
		rc = msb_node_uint(config, "pids", &ctx->pids, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "tmp_size", &ctx->tmp_size, err);
	if (rc == MSB_OK)
		rc = msb_disk_read(config, "gvisor", &ctx->disk, err);
	if (rc == MSB_OK)
		rc = msb_node_cpus(config, "cpus", &ctx->cpus, err);
	if (rc == MSB_OK)
		rc = msb_images_read(config, &ctx->images, err);
	if (rc != MSB_OK)
		return rc;
	if (platform && strcmp(platform, "ptrace") && strcmp(platform, "systrap") &&
	    strcmp(platform, "kvm"))
		return msb_node_error(err, msb_node_get(config, "platform"), MSB_E_CONFIG,
				      "platform must be ptrace, systrap or kvm, not '%s'", platform);
	/* Unstated, pids is whatever rlimit_nproc needs when that is more than the default. */
	uint64_t nproc = driver->agent.rlimits.nproc;
	if (!msb_node_get(config, "pids") && ctx->pids < pids_minimum(nproc))
		ctx->pids = pids_minimum(nproc);
	rc = check_pids(ctx, config, nproc, err);
	if (rc != MSB_OK)
		return rc;
	if (ctx->memory < 64 * MSB_MIB)
		return msb_node_error(err, msb_node_get(config, "memory"), MSB_E_CONFIG,
				      "memory must be at least 64MiB");
	if (access(runsc, X_OK) != 0)
		return msb_node_error(err, msb_node_get(config, "runsc"), MSB_E_CONFIG,
				      "the engine %s is not there (install the Debian package runsc, "
				      "or set runsc: to its path)", runsc);
	ctx->runsc = strdup(runsc);
	ctx->platform = platform ? strdup(platform) : default_platform(runsc, driver->state_dir);
	if (!ctx->runsc || !ctx->platform)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	return MSB_OK;
}

static msb_errc gvisor_init(const msb_node *config, const msb_host *host,
			    msb_backend_instance **self, msb_error *err)
{
	gvisor_ctx *ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	ctx->memory = 512 * MSB_MIB;
	ctx->pids = 4096; /* about 98 processes inside: see HOST_TASKS_PER_PROCESS */
	ctx->cpus = 1.0;
	ctx->tmp_size = 64 * MSB_MIB;
	ctx->disk = MSB_DISK_DEFAULT;
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = "gvisor";
	b.ctx = ctx;
	b.ctx_free = ctx_free;
	b.start = gvisor_start;
	b.stop = gvisor_stop;
	b.alive = gvisor_alive;
	b.identity = gvisor_identity;
	b.image_digest = gvisor_image_digest;
	b.image_config = gvisor_image_config;
	b.image_user = gvisor_image_user;
	/* Stop kills by cgroup, which holds every process the sandbox has: no SHUTDOWN first. */
	b.pid_ends_all = true;
	b.configure = parse_config;
	/* The proxy's socket directory is bound in at its own path (gvisor_bundle.c) and the
	 * network is gVisor's loopback alone: the driver's egress allowlist holds here. */
	b.egress = true;
	return msb_driver_init(&b, config, host, gvisor_keys, self, err);
}

MSB_BACKEND_DEFINE(.name = "gvisor", .isolation = "hardened_container",
		   .declarations = MSB_DRIVER_EGRESS_DECLARATIONS,
		   .init = gvisor_init, MSB_DRIVER_OPERATIONS);
