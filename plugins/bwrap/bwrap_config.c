/*
 * bwrap_config.c — reading the `bwrap` backend's own keys. Strings are copied: the plugin
 * keeps them for as long as the instance lives, whatever becomes of the parsed tree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/disk.h>

#include "bwrap_config.h"

/* A bare engine name is resolved once here: the launcher execs from a forked child, where
 * searching PATH (and allocating) is not safe. */
static msb_errc resolve_engine(const char *name, char **out, const msb_node *at, msb_error *err)
{
	if (strchr(name, '/')) {
		if (access(name, X_OK) != 0)
			return msb_node_error(err, at, MSB_E_CONFIG, "bwrap: engine %s is not executable: %s",
					      name, strerror(errno));
		*out = strdup(name);
		return *out ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "bwrap: out of memory");
	}
	const char *path = getenv("PATH");
	char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return msb_error_set(err, MSB_E_NOMEM, "bwrap: out of memory");
	char *save = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char *cand = NULL;
		if (asprintf(&cand, "%s/%s", dir, name) < 0)
			break;
		if (access(cand, X_OK) == 0) {
			free(copy);
			*out = cand;
			return MSB_OK;
		}
		free(cand);
	}
	free(copy);
	return msb_error_set(err, MSB_E_BACKEND,
			     "bwrap: the engine \"%s\" was not found on PATH (install the bubblewrap "
			     "package, or set config.bwrap to its path)",
			     name);
}

static msb_errc read_id(const msb_node *config, const char *key, long *id, msb_error *err)
{
	uint64_t v = (uint64_t)*id;
	msb_errc rc = msb_node_uint(config, key, &v, err);
	if (rc)
		return rc;
	if (v == 0)
		return msb_node_error(err, msb_node_get(config, key), MSB_E_CONFIG,
				      "the sandbox must not run as root (0): name an unprivileged id");
	if (v > 0x7fffffff)
		return msb_node_error(err, msb_node_get(config, key), MSB_E_CONFIG, "id out of range");
	*id = (long)v;
	return MSB_OK;
}

msb_errc msb_bwrap_config_read(const msb_node *config, msb_bwrap_config *out, msb_error *err)
{
	memset(out, 0, sizeof *out);
	out->limits.memory_bytes = 512 * (uint64_t)1024 * 1024;
	out->limits.pids = 256;
	out->limits.cpus = 1.0;
	out->tmp_size = 64 * (uint64_t)1024 * 1024;
	out->stop_timeout = 10.0;
	/* As root, the sandbox drops to nobody: a namespace escape then lands unprivileged. */
	out->uid = out->gid = geteuid() == 0 ? 65534 : -1;
	const char *engine = "bwrap", *parent = "msb/bwrap";
	msb_errc rc = msb_node_string(config, "bwrap", &engine, err);
	if (!rc)
		rc = msb_node_size(config, "memory", &out->limits.memory_bytes, err);
	if (!rc)
		rc = msb_node_uint(config, "pids", &out->limits.pids, err);
	if (!rc && out->limits.pids && out->limits.pids < MSB_BWRAP_PIDS_MIN)
		rc = msb_node_error(err, msb_node_get(config, "pids"), MSB_E_CONFIG,
				    "pids %llu is below the %d one command needs: the keeper, bwrap, "
				    "its init, the agent with its waiting and serving processes, and the "
				    "command (0 for no limit)", (unsigned long long)out->limits.pids,
				    MSB_BWRAP_PIDS_MIN);
	if (!rc)
		rc = msb_node_cpus(config, "cpus", &out->limits.cpus, err);
	if (!rc)
		rc = msb_node_size(config, "tmp_size", &out->tmp_size, err);
	out->disk = MSB_DISK_DEFAULT;
	if (!rc)
		rc = msb_disk_read(config, "bwrap", &out->disk, err);
	const msb_node *user = msb_node_get(config, "user");
	out->id_base = 1000000;
	out->id_count = 1000000;
	if (user && user->kind == MSB_NODE_SCALAR && strcmp(user->scalar, "per-sandbox") == 0)
		out->per_sandbox_ids = true;
	else if (!rc && geteuid() == 0)
		rc = read_id(config, "user", &out->uid, err);
	if (!rc)
		rc = msb_node_uint(config, "id_base", &out->id_base, err);
	if (!rc)
		rc = msb_node_uint(config, "id_count", &out->id_count, err);
	/* Compared without the sum, which a huge id_count would wrap past the bound. */
	if (!rc && (out->id_base == 0 || out->id_count == 0 || out->id_base > 0x7fffffff ||
		    out->id_count > 0x7fffffff - out->id_base))
		rc = msb_node_error(err, msb_node_get(config, "id_base") ? msb_node_get(config, "id_base")
									   : msb_node_get(config, "id_count"),
				    MSB_E_CONFIG, "expected 0 < id_base and id_base + id_count <= 2147483647");
	if (!rc && geteuid() == 0 && !out->per_sandbox_ids)
		rc = read_id(config, "group", &out->gid, err);
	if (!rc)
		rc = msb_node_string(config, "cgroup_parent", &parent, err);
	if (!rc && (parent[0] == '/' || strstr(parent, "..") || !parent[0]))
		rc = msb_node_error(err, msb_node_get(config, "cgroup_parent"), MSB_E_CONFIG,
				    "expected a relative path without \"..\" (e.g. msb/bwrap)");
	if (!rc && !(out->cgroup_parent = strdup(parent)))
		rc = msb_error_set(err, MSB_E_NOMEM, "bwrap: out of memory");
	if (!rc)
		rc = msb_node_seconds(config, "stop_timeout", &out->stop_timeout, err);
	if (!rc && out->stop_timeout <= 0)
		rc = msb_node_error(err, msb_node_get(config, "stop_timeout"), MSB_E_CONFIG,
				    "expected a positive duration");
	if (!rc)
		rc = msb_images_read(config, &out->images, err);
	if (!rc)
		rc = resolve_engine(engine, &out->bwrap, msb_node_get(config, "bwrap"), err);
	if (rc)
		msb_bwrap_config_free(out);
	return rc;
}

void msb_bwrap_config_ids(const msb_bwrap_config *cfg, const char *name, long *uid, long *gid)
{
	*uid = cfg->uid;
	*gid = cfg->gid;
	if (!cfg->per_sandbox_ids || geteuid() != 0)
		return;
	/* FNV-1a over the name (itself a hash of the key): stable across processes, so every
	 * msb that starts this sandbox picks the same ids. Two names may land on one id; the
	 * sandboxes then share an id as they all would without this option. */
	uint64_t h = 1469598103934665603u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211u;
	*uid = *gid = (long)(cfg->id_base + h % cfg->id_count);
}

void msb_bwrap_config_free(msb_bwrap_config *cfg)
{
	msb_images_free(&cfg->images);
	free(cfg->bwrap);
	free(cfg->cgroup_parent);
	memset(cfg, 0, sizeof *cfg);
}
