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
	bool egress_proxy;        /* commands get HTTP(S)_PROXY for the egress forwarder */
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

/*
 * Start the egress forwarder (egress_forward.c): bind its loopback listeners now, then loop
 * in a child that calls drop(drop_arg) first. -1 when a listener cannot be bound.
 */
int agent_egress_start(const char *socket_path, char **names, size_t n_names,
		       const unsigned *ports, size_t n_ports, void (*drop)(const void *),
		       const void *drop_arg);

#endif
