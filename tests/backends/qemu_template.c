/*
 * qemu_template.c — qemu templates (issue 22), on real microVMs: sandboxes start as clones
 * of one saved guest; two clones never share an RNG state, a file or a process; a template
 * whose inputs changed is made anew; a corrupt template is refused and a boot serves,
 * saying why.
 *
 * TCG boots are slow: the suite boots three guests in all (the template, the changed
 * inputs' template, the fallback) and restores three clones. Skips (77) without QEMU or
 * the guest kernel.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "qemu_fixture.h"
#include "backend_cases.h"

#define TEMPLATE_CONFIG "memory: 256MiB\ntemplate: true\n"

static backend_fixture fx;
static msb_spec spec;

/* How many finished templates the state dir holds (build dirs are not counted). */
static int count_templates(const char *state, char *last, size_t n)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/templates", state);
	DIR *d = opendir(dir);
	int count = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strlen(e->d_name) == 32) {
			count++;
			if (last)
				snprintf(last, n, "%s/%s", dir, e->d_name);
		}
	if (d)
		closedir(d);
	return count;
}

/* Whether the sandbox's directory holds template.fallback (a boot served); its text. */
static bool fell_back(msb_sandbox_handle *h, char *why, size_t n)
{
	char *path = msb_driver_path(msb_driver_sandbox_box(h)->dir, "template.fallback");
	FILE *f = fopen(path, "re");
	free(path);
	if (why && n)
		why[0] = '\0';
	if (!f)
		return false;
	if (why && !fgets(why, (int)n, f))
		why[0] = '\0';
	fclose(f);
	return true;
}

static int group_setup(void **state)
{
	(void)state;
	msb_spec_init(&spec, "code");
	msb_error err = MSB_ERROR_INIT;
	if (qemu_fixture_open(&fx, NULL, TEMPLATE_CONFIG, &err) != MSB_OK) {
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	backend_fixture_close(&fx);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s/templates", fx.state);
	int rc = system(cmd);
	return qemu_fixture_leaks(&fx) || rc ? -1 : 0;
}

static void two_clones_share_nothing(void **state)
{
	(void)state;
	msb_sandbox_handle *a = backend_acquire(&fx, &spec, "clone-a", NULL);
	assert_non_null(a);
	char why[1024];
	if (fell_back(a, why, sizeof why))
		fail_msg("the first acquire booted instead of cloning: %s", why);
	assert_int_equal(count_templates(fx.state, NULL, 0), 1);
	msb_sandbox_handle *b = backend_acquire(&fx, &spec, "clone-b", NULL);
	assert_non_null(b);
	assert_false(fell_back(b, NULL, 0));
	assert_int_equal(count_templates(fx.state, NULL, 0), 1);

	/* Each writes a file and leaves a process running; neither sees the other's. */
	msb_exec_result r = backend_run(&fx, a, 20, 0, "echo a > mine.txt; (exec sleep 6001 &) ; echo ok");
	assert_string_equal(backend_out(&r), "ok\n");
	msb_exec_result_free(&r);
	r = backend_run(&fx, b, 20, 0, "echo b > mine.txt; (exec sleep 6002 &) ; echo ok");
	assert_string_equal(backend_out(&r), "ok\n");
	msb_exec_result_free(&r);
	r = backend_run(&fx, a, 20, 0, "cat mine.txt; ps | grep -c 'sleep 600[2]'; ps | grep -c 'sleep 600[1]'");
	assert_string_equal(backend_out(&r), "a\n0\n1\n");
	msb_exec_result_free(&r);
	r = backend_run(&fx, b, 20, 0, "cat mine.txt; ps | grep -c 'sleep 600[1]'; ps | grep -c 'sleep 600[2]'");
	assert_string_equal(backend_out(&r), "b\n0\n1\n");
	msb_exec_result_free(&r);

	/*
	 * The kernel's generator: restored from one template, both would produce the same bytes
	 * until their next reseed; each was reseeded from host entropy on restore.
	 */
	msb_exec_result ra = backend_run(&fx, a, 20, 0, "head -c 32 /dev/urandom | od -An -tx1; hostname");
	msb_exec_result rb = backend_run(&fx, b, 20, 0, "head -c 32 /dev/urandom | od -An -tx1; hostname");
	assert_true(strlen(backend_out(&ra)) > 64);
	assert_string_not_equal(backend_out(&ra), backend_out(&rb));
	/* Its hostname is its own sandbox's name, and its clock is now's, not the template's. */
	assert_non_null(strstr(backend_out(&ra), msb_driver_sandbox_box(a)->name));
	assert_non_null(strstr(backend_out(&rb), msb_driver_sandbox_box(b)->name));
	msb_exec_result_free(&ra);
	msb_exec_result_free(&rb);
	r = backend_run(&fx, a, 20, 0, "date +%%s");
	long guest = atol(backend_out(&r));
	msb_exec_result_free(&r);
	long host = (long)time(NULL);
	assert_true(guest > host - 30 && guest < host + 30);

	fx.ops->release(a);
	fx.ops->release(b);
	backend_dispose(&fx, "clone-a", NULL);
	backend_dispose(&fx, "clone-b", NULL);
}

static void changed_inputs_make_a_new_template(void **state)
{
	(void)state;
	backend_fixture_close(&fx);
	msb_error err = MSB_ERROR_INIT;
	char *keep = strdup(fx.state);
	assert_int_equal(qemu_fixture_open(&fx, keep, TEMPLATE_CONFIG "template_warmup: [\"echo warm > /tmp/warm\"]\n",
					   &err), MSB_OK);
	free(keep);
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "changed", NULL);
	assert_non_null(h);
	assert_false(fell_back(h, NULL, 0));
	assert_int_equal(count_templates(fx.state, NULL, 0), 2);
	/* The warm-up ran in the template: its clone has what it left. */
	msb_exec_result r = backend_run(&fx, h, 20, 0, "cat /tmp/warm");
	assert_string_equal(backend_out(&r), "warm\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "changed", NULL);
}

static void corrupt_template_is_refused_and_a_boot_serves(void **state)
{
	(void)state;
	char dir[700], path[800];
	/* Only the changed inputs' template is this configuration's: corrupt every one. */
	char cmd[900];
	snprintf(cmd, sizeof cmd, "for s in %s/templates/*/state; do printf 'XXXXXXXX' | dd of=$s "
		 "bs=1 seek=4096 conv=notrunc status=none; done", fx.state);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(count_templates(fx.state, dir, sizeof dir), 2);
	snprintf(path, sizeof path, "%s/state", dir);
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "corrupt", NULL);
	assert_non_null(h);
	char why[1024];
	assert_true(fell_back(h, why, sizeof why));
	fprintf(stderr, "fallback said: %s", why);
	assert_non_null(strstr(why, "refused"));
	/* The refused template is gone (the next acquire makes it anew); the boot answers. */
	assert_int_equal(count_templates(fx.state, NULL, 0), 1);
	msb_exec_result r = backend_run(&fx, h, 20, 0, "echo booted");
	assert_string_equal(backend_out(&r), "booted\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "corrupt", NULL);
}

int main(void)
{
	char why[512];
	if (!qemu_fixture_usable(why, sizeof why)) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_clones_share_nothing),
		cmocka_unit_test(changed_inputs_make_a_new_template),
		cmocka_unit_test(corrupt_template_is_refused_and_a_boot_serves),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
