/*
 * cli.h — what the msb command's subcommand files share: the global options, the exit
 * codes, the one-line error format, JSON output, loading sandbox.yaml, and the key options.
 * The command is thin over libmsb (crun's shape): policy lives in the library, never here.
 */
#ifndef MSB_CLI_H
#define MSB_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include <msb/config.h>
#include <msb/msb.h>

#include "commands.h"

/* Exit codes (documented in msb(1)). exec and run-code exit with the guest's own status. */
enum {
	MSB_EXIT_OK = 0,
	MSB_EXIT_FAILED = 1,   /* refused, or failed: the error line says which and why */
	MSB_EXIT_USAGE = 2,    /* the command line itself is wrong */
	MSB_EXIT_TIMEOUT = 124, /* exec/run-code: the guest command ran out of time (as timeout(1)) */
	MSB_EXIT_NOT_RUN = 125, /* exec/run-code: msb failed, so the guest status does not exist */
};

/* Options every subcommand takes, before or after its name. */
typedef struct msb_cli_globals {
	const char *config;  /* -c FILE; NULL: ./sandbox.yaml, then $sysconfdir/msb/sandbox.yaml */
	bool json;           /* --json */
	bool egress_verbose; /* exec -v: print each egress decision on stderr (cli_egress.c) */
	const char *command; /* the subcommand's name, for messages */
	/*
	 * Where a failure arose, carried as "stage" by every --json error: load (sandbox.yaml,
	 * plugins, backends), construct (the router), route (the six checks), acquire (the
	 * sandbox), call (an operation on it). NULL before any of them.
	 */
	const char *stage;
} msb_cli_globals;

extern msb_cli_globals msb_cli;

/*
 * getopt_long entries for -c/--config, --json and -h/--help; append to a subcommand's own.
 * Short options string part: "c:h".
 */
#define MSB_CLI_OPT_JSON 0x1000
#define MSB_CLI_COMMON_LONGOPTS                                                 \
	{ "config", required_argument, NULL, 'c' }, { "json", no_argument, NULL, MSB_CLI_OPT_JSON }, \
	{ "help", no_argument, NULL, 'h' }
/*
 * Handle a common option. Returns 1 when `c` was one (help prints `usage` and exits 0),
 * 0 when it is the caller's, and -1 for getopt's '?' (usage error already reported).
 */
int msb_cli_common_option(int c, const char *usage);

/* "msb: <SeedErrorName>: <sentence>" on stderr (or the JSON object on stdout), then clears
 * `err`; returns 1. */
int msb_cli_fail(msb_error *err);
/* As msb_cli_fail, returning `status` (exec's 125). */
int msb_cli_fail_with(msb_error *err, int status);
/* "msb <command>: <sentence>" + a pointer to --help, on stderr; returns 2. */
int msb_cli_usage_error(const char *fmt, ...) MSB_PRINTF(1, 2);
/*
 * Text a guest may have chosen (a file name, a refusal that quotes one) on msb's own lines.
 * A control byte would reach the operator's terminal as a command (ESC starts one, and so
 * does U+009B in UTF-8), so each is written as \xNN. A sentence (`name` false) stays one
 * line: line ends and tabs become spaces. A name (`name` true) escapes them too, and "\" as
 * "\\", so every listed name is one line and reads back unambiguously.
 */
void msb_cli_put_text(FILE *out, const char *s, bool name);
/* One line on stderr: "msb: warning: …" (the router's warnings, as text). */
void msb_cli_warn(void *ctx, const char *message);

/*
 * Effective declarations (cli_declarations.c): as text, one field a line after `indent`;
 * as JSON, the two members "declarations": {…}, "unstated": […] (no braces around them).
 */
void msb_cli_declarations_text(const msb_effective_declarations *d, const char *indent);
void msb_cli_declarations_json(const msb_effective_declarations *d);
/* Each backend's own refusal of `spec` ({backend, error, message}), up to `stop` (NULL: all). */
void msb_cli_refusals_json(const msb_router *router, const msb_spec *spec, const msb_backend *stop);

/* JSON: a string literal (escaped; invalid UTF-8 bytes as \u00XX), or NULL as null. */
void msb_json_string(FILE *out, const char *s);
void msb_json_bytes(FILE *out, const void *data, size_t len);
/*
 * `"NAME": "<text>"`, and when the bytes are not UTF-8 (their text form is then lossy),
 * `, "NAME_base64": "<the exact bytes>"` beside it: a JSON reader never needs to guess.
 */
void msb_json_bytes_field(FILE *out, const char *name, const void *data, size_t len);

/*
 * Load sandbox.yaml: -c, else ./sandbox.yaml, else MSB_SYSCONFDIR/msb/sandbox.yaml. Router
 * warnings are collected into `warnings`, or printed at once ("msb: warning: …") when NULL.
 */
typedef struct msb_cli_warnings {
	char **items;
	size_t len;
} msb_cli_warnings;
msb_errc msb_cli_load(bool open_backends, msb_cli_warnings *warnings, msb_config **out,
		      msb_error *err);
void msb_cli_warnings_free(msb_cli_warnings *w);
/* With msb_cli.egress_verbose, have every backend report egress decisions to stderr. */
void msb_cli_egress_options(msb_config_options *opts);
/* msb_config_router, as the "construct" stage. */
msb_errc msb_cli_router(msb_config *cfg, msb_router **out, msb_error *err);

/* The key options: --scope, --thread, --agent, --call. */
typedef struct msb_cli_key {
	const char *scope, *thread, *agent, *call;
	const char *from; /* exec --from SNAPSHOT: the sandbox is a fork of it (issue 22) */
} msb_cli_key;
#define MSB_CLI_KEY_LONGOPTS                                                           \
	{ "scope", required_argument, NULL, 'S' }, { "thread", required_argument, NULL, 'T' }, \
	{ "agent", required_argument, NULL, 'A' }, { "call", required_argument, NULL, 'C' }
/* Handle a key option; returns 1 when `c` was one. */
int msb_cli_key_option(msb_cli_key *key, int c, const char *arg);
/* 0 when --scope and --thread were both given; otherwise the usage error's status. */
int msb_cli_key_check(const msb_cli_key *key);

/*
 * The options of a file subcommand (put, get, ls, rm): the common ones, the key options,
 * --workdir DIR and, when `flag` names one (else NULL), one on/off option of the
 * subcommand's own, also spelled -`flag_short` when that is not 0. Returns 0 with optind at
 * the first operand, or the usage error's status.
 */
typedef struct msb_cli_file_args {
	msb_cli_key key;
	const char *workdir; /* NULL: the spec's work_dir */
	bool flag;
} msb_cli_file_args;
int msb_cli_file_options(int argc, char **argv, const char *usage, const char *flag,
			 char flag_short, msb_cli_file_args *out);

/*
 * Everything a sandbox subcommand does first: load the file, build the router, find the
 * spec of `kind`, acquire the sandbox for the key (both --scope and --thread required).
 * On a terminal, an acquire slower than half a second says so on stderr (a microVM boots).
 */
typedef struct msb_cli_session {
	msb_config *cfg;
	msb_router *router;
	const msb_spec *spec;
	msb_sandbox *sandbox;
	msb_key key;
	msb_spec forked; /* with --from: the kind's spec asking for the fork */
} msb_cli_session;
msb_errc msb_cli_session_open(msb_cli_session *s, const char *kind, const msb_cli_key *key,
			      msb_error *err);
void msb_cli_session_close(msb_cli_session *s);

/*
 * Host input sent into a sandbox (cli_input.c). input_open opens LOCAL ("-": standard input)
 * for a put, refusing what is not a regular file (a FIFO, a device, a directory) before a
 * read. read_bounded reads `fd` to its end into `buf`, refused with SandboxTransferCapExceeded
 * naming `what` and `cap` as soon as more than `cap` bytes have come (a regular file over it
 * before any read), so memory never grows past the cap.
 */
msb_errc msb_cli_input_open(const char *path, int *fd, msb_error *err);
msb_errc msb_cli_read_bounded(int fd, const char *what, uint64_t cap, msb_buf *buf,
			      msb_error *err);

/*
 * Pass a guest's result on: stdout and stderr byte for byte (or one JSON object), and
 * return the exit status msb should end with — the guest's own, 124 when it timed out.
 */
int msb_cli_result(const msb_exec_result *res, double timeout);
/*
 * --timeout SEC of exec and run-code: a positive duration. 0 is refused rather than passed
 * on, where it would mean "the backend's default" and then be reported as a 0 s timeout.
 * Returns 0, or the usage error's status.
 */
int msb_cli_timeout_option(const char *arg, double *timeout);

/* Write all of `data` to `fd`, retrying short writes; a failed write ends it quietly. */
void msb_cli_put_all(int fd, const void *data, size_t len);
/*
 * exec, streamed to msb's stdout and stderr as the guest writes (or as JSON lines with
 * --json, one per chunk; the result is then printed by msb_cli_result), msb's stdin
 * forwarded as it arrives when `forward_stdin`.
 */
msb_errc msb_cli_exec_stream(msb_sandbox *sandbox, const msb_exec_request *req,
			     bool forward_stdin, bool tty, msb_exec_result *res, msb_error *err);

/*
 * The background subcommands (cli_bg.c). bg_open parses the common and key options plus
 * `extra` (handled by `own`: 1 taken, 0 not its, -1 a usage error already reported), checks
 * the operands `takes` says ("KIND" or "KIND ID", the ID a handle's shape) and opens the
 * session of KIND for the key. Returns 0 with optind at KIND and `s` open, else the usage
 * error's status or, when the session cannot open, `fail_status` after the error line.
 */
int msb_cli_bg_open(int argc, char **argv, const char *usage, const char *takes,
		    const struct option *extra, int (*own)(int c, const char *arg, void *ctx),
		    void *ctx, int fail_status, msb_cli_session *s);
/* One command's status: a JSON object (no newline), or one line of `msb ps`'s table. */
void msb_cli_bg_status_json(const msb_bg_status *st);
void msb_cli_bg_status_text(const msb_bg_status *st);
/* An ended command's exit status as msb's: its own, 124 when its timeout killed it. */
int msb_cli_bg_exit_status(const msb_bg_status *st);
/* exec --background: start req in the key's sandbox of `kind`, print its handle. */
int msb_cli_exec_background(const char *kind, const msb_cli_key *key, msb_exec_request *req,
			    bool forward_stdin);
/* -s SIGNAL: a name (TERM, SIGTERM) or a number; returns 0 or the usage error's status. */
int msb_cli_signal_option(const char *arg, int *signal);

/*
 * exec -t (cli_terminal.c): make the host terminal raw (when stdin is one), restored on
 * return, at exit and on every fatal signal; returns the fd that becomes readable when the
 * window's size changes (-1 when none could be made).
 */
int msb_cli_terminal_raw(void);
void msb_cli_terminal_restore(void);
/* The window's size (24x80 when msb is not on a terminal), for msb_exec_stream.get_size. */
void msb_cli_terminal_size(void *ctx, uint16_t *rows, uint16_t *cols);

#endif
