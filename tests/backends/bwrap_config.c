/*
 * bwrap_config.c — the `bwrap` plugin's declarations and its config refusals, through the
 * loader: exactly the capabilities it implements, closed egress only, both scopes, posix; a
 * typo, a root id, a redefined or missing image, an escaping cgroup parent, a bad CPU count
 * or a missing engine is refused at open with MSB_E_CONFIG (or MSB_E_BACKEND) naming it.
 * Opens no sandbox, so it needs no namespaces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/loader.h>

#include "msb_test.h"

#define PLUGIN MSB_TEST_MODULE("plugins/bwrap", "bwrap")

static msb_loader *loader;
static const msb_plugin *plugin;
static char state[64];

static msb_errc open_with(const char *extra, msb_error *err)
{
	char yaml[1024];
	snprintf(yaml, sizeof yaml, "state_dir: %s\n%s", state, extra);
	msb_config_doc *doc = NULL;
	msb_errc rc = msb_config_doc_parse(yaml, strlen(yaml), "<bwrap config>", &doc, err);
	assert_int_equal(rc, MSB_OK);
	msb_backend *backend = NULL;
	rc = msb_backend_open(plugin, msb_config_doc_root(doc), NULL, NULL, &backend, err);
	if (backend)
		msb_backend_close(backend);
	msb_config_doc_free(doc);
	return rc;
}

static void refused(const char *extra, msb_errc code, const char *words)
{
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(open_with(extra, &err), code);
	if (!strstr(msb_error_message(&err), words))
		fail_msg("refusal of \"%s\" says \"%s\", not \"%s\"", extra, msb_error_message(&err), words);
	msb_error_clear(&err);
}

static void declarations_are_exactly_what_is_implemented(void **state_)
{
	(void)state_;
	assert_string_equal(msb_plugin_name(plugin), "bwrap");
	assert_int_equal(msb_plugin_isolation(plugin), MSB_ISO_CONTAINER);
	const msb_effective_declarations *d = msb_plugin_declarations(plugin);
	assert_int_equal(d->capabilities,
			 MSB_BIT(MSB_CAP_EXEC) | MSB_BIT(MSB_CAP_RUN_CODE) | MSB_BIT(MSB_CAP_FILES_IN) |
				 MSB_BIT(MSB_CAP_FILES_OUT) | MSB_BIT(MSB_CAP_FILES_LIST) |
				 MSB_BIT(MSB_CAP_FILES_DELETE));
	/* closed by its empty namespace; allowlist by the SDK's proxy, every decision observed. */
	assert_int_equal(d->egress_modes, MSB_BIT(MSB_EGRESS_CLOSED) | MSB_BIT(MSB_EGRESS_ALLOWLIST));
	assert_int_equal(d->isolation_scopes, MSB_BIT(MSB_SCOPE_CONVERSATION) | MSB_BIT(MSB_SCOPE_CALL));
	assert_int_equal(d->os_families, MSB_BIT(MSB_OS_POSIX));
	assert_true(d->observes_egress);
}

static void a_valid_config_opens(void **state_)
{
	(void)state_;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = open_with("memory: 256MiB\npids: 64\ncpus: 0.5\ntmp_size: 16MiB\n"
				"cgroup_parent: msb-test/x\nimages:\n  tiny: /tmp\n"
				"user: per-sandbox\nid_base: 500000\nid_count: 10\nstop_timeout: 2s\n", &err);
	if (rc)
		fail_msg("%s", msb_error_message(&err));
	/* The edges of what is refused below: the fewest pids, the smallest quota, none. */
	const char *edges[] = { "pids: 7\ncpus: 0.01\n", "pids: 0\ncpus: 0\n" };
	for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
		if (open_with(edges[i], &err) != MSB_OK)
			fail_msg("%s: %s", edges[i], msb_error_message(&err));
	msb_error_clear(&err);
}

static void bad_configs_are_refused(void **state_)
{
	(void)state_;
	refused("memroy: 1MiB\n", MSB_E_CONFIG, "memroy");
	refused("images:\n  host: /\n", MSB_E_CONFIG, "built-in image");
	refused("images:\n  x: relative/root\n", MSB_E_CONFIG, "absolute path");
	refused("images:\n  x: /no/such/root\n", MSB_E_CONFIG, "not a directory");
	refused("images: [a]\n", MSB_E_CONFIG, "map of image names");
	refused("cgroup_parent: ../escape\n", MSB_E_CONFIG, "without \"..\"");
	refused("cgroup_parent: /abs\n", MSB_E_CONFIG, "relative path");
	refused("cpus: -1\n", MSB_E_CONFIG, "number of CPUs");
	refused("cpus: \"\"\n", MSB_E_CONFIG, "number of CPUs");
	refused("cpus: nan\n", MSB_E_CONFIG, "number of CPUs");
	refused("cpus: 0.001\n", MSB_E_CONFIG, "smallest quota");
	refused("pids: 6\n", MSB_E_CONFIG, "below the 7 one command needs");
	refused("id_count: 18446744073709551615\n", MSB_E_CONFIG, "2147483647");
	refused("start_timeout: 0\n", MSB_E_CONFIG, "start_timeout must be a positive");
	refused("timeout: 1e12s\n", MSB_E_CONFIG, "longest msb keeps");
	refused("memory: lots\n", MSB_E_CONFIG, "memory");
	refused("bwrap: /no/such/bwrap\n", MSB_E_CONFIG, "not executable");
	refused("bwrap: no-such-engine-here\n", MSB_E_BACKEND, "not found on PATH");
	refused("user: per-sandbox\nid_base: 0\n", MSB_E_CONFIG, "id_base");
	refused("id_base: 2147483000\nid_count: 1000\n", MSB_E_CONFIG, "2147483647");
	refused("stop_timeout: 0\n", MSB_E_CONFIG, "positive duration");
	if (geteuid() == 0) {
		refused("user: nobody\n", MSB_E_CONFIG, "user");
		refused("user: 0\n", MSB_E_CONFIG, "must not run as root");
		refused("group: 0\n", MSB_E_CONFIG, "must not run as root");
	}
}

int main(void)
{
	snprintf(state, sizeof state, "/tmp/msb-bwrap-config-XXXXXX");
	if (!mkdtemp(state))
		return 1;
	msb_error err = MSB_ERROR_INIT;
	if (msb_loader_new(&loader, &err) || msb_loader_load(loader, PLUGIN, &plugin, &err)) {
		fprintf(stderr, "%s\n", msb_error_message(&err));
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(declarations_are_exactly_what_is_implemented),
		cmocka_unit_test(a_valid_config_opens),
		cmocka_unit_test(bad_configs_are_refused),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	msb_loader_free(loader);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", state);
	return system(cmd) == 0 ? failed : 1;
}
