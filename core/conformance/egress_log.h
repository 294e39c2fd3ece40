/*
 * egress_log.h — the egress decisions the backend under test reported (egress_log.c).
 * Private to core/conformance.
 */
#ifndef MSB_CONFORMANCE_EGRESS_LOG_H
#define MSB_CONFORMANCE_EGRESS_LOG_H

#include <stdbool.h>

#include <msb/backend.h>

/* The host to open the backend with, so its reports land in the log. */
const msb_host *conf_egress_host(void);
void conf_egress_log_clear(void);
/* Wait up to `ms` for a line holding `needle` ("DENY other.conformance.msb.test:80"). */
bool conf_egress_log_wait(const char *needle, int ms);

#endif
