/*
 * bwrap_config.h — the `bwrap` backend's own `config:` keys (the driver reads the common
 * ones: state_dir, agent, run_code, timeout, rlimit_*, …).
 *
 *   bwrap: /usr/bin/bwrap        the engine; a bare name is looked up on PATH at init
 *   images: {name: /root/dir}    what a spec's `image` may name; "host" is built in
 *   memory: 512MiB               memory cgroup ceiling (0: none)
 *   pids: 256                    pids cgroup ceiling: what holds a fork bomb (0: none)
 *   cpus: 1                      CPU bandwidth, in CPUs (0: none)
 *   tmp_size: 64MiB              the private /tmp's tmpfs size
 *   disk: 1GiB                   the work directory's tmpfs size (msb/disk.h): a guest
 *                                writing past it gets ENOSPC, never the host's disk
 *   user: 65534, group: 65534    host ids the sandbox runs as when msb runs as root;
 *                                `user: per-sandbox` gives each sandbox ids of its own,
 *                                id_base + a hash of its name modulo id_count (user and
 *                                group alike), so one sandbox's files are not another's
 *   id_base: 1000000, id_count: 1000000   the range per-sandbox ids are drawn from
 *   cgroup_parent: msb/bwrap     where the per-sandbox cgroups go, in every hierarchy
 *   stop_timeout: 10s            how long disposal waits for the cgroup to empty
 */
#ifndef MSB_BWRAP_CONFIG_H
#define MSB_BWRAP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/cgroup.h>
#include <msb/image.h>
#include <msb/node.h>

/*
 * The tasks one command needs in the sandbox's pids cgroup: the keeper, bwrap, its init, the
 * agent's supervisor, its waiting and its serving process, and the command. With fewer a
 * start or the first exec fails on a fork (measured: 3 fails bwrap's own fork, 4 leaves the
 * agent unable to answer until start_timeout, 5 and 6 fail the exec), so it is refused at load.
 */
#define MSB_BWRAP_PIDS_MIN 7

#define MSB_BWRAP_CONFIG_KEYS                                                          \
	"bwrap", "images", "images_dir", "memory", "pids", "cpus", "tmp_size", "user", "group",     \
		"cgroup_parent", "stop_timeout", "id_base", "id_count", "disk"

typedef struct msb_bwrap_config {
	char *bwrap;              /* absolute path of the engine */
	msb_images images;        /* config `images:`; "host" is built in */
	msb_cgroup_limits limits;
	uint64_t tmp_size;
	uint64_t disk;            /* the work directory's tmpfs size */
	long uid, gid;            /* -1: run as the caller (msb is not root) */
	bool per_sandbox_ids;     /* uid = gid = id_base + hash(name) % id_count */
	uint64_t id_base, id_count;
	char *cgroup_parent;
	double stop_timeout;      /* seconds */
} msb_bwrap_config;

/* Read the plugin's keys from `config` (may be NULL): defaults for what is absent. */
msb_errc msb_bwrap_config_read(const msb_node *config, msb_bwrap_config *out, msb_error *err);
/* The host ids the sandbox `name` runs as (-1, -1 when msb is not root). */
void msb_bwrap_config_ids(const msb_bwrap_config *cfg, const char *name, long *uid, long *gid);
void msb_bwrap_config_free(msb_bwrap_config *cfg);

#endif
