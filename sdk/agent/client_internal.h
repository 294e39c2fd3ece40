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

/*
 * What a reply may hold beyond the result the request allowed: its status, a refusal's
 * sentence, the fixed fields, and fields of a later minor version this client skips. A reply
 * whose header says more than its request's bound is refused before it is allocated.
 */
#define MSB_AGENT_REPLY_SLACK ((uint32_t)64u * 1024u)
/* The longest refusal sentence kept from an agent (a path is at most 4096 bytes). */
#define MSB_AGENT_MESSAGE_MAX 8192u
/* The most entries a list_dir reply may describe: each costs the host an allocation. */
#define MSB_AGENT_MAX_ENTRIES 65536u
/* The longest path an entry may carry. */
#define MSB_AGENT_ENTRY_PATH_MAX 4096u

/* `result` (bytes a request allowed) plus the slack, within MSB_AGENT_MAX_PAYLOAD. */
static inline uint32_t msb_agent_reply_bound(uint64_t result)
{
	uint64_t most = (uint64_t)MSB_AGENT_MAX_PAYLOAD - MSB_AGENT_REPLY_SLACK;
	return (uint32_t)((result < most ? result : most) + MSB_AGENT_REPLY_SLACK);
}

/* CLOCK_MONOTONIC ms `seconds` from now. */
MSB_AGENT_HIDDEN int64_t msb_agent_deadline_after(double seconds);
/* `t` when positive, else the client's default, else 30 s. */
MSB_AGENT_HIDDEN double msb_agent_default_timeout(const msb_agent_client *c, double t);
/*
 * One request. `queue_deadline` bounds getting a connection; `deadline` the reply (0: none).
 * On a queue timeout, `queued_code` is the code reported (SandboxQueuedTimeout for a program
 * run). `max_reply` bounds the reply's payload (msb_agent_reply_bound). On success `reply`
 * holds the reply's payload (status fields included).
 */
MSB_AGENT_HIDDEN msb_errc msb_agent_call(msb_agent_client *c, uint16_t type,
					 const msb_buf *payload, int64_t queue_deadline,
					 int64_t deadline, msb_errc queued_code, uint32_t max_reply,
					 msb_buf *reply, msb_error *err);
/*
 * The parts of msb_agent_call, for an exchange of several frames (client_stream.c): take a
 * connection (a queue timeout reported as `queued_code`), a fresh request id, give the
 * connection back (closed rather than pooled unless `in_step`).
 */
MSB_AGENT_HIDDEN msb_errc msb_agent_conn_take(msb_agent_client *c, uint16_t type,
					      int64_t queue_deadline, msb_errc queued_code,
					      int *rfd, int *wfd, msb_error *err);
MSB_AGENT_HIDDEN void msb_agent_conn_give(msb_agent_client *c, int rfd, int wfd, bool in_step);
MSB_AGENT_HIDDEN uint32_t msb_agent_next_id(msb_agent_client *c);
/* Whether the client speaks over one shared stream (where stale replies are skipped by id). */
MSB_AGENT_HIDDEN bool msb_agent_client_shared(const msb_agent_client *c);
/* A reply's ERRC/MESSAGE: the agent's refusal becomes the caller's, with its code. */
MSB_AGENT_HIDDEN msb_errc msb_agent_reply_status(const msb_buf *payload, uint16_t type,
						 msb_error *err);
/* The result fields of an exec/run_code reply into `res`. */
MSB_AGENT_HIDDEN msb_errc msb_agent_parse_exec_reply(const msb_buf *reply, msb_exec_result *res,
						     msb_error *err);
/* Deadlines of a program run: queue bounded by the timeout, reply by timeout + grace. */
MSB_AGENT_HIDDEN void msb_agent_run_deadlines(double timeout, int64_t *queue, int64_t *reply,
					      uint64_t *timeout_ms);
/* A host's mistake made loud: a timeout that is no number, stdin that has a length only. */
MSB_AGENT_HIDDEN msb_errc msb_agent_check_run_request(const char *op, double timeout,
						      const void *stdin_data, size_t stdin_len,
						      msb_error *err);

/* An exec's ARG*, ENV*, CWD?, MAX_OUTPUT? and STDIN? (exec and bg_start send them alike). */
MSB_AGENT_HIDDEN msb_errc msb_agent_put_exec_fields(msb_buf *p, const msb_exec_request *req,
						    const char *const *env, msb_error *err);

/* A request whose reply carries nothing but its status; consumes `payload`. */
MSB_AGENT_HIDDEN msb_errc msb_agent_simple(msb_agent_client *c, uint16_t type, msb_buf *payload,
					   double timeout, msb_error *err);

#endif
