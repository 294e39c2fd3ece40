/*
 * plugins/gvisor/gvisor_internal.h — what the gvisor backend's files share: its
 * configuration, the OCI bundle it writes, and running runsc with a bound.
 */
#ifndef MSB_GVISOR_INTERNAL_H
#define MSB_GVISOR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <msb/cgroup.h>
#include <msb/driver.h>
#include <msb/image.h>

#define GVISOR_CONFIG_KEYS "runsc", "platform", "memory", "pids", "cpus", "images", "images_dir", "tmp_size", "disk"

typedef struct gvisor_ctx {
	char *runsc;          /* the engine */
	char *platform;       /* ptrace | systrap | kvm */
	uint64_t memory;      /* bytes; the OCI memory limit */
	uint64_t pids;        /* the OCI pids limit: gVisor's own host threads count too */
	double cpus;          /* CPU quota in CPUs; 0: none */
	uint64_t tmp_size;    /* /tmp tmpfs size */
	uint64_t disk;        /* the work directory's tmpfs size (msb/disk.h) */
	msb_images images;    /* config `images:` name → root directory; "host" is built in */
} gvisor_ctx;

/* Where the agent's socket directory is mounted inside the container. */
#define GVISOR_CHANNEL_DIR "/.msb"
/* Where the agent binary is mounted inside the container. */
#define GVISOR_AGENT_PATH "/.msb-agent"
/* Where a host-image root gets msb-statx.so: the path the agent looks for (agent_internal.h). */
#define GVISOR_STATX_SHIM_PATH "/.msb-statx.so"

/* Where every sandbox's cgroup lives, in each hierarchy. */
#define GVISOR_CGROUP_PARENT "msb/gvisor"

/*
 * The sandbox's cgroup leaf under msb/gvisor/: its name plus a hash of the state directory,
 * because sandbox names come from keys alone and two state directories (two users, two
 * configurations) may each hold a sandbox for the same key.
 */
void gvisor_cgroup_leaf(const msb_driver_box *box, char out[64]);

/*
 * Write <box->dir>/bundle/config.json for `root` (the image's root directory; NULL: the
 * built-in `host` image, assembled in <box->dir>/rootfs): the agent as the container's only
 * process, listening in the channel directory.
 */
msb_errc gvisor_bundle_write(const gvisor_ctx *ctx, const msb_driver_box *box, const char *root,
			     const char *chan_dir, msb_error *err);

/*
 * Run runsc with the backend's global flags (its state in `runsc_root`), then `args`
 * (NULL-terminated), with stdin from /dev/null and stdout and stderr into `log` (NULL:
 * /dev/null), killing it after `timeout` seconds; *status is its wait status, MSB_E_TIMEOUT
 * when it had to be killed. runsc is born inside `cg` (NULL: the caller's cgroup), so
 * everything it starts is too; a join that failed is an error, and runsc is then not run.
 *
 * It runs under a reaper daemon of its own: `runsc run --detach` leaves the sandbox and
 * gofer processes behind, and on a host whose init reaps late or never (a container's PID 1
 * often does) they would stay zombies once killed. The reaper is a child subreaper outside
 * the cgroup: they become its children, and it reaps them and exits. It does that as
 * `reap_with --reap` (the msb-agent binary, required), a small static program it execs as
 * soon as runsc is running, and which reports runsc's status: until then it shares the
 * host's memory, so the launch copies nothing of the host (gvisor_runsc.c).
 */
msb_errc gvisor_runsc_reaped(const gvisor_ctx *ctx, const char *runsc_root, const msb_cgroup *cg,
			     const char *const *args, const char *log, const char *reap_with,
			     double timeout, int *status, msb_error *err);

/*
 * The boundary's stop: kill everything in the sandbox's cgroup (<box->dir>/cgroup lists it)
 * and remove it, then runsc's state (<box->dir>/runsc), then check that no mount is left in
 * the sandbox's directory. True, with `failure` saying what is left, when any step failed
 * (the polarity of dispose and of the boundary's stop, msb/driver.h); false when all went.
 */
bool gvisor_dispose(const msb_driver_box *box, double timeout, msb_disposal_failure *failure);

#endif
