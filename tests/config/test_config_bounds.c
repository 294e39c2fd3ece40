/*
 * test_config_bounds.c — sandbox.yaml text that once crashed, hung, cut or blew up the reader
 * (found by tests/config/fuzz_config.c and its hand-made extremes), each now refused with
 * MSB_E_CONFIG at its position or read in linear time (plugin_path included); a directory
 * given as the file; and msb_config_parse, the plugin-free reading those run through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/msb.h>

#include "msb_test.h"

/* A growable text the extreme documents are written into. */
typedef struct text {
	char *s;
	size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) MSB_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->s = realloc(t->s, t->cap);
		assert_non_null(t->s);
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* Parse `len` bytes, expect MSB_E_CONFIG, the message to start "t.yaml:<where>" and hold every word. */
static void refused(const char *yaml, size_t len, const char *where, ...)
{
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_config_parse(yaml, len, "t.yaml", NULL, &cfg, &err);
	const char *msg = msb_error_message(&err);
	if (rc != MSB_E_CONFIG)
		fail_msg("expected SandboxConfigInvalid, got %s: %.300s", msb_errc_name(rc), msg);
	assert_null(cfg);
	char prefix[128];
	snprintf(prefix, sizeof prefix, "t.yaml:%s", where);
	if (strncmp(msg, prefix, strlen(prefix)) != 0)
		fail_msg("expected the message to start with '%s', got: %.300s", prefix, msg);
	va_list ap;
	va_start(ap, where);
	for (const char *w; (w = va_arg(ap, const char *));)
		if (!strstr(msg, w))
			fail_msg("expected '%s' in: %.300s", w, msg);
	va_end(ap);
	msb_error_clear(&err);
}

#define REFUSED(yaml, ...) refused(yaml, sizeof yaml - 1, __VA_ARGS__, NULL)

static void test_nul_in_value_refused(void **state)
{
	/* Cut at the NUL, this plugin was "/tmp/x" and this work_dir "/w". */
	REFUSED("version: 1\nbackends:\n  - plugin: \"/tmp/x\\0.so\"\n", "3:13: backends[0].plugin: ",
		"a value with a NUL character", "silently drop what follows");
	REFUSED("version: 1\nbackends: [{plugin: x}]\nspecs:\n  a:\n    work_dir: \"/w\\0/../etc\"\n",
		"5:15: specs.a.work_dir: ", "NUL character");
}

static void test_nul_in_key_refused(void **state)
{
	/* Cut at the NUL, these two keys were one key written twice. */
	REFUSED("version: 1\nspecs:\n  \"a\\0b\": {}\n  \"a\\0c\": {}\n", "3:3: specs: ",
		"a key with a NUL character");
}

/* `levels` + 1 sequences, one in the other: the innermost at depth `levels`. */
static msb_errc parse_nested(int levels, msb_config_doc **doc, msb_error *err)
{
	text t = { 0 };
	for (int i = 0; i <= levels; i++)
		put(&t, "[");
	for (int i = 0; i <= levels; i++)
		put(&t, "]");
	msb_errc rc = msb_config_doc_parse(t.s, t.len, "t.yaml", doc, err);
	free(t.s);
	return rc;
}

/* Nesting is a recursion in the reader: bounded, the bound itself accepted. */
static void test_depth_bounded(void **state)
{
	msb_config_doc *doc = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (parse_nested(MSB_CONFIG_MAX_DEPTH, &doc, &err) != MSB_OK)
		fail_msg("%d levels refused: %.300s", MSB_CONFIG_MAX_DEPTH, msb_error_message(&err));
	msb_config_doc_free(doc);
	const int deeper[] = { MSB_CONFIG_MAX_DEPTH + 1, 100000 };
	for (size_t i = 0; i < 2; i++) {
		doc = NULL;
		assert_int_equal(parse_nested(deeper[i], &doc, &err), MSB_E_CONFIG);
		assert_null(doc);
		char where[64];
		snprintf(where, sizeof where, "t.yaml:1:%d: [0][0]", MSB_CONFIG_MAX_DEPTH + 2);
		const char *msg = msb_error_message(&err);
		if (strncmp(msg, where, strlen(where)) != 0 || !strstr(msg, "nested deeper than 64 levels"))
			fail_msg("%d levels: %.300s", deeper[i], msg);
		msb_error_clear(&err);
	}
}

/* Was quadratic: 200,000 keys took minutes. The last line repeats the first key. */
static void test_many_keys_linear(void **state)
{
	text t = { 0 };
	put(&t, "version: 1\nbackends:\n  - plugin: x\n    config:\n");
	for (int i = 0; i < 200000; i++)
		put(&t, "      k%d: %d\n", i, i);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_config_parse(t.s, t.len, "t.yaml", NULL, &cfg, &err);
	if (rc != MSB_OK)
		fail_msg("%.300s", msb_error_message(&err));
	const msb_node *config = msb_node_get(msb_config_backend_node(cfg, 0), "config");
	assert_int_equal(config->len, 200000);
	assert_string_equal(msb_node_get(config, "k199999")->scalar, "199999");
	msb_config_free(cfg);
	put(&t, "      k0: again\n");
	refused(t.s, t.len, "200005:7: backends[0].config.k0: ", "duplicate key 'k0'",
		"first given at line 5", NULL);
	free(t.s);
}

/*
 * Was 10 GB and 40 s from 260 KB: every node's key path repeats its parents' keys, here 60
 * keys of 1000 bytes over 100,000 items.
 */
static void test_key_paths_bounded(void **state)
{
	text t = { 0 };
	for (int i = 0; i < 60; i++)
		put(&t, "%*sk%d%01000d:\n", i, "", i, 0);
	put(&t, "%*s[", 60, "");
	for (int i = 0; i < 100000; i++)
		put(&t, "a,");
	put(&t, "a]\n");
	refused(t.s, t.len, "61:", "passes the 64 MiB a parsed sandbox.yaml may hold", "key paths", NULL);
	free(t.s);
}

/* Was 400 MB of one value from 140 KB: 20,000 references to a 4 KiB variable. */
static void test_expansion_bounded(void **state)
{
	char value[4097];
	memset(value, 'v', sizeof value - 1);
	value[sizeof value - 1] = '\0';
	setenv("MSB_TEST_LONG", value, 1);
	text t = { 0 };
	put(&t, "version: 1\nbackends: [{plugin: x}]\nspecs:\n  a:\n    image: \"");
	for (int i = 0; i < 20000; i++)
		put(&t, "${MSB_TEST_LONG}");
	put(&t, "\"\n");
	refused(t.s, t.len, "5:12: specs.a.image: ", "value refused", "${VAR} expansions",
		"past the 64 MiB", NULL);
	free(t.s);
	unsetenv("MSB_TEST_LONG");
}

/* A name longer than 255 was cut to 255 and read another variable. */
static void test_long_variable_name_whole(void **state)
{
	char name[301];
	memset(name, 'N', 300);
	name[300] = '\0';
	name[255] = '\0';
	setenv(name, "cut", 1);
	name[255] = 'N';
	text t = { 0 };
	put(&t, "version: 1\nbackends: [{plugin: x}]\nspecs:\n  a:\n    image: \"${%s}\"\n", name);
	char words[400];
	snprintf(words, sizeof words, "environment variable '%s' is not set", name);
	refused(t.s, t.len, "5:12: specs.a.image: ", words, NULL);
	free(t.s);
	name[255] = '\0';
	unsetenv(name);
}

/* The shipped file, read without its plugins: specs and router read, nothing loaded. */
static void test_parse_without_plugins(void **state)
{
	char path[512];
	snprintf(path, sizeof path, "%s/conf/sandbox.yaml", MSB_TOP_SRCDIR);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char buf[65536];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_parse(buf, n, NULL, NULL, &cfg, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_string_equal(msb_config_file(cfg), "<memory>");
	assert_true(msb_config_spec_count(cfg) > 0);
	assert_int_equal(msb_config_plugin_count(cfg), 0);
	assert_null(msb_config_plugin_at(cfg, 0));
	assert_int_equal(msb_config_backend_count(cfg), 0);
	assert_null(msb_config_loader(cfg));
	msb_router *router = NULL;
	assert_int_equal(msb_config_router(cfg, &router, &err), MSB_E_NO_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "no backend is open"));
	msb_error_clear(&err);
	msb_config_free(cfg);
}

/* Was quadratic in memory: 30,000 one-letter entries took 2.3 GB. */
static void test_plugin_path_linear(void **state)
{
	text t = { 0 };
	put(&t, "version: 1\nbackends: [{plugin: x}]\nplugin_path: [/abs");
	for (int i = 0; i < 100000; i++)
		put(&t, ", d");
	put(&t, "]\n");
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_parse(t.s, t.len, "/etc/msb/sandbox.yaml", NULL, &cfg, &err) != MSB_OK)
		fail_msg("%.300s", msb_error_message(&err));
	const char *joined = msb_config_plugin_path(cfg);
	assert_int_equal(strlen(joined), strlen("/abs") + 100000 * strlen(":/etc/msb/d"));
	assert_int_equal(strncmp(joined, "/abs:/etc/msb/d:/etc/msb/d:", 27), 0);
	msb_config_free(cfg);
	free(t.s);
}

/* A directory opens for reading: it was "YAML syntax: input error". */
static void test_directory_refused(void **state)
{
	char dir[] = "/tmp/msb-config-bounds-XXXXXX";
	assert_non_null(mkdtemp(dir));
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_config_load(dir, NULL, &cfg, &err);
	rmdir(dir);
	assert_int_equal(rc, MSB_E_OS);
	assert_null(cfg);
	char words[96];
	snprintf(words, sizeof words, "cannot read configuration '%s': Is a directory", dir);
	assert_string_equal(msb_error_message(&err), words);
	msb_error_clear(&err);
}

/*
 * A FIFO given as the file: the open itself used to wait for a writer, for ever. Refused at
 * once, before a read, naming what it is; so is a character device (/dev/zero never ends).
 */
static void test_fifo_and_device_refused(void **state)
{
	(void)state;
	char dir[] = "/tmp/msb-config-fifo-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char fifo[64];
	snprintf(fifo, sizeof fifo, "%s/sandbox.yaml", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_config_load(fifo, NULL, &cfg, &err);
	unlink(fifo);
	rmdir(dir);
	assert_int_equal(rc, MSB_E_CONFIG);
	assert_null(cfg);
	assert_non_null(strstr(msb_error_message(&err), "is a FIFO, not a regular file"));
	msb_error_clear(&err);
	rc = msb_config_load("/dev/zero", NULL, &cfg, &err);
	assert_int_equal(rc, MSB_E_CONFIG);
	assert_non_null(strstr(msb_error_message(&err), "is a character device"));
	msb_error_clear(&err);
}

/* A file over MSB_CONFIG_MAX_FILE is refused by its size, before it is read. */
static void test_oversized_file_refused(void **state)
{
	(void)state;
	char path[] = "/tmp/msb-config-big-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	/* Sparse: a size past the bound costs no disk. */
	assert_int_equal(ftruncate(fd, (off_t)MSB_CONFIG_MAX_FILE + 1), 0);
	close(fd);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_config_load(path, NULL, &cfg, &err);
	unlink(path);
	assert_int_equal(rc, MSB_E_CONFIG);
	assert_non_null(strstr(msb_error_message(&err), "over the 4194304 a sandbox.yaml may have"));
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nul_in_value_refused),
		cmocka_unit_test(test_nul_in_key_refused),
		cmocka_unit_test(test_depth_bounded),
		cmocka_unit_test(test_many_keys_linear),
		cmocka_unit_test(test_key_paths_bounded),
		cmocka_unit_test(test_expansion_bounded),
		cmocka_unit_test(test_long_variable_name_whole),
		cmocka_unit_test(test_parse_without_plugins),
		cmocka_unit_test(test_plugin_path_linear),
		cmocka_unit_test(test_directory_refused),
		cmocka_unit_test(test_fifo_and_device_refused),
		cmocka_unit_test(test_oversized_file_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
