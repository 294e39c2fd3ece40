/*
 * egress_log.c — what the backend under test reported about egress, for the egress suite:
 * msb_conformance_run_file opens the backend with this host, so every decision its
 * enforcement reports (egress_decided / egress_observed) lands here, one line each, and a
 * case can wait (bounded) for the line its probe should have caused.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <msb/observer.h>

#include "egress_log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char text[32768];
static size_t len;

static void record(const char *destination, bool allowed, const char *reason)
{
	pthread_mutex_lock(&lock);
	/* Oldest lines go first: a long run keeps only its recent decisions. */
	if (len > sizeof text / 2) {
		memmove(text, text + len / 2, len - len / 2);
		len -= len / 2;
		text[len] = '\0';
	}
	int n = snprintf(text + len, sizeof text - len, "%s %s (%s)\n", allowed ? "ALLOW" : "DENY",
			 destination ? destination : "?", reason ? reason : "-");
	if (n > 0 && (size_t)n < sizeof text - len)
		len += (size_t)n;
	pthread_mutex_unlock(&lock);
}

static void on_observed(void *ctx, const msb_key *key, const char *dest, bool allowed)
{
	(void)ctx, (void)key;
	record(dest, allowed, NULL);
}

static void on_decided(void *ctx, const msb_key *key, const char *dest, bool allowed,
		       const char *reason)
{
	(void)ctx, (void)key;
	record(dest, allowed, reason);
}

static void on_log(void *ctx, msb_log_level level, const char *message)
{
	(void)ctx;
	if (level >= MSB_LOG_WARNING)
		fprintf(stderr, "msb conformance: backend: %s\n", message ? message : "");
}

const msb_host *conf_egress_host(void)
{
	static const msb_host host = { (uint32_t)sizeof(msb_host), NULL, on_log, on_observed,
				       on_decided };
	return &host;
}

void conf_egress_log_clear(void)
{
	pthread_mutex_lock(&lock);
	len = 0;
	text[0] = '\0';
	pthread_mutex_unlock(&lock);
}

bool conf_egress_log_wait(const char *needle, int ms)
{
	for (int waited = 0;; waited += 20) {
		pthread_mutex_lock(&lock);
		bool hit = strstr(text, needle) != NULL;
		pthread_mutex_unlock(&lock);
		if (hit)
			return true;
		if (waited >= ms)
			return false;
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
}
