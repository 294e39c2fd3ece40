/*
 * client.c — the host's side of the guest agent protocol: connections, HELLO, and one
 * round trip per request (client_run.c and client_files.c encode the requests and decode
 * their results).
 *
 * Over a unix socket every in-flight request owns a connection (idle ones are pooled), so
 * threads never queue behind one another's exec; over one stream (pipes, a serial port) a
 * mutex serialises them, and the wait for it counts against the caller's deadline — which
 * is why a deadline that passes before the request is sent is SandboxQueuedTimeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>
#include <msb/node.h>
#include <msb/unix_socket.h>

#include "client_internal.h"

#define POOL_MAX 8

struct msb_agent_client {
	char *socket_path; /* NULL: one stream */
	int rfd, wfd;
	int greeting;      /* a connection whose HELLO is sent, its answer not yet read; or -1 */
	uint32_t greeting_id;
	pthread_mutex_t lock;
	int idle[POOL_MAX];
	size_t n_idle;
	uint32_t next_id;
	double timeout;
};

typedef struct conn {
	int rfd, wfd;
} conn;

int64_t msb_agent_deadline_after(double seconds)
{
	/* A host's request may ask for any double; past the bound the conversion is undefined. */
	if (!(seconds < MSB_SECONDS_MAX))
		seconds = MSB_SECONDS_MAX;
	return msb_agent_now_ms() + (int64_t)(seconds * 1000.0);
}

double msb_agent_default_timeout(const msb_agent_client *c, double t)
{
	return t > 0 ? t : (c->timeout > 0 ? c->timeout : 30.0);
}

/* Read the reply's ERRC/MESSAGE; the agent's refusal becomes ours, with its code. */
msb_errc msb_agent_reply_status(const msb_buf *payload, uint16_t type, msb_error *err)
{
	msb_agent_reader r = { .data = payload->data, .len = payload->len };
	uint32_t code = MSB_OK;
	const unsigned char *msg = NULL;
	uint32_t msg_len = 0;
	bool have_code = false;
	for (;;) {
		msb_agent_field f;
		bool done;
		msb_errc rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc != MSB_OK)
			return rc;
		if (done)
			break;
		if (f.tag == MSB_TAG_ERRC) {
			rc = msb_agent_field_u32(&f, &code, err);
			if (rc != MSB_OK)
				return rc;
			have_code = true;
		} else if (f.tag == MSB_TAG_MESSAGE) {
			msg = f.value;
			msg_len = f.len;
		}
	}
	if (!have_code)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: the %s reply carries no status",
				     msb_agent_type_name(type));
	if (code == MSB_OK)
		return MSB_OK;
	msb_errc c = code < MSB_E__COUNT ? (msb_errc)code : MSB_E_BACKEND;
	/* The agent's sentence is untrusted too: a refusal it gave no words still gets some. */
	if (!msg || !msg_len || !*msg)
		return msb_error_set(err, c, "the agent refused %s (%s) without saying why",
				     msb_agent_type_name(type), msb_errc_name(c));
	/* A sentence, not a payload: what is past the bound is the agent's, and dropped. */
	if (msg_len > MSB_AGENT_MESSAGE_MAX)
		msg_len = MSB_AGENT_MESSAGE_MAX;
	return msb_error_set(err, c, "%.*s", (int)msg_len, (const char *)msg);
}

/* Send one request on `cn`; its id is what read_reply matches. */
static msb_errc send_request(msb_agent_client *c, const conn *cn, uint16_t type,
			     const msb_buf *payload, uint32_t *id, msb_error *err)
{
	*id = __atomic_add_fetch(&c->next_id, 1, __ATOMIC_RELAXED);
	return msb_agent_frame_write(cn->wfd, type, *id, payload, err);
}

/* Read the reply to request `id` of `type` on `cn`, and its status. */
static msb_errc read_reply(msb_agent_client *c, const conn *cn, uint16_t type, uint32_t id,
			   int64_t deadline, uint32_t max_reply, msb_buf *reply, msb_error *err)
{
	msb_errc rc;
	msb_agent_header h;
	/*
	 * On a shared stream, a reply to an earlier request that timed out on this side may
	 * still arrive: it is recognised by its id and skipped, so the stream stays in step —
	 * also when it is larger than this request's bound (its body was skipped unread).
	 */
	bool stale;
	do {
		memset(&h, 0, sizeof h);
		rc = msb_agent_frame_read_max(cn->rfd, deadline, max_reply, &h, reply, NULL, err);
		bool over = rc == MSB_E_PROTOCOL && h.magic == MSB_AGENT_MAGIC && h.length > max_reply;
		stale = (rc == MSB_OK || over) && !c->socket_path &&
			h.version == MSB_AGENT_PROTOCOL_VERSION && h.id != id &&
			(h.type & MSB_AGENT_REPLY) && (int32_t)(id - h.id) > 0;
		/* A connection of its own is dropped after a refusal; a shared stream cannot be. */
		if (over && !c->socket_path) {
			msb_error skip = MSB_ERROR_INIT;
			if (msb_agent_frame_skip(cn->rfd, deadline, h.length, &skip) != MSB_OK)
				stale = false;
			msb_error_clear(&skip);
		}
		if (stale && rc != MSB_OK)
			msb_error_clear(err);
	} while (stale);
	if (rc == MSB_E_TIMEOUT)
		return msb_error_set(err, MSB_E_TIMEOUT,
				     "agent protocol: the agent did not answer %s in time",
				     msb_agent_type_name(type));
	if (rc != MSB_OK)
		return rc;
	if (h.version != MSB_AGENT_PROTOCOL_VERSION) {
		msb_error theirs = MSB_ERROR_INIT;
		msb_agent_reply_status(reply, type, &theirs);
		msb_error_set(err, MSB_E_PROTOCOL,
			      "agent protocol: the agent speaks version %u, this client speaks "
			      "version %u%s%s", h.version, MSB_AGENT_PROTOCOL_VERSION,
			      theirs.message ? ": " : "", msb_error_message(&theirs));
		msb_error_clear(&theirs);
		return MSB_E_PROTOCOL;
	}
	if (h.type != (type | MSB_AGENT_REPLY) || h.id != id)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "agent protocol: %s #%u answered by type 0x%x #%u",
				     msb_agent_type_name(type), id, h.type, h.id);
	return msb_agent_reply_status(reply, type, err);
}

static msb_errc round_trip(msb_agent_client *c, const conn *cn, uint16_t type,
			   const msb_buf *payload, int64_t deadline, uint32_t max_reply,
			   msb_buf *reply, msb_error *err)
{
	uint32_t id;
	msb_errc rc = send_request(c, cn, type, payload, &id, err);
	return rc == MSB_OK ? read_reply(c, cn, type, id, deadline, max_reply, reply, err) : rc;
}

static msb_errc hello_send(msb_agent_client *c, const conn *cn, uint32_t *id, msb_error *err)
{
	msb_buf payload = { 0 };
	msb_errc rc = msb_agent_put_u32(&payload, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, err);
	if (rc == MSB_OK)
		rc = send_request(c, cn, MSB_AGENT_HELLO, &payload, id, err);
	msb_buf_free(&payload);
	return rc;
}

static msb_errc hello_read(msb_agent_client *c, const conn *cn, uint32_t id, int64_t deadline,
			   msb_error *err)
{
	msb_buf reply = { 0 };
	msb_errc rc = read_reply(c, cn, MSB_AGENT_HELLO, id, deadline, MSB_AGENT_REPLY_SLACK, &reply,
				 err);
	msb_buf_free(&reply);
	return rc;
}

static msb_errc hello(msb_agent_client *c, const conn *cn, int64_t deadline, msb_error *err)
{
	uint32_t id;
	msb_errc rc = hello_send(c, cn, &id, err);
	return rc == MSB_OK ? hello_read(c, cn, id, deadline, err) : rc;
}

static msb_errc connect_only(msb_agent_client *c, conn *cn, msb_error *err)
{
	int fd = msb_unix_connect(c->socket_path);
	if (fd < 0 && errno == ENAMETOOLONG)
		return msb_error_set(err, MSB_E_VALUE, "agent socket path too long: %s",
				     c->socket_path);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno,
					   "agent client: cannot connect to the agent at %s",
					   c->socket_path);
	cn->rfd = cn->wfd = fd;
	return MSB_OK;
}

static msb_errc connect_unix(msb_agent_client *c, int64_t deadline, conn *cn, msb_error *err)
{
	msb_errc rc = connect_only(c, cn, err);
	if (rc == MSB_OK && (rc = hello(c, cn, deadline, err)) != MSB_OK)
		close(cn->rfd);
	return rc;
}

/* Take a connection; `queued` is set when the deadline passed while waiting for one. */
static msb_errc conn_get(msb_agent_client *c, int64_t deadline, conn *cn, bool *queued,
			 msb_error *err)
{
	*queued = false;
	if (!c->socket_path) {
		for (;;) {
			if (pthread_mutex_trylock(&c->lock) == 0)
				break;
			if (deadline > 0 && msb_agent_now_ms() >= deadline) {
				*queued = true;
				return msb_error_set(err, MSB_E_TIMEOUT,
						     "agent client: the deadline passed while waiting "
						     "for the agent's stream");
			}
			struct timespec ts = { 0, 200000L };
			nanosleep(&ts, NULL);
		}
		cn->rfd = c->rfd;
		cn->wfd = c->wfd;
		return MSB_OK;
	}
	pthread_mutex_lock(&c->lock);
	bool pooled = c->n_idle > 0;
	if (pooled)
		cn->rfd = cn->wfd = c->idle[--c->n_idle];
	pthread_mutex_unlock(&c->lock);
	if (pooled)
		return MSB_OK;
	msb_errc rc = connect_unix(c, deadline, cn, err);
	if (rc == MSB_E_TIMEOUT)
		*queued = true;
	return rc;
}

/* Give a connection back; a broken one (`ok` false) is closed, never pooled. */
static void conn_put(msb_agent_client *c, const conn *cn, bool ok)
{
	if (!c->socket_path) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (ok && c->n_idle < POOL_MAX) {
		c->idle[c->n_idle++] = cn->rfd;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	pthread_mutex_unlock(&c->lock);
	close(cn->rfd);
}

msb_errc msb_agent_conn_take(msb_agent_client *c, uint16_t type, int64_t queue_deadline,
			     msb_errc queued_code, int *rfd, int *wfd, msb_error *err)
{
	conn cn = { -1, -1 };
	bool queued;
	msb_errc rc = conn_get(c, queue_deadline, &cn, &queued, err);
	if (rc != MSB_OK) {
		if (queued)
			msb_error_set(err, queued_code,
				      "%s was not started: its deadline passed while it waited for "
				      "the sandbox's agent", msb_agent_type_name(type));
		return queued ? queued_code : rc;
	}
	*rfd = cn.rfd;
	*wfd = cn.wfd;
	return MSB_OK;
}

void msb_agent_conn_give(msb_agent_client *c, int rfd, int wfd, bool in_step)
{
	conn cn = { rfd, wfd };
	conn_put(c, &cn, in_step);
}

uint32_t msb_agent_next_id(msb_agent_client *c)
{
	return __atomic_add_fetch(&c->next_id, 1, __ATOMIC_RELAXED);
}

bool msb_agent_client_shared(const msb_agent_client *c)
{
	return !c->socket_path;
}

msb_errc msb_agent_call(msb_agent_client *c, uint16_t type, const msb_buf *payload,
			int64_t queue_deadline, int64_t deadline, msb_errc queued_code,
			uint32_t max_reply, msb_buf *reply, msb_error *err)
{
	conn cn = { -1, -1 };
	msb_errc rc = msb_agent_conn_take(c, type, queue_deadline, queued_code, &cn.rfd, &cn.wfd, err);
	if (rc != MSB_OK)
		return rc;
	rc = round_trip(c, &cn, type, payload, deadline, max_reply, reply, err);
	/*
	 * A refusal by the agent leaves a connection in step; a transport failure does not, and
	 * such a connection is closed rather than pooled (a shared stream cannot be replaced:
	 * stale replies on it are skipped by id instead, see round_trip).
	 */
	bool in_step = rc == MSB_OK || (rc != MSB_E_PROTOCOL && rc != MSB_E_TIMEOUT &&
					reply->len > 0);
	conn_put(c, &cn, in_step);
	return rc;
}

static msb_errc client_new(msb_agent_client **out, double timeout, msb_error *err)
{
	msb_agent_client *c = calloc(1, sizeof *c);
	if (!c)
		return msb_error_set(err, MSB_E_NOMEM, "agent client: out of memory");
	pthread_mutex_init(&c->lock, NULL);
	c->rfd = c->wfd = c->greeting = -1;
	c->timeout = timeout;
	*out = c;
	return MSB_OK;
}

msb_errc msb_agent_client_greet_start(const char *socket_path, double timeout,
				      msb_agent_client **out, msb_error *err)
{
	msb_agent_client *c = NULL;
	msb_errc rc = client_new(&c, timeout, err);
	if (rc != MSB_OK)
		return rc;
	conn cn = { -1, -1 };
	if (!(c->socket_path = strdup(socket_path)))
		rc = msb_error_set(err, MSB_E_NOMEM, "agent client: out of memory");
	if (rc == MSB_OK)
		rc = connect_only(c, &cn, err);
	if (rc == MSB_OK) {
		c->greeting = cn.rfd;
		rc = hello_send(c, &cn, &c->greeting_id, err);
	}
	if (rc != MSB_OK) {
		msb_agent_client_close(c);
		return rc;
	}
	*out = c;
	return MSB_OK;
}

int msb_agent_client_greeting_fd(const msb_agent_client *c)
{
	return c->greeting;
}

msb_errc msb_agent_client_greet_finish(msb_agent_client *c, double timeout, msb_error *err)
{
	if (c->greeting < 0)
		return msb_error_set(err, MSB_E_VALUE, "agent client: no greeting is under way");
	conn cn = { c->greeting, c->greeting };
	c->greeting = -1;
	msb_errc rc = hello_read(c, &cn, c->greeting_id,
				 msb_agent_deadline_after(msb_agent_default_timeout(c, timeout)), err);
	conn_put(c, &cn, rc == MSB_OK);
	return rc;
}

msb_errc msb_agent_client_open_unix(const char *socket_path, double timeout,
				    msb_agent_client **out, msb_error *err)
{
	msb_agent_client *c = NULL;
	msb_errc rc = msb_agent_client_greet_start(socket_path, timeout, &c, err);
	if (rc == MSB_OK && (rc = msb_agent_client_greet_finish(c, timeout, err)) != MSB_OK)
		msb_agent_client_close(c);
	if (rc == MSB_OK)
		*out = c;
	return rc;
}

msb_errc msb_agent_client_open_fds(int rfd, int wfd, double timeout, msb_agent_client **out,
				   msb_error *err)
{
	msb_agent_client *c = NULL;
	msb_errc rc = client_new(&c, timeout, err);
	if (rc != MSB_OK) {
		close(rfd);
		if (wfd != rfd)
			close(wfd);
		return rc;
	}
	c->rfd = rfd;
	c->wfd = wfd;
	conn cn = { rfd, wfd };
	rc = hello(c, &cn, msb_agent_deadline_after(msb_agent_default_timeout(c, timeout)), err);
	if (rc != MSB_OK) {
		msb_agent_client_close(c);
		return rc;
	}
	*out = c;
	return MSB_OK;
}

void msb_agent_client_close(msb_agent_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_idle; i++)
		close(c->idle[i]);
	if (c->greeting >= 0)
		close(c->greeting);
	if (c->rfd >= 0)
		close(c->rfd);
	if (c->wfd >= 0 && c->wfd != c->rfd)
		close(c->wfd);
	pthread_mutex_destroy(&c->lock);
	free(c->socket_path);
	free(c);
}

/* A request with no result fields. */
msb_errc msb_agent_simple(msb_agent_client *c, uint16_t type, msb_buf *payload, double timeout,
		       msb_error *err)
{
	int64_t deadline = msb_agent_deadline_after(msb_agent_default_timeout(c, timeout));
	msb_buf reply = { 0 };
	msb_errc rc = msb_agent_call(c, type, payload, deadline, deadline, MSB_E_TIMEOUT,
				     MSB_AGENT_REPLY_SLACK, &reply, err);
	msb_buf_free(&reply);
	msb_buf_free(payload);
	return rc;
}

msb_errc msb_agent_ping(msb_agent_client *c, double timeout, msb_error *err)
{
	msb_buf payload = { 0 };
	return msb_agent_simple(c, MSB_AGENT_PING, &payload, timeout, err);
}

msb_errc msb_agent_shutdown(msb_agent_client *c, double timeout, msb_error *err)
{
	msb_buf payload = { 0 };
	return msb_agent_simple(c, MSB_AGENT_SHUTDOWN, &payload, timeout, err);
}
