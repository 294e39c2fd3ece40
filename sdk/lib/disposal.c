/*
 * disposal.c — DisposalFailure values and their fold. A caller branches on the code, so
 * several failures fold to the most actionable one (the lowest in msb_disposal_code's
 * order), and every backend's detail is kept for the log.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <msb/types.h>

msb_errc msb_disposal_failure_set(msb_disposal_failure *f, msb_disposal_code code,
				  const char *fmt, ...)
{
	char *detail = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&detail, fmt, ap);
	va_end(ap);
	free(f->detail);
	f->code = ((int)code >= 0 && code < MSB_DISPOSAL__COUNT) ? code : MSB_DISPOSAL_UNKNOWN;
	/* A failure must stay visible even when its sentence cannot be allocated. */
	f->detail = n >= 0 ? detail : NULL;
	return MSB_OK;
}

void msb_disposal_failure_free(msb_disposal_failure *f)
{
	if (!f)
		return;
	free(f->detail);
	f->detail = NULL;
	f->code = MSB_DISPOSAL_UNKNOWN;
}

void msb_disposal_failure_fold(msb_disposal_failure *into, msb_disposal_failure *more)
{
	if (!more || !more->detail)
		return;
	if (!into->detail) {
		*into = *more;
		more->detail = NULL;
		return;
	}
	char *joined = NULL;
	if (asprintf(&joined, "%s; %s", into->detail, more->detail) >= 0) {
		free(into->detail);
		into->detail = joined;
	}
	if ((int)more->code < (int)into->code)
		into->code = more->code;
	msb_disposal_failure_free(more);
}

void msb_scope_purge_free(msb_scope_purge *purge)
{
	if (!purge)
		return;
	msb_disposal_failure_free(&purge->undisposed);
	purge->has_undisposed = false;
}
