/*
 * msb/sandbox.h — what a workload gets: one acquired sandbox (host API).
 *
 * Each call is gated by what the serving backend declares: an operation whose capability it
 * does not declare is refused with MSB_E_NOT_IMPLEMENTED before the backend is reached —
 * except reclaim, which no capability gates, because a cleanup that could be refused would
 * leak a directory per call out of the path that reports rather than raises.
 */
#ifndef MSB_SANDBOX_H
#define MSB_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#include <msb/background.h>
#include <msb/error.h>
#include <msb/loader.h>
#include <msb/stream.h>
#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct msb_sandbox msb_sandbox;

/* Drop this handle; the sandbox lives on until disposed. NULL is fine. */
void msb_sandbox_release(msb_sandbox *sandbox);

const msb_key *msb_sandbox_key(const msb_sandbox *sandbox);
const msb_spec *msb_sandbox_spec(const msb_sandbox *sandbox);
const msb_backend *msb_sandbox_backend(const msb_sandbox *sandbox);

msb_errc msb_sandbox_exec(msb_sandbox *sandbox, const msb_exec_request *req,
			  msb_exec_result *res, msb_error *err);
/*
 * exec, streamed (msb/stream.h): stdout and stderr go to stream->on_output chunk by chunk as
 * the guest produces them, stdin is read from stream->stdin_fd as the command runs, and
 * stream->env is added for this exec alone. Gated by the exec capability like exec; a
 * backend whose plugin lacks the exec_stream operation (one built before it was appended,
 * or one that leaves it NULL) is refused with MSB_E_NOT_IMPLEMENTED naming the operation,
 * the backend and its plugin file. A spec can ask for it at route time instead
 * (`streaming: true`, sandbox.yaml(5)).
 */
/* Whether exec_stream would reach the backend (exec declared, the operation present). */
bool msb_sandbox_can_stream(const msb_sandbox *sandbox);
msb_errc msb_sandbox_exec_stream(msb_sandbox *sandbox, const msb_exec_request *req,
				 const msb_exec_stream *stream, msb_exec_result *res,
				 msb_error *err);
/*
 * Background commands (msb/background.h): start one and get its handle, read its output
 * (waiting as `rq` says), signal it, list the sandbox's. Gated by the exec capability; a
 * backend whose plugin lacks the operation (one built before the background operations were
 * appended, or one that leaves them NULL) is refused with MSB_E_NOT_IMPLEMENTED naming the
 * operation, the backend and its plugin file. bg_start's env entries are checked as
 * exec_stream's; req->timeout bounds the command's life (0: none), req->max_output is its
 * ring per stream (0: the backend's default).
 */
bool msb_sandbox_can_background(const msb_sandbox *sandbox);
msb_errc msb_sandbox_bg_start(msb_sandbox *sandbox, const msb_exec_request *req,
			      const char *const *env, msb_bg_status *started, msb_error *err);
msb_errc msb_sandbox_bg_read(msb_sandbox *sandbox, const char *id, const msb_bg_read *rq,
			     msb_bg_output *out, msb_error *err);
msb_errc msb_sandbox_bg_signal(msb_sandbox *sandbox, const char *id, int signal,
			       msb_error *err);
msb_errc msb_sandbox_bg_list(msb_sandbox *sandbox, msb_bg_list *out, msb_error *err);
msb_errc msb_sandbox_run_code(msb_sandbox *sandbox, const char *code, double timeout,
			      msb_exec_result *res, msb_error *err);
/* working_directory NULL means the spec's work_dir, for every file operation. */
msb_errc msb_sandbox_write_file(msb_sandbox *sandbox, const char *path, const void *data,
				size_t len, const char *working_directory, msb_error *err);
msb_errc msb_sandbox_stat_file(msb_sandbox *sandbox, const char *path,
			       const char *working_directory, msb_entry *entry, bool *found,
			       msb_error *err);
msb_errc msb_sandbox_read_file(msb_sandbox *sandbox, const char *path,
			       const char *working_directory, uint64_t max_bytes, msb_buf *out,
			       msb_error *err);
msb_errc msb_sandbox_list_dir(msb_sandbox *sandbox, const char *path,
			      const char *working_directory, msb_entry_list *out, msb_error *err);
msb_errc msb_sandbox_remove(msb_sandbox *sandbox, const char *path,
			    const char *working_directory, bool recursive, msb_error *err);
msb_errc msb_sandbox_reclaim(msb_sandbox *sandbox, const char *directory,
			     const char *working_directory, double timeout, msb_error *err);

/*
 * The posture this acquire was served with (msb/observer.h): backend, rung, scope, egress
 * and allowlist, both sides of the capability match, and the call. Valid while the handle is.
 * msb_sandbox_key() is the effective key (call_id folded in at `call` scope, "" otherwise):
 * dispose a call-scoped sandbox with msb_router_dispose(router, msb_sandbox_key(s), …).
 */
struct msb_effective_state;
const struct msb_effective_state *msb_sandbox_effective_state(const msb_sandbox *sandbox);

#ifdef __cplusplus
}
#endif
/*
 * The snapshot capability (issue 22): save this sandbox's whole state under `name`
 * (msb_backend_v27.snapshot_save). Refused (MSB_E_NOT_IMPLEMENTED) for a backend that does
 * not declare `snapshot`. A sandbox forked from it is an acquire whose spec sets
 * from_snapshot.
 */
msb_errc msb_sandbox_snapshot_save(msb_sandbox *sandbox, const char *name, msb_error *err);

#endif
