/*
 * msb/background.h — commands left running in a sandbox and checked on later (issue 23):
 * the types of the background operations, shared by the host API (msb/sandbox.h) and the
 * plugin contract (msb/backend.h).
 *
 * A background command is started like an exec (msb_exec_request: argv, working directory,
 * initial stdin, then end of file) and answered at once with a handle, `id`: a word of the
 * sandbox's own that any process holding the sandbox (the same key and kind) can use later,
 * as the sandbox itself outlives the process that made it. The command lives until it ends,
 * is signalled, reaches its own timeout (req->timeout; 0: none) or its sandbox is disposed,
 * which kills it.
 *
 * Its output is bounded in the guest by a ring per stream: the newest `ring` bytes of each
 * (req->max_output; 0: the backend's default) are kept, older ones overwritten. Every byte
 * has an offset (0 for the first the command wrote); a read names the offsets it wants from
 * and is answered with the bytes still held from there, saying how many it asked for that
 * the ring had already dropped. Reading is never consuming: two readers see the same bytes.
 */
#ifndef MSB_BACKGROUND_H
#define MSB_BACKGROUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A handle is 1 to MSB_BG_ID_MAX bytes of [0-9a-z]. */
#define MSB_BG_ID_MAX 32
/* The command line kept for a listing, cut at this many bytes. */
#define MSB_BG_COMMAND_MAX 256

/* What is known of one background command. */
typedef struct msb_bg_status {
	char id[MSB_BG_ID_MAX + 1];
	int64_t pid;             /* its pid as the guest sees it (also its process group) */
	bool running;
	/* Once !running: as an exec's result says them. */
	int exit_code;
	int signal;
	bool timed_out;
	uint64_t ring;           /* bytes of each stream the guest keeps, the newest */
	uint64_t out_written;    /* bytes the command wrote to stdout so far (the next offset) */
	uint64_t err_written;
	double started;          /* seconds since the epoch, by the guest's clock */
	char command[MSB_BG_COMMAND_MAX + 1]; /* argv joined by spaces, cut */
} msb_bg_status;

/* A read of a background command's output. */
typedef struct msb_bg_read {
	uint64_t out_offset;     /* the stdout offset to read from (0: all there is) */
	uint64_t err_offset;
	uint64_t max_bytes;      /* per stream; 0: 1 MiB */
	/*
	 * Seconds to wait, at most, before answering: for output past the offsets or the end
	 * (until_exit false), or for the end alone (until_exit true). 0: answer at once.
	 */
	double wait;
	bool until_exit;
} msb_bg_read;

typedef struct msb_bg_output {
	msb_bg_status status;    /* as of the read's end */
	msb_buf out, err;        /* the bytes held from the offsets asked, at most max_bytes */
	uint64_t out_start;      /* the offset of out's first byte */
	uint64_t err_start;
	/* Bytes between the offset asked and *_start, which the ring had dropped. */
	uint64_t out_dropped;
	uint64_t err_dropped;
} msb_bg_output;

typedef struct msb_bg_list {
	msb_bg_status *items;
	size_t n;
} msb_bg_list;

void msb_bg_output_free(msb_bg_output *out);
void msb_bg_list_free(msb_bg_list *list);
/* Whether `id` is a handle's shape (1..MSB_BG_ID_MAX of [0-9a-z]). */
bool msb_bg_id_valid(const char *id);

#ifdef __cplusplus
}
#endif
#endif
