/*
 * cmd_get.c — `msb get KIND --scope S --thread T GUEST [LOCAL]`: one file out of the
 * sandbox (files_out), capped at the spec's files_out.max_bytes_per_file — refused, never
 * truncated, when larger — to LOCAL or standard output. An existing LOCAL is not replaced
 * unless --force: guest bytes landing over a host file is a decision, not a default.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"usage: msb get KIND --scope S --thread T [--agent A] [--call C] [--workdir DIR]\n"
	"               [--max-bytes N] [--force] [--json] GUEST [LOCAL]\n\n"
	"Copy GUEST (relative to the spec's work_dir) out of the sandbox of KIND to LOCAL, or to\n"
	"standard output. A file over the spec's files_out.max_bytes_per_file is refused, never\n"
	"truncated; --max-bytes N narrows that cap to N. LOCAL must not exist unless --force.\n"
	"Exit 0 when copied, 1 otherwise.\n";

/*
 * --max-bytes N (or --max-bytes=N), taken out of argv before the shared file options are
 * parsed: 0 when absent, -1 (after a message) when N is not a size.
 */
static long long take_max_bytes(int *argc, char **argv, uint64_t *out)
{
	*out = 0;
	for (int i = 1; i < *argc; i++) {
		const char *v = NULL;
		int used = 0;
		if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < *argc)
			v = argv[i + 1], used = 2;
		else if (strncmp(argv[i], "--max-bytes=", 12) == 0)
			v = argv[i] + 12, used = 1;
		else if (strcmp(argv[i], "--") == 0)
			break;
		if (!used)
			continue;
		msb_error err = MSB_ERROR_INIT;
		if (msb_parse_size(v, out, &err) != MSB_OK || *out == 0) {
			fprintf(stderr, "msb: get: --max-bytes '%s' is not a size above 0\n", v);
			msb_error_clear(&err);
			return -1;
		}
		memmove(argv + i, argv + i + used, (size_t)(*argc - i - used + 1) * sizeof *argv);
		*argc -= used;
		i--;
	}
	return 0;
}

static msb_errc land(const char *path, const msb_buf *data, bool force, msb_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (force ? O_TRUNC : O_EXCL), 0644);
	if (fd < 0)
		return msb_error_set_errno(err, errno == EEXIST ? MSB_E_LANDING_EXISTS : MSB_E_OS, errno,
					   "get: cannot create '%s'%s", path, errno == EEXIST ? " (use --force to replace it)" : "");
	size_t off = 0;
	while (off < data->len) {
		ssize_t n = write(fd, data->data + off, data->len - off);
		if (n < 0) {
			close(fd);
			return msb_error_set_errno(err, MSB_E_OS, errno, "get: cannot write '%s'", path);
		}
		off += (size_t)n;
	}
	if (close(fd) != 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "get: cannot write '%s'", path);
	return MSB_OK;
}

int msb_cmd_get(int argc, char **argv)
{
	uint64_t max_bytes;
	if (take_max_bytes(&argc, argv, &max_bytes) < 0)
		return MSB_EXIT_USAGE;
	msb_cli_file_args a;
	int status = msb_cli_file_options(argc, argv, usage, "force", 0, &a);
	if (status)
		return status;
	if (argc - optind != 2 && argc - optind != 3)
		return msb_cli_usage_error("takes KIND GUEST [LOCAL]");
	status = msb_cli_key_check(&a.key);
	if (status)
		return status;
	const char *kind = argv[optind], *guest = argv[optind + 1];
	const char *local = argc - optind == 3 ? argv[optind + 2] : NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_buf data = { 0 };
	msb_cli_session s;
	if (msb_cli_session_open(&s, kind, &a.key, &err) != MSB_OK)
		return msb_cli_fail(&err);
	uint64_t cap = s.spec->files_out.max_bytes_per_file;
	if (max_bytes > cap) {
		msb_error_set(&err, MSB_E_TRANSFER_LIMITS_NOT_PERMITTED,
			      "get: --max-bytes %llu is over the spec's files_out.max_bytes_per_file "
			      "(%llu): the spec's cap is the most a get may ask for",
			      (unsigned long long)max_bytes, (unsigned long long)cap);
		status = msb_cli_fail(&err);
	} else if (msb_sandbox_read_file(s.sandbox, guest, a.workdir, max_bytes ? max_bytes : cap, &data, &err) != MSB_OK ||
	    (local && land(local, &data, a.flag, &err) != MSB_OK)) {
		status = msb_cli_fail(&err);
	} else if (msb_cli.json) {
		printf("{\"path\": ");
		msb_json_string(stdout, guest);
		printf(", \"bytes\": %zu", data.len);
		if (local) {
			printf(", \"local\": ");
			msb_json_string(stdout, local);
		} else {
			printf(", ");
			msb_json_bytes_field(stdout, "content", data.data, data.len);
		}
		printf("}\n");
	} else if (!local && data.len) {
		fwrite(data.data, 1, data.len, stdout);
	}
	msb_cli_session_close(&s);
	msb_buf_free(&data);
	msb_error_clear(&err);
	return status;
}
