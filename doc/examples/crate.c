/* crate.c — a `container` msb backend: the SDK's guest agent as pid 1 of its own pid,
 * mount, network, ipc and uts namespaces, in a read-only root of the host's system
 * directories with the sandbox's work dir writable, no capabilities, uid 65534. */
#define _GNU_SOURCE /* the CLONE_NEW* flags */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/driver.h>
#include <msb/launch.h>
#include <msb/mount_plan.h>

#define GUEST_ID 65534

/* Everything the agent's process needs, prepared before the spawn: the child that builds
 * the root may share the host's memory, so it only reads this (async-signal-safe). */
typedef struct plan_arg {
	msb_mount_bind binds[10];
	msb_mount_plan plan;
} plan_arg;

static int prepare(void *arg, const char **stage)
{
	return msb_mount_plan_apply(&((plan_arg *)arg)->plan, stage);
}

static msb_errc crate_start(void *ctx, const msb_driver_box *box, msb_error *err)
{
	(void)ctx;
	/* The image: the host's system directories, read-only; the agent; the work dir. */
	static const char *const image[] = { "/usr", "/bin", "/lib", "/lib64", "/etc", "/sbin" };
	plan_arg p = { .plan = MSB_MOUNT_PLAN_INIT };
	size_t n = 0;
	for (size_t i = 0; i < sizeof image / sizeof image[0]; i++)
		if (access(image[i], F_OK) == 0)
			p.binds[n++] = (msb_mount_bind){ image[i], image[i], false };
	p.binds[n++] = (msb_mount_bind){ box->config->agent_path, "/.msb/agent", false };
	p.binds[n++] = (msb_mount_bind){ box->work_dir, box->spec->work_dir, true };
	char root[4200];
	snprintf(root, sizeof root, "%s/root", box->dir);
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return msb_error_set_errno(err, MSB_E_OS, errno, "crate: mkdir %s", root);
	if (chown(box->work_dir, GUEST_ID, GUEST_ID) < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "crate: chown %s", box->work_dir);
	p.plan.root = root;
	p.plan.binds = p.binds;
	p.plan.n_binds = n;
	p.plan.uid = p.plan.gid = GUEST_ID;

	/* The agent: its work dir the spec's, limits that hold without a cgroup. */
	msb_agent_config cfg = box->config->agent;
	cfg.work_dir = box->spec->work_dir;
	if (!cfg.rlimits.as_bytes)
		cfg.rlimits.as_bytes = 1u << 30;
	if (!cfg.rlimits.nproc)
		cfg.rlimits.nproc = 512;
	char fd[16], **argv = NULL;
	snprintf(fd, sizeof fd, "%d", MSB_LAUNCH_LISTEN_FD);
	msb_errc rc = msb_agent_config_argv("/.msb/agent", "--listen-fd", fd, &cfg, -1, &argv, err);
	if (rc != MSB_OK)
		return rc;

	msb_launch l = MSB_LAUNCH_INIT;
	l.argv = argv;
	l.unshare_flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
	l.prepare = prepare;
	l.prepare_arg = &p;
	rc = msb_launch_agent(box, &l, err);
	free(argv);
	return rc;
}

/* The agent is its pid namespace's init: the driver's SIGKILL of it ends everything, and
 * the driver removes the directory. Nothing else of this boundary is left to stop. */
static bool crate_stop(void *ctx, const msb_driver_box *box, msb_disposal_failure *failure)
{
	(void)ctx, (void)box, (void)failure;
	return false; /* true would mean it failed */
}

static msb_errc crate_init(const msb_node *config, const msb_host *host,
			   msb_backend_instance **self, msb_error *err)
{
	if (geteuid() != 0)
		return msb_error_set(err, MSB_E_CONFIG, "crate: needs root (mount namespaces, pivot_root)");
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = "crate";
	b.start = crate_start;
	b.stop = crate_stop;
	b.pid_ends_all = true;
	return msb_driver_init(&b, config, host, NULL, self, err);
}

MSB_BACKEND_DEFINE(.name = "crate", .isolation = "container",
		   .declarations = MSB_DRIVER_DECLARATIONS, .init = crate_init,
		   MSB_DRIVER_OPERATIONS);
