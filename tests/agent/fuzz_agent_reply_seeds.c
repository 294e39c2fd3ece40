/*
 * fuzz_agent_reply_seeds.c — the seeds of fuzz_agent_reply_replay: for each request the
 * target makes, the stream a well-behaved agent answers it with (and one refusal), each
 * checked to get the verdict it should before the mutants start from it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fake_agent.h"
#include "fuzz_replay.h"

msb_errc fuzz_agent_reply_once(const uint8_t *data, size_t size);

/* Which request, as fuzz_agent_reply.c numbers them. */
enum { PING, EXEC, RUN_CODE, STAT, READ, LIST, WRITE, REMOVE, RECLAIM, EXEC_STREAM, BG_START,
       BG_READ, BG_SIGNAL, BG_LIST };

static const uint16_t types[] = { MSB_AGENT_PING, MSB_AGENT_EXEC, MSB_AGENT_RUN_CODE,
				  MSB_AGENT_STAT_FILE, MSB_AGENT_READ_FILE, MSB_AGENT_LIST_DIR,
				  MSB_AGENT_WRITE_FILE, MSB_AGENT_REMOVE, MSB_AGENT_RECLAIM,
				  MSB_AGENT_EXEC_STREAM, MSB_AGENT_BG_START, MSB_AGENT_BG_READ,
				  MSB_AGENT_BG_SIGNAL, MSB_AGENT_BG_LIST };

static void put_entry(msb_buf *f, unsigned char kind, const char *path)
{
	unsigned char e[64] = { kind, 5 }; /* kind, then a little-endian size of 5 */
	size_t n = strlen(path);
	memcpy(e + 9, path, n);
	msb_agent_put(f, MSB_TAG_ENTRY, e, 9 + n, NULL);
}

/* One OUTPUT frame of request 2 (not a reply: a streamed exec's chunk). */
static void put_output(msb_buf *stream, uint32_t which, const char *text)
{
	msb_buf p = { 0 };
	msb_agent_put_u32(&p, MSB_TAG_STREAM, which, NULL);
	msb_agent_put_str(&p, MSB_TAG_DATA, text, NULL);
	msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION, MSB_AGENT_OUTPUT, 2,
			       (uint32_t)p.len };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_agent_header_encode(&h, raw);
	msb_buf_append(stream, raw, sizeof raw, NULL);
	msb_buf_append(stream, p.data, p.len, NULL);
	msb_buf_free(&p);
}

static void add(fuzz_corpus *c, unsigned op, uint32_t errc, const msb_buf *fields)
{
	msb_buf stream = { 0 };
	unsigned char pick = (unsigned char)op;
	msb_buf_append(&stream, &pick, 1, NULL);
	fake_agent_hello(&stream);
	if (op == EXEC_STREAM) {
		put_output(&stream, MSB_STREAM_STDOUT, "out");
		put_output(&stream, MSB_STREAM_STDERR, "err");
		put_output(&stream, MSB_STREAM_STDOUT, "more");
	}
	fake_agent_reply(&stream, types[op], 2, errc, fields);
	msb_errc got = fuzz_agent_reply_once(stream.data, stream.len);
	if (got != (msb_errc)errc) {
		fprintf(stderr, "fuzz_agent_reply_seeds: the %s seed got %d, not %u\n",
			msb_agent_type_name(types[op]), (int)got, errc);
		exit(1);
	}
	fuzz_corpus_add(c, stream.data, stream.len);
	msb_buf_free(&stream);
}

void fuzz_replay_seeds(fuzz_corpus *c)
{
	msb_buf run = { 0 }, stat = { 0 }, data = { 0 }, list = { 0 }, refusal = { 0 };
	msb_agent_put_u32(&run, MSB_TAG_EXIT_CODE, 3, NULL);
	msb_agent_put_u32(&run, MSB_TAG_SIGNAL, 0, NULL);
	msb_agent_put_u32(&run, MSB_TAG_FLAGS, MSB_AGENT_F_OUT_TRUNCATED, NULL);
	msb_agent_put_str(&run, MSB_TAG_STDOUT, "out", NULL);
	msb_agent_put_str(&run, MSB_TAG_STDERR, "err", NULL);
	msb_agent_put_u32(&stat, MSB_TAG_FOUND, 1, NULL);
	put_entry(&stat, MSB_ENTRY_FILE, "a");
	msb_agent_put_str(&data, MSB_TAG_DATA, "hello", NULL);
	put_entry(&list, MSB_ENTRY_FILE, "a/x");
	put_entry(&list, MSB_ENTRY_DIRECTORY, "a/y");
	msb_agent_put_str(&refusal, MSB_TAG_MESSAGE, "read_file: no such file: a", NULL);
	add(c, PING, MSB_OK, NULL);
	add(c, EXEC, MSB_OK, &run);
	add(c, RUN_CODE, MSB_OK, &run);
	add(c, STAT, MSB_OK, &stat);
	add(c, READ, MSB_OK, &data);
	add(c, READ, MSB_E_NOT_FOUND, &refusal);
	add(c, LIST, MSB_OK, &list);
	add(c, WRITE, MSB_OK, NULL);
	add(c, REMOVE, MSB_OK, NULL);
	add(c, RECLAIM, MSB_OK, NULL);
	msb_buf status = { 0 };
	msb_agent_put_u32(&status, MSB_TAG_EXIT_CODE, 0, NULL);
	msb_agent_put_u32(&status, MSB_TAG_FLAGS, MSB_AGENT_F_TIMED_OUT, NULL);
	add(c, EXEC_STREAM, MSB_OK, &status);
	add(c, EXEC_STREAM, MSB_E_NOT_FOUND, &refusal);
	/* The background replies: one command's status (with output for a read), a listing. */
	msb_buf bg = { 0 }, sub = { 0 }, listing = { 0 };
	msb_agent_put_str(&sub, MSB_TAG_BG_ID, "abc", NULL);
	msb_agent_put_u64(&sub, MSB_TAG_PID, 42, NULL);
	msb_agent_put_u32(&sub, MSB_TAG_RUNNING, 0, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_RING, 64, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_WRITTEN_OUT, 100, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_WRITTEN_ERR, 3, NULL);
	msb_agent_put_u64(&sub, MSB_TAG_STARTED_MS, 1, NULL);
	msb_agent_put_str(&sub, MSB_TAG_COMMAND, "sleep 1", NULL);
	msb_agent_put_u32(&sub, MSB_TAG_EXIT_CODE, 0, NULL);
	msb_agent_put_u32(&sub, MSB_TAG_SIGNAL, 0, NULL);
	msb_agent_put_u32(&sub, MSB_TAG_FLAGS, 0, NULL);
	msb_agent_put(&bg, MSB_TAG_BG_STATUS, sub.data, sub.len, NULL);
	msb_agent_put(&listing, MSB_TAG_BG_STATUS, sub.data, sub.len, NULL);
	msb_agent_put(&listing, MSB_TAG_BG_STATUS, sub.data, sub.len, NULL);
	add(c, BG_START, MSB_OK, &bg);
	msb_agent_put_str(&bg, MSB_TAG_STDOUT, "the end", NULL);
	msb_agent_put_u64(&bg, MSB_TAG_START_OUT, 93, NULL);
	msb_agent_put_str(&bg, MSB_TAG_STDERR, "err", NULL);
	msb_agent_put_u64(&bg, MSB_TAG_START_ERR, 0, NULL);
	add(c, BG_READ, MSB_OK, &bg);
	add(c, BG_READ, MSB_E_NOT_FOUND, &refusal);
	add(c, BG_SIGNAL, MSB_OK, NULL);
	add(c, BG_LIST, MSB_OK, &listing);
	msb_buf_free(&bg);
	msb_buf_free(&sub);
	msb_buf_free(&listing);
	msb_buf_free(&status);
	msb_buf_free(&run);
	msb_buf_free(&stat);
	msb_buf_free(&data);
	msb_buf_free(&list);
	msb_buf_free(&refusal);
}
