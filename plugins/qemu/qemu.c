/*
 * plugins/qemu/qemu.c — the `qemu` backend (rung microvm): each sandbox a QEMU microVM whose
 * /init hands over to msb's guest agent, reached over one virtio-serial port.
 *
 * What draws the boundary: a separate guest kernel (Debian's cloud kernel, fetched by
 * fetch-guest.sh, never installed), its own memory (`memory:`), one vCPU, no network device
 * at all, no shared filesystem — files cross only as agent requests. The VM is daemonized
 * with its pid, sockets and console log in the sandbox's state directory, so it outlives the
 * msb process that started it and a second process with the same key reaches it.
 *
 * This file is the boundary driver: start (assemble the guest, launch QEMU, start the relay
 * and wait for the agent's HELLO), stop (power off, verify) and alive. The state directory,
 * the key's lock, reuse, truthful disposal and every sandbox operation are the SDK's driver
 * (msb/driver.h); the guest's pieces are qemu_guest.c, QEMU's command line qemu_launch.c,
 * the accelerator qemu_accel.c; the relay between socket and ports is the msb-qemu-relay
 * program (relay.c), which relay_spawn.c starts.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/driver.h>
#include <msb/image_store.h>
#include <msb/unix_socket.h>

#include "qemu_internal.h"
#include "relay.h"
#include "vminit.h"

#define DEFAULT_MEMORY (512 * MSB_MIB)
#define DEFAULT_BOOT_TIMEOUT 60.0
/* After the agent's SHUTDOWN the guest's init exits and QEMU follows within this. */
#define POWEROFF_WAIT_MS 2000
#define TERM_WAIT_MS 3000

static const char *const qemu_keys[] = { QEMU_CONFIG_KEYS, NULL };

static void ctx_free(void *p)
{
	qemu_ctx *ctx = p;
	if (!ctx)
		return;
	free(ctx->guest_dir);
	free(ctx->images_dir);
	msb_images_free(&ctx->env_images);
	free(ctx->mkfs_erofs);
	qemu_image_run_code_free(ctx);
	free(ctx->init_path);
	free(ctx->relay_path);
	free(ctx->qemu);
	for (char **w = ctx->template_warmup; w && *w; w++)
		free(*w);
	free(ctx->template_warmup);
	free(ctx);
}

/* The agent's argv as the guest's /init reads it: NUL-separated, the agent at /msb/agent. */
static msb_errc agent_args(const msb_driver_box *box, char **blob, size_t *len, msb_error *err)
{
	char **argv = NULL;
	/* Under `egress: allowlist` the forwarder's way out is the egress port, by its name,
	 * multiplexed (qemu_egress.c); the guest's init makes agent 0's the one forwarder. */
	msb_driver_box guest_view = *box;
	if (box->egress_socket)
		guest_view.egress_socket = QEMU_EGRESS_PORT;
	static const char *const mux[] = { "--egress-transport", "mux", NULL };
	const char *const *extra = box->egress_socket ? mux : mux + 2;
	/* The guest's init gives each agent its own port: ".0", ".1", … appended to this path. */
	msb_errc rc = msb_driver_agent_argv(&guest_view, "--device",
					    "/dev/virtio-ports/" MSB_QEMU_PORT_NAME,
					    box->spec->work_dir, NULL, -1, &argv, err);
	if (rc != MSB_OK)
		return rc;
	size_t n = strlen("/msb/agent") + 1;
	for (char **a = argv + 1; *a; a++)
		n += strlen(*a) + 1;
	for (const char *const *a = extra; *a; a++)
		n += strlen(*a) + 1;
	char *b = malloc(n);
	if (!b) {
		free(argv);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	size_t at = 0;
	memcpy(b, "/msb/agent", strlen("/msb/agent") + 1);
	at = strlen("/msb/agent") + 1;
	for (char **a = argv + 1; *a; a++) {
		memcpy(b + at, *a, strlen(*a) + 1);
		at += strlen(*a) + 1;
	}
	for (const char *const *a = extra; *a; a++) {
		memcpy(b + at, *a, strlen(*a) + 1);
		at += strlen(*a) + 1;
	}
	free(argv);
	*blob = b;
	*len = n;
	return MSB_OK;
}

/* Wait for the relay's verdict on the agent's HELLO; on failure say what the guest said. */
static msb_errc await_ready(const qemu_ctx *ctx, const msb_driver_box *box, int ready,
			    msb_error *err)
{
	int got = msb_qemu_relay_await(ready, ctx->boot_timeout);
	if (got == 1)
		return MSB_OK;
	char *log = msb_driver_path(box->dir, "console.log");
	char tail[600] = "";
	if (log)
		msb_driver_file_tail(log, tail, sizeof tail);
	free(log);
	return msb_error_set(err, got < 0 ? MSB_E_TIMEOUT : MSB_E_BACKEND,
			     "backend qemu: sandbox %s: the guest agent did not answer %s; "
			     "guest console: %s", box->name,
			     got < 0 ? "within boot_timeout" : "(the VM's stream closed)",
			     tail[0] ? tail : "(empty)");
}

msb_errc qemu_launch_box(const qemu_ctx *ctx, const msb_driver_box *box, const char *initrd,
			 const char *block, const qemu_launch_extra *x, msb_error *err)
{
	qemu_accel accel = qemu_accel_resolve(ctx, box->config->state_dir);
	char **base = qemu_launch_argv_ex(ctx, accel, box->dir, initrd, NULL, true, x);
	/* A store image's disk goes after everything else QEMU is told. */
	char **argv = base && block ? qemu_image_argv(base, block) : base;
	/* Under `egress: allowlist`, the egress port's own device (qemu_egress.c). */
	qemu_egress_args ea;
	char **full = argv && box->egress_socket ? qemu_egress_argv(argv, box->dir, &ea) : argv;
	char *err_path = msb_driver_path(box->dir, "qemu.err");
	msb_errc rc = full && err_path ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	int status = 0;
	if (rc == MSB_OK)
		rc = qemu_launch_run(full, err_path, &status, err);
	if (full != argv)
		free(full);
	if (rc == MSB_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		char tail[600];
		msb_driver_file_tail(err_path, tail, sizeof tail);
		rc = msb_error_set(err, MSB_E_BACKEND, "backend qemu: sandbox %s: %s failed to start "
				   "the VM (status %d): %s", box->name, ctx->qemu, status, tail);
	}
	if (argv && argv != base) {
		size_t n = 0;
		while (base[n])
			n++;
		free(argv[n + 1]);
		free(argv);
	}
	free(base);
	free(err_path);
	char *pid_path = msb_driver_path(box->dir, "qemu.pid");
	pid_t pid = rc == MSB_OK ? msb_driver_read_pid_file(pid_path) : 0;
	free(pid_path);
	if (rc == MSB_OK && pid <= 0)
		rc = msb_error_set(err, MSB_E_BACKEND, "backend qemu: sandbox %s: QEMU wrote no pid "
				   "file", box->name);
	if (rc == MSB_OK)
		rc = msb_driver_write_pid(box, pid, err);
	return rc;
}

msb_errc qemu_start_relay(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err)
{
	return qemu_start_relay_all(ctx, box, false, err);
}

msb_errc qemu_start_relay_all(const qemu_ctx *ctx, const msb_driver_box *box, bool all,
			      msb_error *err)
{
	int ports[MSB_QEMU_PORTS];
	msb_errc rc = MSB_OK;
	for (int i = 0; i < MSB_QEMU_PORTS; i++)
		ports[i] = -1;
	for (int i = 0; rc == MSB_OK && i < MSB_QEMU_PORTS; i++) {
		char path[4300];
		snprintf(path, sizeof path, "%s/vm%d.sock", box->dir, i);
		if ((ports[i] = msb_unix_connect(path)) < 0)
			rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: sandbox %s: "
						 "cannot connect to the VM's port %s", box->name, path);
	}
	int lfd = rc == MSB_OK ? msb_unix_listen(box->socket_path) : -1;
	int ready[2] = { -1, -1 };
	if (rc == MSB_OK && lfd < 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: sandbox %s: "
					 "cannot listen on %s", box->name, box->socket_path);
	else if (rc == MSB_OK && pipe2(ready, O_CLOEXEC) < 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: pipe");
	pid_t relay = rc == MSB_OK ? msb_qemu_relay_spawn(ctx->relay_path, lfd, ports,
							  MSB_QEMU_PORTS, ready[1])
				   : -1;
	if (rc == MSB_OK && relay <= 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: sandbox %s: "
					 "cannot start the relay program %s", box->name,
					 ctx->relay_path);
	if (ready[1] >= 0)
		close(ready[1]);
	for (int i = 0; i < MSB_QEMU_PORTS; i++)
		if (ports[i] >= 0)
			close(ports[i]);
	if (lfd >= 0)
		close(lfd);
	char *relay_pid_path = msb_driver_path(box->dir, "relay.pid");
	if (rc == MSB_OK && !relay_pid_path)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (rc == MSB_OK) {
		msb_driver_box rb = *box;
		rb.pid_path = relay_pid_path;
		rc = msb_driver_write_pid(&rb, relay, err);
	}
	if (rc == MSB_OK)
		rc = await_ready(ctx, box, ready[0], err);
	if (rc == MSB_OK && all && msb_qemu_relay_await_all(ready[0], ctx->boot_timeout) != 1)
		rc = msb_error_set(err, MSB_E_BACKEND, "backend qemu: sandbox %s: not every agent "
				   "of the guest answered its HELLO", box->name);
	if (ready[0] >= 0)
		close(ready[0]);
	free(relay_pid_path);
	return rc;
}

static msb_errc qemu_start(void *p, const msb_driver_box *box, msb_error *err)
{
	const qemu_ctx *ctx = p;
	char *kernel = msb_driver_path(ctx->guest_dir, "vmlinuz");
	struct stat st;
	bool have_kernel = kernel && stat(kernel, &st) == 0;
	free(kernel);
	if (access(ctx->qemu, X_OK) != 0)
		return msb_error_set(err, MSB_E_BACKEND, "backend qemu: the engine %s is not there "
				     "(install the Debian package qemu-system-x86, or set qemu: to its "
				     "path)", ctx->qemu);
	/* Checked before anything boots: without its relay a VM would be started for nothing. */
	if (access(ctx->relay_path, X_OK) != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: the relay "
					   "program %s cannot be run (install msb with it, or set "
					   "relay: to its path)", ctx->relay_path);
	if (!have_kernel)
		return msb_error_set(err, MSB_E_BACKEND,
				     "backend qemu: no guest kernel in %s; fetch it with "
				     "plugins/qemu/fetch-guest.sh %s (or set guest_dir)",
				     ctx->guest_dir, ctx->guest_dir);
	/*
	 * "busybox" (or no image) is the initramfs alone: busybox and the agent. Any other name
	 * is a store image, as a read-only disk under an overlay; one the store does not have
	 * is refused, never replaced by busybox.
	 */
	/* A fork of a snapshot (issue 22): its machine and state, never a fresh boot. */
	if (box->from_snapshot && box->egress_socket)
		return msb_error_set(err, MSB_E_CAPABILITY_NOT_SUPPORTED, "backend qemu: sandbox %s: "
				     "refused to fork snapshot %s under egress: allowlist: a restored "
				     "VM's egress port is not re-created (fork it with egress: closed)",
				     box->name, box->from_snapshot);
	if (box->from_snapshot)
		return qemu_snapshot_start(ctx, box, err);
	const char *image = box->spec->image;
	char *block = NULL;
	if (image && *image && strcmp(image, "busybox")) {
		msb_errc irc = qemu_image_block(ctx, image, &block, err);
		if (irc)
			return irc;
	}
	/* QEMU reads ',' in an option value as a separator; a state path holding one would split. */
	if (strchr(box->dir, ',')) {
		free(block);
		return msb_error_set(err, MSB_E_CONFIG, "backend qemu: state_dir %s refused: QEMU "
				     "cannot take a path holding ','", box->config->state_dir);
	}
	char *blob = NULL;
	size_t len = 0;
	char *initrd = msb_driver_path(box->dir, "initramfs.cpio");
	/* An image with a runtime of its own (image_run_code:) runs programs with it. */
	msb_driver_config cfg = *box->config;
	msb_driver_box with_runtime = *box;
	const char *const *runtime = qemu_image_run_code_for(ctx, image);
	if (runtime) {
		cfg.agent.run_code = runtime;
		with_runtime.config = &cfg;
	}
	msb_errc rc = initrd ? agent_args(&with_runtime, &blob, &len, err)
			     : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	/*
	 * A template clone when templates are on; when none can serve, a boot, and the reason
	 * is said (a log line, and <box>/template.fallback) — never a clone silently wrong.
	 */
	if (rc == MSB_OK && ctx->template_on && box->egress_socket) {
		/* The egress port is not part of a template's machine: an allowlist VM boots. */
		qemu_template_fallback(ctx, box, "egress: allowlist needs the egress port, which "
				       "templates do not carry; booting");
	} else if (rc == MSB_OK && ctx->template_on) {
		qemu_template_input in = { box->config->agent_path, blob, len, block };
		char why[1024] = "";
		if (qemu_template_start(ctx, box, &in, why, sizeof why) == MSB_OK) {
			free(blob);
			free(block);
			free(initrd);
			return MSB_OK;
		}
		qemu_template_fallback(ctx, box, why);
	}
	if (rc == MSB_OK && block)
		rc = qemu_guest_initramfs_image(ctx, box->config->agent_path, initrd, blob, len, err);
	else if (rc == MSB_OK)
		rc = qemu_guest_initramfs(ctx, box->config->agent_path, initrd, blob, len, false, err);
	free(blob);
	/* Every VM has a monitor: a snapshot stops, saves and resumes it through it. */
	qemu_launch_extra x = { .qmp = true };
	if (rc == MSB_OK)
		rc = qemu_launch_box(ctx, box, initrd, block, &x, err);
	char *block_kept = block;
	/* QEMU copied the archive into guest memory at start: the file has done its job. */
	if (initrd)
		unlink(initrd);
	free(initrd);
	if (rc == MSB_OK && box->egress_socket)
		rc = qemu_egress_start(ctx, box, err);
	if (rc == MSB_OK)
		rc = qemu_start_relay(ctx, box, err);
	if (rc == MSB_OK)
		rc = qemu_vm_kind_write(box->dir, false, block_kept, err);
	free(block_kept);
	return rc;
}

/* SIGKILL the relay recorded in relay.pid and see it gone; true when it FAILED (msb/driver.h). */
static bool stop_relay(const msb_driver_box *box, msb_disposal_failure *failure)
{
	char *path = msb_driver_path(box->dir, "relay.pid");
	if (!path) {
		msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "backend qemu: sandbox %s: "
					 "out of memory finding its relay", box->name);
		return true;
	}
	msb_driver_box rb = *box;
	rb.pid_path = path;
	pid_t pid = msb_driver_read_live_pid(&rb);
	bool failed = false;
	if (pid > 0) {
		kill(pid, SIGKILL);
		if (!qemu_recorded_gone_within(box, path, TERM_WAIT_MS)) {
			msb_disposal_failure_set(failure, MSB_DISPOSAL_TIMEOUT,
						 "backend qemu: sandbox %s: its relay %ld survived "
						 "SIGKILL", box->name, (long)pid);
			failed = true;
		}
	}
	free(path);
	return failed;
}

static bool qemu_stop(void *p, const msb_driver_box *box, msb_disposal_failure *failure)
{
	(void)p;
	/*
	 * The driver asked the agent to SHUTDOWN first; the guest's init then exits and QEMU
	 * with it. A VM that does not follow gets QEMU's orderly SIGTERM; the driver's SIGKILL
	 * and its check that the pid is gone come after this.
	 */
	pid_t pid = msb_driver_read_live_pid(box);
	if (pid > 0 && !qemu_recorded_gone_within(box, box->pid_path, POWEROFF_WAIT_MS)) {
		kill(pid, SIGTERM);
		qemu_recorded_gone_within(box, box->pid_path, TERM_WAIT_MS);
	}
	/* Both are tried whatever the first says; true when either FAILED (msb/driver.h). */
	bool egress_failed = !qemu_egress_stop(box, failure);
	return stop_relay(box, failure) || egress_failed;
}

void qemu_stop_relay(const msb_driver_box *box)
{
	msb_disposal_failure ignored;
	memset(&ignored, 0, sizeof ignored);
	stop_relay(box, &ignored);
	msb_disposal_failure_free(&ignored);
}

void qemu_kill_box(const msb_driver_box *box)
{
	msb_disposal_failure ignored;
	memset(&ignored, 0, sizeof ignored);
	pid_t pid = msb_driver_read_live_pid(box);
	if (pid > 0) {
		kill(pid, SIGKILL);
		qemu_recorded_gone_within(box, box->pid_path, TERM_WAIT_MS);
	}
	stop_relay(box, &ignored);
	msb_disposal_failure_free(&ignored);
}

static bool qemu_alive(void *p, const msb_driver_box *box)
{
	(void)p;
	char *path = msb_driver_path(box->dir, "relay.pid");
	msb_driver_box rb = *box;
	rb.pid_path = path;
	bool alive = path && msb_driver_read_live_pid(&rb) > 0;
	free(path);
	return alive;
}

static char *dup_default(const char *env, const char *fallback)
{
	const char *v = getenv(env);
	return strdup(v && *v ? v : fallback);
}

/* A sandbox is of the store image digest it booted: a re-imported image is a new one. */
static msb_errc qemu_identity(void *p, const msb_spec *spec, char *out, size_t size,
			      msb_error *err)
{
	const qemu_ctx *ctx = p;
	out[0] = '\0';
	if (!spec->image || !*spec->image || !strcmp(spec->image, "busybox"))
		return MSB_OK;
	char digest[MSB_IMAGE_DIGEST_LEN + 1];
	msb_error lookup = MSB_ERROR_INIT;
	/* Not found is the start's refusal to make, with its own words; nothing recorded. */
	if (msb_image_digest(ctx->images_dir, spec->image, digest, &lookup) == MSB_OK)
		snprintf(out, size, "%s", digest);
	msb_error_clear(&lookup);
	(void)err;
	return MSB_OK;
}

/* The store image's Env, for every command the guest agent runs (msb/image.h). */
static msb_errc qemu_image_config(void *p, const msb_spec *spec, const char *const **env,
				  msb_error *err)
{
	const qemu_ctx *ctx = p;
	return msb_images_env(&ctx->env_images, spec->image, env, err);
}

/* The store image's User: the guest agent makes its channel as root, then drops to it. */
static msb_errc qemu_image_user(void *p, const msb_spec *spec, long *uid, long *gid,
				msb_error *err)
{
	const qemu_ctx *ctx = p;
	return msb_images_user(&ctx->env_images, spec->image, uid, gid, err);
}

static msb_errc parse_config(void *p, const msb_node *config, const msb_driver_config *driver,
			     msb_error *err)
{
	(void)driver;
	qemu_ctx *ctx = p;
	const char *guest = NULL, *init = NULL, *relay = NULL, *qemu = NULL, *accel = NULL;
	const char *images = NULL, *mkfs = NULL;
	msb_errc rc = msb_node_string(config, "guest_dir", &guest, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "images_dir", &images, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "mkfs_erofs", &mkfs, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "init", &init, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "relay", &relay, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "qemu", &qemu, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "accel", &accel, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "memory", &ctx->memory, err);
	if (rc == MSB_OK)
		rc = msb_node_seconds(config, "boot_timeout", &ctx->boot_timeout, err);
	if (rc == MSB_OK)
		rc = qemu_image_run_code_read(ctx, config, err);
	if (rc == MSB_OK)
		rc = msb_node_bool(config, "template", &ctx->template_on, err);
	if (rc == MSB_OK)
		rc = msb_node_bool(config, "template_share_ram", &ctx->template_share_ram, err);
	const char **warmup = NULL;
	if (rc == MSB_OK)
		rc = msb_node_strings(config, "template_warmup", &warmup, err);
	if (rc == MSB_OK && warmup) {
		size_t n = 0;
		while (warmup[n])
			n++;
		ctx->template_warmup = calloc(n + 1, sizeof *ctx->template_warmup);
		for (size_t i = 0; ctx->template_warmup && i < n; i++)
			if (!(ctx->template_warmup[i] = strdup(warmup[i])))
				rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
		if (!ctx->template_warmup)
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	free(warmup);
	if (rc != MSB_OK)
		return rc;
	if (accel && !strcmp(accel, "kvm"))
		ctx->accel = QEMU_ACCEL_KVM;
	else if (accel && !strcmp(accel, "tcg"))
		ctx->accel = QEMU_ACCEL_TCG;
	else if (accel && strcmp(accel, "auto"))
		return msb_node_error(err, msb_node_get(config, "accel"), MSB_E_CONFIG,
				      "accel must be auto, kvm or tcg, not '%s'", accel);
	if (ctx->memory < 64 * MSB_MIB)
		return msb_node_error(err, msb_node_get(config, "memory"), MSB_E_CONFIG,
				      "memory must be at least 64MiB: the guest kernel needs it");
	if (ctx->boot_timeout <= 0)
		return msb_node_error(err, msb_node_get(config, "boot_timeout"), MSB_E_CONFIG,
				      "boot_timeout must be positive");
	ctx->guest_dir = guest ? strdup(guest) : dup_default("MSB_QEMU_GUEST", MSB_DATADIR "/qemu");
	ctx->init_path = init ? strdup(init)
			      : dup_default("MSB_QEMU_INIT", MSB_LIBEXECDIR "/msb-qemu-init");
	ctx->relay_path = relay ? strdup(relay)
				: dup_default("MSB_QEMU_RELAY", MSB_LIBEXECDIR "/msb-qemu-relay");
	ctx->qemu = strdup(qemu ? qemu : "/usr/bin/qemu-system-x86_64");
	ctx->images_dir = strdup(images ? images : msb_image_store_default_dir());
	ctx->mkfs_erofs = strdup(mkfs ? mkfs : "/usr/bin/mkfs.erofs");
	ctx->env_images.store = ctx->images_dir ? strdup(ctx->images_dir) : NULL;
	if (!ctx->guest_dir || !ctx->init_path || !ctx->relay_path || !ctx->qemu ||
	    !ctx->images_dir || !ctx->mkfs_erofs || !ctx->env_images.store)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	return MSB_OK;
}

static msb_errc qemu_init(const msb_node *config, const msb_host *host,
			  msb_backend_instance **self, msb_error *err)
{
	qemu_ctx *ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	ctx->memory = DEFAULT_MEMORY;
	ctx->boot_timeout = DEFAULT_BOOT_TIMEOUT;
	ctx->template_share_ram = true;
	if (host && host->struct_size >= offsetof(msb_host, log) + sizeof host->log) {
		memcpy(&ctx->host, host, host->struct_size < sizeof ctx->host ? host->struct_size
									  : sizeof ctx->host);
		ctx->host.struct_size = sizeof ctx->host;
		ctx->has_host = true;
	}
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = "qemu";
	b.ctx = ctx;
	b.ctx_free = ctx_free;
	b.start = qemu_start;
	b.stop = qemu_stop;
	b.alive = qemu_alive;
	b.identity = qemu_identity;
	b.snapshot_save = qemu_snapshot_save;
	b.image_digest = qemu_identity; /* its identity is the digest */
	b.image_config = qemu_image_config;
	b.image_user = qemu_image_user;
	/* The driver refuses unknown keys and reads its own; then parse_config reads the plugin's. */
	b.configure = parse_config;
	/*
	 * Warm pools (issue 22): a booted VM does not care where its directory is — QEMU and
	 * the relay hold their sockets and disks open from the start, and stop finds both
	 * through pid files inside the directory — so a pool entry is a pre-booted microVM.
	 */
	b.adoptable = true;
	/* No network device; the proxy is reached over the egress port alone (qemu_egress.c). */
	b.egress = true;
	return msb_driver_init(&b, config, host, qemu_keys, self, err);
}

/*
 * The driver's egress declarations (issue 20: allowlist over the egress port) and `snapshot`
 * (issue 22): the guest's whole state saves.
 */
#define QEMU_DECLARATIONS                                                                \
	{                                                                                \
		.capabilities = MSB_WORDS("exec", "run_code", "files_in", "files_out",  \
					  "files_list", "files_delete", "snapshot"),    \
		.egress_modes = MSB_WORDS("closed", "allowlist"),                        \
		.os_families = MSB_WORDS("posix"),                                       \
		.isolation_scopes = MSB_WORDS("conversation", "call"),                   \
		.observes_egress = &msb_driver_observes_egress,                          \
	}

MSB_BACKEND_DEFINE(.name = "qemu", .isolation = "microvm",
		   .declarations = QEMU_DECLARATIONS,
		   .init = qemu_init, MSB_DRIVER_OPERATIONS, .adopt = msb_driver_adopt);
