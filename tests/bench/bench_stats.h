/*
 * bench_stats.h — the clock and the statistic the benchmarks here report by: a monotonic
 * clock in milliseconds or nanoseconds, and the median of a set of samples (sorted in
 * place), so a few slow rounds on a shared machine do not move a figure.
 */
#ifndef MSB_BENCH_STATS_H
#define MSB_BENCH_STATS_H

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

static inline double bench_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0): the middle sample, or the mean of the middle two. */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* fork + exec `true` + wait, no sandbox: the baseline a backend's exec is set against. */
static inline void bench_bare_true(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		execlp("true", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
}

#endif
