/*
 * cli_session.c — what every sandbox subcommand (exec, put, get, ls, rm, run-code, collect)
 * does first: load, route, acquire. The key comes from the command line here because the
 * operator running msb is the host; a host embedding libmsb reads it from its own request
 * context instead, never from model input.
 *
 * Progress: acquiring may boot a microVM (seconds under TCG). On a terminal, an acquire
 * still running after half a second says so on stderr, once; in a pipe nothing is printed,
 * so scripted output stays exactly the guest's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int msb_cli_key_option(msb_cli_key *key, int c, const char *arg)
{
	switch (c) {
	case 'S': key->scope = arg; return 1;
	case 'T': key->thread = arg; return 1;
	case 'A': key->agent = arg; return 1;
	case 'C': key->call = arg; return 1;
	default: return 0;
	}
}

int msb_cli_key_check(const msb_cli_key *key)
{
	if (!key->scope || !*key->scope || !key->thread || !*key->thread)
		return msb_cli_usage_error("--scope and --thread are required: together they name the "
					   "conversation the sandbox belongs to");
	return 0;
}

int msb_cli_file_options(int argc, char **argv, const char *usage, const char *flag,
			 char flag_short, msb_cli_file_args *out)
{
	enum { OPT_WORKDIR = 0x2000, OPT_FLAG };
	/* With no flag its entry has no name: it ends the table. */
	const struct option longopts[] = { MSB_CLI_COMMON_LONGOPTS, MSB_CLI_KEY_LONGOPTS,
					   { "workdir", required_argument, NULL, OPT_WORKDIR },
					   { flag, no_argument, NULL, OPT_FLAG }, { 0 } };
	char shorts[] = { 'c', ':', 'h', flag_short, '\0' };
	*out = (msb_cli_file_args){ 0 };
	for (int c; (c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1;) {
		if (msb_cli_key_option(&out->key, c, optarg))
			continue;
		if (c == OPT_WORKDIR)
			out->workdir = optarg;
		else if (c == OPT_FLAG || (flag_short && c == flag_short))
			out->flag = true;
		else if (msb_cli_common_option(c, usage) != 1)
			return msb_cli_usage_error("unknown option");
	}
	return 0;
}

typedef struct progress {
	pthread_mutex_t lock;
	pthread_cond_t done_cv;
	bool done;
	const char *kind, *backend;
} progress;

static void *progress_main(void *arg)
{
	progress *p = arg;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 500 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->lock);
	while (!p->done)
		if (pthread_cond_timedwait(&p->done_cv, &p->lock, &until) != 0)
			break;
	if (!p->done)
		fprintf(stderr, "msb: starting a '%s' sandbox on %s (booting…)\n", p->kind, p->backend);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static msb_errc acquire(msb_cli_session *s, msb_error *err)
{
	const msb_backend *chosen = NULL;
	msb_cli.stage = "route";
	msb_errc rc = msb_router_ensure_can_serve(s->router, s->spec, &chosen, err);
	if (rc != MSB_OK)
		return rc;
	msb_cli.stage = "acquire";
	progress p = { .kind = s->spec->kind, .backend = msb_backend_name(chosen) };
	pthread_t thread;
	bool watching = isatty(STDERR_FILENO) && !msb_cli.json;
	if (watching) {
		pthread_mutex_init(&p.lock, NULL);
		pthread_cond_init(&p.done_cv, NULL);
		watching = pthread_create(&thread, NULL, progress_main, &p) == 0;
	}
	rc = msb_router_acquire(s->router, &s->key, s->spec, &s->sandbox, err);
	if (watching) {
		pthread_mutex_lock(&p.lock);
		p.done = true;
		pthread_cond_signal(&p.done_cv);
		pthread_mutex_unlock(&p.lock);
		pthread_join(thread, NULL);
		pthread_cond_destroy(&p.done_cv);
		pthread_mutex_destroy(&p.lock);
	}
	if (rc == MSB_OK)
		msb_cli.stage = "call";
	return rc;
}

msb_errc msb_cli_session_open(msb_cli_session *s, const char *kind, const msb_cli_key *key,
			      msb_error *err)
{
	memset(s, 0, sizeof *s);
	s->key = (msb_key){ key->scope, key->thread, key->agent ? key->agent : "", key->call ? key->call : "" };
	msb_errc rc = msb_cli_load(true, NULL, &s->cfg, err);
	if (rc == MSB_OK)
		rc = msb_config_spec_find(s->cfg, kind, &s->spec, err);
	/* A fork of a snapshot: routed only to a backend that declares `snapshot`. */
	if (rc == MSB_OK && key->from) {
		s->forked = *s->spec;
		s->forked.from_snapshot = key->from;
		s->spec = &s->forked;
	}
	if (rc == MSB_OK)
		rc = msb_cli_router(s->cfg, &s->router, err);
	if (rc == MSB_OK)
		rc = acquire(s, err);
	if (rc != MSB_OK)
		msb_cli_session_close(s);
	return rc;
}

void msb_cli_session_close(msb_cli_session *s)
{
	msb_sandbox_release(s->sandbox);
	msb_router_free(s->router);
	msb_config_free(s->cfg);
	memset(s, 0, sizeof *s);
}
