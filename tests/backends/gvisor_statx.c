/*
 * gvisor_statx.c — GNU `ls -l` and `stat` work inside a gvisor sandbox on the host image.
 * This runsc refuses statx's (and newfstatat's) AT_NO_AUTOMOUNT with EINVAL, which both
 * programs pass on every call, so each failed with "Invalid argument"; the agent now
 * preloads msb-statx.so, which drops the flag, into its commands there (sdk/agent/statx_fix.c).
 * The case also checks the fix is the reason: the same programs with the shim turned off
 * (LD_PRELOAD emptied by the command itself) still fail on this runsc, or the skip says
 * this runsc needs no fix.
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

#include "gvisor_fixture.h"
#include "backend_cases.h"

static void gnu_ls_and_stat_work(void **state)
{
	(void)state;
	backend_fixture fx;
	backend_open_or_skip(gvisor_fixture_usable, gvisor_fixture_open, &fx);
	msb_spec spec;
	msb_spec_init(&spec, "default");
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "statx", NULL);
	assert_non_null(h);
	msb_exec_result fixed = backend_run(&fx, h, 60, 0,
					    "echo hi > f && ls -l f / >/dev/null && ls -l f && "
					    "stat -c '%%n %%s %%F' f / && ls --version | head -1");
	msb_exec_result bare = backend_run(&fx, h, 60, 0, "LD_PRELOAD= ls -l f");
	fx.ops->release(h);
	backend_dispose(&fx, "statx", NULL);
	backend_fixture_close(&fx);
	int leaks = gvisor_fixture_leaks(&fx);
	if (fixed.exit_code != 0)
		fprintf(stderr, "ls/stat: %s%s\n", backend_out(&fixed),
			fixed.err.data ? (const char *)fixed.err.data : "");
	assert_int_equal(fixed.exit_code, 0);
	assert_non_null(strstr(backend_out(&fixed), "-rw-"));
	assert_non_null(strstr(backend_out(&fixed), "f 3 regular file"));
	assert_non_null(strstr(backend_out(&fixed), "/ "));
	assert_non_null(strstr(backend_out(&fixed), "GNU coreutils"));
	bool needed = bare.exit_code != 0;
	msb_exec_result_free(&fixed);
	msb_exec_result_free(&bare);
	assert_int_equal(leaks, 0);
	if (!needed)
		printf("note: this runsc serves AT_NO_AUTOMOUNT itself; the shim was not what made "
		       "ls -l work\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gnu_ls_and_stat_work),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
