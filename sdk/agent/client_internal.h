/*
 * client_internal.h — what the parts of the agent client share (client.c holds the
 * connections; client_run.c and client_files.c the requests). Hidden from libmsb-sdk's ABI.
 */
#ifndef MSB_CLIENT_INTERNAL_H
#define MSB_CLIENT_INTERNAL_H

#include <msb/agent.h>

#define MSB_AGENT_HIDDEN __attribute__((visibility("hidden")))

/* How long past an exec's own deadline the agent gets to kill the tree and answer. */
#define MSB_AGENT_EXEC_GRACE_MS 10000

/* CLOCK_MONOTONIC ms `seconds` from now. */
MSB_AGENT_HIDDEN int64_t msb_agent_deadline_after(double seconds);
/* `t` when positive, else the client's default, else 30 s. */
MSB_AGENT_HIDDEN double msb_agent_default_timeout(const msb_agent_client *c, double t);
/*
 * One request. `queue_deadline` bounds getting a connection; `deadline` the reply (0: none).
 * On a queue timeout, `queued_code` is the code reported (SandboxQueuedTimeout for a program
 * run). On success `reply` holds the reply's payload (status fields included).
 */
MSB_AGENT_HIDDEN msb_errc msb_agent_call(msb_agent_client *c, uint16_t type,
					 const msb_buf *payload, int64_t queue_deadline,
					 int64_t deadline, msb_errc queued_code, msb_buf *reply,
					 msb_error *err);
/* A request whose reply carries nothing but its status; consumes `payload`. */
MSB_AGENT_HIDDEN msb_errc msb_agent_simple(msb_agent_client *c, uint16_t type, msb_buf *payload,
					   double timeout, msb_error *err);

#endif
