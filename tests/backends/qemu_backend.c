/*
 * qemu_backend.c — the real `qemu` plugin booting real microVMs (TCG here; KVM where the
 * probe finds it works): every operation, a second process reaching the same VM by key,
 * closed egress (no network device in the guest), timeouts and output caps, the limit cases
 * (a fork storm and a memory hog stay inside the VM), a daemon that lives until disposal,
 * call scope, disposal that leaves no process, socket or directory, and commands and
 * agents at nice 0 on every port of a freshly booted VM, and a relay (the msb-qemu-relay
 * program) that holds no copy of the host's memory.
 *
 * Each boot costs seconds under TCG, so the suite boots three VMs in all: one shared by most
 * cases, one per call-scope key (disposed and checked), one started by a second process,
 * one killed and replaced, one whose relay's resident set is measured. It
 * skips (77) only when QEMU or the guest kernel is missing, saying which.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "qemu_fixture.h"
#include "backend_cases.h"
#include "vminit.h"

static backend_fixture fx;
static msb_spec spec;
static msb_sandbox_handle *shared; /* the VM most cases share */

/* ---- setup: one VM for most cases --------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	return backend_setup(&fx, &spec, qemu_fixture_open,
			     "memory: 256MiB\nmax_output: 65536\n", &shared);
}

static int group_teardown(void **state)
{
	(void)state;
	return backend_teardown(&fx, shared, qemu_fixture_leaks);
}

/* ---- the cases ---------------------------------------------------------------------- */

static void every_operation(void **state)
{
	(void)state;
	msb_sandbox_handle *h = shared;
	const char *wd = spec.work_dir;
	backend_check_file_ops(&fx, h, wd);

	/* The command runs inside the guest: its kernel is the cloud kernel, not the host's. */
	msb_exec_result r = backend_run(&fx, h, 20, 0, "cat dir/a.txt; pwd; uname -r; echo oops >&2; exit 3");
	char expect[256];
	FILE *v = NULL;
	char release[128] = "";
	snprintf(expect, sizeof expect, "%s/version", qemu_fixture_guest());
	v = fopen(expect, "re");
	assert_non_null(v);
	assert_non_null(fgets(release, sizeof release, v));
	fclose(v);
	snprintf(expect, sizeof expect, "hello\n/msb/work\n%s", release);
	assert_string_equal(backend_out(&r), expect);
	assert_string_equal((const char *)r.err.data, "oops\n");
	assert_int_equal(r.exit_code, 3);
	msb_exec_result_free(&r);

	backend_check_code_remove_reclaim(&fx, h, wd, 20);
}

static void closed_egress_no_network_device(void **state)
{
	(void)state;
	/* No NIC was given to the VM: the guest's kernel sees loopback and nothing else. */
	msb_exec_result r = backend_run(&fx, shared, 20, 0, "ls /sys/class/net");
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(backend_out(&r), "lo\n");
	msb_exec_result_free(&r);
	/* And no virtio device but the agent's console. */
	r = backend_run(&fx, shared, 20, 0, "cat /sys/bus/virtio/devices/*/device");
	assert_string_equal(backend_out(&r), "0x0003\n");
	msb_exec_result_free(&r);
}

static void timeout_and_output_cap(void **state)
{
	(void)state;
	backend_check_timeout_and_output_cap(&fx, shared);
}

static void *slow_exec(void *arg)
{
	(void)arg;
	msb_exec_result *r = calloc(1, sizeof *r);
	const char *argv[] = { "sleep", "3", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 30 };
	if (fx.ops->exec(shared, &req, r, NULL) != MSB_OK)
		r->exit_code = -1;
	return r;
}

static void a_slow_command_does_not_hold_the_others(void **state)
{
	(void)state;
	/* One agent per port: a 3 s command holds one, and a quick one runs beside it. */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t slow;
	assert_int_equal(pthread_create(&slow, NULL, slow_exec, NULL), 0);
	nanosleep(&(struct timespec){ 0, 300 * 1000 * 1000 }, NULL);
	msb_exec_result r = backend_run(&fx, shared, 20, 0, "echo quick");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_string_equal(backend_out(&r), "quick\n");
	msb_exec_result_free(&r);
	double quick = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	void *ret = NULL;
	assert_int_equal(pthread_join(slow, &ret), 0);
	msb_exec_result *sr = ret;
	assert_int_equal(sr->exit_code, 0);
	msb_exec_result_free(sr);
	free(sr);
	assert_true(quick < 2.5);
}

/*
 * One command of a round: it reports its own nice, how many agents (PID 1's children named
 * agent) the guest runs and how many of them at a nice other than 0, and the port of the
 * agent that ran it.
 */
typedef struct nice_probe {
	msb_sandbox_handle *h;
	msb_exec_result r;
	msb_errc rc;
} nice_probe;

static void *nice_exec(void *arg)
{
	nice_probe *p = arg;
	/* Field 19 of /proc/<pid>/stat is the nice; the command's parent is its port's agent. */
	const char *argv[] = { "sh", "-c", "echo nice $(cut -d' ' -f19 /proc/self/stat) $(cat "
			       "/proc/[0-9]*/stat 2>/dev/null | awk '$2 == \"(agent)\" && $4 == 1 "
			       "{ n++; if ($19 != 0) low++ } END { print \"agents\", n + 0, low + 0 }') "
			       "port $(tr '\\0' '\\n' </proc/$PPID/cmdline | grep virtio-ports); sleep 1",
			       NULL };
	msb_exec_request req = { .argv = argv, .timeout = 30 };
	p->rc = fx.ops->exec(p->h, &req, &p->r, NULL);
	return NULL;
}

/* One command's report, checked: false with `why` set when it shows a nice other than 0. */
static bool nice_report_ok(const nice_probe *p, bool *seen, int *most_agents, char *why, size_t n)
{
	const char *out = backend_out(&p->r);
	int nice = -100, agents = 0, low = -1;
	char port[128] = "";
	const char *prefix = "/dev/virtio-ports/" MSB_QEMU_PORT_NAME ".";
	if (p->rc != MSB_OK || p->r.exit_code != 0 ||
	    sscanf(out, "nice %d agents %d %d port %127s", &nice, &agents, &low, port) != 4 ||
	    strncmp(port, prefix, strlen(prefix)) || atoi(port + strlen(prefix)) < 0 ||
	    atoi(port + strlen(prefix)) >= MSB_QEMU_PORTS) {
		snprintf(why, n, "the probe failed (rc %d, exit %d): '%.*s'", p->rc, p->r.exit_code,
			 (int)strcspn(out, "\n"), out);
		return false;
	}
	if (nice != 0 || low != 0) {
		snprintf(why, n, "a command at nice %d, %d of %d agents not at nice 0: '%.*s'", nice,
			 low, agents, (int)strcspn(out, "\n"), out);
		return false;
	}
	seen[atoi(port + strlen(prefix))] = true;
	*most_agents = agents > *most_agents ? agents : *most_agents;
	return true;
}

/*
 * Whether every command `h`'s VM runs is at nice 0, whichever port's agent runs it, and so
 * is every agent: rounds of one command per port at once (each holds its port a second, so
 * the relay hands each to another free port) until every port has answered. Called right
 * after a VM's boot, while the later agents may still be starting: a scheme that started
 * them at a lower priority and raised it later shows here as an agent (or a command) above
 * nice 0. `why` says what was wrong. No assert, so that a caller can clean up first.
 */
static bool every_port_runs_at_nice_0(msb_sandbox_handle *h, char *why, size_t n)
{
	bool seen[MSB_QEMU_PORTS] = { false }, ok = true;
	int ports = 0, most_agents = 0;
	for (int round = 0; ok && round < 5 && ports < MSB_QEMU_PORTS; round++) {
		nice_probe probes[MSB_QEMU_PORTS];
		pthread_t threads[MSB_QEMU_PORTS];
		int started = 0;
		for (; started < MSB_QEMU_PORTS; started++) {
			probes[started] = (nice_probe){ .h = h };
			if (pthread_create(&threads[started], NULL, nice_exec, &probes[started]) != 0)
				break;
		}
		for (int i = 0; i < started; i++) {
			pthread_join(threads[i], NULL);
			fprintf(stderr, "# round %d: %s", round, backend_out(&probes[i].r));
			ok = ok && nice_report_ok(&probes[i], seen, &most_agents, why, n);
			msb_exec_result_free(&probes[i].r);
		}
		ports = 0;
		for (int k = 0; k < MSB_QEMU_PORTS; k++)
			ports += seen[k];
	}
	if (ok && (ports < MSB_QEMU_PORTS || most_agents != MSB_QEMU_PORTS))
		snprintf(why, n, "%d of %d ports answered in 5 rounds, at most %d agents seen", ports,
			 MSB_QEMU_PORTS, most_agents);
	return ok && ports == MSB_QEMU_PORTS && most_agents == MSB_QEMU_PORTS;
}

static void commands_run_at_nice_0_on_every_port(void **state)
{
	(void)state;
	/* First of the cases on the shared VM: its later agents may still be starting. */
	char why[512] = "";
	bool ok = every_port_runs_at_nice_0(shared, why, sizeof why);
	if (!ok)
		fprintf(stderr, "%s\n", why);
	assert_true(ok);
}

static void a_peer_of_another_version_is_refused(void **state)
{
	(void)state;
	/* A HELLO of protocol version 1 (before streamed exec) at the sandbox's socket: refused
	 * by name, stream intact. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", msb_driver_sandbox_box(shared)->socket_path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	unsigned char hello[16 + 10] = { 'M', 'S', 'B', 'A', 1, 0, MSB_AGENT_HELLO, 0, 7, 0, 0, 0,
					 10, 0, 0, 0, MSB_TAG_VERSION, 0, 4, 0, 0, 0, 1, 0, 0, 0 };
	assert_int_equal(write(fd, hello, sizeof hello), (ssize_t)sizeof hello);
	msb_agent_header h;
	msb_buf payload = { 0 };
	assert_int_equal(msb_agent_frame_read(fd, msb_agent_now_ms() + 10000, &h, &payload, NULL, NULL),
			 MSB_OK);
	close(fd);
	msb_agent_reader rd = { payload.data, payload.len, 0 };
	msb_agent_field fl;
	bool done = false;
	uint32_t code = 0;
	const char *message = NULL;
	size_t message_len = 0;
	while (msb_agent_reader_next(&rd, &fl, &done, NULL) == MSB_OK && !done) {
		if (fl.tag == MSB_TAG_ERRC)
			msb_agent_field_u32(&fl, &code, NULL);
		if (fl.tag == MSB_TAG_MESSAGE) {
			message = (const char *)fl.value;
			message_len = fl.len;
		}
	}
	assert_int_equal(code, MSB_E_PROTOCOL);
	assert_non_null(message);
	char text[256];
	snprintf(text, sizeof text, "%.*s", (int)message_len, message);
	assert_non_null(strstr(text, "speaks version 2"));
	msb_buf_free(&payload);
	/* Everyone else is still served. */
	msb_exec_result r = backend_run(&fx, shared, 20, 0, "echo still");
	assert_string_equal(backend_out(&r), "still\n");
	msb_exec_result_free(&r);
}

static void daemon_lives_until_dispose(void **state)
{
	(void)state;
	backend_check_daemon_lives(&fx, shared);
}

static void fork_storm_and_memory_hog_stay_inside(void **state)
{
	(void)state;
	pid_t qemu = backend_recorded(shared, "agent.pid");
	assert_true(qemu > 0);
	/* Three hundred processes inside the guest are not host processes at all. */
	msb_exec_result r = backend_run(&fx, shared, 30, 0,
				"i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i+1)); done; "
				"ps | grep -c 'sleep 60'");
	assert_true(atoi(backend_out(&r)) >= 300);
	msb_exec_result_free(&r);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "ps --ppid %ld --no-headers | wc -l", (long)qemu);
	FILE *p = popen(cmd, "r");
	char line[32] = "";
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof line, p));
	pclose(p);
	assert_int_equal(atoi(line), 0);
	r = backend_run(&fx, shared, 30, 0, "pkill -f 'sleep 60'; echo done");
	msb_exec_result_free(&r);

	/* A hog asking for twice the VM's RAM meets the guest's OOM killer, not the host's. */
	r = backend_run(&fx, shared, 60, 0, "awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo status $?");
	fprintf(stderr, "# hog: exit %d timed_out %d out '%s' err '%s'\n", r.exit_code, r.timed_out,
		backend_out(&r), r.err.data ? (const char *)r.err.data : "");
	assert_non_null(strstr(backend_out(&r), "status"));
	assert_null(strstr(backend_out(&r), "status 0"));
	msb_exec_result_free(&r);
	r = backend_run(&fx, shared, 20, 0, "echo still-here");
	assert_string_equal(backend_out(&r), "still-here\n");
	msb_exec_result_free(&r);
	/* QEMU's own footprint stays near the VM's RAM (256 MiB) plus its overhead. */
	snprintf(cmd, sizeof cmd, "/proc/%ld/status", (long)qemu);
	FILE *s = fopen(cmd, "re");
	long rss_kb = 0;
	while (s && fgets(line, sizeof line, s))
		if (sscanf(line, "VmRSS: %ld", &rss_kb) == 1)
			break;
	if (s)
		fclose(s);
	assert_true(rss_kb > 0 && rss_kb < 512 * 1024);
	/* And QEMU itself holds no privilege: run as root, it dropped to nobody. */
	if (geteuid() == 0) {
		struct stat st;
		snprintf(cmd, sizeof cmd, "/proc/%ld", (long)qemu);
		assert_int_equal(stat(cmd, &st), 0);
		assert_int_equal(st.st_uid, 65534);
	}
}

static void second_process_reaches_the_same_vm(void **state)
{
	(void)state;
	backend_check_second_process(&fx, &spec, shared, qemu_fixture_open);
}

static void call_scope_vm_is_its_own_and_dispose_leaves_nothing(void **state)
{
	(void)state;
	/* A call's sandbox is another VM, with a QEMU and a relay of its own. */
	msb_sandbox_handle *h = backend_acquire_call(&fx, &spec);
	/* Another key's fresh VM: its commands, too, at the ordinary priority on every port. */
	char why[512] = "";
	bool nice_0 = every_port_runs_at_nice_0(h, why, sizeof why);
	if (!nice_0)
		fprintf(stderr, "%s\n", why);
	pid_t qemu = backend_recorded(h, "agent.pid"), relay = backend_recorded(h, "relay.pid");
	assert_true(qemu > 0 && relay > 0 && qemu != backend_recorded(shared, "agent.pid"));
	/* Its disposal leaves no directory, QEMU or relay, and the conversation's VM is untouched. */
	backend_dispose_call(&fx, h, shared);
	assert_false(msb_driver_pid_running(qemu));
	assert_false(msb_driver_pid_running(relay));
	assert_true(nice_0);
}

static void a_dead_vm_is_replaced_and_disposed(void **state)
{
	(void)state;
	/* QEMU killed from outside: the next acquire notices and boots a fresh VM. */
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "dies", NULL);
	assert_non_null(h);
	pid_t first = backend_recorded(h, "agent.pid"), relay = backend_recorded(h, "relay.pid");
	fx.ops->release(h);
	assert_int_equal(kill(first, SIGKILL), 0);
	for (int i = 0; i < 200 && msb_driver_pid_running(first); i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	h = backend_acquire(&fx, &spec, "dies", NULL);
	assert_non_null(h);
	pid_t second = backend_recorded(h, "agent.pid");
	assert_true(second > 0 && second != first);
	/* The dead VM's relay went with it (its streams ended) or was stopped. */
	assert_false(msb_driver_pid_running(relay));
	msb_exec_result r = backend_run(&fx, h, 20, 0, "echo fresh");
	assert_string_equal(backend_out(&r), "fresh\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "dies", NULL);
	assert_false(msb_driver_pid_running(second));
}

/*
 * The relay lives as long as its VM. Left a fork of the host, it would keep a copy of every
 * page the host writes after the acquire: a host that rewrites 64 MiB would leave each VM's
 * relay holding 64 MiB. It is the msb-qemu-relay program instead, exec'd by that fork.
 */
static void relay_does_not_pin_host_memory(void **state)
{
	(void)state;
	char *mem = NULL;
	msb_sandbox_handle *h = backend_acquire_while_host_writes(&fx, &spec, "pin", &mem);
	pid_t relay = h ? backend_recorded(h, "relay.pid") : -1;
	long kib = relay > 0 ? backend_rss_kib(relay) : -1;
	char path[64], exe[4096] = "";
	snprintf(path, sizeof path, "/proc/%ld/exe", (long)relay);
	ssize_t len = relay > 0 ? readlink(path, exe, sizeof exe - 1) : -1;
	exe[len > 0 ? len : 0] = '\0';
	fprintf(stderr, "# relay %ld (%s): VmRSS %ld KiB after the host rewrote 64 MiB\n",
		(long)relay, exe, kib);
	free(mem);
	if (h) {
		fx.ops->release(h);
		backend_dispose(&fx, "pin", NULL);
	}
	assert_non_null(h);
	assert_true(kib > 0 && kib < 16 * 1024);
	const char *base = strrchr(exe, '/');
	assert_non_null(base);
	assert_string_equal(base, "/msb-qemu-relay");
}

static void accel_verdict_is_cached(void **state)
{
	(void)state;
	char path[128], word[8] = "";
	snprintf(path, sizeof path, "%s/accel", fx.state);
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(word, sizeof word, f));
	fclose(f);
	assert_true(!strcmp(word, "kvm\n") || !strcmp(word, "tcg\n"));
	fprintf(stderr, "# accelerator chosen by the probe: %s", word);
}

/* ---- refusals that need no VM ------------------------------------------------------- */

static void config_refusals(void **state)
{
	(void)state;
	backend_fixture bad;
	msb_error err = MSB_ERROR_INIT;
	backend_check_refused(qemu_fixture_open, qemu_fixture_leaks, "accel: fast\n",
			      MSB_E_CONFIG, "accel", "fast", NULL);

	backend_check_refused(qemu_fixture_open, qemu_fixture_leaks, "memroy: 1GiB\n",
			      MSB_E_CONFIG, "memroy", NULL);

	/* No kernel: the acquire names the set-up step instead of failing obscurely. */
	msb_errc orc = qemu_fixture_open(&bad, NULL, "guest_dir: /nonexistent/guest\n", &err);
	if (orc)
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
	assert_int_equal(orc, MSB_OK);
	msb_key k = backend_key("nokernel", NULL);
	msb_sandbox_handle *h = NULL;
	assert_int_equal(bad.ops->acquire(bad.self, &k, &spec, &h, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "fetch-guest.sh"));
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(qemu_fixture_leaks(&bad), 0);

	/* No engine: named, with the package that provides it. */
	assert_int_equal(qemu_fixture_open(&bad, NULL, "qemu: /nonexistent/qemu-system-x86_64\n", &err),
			 MSB_OK);
	assert_int_equal(bad.ops->acquire(bad.self, &k, &spec, &h, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "qemu-system-x86"));
	assert_non_null(strstr(msb_error_message(&err), "/nonexistent/qemu-system-x86_64"));
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(qemu_fixture_leaks(&bad), 0);

	/* No relay program: named, with the key that points at it, before anything boots. */
	assert_int_equal(qemu_fixture_open(&bad, NULL, "relay: /nonexistent/msb-qemu-relay\n", &err),
			 MSB_OK);
	assert_int_equal(bad.ops->acquire(bad.self, &k, &spec, &h, &err), MSB_E_BACKEND);
	assert_non_null(strstr(msb_error_message(&err), "relay program /nonexistent/msb-qemu-relay"));
	assert_non_null(strstr(msb_error_message(&err), "relay:"));
	assert_non_null(strstr(msb_error_message(&err), "No such file"));
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(qemu_fixture_leaks(&bad), 0);

	/* An image the guest cannot be is refused by name, before anything boots. */
	assert_int_equal(qemu_fixture_open(&bad, NULL, "", &err), MSB_OK);
	msb_spec other = spec;
	other.image = "debian:12";
	assert_int_equal(bad.ops->acquire(bad.self, &k, &other, &h, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "debian:12"));
	assert_non_null(strstr(msb_error_message(&err), "busybox"));
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(qemu_fixture_leaks(&bad), 0);
}

static void boot_timeout_is_bounded_and_cleans_up(void **state)
{
	(void)state;
	/* A guest that cannot answer in time fails the acquire, and leaves no VM behind. */
	backend_fixture slow;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(qemu_fixture_open(&slow, NULL, "boot_timeout: 300ms\n", &err), MSB_OK);
	msb_key k = backend_key("too-slow", NULL);
	msb_sandbox_handle *h = NULL;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(slow.ops->acquire(slow.self, &k, &spec, &h, &err), MSB_E_TIMEOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(strstr(msb_error_message(&err), "boot_timeout"));
	msb_error_clear(&err);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	backend_fixture_close(&slow);
	assert_int_equal(qemu_fixture_leaks(&slow), 0);
}

int main(void)
{
	char why[512];
	if (!qemu_fixture_usable(why, sizeof why)) {
		printf("SKIP: %s\n", why);
		return MSB_TEST_SKIP;
	}
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(commands_run_at_nice_0_on_every_port),
		cmocka_unit_test(config_refusals),
		cmocka_unit_test(boot_timeout_is_bounded_and_cleans_up),
		cmocka_unit_test(every_operation),
		cmocka_unit_test(closed_egress_no_network_device),
		cmocka_unit_test(timeout_and_output_cap),
		cmocka_unit_test(a_slow_command_does_not_hold_the_others),
		cmocka_unit_test(a_peer_of_another_version_is_refused),
		cmocka_unit_test(daemon_lives_until_dispose),
		cmocka_unit_test(second_process_reaches_the_same_vm),
		cmocka_unit_test(fork_storm_and_memory_hog_stay_inside),
		cmocka_unit_test(call_scope_vm_is_its_own_and_dispose_leaves_nothing),
		cmocka_unit_test(a_dead_vm_is_replaced_and_disposed),
		cmocka_unit_test(relay_does_not_pin_host_memory),
		cmocka_unit_test(accel_verdict_is_cached),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
