/*
 * cli_config.c — which sandbox.yaml the command reads: the one -c names, else
 * ./sandbox.yaml, else $sysconfdir/msb/sandbox.yaml. The search stops at the first that
 * exists; a file found and refused is never silently skipped for the next.
 */
#include <errno.h>
#include <unistd.h>

#include "cli.h"

static const char *const system_file = MSB_SYSCONFDIR "/msb/sandbox.yaml";

static msb_errc find_file(const char **path, msb_error *err)
{
	if (msb_cli.config) {
		*path = msb_cli.config;
		return MSB_OK;
	}
	if (access("sandbox.yaml", F_OK) == 0) {
		*path = "sandbox.yaml";
		return MSB_OK;
	}
	if (access(system_file, F_OK) == 0) {
		*path = system_file;
		return MSB_OK;
	}
	return msb_error_set(err, MSB_E_NOT_FOUND,
			     "no sandbox.yaml: looked for ./sandbox.yaml and %s; name one with -c FILE",
			     system_file);
}

msb_errc msb_cli_load(bool open_backends, msb_cli_warnings *warnings, msb_config **out,
		      msb_error *err)
{
	const char *path = NULL;
	msb_cli.stage = "load";
	msb_errc rc = find_file(&path, err);
	if (rc != MSB_OK)
		return rc;
	msb_config_options opts = MSB_CONFIG_OPTIONS_INIT;
	opts.open_backends = open_backends;
	opts.warn = msb_cli_warn;
	opts.warn_ctx = warnings;
	msb_cli_egress_options(&opts);
	/* A third party's constructors run in a child first: they cost a refusal, never msb. */
	opts.probe_timeout_ms = MSB_LOADER_PROBE_TIMEOUT_MS;
	return msb_config_load(path, &opts, out, err);
}

msb_errc msb_cli_router(msb_config *cfg, msb_router **out, msb_error *err)
{
	msb_cli.stage = "construct";
	return msb_config_router(cfg, out, err);
}
