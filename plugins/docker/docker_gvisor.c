/*
 * plugins/docker/docker_gvisor.c — what lets `docker-gvisor` claim hardened_container: it
 * verifies, never trusts, that its sandboxes run under gVisor.
 *
 * The rung is a claim about the kernel a command talks to. A runtime named "runsc" in a
 * config proves nothing (an operator's daemon.json can give any binary that name), so there
 * are two checks, and failing either refuses:
 *  - at init: the engine is not Podman (GET /version names its components): Podman's
 *    Docker-compatible API (4.3) accepts HostConfig.Runtime and ignores it, so a container
 *    asked for under runsc runs under Podman's default runtime, on the host's kernel; and the
 *    engine lists the runtime (GET /info, Runtimes) with a path that is a runsc. Otherwise the
 *    backend does not load;
 *  - per sandbox, before it is handed out: the engine says the container runs under that
 *    runtime (inspect, HostConfig.Runtime), and a probe inside — the agent reading
 *    /proc/version — sees gVisor's kernel, not the host's: the Sentry answers with its own
 *    fixed version string, where any runtime sharing the host kernel shows the host's.
 *    Otherwise the acquire fails and the container is removed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "docker_internal.h"



/* What gVisor's Sentry reports as its kernel (pkg/sentry/fs/proc, every release so far). */
#define GVISOR_KERNEL_MARK "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016"

/* The engine's product when it is Podman ("Podman Engine 4.3.1"), else NULL. */
static const char *podman_component(json_t *version, char *buf, size_t size)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(version, "Components"), i, c) {
		const char *name = json_string_value(json_object_get(c, "Name"));
		if (name && strncmp(name, "Podman", 6) == 0) {
			const char *v = json_string_value(json_object_get(c, "Version"));
			snprintf(buf, size, "%s %s", name, v ? v : "");
			return buf;
		}
	}
	return NULL;
}

msb_errc docker_gvisor_check_engine(const docker_ctx *ctx, msb_error *err)
{
	docker_reply r;
	msb_errc rc = docker_api(ctx, "GET", "/version", NULL, &r, err);
	if (rc != MSB_OK)
		return rc;
	char product[160];
	const char *podman = r.status == 200 ? podman_component(r.body, product, sizeof product) : NULL;
	if (podman)
		rc = msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED, "refused to load: the engine at "
				   "%s is %s, whose Docker-compatible API ignores the runtime a "
				   "container is created with (HostConfig.Runtime): its containers "
				   "would run under Podman's default runtime on the host's kernel, so "
				   "it cannot serve hardened_container (use dockerd with runsc "
				   "registered, or the docker backend at rung container)",
				   ctx->socket, podman);
	docker_reply_free(&r);
	if (rc != MSB_OK)
		return rc;
	rc = docker_api(ctx, "GET", "/info", NULL, &r, err);
	if (rc != MSB_OK)
		return rc;
	json_t *rt = json_object_get(json_object_get(r.body, "Runtimes"), ctx->runtime);
	const char *path = json_string_value(json_object_get(rt, "path"));
	const char *base = path ? strrchr(path, '/') : NULL;
	base = base ? base + 1 : path;
	if (r.status != 200 || !rt)
		rc = msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED, "refused to load: "
				   "the engine at %s has no runtime '%s' (register "
				   "runsc in its daemon.json with runtimeArgs [\"--network=none\", "
				   "\"--host-uds=create\"]); without gVisor it cannot serve "
				   "hardened_container", ctx->socket, ctx->runtime);
	else if (!base || strcmp(base, "runsc") != 0)
		rc = msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED, "refused to load: "
				   "the engine's runtime '%s' is %s, not runsc; "
				   "hardened_container is served only under gVisor", ctx->runtime,
				   path ? path : "(no path)");
	docker_reply_free(&r);
	return rc;
}

msb_errc docker_gvisor_check_sandbox(const docker_ctx *ctx, const msb_driver_box *box,
				     json_t *inspect, msb_error *err)
{
	const char *rt = json_string_value(json_object_get(json_object_get(inspect, "HostConfig"),
							    "Runtime"));
	if (!rt || strcmp(rt, ctx->runtime) != 0)
		return msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED, "backend " DOCKER_NAME ": "
				     "sandbox %s refused: the engine runs it under runtime '%s', not "
				     "'%s'", box->name, rt ? rt : "(none)", ctx->runtime);
	/*
	 * Under runsc the socket's file exists from the agent's bind(), a moment before its
	 * listen(): a refused connect then is the agent not listening yet, so it is retried
	 * until start_timeout (a peer of another version is not).
	 */
	msb_agent_client *client = NULL;
	int64_t deadline = msb_agent_now_ms() + (int64_t)(box->config->start_timeout * 1000.0);
	msb_errc rc;
	for (int delay = 1;; delay = delay < 50 ? delay * 2 : 50) {
		msb_error_clear(err);
		rc = msb_agent_client_open_unix(box->socket_path, box->config->start_timeout,
						&client, err);
		if (rc == MSB_OK || rc == MSB_E_PROTOCOL || msb_agent_now_ms() >= deadline)
			break;
		nanosleep(&(struct timespec){ 0, delay * 1000000L }, NULL);
	}
	if (rc != MSB_OK)
		return msb_error_prefix(err, "backend " DOCKER_NAME ": sandbox %s: its agent: ",
					box->name);
	msb_buf version = { 0 };
	rc = msb_agent_read_file(client, "version", "/proc", 4096, &version, err);
	if (rc != MSB_OK) {
		msb_agent_client_close(client);
		return msb_error_prefix(err, "backend " DOCKER_NAME ": sandbox %s refused: the gVisor "
					"probe could not read /proc/version: ", box->name);
	}
	char host[512] = "";
	FILE *f = fopen("/proc/version", "re");
	if (f) {
		if (!fgets(host, sizeof host, f))
			host[0] = '\0';
		fclose(f);
	}
	const char *inside = version.data ? (const char *)version.data : "";
	bool gvisor = strstr(inside, GVISOR_KERNEL_MARK) != NULL && strcmp(inside, host) != 0;
	if (!gvisor) {
		char shown[120];
		snprintf(shown, sizeof shown, "%s", inside);
		shown[strcspn(shown, "\n")] = '\0';
		rc = msb_error_set(err, MSB_E_BACKEND_NOT_PERMITTED, "backend " DOCKER_NAME ": "
				   "sandbox %s refused: the probe inside does not see gVisor's kernel "
				   "(/proc/version: \"%s\"), so it cannot be served as "
				   "hardened_container", box->name, shown);
		msb_agent_client_close(client);
	} else {
		*box->greeted = client; /* the driver uses the probe's client, already HELLO'd */
	}
	msb_buf_free(&version);
	return rc;
}


