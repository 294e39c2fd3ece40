/*
 * msb/types.h — the values that cross between a host, the router and a backend: the key
 * that addresses a sandbox, the spec that says what a workload needs, transfer limits,
 * command results, directory entries and disposal answers.
 *
 * Strings in these structs are borrowed: the caller owns them for the duration of the call.
 * Results (msb_buf, msb_entry_list, msb_disposal_failure) are owned by whoever the call
 * handed them to and freed with the matching *_free function, whichever side allocated them,
 * because host and plugins share one libc.
 */
#ifndef MSB_TYPES_H
#define MSB_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSB_MIB ((uint64_t)1024 * 1024)

/*
 * How much may cross the boundary in one direction, for one collection. All three fields
 * are load-bearing: ten thousand files one byte under the per-file cap cost exactly what
 * the cap was written to prevent.
 */
typedef struct msb_transfer_limits {
	uint64_t max_bytes_per_file;
	uint64_t max_total_bytes;
	uint64_t max_files;
} msb_transfer_limits;

/*
 * One constant for both sides of the match: a spec that says nothing asks for exactly what
 * a backend that says nothing allows.
 */
#define MSB_DEFAULT_TRANSFER_LIMITS { 8 * MSB_MIB, 32 * MSB_MIB, 64 }

/* A backend's ceilings, one per direction. */
typedef struct msb_sandbox_limits {
	msb_transfer_limits files_in;
	msb_transfer_limits files_out;
} msb_sandbox_limits;

#define MSB_DEFAULT_SANDBOX_LIMITS { MSB_DEFAULT_TRANSFER_LIMITS, MSB_DEFAULT_TRANSFER_LIMITS }

/* Whether every field of `ask` sits at or below `ceiling`'s: asked, never clamped. */
static inline bool msb_transfer_limits_within(const msb_transfer_limits *ask,
					      const msb_transfer_limits *ceiling)
{
	return ask->max_bytes_per_file <= ceiling->max_bytes_per_file &&
	       ask->max_total_bytes <= ceiling->max_total_bytes &&
	       ask->max_files <= ceiling->max_files;
}

/*
 * The one sandbox a caller may reach. scope and thread_id come from the host's request
 * context (msb_caller_context in core), never from model input: a key a model can supply
 * would let one conversation address another's sandbox. call_id is "" unless the workload
 * runs one sandbox per call; the router fills it in at `call` scope.
 */
typedef struct msb_key {
	const char *scope;
	const char *thread_id;
	const char *agent_dir;
	const char *call_id;
} msb_key;

/* One artifact a workload says it produces, as a literal path relative to work_dir. */
typedef struct msb_declared_output {
	const char *path;
	msb_disposition disposition; /* LAND by default */
	const char *media_type;      /* declared, never sniffed; may be NULL */
	bool required;               /* true by default */
	const char *name;            /* the landing name; NULL means `path` */
} msb_declared_output;

/*
 * What a sandbox of a given kind needs. `kind` is part of the sandbox's identity: a backend
 * never serves two kinds from one sandbox. Build one with msb_spec_init() (the seed's
 * defaults) and check it with msb_spec_validate().
 */
typedef struct msb_spec {
	const char *kind;
	const char *image;                   /* resolved by the backend, never parsed here */
	const char *work_dir;                /* default "/msb/work" */
	msb_egress egress;                   /* default closed */
	const char *const *egress_allow;     /* NULL-terminated hosts; NULL or empty: none */
	msb_set requires;                    /* capabilities; default MSB_DEFAULT_CAPABILITIES */
	int min_isolation;                   /* an msb_isolation raising the host floor, or MSB_UNSET */
	msb_scope isolation_scope;           /* default conversation */
	int requires_os_family;              /* an msb_os_family, or MSB_UNSET: asks nothing */
	msb_transfer_limits files_in;        /* default MSB_DEFAULT_TRANSFER_LIMITS */
	msb_transfer_limits files_out;       /* default MSB_DEFAULT_TRANSFER_LIMITS */
	const msb_declared_output *declared_outputs;
	size_t n_declared_outputs;
	bool outputs_named_at_call_time;
	const char *const *labels;           /* NULL-terminated "key=value"; opaque here */
	msb_set identities;                  /* whose authority its host tools exercise */
	/*
	 * Appended (issue 23): the workload streams (exec_stream: output as produced, stdin as
	 * it goes, terminals), so a backend whose plugin lacks the operation is refused at
	 * route time. A flag of its own, not a word of `requires`: the seed's capability
	 * vocabulary, which both sides of the match share with the Python package, has no
	 * such word, and an operation of the descriptor is not a declared capability.
	 */
	bool streaming;
	/*
	 * Appended (issue 22): start the sandbox as a fork of this snapshot (the backend's
	 * snapshot_start, not acquire); NULL: an ordinary acquire. Routing then requires the
	 * `snapshot` capability, so a plugin built before it is never handed one.
	 */
	const char *from_snapshot;
} msb_spec;

#define MSB_DEFAULT_WORK_DIR "/msb/work"

/* Fill `spec` with the seed's defaults for `kind` (borrowed). */
void msb_spec_init(msb_spec *spec, const char *kind);
/*
 * Refuse a spec no router should see: no kind; a relative work_dir; `egress_allow` hosts
 * without `egress: allowlist` (a host list is the payload of an allowlist run and has no
 * meaning without it); a vocabulary value out of range; a declared output whose path is not
 * a literal relative path.
 */
msb_errc msb_spec_validate(const msb_spec *spec, msb_error *err);

/* A growable byte buffer. Zero-initialise; free with msb_buf_free. data is NUL-terminated. */
typedef struct msb_buf {
	unsigned char *data;
	size_t len;
	size_t cap;
} msb_buf;

msb_errc msb_buf_append(msb_buf *buf, const void *data, size_t len, msb_error *err);
void msb_buf_free(msb_buf *buf);

/* One command, as an argv: never a shell string. */
typedef struct msb_exec_request {
	const char *const *argv;         /* NULL-terminated; argv[0] resolved on the guest's PATH */
	const char *working_directory;   /* guest path; NULL means the spec's work_dir */
	double timeout;                  /* seconds, wall-clock from the call; <= 0: the backend's default */
	size_t max_output;               /* per stream; 0: the backend's default */
	const void *stdin_data;          /* may be NULL */
	size_t stdin_len;
} msb_exec_request;

/* What the kill of a timed-out command reached (msb_exec_result.kill_reach). */
typedef enum msb_kill_reach {
	MSB_REACH_UNSAID = 0, /* the backend did not say */
	MSB_REACH_GROUP = 1,  /* its process group: what left the group may still run */
	MSB_REACH_TREE = 2,   /* everything it started, however it detached (setsid, double fork) */
} msb_kill_reach;

typedef struct msb_exec_result {
	int exit_code;       /* the program's status, or 128+signal when a signal ended it */
	int term_signal;     /* the signal that ended it, or 0 */
	bool timed_out;      /* the deadline passed and the process tree was killed */
	bool out_truncated;  /* more stdout was produced than max_output; the rest was dropped */
	bool err_truncated;
	/*
	 * An msb_kill_reach, when timed_out. It sits in what was padding before `out`, so the
	 * struct's size and every other field's offset are what they were: a host or plugin
	 * built before it still agrees on the layout (a zeroed result reads as UNSAID).
	 */
	unsigned char kill_reach;
	msb_buf out;
	msb_buf err;
} msb_exec_result;

void msb_exec_result_free(msb_exec_result *res);

/*
 * One path inside a sandbox, as stat_file and list_dir see it. `path` is relative to the
 * working directory the call was made against. size_bytes is -1 when unknown, and unknown
 * fails closed: an entry of unknown size is refused rather than read. A link's size is -1
 * too — a stat of one measures the target string, not anything readable.
 */
typedef struct msb_entry {
	char *path;
	msb_entry_kind kind;
	int64_t size_bytes;
} msb_entry;

typedef struct msb_entry_list {
	msb_entry *items;
	size_t len;
} msb_entry_list;

msb_errc msb_entry_list_add(msb_entry_list *list, const char *path, msb_entry_kind kind,
			    int64_t size_bytes, msb_error *err);
void msb_entry_list_free(msb_entry_list *list);

/*
 * A delete that is known not to have landed. `detail` is the backend's own sentence, for a
 * log, never to be parsed; the code is the contract.
 */
typedef struct msb_disposal_failure {
	msb_disposal_code code;
	char *detail; /* heap-allocated; msb_disposal_failure_free releases it */
} msb_disposal_failure;

msb_errc msb_disposal_failure_set(msb_disposal_failure *f, msb_disposal_code code,
				  const char *fmt, ...) MSB_PRINTF(3, 4);
void msb_disposal_failure_free(msb_disposal_failure *f);
/*
 * Fold `more` into `into`: the more actionable code wins and every detail is kept ("; "
 * joined). `into->detail == NULL` means `into` holds no failure yet. `more` is consumed.
 */
void msb_disposal_failure_fold(msb_disposal_failure *into, msb_disposal_failure *more);

/* The answer to dispose_scope: how many went, and what did not. */
typedef struct msb_scope_purge {
	uint64_t disposed;
	bool has_undisposed;
	msb_disposal_failure undisposed;
} msb_scope_purge;

void msb_scope_purge_free(msb_scope_purge *purge);

#ifdef __cplusplus
}
#endif
#endif
