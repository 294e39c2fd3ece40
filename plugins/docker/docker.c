/*
 * plugins/docker/docker.c — the `docker` backend (rung container) and, built again with
 * DOCKER_GVISOR, `docker-gvisor` (rung hardened_container): sandboxes as containers of a
 * Docker or Podman engine, driven through the Engine API over its unix socket (docker_api.c),
 * with the SDK's guest agent as each container's init.
 *
 * The channel to the agent is a bind-mounted socket directory, not the container's attached
 * stdio. Both keep the engine's socket out of the container; the directory wins because a
 * sandbox outlives the msb process that made it: a later `msb exec` with the same key, or
 * several at once from different processes, each connect to the agent's socket and are
 * served side by side (the agent serves each connection in a process of its own), where an
 * attach stream is one byte stream per container — a second process would need a relay that
 * outlives every msb process to share it. The directory is the sandbox's own
 * (<state_dir>/<name>/chan, 0700), holds nothing but that socket, and the host never connects
 * through it (msb_driver_link_socket).
 *
 * This file is the boundary driver: start (create, start, inspect, link the socket), stop
 * (force-remove, verified) and the label sweep around dispose and dispose_scope; the SDK's
 * driver does the rest (msb/driver.h): names from key and kind, the state directory, the
 * file lock that makes acquire one-per-key across processes, forwarding every operation to
 * the agent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include <msb/backend.h>
#include <msb/disk.h>
#include <msb/driver.h>

#include "docker_internal.h"

static const char *const docker_keys[] = { DOCKER_CONFIG_KEYS, NULL };

/*
 * The driver's start callback sees the sandbox's box (its name, spec, paths) but not its
 * key, and the labels must say whose it is. So acquire records (name, key) in the instance's
 * list of acquires under way for the length of the call, and start finds its key by its
 * name. (Not a _Thread_local: dynamic TLS in a dlopen'ed plugin outlives nothing cleanly,
 * and LeakSanitizer's walk of it crashes after a dlclose.) Two acquires of one key share a
 * name and the same key fields, so either entry is the right one.
 */
static const msb_key *pending_key(docker_ctx *ctx, const char *name)
{
	const msb_key *key = NULL;
	pthread_mutex_lock(&ctx->lock);
	for (docker_pending *p = ctx->pending; p && !key; p = p->next)
		if (!strcmp(p->name, name))
			key = p->key;
	pthread_mutex_unlock(&ctx->lock);
	return key;
}

static void ctx_free(void *p)
{
	docker_ctx *ctx = p;
	if (!ctx)
		return;
	free(ctx->socket);
	free(ctx->image);
	free(ctx->runtime);
	pthread_mutex_destroy(&ctx->lock);
	if (ctx->images)
		json_decref(ctx->images);
	free(ctx);
}

/* The engine image for the spec: `images:` maps a spec's name; otherwise the name itself. */
static msb_errc resolve_image(const docker_ctx *ctx, const msb_driver_box *box, const char **out,
			      msb_error *err)
{
	const char *want = box->spec->image;
	if (!want) {
		if (!ctx->image)
			return msb_error_set(err, MSB_E_CONFIG, "backend " DOCKER_NAME ": sandbox %s: "
					     "the spec names no image and the config sets no "
					     "`image:` (an engine image reference, e.g. debian:bookworm)",
					     box->name);
		*out = ctx->image;
		return MSB_OK;
	}
	const char *mapped = ctx->images ? json_string_value(json_object_get(ctx->images, want)) : NULL;
	*out = mapped ? mapped : want;
	return MSB_OK;
}

/* A call whose reply was not what the step needed: the step, the status, the engine's words. */
static msb_errc api_failed(const msb_driver_box *box, const char *step, const docker_reply *r,
			   msb_error *err)
{
	return msb_error_set(err, MSB_E_BACKEND, "backend " DOCKER_NAME ": sandbox %s: %s: the "
			     "engine answered %ld: %s", box->name, step, r->status, r->message);
}

static msb_errc call(const docker_ctx *ctx, const msb_driver_box *box, const char *method,
		     const char *path, json_t *body, docker_reply *r, msb_error *err)
{
	msb_errc rc = docker_api(ctx, method, path, body, r, err);
	if (rc != MSB_OK)
		msb_error_prefix(err, "backend " DOCKER_NAME ": sandbox %s: ", box->name);
	return rc;
}

/* Whether an existing container's labels say it is this sandbox of this state directory. */
static bool labels_ours(const docker_ctx *ctx, const msb_driver_box *box, json_t *inspect)
{
	json_t *labels = json_object_get(json_object_get(inspect, "Config"), "Labels");
	const char *name = json_string_value(json_object_get(labels, DOCKER_LABEL_NAME));
	const char *state = json_string_value(json_object_get(labels, DOCKER_LABEL_STATE));
	const char *backend = json_string_value(json_object_get(labels, DOCKER_LABEL_BACKEND));
	return name && state && backend && !strcmp(name, box->name) &&
	       !strcmp(state, ctx->state_digest) && !strcmp(backend, DOCKER_NAME);
}

/*
 * Create the container. The driver holds the sandbox's file lock, so another msb process
 * using this state directory cannot be starting it too; a 409 (the name is taken) means a
 * container of this name outlived its state (the directory was wiped, or another process's
 * start was cut short after create). If its labels say it is ours, it is adopted when it is
 * running its agent in this very channel directory — a start that another process finished
 * — and otherwise removed and created afresh, once. A container of that name that is not
 * ours is never touched: the start is refused, naming it.
 */
static msb_errc create(const docker_ctx *ctx, const msb_driver_box *box, json_t *body,
		       bool *adopted, msb_error *err)
{
	char path[128];
	snprintf(path, sizeof path, "/containers/create?name=%s", box->name);
	for (int attempt = 0;; attempt++) {
		docker_reply r;
		msb_errc rc = call(ctx, box, "POST", path, body, &r, err);
		if (rc != MSB_OK)
			return rc;
		docker_reply_free(&r);
		if (r.status == 201)
			return MSB_OK;
		if (r.status == 404)
			return msb_error_set(err, MSB_E_BACKEND, "backend " DOCKER_NAME ": sandbox %s: "
					     "the image is not in the engine (%s): import or load it "
					     "first (no registry is pulled from)", box->name, r.message);
		/* Podman 4.3's compat API answers a taken name with 500, not Docker's 409. */
		bool taken = r.status == 409 ||
			     (r.status == 500 && strstr(r.message, "already in use") != NULL);
		if (!taken || attempt > 0)
			return api_failed(box, "create", &r, err);
		char ipath[128];
		snprintf(ipath, sizeof ipath, "/containers/%s/json", box->name);
		docker_reply in;
		rc = call(ctx, box, "GET", ipath, NULL, &in, err);
		if (rc != MSB_OK)
			return rc;
		bool ours = in.status == 200 && labels_ours(ctx, box, in.body);
		bool running = json_is_true(json_object_get(json_object_get(in.body, "State"), "Running"));
		docker_reply_free(&in);
		if (!ours)
			return msb_error_set(err, MSB_E_BACKEND, "backend " DOCKER_NAME ": sandbox %s: "
					     "refused: the engine has a container of that name which "
					     "msb did not create for this sandbox (its labels differ); "
					     "it is left alone", box->name);
		char sock[4300];
		snprintf(sock, sizeof sock, "%s/chan/agent.sock", box->dir);
		struct stat st;
		if (running && lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
			*adopted = true;
			return MSB_OK;
		}
		msb_disposal_failure f = { 0 };
		bool left = docker_remove(ctx, box->name, &f);
		if (left)
			rc = msb_error_set(err, MSB_E_BACKEND, "backend " DOCKER_NAME ": sandbox %s: a "
					   "stale container of that name could not be removed: %s",
					   box->name, f.detail ? f.detail : "");
		msb_disposal_failure_free(&f);
		if (left)
			return rc;
	}
}

/* Start it (304: already started, by an adopted start) and record its init's pid. */
static msb_errc start_and_record(const docker_ctx *ctx, const msb_driver_box *box,
				 json_t **inspect, msb_error *err)
{
	char path[128];
	snprintf(path, sizeof path, "/containers/%s/start", box->name);
	docker_reply r;
	msb_errc rc = call(ctx, box, "POST", path, NULL, &r, err);
	if (rc != MSB_OK)
		return rc;
	docker_reply_free(&r);
	if (r.status != 204 && r.status != 304)
		return api_failed(box, "start", &r, err);
	snprintf(path, sizeof path, "/containers/%s/json", box->name);
	rc = call(ctx, box, "GET", path, NULL, &r, err);
	if (rc != MSB_OK)
		return rc;
	if (r.status != 200) {
		docker_reply_free(&r);
		return api_failed(box, "inspect", &r, err);
	}
	json_t *state = json_object_get(r.body, "State");
	json_int_t pid = json_integer_value(json_object_get(state, "Pid"));
	if (!json_is_true(json_object_get(state, "Running")) || pid <= 0) {
		const char *why = json_string_value(json_object_get(state, "Error"));
		rc = msb_error_set(err, MSB_E_BACKEND, "backend " DOCKER_NAME ": sandbox %s: the "
				   "container is not running after start (exit code %lld%s%s)",
				   box->name,
				   (long long)json_integer_value(json_object_get(state, "ExitCode")),
				   why && *why ? ": " : "", why ? why : "");
		docker_reply_free(&r);
		return rc;
	}
	/* The container's init in the host's pid namespace: its death is the sandbox's. */
	rc = msb_driver_write_pid(box, (pid_t)pid, err);
	if (rc == MSB_OK)
		*inspect = r.body;
	else
		docker_reply_free(&r);
	return rc;
}

static msb_errc docker_start(void *p, const msb_driver_box *box, msb_error *err)
{
	docker_ctx *ctx = p;
	const msb_key *acquiring = pending_key(ctx, box->name);
	const char *image = NULL;
	msb_errc rc = resolve_image(ctx, box, &image, err);
	if (rc != MSB_OK)
		return rc;
	if (!acquiring)
		return msb_error_set(err, MSB_E_BACKEND, "backend " DOCKER_NAME ": sandbox %s: "
				     "started outside acquire", box->name);
	char *chan = msb_driver_path(box->dir, "chan");
	if (!chan)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	if (mkdir(chan, 0700) < 0 && errno != EEXIST) {
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend " DOCKER_NAME ": "
					 "sandbox %s: mkdir %s", box->name, chan);
		free(chan);
		return rc;
	}
	char **argv = NULL;
	rc = msb_driver_agent_argv(box, "--listen", DOCKER_CHANNEL_DIR "/agent.sock",
				   box->spec->work_dir, NULL, -1, &argv, err);
	char key_d[65];
	docker_key_digest(acquiring, key_d);
	/* docker_create_body takes the labels: Jansson's "o" steals them, even on failure. */
	json_t *body = rc == MSB_OK ? docker_create_body(ctx, box, image, chan, argv,
							 docker_labels(ctx, box->name,
								       acquiring->scope,
								       acquiring->thread_id, key_d))
				    : NULL;
	if (rc == MSB_OK && !body)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	bool adopted = false;
	json_t *inspect = NULL;
	if (rc == MSB_OK)
		rc = create(ctx, box, body, &adopted, err);
	if (rc == MSB_OK)
		rc = start_and_record(ctx, box, &inspect, err);
	if (rc == MSB_OK)
		rc = msb_driver_link_socket(box, DOCKER_NAME, chan, err);
#ifdef DOCKER_GVISOR
	if (rc == MSB_OK)
		rc = docker_gvisor_check_sandbox(ctx, box, inspect, err);
#endif
	if (inspect)
		json_decref(inspect);
	if (body)
		json_decref(body);
	free(argv);
	free(chan);
	return rc;
}

/*
 * Remove the sandbox's container — only if its labels say it is this sandbox's: a container
 * someone else made under the same name (a start refused over it ends up here) is left
 * alone. It is removed by the id the inspect named, so a container created under the name
 * after the inspect is never the one removed.
 */
static bool docker_stop(void *p, const msb_driver_box *box, msb_disposal_failure *failure)
{
	const docker_ctx *ctx = p;
	char path[128];
	snprintf(path, sizeof path, "/containers/%s/json", box->name);
	docker_reply r;
	msb_error e = MSB_ERROR_INIT;
	if (docker_api(ctx, "GET", path, NULL, &r, &e) != MSB_OK) {
		msb_disposal_failure_set(failure, e.code == MSB_E_TIMEOUT ? MSB_DISPOSAL_TIMEOUT
					 : MSB_DISPOSAL_UNREACHABLE, "backend " DOCKER_NAME ": sandbox "
					 "%s: %s", box->name, msb_error_message(&e));
		msb_error_clear(&e);
		return true;
	}
	bool failed = false; /* the polarity of dispose (msb/driver.h) */
	const char *id = json_string_value(json_object_get(r.body, "Id"));
	if (r.status == 200 && id && labels_ours(ctx, box, r.body))
		failed = docker_remove(ctx, id, failure);
	else if (r.status != 200 && r.status != 404) {
		msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "backend " DOCKER_NAME ": "
					 "sandbox %s: inspect answered %ld: %s", box->name, r.status,
					 r.message);
		failed = true;
	}
	docker_reply_free(&r);
	return failed;
}

/* Alive beyond its pid: the host's link to the agent's socket is still a socket of ours. */
static bool docker_alive(void *p, const msb_driver_box *box)
{
	(void)p;
	struct stat st;
	return lstat(box->socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid();
}

static msb_errc docker_acquire(msb_backend_instance *self, const msb_key *key,
			       const msb_spec *spec, msb_sandbox_handle **sandbox, msb_error *err)
{
	docker_ctx *ctx = msb_driver_instance_ctx(self);
	if (spec->egress == MSB_EGRESS_ALLOWLIST && !ctx->egress)
		return msb_error_set(err, MSB_E_EGRESS_NOT_ENFORCED, "backend " DOCKER_NAME ": "
				     "refused the '%s' workload's 'allowlist' egress: the agent's "
				     "forwarder hands each connection to the host proxy as a file "
				     "descriptor, and under gVisor a connection is a socket of the "
				     "Sentry's netstack that no host process can receive; only "
				     "'closed' is served", spec->kind);
	docker_pending me = { .key = key };
	msb_driver_sandbox_name(msb_driver_instance_config(self)->state_dir, key, spec->kind, me.name);
	pthread_mutex_lock(&ctx->lock);
	me.next = ctx->pending;
	ctx->pending = &me;
	pthread_mutex_unlock(&ctx->lock);
	msb_errc rc = msb_driver_acquire(self, key, spec, sandbox, err);
	pthread_mutex_lock(&ctx->lock);
	for (docker_pending **pp = &ctx->pending; *pp; pp = &(*pp)->next)
		if (*pp == &me) {
			*pp = me.next;
			break;
		}
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

/*
 * The driver's pass finds what the state directory knows; the sweep then removes, by label,
 * what the engine still runs for this key that the state directory lost.
 */
static bool docker_dispose(msb_backend_instance *self, const msb_key *key,
			   msb_disposal_failure *failure)
{
	bool failed = msb_driver_dispose(self, key, failure);
	char key_d[65];
	docker_key_digest(key, key_d);
	const char *pairs[] = { DOCKER_LABEL_KEY, key_d, NULL };
	uint64_t swept = 0;
	if (docker_sweep(msb_driver_instance_ctx(self), pairs, &swept, failure))
		failed = true;
	return failed;
}

static void docker_dispose_scope(msb_backend_instance *self, const char *scope,
				 const char *thread_id, msb_scope_purge *purge)
{
	msb_driver_dispose_scope(self, scope, thread_id, purge);
	char scope_d[65], thread_d[65];
	docker_digest_field(scope, scope_d);
	docker_digest_field(thread_id, thread_d);
	const char *pairs[] = { DOCKER_LABEL_SCOPE, scope_d, DOCKER_LABEL_THREAD, thread_d, NULL };
	if (docker_sweep(msb_driver_instance_ctx(self), pairs, &purge->disposed, &purge->undisposed))
		purge->has_undisposed = true;
}

/* `images:` — a map of spec image names to engine image references. */
static msb_errc read_images(docker_ctx *ctx, const msb_node *images, msb_error *err)
{
	if (!images || msb_node_is_null(images))
		return MSB_OK;
	if (images->kind != MSB_NODE_MAP)
		return msb_node_error(err, images, MSB_E_CONFIG, "expected a map of image names to "
				      "engine image references");
	ctx->images = json_object();
	for (size_t i = 0; ctx->images && i < images->len; i++) {
		const msb_node *v = images->pairs[i].value;
		if (v->kind != MSB_NODE_SCALAR || !v->scalar || !*v->scalar)
			return msb_node_error(err, v, MSB_E_CONFIG, "expected an engine image reference "
					      "(e.g. debian:bookworm)");
		if (json_object_set_new(ctx->images, images->pairs[i].key, json_string(v->scalar)))
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	return ctx->images ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
}

static msb_errc parse_config(void *p, const msb_node *config, const msb_driver_config *driver,
			     msb_error *err)
{
	docker_ctx *ctx = p;
	const char *socket = "/var/run/docker.sock", *image = NULL, *runtime = NULL;
	msb_errc rc = msb_node_string(config, "socket", &socket, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "image", &image, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "runtime", &runtime, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "memory", &ctx->memory, err);
	if (rc == MSB_OK)
		rc = msb_node_uint(config, "pids", &ctx->pids, err);
	if (rc == MSB_OK)
		rc = msb_node_cpus(config, "cpus", &ctx->cpus, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "tmp_size", &ctx->tmp_size, err);
	if (rc == MSB_OK)
		rc = msb_disk_read(config, DOCKER_NAME, &ctx->disk, err);
	if (rc == MSB_OK)
		rc = msb_node_seconds(config, "api_timeout", &ctx->api_timeout, err);
	if (rc != MSB_OK)
		return rc;
	rc = read_images(ctx, msb_node_get(config, "images"), err);
	if (rc != MSB_OK)
		return rc;
	if (ctx->memory < 16 * MSB_MIB)
		return msb_node_error(err, msb_node_get(config, "memory"), MSB_E_CONFIG,
				      "memory must be at least 16MiB");
	if (ctx->pids < 16)
		return msb_node_error(err, msb_node_get(config, "pids"), MSB_E_CONFIG,
				      "pids must be at least 16 (the agent and a command's pipeline)");
	if (ctx->api_timeout <= 0)
		return msb_node_error(err, msb_node_get(config, "api_timeout"), MSB_E_CONFIG,
				      "api_timeout must be positive");
#ifdef DOCKER_GVISOR
	if (!runtime)
		runtime = "runsc";
#endif
	ctx->socket = strdup(socket);
	ctx->image = image ? strdup(image) : NULL;
	ctx->runtime = runtime ? strdup(runtime) : NULL;
	if (!ctx->socket || (image && !ctx->image) || (runtime && !ctx->runtime))
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	docker_digest_field(driver->state_dir, ctx->state_digest);
	/* The engine must answer now: a backend that cannot reach its engine is not loaded. */
	docker_reply r;
	rc = docker_api(ctx, "GET", "/_ping", NULL, &r, err);
	if (rc != MSB_OK)
		return rc;
	docker_reply_free(&r);
	if (r.status != 200)
		return msb_error_set(err, MSB_E_BACKEND, "the engine at %s answered /_ping with "
				     "%ld: %s", ctx->socket, r.status, r.message);
#ifdef DOCKER_GVISOR
	rc = docker_gvisor_check_engine(ctx, err);
#endif
	return rc;
}

static msb_errc docker_init(const msb_node *config, const msb_host *host,
			    msb_backend_instance **self, msb_error *err)
{
	/* Thread-safe from libcurl 7.84 (Debian's is 7.88); every later call is per handle. */
	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
		return msb_error_set(err, MSB_E_BACKEND, "backend " DOCKER_NAME ": libcurl did not "
				     "initialise");
	docker_ctx *ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->memory = 512 * MSB_MIB;
	ctx->pids = 512;
	ctx->cpus = 1.0;
	ctx->tmp_size = 64 * MSB_MIB;
	/* Not MSB_DISK_DEFAULT's 1 GiB: the tmpfs is charged to the container's memory (512 MiB). */
	ctx->disk = 256 * MSB_MIB;
	ctx->api_timeout = 30.0;
	msb_boundary b = MSB_BOUNDARY_INIT;
	b.name = DOCKER_NAME;
	b.ctx = ctx;
	b.ctx_free = ctx_free;
	b.start = docker_start;
	b.stop = docker_stop;
	b.alive = docker_alive;
	/* The agent is the init of the container's pid namespace: its death ends everything. */
	b.pid_ends_all = true;
	/* The container's network is loopback alone and the proxy's directory is bound in at its
	 * own path (docker_create.c): the driver enforces `egress: allowlist` (issue 24). */
	b.egress = true;
#ifndef DOCKER_GVISOR
	ctx->egress = true; /* docker-gvisor: {closed}, see docker_instance_declarations */
#endif
	b.configure = parse_config;
	return msb_driver_init(&b, config, host, docker_keys, self, err);
}

/*
 * `egress: allowlist` is declared, and observes_egress with it, only by an instance whose
 * sandboxes reach the host proxy, verified by the egress suite (issue 24): docker, on
 * dockerd and Podman. docker-gvisor narrows to {closed}: the forwarder passes each accepted
 * guest connection to the proxy by SCM_RIGHTS, and under gVisor that connection lives in
 * the Sentry's netstack, with no host descriptor to pass (tried with runsc 20221219 and
 * --host-uds=all, the directory bound read-only and read-write: no decision reaches the
 * proxy, the kit's allowlist cases fail), so it is not claimed.
 */
static const bool docker_unobserved = false; /* stated: unstated would keep the base's true */
static const msb_declarations docker_closed = {
	.capabilities = MSB_WORDS("exec", "run_code", "files_in", "files_out", "files_list",
				  "files_delete"),
	.egress_modes = MSB_WORDS("closed"),
	.os_families = MSB_WORDS("posix"),
	.isolation_scopes = MSB_WORDS("conversation", "call"),
	.observes_egress = &docker_unobserved,
};

static const msb_declarations *docker_instance_declarations(msb_backend_instance *self)
{
	const docker_ctx *ctx = msb_driver_instance_ctx(self);
	return ctx->egress ? NULL : &docker_closed;
}

MSB_BACKEND_DEFINE(.name = DOCKER_NAME, .isolation = DOCKER_RUNG,
		   .declarations = MSB_DRIVER_EGRESS_DECLARATIONS, .init = docker_init,
		   .instance_declarations = docker_instance_declarations,
		   .fini = msb_driver_fini, .acquire = docker_acquire, .dispose = docker_dispose,
		   .dispose_scope = docker_dispose_scope, .release = msb_driver_release,
		   .exec = msb_driver_exec, .run_code = msb_driver_run_code,
		   .write_file = msb_driver_write_file, .stat_file = msb_driver_stat_file,
		   .read_file = msb_driver_read_file, .list_dir = msb_driver_list_dir,
		   .remove = msb_driver_remove, .reclaim = msb_driver_reclaim,
		   .exec_stream = msb_driver_exec_stream, .bg_start = msb_driver_bg_start,
		   .bg_read = msb_driver_bg_read, .bg_signal = msb_driver_bg_signal,
		   .bg_list = msb_driver_bg_list);
