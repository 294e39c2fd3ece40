/*
 * msb/agent.h — the guest agent's wire protocol and its host-side client (backend SDK).
 *
 * One small static program, `msb-agent`, runs inside a sandbox's boundary as its resident
 * supervisor; the host asks it for every sandbox operation, one request per operation. The
 * channel is any reliable byte stream — a unix socket, a pipe pair, a virtio serial port —
 * so the protocol frames its own messages and never relies on the transport's boundaries.
 *
 * Wire format (all integers little-endian):
 *
 *   frame   = header payload
 *   header  = magic:u32 ("MSBA") version:u16 type:u16 request_id:u32 payload_len:u32  (16 bytes)
 *   payload = field*
 *   field   = tag:u16 len:u32 value[len]
 *
 * A reply carries the request's type with MSB_AGENT_REPLY set and the request's id. Every
 * reply starts with MSB_TAG_ERRC (and MSB_TAG_MESSAGE when not MSB_OK), then the result's
 * fields. Unknown tags are skipped by both sides, so a later minor addition does not need a
 * version bump; a change in meaning does.
 *
 * HELLO comes first on every connection. Its frame (header, ERRC, MESSAGE, VERSION) is frozen
 * for all versions, so a peer of another version can always read the refusal: a side that
 * receives a frame whose header names a version other than its own answers (if it is the
 * agent) and reports MSB_E_PROTOCOL naming both versions, then drops the connection.
 *
 * Why the decoder cannot be made to allocate from a peer's say-so: payload_len is checked
 * against MSB_AGENT_MAX_PAYLOAD before a byte of payload is allocated; every field length is
 * checked against what is left of the payload already read; argument, path and environment
 * strings are refused when they hold a NUL (they become C strings on the other side); the
 * number of repeated fields is bounded by the payload that was read, never by a count field.
 */
#ifndef MSB_AGENT_H
#define MSB_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/background.h>
#include <msb/error.h>
#include <msb/stream.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSB_AGENT_MAGIC 0x4142534du   /* "MSBA" as little-endian bytes */
/*
 * 2: EXEC_STREAM, OUTPUT and INPUT (a request answered by more than one frame). A peer of
 * version 1 cannot read an exchange of several frames, so it is refused at HELLO by name.
 */
#define MSB_AGENT_PROTOCOL_VERSION 2u
#define MSB_AGENT_HEADER_SIZE 16u
/* A field's tag and length, before its value. */
#define MSB_AGENT_FIELD_HEADER_SIZE 6u
/* The largest payload either side reads: a 64 MiB file plus room for the fields around it. */
#define MSB_AGENT_MAX_PAYLOAD ((uint32_t)(64u * 1024u * 1024u + 64u * 1024u))
/* Per-stream cap on exec output the agent ever holds; a larger max_output is clamped to it. */
#define MSB_AGENT_MAX_OUTPUT ((uint64_t)16u * 1024u * 1024u)
/* The installed agent binary (MSB_LIBEXECDIR/msb-agent); $MSB_AGENT overrides it. */
#define MSB_AGENT_BINARY "msb-agent"

/* Message types. A reply is its request's type | MSB_AGENT_REPLY. */
typedef enum msb_agent_type {
	MSB_AGENT_HELLO = 1,      /* VERSION; reply VERSION, AGENT_INFO */
	MSB_AGENT_PING = 2,       /* nothing; reply nothing */
	MSB_AGENT_EXEC = 3,       /* ARG* CWD? ENV* TIMEOUT_MS? MAX_OUTPUT? STDIN? */
	MSB_AGENT_RUN_CODE = 4,   /* CODE TIMEOUT_MS? MAX_OUTPUT?; the agent's configured runtime */
	MSB_AGENT_WRITE_FILE = 5, /* PATH WORKDIR DATA */
	MSB_AGENT_STAT_FILE = 6,  /* PATH WORKDIR; reply FOUND ENTRY? */
	MSB_AGENT_READ_FILE = 7,  /* PATH WORKDIR MAX_BYTES; reply DATA */
	MSB_AGENT_LIST_DIR = 8,   /* PATH WORKDIR; reply ENTRY* */
	MSB_AGENT_REMOVE = 9,     /* PATH WORKDIR RECURSIVE */
	MSB_AGENT_RECLAIM = 10,   /* PATH(the absolute directory) WORKDIR */
	MSB_AGENT_SHUTDOWN = 11,  /* reply, then kill every process the agent started and exit */
	/*
	 * A streamed exec (version 2): the fields of EXEC plus STDIN_OPEN. The agent answers
	 * with OUTPUT frames as the command writes (same id, no REPLY bit), then the
	 * EXEC_STREAM reply: ERRC, EXIT_CODE, SIGNAL, FLAGS (no STDOUT/STDERR: already sent).
	 * While it runs the host may send INPUT frames of the same id. With ROWS and COLS the
	 * command runs under a terminal of that size (its output, both streams, as stdout),
	 * resized by RESIZE frames of the same id.
	 */
	MSB_AGENT_EXEC_STREAM = 12,
	MSB_AGENT_OUTPUT = 13,    /* agent to host: STREAM DATA; never more than the cap in all */
	MSB_AGENT_INPUT = 14,     /* host to agent: DATA? EOF?; EOF closes the command's stdin */
	MSB_AGENT_RESIZE = 15,    /* host to agent: ROWS COLS of a streamed exec's terminal */
	/*
	 * Background commands (msb/background.h). Plain requests, one reply each, so version 2
	 * still holds: an agent that predates them refuses the type by number.
	 *   BG_START   ARG* CWD? ENV* TIMEOUT_MS? MAX_OUTPUT?(the ring) STDIN?; reply BG_STATUS
	 *   BG_READ    BG_ID OFFSET_OUT? OFFSET_ERR? MAX_BYTES? WAIT_MS? UNTIL_EXIT?;
	 *              reply BG_STATUS STDOUT STDERR START_OUT START_ERR
	 *   BG_SIGNAL  BG_ID SIGNAL
	 *   BG_LIST    nothing; reply BG_STATUS*
	 * BG_STATUS is a field whose value is itself fields: BG_ID PID RUNNING RING WRITTEN_OUT
	 * WRITTEN_ERR STARTED_MS COMMAND, and once ended EXIT_CODE SIGNAL FLAGS.
	 */
	MSB_AGENT_BG_START = 16,
	MSB_AGENT_BG_READ = 17,
	MSB_AGENT_BG_SIGNAL = 18,
	MSB_AGENT_BG_LIST = 19,
	MSB_AGENT__TYPE_MAX = 19
} msb_agent_type;
#define MSB_AGENT_REPLY 0x8000u

/* Field tags. */
typedef enum msb_agent_tag {
	MSB_TAG_ERRC = 1,        /* u32 msb_errc */
	MSB_TAG_MESSAGE = 2,     /* bytes: the refusal sentence */
	MSB_TAG_VERSION = 3,     /* u32 */
	MSB_TAG_AGENT_INFO = 4,  /* bytes: "msb-agent <package version> pid <n>" */
	MSB_TAG_ARG = 10,        /* bytes, repeated, no NUL; empty allowed */
	MSB_TAG_CWD = 11,        /* bytes: guest path */
	MSB_TAG_ENV = 12,        /* bytes "NAME=value", repeated; added to the scrubbed base */
	MSB_TAG_TIMEOUT_MS = 13, /* u64; 0: the agent's default */
	MSB_TAG_MAX_OUTPUT = 14, /* u64 per stream; 0: the agent's default */
	MSB_TAG_STDIN = 15,      /* bytes */
	MSB_TAG_CODE = 16,       /* bytes */
	MSB_TAG_PATH = 20,       /* bytes */
	MSB_TAG_WORKDIR = 21,    /* bytes: absolute guest path */
	MSB_TAG_DATA = 22,       /* bytes */
	MSB_TAG_MAX_BYTES = 23,  /* u64 */
	MSB_TAG_RECURSIVE = 24,  /* u32 0/1 */
	MSB_TAG_EXIT_CODE = 30,  /* u32 holding an int32 */
	MSB_TAG_SIGNAL = 31,     /* u32 */
	MSB_TAG_FLAGS = 32,      /* u32 MSB_AGENT_F_* */
	MSB_TAG_STDOUT = 33,     /* bytes */
	MSB_TAG_STDERR = 34,     /* bytes */
	MSB_TAG_KILL_REACH = 35, /* u32 msb_kill_reach: what a timed-out command's kill reached */
	MSB_TAG_FOUND = 40,      /* u32 0/1 */
	MSB_TAG_ENTRY = 41,      /* kind:u8 size:i64 path[...] */
	MSB_TAG_STREAM = 50,     /* u32 msb_stream_id: 1 stdout, 2 stderr */
	MSB_TAG_EOF = 51,        /* u32 0/1 */
	MSB_TAG_STDIN_OPEN = 52, /* u32 0/1: stdin stays open for INPUT frames after STDIN */
	MSB_TAG_ROWS = 53,       /* u32 1..65535: EXEC_STREAM under a terminal of this size; RESIZE */
	MSB_TAG_COLS = 54,       /* u32 1..65535 */
	MSB_TAG_BG_ID = 60,      /* bytes: a background command's handle, [0-9a-z]{1,32} */
	MSB_TAG_BG_STATUS = 61,  /* bytes: the fields of one command's status (see BG_START) */
	MSB_TAG_OFFSET_OUT = 62, /* u64: BG_READ from this stdout offset */
	MSB_TAG_OFFSET_ERR = 63, /* u64 */
	MSB_TAG_WAIT_MS = 64,    /* u64: BG_READ waits up to this for output or the end */
	MSB_TAG_UNTIL_EXIT = 65, /* u32 0/1: ... for the end alone */
	MSB_TAG_PID = 66,        /* u64 */
	MSB_TAG_RUNNING = 67,    /* u32 0/1 */
	MSB_TAG_RING = 68,       /* u64: bytes of each stream kept */
	MSB_TAG_WRITTEN_OUT = 69, /* u64: bytes written to stdout so far */
	MSB_TAG_WRITTEN_ERR = 70, /* u64 */
	MSB_TAG_START_OUT = 71,  /* u64: the offset of the reply's STDOUT */
	MSB_TAG_START_ERR = 72,  /* u64 */
	MSB_TAG_STARTED_MS = 73, /* u64: ms since the epoch */
	MSB_TAG_COMMAND = 74,    /* bytes: argv joined, cut at MSB_BG_COMMAND_MAX */
} msb_agent_tag;

/* MSB_TAG_FLAGS bits of an exec/run_code reply. */
#define MSB_AGENT_F_TIMED_OUT 0x1u
#define MSB_AGENT_F_OUT_TRUNCATED 0x2u
#define MSB_AGENT_F_ERR_TRUNCATED 0x4u

/* ---- framing ---------------------------------------------------------------------- */

typedef struct msb_agent_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t id;
	uint32_t length;
} msb_agent_header;

void msb_agent_header_encode(const msb_agent_header *h, unsigned char raw[MSB_AGENT_HEADER_SIZE]);
/*
 * Decode and check a header: wrong magic and a length over MSB_AGENT_MAX_PAYLOAD are refused
 * (MSB_E_PROTOCOL). The version is NOT checked here — the caller decides how to refuse it.
 */
msb_errc msb_agent_header_decode(const unsigned char raw[MSB_AGENT_HEADER_SIZE],
				 msb_agent_header *h, msb_error *err);

/* Append one field to a payload under construction. */
msb_errc msb_agent_put(msb_buf *payload, uint16_t tag, const void *value, size_t len,
		       msb_error *err);
msb_errc msb_agent_put_u32(msb_buf *payload, uint16_t tag, uint32_t v, msb_error *err);
msb_errc msb_agent_put_u64(msb_buf *payload, uint16_t tag, uint64_t v, msb_error *err);
/* A NUL-terminated string, without its NUL. */
msb_errc msb_agent_put_str(msb_buf *payload, uint16_t tag, const char *s, msb_error *err);

/* Walk a payload's fields. Zero-initialise, set data/len, call next until *done. */
typedef struct msb_agent_reader {
	const unsigned char *data;
	size_t len;
	size_t pos;
} msb_agent_reader;

typedef struct msb_agent_field {
	uint16_t tag;
	uint32_t len;
	const unsigned char *value; /* points into the payload */
} msb_agent_field;

/* MSB_E_PROTOCOL for a field header or value that runs past the payload's end. */
msb_errc msb_agent_reader_next(msb_agent_reader *r, msb_agent_field *f, bool *done,
			       msb_error *err);
/* Read a field as u32/u64; MSB_E_PROTOCOL when its length is not 4/8. */
msb_errc msb_agent_field_u32(const msb_agent_field *f, uint32_t *v, msb_error *err);
msb_errc msb_agent_field_u64(const msb_agent_field *f, uint64_t *v, msb_error *err);

/*
 * Write one whole frame to `fd` (retrying short writes and EINTR). Safe on a socket whose
 * peer vanished: SIGPIPE is never raised (MSG_NOSIGNAL on sockets; on pipes the caller's
 * process must ignore SIGPIPE, as the agent does).
 */
msb_errc msb_agent_frame_write(int fd, uint16_t type, uint32_t id, const msb_buf *payload,
			       msb_error *err);
/*
 * Read one whole frame: the header (checked by msb_agent_header_decode), then exactly
 * `length` payload bytes into `payload` (replacing its contents, in its own memory when that
 * is large enough), allocated only after the length was checked; a failed body read leaves
 * `payload` empty and freed. `deadline_ms` is an absolute CLOCK_MONOTONIC time in ms, or 0 for
 * none; passing it is MSB_E_TIMEOUT. A peer that closes before the first header byte is
 * MSB_E_PROTOCOL with *eof set (when eof is non-NULL), so a server can end quietly.
 */
msb_errc msb_agent_frame_read(int fd, int64_t deadline_ms, msb_agent_header *h,
			      msb_buf *payload, bool *eof, msb_error *err);

/*
 * msb_agent_frame_read with a bound of the caller's below MSB_AGENT_MAX_PAYLOAD: what the
 * request allowed (a host's caps say how large an honest answer can be). A frame whose
 * header says more is refused (MSB_E_PROTOCOL, *h filled) before a byte of its body is
 * read or allocated; `payload` is left empty. A caller that must keep a shared stream in
 * step drops the body with msb_agent_frame_skip.
 */
msb_errc msb_agent_frame_read_max(int fd, int64_t deadline_ms, uint32_t max_len,
				  msb_agent_header *h, msb_buf *payload, bool *eof, msb_error *err);
/* Read and drop `n` bytes, 64 KiB at a time: a refused frame's body, costing no memory. */
msb_errc msb_agent_frame_skip(int fd, int64_t deadline_ms, size_t n, msb_error *err);

/* CLOCK_MONOTONIC now, in ms: the clock deadlines are measured on. */
int64_t msb_agent_now_ms(void);

/* ---- typed requests (what the agent decodes; exposed for tests and fuzzing) -------- */

/*
 * A decoded request. Strings are heap copies, NUL-terminated, refused when they held a NUL.
 * Free with msb_agent_request_free. Absent optional fields are NULL / 0.
 */
typedef struct msb_agent_request {
	uint16_t type;
	char **argv;          /* EXEC: NULL-terminated, argc >= 1 */
	size_t argc;
	char **env;           /* EXEC: NULL-terminated, may be empty */
	size_t envc;
	char *cwd;            /* EXEC: NULL: the agent's work dir */
	uint64_t timeout_ms;
	uint64_t max_output;
	/* EXEC stdin, RUN_CODE code, WRITE_FILE data; may hold NULs. Points into the payload
	 * decoded (as msb_agent_field's value does), so it is valid as long as that is: a file
	 * is written from where it arrived, never copied first. */
	const unsigned char *data;
	size_t data_len;
	bool has_data;
	char *path;           /* file operations; RECLAIM: the absolute directory */
	char *workdir;        /* file operations: absolute guest working directory */
	uint64_t max_bytes;
	bool recursive;
	uint32_t version;     /* HELLO */
	bool stdin_open;      /* EXEC_STREAM: more stdin comes in INPUT frames */
	uint32_t stream;      /* OUTPUT: MSB_STREAM_STDOUT or MSB_STREAM_STDERR */
	bool eof;             /* INPUT: close the command's stdin after DATA */
	uint32_t rows, cols;  /* EXEC_STREAM: a terminal of this size (0: none); RESIZE */
	char *bg_id;          /* BG_READ, BG_SIGNAL: checked with msb_bg_id_valid */
	uint64_t offset_out, offset_err, wait_ms; /* BG_READ */
	bool until_exit;      /* BG_READ */
	uint32_t signal;      /* BG_SIGNAL: 1..64 */
} msb_agent_request;

/*
 * Decode a request of `type` from its payload, checking every field a type requires
 * (MSB_E_PROTOCOL naming the field and the type when absent, malformed or holding a NUL).
 */
msb_errc msb_agent_request_decode(uint16_t type, const unsigned char *payload, size_t len,
				  msb_agent_request *req, msb_error *err);
void msb_agent_request_free(msb_agent_request *req);

/* A message type's name ("exec", "read_file"...), or "unknown". */
const char *msb_agent_type_name(uint16_t type);

/* ---- the agent's command line ----------------------------------------------------- */

/*
 * How a boundary starts the agent. msb_agent_config_argv() turns this into the argv of the
 * agent binary, so a backend never spells the flags itself:
 *
 *   msb-agent --listen SOCKET | --listen-fd N | --fd RFD[,WFD] | --device PATH
 *             --work-dir DIR [--work-alias GUESTDIR] [--ready-fd N]
 *             [--timeout SECONDS] [--max-output BYTES] [--run-code ARG]...
 *             [--rlimit-cpu S] [--rlimit-as B] [--rlimit-nofile N] [--rlimit-nproc N]
 *             [--rlimit-fsize B] [--path PATH] [--uid UID --gid GID]
 *
 * --listen serves each connection in its own forked child (a slow exec never blocks another
 * request), one of which always waits in accept() ahead of the next connection (it counts
 * as a process of the agent's user, as the supervisor does). --listen-fd does the same on a
 * listening socket the launcher made (refused at start when fd N is not one): connections
 * queued on it before the agent ran are served as soon as it does. --fd and --device serve
 * one stream, one request at a time. --work-alias makes the
 * guest path GUESTDIR (e.g. /msb/work) mean DIR, for a boundary that shares the host
 * filesystem. --ready-fd gets one byte and is closed once the agent listens. The agent makes
 * itself a child subreaper, so a command's daemon that escapes its process group is still
 * the agent's to kill at SHUTDOWN.
 *
 *   msb-agent --reap
 *
 * is another job for the same binary, on the host: what a launcher's resident process
 * execs once it has started its engine (bwrap's keeper, gVisor's reaper). It reaps every
 * child, and as a child subreaper (which the caller sets; exec keeps it) every orphan below
 * it, until none is left, then exits 0. A resident process that stays a fork of the host
 * would keep a copy of every page the host writes for as long as the sandbox lives.
 */
typedef struct msb_agent_rlimits {
	uint64_t cpu_seconds;  /* 0: not set */
	uint64_t as_bytes;
	uint64_t nofile;
	uint64_t nproc;
	uint64_t fsize_bytes;
} msb_agent_rlimits;

typedef struct msb_agent_config {
	const char *work_dir;          /* required: HOME and every command's default cwd */
	const char *work_alias;        /* may be NULL */
	double default_timeout;        /* seconds; <= 0: 60 */
	uint64_t default_max_output;   /* bytes per stream; 0: 1 MiB */
	const char *const *run_code;   /* runtime argv, code on its stdin; NULL: {"sh", NULL} */
	msb_agent_rlimits rlimits;
	const char *path_env;          /* NULL: "/usr/local/bin:/usr/bin:/bin" */
	long uid, gid;                 /* -1: keep */
	/* egress: allowlist (msb/egress.h): the host proxy's socket as the guest sees it, the
	 * allowed names in order, the allowed ports. NULL socket: no forwarder. */
	const char *egress_socket;
	const char *const *egress_names;
	const uint16_t *egress_ports;
	size_t n_egress_ports;
	/* Appended (issue 21): the image config's Env ("K=V" each, NULL-terminated; NULL: none),
	 * given to every command for the names its request does not set (HOME excepted). */
	const char *const *image_env;
} msb_agent_config;

#define MSB_AGENT_CONFIG_INIT                                                             \
	{ NULL, NULL, 60.0, 1024 * 1024, NULL, { 0, 0, 0, 0, 0 }, NULL, -1, -1, NULL, NULL, NULL, 0, \
	  NULL }

/*
 * Build the agent's argv: `binary`, then `mode` ("--listen"/"--listen-fd"/"--fd"/"--device") and
 * `mode_arg`, then the config's flags, then ready-fd when >= 0. The result is one allocation
 * (free() it) holding the pointer array and every string.
 */
msb_errc msb_agent_config_argv(const char *binary, const char *mode, const char *mode_arg,
			       const msb_agent_config *config, int ready_fd, char ***argv,
			       msb_error *err);
/* The agent binary to run: $MSB_AGENT when set, else MSB_LIBEXECDIR "/msb-agent". */
const char *msb_agent_binary(void);

/* ---- the host-side client --------------------------------------------------------- */

typedef struct msb_agent_client msb_agent_client;

/*
 * Talk to an agent listening on a unix socket. Each request uses its own connection (taken
 * from a small idle pool, or opened and HELLO'd afresh), so concurrent requests from several
 * threads run concurrently. Opening connects once and says HELLO, so a dead agent or a peer
 * of another version is reported here (MSB_E_PROTOCOL names both versions).
 */
msb_errc msb_agent_client_open_unix(const char *socket_path, double timeout,
				    msb_agent_client **out, msb_error *err);
/*
 * The same opening in two halves, for a launcher that has its own waiting to do meanwhile
 * (for the sandbox to die, say). greet_start connects to `socket_path`, which must already be
 * listening — a socket the launcher made and handed to the agent (msb-agent --listen-fd),
 * where the connection waits in the listen queue until the agent runs — and sends HELLO.
 * msb_agent_client_greeting_fd is the connection to poll for the answer, and greet_finish
 * reads it (waiting up to `timeout`; <= 0: the client's). A client whose greeting failed can
 * only be closed.
 */
msb_errc msb_agent_client_greet_start(const char *socket_path, double timeout,
				      msb_agent_client **out, msb_error *err);
int msb_agent_client_greeting_fd(const msb_agent_client *client);
msb_errc msb_agent_client_greet_finish(msb_agent_client *client, double timeout, msb_error *err);
/*
 * Wait up to `timeout` s for the answer to a greeting (greet_start, then finish), watching
 * `death_fd` meanwhile: the read end of a pipe whose write end only the boundary's processes
 * hold (their stderr, say), so that its end of file means they are all gone (-1: none); it
 * is made non-blocking. Whatever arrives on it is kept in `said` (NUL-terminated, `cap`
 * bytes; NULL: dropped).
 * MSB_OK once the agent answered. Otherwise *died is true when the boundary is gone — its end
 * of file came first, or within a second of a greeting that failed — (MSB_E_BACKEND);
 * MSB_E_TIMEOUT when nothing came in time; else the agent's refusal of the greeting, its
 * code kept (a live agent of another version: MSB_E_PROTOCOL).
 */
msb_errc msb_agent_client_greet_await(msb_agent_client *client, int death_fd, double timeout,
				      char *said, size_t cap, bool *died, msb_error *err);
/*
 * greet_start and greet_await in one, the client in *out once the agent answered. A
 * connection refused at once is weighed the same way: if `death_fd` reaches its end within
 * a second, the boundary died before the host connected (*died, MSB_E_BACKEND).
 */
msb_errc msb_agent_client_greet(const char *socket_path, int death_fd, double timeout, char *said,
				size_t cap, bool *died, msb_agent_client **out, msb_error *err);
/*
 * msb_agent_client_greet, running meanwhile(arg) once HELLO is queued and before the wait
 * (NULL: nothing): work a launcher does while its agent starts, which then cannot hold the
 * greeting back however long it takes (bwrap makes the next sandbox's cgroup there).
 */
msb_errc msb_agent_client_greet_meanwhile(const char *socket_path, int death_fd, double timeout,
					  void (*meanwhile)(void *arg), void *arg, char *said,
					  size_t cap, bool *died, msb_agent_client **out,
					  msb_error *err);
/*
 * Talk over one stream (a connected socket, a pipe pair, a serial port): the client takes
 * ownership of the fds (rfd == wfd for a socket) and serialises requests with a mutex.
 */
msb_errc msb_agent_client_open_fds(int rfd, int wfd, double timeout, msb_agent_client **out,
				   msb_error *err);
void msb_agent_client_close(msb_agent_client *client);

/*
 * One function per request. `timeout` for the non-exec requests bounds the whole round trip
 * (<= 0: 30 s); MSB_E_TIMEOUT when it passes. Errors the agent reports come back with the
 * agent's code and sentence (one it sent without a sentence gets the client's). The agent
 * is untrusted: an answer over what the request allowed (read_file's max_bytes, exec's and
 * run_code's max_output per stream, or MSB_AGENT_MAX_OUTPUT when that is 0) is refused
 * with MSB_E_PROTOCOL, and none of it is kept.
 */
msb_errc msb_agent_ping(msb_agent_client *client, double timeout, msb_error *err);
/*
 * exec: `req` as the backend contract has it; `env` extra "NAME=value" strings (may be NULL).
 * The wall-clock deadline runs from this call: a deadline that passes while the request
 * waits for a connection or for the stream is MSB_E_QUEUED_TIMEOUT; one that passes while
 * the program runs comes back as a result with timed_out set (the agent killed the tree).
 */
msb_errc msb_agent_exec(msb_agent_client *client, const msb_exec_request *req,
			const char *const *env, msb_exec_result *res, msb_error *err);
msb_errc msb_agent_run_code(msb_agent_client *client, const char *code, double timeout,
			    size_t max_output, msb_exec_result *res, msb_error *err);
msb_errc msb_agent_write_file(msb_agent_client *client, const char *path, const void *data,
			      size_t len, const char *working_directory, msb_error *err);
msb_errc msb_agent_stat_file(msb_agent_client *client, const char *path,
			     const char *working_directory, msb_entry *entry, bool *found,
			     msb_error *err);
msb_errc msb_agent_read_file(msb_agent_client *client, const char *path,
			     const char *working_directory, uint64_t max_bytes, msb_buf *out,
			     msb_error *err);
msb_errc msb_agent_list_dir(msb_agent_client *client, const char *path,
			    const char *working_directory, msb_entry_list *out, msb_error *err);
msb_errc msb_agent_remove(msb_agent_client *client, const char *path,
			  const char *working_directory, bool recursive, msb_error *err);
msb_errc msb_agent_reclaim(msb_agent_client *client, const char *directory,
			   const char *working_directory, double timeout, msb_error *err);
/*
 * exec, streamed (msb/stream.h): output handed to stream->on_output as OUTPUT frames arrive,
 * stream->stdin_fd forwarded as INPUT frames, stream->env added (each entry checked with
 * msb_env_entry_valid). Deadlines and the result as msb_agent_exec's, out and err empty. An
 * agent that sends more of a stream than the cap allowed, an OUTPUT of another request or a
 * malformed one is refused with MSB_E_PROTOCOL (nothing past the cap reaches the callback).
 */
msb_errc msb_agent_exec_stream(msb_agent_client *client, const msb_exec_request *req,
			       const msb_exec_stream *stream, msb_exec_result *res,
			       msb_error *err);
/*
 * Decode an OUTPUT frame's payload: *stream (1 or 2) and the chunk (pointing into `payload`).
 * MSB_E_PROTOCOL when STREAM is missing or not 1/2, or DATA is missing. Exposed for fuzzing.
 */
msb_errc msb_agent_output_decode(const unsigned char *payload, size_t len, uint32_t *stream,
				 const unsigned char **data, size_t *data_len, msb_error *err);

/*
 * The background operations (msb/background.h). bg_read's reply is bounded by what it
 * asked for (max_bytes per stream); its wait by rq->wait plus the grace. An agent's
 * answer is untrusted: a status whose fields are missing or malformed, an id that is not
 * a handle's shape, output past max_bytes, or more entries than MSB_AGENT_BG_MAX is
 * refused with MSB_E_PROTOCOL.
 */
#define MSB_AGENT_BG_MAX 64u
msb_errc msb_agent_bg_start(msb_agent_client *client, const msb_exec_request *req,
			    const char *const *env, msb_bg_status *started, msb_error *err);
msb_errc msb_agent_bg_read(msb_agent_client *client, const char *id, const msb_bg_read *rq,
			   msb_bg_output *out, msb_error *err);
msb_errc msb_agent_bg_signal(msb_agent_client *client, const char *id, int signal,
			     msb_error *err);
msb_errc msb_agent_bg_list(msb_agent_client *client, msb_bg_list *out, msb_error *err);
/*
 * Decode a BG_START, BG_READ or BG_LIST reply's payload (after its status was checked)
 * into `out` / `list`, bounded by `max_bytes` per stream. Exposed for fuzzing.
 */
msb_errc msb_agent_bg_reply_decode(uint16_t type, const unsigned char *payload, size_t len,
				   uint64_t max_bytes, msb_bg_output *out, msb_bg_list *list,
				   msb_error *err);

/* Ask the agent to kill everything it started and exit; MSB_OK once it has said so. */
msb_errc msb_agent_shutdown(msb_agent_client *client, double timeout, msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
