/*
 * probe.h — carrying msb-probe (probe_main.c) into a guest and running it there, for the
 * rung and egress suites. Private to core/conformance.
 */
#ifndef MSB_CONFORMANCE_PROBE_H
#define MSB_CONFORMANCE_PROBE_H

#include <stdbool.h>

#include "kit.h"

/* Where the host's copy of msb-probe is: $MSB_CONFORMANCE_PROBE, else the installed one. */
const char *conf_probe_host_path(void);

/*
 * Put msb-probe into `box` (write_file, then `chmod 755` by exec) once per box, and leave
 * its guest path in path. False after the case was skipped saying why it could not be
 * carried in or run: a probe never passes for want of a program.
 */
bool conf_probe_install(conf_run *run, conf_box *box, char *path, size_t size);

/*
 * Run `msb-probe args…` (NULL-terminated) in `box`; its stdout, NUL-terminated, in *out
 * (free it). False after failing the case naming the call, or skipping it when the probe
 * could not run.
 */
bool conf_probe_run(conf_run *run, conf_box *box, const char *const *args, char **out);

/*
 * The same, but a failed exec call is handed back in *call_err (its code set) instead of
 * failing the case: for an attempt a sandbox may rightly not survive.
 */
bool conf_probe_try(conf_run *run, conf_box *box, const char *const *args, char **out,
		    msb_error *call_err);

/* The value after `key ` on the first line of `text` that starts with it ("" when none). */
void conf_probe_field(const char *text, const char *key, char *buf, size_t size);

#endif
