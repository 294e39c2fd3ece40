/*
 * misbehaving.c — a test-only backend that breaks the plugin contract in the two ways the
 * host cannot rule out by reading the descriptor: an init that fails without a word
 * (`silent_init: true`), an acquire that reports success and hands back no sandbox, and a
 * dispose or purge that reports a failure and says nothing about it. The host must supply
 * the sentence itself, naming the backend, rather than pass on silence or NULL. With
 * `overshoots_caps: true` its acquire does hand back a sandbox, whose read_file answers with
 * one byte more than the cap it was given (what the host must refuse rather than pass on)
 * and whose exec prints five bytes more than max_output on each stream (what the host must
 * cut and flag, as the contract promises, rather than pass on whole).
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <msb/backend.h>
#include <msb/node.h>

#include "fixture.h"

#pragma GCC diagnostic ignored "-Woverride-init"

static msb_errc misbehaving_init(const msb_node *config, const msb_host *host,
				 msb_backend_instance **self, msb_error *err)
{
	*self = NULL;
	bool silent = false, overshoots = false;
	msb_errc rc = msb_node_check_keys(config, (const char *const[]){ "silent_init", "overshoots_caps",
									  NULL }, err);
	if (rc == MSB_OK && config)
		rc = msb_node_bool(config, "silent_init", &silent, err);
	if (rc == MSB_OK && config)
		rc = msb_node_bool(config, "overshoots_caps", &overshoots, err);
	if (rc != MSB_OK)
		return rc;
	/* The instance is only a flag: "a sandbox can be had". */
	static char sandboxes_served;
	*self = overshoots ? (msb_backend_instance *)&sandboxes_served : NULL;
	return silent ? MSB_E_BACKEND : MSB_OK;
}

static msb_errc misbehaving_acquire(msb_backend_instance *self, const msb_key *key,
				    const msb_spec *spec, msb_sandbox_handle **sandbox, msb_error *err)
{
	*sandbox = (msb_sandbox_handle *)self;
	return MSB_OK;
}

static msb_errc misbehaving_stat_file(msb_sandbox_handle *sandbox, const char *path,
				      const char *working_directory, msb_entry *entry, bool *found,
				      msb_error *err)
{
	*found = false;
	return MSB_OK;
}

static msb_errc misbehaving_exec(msb_sandbox_handle *sandbox, const msb_exec_request *req,
				 msb_exec_result *res, msb_error *err)
{
	memset(res, 0, sizeof *res);
	for (size_t i = 0; i < req->max_output + 5; i++)
		if (msb_buf_append(&res->out, "o", 1, err) || msb_buf_append(&res->err, "e", 1, err))
			return MSB_E_NOMEM;
	return MSB_OK;
}

static msb_errc misbehaving_read_file(msb_sandbox_handle *sandbox, const char *path,
				      const char *working_directory, uint64_t max_bytes,
				      msb_buf *out, msb_error *err)
{
	for (uint64_t i = 0; i <= max_bytes; i++)
		if (msb_buf_append(out, "x", 1, err) != MSB_OK)
			return MSB_E_NOMEM;
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
	.declarations = { .capabilities = MSB_WORDS("exec", "files_in", "files_out"),
			  .egress_modes = MSB_WORDS("closed") },
	FIXTURE_OPS,
	.exec = misbehaving_exec,
	.stat_file = misbehaving_stat_file,
	.read_file = misbehaving_read_file,
	.init = misbehaving_init,
	.acquire = misbehaving_acquire,
	.dispose = misbehaving_dispose,
	.dispose_scope = misbehaving_dispose_scope,
};
