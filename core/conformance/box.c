/*
 * box.c — the sandboxes a suite acquires, and running commands in them.
 *
 * Every sandbox is acquired straight through the descriptor's operations under a key no
 * other run can hold (the run id is in the thread id), with a spec asking for exactly what
 * the backend declares, so a refusal at acquire is the backend's own failure and never the
 * kit asking for more than was claimed. Every key a suite acquires is disposed when the
 * suite ends, whatever its cases did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

bool conf_has(const conf_run *run, msb_capability cap)
{
	return (run->decl->capabilities & MSB_BIT(cap)) != 0;
}

/*
 * The kit plants links and looks for files through exec, so exec must first show it runs a
 * real program: a scripted fake answers `test -e` with whatever it was scripted to, and a
 * kit trusting it would report the fake's script rather than its files. Asked once a run,
 * in the first sandbox the question comes up in (printf of a nonce); the exec suite judges
 * exec itself regardless.
 */
bool conf_exec_usable(conf_run *run, conf_box *box)
{
	if (run->exec_probe)
		return run->exec_probe > 0;
	if (!conf_has(run, MSB_CAP_EXEC) || !run->ops->exec) {
		run->exec_probe = -1;
		return false;
	}
	if (!box || !box->handle)
		return false; /* undecided: asked again with a sandbox */
	char nonce[96];
	conf_unique(run, "probe", nonce, sizeof(nonce));
	const char *argv[] = { "printf", "%s", nonce, NULL };
	msb_exec_request req = { .argv = argv, .working_directory = run->work_dir, .timeout = 30 };
	msb_exec_result res = { 0 };
	run->exec_probe = -1;
	if (run->ops->exec(box->handle, &req, &res, NULL) == MSB_OK && res.exit_code == 0 &&
	    res.out.len == strlen(nonce) && memcmp(res.out.data, nonce, res.out.len) == 0)
		run->exec_probe = 1;
	msb_exec_result_free(&res);
	return run->exec_probe > 0;
}

void conf_unique(conf_run *run, const char *prefix, char *buf, size_t size)
{
	snprintf(buf, size, "%s-%s-%u", prefix, run->run_id, ++run->seq);
}

void conf_path(const conf_run *run, const char *rel, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", run->work_dir, rel);
}

static bool remember(conf_run *run, conf_box *box)
{
	if (run->n_boxes == run->cap_boxes) {
		size_t cap = run->cap_boxes ? run->cap_boxes * 2 : 8;
		conf_box **p = realloc(run->boxes, cap * sizeof(*p));
		if (!p)
			return false;
		run->boxes = p;
		run->cap_boxes = cap;
	}
	run->boxes[run->n_boxes++] = box;
	return true;
}

static msb_errc box_acquire_handle(conf_run *run, conf_box *box, msb_error *err)
{
	return run->ops->acquire(run->self, &box->key, &box->spec, &box->handle, err);
}

conf_box *conf_box_new(conf_run *run, const char *tag, const char *call, msb_scope scope)
{
	conf_box *box = calloc(1, sizeof(*box));
	if (!box || !remember(run, box)) {
		free(box);
		conf_fail(run, "memory for a sandbox record", "out of memory");
		return NULL;
	}
	snprintf(box->thread, sizeof(box->thread), "%s-%s-%u", run->run_id, tag, ++run->seq);
	snprintf(box->call, sizeof(box->call), "%s", call ? call : "");
	box->key.scope = "conformance";
	box->key.thread_id = box->thread;
	snprintf(box->agent, sizeof(box->agent), "conformance");
	box->key.agent_dir = box->agent;
	box->key.call_id = box->call;
	msb_spec_init(&box->spec, "conformance");
	if (run->opts->image)
		box->spec.image = run->opts->image;
	box->spec.work_dir = run->work_dir;
	box->spec.egress = run->egress;
	box->spec.requires = run->decl->capabilities;
	box->spec.isolation_scope = scope;
	return box;
}

conf_box *conf_box_acquire(conf_run *run, const char *tag, const char *call, msb_scope scope)
{
	conf_box *box = conf_box_new(run, tag, call, scope);
	if (!box || !conf_box_reacquire(run, box))
		return NULL;
	return box;
}

conf_box *conf_main_box(conf_run *run)
{
	conf_box *box = run->suite_state;
	if (box && box->handle)
		return box;
	/* One failed acquire fails one case; the rest say where to look rather than repeat it. */
	if (run->main_box_failed) {
		conf_skip(run, "the suite's sandbox could not be acquired: see %s/%s", run->suite->name,
			  run->main_box_failed);
		return NULL;
	}
	if (box && conf_box_reacquire(run, box))
		return box;
	if (!box)
		box = conf_box_acquire(run, run->suite->name, NULL, MSB_SCOPE_CONVERSATION);
	run->suite_state = box;
	if (box && box->handle)
		return box;
	run->main_box_failed = run->case_name;
	return NULL;
}

bool conf_box_reacquire(conf_run *run, conf_box *box)
{
	msb_error err = MSB_ERROR_INIT;
	conf_box_release(run, box);
	if (box_acquire_handle(run, box, &err) != MSB_OK || !box->handle) {
		char what[192];
		snprintf(what, sizeof(what), "acquire(thread %s%s%s) to return a sandbox", box->thread,
			 box->call[0] ? ", call " : "", box->call);
		if (err.code == MSB_OK)
			err.code = MSB_E_BACKEND; /* a NULL handle with MSB_OK is its own failure */
		conf_fail_call(run, what, &err);
		msb_error_clear(&err);
		return false;
	}
	return true;
}

void conf_box_release(conf_run *run, conf_box *box)
{
	if (box && box->handle) {
		run->ops->release(box->handle);
		box->handle = NULL;
	}
}

bool conf_box_dispose(conf_run *run, conf_box *box, msb_disposal_failure *failure)
{
	conf_box_release(run, box);
	return run->ops->dispose(run->self, &box->key, failure);
}

void conf_boxes_dispose_all(conf_run *run)
{
	for (size_t i = 0; i < run->n_boxes; i++) {
		msb_disposal_failure f = { 0 };
		conf_box_dispose(run, run->boxes[i], &f);
		msb_disposal_failure_free(&f);
		free(run->boxes[i]);
	}
	free(run->boxes);
	run->boxes = NULL;
	run->n_boxes = run->cap_boxes = 0;
}

msb_errc conf_sh(conf_run *run, conf_box *box, const char *wd, const char *script,
		 const char *const *args, double timeout, msb_exec_result *res, msb_error *err)
{
	const char *argv[16] = { "sh", "-c", script, "sh" };
	size_t n = 4;
	for (size_t i = 0; args && args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	msb_exec_request req = {
		.argv = argv,
		.working_directory = wd ? wd : run->work_dir,
		.timeout = timeout,
	};
	memset(res, 0, sizeof(*res));
	if (!conf_has(run, MSB_CAP_EXEC) || !run->ops->exec)
		return msb_error_set(err, MSB_E_NOT_IMPLEMENTED, "the backend does not declare exec");
	return run->ops->exec(box->handle, &req, res, err);
}

bool conf_sh_ok(conf_run *run, conf_box *box, const char *wd, const char *what,
		const char *script, const char *const *args)
{
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = conf_sh(run, box, wd, script, args, 30, &res, &err);
	bool ok = rc == MSB_OK && res.exit_code == 0 && !res.timed_out;
	if (!ok) {
		/* A call that failed has no exit status: say the call's error, in its own words. */
		char out[256];
		if (rc != MSB_OK) {
			conf_fail(run, what, "the setup command `%s` could not be run: %s: %s", script,
				  msb_errc_name(rc), msb_error_message(&err));
		} else {
			conf_quote(res.err.data, res.err.len, out, sizeof(out));
			conf_fail(run, what, "the setup command `%s` %s %d; its stderr: \"%s\"", script,
				  res.timed_out ? "timed out, status" : "exited with status", res.exit_code,
				  out);
		}
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
	return ok;
}

int conf_exists(conf_run *run, conf_box *box, const char *rel)
{
	if (conf_exec_usable(run, box)) {
		const char *args[] = { rel, NULL };
		msb_exec_result res;
		msb_error err = MSB_ERROR_INIT;
		msb_errc rc = conf_sh(run, box, NULL, "test -e \"$1\" || test -L \"$1\"", args, 30, &res, &err);
		int answer = rc != MSB_OK ? -1 : res.exit_code == 0 ? 1 : res.exit_code == 1 ? 0 : -1;
		msb_exec_result_free(&res);
		msb_error_clear(&err);
		return answer;
	}
	if (conf_has(run, MSB_CAP_FILES_OUT) && run->ops->stat_file) {
		msb_entry e = { 0 };
		bool found = false;
		msb_errc rc = run->ops->stat_file(box->handle, rel, run->work_dir, &e, &found, NULL);
		free(e.path);
		return rc != MSB_OK ? -1 : found;
	}
	return -1;
}

bool conf_plant(conf_run *run, conf_box *box, const char *rel, const char *text)
{
	if (conf_has(run, MSB_CAP_FILES_IN)) {
		msb_error err = MSB_ERROR_INIT;
		msb_errc rc = run->ops->write_file(box->handle, rel, text, strlen(text), run->work_dir, &err);
		if (rc != MSB_OK) {
			char what[320];
			snprintf(what, sizeof(what), "write_file(%s) to plant a marker", rel);
			conf_fail_call(run, what, &err);
		}
		msb_error_clear(&err);
		return rc == MSB_OK;
	}
	if (conf_exec_usable(run, box)) {
		const char *args[] = { rel, text, NULL };
		return conf_sh_ok(run, box, NULL, "a marker planted with exec",
				  "mkdir -p \"$(dirname \"$1\")\" && printf %s \"$2\" > \"$1\"", args);
	}
	conf_skip(run, "nothing declared (files_in or exec) can plant a marker in a sandbox");
	return false;
}

void conf_not_applicable(conf_run *run, const char *reason)
{
	if (conf_decided(run))
		return;
	run->verdict->reason = strdup(reason);
	run->verdict->outcome = MSB_CONFORMANCE_NOT_APPLICABLE;
}

long conf_work_dir_entries(conf_run *run, conf_box *box, char *first, size_t size)
{
	long n = -1;
	if (conf_has(run, MSB_CAP_FILES_LIST) && run->ops->list_dir) {
		msb_entry_list l = { 0 };
		if (run->ops->list_dir(box->handle, "", run->work_dir, &l, NULL) == MSB_OK) {
			n = (long)l.len;
			if (l.len)
				snprintf(first, size, "%s", l.items[0].path);
		}
		msb_entry_list_free(&l);
	} else if (conf_exec_usable(run, box)) {
		msb_exec_result res;
		if (conf_sh(run, box, NULL, "ls -A", NULL, 30, &res, NULL) == MSB_OK && res.exit_code == 0) {
			n = 0;
			for (size_t i = 0; i < res.out.len; i++)
				n += res.out.data[i] == '\n';
			if (res.out.len)
				snprintf(first, size, "%.*s", (int)strcspn((const char *)res.out.data, "\n"),
					 (const char *)res.out.data);
		}
		msb_exec_result_free(&res);
	}
	return n;
}
