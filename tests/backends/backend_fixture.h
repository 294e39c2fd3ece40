/*
 * backend_fixture.h — opening a real backend plugin for a test or a benchmark, as the
 * per-plugin fixtures (bwrap_, gvisor_, qemu_fixture.h) do: a state dir (a fresh temporary
 * one unless named), the plugin loaded through the loader and opened with a config written
 * as YAML (the path sandbox.yaml takes), and closed again. The per-plugin fixtures add what
 * their plugin's config needs, whether its engine can run here, and their leak checks.
 */
#ifndef MSB_BACKEND_FIXTURE_H
#define MSB_BACKEND_FIXTURE_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msb/config.h>
#include <msb/driver.h>
#include <msb/loader.h>

#include "msb_test.h"

/* The in-tree agent every agent-backed plugin runs. */
#define BACKEND_FIXTURE_AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

typedef struct backend_fixture {
	char state[64];          /* the state dir: given, or mkdtemp'd */
	msb_loader *loader;
	msb_backend *backend;
	msb_config_doc *doc;
	const struct msb_backend_v27 *ops;
	msb_backend_instance *self;
} backend_fixture;

/*
 * Every state dir the fixtures made in this process. A case that fails an assertion is left
 * there by cmocka, before its own clean-up: a suite's last step can still find, end and
 * remove what such a case made (bwrap_fixture_sweep).
 */
static char backend_fixture_made[64][64];
static size_t backend_fixture_made_n;

/*
 * Take `state` as the state dir, or (NULL) make a fresh one from `template`
 * ("/tmp/msb-<plugin>-test-XXXXXX"). Call first: it clears `fx`.
 */
static inline msb_errc backend_fixture_state(backend_fixture *fx, const char *state,
					     const char *template, msb_error *err)
{
	memset(fx, 0, sizeof *fx);
	const char *dir = state ? state : template;
	if (strlen(dir) >= sizeof fx->state)
		return msb_error_set(err, MSB_E_VALUE, "state dir %s is too long for the fixture", dir);
	memcpy(fx->state, dir, strlen(dir) + 1);
	if (!state && !mkdtemp(fx->state))
		return msb_error_set_errno(err, MSB_E_OS, errno, "mkdtemp");
	if (!state && backend_fixture_made_n < sizeof backend_fixture_made / sizeof *backend_fixture_made)
		memcpy(backend_fixture_made[backend_fixture_made_n++], fx->state, sizeof fx->state);
	return MSB_OK;
}

/* Load the plugin at `plugin` and open it with the config `yaml_fmt` formats to. */
static inline msb_errc backend_fixture_load(backend_fixture *fx, const char *plugin, msb_error *err,
					    const char *yaml_fmt, ...) MSB_PRINTF(4, 5);
static inline msb_errc backend_fixture_load(backend_fixture *fx, const char *plugin, msb_error *err,
					    const char *yaml_fmt, ...)
{
	char *yaml = NULL;
	va_list ap;
	va_start(ap, yaml_fmt);
	int n = vasprintf(&yaml, yaml_fmt, ap);
	va_end(ap);
	if (n < 0)
		return msb_error_set(err, MSB_E_NOMEM, "asprintf");
	msb_errc rc = msb_config_doc_parse(yaml, strlen(yaml), plugin, &fx->doc, err);
	free(yaml);
	const msb_plugin *loaded = NULL;
	if (!rc)
		rc = msb_loader_new(&fx->loader, err);
	if (!rc)
		rc = msb_loader_load(fx->loader, plugin, &loaded, err);
	if (!rc)
		rc = msb_backend_open(loaded, msb_config_doc_root(fx->doc), NULL, NULL, &fx->backend, err);
	if (!rc) {
		fx->ops = msb_backend_ops(fx->backend);
		fx->self = msb_backend_instance_of(fx->backend);
	}
	return rc;
}

/* Close the plugin; the state dir stays for the leak check. */
static inline void backend_fixture_close(backend_fixture *fx)
{
	if (fx->backend)
		msb_backend_close(fx->backend);
	if (fx->loader)
		msb_loader_free(fx->loader);
	msb_config_doc_free(fx->doc);
	fx->backend = NULL;
	fx->loader = NULL;
	fx->doc = NULL;
}

#endif
