/*
 * bench_router.c — what routing costs a host per call.
 *
 *   ensure_can_serve, fixed selection, one backend, a spec that passes every check
 *   per_spec over 64 backends where only the last passes (63 refusals, none formatted)
 *   acquire of a warm sandbox (the get of get-or-create: table lookup, handle, spec copy)
 *
 * Baseline, measured in the same run: msb_spec_init of the spec being checked — what a
 * host already pays to say what it wants. Median of 7 rounds; ns per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msb/config.h>
#include <msb/msb.h>

#include "bench_stats.h"
#include "msb_test.h"

#define ROUNDS 7

static void die(const char *what, msb_error *err)
{
	fprintf(stderr, "bench_router: %s: %s\n", what, msb_error_message(err));
	exit(1);
}

static volatile int sink;

static double bench_spec_init(long n)
{
	msb_spec spec;
	double t = bench_now_ns();
	for (long i = 0; i < n; i++) {
		msb_spec_init(&spec, "bench");
		sink += (int)spec.egress;
	}
	return (bench_now_ns() - t) / (double)n;
}

static double bench_serve(msb_router *r, const msb_spec *spec, const msb_backend *want, long n)
{
	msb_error err = MSB_ERROR_INIT;
	const msb_backend *chosen = NULL;
	double t = bench_now_ns();
	for (long i = 0; i < n; i++)
		if (msb_router_ensure_can_serve(r, spec, &chosen, &err) != MSB_OK || chosen != want)
			die("ensure_can_serve", &err);
	return (bench_now_ns() - t) / (double)n;
}

static double bench_acquire(msb_router *r, const msb_key *key, const msb_spec *spec, long n)
{
	msb_error err = MSB_ERROR_INIT;
	double t = bench_now_ns();
	for (long i = 0; i < n; i++) {
		msb_sandbox *sb = NULL;
		if (msb_router_acquire(r, key, spec, &sb, &err) != MSB_OK)
			die("acquire", &err);
		msb_sandbox_release(sb);
	}
	return (bench_now_ns() - t) / (double)n;
}

int main(void)
{
	msb_error err = MSB_ERROR_INIT;
	msb_loader *loader = NULL;
	const msb_plugin *plugin = NULL;
	if (msb_loader_new(&loader, &err) ||
	    msb_loader_load(loader, MSB_TEST_MODULE("plugins/inprocess", "inprocess"), &plugin, &err))
		die("load inprocess", &err);
	static const char refusing[] = "egress_modes: [allowlist]\n", serving[] = "egress_modes: [closed]\n";
	msb_config_doc *docs[2];
	if (msb_config_doc_parse(refusing, strlen(refusing), "<bench>", &docs[0], &err) ||
	    msb_config_doc_parse(serving, strlen(serving), "<bench>", &docs[1], &err))
		die("config", &err);
	enum { N_BACKENDS = 64 };
	msb_backend *backends[N_BACKENDS];
	for (int i = 0; i < N_BACKENDS; i++)
		if (msb_backend_open(plugin, msb_config_doc_root(docs[i == N_BACKENDS - 1]), NULL, NULL,
				     &backends[i], &err))
			die("open", &err);

	msb_router_options o = MSB_ROUTER_OPTIONS_INIT;
	o.min_isolation = MSB_ISO_NONE;
	msb_router *one = NULL, *many = NULL;
	if (msb_router_new(&backends[N_BACKENDS - 1], 1, &o, &one, &err))
		die("router", &err);
	o.selection = MSB_SELECTION_PER_SPEC;
	if (msb_router_new(backends, N_BACKENDS, &o, &many, &err))
		die("router", &err);
	msb_spec spec;
	msb_spec_init(&spec, "bench");
	msb_key key = { "scope", "thread", "agent", "" };

	double base[ROUNDS], serve[ROUNDS], routed[ROUNDS], warm[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		base[r] = bench_spec_init(2000000);
		serve[r] = bench_serve(one, &spec, backends[N_BACKENDS - 1], 2000000);
		routed[r] = bench_serve(many, &spec, backends[N_BACKENDS - 1], 200000);
		warm[r] = bench_acquire(one, &key, &spec, 200000);
	}
	double b = bench_median(base, ROUNDS), s = bench_median(serve, ROUNDS);
	double p = bench_median(routed, ROUNDS), w = bench_median(warm, ROUNDS);
	printf("baseline msb_spec_init:                       %8.1f ns/call\n", b);
	printf("ensure_can_serve, fixed, 1 backend:           %8.1f ns/call  (%.1fx baseline; target < 100 ns)\n", s, s / b);
	printf("ensure_can_serve, per_spec, 64 (last serves): %8.1f ns/call  (%.1fx baseline; target < 2000 ns)\n", p, p / b);
	printf("acquire of a warm sandbox, 1 backend:         %8.1f ns/call  (%.1fx baseline)\n", w, w / b);

	msb_router_dispose(one, &key, NULL);
	msb_router_free(one);
	msb_router_free(many);
	for (int i = 0; i < N_BACKENDS; i++)
		msb_backend_close(backends[i]);
	msb_config_doc_free(docs[0]);
	msb_config_doc_free(docs[1]);
	msb_loader_free(loader);
	return 0;
}
