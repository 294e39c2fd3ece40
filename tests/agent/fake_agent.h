/*
 * fake_agent.h — an agent that is only bytes: whatever a test or a fuzz target wants the
 * client to read, queued on a socket before the client runs, then the end of the stream.
 * The client's requests land in the socket's buffer, unread, so a reply can say anything a
 * hostile guest could make its agent say.
 */
#ifndef MSB_FAKE_AGENT_H
#define MSB_FAKE_AGENT_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <msb/agent.h>

/* Append one reply frame to `stream`: `type` | MSB_AGENT_REPLY, `id`, the status, `fields`. */
static inline void fake_agent_reply(msb_buf *stream, uint16_t type, uint32_t id, uint32_t errc,
				    const msb_buf *fields)
{
	msb_buf payload = { 0 };
	msb_agent_put_u32(&payload, MSB_TAG_ERRC, errc, NULL);
	if (fields && fields->len)
		msb_buf_append(&payload, fields->data, fields->len, NULL);
	msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION,
			       (uint16_t)(type | MSB_AGENT_REPLY), id, (uint32_t)payload.len };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_agent_header_encode(&h, raw);
	msb_buf_append(stream, raw, sizeof raw, NULL);
	msb_buf_append(stream, payload.data, payload.len, NULL);
	msb_buf_free(&payload);
}

/* The HELLO answer a client's first request (id 1) expects. */
static inline void fake_agent_hello(msb_buf *stream)
{
	msb_buf f = { 0 };
	msb_agent_put_u32(&f, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, NULL);
	msb_agent_put_str(&f, MSB_TAG_AGENT_INFO, "msb-agent fake", NULL);
	fake_agent_reply(stream, MSB_AGENT_HELLO, 1, MSB_OK, &f);
	msb_buf_free(&f);
}

/*
 * A socket whose peer has already sent `bytes` (as much as its buffer takes) and then shut
 * its writing side: the client's end in *client, the peer (which keeps the client's
 * requests) in *peer. -1 on failure.
 */
static inline int fake_agent_open(const void *bytes, size_t len, int *client, int *peer)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	const unsigned char *p = bytes;
	while (len > 0) {
		ssize_t n = write(sv[1], p, len);
		if (n <= 0)
			break;
		p += n;
		len -= (size_t)n;
	}
	shutdown(sv[1], SHUT_WR);
	*client = sv[0];
	*peer = sv[1];
	return 0;
}

#endif
