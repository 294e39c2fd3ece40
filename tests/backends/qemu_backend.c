/*
 * qemu_backend.c — the real `qemu` plugin booting real microVMs (TCG here; KVM where the
 * probe finds it works): every operation, a second process reaching the same VM by key,
 * closed egress (no network device in the guest), timeouts and output caps, the limit cases
 * (a fork storm and a memory hog stay inside the VM), a daemon that lives until disposal,
 * call scope, and disposal that leaves no process, socket or directory.
 *
 * Each boot costs seconds under TCG, so the suite boots three VMs in all: one shared by most
 * cases, one per call-scope key (disposed and checked), one started by a second process. It
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

static backend_fixture fx;
static msb_spec spec;
static msb_sandbox_handle *shared; /* the VM most cases share */

static msb_key key_of(const char *thread, const char *call_id)
{
	msb_key k = { "test", thread, "agent", call_id ? call_id : "" };
	return k;
}

static msb_sandbox_handle *acquire_on(backend_fixture *f, const char *thread, const char *call_id)
{
	msb_key k = key_of(thread, call_id);
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = f->ops->acquire(f->self, &k, &spec, &h, &err);
	if (rc)
		fprintf(stderr, "acquire %s: %s: %s\n", thread, msb_errc_name(rc), msb_error_message(&err));
	msb_error_clear(&err);
	return rc == MSB_OK ? h : NULL;
}

static msb_exec_result run(msb_sandbox_handle *h, double timeout, size_t max_output,
			   const char *fmt, ...)
{
	char *script = NULL;
	va_list ap;
	va_start(ap, fmt);
	assert_true(vasprintf(&script, fmt, ap) >= 0);
	va_end(ap);
	const char *argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .timeout = timeout, .max_output = max_output };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = fx.ops->exec(h, &req, &res, &err);
	if (rc)
		fprintf(stderr, "exec %s: %s\n", script, msb_error_message(&err));
	assert_int_equal(rc, MSB_OK);
	free(script);
	msb_error_clear(&err);
	return res;
}

static const char *out_of(const msb_exec_result *r)
{
	return r->out.data ? (const char *)r->out.data : "";
}

/* The pid recorded for a sandbox's QEMU, and the relay's, from its state directory. */
static pid_t recorded(const msb_sandbox_handle *h, const char *file)
{
	char *path = msb_driver_path(msb_driver_sandbox_box(h)->dir, file);
	pid_t pid = msb_driver_read_pid_file(path);
	free(path);
	return pid;
}

/* ---- setup: one VM for most cases --------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	msb_spec_init(&spec, "code");
	msb_error err = MSB_ERROR_INIT;
	if (qemu_fixture_open(&fx, NULL, "memory: 256MiB\nmax_output: 65536\n", &err) != MSB_OK) {
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	shared = acquire_on(&fx, "shared", NULL);
	return shared ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	if (shared)
		fx.ops->release(shared);
	msb_key k = key_of("shared", NULL);
	msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool failed = fx.ops->dispose(fx.self, &k, &f);
	if (failed)
		fprintf(stderr, "dispose shared: %s\n", f.detail ? f.detail : "?");
	msb_disposal_failure_free(&f);
	backend_fixture_close(&fx);
	int leaks = qemu_fixture_leaks(&fx);
	return failed || leaks ? -1 : 0;
}

/* ---- the cases ---------------------------------------------------------------------- */

static void every_operation(void **state)
{
	(void)state;
	msb_sandbox_handle *h = shared;
	const char *wd = spec.work_dir;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(fx.ops->write_file(h, "dir/a.txt", "hello\n", 6, wd, &err), MSB_OK);
	msb_buf buf = { 0 };
	assert_int_equal(fx.ops->read_file(h, "dir/a.txt", wd, 1024, &buf, &err), MSB_OK);
	assert_int_equal(buf.len, 6);
	assert_memory_equal(buf.data, "hello\n", 6);
	msb_buf_free(&buf);

	msb_entry e = { 0 };
	bool found = false;
	assert_int_equal(fx.ops->stat_file(h, "dir/a.txt", wd, &e, &found, &err), MSB_OK);
	assert_true(found);
	assert_int_equal(e.kind, MSB_ENTRY_FILE);
	assert_int_equal(e.size_bytes, 6);
	free(e.path);

	msb_entry_list list = { 0 };
	assert_int_equal(fx.ops->list_dir(h, "dir", wd, &list, &err), MSB_OK);
	assert_int_equal(list.len, 1);
	assert_non_null(strstr(list.items[0].path, "a.txt"));
	msb_entry_list_free(&list);

	/* The command runs inside the guest: its kernel is the cloud kernel, not the host's. */
	msb_exec_result r = run(h, 20, 0, "cat dir/a.txt; pwd; uname -r; echo oops >&2; exit 3");
	char expect[256];
	FILE *v = NULL;
	char release[128] = "";
	snprintf(expect, sizeof expect, "%s/version", qemu_fixture_guest());
	v = fopen(expect, "re");
	assert_non_null(v);
	assert_non_null(fgets(release, sizeof release, v));
	fclose(v);
	snprintf(expect, sizeof expect, "hello\n/msb/work\n%s", release);
	assert_string_equal(out_of(&r), expect);
	assert_string_equal((const char *)r.err.data, "oops\n");
	assert_int_equal(r.exit_code, 3);
	msb_exec_result_free(&r);

	msb_exec_result rc_res = { 0 };
	assert_int_equal(fx.ops->run_code(h, "echo from-code $((6*7))", 20, &rc_res, &err), MSB_OK);
	assert_string_equal(out_of(&rc_res), "from-code 42\n");
	msb_exec_result_free(&rc_res);

	assert_int_equal(fx.ops->remove(h, "dir/a.txt", wd, false, &err), MSB_OK);
	assert_int_equal(fx.ops->stat_file(h, "dir/a.txt", wd, &e, &found, &err), MSB_OK);
	assert_false(found);

	r = run(h, 20, 0, "mkdir -p /msb/work/rc-x/deep && touch /msb/work/rc-x/deep/f");
	assert_int_equal(r.exit_code, 0);
	msb_exec_result_free(&r);
	assert_int_equal(fx.ops->reclaim(h, "/msb/work/rc-x", wd, 10, &err), MSB_OK);
	assert_int_equal(fx.ops->stat_file(h, "rc-x", wd, &e, &found, &err), MSB_OK);
	assert_false(found);
	assert_int_equal(fx.ops->reclaim(h, "/msb/work/rc-x", wd, 10, &err), MSB_OK);

	/* Confinement holds inside the guest too. */
	assert_int_not_equal(fx.ops->write_file(h, "../escape", "x", 1, wd, &err), MSB_OK);
	assert_non_null(strstr(msb_error_message(&err), "escape"));
	msb_error_clear(&err);
}

static void closed_egress_no_network_device(void **state)
{
	(void)state;
	/* No NIC was given to the VM: the guest's kernel sees loopback and nothing else. */
	msb_exec_result r = run(shared, 20, 0, "ls /sys/class/net");
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(out_of(&r), "lo\n");
	msb_exec_result_free(&r);
	/* And no virtio device but the agent's console. */
	r = run(shared, 20, 0, "cat /sys/bus/virtio/devices/*/device");
	assert_string_equal(out_of(&r), "0x0003\n");
	msb_exec_result_free(&r);
}

static void timeout_and_output_cap(void **state)
{
	(void)state;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	msb_exec_result r = run(shared, 1.0, 0, "sleep 30");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(r.timed_out);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	msb_exec_result_free(&r);

	r = run(shared, 20, 1000, "yes | head -c 100000");
	assert_true(r.out_truncated);
	assert_int_equal(r.out.len, 1000);
	msb_exec_result_free(&r);
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
	msb_exec_result r = run(shared, 20, 0, "echo quick");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_string_equal(out_of(&r), "quick\n");
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

static void a_peer_of_another_version_is_refused(void **state)
{
	(void)state;
	/* A HELLO of protocol version 2 at the sandbox's socket: refused by name, stream intact. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", msb_driver_sandbox_box(shared)->socket_path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	unsigned char hello[16 + 10] = { 'M', 'S', 'B', 'A', 2, 0, MSB_AGENT_HELLO, 0, 7, 0, 0, 0,
					 10, 0, 0, 0, MSB_TAG_VERSION, 0, 4, 0, 0, 0, 2, 0, 0, 0 };
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
	assert_non_null(strstr(text, "version 1"));
	msb_buf_free(&payload);
	/* Everyone else is still served. */
	msb_exec_result r = run(shared, 20, 0, "echo still");
	assert_string_equal(out_of(&r), "still\n");
	msb_exec_result_free(&r);
}

static void daemon_lives_until_dispose(void **state)
{
	(void)state;
	msb_exec_result r = run(shared, 20, 0, "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!");
	long pid = atol(out_of(&r));
	assert_true(pid > 1);
	msb_exec_result_free(&r);
	/* The next request finds it still running: the VM is resident between calls. */
	r = run(shared, 20, 0, "kill -0 %ld && echo alive", pid);
	assert_string_equal(out_of(&r), "alive\n");
	msb_exec_result_free(&r);
	/* (Disposal powers the whole VM off: group_teardown's leak check sees no QEMU left.) */
}

static void fork_storm_and_memory_hog_stay_inside(void **state)
{
	(void)state;
	pid_t qemu = recorded(shared, "agent.pid");
	assert_true(qemu > 0);
	/* Three hundred processes inside the guest are not host processes at all. */
	msb_exec_result r = run(shared, 30, 0,
				"i=0; while [ $i -lt 300 ]; do sleep 60 & i=$((i+1)); done; "
				"ps | grep -c 'sleep 60'");
	assert_true(atoi(out_of(&r)) >= 300);
	msb_exec_result_free(&r);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "ps --ppid %ld --no-headers | wc -l", (long)qemu);
	FILE *p = popen(cmd, "r");
	char line[32] = "";
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof line, p));
	pclose(p);
	assert_int_equal(atoi(line), 0);
	r = run(shared, 30, 0, "pkill -f 'sleep 60'; echo done");
	msb_exec_result_free(&r);

	/* A hog asking for twice the VM's RAM meets the guest's OOM killer, not the host's. */
	r = run(shared, 60, 0, "awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo status $?");
	fprintf(stderr, "# hog: exit %d timed_out %d out '%s' err '%s'\n", r.exit_code, r.timed_out,
		out_of(&r), r.err.data ? (const char *)r.err.data : "");
	assert_non_null(strstr(out_of(&r), "status"));
	assert_null(strstr(out_of(&r), "status 0"));
	msb_exec_result_free(&r);
	r = run(shared, 20, 0, "echo still-here");
	assert_string_equal(out_of(&r), "still-here\n");
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
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(fx.ops->write_file(shared, "from-parent.txt", "parent", 6, spec.work_dir, &err),
			 MSB_OK);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		backend_fixture mine;
		if (qemu_fixture_open(&mine, fx.state, "", NULL) != MSB_OK)
			_exit(10);
		msb_sandbox_handle *h = acquire_on(&mine, "shared", NULL);
		if (!h)
			_exit(11);
		msb_buf b = { 0 };
		if (mine.ops->read_file(h, "from-parent.txt", spec.work_dir, 64, &b, NULL) ||
		    b.len != 6 || memcmp(b.data, "parent", 6))
			_exit(12);
		msb_buf_free(&b);
		if (mine.ops->write_file(h, "from-child.txt", "child", 5, spec.work_dir, NULL))
			_exit(13);
		mine.ops->release(h);
		backend_fixture_close(&mine);
		_exit(0);
	}
	int status = 0;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	msb_buf buf = { 0 };
	assert_int_equal(fx.ops->read_file(shared, "from-child.txt", spec.work_dir, 64, &buf, NULL),
			 MSB_OK);
	assert_memory_equal(buf.data, "child", 5);
	msb_buf_free(&buf);
}

static void call_scope_vm_is_its_own_and_dispose_leaves_nothing(void **state)
{
	(void)state;
	msb_sandbox_handle *h = acquire_on(&fx, "shared", "call-1");
	assert_non_null(h);
	/* A call's sandbox is another VM: the shared one's files are not there. */
	msb_entry e = { 0 };
	bool found = true;
	assert_int_equal(fx.ops->stat_file(h, "from-parent.txt", spec.work_dir, &e, &found, NULL),
			 MSB_OK);
	assert_false(found);
	pid_t qemu = recorded(h, "agent.pid"), relay = recorded(h, "relay.pid");
	assert_true(qemu > 0 && relay > 0 && qemu != recorded(shared, "agent.pid"));
	char dir[512];
	snprintf(dir, sizeof dir, "%s", msb_driver_sandbox_box(h)->dir);
	fx.ops->release(h);

	msb_key k = key_of("shared", "call-1");
	msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool failed = fx.ops->dispose(fx.self, &k, &f);
	if (failed)
		fprintf(stderr, "dispose: %s\n", f.detail);
	assert_false(failed);
	msb_disposal_failure_free(&f);
	assert_false(msb_driver_pid_running(qemu));
	assert_false(msb_driver_pid_running(relay));
	struct stat st;
	assert_int_equal(lstat(dir, &st), -1);
	/* The conversation's VM is untouched by the call's disposal. */
	msb_exec_result r = run(shared, 20, 0, "echo ok");
	assert_string_equal(out_of(&r), "ok\n");
	msb_exec_result_free(&r);
}

static void a_dead_vm_is_replaced_and_disposed(void **state)
{
	(void)state;
	/* QEMU killed from outside: the next acquire notices and boots a fresh VM. */
	msb_sandbox_handle *h = acquire_on(&fx, "dies", NULL);
	assert_non_null(h);
	pid_t first = recorded(h, "agent.pid"), relay = recorded(h, "relay.pid");
	fx.ops->release(h);
	assert_int_equal(kill(first, SIGKILL), 0);
	for (int i = 0; i < 200 && msb_driver_pid_running(first); i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	h = acquire_on(&fx, "dies", NULL);
	assert_non_null(h);
	pid_t second = recorded(h, "agent.pid");
	assert_true(second > 0 && second != first);
	/* The dead VM's relay went with it (its streams ended) or was stopped. */
	assert_false(msb_driver_pid_running(relay));
	msb_exec_result r = run(h, 20, 0, "echo fresh");
	assert_string_equal(out_of(&r), "fresh\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	msb_key k = key_of("dies", NULL);
	msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
	assert_false(fx.ops->dispose(fx.self, &k, &f));
	msb_disposal_failure_free(&f);
	assert_false(msb_driver_pid_running(second));
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
	assert_int_equal(qemu_fixture_open(&bad, NULL, "accel: fast\n", &err), MSB_E_CONFIG);
	assert_non_null(strstr(msb_error_message(&err), "accel"));
	assert_non_null(strstr(msb_error_message(&err), "fast"));
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(qemu_fixture_leaks(&bad), 0);

	assert_int_equal(qemu_fixture_open(&bad, NULL, "memroy: 1GiB\n", &err), MSB_E_CONFIG);
	assert_non_null(strstr(msb_error_message(&err), "memroy"));
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(qemu_fixture_leaks(&bad), 0);

	/* No kernel: the acquire names the set-up step instead of failing obscurely. */
	msb_errc orc = qemu_fixture_open(&bad, NULL, "guest_dir: /nonexistent/guest\n", &err);
	if (orc)
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
	assert_int_equal(orc, MSB_OK);
	msb_key k = key_of("nokernel", NULL);
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
	msb_key k = key_of("too-slow", NULL);
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
		cmocka_unit_test(accel_verdict_is_cached),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
