/*
 * agent_internal.h — what the parts of the msb-agent program share: its configuration, and
 * the entry points of request handling, command running, file operations and reaping.
 * Nothing here is linked into libmsb-sdk.
 */
#ifndef MSB_AGENT_INTERNAL_H
#define MSB_AGENT_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include <msb/agent.h>

/* The agent's configuration, fixed at start-up from its command line. */
typedef struct agent_conf {
	const char *work_dir;
	const char *work_alias;
	uint64_t default_timeout_ms;
	uint64_t default_max_output;
	char **run_code;          /* NULL-terminated */
	msb_agent_rlimits rlimits;
	const char *path_env;
	pid_t supervisor;         /* the process that owns every command (the subreaper) */
} agent_conf;

extern agent_conf agent;

/*
 * Serve one stream until the peer closes it or asks for SHUTDOWN (*shutdown set then).
 * Returns how many frames it read; errors are answered on the stream, never fatal.
 */
unsigned long agent_serve_stream(int rfd, int wfd, bool *shutdown);

/* Run EXEC / RUN_CODE and append the result fields (after ERRC) to `reply`. */
msb_errc agent_exec(const msb_agent_request *req, msb_buf *reply, msb_error *err);
msb_errc agent_run_code(const msb_agent_request *req, msb_buf *reply, msb_error *err);

/*
 * Start a command (its own session, the agent's rlimits, the scrubbed environment plus
 * `env`, in `cwd`): *pid, and non-blocking fds[0] its stdin's write end, fds[1] and fds[2]
 * its stdout's and stderr's read ends. With `tty` >= 0 (a terminal's slave end, kept by the
 * caller) the command's stdin, stdout and stderr are that terminal, made its controlling
 * one, and fds[] are all -1. A child that could not start is reported, reaped.
 */
msb_errc agent_command_start(char *const *argv, char *const *env, const char *cwd, int tty,
			     pid_t *pid, int fds[3], msb_error *err);
/* A request's timeout and per-stream cap, the agent's defaults filled in, the cap clamped. */
void agent_run_bounds(const msb_agent_request *req, uint64_t *timeout_ms, uint64_t *max_output);
/*
 * A pidfd for `pid` (readable once it exits), so one poll() waits for output and the exit
 * together; -1 where the kernel has no pidfd_open (the caller then asks every ms).
 */
int agent_open_pidfd(pid_t pid);
/* EXIT_CODE, SIGNAL and FLAGS of a wait status, appended to `reply`. */
msb_errc agent_put_status(msb_buf *reply, int status, uint32_t flags, msb_error *err);
/*
 * EXEC_STREAM on the connection (rfd, wfd) of request `id`: OUTPUT frames written as the
 * command writes, INPUT frames read, then the result's status fields appended to `reply`.
 */
msb_errc agent_exec_stream(int rfd, int wfd, uint32_t id, const msb_agent_request *req,
			   msb_buf *reply, msb_error *err);

/* The file operations, confined beneath the request's working directory. */
msb_errc agent_file_op(const msb_agent_request *req, msb_buf *reply, msb_error *err);

/*
 * A guest path with the work alias applied: a path equal to or under --work-alias is moved
 * under --work-dir. Returns a heap string (NULL when out of memory).
 */
char *agent_map_path(const char *path);

/* Reap every exited child without blocking. */
void agent_reap(void);
/* The same; true when `watched` (a pid > 0) was among them. */
bool agent_reap_saw(pid_t watched);

/* Set by SIGTERM (and SIGINT): the supervisor ends its sandbox and exits. */
extern volatile sig_atomic_t agent_terminating;

/* Write the one byte that tells a launcher the agent serves, and close `fd` (-1: none). */
void agent_signal_ready(int fd);

/*
 * Serve every connection on the listening socket `lfd`, each in a process of its own
 * (listen.c), until SIGTERM or a SHUTDOWN request; then kill every descendant. Signals
 * readiness on `ready_fd` once the first connection has a process waiting for it.
 */
int agent_serve_listen(int lfd, int ready_fd);
/* Kill every descendant of this process and reap them, until none are left (bounded). */
void agent_kill_descendants(void);

#endif
