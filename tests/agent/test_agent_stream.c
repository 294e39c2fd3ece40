/*
 * test_agent_stream.c — the streamed exec against the real msb-agent, over one stream (--fd)
 * and over a socket (--listen): chunks in the order written and per stream, output seen
 * before the command ends, stdin fed as the command runs, the per-exec environment and its
 * checked names, caps and truncation while streaming, a timeout that keeps what was
 * already sent, a program that cannot start, and a host that hangs up mid-exec.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include <cmocka.h>

#include <msb/agent.h>

#include "agent_fixture.h"

typedef agent_session ctx;

/* What a stream delivered: each chunk in order, and each stream whole. */
typedef struct seen {
	int order[64];          /* the stream of each chunk, in arrival order */
	size_t n_chunks;
	msb_buf out, err;
	int64_t first_ms;       /* when the first chunk came */
	int answer_fd;          /* stdin round trip: written to on the first line */
} seen;

static void on_output(void *vctx, msb_stream_id stream, const void *data, size_t len)
{
	seen *s = vctx;
	if (!s->n_chunks)
		s->first_ms = msb_agent_now_ms();
	if (s->n_chunks < 64)
		s->order[s->n_chunks] = (int)stream;
	s->n_chunks++;
	msb_buf_append(stream == MSB_STREAM_STDOUT ? &s->out : &s->err, data, len, NULL);
	/* The reply to "got one" is given only once the command has answered: it is running. */
	if (s->answer_fd >= 0 && strstr((const char *)s->out.data, "got one")) {
		assert_int_equal(write(s->answer_fd, "two\n", 4), 4);
		close(s->answer_fd);
		s->answer_fd = -1;
	}
}

static void seen_free(seen *s)
{
	msb_buf_free(&s->out);
	msb_buf_free(&s->err);
}

static msb_errc stream_argv(msb_agent_client *client, const char *const *argv, double timeout,
			    size_t max_output, const char *const *env, int stdin_fd, seen *s,
			    msb_exec_result *res, msb_error *err)
{
	msb_exec_request req = { .argv = argv, .timeout = timeout, .max_output = max_output };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.env = env;
	st.stdin_fd = stdin_fd;
	st.ctx = s;
	st.on_output = on_output;
	return msb_agent_exec_stream(client, &req, &st, res, err);
}

static int setup(void **state)
{
	static const char *const extra[] = { "--timeout", "20", NULL };
	return agent_session_setup_fd(state, extra);
}

static void check_order(msb_agent_client *client)
{
	/* The sleeps keep each write its own chunk however loaded the machine is. */
	const char *const argv[] = { "sh", "-c",
		"echo a; sleep 0.3; echo b >&2; sleep 0.3; echo c; sleep 0.3; echo d >&2; exit 4", NULL };
	seen s = { .answer_fd = -1 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(stream_argv(client, argv, 20, 0, NULL, -1, &s, &res, &err), MSB_OK);
	assert_string_equal((char *)s.out.data, "a\nc\n");
	assert_string_equal((char *)s.err.data, "b\nd\n");
	assert_int_equal(s.n_chunks, 4);
	int want[] = { 1, 2, 1, 2 };
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(s.order[i], want[i]);
	assert_int_equal(res.exit_code, 4);
	assert_false(res.timed_out);
	assert_int_equal(res.out.len + res.err.len, 0); /* delivered, never also buffered */
	msb_exec_result_free(&res);
	seen_free(&s);
}

static void test_chunks_in_order_per_stream(void **state)
{
	check_order(((ctx *)*state)->client);
}

static void test_seen_before_it_ends(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "sh", "-c", "echo first; sleep 3; echo second", NULL };
	seen s = { .answer_fd = -1 };
	msb_exec_result res = { 0 };
	assert_int_equal(stream_argv(c->client, argv, 20, 0, NULL, -1, &s, &res, NULL), MSB_OK);
	int64_t end = msb_agent_now_ms();
	assert_string_equal((char *)s.out.data, "first\nsecond\n");
	/* The first line came while the command still had its 3 s sleep ahead of it. */
	assert_true(end - s.first_ms >= 2000);
	msb_exec_result_free(&res);
	seen_free(&s);
}

static void test_stdin_fed_as_it_runs(void **state)
{
	ctx *c = *state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "one\n", 4), 4);
	const char *const argv[] = { "sh", "-c", "read a; echo \"got $a\"; read b; echo \"got $b\"; cat",
				     NULL };
	seen s = { .answer_fd = p[1] };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(stream_argv(c->client, argv, 20, 0, NULL, p[0], &s, &res, &err), MSB_OK);
	/* "two" was written only after "got one" arrived, and `cat` ended at its end of file. */
	assert_string_equal((char *)s.out.data, "got one\ngot two\n");
	assert_int_equal(s.answer_fd, -1);
	assert_int_equal(res.exit_code, 0);
	assert_false(res.timed_out);
	close(p[0]);
	msb_exec_result_free(&res);
	seen_free(&s);

	/* Initial stdin_data goes first, then the fd; the connection is still in step. */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], " tail", 5), 5);
	close(p[1]);
	const char *const cat[] = { "cat", NULL };
	msb_exec_request req = { .argv = cat, .timeout = 20, .stdin_data = "head", .stdin_len = 4 };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	seen s2 = { .answer_fd = -1 };
	st.stdin_fd = p[0], st.ctx = &s2, st.on_output = on_output;
	assert_int_equal(msb_agent_exec_stream(c->client, &req, &st, &res, NULL), MSB_OK);
	assert_string_equal((char *)s2.out.data, "head tail");
	close(p[0]);
	msb_exec_result_free(&res);
	seen_free(&s2);
}

static void test_environment_per_exec(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "sh", "-c", "printf '%s|%s' \"$GREETING\" \"$HOME\"", NULL };
	const char *const env[] = { "GREETING=hello  world=$(x)", NULL };
	seen s = { .answer_fd = -1 };
	msb_exec_result res = { 0 };
	assert_int_equal(stream_argv(c->client, argv, 20, 0, env, -1, &s, &res, NULL), MSB_OK);
	/* The value is opaque bytes (no expansion); the base environment is still there. */
	char want[256];
	snprintf(want, sizeof want, "hello  world=$(x)|%s", c->fx.work);
	assert_string_equal((char *)s.out.data, want);
	msb_exec_result_free(&res);
	seen_free(&s);

	static const char *const bad[][2] = { { "1ABC=x", NULL }, { "A-B=x", NULL }, { "=x", NULL },
					      { "NOEQUALS", NULL } };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msb_error err = MSB_ERROR_INIT;
		seen s3 = { .answer_fd = -1 };
		assert_int_equal(stream_argv(c->client, argv, 20, 0, bad[i], -1, &s3, &res, &err),
				 MSB_E_VALUE);
		assert_non_null(strstr(msb_error_message(&err), "environment entry"));
		assert_non_null(strstr(msb_error_message(&err), bad[i][0]));
		assert_int_equal(s3.n_chunks, 0);
		msb_error_clear(&err);
	}
}

static void test_caps_and_truncation(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "sh", "-c", "head -c 100000 /dev/zero; echo tiny >&2", NULL };
	seen s = { .answer_fd = -1 };
	msb_exec_result res = { 0 };
	assert_int_equal(stream_argv(c->client, argv, 20, 1000, NULL, -1, &s, &res, NULL), MSB_OK);
	assert_int_equal(s.out.len, 1000);
	assert_true(res.out_truncated);
	assert_string_equal((char *)s.err.data, "tiny\n");
	assert_false(res.err_truncated);
	assert_int_equal(res.exit_code, 0);
	msb_exec_result_free(&res);
	seen_free(&s);
}

static void test_timeout_keeps_what_was_sent(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "sh", "-c", "echo early; echo warn >&2; sleep 30", NULL };
	seen s = { .answer_fd = -1 };
	msb_exec_result res = { 0 };
	int64_t t0 = msb_agent_now_ms();
	assert_int_equal(stream_argv(c->client, argv, 1, 0, NULL, -1, &s, &res, NULL), MSB_OK);
	assert_true(msb_agent_now_ms() - t0 < 15000);
	assert_true(res.timed_out);
	assert_int_equal(res.term_signal, SIGKILL);
	assert_string_equal((char *)s.out.data, "early\n");
	assert_string_equal((char *)s.err.data, "warn\n");
	msb_exec_result_free(&res);
	seen_free(&s);
}

/* A streamed command's timeout reaches what it started, however it detached. */
static void test_timeout_kills_what_left_the_group(void **state)
{
	ctx *c = *state;
	char pidfile[] = "/tmp/msb-stream-tree-XXXXXX";
	int fd = mkstemp(pidfile);
	assert_true(fd >= 0);
	close(fd);
	char script[256];
	snprintf(script, sizeof script,
		 "setsid sh -c 'echo $$ > %s; exec sleep 300' & sleep 30", pidfile);
	const char *const argv[] = { "sh", "-c", script, NULL };
	seen s = { .answer_fd = -1 };
	msb_exec_result res = { 0 };
	assert_int_equal(stream_argv(c->client, argv, 1, 0, NULL, -1, &s, &res, NULL), MSB_OK);
	assert_true(res.timed_out);
	assert_int_equal(res.kill_reach, MSB_REACH_TREE);
	FILE *f = fopen(pidfile, "r");
	long pid = 0;
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	unlink(pidfile);
	assert_true(pid > 1);
	/* gone, not merely signalled: the subreaper reaped it */
	for (int i = 0; i < 200 && kill((pid_t)pid, 0) == 0; i++)
		usleep(10000);
	if (kill((pid_t)pid, 0) == 0) {
		kill((pid_t)pid, SIGKILL);
		fail_msg("the setsid child %ld outlived its command's timeout", pid);
	}
	msb_exec_result_free(&res);
	seen_free(&s);
}

static void test_cannot_start(void **state)
{
	ctx *c = *state;
	const char *const argv[] = { "no-such-program-msb", NULL };
	seen s = { .answer_fd = -1 };
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(stream_argv(c->client, argv, 20, 0, NULL, -1, &s, &res, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "no-such-program-msb"));
	msb_error_clear(&err);
	/* A refusal leaves the stream in step: the next exec is answered. */
	check_order(c->client);
}

static void test_over_a_socket(void **state)
{
	(void)state;
	agent_fixture fx;
	fixture_start(&fx, "--listen", NULL);
	msb_agent_client *client = NULL;
	assert_int_equal(msb_agent_client_open_unix(fx.sock, 10, &client, NULL), MSB_OK);
	check_order(client);
	check_order(client); /* on a pooled connection */
	msb_agent_client_close(client);
	fixture_stop(&fx);
}

/* A host that hangs up mid-exec: nobody can read the output, so the tree is killed. */
static void test_hang_up_kills_the_command(void **state)
{
	(void)state;
	agent_fixture fx;
	fixture_start(&fx, "--listen", NULL);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", fx.sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	msb_buf p = { 0 };
	msb_agent_put_u32(&p, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, NULL);
	assert_int_equal(msb_agent_frame_write(fd, MSB_AGENT_HELLO, 1, &p, NULL), MSB_OK);
	msb_agent_header h;
	msb_buf in = { 0 };
	assert_int_equal(msb_agent_frame_read(fd, msb_agent_now_ms() + 5000, &h, &in, NULL, NULL), MSB_OK);
	p.len = 0;
	char pidfile[160];
	snprintf(pidfile, sizeof pidfile, "%s/sleeper.pid", fx.work);
	msb_agent_put_str(&p, MSB_TAG_ARG, "sh", NULL);
	msb_agent_put_str(&p, MSB_TAG_ARG, "-c", NULL);
	msb_agent_put_str(&p, MSB_TAG_ARG, "echo $$ > sleeper.pid; echo up; exec sleep 60", NULL);
	msb_agent_put_u32(&p, MSB_TAG_STDIN_OPEN, 1, NULL);
	assert_int_equal(msb_agent_frame_write(fd, MSB_AGENT_EXEC_STREAM, 2, &p, NULL), MSB_OK);
	assert_int_equal(msb_agent_frame_read(fd, msb_agent_now_ms() + 10000, &h, &in, NULL, NULL), MSB_OK);
	assert_int_equal(h.type, MSB_AGENT_OUTPUT); /* "up": it runs */
	FILE *f = fopen(pidfile, "r");
	assert_non_null(f);
	long pid = 0;
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	assert_true(msb_driver_pid_running((pid_t)pid));
	close(fd);
	assert_true(fixture_wait_gone((pid_t)pid, 10000));
	msb_buf_free(&p);
	msb_buf_free(&in);
	fixture_stop(&fx);
}

/* The size a resize notification reports, and the pipe it is written to. */
typedef struct term {
	seen s;
	int resize_w, stdin_w;
} term;

static void get_size(void *vctx, uint16_t *rows, uint16_t *cols)
{
	(void)vctx;
	*rows = 50;
	*cols = 120;
}

static void on_term_output(void *vctx, msb_stream_id stream, const void *data, size_t len)
{
	term *t = vctx;
	on_output(&t->s, stream, data, len);
	/* Once the first size is printed: resize, then let the command print it again. */
	if (t->resize_w >= 0 && strstr((const char *)t->s.out.data, "37 101")) {
		assert_int_equal(write(t->resize_w, "w", 1), 1);
		close(t->resize_w);
		t->resize_w = -1;
		assert_int_equal(write(t->stdin_w, "go\n", 3), 3);
	}
}

static void test_terminal_size_and_resize(void **state)
{
	ctx *c = *state;
	int in[2], rs[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(rs), 0);
	const char *const argv[] = { "sh", "-c", "stty size; read x; stty size; test -t 0 && echo tty", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 20 };
	term t = { .s = { .answer_fd = -1 }, .resize_w = rs[1], .stdin_w = in[1] };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.stdin_fd = in[0], st.ctx = &t, st.on_output = on_term_output;
	st.rows = 37, st.cols = 101, st.resize_fd = rs[0], st.get_size = get_size;
	msb_exec_result res = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_exec_stream(c->client, &req, &st, &res, &err), MSB_OK);
	const char *out = (const char *)t.s.out.data;
	const char *first = strstr(out, "37 101"), *second = strstr(out, "50 120");
	if (!first || !second || second < first || !strstr(out, "tty"))
		fail_msg("terminal output: %s", out);
	assert_int_equal(t.s.err.len, 0); /* one terminal: everything is its output */
	assert_int_equal(res.exit_code, 0);
	close(in[0]), close(in[1]), close(rs[0]);
	msb_exec_result_free(&res);
	seen_free(&t.s);

	/* End of input is the terminal's EOF: cat ends. A size without both halves is refused. */
	assert_int_equal(pipe(in), 0);
	assert_int_equal(write(in[1], "abc\n", 4), 4);
	close(in[1]);
	const char *const cat[] = { "cat", NULL };
	req.argv = cat;
	seen s2 = { .answer_fd = -1 };
	msb_exec_stream st2 = MSB_EXEC_STREAM_INIT;
	st2.stdin_fd = in[0], st2.ctx = &s2, st2.on_output = on_output, st2.rows = 10, st2.cols = 10;
	assert_int_equal(msb_agent_exec_stream(c->client, &req, &st2, &res, NULL), MSB_OK);
	assert_false(res.timed_out);
	assert_non_null(strstr((const char *)s2.out.data, "abc"));
	close(in[0]);
	msb_exec_result_free(&res);
	seen_free(&s2);
	st2.stdin_fd = -1, st2.cols = 0;
	assert_int_equal(msb_agent_exec_stream(c->client, &req, &st2, &res, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "both rows and cols"));
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunks_in_order_per_stream),
		cmocka_unit_test(test_seen_before_it_ends),
		cmocka_unit_test(test_stdin_fed_as_it_runs),
		cmocka_unit_test(test_environment_per_exec),
		cmocka_unit_test(test_caps_and_truncation),
		cmocka_unit_test(test_timeout_keeps_what_was_sent),
		cmocka_unit_test(test_timeout_kills_what_left_the_group),
		cmocka_unit_test(test_cannot_start),
		cmocka_unit_test(test_over_a_socket),
		cmocka_unit_test(test_hang_up_kills_the_command),
		cmocka_unit_test(test_terminal_size_and_resize),
	};
	return cmocka_run_group_tests(tests, setup, agent_session_teardown);
}
