/*
 * inprocess.h — the inprocess fake's own structures, shared by its files: the instance
 * (configuration, injected failures, the record, the sandboxes) and one sandbox (an
 * in-memory file tree).
 */
#ifndef INPROCESS_H
#define INPROCESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <msb/backend.h>

/* A scripted answer: the first whose `match` is a substring of the command wins. */
typedef struct inproc_script {
	char *match, *out, *err;
	int exit_code;
} inproc_script;

typedef struct inproc_file {
	char *path; /* absolute guest path */
	unsigned char *data;
	size_t len;
} inproc_file;

typedef struct inproc_sandbox {
	struct inproc_sandbox *next;
	unsigned refs;      /* the instance's list (while live) + each handle */
	bool disposed;
	char *scope, *thread_id, *agent_dir, *call_id, *kind; /* one allocation at `scope` */
	inproc_file *files;
	size_t n_files, cap_files;
	struct inproc_bg *bg;   /* background commands (inprocess_bg.c) */
	size_t n_bg;
} inproc_sandbox;
typedef struct inproc_bg inproc_bg;

typedef struct inproc_record {
	char *what, *text;
} inproc_record;

struct msb_backend_instance {
	pthread_mutex_t lock;   /* everything below, and every sandbox's files */
	msb_host host;
	/* Declarations this instance states, kept alive for instance_declarations(). */
	msb_declarations decl;
	const char **caps, **modes, **families, **scopes;
	msb_sandbox_limits limits;
	bool observes_egress;
	inproc_script *outputs, *programs;
	size_t n_outputs, n_programs;
	char *default_stdout;
	unsigned acquire_delay_us;
	/* acquire_barrier: each acquire waits until this many are in flight at once (0: none). */
	unsigned acquire_barrier;
	double acquire_barrier_timeout; /* seconds; default 5 */
	unsigned acquires_entered;
	pthread_cond_t entered;
	/* Injected failures. */
	int fail_acquire;       /* an msb_errc, or 0 */
	int fail_dispose;       /* an msb_disposal_code, or -1 */
	int fail_dispose_scope;
	inproc_record *record;
	size_t n_record, cap_record;
	inproc_sandbox *sandboxes;
};

struct msb_sandbox_handle {
	struct msb_backend_instance *self;
	inproc_sandbox *sb;
};

/* Record one event (the caller holds the lock). */
void inproc_record_add(struct msb_backend_instance *self, const char *what, const char *text);
/* Drop one reference (the caller holds the lock); frees a disposed sandbox at zero. */
void inproc_sandbox_unref(inproc_sandbox *sb);

msb_errc inproc_config(struct msb_backend_instance *self, const msb_node *config, msb_error *err);
void inproc_config_free(struct msb_backend_instance *self);

msb_errc inproc_exec(msb_sandbox_handle *h, const msb_exec_request *req, msb_exec_result *res,
		     msb_error *err);
msb_errc inproc_exec_stream(msb_sandbox_handle *h, const msb_exec_request *req,
			    const msb_exec_stream *stream, msb_exec_result *res, msb_error *err);
msb_errc inproc_run_code(msb_sandbox_handle *h, const char *code, double timeout,
			 msb_exec_result *res, msb_error *err);
msb_errc inproc_write_file(msb_sandbox_handle *h, const char *path, const void *data, size_t len,
			   const char *working_directory, msb_error *err);
msb_errc inproc_stat_file(msb_sandbox_handle *h, const char *path, const char *working_directory,
			  msb_entry *entry, bool *found, msb_error *err);
msb_errc inproc_read_file(msb_sandbox_handle *h, const char *path, const char *working_directory,
			  uint64_t max_bytes, msb_buf *out, msb_error *err);
msb_errc inproc_list_dir(msb_sandbox_handle *h, const char *path, const char *working_directory,
			 msb_entry_list *out, msb_error *err);
msb_errc inproc_remove(msb_sandbox_handle *h, const char *path, const char *working_directory,
		       bool recursive, msb_error *err);
msb_errc inproc_reclaim(msb_sandbox_handle *h, const char *directory, const char *working_directory,
			double timeout, msb_error *err);

/* inprocess_bg.c */
void inproc_bg_free(inproc_sandbox *sb);
msb_errc inproc_bg_start(msb_sandbox_handle *h, const msb_exec_request *req,
			 const char *const *env, msb_bg_status *started, msb_error *err);
msb_errc inproc_bg_read(msb_sandbox_handle *h, const char *id, const msb_bg_read *rq,
			msb_bg_output *out, msb_error *err);
msb_errc inproc_bg_signal(msb_sandbox_handle *h, const char *id, int signal, msb_error *err);
msb_errc inproc_bg_list(msb_sandbox_handle *h, msb_bg_list *out, msb_error *err);

#endif
