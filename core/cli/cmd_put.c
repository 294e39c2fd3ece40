/*
 * cmd_put.c — `msb put KIND --scope S --thread T LOCAL GUEST`: one local file (or - for
 * standard input) written into the sandbox at GUEST, relative to the spec's work_dir, with
 * the backend's confined, atomic write_file (files_in). LOCAL is read only up to the spec's
 * files_in.max_bytes_per_file and refused past it; a FIFO or a device is refused unread.
 */
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb put KIND --scope S --thread T [--agent A] [--call C] [--workdir DIR] [--json]\n"
	"               LOCAL GUEST\n\n"
	"Copy the local file LOCAL (- for standard input) into the sandbox of KIND at GUEST, a\n"
	"path relative to the spec's work_dir (or --workdir). The write is confined to that\n"
	"directory and atomic. LOCAL must be a regular file (or -), and is refused when over the\n"
	"spec's files_in.max_bytes_per_file. Exit 0 when written, 1 when refused or failed.\n";

int msb_cmd_put(int argc, char **argv)
{
	msb_cli_file_args a;
	int status = msb_cli_file_options(argc, argv, usage, NULL, 0, &a);
	if (status)
		return status;
	if (argc - optind != 3)
		return msb_cli_usage_error("takes KIND LOCAL GUEST");
	status = msb_cli_key_check(&a.key);
	if (status)
		return status;
	const char *kind = argv[optind], *local = argv[optind + 1], *guest = argv[optind + 2];
	msb_error err = MSB_ERROR_INIT;
	msb_buf data = { 0 };
	msb_cli_session s;
	int fd = -1;
	/* LOCAL is opened (and a FIFO or device refused) before a sandbox is acquired for it;
	 * it is read once the spec's files_in cap is known, and only up to it. */
	char what[600];
	if (local[0] == '-' && !local[1])
		snprintf(what, sizeof what, "standard input (for %s)", guest);
	else
		snprintf(what, sizeof what, "'%s' (for %s)", local, guest);
	if (msb_cli_input_open(local, &fd, &err) != MSB_OK ||
	    msb_cli_session_open(&s, kind, &a.key, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else {
		if (msb_cli_read_bounded(fd, what, s.spec->files_in.max_bytes_per_file, &data, &err) != MSB_OK ||
		    msb_sandbox_write_file(s.sandbox, guest, data.data ? data.data : (const unsigned char *)"",
					   data.len, a.workdir, &err) != MSB_OK) {
			status = msb_cli_fail(&err);
		} else if (msb_cli.json) {
			printf("{\"path\": ");
			msb_json_string(stdout, guest);
			printf(", \"bytes\": %zu}\n", data.len);
		}
		msb_cli_session_close(&s);
	}
	if (fd > STDIN_FILENO)
		close(fd);
	msb_buf_free(&data);
	msb_error_clear(&err);
	return status;
}
