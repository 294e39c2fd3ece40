/*
 * exec_floor.c — a static program the gvisor and qemu benchmarks copy into a live sandbox
 * and run there: `exec_floor N PROGRAM` starts PROGRAM (found on the PATH, as the agent
 * finds a command) N times, each vfork + execvp + waitpid with nothing else around it, and
 * prints the median ms of one. Set beside the warm `exec` round trip of the same run it
 * splits that figure into what any process start costs inside the boundary (a TCG guest's
 * kernel, gVisor's Sentry under ptrace) and what msb adds on top.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One start of `argv[0]` to its exit; ms, or -1 when it could not run or failed. */
static double one(char *const *argv)
{
	double t0 = now_ms();
	pid_t pid = vfork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	int n = argc == 3 ? atoi(argv[1]) : 0;
	if (n < 1 || n > 10000) {
		fprintf(stderr, "usage: exec_floor N PROGRAM (1 <= N <= 10000)\n");
		return 2;
	}
	double *t = calloc((size_t)n, sizeof *t);
	if (!t)
		return 1;
	char *const prog[] = { argv[2], NULL };
	for (int i = 0; i < 10; i++)
		one(prog); /* the first starts touch pages the steady state finds in place */
	for (int i = 0; i < n; i++)
		if ((t[i] = one(prog)) < 0) {
			fprintf(stderr, "exec_floor: %s failed\n", argv[2]);
			return 1;
		}
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	printf("%.3f\n", n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2);
	free(t);
	return 0;
}
