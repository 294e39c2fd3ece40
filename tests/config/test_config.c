/*
 * test_config.c — sandbox.yaml: one test per refusal rule, each asserting the exact
 * `file:line:column: key.path:` and the words of the message; and positive reads of the
 * schema (values, defaults, narrowing) against the fixture plugins.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/msb.h>

#include "msb_test.h"

static char tmpdir[64];
static char file[128];

static int setup(void **state)
{
	strcpy(tmpdir, "/tmp/msb-config-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(file, sizeof file, "%s/sandbox.yaml", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	unlink(file);
	rmdir(tmpdir);
	return 0;
}

/* Write `yaml` with every @GOOD@ replaced by the good fixture's path. */
static void write_yaml(const char *yaml)
{
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	for (const char *p = yaml; *p;) {
		if (strncmp(p, "@GOOD@", 6) == 0) {
			fputs(MSB_TEST_FIXTURE("good"), f);
			p += 6;
		} else {
			fputc(*p++, f);
		}
	}
	fclose(f);
}

static msb_errc load(const char *yaml, msb_config **cfg, msb_error *err)
{
	write_yaml(yaml);
	return msb_config_load(file, NULL, cfg, err);
}

/* Load, expect `code`, and expect the message to start with file:`where` and hold every word. */
static void refused(const char *yaml, msb_errc code, const char *where, ...)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = load(yaml, &cfg, &err);
	const char *msg = msb_error_message(&err);
	if (rc != code)
		fail_msg("expected %s, got %s: %s", msb_errc_name(code), msb_errc_name(rc), msg);
	assert_null(cfg);
	char prefix[256];
	snprintf(prefix, sizeof prefix, "%s:%s", file, where);
	if (strncmp(msg, prefix, strlen(prefix)) != 0)
		fail_msg("expected the message to start with '%s', got: %s", prefix, msg);
	va_list ap;
	va_start(ap, where);
	for (const char *w; (w = va_arg(ap, const char *));)
		if (!strstr(msg, w))
			fail_msg("expected '%s' in: %s", w, msg);
	va_end(ap);
	msb_error_clear(&err);
}

#define GOOD_BACKEND "backends:\n  - plugin: @GOOD@\n"
#define HEAD "version: 1\nrouter:\n  min_isolation: container\n" GOOD_BACKEND

/* ---- the YAML layer ---------------------------------------------------------------- */

static void test_syntax_error_has_libyaml_position(void **state)
{
	refused("version: 1\nrouter: [a, b\n", MSB_E_CONFIG, "3:1: YAML syntax:", NULL);
	/* A reader error (bytes that are not UTF-8) has no context to quote: the problem alone. */
	refused("version: 1\nrouter: \xff\n", MSB_E_CONFIG, "", "YAML syntax: invalid leading UTF-8 octet", NULL);
}

static void test_duplicate_key(void **state)
{
	refused(HEAD "specs:\n  a:\n    image: x\n    image: y\n", MSB_E_CONFIG,
		"9:5: specs.a.image: ", "duplicate key 'image'", "first given at line 8", NULL);
}

static void test_anchor_refused(void **state)
{
	refused(HEAD "specs:\n  a: &base\n    image: x\n", MSB_E_CONFIG, "7:6: specs.a: ",
		"anchor '&base' refused", "no anchors, aliases or merge keys", NULL);
}

static void test_alias_and_merge_key_refused(void **state)
{
	/* A merge key: refused at the key, before its alias is even read. */
	refused(HEAD "specs:\n  a:\n    <<: *base\n", MSB_E_CONFIG, "8:5: specs.a: ",
		"merge key '<<' refused", "merge keys", NULL);
}

static void test_merge_key_without_alias_refused(void **state)
{
	/* Under specs: it would otherwise be a workload named "<<". */
	refused(HEAD "specs:\n  <<: {requires: [exec]}\n", MSB_E_CONFIG, "7:3: specs: ",
		"merge key '<<' refused", NULL);
	refused(HEAD "specs:\n  a:\n    <<: {requires: [exec]}\n", MSB_E_CONFIG, "8:5: specs.a: ",
		"merge key '<<' refused", NULL);
	refused(HEAD "specs:\n  \"<<\": {}\n", MSB_E_CONFIG, "7:3: specs: ", "merge key '<<' refused",
		NULL);
	refused("version: 1\n<<: {router: {}}\n", MSB_E_CONFIG, "2:1: ", "merge key '<<' refused", NULL);
}

/* A reader error (bad UTF-8, NUL, a control character) at its real line and column. */
static void test_bad_bytes_positioned(void **state)
{
	refused(HEAD "specs:\n  a: {image: \"x\xff\"}\n", MSB_E_CONFIG, "7:16: ",
		"invalid leading UTF-8 octet", "byte 0xff", NULL);
	refused(HEAD "specs:\n  a: {image: x}\n  b: {image: \"caf\xc3\xa9\x01\"}\n", MSB_E_CONFIG,
		"8:19: ", "control characters", "byte 0x01", NULL);
	static const char nul[] = "version: 1\nbackends: []\nspecs:\n  a: {}\n  b\0: {}\n";
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_config_parse(nul, sizeof nul - 1, "mem.yaml", NULL, &cfg, &err),
			 MSB_E_CONFIG);
	if (strncmp(msb_error_message(&err), "mem.yaml:5:4: ", 14) != 0)
		fail_msg("NUL not at 5:4: %s", msb_error_message(&err));
	assert_non_null(strstr(msb_error_message(&err), "byte 0x00"));
	msb_error_clear(&err);
	static const char bad[] = "version: 1\n\n\n\n\nspecs: {a: {image: \"\xc3\"}}\n";
	assert_int_equal(msb_config_parse(bad, sizeof bad - 1, "mem.yaml", NULL, &cfg, &err),
			 MSB_E_CONFIG);
	if (strncmp(msb_error_message(&err), "mem.yaml:6:", 11) != 0)
		fail_msg("bad UTF-8 not on line 6: %s", msb_error_message(&err));
	msb_error_clear(&err);
}

static void test_tag_refused(void **state)
{
	refused(HEAD "specs:\n  a:\n    image: !!str x\n", MSB_E_CONFIG, "8:12: specs.a.image: ",
		"tag 'tag:yaml.org,2002:str' refused", "quote a value", NULL);
}

static void test_second_document_refused(void **state)
{
	refused(HEAD "---\nversion: 1\n", MSB_E_CONFIG, "6:1: (document): ",
		"a second YAML document refused", NULL);
}

static void test_env_unset_refused(void **state)
{
	unsetenv("MSB_TEST_UNSET_VAR");
	refused(HEAD "specs:\n  a:\n    image: \"img-${MSB_TEST_UNSET_VAR}\"\n", MSB_E_CONFIG,
		"8:12: specs.a.image: ", "environment variable 'MSB_TEST_UNSET_VAR' is not set", NULL);
}

static void test_env_malformed_refused(void **state)
{
	refused(HEAD "specs:\n  a:\n    image: img-${1X}\n", MSB_E_CONFIG, "8:12: specs.a.image: ",
		"malformed variable reference", "$${", NULL);
}

static void test_env_expanded_and_escaped(void **state)
{
	setenv("MSB_TEST_IMAGE", "debian:12", 1);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(load(HEAD "specs:\n  a:\n    image: ${MSB_TEST_IMAGE}\n"
			      "  b:\n    image: $${MSB_TEST_IMAGE}-$HOME\n", &cfg, &err), MSB_OK);
	assert_string_equal(msb_config_spec(cfg, "a")->image, "debian:12");
	assert_string_equal(msb_config_spec(cfg, "b")->image, "${MSB_TEST_IMAGE}-$HOME");
	msb_config_free(cfg);
}

static void test_empty_file_refused(void **state)
{
	refused("", MSB_E_CONFIG, "1:1: (document): ", "the file is empty", "version: 1", NULL);
}

static void test_missing_file(void **state)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_config_load("/nonexistent/sandbox.yaml", NULL, &cfg, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "/nonexistent/sandbox.yaml"));
	msb_error_clear(&err);
}

/* ---- the schema --------------------------------------------------------------------- */

static void test_version_required(void **state)
{
	refused(GOOD_BACKEND, MSB_E_CONFIG, "1:1: (document): ", "'version: 1' is required", NULL);
}

static void test_version_unknown(void **state)
{
	refused("version: 2\n" GOOD_BACKEND, MSB_E_CONFIG, "1:10: version: ",
		"schema version 2 is not one this host reads (expected 1)", NULL);
}

static void test_unknown_top_level_key(void **state)
{
	refused("version: 1\nbackend:\n  - plugin: x\n", MSB_E_CONFIG, "2:1: backend: ",
		"unknown key 'backend'", "did you mean 'backends'?", "expected one of:", NULL);
}

static void test_unknown_router_key_typo(void **state)
{
	refused("version: 1\nrouter:\n  selction: per_spec\n" GOOD_BACKEND, MSB_E_CONFIG,
		"3:3: router.selction: ", "unknown key 'selction'", "did you mean 'selection'?", NULL);
}

static void test_unknown_spec_key(void **state)
{
	refused(HEAD "specs:\n  a:\n    egres: closed\n", MSB_E_CONFIG, "8:5: specs.a.egres: ",
		"unknown key 'egres'", "did you mean 'egress'?", NULL);
}

static void test_wrong_type_sequence(void **state)
{
	refused("version: 1\nrouter:\n  denied_capabilities: exec\n" GOOD_BACKEND, MSB_E_CONFIG,
		"3:24: router.denied_capabilities: ", "expected a sequence of capability words", "found a scalar", NULL);
}

static void test_wrong_type_bool(void **state)
{
	refused(HEAD "specs:\n  a:\n    outputs_named_at_call_time: yes\n", MSB_E_CONFIG,
		"8:33: specs.a.outputs_named_at_call_time: ", "expected true or false, found 'yes'", NULL);
}

static void test_wrong_type_map(void **state)
{
	refused(HEAD "specs:\n  a: [x]\n", MSB_E_CONFIG, "7:6: specs.a: ", "expected a spec", "found a sequence", NULL);
}

static void test_unknown_word(void **state)
{
	refused(HEAD "specs:\n  a:\n    egress: open\n", MSB_E_CONFIG, "8:13: specs.a.egress: ",
		"unknown egress mode 'open'", "known: unrestricted, allowlist, closed", NULL);
}

static void test_retired_process_rung(void **state)
{
	refused("version: 1\nrouter:\n  min_isolation: process\n" GOOD_BACKEND, MSB_E_CONFIG,
		"3:18: router.min_isolation: ", "'process' is a retired isolation rung", "not 'os_process'", NULL);
}

static void test_word_listed_twice(void **state)
{
	refused(HEAD "specs:\n  a:\n    requires: [exec, files_in, exec]\n", MSB_E_CONFIG,
		"8:32: specs.a.requires[2]: ", "capability 'exec' is listed twice", NULL);
}

static void test_unparsable_size(void **state)
{
	refused(HEAD "specs:\n  a:\n    files_out:\n      max_total_bytes: 8 MeB\n", MSB_E_CONFIG,
		"9:24: specs.a.files_out.max_total_bytes: ", "'8 MeB' is not a size", "MiB", NULL);
}

static void test_unparsable_count(void **state)
{
	refused(HEAD "specs:\n  a:\n    files_in: {max_files: -1}\n", MSB_E_CONFIG,
		"8:27: specs.a.files_in.max_files: ", "expected a whole number, found '-1'", NULL);
}

static void test_declarations_widen_refused(void **state)
{
	refused("version: 1\nrouter:\n  min_isolation: container\nbackends:\n  - plugin: @GOOD@\n"
		"    declarations:\n      egress_modes: [closed, unrestricted]\n", MSB_E_CONFIG,
		"7:21: backends[0].declarations.egress_modes: ", "widens", "never widened", NULL);
}

static void test_declarations_limits_widen_refused(void **state)
{
	refused("version: 1\nbackends:\n  - plugin: @GOOD@\n    declarations:\n      limits:\n"
		"        files_in: {max_files: 100000}\n", MSB_E_CONFIG,
		"6:31: backends[0].declarations.limits.files_in.max_files: ", "max_files: 100000 is above", "never widened", NULL);
}

/* A partial limits narrowing: the unwritten fields keep the plugin's ceiling, never UINT64_MAX. */
static void test_declarations_partial_limits_keep_ceiling(void **state)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (load("version: 1\nrouter:\n  min_isolation: container\nbackends:\n  - plugin: @GOOD@\n"
		 "    declarations:\n      limits:\n        files_in: {max_bytes_per_file: 512KiB}\n",
		 &cfg, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	const msb_effective_declarations *d = msb_backend_declarations(msb_config_backend_at(cfg, 0));
	assert_int_equal(d->limits.files_in.max_bytes_per_file, 512 * 1024);
	assert_int_equal(d->limits.files_in.max_total_bytes, 4 * MSB_MIB);
	assert_int_equal(d->limits.files_in.max_files, 16);
	assert_int_equal(d->limits.files_out.max_total_bytes, 8 * MSB_MIB);
	msb_config_free(cfg);
	/* A widening found at open (against the configured instance) names the field's line. */
	refused("version: 1\nrouter:\n  min_isolation: container\nbackends:\n  - plugin: @GOOD@\n"
		"    config: {closed_only: true}\n    declarations:\n      egress_modes: [closed, allowlist]\n",
		MSB_E_CONFIG, "8:21: backends[0].declarations.egress_modes: ", "'allowlist' widens", NULL);
}

static void test_declarations_unknown_field(void **state)
{
	refused("version: 1\nbackends:\n  - plugin: @GOOD@\n    declarations:\n      egress: [closed]\n",
		MSB_E_CONFIG, "5:7: backends[0].declarations.egress: ", "unknown key 'egress'",
		"did you mean", NULL);
}

static void test_bare_declaration_field_refused(void **state)
{
	refused("version: 1\nbackends:\n  - plugin: @GOOD@\n    capabilities: [exec]\n", MSB_E_CONFIG,
		"4:5: backends[0].capabilities: ", "declaration field 'capabilities' written bare",
		"read by nothing", "declarations:", NULL);
}

static void test_bare_isolation_refused(void **state)
{
	refused("version: 1\nbackends:\n  - plugin: @GOOD@\n    isolation: vm\n", MSB_E_CONFIG,
		"4:5: backends[0].isolation: ", "plugin's own claim", "min_isolation", NULL);
}

static void test_egress_allow_without_allowlist(void **state)
{
	refused(HEAD "specs:\n  a:\n    egress_allow: [deb.debian.org]\n", MSB_E_CONFIG,
		"8:19: specs.a.egress_allow: ", "egress_allow names hosts", "egress: allowlist", NULL);
}

static void test_backend_name_mismatch(void **state)
{
	refused("version: 1\nbackends:\n  - name: fast\n    plugin: @GOOD@\n", MSB_E_CONFIG,
		"3:11: backends[0].name: ", "entry name 'fast' differs", "'fixture_good'", NULL);
}

static void test_two_entries_one_backend(void **state)
{
	/* The loader's refusal keeps its own name, positioned at the second entry's plugin: line. */
	refused("version: 1\nbackends:\n  - plugin: @GOOD@\n  - plugin: @GOOD@\n", MSB_E_BACKEND_NOT_PERMITTED,
		"4:13: backends[1].plugin: ", "'fixture_good' is already the name", NULL);
}

static void test_plugin_required(void **state)
{
	refused("version: 1\nbackends:\n  - name: x\n", MSB_E_CONFIG, "3:5: backends[0]: ",
		"needs 'plugin:'", NULL);
}

static void test_backends_required(void **state)
{
	refused("version: 1\n", MSB_E_CONFIG, "1:1: (document): ", "'backends:' is required", NULL);
}

static void test_selected_with_per_spec(void **state)
{
	refused("version: 1\nrouter:\n  selection: per_spec\n  selected: fixture_good\n" GOOD_BACKEND,
		MSB_E_CONFIG, "4:13: router.selected: ", "per_spec", NULL);
}

static void test_selected_not_registered(void **state)
{
	refused("version: 1\nrouter:\n  selected: docker\n" GOOD_BACKEND, MSB_E_CONFIG,
		"3:13: router.selected: ", "'docker' is not registered", NULL);
}

static void test_unknown_selection_word(void **state)
{
	refused("version: 1\nrouter:\n  selection: first\n" GOOD_BACKEND, MSB_E_CONFIG,
		"3:14: router.selection: ", "unknown selection 'first'", "fixed, per_spec", NULL);
}

/* A path or landing name that cannot land is refused at load, at the value's position. */
static void test_declared_output_not_literal(void **state)
{
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - path: ../x.png\n", MSB_E_CONFIG,
		"9:15: specs.a.declared_outputs[0].path: ", "'../x.png'", "'..' traversal", NULL);
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - path: /etc/x\n", MSB_E_CONFIG,
		"9:15: specs.a.declared_outputs[0].path: ", "is absolute", NULL);
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - {path: x.png, name: ../y.png}\n",
		MSB_E_CONFIG, "9:29: specs.a.declared_outputs[0].name: ", "'../y.png'", "'..'", NULL);
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - {path: x.png, name: /y.png}\n",
		MSB_E_CONFIG, "9:29: specs.a.declared_outputs[0].name: ", "is absolute", NULL);
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - {path: x.png, name: 'a\\b'}\n",
		MSB_E_CONFIG, "9:29: specs.a.declared_outputs[0].name: ", "backslash", NULL);
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - {path: x.png, name: a//b}\n",
		MSB_E_CONFIG, "9:29: specs.a.declared_outputs[0].name: ", "empty or '.' segment", NULL);
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - {path: x.png, name: ''}\n",
		MSB_E_CONFIG, "9:29: specs.a.declared_outputs[0].name: ", "non-empty", NULL);
}

static void test_plugin_not_found(void **state)
{
	refused("version: 1\nbackends:\n  - plugin: no_such_plugin_xyz\n", MSB_E_IMPORT,
		"3:13: backends[0].plugin: ", "no_such_plugin_xyz", NULL);
}

static void test_plugin_config_typo_refused_by_plugin(void **state)
{
	/* The plugin's own init refuses, positioned by the tree it was handed. */
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(load("version: 1\nbackends:\n  - plugin: @GOOD@\n    config:\n      closed_onyl: true\n",
			      &cfg, &err), MSB_E_CONFIG);
	char where[256];
	snprintf(where, sizeof where, "%s:5:7: backends[0].config.closed_onyl: unknown key 'closed_onyl'", file);
	if (!strstr(msb_error_message(&err), where))
		fail_msg("expected '%s' in: %s", where, msb_error_message(&err));
	msb_error_clear(&err);
}

/* The SDK's typed reads a plugin uses on its config: node, positioned the same way. */
static void test_node_size_in_plugin_config(void **state)
{
	msb_config_doc *doc = NULL;
	msb_error err = MSB_ERROR_INIT;
	const char text[] = "limits:\n  max: 8 MeB\n  wait: soon\n";
	assert_int_equal(msb_config_doc_parse(text, sizeof text - 1, "p.yaml", &doc, &err), MSB_OK);
	const msb_node *limits = msb_node_get(msb_config_doc_root(doc), "limits");
	uint64_t size = 0;
	assert_int_equal(msb_node_size(limits, "max", &size, &err), MSB_E_CONFIG);
	assert_string_equal(msb_error_message(&err),
			    "p.yaml:2:8: limits.max: '8 MeB' is not a size (a whole number of bytes, optionally "
			    "with B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
	double secs = 0;
	assert_int_equal(msb_node_seconds(limits, "wait", &secs, &err), MSB_E_CONFIG);
	assert_non_null(strstr(msb_error_message(&err), "p.yaml:3:9: limits.wait: 'soon' is not a duration"));
	msb_error_clear(&err);
	msb_config_doc_free(doc);
}

static void test_plugin_empty_refused(void **state)
{
	refused("version: 1\nbackends:\n  - plugin: ''\n", MSB_E_CONFIG, "3:13: backends[0].plugin: ",
		"expected a plugin file or name, found ''", NULL);
}

static void test_backends_empty_or_not_a_sequence(void **state)
{
	refused("version: 1\nbackends: []\n", MSB_E_CONFIG, "2:11: backends: ",
		"expected a non-empty sequence of backend entries", "found an empty one", NULL);
	refused("version: 1\nbackends:\n  plugin: x\n", MSB_E_CONFIG, "3:3: backends: ",
		"expected a non-empty sequence of backend entries", "found a mapping", NULL);
}

static void test_plugin_path_entry_refused(void **state)
{
	refused("version: 1\nplugin_path: [/a, 'b:c']\n" GOOD_BACKEND, MSB_E_CONFIG, "2:19: plugin_path[1]: ",
		"a plugin directory cannot be empty or contain ':'", NULL);
	refused("version: 1\nplugin_path: /a\n" GOOD_BACKEND, MSB_E_CONFIG, "2:14: plugin_path: ",
		"expected a sequence of strings, found a scalar", NULL);
}

static void test_unknown_key_without_suggestion(void **state)
{
	refused("version: 1\nfrobnicate: 1\n" GOOD_BACKEND, MSB_E_CONFIG, "2:1: frobnicate: ",
		"unknown key 'frobnicate'; expected one of: ", "plugin_path", NULL);
}

static void test_wrong_type_scalar_and_null(void **state)
{
	refused(HEAD "specs:\n  a:\n    image: [x]\n", MSB_E_CONFIG, "8:12: specs.a.image: ",
		"expected a string, found a sequence", NULL);
	refused(HEAD "specs:\n  a:\n    image:\n", MSB_E_CONFIG, "8:11: specs.a.image: ",
		"expected a string, found nothing (null)", NULL);
}

static void test_count_over_64_bits(void **state)
{
	refused(HEAD "specs:\n  a:\n    files_in: {max_files: 99999999999999999999}\n", MSB_E_CONFIG,
		"8:27: specs.a.files_in.max_files: ", "'99999999999999999999' does not fit in 64 bits", NULL);
}

static void test_unknown_reclaim_word(void **state)
{
	refused("version: 1\nrouter:\n  reclaim: forever\n" GOOD_BACKEND, MSB_E_CONFIG, "3:12: router.reclaim: ",
		"unknown reclaim policy 'forever'", "dispose, keep", NULL);
}

static void test_declared_outputs_shape(void **state)
{
	refused(HEAD "specs:\n  a:\n    declared_outputs: x.png\n", MSB_E_CONFIG,
		"8:23: specs.a.declared_outputs: ", "expected a sequence of declared outputs", NULL);
	refused(HEAD "specs:\n  a:\n    declared_outputs:\n      - {name: x.png}\n", MSB_E_CONFIG,
		"9:9: specs.a.declared_outputs[0]: ", "a declared output needs 'path:'", NULL);
}

static void test_label_name_with_equals(void **state)
{
	refused(HEAD "specs:\n  a:\n    labels: {'team=x': infra}\n", MSB_E_CONFIG, "8:14: specs.a.labels.team=x: ",
		"a label name cannot contain '='", NULL);
}

static void test_empty_spec_kind(void **state)
{
	refused(HEAD "specs:\n  '': {}\n", MSB_E_CONFIG, "7:3: specs.: ", "a spec kind cannot be empty", NULL);
}

static void test_mapping_key_not_a_string(void **state)
{
	refused(HEAD "specs:\n  ? [a]\n  : {}\n", MSB_E_CONFIG, "7:5: specs: ",
		"a mapping key must be a plain string, found a sequence", NULL);
	refused(HEAD "specs:\n  *a : {}\n", MSB_E_CONFIG, "7:3: specs: ", "alias refused", "no anchors", NULL);
}

static void test_nesting_too_deep(void **state)
{
	char yaml[4096];
	size_t n = (size_t)snprintf(yaml, sizeof yaml, "%s", HEAD "specs:\n  a:\n    labels: ");
	for (int i = 0; i < 200 && n < sizeof yaml - 4; i++)
		yaml[n++] = '[';
	yaml[n] = '\0';
	refused(yaml, MSB_E_CONFIG, "", "nested deeper than", NULL);
}

static void test_config_options_too_small(void **state)
{
	msb_config_options opts = MSB_CONFIG_OPTIONS_INIT;
	opts.struct_size = 4;
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	write_yaml("version: 1\n" GOOD_BACKEND);
	assert_int_equal(msb_config_load(file, &opts, &cfg, &err), MSB_E_VALUE);
	assert_null(cfg);
	assert_non_null(strstr(msb_error_message(&err), "msb_config_options struct_size 4 is older"));
	msb_error_clear(&err);
}

static void test_spec_find_unknown_kind(void **state)
{
	msb_config_options opts = MSB_CONFIG_OPTIONS_INIT;
	opts.open_backends = false;
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	write_yaml(HEAD "specs:\n  shell: {}\n  python: {}\n");
	assert_int_equal(msb_config_load(file, &opts, &cfg, &err), MSB_OK);
	const msb_spec *spec = NULL;
	assert_int_equal(msb_config_spec_find(cfg, "ruby", &spec, &err), MSB_E_VALUE);
	assert_null(spec);
	const char *msg = msb_error_message(&err);
	if (!strstr(msg, "declares no spec of kind 'ruby' (kinds: shell, python)") || !strstr(msg, file))
		fail_msg("unexpected: %s", msg);
	/* Without opening, there is nothing to route to: the router refuses, naming the file. */
	msb_router *router = NULL;
	assert_int_equal(msb_config_router(cfg, &router, &err), MSB_E_NO_BACKEND);
	msg = msb_error_message(&err);
	if (!strstr(msg, "no backend is open") || !strstr(msg, file))
		fail_msg("unexpected: %s", msg);
	msb_error_clear(&err);
	msb_config_free(cfg);
}

/* ---- positive reads ------------------------------------------------------------------ */

static void test_full_spec_read(void **state)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = load(HEAD "specs:\n"
			   "  diagram:\n"
			   "    image: diagram:1\n"
			   "    egress: allowlist\n"
			   "    egress_allow: [deb.debian.org]\n"
			   "    work_dir: /workspace\n"
			   "    requires: [exec, files_in, files_out]\n"
			   "    min_isolation: container\n"
			   "    isolation_scope: call\n"
			   "    requires_os_family: posix\n"
			   "    files_in: {max_bytes_per_file: 1KiB}\n"
			   "    files_out: {max_bytes_per_file: 8MiB, max_total_bytes: 16MiB, max_files: 4}\n"
			   "    declared_outputs:\n"
			   "      - {path: out/d.png, media_type: image/png, required: false, name: d.png}\n"
			   "      - {path: log.json, disposition: consume}\n"
			   "    outputs_named_at_call_time: true\n"
			   "    labels: {team: infra}\n"
			   "    identities: [app]\n"
			   "  plain:\n", &cfg, &err);
	if (rc != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_int_equal(msb_config_spec_count(cfg), 2);
	const msb_spec *s = msb_config_spec(cfg, "diagram");
	assert_non_null(s);
	assert_string_equal(s->image, "diagram:1");
	assert_int_equal(s->egress, MSB_EGRESS_ALLOWLIST);
	assert_string_equal(s->egress_allow[0], "deb.debian.org");
	assert_null(s->egress_allow[1]);
	assert_string_equal(s->work_dir, "/workspace");
	assert_int_equal(s->requires, MSB_BIT(MSB_CAP_EXEC) | MSB_BIT(MSB_CAP_FILES_IN) | MSB_BIT(MSB_CAP_FILES_OUT));
	assert_int_equal(s->min_isolation, MSB_ISO_CONTAINER);
	assert_int_equal(s->isolation_scope, MSB_SCOPE_CALL);
	assert_int_equal(s->requires_os_family, MSB_OS_POSIX);
	assert_int_equal(s->files_in.max_bytes_per_file, 1024);
	assert_int_equal(s->files_in.max_total_bytes, 32 * MSB_MIB); /* unstated keeps the default */
	assert_int_equal(s->files_out.max_bytes_per_file, 8 * MSB_MIB);
	assert_int_equal(s->files_out.max_total_bytes, 16 * MSB_MIB);
	assert_int_equal(s->files_out.max_files, 4);
	assert_int_equal(s->n_declared_outputs, 2);
	assert_string_equal(s->declared_outputs[0].path, "out/d.png");
	assert_string_equal(s->declared_outputs[0].media_type, "image/png");
	assert_false(s->declared_outputs[0].required);
	assert_string_equal(s->declared_outputs[0].name, "d.png");
	assert_int_equal(s->declared_outputs[1].disposition, MSB_DISPOSITION_CONSUME);
	assert_true(s->declared_outputs[1].required);
	assert_true(s->outputs_named_at_call_time);
	assert_string_equal(s->labels[0], "team=infra");
	assert_int_equal(s->identities, MSB_BIT(MSB_IDENTITY_APP));
	/* A kind with nothing under it gets the seed's strict defaults. */
	const msb_spec *p = msb_config_spec(cfg, "plain");
	assert_int_equal(p->egress, MSB_EGRESS_CLOSED);
	assert_string_equal(p->work_dir, MSB_DEFAULT_WORK_DIR);
	assert_int_equal(p->requires, MSB_DEFAULT_CAPABILITIES);
	assert_int_equal(p->min_isolation, MSB_UNSET);
	const msb_spec *none;
	assert_int_equal(msb_config_spec_find(cfg, "nope", &none, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "kinds: diagram, plain"));
	msb_error_clear(&err);
	msb_config_free(cfg);
}

static void test_router_options_read(void **state)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = load("version: 1\nrouter:\n  min_isolation: container\n  min_isolation_scope: call\n"
			   "  selection: fixed\n  selected: fixture_good\n  denied_capabilities: [host_tools]\n"
			   "  denied_identities: [user]\n  reclaim: keep\n" GOOD_BACKEND, &cfg, &err);
	if (rc != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	const msb_router_options *o = msb_config_router_options(cfg);
	assert_int_equal(o->min_isolation, MSB_ISO_CONTAINER);
	assert_int_equal(o->min_isolation_scope, MSB_SCOPE_CALL);
	assert_string_equal(o->selected, "fixture_good");
	assert_int_equal(o->denied_capabilities, MSB_BIT(MSB_CAP_HOST_TOOLS));
	assert_int_equal(o->denied_identities, MSB_BIT(MSB_IDENTITY_USER));
	assert_int_equal(o->reclaim, MSB_RECLAIM_KEEP);
	msb_router *router = NULL;
	assert_int_equal(msb_config_router(cfg, &router, &err), MSB_OK);
	msb_router_free(router);
	msb_config_free(cfg);
}

static void test_router_defaults_are_strict(void **state)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(load("version: 1\n" GOOD_BACKEND, &cfg, &err), MSB_OK);
	const msb_router_options *o = msb_config_router_options(cfg);
	assert_int_equal(o->min_isolation, MSB_ISO_MICROVM);
	assert_int_equal(o->selection, MSB_SELECTION_FIXED);
	assert_int_equal(o->reclaim, MSB_RECLAIM_DISPOSE);
	/* The container-rung fixture is below the default microvm floor: refused, not used. */
	msb_router *router = NULL;
	assert_int_equal(msb_config_router(cfg, &router, &err), MSB_E_BACKEND_NOT_PERMITTED);
	assert_null(router);
	msb_error_clear(&err);
	msb_config_free(cfg);
}

static void test_declarations_narrow(void **state)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = load("version: 1\nbackends:\n  - name: fixture_good\n    plugin: @GOOD@\n"
			   "    declarations:\n      capabilities: [exec, files_in]\n      egress_modes: [closed]\n"
			   "      limits:\n        files_in: {max_files: 2}\n", &cfg, &err);
	if (rc != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_int_equal(msb_config_backend_count(cfg), 1);
	const msb_effective_declarations *d = msb_backend_declarations(msb_config_backend_at(cfg, 0));
	assert_int_equal(d->capabilities, MSB_BIT(MSB_CAP_EXEC) | MSB_BIT(MSB_CAP_FILES_IN));
	assert_int_equal(d->egress_modes, MSB_BIT(MSB_EGRESS_CLOSED));
	assert_int_equal(d->limits.files_in.max_files, 2);
	const msb_effective_declarations *base = msb_plugin_declarations(msb_config_plugin_at(cfg, 0));
	/* Fields the mapping did not name keep the plugin's own ceiling. */
	assert_int_equal(d->limits.files_in.max_bytes_per_file, base->limits.files_in.max_bytes_per_file);
	assert_int_equal(d->os_families, base->os_families);
	msb_config_free(cfg);
}

static void test_relative_plugin_path(void **state)
{
	/* A relative plugin_path entry is read from the file's directory, not the cwd. */
	char dir[512];
	snprintf(dir, sizeof dir, "%s/fx", tmpdir);
	assert_int_equal(symlink(MSB_TOP_BUILDDIR "/tests/fixtures/.libs", dir), 0);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = load("version: 1\nplugin_path: [fx]\nbackends:\n  - plugin: good\n", &cfg, &err);
	unlink(dir);
	if (rc != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_string_equal(msb_plugin_name(msb_config_plugin_at(cfg, 0)), "fixture_good");
	msb_config_free(cfg);
}

static void test_load_without_opening(void **state)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	write_yaml("version: 1\n" GOOD_BACKEND "    config:\n      closed_only: true\n");
	msb_config_options opts = MSB_CONFIG_OPTIONS_INIT;
	opts.open_backends = false;
	assert_int_equal(msb_config_load(file, &opts, &cfg, &err), MSB_OK);
	assert_int_equal(msb_config_plugin_count(cfg), 1);
	assert_int_equal(msb_config_backend_count(cfg), 0);
	msb_router *router = NULL;
	assert_int_equal(msb_config_router(cfg, &router, &err), MSB_E_NO_BACKEND);
	msb_error_clear(&err);
	msb_config_free(cfg);
}

/* Every shipped file parses, and loads wherever its plugins are built. */
static void shipped(const char *rel)
{
	char path[512];
	snprintf(path, sizeof path, "%s/conf/%s", MSB_TOP_SRCDIR, rel);
	msb_config_doc *doc = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_doc_load(path, &doc, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	msb_config_doc_free(doc);
	setenv("MSB_PLUGIN_PATH", MSB_TOP_BUILDDIR "/plugins/inprocess/.libs:" MSB_TOP_BUILDDIR
	       "/plugins/process/.libs:" MSB_TOP_BUILDDIR "/plugins/bwrap/.libs:" MSB_TOP_BUILDDIR
	       "/plugins/gvisor/.libs:" MSB_TOP_BUILDDIR "/plugins/qemu/.libs:" MSB_TOP_BUILDDIR
	       "/tests/fixtures/.libs", 1);
	msb_config_options opts = MSB_CONFIG_OPTIONS_INIT;
	opts.open_backends = false;
	msb_config *cfg = NULL;
	msb_errc rc = msb_config_load(path, &opts, &cfg, &err);
	if (rc == MSB_E_IMPORT) {
		/* A plugin not built in this tree yet: the schema was read whole before this. */
		print_message("%s: %s (plugin not built here; schema read)\n", rel, msb_error_message(&err));
		msb_error_clear(&err);
		return;
	}
	if (rc != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_true(msb_config_plugin_count(cfg) >= 1);
	msb_config_free(cfg);
}

static void test_shipped_default(void **state) { shipped("sandbox.yaml"); }
static void test_shipped_per_spec(void **state) { shipped("examples/per-spec.yaml"); }
static void test_shipped_developer(void **state) { shipped("examples/developer-machine.yaml"); }
static void test_shipped_narrowing(void **state) { shipped("examples/narrowing.yaml"); }

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_syntax_error_has_libyaml_position),
		T(test_duplicate_key),
		T(test_anchor_refused),
		T(test_alias_and_merge_key_refused),
		T(test_merge_key_without_alias_refused),
		T(test_bad_bytes_positioned),
		T(test_tag_refused),
		T(test_second_document_refused),
		T(test_env_unset_refused),
		T(test_env_malformed_refused),
		T(test_env_expanded_and_escaped),
		T(test_empty_file_refused),
		T(test_missing_file),
		T(test_version_required),
		T(test_version_unknown),
		T(test_unknown_top_level_key),
		T(test_unknown_router_key_typo),
		T(test_unknown_spec_key),
		T(test_wrong_type_sequence),
		T(test_wrong_type_bool),
		T(test_wrong_type_map),
		T(test_unknown_word),
		T(test_retired_process_rung),
		T(test_word_listed_twice),
		T(test_unparsable_size),
		T(test_unparsable_count),
		T(test_declarations_widen_refused),
		T(test_declarations_limits_widen_refused),
		T(test_declarations_partial_limits_keep_ceiling),
		T(test_declarations_unknown_field),
		T(test_bare_declaration_field_refused),
		T(test_bare_isolation_refused),
		T(test_egress_allow_without_allowlist),
		T(test_backend_name_mismatch),
		T(test_two_entries_one_backend),
		T(test_plugin_required),
		T(test_backends_required),
		T(test_selected_with_per_spec),
		T(test_selected_not_registered),
		T(test_unknown_selection_word),
		T(test_declared_output_not_literal),
		T(test_plugin_not_found),
		T(test_plugin_config_typo_refused_by_plugin),
		T(test_node_size_in_plugin_config),
		T(test_plugin_empty_refused),
		T(test_backends_empty_or_not_a_sequence),
		T(test_plugin_path_entry_refused),
		T(test_unknown_key_without_suggestion),
		T(test_wrong_type_scalar_and_null),
		T(test_count_over_64_bits),
		T(test_unknown_reclaim_word),
		T(test_declared_outputs_shape),
		T(test_label_name_with_equals),
		T(test_empty_spec_kind),
		T(test_mapping_key_not_a_string),
		T(test_nesting_too_deep),
		T(test_config_options_too_small),
		T(test_spec_find_unknown_kind),
		T(test_full_spec_read),
		T(test_router_options_read),
		T(test_router_defaults_are_strict),
		T(test_declarations_narrow),
		T(test_relative_plugin_path),
		T(test_load_without_opening),
		T(test_shipped_default),
		T(test_shipped_per_spec),
		T(test_shipped_developer),
		T(test_shipped_narrowing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
