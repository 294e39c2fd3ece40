/*
 * proto.c — the guest agent's framing: headers, fields, and whole frames on a byte stream.
 *
 * Shared verbatim by the static agent and libmsb-sdk, so it uses libc and msb_error/msb_buf
 * only. The one rule that makes the decoder safe against a hostile peer: no length read off
 * the wire is used before it has been compared with a bound already known to be safe
 * (MSB_AGENT_MAX_PAYLOAD for a frame, the bytes left in the payload for a field).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>

static void put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint16_t get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

int64_t msb_agent_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *msb_agent_type_name(uint16_t type)
{
	static const char *const names[] = {
		[MSB_AGENT_HELLO] = "hello",          [MSB_AGENT_PING] = "ping",
		[MSB_AGENT_EXEC] = "exec",            [MSB_AGENT_RUN_CODE] = "run_code",
		[MSB_AGENT_WRITE_FILE] = "write_file", [MSB_AGENT_STAT_FILE] = "stat_file",
		[MSB_AGENT_READ_FILE] = "read_file",  [MSB_AGENT_LIST_DIR] = "list_dir",
		[MSB_AGENT_REMOVE] = "remove",        [MSB_AGENT_RECLAIM] = "reclaim",
		[MSB_AGENT_SHUTDOWN] = "shutdown",
		[MSB_AGENT_EXEC_STREAM] = "exec_stream", [MSB_AGENT_OUTPUT] = "output",
		[MSB_AGENT_INPUT] = "input",        [MSB_AGENT_RESIZE] = "resize",
		[MSB_AGENT_BG_START] = "bg_start",  [MSB_AGENT_BG_READ] = "bg_read",
		[MSB_AGENT_BG_SIGNAL] = "bg_signal", [MSB_AGENT_BG_LIST] = "bg_list",
	};
	uint16_t base = (uint16_t)(type & ~MSB_AGENT_REPLY);
	if (base == 0 || base > MSB_AGENT__TYPE_MAX)
		return "unknown";
	return names[base];
}

void msb_agent_header_encode(const msb_agent_header *h, unsigned char raw[MSB_AGENT_HEADER_SIZE])
{
	put_le32(raw, h->magic);
	put_le16(raw + 4, h->version);
	put_le16(raw + 6, h->type);
	put_le32(raw + 8, h->id);
	put_le32(raw + 12, h->length);
}

msb_errc msb_agent_header_decode(const unsigned char raw[MSB_AGENT_HEADER_SIZE],
				 msb_agent_header *h, msb_error *err)
{
	h->magic = get_le32(raw);
	h->version = get_le16(raw + 4);
	h->type = get_le16(raw + 6);
	h->id = get_le32(raw + 8);
	h->length = get_le32(raw + 12);
	if (h->magic != MSB_AGENT_MAGIC)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: frame refused: magic 0x%08x is not 0x%08x "
				     "(the peer is not an msb agent, or the stream lost its framing)",
				     h->magic, MSB_AGENT_MAGIC);
	if (h->length > MSB_AGENT_MAX_PAYLOAD)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: frame refused: payload of %u bytes is over the "
				     "%u-byte limit", h->length, MSB_AGENT_MAX_PAYLOAD);
	return MSB_OK;
}

msb_errc msb_agent_put(msb_buf *payload, uint16_t tag, const void *value, size_t len,
		       msb_error *err)
{
	if (len > MSB_AGENT_MAX_PAYLOAD ||
	    payload->len + len + MSB_AGENT_FIELD_HEADER_SIZE > MSB_AGENT_MAX_PAYLOAD)
		return msb_error_set(err, MSB_E_VALUE,
				     "agent protocol: a %zu-byte field would take the message over "
				     "the %u-byte frame limit", len, MSB_AGENT_MAX_PAYLOAD);
	unsigned char head[MSB_AGENT_FIELD_HEADER_SIZE];
	put_le16(head, tag);
	put_le32(head + 2, (uint32_t)len);
	msb_errc rc = msb_buf_append(payload, head, sizeof head, err);
	if (rc == MSB_OK && len)
		rc = msb_buf_append(payload, value, len, err);
	return rc;
}

msb_errc msb_agent_put_u32(msb_buf *payload, uint16_t tag, uint32_t v, msb_error *err)
{
	unsigned char raw[4];
	put_le32(raw, v);
	return msb_agent_put(payload, tag, raw, sizeof raw, err);
}

msb_errc msb_agent_put_u64(msb_buf *payload, uint16_t tag, uint64_t v, msb_error *err)
{
	unsigned char raw[8];
	put_le32(raw, (uint32_t)v);
	put_le32(raw + 4, (uint32_t)(v >> 32));
	return msb_agent_put(payload, tag, raw, sizeof raw, err);
}

msb_errc msb_agent_put_str(msb_buf *payload, uint16_t tag, const char *s, msb_error *err)
{
	return msb_agent_put(payload, tag, s, strlen(s), err);
}

msb_errc msb_agent_reader_next(msb_agent_reader *r, msb_agent_field *f, bool *done,
			       msb_error *err)
{
	*done = false;
	if (r->pos >= r->len) {
		*done = true;
		return MSB_OK;
	}
	size_t left = r->len - r->pos;
	if (left < 6)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: message refused: %zu stray bytes where a field "
				     "header (6 bytes) should be", left);
	const unsigned char *p = r->data + r->pos;
	f->tag = get_le16(p);
	f->len = get_le32(p + 2);
	if (f->len > left - 6)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: message refused: field %u claims %u bytes, "
				     "only %zu remain", f->tag, f->len, left - 6);
	f->value = p + 6;
	r->pos += 6 + (size_t)f->len;
	return MSB_OK;
}

msb_errc msb_agent_field_u32(const msb_agent_field *f, uint32_t *v, msb_error *err)
{
	if (f->len != 4)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: field %u refused: %u bytes where a u32 is 4",
				     f->tag, f->len);
	*v = get_le32(f->value);
	return MSB_OK;
}

msb_errc msb_agent_field_u64(const msb_agent_field *f, uint64_t *v, msb_error *err)
{
	if (f->len != 8)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: field %u refused: %u bytes where a u64 is 8",
				     f->tag, f->len);
	*v = get_le64(f->value);
	return MSB_OK;
}

/* Wait until fd is ready for `events` or the deadline passes (MSB_E_TIMEOUT). */
static msb_errc wait_fd(int fd, short events, int64_t deadline_ms, msb_error *err)
{
	if (deadline_ms <= 0)
		return MSB_OK;
	for (;;) {
		int64_t left = deadline_ms - msb_agent_now_ms();
		if (left <= 0)
			return msb_error_set(err, MSB_E_TIMEOUT,
					     "agent protocol: the agent did not answer in time");
		struct pollfd pfd = { .fd = fd, .events = events };
		int n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (n > 0)
			return MSB_OK;
		if (n < 0 && errno != EINTR)
			return msb_error_set_errno(err, MSB_E_OS, errno, "agent protocol: poll");
	}
}

static msb_errc write_all(int fd, struct iovec *iov, int iovcnt, msb_error *err)
{
	bool is_socket = true;
	while (iovcnt > 0) {
		ssize_t n;
		if (is_socket) {
			struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt };
			n = sendmsg(fd, &msg, MSG_NOSIGNAL);
			if (n < 0 && errno == ENOTSOCK) {
				is_socket = false;
				continue;
			}
		} else {
			n = writev(fd, iov, iovcnt);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return msb_error_set_errno(err, MSB_E_PROTOCOL, errno,
						   "agent protocol: writing a frame failed");
		}
		size_t done = (size_t)n;
		while (iovcnt > 0 && done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (char *)iov->iov_base + done;
			iov->iov_len -= done;
		}
	}
	return MSB_OK;
}

msb_errc msb_agent_frame_write(int fd, uint16_t type, uint32_t id, const msb_buf *payload,
			       msb_error *err)
{
	size_t len = payload ? payload->len : 0;
	if (len > MSB_AGENT_MAX_PAYLOAD)
		return msb_error_set(err, MSB_E_VALUE,
				     "agent protocol: a %zu-byte %s message is over the %u-byte limit",
				     len, msb_agent_type_name(type), MSB_AGENT_MAX_PAYLOAD);
	msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION, type, id, (uint32_t)len };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_agent_header_encode(&h, raw);
	struct iovec iov[2] = { { raw, sizeof raw }, { len ? payload->data : NULL, len } };
	return write_all(fd, iov, len ? 2 : 1, err);
}

/* Read exactly n bytes. *got tells how many arrived before EOF. */
static msb_errc read_all(int fd, unsigned char *p, size_t n, int64_t deadline_ms, size_t *got,
			 msb_error *err)
{
	*got = 0;
	while (*got < n) {
		msb_errc rc = wait_fd(fd, POLLIN, deadline_ms, err);
		if (rc != MSB_OK)
			return rc;
		ssize_t r = read(fd, p + *got, n - *got);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return msb_error_set_errno(err, MSB_E_PROTOCOL, errno,
						   "agent protocol: reading a frame failed");
		}
		if (r == 0)
			return msb_error_set(err, MSB_E_PROTOCOL,
					     "agent protocol: the peer closed the stream %zu bytes "
					     "into a %zu-byte read", *got, n);
		*got += (size_t)r;
	}
	return MSB_OK;
}

msb_errc msb_agent_frame_read(int fd, int64_t deadline_ms, msb_agent_header *h,
			      msb_buf *payload, bool *eof, msb_error *err)
{
	return msb_agent_frame_read_max(fd, deadline_ms, MSB_AGENT_MAX_PAYLOAD, h, payload, eof, err);
}

msb_errc msb_agent_frame_skip(int fd, int64_t deadline_ms, size_t n, msb_error *err)
{
	unsigned char chunk[65536];
	while (n > 0) {
		size_t want = n < sizeof chunk ? n : sizeof chunk, got;
		msb_errc rc = read_all(fd, chunk, want, deadline_ms, &got, err);
		if (rc != MSB_OK)
			return rc;
		n -= want;
	}
	return MSB_OK;
}

msb_errc msb_agent_frame_read_max(int fd, int64_t deadline_ms, uint32_t max_len,
				  msb_agent_header *h, msb_buf *payload, bool *eof, msb_error *err)
{
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	size_t got;
	if (eof)
		*eof = false;
	msb_errc rc = read_all(fd, raw, sizeof raw, deadline_ms, &got, err);
	if (rc != MSB_OK) {
		if (eof && rc == MSB_E_PROTOCOL && got == 0)
			*eof = true;
		return rc;
	}
	rc = msb_agent_header_decode(raw, h, err);
	if (rc != MSB_OK)
		return rc;
	if (h->length > max_len) {
		msb_buf_free(payload);
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: a %u-byte %s frame is over the %u bytes its "
				     "request allows; refused before it was read", h->length,
				     msb_agent_type_name(h->type & ~MSB_AGENT_REPLY), max_len);
	}
	/*
	 * The length is bounded now: allocating it is safe. The caller's buffer is reused when it
	 * is large enough: a C library that returns a large block to the kernel at free (musl,
	 * which the agent may be linked with) would otherwise fault in every page of every large
	 * frame anew (an 8 MiB file took twice as long as with glibc, which keeps the block).
	 */
	size_t need = (size_t)h->length + 1;
	if (payload->cap < need) {
		unsigned char *data = malloc(need);
		if (!data)
			return msb_error_set(err, MSB_E_NOMEM,
					     "agent protocol: out of memory for a %u-byte frame", h->length);
		free(payload->data);
		payload->data = data;
		payload->cap = need;
	}
	payload->len = 0;
	rc = read_all(fd, payload->data, h->length, deadline_ms, &got, err);
	if (rc != MSB_OK) {
		msb_buf_free(payload); /* a stream that failed is not read again */
		return rc;
	}
	payload->data[h->length] = '\0';
	payload->len = h->length;
	return MSB_OK;
}
