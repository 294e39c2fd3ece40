/*
 * driver_internal.h — the driver's own structures (msb/driver.h is the public face): the
 * instance and handle behind the contract's opaque types, and one sandbox's paths.
 */
#ifndef MSB_DRIVER_INTERNAL_H
#define MSB_DRIVER_INTERNAL_H

#include <pthread.h>

#include <msb/driver.h>

struct msb_backend_instance {
	msb_boundary boundary;
	msb_driver_config config;
	char **run_code;          /* owned copy behind config.agent.run_code */
	msb_host host;
	bool has_host;
	pthread_mutex_t egress_lock; /* guards egress_proxy's lazy start */
	msb_egress_proxy *egress_proxy;
};

/* One sandbox's places in the state directory, all owned. */
typedef struct driver_paths {
	char name[36];
	char *dir, *sock, *pid, *work, *meta, *lock;
	char *egress_dir, *egress_sock; /* <dir>/egress, <dir>/egress/px */
	msb_driver_box box;       /* views of the strings above */
} driver_paths;

struct msb_sandbox_handle {
	msb_backend_instance *inst;
	driver_paths paths;
	msb_agent_client *client;
};

/* The key's fields, NULL read as "" (as the router never passes NULL, but a plugin test may). */
typedef struct driver_key {
	const char *field[4]; /* scope, thread_id, agent_dir, call_id */
} driver_key;

void driver_key_from(const msb_key *key, driver_key *out);
/*
 * The leading characters that every sandbox name of (scope, thread) shares (scope_only), or
 * of the whole key: what dispose compares before it reads any metadata. Returns the length.
 */
#define DRIVER_PREFIX_MAX 20
size_t driver_name_prefix(const char *state_dir, const driver_key *k, bool scope_only,
			  char out[DRIVER_PREFIX_MAX]);

msb_errc driver_paths_make(const msb_backend_instance *inst, const char *name, driver_paths *p,
			   msb_error *err);
void driver_paths_free(driver_paths *p);

/* flock the sandbox's lock file; returns the fd to close, or -1 with err set. */
int driver_lock(const driver_paths *p, msb_error *err);
/* Remove the lock file while still holding it (waiters notice the inode went and retry). */
void driver_unlock_remove(const driver_paths *p, int fd);

/* <dir>/identity: what the sandbox was started from (driver.c). */
#define DRIVER_IDENTITY_MAX 512
bool driver_identity_matches(const driver_paths *p, const char *identity);

/* Write the metadata for (key, kind) / read back and compare. */
msb_errc driver_meta_write(const driver_paths *p, const driver_key *key, const char *kind,
			   msb_error *err);
/* Whether the metadata names `key` (all four fields) — or, with `scope_only`, scope and thread. */
bool driver_meta_matches(const driver_paths *p, const driver_key *key, bool scope_only);

/*
 * Tear one sandbox down with its lock held: shutdown through the agent, the boundary's
 * stop, SIGKILL of the recorded pid, removal of its directory. Returns true and fills
 * `failure` when something is known to be left.
 */
bool driver_teardown(msb_backend_instance *inst, driver_paths *p, msb_disposal_failure *failure);

/* egress: allowlist (driver_egress.c). check refuses a spec the instance cannot serve;
 * prepare sets box->egress_socket for the start; serve listens for the live sandbox. */
msb_errc driver_egress_check(msb_backend_instance *inst, const msb_spec *spec, msb_error *err);
msb_errc driver_egress_prepare(msb_backend_instance *inst, driver_paths *p, const msb_spec *spec,
			       msb_error *err);
msb_errc driver_egress_serve(msb_backend_instance *inst, driver_paths *p, const msb_key *key,
			     const msb_spec *spec, msb_error *err);
void driver_egress_forget(msb_backend_instance *inst, driver_paths *p);
void driver_egress_fini(msb_backend_instance *inst);

/* Parse the common config keys. */
msb_errc driver_config_parse(msb_backend_instance *inst, const msb_node *config,
			     const char *const *extra_keys, msb_error *err);
void driver_config_free(msb_backend_instance *inst);

#endif
