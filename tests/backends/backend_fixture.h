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

/*
 * End every sandbox of `state` by the cgroups its start saved (<state>/sk-…/cgroup, one
 * "v1|v2 <dir>" line per hierarchy): v2's cgroup.kill takes each member, then every
 * directory is removed once empty (up to 2 s). Processes outside those cgroups are the
 * caller's to end.
 */
static inline void backend_fixture_kill_cgroups(const char *state)
{
	char cmd[700];
	snprintf(cmd, sizeof cmd,
		 "for f in '%1$s'/s[bk]-*/cgroup; do [ -f \"$f\" ] || continue; "
		 "while read kind dir; do [ \"$kind\" = v2 ] && echo 1 > \"$dir/cgroup.kill\"; done < \"$f\"; "
		 "for t in $(seq 20); do left=0; "
		 "while read kind dir; do rmdir \"$dir\" 2>/dev/null; [ -d \"$dir\" ] && left=1; done < \"$f\"; "
		 "[ $left = 0 ] && break; sleep 0.1; done; done",
		 state);
	if (system(cmd) != 0)
		fprintf(stderr, "sweep: the cgroups of %s could not all be removed\n", state);
}

/*
 * A suite's last step: for every state dir a fixture made that is still there (a case failed
 * before its own clean-up), end its sandboxes (backend_fixture_kill_cgroups, then `also`,
 * the plugin's own, when not NULL) and remove it. Returns how many it had to clean, each
 * named on stderr: in a run whose cases all passed, each is a leak of its own.
 */
static inline int backend_fixture_sweep(void (*also)(const char *state))
{
	int swept = 0;
	for (size_t i = 0; i < backend_fixture_made_n; i++) {
		const char *state = backend_fixture_made[i];
		if (access(state, F_OK) != 0)
			continue;
		fprintf(stderr, "sweep: %s was left (a case failed before its clean-up); ending what "
			"is in it\n", state);
		swept++;
		backend_fixture_kill_cgroups(state);
		if (also)
			also(state);
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", state);
		if (system(cmd) != 0)
			fprintf(stderr, "sweep: %s could not be removed\n", state);
	}
	return swept;
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
