/*
 * agent_internal.h — what the parts of the msb-agent program share: its configuration, and
 * the entry points of request handling, command running, file operations and reaping.
 * Nothing here is linked into libmsb-sdk.
 */
#ifndef MSB_AGENT_INTERNAL_H
#define MSB_AGENT_INTERNAL_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
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
	bool statx_fix;           /* agent_statx_shim() at start: commands preload the shim */
	bool egress_proxy;        /* commands get HTTP(S)_PROXY for the egress forwarder */
	char **image_env;         /* --env: the image config's Env, "K=V" each, NULL-terminated */
	size_t n_image_env;
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

/*
 * Background commands (background.c starts and minds them, background_read.c answers for
 * them). Each lives in a directory of the sandbox's /tmp that every agent process of the
 * sandbox finds (all of a microVM's per-port agents too), named by the work directory:
 * <dir>/<id>/{state,out,err,command}. `state` is a bg_state, replaced whole by rename, so a
 * reader never sees half of one. out and err are rings of `ring` bytes: offset o of a
 * stream lives at o % ring. Before a write that may overwrite offsets, `reserved` says how
 * far it reaches, so a reader discards what it read of offsets below reserved - ring.
 */
#define AGENT_BG_MAGIC 0x4742534du /* "MSBG" */
typedef struct agent_bg_state {
	uint32_t magic;
	uint32_t running;
	int64_t pid;                 /* the command, its process group's leader */
	uint64_t ring;
	uint64_t written[2];         /* stdout, stderr */
	uint64_t reserved[2];        /* >= written: what a write under way may reach */
	uint64_t started_ms;         /* CLOCK_REALTIME */
	int32_t status;              /* its wait status, once !running */
	uint32_t timed_out;
} agent_bg_state;
/* Written by one build of the agent, read by another (a microVM's ports): its size is fixed. */
_Static_assert(sizeof(agent_bg_state) == 72, "agent_bg_state's layout changed");
msb_errc agent_bg_start(int rfd, int wfd, const msb_agent_request *req, msb_buf *reply,
			msb_error *err);
msb_errc agent_bg_read(const msb_agent_request *req, msb_buf *reply, msb_error *err);
msb_errc agent_bg_signal(const msb_agent_request *req, msb_error *err);
msb_errc agent_bg_list(msb_buf *reply, msb_error *err);
/* The directory (made when `make`); NULL when it cannot be (the error says why). */
const char *agent_bg_dir(bool make, msb_error *err);
/* <dir>/<id>/<file> into `path`; false when it does not fit. */
bool agent_bg_path(char *path, size_t cap, const char *id, const char *file);
/* open(2) of <dir>/<id>/<file>, never through a link (O_CREAT makes it 0600); -1 on failure. */
int agent_bg_open(const char *id, const char *file, int flags);
/* Read <id>'s state; MSB_E_NOT_FOUND naming it when there is none. */
msb_errc agent_bg_load(const char *id, agent_bg_state *st, msb_error *err);
/* Append one BG_STATUS field describing <id> to `reply`. */
msb_errc agent_bg_put_status(msb_buf *reply, const char *id, const agent_bg_state *st,
			     msb_error *err);
/* Remove <id>'s directory; and, at the supervisor's end, the whole directory. */
void agent_bg_forget(const char *id);
void agent_bg_cleanup(void);

/* The file operations, confined beneath the request's working directory. */
msb_errc agent_file_op(const msb_agent_request *req, msb_buf *reply, msb_error *err);

/*
 * A guest path with the work alias applied: a path equal to or under --work-alias is moved
 * under --work-dir. Returns a heap string (NULL when out of memory).
 */
char *agent_map_path(const char *path);

/*
 * statx_fix.c: whether this kernel refuses statx's AT_NO_AUTOMOUNT with EINVAL (gVisor), and
 * whether the commands get the shim that drops the flag: that, and the boundary mapped the
 * shim in at MSB_AGENT_STATX_SHIM (gVisor's host image does).
 */
#define MSB_AGENT_STATX_SHIM "/.msb-statx.so"
bool agent_statx_broken(void);
bool agent_statx_shim(void);

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
 * A timed-out command leaves nothing it started (reap.c). The process that runs commands is
 * a child subreaper, so whatever a command starts stays below it however it detaches
 * (setsid, a double fork, setpgid). agent_tree_begin, before the command starts, notes what
 * is below already — an earlier command's daemons on this connection, which are not this
 * command's to lose; it costs one waitpid when there is nothing. agent_tree_kill, after a
 * timeout, SIGKILLs everything else below, round after round until a walk of /proc finds
 * nothing alive (a fork loop forks while it is killed), and says what it reached.
 */
typedef struct agent_tree {
	pid_t *pid;
	unsigned long long *start;
	size_t n;
	pid_t command;                 /* the command (agent_tree_started) */
	unsigned long long command_start; /* when it started, where /proc is ours; else 0 */
} agent_tree;
void agent_tree_begin(agent_tree *t);
/* Note when command `pid` started, before it is killed and reaped. */
void agent_tree_started(agent_tree *t, pid_t pid);
/* MSB_REACH_TREE, or MSB_REACH_GROUP when the walk could not be made or end. */
int agent_tree_kill(const agent_tree *t);
void agent_tree_end(agent_tree *t);
bool agent_tree_spares(const agent_tree *t, pid_t pid, unsigned long long start);
/* This process's pid as /proc shows it (the host's pid when /proc is the host's), or -1. */
pid_t agent_proc_self(void);

/*
 * Make this process unreachable from the commands it will run (harden.c): not dumpable, no
 * capability any command could inherit, no_new_privs. The first before dropping to the
 * configured ids, the second after. -1 with `why` filled when a step fails.
 */
int agent_harden_caps(char *why, size_t cap);
int agent_harden_finish(char *why, size_t cap);

/*
 * Start the egress forwarder (egress_forward.c): bind its loopback listeners now, then loop
 * in a child that calls drop(drop_arg) first. -1 when a listener cannot be bound.
 */
/* How the forwarder reaches the host (--egress-transport). */
typedef enum agent_egress_transport {
	AGENT_EGRESS_FD,     /* the guest's socket passed as SCM_RIGHTS (the default) */
	AGENT_EGRESS_RELAY,  /* bytes relayed over a unix connection each (egress_relay.c) */
	AGENT_EGRESS_MUX,    /* every connection over one stream device (egress_mux.h): the
				socket "path" is a virtio-serial port's name */
	AGENT_EGRESS_SHARED, /* another agent of this guest runs the forwarder: none here */
} agent_egress_transport;

int agent_egress_start(const char *socket_path, agent_egress_transport transport, char **names,
		       size_t n_names, const unsigned *ports, size_t n_ports,
		       void (*drop)(const void *), const void *drop_arg);

/* One of the forwarder's listeners: which hello a connection it accepts gets. */
typedef struct fwd_listener {
	int fd;
	uint16_t kind, port;
	uint32_t index;
} fwd_listener;
/* Reset and close a guest connection the forwarder cannot carry (egress_forward.c). */
void fwd_refuse(int guest);
/* The mux transport (egress_vm.c): bring up loopback and write /etc/hosts (as root, before
 * the listeners bind), then the forwarder's loop over the port named `port_name`. */
void fwd_vm_prepare(char **names, size_t n_names);
void fwd_mux_loop(const char *port_name, fwd_listener *ls, size_t n) __attribute__((noreturn));

/*
 * The forwarder's byte relay (egress_relay.c, `relay` above): a guest connection and its
 * own unix connection to the host proxy, bytes copied both ways. fill writes 2 pollfds per
 * slot (FWD_RELAY_MAX slots, unused ones -1); add is false when every slot is taken.
 */
#define FWD_RELAY_MAX 256
void fwd_relay_init(void);
bool fwd_relay_add(int guest, int host);
void fwd_relay_fill(struct pollfd *fds);
void fwd_relay_run(const struct pollfd *fds);

#endif
