/*
 * cmd_put.c — `msb put KIND --scope S --thread T LOCAL GUEST`: one local file (or - for
 * standard input) written into the sandbox at GUEST, relative to the spec's work_dir, with
 * the backend's confined, atomic write_file (files_in).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb put KIND --scope S --thread T [--agent A] [--call C] [--workdir DIR] [--json]\n"
	"               LOCAL GUEST\n\n"
	"Copy the local file LOCAL (- for standard input) into the sandbox of KIND at GUEST, a\n"
	"path relative to the spec's work_dir (or --workdir). The write is confined to that\n"
	"directory and atomic. Exit 0 when written, 1 when refused or failed.\n";

static msb_errc slurp(const char *path, msb_buf *buf, msb_error *err)
{
	int fd = path[0] == '-' && !path[1] ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return msb_error_set_errno(err, errno == ENOENT ? MSB_E_NOT_FOUND : MSB_E_OS, errno,
					   "put: cannot open '%s' to copy it in", path);
	char chunk[65536];
	msb_errc rc = MSB_OK;
	for (ssize_t n; rc == MSB_OK && (n = read(fd, chunk, sizeof chunk)) != 0;)
		rc = n < 0 ? msb_error_set_errno(err, MSB_E_OS, errno, "put: cannot read '%s' to copy it in",
						 path)
			   : msb_buf_append(buf, chunk, (size_t)n, err);
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

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
	if (slurp(local, &data, &err) != MSB_OK || msb_cli_session_open(&s, kind, &a.key, &err) != MSB_OK) {
		status = msb_cli_fail(&err);
	} else {
		if (msb_sandbox_write_file(s.sandbox, guest, data.data ? data.data : (const unsigned char *)"",
					   data.len, a.workdir, &err) != MSB_OK) {
			status = msb_cli_fail(&err);
		} else if (msb_cli.json) {
			printf("{\"path\": ");
			msb_json_string(stdout, guest);
			printf(", \"bytes\": %zu}\n", data.len);
		}
		msb_cli_session_close(&s);
	}
	msb_buf_free(&data);
	msb_error_clear(&err);
	return status;
}
