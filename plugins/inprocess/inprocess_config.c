/*
 * inprocess_config.c — reading the fake's `config:`: the declarations this instance states,
 * scripted outputs, an acquire delay (to widen a race a test wants to provoke) and failures
 * injected from the start.
 *
 *   config:
 *     capabilities: [exec, files_in, files_out]   # default {exec, files_in}
 *     egress_modes: [allowlist, closed]            # default {allowlist, closed}
 *     os_families: [posix]                         # default {}
 *     isolation_scopes: [conversation, call]       # default {conversation}
 *     limits: {files_in: {max_files: 8}, files_out: {max_total_bytes: 1MiB}}
 *     observes_egress: false
 *     outputs:  [{match: "bicep build", stdout: "ok", stderr: "", exit_code: 0}]
 *     programs: [{match: "print", stdout: "42"}]
 *     default_stdout: ""
 *     acquire_delay: 20ms
 *     acquire_barrier: 8          # each acquire waits until 8 are in flight…
 *     acquire_barrier_timeout: 5s # …for at most this long, then fails
 *     fail_acquire: SandboxBackendError
 *     fail_dispose: refused
 *     fail_dispose_scope: timeout
 *
 * The fake's defaults are stated rather than left to the silence rules, except that they
 * equal them — with one difference: egress {allowlist, closed}, so a workload under test
 * attaches (an unstated egress_modes enforces nothing and refuses every spec).
 */
#include <stdlib.h>
#include <string.h>

#include "inprocess.h"

static const char *const config_keys[] = {
	"capabilities", "egress_modes", "os_families", "isolation_scopes", "limits",
	"observes_egress", "outputs", "programs", "default_stdout", "acquire_delay", "acquire_barrier",
	"acquire_barrier_timeout",
	"fail_acquire", "fail_dispose", "fail_dispose_scope", NULL,
};

static msb_errc words(const msb_node *config, const char *key, const char ***out,
		      const char *const *fallback, msb_error *err)
{
	const char **got = NULL;
	msb_errc rc = msb_node_strings(config, key, &got, err);
	if (rc)
		return rc;
	if (!got) {
		size_t n = 0;
		while (fallback[n])
			n++;
		got = calloc(n + 1, sizeof *got);
		if (!got)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		memcpy(got, fallback, n * sizeof *got);
	}
	*out = got;
	return MSB_OK;
}

static msb_errc direction(const msb_node *limits, const char *key, msb_transfer_limits *t,
			  msb_error *err)
{
	const msb_node *d = msb_node_get(limits, key);
	if (!d)
		return MSB_OK;
	static const char *const keys[] = { "max_bytes_per_file", "max_total_bytes", "max_files", NULL };
	msb_errc rc;
	if ((rc = msb_node_check_keys(d, keys, err)) ||
	    (rc = msb_node_size(d, "max_bytes_per_file", &t->max_bytes_per_file, err)) ||
	    (rc = msb_node_size(d, "max_total_bytes", &t->max_total_bytes, err)) ||
	    (rc = msb_node_uint(d, "max_files", &t->max_files, err)))
		return rc;
	return MSB_OK;
}

static msb_errc scripts(const msb_node *config, const char *key, inproc_script **out, size_t *n,
			msb_error *err)
{
	const msb_node *seq = msb_node_get(config, key);
	if (!seq)
		return MSB_OK;
	if (seq->kind != MSB_NODE_SEQ)
		return msb_node_error(err, seq, MSB_E_CONFIG, "expected a list of {match, stdout, stderr, exit_code}");
	*out = calloc(seq->len ? seq->len : 1, sizeof **out);
	if (!*out)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	static const char *const keys[] = { "match", "stdout", "stderr", "exit_code", NULL };
	for (size_t i = 0; i < seq->len; i++) {
		const msb_node *item = seq->items[i];
		const char *match = NULL, *so = "", *se = "";
		uint64_t code = 0;
		msb_errc rc;
		if (item->kind != MSB_NODE_MAP)
			return msb_node_error(err, item, MSB_E_CONFIG, "expected a map {match, stdout, stderr, exit_code}");
		if ((rc = msb_node_check_keys(item, keys, err)) ||
		    (rc = msb_node_string(item, "match", &match, err)) ||
		    (rc = msb_node_string(item, "stdout", &so, err)) ||
		    (rc = msb_node_string(item, "stderr", &se, err)) ||
		    (rc = msb_node_uint(item, "exit_code", &code, err)))
			return rc;
		if (!match)
			return msb_node_error(err, item, MSB_E_CONFIG, "a scripted output needs `match`");
		inproc_script *s = &(*out)[(*n)++];
		s->match = strdup(match);
		s->out = strdup(so);
		s->err = strdup(se);
		s->exit_code = (int)(code & 0xff);
		if (!s->match || !s->out || !s->err)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	return MSB_OK;
}

static msb_errc disposal_code(const msb_node *config, const char *key, int *out, msb_error *err)
{
	const char *word = NULL;
	msb_errc rc = msb_node_string(config, key, &word, err);
	if (rc || !word)
		return rc;
	int v;
	if (msb_word_parse(MSB_AXIS_DISPOSAL_CODE, word, &v, NULL) != MSB_OK)
		return msb_node_error(err, msb_node_get(config, key), MSB_E_CONFIG,
				      "'%s' is not a disposal code (refused, timeout, unreachable, unlisted, unknown)",
				      word);
	*out = v;
	return MSB_OK;
}

msb_errc inproc_config(struct msb_backend_instance *self, const msb_node *config, msb_error *err)
{
	static const msb_sandbox_limits default_limits = MSB_DEFAULT_SANDBOX_LIMITS;
	self->limits = default_limits;
	self->fail_dispose = -1;
	self->fail_dispose_scope = -1;
	self->acquire_barrier_timeout = 5;
	msb_errc rc;
	if (config && (rc = msb_node_check_keys(config, config_keys, err)))
		return rc;
	const msb_node *limits = msb_node_get(config, "limits");
	static const char *const limit_keys[] = { "files_in", "files_out", NULL };
	const char *fail_acquire = NULL;
	double delay = 0;
	uint64_t barrier = 0;
	const char *default_stdout = "";
	if ((rc = words(config, "capabilities", &self->caps, MSB_WORDS("exec", "files_in"), err)) ||
	    (rc = words(config, "egress_modes", &self->modes, MSB_WORDS("allowlist", "closed"), err)) ||
	    (rc = words(config, "os_families", &self->families, MSB_WORDS_NONE, err)) ||
	    (rc = words(config, "isolation_scopes", &self->scopes, MSB_WORDS("conversation"), err)) ||
	    (limits && (rc = msb_node_check_keys(limits, limit_keys, err))) ||
	    (rc = direction(limits, "files_in", &self->limits.files_in, err)) ||
	    (rc = direction(limits, "files_out", &self->limits.files_out, err)) ||
	    (rc = msb_node_bool(config, "observes_egress", &self->observes_egress, err)) ||
	    (rc = scripts(config, "outputs", &self->outputs, &self->n_outputs, err)) ||
	    (rc = scripts(config, "programs", &self->programs, &self->n_programs, err)) ||
	    (rc = msb_node_string(config, "default_stdout", &default_stdout, err)) ||
	    (rc = msb_node_seconds(config, "acquire_delay", &delay, err)) ||
	    (rc = msb_node_uint(config, "acquire_barrier", &barrier, err)) ||
	    (rc = msb_node_seconds(config, "acquire_barrier_timeout", &self->acquire_barrier_timeout, err)) ||
	    (rc = msb_node_string(config, "fail_acquire", &fail_acquire, err)) ||
	    (rc = disposal_code(config, "fail_dispose", &self->fail_dispose, err)) ||
	    (rc = disposal_code(config, "fail_dispose_scope", &self->fail_dispose_scope, err)))
		return rc;
	if (fail_acquire) {
		msb_errc code = msb_errc_from_name(fail_acquire);
		if (code == MSB_E__COUNT || code == MSB_OK)
			return msb_node_error(err, msb_node_get(config, "fail_acquire"), MSB_E_CONFIG,
					      "'%s' is not an error name (e.g. SandboxBackendError)", fail_acquire);
		self->fail_acquire = (int)code;
	}
	self->acquire_delay_us = delay > 0 ? (unsigned)(delay * 1e6) : 0;
	self->acquire_barrier = barrier > 1024 ? 1024 : (unsigned)barrier;
	self->default_stdout = strdup(default_stdout);
	if (!self->default_stdout)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	self->decl = (msb_declarations){
		.capabilities = self->caps,
		.limits = &self->limits,
		.egress_modes = self->modes,
		.os_families = self->families,
		.isolation_scopes = self->scopes,
		.observes_egress = &self->observes_egress,
	};
	return MSB_OK;
}

static void scripts_free(inproc_script *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].match);
		free(s[i].out);
		free(s[i].err);
	}
	free(s);
}

void inproc_config_free(struct msb_backend_instance *self)
{
	free(self->caps);
	free(self->modes);
	free(self->families);
	free(self->scopes);
	scripts_free(self->outputs, self->n_outputs);
	scripts_free(self->programs, self->n_programs);
	free(self->default_stdout);
}
