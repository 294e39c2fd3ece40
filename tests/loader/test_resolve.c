/*
 * test_resolve.c — finding a plugin file from a sandbox.yaml reference: a path as written,
 * a bare name along the search path, then $MSB_PLUGIN_PATH, first match winning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/loader.h>

typedef struct dirs {
	char first[64], second[64];
} dirs;

static void touch(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

static int setup(void **state)
{
	dirs *d = calloc(1, sizeof *d);
	strcpy(d->first, "/tmp/msb-resolve-a-XXXXXX");
	strcpy(d->second, "/tmp/msb-resolve-b-XXXXXX");
	if (!mkdtemp(d->first) || !mkdtemp(d->second))
		return -1;
	*state = d;
	return 0;
}

static void rm(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	unlink(path);
}

static int teardown(void **state)
{
	dirs *d = *state;
	rm(d->first, "both.so");
	rm(d->second, "both.so");
	rm(d->second, "env.so");
	rmdir(d->first);
	rmdir(d->second);
	free(d);
	unsetenv("MSB_PLUGIN_PATH");
	return 0;
}

static void expect_resolved(const char *ref, const char *search, const char *dir,
			    const char *file)
{
	char *got = NULL, want[256];
	msb_error err = MSB_ERROR_INIT;
	snprintf(want, sizeof want, "%s/%s", dir, file);
	if (msb_plugin_resolve(ref, search, &got, &err) != MSB_OK)
		fail_msg("%s: %s", ref, msb_error_message(&err));
	assert_string_equal(got, want);
	free(got);
}

static void test_search_path_then_env_first_match_wins(void **state)
{
	dirs *d = *state;
	touch(d->first, "both.so");
	touch(d->second, "both.so");
	touch(d->second, "env.so");
	char search[200];
	snprintf(search, sizeof search, "/nonexistent::%s", d->first);
	setenv("MSB_PLUGIN_PATH", d->second, 1);

	expect_resolved("both", search, d->first, "both.so");
	expect_resolved("both.so", search, d->first, "both.so");
	/* Not on the search path: $MSB_PLUGIN_PATH. */
	expect_resolved("env", search, d->second, "env.so");
	expect_resolved("both", NULL, d->second, "both.so");
}

static void test_path_used_as_written(void **state)
{
	char *got = NULL;
	assert_int_equal(msb_plugin_resolve("./nowhere/x.so", "/tmp", &got, NULL), MSB_OK);
	assert_string_equal(got, "./nowhere/x.so");
	free(got);
}

static void test_unknown_name_refused_naming_places(void **state)
{
	dirs *d = *state;
	char *got = NULL;
	msb_error err = MSB_ERROR_INIT;
	setenv("MSB_PLUGIN_PATH", d->second, 1);
	assert_int_equal(msb_plugin_resolve("msb-no-such-plugin", d->first, &got, &err),
			 MSB_E_IMPORT);
	assert_null(got);
	const char *m = msb_error_message(&err);
	assert_non_null(strstr(m, "msb-no-such-plugin.so"));
	assert_non_null(strstr(m, d->first));
	assert_non_null(strstr(m, d->second));
	assert_non_null(strstr(m, "plugin directory"));
	assert_int_equal(msb_plugin_resolve("", NULL, &got, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "plugin lookup: no plugin named"));
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_search_path_then_env_first_match_wins, setup,
						teardown),
		cmocka_unit_test(test_path_used_as_written),
		cmocka_unit_test_setup_teardown(test_unknown_name_refused_naming_places, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
