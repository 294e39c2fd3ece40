/*
 * background_read.c — BG_READ, BG_SIGNAL and BG_LIST inside the guest: answered from a
 * background command's directory (agent_internal.h), by whichever connection asks.
 *
 * Everything read here was written by a process of the sandbox, which its commands can
 * reach: it is checked as input (a state of the wrong size or magic is no command; a pid
 * below 2 is never signalled, since kill(-1) would reach every process the agent may), and
 * the host bounds the answer again on its side.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"

/* How often a waiting read looks at the state again. */
#define BG_POLL_MS 10
/* The longest a read waits, whatever it asked. */
#define BG_WAIT_MAX_MS (10u * 60u * 1000u)
/* A read's default bound per stream. */
#define BG_READ_DEFAULT ((uint64_t)1 << 20)

msb_errc agent_bg_load(const char *id, agent_bg_state *st, msb_error *err)
{
	ssize_t n = -1;
	int fd = agent_bg_open(id, "state", O_RDONLY);
	if (fd >= 0) {
		n = read(fd, st, sizeof *st);
		close(fd);
	}
	if (n != (ssize_t)sizeof *st || st->magic != AGENT_BG_MAGIC || st->ring == 0 ||
	    st->ring > MSB_AGENT_MAX_OUTPUT)
		return msb_error_set(err, MSB_E_NOT_FOUND,
				     "msb-agent: no background command '%s' in this sandbox", id);
	for (int i = 0; i < 2; i++)
		if (st->reserved[i] < st->written[i])
			st->reserved[i] = st->written[i];
	return MSB_OK;
}

msb_errc agent_bg_put_status(msb_buf *reply, const char *id, const agent_bg_state *st,
			     msb_error *err)
{
	msb_buf sub = { 0 };
	char command[MSB_BG_COMMAND_MAX] = "";
	ssize_t clen = 0;
	int fd = agent_bg_open(id, "command", O_RDONLY);
	if (fd >= 0) {
		clen = read(fd, command, sizeof command);
		close(fd);
	}
	msb_errc rc = msb_agent_put_str(&sub, MSB_TAG_BG_ID, id, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&sub, MSB_TAG_PID, (uint64_t)st->pid, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u32(&sub, MSB_TAG_RUNNING, st->running != 0, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&sub, MSB_TAG_RING, st->ring, err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&sub, MSB_TAG_WRITTEN_OUT, st->written[0], err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&sub, MSB_TAG_WRITTEN_ERR, st->written[1], err);
	if (rc == MSB_OK)
		rc = msb_agent_put_u64(&sub, MSB_TAG_STARTED_MS, st->started_ms, err);
	if (rc == MSB_OK)
		rc = msb_agent_put(&sub, MSB_TAG_COMMAND, command, clen > 0 ? (size_t)clen : 0, err);
	if (rc == MSB_OK && !st->running)
		rc = agent_put_status(&sub, st->status, st->timed_out ? MSB_AGENT_F_TIMED_OUT : 0, err);
	if (rc == MSB_OK)
		rc = msb_agent_put(reply, MSB_TAG_BG_STATUS, sub.data, sub.len, err);
	msb_buf_free(&sub);
	return rc;
}

/* Whether a waiting read has what it waits for. */
static bool satisfied(const msb_agent_request *req, const agent_bg_state *st)
{
	if (!st->running)
		return true;
	return !req->until_exit && (st->written[0] > req->offset_out || st->written[1] > req->offset_err);
}

/* Where stream `i` can be read from, given the offset asked: not below what a write reaches. */
static uint64_t held_from(const agent_bg_state *st, int i, uint64_t asked)
{
	uint64_t lo = st->reserved[i] > st->ring ? st->reserved[i] - st->ring : 0;
	return asked > lo ? asked : lo;
}

/* pread [from, to) of a ring into `out`, wrapping at its end. */
static bool ring_get(int fd, uint64_t ring, uint64_t from, uint64_t to, msb_buf *out)
{
	out->len = 0;
	if (to <= from)
		return true;
	size_t n = (size_t)(to - from);
	unsigned char *buf = malloc(n);
	if (!buf)
		return false;
	size_t got = 0;
	while (got < n) {
		uint64_t pos = (from + got) % ring;
		size_t want = n - got < ring - pos ? n - got : (size_t)(ring - pos);
		ssize_t k = pread(fd, buf + got, want, (off_t)pos);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	bool ok = got == n && msb_buf_append(out, buf, n, NULL) == MSB_OK;
	free(buf);
	return ok;
}

msb_errc agent_bg_read(const msb_agent_request *req, msb_buf *reply, msb_error *err)
{
	agent_bg_state st;
	msb_errc rc = agent_bg_load(req->bg_id, &st, err);
	uint64_t wait = req->wait_ms < BG_WAIT_MAX_MS ? req->wait_ms : BG_WAIT_MAX_MS;
	int64_t until = msb_agent_now_ms() + (int64_t)wait;
	while (rc == MSB_OK && !satisfied(req, &st) && msb_agent_now_ms() < until) {
		struct timespec ts = { 0, BG_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
		rc = agent_bg_load(req->bg_id, &st, err);
	}
	if (rc != MSB_OK)
		return rc;
	uint64_t max = req->max_bytes ? req->max_bytes : BG_READ_DEFAULT;
	const uint64_t asked[2] = { req->offset_out, req->offset_err };
	uint64_t from[2], to[2];
	msb_buf data[2] = { { 0 }, { 0 } };
	for (int i = 0; i < 2 && rc == MSB_OK; i++) {
		from[i] = held_from(&st, i, asked[i]);
		from[i] = from[i] < st.written[i] ? from[i] : st.written[i];
		to[i] = st.written[i] - from[i] > max ? from[i] + max : st.written[i];
		int fd = agent_bg_open(req->bg_id, i ? "err" : "out", O_RDONLY);
		if (fd < 0 || !ring_get(fd, st.ring, from[i], to[i], &data[i]))
			rc = msb_error_set(err, MSB_E_OS, "bg_read refused by msb-agent: the output "
					   "of '%s' cannot be read", req->bg_id);
		if (fd >= 0)
			close(fd);
	}
	/* What a write under way since reached is no longer what was read: dropped. */
	agent_bg_state after;
	if (rc == MSB_OK && (rc = agent_bg_load(req->bg_id, &after, err)) == MSB_OK)
		for (int i = 0; i < 2; i++) {
			uint64_t lo = held_from(&after, i, from[i]);
			uint64_t cut = lo < to[i] ? lo - from[i] : to[i] - from[i];
			if (cut) {
				memmove(data[i].data, data[i].data + cut, data[i].len - cut);
				data[i].len -= cut;
			}
			from[i] += cut;
		}
	if (rc == MSB_OK)
		rc = agent_bg_put_status(reply, req->bg_id, &after, err);
	static const uint16_t tags[2] = { MSB_TAG_STDOUT, MSB_TAG_STDERR };
	static const uint16_t starts[2] = { MSB_TAG_START_OUT, MSB_TAG_START_ERR };
	for (int i = 0; i < 2 && rc == MSB_OK; i++) {
		rc = msb_agent_put(reply, tags[i], data[i].data, data[i].len, err);
		if (rc == MSB_OK)
			rc = msb_agent_put_u64(reply, starts[i], from[i], err);
	}
	msb_buf_free(&data[0]);
	msb_buf_free(&data[1]);
	return rc;
}

msb_errc agent_bg_signal(const msb_agent_request *req, msb_error *err)
{
	agent_bg_state st;
	msb_errc rc = agent_bg_load(req->bg_id, &st, err);
	if (rc != MSB_OK)
		return rc;
	if (!st.running)
		return msb_error_set(err, MSB_E_VALUE,
				     "bg_signal refused by msb-agent: background command '%s' has "
				     "ended; there is nothing to signal", req->bg_id);
	if (st.pid < 2)
		return msb_error_set(err, MSB_E_PROTOCOL,
				     "bg_signal refused by msb-agent: the state of '%s' names pid "
				     "%lld, which is no command's", req->bg_id, (long long)st.pid);
	/* Its process group (the command leads its own session), else the command alone. */
	if (kill(-(pid_t)st.pid, (int)req->signal) < 0 && kill((pid_t)st.pid, (int)req->signal) < 0)
		return msb_error_set_errno(err, MSB_E_OS, errno,
					   "bg_signal refused by msb-agent: kill %lld",
					   (long long)st.pid);
	return MSB_OK;
}

typedef struct bg_entry {
	char id[MSB_BG_ID_MAX + 1];
	agent_bg_state st;
} bg_entry;

static int by_start(const void *a, const void *b)
{
	const bg_entry *x = a, *y = b;
	return x->st.started_ms < y->st.started_ms ? -1 : x->st.started_ms > y->st.started_ms;
}

msb_errc agent_bg_list(msb_buf *reply, msb_error *err)
{
	DIR *d = opendir(agent_bg_dir(false, NULL));
	if (!d)
		return MSB_OK; /* none was ever started */
	bg_entry all[MSB_AGENT_BG_MAX];
	size_t n = 0;
	struct dirent *de;
	while (n < MSB_AGENT_BG_MAX && (de = readdir(d)))
		if (msb_bg_id_valid(de->d_name) && agent_bg_load(de->d_name, &all[n].st, NULL) == MSB_OK) {
			memcpy(all[n].id, de->d_name, strlen(de->d_name) + 1); /* a valid id fits */
			n++;
		}
	closedir(d);
	qsort(all, n, sizeof *all, by_start);
	msb_errc rc = MSB_OK;
	for (size_t i = 0; i < n && rc == MSB_OK; i++)
		rc = agent_bg_put_status(reply, all[i].id, &all[i].st, err);
	return rc;
}

void agent_bg_forget(const char *id)
{
	static const char *const files[] = { "state", "state.new", "out", "err", "command" };
	char path[128];
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (agent_bg_path(path, sizeof path, id, files[i]))
			unlink(path);
	if (agent_bg_path(path, sizeof path, id, NULL))
		rmdir(path);
}

void agent_bg_cleanup(void)
{
	const char *dir = agent_bg_dir(false, NULL);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		if (msb_bg_id_valid(de->d_name))
			agent_bg_forget(de->d_name);
	closedir(d);
	rmdir(dir);
}
