/*
 * config.c — turning an msb_agent_config into msb-agent's command line, and finding the binary.
 *
 * One place spells the agent's flags, so a backend never builds them by hand and a flag
 * renamed here cannot leave a boundary driver passing the old one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/agent.h>

#define MAX_FLAGS 640 /* room for 250 egress names */

typedef struct argv_builder {
	const char *items[MAX_FLAGS * 2];
	char owned[MAX_FLAGS][32]; /* numbers formatted here */
	size_t n, n_owned;
	bool overflow;
} argv_builder;

static void add(argv_builder *b, const char *s)
{
	if (b->n + 1 >= sizeof b->items / sizeof b->items[0]) {
		b->overflow = true;
		return;
	}
	b->items[b->n++] = s;
}

static void add_num(argv_builder *b, const char *flag, const char *fmt, double d, uint64_t u)
{
	if (b->n_owned >= MAX_FLAGS) {
		b->overflow = true;
		return;
	}
	char *slot = b->owned[b->n_owned++];
	if (fmt[1] == 'g')
		snprintf(slot, 32, "%.3f", d);
	else
		snprintf(slot, 32, "%llu", (unsigned long long)u);
	add(b, flag);
	add(b, slot);
}

static void add_limit(argv_builder *b, const char *flag, uint64_t v)
{
	if (v)
		add_num(b, flag, "%u", 0, v);
}

msb_errc msb_agent_config_argv(const char *binary, const char *mode, const char *mode_arg,
			       const msb_agent_config *c, int ready_fd, char ***argv,
			       msb_error *err)
{
	if (!binary || !mode || !mode_arg)
		return msb_error_set(err, MSB_E_VALUE,
				     "agent config refused: the binary, mode and mode argument are required");
	if (!c->work_dir || c->work_dir[0] != '/')
		return msb_error_set(err, MSB_E_VALUE,
				     "agent config refused: work_dir must be an absolute path");
	argv_builder *b = calloc(1, sizeof *b);
	if (!b)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory building the agent's argv");
	add(b, binary);
	add(b, mode);
	add(b, mode_arg);
	add(b, "--work-dir");
	add(b, c->work_dir);
	if (c->work_alias) {
		add(b, "--work-alias");
		add(b, c->work_alias);
	}
	if (c->default_timeout > 0)
		add_num(b, "--timeout", "%g", c->default_timeout, 0);
	add_limit(b, "--max-output", c->default_max_output);
	for (const char *const *r = c->run_code; r && *r; r++) {
		add(b, "--run-code");
		add(b, *r);
	}
	add_limit(b, "--rlimit-cpu", c->rlimits.cpu_seconds);
	add_limit(b, "--rlimit-as", c->rlimits.as_bytes);
	add_limit(b, "--rlimit-nofile", c->rlimits.nofile);
	add_limit(b, "--rlimit-nproc", c->rlimits.nproc);
	add_limit(b, "--rlimit-fsize", c->rlimits.fsize_bytes);
	if (c->path_env) {
		add(b, "--path");
		add(b, c->path_env);
	}
	for (const char *const *e = c->image_env; e && *e; e++) {
		add(b, "--env");
		add(b, *e);
	}
	if (c->uid >= 0)
		add_num(b, "--uid", "%u", 0, (uint64_t)c->uid);
	if (c->gid >= 0)
		add_num(b, "--gid", "%u", 0, (uint64_t)c->gid);
	if (ready_fd >= 0)
		add_num(b, "--ready-fd", "%u", 0, (uint64_t)ready_fd);
	if (c->egress_socket) {
		add(b, "--egress-socket");
		add(b, c->egress_socket);
		for (const char *const *n = c->egress_names; n && *n; n++) {
			add(b, "--egress-name");
			add(b, *n);
		}
		for (size_t i = 0; i < c->n_egress_ports; i++)
			add_num(b, "--egress-port", "%u", 0, c->egress_ports[i]);
	}
	if (b->overflow) {
		free(b);
		return msb_error_set(err, MSB_E_VALUE, "agent config refused: too many flags");
	}
	/* One allocation: the pointer array, then every string. */
	size_t bytes = (b->n + 1) * sizeof(char *);
	for (size_t i = 0; i < b->n; i++)
		bytes += strlen(b->items[i]) + 1;
	char **out = malloc(bytes);
	if (!out) {
		free(b);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory building the agent's argv");
	}
	char *p = (char *)(out + b->n + 1);
	for (size_t i = 0; i < b->n; i++) {
		size_t len = strlen(b->items[i]) + 1;
		memcpy(p, b->items[i], len);
		out[i] = p;
		p += len;
	}
	out[b->n] = NULL;
	free(b);
	*argv = out;
	return MSB_OK;
}

const char *msb_agent_binary(void)
{
	const char *env = getenv("MSB_AGENT");
	if (env && *env)
		return env;
	return MSB_LIBEXECDIR "/" MSB_AGENT_BINARY;
}
