/*
 * cli_egress.c — `msb exec -v`: every egress decision the backend reports (EgressObserved),
 * printed on stderr as it arrives — a line each, or a JSON object a line with --json, so
 * stdout stays the command's own.
 *
 * Destinations are guest-chosen text: they go out through the same escaping as any other
 * guest text (msb_cli_put_text / msb_json_string), never raw onto a terminal.
 */
#include <pthread.h>
#include <stdio.h>

#include <msb/observer.h>

#include "cli.h"

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static int print_decision(void *ctx, const msb_egress_observed *e)
{
	(void)ctx;
	pthread_mutex_lock(&print_lock);
	if (msb_cli.json) {
		fputs("{\"event\": \"EgressObserved\", \"destination\": ", stderr);
		msb_json_string(stderr, e->destination ? e->destination : "");
		fprintf(stderr, ", \"decision\": \"%s\", \"reason\": ", e->allowed ? "ALLOW" : "DENY");
		if (e->reason)
			msb_json_string(stderr, e->reason);
		else
			fputs("null", stderr);
		fputs("}\n", stderr);
	} else {
		fprintf(stderr, "msb: egress: %s ", e->allowed ? "allowed" : "denied");
		msb_cli_put_text(stderr, e->destination ? e->destination : "", false);
		if (e->reason) {
			fputs(": ", stderr);
			msb_cli_put_text(stderr, e->reason, false);
		}
		fputc('\n', stderr);
	}
	fflush(stderr);
	pthread_mutex_unlock(&print_lock);
	return 0;
}

static msb_observer egress_observer = MSB_OBSERVER_INIT;
static msb_host egress_host;

void msb_cli_egress_options(msb_config_options *opts)
{
	if (!msb_cli.egress_verbose)
		return;
	egress_observer.egress_observed = print_decision;
	msb_host_init(&egress_host, &egress_observer);
	opts->host = &egress_host;
	opts->observer = &egress_observer;
}
