/*
 * plugins/docker/docker_internal.h — what the docker backend's files share: its
 * configuration, the Engine API client (libcurl over the engine's unix socket, Jansson for
 * the bodies), the container it creates, and the labels that are the engine-side truth.
 *
 * One source, two descriptors: built plain it is `docker` (rung container, whatever runtime
 * the engine runs by default); built with DOCKER_GVISOR it is `docker-gvisor` (rung
 * hardened_container), which serves only a runtime it has verified to be gVisor.
 */
#ifndef MSB_DOCKER_INTERNAL_H
#define MSB_DOCKER_INTERNAL_H

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

#include <msb/driver.h>

#ifdef DOCKER_GVISOR
#define DOCKER_NAME "docker-gvisor"
#define DOCKER_RUNG "hardened_container"
#else
#define DOCKER_NAME "docker"
#define DOCKER_RUNG "container"
#endif

#define DOCKER_CONFIG_KEYS                                                             \
	"socket", "image", "images", "memory", "pids", "cpus", "tmp_size", "disk", \
		"runtime", "api_timeout"

/* The key of a sandbox being acquired, as its start callback needs it for the labels. */
typedef struct docker_pending {
	char name[36];            /* the sandbox's name (msb_driver_sandbox_name) */
	const msb_key *key;
	struct docker_pending *next;
} docker_pending;

typedef struct docker_ctx {
	char *socket;          /* the engine's API socket (default /var/run/docker.sock) */
	char *image;           /* the engine image for a spec naming none; NULL: none */
	json_t *images;        /* `images:` spec image name → engine image reference */
	uint64_t memory;       /* bytes; HostConfig.Memory (and MemorySwap: no swap) */
	uint64_t pids;         /* HostConfig.PidsLimit */
	double cpus;           /* HostConfig.NanoCpus / 1e9; 0: none */
	uint64_t tmp_size;     /* /tmp (and /dev/shm) tmpfs size */
	uint64_t disk;         /* `disk:` (msb/disk.h): the work directory's tmpfs size */
	char *runtime;         /* HostConfig.Runtime; NULL: the engine's default */
	double api_timeout;    /* seconds, every API call */
	char state_digest[65]; /* SHA-256 of the state directory: the label msb.state */
	pthread_mutex_t lock;  /* guards pending */
	docker_pending *pending; /* acquires under way on any thread */
	bool egress;           /* `egress: allowlist` served (issue 24): docker only; see docker.c */
} docker_ctx;

/* Where the agent's channel directory and binary appear inside the container. */
#define DOCKER_CHANNEL_DIR "/.msb"
#define DOCKER_AGENT_PATH "/.msb-agent"

/* Label names: every value is a full SHA-256 hex digest (or the full sandbox name). */
#define DOCKER_LABEL_BACKEND "dev.msb.backend"
#define DOCKER_LABEL_NAME "dev.msb.name"
#define DOCKER_LABEL_STATE "dev.msb.state"
#define DOCKER_LABEL_SCOPE "dev.msb.scope"
#define DOCKER_LABEL_THREAD "dev.msb.thread"
#define DOCKER_LABEL_KEY "dev.msb.key"

/* One API reply: the HTTP status and the parsed body (NULL when empty or not JSON). */
typedef struct docker_reply {
	long status;
	json_t *body;
	char message[512];     /* the engine's "message", or the raw body's head, for errors */
} docker_reply;

/*
 * One Engine API call: `method` on `path` (after the version prefix, e.g.
 * "/containers/create?name=…"), with `body` as JSON when non-NULL. A reply that is not
 * HTTP, a body over the cap, an unreachable socket or a call over api_timeout is an error
 * (MSB_E_BACKEND, MSB_E_TIMEOUT); any HTTP status is a reply, for the caller to judge.
 */
msb_errc docker_api(const docker_ctx *ctx, const char *method, const char *path, json_t *body,
		    docker_reply *reply, msb_error *err);
void docker_reply_free(docker_reply *reply);
/* `s` escaped for a URL's query or path segment, malloc'ed (NULL when out of memory). */
char *docker_escape(const char *s);

/* The hex SHA-256 of `len` bytes, into out[65]. */
void docker_sha256_hex(const void *data, size_t len, char out[65]);
/* The labels of a sandbox of `key` named `name` (the container's Labels object). */
json_t *docker_labels(const docker_ctx *ctx, const char *name, const char *scope,
		      const char *thread_id, const char *key_digest);
/* The digest of one key field (length-prefixed; NULL reads as ""), into out[65]. */
void docker_digest_field(const char *s, char out[65]);
/* The digest of a whole key, length-prefixed field by field: the label msb.key. */
void docker_key_digest(const msb_key *key, char out[65]);

/* The body of POST /containers/create for `box` (the agent as init, every restriction). */
json_t *docker_create_body(const docker_ctx *ctx, const msb_driver_box *box, const char *image,
			   const char *chan, char *const *agent_argv, json_t *labels);

/*
 * Remove every container of this backend's state directory whose labels carry each given
 * (label, value) pair — the sweep that finds what the state directory lost. Counts the
 * removed in *count; a failure is folded into `failure` and makes it return true.
 */
bool docker_sweep(const docker_ctx *ctx, const char *const *label_pairs, uint64_t *count,
		  msb_disposal_failure *failure);
/* Force-remove container `name` (with its anonymous volumes) and verify it is gone. */
bool docker_remove(const docker_ctx *ctx, const char *name, msb_disposal_failure *failure);

#ifdef DOCKER_GVISOR
/* At init: the engine knows ctx->runtime and it is runsc. */
msb_errc docker_gvisor_check_engine(const docker_ctx *ctx, msb_error *err);
/* Per sandbox: the engine ran it under ctx->runtime, and inside the kernel is gVisor's. */
msb_errc docker_gvisor_check_sandbox(const docker_ctx *ctx, const msb_driver_box *box,
				     json_t *inspect, msb_error *err);
#endif

#endif
