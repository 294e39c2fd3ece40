/*
 * msb/stream.h — a command that talks while it runs: the callback table of a streamed exec
 * (shared by the host API, msb/sandbox.h, and the plugin contract, msb/backend.h).
 *
 * A streamed exec is an exec (msb_exec_request: argv, working directory, timeout, per-stream
 * cap, initial stdin) whose stdout and stderr are handed to `on_output` chunk by chunk as
 * the guest produces them, instead of in the result at the end. The caps, truncation flags
 * and timeout keep exactly their exec meaning: at most max_output bytes of each stream are
 * delivered, the rest is dropped and flagged (out_truncated / err_truncated); when the
 * deadline passes the tree is killed and the result says timed_out, everything produced
 * before then having been delivered already. The result's out and err stay empty.
 *
 * Why a table with struct_size (libgit2's *_INIT rule): fields are only appended, and a
 * callee reads a field only when the caller's struct_size covers it.
 */
#ifndef MSB_STREAM_H
#define MSB_STREAM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum msb_stream_id { MSB_STREAM_STDOUT = 1, MSB_STREAM_STDERR = 2 } msb_stream_id;

typedef struct msb_exec_stream {
	uint32_t struct_size;      /* sizeof(msb_exec_stream) */
	/*
	 * Extra environment for this exec alone, NULL-terminated "NAME=value" (NULL: none).
	 * Names are checked (a letter or '_', then letters, digits and '_'; the refusal names
	 * the entry); values are opaque bytes without NUL. Added to the guest's scrubbed base.
	 */
	const char *const *env;
	/*
	 * Read while the command runs, each read forwarded to its stdin as it arrives; end of
	 * file closes the command's stdin. -1: none (the request's stdin_data alone, then end of
	 * file). Not closed by the callee. req->stdin_data, when set, goes first.
	 */
	int stdin_fd;
	void *ctx;
	/*
	 * One chunk of output, in the order the guest read it; called on the calling thread,
	 * never after the call returned. `data` is valid during the call only.
	 */
	void (*on_output)(void *ctx, msb_stream_id stream, const void *data, size_t len);
	/*
	 * A terminal: rows and cols both non-zero run the command under a new pseudo-terminal
	 * of that size, its controlling terminal, as stdin, stdout and stderr (what it writes
	 * to either arrives as MSB_STREAM_STDOUT; raw input goes in through stdin_fd, where end
	 * of file types the terminal's EOF character). 0, 0: pipes, as exec.
	 */
	uint16_t rows, cols;
	/*
	 * Readable when the terminal's size changed (a self-pipe a SIGWINCH handler writes
	 * to): drained, then get_size(ctx, …) says the new size, which the guest's terminal
	 * takes. -1: the size never changes.
	 */
	int resize_fd;
	void (*get_size)(void *ctx, uint16_t *rows, uint16_t *cols);
} msb_exec_stream;

#define MSB_EXEC_STREAM_INIT { (uint32_t)sizeof(msb_exec_stream), NULL, -1, NULL, NULL, 0, 0, -1, NULL }

/*
 * Whether `entry` is "NAME=value" with a name a shell and execve agree on; on false,
 * `why` (may be NULL) says what is wrong with it.
 */
int msb_env_entry_valid(const char *entry, const char **why);

#ifdef __cplusplus
}
#endif
#endif
