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
 *   user: 65534, group: 65534    host ids the sandbox runs as when msb runs as root
 *   cgroup_parent: msb/bwrap     where the per-sandbox cgroups go, in every hierarchy
 *   stop_timeout: 10s            how long disposal waits for the cgroup to empty
 */
#ifndef MSB_BWRAP_CONFIG_H
#define MSB_BWRAP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <msb/cgroup.h>
#include <msb/node.h>

#define MSB_BWRAP_CONFIG_KEYS                                                          \
	"bwrap", "images", "memory", "pids", "cpus", "tmp_size", "user", "group",     \
		"cgroup_parent", "stop_timeout"

typedef struct msb_bwrap_image {
	char *name;
	char *root;
} msb_bwrap_image;

typedef struct msb_bwrap_config {
	char *bwrap;              /* absolute path of the engine */
	msb_bwrap_image *images;
	size_t n_images;
	msb_cgroup_limits limits;
	uint64_t tmp_size;
	long uid, gid;            /* -1: run as the caller (msb is not root) */
	char *cgroup_parent;
	double stop_timeout;      /* seconds */
} msb_bwrap_config;

/* Read the plugin's keys from `config` (may be NULL): defaults for what is absent. */
msb_errc msb_bwrap_config_read(const msb_node *config, msb_bwrap_config *out, msb_error *err);
/* The image root for `image` (NULL for the built-in host image); MSB_E_VALUE when unknown. */
msb_errc msb_bwrap_config_image(const msb_bwrap_config *cfg, const char *image, const char **root,
				msb_error *err);
void msb_bwrap_config_free(msb_bwrap_config *cfg);

#endif
