/*
 * driver_config.c — reading the `config:` keys every agent-backed backend shares.
 *
 * Unknown keys are refused (a typo must not read as "not stated"); the state directory is
 * made here, 0700, because sandboxes' sockets and work directories live under it and no
 * other local user has any business listing them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "driver_internal.h"

/* "/sk-" + 32 hex + "/agent.sock" + NUL must fit a sockaddr_un. */
#define STATE_DIR_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1 - 36 - 11)

static msb_errc mkdirs(const char *path, msb_error *err)
{
	char *copy = strdup(path);
	if (!copy)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (char *p = copy + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
			int e = errno;
			msb_errc rc = msb_error_set_errno(err, MSB_E_CONFIG, e,
							  "state directory %s cannot be created", copy);
			free(copy);
			return rc;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	free(copy);
	return MSB_OK;
}

/*
 * Sockets that run commands live in the state directory, so nobody but this user (or
 * root) may own it or its parent, and neither may be world-writable: a directory another
 * local user pre-created under /tmp would otherwise hand them every sandbox. A
 * world-writable parent is accepted only with the sticky bit (/tmp itself).
 */
static msb_errc check_owned(const char *dir, msb_error *err)
{
	char *parent = strdup(dir);
	if (!parent)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	char *slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	const char *paths[2] = { dir, parent };
	msb_errc rc = MSB_OK;
	for (int i = 0; i < 2 && rc == MSB_OK; i++) {
		struct stat st;
		if (lstat(paths[i], &st) < 0)
			rc = msb_error_set_errno(err, MSB_E_CONFIG, errno, "state directory %s", paths[i]);
		else if (!S_ISDIR(st.st_mode))
			rc = msb_error_set(err, MSB_E_CONFIG,
					   "state directory refused: %s is not a directory (a link?)",
					   paths[i]);
		else if (st.st_uid != geteuid() && st.st_uid != 0)
			rc = msb_error_set(err, MSB_E_CONFIG,
					   "state directory refused: %s belongs to uid %ld, not to this "
					   "user (%ld) or root", paths[i], (long)st.st_uid,
					   (long)geteuid());
		else if ((st.st_mode & 002) && !(i == 1 && (st.st_mode & S_ISVTX)))
			rc = msb_error_set(err, MSB_E_CONFIG,
					   "state directory refused: %s is writable by others",
					   paths[i]);
	}
	free(parent);
	return rc;
}

/*
 * The state directory is part of every sandbox's name (msb/driver.h), so two configs that
 * spell one directory differently ("/run/msb//x", a symlinked parent) must still name a
 * key's sandbox alike: the name is taken over the resolved path.
 */
static msb_errc canonical_state_dir(msb_backend_instance *inst, msb_error *err)
{
	char *real = realpath(inst->config.state_dir, NULL);
	if (!real)
		return msb_error_set_errno(err, MSB_E_CONFIG, errno, "state directory %s",
					   inst->config.state_dir);
	free(inst->config.state_dir);
	inst->config.state_dir = real;
	if (strlen(real) > STATE_DIR_MAX)
		return msb_error_set(err, MSB_E_CONFIG,
				     "backend %s: state_dir %s is %zu bytes; a sandbox's socket under it "
				     "would not fit a unix socket address (at most %zu bytes)",
				     inst->boundary.name, real, strlen(real), (size_t)STATE_DIR_MAX);
	return MSB_OK;
}

static char *default_state_dir(const char *backend)
{
	char buf[4096];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	/*
	 * A sandbox's state is its running agent: it cannot outlive a reboot, so it belongs in
	 * the runtime directory (tmpfs on most systems, where creating and removing the few
	 * files of an acquire costs microseconds rather than a disk's milliseconds).
	 */
	if (geteuid() == 0)
		snprintf(buf, sizeof buf, "/run/msb/%s", backend);
	else if (xdg && xdg[0] == '/')
		snprintf(buf, sizeof buf, "%s/msb/%s", xdg, backend);
	else
		snprintf(buf, sizeof buf, "/tmp/msb-%ld/%s", (long)geteuid(), backend);
	return strdup(buf);
}

/* run_code: a sequence of words, or one word. */
static msb_errc read_run_code(msb_backend_instance *inst, const msb_node *config, msb_error *err)
{
	const msb_node *n = msb_node_get(config, "run_code");
	if (!n)
		return MSB_OK;
	const char **words = NULL;
	const char *one[2] = { NULL, NULL };
	if (n->kind == MSB_NODE_SCALAR) {
		one[0] = n->scalar;
	} else {
		msb_errc rc = msb_node_strings(config, "run_code", &words, err);
		if (rc != MSB_OK)
			return rc;
	}
	const char **src = words ? words : one;
	size_t count = 0;
	while (src[count])
		count++;
	if (count == 0 || !src[0][0]) {
		free(words);
		return msb_node_error(err, n, MSB_E_CONFIG,
				      "run_code needs a program (e.g. python3 or [sh])");
	}
	inst->run_code = calloc(count + 1, sizeof *inst->run_code);
	for (size_t i = 0; inst->run_code && i < count; i++)
		if (!(inst->run_code[i] = strdup(src[i]))) {
			free(words);
			return msb_error_set(err, MSB_E_NOMEM, "out of memory");
		}
	free(words);
	if (!inst->run_code)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	inst->config.agent.run_code = (const char *const *)inst->run_code;
	return MSB_OK;
}

static msb_errc read_strings(msb_backend_instance *inst, const msb_node *config, msb_error *err)
{
	const char *state = NULL, *agent_path = NULL, *path_env = NULL;
	msb_errc rc = msb_node_string(config, "state_dir", &state, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "agent", &agent_path, err);
	if (rc == MSB_OK)
		rc = msb_node_string(config, "path", &path_env, err);
	if (rc != MSB_OK)
		return rc;
	if (state && state[0] != '/')
		return msb_node_error(err, msb_node_get(config, "state_dir"), MSB_E_CONFIG,
				      "state_dir must be an absolute path, not '%s'", state);
	if (agent_path && agent_path[0] != '/')
		return msb_node_error(err, msb_node_get(config, "agent"), MSB_E_CONFIG,
				      "agent must be an absolute path, not '%s'", agent_path);
	msb_driver_config *c = &inst->config;
	c->state_dir = state ? strdup(state) : default_state_dir(inst->boundary.name);
	c->agent_path = strdup(agent_path ? agent_path : msb_agent_binary());
	if (path_env)
		c->agent.path_env = strdup(path_env);
	if (!c->state_dir || !c->agent_path || (path_env && !c->agent.path_env))
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	/* A trailing slash would double in every path built below. */
	size_t n = strlen(c->state_dir);
	while (n > 1 && c->state_dir[n - 1] == '/')
		c->state_dir[--n] = '\0';
	if (n > STATE_DIR_MAX)
		return msb_error_set(err, MSB_E_CONFIG,
				     "backend %s: state_dir %s is %zu bytes; a sandbox's socket under it "
				     "would not fit a unix socket address (at most %zu bytes)",
				     inst->boundary.name, c->state_dir, n, (size_t)STATE_DIR_MAX);
	return MSB_OK;
}

static msb_errc read_numbers(msb_backend_instance *inst, const msb_node *config, msb_error *err)
{
	msb_agent_config *a = &inst->config.agent;
	uint64_t max_output = a->default_max_output;
	msb_errc rc = msb_node_seconds(config, "timeout", &a->default_timeout, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "max_output", &max_output, err);
	if (rc == MSB_OK)
		rc = msb_node_seconds(config, "start_timeout", &inst->config.start_timeout, err);
	if (rc == MSB_OK)
		rc = msb_node_uint(config, "rlimit_cpu", &a->rlimits.cpu_seconds, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "rlimit_as", &a->rlimits.as_bytes, err);
	if (rc == MSB_OK)
		rc = msb_node_uint(config, "rlimit_nofile", &a->rlimits.nofile, err);
	if (rc == MSB_OK)
		rc = msb_node_uint(config, "rlimit_nproc", &a->rlimits.nproc, err);
	if (rc == MSB_OK)
		rc = msb_node_size(config, "rlimit_fsize", &a->rlimits.fsize_bytes, err);
	if (rc != MSB_OK)
		return rc;
	if (max_output > MSB_AGENT_MAX_OUTPUT)
		return msb_node_error(err, msb_node_get(config, "max_output"), MSB_E_CONFIG,
				      "max_output of %llu bytes is over the agent's %llu-byte "
				      "per-stream ceiling", (unsigned long long)max_output,
				      (unsigned long long)MSB_AGENT_MAX_OUTPUT);
	a->default_max_output = max_output;
	if (!(a->default_timeout > 0))
		return msb_node_error(err, msb_node_get(config, "timeout"), MSB_E_CONFIG,
				      "timeout must be a positive duration");
	/* 0 would fail every start at once, naming a wait that never happened. */
	if (!(inst->config.start_timeout > 0))
		return msb_node_error(err, msb_node_get(config, "start_timeout"), MSB_E_CONFIG,
				      "start_timeout must be a positive duration");
	return MSB_OK;
}

msb_errc driver_config_parse(msb_backend_instance *inst, const msb_node *config,
			     const char *const *extra_keys, msb_error *err)
{
	static const char *const common[] = { MSB_DRIVER_CONFIG_KEYS };
	size_t n_common = sizeof common / sizeof common[0], n_extra = 0;
	while (extra_keys && extra_keys[n_extra])
		n_extra++;
	const char **allowed = calloc(n_common + n_extra + 1, sizeof *allowed);
	if (!allowed)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	memcpy(allowed, common, sizeof common);
	for (size_t i = 0; i < n_extra; i++)
		allowed[n_common + i] = extra_keys[i];
	inst->config.agent = (msb_agent_config)MSB_AGENT_CONFIG_INIT;
	inst->config.start_timeout = 10.0;
	msb_errc rc = MSB_OK;
	if (config)
		rc = msb_node_check_keys(config, allowed, err);
	free(allowed);
	if (rc == MSB_OK)
		rc = read_strings(inst, config, err);
	if (rc == MSB_OK)
		rc = read_numbers(inst, config, err);
	if (rc == MSB_OK)
		rc = read_run_code(inst, config, err);
	if (rc == MSB_OK)
		rc = msb_egress_config_read(config, &inst->config.egress, err);
	if (rc == MSB_OK)
		rc = mkdirs(inst->config.state_dir, err);
	if (rc == MSB_OK)
		rc = check_owned(inst->config.state_dir, err);
	if (rc == MSB_OK)
		rc = canonical_state_dir(inst, err);
	return rc;
}

void driver_config_free(msb_backend_instance *inst)
{
	free(inst->config.state_dir);
	free(inst->config.agent_path);
	free((char *)inst->config.agent.path_env);
	for (char **p = inst->run_code; p && *p; p++)
		free(*p);
	free(inst->run_code);
	msb_egress_config_free(&inst->config.egress);
}
