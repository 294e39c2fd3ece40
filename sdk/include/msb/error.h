/*
 * msb/error.h — the one error type carried through msb, its plugins and its command.
 *
 * Every fallible call returns an msb_errc (MSB_OK on success) and, when the caller passed
 * one, fills an msb_error with the same code and one sentence saying what was refused, by
 * whom, and why. The code is for branching; the sentence is for a person and a log line,
 * never to be parsed. Each code has a stable name — the seed's exception name where the seed
 * has one (SandboxEgressNotEnforced, NoSandboxBackend, …) — which every --json output and log
 * line carries, so a host migrating from the Python package matches the same words.
 */
#ifndef MSB_ERROR_H
#define MSB_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MSB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MSB_PRINTF(f, a)
#endif

/*
 * Codes are append-only: a value, once shipped, keeps its meaning, because plugins built
 * against an older SDK return them across the ABI.
 */
typedef enum msb_errc {
	MSB_OK = 0,
	/* Generic failures, named as the seed names the Python builtins they replace. */
	MSB_E_VALUE,                    /* ValueError: bad input (a word, a path, a spec) */
	MSB_E_TYPE,                     /* TypeError: a value of the wrong shape */
	MSB_E_NOMEM,                    /* MemoryError */
	MSB_E_OS,                       /* OSError: a system call failed */
	MSB_E_NOT_FOUND,                /* FileNotFoundError */
	MSB_E_NOT_DIR,                  /* NotADirectoryError */
	MSB_E_IS_DIR,                   /* IsADirectoryError */
	MSB_E_PERMISSION,               /* PermissionError */
	MSB_E_TIMEOUT,                  /* TimeoutError: a backend bounding its own call */
	MSB_E_NOT_IMPLEMENTED,          /* NotImplementedError: an undeclared capability */
	MSB_E_IMPORT,                   /* ImportError: a plugin file that cannot be loaded */
	/* The router's refusals, with the seed's names. */
	MSB_E_BACKEND_NOT_PERMITTED,    /* SandboxBackendNotPermitted */
	MSB_E_NO_BACKEND,               /* NoSandboxBackend */
	MSB_E_CAPABILITY_NOT_SUPPORTED, /* SandboxCapabilityNotSupported */
	MSB_E_CAPABILITY_DENIED,        /* SandboxCapabilityDenied */
	MSB_E_IDENTITY_DENIED,          /* SandboxIdentityDenied */
	MSB_E_OS_FAMILY_NOT_SUPPORTED,  /* SandboxOsFamilyNotSupported */
	MSB_E_TRANSFER_LIMITS_NOT_PERMITTED, /* SandboxTransferLimitsNotPermitted */
	MSB_E_EGRESS_NOT_ENFORCED,      /* SandboxEgressNotEnforced */
	MSB_E_SCOPE_NOT_ENFORCED,       /* SandboxScopeNotEnforced */
	MSB_E_UNCLEAN,                  /* SandboxUnclean */
	/* Running things. */
	MSB_E_QUEUED_TIMEOUT,           /* SandboxQueuedTimeout */
	MSB_E_PROGRAM_TIMEOUT,          /* SandboxProgramTimeout */
	/* Getting files back. */
	MSB_E_TRANSFER_CAP_EXCEEDED,    /* SandboxTransferCapExceeded */
	MSB_E_OUTPUT_MISSING,           /* SandboxOutputMissing */
	MSB_E_OUTPUT_SIZE_UNKNOWN,      /* SandboxOutputSizeUnknown */
	MSB_E_ARTIFACT_NAME_COLLISION,  /* SandboxArtifactNameCollision */
	MSB_E_LANDING_EXISTS,           /* SandboxLandingExists */
	MSB_E_LANDING_NOT_CONFINED,     /* SandboxLandingNotConfined */
	MSB_E_LANDING_NOT_TEXT,         /* SandboxLandingNotText */
	/* The C form's own: no Python counterpart exists for these. */
	MSB_E_CONFIG,                   /* SandboxConfigInvalid: sandbox.yaml refused */
	MSB_E_PROTOCOL,                 /* SandboxProtocolError: a guest agent peer refused */
	MSB_E_BACKEND,                  /* SandboxBackendError: an engine failed */
	/* Appended after 27.0's first cut: the seed's remaining output refusals. */
	MSB_E_ARTIFACT_NAME_INVALID,    /* SandboxArtifactNameInvalid */
	MSB_E_OUTPUT_SINK_REQUIRED,     /* SandboxOutputSinkRequired */
	MSB_E_OUTPUT_NOT_REGULAR,       /* SandboxOutputNotRegular */
	/* The host-tool registry's registration refusals. */
	MSB_E_HOST_TOOL_NOT_DECLARED,   /* HostToolNotDeclared */
	MSB_E_HOST_TOOL_IDENTITY_NOT_ALLOWED, /* HostToolIdentityNotAllowed */
	MSB_E__COUNT
} msb_errc;

/*
 * A zeroed msb_error (MSB_ERROR_INIT) is ready to use; msb_error_clear() frees its message
 * and makes it ready again. The message is heap-allocated because a per-spec refusal quotes
 * every registered backend's own refusal, and truncating that would hide the one that mattered.
 */
typedef struct msb_error {
	msb_errc code;
	char *message;
} msb_error;

#define MSB_ERROR_INIT { MSB_OK, NULL }

/* The stable name of a code ("SandboxEgressNotEnforced"); "Unknown" outside the enum. */
const char *msb_errc_name(msb_errc code);
/* The code whose name is `name`, or MSB_E__COUNT. */
msb_errc msb_errc_from_name(const char *name);

/*
 * Record a failure. `err` may be NULL (the caller wants only the code). Replaces whatever the
 * error held. Returns `code`, so a failing path reads `return msb_error_set(err, …);`.
 */
msb_errc msb_error_set(msb_error *err, msb_errc code, const char *fmt, ...) MSB_PRINTF(3, 4);
msb_errc msb_error_vset(msb_error *err, msb_errc code, const char *fmt, va_list ap)
	MSB_PRINTF(3, 0);
/* As msb_error_set, with strerror(errnum) appended after ": ". */
msb_errc msb_error_set_errno(msb_error *err, msb_errc code, int errnum, const char *fmt, ...)
	MSB_PRINTF(4, 5);
/* Put context in front of the message ("plugin x.so: " + message); keeps the code. */
msb_errc msb_error_prefix(msb_error *err, const char *fmt, ...) MSB_PRINTF(2, 3);
/* Move src into dst (dst cleared first); src is left cleared. */
void msb_error_move(msb_error *dst, msb_error *src);
/* The message, never NULL: "" when none was set. */
const char *msb_error_message(const msb_error *err);
void msb_error_clear(msb_error *err);

#ifdef __cplusplus
}
#endif
#endif
