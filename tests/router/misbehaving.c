/*
 * misbehaving.c — a test-only backend that breaks the plugin contract in the two ways the
 * host cannot rule out by reading the descriptor: an init that fails without a word
 * (`silent_init: true`), an acquire that reports success and hands back no sandbox, and a
 * dispose or purge that reports a failure and says nothing about it. The host must supply
 * the sentence itself, naming the backend, rather than pass on silence or NULL.
 */
#include <stdbool.h>
#include <stddef.h>

#include <msb/backend.h>
#include <msb/node.h>

#include "fixture.h"

#pragma GCC diagnostic ignored "-Woverride-init"

static msb_errc misbehaving_init(const msb_node *config, const msb_host *host,
				 msb_backend_instance **self, msb_error *err)
{
	*self = NULL;
	bool silent = false;
	msb_errc rc = msb_node_check_keys(config, (const char *const[]){ "silent_init", NULL }, err);
	if (rc == MSB_OK && config)
		rc = msb_node_bool(config, "silent_init", &silent, err);
	if (rc != MSB_OK)
		return rc;
	return silent ? MSB_E_BACKEND : MSB_OK;
}

static msb_errc misbehaving_acquire(msb_backend_instance *self, const msb_key *key,
				    const msb_spec *spec, msb_sandbox_handle **sandbox, msb_error *err)
{
	*sandbox = NULL;
	return MSB_OK;
}

static bool misbehaving_dispose(msb_backend_instance *self, const msb_key *key,
				msb_disposal_failure *failure)
{
	failure->code = MSB_DISPOSAL_UNKNOWN;
	return true;
}

static void misbehaving_dispose_scope(msb_backend_instance *self, const char *scope,
				      const char *thread_id, msb_scope_purge *purge)
{
	purge->has_undisposed = true;
	purge->undisposed.code = MSB_DISPOSAL_UNKNOWN;
}

MSB_EXPORT extern const struct msb_backend_v27 msb_backend_v27;
const struct msb_backend_v27 msb_backend_v27 = {
	.magic = MSB_BACKEND_MAGIC,
	.abi_version = MSB_ABI_VERSION,
	.struct_size = sizeof(struct msb_backend_v27),
	.name = "misbehaving",
	.isolation = "none",
	.declarations = { .egress_modes = MSB_WORDS("closed") },
	FIXTURE_OPS,
	.init = misbehaving_init,
	.acquire = misbehaving_acquire,
	.dispose = misbehaving_dispose,
	.dispose_scope = misbehaving_dispose_scope,
};
