/*
 * inprocess_bg.c — background commands in the fake, which evaluates nothing: a start is
 * answered with the scripted output of the same command line (as exec's), and the command
 * has ended at once, exit status and all. Its ring keeps the newest max_output bytes of
 * each stream (0: 1 MiB), so a test sees what a ring drops; a signal finds it ended, as a
 * real one that has ended is refused; a disposed sandbox forgets them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inprocess.h"

struct inproc_bg {
	msb_bg_status st;
	msb_buf out, err; /* what the ring holds: offsets written - len .. written */
};

void inproc_bg_free(inproc_sandbox *sb)
{
	for (size_t i = 0; i < sb->n_bg; i++) {
		msb_buf_free(&sb->bg[i].out);
		msb_buf_free(&sb->bg[i].err);
	}
	free(sb->bg);
	sb->bg = NULL;
	sb->n_bg = 0;
}

static inproc_bg *find(inproc_sandbox *sb, const char *id)
{
	for (size_t i = 0; i < sb->n_bg; i++)
		if (!strcmp(sb->bg[i].st.id, id))
			return &sb->bg[i];
	return NULL;
}

/* The newest `ring` bytes of `all` into `held`. */
static msb_errc keep(msb_buf *held, const msb_buf *all, uint64_t ring, msb_error *err)
{
	size_t from = all->len > ring ? all->len - (size_t)ring : 0;
	return msb_buf_append(held, all->data ? all->data + from : (const unsigned char *)"",
			      all->len - from, err);
}

msb_errc inproc_bg_start(msb_sandbox_handle *h, const msb_exec_request *req,
			 const char *const *env, msb_bg_status *started, msb_error *err)
{
	(void)env;
	msb_exec_request r = *req;
	r.max_output = 0; /* the whole answer: the ring, not the cap, bounds it */
	msb_exec_result res;
	msb_errc rc = inproc_exec(h, &r, &res, err);
	if (rc != MSB_OK)
		return rc;
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	inproc_sandbox *sb = h->sb;
	inproc_bg *grown = realloc(sb->bg, (sb->n_bg + 1) * sizeof *grown);
	if (!grown) {
		rc = msb_error_set(err, MSB_E_NOMEM, "inprocess: out of memory");
	} else {
		sb->bg = grown;
		inproc_bg *b = &sb->bg[sb->n_bg];
		memset(b, 0, sizeof *b);
		snprintf(b->st.id, sizeof b->st.id, "fake%zu", sb->n_bg + 1);
		b->st.pid = (int64_t)(sb->n_bg + 2);
		b->st.exit_code = res.exit_code;
		b->st.ring = req->max_output ? req->max_output : MSB_MIB;
		b->st.out_written = res.out.len;
		b->st.err_written = res.err.len;
		b->st.started = (double)time(NULL);
		size_t len = 0;
		for (size_t i = 0; req->argv[i] && len < MSB_BG_COMMAND_MAX; i++) {
			int k = snprintf(b->st.command + len, sizeof b->st.command - len, "%s%s",
					 i ? " " : "", req->argv[i]);
			len += k > 0 ? (size_t)k : 0;
		}
		rc = keep(&b->out, &res.out, b->st.ring, err);
		if (rc == MSB_OK)
			rc = keep(&b->err, &res.err, b->st.ring, err);
		if (rc == MSB_OK) {
			sb->n_bg++;
			*started = b->st;
		} else {
			msb_buf_free(&b->out);
			msb_buf_free(&b->err);
		}
	}
	pthread_mutex_unlock(&self->lock);
	msb_exec_result_free(&res);
	return rc;
}

static msb_errc not_found(const char *id, msb_error *err)
{
	return msb_error_set(err, MSB_E_NOT_FOUND,
			     "inprocess: no background command '%s' in this sandbox", id);
}

/* Stream bytes from `asked` of what the ring holds, at most `max`. */
static msb_errc slice(const msb_buf *held, uint64_t written, uint64_t asked, uint64_t max,
		      msb_buf *out, uint64_t *start, uint64_t *dropped, msb_error *err)
{
	uint64_t lo = written - held->len;
	*start = asked < lo ? lo : asked > written ? written : asked;
	*dropped = *start - (asked < *start ? asked : *start);
	uint64_t n = written - *start < max ? written - *start : max;
	return msb_buf_append(out, held->data ? held->data + (*start - lo) : (const unsigned char *)"",
			      (size_t)n, err);
}

msb_errc inproc_bg_read(msb_sandbox_handle *h, const char *id, const msb_bg_read *rq,
			msb_bg_output *out, msb_error *err)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	inproc_bg *b = find(h->sb, id);
	uint64_t max = rq->max_bytes ? rq->max_bytes : MSB_MIB;
	msb_errc rc = b ? MSB_OK : not_found(id, err);
	if (rc == MSB_OK) {
		out->status = b->st;
		rc = slice(&b->out, b->st.out_written, rq->out_offset, max, &out->out,
			   &out->out_start, &out->out_dropped, err);
	}
	if (rc == MSB_OK)
		rc = slice(&b->err, b->st.err_written, rq->err_offset, max, &out->err,
			   &out->err_start, &out->err_dropped, err);
	pthread_mutex_unlock(&self->lock);
	return rc;
}

msb_errc inproc_bg_signal(msb_sandbox_handle *h, const char *id, int signal, msb_error *err)
{
	(void)signal;
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	msb_errc rc = find(h->sb, id) ? msb_error_set(err, MSB_E_VALUE,
						      "inprocess: background command '%s' has "
						      "ended; there is nothing to signal", id)
				      : not_found(id, err);
	pthread_mutex_unlock(&self->lock);
	return rc;
}

msb_errc inproc_bg_list(msb_sandbox_handle *h, msb_bg_list *out, msb_error *err)
{
	struct msb_backend_instance *self = h->self;
	pthread_mutex_lock(&self->lock);
	inproc_sandbox *sb = h->sb;
	msb_errc rc = MSB_OK;
	if (sb->n_bg && !(out->items = calloc(sb->n_bg, sizeof *out->items)))
		rc = msb_error_set(err, MSB_E_NOMEM, "inprocess: out of memory");
	for (size_t i = 0; rc == MSB_OK && i < sb->n_bg; i++)
		out->items[out->n++] = sb->bg[i].st;
	pthread_mutex_unlock(&self->lock);
	return rc;
}
