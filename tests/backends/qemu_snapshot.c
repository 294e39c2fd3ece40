/*
 * qemu_snapshot.c — the `snapshot` capability on real microVMs (issue 22): a snapshot of a
 * running sandbox forks a new one whose files and running processes are the source's at
 * save time (and not what the source did after), with an RNG and a hostname of its own;
 * names are checked, a live key is never replaced by a fork, list and remove work.
 * Boots one VM and forks one. Skips (77) without QEMU or the guest kernel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "qemu_fixture.h"
#include "backend_cases.h"

static backend_fixture fx;
static msb_spec spec;

static int group_setup(void **state)
{
	(void)state;
	msb_spec_init(&spec, "code");
	msb_error err = MSB_ERROR_INIT;
	if (qemu_fixture_open(&fx, NULL, "memory: 256MiB\n", &err) != MSB_OK) {
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
	snprintf(cmd, sizeof cmd, "rm -rf %s/snapshots", fx.state);
	int rc = system(cmd);
	return qemu_fixture_leaks(&fx) || rc ? -1 : 0;
}

static msb_errc save(msb_sandbox_handle *h, const char *name)
{
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = fx.ops->snapshot_save(h, name, &err);
	if (rc)
		fprintf(stderr, "snapshot_save %s: %s\n", name, msb_error_message(&err));
	msb_error_clear(&err);
	return rc;
}

static msb_sandbox_handle *fork_of(const char *thread, const char *name, msb_errc *rc_out)
{
	msb_key k = backend_key(thread, NULL);
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = fx.ops->snapshot_start(fx.self, &k, &spec, name, &h, &err);
	if (rc)
		fprintf(stderr, "snapshot_start %s: %s\n", name, msb_error_message(&err));
	msb_error_clear(&err);
	*rc_out = rc;
	return h;
}

static void a_snapshot_forks_the_source_at_save_time(void **state)
{
	(void)state;
	msb_sandbox_handle *src = backend_acquire(&fx, &spec, "source", NULL);
	assert_non_null(src);
	msb_exec_result r = backend_run(&fx, src, 20, 0, "echo before > kept.txt; (exec sleep 7001 &); echo ok");
	assert_string_equal(backend_out(&r), "ok\n");
	msb_exec_result_free(&r);
	assert_int_equal(save(src, "s1"), MSB_OK);
	/* The source runs on; what it does after the save is not in the snapshot. */
	r = backend_run(&fx, src, 20, 0, "echo after > later.txt; pkill -f 'sleep 7001' || kill $(pidof sleep); echo ran");
	assert_string_equal(backend_out(&r), "ran\n");
	msb_exec_result_free(&r);

	msb_errc rc;
	msb_sandbox_handle *fork = fork_of("fork", "s1", &rc);
	assert_int_equal(rc, MSB_OK);
	assert_non_null(fork);
	r = backend_run(&fx, fork, 20, 0, "cat kept.txt; test -e later.txt && echo leaked; "
			"ps | grep -c 'sleep 700[1]'");
	assert_string_equal(backend_out(&r), "before\n1\n");
	msb_exec_result_free(&r);
	/* Its own identity: hostname, and bytes from /dev/urandom the source does not produce. */
	msb_exec_result a = backend_run(&fx, src, 20, 0, "head -c 32 /dev/urandom | od -An -tx1");
	msb_exec_result b = backend_run(&fx, fork, 20, 0, "head -c 32 /dev/urandom | od -An -tx1; hostname");
	assert_string_not_equal(backend_out(&a), backend_out(&b));
	assert_non_null(strstr(backend_out(&b), msb_driver_sandbox_box(fork)->name));
	msb_exec_result_free(&a);
	msb_exec_result_free(&b);
	/* Each writes; neither sees the other's. */
	r = backend_run(&fx, fork, 20, 0, "echo fork > mine.txt; echo ok");
	msb_exec_result_free(&r);
	r = backend_run(&fx, src, 20, 0, "cat mine.txt 2>/dev/null || echo none");
	assert_string_equal(backend_out(&r), "none\n");
	msb_exec_result_free(&r);

	/* A fork is never a get: the live key is refused, the fork untouched. */
	msb_sandbox_handle *again = fork_of("fork", "s1", &rc);
	assert_int_equal(rc, MSB_E_VALUE);
	assert_null(again);
	/* A taken name and a name that is not one are refused. */
	assert_int_equal(save(src, "s1"), MSB_E_VALUE);
	assert_int_equal(save(src, "../x"), MSB_E_VALUE);
	assert_int_equal(save(src, ""), MSB_E_VALUE);

	msb_buf names = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(fx.ops->snapshot_list(fx.self, &names, &err), MSB_OK);
	assert_non_null(names.data);
	assert_string_equal((const char *)names.data, "s1\n");
	msb_buf_free(&names);
	assert_int_equal(fx.ops->snapshot_remove(fx.self, "s1", &err), MSB_OK);
	assert_int_equal(fx.ops->snapshot_remove(fx.self, "s1", &err), MSB_E_VALUE);
	msb_error_clear(&err);
	assert_null(fork_of("fork-2", "s1", &rc));
	assert_int_equal(rc, MSB_E_VALUE);

	fx.ops->release(src);
	fx.ops->release(fork);
	backend_dispose(&fx, "source", NULL);
	backend_dispose(&fx, "fork", NULL);
}

int main(void)
{
	char why[512];
	if (!qemu_fixture_usable(why, sizeof why)) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_snapshot_forks_the_source_at_save_time),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
