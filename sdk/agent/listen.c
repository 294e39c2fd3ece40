/*
 * listen.c — the agent's supervisor for --listen and --listen-fd: every connection is
 * served by a process of its own, so one slow exec never blocks another request and a crash
 * while serving one loses that connection, not the sandbox.
 *
 * The process for the next connection is forked *before* anyone connects: one child, the
 * acceptor, always waits in accept(). For a host that connects once the agent said it is
 * ready, the fork (0.1 ms here) is then not between its connect and the answer (one that
 * queued its connection before the agent ran still waits for that first fork). An acceptor
 * that has its connection writes its pid on a pipe to the supervisor, which forks the next
 * acceptor while the first one serves. An acceptor that dies first (killed, or a
 * fork refused by the pids limit) is replaced once it is reaped; while there is none,
 * connections wait in the listen queue and the fork is retried. Every acceptor dies with the
 * supervisor, which owns what its connection starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_internal.h"

/* How long the supervisor sleeps when nothing happens: the pace of reaping and of retries. */
#define IDLE_POLL_MS 200

static _Noreturn void serve_connection(int c)
{
	bool shutdown = false;
	agent_serve_stream(c, c, &shutdown);
	if (shutdown)
		kill(agent.supervisor, SIGTERM);
	_exit(0);
}

/*
 * In the acceptor: wait for a connection, say so, serve it. Never returns. It dies with the
 * supervisor: without one, nothing would reap or end what its connection starts.
 */
static _Noreturn void accept_and_serve(int lfd, int busy_w, pid_t supervisor)
{
	signal(SIGTERM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/*
	 * What this connection's commands start stays below it, however it detaches, so a
	 * timeout can find and kill it all (agent_tree_kill). Set before accept: no cost on a
	 * request's path. What outlives the connection passes up to the supervisor.
	 */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (getppid() != supervisor)
		_exit(1);
	int c;
	do
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (c < 0 && (errno == EINTR || errno == ECONNABORTED));
	if (c < 0)
		_exit(1);
	pid_t self = getpid();
	ssize_t n = write(busy_w, &self, sizeof self);
	(void)n;
	close(busy_w);
	close(lfd);
	serve_connection(c);
}

/* Fork the next acceptor; 0 when the fork failed (retried on the next round). */
static pid_t fork_acceptor(int lfd, const int busy[2])
{
	pid_t supervisor = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		close(busy[0]);
		accept_and_serve(lfd, busy[1], supervisor);
	}
	return pid > 0 ? pid : 0;
}

int agent_serve_listen(int lfd, int ready_fd)
{
	int busy[2];
	if (pipe2(busy, O_CLOEXEC) != 0)
		return 1;
	fcntl(busy[0], F_SETFL, O_NONBLOCK);
	pid_t idle = fork_acceptor(lfd, busy);
	agent_signal_ready(ready_fd);
	while (!agent_terminating) {
		struct pollfd p = { .fd = busy[0], .events = POLLIN };
		poll(&p, 1, IDLE_POLL_MS);
		/* Messages before reaping: an acceptor that said it is busy and then exited is
		 * not mistaken for an idle one that died. */
		pid_t went_busy;
		while (read(busy[0], &went_busy, sizeof went_busy) == (ssize_t)sizeof went_busy)
			if (went_busy == idle)
				idle = 0;
		if (agent_reap_saw(idle))
			idle = 0;
		if (!idle)
			idle = fork_acceptor(lfd, busy);
	}
	agent_kill_descendants();
	close(busy[0]);
	close(busy[1]);
	return 0;
}
