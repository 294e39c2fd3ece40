/*
 * test_loader_hostile.c — plugin files that are broken or hostile cost a refusal, never the
 * host: files that are not complete shared objects for this machine (truncated at every
 * length, a FIFO, a directory, AArch64, 32-bit, big-endian, an executable, no dynamic
 * section…), descriptors that are functions or too small, bytes that are no bool, names no
 * sandbox.yaml could match, symbols that live in a dependency or behind a version, and
 * constructors that exit, abort, segfault, print or hang (refused by the probe child).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/loader.h>

#include "msb_test.h"

/* Generous: a loaded machine with sanitizers must still finish a dlopen in time. */
#define PROBE_MS 8000u

static char tmpdir[64];

static int make_tmpdir(void **state)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/msb-hostile-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int remove_tmpdir(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void assert_mentions(const char *message, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (!strstr(message, words[i]))
			fail_msg("message lacks '%s': %s", words[i], message);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc((size_t)n);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void spill(const char *path, const unsigned char *b, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	fclose(f);
}

/* Load `path` with the probe child on or off and expect a refusal with `code` and `words`. */
static void expect_path_refused(const char *path, unsigned probe, msb_errc code,
				const char *const *words)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *p = NULL;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	msb_loader_set_probe(loader, probe);
	msb_errc rc = msb_loader_load(loader, path, &p, &err);
	if (rc != code)
		fail_msg("%s (probe %u): expected %s, got %s: %s", path, probe, msb_errc_name(code),
			 msb_errc_name(rc), msb_error_message(&err));
	assert_null(p);
	assert_int_equal(msb_loader_count(loader), 0);
	assert_mentions(msb_error_message(&err), (const char *const[]){ "plugin ", path, NULL });
	assert_mentions(msb_error_message(&err), words);
	msb_error_clear(&err);
	msb_loader_free(loader);
}

#define FILE_REFUSED(path, ...)                                                      \
	do {                                                                         \
		expect_path_refused(path, 0, MSB_E_IMPORT, MSB_WORDS(__VA_ARGS__));  \
		expect_path_refused(path, PROBE_MS, MSB_E_IMPORT, MSB_WORDS(__VA_ARGS__)); \
	} while (0)

/* A copy of the good fixture with `patch` applied, written into the test's directory. */
static char *patched_copy(const char *name, void (*patch)(unsigned char *, size_t *))
{
	size_t len;
	unsigned char *b = slurp(MSB_TEST_FIXTURE("good"), &len);
	patch(b, &len);
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	spill(path, b, len);
	free(b);
	return path;
}

static void cut_4k(unsigned char *b, size_t *len) { *len = 4096; }
static void to_aarch64(unsigned char *b, size_t *len) { uint16_t m = EM_AARCH64; memcpy(b + 18, &m, 2); }
static void to_unknown_machine(unsigned char *b, size_t *len) { uint16_t m = 0x7777; memcpy(b + 18, &m, 2); }
static void to_32bit(unsigned char *b, size_t *len) { b[EI_CLASS] = ELFCLASS32; }
static void to_big_endian(unsigned char *b, size_t *len) { b[EI_DATA] = ELFDATA2MSB; }
static void to_exec(unsigned char *b, size_t *len) { uint16_t t = ET_EXEC; memcpy(b + 16, &t, 2); }
static void to_rel(unsigned char *b, size_t *len) { uint16_t t = ET_REL; memcpy(b + 16, &t, 2); }
static void to_core(unsigned char *b, size_t *len) { uint16_t t = ET_CORE; memcpy(b + 16, &t, 2); }
static void to_text(unsigned char *b, size_t *len) { memcpy(b, "hello, world", 12); }
static void to_script(unsigned char *b, size_t *len) { memcpy(b, "#!/bin/sh\n", 10); }
static void to_empty(unsigned char *b, size_t *len) { *len = 0; }

/* Turn PT_DYNAMIC into PT_NULL: what a statically linked object looks like. */
static void drop_dynamic(unsigned char *b, size_t *len)
{
	ElfW(Ehdr) eh;
	memcpy(&eh, b, sizeof eh);
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;
		unsigned char *at = b + eh.e_phoff + i * sizeof ph;
		memcpy(&ph, at, sizeof ph);
		if (ph.p_type == PT_DYNAMIC) {
			ph.p_type = PT_NULL;
			memcpy(at, &ph, sizeof ph);
		}
	}
}

/* The section headers' offset far past the end: a file cut where its tables were. */
static void far_sections(unsigned char *b, size_t *len)
{
	ElfW(Ehdr) eh;
	memcpy(&eh, b, sizeof eh);
	eh.e_shoff = (ElfW(Off))*len + 4096;
	memcpy(b, &eh, sizeof eh);
}

static void test_truncated_first_4k(void **state)
{
	/* dlopen of this kills the process with SIGBUS; the check refuses it unread. */
	FILE_REFUSED(patched_copy("cut4k.so", cut_4k), "truncated");
}

static void test_truncated_at_every_kind_of_length(void **state)
{
	size_t len;
	unsigned char *b = slurp(MSB_TEST_FIXTURE("good"), &len);
	char path[256];
	snprintf(path, sizeof path, "%s/cut.so", tmpdir);
	/* Every length up to the headers, then strides through the file, then one byte short. */
	for (size_t n = 0; n < len; n += n < 256 ? 1 : n < 8192 ? 61 : 997) {
		spill(path, b, n);
		msb_loader *loader;
		msb_error err = MSB_ERROR_INIT;
		assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
		msb_errc rc = msb_loader_load(loader, path, NULL, &err);
		if (rc != MSB_E_IMPORT)
			fail_msg("cut at %zu of %zu: %s: %s", n, len, msb_errc_name(rc),
				 msb_error_message(&err));
		msb_error_clear(&err);
		msb_loader_free(loader);
	}
	spill(path, b, len - 1);
	expect_path_refused(path, 0, MSB_E_IMPORT, MSB_WORDS("truncated"));
	free(b);
}

static void test_fifo_is_refused_without_hanging(void **state)
{
	char path[256];
	snprintf(path, sizeof path, "%s/pipe.so", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	time_t t0 = time(NULL);
	FILE_REFUSED(path, "FIFO");
	assert_true(time(NULL) - t0 < 60);
}

static void test_directory_and_devices(void **state)
{
	char path[256];
	snprintf(path, sizeof path, "%s/dir.so", tmpdir);
	assert_int_equal(mkdir(path, 0700), 0);
	FILE_REFUSED(path, "is a directory");
	FILE_REFUSED("/dev/null", "character device");
	expect_path_refused("/nonexistent/x.so", 0, MSB_E_IMPORT,
			    MSB_WORDS("cannot be opened", "No such file"));
}

static void test_foreign_machine_named(void **state)
{
	/* dlopen says "No such file or directory" for this; the check names the machine. */
	FILE_REFUSED(patched_copy("arm.so", to_aarch64), "another machine (AArch64)", "x86-64");
	FILE_REFUSED(patched_copy("odd.so", to_unknown_machine), "another machine (ELF e_machine 30583)");
	FILE_REFUSED(patched_copy("x32.so", to_32bit), "32-bit ELF object", "this host is 64-bit");
	FILE_REFUSED(patched_copy("be.so", to_big_endian), "other byte order", "big-endian");
}

static void test_not_a_shared_object_named(void **state)
{
	FILE_REFUSED(patched_copy("exec.so", to_exec), "is an executable", "ET_EXEC");
	FILE_REFUSED(patched_copy("rel.so", to_rel), "relocatable object file");
	FILE_REFUSED(patched_copy("core.so", to_core), "core dump");
	FILE_REFUSED(patched_copy("text.so", to_text), "is not an ELF file");
	FILE_REFUSED(patched_copy("script.so", to_script), "is a script");
	FILE_REFUSED(patched_copy("empty.so", to_empty), "empty file");
	FILE_REFUSED(patched_copy("static.so", drop_dynamic), "no dynamic section", "static");
	FILE_REFUSED(patched_copy("shoff.so", far_sections), "truncated", "section headers");
	/* This test program itself: a position-independent executable, not a shared object. */
	expect_path_refused("/proc/self/exe", 0, MSB_E_IMPORT, MSB_WORDS("executable"));
}

static void test_symlink_to_good_plugin_loads(void **state)
{
	char path[256];
	snprintf(path, sizeof path, "%s/link.so", tmpdir);
	assert_int_equal(symlink(MSB_TEST_FIXTURE("good"), path), 0);
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	const msb_plugin *p = NULL;
	if (msb_loader_load(loader, path, &p, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_string_equal(msb_plugin_name(p), "fixture_good");
	msb_loader_free(loader);
}

/* A hostile fixture, refused with the probe child off and on (the same words both ways). */
static void expect_fixture_refused(const char *fixture, msb_errc code, unsigned probe,
				   const char *const *words)
{
	char path[4096];
	snprintf(path, sizeof path, "%s", MSB_TEST_FIXTURE("") );
	/* MSB_TEST_FIXTURE("") ends in "/.so"; put the name before the extension. */
	path[strlen(path) - 3] = '\0';
	strncat(path, fixture, sizeof path - strlen(path) - 4);
	strcat(path, ".so");
	expect_path_refused(path, probe, code, words);
}

#define BOTH_REFUSED(fixture, ...)                                                     \
	do {                                                                           \
		expect_fixture_refused(fixture, MSB_E_BACKEND_NOT_PERMITTED, 0,        \
				       MSB_WORDS(__VA_ARGS__));                        \
		expect_fixture_refused(fixture, MSB_E_BACKEND_NOT_PERMITTED, PROBE_MS, \
				       MSB_WORDS(__VA_ARGS__));                        \
	} while (0)

static void test_descriptor_must_be_a_big_enough_data_object(void **state)
{
	BOTH_REFUSED("hostile_function_descriptor", "msb_backend_v27 is a function",
		     "not a data object");
	BOTH_REFUSED("hostile_small_object", "struct_size says", "the object is 12 bytes",
		     "read past its end");
	BOTH_REFUSED("hostile_tiny_object", "4-byte object", "too small");
}

static void test_observes_egress_byte_two(void **state)
{
	BOTH_REFUSED("hostile_observes_two", "declarations.observes_egress", "the byte 2");
}

static void test_names_must_be_short_words(void **state)
{
	BOTH_REFUSED("hostile_name_newline", "name 'fine\\x0aplugin forged_line'",
		     "is not a backend name");
	BOTH_REFUSED("hostile_name_bytes", "name 'caf\\xc3\\xa9\\xff'", "is not a backend name");
	BOTH_REFUSED("hostile_name_upper", "name 'Fixture Hostile'", "is not a backend name");
	BOTH_REFUSED("hostile_name_65", "is not a backend name", "1 to 64");
	BOTH_REFUSED("hostile_name_long", "msb_backend_v27.name 'aaaa", "(too long)",
		     "is not a backend name");
}

static void test_long_name_refusal_keeps_file_and_field(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("hostile_name_long"), NULL, &err),
			 MSB_E_BACKEND_NOT_PERMITTED);
	assert_true(strlen(msb_error_message(&err)) < 1024);
	assert_mentions(msb_error_message(&err),
			MSB_WORDS("hostile_name_long.so", "msb_backend_v27.name"));
	msb_error_clear(&err);
	msb_loader_free(loader);
}

static void test_stale_symbol_behind_a_version(void **state)
{
	BOTH_REFUSED("hostile_stale_versioned", "stale bare symbol 'msb_backend_limits'");
	BOTH_REFUSED("hostile_stale_default_version",
		     "stale bare symbol 'msb_backend_egress_modes'");
}

static void test_sysv_hash_plugin_loads(void **state)
{
	/* Only DT_HASH: the symbol count comes from it rather than from the GNU hash chains. */
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	const msb_plugin *p = NULL;
	if (msb_loader_load(loader, MSB_TEST_FIXTURE("hostile_sysv_hash"), &p, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_string_equal(msb_plugin_name(p), "fixture_hostile");
	msb_loader_free(loader);
}

static void test_symbols_are_the_plugins_own(void **state)
{
	/* Its dependency has a descriptor; the plugin has none of its own. */
	BOTH_REFUSED("hostile_no_own_descriptor", "no 'msb_backend_v27' symbol");
	/* Its dependency exports a stale bare symbol; the plugin itself is clean. */
	for (unsigned probe = 0; probe <= PROBE_MS; probe += PROBE_MS) {
		msb_loader *loader;
		msb_error err = MSB_ERROR_INIT;
		assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
		msb_loader_set_probe(loader, probe);
		const msb_plugin *p = NULL;
		if (msb_loader_load(loader, MSB_TEST_FIXTURE("hostile_dep_stale_user"), &p, &err) !=
		    MSB_OK)
			fail_msg("%s", msb_error_message(&err));
		assert_string_equal(msb_plugin_name(p), "fixture_hostile");
		msb_loader_free(loader);
	}
}

#define PROBE_REFUSED(fixture, ...)                                                    \
	expect_fixture_refused(fixture, MSB_E_IMPORT, PROBE_MS, MSB_WORDS(__VA_ARGS__))

static void test_constructors_run_in_the_probe_child(void **state)
{
	PROBE_REFUSED("hostile_ctor_exit", "called exit()", "before it could be checked");
	PROBE_REFUSED("hostile_ctor_abort", "signal 6 (SIGABRT");
	PROBE_REFUSED("hostile_ctor_segv", "signal 11 (SIGSEGV");
	PROBE_REFUSED("hostile_ctor_printf", "wrote 17 bytes to stdout or stderr",
		      "{\"forged\": true}\\x0a", "must not write to the host's output");
	PROBE_REFUSED("hostile_ctor_stderr", "wrote 6 bytes", "noise\\x0a");
	/* A destructor that exits would end the host at msb_loader_free: the child unloads too. */
	PROBE_REFUSED("hostile_dtor_exit", "called exit()");
}

static void test_hanging_constructor_times_out(void **state)
{
	time_t t0 = time(NULL);
	expect_fixture_refused("hostile_ctor_sleep", MSB_E_IMPORT, 1500,
			       MSB_WORDS("did not finish within 1500 ms", "killed"));
	assert_true(time(NULL) - t0 < 30);
}

static void test_probe_passes_good_plugins_unchanged(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	msb_loader_set_probe(loader, PROBE_MS);
	const msb_plugin *good = NULL, *silent = NULL;
	if (msb_loader_load(loader, MSB_TEST_FIXTURE("good"), &good, &err) != MSB_OK ||
	    msb_loader_load(loader, MSB_TEST_FIXTURE("silent"), &silent, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_string_equal(msb_plugin_name(good), "fixture_good");
	assert_int_equal(msb_plugin_isolation(good), MSB_ISO_CONTAINER);
	assert_int_equal(msb_plugin_declarations(silent)->unstated & MSB_DECL_LIMITS,
			 MSB_DECL_LIMITS);
	assert_int_equal(msb_loader_count(loader), 2);
	/* The probe's refusal of a second name is the loader's, as without the probe. */
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("same_name"), NULL, &err),
			 MSB_E_BACKEND_NOT_PERMITTED);
	assert_mentions(msb_error_message(&err), MSB_WORDS("already the name of plugin"));
	/* A broken descriptor's refusal comes back from the child word for word. */
	assert_int_equal(msb_loader_load(loader, MSB_TEST_FIXTURE("bad_magic"), NULL, &err),
			 MSB_E_BACKEND_NOT_PERMITTED);
	assert_mentions(msb_error_message(&err), MSB_WORDS("bad_magic.so", "0x7f454c46"));
	msb_error_clear(&err);
	msb_loader_free(loader);
}

/* A host that ignores SIGCHLD (its children reaped for it) still gets true verdicts. */
static void test_probe_with_sigchld_ignored(void **state)
{
	void (*old)(int) = signal(SIGCHLD, SIG_IGN);
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	msb_loader_set_probe(loader, PROBE_MS);
	time_t t0 = time(NULL);
	if (msb_loader_load(loader, MSB_TEST_FIXTURE("good"), NULL, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	assert_true(time(NULL) - t0 < PROBE_MS / 1000);
	msb_loader_free(loader);
	signal(SIGCHLD, old);
	PROBE_REFUSED("hostile_ctor_exit", "before it could be checked");
	signal(SIGCHLD, SIG_IGN);
	PROBE_REFUSED("hostile_ctor_printf", "wrote 17 bytes");
	signal(SIGCHLD, old);
}

static const msb_plugin *load_ok(msb_loader *loader, const char *fixture_path)
{
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *p = NULL;
	if (msb_loader_load(loader, fixture_path, &p, &err) != MSB_OK)
		fail_msg("%s", msb_error_message(&err));
	return p;
}

static void test_init_results(void **state)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	msb_backend *b = NULL;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	const msb_plugin *p = load_ok(loader, MSB_TEST_FIXTURE("hostile_init_unknown_code"));
	assert_int_equal(msb_backend_open(p, NULL, NULL, NULL, &b, &err), MSB_E_BACKEND);
	assert_string_equal(msb_errc_name(err.code), "SandboxBackendError");
	assert_mentions(msb_error_message(&err),
			MSB_WORDS("backend fixture_hostile", "error code 4242",
				  "no msb SDK defines", "a code from no SDK"));
	msb_loader_free(loader);

	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	p = load_ok(loader, MSB_TEST_FIXTURE("hostile_init_unknown_silent"));
	assert_int_equal(msb_backend_open(p, NULL, NULL, NULL, &b, &err), MSB_E_BACKEND);
	assert_mentions(msb_error_message(&err), MSB_WORDS("error code 4242", "gave no reason"));
	msb_loader_free(loader);

	/* Success with a message set: the backend opens and the message is freed (ASan checks). */
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	p = load_ok(loader, MSB_TEST_FIXTURE("hostile_init_ok_with_message"));
	msb_error_clear(&err);
	assert_int_equal(msb_backend_open(p, NULL, NULL, NULL, &b, &err), MSB_OK);
	assert_int_equal(err.code, MSB_OK);
	assert_null(err.message);
	msb_backend_close(b);
	msb_loader_free(loader);
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_first_4k),
		cmocka_unit_test(test_truncated_at_every_kind_of_length),
		cmocka_unit_test(test_fifo_is_refused_without_hanging),
		cmocka_unit_test(test_directory_and_devices),
		cmocka_unit_test(test_foreign_machine_named),
		cmocka_unit_test(test_not_a_shared_object_named),
		cmocka_unit_test(test_symlink_to_good_plugin_loads),
		cmocka_unit_test(test_descriptor_must_be_a_big_enough_data_object),
		cmocka_unit_test(test_observes_egress_byte_two),
		cmocka_unit_test(test_names_must_be_short_words),
		cmocka_unit_test(test_long_name_refusal_keeps_file_and_field),
		cmocka_unit_test(test_stale_symbol_behind_a_version),
		cmocka_unit_test(test_symbols_are_the_plugins_own),
		cmocka_unit_test(test_sysv_hash_plugin_loads),
		cmocka_unit_test(test_constructors_run_in_the_probe_child),
		cmocka_unit_test(test_hanging_constructor_times_out),
		cmocka_unit_test(test_probe_passes_good_plugins_unchanged),
		cmocka_unit_test(test_probe_with_sigchld_ignored),
		cmocka_unit_test(test_init_results),
	};
	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
