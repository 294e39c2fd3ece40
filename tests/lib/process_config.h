/*
 * process_config.h — the process backend as a host configures it, for a test: a temporary
 * directory holding a sandbox.yaml (the in-tree process plugin with its state inside that
 * directory and the in-tree agent, then the test's own lines), loaded and a router built
 * over it; and all of it freed and removed again.
 */
#ifndef MSB_TEST_PROCESS_CONFIG_H
#define MSB_TEST_PROCESS_CONFIG_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <msb/config.h>
#include <msb/router.h>

#include "msb_test.h"

#define MSB_TEST_PROCESS_PLUGIN MSB_TEST_MODULE("plugins/process", "process")
#define MSB_TEST_AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

/*
 * Make `dir` (dir_size bytes) from `template` ("/tmp/…-XXXXXX"), write dir/sandbox.yaml with
 * `tail` after the backend's `agent:` line (more of its config, indented six, and `specs:`),
 * load it into *cfg and build *router. -1, saying why, on failure.
 */
static inline int msb_test_process_router(char *dir, size_t dir_size, const char *template,
					  const char *tail, msb_config **cfg, msb_router **router)
{
	snprintf(dir, dir_size, "%s", template);
	if (!mkdtemp(dir))
		return -1;
	char path[128];
	snprintf(path, sizeof path, "%s/sandbox.yaml", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
		"version: 1\n"
		"router:\n"
		"  min_isolation: os_process\n"
		"backends:\n"
		"  - plugin: %s\n"
		"    config:\n"
		"      state_dir: %s/state\n"
		"      agent: %s\n"
		"%s",
		MSB_TEST_PROCESS_PLUGIN, dir, MSB_TEST_AGENT, tail);
	fclose(f);
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_load(path, NULL, cfg, &err) != MSB_OK ||
	    msb_config_router(*cfg, router, &err) != MSB_OK) {
		fprintf(stderr, "router over the process backend: %s\n", msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	return 0;
}

/* Free the router and the config, and remove `dir`: -1 when it could not be removed. */
static inline int msb_test_process_router_free(const char *dir, msb_config *cfg, msb_router *router)
{
	msb_router_free(router);
	msb_config_free(cfg);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
