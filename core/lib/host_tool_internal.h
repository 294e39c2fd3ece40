/*
 * host_tool_internal.h — what a registry and a registered tool are, shared by
 * host_tool_registry.c (registration), host_tool_aggregate.c (the seal), host_tool_ffi.c
 * (calling an ordinary C function by its declared signature), host_tool_args.c (the door's
 * argument check) and host_tool_run.c (the run's cap and ledger). Private to core/lib.
 */
#ifndef MSB_HOST_TOOL_INTERNAL_H
#define MSB_HOST_TOOL_INTERNAL_H

#include <ffi.h>
#include <pthread.h>

#include <msb/host_tools.h>

/* One registered tool: everything copied at registration, never re-read from the host. */
typedef struct host_tool {
	char *name;
	msb_host_tool_fn fn;
	msb_host_tool_param params[MSB_HOST_TOOL_MAX_PARAMS]; /* names owned */
	size_t n_params;
	bool declared;
	msb_host_tool_declaration decl; /* sink_cap owned */
	/* The call's shape, prepared once: params, [user identity], out, err. */
	ffi_cif cif;
	ffi_type *atypes[MSB_HOST_TOOL_MAX_PARAMS + 3];
} host_tool;

struct msb_host_tools {
	msb_host_tools_options opt;
	/* Guards the table and the seal; tools are never freed before the registry, so a
	 * pointer looked up under the lock stays valid after it. */
	pthread_mutex_t lock;
	host_tool **tools;
	size_t n_tools, cap_tools;
	bool sealed;
	bool warned;              /* the one-time registration notice */
	const char **caps;        /* the aggregate's outbound caps, NULL-terminated */
};

/* One detail line to the registry's log. */
void host_tools_log(const msb_host_tools *reg, const char *fmt, ...) MSB_PRINTF(2, 3);

/* The registered tool called `name`, or NULL. */
const host_tool *host_tools_find(msb_host_tools *reg, const char *name);

/* The authority a tool exercises, or MSB_UNSET for none: an undeclared tool reads as app. */
int host_tool_identity(const host_tool *t);

/* Prepare t->cif from t->params (and the user-identity slot for a USER tool). */
msb_errc host_tool_ffi_prepare(host_tool *t, msb_error *err);
/*
 * Call the tool with `args` already matched to its params (args[i] is params[i]'s value).
 * Returns what the function returned.
 */
int host_tool_ffi_call(const host_tool *t, const msb_host_tool_arg *const *ordered,
		       const char *user_identity, msb_buf *out, msb_error *err);

/*
 * Match the guest's arguments to the tool's signature: every declared parameter once, with
 * its type, nothing else. On success ordered[i] is params[i]'s argument. On refusal, returns
 * its code and writes the sentence into `why`.
 */
msb_errc host_tool_args_match(const host_tool *t, const msb_host_tool_arg *args, size_t n_args,
			      const msb_host_tool_arg **ordered, char *why, size_t why_size);

/* The registry a run resolves through (its ceilings bound a transport's requests too). */
const msb_host_tools *host_tool_run_registry(const msb_host_tool_run *run);

/* Guest text, made safe to quote back: bounded, control and non-ASCII bytes replaced. */
void host_tool_quote(char *dst, size_t size, const char *guest);

#endif
