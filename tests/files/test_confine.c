/*
 * test_confine.c — the adversarial table for msb/confine.h, run twice: once through openat2
 * and once through the O_NOFOLLOW walk (forced), so both resolution paths are held to it.
 *
 * Every case plants something in the working directory (a link to outside at some level, a
 * hard link, a FIFO, …), runs one operation, and asserts the code, key words of the message,
 * that the message names the path, and — always — that the `outside` directory beside the
 * working directory still holds exactly its sentinel file, unmodified.
 *
 * Hard links, decided: a hard link is the same inode, so no lookup can tell one from a file
 * born in the working directory. Writes are safe anyway — a write renames a new file over
 * the name, so the outside inode is never opened for writing — and an exclusive create
 * refuses it as existing. A read returns the bytes: a guest can only hard-link what it can
 * already read, and refusing st_nlink > 1 would refuse legitimate files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/confine.h>

#include "files_test.h"
#include "msb_test.h"

typedef enum op {
	OP_WRITE, OP_WRITE_P, OP_WRITE_X, OP_READ, OP_READ_CAP, OP_STAT, OP_LIST, OP_REMOVE,
	OP_REMOVE_R, OP_MKDIRS, OP_RECLAIM, OP_OPEN_ROOT,
} op;

typedef struct tcase {
	const char *name;
	void (*plant)(files_scene *);
	op op;
	const char *path;
	msb_errc want;
	const char *words;                 /* in the message when refused */
	void (*verify)(files_scene *, const msb_entry *, const msb_entry_list *, const msb_buf *);
} tcase;

/* ---- plants --------------------------------------------------------------------------- */
static void p_ln_abs(files_scene *s) { files_link(s, "ln", "@OUT"); }
static void p_ln_rel(files_scene *s) { files_link(s, "ln", "../outside"); }
static void p_a_ln(files_scene *s) { files_mkdir(s, "a"); files_link(s, "a/ln", "@OUT"); }
static void p_ab_ln(files_scene *s) { files_mkdir(s, "a/b"); files_link(s, "a/b/ln", "@OUT"); }
static void p_abc_ln(files_scene *s) { files_mkdir(s, "a/b/c"); files_link(s, "a/b/c/ln", "../../../../outside"); }
static void p_ln_secret(files_scene *s) { files_link(s, "ln", "@OUT/secret"); }
static void p_ln_dangling(files_scene *s) { files_link(s, "ln", "@OUT/new"); }
static void p_a_ln_secret(files_scene *s) { files_mkdir(s, "a"); files_link(s, "a/ln", "../../outside/secret"); }
static void p_ln_slash(files_scene *s) { files_link(s, "ln", "/"); }
static void p_ln_self(files_scene *s) { files_link(s, "ln", "ln"); }
static void p_ln_dot(files_scene *s) { files_link(s, "ln", "."); }
static void p_file(files_scene *s) { files_put(s, "f", "hello"); }
static void p_dir(files_scene *s) { files_mkdir(s, "d/e"); files_put(s, "d/e/f", "x"); }
static void p_tree_links(files_scene *s)
{
	files_mkdir(s, "t/u");
	files_put(s, "t/u/f", "x");
	files_link(s, "t/out", "@OUT");
	files_link(s, "t/u/secret", "@OUT/secret");
}
static void p_hl(files_scene *s)
{
	char from[PATH_MAX], to[PATH_MAX];
	PATHF(from, sizeof from, "%s/secret", s->outside);
	PATHF(to, sizeof to, "%s/hl", s->root);
	assert_int_equal(link(from, to), 0);
}
static void p_fifo(files_scene *s)
{
	char p[PATH_MAX];
	PATHF(p, sizeof p, "%s/fifo", s->root);
	assert_int_equal(mkfifo(p, 0600), 0);
}
static void p_root_ln(files_scene *s)
{
	char p[PATH_MAX];
	PATHF(p, sizeof p, "%s/rootlink", s->base);
	assert_int_equal(symlink(s->root, p), 0);
}

/* ---- verifications -------------------------------------------------------------------- */
static void v_stat_link(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_int_equal(e->kind, MSB_ENTRY_SYMLINK);
	assert_int_equal(e->size_bytes, -1);
}
static void v_stat_other(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_int_equal(e->kind, MSB_ENTRY_OTHER);
}
static void v_stat_file(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_int_equal(e->kind, MSB_ENTRY_FILE);
	assert_int_equal(e->size_bytes, 5);
	assert_string_equal(e->path, "f");
}
static void v_stat_missing(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_null(e->path); /* not found: nothing filled */
}
static void v_list_links(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_int_equal(l->len, 2);
	assert_string_equal(l->items[0].path, "t/out");
	assert_int_equal(l->items[0].kind, MSB_ENTRY_SYMLINK);
	assert_string_equal(l->items[1].path, "t/u");
	assert_int_equal(l->items[1].kind, MSB_ENTRY_DIRECTORY);
}
static void v_list_root(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_int_equal(l->len, 1);
	assert_string_equal(l->items[0].path, "ln");
	assert_int_equal(l->items[0].kind, MSB_ENTRY_SYMLINK);
}
static void v_ln_gone(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_false(files_exists(s, "ln"));
}
static void v_ln_kept(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_true(files_exists(s, "ln"));
}
static void v_tree_gone(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_false(files_exists(s, "t"));
}
static void v_d_kept(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_true(files_exists(s, "d/e/f"));
}
static void v_hl_replaced(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	char got[64];
	files_get(s, "hl", got, sizeof got);
	assert_string_equal(got, "payload");
	struct stat st;
	char p[PATH_MAX];
	PATHF(p, sizeof p, "%s/hl", s->root);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_nlink, 1); /* a new inode: the outside one was never opened */
}
static void v_hl_read(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_int_equal(b->len, strlen(FILES_SENTINEL));
}
static void v_written(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	char got[64];
	files_get(s, "x/y/z", got, sizeof got);
	assert_string_equal(got, "payload");
}
static void v_fifo_replaced(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	char got[64];
	files_get(s, "fifo", got, sizeof got);
	assert_string_equal(got, "payload");
}
static void v_fifo_gone(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	assert_false(files_exists(s, "fifo"));
}
static void v_no_temp(files_scene *s, const msb_entry *e, const msb_entry_list *l, const msb_buf *b)
{
	msb_entry_list all = { 0 };
	assert_int_equal(msb_confine_list_dir(s->root_fd, "", &all, NULL), MSB_OK);
	for (size_t i = 0; i < all.len; i++)
		assert_null(strstr(all.items[i].path, ".msb-tmp"));
	msb_entry_list_free(&all);
}

static char long_segment[NAME_MAX + 8];
static char long_path[PATH_MAX + 16];

static const tcase cases[] = {
	/* lexical: never reaches the filesystem */
	{ "write empty path", NULL, OP_WRITE, "", MSB_E_VALUE, "working directory itself", NULL },
	{ "write dot", NULL, OP_WRITE, ".", MSB_E_VALUE, "working directory itself", NULL },
	{ "remove empty path", NULL, OP_REMOVE_R, "", MSB_E_VALUE, "working directory itself", NULL },
	{ "mkdirs dot", NULL, OP_MKDIRS, ".", MSB_E_VALUE, "working directory itself", NULL },
	{ "write absolute", NULL, OP_WRITE, "/etc/passwd", MSB_E_VALUE, "absolute", NULL },
	{ "read absolute", NULL, OP_READ, "/etc/passwd", MSB_E_VALUE, "absolute", NULL },
	{ "dotdot alone", NULL, OP_WRITE, "..", MSB_E_VALUE, "'..'", NULL },
	{ "dotdot first", NULL, OP_WRITE, "../outside/secret", MSB_E_VALUE, "'..'", NULL },
	{ "dotdot middle", NULL, OP_WRITE_P, "a/../../outside/x", MSB_E_VALUE, "'..'", NULL },
	{ "dotdot last", NULL, OP_MKDIRS, "a/..", MSB_E_VALUE, "'..'", NULL },
	{ "dotdot read", NULL, OP_READ, "../outside/secret", MSB_E_VALUE, "'..'", NULL },
	{ "dotdot stat", NULL, OP_STAT, "x/../../outside/secret", MSB_E_VALUE, "'..'", NULL },
	{ "dotdot list", NULL, OP_LIST, "..", MSB_E_VALUE, "'..'", NULL },
	{ "dotdot remove", NULL, OP_REMOVE_R, "../outside", MSB_E_VALUE, "'..'", NULL },
	{ "empty segment", NULL, OP_WRITE, "a//b", MSB_E_VALUE, "empty segment", NULL },
	{ "trailing slash", NULL, OP_WRITE, "a/", MSB_E_VALUE, "empty segment", NULL },
	{ "dot segment", NULL, OP_WRITE, "./a", MSB_E_VALUE, "'.' segment", NULL },
	{ "backslash", NULL, OP_WRITE, "a\\..\\b", MSB_E_VALUE, "backslash", NULL },
	{ "segment over NAME_MAX", NULL, OP_WRITE, long_segment, MSB_E_VALUE, "NAME_MAX", NULL },
	{ "path over PATH_MAX", NULL, OP_READ, long_path, MSB_E_VALUE, "PATH_MAX", NULL },
	/* a symlink planted at each level, to outside, absolute and relative */
	{ "link parent absolute", p_ln_abs, OP_WRITE, "ln/x", MSB_E_VALUE, "'ln' is a symbolic link", NULL },
	{ "link parent relative", p_ln_rel, OP_WRITE, "ln/x", MSB_E_VALUE, "'ln' is a symbolic link", NULL },
	{ "link parent, parents created", p_ln_abs, OP_WRITE_P, "ln/new/x", MSB_E_VALUE, "'ln' is a symbolic link", NULL },
	{ "link at level 2", p_a_ln, OP_WRITE_P, "a/ln/x", MSB_E_VALUE, "'a/ln' is a symbolic link", NULL },
	{ "link at level 3", p_ab_ln, OP_WRITE, "a/b/ln/x", MSB_E_VALUE, "'a/b/ln' is a symbolic link", NULL },
	{ "link at level 4, relative", p_abc_ln, OP_WRITE, "a/b/c/ln/x", MSB_E_VALUE, "'a/b/c/ln' is a symbolic link", NULL },
	/* The protocol: a link at the final component, or a non-regular entry, is the OS error a
	 * no-follow open raises; only a path through a linked parent is the value error. */
	{ "link to /", p_ln_slash, OP_WRITE, "ln/tmp/x", MSB_E_VALUE, "symbolic link", NULL },
	{ "link to itself", p_ln_self, OP_READ, "ln", MSB_E_OS, "symbolic link", NULL },
	{ "link to dot", p_ln_dot, OP_WRITE, "ln/x", MSB_E_VALUE, "symbolic link", NULL },
	{ "write onto leaf link", p_ln_secret, OP_WRITE, "ln", MSB_E_VALUE, "symbolic link", v_ln_kept },
	{ "write onto dangling link", p_ln_dangling, OP_WRITE, "ln", MSB_E_VALUE, "symbolic link", NULL },
	{ "exclusive onto leaf link", p_ln_dangling, OP_WRITE_X, "ln", MSB_E_VALUE, "symbolic link", NULL },
	{ "read leaf link", p_ln_secret, OP_READ, "ln", MSB_E_OS, "symbolic link", NULL },
	{ "read relative leaf link", p_a_ln_secret, OP_READ, "a/ln", MSB_E_OS, "'a/ln': it is a symbolic link", NULL },
	{ "read through link", p_ln_abs, OP_READ, "ln/secret", MSB_E_VALUE, "'ln' is a symbolic link", NULL },
	{ "stat leaf link", p_ln_secret, OP_STAT, "ln", MSB_OK, NULL, v_stat_link },
	{ "stat through link", p_ln_abs, OP_STAT, "ln/secret", MSB_E_VALUE, "'ln' is a symbolic link", NULL },
	{ "list a link", p_ln_abs, OP_LIST, "ln", MSB_E_VALUE, "symbolic link", NULL },
	{ "list through a link", p_a_ln, OP_LIST, "a/ln", MSB_E_VALUE, "symbolic link", NULL },
	{ "list reports links", p_tree_links, OP_LIST, "t", MSB_OK, NULL, v_list_links },
	{ "list root reports links", p_ln_abs, OP_LIST, "", MSB_OK, NULL, v_list_root },
	{ "remove a link", p_ln_abs, OP_REMOVE, "ln", MSB_OK, NULL, v_ln_gone },
	{ "remove through a link", p_ln_abs, OP_REMOVE, "ln/secret", MSB_E_VALUE, "'ln' is a symbolic link", NULL },
	{ "remove tree with links", p_tree_links, OP_REMOVE_R, "t", MSB_OK, NULL, v_tree_gone },
	{ "mkdirs through link", p_ln_abs, OP_MKDIRS, "ln/sub", MSB_E_VALUE, "'ln' is a symbolic link", NULL },
	{ "reclaim tree with links", p_tree_links, OP_RECLAIM, "t", MSB_OK, NULL, v_tree_gone },
	{ "reclaim through link", p_ln_abs, OP_RECLAIM, "ln", MSB_OK, NULL, v_ln_gone },
	{ "reclaim missing", NULL, OP_RECLAIM, "nothing/here", MSB_OK, NULL, NULL },
	{ "reclaim trailing slash", p_tree_links, OP_RECLAIM, "t/", MSB_OK, NULL, v_tree_gone },
	{ "reclaim a sibling sharing the prefix", NULL, OP_RECLAIM, "@SIBLING", MSB_E_VALUE, "not under working directory", NULL },
	{ "reclaim the root itself", NULL, OP_RECLAIM, "@ROOT", MSB_E_VALUE, "working directory itself", NULL },
	{ "reclaim outside", NULL, OP_RECLAIM, "@OUTSIDE", MSB_E_VALUE, "not under working directory", NULL },
	{ "reclaim with dotdot", NULL, OP_RECLAIM, "../outside", MSB_E_VALUE, "'..'", NULL },
	{ "open root through link", p_root_ln, OP_OPEN_ROOT, "rootlink", MSB_E_VALUE, "symbolic link", NULL },
	{ "open root with an over-long segment", NULL, OP_OPEN_ROOT, long_segment, MSB_E_VALUE, "too long", NULL },
	/* hard links, FIFOs, kinds */
	{ "write over hard link", p_hl, OP_WRITE, "hl", MSB_OK, NULL, v_hl_replaced },
	{ "exclusive over hard link", p_hl, OP_WRITE_X, "hl", MSB_E_LANDING_EXISTS, "already exists", NULL },
	{ "read hard link", p_hl, OP_READ, "hl", MSB_OK, NULL, v_hl_read },
	{ "read fifo never blocks", p_fifo, OP_READ, "fifo", MSB_E_OS, "not a regular file", NULL },
	{ "stat fifo", p_fifo, OP_STAT, "fifo", MSB_OK, NULL, v_stat_other },
	{ "write over fifo", p_fifo, OP_WRITE, "fifo", MSB_OK, NULL, v_fifo_replaced },
	{ "list fifo never blocks", p_fifo, OP_LIST, "fifo", MSB_E_NOT_DIR, "not a directory", NULL },
	{ "remove fifo", p_fifo, OP_REMOVE, "fifo", MSB_OK, NULL, v_fifo_gone },
	{ "mkdirs over a file", p_file, OP_MKDIRS, "f/g", MSB_E_NOT_DIR, "f/g", NULL },
	{ "mkdirs existing", p_dir, OP_MKDIRS, "d/e", MSB_OK, NULL, v_d_kept },
	{ "exclusive new file", NULL, OP_WRITE_X, "fresh", MSB_OK, NULL, v_no_temp },
	{ "read directory", p_dir, OP_READ, "d", MSB_E_IS_DIR, "directory", NULL },
	{ "write over directory", p_dir, OP_WRITE, "d", MSB_E_IS_DIR, "directory", v_no_temp },
	{ "remove directory unasked", p_dir, OP_REMOVE, "d", MSB_E_IS_DIR, "recursive", v_d_kept },
	{ "remove missing is success", NULL, OP_REMOVE, "nothing/here", MSB_OK, NULL, NULL },
	{ "read missing", NULL, OP_READ, "nothing", MSB_E_NOT_FOUND, "nothing", NULL },
	{ "stat missing parent", NULL, OP_STAT, "nothing/here", MSB_OK, NULL, v_stat_missing },
	{ "stat file", p_file, OP_STAT, "f", MSB_OK, NULL, v_stat_file },
	{ "write under a file", p_file, OP_WRITE_P, "f/x", MSB_E_NOT_DIR, "f/x", NULL },
	{ "read over cap refused", p_file, OP_READ_CAP, "f", MSB_E_TRANSFER_CAP_EXCEEDED, "max_bytes", NULL },
	{ "write creates parents", NULL, OP_WRITE_P, "x/y/z", MSB_OK, NULL, v_written },
	{ "write without parents", NULL, OP_WRITE, "x/y/z", MSB_E_NOT_FOUND, "x/y/z", NULL },
};

#define N_CASES (sizeof cases / sizeof cases[0])

static void run_op(files_scene *s, const tcase *c, msb_errc *rc, msb_error *err, msb_entry *e,
		   msb_entry_list *l, msb_buf *b)
{
	char dir[PATH_MAX * 2];
	bool found = false;
	switch (c->op) {
	case OP_WRITE:
	case OP_WRITE_P:
	case OP_WRITE_X: {
		unsigned flags = c->op == OP_WRITE ? 0 : c->op == OP_WRITE_P ? MSB_CONFINE_CREATE_PARENTS
									 : MSB_CONFINE_EXCLUSIVE;
		*rc = msb_confine_write_file(s->root_fd, c->path, "payload", 7, flags, err);
		break;
	}
	case OP_READ:
		*rc = msb_confine_read_file(s->root_fd, c->path, 1 << 20, b, err);
		break;
	case OP_READ_CAP:
		*rc = msb_confine_read_file(s->root_fd, c->path, 3, b, err);
		assert_int_equal(b->len, 0);
		break;
	case OP_STAT:
		*rc = msb_confine_stat(s->root_fd, c->path, e, &found, err);
		assert_true(found == (e->path != NULL));
		break;
	case OP_LIST:
		*rc = msb_confine_list_dir(s->root_fd, c->path, l, err);
		break;
	case OP_REMOVE:
	case OP_REMOVE_R:
		*rc = msb_confine_remove(s->root_fd, c->path, c->op == OP_REMOVE_R, err);
		break;
	case OP_MKDIRS:
		*rc = msb_confine_mkdirs(s->root_fd, c->path, err);
		break;
	case OP_RECLAIM:
		if (strcmp(c->path, "@ROOT") == 0)
			PATHF(dir, sizeof dir, "%s/", s->root);
		else if (strcmp(c->path, "@OUTSIDE") == 0)
			PATHF(dir, sizeof dir, "%s", s->outside);
		else if (strcmp(c->path, "@SIBLING") == 0) /* root + "2": a prefix, not a parent */
			PATHF(dir, sizeof dir, "%s2", s->root);
		else
			PATHF(dir, sizeof dir, "%s/%s", s->root, c->path);
		*rc = msb_confine_reclaim(dir, s->root, err);
		break;
	case OP_OPEN_ROOT: {
		int fd = -1;
		PATHF(dir, sizeof dir, "%s/%s", s->base, c->path);
		*rc = msb_confine_open_root(dir, &fd, err);
		if (fd >= 0 && *rc == MSB_OK)
			close(fd);
		break;
	}
	}
}

static void run_case(void **state)
{
	const tcase *c = *state;
	files_scene s;
	files_scene_make(&s);
	if (c->plant)
		c->plant(&s);
	msb_error err = MSB_ERROR_INIT;
	msb_entry e = { 0 };
	msb_entry_list l = { 0 };
	msb_buf b = { 0 };
	msb_errc rc = MSB_E__COUNT;
	run_op(&s, c, &rc, &err, &e, &l, &b);
	if (rc != c->want)
		print_error("case '%s': got %s (%s), want %s\n", c->name, msb_errc_name(rc),
			    msb_error_message(&err), msb_errc_name(c->want));
	assert_int_equal(rc, c->want);
	if (c->want != MSB_OK) {
		const char *msg = msb_error_message(&err);
		if (!strstr(msg, c->words))
			print_error("case '%s': message '%s' lacks '%s'\n", c->name, msg, c->words);
		assert_non_null(strstr(msg, c->words));
		/* Each refusal names the path (its first 32 bytes, for the over-long ones). */
		char head[33];
		int cut = snprintf(head, sizeof head, "%s", c->path[0] == '@' ? "" : c->path);
		(void)cut; /* truncation wanted: the head is what a long path's message quotes */
		assert_non_null(strstr(msg, head));
	}
	if (c->verify)
		c->verify(&s, &e, &l, &b);
	assert_true(files_outside_untouched(&s));
	free(e.path);
	msb_entry_list_free(&l);
	msb_buf_free(&b);
	msb_error_clear(&err);
	files_scene_remove(&s);
}

/* A directory swapped for a link between two calls: the second call must not follow it. */
static void swap_between_calls(void **state)
{
	(void)state;
	files_scene s;
	files_scene_make(&s);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_confine_write_file(s.root_fd, "d/x", "1", 1, MSB_CONFINE_CREATE_PARENTS, &err), MSB_OK);
	char d[PATH_MAX], moved[PATH_MAX];
	PATHF(d, sizeof d, "%s/d", s.root);
	PATHF(moved, sizeof moved, "%s/d.old", s.root);
	assert_int_equal(rename(d, moved), 0);
	assert_int_equal(symlink(s.outside, d), 0);
	assert_int_equal(msb_confine_write_file(s.root_fd, "d/y", "2", 1, 0, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "'d' is a symbolic link"));
	msb_buf b = { 0 };
	assert_int_equal(msb_confine_read_file(s.root_fd, "d/secret", 100, &b, &err), MSB_E_VALUE);
	assert_int_equal(msb_confine_remove(s.root_fd, "d/secret", false, &err), MSB_E_VALUE);
	assert_true(files_outside_untouched(&s));
	msb_error_clear(&err);
	files_scene_remove(&s);
}

/* Atomic write: an existing file is replaced whole, and a failed write leaves no temp. */
static void write_replaces_atomically(void **state)
{
	(void)state;
	files_scene s;
	files_scene_make(&s);
	files_put(&s, "f", "old content");
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_confine_write_file(s.root_fd, "f", "new", 3, MSB_CONFINE_SYNC, &err), MSB_OK);
	char got[64];
	files_get(&s, "f", got, sizeof got);
	assert_string_equal(got, "new");
	/* a read-only directory makes the temp file fail: the error names the path */
	files_mkdir(&s, "ro");
	char ro[PATH_MAX];
	PATHF(ro, sizeof ro, "%s/ro", s.root);
	chmod(ro, 0500);
	if (geteuid() != 0) { /* root ignores the mode bits */
		assert_int_equal(msb_confine_write_file(s.root_fd, "ro/f", "x", 1, 0, &err), MSB_E_PERMISSION);
		assert_non_null(strstr(msb_error_message(&err), "ro/f"));
	}
	chmod(ro, 0700);
	msb_error_clear(&err);
	files_scene_remove(&s);
}

/* A file that grows past the cap between fstat and read is refused, not truncated. */
static void read_exact_cap(void **state)
{
	(void)state;
	files_scene s;
	files_scene_make(&s);
	files_put(&s, "f", "12345");
	msb_error err = MSB_ERROR_INIT;
	msb_buf b = { 0 };
	assert_int_equal(msb_confine_read_file(s.root_fd, "f", 5, &b, &err), MSB_OK);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.data, "12345", 5);
	assert_int_equal(msb_confine_read_file(s.root_fd, "f", 4, &b, &err), MSB_E_TRANSFER_CAP_EXCEEDED);
	assert_int_equal(b.len, 5); /* the failed read appended nothing */
	msb_buf_free(&b);
	files_put(&s, "empty", "");
	assert_int_equal(msb_confine_read_file(s.root_fd, "empty", 0, &b, &err), MSB_OK);
	assert_int_equal(b.len, 0);
	msb_buf_free(&b);
	msb_error_clear(&err);
	files_scene_remove(&s);
}

static int use_openat2(void **state)
{
	(void)state;
	msb_confine_force_fallback(false);
	return msb_confine_uses_openat2() ? 0 : -1;
}

static int use_walk(void **state)
{
	(void)state;
	msb_confine_force_fallback(true);
	return msb_confine_uses_openat2() ? -1 : 0;
}

static int run_group(const char *name, CMFixtureFunction setup)
{
	struct CMUnitTest tests[N_CASES + 3];
	for (size_t i = 0; i < N_CASES; i++)
		tests[i] = (struct CMUnitTest){ cases[i].name, run_case, NULL, files_scene_teardown, (void *)&cases[i] };
	tests[N_CASES] = (struct CMUnitTest)cmocka_unit_test_teardown(swap_between_calls, files_scene_teardown);
	tests[N_CASES + 1] = (struct CMUnitTest)cmocka_unit_test_teardown(write_replaces_atomically, files_scene_teardown);
	tests[N_CASES + 2] = (struct CMUnitTest)cmocka_unit_test_teardown(read_exact_cap, files_scene_teardown);
	return _cmocka_run_group_tests(name, tests, N_CASES + 3, setup, NULL);
}

int main(void)
{
	memset(long_segment, 'n', NAME_MAX + 1);
	for (size_t i = 0; i < PATH_MAX + 8; i += 2) {
		long_path[i] = 'p';
		long_path[i + 1] = '/';
	}
	long_path[PATH_MAX + 8] = 'p';
	int failed = 0;
	msb_confine_force_fallback(false);
	if (msb_confine_uses_openat2())
		failed += run_group("confine via openat2", use_openat2);
	else
		printf("# this kernel has no openat2: only the walk is tested here\n");
	failed += run_group("confine via O_NOFOLLOW walk", use_walk);
	return failed ? 1 : 0;
}
