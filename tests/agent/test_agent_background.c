/*
 * test_agent_background.c — background commands against the real msb-agent (--listen, one
 * process per connection, as the backends run it): a command outlives the connection that
 * started it and is read from another; its output is a ring that says what it dropped; a
 * signal reaches it; a bounded wait; its own timeout; the listing; the agent's end kills it
 * and removes its state; and what either side refuses (a handle of the wrong shape, an
 * unknown one, a signal to an ended one, a malformed or oversized answer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include <msb/agent.h>

#include "agent_fixture.h"

typedef agent_session ctx;

/* The state dir of the session's agent, as the agent names it: under /tmp, by the work dir. */
static void bg_dir_of(const agent_fixture *fx, char *dir, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = fx->work; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	snprintf(dir, size, "/tmp/.msb-bg-%016llx", (unsigned long long)h);
}

static int setup(void **state)
{
	ctx *c = calloc(1, sizeof *c);
	fixture_start(&c->fx, "--listen", NULL);
	msb_error err = MSB_ERROR_INIT;
	if (msb_agent_client_open_unix(c->fx.sock, 10, &c->client, &err) != MSB_OK) {
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
		return -1;
	}
	*state = c;
	return 0;
}

static void start(ctx *c, const char *script, uint64_t ring, double timeout, msb_bg_status *st)
{
	const char *const argv[] = { "sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .max_output = ring, .timeout = timeout };
	msb_error err = MSB_ERROR_INIT;
	if (msb_agent_bg_start(c->client, &req, NULL, st, &err) != MSB_OK)
		fail_msg("bg_start: %s", msb_error_message(&err));
	assert_true(msb_bg_id_valid(st->id));
	assert_true(st->running);
	assert_true(st->pid > 1);
}

static void read_bg(msb_agent_client *client, const char *id, double wait, bool until_exit,
		    uint64_t out_offset, msb_bg_output *out)
{
	msb_bg_read rq = { .out_offset = out_offset, .wait = wait, .until_exit = until_exit };
	msb_error err = MSB_ERROR_INIT;
	if (msb_agent_bg_read(client, id, &rq, out, &err) != MSB_OK)
		fail_msg("bg_read: %s", msb_error_message(&err));
}

/* Read until `text` has appeared on stdout (and `err_text`, unless NULL, on stderr). */
static bool wait_for(msb_agent_client *client, const char *id, const char *text,
		     const char *err_text, int ms)
{
	int64_t until = msb_agent_now_ms() + ms;
	while (msb_agent_now_ms() < until) {
		msb_bg_output out;
		read_bg(client, id, 0.2, false, 0, &out);
		bool seen = out.out.data && strstr((const char *)out.out.data, text) &&
			    (!err_text || (out.err.data && strstr((const char *)out.err.data, err_text)));
		msb_bg_output_free(&out);
		if (seen)
			return true;
	}
	return false;
}

static void test_outlives_its_connection_and_is_signalled(void **state)
{
	ctx *c = *state;
	msb_bg_status st;
	start(c, "echo hello; echo oops >&2; trap 'echo got-term; exit 7' TERM; "
		 "while :; do sleep 0.05; done", 0, 0, &st);
	/* Another client, another connection: what a second msb process has. */
	msb_agent_client *other;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_open_unix(c->fx.sock, 10, &other, &err), MSB_OK);
	msb_agent_client_close(c->client); /* the starting connection goes */
	assert_int_equal(msb_agent_client_open_unix(c->fx.sock, 10, &c->client, &err), MSB_OK);
	assert_true(wait_for(other, st.id, "hello", "oops", 10000));
	msb_bg_output out;
	read_bg(other, st.id, 2, false, 0, &out);
	assert_true(out.status.running);
	assert_string_equal((const char *)out.err.data, "oops\n");
	assert_int_equal(out.out_start, 0);
	assert_int_equal(out.out_dropped, 0);
	uint64_t next = out.status.out_written;
	msb_bg_output_free(&out);

	/* Listed, running, with its command line. */
	msb_bg_list list;
	assert_int_equal(msb_agent_bg_list(other, &list, &err), MSB_OK);
	bool listed = false;
	for (size_t i = 0; i < list.n; i++)
		if (!strcmp(list.items[i].id, st.id)) {
			listed = list.items[i].running && strstr(list.items[i].command, "echo hello");
		}
	msb_bg_list_free(&list);
	assert_true(listed);

	/* A bounded wait for its end returns, still running, after about its bound. */
	int64_t t0 = msb_agent_now_ms();
	read_bg(other, st.id, 0.3, true, next, &out);
	int64_t took = msb_agent_now_ms() - t0;
	assert_true(out.status.running);
	assert_true(took >= 250 && took < 5000);
	msb_bg_output_free(&out);

	assert_int_equal(msb_agent_bg_signal(c->client, st.id, SIGTERM, &err), MSB_OK);
	read_bg(other, st.id, 10, true, next, &out);
	assert_false(out.status.running);
	assert_int_equal(out.status.exit_code, 7);
	assert_non_null(strstr((const char *)out.out.data, "got-term"));
	assert_int_equal(out.out_start, next); /* read from where the last read ended */
	msb_bg_output_free(&out);

	/* Ended: a signal now is refused, saying so. */
	assert_int_equal(msb_agent_bg_signal(other, st.id, SIGKILL, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "has ended"));
	msb_error_clear(&err);
	msb_agent_client_close(other);
}

static void test_ring_says_what_it_dropped(void **state)
{
	ctx *c = *state;
	msb_bg_status st;
	/* 1000 lines of 17 bytes through a ring of 1024. */
	start(c, "i=0; while [ $i -lt 1000 ]; do echo 0123456789abcdef; i=$((i+1)); done; "
		 "echo tail >&2", 1024, 0, &st);
	assert_int_equal(st.ring, 1024);
	msb_bg_output out;
	read_bg(c->client, st.id, 20, true, 0, &out);
	assert_false(out.status.running);
	assert_int_equal(out.status.exit_code, 0);
	assert_int_equal(out.status.out_written, 17000);
	assert_int_equal(out.out.len, 1024);
	assert_int_equal(out.out_start, 17000 - 1024);
	assert_int_equal(out.out_dropped, 17000 - 1024);
	/* The newest bytes, in order: the ring ends where the stream ended. */
	assert_memory_equal(out.out.data + 1024 - 17, "0123456789abcdef\n", 17);
	assert_string_equal((const char *)out.err.data, "tail\n");
	assert_int_equal(out.err_dropped, 0);
	msb_bg_output_free(&out);
}

static void test_own_timeout(void **state)
{
	ctx *c = *state;
	msb_bg_status st;
	start(c, "echo started; exec sleep 30", 0, 0.3, &st);
	msb_bg_output out;
	read_bg(c->client, st.id, 20, true, 0, &out);
	assert_false(out.status.running);
	assert_true(out.status.timed_out);
	assert_int_equal(out.status.signal, SIGKILL);
	assert_string_equal((const char *)out.out.data, "started\n");
	msb_bg_output_free(&out);
}

static void test_refusals(void **state)
{
	ctx *c = *state;
	msb_error err = MSB_ERROR_INIT;
	msb_bg_output out;
	msb_bg_read rq = { 0 };
	/* A handle that could name a path is refused before it is sent. */
	assert_int_equal(msb_agent_bg_read(c->client, "../x", &rq, &out, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "handle"));
	msb_error_clear(&err);
	assert_int_equal(msb_agent_bg_read(c->client, "0123456789abcdef", &rq, &out, &err),
			 MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "0123456789abcdef"));
	msb_error_clear(&err);
	assert_int_equal(msb_agent_bg_signal(c->client, "abc", 0, &err), MSB_E_VALUE);
	msb_error_clear(&err);
	/* A program that cannot start is the start's refusal, and leaves nothing listed. */
	const char *const argv[] = { "/nonexistent/program", NULL };
	msb_exec_request req = { .argv = argv };
	msb_bg_status st;
	msb_bg_list before, after;
	assert_int_equal(msb_agent_bg_list(c->client, &before, &err), MSB_OK);
	assert_int_not_equal(msb_agent_bg_start(c->client, &req, NULL, &st, &err), MSB_OK);
	msb_error_clear(&err);
	assert_int_equal(msb_agent_bg_list(c->client, &after, &err), MSB_OK);
	assert_int_equal(before.n, after.n);
	msb_bg_list_free(&before);
	msb_bg_list_free(&after);

	/* The agent refuses a handle of the wrong shape too, whoever sent it. */
	msb_buf p = { 0 };
	msb_agent_request dec;
	assert_int_equal(msb_agent_put_str(&p, MSB_TAG_BG_ID, "../../etc", NULL), MSB_OK);
	assert_int_equal(msb_agent_request_decode(MSB_AGENT_BG_READ, p.data, p.len, &dec, &err),
			 MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "background id"));
	msb_error_clear(&err);
	msb_buf_free(&p);
}

/* A status of every field, with `extra` fields after. */
static void put_status(msb_buf *reply, const char *id, bool running, uint64_t written)
{
	msb_buf sub = { 0 };
	msb_agent_put_str(&sub, MSB_TAG_BG_ID, id, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_PID, 42, NULL);
	msb_agent_put_u32(&sub, MSB_TAG_RUNNING, running, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_RING, 1024, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_WRITTEN_OUT, written, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_WRITTEN_ERR, 0, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_STARTED_MS, 1, NULL);
	if (!running) {
		msb_agent_put_u32(&sub, MSB_TAG_EXIT_CODE, 0, NULL);
		msb_agent_put_u32(&sub, MSB_TAG_SIGNAL, 0, NULL);
		msb_agent_put_u32(&sub, MSB_TAG_FLAGS, 0, NULL);
	}
	msb_agent_put(reply, MSB_TAG_BG_STATUS, sub.data, sub.len, NULL);
	msb_buf_free(&sub);
}

static void test_untrusted_replies(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	msb_bg_output out = { 0 };
	msb_bg_list list = { 0 };
	msb_buf r = { 0 };
	/* Honest: decoded. */
	put_status(&r, "abc", false, 4);
	msb_agent_put(&r, MSB_TAG_STDOUT, "four", 4, NULL);
	msb_agent_put_u64(&r, MSB_TAG_START_OUT, 0, NULL);
	assert_int_equal(msb_agent_bg_reply_decode(MSB_AGENT_BG_READ, r.data, r.len, 16, &out,
						   NULL, &err), MSB_OK);
	assert_int_equal(out.out.len, 4);
	msb_bg_output_free(&out);
	/* More output than asked for. */
	memset(&out, 0, sizeof out);
	assert_int_equal(msb_agent_bg_reply_decode(MSB_AGENT_BG_READ, r.data, r.len, 3, &out,
						   NULL, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	msb_bg_output_free(&out);
	/* Output past what the command wrote. */
	r.len = 0;
	put_status(&r, "abc", false, 2);
	msb_agent_put(&r, MSB_TAG_STDOUT, "four", 4, NULL);
	memset(&out, 0, sizeof out);
	assert_int_equal(msb_agent_bg_reply_decode(MSB_AGENT_BG_READ, r.data, r.len, 16, &out,
						   NULL, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	msb_bg_output_free(&out);
	/* An id of no handle's shape; an ended status with no exit code. */
	r.len = 0;
	put_status(&r, "A/B", true, 0);
	memset(&out, 0, sizeof out);
	assert_int_equal(msb_agent_bg_reply_decode(MSB_AGENT_BG_START, r.data, r.len, 0, &out,
						   NULL, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	msb_buf sub = { 0 };
	msb_agent_put_str(&sub, MSB_TAG_BG_ID, "abc", NULL);
	msb_agent_put_u32(&sub, MSB_TAG_RUNNING, 0, NULL);
	r.len = 0;
	msb_agent_put(&r, MSB_TAG_BG_STATUS, sub.data, sub.len, NULL);
	assert_int_equal(msb_agent_bg_reply_decode(MSB_AGENT_BG_START, r.data, r.len, 0, &out,
						   NULL, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	msb_buf_free(&sub);
	/* A listing longer than a sandbox holds. */
	r.len = 0;
	for (unsigned i = 0; i <= MSB_AGENT_BG_MAX; i++)
		put_status(&r, "abc", true, 0);
	assert_int_equal(msb_agent_bg_reply_decode(MSB_AGENT_BG_LIST, r.data, r.len, 0, NULL,
						   &list, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	msb_bg_list_free(&list);
	msb_buf_free(&r);
}

/* The agent's end kills what runs in the background and removes its state. */
static void test_dies_with_the_agent(void **state)
{
	(void)state;
	agent_fixture fx;
	fixture_start(&fx, "--listen", NULL);
	msb_agent_client *client;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_open_unix(fx.sock, 10, &client, &err), MSB_OK);
	const char *const argv[] = { "sh", "-c", "echo $$; exec sleep 300", NULL };
	msb_exec_request req = { .argv = argv };
	msb_bg_status st;
	assert_int_equal(msb_agent_bg_start(client, &req, NULL, &st, &err), MSB_OK);
	/* On the host's /proc (no pid namespace here) the pid it reports is the real one. */
	assert_true(msb_driver_pid_running((pid_t)st.pid));
	msb_bg_list list;
	assert_int_equal(msb_agent_bg_list(client, &list, &err), MSB_OK);
	assert_int_equal(list.n, 1);
	msb_bg_list_free(&list);
	msb_agent_client_close(client);
	char dir[64];
	bg_dir_of(&fx, dir, sizeof dir);
	struct stat sb;
	assert_int_equal(stat(dir, &sb), 0);
	pid_t pid = (pid_t)st.pid;
	fixture_stop(&fx);
	assert_true(fixture_wait_gone(pid, 10000));
	assert_int_equal(stat(dir, &sb), -1);
}

/*
 * The directory is the sandbox's, and its commands can write it: a state they forge is
 * never a licence to signal beyond them (pid 1 would be kill(-1): everything the agent may
 * reach) nor to make the agent read past its bound (a ring over MSB_AGENT_MAX_OUTPUT).
 */
static void test_forged_state_is_refused(void **state)
{
	ctx *c = *state;
	msb_bg_status st;
	start(c, "exit 0", 0, 0, &st); /* the directory exists */
	char dir[64], path[160];
	bg_dir_of(&c->fx, dir, sizeof dir);
	struct { const char *id; int64_t pid; uint64_t ring; } forged[] = {
		{ "forgedone", 1, 1024 }, { "forgedtwo", -1, 1024 }, { "forgedbig", 4242, UINT64_MAX },
	};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, forged[i].id);
		assert_int_equal(mkdir(path, 0700), 0);
		snprintf(path, sizeof path, "%s/%s/state", dir, forged[i].id);
		uint32_t raw[32] = { 0 };
		raw[0] = 0x4742534du; /* the magic */
		raw[1] = 1;           /* running */
		memcpy(&raw[2], &forged[i].pid, 8);
		memcpy(&raw[4], &forged[i].ring, 8);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		/* The state's exact size: the agent refuses any other. */
		assert_int_equal(fwrite(raw, 1, 72, f), 72);
		fclose(f);
	}
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_bg_signal(c->client, "forgedone", SIGTERM, &err), MSB_E_PROTOCOL);
	assert_non_null(strstr(msb_error_message(&err), "no command's"));
	msb_error_clear(&err);
	assert_int_equal(msb_agent_bg_signal(c->client, "forgedtwo", SIGTERM, &err), MSB_E_PROTOCOL);
	msb_error_clear(&err);
	msb_bg_output out;
	msb_bg_read rq = { 0 };
	assert_int_equal(msb_agent_bg_read(c->client, "forgedbig", &rq, &out, &err), MSB_E_NOT_FOUND);
	msb_error_clear(&err);
	/* And the agent, having been asked, still serves. */
	assert_int_equal(msb_agent_ping(c->client, 5, &err), MSB_OK);
}

static int teardown(void **state)
{
	return agent_session_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outlives_its_connection_and_is_signalled),
		cmocka_unit_test(test_ring_says_what_it_dropped),
		cmocka_unit_test(test_own_timeout),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_untrusted_replies),
		cmocka_unit_test(test_forged_state_is_refused),
		cmocka_unit_test(test_dies_with_the_agent),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
