/*
 * suite_files.c — the file contract: write/stat/read/list/remove each confined to the
 * working directory the call names, every refusal the contract lists ('..', absolute, the
 * working directory itself, an empty segment, a backslash, a symlinked parent, landing on a
 * symlink), a symlink planted inside the guest never followed, max_bytes refused rather than
 * truncated, and reclaim: a missing directory is success, a present tree goes.
 *
 * Layout, planted in the guest under the work dir W0 with a fresh name D:
 *   D/plain.txt  "plain"        D/sub/         a real directory
 *   D/link-file -> ../D-secret  D/link-dir -> ../D-outdir   (links planted with exec `ln -s`)
 *   D-secret     "SECRET"       D-outdir/secret "SECRET"
 * Every file operation runs with working directory W = W0/D, so each link points outside W
 * while staying inside the sandbox: a backend that follows one is caught without the kit
 * ever touching anything but the guest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

#define T 30.0

typedef struct files_layout {
	bool planted;
	bool links;          /* the two links exist (exec is declared and planted them) */
	char dir[96];        /* D */
	char wd[512];        /* W */
} files_layout;

static files_layout *layout(conf_run *run)
{
	return run->suite_data;
}

static const char *files_setup(conf_run *run)
{
	static _Thread_local files_layout state;
	memset(&state, 0, sizeof(state));
	conf_unique(run, "files", state.dir, sizeof(state.dir));
	conf_path(run, state.dir, state.wd, sizeof(state.wd));
	run->suite_data = &state;
	return NULL;
}

/* Plant the layout once; false after failing the case. */
static conf_box *planted(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	files_layout *l = layout(run);
	if (!box || l->planted)
		return box;
	if (conf_exec_usable(run, box)) {
		const char *args[] = { l->dir, NULL };
		if (!conf_sh_ok(run, box, NULL, "the layout planted with exec",
				"set -e; mkdir -p \"$1/sub\" \"$1-outdir\"; printf SECRET > \"$1-secret\"; "
				"printf SECRET > \"$1-outdir/secret\"; printf plain > \"$1/plain.txt\"; "
				"ln -s \"../$1-secret\" \"$1/link-file\"; ln -s \"../$1-outdir\" \"$1/link-dir\"",
				args))
			return NULL;
		l->links = true;
	} else {
		msb_error err = MSB_ERROR_INIT;
		char p[256];
		snprintf(p, sizeof(p), "%s/plain.txt", l->dir);
		msb_errc rc = run->ops->write_file(box->handle, p, "plain", 5, run->work_dir, &err);
		if (rc == MSB_OK) {
			snprintf(p, sizeof(p), "%s/sub/.keep", l->dir);
			rc = run->ops->write_file(box->handle, p, "", 0, run->work_dir, &err);
		}
		if (rc == MSB_OK) {
			snprintf(p, sizeof(p), "%s-secret", l->dir);
			rc = run->ops->write_file(box->handle, p, "SECRET", 6, run->work_dir, &err);
		}
		if (rc == MSB_OK) {
			snprintf(p, sizeof(p), "%s-outdir/secret", l->dir);
			rc = run->ops->write_file(box->handle, p, "SECRET", 6, run->work_dir, &err);
		}
		if (rc != MSB_OK) {
			conf_fail_call(run, "the layout planted with write_file", &err);
			msb_error_clear(&err);
			return NULL;
		}
	}
	l->planted = true;
	return box;
}

static bool need_links(conf_run *run)
{
	if (layout(run)->links)
		return true;
	conf_skip(run, "planting a symlink needs an exec that runs real programs (not declared, or "
		       "it did not run the kit's probe)");
	return false;
}

static int exists(conf_run *run, conf_box *box, const char *rel)
{
	return conf_exists(run, box, rel);
}

/*
 * The content of `rel` under W0, read independently (exec cat, else read_file). When it
 * cannot be read, `why` says by what and how it failed ("" when nothing declared can read).
 */
static bool content_why(conf_run *run, conf_box *box, const char *rel, msb_buf *out, char *why,
			size_t size)
{
	why[0] = '\0';
	if (conf_exec_usable(run, box)) {
		const char *args[] = { rel, NULL };
		msb_exec_result res;
		msb_error err = MSB_ERROR_INIT;
		msb_errc rc = conf_sh(run, box, NULL, "cat \"$1\"", args, T, &res, &err);
		bool ok = rc == MSB_OK && res.exit_code == 0;
		char text[200];
		if (rc != MSB_OK)
			snprintf(why, size, "`cat %s` could not be run: %s: %s", rel, msb_errc_name(rc),
				 msb_error_message(&err));
		else if (!ok)
			conf_quote(res.err.data, res.err.len, text, sizeof text),
				snprintf(why, size, "`cat %s` exited with status %d: \"%s\"", rel,
					 res.exit_code, text);
		*out = res.out;
		res.out = (msb_buf){ 0 };
		msb_exec_result_free(&res);
		msb_error_clear(&err);
		return ok;
	}
	if (conf_has(run, MSB_CAP_FILES_OUT)) {
		msb_error err = MSB_ERROR_INIT;
		msb_errc rc = run->ops->read_file(box->handle, rel, run->work_dir, 1 << 20, out, &err);
		if (rc != MSB_OK)
			snprintf(why, size, "read_file(%s) failed: %s: %s", rel, msb_errc_name(rc),
				 msb_error_message(&err));
		msb_error_clear(&err);
		return rc == MSB_OK;
	}
	return false;
}

static bool content(conf_run *run, conf_box *box, const char *rel, msb_buf *out)
{
	char why[8];
	return content_why(run, box, rel, out, why, sizeof why);
}

/* The file just written could not be read back: a failure saying how, or a skip when
 * nothing declared can read. */
static void unreadable(conf_run *run, const char *rel, const char *why)
{
	if (why[0])
		conf_fail(run, "the file just written to read back", "%s", why);
	else
		conf_skip(run, "nothing declared (exec or files_out) can read %s back", rel);
}

static void rel_path(conf_run *run, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", layout(run)->dir, name);
}

/* The secret outside W must still read "SECRET". */
static void secret_intact(conf_run *run, conf_box *box, const char *which)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "%s%s", layout(run)->dir, which);
	msb_buf b = { 0 };
	if (content(run, box, rel, &b) && (b.len != 6 || memcmp(b.data, "SECRET", 6) != 0)) {
		char seen[128];
		conf_quote(b.data, b.len, seen, sizeof(seen));
		conf_fail(run, "the file a link points at left untouched",
			  "%s now holds \"%s\"", rel, seen);
	}
	msb_buf_free(&b);
}

/* ---- writes ------------------------------------------------------------------------ */

static void case_write_reads_back(conf_run *run)
{
	char why[512];
	conf_box *box = planted(run);
	if (!box)
		return;
	static const char data[] = "first\0line\n\x80\xff end";
	char rel[256];
	rel_path(run, "new/deeper/file.bin", rel, sizeof(rel));
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->write_file(box->handle, "new/deeper/file.bin", data, sizeof(data) - 1,
					   layout(run)->wd, &err);
	if (rc != MSB_OK) {
		conf_fail_call(run, "write_file(new/deeper/file.bin) to create its parents and land", &err);
	} else {
		rc = run->ops->write_file(box->handle, "new/deeper/file.bin", "2nd", 3, layout(run)->wd, &err);
		msb_buf b = { 0 };
		if (rc != MSB_OK)
			conf_fail_call(run, "a second write_file to the same path to replace it", &err);
		else if (!content_why(run, box, rel, &b, why, sizeof why))
			unreadable(run, rel, why);
		else if (b.len != 3 || memcmp(b.data, "2nd", 3) != 0) {
			char seen[128];
			conf_quote(b.data, b.len, seen, sizeof(seen));
			conf_fail(run, "the second write's bytes \"2nd\"", "the file holds \"%s\"", seen);
		}
		msb_buf_free(&b);
	}
	msb_error_clear(&err);
}

static void case_write_binary_round_trip(conf_run *run)
{
	char why[512];
	conf_box *box = planted(run);
	if (!box)
		return;
	unsigned char data[512];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7);
	char rel[256];
	rel_path(run, "bytes.bin", rel, sizeof(rel));
	msb_error err = MSB_ERROR_INIT;
	msb_buf b = { 0 };
	if (run->ops->write_file(box->handle, "bytes.bin", data, sizeof(data), layout(run)->wd, &err) != MSB_OK)
		conf_fail_call(run, "write_file of 512 arbitrary bytes to land", &err);
	else if (!content_why(run, box, rel, &b, why, sizeof why))
		unreadable(run, rel, why);
	else if (b.len != sizeof(data) || memcmp(b.data, data, sizeof(data)) != 0)
		conf_fail(run, "the 512 bytes read back unchanged", "%zu bytes, differing", b.len);
	msb_buf_free(&b);
	msb_error_clear(&err);
}

/* A path write_file must refuse; `leak` (relative to W0) must not exist afterwards. */
typedef struct refusal {
	const char *name;
	const char *path;   /* relative to W; "%D" is replaced by D, "%W" by W */
	const char *leak;   /* relative to W0 with "%D"; NULL: nothing to look for */
	bool links;
} refusal;

static void expand(conf_run *run, const char *tmpl, char *buf, size_t size)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 1 < size; p++) {
		const char *sub = NULL;
		if (p[0] == '%' && p[1] == 'D')
			sub = layout(run)->dir;
		else if (p[0] == '%' && p[1] == 'W')
			sub = layout(run)->wd;
		if (sub) {
			o += (size_t)snprintf(buf + o, size - o, "%s", sub);
			if (o >= size)
				o = size - 1;
			p++;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
}

static void write_refused(conf_run *run, const refusal *r)
{
	conf_box *box = planted(run);
	if (!box || (r->links && !need_links(run)))
		return;
	char path[600], leak[600];
	expand(run, r->path, path, sizeof(path));
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->write_file(box->handle, path, "LEAK", 4, layout(run)->wd, &err);
	char expected[700];
	snprintf(expected, sizeof(expected), "write_file(\"%s\") refused (%s)", path, r->name);
	if (rc == MSB_OK)
		conf_fail(run, expected, "it succeeded");
	if (r->leak) {
		expand(run, r->leak, leak, sizeof(leak));
		if (exists(run, box, leak) == 1)
			conf_fail(run, expected, "%s was written", leak);
	}
	msb_error_clear(&err);
}

#define REFUSAL_CASE(fn, name, path, leak, links)                                  \
	static void fn(conf_run *run)                                               \
	{                                                                           \
		static const refusal r = { name, path, leak, links };              \
		write_refused(run, &r);                                             \
	}

REFUSAL_CASE(case_write_refuses_dotdot, "a '..' segment", "../%D-dotdot", "%D-dotdot", false)
REFUSAL_CASE(case_write_refuses_absolute, "an absolute path outside the working directory", "%W-absolute", "%D-absolute", false)
REFUSAL_CASE(case_write_refuses_empty, "the working directory itself, as \"\"", "", NULL, false)
REFUSAL_CASE(case_write_refuses_dot, "the working directory itself, as \".\"", ".", NULL, false)
REFUSAL_CASE(case_write_refuses_empty_segment, "an empty segment", "sub//empty-seg", "%D/sub/empty-seg", false)
REFUSAL_CASE(case_write_refuses_trailing_slash, "a trailing slash", "sub/trailing/", "%D/sub/trailing", false)
REFUSAL_CASE(case_write_refuses_backslash, "a backslash", "sub\\back", "%D/sub\\back", false)
REFUSAL_CASE(case_write_refuses_linked_parent, "a symlinked parent", "link-dir/planted", "%D-outdir/planted", true)

static void case_write_refuses_onto_link(conf_run *run)
{
	static const refusal r = { "landing on a symlink", "link-file", NULL, true };
	write_refused(run, &r);
	if (!conf_decided(run) && layout(run)->links) {
		conf_box *box = conf_main_box(run);
		if (box)
			secret_intact(run, box, "-secret");
	}
}

static void case_working_directory_honoured(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	char sub_wd[600], name[96], in_sub[256], in_w[256];
	snprintf(sub_wd, sizeof(sub_wd), "%s/sub", layout(run)->wd);
	conf_unique(run, "wd", name, sizeof(name));
	snprintf(in_sub, sizeof(in_sub), "%s/sub/%s", layout(run)->dir, name);
	snprintf(in_w, sizeof(in_w), "%s/%s", layout(run)->dir, name);
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->write_file(box->handle, name, "here", 4, sub_wd, &err) != MSB_OK) {
		conf_fail_call(run, "write_file against working directory W/sub to land", &err);
	} else {
		int there = exists(run, box, in_sub), elsewhere = exists(run, box, in_w);
		if (there < 0)
			conf_skip(run, "nothing declared (exec or files_out) can look for the file");
		else if (!there)
			conf_fail(run, "the file under the working directory the call named (W/sub)",
				  "%s is not there%s", in_sub, elsewhere == 1 ? "; it landed in W instead" : "");
	}
	msb_error_clear(&err);
}

/* ---- reads ------------------------------------------------------------------------- */

static void case_stat_describes(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	msb_entry e = { 0 };
	bool found = false;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->stat_file(box->handle, "plain.txt", layout(run)->wd, &e, &found, &err);
	if (rc != MSB_OK)
		conf_fail_call(run, "stat_file(plain.txt) to describe it", &err);
	else if (!found || e.kind != MSB_ENTRY_FILE || e.size_bytes != 5)
		conf_fail(run, "found, a file, 5 bytes", "found=%d kind=%s size=%lld", found,
			  msb_word_name(MSB_AXIS_ENTRY_KIND, e.kind), (long long)e.size_bytes);
	free(e.path);
	e = (msb_entry){ 0 };
	found = true;
	msb_error_clear(&err);
	rc = run->ops->stat_file(box->handle, "not-there", layout(run)->wd, &e, &found, &err);
	if (rc != MSB_OK)
		conf_fail_call(run, "stat_file of a missing path to answer found=false, not an error", &err);
	else if (found)
		conf_fail(run, "found=false for a missing path", "found=true");
	free(e.path);
	msb_error_clear(&err);
}

static void case_stat_link_not_followed(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box || !need_links(run))
		return;
	msb_entry e = { 0 };
	bool found = false;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->stat_file(box->handle, "link-file", layout(run)->wd, &e, &found, &err);
	if (rc != MSB_OK)
		conf_fail_call(run, "stat_file(link-file) to describe the link", &err);
	else if (!found || e.kind != MSB_ENTRY_SYMLINK)
		conf_fail(run, "a symlink described as a symlink", "found=%d kind=%s size=%lld", found,
			  msb_word_name(MSB_AXIS_ENTRY_KIND, e.kind), (long long)e.size_bytes);
	free(e.path);
	msb_error_clear(&err);
}

static void case_stat_linked_parent(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box || !need_links(run))
		return;
	msb_entry e = { 0 };
	bool found = false;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->stat_file(box->handle, "link-dir/secret", layout(run)->wd, &e, &found, &err);
	if (rc == MSB_OK && found)
		conf_fail(run, "stat_file(link-dir/secret) refused or not found: the parent is a link",
			  "it described the file behind the link (kind %s, %lld bytes)",
			  msb_word_name(MSB_AXIS_ENTRY_KIND, e.kind), (long long)e.size_bytes);
	free(e.path);
	msb_error_clear(&err);
}

/*
 * A read the protocol refuses, and the class it refuses it with: MSB_OK as `want` accepts
 * any refusal; otherwise the code must be that one (the seed's OSError for a link at the
 * final component, ValueError for a path through a linked parent or out of W).
 */
static void read_refused_as(conf_run *run, const char *path, const char *why, bool links,
			    msb_errc want)
{
	conf_box *box = planted(run);
	if (!box || (links && !need_links(run)))
		return;
	char p[600];
	expand(run, path, p, sizeof(p));
	msb_buf b = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->read_file(box->handle, p, layout(run)->wd, 1 << 20, &b, &err);
	if (rc == MSB_OK) {
		char expected[700], seen[128];
		snprintf(expected, sizeof(expected), "read_file(\"%s\") refused (%s)", p, why);
		conf_quote(b.data, b.len, seen, sizeof(seen));
		conf_fail(run, expected, "it returned \"%s\"", seen);
	} else if (want != MSB_OK && rc != want) {
		char expected[700];
		snprintf(expected, sizeof(expected), "read_file(\"%s\") refused (%s) with %s", p, why,
			 msb_errc_name(want));
		conf_fail(run, expected, "refused with %s: %s", msb_errc_name(rc), msb_error_message(&err));
	}
	msb_buf_free(&b);
	msb_error_clear(&err);
}

static void read_refused(conf_run *run, const char *path, const char *why, bool links)
{
	read_refused_as(run, path, why, links, MSB_OK);
}

static void case_read_back(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	msb_buf b = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->read_file(box->handle, "plain.txt", layout(run)->wd, 5, &b, &err) != MSB_OK)
		conf_fail_call(run, "read_file(plain.txt, max_bytes 5) of a 5-byte file to succeed", &err);
	else if (b.len != 5 || memcmp(b.data, "plain", 5) != 0)
		conf_fail(run, "\"plain\"", "%zu bytes", b.len);
	msb_buf_free(&b);
	msb_error_clear(&err);
}

static void case_read_refuses_link(conf_run *run)
{
	read_refused_as(run, "link-file", "a link at the final component", true, MSB_E_OS);
}

static void case_read_refuses_linked_parent(conf_run *run)
{
	read_refused_as(run, "link-dir/secret", "a symlinked parent", true, MSB_E_VALUE);
}

static void case_read_refuses_dotdot(conf_run *run)
{
	read_refused(run, "../%D-secret", "a '..' segment", false);
}

/* The protocol resolves a path against W and refuses only what escapes it. */
static void case_read_refuses_absolute(conf_run *run)
{
	read_refused_as(run, "%W-secret", "an absolute path outside the working directory", false,
			MSB_E_VALUE);
}

static void case_read_absolute_inside(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	char p[600];
	snprintf(p, sizeof p, "%s/plain.txt", layout(run)->wd);
	msb_buf b = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->read_file(box->handle, p, layout(run)->wd, 1 << 20, &b, &err);
	char expected[1400];
	snprintf(expected, sizeof expected, "read_file(\"%s\") with working directory %s to read "
		 "plain.txt: an absolute path inside it resolves", p, layout(run)->wd);
	if (rc != MSB_OK)
		conf_fail(run, expected, "refused with %s: %s", msb_errc_name(rc), msb_error_message(&err));
	else if (b.len != 5 || memcmp(b.data, "plain", 5) != 0)
		conf_fail(run, expected, "it returned %zu bytes", b.len);
	msb_buf_free(&b);
	msb_error_clear(&err);
}

/* The caller-creates rule: a write into a working directory that does not exist makes it. */
static void case_write_creates_working_directory(conf_run *run)
{
	conf_box *box = conf_main_box(run);
	if (!box)
		return;
	char wd[700];
	snprintf(wd, sizeof wd, "%s-fresh/deeper", layout(run)->wd);
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->write_file(box->handle, "made.txt", "made", 4, wd, &err);
	char expected[800], rel[300];
	snprintf(expected, sizeof expected, "write_file(made.txt) with absent working directory %s "
		 "to create it and land", wd);
	snprintf(rel, sizeof rel, "%s-fresh/deeper/made.txt", layout(run)->dir);
	if (rc != MSB_OK)
		conf_fail(run, expected, "refused with %s: %s", msb_errc_name(rc), msb_error_message(&err));
	else if (exists(run, box, rel) == 0)
		conf_fail(run, expected, "it reported success, yet %s is not there", rel);
	msb_error_clear(&err);
}

static void case_read_max_bytes(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	msb_buf b = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = run->ops->read_file(box->handle, "plain.txt", layout(run)->wd, 4, &b, &err);
	if (rc == MSB_OK)
		conf_fail(run, "read_file of a 5-byte file with max_bytes 4 refused, never truncated",
			  "it returned %zu bytes", b.len);
	else if (rc != MSB_E_TRANSFER_CAP_EXCEEDED)
		conf_fail(run, "SandboxTransferCapExceeded for a file over max_bytes", "%s: %s",
			  msb_errc_name(rc), msb_error_message(&err));
	msb_buf_free(&b);
	msb_error_clear(&err);
}

/* ---- listing ----------------------------------------------------------------------- */

static const msb_entry *find_entry(const msb_entry_list *l, const char *suffix)
{
	size_t n = strlen(suffix);
	for (size_t i = 0; i < l->len; i++) {
		size_t m = strlen(l->items[i].path);
		if (m >= n && strcmp(l->items[i].path + m - n, suffix) == 0 &&
		    (m == n || l->items[i].path[m - n - 1] == '/'))
			return &l->items[i];
	}
	return NULL;
}

static void case_list_names_entries(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	msb_entry_list l = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->list_dir(box->handle, "", layout(run)->wd, &l, &err) != MSB_OK) {
		conf_fail_call(run, "list_dir of the working directory to succeed", &err);
	} else {
		const msb_entry *plain = find_entry(&l, "plain.txt"), *sub = find_entry(&l, "sub");
		if (!plain || plain->kind != MSB_ENTRY_FILE || !sub || sub->kind != MSB_ENTRY_DIRECTORY)
			conf_fail(run, "plain.txt as a file and sub as a directory",
				  "%zu entries, plain.txt %s, sub %s", l.len, plain ? "kind mismatch" : "missing",
				  sub ? "present" : "missing");
		if (layout(run)->links) {
			const msb_entry *lf = find_entry(&l, "link-file"), *ld = find_entry(&l, "link-dir");
			if (!lf || lf->kind != MSB_ENTRY_SYMLINK || !ld || ld->kind != MSB_ENTRY_SYMLINK)
				conf_fail(run, "link-file and link-dir listed as symlinks",
					  "link-file %s, link-dir %s",
					  lf ? msb_word_name(MSB_AXIS_ENTRY_KIND, lf->kind) : "missing",
					  ld ? msb_word_name(MSB_AXIS_ENTRY_KIND, ld->kind) : "missing");
		}
	}
	msb_entry_list_free(&l);
	msb_error_clear(&err);
}

static void case_list_refuses_link(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box || !need_links(run))
		return;
	msb_entry_list l = { 0 };
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->list_dir(box->handle, "link-dir", layout(run)->wd, &l, &err) == MSB_OK &&
	    find_entry(&l, "secret"))
		conf_fail(run, "list_dir(link-dir) refused: the path is a link",
			  "it listed the directory behind the link (%zu entries, secret among them)", l.len);
	msb_entry_list_free(&l);
	msb_error_clear(&err);
}

/* ---- removal ----------------------------------------------------------------------- */

static void case_remove_removes(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	char rel[256];
	rel_path(run, "doomed/inner.txt", rel, sizeof(rel));
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->write_file(box->handle, "doomed/inner.txt", "x", 1, layout(run)->wd, &err) != MSB_OK) {
		conf_fail_call(run, "write_file(doomed/inner.txt) to land", &err);
	} else if (run->ops->remove(box->handle, "doomed", layout(run)->wd, false, &err) == MSB_OK) {
		conf_fail(run, "remove of a non-empty directory without recursive refused", "it succeeded");
	} else if ((msb_error_clear(&err), run->ops->remove(box->handle, "doomed", layout(run)->wd, true, &err)) != MSB_OK) {
		conf_fail_call(run, "recursive remove(doomed) to succeed", &err);
	} else {
		int left = exists(run, box, rel);
		if (left == 1)
			conf_fail(run, "the tree gone after a recursive remove", "%s is still there", rel);
		else if (left < 0)
			conf_skip(run, "nothing declared (exec or files_out) can look for the tree afterwards");
	}
	msb_error_clear(&err);
}

static void case_remove_link_not_followed(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box || !need_links(run))
		return;
	msb_error err = MSB_ERROR_INIT;
	char rel[256];
	/* A fresh link for this case alone, so the other cases keep theirs. */
	const char *args[] = { layout(run)->dir, NULL };
	if (!conf_sh_ok(run, box, NULL, "a link to remove", "ln -s \"../$1-outdir\" \"$1/link-doomed\"", args))
		return;
	rel_path(run, "link-doomed", rel, sizeof(rel));
	msb_errc rc = run->ops->remove(box->handle, "link-doomed", layout(run)->wd, true, &err);
	if (rc != MSB_OK)
		conf_fail_call(run, "remove(link-doomed) to unlink the link", &err);
	else if (exists(run, box, rel) == 1)
		conf_fail(run, "the link gone", "%s is still there", rel);
	char secret[256];
	snprintf(secret, sizeof(secret), "%s-outdir/secret", layout(run)->dir);
	if (exists(run, box, secret) == 0)
		conf_fail(run, "the directory behind a removed link left alone",
			  "%s was deleted through the link", secret);
	msb_error_clear(&err);
}

static void case_remove_refuses(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	static const char *const paths[] = { "", ".", "../%D-secret", "%W-secret", "link-dir/secret", NULL };
	for (size_t i = 0; paths[i] && !conf_decided(run); i++) {
		if (strncmp(paths[i], "link", 4) == 0 && !layout(run)->links)
			continue;
		char p[600];
		expand(run, paths[i], p, sizeof(p));
		msb_error err = MSB_ERROR_INIT;
		if (run->ops->remove(box->handle, p, layout(run)->wd, true, &err) == MSB_OK) {
			char expected[700];
			snprintf(expected, sizeof(expected), "remove(\"%s\") refused", p);
			conf_fail(run, expected, "it succeeded");
		}
		msb_error_clear(&err);
	}
	char rel[256];
	snprintf(rel, sizeof(rel), "%s-secret", layout(run)->dir);
	if (!conf_decided(run) && exists(run, box, rel) == 0)
		conf_fail(run, "the file outside the working directory left alone", "%s was deleted", rel);
}

/* ---- reclaim (gated by nothing) ------------------------------------------------------ */

static void case_reclaim_missing(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/never-made", layout(run)->wd);
	msb_error err = MSB_ERROR_INIT;
	if (run->ops->reclaim(box->handle, dir, layout(run)->wd, T, &err) != MSB_OK)
		conf_fail_call(run, "reclaim of a directory that is not there to succeed", &err);
	msb_error_clear(&err);
}

static void case_reclaim_removes_tree(conf_run *run)
{
	conf_box *box = planted(run);
	if (!box)
		return;
	char dir[700], rel[256];
	snprintf(dir, sizeof(dir), "%s/scratch", layout(run)->wd);
	rel_path(run, "scratch", rel, sizeof(rel));
	if (layout(run)->links) {
		const char *args[] = { layout(run)->dir, NULL };
		if (!conf_sh_ok(run, box, NULL, "a tree to reclaim",
				"set -e; mkdir -p \"$1/scratch/a/b\"; printf x > \"$1/scratch/a/b/f\"; "
				"ln -s \"../../$1-outdir\" \"$1/scratch/out\"",
				args))
			return;
	} else {
		msb_error werr = MSB_ERROR_INIT;
		if (!conf_has(run, MSB_CAP_FILES_IN) ||
		    run->ops->write_file(box->handle, "scratch/a/b/f", "x", 1, layout(run)->wd, &werr) != MSB_OK) {
			msb_error_clear(&werr);
			conf_skip(run, "nothing declared (exec or files_in) can make a tree to reclaim");
			return;
		}
	}
	msb_error err = MSB_ERROR_INIT;
	int left = -1;
	if (run->ops->reclaim(box->handle, dir, layout(run)->wd, T, &err) != MSB_OK)
		conf_fail_call(run, "reclaim of a present tree to succeed", &err);
	else if ((left = exists(run, box, rel)) == 1)
		conf_fail(run, "the tree gone after reclaim", "%s is still there", rel);
	else if (left < 0)
		conf_skip(run, "nothing declared (exec or files_out) can look for the tree afterwards");
	char secret[256];
	snprintf(secret, sizeof(secret), "%s-outdir/secret", layout(run)->dir);
	if (layout(run)->links && exists(run, box, secret) == 0)
		conf_fail(run, "a link inside the reclaimed tree unlinked, not followed",
			  "%s, behind the link, was deleted", secret);
	msb_error_clear(&err);
}

#define IN MSB_BIT(MSB_CAP_FILES_IN)
#define OUT MSB_BIT(MSB_CAP_FILES_OUT)
#define LIST MSB_BIT(MSB_CAP_FILES_LIST)
#define DEL MSB_BIT(MSB_CAP_FILES_DELETE)

static const conf_case files_cases[] = {
	{ "write-reads-back", IN, case_write_reads_back },
	{ "write-binary-round-trip", IN, case_write_binary_round_trip },
	{ "write-refuses-dotdot", IN, case_write_refuses_dotdot },
	{ "write-refuses-absolute", IN, case_write_refuses_absolute },
	{ "write-refuses-working-directory", IN, case_write_refuses_empty },
	{ "write-refuses-dot", IN, case_write_refuses_dot },
	{ "write-refuses-empty-segment", IN, case_write_refuses_empty_segment },
	{ "write-refuses-trailing-slash", IN, case_write_refuses_trailing_slash },
	{ "write-refuses-backslash", IN, case_write_refuses_backslash },
	{ "write-refuses-linked-parent", IN, case_write_refuses_linked_parent },
	{ "write-refuses-onto-link", IN, case_write_refuses_onto_link },
	{ "working-directory-honoured", IN, case_working_directory_honoured },
	{ "stat-describes", OUT, case_stat_describes },
	{ "stat-link-not-followed", OUT, case_stat_link_not_followed },
	{ "stat-refuses-linked-parent", OUT, case_stat_linked_parent },
	{ "read-back", OUT, case_read_back },
	{ "read-refuses-link", OUT, case_read_refuses_link },
	{ "read-refuses-linked-parent", OUT, case_read_refuses_linked_parent },
	{ "read-refuses-dotdot", OUT, case_read_refuses_dotdot },
	{ "read-refuses-absolute", OUT, case_read_refuses_absolute },
	{ "read-absolute-inside-resolves", OUT, case_read_absolute_inside },
	{ "write-creates-working-directory", IN, case_write_creates_working_directory },
	{ "read-max-bytes-refused", OUT, case_read_max_bytes },
	{ "list-names-entries", LIST, case_list_names_entries },
	{ "list-refuses-link", LIST, case_list_refuses_link },
	{ "remove-removes", IN | DEL, case_remove_removes },
	{ "remove-link-not-followed", DEL, case_remove_link_not_followed },
	{ "remove-refuses", DEL, case_remove_refuses },
	{ "reclaim-missing-is-success", 0, case_reclaim_missing },
	{ "reclaim-removes-tree", 0, case_reclaim_removes_tree },
};

/* No `inapplicable`: reclaim is gated by nothing, so the suite always applies. */
const conf_suite conf_suite_files = {
	.name = "files",
	.setup = files_setup,
	.cases = files_cases,
	.n_cases = sizeof(files_cases) / sizeof(files_cases[0]),
};
