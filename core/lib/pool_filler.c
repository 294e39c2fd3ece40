/*
 * pool_filler.c — the background filler a long-lived host starts (msb_pool_start): one
 * thread that fills every wanted blueprint at once, then again whenever an acquire took an
 * entry (pool_take kicks it) or `interval` seconds passed, so a failed start is retried
 * without a busy loop. Stopping waits for the start under way: a sandbox half-started by a
 * thread nobody joins would be listed after its host thought the pool quiet.
 */
#include <errno.h>
#include <time.h>

#include "pool_internal.h"

static void *filler_main(void *arg)
{
	msb_pool *p = arg;
	for (;;) {
		msb_pool_report r;
		msb_error err = MSB_ERROR_INIT;
		if (msb_pool_fill(p, &r, &err) != MSB_OK && !atomic_load(&p->stopping))
			router_warn(p->router, "pool: the background fill failed (%llu start%s): %s",
				  (unsigned long long)r.failed, r.failed == 1 ? "" : "s",
				  msb_error_message(&err));
		msb_error_clear(&err);
		pthread_mutex_lock(&p->lock);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		double whole = (double)(long)p->interval;
		until.tv_sec += (time_t)whole;
		until.tv_nsec += (long)((p->interval - whole) * 1e9);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		int rc = 0;
		while (!p->kicked && !atomic_load(&p->stopping) && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&p->wake, &p->lock, &until);
		p->kicked = false;
		bool stop = atomic_load(&p->stopping);
		pthread_mutex_unlock(&p->lock);
		if (stop)
			return NULL;
	}
}

msb_errc msb_pool_start(msb_pool *p, double interval, msb_error *err)
{
	if (!(interval > 0) || interval > 86400)
		return msb_error_set(err, MSB_E_VALUE, "pool: refused filler interval %g s: it must be "
				     "above 0 and at most a day", interval);
	pthread_mutex_lock(&p->lock);
	msb_errc rc = MSB_OK;
	if (p->started) {
		rc = msb_error_set(err, MSB_E_VALUE, "pool: the filler is already running");
	} else {
		p->interval = interval;
		p->kicked = false;
		atomic_store(&p->stopping, false);
		int e = pthread_create(&p->filler, NULL, filler_main, p);
		if (e)
			rc = msb_error_set_errno(err, MSB_E_OS, e, "pool: cannot start the filler thread");
		else
			p->started = true;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void msb_pool_stop(msb_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	bool started = p->started;
	atomic_store(&p->stopping, true);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (started)
		pthread_join(p->filler, NULL);
	pthread_mutex_lock(&p->lock);
	p->started = false;
	atomic_store(&p->stopping, false);
	pthread_mutex_unlock(&p->lock);
}
