/*
 * resolver.c — the proxy's name resolution, off its event loop: getaddrinfo blocks for as
 * long as the host's resolver takes (seconds for a name whose server does not answer), and
 * one such name resolved in the loop would stall every connection of every sandbox.
 *
 * A fixed pool of EG_RESOLVER_THREADS threads takes requests from a bounded queue
 * (EG_RESOLVER_QUEUE; a request beyond it is refused at once: the loop reports "busy"),
 * and hands each answer back through a queue the loop drains when its wake pipe says so.
 * The loop alone bounds how long it waits (egress_resolve_timeout): an answer that comes
 * after its connection gave up finds no one and is dropped. A thread cannot be interrupted
 * inside getaddrinfo, so the pool is not joined: the last thread to leave frees it, and it
 * holds a copy of the config of its own, never the proxy's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress_internal.h"

typedef struct eg_request {
	uint64_t id;
	char name[256];
	unsigned port;
} eg_request;

struct eg_resolver {
	pthread_mutex_t lock;
	pthread_cond_t more;
	msb_egress_config cfg;
	int wake_fd;             /* the loop's wake pipe (written, never closed here) */
	eg_request queue[EG_RESOLVER_QUEUE];
	size_t q_head, q_len;
	eg_resolved done[EG_RESOLVER_QUEUE + EG_RESOLVER_THREADS];
	size_t d_len;
	size_t busy;             /* requests taken, not yet answered */
	unsigned refs;           /* the owner and each thread still running */
	bool stop;
};

static void release(eg_resolver *r)
{
	bool last = --r->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (!last)
		return;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->more);
	msb_egress_config_free(&r->cfg);
	free(r);
}

static void *worker(void *arg)
{
	eg_resolver *r = arg;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->stop && !r->q_len)
			pthread_cond_wait(&r->more, &r->lock);
		if (r->stop)
			break;
		eg_request q = r->queue[r->q_head];
		r->q_head = (r->q_head + 1) % EG_RESOLVER_QUEUE;
		r->q_len--;
		r->busy++;
		pthread_mutex_unlock(&r->lock);
		eg_resolved a = { .id = q.id };
		a.ok = msb_egress_resolve(&r->cfg, q.name, q.port, &a.sa, &a.len, a.why, sizeof a.why);
		pthread_mutex_lock(&r->lock);
		r->busy--;
		if (r->stop)
			break;
		/* Room always: at most QUEUE waiting plus THREADS in hand were ever accepted. */
		r->done[r->d_len++] = a;
		(void)!write(r->wake_fd, "r", 1);
	}
	release(r);
	return NULL;
}

eg_resolver *eg_resolver_new(const msb_egress_config *cfg, int wake_fd)
{
	eg_resolver *r = calloc(1, sizeof *r);
	if (!r || eg_config_copy(&r->cfg, cfg) != MSB_OK) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->more, NULL);
	r->wake_fd = wake_fd;
	r->refs = 1;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < EG_RESOLVER_THREADS; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, worker, r) == 0)
			r->refs++;
	}
	bool none = r->refs == 1;
	pthread_mutex_unlock(&r->lock);
	pthread_attr_destroy(&attr);
	if (none) {
		eg_resolver_free(r);
		return NULL;
	}
	return r;
}

bool eg_resolver_submit(eg_resolver *r, uint64_t id, const char *name, unsigned port)
{
	pthread_mutex_lock(&r->lock);
	/* Answers not yet taken count too: the done queue must always have room. */
	bool room = r->q_len + r->busy + r->d_len < EG_RESOLVER_QUEUE;
	if (room) {
		eg_request *q = &r->queue[(r->q_head + r->q_len) % EG_RESOLVER_QUEUE];
		q->id = id;
		snprintf(q->name, sizeof q->name, "%s", name);
		q->port = port;
		r->q_len++;
		pthread_cond_signal(&r->more);
	}
	pthread_mutex_unlock(&r->lock);
	return room;
}

bool eg_resolver_take(eg_resolver *r, eg_resolved *out)
{
	pthread_mutex_lock(&r->lock);
	bool got = r->d_len > 0;
	if (got) {
		*out = r->done[0];
		memmove(r->done, r->done + 1, --r->d_len * sizeof *r->done);
	}
	pthread_mutex_unlock(&r->lock);
	return got;
}

void eg_resolver_free(eg_resolver *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->more);
	release(r);
}
