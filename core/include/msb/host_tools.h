/*
 * msb/host_tools.h — the functions a sandboxed program may call back into the host, and the
 * one door every such call goes through (host API; the C form of the seed's HostToolRegistry,
 * @sandbox_tool and HostToolRun).
 *
 * HOST_TOOLS is the one capability where trust crosses outward: a host tool's body runs in
 * the host process, with the host's authority, driven by model-written code, past whatever
 * middleware the host runs. So:
 *
 *   - the registry starts empty, and nothing is callable until a host registers it;
 *   - a registration answers every information-flow leg (source integrity, sink, identity),
 *     where "none" is an answer ("not that role") and a missing leg is no declaration at all;
 *     the declaration is copied at registration, and that copy is the only one ever read;
 *   - allowed_identities (default {app}) refuses at registration a tool exercising broader
 *     authority: a USER tool, or an undeclared one (read as APP). User authority is opt-in,
 *     and a USER tool is served only where the host mints that authority per run;
 *   - msb_host_tools_aggregate() seals the registry as it derives policy from it, so the
 *     surface a host classified is the surface that is served;
 *   - each run is bounded by a call cap (refusals count) and by response caps reusing
 *     msb_transfer_limits (per response, per run, responses delivered);
 *   - arguments are validated host-side, at the registry's one door, against the typed
 *     signature the tool declared — never in a guest shim, which model code can edit.
 *
 * IDENTITY APP IS NOT THE SAFE OPTION, ONLY THE DECLARED ONE: it is the application's full
 * authority. Least privilege comes from what a host registers, never from what it declares.
 *
 * A host tool is an ordinary C function, called through libffi with its declared arguments
 * in order, then (USER tools only) the run's minted identity, then the response buffer and
 * an error:
 *
 *   int lookup(const char *sku, int64_t qty, msb_buf *out, msb_error *err);
 *   int notify(const char *to, const char *user_identity, msb_buf *out, msb_error *err);
 *
 * It returns 0 with its response in `out`, or non-zero (ideally an msb_errc, with `err` set)
 * when it failed; the guest is then told only that it failed, and the host's log gets why.
 */
#ifndef MSB_HOST_TOOLS_H
#define MSB_HOST_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/error.h>
#include <msb/observer.h>
#include <msb/sandbox.h>
#include <msb/types.h>
#include <msb/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How many calls one run may make, refusals included, unless the registry says otherwise. */
#define MSB_DEFAULT_MAX_HOST_TOOL_CALLS_PER_RUN 16
/* How many parameters a host tool may declare. */
#define MSB_HOST_TOOL_MAX_PARAMS 16
/* How long a tool name may be; names are [A-Za-z0-9_.-], the key a guest sends. */
#define MSB_HOST_TOOL_MAX_NAME 64

/* Each leg's zero value is UNANSWERED: a declaration left at zero declares nothing. */
typedef enum msb_flow_source {
	MSB_FLOW_SOURCE_UNANSWERED = 0,
	MSB_FLOW_SOURCE_NONE,      /* brings nothing external in */
	MSB_FLOW_SOURCE_UNTRUSTED, /* weaker first: the aggregate takes the weakest */
	MSB_FLOW_SOURCE_TRUSTED,
} msb_flow_source;

typedef enum msb_flow_sink {
	MSB_FLOW_SINK_UNANSWERED = 0,
	MSB_FLOW_SINK_NONE,        /* nothing conversation-derived flows out through it */
	MSB_FLOW_SINK_CAPPED,      /* something does; sink_cap is the host's confidentiality cap */
} msb_flow_sink;

typedef enum msb_flow_identity {
	MSB_FLOW_IDENTITY_UNANSWERED = 0,
	MSB_FLOW_IDENTITY_NONE,    /* pure computation: no authority beyond returning a value */
	MSB_FLOW_IDENTITY_APP,     /* the application's full authority */
	MSB_FLOW_IDENTITY_USER,    /* the user's delegated authority, minted per run */
} msb_flow_identity;

/*
 * A tool's information-flow declaration (the seed's @sandbox_tool stamp). No defaults: a
 * defaulted leg would be indistinguishable from a never-considered one. A declaration with
 * any leg unanswered, a CAPPED sink without a cap, or a NONE sink with one, is no declaration
 * (it reads as unstamped), because a partial answer is not a weaker declaration.
 */
typedef struct msb_host_tool_declaration {
	msb_flow_source source;
	msb_flow_sink sink;
	const char *sink_cap;      /* opaque host vocabulary: never ordered, never folded */
	msb_flow_identity identity;
} msb_host_tool_declaration;

/* The argument types a host tool may declare, as a guest's JSON can carry them. */
typedef enum msb_arg_type {
	MSB_ARG_STRING = 1, /* const char *, valid UTF-8 */
	MSB_ARG_INT64,      /* int64_t */
	MSB_ARG_DOUBLE,     /* double, finite (an integer argument is accepted for it) */
	MSB_ARG_BOOL,       /* bool */
} msb_arg_type;

/* "string", "int64", "double", "bool"; NULL outside the enum. */
const char *msb_arg_type_name(msb_arg_type type);

typedef struct msb_host_tool_param {
	const char *name;
	msb_arg_type type;
} msb_host_tool_param;

/* Any function pointer, cast for the descriptor: MSB_HOST_TOOL_FN(lookup). */
typedef void (*msb_host_tool_fn)(void);
#define MSB_HOST_TOOL_FN(f) ((msb_host_tool_fn)(f))

/* One tool to register. Callers allocate it: start from MSB_HOST_TOOL_INIT. */
typedef struct msb_host_tool {
	uint32_t struct_size;
	const char *name;
	msb_host_tool_fn fn;
	const msb_host_tool_param *params; /* in the function's argument order */
	size_t n_params;
	const msb_host_tool_declaration *declaration; /* NULL: unstamped */
} msb_host_tool;

#define MSB_HOST_TOOL_INIT { (uint32_t)sizeof(msb_host_tool), NULL, NULL, NULL, 0, NULL }

/*
 * The run's user authority, minted for a USER tool's first call in a run and handed to every
 * USER tool the run calls. Fill `identity` (a string; what it means is the host's) or fail.
 */
typedef msb_errc (*msb_mint_user_identity_fn)(void *ctx, const msb_key *key, const char *call,
					      msb_buf *identity, msb_error *err);

/* The registry's policy. Callers allocate it: start from MSB_HOST_TOOLS_OPTIONS_INIT. */
typedef struct msb_host_tools_options {
	uint32_t struct_size;
	bool require_declared;               /* refuse unstamped tools at registration */
	msb_set allowed_identities;          /* over MSB_AXIS_IDENTITY; default {app} */
	uint64_t max_calls_per_run;          /* >= 1; default 16 */
	msb_transfer_limits response_limits; /* every leg >= 1: per response, per run, count */
	const msb_observer *observer;        /* HostToolCalled; may be NULL */
	msb_mint_user_identity_fn mint_user_identity; /* NULL: USER tools register, calls refused */
	void *mint_ctx;
	void (*log)(void *ctx, const char *line); /* detail lines; NULL: stderr */
	void *log_ctx;
} msb_host_tools_options;

#define MSB_HOST_TOOLS_OPTIONS_INIT                                                           \
	{ (uint32_t)sizeof(msb_host_tools_options), false, MSB_BIT(MSB_IDENTITY_APP),             \
	  MSB_DEFAULT_MAX_HOST_TOOL_CALLS_PER_RUN, MSB_DEFAULT_TRANSFER_LIMITS, NULL, NULL, NULL, \
	  NULL, NULL }

typedef struct msb_host_tools msb_host_tools;

/* Refuses (MSB_E_VALUE) a zero call cap or response leg: a host wanting none wants no tools. */
msb_errc msb_host_tools_new(const msb_host_tools_options *options, msb_host_tools **out,
			    msb_error *err);
void msb_host_tools_free(msb_host_tools *registry);

/*
 * Make `tool` callable. Refuses, naming the tool: a sealed registry, no function, a name
 * that is empty, too long or outside [A-Za-z0-9_.-], a duplicate name (never replaced), an
 * unnamed, duplicate or untyped parameter, more than MSB_HOST_TOOL_MAX_PARAMS (MSB_E_VALUE);
 * an unstamped tool when require_declared is on (HostToolNotDeclared); a tool whose authority
 * is outside allowed_identities (HostToolIdentityNotAllowed). The declaration is copied.
 */
msb_errc msb_host_tools_register(msb_host_tools *registry, const msb_host_tool *tool,
				 msb_error *err);

size_t msb_host_tools_count(const msb_host_tools *registry);
/* The i-th registered name, in registration order; NULL past the end. */
const char *msb_host_tools_name_at(const msb_host_tools *registry, size_t i);
/* The declaration captured at registration; NULL for an unstamped or unknown tool. */
const msb_host_tool_declaration *msb_host_tools_declaration(const msb_host_tools *registry,
							    const char *name);
bool msb_host_tools_sealed(const msb_host_tools *registry);

/* What the registry's contents mean for the one model-facing tool that runs guest code. */
typedef struct msb_host_tools_aggregate {
	/* The weakest integrity over sources only (an undeclared tool counts as untrusted);
	 * MSB_FLOW_SOURCE_NONE when no tool is a source: the workload's own default stands. */
	msb_flow_source result_integrity;
	const char *const *outbound_caps; /* NULL-terminated distinct sink caps, owned by the registry */
	msb_set identities;               /* over MSB_AXIS_IDENTITY; undeclared tools read as app */
	bool requires_approval;           /* a USER tool raises the whole surface to approval */
	bool has_undeclared;
} msb_host_tools_aggregate;

/* Derive the aggregate, and seal the registry: no registration is accepted after this. */
msb_errc msb_host_tools_aggregate_seal(msb_host_tools *registry, msb_host_tools_aggregate *out,
				       msb_error *err);

/* ---- one run: the cap, the ledger, the one door ---------------------------------- */

typedef struct msb_host_tool_arg {
	const char *name;
	msb_arg_type type;
	union {
		const char *s;
		int64_t i;
		double d;
		bool b;
	} v;
} msb_host_tool_arg;

/* One call's answer. Zero-initialise; free with msb_host_tool_result_free. */
typedef struct msb_host_tool_result {
	msb_errc code;     /* MSB_OK when served; else the refusal's code */
	msb_buf response;  /* served: the tool's bytes */
	char *refusal;     /* refused: the sentence the guest reads (bounded, sanitized) */
} msb_host_tool_result;

void msb_host_tool_result_free(msb_host_tool_result *result);

typedef struct msb_host_tool_run msb_host_tool_run;

/*
 * Start a run: one guest program's budget. `key` (may be NULL) and `call` (may be NULL) are
 * copied and carried on every HostToolCalled event and handed to the minting callback.
 */
msb_errc msb_host_tool_run_new(msb_host_tools *registry, const msb_key *key, const char *call,
			       msb_host_tool_run **out, msb_error *err);
void msb_host_tool_run_free(msb_host_tool_run *run);

/*
 * Resolve, gate, validate, call and cap: the whole contract at the one door. `name` and
 * `args` are guest input: checked, never trusted. Returns MSB_OK whenever the guest has an
 * answer, served or refused (result->code says which; a refusal ends the call, not the
 * program); fails only on the host's own trouble (out of memory). Every call counts toward
 * the run's cap, refused ones included.
 */
msb_errc msb_host_tool_run_call(msb_host_tool_run *run, const char *name,
				const msb_host_tool_arg *args, size_t n_args,
				msb_host_tool_result *result, msb_error *err);

/* How many calls the run has made, and the responses and bytes it has delivered. */
void msb_host_tool_run_ledger(const msb_host_tool_run *run, uint64_t *calls, uint64_t *delivered,
			      uint64_t *delivered_bytes);

/* ---- reaching the host from inside: calls over exec ------------------------------ */

/*
 * How one program run over msb_host_tool_calls_over_exec ended. Zero-initialise; free with
 * msb_host_tool_calls_result_free.
 */
typedef struct msb_host_tool_calls_result {
	int exit_code;      /* the program's status; -1 when it did not finish */
	bool timed_out;     /* the bound expired in the supervisor */
	bool signalled;     /* ...and SIGKILL was SENT (not proof it died: the pid is guest-written) */
	bool group;         /* ...to its process group (setsid was there); false: to it alone,
			     * and anything it spawned may still be running until disposal */
	uint64_t requests;  /* requests answered, served or refused */
	bool cleaned;       /* the transport's own files were removed (best effort) */
	msb_buf out;        /* the program's stdout and stderr, read back capped */
	msb_buf err;
} msb_host_tool_calls_result;

void msb_host_tool_calls_result_free(msb_host_tool_calls_result *result);

/*
 * Run `argv` in `sandbox` and serve the host-tool calls it makes, through `run` (the one door:
 * the same gates, cap and ceilings), until it exits or `timeout` seconds pass. The C form of
 * the seed's host_tool_calls_over_exec, built from exec and the file operations alone (the
 * spec must require exec, files_in and files_out; never files_list).
 *
 * `base` is a fresh guest directory beneath the spec's work_dir that the caller owns for this
 * run — a tool call's path (msb_tool_session_call) is the intended one. Inside it, `base/work` is the program's
 * working directory, the only place model-named files belong, and `base/run` holds what the
 * transport owns: the launcher, the shim, the request and answer files, the output and the
 * exit marker, where no name a model chooses for a work file can reach. Everything the
 * guest's scripts use is relative, because a boundary that shares the host's filesystem maps
 * only the working directory a request names.
 *
 * Inside, the program calls the shim at $MSB_HOST_TOOL:
 *     "$MSB_HOST_TOOL" lookup s:sku=A-17 i:qty=3      (types: s, i, d, b; b is true|false)
 * which prints the response and exits 0, or prints the refusal and exits 1. One request per
 * line-based file, one outstanding call at a time; a string argument cannot hold a newline.
 * The shim is not a control: a program writing request files itself is served identically,
 * because every gate is host-side.
 *
 * A program that overruns is sent SIGKILL (its process group where the guest has setsid) and
 * result->signalled says the signal was sent, no more. The transport's own files (base/run)
 * are removed on every way out, best effort; base/work is left for the caller to collect.
 * Returns MSB_OK when the run was carried out (whatever the program did); fails when the
 * transport itself could not start (the sandbox refused a write or the launch).
 */
msb_errc msb_host_tool_calls_over_exec(msb_sandbox *sandbox, msb_host_tool_run *run,
				       const char *base, const char *const *argv, double timeout,
				       msb_host_tool_calls_result *result, msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
