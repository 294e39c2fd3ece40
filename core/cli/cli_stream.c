/*
 * cli_stream.c — `msb exec` streamed: the guest's output passed on chunk by chunk as it is
 * produced (stdout to stdout, stderr to stderr, each flushed at once), or with --json one
 * JSON line per chunk ({"event": "output", "stream": …, "data": …}) and then the result
 * object exec prints unstreamed. With --stdin, msb's standard input is forwarded as it
 * arrives instead of read whole first, so an interactive program gets each line as typed.
 * With -t the command runs under a terminal in the guest (cli_terminal.c lends it ours).
 */
#include <errno.h>
#include <unistd.h>

#include "cli.h"

/* A write to our stdout that fails (a closed pipe) must not end the guest's call half-told. */
void msb_cli_put_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void on_output(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	(void)ctx;
	if (msb_cli.json) {
		printf("{\"event\": \"output\", \"stream\": \"%s\", \"data\": ",
		       stream == MSB_STREAM_STDERR ? "stderr" : "stdout");
		msb_json_bytes(stdout, data, len);
		printf("}\n");
		fflush(stdout);
		return;
	}
	msb_cli_put_all(stream == MSB_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

msb_errc msb_cli_exec_stream(msb_sandbox *sandbox, const msb_exec_request *req,
			     bool forward_stdin, bool tty, msb_exec_result *res, msb_error *err)
{
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.stdin_fd = forward_stdin ? STDIN_FILENO : -1;
	st.on_output = on_output;
	fflush(stdout);
	if (!tty)
		return msb_sandbox_exec_stream(sandbox, req, &st, res, err);
	msb_cli_terminal_size(NULL, &st.rows, &st.cols);
	st.get_size = msb_cli_terminal_size;
	st.resize_fd = msb_cli_terminal_raw();
	msb_errc rc = msb_sandbox_exec_stream(sandbox, req, &st, res, err);
	msb_cli_terminal_restore();
	return rc;
}
