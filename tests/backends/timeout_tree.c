/*
 * timeout_tree.c — a timed-out command leaves nothing it started running, on every backend
 * this machine can run (process, bwrap, gvisor, qemu; each skips, saying why, when its
 * engine is missing). The command starts, before it runs out of time: a child that calls
 * setsid, a double fork, a child that leaves its process group (setpgid), a child that
 * ignores SIGTERM, and a fork loop still forking while the kill comes. Each carries a marker
 * number unique to this run on its command line; after the timeout nothing with the marker
 * is alive — counted from inside the sandbox (its own /proc), and from the host's /proc where
 * the sandbox's processes are visible there (process, bwrap). The result says the kill
 * reached the whole tree. A daemon that a command which did NOT time out leaves behind is a
 * container's behaviour and must survive (an earlier command's daemon is not the next
 * one's to lose).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bwrap_fixture.h"
#include "gvisor_fixture.h"
#include "qemu_fixture.h"
#include "backend_cases.h"

#define PROCESS_PLUGIN MSB_TEST_MODULE("plugins/process", "process")

static unsigned marker; /* six digits, this run's */

/* The script: five ways to outlive a kill of the process group, then a wait to time out. */
static const char attack[] =
	"m=%u\n"
	"setsid sleep ${m}0 </dev/null >/dev/null 2>&1 &\n"
	"sh -c \"sleep ${m}1 </dev/null >/dev/null 2>&1 &\" </dev/null >/dev/null 2>&1 &\n"
	"if command -v python3 >/dev/null 2>&1; then\n"
	"  python3 -c \"import os,time; os.setpgid(0,0); time.sleep(${m}2)\" </dev/null >/dev/null 2>&1 &\n"
	"else\n"
	"  sh -c \"set -m; sleep ${m}2 & wait\" </dev/null >/dev/null 2>&1 &\n"
	"fi\n"
	"sh -c \"trap '' TERM HUP INT; sleep ${m}3\" </dev/null >/dev/null 2>&1 &\n"
	"sh -c \"while :; do sleep ${m}4 </dev/null >/dev/null 2>&1 & kill \\$! 2>/dev/null; done\" "
	"</dev/null >/dev/null 2>&1 &\n"
	"sleep 600\n";

/*
 * Count, from inside, the live processes whose command line holds the marker. The marker is
 * assembled from two halves so that this script's own command line never holds it.
 */
static const char count_inside[] =
	"a=%u; b=%03u; p=\"$a$b\"; n=0\n"
	"for f in /proc/[0-9]*/cmdline; do\n"
	"  c=$(tr '\\000' ' ' 2>/dev/null < \"$f\") || continue\n"
	"  case \"$c\" in *\"$p\"*) n=$((n+1)); echo \"alive: $f: $c\" >&2;; esac\n"
	"done\n"
	"echo $n\n";

static int count_markers(backend_fixture *fx, msb_sandbox_handle *h)
{
	msb_exec_result r = backend_run(fx, h, 60, 0, count_inside, marker / 1000, marker % 1000);
	if (r.err.len)
		fwrite(r.err.data, 1, r.err.len, stderr);
	int n = atoi(backend_out(&r));
	msb_exec_result_free(&r);
	return n;
}

/* Live host processes whose command line holds the marker. */
static int count_on_host(void)
{
	char needle[16];
	snprintf(needle, sizeof needle, "%u", marker);
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char buf[4096];
		if (gvisor_fixture_cmdline_names(atol(de->d_name), needle, false, buf, sizeof buf)) {
			fprintf(stderr, "alive on the host: pid %s: %s\n", de->d_name, buf);
			n++;
		}
	}
	if (d)
		closedir(d);
	return n;
}

static void attack_timeout(backend_fixture *fx, double timeout, bool host_visible)
{
	msb_spec spec;
	msb_spec_init(&spec, "default");
	msb_sandbox_handle *h = backend_acquire(fx, &spec, "tree", NULL);
	assert_non_null(h);
	/* A daemon left by a command that finished: it must survive the timeout below. */
	msb_exec_result kept = backend_run(fx, h, 30, 0,
					   "sleep 7777 </dev/null >/dev/null 2>&1 & echo $!");
	char keeper[32];
	snprintf(keeper, sizeof keeper, "%s", backend_out(&kept));
	keeper[strcspn(keeper, "\n")] = '\0';
	msb_exec_result_free(&kept);

	msb_exec_result r = backend_run(fx, h, timeout, 0, attack, marker);
	bool timed_out = r.timed_out;
	int reach = r.kill_reach;
	msb_exec_result_free(&r);
	int inside = count_markers(fx, h);
	int outside = host_visible ? count_on_host() : 0;
	msb_exec_result alive = backend_run(fx, h, 30, 0, "kill -0 %s && echo alive", keeper);
	bool keeper_alive = strstr(backend_out(&alive), "alive") != NULL;
	msb_exec_result_free(&alive);
	fx->ops->release(h);
	backend_dispose(fx, "tree", NULL);
	/* Asserted after the disposal, so a failure leaves nothing running either. */
	assert_true(timed_out);
	assert_int_equal(inside, 0);
	assert_int_equal(outside, 0);
	assert_int_equal(reach, MSB_REACH_TREE);
	assert_true(keeper_alive);
}

static void finish(backend_fixture *fx, int (*leaks)(backend_fixture *))
{
	backend_fixture_close(fx);
	if (leaks)
		assert_int_equal(leaks(fx), 0);
	else {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->state);
		assert_int_equal(system(cmd), 0);
	}
}

static msb_errc process_open(backend_fixture *fx, const char *state, const char *extra,
			     msb_error *err)
{
	msb_errc rc = backend_fixture_state(fx, state, "/tmp/msb-tree-process-XXXXXX", err);
	return rc ? rc : backend_fixture_load(fx, PROCESS_PLUGIN, err, "state_dir: %s\nagent: %s\n%s",
					      fx->state, BACKEND_FIXTURE_AGENT, extra);
}

/* One engine: skipped (saying why) when it cannot run here, else attacked and checked. */
static void engine(bool (*usable)(char *, size_t), backend_opener open, double timeout,
		   bool host_visible, int (*leaks)(backend_fixture *))
{
	backend_fixture fx;
	backend_open_or_skip(usable, open, &fx);
	attack_timeout(&fx, timeout, host_visible);
	finish(&fx, leaks);
}

static void process_timeout_kills_tree(void **state)
{
	(void)state;
	engine(NULL, process_open, 3, true, NULL);
}

static void bwrap_timeout_kills_tree(void **state)
{
	(void)state;
	engine(bwrap_fixture_usable, bwrap_fixture_open, 3, true, bwrap_fixture_leaks);
}

static void gvisor_timeout_kills_tree(void **state)
{
	(void)state;
	engine(gvisor_fixture_usable, gvisor_fixture_open, 5, false, gvisor_fixture_leaks);
}

static void qemu_timeout_kills_tree(void **state)
{
	(void)state;
	/* TCG boots and runs slowly here: more time before the kill, for the children to start. */
	engine(qemu_fixture_usable, qemu_fixture_open, 8, false, qemu_fixture_leaks);
}

int main(void)
{
	marker = 100000u + (unsigned)getpid() % 800000u;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(process_timeout_kills_tree),
		cmocka_unit_test(bwrap_timeout_kills_tree),
		cmocka_unit_test(gvisor_timeout_kills_tree),
		cmocka_unit_test(qemu_timeout_kills_tree),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	/* A case that failed before its clean-up left its sandboxes: end them here. */
	if (backend_fixture_sweep(gvisor_fixture_sweep_runsc) && !failed)
		failed = 1;
	return failed;
}
