/*
 * loader_backend.c — open a backend from a loaded plugin: init it from its sandbox.yaml
 * `config:`, then compute what it finally declares — the plugin's effective declarations,
 * narrowed by the instance's own instance_declarations() when it has them, then by the
 * entry's `declarations:`. Neither may widen: a backend that claims more once configured
 * than its descriptor stated is refused, and so is an entry that asks for more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"

static const char *const level_names[] = { "debug", "info", "warning", "error" };

/* With no host given, a backend's log lines go to stderr, each naming the backend. */
static void stderr_log(void *ctx, msb_log_level level, const char *message)
{
	const msb_backend *b = ctx;
	const char *lv = (unsigned)level < 4 ? level_names[level] : "log";
	fprintf(stderr, "msb: backend %s: %s: %s\n", b->name, lv, message);
}

static void ignore_egress(void *ctx, const msb_key *key, const char *destination, bool allowed)
{
	(void)ctx, (void)key, (void)destination, (void)allowed;
}

msb_errc msb_backend_result(const char *op, msb_errc rc, msb_error *err)
{
	if (rc == MSB_OK) {
		/* A success's leftover message is not a refusal; it is dropped, never leaked. */
		msb_error_clear(err);
		return MSB_OK;
	}
	if ((unsigned)rc < MSB_E__COUNT && (!err || (unsigned)err->code < MSB_E__COUNT)) {
		if (err && (err->code == MSB_OK || !err->message || !err->message[0]))
			msb_error_set(err, rc, "%s failed (%s) and gave no reason; a plugin must say "
				      "why it refused", op, msb_errc_name(rc));
		return rc;
	}
	/* A code from no SDK this host knows: an engine failure, with the number kept. */
	unsigned code = (unsigned)rc < MSB_E__COUNT ? (unsigned)err->code : (unsigned)rc;
	if (!err)
		return MSB_E_BACKEND;
	if (!err->message || !err->message[0])
		msb_error_set(err, MSB_E_BACKEND, "%s failed with error code %u, which no msb SDK "
			      "defines, and gave no reason", op, code);
	else
		msb_error_prefix(err, "%s failed with error code %u, which no msb SDK defines: ", op,
				 code);
	err->code = MSB_E_BACKEND;
	return MSB_E_BACKEND;
}

static msb_errc narrow_by_instance(msb_backend *b, msb_error *err)
{
	if (!b->ops->instance_declarations)
		return MSB_OK;
	const msb_declarations *inst = b->ops->instance_declarations(b->self);
	if (!inst)
		return MSB_OK;
	/* Not a fixed buffer: a long path must not cut the field off the message. */
	char *what = NULL;
	if (asprintf(&what, "backend %s (plugin %s): instance_declarations", b->name,
		     b->plugin->file) < 0)
		return msb_error_set(err, MSB_E_NOMEM, "backend %s: out of memory", b->name);
	msb_error e = MSB_ERROR_INIT;
	/* The plugin's memory, copied as bytes first: its pointer need not be aligned. */
	msb_declarations copy;
	memcpy(&copy, inst, sizeof copy);
	msb_errc rc = msb_declarations_narrow(&b->decl, &copy, what, &b->decl, &e);
	free(what);
	if (rc != MSB_OK) {
		e.code = MSB_E_BACKEND_NOT_PERMITTED;
		msb_error_move(err, &e);
		return MSB_E_BACKEND_NOT_PERMITTED;
	}
	return MSB_OK;
}

static msb_errc narrow_by_entry(msb_backend *b, const msb_declarations *narrow, msb_error *err)
{
	if (!narrow)
		return MSB_OK;
	char what[512];
	snprintf(what, sizeof what, "backend %s: declarations", b->name);
	msb_error e = MSB_ERROR_INIT;
	if (msb_declarations_narrow(&b->decl, narrow, what, &b->decl, &e) != MSB_OK) {
		e.code = MSB_E_CONFIG;
		msb_error_move(err, &e);
		return MSB_E_CONFIG;
	}
	return MSB_OK;
}

msb_errc msb_backend_open(const msb_plugin *plugin, const msb_node *config,
			  const msb_declarations *narrow, const msb_host *host, msb_backend **out,
			  msb_error *err)
{
	msb_backend *b = calloc(1, sizeof *b);
	if (!b)
		return msb_error_set(err, MSB_E_NOMEM, "backend %s: out of memory",
				     plugin->desc->name);
	b->plugin = plugin;
	b->ops = plugin->desc;
	b->name = plugin->desc->name;
	b->isolation = plugin->isolation;
	b->decl = plugin->decl;
	if (host) {
		b->host = *host;
	} else {
		b->host = (msb_host){ .struct_size = sizeof(msb_host), .ctx = b,
				      .log = stderr_log, .egress_observed = ignore_egress };
	}

	msb_error e = MSB_ERROR_INIT;
	msb_errc rc = b->ops->init(config, &b->host, &b->self, &e);
	rc = msb_backend_result("init", rc, &e);
	if (rc != MSB_OK) {
		msb_error_prefix(&e, "backend %s: ", b->name);
		msb_error_move(err, &e);
		free(b);
		return rc;
	}
	rc = narrow_by_instance(b, err);
	if (rc == MSB_OK)
		rc = narrow_by_entry(b, narrow, err);
	if (rc != MSB_OK) {
		msb_backend_close(b);
		return rc;
	}
	*out = b;
	return MSB_OK;
}

void msb_backend_close(msb_backend *backend)
{
	if (!backend)
		return;
	backend->ops->fini(backend->self);
	free(backend);
}

const char *msb_backend_name(const msb_backend *backend)
{
	return backend->name;
}

msb_isolation msb_backend_isolation(const msb_backend *backend)
{
	return backend->isolation;
}

const msb_plugin *msb_backend_plugin(const msb_backend *backend)
{
	return backend->plugin;
}

const msb_effective_declarations *msb_backend_declarations(const msb_backend *backend)
{
	return &backend->decl;
}

const struct msb_backend_v27 *msb_backend_ops(const msb_backend *backend)
{
	return backend->ops;
}

msb_backend_instance *msb_backend_instance_of(const msb_backend *backend)
{
	return backend->self;
}
