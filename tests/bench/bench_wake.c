/*
 * bench_wake.c — what it costs to wake a process on another CPU that is idle, against
 * waking one on the waker's own CPU: the figure behind msb_spawn_pin_here (msb/spawn.h).
 *
 * Two processes play ping-pong over pipes, each pinned: the waker on CPU 0, the sleeper
 * on CPU 0 (baseline) or on another CPU. Rounds are 2 ms apart, so the other CPU has gone
 * idle by each round, as a vCPU has between a host's system calls and a sandbox's start.
 * Prints the median one-way wake-up (write to the sleeper's first instruction after read)
 * and round trip of each, interleaved round by round, and their ratio.
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"

#define ROUNDS 201

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		perror("bench_wake: sched_setaffinity");
		exit(1);
	}
}

typedef struct sleeper {
	pid_t pid;
	int ping, pong; /* the write end towards it, the read end back from it */
} sleeper;

/* A process on `cpu` that answers each timestamp with how long it took to wake. */
static sleeper sleeper_start(int cpu)
{
	int to[2], from[2];
	if (pipe(to) || pipe(from)) {
		perror("bench_wake: pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(to[1]);
		close(from[0]);
		pin(cpu);
		double sent;
		while (read(to[0], &sent, sizeof sent) == (ssize_t)sizeof sent) {
			double woke = bench_now_ms() - sent;
			if (write(from[1], &woke, sizeof woke) != (ssize_t)sizeof woke)
				break;
		}
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	return (sleeper){ pid, to[1], from[0] };
}

/* By its pid: the other sleeper, forked later, holds a copy of this one's pipe ends. */
static void sleeper_stop(sleeper *s)
{
	close(s->ping);
	close(s->pong);
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
}

/* One round: the one-way wake-up and the round trip, in microseconds. */
static void round_trip(const sleeper *s, double *wake, double *rt)
{
	struct timespec gap = { 0, 2 * 1000 * 1000 };
	nanosleep(&gap, NULL);
	double sent = bench_now_ms();
	double woke = 0;
	if (write(s->ping, &sent, sizeof sent) != (ssize_t)sizeof sent ||
	    read(s->pong, &woke, sizeof woke) != (ssize_t)sizeof woke) {
		perror("bench_wake: ping-pong");
		exit(1);
	}
	*rt = (bench_now_ms() - sent) * 1000;
	*wake = woke * 1000;
}

int main(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("skip: one CPU, nothing to wake elsewhere\n");
		return 0;
	}
	pin(0);
	sleeper same = sleeper_start(0), other = sleeper_start(1);
	static double ws[ROUNDS], rs[ROUNDS], wo[ROUNDS], ro[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		round_trip(&same, &ws[r], &rs[r]);
		round_trip(&other, &wo[r], &ro[r]);
	}
	sleeper_stop(&same);
	sleeper_stop(&other);
	double w0 = bench_median(ws, ROUNDS), w1 = bench_median(wo, ROUNDS);
	printf("(median of %d interleaved rounds, 2 ms apart)\n", ROUNDS);
	printf("wake-up, same CPU                %7.1f us   round trip %7.1f us\n", w0,
	       bench_median(rs, ROUNDS));
	printf("wake-up, another (idle) CPU      %7.1f us   round trip %7.1f us   %.1fx\n", w1,
	       bench_median(ro, ROUNDS), w1 / w0);
	return 0;
}
