/*
 * suite_stream_bg.c — the streaming suite's background cases (the bg_* operations appended
 * to the descriptor after exec_stream): a background command outlives the process that
 * started it (a forked child acquires the sandbox, starts it and exits; this process reads
 * it through a handle of its own), is listed while it runs, gets the signal sent to it, has
 * its output bounded by a ring that says what it dropped, and is reaped when its sandbox is
 * disposed — gone from the host's process table where the host can see it (process, bwrap:
 * the same kernel and /proc), and from the agent's listing of the key's next sandbox
 * everywhere.
 *
 * Each case applies where the plugin has all four operations and exec runs real programs.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

/* The sandbox of a background case, or NULL after deciding it. */
static conf_box *bg_box(conf_run *run, const char *tag)
{
	const struct msb_backend_v27 *ops = run->ops;
	if (!MSB_BACKEND_OP(ops, bg_start) || !MSB_BACKEND_OP(ops, bg_read) ||
	    !MSB_BACKEND_OP(ops, bg_signal) || !MSB_BACKEND_OP(ops, bg_list)) {
		conf_not_applicable(run, "the plugin has no background operations (bg_start, bg_read, "
				    "bg_signal, bg_list: appended to the descriptor after exec_stream)");
		return NULL;
	}
	conf_box *box = tag ? conf_box_acquire(run, tag, NULL, MSB_SCOPE_CONVERSATION) : conf_main_box(run);
	if (box && !conf_exec_usable(run, box)) {
		conf_skip(run, "the backend's exec does not run real programs (a scripted fake): a "
			  "background command of its would be its script");
		return NULL;
	}
	return box;
}

static bool start(conf_run *run, conf_box *box, const char *script, size_t ring, msb_bg_status *st)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .working_directory = run->work_dir, .max_output = ring };
	msb_error err = MSB_ERROR_INIT;
	memset(st, 0, sizeof *st);
	if (run->ops->bg_start(box->handle, &req, NULL, st, &err) != MSB_OK) {
		conf_fail_call(run, "bg_start", &err);
		msb_error_clear(&err);
		return false;
	}
	if (!msb_bg_id_valid(st->id) || !st->running) {
		conf_fail(run, "bg_start to answer a handle of [0-9a-z] and a running command",
			  "handle '%.40s', running=%d", st->id, st->running);
		return false;
	}
	return true;
}

/* Read from the offsets, waiting as asked; false after failing the case. */
static bool bg_read(conf_run *run, conf_box *box, const char *id, uint64_t out_offset,
		    double wait, bool until_exit, msb_bg_output *out)
{
	msb_bg_read rq = { .out_offset = out_offset, .wait = wait, .until_exit = until_exit };
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->bg_read(box->handle, id, &rq, out, &err) != MSB_OK) {
		conf_fail_call(run, "bg_read", &err);
		msb_error_clear(&err);
		return false;
	}
	return true;
}

/* Read until stdout holds `text` (true), the command ended without it, or 20 s passed. */
static bool await_text(conf_run *run, conf_box *box, const char *id, const char *text)
{
	double until = conf_now() + 20;
	while (conf_now() < until) {
		msb_bg_output out = { 0 };
		if (!bg_read(run, box, id, 0, 1, false, &out))
			return false;
		bool seen = out.out.len && strstr((const char *)out.out.data, text);
		bool ended = !out.status.running;
		msb_bg_output_free(&out);
		if (seen)
			return true;
		if (ended)
			break;
	}
	conf_fail(run, "the background command's stdout to show what it printed", "no \"%s\" within "
		  "20 s", text);
	return false;
}

/* Wait for the end (bounded), the status in *st; false after failing the case. */
static bool await_end(conf_run *run, conf_box *box, const char *id, msb_bg_status *st)
{
	msb_bg_output out = { 0 };
	if (!bg_read(run, box, id, UINT64_MAX, 20, true, &out))
		return false;
	*st = out.status;
	msb_bg_output_free(&out);
	if (st->running)
		conf_fail(run, "the background command to have ended", "still running after 20 s");
	return !st->running;
}

/* In a forked child: acquire its own handle, start `script`, say its id on `fd`, exit. */
static _Noreturn void start_elsewhere(conf_run *run, conf_box *box, const char *script, int fd)
{
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_bg_status st = { 0 };
	const char *argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .working_directory = run->work_dir };
	if (run->ops->acquire(run->self, &box->key, &box->spec, &h, &err) != MSB_OK ||
	    run->ops->bg_start(h, &req, NULL, &st, &err) != MSB_OK)
		snprintf(st.command, sizeof st.command, "%s", msb_error_message(&err));
	ssize_t w = write(fd, &st, sizeof st);
	(void)w;
	if (h)
		run->ops->release(h);
	_exit(st.id[0] ? 0 : 1);
}

void conf_case_bg_outlives_its_starter(conf_run *run)
{
	conf_box *box = bg_box(run, NULL);
	if (!box)
		return;
	int p[2];
	if (pipe(p) < 0) {
		conf_skip(run, "no pipe to hear the starter");
		return;
	}
	fflush(NULL);
	pid_t child = fork();
	if (child == 0) {
		close(p[0]);
		start_elsewhere(run, box, "echo started; while :; do sleep 0.1; done", p[1]);
	}
	close(p[1]);
	msb_bg_status st = { 0 };
	ssize_t n = child > 0 ? read(p[0], &st, sizeof st) : -1;
	close(p[0]);
	/* The starter is gone before anything is read: bounded, then killed. */
	int status = 0;
	for (int i = 0; child > 0 && i < 600 && waitpid(child, &status, WNOHANG) == 0; i++) {
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
		if (i == 599) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
		}
	}
	if (n != (ssize_t)sizeof st || !msb_bg_id_valid(st.id)) {
		st.command[sizeof st.command - 1] = '\0';
		conf_fail(run, "a process that acquires the sandbox to start a background command and "
			  "exit", "it did not: %s", n == (ssize_t)sizeof st ? st.command : "no answer");
		return;
	}
	/* A handle of this process's own, after the starter ended. */
	if (!conf_box_reacquire(run, box) || !await_text(run, box, st.id, "started"))
		return;
	msb_bg_output out = { 0 };
	if (bg_read(run, box, st.id, 0, 0, false, &out) && !out.status.running)
		conf_fail(run, "the command still running once its starter exited",
			  "it ended (exit %d, signal %d)", out.status.exit_code, out.status.signal);
	msb_bg_output_free(&out);
	msb_error err = MSB_ERROR_INIT;
	run->ops->bg_signal(box->handle, st.id, SIGKILL, &err);
	msb_error_clear(&err);
}

void conf_case_bg_listed(conf_run *run)
{
	conf_box *box = bg_box(run, NULL);
	msb_bg_status st;
	if (!box || !start(run, box, "echo listed-marker; while :; do sleep 0.1; done", 0, &st))
		return;
	msb_bg_list list = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->bg_list(box->handle, &list, &err) != MSB_OK) {
		conf_fail_call(run, "bg_list", &err);
		msb_error_clear(&err);
		return;
	}
	const msb_bg_status *found = NULL;
	for (size_t i = 0; i < list.n; i++)
		if (!strcmp(list.items[i].id, st.id))
			found = &list.items[i];
	if (!found)
		conf_fail(run, "bg_list to list the command just started", "%zu listed, not '%s'",
			  list.n, st.id);
	else if (!found->running || !strstr(found->command, "listed-marker"))
		conf_fail(run, "it listed as running, with its command line",
			  "running=%d, command \"%.80s\"", found->running, found->command);
	msb_bg_list_free(&list);
	run->ops->bg_signal(box->handle, st.id, SIGKILL, &err);
	msb_error_clear(&err);
}

void conf_case_bg_signal(conf_run *run)
{
	conf_box *box = bg_box(run, NULL);
	msb_bg_status st, end;
	if (!box || !start(run, box, "trap 'echo got-term; exit 7' TERM; echo ready; "
			   "while :; do sleep 0.1; done", 0, &st) ||
	    !await_text(run, box, st.id, "ready"))
		return;
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->bg_signal(box->handle, st.id, SIGTERM, &err) != MSB_OK) {
		conf_fail_call(run, "bg_signal(SIGTERM)", &err);
		msb_error_clear(&err);
		return;
	}
	if (!await_end(run, box, st.id, &end))
		return;
	if (end.exit_code != 7)
		conf_fail(run, "the TERM trap to run: exit status 7", "exit status %d, signal %d",
			  end.exit_code, end.signal);
	/* Ended: a signal now is refused, not sent to whatever has its pid. */
	if (!conf_decided(run) && run->ops->bg_signal(box->handle, st.id, SIGKILL, &err) != MSB_E_VALUE)
		conf_fail(run, "a signal to an ended command refused (ValueError)", "%s",
			  err.code ? msb_error_message(&err) : "it was accepted");
	msb_error_clear(&err);
}

void conf_case_bg_ring(conf_run *run)
{
	conf_box *box = bg_box(run, NULL);
	msb_bg_status st, end;
	/* 1000 lines of 17 bytes through a 1024-byte ring. */
	if (!box || !start(run, box, "i=0; while [ $i -lt 1000 ]; do echo 0123456789abcdef; "
			   "i=$((i+1)); done; printf tail >&2", 1024, &st) ||
	    !await_end(run, box, st.id, &end))
		return;
	msb_bg_output out = { 0 };
	if (!bg_read(run, box, st.id, 0, 0, false, &out))
		return;
	if (out.status.out_written != 17000 || st.ring != 1024)
		conf_fail(run, "17000 bytes written through a ring of 1024",
			  "%llu written, ring %llu", (unsigned long long)out.status.out_written,
			  (unsigned long long)st.ring);
	else if (out.out.len != 1024 || out.out_start != 17000 - 1024 ||
		 out.out_dropped != 17000 - 1024)
		conf_fail(run, "the newest 1024 bytes from offset 15976, 15976 said dropped",
			  "%zu bytes from %llu, %llu dropped", out.out.len,
			  (unsigned long long)out.out_start, (unsigned long long)out.out_dropped);
	else if (memcmp(out.out.data + 1024 - 17, "0123456789abcdef\n", 17) != 0)
		conf_fail(run, "the ring to end where the stream ended", "its last line differs");
	else if (out.err.len != 4 || memcmp(out.err.data, "tail", 4) || out.err_dropped)
		conf_fail(run, "stderr's 4 bytes whole, none dropped", "%zu bytes, %llu dropped",
			  out.err.len, (unsigned long long)out.err_dropped);
	msb_bg_output_free(&out);
}

/* Whether a host process's command line holds `marker` (the host's own /proc). */
static bool host_has(const char *marker)
{
	DIR *d = opendir("/proc");
	bool found = false;
	struct dirent *de;
	while (d && !found && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char path[300], buf[4096];
		snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0)
			close(fd);
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		if (n > 0) {
			buf[n] = '\0';
			found = strstr(buf, marker) != NULL;
		}
	}
	if (d)
		closedir(d);
	return found;
}

void conf_case_bg_reaped_at_dispose(conf_run *run)
{
	conf_box *box = bg_box(run, "bg-dispose");
	char marker[96], script[192];
	conf_unique(run, "bgmark", marker, sizeof marker);
	snprintf(script, sizeof script, "echo up; sleep 300; echo %s", marker);
	msb_bg_status st;
	if (!box || !start(run, box, script, 0, &st) || !await_text(run, box, st.id, "up"))
		return;
	bool visible = host_has(marker);
	msb_disposal_failure failure = { 0 };
	if (conf_box_dispose(run, box, &failure)) {
		conf_fail(run, "dispose to land", "it reported %s", failure.detail ? failure.detail : "a failure");
		msb_disposal_failure_free(&failure);
		return;
	}
	/* Where the host sees it, it must go from the host's process table (bounded). */
	for (int i = 0; visible && i < 100 && host_has(marker); i++) {
		struct timespec ts = { 0, 100000000L };
		nanosleep(&ts, NULL);
	}
	if (visible && host_has(marker)) {
		conf_fail(run, "the background command gone from the host's process table once its "
			  "sandbox was disposed", "\"%s\" still runs 10 s after dispose", marker);
		return;
	}
	/* The key's next sandbox knows nothing of it. */
	if (!conf_box_reacquire(run, box))
		return;
	msb_bg_list list = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->bg_list(box->handle, &list, &err) != MSB_OK) {
		conf_fail_call(run, "bg_list after dispose", &err);
		msb_error_clear(&err);
		return;
	}
	for (size_t i = 0; i < list.n; i++)
		if (!strcmp(list.items[i].id, st.id) || list.items[i].running)
			conf_fail(run, "the key's next sandbox to list nothing running",
				  "it lists '%s' (running=%d)", list.items[i].id, list.items[i].running);
	msb_bg_list_free(&list);
}
