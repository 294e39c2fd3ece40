/*
 * fixture_container.c — a `container` backend on the SDK's driver, launch and mount plan
 * (msb/launch.h, msb/mount_plan.h), honest or broken by one defect: the kit's rung and
 * disposal suites held to catching the lies that make a `container` claim false.
 *
 * Honest: the agent is pid 1 of its own pid, mount, network, ipc and uts namespaces, in a
 * root of read-only binds of the host's /usr, /bin, /lib, /lib64, /etc and /sbin, the
 * sandbox's work directory writable at the spec's work_dir, a private /tmp, a minimal /dev,
 * its own /proc; no capabilities, no_new_privs, uid and gid 65534.
 *
 * Built once per CONTAINER_DEFECT (tests/conformance/local.mk):
 *   LYING_DISPOSE    dispose kills the agents and deletes nothing, reporting success
 *   GUEST_DISPOSE    dispose deletes with the guest's authority and hides the failure
 *   HOST_ROOT        the guest stays the host's root, with every capability, root writable
 *   NO_PIDNS         no pid namespace (the guest sees the host's processes)
 *   LEAK_FD          the host's fds are handed to a shell that runs the agent
 * Runs as root only (a mount namespace and pivot_root): the tests skip otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msb/backend.h>
#include <msb/confine.h>
#include <msb/driver.h>
#include <msb/launch.h>
#include <msb/mount_plan.h>

#define NONE 0
#define LYING_DISPOSE 1
#define GUEST_DISPOSE 2
#define HOST_ROOT 3
#define NO_PIDNS 4
#define LEAK_FD 5
#ifndef CONTAINER_DEFECT
#define CONTAINER_DEFECT NONE
#endif
#define GUEST_ID 65534

/* What the agent's process needs to build its root: prepared before the spawn. */
typedef struct plan_arg {
	msb_mount_bind binds[12];
	msb_mount_plan plan;
	int leak[MSB_LAUNCH_KEEP_MAX];
} plan_arg;

static int prepare(void *arg, const char **stage)
{
	return msb_mount_plan_apply(&((plan_arg *)arg)->plan, stage);
}

static msb_errc fx_start(void *ctx, const msb_driver_box *box, msb_error *err)
{
	(void)ctx;
	plan_arg p = { .plan = MSB_MOUNT_PLAN_INIT };
	static const char *const image[] = { "/usr", "/bin", "/lib", "/lib64", "/etc", "/sbin" };
	size_t n = 0;
	for (size_t i = 0; i < sizeof image / sizeof image[0]; i++)
		if (access(image[i], F_OK) == 0)
			p.binds[n++] = (msb_mount_bind){ image[i], image[i], CONTAINER_DEFECT == HOST_ROOT };
	p.binds[n++] = (msb_mount_bind){ box->config->agent_path, "/.msb/agent", false };
	p.binds[n++] = (msb_mount_bind){ box->work_dir, box->spec->work_dir, true };
	char root[4200];
	snprintf(root, sizeof root, "%s/root", box->dir);
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return msb_error_set_errno(err, MSB_E_OS, errno, "fixture: mkdir %s", root);
	p.plan.root = root;
	p.plan.binds = p.binds;
	p.plan.n_binds = n;
	if (CONTAINER_DEFECT != HOST_ROOT) {
		p.plan.uid = p.plan.gid = GUEST_ID;
		if (chown(box->work_dir, GUEST_ID, GUEST_ID) < 0)
			return msb_error_set_errno(err, MSB_E_OS, errno, "fixture: chown %s", box->work_dir);
	} else {
		p.plan.drop_caps = false;
	}
	/* NO_PIDNS keeps the host's /proc: the guest's view of processes is the host's. */
	if (CONTAINER_DEFECT == NO_PIDNS)
		p.binds[n++] = (msb_mount_bind){ "/proc", "/proc", false }, p.plan.n_binds = n,
		p.plan.proc = false;
	msb_agent_config cfg = box->config->agent;
	cfg.work_dir = box->spec->work_dir;
	/* Limits that hold without a cgroup: rlimits on every command (config may narrow them). */
	if (!cfg.rlimits.as_bytes)
		cfg.rlimits.as_bytes = 1u << 30;
	if (!cfg.rlimits.nproc)
		cfg.rlimits.nproc = 512;
	char **argv = NULL;
	char fd[16];
	snprintf(fd, sizeof fd, "%d", MSB_LAUNCH_LISTEN_FD);
	msb_errc rc = msb_agent_config_argv("/.msb/agent", "--listen-fd", fd, &cfg, -1, &argv, err);
	if (rc != MSB_OK)
		return rc;
	msb_launch l = MSB_LAUNCH_INIT;
	l.argv = argv;
	/*
	 * LEAK_FD: the fds go to a shell that stays the namespace's init and runs the agent as
	 * its child. Handed to the agent itself they would be out of the guest's reach (the
	 * agent is not dumpable, sdk/agent/harden.c); a dumpable ancestor is how a runtime's
	 * shim leaks them to the workload.
	 */
	const char *shim[64] = { "/bin/sh", "-c", "\"$@\"; exit $?", "sh" };
	if (CONTAINER_DEFECT == LEAK_FD) {
		size_t a = 4;
		for (size_t i = 0; argv[i] && a < sizeof shim / sizeof shim[0] - 1; i++)
			shim[a++] = argv[i];
		l.argv = (char **)shim;
	}
	l.unshare_flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
			  (CONTAINER_DEFECT == NO_PIDNS ? 0 : CLONE_NEWPID);
	l.prepare = prepare;
	l.prepare_arg = &p;
	/* LEAK_FD: every inheritable fd the host holds beyond stdio, handed in. */
	for (int f = 3; CONTAINER_DEFECT == LEAK_FD && f < 1024 && l.n_keep_fds < MSB_LAUNCH_KEEP_MAX; f++)
		if (fcntl(f, F_GETFD) == 0)
			p.leak[l.n_keep_fds++] = f;
	l.keep_fds = p.leak;
	rc = msb_launch_agent(box, &l, err);
	free(argv);
	return rc;
}

static bool fx_stop(void *ctx, const msb_driver_box *box, msb_disposal_failure *failure)
{
	(void)ctx, (void)box, (void)failure;
	return false; /* not failed: the agent is its pid namespace's init, its death ends everything */
}

static msb_errc fx_init(const msb_node *config, const msb_host *host,
			msb_backend_instance **self, msb_error *err)
{
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = FIXTURE_NAME;
	b.start = fx_start;
	b.stop = fx_stop;
	b.pid_ends_all = CONTAINER_DEFECT != NO_PIDNS;
	return msb_driver_init(&b, config, host, NULL, self, err);
}

#if CONTAINER_DEFECT == LYING_DISPOSE || CONTAINER_DEFECT == GUEST_DISPOSE
/*
 * The lies: every sandbox's agent is killed (the key is not even looked at), and the
 * directories are left (LYING_DISPOSE) or removed by a child holding only the guest's
 * uid, whose failure nobody hears of (GUEST_DISPOSE). Either way: "disposed".
 */
static bool fx_dispose(msb_backend_instance *self, const msb_key *key, msb_disposal_failure *f)
{
	(void)key, (void)f;
	const char *state = msb_driver_instance_config(self)->state_dir;
	DIR *d = opendir(state);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (strncmp(e->d_name, "sk-", 3) != 0 || strchr(e->d_name, '.'))
			continue;
		char dir[4200];
		snprintf(dir, sizeof dir, "%s/%s", state, e->d_name);
		msb_driver_box box = { .name = e->d_name, .dir = dir };
		char pid_path[4300];
		snprintf(pid_path, sizeof pid_path, "%s/agent.pid", dir);
		box.pid_path = pid_path;
		pid_t pid = msb_driver_read_live_pid(&box);
		/* Gone before the lie is told: the kit's next acquire meets a dead sandbox, not a
		 * dying one (whose socket refuses a connection), so each run finds the same. */
		if (pid > 0 && kill(pid, SIGKILL) == 0)
			for (int i = 0; i < 5000 && msb_driver_pid_running(pid); i++)
				usleep(1000);
		if (CONTAINER_DEFECT == GUEST_DISPOSE && fork() == 0) {
			if (setresuid(GUEST_ID, GUEST_ID, GUEST_ID) == 0) {
				char work[4300];
				snprintf(work, sizeof work, "%s/work", dir);
				msb_confine_reclaim(work, dir, NULL);
			}
			_exit(0);
		}
		while (CONTAINER_DEFECT == GUEST_DISPOSE && wait(NULL) > 0)
			;
	}
	if (d)
		closedir(d);
	return false;
}
#else
#define fx_dispose msb_driver_dispose
#endif

MSB_BACKEND_DEFINE(.name = FIXTURE_NAME, .isolation = "container",
		   .declarations = MSB_DRIVER_DECLARATIONS, .init = fx_init,
		   .fini = msb_driver_fini, .acquire = msb_driver_acquire, .dispose = fx_dispose,
		   .dispose_scope = msb_driver_dispose_scope, .release = msb_driver_release,
		   .exec = msb_driver_exec, .run_code = msb_driver_run_code,
		   .write_file = msb_driver_write_file, .stat_file = msb_driver_stat_file,
		   .read_file = msb_driver_read_file, .list_dir = msb_driver_list_dir,
		   .remove = msb_driver_remove, .reclaim = msb_driver_reclaim);
