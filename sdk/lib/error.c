/*
 * error.c — msb_error: one code, one heap-allocated sentence.
 *
 * Allocation failure while recording an error must not turn into a second failure, so a
 * message that cannot be allocated degrades to the code alone (msb_error_message returns
 * the code's name then), never to a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/error.h>

static const char *const errc_names[MSB_E__COUNT] = {
	[MSB_OK] = "Ok",
	[MSB_E_VALUE] = "ValueError",
	[MSB_E_TYPE] = "TypeError",
	[MSB_E_NOMEM] = "MemoryError",
	[MSB_E_OS] = "OSError",
	[MSB_E_NOT_FOUND] = "FileNotFoundError",
	[MSB_E_NOT_DIR] = "NotADirectoryError",
	[MSB_E_IS_DIR] = "IsADirectoryError",
	[MSB_E_PERMISSION] = "PermissionError",
	[MSB_E_TIMEOUT] = "TimeoutError",
	[MSB_E_NOT_IMPLEMENTED] = "NotImplementedError",
	[MSB_E_IMPORT] = "ImportError",
	[MSB_E_BACKEND_NOT_PERMITTED] = "SandboxBackendNotPermitted",
	[MSB_E_NO_BACKEND] = "NoSandboxBackend",
	[MSB_E_CAPABILITY_NOT_SUPPORTED] = "SandboxCapabilityNotSupported",
	[MSB_E_CAPABILITY_DENIED] = "SandboxCapabilityDenied",
	[MSB_E_IDENTITY_DENIED] = "SandboxIdentityDenied",
	[MSB_E_OS_FAMILY_NOT_SUPPORTED] = "SandboxOsFamilyNotSupported",
	[MSB_E_TRANSFER_LIMITS_NOT_PERMITTED] = "SandboxTransferLimitsNotPermitted",
	[MSB_E_EGRESS_NOT_ENFORCED] = "SandboxEgressNotEnforced",
	[MSB_E_SCOPE_NOT_ENFORCED] = "SandboxScopeNotEnforced",
	[MSB_E_UNCLEAN] = "SandboxUnclean",
	[MSB_E_QUEUED_TIMEOUT] = "SandboxQueuedTimeout",
	[MSB_E_PROGRAM_TIMEOUT] = "SandboxProgramTimeout",
	[MSB_E_TRANSFER_CAP_EXCEEDED] = "SandboxTransferCapExceeded",
	[MSB_E_OUTPUT_MISSING] = "SandboxOutputMissing",
	[MSB_E_OUTPUT_SIZE_UNKNOWN] = "SandboxOutputSizeUnknown",
	[MSB_E_ARTIFACT_NAME_COLLISION] = "SandboxArtifactNameCollision",
	[MSB_E_LANDING_EXISTS] = "SandboxLandingExists",
	[MSB_E_LANDING_NOT_CONFINED] = "SandboxLandingNotConfined",
	[MSB_E_LANDING_NOT_TEXT] = "SandboxLandingNotText",
	[MSB_E_CONFIG] = "SandboxConfigInvalid",
	[MSB_E_PROTOCOL] = "SandboxProtocolError",
	[MSB_E_BACKEND] = "SandboxBackendError",
	[MSB_E_ARTIFACT_NAME_INVALID] = "SandboxArtifactNameInvalid",
	[MSB_E_OUTPUT_SINK_REQUIRED] = "SandboxOutputSinkRequired",
	[MSB_E_OUTPUT_NOT_REGULAR] = "SandboxOutputNotRegular",
	[MSB_E_HOST_TOOL_NOT_DECLARED] = "HostToolNotDeclared",
	[MSB_E_HOST_TOOL_IDENTITY_NOT_ALLOWED] = "HostToolIdentityNotAllowed",
};

const char *msb_errc_name(msb_errc code)
{
	if ((int)code < 0 || code >= MSB_E__COUNT || !errc_names[code])
		return "Unknown";
	return errc_names[code];
}

msb_errc msb_errc_from_name(const char *name)
{
	for (int i = 0; name && i < MSB_E__COUNT; i++)
		if (errc_names[i] && strcmp(errc_names[i], name) == 0)
			return (msb_errc)i;
	return MSB_E__COUNT;
}

/*
 * A control character in a message is written as an escape (\n, \t, \x1b, \u009b): a
 * message quotes what others wrote — a sandbox.yaml value, a guest's file name, an agent's
 * reply — and is then printed on an operator's terminal, where an escape sequence would be
 * obeyed, not read. C0 controls, DEL, and C1 controls in their UTF-8 form (C2 80..9F) are
 * escaped; everything else, other UTF-8 included, is kept. The message is replaced in place;
 * on allocation failure it is kept as it was.
 */
static void escape_controls(char **message)
{
	const unsigned char *m = (const unsigned char *)*message;
	size_t extra = 0;
	for (size_t i = 0; m && m[i]; i++)
		if (m[i] < 0x20 || m[i] == 0x7f || (m[i] == 0xc2 && m[i + 1] >= 0x80 && m[i + 1] <= 0x9f))
			extra += 5;
	if (!extra)
		return;
	size_t len = strlen(*message);
	char *out = malloc(len + extra + 1), *w = out;
	if (!out)
		return;
	for (size_t i = 0; i < len; i++) {
		if (m[i] == '\n' || m[i] == '\t') {
			*w++ = '\\';
			*w++ = m[i] == '\n' ? 'n' : 't';
		} else if (m[i] < 0x20 || m[i] == 0x7f) {
			w += sprintf(w, "\\x%02x", m[i]);
		} else if (m[i] == 0xc2 && m[i + 1] >= 0x80 && m[i + 1] <= 0x9f) {
			w += sprintf(w, "\\u%04x", m[++i]);
		} else {
			*w++ = (char)m[i];
		}
	}
	*w = '\0';
	free(*message);
	*message = out;
}

msb_errc msb_error_vset(msb_error *err, msb_errc code, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	free(err->message);
	err->message = NULL;
	err->code = code;
	if (vasprintf(&err->message, fmt, ap) < 0)
		err->message = NULL;
	escape_controls(&err->message);
	return code;
}

msb_errc msb_error_set(msb_error *err, msb_errc code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	msb_error_vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

msb_errc msb_error_set_errno(msb_error *err, msb_errc code, int errnum, const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	va_start(ap, fmt);
	msb_error_vset(err, code, fmt, ap);
	va_end(ap);
	char *joined = NULL;
	if (asprintf(&joined, "%s: %s", msb_error_message(err), strerror(errnum)) >= 0) {
		free(err->message);
		err->message = joined;
	}
	return code;
}

msb_errc msb_error_prefix(msb_error *err, const char *fmt, ...)
{
	if (!err)
		return MSB_OK;
	char *prefix = NULL, *joined = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&prefix, fmt, ap);
	va_end(ap);
	if (n >= 0 && asprintf(&joined, "%s%s", prefix, msb_error_message(err)) >= 0) {
		free(err->message);
		err->message = joined;
		escape_controls(&err->message);
	}
	if (n >= 0)
		free(prefix);
	return err->code;
}

void msb_error_move(msb_error *dst, msb_error *src)
{
	if (!dst) {
		msb_error_clear(src);
		return;
	}
	msb_error_clear(dst);
	if (!src)
		return;
	*dst = *src;
	src->code = MSB_OK;
	src->message = NULL;
}

const char *msb_error_message(const msb_error *err)
{
	if (!err)
		return "";
	if (err->message)
		return err->message;
	return err->code == MSB_OK ? "" : msb_errc_name(err->code);
}

void msb_error_clear(msb_error *err)
{
	if (!err)
		return;
	free(err->message);
	err->message = NULL;
	err->code = MSB_OK;
}
