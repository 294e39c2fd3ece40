/*
 * client.c — the host's side of the guest agent protocol: connections, HELLO, one call per
 * request, and the decoding of each reply into the contract's result types.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <msb/agent.h>

#define POOL_MAX 8
/* How long past an exec's own deadline the agent gets to kill the tree and answer. */
#define EXEC_GRACE_MS 10000

struct msb_agent_client {
	char *socket_path; /* NULL: one stream */
	int rfd, wfd;
	pthread_mutex_t lock;
	int idle[POOL_MAX];
	size_t n_idle;
	uint32_t next_id;
	double timeout;
};

typedef struct conn {
	int rfd, wfd;
} conn;

static int64_t deadline_after(double seconds)
{
	return msb_agent_now_ms() + (int64_t)(seconds * 1000.0);
}

static double default_timeout(const msb_agent_client *c, double t)
{
	return t > 0 ? t : (c->timeout > 0 ? c->timeout : 30.0);
}

/* Read the reply's ERRC/MESSAGE; the agent's refusal becomes ours, with its code. */
static msb_errc reply_status(const msb_buf *payload, uint16_t type, msb_error *err)
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
	return msb_error_set(err, c, "%.*s", (int)msg_len, msg ? (const char *)msg : "");
}

/* Send one request and read its reply on `cn`. */
static msb_errc round_trip(msb_agent_client *c, const conn *cn, uint16_t type,
			   const msb_buf *payload, int64_t deadline, msb_buf *reply,
			   msb_error *err)
{
	uint32_t id = __atomic_add_fetch(&c->next_id, 1, __ATOMIC_RELAXED);
	msb_errc rc = msb_agent_frame_write(cn->wfd, type, id, payload, err);
	if (rc != MSB_OK)
		return rc;
	msb_agent_header h;
	/*
	 * On a shared stream, a reply to an earlier request that timed out on this side may
	 * still arrive: it is recognised by its id and skipped, so the stream stays in step.
	 */
	do
		rc = msb_agent_frame_read(cn->rfd, deadline, &h, reply, NULL, err);
	while (rc == MSB_OK && !c->socket_path && h.version == MSB_AGENT_PROTOCOL_VERSION &&
	       h.id != id && (h.type & MSB_AGENT_REPLY) && (int32_t)(id - h.id) > 0);
	if (rc == MSB_E_TIMEOUT)
		return msb_error_set(err, MSB_E_TIMEOUT,
				     "agent protocol: the agent did not answer %s in time",
				     msb_agent_type_name(type));
	if (rc != MSB_OK)
		return rc;
	if (h.version != MSB_AGENT_PROTOCOL_VERSION) {
		msb_error theirs = MSB_ERROR_INIT;
		reply_status(reply, type, &theirs);
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
	return reply_status(reply, type, err);
}

static msb_errc hello(msb_agent_client *c, const conn *cn, int64_t deadline, msb_error *err)
{
	msb_buf payload = { 0 }, reply = { 0 };
	msb_errc rc = msb_agent_put_u32(&payload, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, err);
	if (rc == MSB_OK)
		rc = round_trip(c, cn, MSB_AGENT_HELLO, &payload, deadline, &reply, err);
	msb_buf_free(&payload);
	msb_buf_free(&reply);
	return rc;
}

static msb_errc connect_unix(msb_agent_client *c, int64_t deadline, conn *cn, msb_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(c->socket_path) >= sizeof sa.sun_path)
		return msb_error_set(err, MSB_E_VALUE, "agent socket path too long: %s",
				     c->socket_path);
	strcpy(sa.sun_path, c->socket_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno, "agent client: socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close(fd);
		return msb_error_set_errno(err, MSB_E_BACKEND, e,
					   "agent client: cannot connect to the agent at %s",
					   c->socket_path);
	}
	cn->rfd = cn->wfd = fd;
	msb_errc rc = hello(c, cn, deadline, err);
	if (rc != MSB_OK)
		close(fd);
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

/*
 * One request. `queue_deadline` bounds getting a connection; `deadline` the reply. On a
 * queue timeout, `queued_code` is the code reported (SandboxQueuedTimeout for exec).
 */
static msb_errc call(msb_agent_client *c, uint16_t type, const msb_buf *payload,
		     int64_t queue_deadline, int64_t deadline, msb_errc queued_code,
		     msb_buf *reply, msb_error *err)
{
	conn cn;
	bool queued;
	msb_errc rc = conn_get(c, queue_deadline, &cn, &queued, err);
	if (rc != MSB_OK) {
		if (queued)
			msb_error_set(err, queued_code,
				      "%s was not started: its deadline passed while it waited for "
				      "the sandbox's agent", msb_agent_type_name(type));
		return queued ? queued_code : rc;
	}
	rc = round_trip(c, &cn, type, payload, deadline, reply, err);
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
	c->rfd = c->wfd = -1;
	c->timeout = timeout;
	*out = c;
	return MSB_OK;
}

msb_errc msb_agent_client_open_unix(const char *socket_path, double timeout,
				    msb_agent_client **out, msb_error *err)
{
	msb_agent_client *c = NULL;
	msb_errc rc = client_new(&c, timeout, err);
	if (rc != MSB_OK)
		return rc;
	c->socket_path = strdup(socket_path);
	if (!c->socket_path) {
		msb_agent_client_close(c);
		return msb_error_set(err, MSB_E_NOMEM, "agent client: out of memory");
	}
	conn cn;
	rc = connect_unix(c, deadline_after(default_timeout(c, timeout)), &cn, err);
	if (rc != MSB_OK) {
		msb_agent_client_close(c);
		return rc;
	}
	conn_put(c, &cn, true);
	*out = c;
	return MSB_OK;
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
	rc = hello(c, &cn, deadline_after(default_timeout(c, timeout)), err);
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
	if (c->rfd >= 0)
		close(c->rfd);
	if (c->wfd >= 0 && c->wfd != c->rfd)
		close(c->wfd);
	pthread_mutex_destroy(&c->lock);
	free(c->socket_path);
	free(c);
}

/* A request with no result fields. */
static msb_errc simple(msb_agent_client *c, uint16_t type, msb_buf *payload, double timeout,
		       msb_error *err)
{
	int64_t deadline = deadline_after(default_timeout(c, timeout));
	msb_buf reply = { 0 };
	msb_errc rc = call(c, type, payload, deadline, deadline, MSB_E_TIMEOUT, &reply, err);
	msb_buf_free(&reply);
	msb_buf_free(payload);
	return rc;
}

msb_errc msb_agent_ping(msb_agent_client *c, double timeout, msb_error *err)
{
	msb_buf payload = { 0 };
	return simple(c, MSB_AGENT_PING, &payload, timeout, err);
}

msb_errc msb_agent_shutdown(msb_agent_client *c, double timeout, msb_error *err)
{
	msb_buf payload = { 0 };
	return simple(c, MSB_AGENT_SHUTDOWN, &payload, timeout, err);
}

static msb_errc parse_exec_reply(const msb_buf *reply, msb_exec_result *res, msb_error *err)
{
	msb_agent_reader r = { .data = reply->data, .len = reply->len };
	uint32_t v;
	for (;;) {
		msb_agent_field f;
		bool done;
		msb_errc rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc != MSB_OK || done)
			return rc;
		switch (f.tag) {
		case MSB_TAG_EXIT_CODE:
			rc = msb_agent_field_u32(&f, &v, err);
			res->exit_code = (int)(int32_t)v;
			break;
		case MSB_TAG_SIGNAL:
			rc = msb_agent_field_u32(&f, &v, err);
			res->term_signal = (int)v;
			break;
		case MSB_TAG_FLAGS:
			rc = msb_agent_field_u32(&f, &v, err);
			res->timed_out = v & MSB_AGENT_F_TIMED_OUT;
			res->out_truncated = v & MSB_AGENT_F_OUT_TRUNCATED;
			res->err_truncated = v & MSB_AGENT_F_ERR_TRUNCATED;
			break;
		case MSB_TAG_STDOUT:
			rc = msb_buf_append(&res->out, f.value, f.len, err);
			break;
		case MSB_TAG_STDERR:
			rc = msb_buf_append(&res->err, f.value, f.len, err);
			break;
		default:
			break;
		}
		if (rc != MSB_OK)
			return rc;
	}
}

/* Deadlines of a program run: queue bounded by the timeout, reply by timeout + grace. */
static void run_deadlines(double timeout, int64_t *queue, int64_t *reply, uint64_t *timeout_ms)
{
	if (timeout <= 0) {
		*queue = *reply = 0;
		*timeout_ms = 0;
		return;
	}
	*queue = deadline_after(timeout);
	*reply = *queue + EXEC_GRACE_MS;
	*timeout_ms = (uint64_t)(timeout * 1000.0);
	if (*timeout_ms == 0)
		*timeout_ms = 1;
}

static msb_errc run(msb_agent_client *c, uint16_t type, msb_buf *payload, double timeout,
		    int64_t queue, int64_t reply_deadline, msb_exec_result *res, msb_error *err)
{
	memset(res, 0, sizeof *res);
	/* What is left of the deadline when the request goes out is what the agent enforces. */
	if (timeout > 0) {
		int64_t left = queue - msb_agent_now_ms();
		if (left <= 0) {
			msb_buf_free(payload);
			return msb_error_set(err, MSB_E_QUEUED_TIMEOUT,
					     "%s was not started: its %.3f s deadline passed before "
					     "it reached the sandbox", msb_agent_type_name(type), timeout);
		}
		msb_errc rc = msb_agent_put_u64(payload, MSB_TAG_TIMEOUT_MS, (uint64_t)left, err);
		if (rc != MSB_OK) {
			msb_buf_free(payload);
			return rc;
		}
	}
	msb_buf reply = { 0 };
	msb_errc rc = call(c, type, payload, queue, reply_deadline, MSB_E_QUEUED_TIMEOUT, &reply, err);
	if (rc == MSB_OK)
		rc = parse_exec_reply(&reply, res, err);
	if (rc != MSB_OK)
		msb_exec_result_free(res);
	msb_buf_free(&reply);
	msb_buf_free(payload);
	return rc;
}

msb_errc msb_agent_exec(msb_agent_client *c, const msb_exec_request *req,
			const char *const *env, msb_exec_result *res, msb_error *err)
{
	int64_t queue, reply;
	uint64_t timeout_ms;
	run_deadlines(req->timeout, &queue, &reply, &timeout_ms);
	if (!req->argv || !req->argv[0])
		return msb_error_set(err, MSB_E_VALUE, "exec refused: an empty argv");
	msb_buf p = { 0 };
	msb_errc rc = MSB_OK;
	for (const char *const *a = req->argv; rc == MSB_OK && *a; a++)
		rc = msb_agent_put_str(&p, MSB_TAG_ARG, *a, err);
	for (const char *const *e = env; rc == MSB_OK && e && *e; e++)
		rc = msb_agent_put_str(&p, MSB_TAG_ENV, *e, err);
	if (rc == MSB_OK && req->working_directory)
		rc = msb_agent_put_str(&p, MSB_TAG_CWD, req->working_directory, err);
	if (rc == MSB_OK && req->max_output)
		rc = msb_agent_put_u64(&p, MSB_TAG_MAX_OUTPUT, req->max_output, err);
	if (rc == MSB_OK && req->stdin_data)
		rc = msb_agent_put(&p, MSB_TAG_STDIN, req->stdin_data, req->stdin_len, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return run(c, MSB_AGENT_EXEC, &p, req->timeout, queue, reply, res, err);
}

msb_errc msb_agent_run_code(msb_agent_client *c, const char *code, double timeout,
			    size_t max_output, msb_exec_result *res, msb_error *err)
{
	int64_t queue, reply;
	uint64_t timeout_ms;
	run_deadlines(timeout, &queue, &reply, &timeout_ms);
	msb_buf p = { 0 };
	msb_errc rc = msb_agent_put_str(&p, MSB_TAG_CODE, code, err);
	if (rc == MSB_OK && max_output)
		rc = msb_agent_put_u64(&p, MSB_TAG_MAX_OUTPUT, max_output, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return run(c, MSB_AGENT_RUN_CODE, &p, timeout, queue, reply, res, err);
}

/* PATH and WORKDIR, which every file operation carries. */
static msb_errc put_path(msb_buf *p, const char *path, const char *wd, msb_error *err)
{
	if (!path || !wd)
		return msb_error_set(err, MSB_E_VALUE,
				     "file operation refused: a path and a working directory are required");
	msb_errc rc = msb_agent_put_str(p, MSB_TAG_PATH, path, err);
	return rc == MSB_OK ? msb_agent_put_str(p, MSB_TAG_WORKDIR, wd, err) : rc;
}

msb_errc msb_agent_write_file(msb_agent_client *c, const char *path, const void *data,
			      size_t len, const char *wd, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = msb_agent_put(&p, MSB_TAG_DATA, data, len, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return simple(c, MSB_AGENT_WRITE_FILE, &p, 0, err);
}

static msb_errc parse_entry(const msb_agent_field *f, msb_entry_list *list, msb_error *err)
{
	if (f->len < 9 || f->value[0] >= MSB_ENTRY__COUNT || memchr(f->value + 9, '\0', f->len - 9))
		return msb_error_set(err, MSB_E_PROTOCOL, "agent protocol: a malformed entry");
	uint64_t size = 0;
	for (int i = 7; i >= 0; i--)
		size = size << 8 | f->value[1 + i];
	char *path = strndup((const char *)f->value + 9, f->len - 9);
	if (!path)
		return msb_error_set(err, MSB_E_NOMEM, "agent client: out of memory");
	msb_errc rc = msb_entry_list_add(list, path, (msb_entry_kind)f->value[0], (int64_t)size, err);
	free(path);
	return rc;
}

/* A request whose reply holds ENTRY fields (and FOUND / DATA). */
static msb_errc entries_call(msb_agent_client *c, uint16_t type, msb_buf *p, double timeout,
			     msb_entry_list *list, bool *found, msb_buf *data, msb_error *err)
{
	int64_t deadline = deadline_after(default_timeout(c, timeout));
	msb_buf reply = { 0 };
	msb_errc rc = call(c, type, p, deadline, deadline, MSB_E_TIMEOUT, &reply, err);
	msb_buf_free(p);
	msb_agent_reader r = { .data = reply.data, .len = reply.len };
	while (rc == MSB_OK) {
		msb_agent_field f;
		bool done;
		uint32_t v;
		rc = msb_agent_reader_next(&r, &f, &done, err);
		if (rc != MSB_OK || done)
			break;
		if (f.tag == MSB_TAG_ENTRY && list)
			rc = parse_entry(&f, list, err);
		else if (f.tag == MSB_TAG_FOUND && found && (rc = msb_agent_field_u32(&f, &v, err)) == MSB_OK)
			*found = v != 0;
		else if (f.tag == MSB_TAG_DATA && data)
			rc = msb_buf_append(data, f.value, f.len, err);
	}
	msb_buf_free(&reply);
	return rc;
}

msb_errc msb_agent_stat_file(msb_agent_client *c, const char *path, const char *wd,
			     msb_entry *entry, bool *found, msb_error *err)
{
	msb_buf p = { 0 };
	msb_entry_list list = { 0 };
	*found = false;
	memset(entry, 0, sizeof *entry);
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = entries_call(c, MSB_AGENT_STAT_FILE, &p, 0, &list, found, NULL, err);
	else
		msb_buf_free(&p);
	if (rc == MSB_OK && *found && list.len != 1)
		rc = msb_error_set(err, MSB_E_PROTOCOL, "agent protocol: stat_file found '%s' but "
				   "described %zu entries", path, list.len);
	if (rc == MSB_OK && *found) {
		*entry = list.items[0];
		list.len = 0;
	}
	msb_entry_list_free(&list);
	if (rc != MSB_OK)
		*found = false;
	return rc;
}

msb_errc msb_agent_read_file(msb_agent_client *c, const char *path, const char *wd,
			     uint64_t max_bytes, msb_buf *out, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&p, MSB_TAG_MAX_BYTES, max_bytes, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return entries_call(c, MSB_AGENT_READ_FILE, &p, 0, NULL, NULL, out, err);
}

msb_errc msb_agent_list_dir(msb_agent_client *c, const char *path, const char *wd,
			    msb_entry_list *out, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return entries_call(c, MSB_AGENT_LIST_DIR, &p, 0, out, NULL, NULL, err);
}

msb_errc msb_agent_remove(msb_agent_client *c, const char *path, const char *wd, bool recursive,
			  msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, path, wd, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(&p, MSB_TAG_RECURSIVE, recursive, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return simple(c, MSB_AGENT_REMOVE, &p, 0, err);
}

msb_errc msb_agent_reclaim(msb_agent_client *c, const char *directory, const char *wd,
			   double timeout, msb_error *err)
{
	msb_buf p = { 0 };
	msb_errc rc = put_path(&p, directory, wd, err);
	if (rc != MSB_OK) {
		msb_buf_free(&p);
		return rc;
	}
	return simple(c, MSB_AGENT_RECLAIM, &p, timeout, err);
}
