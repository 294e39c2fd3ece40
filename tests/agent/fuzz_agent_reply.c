/*
 * fuzz_agent_reply.c — libFuzzer target for the host's side of the agent protocol: the
 * client reading what an agent answers. The agent runs as the workload's user, so a hostile
 * guest can make it say anything; this is what it can say. The first byte picks the request
 * the client makes, the rest is the agent's whole side of the stream (fake_agent.h): a
 * HELLO answer, then the request's.
 *
 * Beyond "no crash, no leak": a refusal carries its code and a message, and an answer is
 * held to what was asked (no more output, no more file bytes than the request allowed, an
 * entry with a path and a known kind).
 *
 * Replayed in every `make check` (fuzz_agent_reply_replay, tests/lib/fuzz_replay.h); for
 * coverage-guided runs, `make fuzz-agent` builds tests/agent/fuzz_agent_reply with clang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_agent.h"

/* What every request asks for: small, so an answer over it is easy to make. */
#define ASKED 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
msb_errc fuzz_agent_reply_once(const uint8_t *data, size_t size);

static void broken(const char *what, const char *message)
{
	fprintf(stderr, "fuzz_agent_reply: %s: %s\n", what, message ? message : "(no message)");
	abort();
}

static void check_entry(const msb_entry *e)
{
	if (!e->path || (unsigned)e->kind >= MSB_ENTRY__COUNT)
		broken("an entry without a path or with an unknown kind", e->path);
}

static void check_run(const msb_exec_result *r)
{
	if (r->out.len > ASKED || r->err.len > ASKED)
		broken("more output than asked for was accepted", NULL);
}

static void check_bg(const msb_bg_status *st)
{
	if (!msb_bg_id_valid(st->id) || st->ring == 0 || st->ring > MSB_AGENT_MAX_OUTPUT ||
	    strlen(st->command) > MSB_BG_COMMAND_MAX)
		broken("a background status of no honest agent's was accepted", st->id);
}

/* What a streamed exec handed the callback, per stream. */
static size_t streamed[3];

static void on_output(void *ctx, msb_stream_id stream, const void *data, size_t len)
{
	(void)ctx, (void)data;
	if (stream != MSB_STREAM_STDOUT && stream != MSB_STREAM_STDERR)
		broken("a chunk of no known stream reached the callback", NULL);
	streamed[stream] += len;
	/* Checked as it comes, success or not: nothing over the cap is ever shown. */
	if (streamed[stream] > ASKED)
		broken("more streamed output than asked for reached the callback", NULL);
}

/* One request of kind `op` on `c`; its own invariants checked on success. */
static msb_errc call(msb_agent_client *c, unsigned op, msb_error *err)
{
	msb_errc rc;
	switch (op % 14) {
	case 10:
	case 11: {
		const char *argv[] = { "sleep", "1", NULL };
		msb_exec_request req = { .argv = argv, .max_output = ASKED };
		msb_bg_status st;
		msb_bg_output out = { 0 };
		msb_bg_read rq = { .max_bytes = ASKED, .wait = 1 };
		rc = op % 14 == 10 ? msb_agent_bg_start(c, &req, NULL, &st, err)
				   : msb_agent_bg_read(c, "abc", &rq, &out, err);
		if (rc == MSB_OK && op % 14 == 10)
			check_bg(&st);
		if (rc == MSB_OK && op % 14 == 11) {
			check_bg(&out.status);
			if (out.out.len > ASKED || out.err.len > ASKED)
				broken("more background output than asked for was accepted", NULL);
		}
		if (rc != MSB_OK && (out.out.len || out.err.len))
			broken("a refused background read left bytes behind", msb_error_message(err));
		msb_bg_output_free(&out);
		return rc;
	}
	case 12:
		return msb_agent_bg_signal(c, "abc", 15, err);
	case 13: {
		msb_bg_list list = { 0 };
		if ((rc = msb_agent_bg_list(c, &list, err)) == MSB_OK) {
			if (list.n > MSB_AGENT_BG_MAX)
				broken("more background commands listed than a sandbox holds", NULL);
			for (size_t i = 0; i < list.n; i++)
				check_bg(&list.items[i]);
		} else if (list.n || list.items) {
			broken("a refused listing left entries behind", msb_error_message(err));
		}
		msb_bg_list_free(&list);
		return rc;
	}
	case 9: {
		const char *argv[] = { "cat", NULL };
		msb_exec_request req = { .argv = argv, .timeout = 5, .max_output = ASKED };
		msb_exec_stream st = MSB_EXEC_STREAM_INIT;
		st.on_output = on_output;
		msb_exec_result res = { 0 };
		streamed[1] = streamed[2] = 0;
		if ((rc = msb_agent_exec_stream(c, &req, &st, &res, err)) == MSB_OK)
			check_run(&res);
		msb_exec_result_free(&res);
		return rc;
	}
	case 0:
		return msb_agent_ping(c, 5, err);
	case 1: {
		const char *argv[] = { "true", NULL };
		msb_exec_request req = { .argv = argv, .timeout = 5, .max_output = ASKED };
		msb_exec_result res = { 0 };
		if ((rc = msb_agent_exec(c, &req, NULL, &res, err)) == MSB_OK)
			check_run(&res);
		msb_exec_result_free(&res);
		return rc;
	}
	case 2: {
		msb_exec_result res = { 0 };
		if ((rc = msb_agent_run_code(c, "1", 5, ASKED, &res, err)) == MSB_OK)
			check_run(&res);
		msb_exec_result_free(&res);
		return rc;
	}
	case 3: {
		msb_entry e;
		bool found;
		if ((rc = msb_agent_stat_file(c, "a", "/w", &e, &found, err)) == MSB_OK && found)
			check_entry(&e);
		if (rc == MSB_OK && found)
			free(e.path);
		return rc;
	}
	case 4: {
		msb_buf out = { 0 };
		if ((rc = msb_agent_read_file(c, "a", "/w", ASKED, &out, err)) == MSB_OK && out.len > ASKED)
			broken("a file larger than asked for was accepted", NULL);
		if (rc != MSB_OK && out.len)
			broken("a refused read left bytes behind", msb_error_message(err));
		msb_buf_free(&out);
		return rc;
	}
	case 5: {
		msb_entry_list list = { 0 };
		if ((rc = msb_agent_list_dir(c, "a", "/w", &list, err)) == MSB_OK)
			for (size_t i = 0; i < list.len; i++)
				check_entry(&list.items[i]);
		msb_entry_list_free(&list);
		return rc;
	}
	case 6:
		return msb_agent_write_file(c, "a", "bytes", 5, "/w", err);
	case 7:
		return msb_agent_remove(c, "a", "/w", true, err);
	default:
		return msb_agent_reclaim(c, "/w/out", "/w", 5, err);
	}
}

/* The client's verdict on one input (also what the replay's seeds are checked with). */
msb_errc fuzz_agent_reply_once(const uint8_t *data, size_t size)
{
	if (size < 1)
		return MSB_OK;
	int fd, peer;
	if (fake_agent_open(data + 1, size - 1, &fd, &peer) != 0)
		broken("socketpair", NULL);
	msb_agent_client *c = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_agent_client_open_fds(fd, fd, 5, &c, &err);
	if (rc == MSB_OK) {
		rc = call(c, data[0], &err);
		msb_agent_client_close(c);
	}
	close(peer);
	if (rc == MSB_OK)
		return rc;
	const char *msg = msb_error_message(&err);
	if (err.code != rc || !msg || !*msg || rc >= MSB_E__COUNT)
		broken("a refusal without its code or message", msg);
	msb_error_clear(&err);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_agent_reply_once(data, size);
	return 0;
}
