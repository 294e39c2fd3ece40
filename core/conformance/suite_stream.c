/*
 * suite_stream.c — the streaming suite: a streamed exec (the exec_stream operation appended
 * to the descriptor) delivers its chunks in the order the program wrote them, keeps stdout
 * and stderr apart, shows output before the program ends, feeds stdin while the program
 * runs, honours the cap and its truncation flag while streaming, adds the per-exec
 * environment, on a timeout keeps what was already delivered and says timed out, and runs
 * a command under a terminal whose size the guest sees (`stty size`); and its background
 * cases (suite_stream_bg.c): a command that outlives its starter, is listed, signalled,
 * bounded by its ring and reaped at dispose.
 *
 * It applies to a backend whose plugin has exec_stream (struct_size covering it, set) and
 * whose exec runs real programs (the kit's probe): a scripted fake's chunks would be its
 * script, not a program's writes. The guest needs a POSIX sh with printf, sleep, head, cat,
 * stty, and a /dev/ptmx with a devpts for the terminal case.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

#define CALL_TIMEOUT 30.0
#define MAX_CHUNKS 512

/* What one streamed exec delivered. */
typedef struct heard {
	msb_stream_id stream[MAX_CHUNKS];
	size_t n;
	msb_buf out, err;
	double first;             /* when the first chunk came (conf_now) */
	bool late;                /* a chunk after the call returned: never allowed */
	bool returned;
	int answer_fd;            /* stdin round trip: "two" is written once "got one" is heard */
	uint16_t rows, cols;      /* a terminal of this size (0: none) */
	msb_exec_result res;
	msb_error error;
} heard;

#define HEARD_INIT { .answer_fd = -1, .error = MSB_ERROR_INIT }

static void on_output(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	heard *h = ctx;
	if (h->returned)
		h->late = true;
	if (!h->n)
		h->first = conf_now();
	if (h->n < MAX_CHUNKS)
		h->stream[h->n] = stream;
	h->n++;
	msb_buf_append(stream == MSB_STREAM_STDERR ? &h->err : &h->out, data, len, NULL);
	if (h->answer_fd >= 0 && h->out.len && strstr((const char *)h->out.data, "got one")) {
		ssize_t w = write(h->answer_fd, "two\n", 4);
		(void)w;
		close(h->answer_fd);
		h->answer_fd = -1;
	}
}

static void heard_free(heard *h)
{
	msb_buf_free(&h->out);
	msb_buf_free(&h->err);
	msb_exec_result_free(&h->res);
	msb_error_clear(&h->error);
	if (h->answer_fd >= 0)
		close(h->answer_fd);
}

static msb_errc stream_sh(conf_run *run, conf_box *box, const char *script, double timeout,
			  size_t max_output, const char *const *env, int stdin_fd, heard *h)
{
	msb_exec_result *res = &h->res;
	msb_error *err = &h->error;
	const char *argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .working_directory = run->work_dir,
				 .timeout = timeout, .max_output = max_output };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.env = env;
	st.stdin_fd = stdin_fd;
	st.ctx = h;
	st.on_output = on_output;
	st.rows = h->rows;
	st.cols = h->cols;
	memset(res, 0, sizeof(*res));
	msb_errc rc = run->ops->exec_stream(box->handle, &req, &st, res, err);
	h->returned = true;
	if (rc != MSB_OK)
		conf_fail_call(run, "exec_stream", err);
	else if (h->late)
		conf_fail(run, "no chunk after exec_stream returned", "a chunk came after it returned");
	return rc;
}

/*
 * The suite's sandbox, once exec is known to run real programs (the kit's probe): a scripted
 * fake's chunks would be its script. NULL after deciding the case.
 */
static conf_box *stream_box(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (box && !conf_exec_usable(run, box)) {
		conf_skip(run, "the backend's exec does not run real programs (a scripted fake): its "
			  "chunks would be its script");
		return NULL;
	}
	return box;
}

static void expect_text(conf_run *run, const char *which, const msb_buf *got, const char *want)
{
	size_t want_len = strlen(want);
	if (got->len == want_len && (want_len == 0 || memcmp(got->data, want, want_len) == 0))
		return;
	char w[256], g[256], expected[320];
	conf_quote(want, want_len, w, sizeof(w));
	conf_quote(got->data, got->len, g, sizeof(g));
	snprintf(expected, sizeof(expected), "%s delivered as \"%s\"", which, w);
	conf_fail(run, expected, "%s was \"%s\"", which, g);
}

static void case_chunk_order(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	/* The pauses make each write its own chunk however loaded the machine is. */
	heard h = HEARD_INIT;
	if (stream_sh(run, box, "printf a; sleep 0.4; printf b >&2; sleep 0.4; printf c; sleep 0.4; "
		      "printf d >&2", CALL_TIMEOUT, 0, NULL, -1, &h) == MSB_OK) {
		/* Consecutive chunks of one stream are one write split by the transport: merged. */
		char seq[8] = "";
		size_t k = 0;
		for (size_t i = 0; i < h.n && i < MAX_CHUNKS && k < sizeof seq - 1; i++)
			if (!k || seq[k - 1] != (h.stream[i] == MSB_STREAM_STDOUT ? 'o' : 'e'))
				seq[k++] = h.stream[i] == MSB_STREAM_STDOUT ? 'o' : 'e';
		seq[k] = '\0';
		if (strcmp(seq, "oeoe") != 0)
			conf_fail(run, "chunks in the order written: stdout, stderr, stdout, stderr (oeoe)",
				  "the streams alternated as \"%s\"", seq);
		expect_text(run, "stdout", &h.out, "ac");
		expect_text(run, "stderr", &h.err, "bd");
		if (h.res.out.len || h.res.err.len)
			conf_fail(run, "the result's out and err empty (everything went to the callback)",
				  "%zu and %zu bytes in the result", h.res.out.len, h.res.err.len);
	}
	heard_free(&h);
}

static void case_streams_separate(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	heard h = HEARD_INIT;
	if (stream_sh(run, box, "i=0; while [ $i -lt 200 ]; do printf 'o%d.' $i; printf 'e%d.' $i >&2; "
		      "i=$((i+1)); done", CALL_TIMEOUT, 0, NULL, -1, &h) == MSB_OK) {
		char want_o[2048] = "", want_e[2048] = "";
		for (int i = 0; i < 200; i++) {
			char b[16];
			snprintf(b, sizeof b, "o%d.", i);
			strcat(want_o, b);
			b[0] = 'e';
			strcat(want_e, b);
		}
		expect_text(run, "stdout", &h.out, want_o);
		expect_text(run, "stderr", &h.err, want_e);
	}
	heard_free(&h);
}

static void case_seen_before_it_ends(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	heard h = HEARD_INIT;
	if (stream_sh(run, box, "printf first; sleep 3; printf second", CALL_TIMEOUT, 0, NULL, -1, &h) == MSB_OK) {
		double ahead = conf_now() - h.first;
		expect_text(run, "stdout", &h.out, "firstsecond");
		/* The program still had its 3 s sleep ahead when "first" was heard. */
		if (!conf_decided(run) && ahead < 2.0)
			conf_fail(run, "the first chunk heard at least 2 s before the call returned",
				  "it came %.3f s before", ahead);
	}
	heard_free(&h);
}

static void case_stdin_round_trip(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	int p[2];
	if (pipe(p) < 0) {
		conf_skip(run, "no pipe for the stdin round trip");
		return;
	}
	ssize_t w = write(p[1], "one\n", 4);
	(void)w;
	/* "two" exists only once the program answered "one": it must be fed while it runs. */
	heard h = HEARD_INIT;
	h.answer_fd = p[1];
	if (stream_sh(run, box, "read a; echo \"got $a\"; read b; echo \"got $b\"; cat", CALL_TIMEOUT, 0,
		      NULL, p[0], &h) == MSB_OK) {
		expect_text(run, "stdout", &h.out, "got one\ngot two\n");
		if (!conf_decided(run) && (h.res.timed_out || h.res.exit_code != 0))
			conf_fail(run, "exit status 0 once stdin ended", "exit status %d%s", h.res.exit_code,
				  h.res.timed_out ? " (timed out)" : "");
	}
	close(p[0]);
	heard_free(&h);
}

static void case_cap_while_streaming(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	heard h = HEARD_INIT;
	if (stream_sh(run, box, "head -c 300000 /dev/zero; printf tiny >&2", CALL_TIMEOUT, 1000, NULL, -1,
		      &h) == MSB_OK) {
		if (h.out.len != 1000 || !h.res.out_truncated)
			conf_fail(run, "exactly the 1000-byte cap of stdout delivered, out_truncated set",
				  "%zu bytes delivered, out_truncated=%d", h.out.len, h.res.out_truncated);
		expect_text(run, "stderr", &h.err, "tiny");
		if (!conf_decided(run) && h.res.err_truncated)
			conf_fail(run, "err_truncated clear for 4 bytes", "err_truncated set");
	}
	heard_free(&h);
}

static void case_environment(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	char nonce[96], entry[128];
	conf_unique(run, "env", nonce, sizeof(nonce));
	snprintf(entry, sizeof entry, "MSB_KIT_VALUE=%s $(x) '", nonce);
	const char *const env[] = { entry, NULL };
	heard h = HEARD_INIT;
	if (stream_sh(run, box, "printf %s \"$MSB_KIT_VALUE\"", CALL_TIMEOUT, 0, env, -1, &h) == MSB_OK)
		expect_text(run, "the per-exec variable, verbatim, on stdout", &h.out, entry + 14);
	heard_free(&h);
}

static void case_timeout_keeps_output(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	heard h = HEARD_INIT;
	double t0 = conf_now();
	if (stream_sh(run, box, "printf early; printf warn >&2; sleep 60", 2.0, 0, NULL, -1, &h) == MSB_OK) {
		if (!h.res.timed_out)
			conf_fail(run, "timed_out set after the 2 s deadline", "timed_out clear after %.1f s",
				  conf_now() - t0);
		expect_text(run, "stdout before the deadline", &h.out, "early");
		expect_text(run, "stderr before the deadline", &h.err, "warn");
	}
	heard_free(&h);
}

static void case_terminal_size(conf_run *run)
{
	conf_box *box = stream_box(run);
	if (!box)
		return;
	heard h = HEARD_INIT;
	h.rows = 37;
	h.cols = 101;
	if (stream_sh(run, box, "stty size; test -t 0 && test -t 1 && test -t 2 && echo all-tty",
		      CALL_TIMEOUT, 0, NULL, -1, &h) == MSB_OK) {
		/* A terminal writes "\r\n" for a line end (onlcr). */
		expect_text(run, "stty size and the tty tests under a 37x101 terminal", &h.out,
			    "37 101\r\nall-tty\r\n");
		if (!conf_decided(run) && h.err.len)
			conf_fail(run, "nothing on stderr (one terminal)", "%zu bytes on stderr", h.err.len);
	}
	heard_free(&h);
}

static const char *stream_inapplicable(conf_run *run)
{
	if (!conf_has(run, MSB_CAP_EXEC))
		return "the backend does not declare exec";
	if (!MSB_BACKEND_OP(run->ops, exec_stream))
		return "the plugin has no exec_stream operation (appended to the descriptor after "
		       "ABI 27 first shipped)";
	if (run->decl->os_families && !(run->decl->os_families & MSB_BIT(MSB_OS_POSIX)))
		return "the backend declares os_families without posix, and the kit's commands are POSIX sh";
	return NULL;
}

static const conf_case stream_cases[] = {
	{ "chunk-order", MSB_BIT(MSB_CAP_EXEC), case_chunk_order },
	{ "streams-separate", MSB_BIT(MSB_CAP_EXEC), case_streams_separate },
	{ "seen-before-it-ends", MSB_BIT(MSB_CAP_EXEC), case_seen_before_it_ends },
	{ "stdin-round-trip", MSB_BIT(MSB_CAP_EXEC), case_stdin_round_trip },
	{ "cap-while-streaming", MSB_BIT(MSB_CAP_EXEC), case_cap_while_streaming },
	{ "environment", MSB_BIT(MSB_CAP_EXEC), case_environment },
	{ "timeout-keeps-output", MSB_BIT(MSB_CAP_EXEC), case_timeout_keeps_output },
	{ "terminal-size", MSB_BIT(MSB_CAP_EXEC), case_terminal_size },
	{ "background-outlives-its-starter", MSB_BIT(MSB_CAP_EXEC), conf_case_bg_outlives_its_starter },
	{ "background-listed", MSB_BIT(MSB_CAP_EXEC), conf_case_bg_listed },
	{ "background-signal", MSB_BIT(MSB_CAP_EXEC), conf_case_bg_signal },
	{ "background-ring", MSB_BIT(MSB_CAP_EXEC), conf_case_bg_ring },
	{ "background-reaped-at-dispose", MSB_BIT(MSB_CAP_EXEC), conf_case_bg_reaped_at_dispose },
};

const conf_suite conf_suite_stream = {
	.name = "stream",
	.inapplicable = stream_inapplicable,
	.cases = stream_cases,
	.n_cases = sizeof(stream_cases) / sizeof(stream_cases[0]),
};
