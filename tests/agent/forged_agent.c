/*
 * forged_agent.c — an msb-agent impostor that answers HELLO as the real one does and then
 * lies: what a guest that replaced its agent (as its user can) makes the host read. A backend
 * configured with `agent: <this>` starts it in place of msb-agent, so a test attacks the host
 * through the whole driver, with the backend's own configured caps in force.
 *
 * What it says is chosen by the request, so one binary serves every case:
 *   exec ARGV "flood-out" N / "flood-err" N   N bytes of stdout / stderr, no truncation flag
 *   exec "frame" N                             a reply frame whose header claims N bytes
 *   exec "signal" N                            a result ended by signal N
 *   exec "reach" N                             a timed-out result whose kill reached N
 *   read_file "big-N"                          N bytes of data, whatever max_bytes said
 *   list_dir "many-N"                          N one-letter entries
 *   list_dir "long"                            one entry with an 8000-byte path
 *   list_dir "negative"                        one entry of size -5
 *   run_code CODE "flood-out N"                as exec
 * Anything else is answered with an empty success. It serves --listen-fd N, --listen PATH
 * and --fd R[,W], one forked process per connection, and exits at SHUTDOWN.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <msb/agent.h>

static void reply(int fd, uint16_t type, uint32_t id, const msb_buf *fields)
{
	msb_buf p = { 0 };
	msb_agent_put_u32(&p, MSB_TAG_ERRC, MSB_OK, NULL);
	if (fields && fields->len)
		msb_buf_append(&p, fields->data, fields->len, NULL);
	msb_agent_frame_write(fd, (uint16_t)(type | MSB_AGENT_REPLY), id, &p, NULL);
	msb_buf_free(&p);
}

static void put_bytes(msb_buf *f, uint16_t tag, size_t n)
{
	char *b = malloc(n ? n : 1);
	memset(b, 'x', n);
	msb_agent_put(f, tag, b, n, NULL);
	free(b);
}

static void put_entry(msb_buf *f, const char *path, int64_t size)
{
	size_t plen = strlen(path);
	unsigned char *raw = malloc(9 + plen);
	raw[0] = 0; /* a file */
	for (int i = 0; i < 8; i++)
		raw[1 + i] = (unsigned char)((uint64_t)size >> (8 * i));
	memcpy(raw + 9, path, plen);
	msb_agent_put(f, MSB_TAG_ENTRY, raw, 9 + plen, NULL);
	free(raw);
}

/* exec and run_code: the lie their first two words ask for. */
static void run_lie(int fd, uint16_t type, uint32_t id, const char *what, const char *arg)
{
	size_t n = arg ? strtoull(arg, NULL, 10) : 0;
	msb_buf f = { 0 };
	if (strcmp(what, "frame") == 0) {
		/* A header only: the claim is what is tested, the body never comes. */
		msb_agent_header h = { MSB_AGENT_MAGIC, MSB_AGENT_PROTOCOL_VERSION,
				       (uint16_t)(type | MSB_AGENT_REPLY), id, (uint32_t)n };
		unsigned char raw[MSB_AGENT_HEADER_SIZE];
		msb_agent_header_encode(&h, raw);
		ssize_t w = write(fd, raw, sizeof raw);
		(void)w;
		return;
	}
	msb_agent_put_u32(&f, MSB_TAG_EXIT_CODE, 0, NULL);
	msb_agent_put_u32(&f, MSB_TAG_SIGNAL, strcmp(what, "signal") == 0 ? (uint32_t)n : 0, NULL);
	msb_agent_put_u32(&f, MSB_TAG_FLAGS, strcmp(what, "reach") == 0 ? MSB_AGENT_F_TIMED_OUT : 0,
			  NULL);
	if (strcmp(what, "reach") == 0)
		msb_agent_put_u32(&f, MSB_TAG_KILL_REACH, (uint32_t)n, NULL);
	if (strcmp(what, "flood-out") == 0)
		put_bytes(&f, MSB_TAG_STDOUT, n);
	if (strcmp(what, "flood-err") == 0)
		put_bytes(&f, MSB_TAG_STDERR, n);
	reply(fd, type, id, &f);
	msb_buf_free(&f);
}

static void answer(int fd, const msb_agent_header *h, const msb_agent_request *req)
{
	msb_buf f = { 0 };
	switch (h->type) {
	case MSB_AGENT_HELLO:
		msb_agent_put_u32(&f, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, NULL);
		msb_agent_put_str(&f, MSB_TAG_AGENT_INFO, "msb-agent forged", NULL);
		reply(fd, h->type, h->id, &f);
		break;
	case MSB_AGENT_EXEC:
		run_lie(fd, h->type, h->id, req->argv[0], req->argc > 1 ? req->argv[1] : NULL);
		break;
	case MSB_AGENT_RUN_CODE: {
		char code[64] = { 0 };
		memcpy(code, req->data, req->data_len < 63 ? req->data_len : 63);
		char *sp = strchr(code, ' ');
		if (sp)
			*sp++ = '\0';
		run_lie(fd, h->type, h->id, code, sp);
		break;
	}
	case MSB_AGENT_READ_FILE:
		if (strncmp(req->path, "big-", 4) == 0)
			put_bytes(&f, MSB_TAG_DATA, strtoull(req->path + 4, NULL, 10));
		reply(fd, h->type, h->id, &f);
		break;
	case MSB_AGENT_LIST_DIR:
		if (strncmp(req->path, "many-", 5) == 0) {
			size_t n = strtoull(req->path + 5, NULL, 10);
			for (size_t i = 0; i < n; i++)
				put_entry(&f, "a", 1);
		} else if (strcmp(req->path, "long") == 0) {
			char *p = malloc(8001);
			memset(p, 'n', 8000);
			p[8000] = '\0';
			put_entry(&f, p, 1);
			free(p);
		} else if (strcmp(req->path, "negative") == 0) {
			put_entry(&f, "a", -5);
		}
		reply(fd, h->type, h->id, &f);
		break;
	case MSB_AGENT_SHUTDOWN:
		reply(fd, h->type, h->id, NULL);
		kill(0, SIGKILL);
		_exit(0);
	default:
		reply(fd, h->type, h->id, NULL);
	}
	msb_buf_free(&f);
}

static void serve(int rfd, int wfd)
{
	msb_buf payload = { 0 };
	for (;;) {
		msb_agent_header h;
		if (msb_agent_frame_read(rfd, 0, &h, &payload, NULL, NULL) != MSB_OK)
			break;
		msb_agent_request req;
		if (msb_agent_request_decode(h.type, payload.data, payload.len, &req, NULL) != MSB_OK)
			break;
		answer(wfd, &h, &req);
		msb_agent_request_free(&req);
	}
	msb_buf_free(&payload);
}

int main(int argc, char **argv)
{
	int lfd = -1, rfd = -1, wfd = -1, ready = -1;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN);
	setpgid(0, 0);
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--listen-fd") == 0) {
			lfd = atoi(argv[i + 1]);
		} else if (strcmp(argv[i], "--listen") == 0) {
			struct sockaddr_un a = { .sun_family = AF_UNIX };
			snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[i + 1]);
			unlink(a.sun_path);
			lfd = socket(AF_UNIX, SOCK_STREAM, 0);
			if (bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 16))
				return 1;
		} else if (strcmp(argv[i], "--fd") == 0) {
			rfd = wfd = atoi(argv[i + 1]);
			const char *comma = strchr(argv[i + 1], ',');
			if (comma)
				wfd = atoi(comma + 1);
		} else if (strcmp(argv[i], "--ready-fd") == 0) {
			ready = atoi(argv[i + 1]);
		}
	}
	if (ready >= 0) {
		ssize_t w = write(ready, "R", 1);
		(void)w;
		close(ready);
	}
	if (rfd >= 0) {
		serve(rfd, wfd);
		return 0;
	}
	if (lfd < 0)
		return 2;
	for (;;) {
		int c = accept(lfd, NULL, NULL);
		if (c < 0)
			continue;
		if (fork() == 0) {
			close(lfd);
			serve(c, c);
			_exit(0);
		}
		close(c);
	}
}
