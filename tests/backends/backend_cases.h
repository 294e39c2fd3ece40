/*
 * backend_cases.h — what the cmocka suites of the agent-backed plugins (bwrap_, gvisor_,
 * qemu_backend.c) do alike: acquire by thread, run a script, read a recorded pid, dispose
 * the sandbox a suite shares at the end, and the checks whose
 * every line is the same whichever boundary holds the sandbox. Each suite keeps what only
 * its plugin has (its config, its limits, its engine's processes) and calls these from its
 * cases. Include after the plugin's fixture header and <cmocka.h>.
 */
#ifndef MSB_BACKEND_CASES_H
#define MSB_BACKEND_CASES_H

#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "backend_fixture.h"

/* The plugin's fixture opener (gvisor_fixture_open, qemu_fixture_open). */
typedef msb_errc (*backend_opener)(backend_fixture *fx, const char *state, const char *extra,
				   msb_error *err);

/*
 * Open a plugin's fixture on a fresh state dir, or skip the case saying why when `usable`
 * (NULL: always) finds its engine cannot run here; a failed open fails the case.
 */
static inline void backend_open_or_skip(bool (*usable)(char *why, size_t n), backend_opener open,
					backend_fixture *fx)
{
	char why[512];
	if (usable && !usable(why, sizeof why)) {
		printf("skip: %s\n", why);
		skip();
	}
	msb_error err = MSB_ERROR_INIT;
	if (open(fx, NULL, "", &err) != MSB_OK)
		fail_msg("opening the backend: %s", msb_error_message(&err));
}

static inline msb_key backend_key(const char *thread, const char *call_id)
{
	msb_key k = { "test", thread, "agent", call_id ? call_id : "" };
	return k;
}

/* The sandbox of (thread, call_id) for `spec`, or NULL (the refusal printed). */
static inline msb_sandbox_handle *backend_acquire(backend_fixture *f, const msb_spec *spec,
						  const char *thread, const char *call_id)
{
	msb_key k = backend_key(thread, call_id);
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = f->ops->acquire(f->self, &k, spec, &h, &err);
	if (rc)
		fprintf(stderr, "acquire %s: %s: %s\n", thread, msb_errc_name(rc), msb_error_message(&err));
	msb_error_clear(&err);
	return rc == MSB_OK ? h : NULL;
}

/* Dispose the sandbox of (thread, call_id): it must succeed (the failure printed if not). */
static inline void backend_dispose(backend_fixture *f, const char *thread, const char *call_id)
{
	msb_key k = backend_key(thread, call_id);
	msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool failed = f->ops->dispose(f->self, &k, &failure);
	if (failed)
		fprintf(stderr, "dispose %s: %s\n", thread, failure.detail ? failure.detail : "?");
	assert_false(failed);
	msb_disposal_failure_free(&failure);
}

/* Run `sh -c <fmt…>` in `h`; the call itself must succeed. */
static inline msb_exec_result backend_run(backend_fixture *f, msb_sandbox_handle *h, double timeout,
					  size_t max_output, const char *fmt, ...) MSB_PRINTF(5, 6);
static inline msb_exec_result backend_run(backend_fixture *f, msb_sandbox_handle *h, double timeout,
					  size_t max_output, const char *fmt, ...)
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
	msb_errc rc = f->ops->exec(h, &req, &res, &err);
	if (rc)
		fprintf(stderr, "exec %s: %s\n", script, msb_error_message(&err));
	assert_int_equal(rc, MSB_OK);
	free(script);
	msb_error_clear(&err);
	return res;
}

static inline const char *backend_out(const msb_exec_result *r)
{
	return r->out.data ? (const char *)r->out.data : "";
}

/* The pid the plugin recorded in `file` of the sandbox's state directory (0: none). */
static inline pid_t backend_recorded(const msb_sandbox_handle *h, const char *file)
{
	char *path = msb_driver_path(msb_driver_sandbox_box(h)->dir, file);
	pid_t pid = msb_driver_read_pid_file(path);
	free(path);
	return pid;
}

/*
 * The sandbox of `thread`, acquired between two writes of the same 64 MiB of the host's
 * (`*mem`, freed by the caller): a process forked from the host during the acquire and
 * still alive afterwards holds a copy of every page of the second write. NULL: no sandbox.
 */
static inline msb_sandbox_handle *backend_acquire_while_host_writes(backend_fixture *f,
								   const msb_spec *spec,
								   const char *thread, char **mem)
{
	size_t n = 64u << 20;
	*mem = malloc(n);
	if (!*mem)
		return NULL;
	memset(*mem, 1, n);
	msb_sandbox_handle *h = backend_acquire(f, spec, thread, NULL);
	memset(*mem, 2, n);
	return h;
}

/* A process's resident set in KiB, from /proc/PID/status; -1 when it has none. */
static inline long backend_rss_kib(long pid)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	FILE *f = fopen(path, "re");
	long kib = -1;
	while (f && kib < 0 && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) != 1)
			kib = -1;
	if (f)
		fclose(f);
	return kib;
}

/*
 * backend_rss_kib once it is under `below` KiB, waiting up to 2 s: a launcher's resident
 * process execs its small program a moment after the launch has returned. The last reading
 * when it never gets there.
 */
static inline long backend_rss_kib_settled(long pid, long below)
{
	long kib = backend_rss_kib(pid);
	for (int tries = 0; kib >= below && tries < 200; tries++) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		kib = backend_rss_kib(pid);
	}
	return kib;
}

/*
 * The group setup: `spec` a "code" spec, the plugin opened with `extra` config lines, and
 * `shared` the sandbox of thread "shared". -1 when either fails (saying why).
 */
static inline int backend_setup(backend_fixture *f, msb_spec *spec, backend_opener open,
				 const char *extra, msb_sandbox_handle **shared)
{
	msb_spec_init(spec, "code");
	msb_error err = MSB_ERROR_INIT;
	if (open(f, NULL, extra, &err) != MSB_OK) {
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	*shared = backend_acquire(f, spec, "shared", NULL);
	return *shared ? 0 : -1;
}

/*
 * The group teardown: release and dispose the shared sandbox (thread "shared"), close the
 * plugin and run its leak check. -1 when disposal failed or anything leaked.
 */
static inline int backend_teardown(backend_fixture *f, msb_sandbox_handle *shared,
				   int (*leaks_of)(backend_fixture *))
{
	if (shared)
		f->ops->release(shared);
	msb_key k = backend_key("shared", NULL);
	msb_disposal_failure failure = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool failed = f->ops->dispose(f->self, &k, &failure);
	if (failed)
		fprintf(stderr, "dispose shared: %s\n", failure.detail ? failure.detail : "?");
	msb_disposal_failure_free(&failure);
	backend_fixture_close(f);
	int leaks = leaks_of(f);
	return failed || leaks ? -1 : 0;
}

/* write_file, read_file, stat_file and list_dir on dir/a.txt ("hello\n") in `wd`. */
static inline void backend_check_file_ops(backend_fixture *f, msb_sandbox_handle *h, const char *wd)
{
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(f->ops->write_file(h, "dir/a.txt", "hello\n", 6, wd, &err), MSB_OK);
	msb_buf buf = { 0 };
	assert_int_equal(f->ops->read_file(h, "dir/a.txt", wd, 1024, &buf, &err), MSB_OK);
	assert_int_equal(buf.len, 6);
	assert_memory_equal(buf.data, "hello\n", 6);
	msb_buf_free(&buf);

	msb_entry e = { 0 };
	bool found = false;
	assert_int_equal(f->ops->stat_file(h, "dir/a.txt", wd, &e, &found, &err), MSB_OK);
	assert_true(found);
	assert_int_equal(e.kind, MSB_ENTRY_FILE);
	assert_int_equal(e.size_bytes, 6);
	free(e.path);

	msb_entry_list list = { 0 };
	assert_int_equal(f->ops->list_dir(h, "dir", wd, &list, &err), MSB_OK);
	assert_int_equal(list.len, 1);
	assert_non_null(strstr(list.items[0].path, "a.txt"));
	msb_entry_list_free(&list);
}

/*
 * After backend_check_file_ops: run_code computes, remove takes dir/a.txt away, reclaim
 * removes a tree under /msb/work (and a missing one is success), and a write outside `wd`
 * is refused inside the boundary too. `timeout` bounds each command.
 */
static inline void backend_check_code_remove_reclaim(backend_fixture *f, msb_sandbox_handle *h,
						     const char *wd, double timeout)
{
	msb_error err = MSB_ERROR_INIT;
	msb_exec_result rc_res = { 0 };
	assert_int_equal(f->ops->run_code(h, "echo from-code $((6*7))", timeout, &rc_res, &err), MSB_OK);
	assert_string_equal(backend_out(&rc_res), "from-code 42\n");
	msb_exec_result_free(&rc_res);

	msb_entry e = { 0 };
	bool found = true;
	assert_int_equal(f->ops->remove(h, "dir/a.txt", wd, false, &err), MSB_OK);
	assert_int_equal(f->ops->stat_file(h, "dir/a.txt", wd, &e, &found, &err), MSB_OK);
	assert_false(found);

	msb_exec_result r = backend_run(f, h, timeout, 0,
					"mkdir -p /msb/work/rc-x/deep && touch /msb/work/rc-x/deep/f");
	assert_int_equal(r.exit_code, 0);
	msb_exec_result_free(&r);
	assert_int_equal(f->ops->reclaim(h, "/msb/work/rc-x", wd, 10, &err), MSB_OK);
	found = true;
	assert_int_equal(f->ops->stat_file(h, "rc-x", wd, &e, &found, &err), MSB_OK);
	assert_false(found);
	assert_int_equal(f->ops->reclaim(h, "/msb/work/rc-x", wd, 10, &err), MSB_OK);

	assert_int_not_equal(f->ops->write_file(h, "../escape", "x", 1, wd, &err), MSB_OK);
	assert_non_null(strstr(msb_error_message(&err), "escape"));
	msb_error_clear(&err);
}

/* A 1s timeout ends a 30s command well within 10s; a 1000-byte cap truncates and says so. */
static inline void backend_check_timeout_and_output_cap(backend_fixture *f, msb_sandbox_handle *h)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	msb_exec_result r = backend_run(f, h, 1.0, 0, "sleep 30");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(r.timed_out);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	msb_exec_result_free(&r);

	r = backend_run(f, h, 20, 1000, "yes | head -c 100000");
	assert_true(r.out_truncated);
	assert_int_equal(r.out.len, 1000);
	msb_exec_result_free(&r);
}

/*
 * A daemon started by one request is still running at the next: the sandbox is resident
 * between calls. (Disposal ends it: the suite's leak check sees nothing left.)
 */
static inline void backend_check_daemon_lives(backend_fixture *f, msb_sandbox_handle *h)
{
	msb_exec_result r = backend_run(f, h, 20, 0, "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!");
	long pid = atol(backend_out(&r));
	assert_true(pid > 1);
	msb_exec_result_free(&r);
	r = backend_run(f, h, 20, 0, "kill -0 %ld && echo alive", pid);
	assert_string_equal(backend_out(&r), "alive\n");
	msb_exec_result_free(&r);
}

/*
 * A second process opening the plugin on the same state dir reaches the same sandbox by its
 * key (thread "shared"): it reads what this process wrote, and this process reads what it
 * wrote.
 */
static inline void backend_check_second_process(backend_fixture *f, const msb_spec *spec,
						msb_sandbox_handle *shared, backend_opener open)
{
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(f->ops->write_file(shared, "from-parent.txt", "parent", 6, spec->work_dir, &err),
			 MSB_OK);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		backend_fixture mine;
		if (open(&mine, f->state, "", NULL) != MSB_OK)
			_exit(10);
		msb_sandbox_handle *h = backend_acquire(&mine, spec, "shared", NULL);
		if (!h)
			_exit(11);
		msb_buf b = { 0 };
		if (mine.ops->read_file(h, "from-parent.txt", spec->work_dir, 64, &b, NULL) ||
		    b.len != 6 || memcmp(b.data, "parent", 6))
			_exit(12);
		msb_buf_free(&b);
		if (mine.ops->write_file(h, "from-child.txt", "child", 5, spec->work_dir, NULL))
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
	assert_int_equal(f->ops->read_file(shared, "from-child.txt", spec->work_dir, 64, &buf, NULL),
			 MSB_OK);
	assert_memory_equal(buf.data, "child", 5);
	msb_buf_free(&buf);
}

/*
 * Opening the plugin (`open`) with the config lines `extra` is refused with `code`, the
 * message naming each of the NULL-terminated words that follow, and the refused open leaves
 * nothing behind (`leaks_of`).
 */
static inline void backend_check_refused(backend_opener open, int (*leaks_of)(backend_fixture *),
					 const char *extra, msb_errc code, ...)
{
	backend_fixture bad;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(open(&bad, NULL, extra, &err), code);
	va_list ap;
	va_start(ap, code);
	for (const char *word; (word = va_arg(ap, const char *));)
		assert_non_null(strstr(msb_error_message(&err), word));
	va_end(ap);
	msb_error_clear(&err);
	backend_fixture_close(&bad);
	assert_int_equal(leaks_of(&bad), 0);
}

/*
 * The sandbox of call "call-1" in thread "shared": another sandbox than the thread's own —
 * the file backend_check_second_process wrote there is not in it.
 */
static inline msb_sandbox_handle *backend_acquire_call(backend_fixture *f, const msb_spec *spec)
{
	msb_sandbox_handle *h = backend_acquire(f, spec, "shared", "call-1");
	assert_non_null(h);
	msb_entry e = { 0 };
	bool found = true;
	assert_int_equal(f->ops->stat_file(h, "from-parent.txt", spec->work_dir, &e, &found, NULL),
			 MSB_OK);
	assert_false(found);
	return h;
}

/*
 * Release and dispose the call's sandbox `h` (backend_acquire_call): disposal succeeds, its
 * directory is gone, and the thread's sandbox `shared` is untouched and still answers.
 */
static inline void backend_dispose_call(backend_fixture *f, msb_sandbox_handle *h,
					msb_sandbox_handle *shared)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", msb_driver_sandbox_box(h)->dir);
	f->ops->release(h);
	backend_dispose(f, "shared", "call-1");
	struct stat st;
	assert_int_equal(lstat(dir, &st), -1);
	msb_exec_result r = backend_run(f, shared, 20, 0, "echo ok");
	assert_string_equal(backend_out(&r), "ok\n");
	msb_exec_result_free(&r);
}

#endif
