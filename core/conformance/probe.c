/*
 * probe.c — carrying the kit's own probe program into a guest and running it there.
 *
 * The program is copied in with write_file (the limits every backend has: it is a few
 * hundred KiB, static, libc only), made executable with `chmod` through exec and run from
 * the working directory. This is what tests/bench/exec_floor does; it makes the rung probes
 * depend on files_in, exec and a chmod, never on what else the image holds. What cannot be
 * done is a SKIP naming the step, never a pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define PROBE_MAX (8u << 20)
#define PROBE_NAME "msb-probe"

const char *conf_probe_host_path(void)
{
	const char *env = getenv("MSB_CONFORMANCE_PROBE");
	return env && *env ? env : MSB_LIBEXECDIR "/" PROBE_NAME;
}

static bool read_all(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return false;
	char *buf = malloc(PROBE_MAX);
	size_t n = buf ? fread(buf, 1, PROBE_MAX, f) : 0;
	fclose(f);
	if (!buf || n == 0 || n == PROBE_MAX) {
		free(buf);
		return false;
	}
	*data = buf;
	*len = n;
	return true;
}

bool conf_probe_install(conf_run *run, conf_box *box, char *path, size_t size)
{
	conf_path(run, PROBE_NAME, path, size);
	if (box->probed)
		return true;
	if (!conf_has(run, MSB_CAP_FILES_IN) || !conf_exec_usable(run, box)) {
		conf_skip(run, "carrying the kit's probe program in needs files_in and an exec that "
			       "runs real programs");
		return false;
	}
	const char *host = conf_probe_host_path();
	char *data = NULL;
	size_t len = 0;
	if (!read_all(host, &data, &len)) {
		conf_skip(run, "the kit's probe program %s cannot be read (set MSB_CONFORMANCE_PROBE "
			       "to its path)", host);
		return false;
	}
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->write_file(box->handle, PROBE_NAME, data, len, run->work_dir, &err);
	free(data);
	if (rc != MSB_OK) {
		conf_skip(run, "the probe program (%zu bytes) could not be written into the guest: %s: %s",
			  len, msb_errc_name(rc), msb_error_message(&err));
		msb_error_clear(&err);
		return false;
	}
	/* Relative to the working directory: a backend may map the spec's work_dir to where its
	 * commands really run (the process backend's alias). */
	const char *argv[] = { "chmod", "755", PROBE_NAME, NULL };
	msb_exec_request req = { .argv = argv, .working_directory = run->work_dir, .timeout = 30 };
	msb_exec_result res = { 0 };
	rc = run->ops->exec(box->handle, &req, &res, &err);
	bool ok = rc == MSB_OK && res.exit_code == 0;
	if (!ok) {
		char text[256] = "";
		if (rc != MSB_OK)
			snprintf(text, sizeof text, "%s: %s", msb_errc_name(rc), msb_error_message(&err));
		else
			conf_quote(res.err.data, res.err.len, text, sizeof text);
		conf_skip(run, "the probe program could not be made executable in the guest "
			       "(`chmod 755 %s`, exit status %d): %s", path, res.exit_code, text);
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
	box->probed = ok;
	return ok;
}

bool conf_probe_run(conf_run *run, conf_box *box, const char *const *args, char **out)
{
	return conf_probe_try(run, box, args, out, NULL);
}

bool conf_probe_try(conf_run *run, conf_box *box, const char *const *args, char **out,
		    msb_error *call_err)
{
	*out = NULL;
	char path[1024];
	if (!conf_probe_install(run, box, path, sizeof path))
		return false;
	const char *argv[24] = { "./" PROBE_NAME };
	size_t n = 1;
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	msb_exec_request req = { .argv = argv, .working_directory = run->work_dir, .timeout = 60 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->exec(box->handle, &req, &res, &err);
	bool ok = false;
	if (rc != MSB_OK && call_err) {
		msb_error_move(call_err, &err);
	} else if (rc != MSB_OK) {
		char what[160];
		snprintf(what, sizeof what, "exec of the probe (`msb-probe %s`) to run", args[0]);
		conf_fail_call(run, what, &err);
	} else if (res.exit_code != 0 || res.timed_out) {
		char text[256];
		conf_quote(res.err.data, res.err.len, text, sizeof text);
		conf_skip(run, "the probe `msb-probe %s` ended with exit status %d%s: %s", args[0],
			  res.exit_code, res.timed_out ? " (timed out)" : "", text);
	} else if ((*out = malloc(res.out.len + 1))) {
		memcpy(*out, res.out.data, res.out.len);
		(*out)[res.out.len] = '\0';
		ok = true;
	} else {
		conf_fail(run, "memory for the probe's answer", "out of memory");
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
	return ok;
}

void conf_probe_field(const char *text, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	buf[0] = '\0';
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > klen && strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			snprintf(buf, size, "%.*s", (int)(len - klen - 1), line + klen + 1);
			return;
		}
		line = end ? end + 1 : NULL;
	}
}
