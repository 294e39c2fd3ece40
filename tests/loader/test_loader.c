/*
 * test_loader.c — the plugin loader against real fixture shared objects: every refusal by
 * code and by the words that make it actionable (the file, the field or symbol, what was
 * found), the good and the silent plugin's effective declarations, and name uniqueness.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <msb/loader.h>

#include "msb_test.h"

/* Assert that `message` contains every word of the NULL-terminated list. */
static void assert_mentions(const char *message, const char *const *words)
{
	for (size_t i = 0; words[i]; i++) {
		if (!strstr(message, words[i]))
			fail_msg("message lacks '%s': %s", words[i], message);
	}
}

/* Load one fixture into a fresh loader and assert the refusal. */
static void expect_refused(const char *fixture, msb_errc code, const char *const *words)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *p = NULL;
	char file[64];
	snprintf(file, sizeof file, "%s.so", fixture);
	char path[4096];
	snprintf(path, sizeof path, MSB_TOP_BUILDDIR "/tests/fixtures/.libs/%s.so", fixture);

	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	msb_errc rc = msb_loader_load(loader, path, &p, &err);
	if (rc != code)
		fail_msg("%s: expected %s, got %s: %s", fixture, msb_errc_name(code),
			 msb_errc_name(rc), msb_error_message(&err));
	assert_int_equal(err.code, code);
	assert_null(p);
	assert_int_equal(msb_loader_count(loader), 0);
	assert_mentions(msb_error_message(&err), (const char *const[]){ "plugin ", file, NULL });
	assert_mentions(msb_error_message(&err), words);
	msb_error_clear(&err);
	msb_loader_free(loader);
}

#define REFUSED(fixture, ...)                                                         \
	expect_refused(fixture, MSB_E_BACKEND_NOT_PERMITTED, MSB_WORDS(__VA_ARGS__))

static void test_refuses_missing_descriptor(void **state)
{
	REFUSED("no_symbol", "no 'msb_backend_v27' symbol", "not an msb backend", "ABI 27");
}

static void test_refuses_other_abi_symbol_naming_both(void **state)
{
	REFUSED("old_symbol", "no 'msb_backend_v27' symbol but 'msb_backend_v26'",
		"built for ABI 26, this host speaks 27");
}

static void test_refuses_bad_magic(void **state)
{
	REFUSED("bad_magic", "msb_backend_v27.magic", "0x7f454c46", "expected 0x21627367");
}

static void test_refuses_old_abi_naming_both(void **state)
{
	REFUSED("old_abi", "abi_version", "built for ABI 26, this host speaks 27");
}

static void test_refuses_small_struct_naming_both(void **state)
{
	char host[64];
	snprintf(host, sizeof host, "ABI 27's descriptor is at least %zu bytes",
		 (size_t)MSB_BACKEND_V27_BASE_SIZE);
	char plugin[64];
	snprintf(plugin, sizeof plugin, "struct_size is %zu bytes",
		 offsetof(struct msb_backend_v27, reclaim));
	REFUSED("small_struct", plugin, host);
}

static void test_refuses_each_stale_bare_symbol(void **state)
{
	REFUSED("stale_capabilities", "stale bare symbol 'msb_backend_capabilities'",
		"read as {exec, files_in}", "declarations.capabilities");
	REFUSED("stale_limits", "'msb_backend_limits'", "default ceilings",
		"declarations.limits");
	REFUSED("stale_egress_modes", "'msb_backend_egress_modes'", "refusing every spec",
		"declarations.egress_modes");
	REFUSED("stale_os_families", "'msb_backend_os_families'", "declarations.os_families");
}

static void test_refuses_missing_name(void **state)
{
	REFUSED("no_name", "msb_backend_v27.name is empty");
}

static void test_refuses_unknown_rung(void **state)
{
	REFUSED("unknown_rung", "msb_backend_v27.isolation", "'sandboxed'", "os_process");
}

static void test_refuses_retired_process_rung(void **state)
{
	REFUSED("process_rung", "msb_backend_v27.isolation", "'process'", "retired",
		"not 'os_process'");
}

static void test_refuses_unknown_words(void **state)
{
	REFUSED("unknown_capability", "declarations.capabilities", "'teleport'");
	REFUSED("unknown_egress", "declarations.egress_modes", "'proxied'");
	REFUSED("unknown_os_family", "declarations.os_families", "'plan9'");
	REFUSED("unknown_scope", "declarations.isolation_scopes", "'session'");
}

/* Issue 21: the appended images declaration is checked at load, naming the entry. */
static void test_refuses_bad_image_name(void **state)
{
	(void)state;
	REFUSED("bad_image_name", "msb_backend_v27.images[1] '../etc'", "is not an image name");
}

static void test_refuses_duplicate_word(void **state)
{
	REFUSED("duplicate_word", "declarations.egress_modes", "'closed' is listed twice");
}

static void test_refuses_missing_mandatory_ops(void **state)
{
	REFUSED("no_reclaim", "msb_backend_v27.reclaim is NULL", "mandatory");
	REFUSED("no_dispose", "msb_backend_v27.dispose is NULL", "mandatory");
	REFUSED("no_acquire", "msb_backend_v27.acquire is NULL", "mandatory");
}

static void test_refuses_capability_without_op(void **state)
{
	REFUSED("run_code_without_op", "declares capability 'run_code'",
		"msb_backend_v27.run_code is NULL");
	REFUSED("silent_without_exec", "msb_backend_v27.exec is NULL", "capabilities is unstated",
		"{exec, files_in}");
	/* An appended operation (issue 22): `snapshot` needs all four snapshot operations. */
	REFUSED("snapshot_without_op", "declares capability 'snapshot'",
		"msb_backend_v27.snapshot_save is NULL");
}

static void test_refuses_not_a_shared_object(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	const char *path = MSB_TOP_SRCDIR "/tests/fixtures/not_a_plugin.so.txt";
	assert_int_equal(msb_loader_load(loader, path, NULL, &err), MSB_E_IMPORT);
	assert_mentions(msb_error_message(&err),
			MSB_WORDS("plugin ", "not_a_plugin.so.txt", "is not an ELF file"));
	assert_string_equal(msb_errc_name(err.code), "ImportError");
	assert_int_equal(msb_loader_load(loader, "/nonexistent/x.so", NULL, &err), MSB_E_IMPORT);
	assert_mentions(msb_error_message(&err), MSB_WORDS("/nonexistent/x.so"));
	assert_int_equal(msb_loader_load(loader, "", NULL, &err), MSB_E_VALUE);
	assert_mentions(msb_error_message(&err), MSB_WORDS("plugin loader", "no plugin file given"));
	assert_int_equal(msb_loader_load(loader, NULL, NULL, &err), MSB_E_VALUE);
	msb_error_clear(&err);
	msb_loader_free(loader);
}

static void test_refuses_second_plugin_with_same_name(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("good"), NULL, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("same_name"), NULL, &err),
			 MSB_E_BACKEND_NOT_PERMITTED);
	assert_mentions(msb_error_message(&err),
			MSB_WORDS("same_name.so", "good.so", "'fixture_good'", "name"));
	assert_int_equal(msb_loader_count(loader), 1);
	assert_string_equal(msb_plugin_name(msb_loader_at(loader, 0)), "fixture_good");
	assert_null(msb_loader_at(loader, 1));
	msb_error_clear(&err);
	msb_loader_free(loader);
}

static void assert_limits(const msb_transfer_limits *l, uint64_t per_file, uint64_t total,
			  uint64_t files)
{
	assert_int_equal(l->max_bytes_per_file, per_file);
	assert_int_equal(l->max_total_bytes, total);
	assert_int_equal(l->max_files, files);
}

static void test_good_plugin_declarations(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *p;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("good"), &p, &err), MSB_OK);
	assert_string_equal(msb_plugin_name(p), "fixture_good");
	assert_string_equal(msb_plugin_file(p), MSB_TEST_FIXTURE("good"));
	assert_int_equal(msb_plugin_isolation(p), MSB_ISO_CONTAINER);
	assert_non_null(msb_plugin_descriptor(p)->reclaim);
	const msb_effective_declarations *d = msb_plugin_declarations(p);
	assert_int_equal(d->capabilities,
			 MSB_BIT(MSB_CAP_EXEC) | MSB_BIT(MSB_CAP_RUN_CODE) |
				 MSB_BIT(MSB_CAP_FILES_IN) | MSB_BIT(MSB_CAP_FILES_OUT) |
				 MSB_BIT(MSB_CAP_FILES_LIST) | MSB_BIT(MSB_CAP_FILES_DELETE));
	assert_limits(&d->limits.files_in, 1 * MSB_MIB, 4 * MSB_MIB, 16);
	assert_limits(&d->limits.files_out, 2 * MSB_MIB, 8 * MSB_MIB, 32);
	assert_int_equal(d->egress_modes,
			 MSB_BIT(MSB_EGRESS_CLOSED) | MSB_BIT(MSB_EGRESS_ALLOWLIST));
	assert_int_equal(d->os_families, MSB_BIT(MSB_OS_POSIX));
	assert_int_equal(d->isolation_scopes,
			 MSB_BIT(MSB_SCOPE_CONVERSATION) | MSB_BIT(MSB_SCOPE_CALL));
	assert_false(d->observes_egress);
	/* The one field it leaves unstated. */
	assert_int_equal(d->unstated, MSB_DECL_OBSERVES_EGRESS);
	msb_loader_free(loader);
}

static void test_silent_plugin_reads_every_silence_rule(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *p;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("silent"), &p, &err), MSB_OK);
	assert_int_equal(msb_plugin_isolation(p), MSB_ISO_OS_PROCESS);
	const msb_effective_declarations *d = msb_plugin_declarations(p);
	assert_int_equal(d->capabilities, MSB_DEFAULT_CAPABILITIES);
	assert_limits(&d->limits.files_in, 8 * MSB_MIB, 32 * MSB_MIB, 64);
	assert_limits(&d->limits.files_out, 8 * MSB_MIB, 32 * MSB_MIB, 64);
	assert_int_equal(d->egress_modes, 0);
	assert_int_equal(d->os_families, 0);
	assert_int_equal(d->isolation_scopes, MSB_BIT(MSB_SCOPE_CONVERSATION));
	assert_false(d->observes_egress);
	assert_int_equal(d->unstated, MSB_DECL_CAPABILITIES | MSB_DECL_LIMITS |
					      MSB_DECL_EGRESS_MODES | MSB_DECL_OS_FAMILIES |
					      MSB_DECL_ISOLATION_SCOPES | MSB_DECL_OBSERVES_EGRESS);
	msb_loader_free(loader);
}

static void test_two_plugins_load_in_order(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("silent"), NULL, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("good"), NULL, &err), MSB_OK);
	/* A refused plugin between them changes nothing. */
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("bad_magic"), NULL, &err),
			 MSB_E_BACKEND_NOT_PERMITTED);
	assert_int_equal(msb_loader_count(loader), 2);
	assert_string_equal(msb_plugin_name(msb_loader_at(loader, 0)), "fixture_silent");
	assert_string_equal(msb_plugin_name(msb_loader_at(loader, 1)), "fixture_good");
	msb_error_clear(&err);
	msb_loader_free(loader);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refuses_missing_descriptor),
		cmocka_unit_test(test_refuses_other_abi_symbol_naming_both),
		cmocka_unit_test(test_refuses_bad_magic),
		cmocka_unit_test(test_refuses_old_abi_naming_both),
		cmocka_unit_test(test_refuses_small_struct_naming_both),
		cmocka_unit_test(test_refuses_each_stale_bare_symbol),
		cmocka_unit_test(test_refuses_missing_name),
		cmocka_unit_test(test_refuses_unknown_rung),
		cmocka_unit_test(test_refuses_retired_process_rung),
		cmocka_unit_test(test_refuses_unknown_words),
		cmocka_unit_test(test_refuses_duplicate_word),
		cmocka_unit_test(test_refuses_bad_image_name),
		cmocka_unit_test(test_refuses_missing_mandatory_ops),
		cmocka_unit_test(test_refuses_capability_without_op),
		cmocka_unit_test(test_refuses_not_a_shared_object),
		cmocka_unit_test(test_refuses_second_plugin_with_same_name),
		cmocka_unit_test(test_good_plugin_declarations),
		cmocka_unit_test(test_silent_plugin_reads_every_silence_rule),
		cmocka_unit_test(test_two_plugins_load_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
