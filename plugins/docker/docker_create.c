/*
 * plugins/docker/docker_create.c — the body of POST /containers/create: the guest agent as
 * the container's init, and every restriction the sandbox gets from the engine.
 *
 * What each piece is for:
 *  - Entrypoint: the static msb-agent, bound read-only from the host at /.msb-agent, so any
 *    image serves (it needs no msb inside) and a warm exec is one agent round trip, not an
 *    engine exec (a process start in the engine and the runtime per command);
 *  - the channel: <sandbox dir>/chan bound at /.msb, where the agent binds its socket — one
 *    narrow host path of the sandbox's own, never the engine's socket (a container that can
 *    reach the engine's socket is root on the host);
 *  - CapDrop ALL: the agent needs no capability (it forks, kills its own process groups,
 *    lowers rlimits and works in directories it owns); root inside without capabilities
 *    cannot mount, trace, load modules, raise limits or chown;
 *  - no-new-privileges: no setuid binary in an image can give back what was dropped;
 *  - ReadonlyRootfs, with the work directory (`disk:`) and /tmp (`tmp_size`) as tmpfs, and
 *    the engine's own /dev/shm held to tmp_size as well (ShmSize; 64 MiB by default): each
 *    size-bounded and inside the container's memory, so a command cannot change the image
 *    other sandboxes run from, a fill stops at ENOSPC, and nothing it writes reaches the
 *    host's disk;
 *  - Memory (= MemorySwap: no swap), PidsLimit, NanoCpus: from the config;
 *  - NetworkMode none: a network namespace with loopback alone, for every spec: `egress:
 *    closed` is that; `egress: allowlist` (issue 24) adds no route either — the only way
 *    out is the host proxy's unix socket (sdk/egress), its directory <dir>/egress bound
 *    read-only at the same path, which the agent's forwarder connects to for each allowed
 *    name it serves on a loopback address; the hosts file the driver wrote there is bound
 *    over /etc/hosts (a user mount there replaces the engine's own), and
 *    net.ipv4.ip_unprivileged_port_start=0 in the container's own network namespace lets
 *    the agent, which holds no CAP_NET_BIND_SERVICE, listen on port 80 or 443 of its
 *    loopback (the namespace has nothing else to bind);
 *  - Labels: whose container it is (docker_labels.c).
 */
#include <stdio.h>
#include <string.h>

#include "docker_internal.h"

#define PATH_ENV "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static json_t *tmpfs_opts(uint64_t size)
{
	char buf[128];
	/* exec: a command may run what it wrote, as in every other backend's work directory. */
	snprintf(buf, sizeof buf, "rw,nosuid,nodev,exec,size=%llu", (unsigned long long)size);
	return json_string(buf);
}

/* `egress: allowlist`: the proxy's socket directory at its own path, its hosts file over /etc/hosts. */
static int egress_mounts(json_t *mounts, const char *egress_socket)
{
	char dir[4200], hosts[4300];
	const char *slash = strrchr(egress_socket, '/');
	size_t n = slash ? (size_t)(slash - egress_socket) : 0;
	if (n == 0 || n >= sizeof dir)
		return -1;
	memcpy(dir, egress_socket, n);
	dir[n] = '\0';
	snprintf(hosts, sizeof hosts, "%s/" MSB_EGRESS_HOSTS_LEAF, dir);
	return json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:b}", "Type", "bind",
							"Source", dir, "Target", dir,
							"ReadOnly", 1)) ||
	       json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:b}", "Type", "bind",
							"Source", hosts, "Target", "/etc/hosts",
							"ReadOnly", 1)) ? -1 : 0;
}

json_t *docker_create_body(const docker_ctx *ctx, const msb_driver_box *box, const char *image,
			   const char *chan, char *const *agent_argv, json_t *labels)
{
	json_t *cmd = json_array();
	for (char *const *a = agent_argv + 1; cmd && *a; a++)
		json_array_append_new(cmd, json_string(*a));
	json_t *tmpfs = json_object();
	json_object_set_new(tmpfs, "/tmp", tmpfs_opts(ctx->tmp_size));
	json_object_set_new(tmpfs, box->spec->work_dir, tmpfs_opts(ctx->disk));
	json_t *mounts = json_pack("[{s:s, s:s, s:s, s:b}, {s:s, s:s, s:s, s:b}]",
				   "Type", "bind", "Source", box->config->agent_path,
				   "Target", DOCKER_AGENT_PATH, "ReadOnly", 1,
				   "Type", "bind", "Source", chan, "Target", DOCKER_CHANNEL_DIR,
				   "ReadOnly", 0);
	if (mounts && box->egress_socket && egress_mounts(mounts, box->egress_socket) < 0) {
		json_decref(mounts);
		mounts = NULL;
	}
	json_t *host = json_pack("{s:s, s:b, s:[s], s:[s], s:o, s:o, s:I, s:I, s:I, s:I, s:{s:s}, s:b}",
				 "NetworkMode", "none", "ReadonlyRootfs", 1, "CapDrop", "ALL",
				 "SecurityOpt", "no-new-privileges", "Mounts", mounts,
				 "Tmpfs", tmpfs, "Memory", (json_int_t)ctx->memory,
				 "MemorySwap", (json_int_t)ctx->memory,
				 "PidsLimit", (json_int_t)ctx->pids,
				 "ShmSize", (json_int_t)ctx->tmp_size, "RestartPolicy", "Name", "no",
				 "Init", 0);
	/* An IPC namespace of its own that no other container may join: no SysV object or POSIX
	 * queue is shared with anyone. (Podman 4.3's compat API keeps its own "shareable" — still
	 * a namespace of the container's own, joined only by a container created to join it.) */
	if (host)
		json_object_set_new(host, "IpcMode", json_string("private"));
	if (host && box->egress_socket)
		json_object_set_new(host, "Sysctls",
				    json_pack("{s:s}", "net.ipv4.ip_unprivileged_port_start", "0"));
	if (host && ctx->cpus > 0)
		json_object_set_new(host, "NanoCpus", json_integer((json_int_t)(ctx->cpus * 1e9)));
	if (host && ctx->runtime)
		json_object_set_new(host, "Runtime", json_string(ctx->runtime));
	json_t *body = json_pack("{s:s, s:[s], s:o, s:[s], s:s, s:s, s:b, s:o, s:o, s:s}",
				 "Image", image, "Entrypoint", DOCKER_AGENT_PATH, "Cmd", cmd,
				 "Env", PATH_ENV, "User", "0:0", "WorkingDir", "/",
				 "NetworkDisabled", 1, "Labels", labels, "HostConfig", host,
				 "Hostname", "sandbox");
	return body;
}
