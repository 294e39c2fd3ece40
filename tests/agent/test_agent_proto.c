/*
 * test_agent_proto.c — the agent protocol's framing and decoder on their own: round trips,
 * refusals with their reasons, lengths refused before anything is allocated, and the client
 * held to what it asked for when a fake agent (fake_agent.h) answers with more. Mutants of
 * valid requests are fuzz_agent_decode_replay's (fuzz_agent_decode.c).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/agent.h>

#include "fake_agent.h"

static void test_header_round_trip(void **state)
{
	msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION, MSB_AGENT_EXEC, 0xdeadbeef, 1234 };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_agent_header_encode(&h, raw);
	assert_memory_equal(raw, "MSBA", 4); /* little-endian on the wire, whatever the host */
	msb_agent_header back;
	assert_int_equal(msb_agent_header_decode(raw, &back, NULL), MSB_OK);
	assert_int_equal(back.version, h.version);
	assert_int_equal(back.type, h.type);
	assert_int_equal(back.id, h.id);
	assert_int_equal(back.length, h.length);
}

static void test_header_refusals(void **state)
{
	msb_agent_header h = { 0x12345678, 1, 1, 1, 0 };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_error err = MSB_ERROR_INIT;
	msb_agent_header_encode(&h, raw);
	assert_int_equal(msb_agent_header_decode(raw, &h, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "magic"));
	msb_error_clear(&err);

	h = (msb_agent_header){ MSB_AGENT_MAGIC, 1, 1, 1, MSB_AGENT_MAX_PAYLOAD + 1 };
	msb_agent_header_encode(&h, raw);
	assert_int_equal(msb_agent_header_decode(raw, &h, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "limit"));
	msb_error_clear(&err);
}

/*
 * A header claiming 4 GiB, and nothing after it: refused at once (not a timeout waiting for
 * bytes that would first need a 4 GiB buffer).
 */
static void test_oversize_refused_before_reading(void **state)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	msb_agent_header h = { MSB_AGENT_MAGIC, 1, MSB_AGENT_PING, 7, 0xffffffffu };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_agent_header_encode(&h, raw);
	assert_int_equal(write(p[1], raw, sizeof raw), (ssize_t)sizeof raw);
	msb_buf payload = { 0 };
	msb_error err = MSB_ERROR_INIT;
	int64_t deadline = msb_agent_now_ms() + 2000;
	assert_int_equal(msb_agent_frame_read(p[0], deadline, &h, &payload, NULL, &err), MSB_E_PROTOCOL);
	assert_true(msb_agent_now_ms() < deadline); /* never waited for the payload */
	assert_null(payload.data);
	assert_non_null(strstr(msb_error_message(&err), "4294967295"));
	msb_error_clear(&err);
	close(p[0]);
	close(p[1]);
}

static void test_frame_round_trip_and_eof(void **state)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	msb_buf out = { 0 };
	assert_int_equal(msb_agent_put_str(&out, MSB_TAG_ARG, "x y", NULL), MSB_OK);
	assert_int_equal(msb_agent_put_u64(&out, MSB_TAG_TIMEOUT_MS, 1ull << 40, NULL), MSB_OK);
	assert_int_equal(msb_agent_frame_write(p[1], MSB_AGENT_EXEC, 42, &out, NULL), MSB_OK);
	close(p[1]);
	msb_agent_header h;
	msb_buf in = { 0 };
	bool eof;
	assert_int_equal(msb_agent_frame_read(p[0], 0, &h, &in, &eof, NULL), MSB_OK);
	assert_int_equal(h.id, 42);
	assert_int_equal(in.len, out.len);
	msb_agent_request req;
	assert_int_equal(msb_agent_request_decode(h.type, in.data, in.len, &req, NULL), MSB_OK);
	assert_int_equal(req.argc, 1);
	assert_string_equal(req.argv[0], "x y");
	assert_null(req.argv[1]);
	assert_true(req.timeout_ms == 1ull << 40);
	msb_agent_request_free(&req);
	/* The writer went away cleanly: a server can tell that from a broken frame. */
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_frame_read(p[0], 0, &h, &in, &eof, &err), MSB_E_PROTOCOL);
	assert_true(eof);
	msb_error_clear(&err);
	msb_buf_free(&in);
	msb_buf_free(&out);
	close(p[0]);
}

static void test_truncated_frame(void **state)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	msb_agent_header h = { MSB_AGENT_MAGIC, 1, MSB_AGENT_PING, 1, 100 };
	unsigned char raw[MSB_AGENT_HEADER_SIZE + 10] = { 0 };
	msb_agent_header_encode(&h, raw);
	assert_int_equal(write(p[1], raw, sizeof raw), (ssize_t)sizeof raw);
	close(p[1]);
	msb_buf in = { 0 };
	bool eof;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_frame_read(p[0], 0, &h, &in, &eof, &err), MSB_E_PROTOCOL);
	assert_false(eof);
	assert_non_null(strstr(msb_error_message(&err), "closed"));
	msb_error_clear(&err);
	close(p[0]);
}

static msb_errc decode(uint16_t type, const msb_buf *b, msb_agent_request *req, msb_error *err)
{
	return msb_agent_request_decode(type, b->data, b->len, req, err);
}

static void test_request_refusals(void **state)
{
	msb_agent_request req;
	msb_error err = MSB_ERROR_INIT;
	msb_buf b = { 0 };

	/* No argv. */
	assert_int_equal(decode(MSB_AGENT_EXEC, &b, &req, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "argv"));
	msb_error_clear(&err);

	/* A NUL inside an argument would silently cut it: refused. */
	assert_int_equal(msb_agent_put(&b, MSB_TAG_ARG, "a\0b", 3, NULL), MSB_OK);
	assert_int_equal(decode(MSB_AGENT_EXEC, &b, &req, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "NUL"));
	msb_error_clear(&err);
	msb_buf_free(&b);

	/* A field claiming more than the payload holds. */
	assert_int_equal(msb_agent_put_str(&b, MSB_TAG_ARG, "true", NULL), MSB_OK);
	b.data[2] = 0xff; /* length byte 0 of the first field */
	assert_int_equal(decode(MSB_AGENT_EXEC, &b, &req, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "remain"));
	msb_error_clear(&err);
	msb_buf_free(&b);

	/* A u64 field of the wrong width. */
	assert_int_equal(msb_agent_put_str(&b, MSB_TAG_ARG, "true", NULL), MSB_OK);
	assert_int_equal(msb_agent_put_u32(&b, MSB_TAG_TIMEOUT_MS, 5, NULL), MSB_OK);
	assert_int_equal(decode(MSB_AGENT_EXEC, &b, &req, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "u64"));
	msb_error_clear(&err);
	msb_buf_free(&b);

	/* Unknown type; file operation without a working directory; env without '='. */
	assert_int_equal(decode(99, &b, &req, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "99"));
	msb_error_clear(&err);
	assert_int_equal(msb_agent_put_str(&b, MSB_TAG_PATH, "a", NULL), MSB_OK);
	assert_int_equal(decode(MSB_AGENT_READ_FILE, &b, &req, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "working directory"));
	msb_error_clear(&err);
	msb_buf_free(&b);
	assert_int_equal(msb_agent_put_str(&b, MSB_TAG_ARG, "env", NULL), MSB_OK);
	assert_int_equal(msb_agent_put_str(&b, MSB_TAG_ENV, "NOEQUALS", NULL), MSB_OK);
	assert_int_equal(decode(MSB_AGENT_EXEC, &b, &req, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	msb_buf_free(&b);

	/* Unknown tags are skipped: a later minor addition needs no version bump. */
	assert_int_equal(msb_agent_put_str(&b, 999, "future", NULL), MSB_OK);
	assert_int_equal(msb_agent_put_str(&b, MSB_TAG_ARG, "", NULL), MSB_OK);
	assert_int_equal(decode(MSB_AGENT_EXEC, &b, &req, &err), MSB_OK);
	assert_string_equal(req.argv[0], "");
	msb_agent_request_free(&req);
	msb_buf_free(&b);
}

static void test_put_refuses_oversize(void **state)
{
	msb_buf b = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_put(&b, MSB_TAG_DATA, "", (size_t)MSB_AGENT_MAX_PAYLOAD + 1, &err),
			 MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "limit"));
	assert_null(b.data);
	msb_error_clear(&err);
}

/* A client on a fake agent that answers request 2 of `type` with `errc` and `fields`. */
static msb_agent_client *client_answered(uint16_t type, uint32_t errc, const msb_buf *fields,
					 int *peer)
{
	msb_buf stream = { 0 };
	fake_agent_hello(&stream);
	fake_agent_reply(&stream, type, 2, errc, fields);
	int fd = -1;
	assert_int_equal(fake_agent_open(stream.data, stream.len, &fd, peer), 0);
	msb_buf_free(&stream);
	msb_agent_client *c = NULL;
	assert_int_equal(msb_agent_client_open_fds(fd, fd, 5, &c, NULL), MSB_OK);
	return c;
}

/*
 * The agent runs as the workload's user, who can replace it: an answer bigger than the
 * request allowed is refused, and none of it is kept.
 */
static void test_client_refuses_more_than_asked(void **state)
{
	(void)state;
	msb_buf f = { 0 };
	msb_agent_put_str(&f, MSB_TAG_DATA, "hello!", NULL);
	int peer;
	msb_agent_client *c = client_answered(MSB_AGENT_READ_FILE, MSB_OK, &f, &peer);
	msb_buf out = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_read_file(c, "a", "/w", 4, &out, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "6 bytes, more than the 4 asked for"));
	assert_int_equal(out.len, 0);
	msb_error_clear(&err);
	msb_agent_client_close(c);
	close(peer);
	msb_buf_free(&f);

	msb_agent_put_u32(&f, MSB_TAG_EXIT_CODE, 0, NULL);
	msb_agent_put_str(&f, MSB_TAG_STDERR, "12345", NULL);
	const char *argv[] = { "true", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 5, .max_output = 4 };
	msb_exec_result res = { 0 };
	c = client_answered(MSB_AGENT_EXEC, MSB_OK, &f, &peer);
	assert_int_equal(msb_agent_exec(c, &req, NULL, &res, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "5 bytes of stderr, more than the 4"));
	assert_int_equal(res.err.len, 0);
	msb_error_clear(&err);
	msb_agent_client_close(c);
	close(peer);

	/* The same answer, with room for it, is taken as it is. */
	req.max_output = 5;
	c = client_answered(MSB_AGENT_EXEC, MSB_OK, &f, &peer);
	assert_int_equal(msb_agent_exec(c, &req, NULL, &res, &err), MSB_OK);
	assert_string_equal((char *)res.err.data, "12345");
	msb_exec_result_free(&res);
	msb_agent_client_close(c);
	close(peer);
	msb_buf_free(&f);
}

/* Append one frame of `type` #id with STREAM `which` and DATA `text` (OUTPUT). */
static void put_output(msb_buf *stream, uint16_t type, uint32_t id, uint32_t which, const char *text)
{
	msb_buf p = { 0 };
	msb_agent_put_u32(&p, MSB_TAG_STREAM, which, NULL);
	msb_agent_put_str(&p, MSB_TAG_DATA, text, NULL);
	msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION, type, id, (uint32_t)p.len };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_agent_header_encode(&h, raw);
	msb_buf_append(stream, raw, sizeof raw, NULL);
	msb_buf_append(stream, p.data, p.len, NULL);
	msb_buf_free(&p);
}

static size_t shown;

static void count_shown(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	(void)ctx, (void)stream, (void)data;
	shown += len;
}

/* A streamed exec against a fake agent that says `stream` after HELLO; its result code. */
static msb_errc stream_against(const msb_buf *said, size_t max_output, msb_error *err)
{
	msb_buf stream = { 0 };
	fake_agent_hello(&stream);
	msb_buf_append(&stream, said->data, said->len, NULL);
	int fd = -1, peer = -1;
	assert_int_equal(fake_agent_open(stream.data, stream.len, &fd, &peer), 0);
	msb_buf_free(&stream);
	msb_agent_client *c = NULL;
	assert_int_equal(msb_agent_client_open_fds(fd, fd, 5, &c, NULL), MSB_OK);
	const char *argv[] = { "cat", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 5, .max_output = max_output };
	msb_exec_stream st = MSB_EXEC_STREAM_INIT;
	st.on_output = count_shown;
	msb_exec_result res = { 0 };
	shown = 0;
	msb_errc rc = msb_agent_exec_stream(c, &req, &st, &res, err);
	msb_exec_result_free(&res);
	msb_agent_client_close(c);
	close(peer);
	return rc;
}

/*
 * A hostile agent streaming: more than the cap is refused and nothing past it is shown; an
 * OUTPUT of another request, or of no known stream, is refused.
 */
static void test_client_refuses_hostile_streams(void **state)
{
	(void)state;
	msb_buf said = { 0 };
	msb_error err = MSB_ERROR_INIT;
	put_output(&said, MSB_AGENT_OUTPUT, 2, MSB_STREAM_STDOUT, "1234");
	put_output(&said, MSB_AGENT_OUTPUT, 2, MSB_STREAM_STDOUT, "5");
	fake_agent_reply(&said, MSB_AGENT_EXEC_STREAM, 2, MSB_OK, NULL);
	assert_int_equal(stream_against(&said, 4, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "more than the 4 bytes of stdout"));
	assert_int_equal(shown, 4);
	msb_error_clear(&err);
	/* The same with room for it is taken. */
	assert_int_equal(stream_against(&said, 5, &err), MSB_OK);
	assert_int_equal(shown, 5);
	msb_buf_free(&said);

	put_output(&said, MSB_AGENT_OUTPUT, 9, MSB_STREAM_STDOUT, "other");
	assert_int_equal(stream_against(&said, 0, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "answered by type"));
	assert_int_equal(shown, 0);
	msb_error_clear(&err);
	msb_buf_free(&said);

	put_output(&said, MSB_AGENT_OUTPUT, 2, 3, "nowhere");
	assert_int_equal(stream_against(&said, 0, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "stream (1 stdout or 2 stderr)"));
	assert_int_equal(shown, 0);
	msb_error_clear(&err);
	msb_buf_free(&said);
}

/* A refusal the agent gave no sentence for still says what was refused. */
static void test_client_words_a_silent_refusal(void **state)
{
	(void)state;
	int peer;
	msb_agent_client *c = client_answered(MSB_AGENT_REMOVE, MSB_E_NOT_FOUND, NULL, &peer);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_remove(c, "a", "/w", false, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "refused remove"));
	assert_non_null(strstr(msb_error_message(&err), "without saying why"));
	msb_error_clear(&err);
	msb_agent_client_close(c);
	close(peer);
}

static void test_config_argv(void **state)
{
	msb_agent_config c = MSB_AGENT_CONFIG_INIT;
	c.work_dir = "/w";
	c.work_alias = "/msb/work";
	c.run_code = (const char *const[]){ "python3", "-", NULL };
	c.rlimits.nproc = 64;
	c.uid = 65534;
	char **argv = NULL;
	assert_int_equal(msb_agent_config_argv("/bin/agent", "--listen", "/s", &c, 3, &argv, NULL), MSB_OK);
	char joined[512] = "";
	for (char **a = argv; *a; a++) {
		strcat(joined, *a);
		strcat(joined, " ");
	}
	assert_string_equal(joined, "/bin/agent --listen /s --work-dir /w --work-alias /msb/work "
				    "--timeout 60.000 --max-output 1048576 --run-code python3 "
				    "--run-code - --rlimit-nproc 64 --uid 65534 --ready-fd 3 ");
	free(argv);
	msb_error err = MSB_ERROR_INIT;
	c.work_dir = "relative";
	assert_int_equal(msb_agent_config_argv("/bin/agent", "--listen", "/s", &c, -1, &argv, &err),
			 MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "work_dir"));
	msb_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_header_refusals),
		cmocka_unit_test(test_oversize_refused_before_reading),
		cmocka_unit_test(test_frame_round_trip_and_eof),
		cmocka_unit_test(test_truncated_frame),
		cmocka_unit_test(test_request_refusals),
		cmocka_unit_test(test_put_refuses_oversize),
		cmocka_unit_test(test_config_argv),
		cmocka_unit_test(test_client_refuses_more_than_asked),
		cmocka_unit_test(test_client_words_a_silent_refusal),
		cmocka_unit_test(test_client_refuses_hostile_streams),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
