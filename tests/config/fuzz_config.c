/*
 * fuzz_config.c — libFuzzer target for the sandbox.yaml reader, end to end on the text a
 * host would write: the YAML layer (positions, duplicate keys, anchors and tags refused,
 * ${VAR} expansion), the versioned schema, declarations and specs — everything
 * msb_config_load does before it loads a plugin (msb_config_parse).
 *
 * Built only on demand (`make fuzz-config`, needs clang with libFuzzer); run with
 * `tests/config/fuzz_config -max_total_time=300 tests/config/fuzz_config_corpus`, a
 * directory the rule seeds from conf/ and tests/config/fuzz_seeds/. libFuzzer's inputs stay
 * a few KiB, so the size extremes (depth, many keys, long paths, long expansions) are
 * written out by hand in test_config_bounds.c instead.
 *
 * Beyond "no crash, no leak", every refusal is held to the reader's promise: a known code,
 * a non-empty message, and for MSB_E_CONFIG the "file:line:column:" of the place refused.
 * The environment is fixed at start so that a ${VAR} means the same on every run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/config.h>

#define FUZZ_FILE "fuzz/sandbox.yaml"

int LLVMFuzzerInitialize(int *argc, char ***argv);
const char *__ubsan_default_options(void);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Undefined behaviour ends the run like any crash. Not -fno-sanitize-recover: built that way
 * libFuzzer counts a third of the edges and is guided less well.
 */
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static void broken(const char *what, const char *message)
{
	fprintf(stderr, "fuzz_config: %s: %s\n", what, message ? message : "(no message)");
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static char long_value[4097];
	memset(long_value, 'v', sizeof long_value - 1);
	clearenv();
	setenv("MSB_FUZZ", "value", 1);
	setenv("EMPTY", "", 1);
	setenv("HOME", "/home/fuzz", 1);
	setenv("STATE", "/var/lib/msb", 1);
	setenv("NULLISH", "null", 1);
	setenv("REF", "${MSB_FUZZ}", 1); /* never expanded twice */
	setenv("LONG", long_value, 1);
	return 0;
}

/* What a loaded (parsed) configuration offers must be readable without surprises. */
static void walk(msb_config *cfg)
{
	for (size_t i = 0; i < msb_config_spec_count(cfg); i++) {
		const msb_spec *s = msb_config_spec_at(cfg, i);
		const msb_spec *found = NULL;
		msb_error err = MSB_ERROR_INIT;
		if (msb_config_spec_find(cfg, s->kind, &found, &err) != MSB_OK || !found)
			broken("a spec read cannot be found by its kind", msb_error_message(&err));
		msb_error_clear(&err);
	}
	const msb_spec *none = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_spec_find(cfg, "\x01no such kind", &none, &err) != MSB_E_VALUE)
		broken("an unknown kind was not refused", msb_error_message(&err));
	msb_error_clear(&err);
	msb_router *router = NULL;
	if (msb_config_router(cfg, &router, &err) != MSB_E_NO_BACKEND || router)
		broken("a parsed-only configuration built a router", msb_error_message(&err));
	msb_error_clear(&err);
	if (msb_config_plugin_count(cfg) != 0 || msb_config_backend_count(cfg) != 0)
		broken("a parsed-only configuration claims plugins or backends", NULL);
	(void)msb_config_plugin_path(cfg);
	(void)msb_config_router_options(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_config_parse((const char *)data, size, FUZZ_FILE, NULL, &cfg, &err);
	if (rc == MSB_OK) {
		if (!cfg)
			broken("success without a configuration", NULL);
		walk(cfg);
		msb_config_free(cfg);
		return 0;
	}
	const char *msg = msb_error_message(&err);
	if (cfg)
		broken("a refusal left a configuration behind", msg);
	if (err.code != rc || !msg || !*msg)
		broken("a refusal without its code or message", msg);
	if (rc == MSB_E_CONFIG && strncmp(msg, FUZZ_FILE ":", sizeof FUZZ_FILE) != 0)
		broken("a configuration refusal without file:line:column", msg);
	if (rc != MSB_E_CONFIG && rc != MSB_E_NOMEM)
		broken("a refusal with an unexpected code", msg);
	msb_error_clear(&err);
	return 0;
}
