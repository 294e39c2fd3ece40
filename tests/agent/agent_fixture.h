/*
 * agent_fixture.h — starting a real msb-agent for a test, and making sure it is gone after.
 *
 * The agent under test is the in-tree static binary; it runs as a child of the test, on a
 * socketpair (--fd) or a unix socket (--listen) in a temporary directory, so no test
 * depends on anything installed.
 */
#ifndef MSB_AGENT_FIXTURE_H
#define MSB_AGENT_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>
#include <msb/driver.h>

#include "msb_test.h"

#define AGENT_BINARY MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"

/* Start the next agent with its standard fds closed, as some launchers leave them. */
static int fixture_close_std;
/* The path --device mode serves (a pty's slave, standing in for a serial port). */
static const char *fixture_device;

typedef struct agent_fixture {
	char dir[64];      /* temporary directory: work/ and the socket live here */
	char work[96];
	char sock[96];
	pid_t pid;
	int fd;            /* --fd mode: the host's end */
	int slot;          /* 1 + its entry in fixture_live, 0 when it has none */
} agent_fixture;

/*
 * Every fixture's directory and agent, so a test that fails half-way (cmocka leaves the
 * test function at the failed assertion) still has them removed and stopped by
 * fixture_stop_all() in teardown. A copy of what that needs, found by the fixture's slot:
 * a test's fixture lives on its stack, which is gone by then, and the next test's may sit
 * at the same address.
 */
typedef struct fixture_entry {
	bool used;
	pid_t pid;
	char dir[64];
} fixture_entry;
static fixture_entry fixture_live[16];

static inline void fixture_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Wait up to `ms` for pid to be gone (a zombie nobody has reaped yet counts as gone). */
static inline int fixture_wait_gone(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 5; i++) {
		if (!msb_driver_pid_running(pid))
			return 1;
		fixture_sleep_ms(5);
	}
	return !msb_driver_pid_running(pid);
}

/* Note f's agent (pid > 0) for fixture_stop_all; its directory was noted when made. */
static inline void fixture_track(const agent_fixture *f, pid_t pid)
{
	if (f->slot > 0 && pid > 0)
		fixture_live[f->slot - 1].pid = pid;
}

static inline void fixture_mkdirs(agent_fixture *f)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/msb-agent-test-XXXXXX");
	if (!mkdtemp(f->dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(f->work, sizeof f->work, "%s/work", f->dir);
	snprintf(f->sock, sizeof f->sock, "%s/agent.sock", f->dir);
	f->slot = 0;
	for (size_t i = 0; i < sizeof fixture_live / sizeof fixture_live[0] && !f->slot; i++)
		if (!fixture_live[i].used) {
			fixture_live[i] = (fixture_entry){ .used = true };
			memcpy(fixture_live[i].dir, f->dir, sizeof f->dir);
			f->slot = (int)i + 1;
		}
}

/*
 * Start the agent. `mode` is "--fd" or "--listen"; `extra` more flags (NULL-terminated).
 * In --listen mode this returns once the agent signalled readiness on --ready-fd.
 */
static inline void fixture_start(agent_fixture *f, const char *mode, const char *const *extra)
{
	memset(f, 0, sizeof *f);
	f->fd = -1;
	fixture_mkdirs(f);
	int sv[2] = { -1, -1 }, ready[2];
	if (!strcmp(mode, "--fd") && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		exit(1);
	if (pipe2(ready, O_CLOEXEC) < 0)
		exit(1);
	f->pid = fork();
	if (f->pid == 0) {
		const char *argv[64];
		int n = 0;
		argv[n++] = AGENT_BINARY;
		argv[n++] = mode;
		/* Park both fds high first, so that neither dup2 below clobbers the other. */
		dup2(ready[1], 50);
		if (sv[1] >= 0)
			dup2(sv[1], 51);
		if (sv[1] >= 0) {
			dup2(51, 3);
			argv[n++] = "3";
		} else if (!strcmp(mode, "--device")) {
			argv[n++] = fixture_device;
		} else {
			argv[n++] = f->sock;
		}
		dup2(50, 4);
		argv[n++] = "--ready-fd";
		argv[n++] = "4";
		argv[n++] = "--work-dir";
		argv[n++] = f->work;
		for (const char *const *e = extra; e && *e && n < 62; e++)
			argv[n++] = *e;
		argv[n] = NULL;
		if (fixture_close_std)
			close(0), close(1), close(2);
		execv(AGENT_BINARY, (char *const *)argv);
		perror("exec msb-agent");
		_exit(127);
	}
	fixture_track(f, f->pid);
	close(ready[1]);
	char b;
	if (read(ready[0], &b, 1) != 1) {
		fprintf(stderr, "msb-agent did not become ready\n");
		exit(1);
	}
	close(ready[0]);
	if (sv[1] >= 0) {
		close(sv[1]);
		f->fd = sv[0];
	}
}

/* End agent `pid`, a child not yet reaped: SIGTERM (it kills what it started), SIGKILL after 2 s. */
static inline void fixture_end(pid_t pid)
{
	kill(pid, SIGTERM);
	for (int i = 0; i < 400; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		fixture_sleep_ms(5);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static inline void fixture_remove_dir(char *dir)
{
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	dir[0] = '\0';
}

/* Stop the agent, reap it, remove the directory. */
static inline void fixture_stop(agent_fixture *f)
{
	if (f->slot > 0)
		fixture_live[f->slot - 1].used = false;
	f->slot = 0;
	if (f->pid > 0)
		fixture_end(f->pid);
	f->pid = 0;
	fixture_remove_dir(f->dir);
}

/* Stop and remove whatever a failed test left. */
static inline void fixture_stop_all(void)
{
	for (size_t i = 0; i < sizeof fixture_live / sizeof fixture_live[0]; i++) {
		fixture_entry *e = &fixture_live[i];
		if (!e->used)
			continue;
		/* Only a child not yet reaped is signalled: its pid cannot have been reused. */
		if (e->pid > 0 && waitpid(e->pid, NULL, WNOHANG) == 0)
			fixture_end(e->pid);
		fixture_remove_dir(e->dir);
		e->used = false;
	}
}

/* A suite's group state: one agent and the host client connected to it. */
typedef struct agent_session {
	agent_fixture fx;
	msb_agent_client *client;
} agent_session;

/* The group setup: an agent on a socketpair (--fd) with `extra` flags, a client on it. */
static inline int agent_session_setup_fd(void **state, const char *const *extra)
{
	agent_session *c = calloc(1, sizeof *c);
	fixture_start(&c->fx, "--fd", extra);
	msb_error err = MSB_ERROR_INIT;
	int fd = c->fx.fd;
	c->fx.fd = -1;
	if (msb_agent_client_open_fds(fd, fd, 10, &c->client, &err) != MSB_OK) {
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
		return -1;
	}
	*state = c;
	return 0;
}

/* The group teardown: close the client, stop the agent and any a failed test left running. */
static inline int agent_session_teardown(void **state)
{
	agent_session *c = *state;
	msb_agent_client_close(c->client);
	fixture_stop(&c->fx);
	fixture_stop_all();
	free(c);
	return 0;
}

#endif
