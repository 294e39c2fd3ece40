/*
 * fuzz_agent_decode_seeds.c — the seeds of fuzz_agent_decode_replay: one well-formed request
 * frame of each kind the decoder parses fields for, built with the protocol's own encoders.
 * Each must decode, and the same frame cut inside its last field must be refused, or the
 * replay stops: its mutants would reach neither the decoder's fields nor its refusals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/agent.h>

#include "fuzz_replay.h"

msb_errc fuzz_agent_decode_once(const uint8_t *data, size_t size);

static void add(fuzz_corpus *c, uint16_t type, msb_buf *payload)
{
	unsigned char frame[MSB_AGENT_HEADER_SIZE + 256];
	if (payload->len > sizeof frame - MSB_AGENT_HEADER_SIZE)
		exit(1);
	msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION, type, 7,
			       (uint32_t)payload->len };
	msb_agent_header_encode(&h, frame);
	memcpy(frame + MSB_AGENT_HEADER_SIZE, payload->data, payload->len);
	size_t len = MSB_AGENT_HEADER_SIZE + payload->len;
	if (fuzz_agent_decode_once(frame, len) != MSB_OK ||
	    fuzz_agent_decode_once(frame, len - 1) != MSB_E_PROTOCOL) {
		fprintf(stderr, "fuzz_agent_decode_seeds: the %s seed does not decode whole, or its "
				"cut copy is not refused\n", msb_agent_type_name(type));
		exit(1);
	}
	fuzz_corpus_add(c, frame, len);
	msb_buf_free(payload);
}

void fuzz_replay_seeds(fuzz_corpus *c)
{
	msb_buf b = { 0 };
	msb_agent_put_u32(&b, MSB_TAG_VERSION, 1, NULL);
	add(c, MSB_AGENT_HELLO, &b);
	msb_agent_put_str(&b, MSB_TAG_ARG, "sh", NULL);
	msb_agent_put_str(&b, MSB_TAG_ARG, "-c", NULL);
	msb_agent_put_str(&b, MSB_TAG_ENV, "A=b", NULL);
	msb_agent_put_str(&b, MSB_TAG_CWD, "/w", NULL);
	msb_agent_put_u64(&b, MSB_TAG_TIMEOUT_MS, 10, NULL);
	msb_agent_put_u64(&b, MSB_TAG_MAX_OUTPUT, 10, NULL);
	msb_agent_put(&b, MSB_TAG_STDIN, "\0\1\2", 3, NULL);
	add(c, MSB_AGENT_EXEC, &b);
	msb_agent_put_str(&b, MSB_TAG_CODE, "print(1)", NULL);
	add(c, MSB_AGENT_RUN_CODE, &b);
	msb_agent_put_str(&b, MSB_TAG_PATH, "a/b", NULL);
	msb_agent_put_str(&b, MSB_TAG_WORKDIR, "/w", NULL);
	msb_agent_put_str(&b, MSB_TAG_DATA, "data", NULL);
	add(c, MSB_AGENT_WRITE_FILE, &b);
	msb_agent_put_str(&b, MSB_TAG_PATH, "a", NULL);
	msb_agent_put_str(&b, MSB_TAG_WORKDIR, "/w", NULL);
	msb_agent_put_u64(&b, MSB_TAG_MAX_BYTES, 4096, NULL);
	add(c, MSB_AGENT_READ_FILE, &b);
	msb_agent_put_str(&b, MSB_TAG_PATH, "a", NULL);
	msb_agent_put_str(&b, MSB_TAG_WORKDIR, "/w", NULL);
	msb_agent_put_u32(&b, MSB_TAG_RECURSIVE, 1, NULL);
	add(c, MSB_AGENT_REMOVE, &b);
	/* Version 2's frames: a streamed exec, the output it answers with, the input it takes. */
	msb_agent_put_str(&b, MSB_TAG_ARG, "cat", NULL);
	msb_agent_put_str(&b, MSB_TAG_ENV, "NAME_1=v=al ue", NULL);
	msb_agent_put_u64(&b, MSB_TAG_MAX_OUTPUT, 10, NULL);
	msb_agent_put(&b, MSB_TAG_STDIN, "\0\1", 2, NULL);
	msb_agent_put_u32(&b, MSB_TAG_STDIN_OPEN, 1, NULL);
	add(c, MSB_AGENT_EXEC_STREAM, &b);
	msb_agent_put_u32(&b, MSB_TAG_STREAM, MSB_STREAM_STDERR, NULL);
	msb_agent_put(&b, MSB_TAG_DATA, "chunk\0", 6, NULL);
	add(c, MSB_AGENT_OUTPUT, &b);
	msb_agent_put(&b, MSB_TAG_DATA, "typed", 5, NULL);
	msb_agent_put_u32(&b, MSB_TAG_EOF, 1, NULL);
	add(c, MSB_AGENT_INPUT, &b);
	/* The background requests. */
	msb_agent_put_str(&b, MSB_TAG_ARG, "sleep", NULL);
	msb_agent_put_str(&b, MSB_TAG_ENV, "N=1", NULL);
	msb_agent_put_u64(&b, MSB_TAG_MAX_OUTPUT, 1024, NULL);
	msb_agent_put_u64(&b, MSB_TAG_TIMEOUT_MS, 10, NULL);
	add(c, MSB_AGENT_BG_START, &b);
	msb_agent_put_u64(&b, MSB_TAG_OFFSET_OUT, 5, NULL);
	msb_agent_put_u64(&b, MSB_TAG_OFFSET_ERR, 6, NULL);
	msb_agent_put_u64(&b, MSB_TAG_WAIT_MS, 100, NULL);
	msb_agent_put_u32(&b, MSB_TAG_UNTIL_EXIT, 1, NULL);
	msb_agent_put_str(&b, MSB_TAG_BG_ID, "0123abcd", NULL);
	add(c, MSB_AGENT_BG_READ, &b);
	msb_agent_put_u32(&b, MSB_TAG_SIGNAL, 15, NULL);
	msb_agent_put_str(&b, MSB_TAG_BG_ID, "0123abcd", NULL);
	add(c, MSB_AGENT_BG_SIGNAL, &b);
	msb_agent_put_u32(&b, MSB_TAG_RUNNING, 1, NULL); /* nothing it reads: skipped */
	add(c, MSB_AGENT_BG_LIST, &b);
}
