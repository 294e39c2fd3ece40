/*
 * plugins/qemu/qemu_qmp.c — the few QMP exchanges a template needs (qemu_template.c): a
 * blocking client on a VM's monitor socket, one command at a time, events skipped.
 *
 * QMP sends one JSON object per line; a reply is the first line holding "return" or
 * "error". Every read is bounded (a line at most QMP_LINE_MAX, every wait by the caller's
 * deadline): a wedged or hostile QEMU costs a timeout, never a hang.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include <msb/agent.h>
#include <msb/unix_socket.h>

#include "qemu_qmp.h"

#define QMP_LINE_MAX (64 * 1024)

struct qemu_qmp {
	int fd;
	char buf[QMP_LINE_MAX];
	size_t len;
};

/* The next line (without its newline) into a heap string, by `deadline_ms`. */
static msb_errc read_line(qemu_qmp *q, int64_t deadline_ms, char **line, msb_error *err)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		if (nl) {
			size_t n = (size_t)(nl - q->buf);
			*line = strndup(q->buf, n);
			memmove(q->buf, nl + 1, q->len - n - 1);
			q->len -= n + 1;
			return *line ? MSB_OK : msb_error_set(err, MSB_E_NOMEM, "out of memory");
		}
		if (q->len == sizeof q->buf)
			return msb_error_set(err, MSB_E_PROTOCOL, "backend qemu: QMP line longer than "
					     "%d bytes refused", QMP_LINE_MAX);
		int64_t left = deadline_ms - msb_agent_now_ms();
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		int r = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return msb_error_set(err, MSB_E_TIMEOUT, "backend qemu: QMP did not answer in "
					     "time");
		ssize_t got = read(q->fd, q->buf + q->len, sizeof q->buf - q->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return msb_error_set(err, MSB_E_BACKEND, "backend qemu: QMP closed");
		q->len += (size_t)got;
	}
}

msb_errc qemu_qmp_open(const char *path, double timeout, qemu_qmp **out, msb_error *err)
{
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000);
	qemu_qmp *q = calloc(1, sizeof *q);
	if (!q)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	q->fd = -1;
	/* QEMU made the socket before it daemonized; connect is immediate then. */
	while ((q->fd = msb_unix_connect(path)) < 0 && msb_agent_now_ms() < deadline)
		usleep(5000);
	if (q->fd < 0) {
		free(q);
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: cannot "
					   "connect to the VM's monitor %s", path);
	}
	char *greeting = NULL;
	msb_errc rc = read_line(q, deadline, &greeting, err);
	free(greeting);
	json_t *ret = NULL;
	if (rc == MSB_OK)
		rc = qemu_qmp_call(q, "{\"execute\":\"qmp_capabilities\"}", timeout, &ret, err);
	json_decref(ret);
	if (rc != MSB_OK) {
		qemu_qmp_close(q);
		return rc;
	}
	*out = q;
	return MSB_OK;
}

msb_errc qemu_qmp_call(qemu_qmp *q, const char *command, double timeout, json_t **ret,
		       msb_error *err)
{
	*ret = NULL;
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000);
	size_t n = strlen(command);
	for (size_t at = 0; at < n;) {
		ssize_t w = write(q->fd, command + at, n - at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: QMP write");
		at += (size_t)w;
	}
	for (;;) {
		char *line = NULL;
		msb_errc rc = read_line(q, deadline, &line, err);
		if (rc != MSB_OK)
			return rc;
		json_t *msg = json_loads(line, 0, NULL);
		free(line);
		if (!json_is_object(msg)) {
			json_decref(msg);
			return msb_error_set(err, MSB_E_PROTOCOL, "backend qemu: QMP sent what is not "
					     "a JSON object");
		}
		json_t *r = json_object_get(msg, "return");
		json_t *e = json_object_get(msg, "error");
		if (r) {
			*ret = json_incref(r);
			json_decref(msg);
			return MSB_OK;
		}
		if (e) {
			const char *desc = json_string_value(json_object_get(e, "desc"));
			rc = msb_error_set(err, MSB_E_BACKEND, "backend qemu: QMP refused %.80s: %s",
					   command, desc ? desc : "(no reason)");
			json_decref(msg);
			return rc;
		}
		json_decref(msg); /* an event */
	}
}

msb_errc qemu_qmp_pass_fd(qemu_qmp *q, const char *name, int fd, double timeout, msb_error *err)
{
	char cmd[160];
	int n = snprintf(cmd, sizeof cmd, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":"
			 "\"%s\"}}", name);
	/* The fd rides on the command's bytes (SCM_RIGHTS): QEMU takes it with the command. */
	struct iovec iov = { .iov_base = cmd, .iov_len = (size_t)n };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	ssize_t w;
	while ((w = sendmsg(q->fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (w != n)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: QMP getfd");
	json_t *ret = NULL;
	/* The command is sent: wait for its reply alone. */
	msb_errc rc = qemu_qmp_call(q, "", timeout, &ret, err);
	json_decref(ret);
	return rc;
}

msb_errc qemu_qmp_status_until(qemu_qmp *q, const char *query, const char *const *done,
			       const char *const *failed, double timeout, char *status,
			       size_t size, msb_error *err)
{
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "{\"execute\":\"%s\"}", query);
	for (;;) {
		json_t *ret = NULL;
		double left = (double)(deadline - msb_agent_now_ms()) / 1000.0;
		msb_errc rc = qemu_qmp_call(q, cmd, left > 0.1 ? left : 0.1, &ret, err);
		if (rc != MSB_OK)
			return rc;
		const char *s = json_string_value(json_object_get(ret, "status"));
		snprintf(status, size, "%s", s ? s : "");
		json_decref(ret);
		for (const char *const *d = done; *d; d++)
			if (!strcmp(status, *d))
				return MSB_OK;
		for (const char *const *f = failed; *f; f++)
			if (!strcmp(status, *f))
				return msb_error_set(err, MSB_E_BACKEND, "backend qemu: %s says %s",
						     query, status);
		if (msb_agent_now_ms() >= deadline)
			return msb_error_set(err, MSB_E_TIMEOUT, "backend qemu: %s still says '%s' "
					     "after %.0f s", query, status, timeout);
		usleep(2000);
	}
}

void qemu_qmp_close(qemu_qmp *q)
{
	if (!q)
		return;
	if (q->fd >= 0)
		close(q->fd);
	free(q);
}
