/*
 * plugins/qemu/qemu_template.c — templates (issue 22): boot a guest once, save it at a
 * quiescent ready point, and start each later sandbox of the same inputs as a clone of it.
 *
 * A template is keyed by a SHA-256 of everything that makes the guest what it is (the
 * kernel, init, agent, busybox and modules by file identity, the image's disk, memory,
 * vCPUs, the device set, the agent's argv, the warm-up commands, RAM sharing, QEMU and msb
 * themselves), under <state_dir>/templates/<key>/: any input changed is another key, so a
 * new template; a stale one is never reused.
 *
 * Made: the guest boots as usual with its RAM in a file (memory-backend-file, share=on) and
 * a monitor; once its agents answer, the warm-up commands run (`python3 -c pass`: the page
 * cache and the interpreter's first-run work end up in the template), then QMP `stop` and
 * `migrate` to the template's state file. With x-ignore-shared the state leaves the RAM
 * out: it is the file. The state goes to an fd handed over the monitor (getfd) rather than
 * `exec:cat > FILE` (QEMU 7.2 has no `file:`): QEMU runs as nobody by then and needs no
 * path it could reach.
 *
 * Cloned: QEMU starts with the same machine, its RAM the template's file mapped privately
 * (share=off: the clones share its pages read-only, each copies a page it writes) and
 * `-incoming defer`, then `migrate-incoming` from the state; the guest runs on from where the
 * template stopped. Its channels are its own (its sockets in its own directory); then it
 * takes its identity before anyone can use it: host entropy credited and the kernel's RNG
 * reseeded, the clock set, the hostname its sandbox's name (msb-qemu-init --identity).
 * Nothing secret is in a template: it is made before any request of a sandbox reaches it.
 *
 * Checked: the state file's SHA-256 is recorded when the template is made and compared
 * before each restore; a template that fails that, or whose restore QEMU refuses, is
 * refused, removed, and the caller boots instead, saying why.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <msb/agent.h>
#include <msb/driver.h>

#include "qemu_internal.h"
#include "qemu_qmp.h"
#include "vminit.h"

/* Bumped when what a template holds or how it is restored changes. */
#define TEMPLATE_FORMAT "msb-qemu-template-1"
#define QMP_TIMEOUT 10.0
#define SAVE_TIMEOUT 120.0
#define IDENTITY_TIMEOUT 10.0
#define RESTORE_TIMEOUT 30.0

typedef struct digest {
	EVP_MD_CTX *md;
} digest;

static void feed(digest *d, const char *label, const void *data, size_t len)
{
	uint64_t n = len;
	EVP_DigestUpdate(d->md, label, strlen(label) + 1);
	EVP_DigestUpdate(d->md, &n, sizeof n);
	EVP_DigestUpdate(d->md, data, len);
}

static void feed_str(digest *d, const char *label, const char *s)
{
	feed(d, label, s ? s : "", s ? strlen(s) : 0);
}

/* A file by identity: path, device, inode, size, mtime. A replaced file is a new input. */
static void feed_file(digest *d, const char *label, const char *dir, const char *leaf)
{
	char path[4200];
	snprintf(path, sizeof path, "%s%s%s", dir, leaf ? "/" : "", leaf ? leaf : "");
	struct stat st;
	memset(&st, 0, sizeof st);
	int64_t id[5] = { -1, 0, 0, 0, 0 };
	if (stat(path, &st) == 0) {
		id[0] = (int64_t)st.st_dev;
		id[1] = (int64_t)st.st_ino;
		id[2] = (int64_t)st.st_size;
		id[3] = (int64_t)st.st_mtim.tv_sec;
		id[4] = (int64_t)st.st_mtim.tv_nsec;
	}
	feed_str(d, label, path);
	feed(d, "id", id, sizeof id);
}

static void hex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* The template key for these inputs, as 32 hex digits. */
static bool template_key(const qemu_ctx *ctx, const qemu_template_input *in, qemu_accel accel,
			 char out[65])
{
	digest d = { EVP_MD_CTX_new() };
	if (!d.md || !EVP_DigestInit_ex(d.md, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(d.md);
		return false;
	}
	feed_str(&d, "format", TEMPLATE_FORMAT);
	feed_str(&d, "msb", PACKAGE_VERSION);
	feed_file(&d, "qemu", ctx->qemu, NULL);
	feed_file(&d, "kernel", ctx->guest_dir, "vmlinuz");
	feed_file(&d, "modules", ctx->guest_dir, "modules");
	feed_file(&d, "busybox", ctx->guest_dir, "busybox");
	feed_file(&d, "applets", ctx->guest_dir, "busybox.applets");
	feed_file(&d, "init", ctx->init_path, NULL);
	feed_file(&d, "agent", in->agent_path, NULL);
	feed(&d, "agent_args", in->agent_args, in->args_len);
	feed_str(&d, "block", in->block);
	if (in->block)
		feed_file(&d, "block_id", in->block, NULL);
	uint64_t shape[5] = { ctx->memory, 1 /* vCPUs */, (uint64_t)accel, MSB_QEMU_PORTS,
			      ctx->template_share_ram };
	feed(&d, "shape", shape, sizeof shape);
	const char *verbose = getenv("MSB_QEMU_VERBOSE");
	feed_str(&d, "verbose", verbose && *verbose ? "1" : "");
	for (char **w = ctx->template_warmup; w && *w; w++)
		feed_str(&d, "warmup", *w);
	unsigned char md[32];
	unsigned int len = 0;
	bool ok = EVP_DigestFinal_ex(d.md, md, &len) && len == sizeof md;
	EVP_MD_CTX_free(d.md);
	/* 128 bits name it: the VM's socket paths under it must stay within sun_path. */
	if (ok)
		hex(md, 16, out);
	return ok;
}

/* The SHA-256 of a file's contents, as hex, read in bounded pieces. */
bool qemu_file_sha256(const char *path, char out[65])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	static __thread unsigned char buf[1 << 16];
	ssize_t n;
	while (ok && (n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0 && EVP_DigestUpdate(md, buf, (size_t)n);
	}
	unsigned char d[32];
	unsigned int len = 0;
	ok = ok && EVP_DigestFinal_ex(md, d, &len) && len == sizeof d;
	EVP_MD_CTX_free(md);
	close(fd);
	if (ok)
		hex(d, sizeof d, out);
	return ok;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A box on another directory: the template's own VM while it is being made. */
typedef struct side_box {
	msb_driver_box box;
	char dir[3400], sock[3500], pid[3500];
} side_box;

static void side_box_init(side_box *s, const msb_driver_box *like, const char *dir)
{
	s->box = *like;
	snprintf(s->dir, sizeof s->dir, "%s", dir);
	snprintf(s->sock, sizeof s->sock, "%s/agent.sock", dir);
	snprintf(s->pid, sizeof s->pid, "%s/qemu.pid", dir);
	s->box.dir = s->dir;
	s->box.socket_path = s->sock;
	s->box.pid_path = s->pid;
	s->box.greeted = NULL;
}

/* What a VM left in its directory once it is gone, but for its console and errors. */
static void remove_vm_files(const char *dir)
{
	static const char *const leaves[] = { "agent.sock", "qmp.sock", "qemu.pid", "relay.pid",
					      "vm0.sock", "vm1.sock", "vm2.sock", "vm3.sock",
					      "vm4.sock", "vm5.sock", "vm6.sock", "vm7.sock" };
	for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
		char *p = msb_driver_path(dir, leaves[i]);
		if (p)
			unlink(p);
		free(p);
	}
}

/* Run each warm-up command in the template's guest; any that fails fails the template. */
static msb_errc warm_up(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err)
{
	if (!ctx->template_warmup || !ctx->template_warmup[0])
		return MSB_OK;
	msb_agent_client *client = NULL;
	msb_errc rc = msb_agent_client_open_unix(box->socket_path, QMP_TIMEOUT, &client, err);
	for (char **w = ctx->template_warmup; rc == MSB_OK && *w; w++) {
		const char *argv[] = { "sh", "-c", *w, NULL };
		msb_exec_request req = { .argv = argv, .timeout = ctx->boot_timeout };
		msb_exec_result res;
		memset(&res, 0, sizeof res);
		rc = msb_agent_exec(client, &req, NULL, &res, err);
		if (rc == MSB_OK && (res.exit_code != 0 || res.timed_out))
			rc = msb_error_set(err, MSB_E_BACKEND, "backend qemu: template warm-up "
					   "command '%s' exited %d%s", *w, res.exit_code,
					   res.timed_out ? " (timed out)" : "");
		msb_buf_free(&res.out);
		msb_buf_free(&res.err);
	}
	msb_agent_client_close(client);
	return rc;
}

static msb_errc qmp_do(qemu_qmp *q, const char *cmd, msb_error *err)
{
	json_t *ret = NULL;
	msb_errc rc = qemu_qmp_call(q, cmd, QMP_TIMEOUT, &ret, err);
	json_decref(ret);
	return rc;
}

#define IGNORE_SHARED "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":" \
	"[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}"
#define NO_IGNORE_SHARED "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":" \
	"[{\"capability\":\"x-ignore-shared\",\"state\":false}]}}"

msb_errc qemu_vm_save(const qemu_ctx *ctx, const msb_driver_box *box, const char *state,
		      bool ignore_shared, msb_error *err)
{
	char *qmp_path = msb_driver_path(box->dir, "qmp.sock");
	qemu_qmp *q = NULL;
	msb_errc rc = qmp_path ? qemu_qmp_open(qmp_path, QMP_TIMEOUT, &q, err)
			       : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	free(qmp_path);
	int fd = -1;
	if (rc == MSB_OK)
		rc = qmp_do(q, "{\"execute\":\"stop\"}", err);
	/*
	 * Said either way: a clone's QEMU keeps the capability its restore set, and a state
	 * saved with it carries per-block fields that only a destination with it reads (a
	 * snapshot of a clone is loaded without it).
	 */
	if (rc == MSB_OK)
		rc = qmp_do(q, ignore_shared ? IGNORE_SHARED : NO_IGNORE_SHARED, err);
	if (rc == MSB_OK && (fd = open(state, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: %s", state);
	if (rc == MSB_OK)
		rc = qemu_qmp_pass_fd(q, "msbstate", fd, QMP_TIMEOUT, err);
	if (fd >= 0)
		close(fd);
	if (rc == MSB_OK)
		rc = qmp_do(q, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:msbstate\"}}", err);
	char status[64] = "";
	static const char *const done[] = { "completed", NULL };
	static const char *const failed[] = { "failed", "cancelled", NULL };
	if (rc == MSB_OK)
		rc = qemu_qmp_status_until(q, "query-migrate", done, failed, SAVE_TIMEOUT, status,
					   sizeof status, err);
	(void)ctx;
	qemu_qmp_close(q);
	return rc;
}

msb_errc qemu_vm_cont(const msb_driver_box *box, msb_error *err)
{
	char *qmp_path = msb_driver_path(box->dir, "qmp.sock");
	qemu_qmp *q = NULL;
	msb_errc rc = qmp_path ? qemu_qmp_open(qmp_path, QMP_TIMEOUT, &q, err)
			       : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	free(qmp_path);
	if (rc == MSB_OK)
		rc = qmp_do(q, "{\"execute\":\"cont\"}", err);
	qemu_qmp_close(q);
	return rc;
}

msb_errc qemu_vm_restore(const qemu_ctx *ctx, const msb_driver_box *box, const char *initrd,
			 const char *block, const char *ram, bool ram_backend, const char *state,
			 msb_error *err)
{
	qemu_launch_extra x = { .mem_path = ram, .mem_share = false, .qmp = true,
				.incoming = true, .ram_backend = ram_backend };
	msb_errc rc = qemu_launch_box(ctx, box, initrd, block, &x, err);
	char *qmp_path = msb_driver_path(box->dir, "qmp.sock");
	qemu_qmp *q = NULL;
	if (rc == MSB_OK)
		rc = qmp_path ? qemu_qmp_open(qmp_path, QMP_TIMEOUT, &q, err)
			      : msb_error_set(err, MSB_E_NOMEM, "out of memory");
	free(qmp_path);
	if (rc == MSB_OK && ram)
		rc = qmp_do(q, IGNORE_SHARED, err);
	int fd = -1;
	if (rc == MSB_OK && (fd = open(state, O_RDONLY | O_CLOEXEC)) < 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: %s", state);
	if (rc == MSB_OK)
		rc = qemu_qmp_pass_fd(q, "msbstate", fd, QMP_TIMEOUT, err);
	if (fd >= 0)
		close(fd);
	if (rc == MSB_OK)
		rc = qmp_do(q, "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":"
			    "\"fd:msbstate\"}}", err);
	char status[64] = "";
	/*
	 * The state was saved stopped, so the loaded VM stays paused ("inmigrate" until then):
	 * `cont` runs it. QEMU that cannot load the state exits: the monitor closes and this
	 * says so.
	 */
	static const char *const done[] = { "paused", "running", NULL };
	static const char *const failed[] = { "shutdown", "internal-error", "guest-panicked",
					      "io-error", "postmigrate", NULL };
	if (rc == MSB_OK)
		rc = qemu_qmp_status_until(q, "query-status", done, failed, RESTORE_TIMEOUT, status,
					   sizeof status, err);
	if (rc == MSB_OK && strcmp(status, "running"))
		rc = qmp_do(q, "{\"execute\":\"cont\"}", err);
	qemu_qmp_close(q);
	if (rc != MSB_OK) {
		char *errp = msb_driver_path(box->dir, "qemu.err");
		char tail[400] = "";
		if (errp)
			msb_driver_file_tail(errp, tail, sizeof tail);
		free(errp);
		if (tail[0]) {
			msb_error more = MSB_ERROR_INIT;
			msb_error_set(&more, rc, "%s; QEMU said: %s", msb_error_message(err), tail);
			msb_error_clear(err);
			*err = more;
		}
	}
	return rc;
}

/* The clone's own identity, through its agent, before anyone else reaches it. */
static msb_errc take_identity(const msb_driver_box *box, msb_error *err)
{
	msb_qemu_identity rec;
	memset(&rec, 0, sizeof rec);
	memcpy(rec.magic, MSB_QEMU_IDENTITY_MAGIC, sizeof rec.magic);
	if (getrandom(rec.seed, sizeof rec.seed, 0) != (ssize_t)sizeof rec.seed)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: getrandom");
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	rec.realtime_sec = now.tv_sec;
	rec.realtime_nsec = now.tv_nsec;
	snprintf(rec.hostname, sizeof rec.hostname, "%s", box->name);
	msb_agent_client *client = NULL;
	msb_errc rc = msb_agent_client_open_unix(box->socket_path, IDENTITY_TIMEOUT, &client, err);
	const char *argv[] = { MSB_QEMU_GUEST_INIT, "--identity", NULL };
	msb_exec_request req = { .argv = argv, .working_directory = "/", .timeout = IDENTITY_TIMEOUT,
				 .stdin_data = &rec, .stdin_len = sizeof rec };
	msb_exec_result res;
	memset(&res, 0, sizeof res);
	if (rc == MSB_OK)
		rc = msb_agent_exec(client, &req, NULL, &res, err);
	if (rc == MSB_OK && res.exit_code != 0)
		rc = msb_error_set(err, MSB_E_BACKEND, "backend qemu: sandbox %s: the clone could "
				   "not take its identity (exit %d): %.*s", box->name, res.exit_code,
				   (int)(res.err.len < 300 ? res.err.len : 300),
				   res.err.data ? (const char *)res.err.data : "");
	msb_buf_free(&res.out);
	msb_buf_free(&res.err);
	msb_agent_client_close(client);
	memset(&rec, 0, sizeof rec);
	return rc;
}

msb_errc qemu_vm_clone_ready(const qemu_ctx *ctx, const msb_driver_box *box, msb_error *err)
{
	msb_errc rc = qemu_start_relay(ctx, box, err);
	if (rc == MSB_OK)
		rc = take_identity(box, err);
	/*
	 * Once more on a relay of its own: on a loaded host the restore's port events can race
	 * the first relay's greeting (a HELLO answered on a stream QEMU then closes; seen as a
	 * protocol error or a reset). The guest's agents serve a port again after its peer
	 * goes, as they do for any reconnecting host.
	 */
	for (int retry = 0; rc != MSB_OK && retry < 2; retry++) {
		msb_error_clear(err);
		qemu_stop_relay(box);
		nanosleep(&(struct timespec){ 0, 300 * 1000 * 1000 }, NULL);
		rc = qemu_start_relay(ctx, box, err);
		if (rc == MSB_OK)
			rc = take_identity(box, err);
	}
	return rc;
}

/* Make the template for `key` at `dir`: boot, warm up, save, then move it into place. */
static msb_errc make_template(const qemu_ctx *ctx, const msb_driver_box *box,
			      const qemu_template_input *in, const char *dir, msb_error *err)
{
	char build[3300];
	snprintf(build, sizeof build, "%s.b%ld", dir, (long)getpid());
	rm_tree(build);
	if (mkdir(build, 0700) < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: cannot make "
					   "%s", build);
	side_box tb;
	side_box_init(&tb, box, build);
	char initrd[3500], ram[3500], state[3500], ready[3500];
	snprintf(initrd, sizeof initrd, "%s/initramfs.cpio", build);
	snprintf(ram, sizeof ram, "%s/ram", build);
	snprintf(state, sizeof state, "%s/state", build);
	snprintf(ready, sizeof ready, "%s/ready", build);
	msb_errc rc = in->block ? qemu_guest_initramfs_image(ctx, in->agent_path, initrd,
							     in->agent_args, in->args_len, err)
				: qemu_guest_initramfs(ctx, in->agent_path, initrd, in->agent_args,
						       in->args_len, false, err);
	qemu_launch_extra x = { .mem_path = ctx->template_share_ram ? ram : NULL,
				.mem_share = true, .qmp = true,
				.ram_backend = !ctx->template_share_ram };
	if (rc == MSB_OK)
		rc = qemu_launch_box(ctx, &tb.box, initrd, in->block, &x, err);
	/* Saved only once every agent has answered: no greeting may be in flight. */
	if (rc == MSB_OK)
		rc = qemu_start_relay_all(ctx, &tb.box, true, err);
	if (rc == MSB_OK)
		rc = warm_up(ctx, &tb.box, err);
	if (rc == MSB_OK)
		rc = qemu_vm_save(ctx, &tb.box, state, ctx->template_share_ram, err);
	qemu_kill_box(&tb.box);
	remove_vm_files(build);
	char sum[65];
	if (rc == MSB_OK && !qemu_file_sha256(state, sum))
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: reading %s", state);
	if (rc == MSB_OK) {
		FILE *f = fopen(ready, "we");
		bool ok = f && fprintf(f, "%s\n", sum) > 0;
		ok = f && fclose(f) == 0 && ok;
		if (!ok)
			rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: %s", ready);
	}
	/* Another process may have made the same template meanwhile: theirs serves. */
	if (rc == MSB_OK && rename(build, dir) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: cannot move the "
					 "template into %s", dir);
	rm_tree(build);
	return rc;
}

/* Whether the template at `dir` is whole: its state's digest is the one recorded. */
static msb_errc template_check(const char *dir, msb_error *err)
{
	char ready[3300], state[3300], want[80] = "", got[65];
	snprintf(ready, sizeof ready, "%s/ready", dir);
	snprintf(state, sizeof state, "%s/state", dir);
	FILE *f = fopen(ready, "re");
	if (!f || !fgets(want, sizeof want, f)) {
		if (f)
			fclose(f);
		return msb_error_set(err, MSB_E_BACKEND, "backend qemu: template %s refused: no "
				     "record of its state's digest", dir);
	}
	fclose(f);
	want[strcspn(want, "\n")] = '\0';
	if (!qemu_file_sha256(state, got))
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend qemu: template %s "
					   "refused: its state cannot be read", dir);
	if (strcmp(want, got))
		return msb_error_set(err, MSB_E_BACKEND, "backend qemu: template %s refused: its "
				     "state's SHA-256 is %.12s…, not the %.12s… recorded when it was "
				     "made (corrupt or altered)", dir, got, want);
	return MSB_OK;
}

msb_errc qemu_template_start(const qemu_ctx *ctx, const msb_driver_box *box,
			     const qemu_template_input *in, char *why, size_t why_size)
{
	qemu_accel accel = qemu_accel_resolve(ctx, box->config->state_dir);
	char key[65], root[3100], dir[3200];
	if (strlen(box->config->state_dir) > 3000) {
		snprintf(why, why_size, "backend qemu: state_dir too long for templates");
		return MSB_E_BACKEND;
	}
	if (!template_key(ctx, in, accel, key)) {
		snprintf(why, why_size, "backend qemu: the template key could not be computed");
		return MSB_E_BACKEND;
	}
	snprintf(root, sizeof root, "%s/templates", box->config->state_dir);
	snprintf(dir, sizeof dir, "%s/%s", root, key);
	if (mkdir(root, 0700) < 0 && errno != EEXIST) {
		snprintf(why, why_size, "backend qemu: cannot make %s: %s", root, strerror(errno));
		return MSB_E_BACKEND;
	}
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = MSB_OK;
	struct stat st;
	if (stat(dir, &st) != 0)
		rc = make_template(ctx, box, in, dir, &err);
	if (rc == MSB_OK && (rc = template_check(dir, &err)) != MSB_OK)
		rm_tree(dir); /* refused: the next acquire makes it anew */
	char initrd[3300], ram[3300], state[3300];
	snprintf(initrd, sizeof initrd, "%s/initramfs.cpio", dir);
	snprintf(ram, sizeof ram, "%s/ram", dir);
	snprintf(state, sizeof state, "%s/state", dir);
	bool launched = false;
	if (rc == MSB_OK) {
		launched = true;
		rc = qemu_vm_restore(ctx, box, initrd, in->block,
				     ctx->template_share_ram ? ram : NULL, !ctx->template_share_ram,
				     state, &err);
		if (rc != MSB_OK) {
			rm_tree(dir);
			msb_error more = MSB_ERROR_INIT;
			msb_error_set(&more, rc, "backend qemu: template %s refused and removed: %s",
				      dir, msb_error_message(&err));
			msb_error_clear(&err);
			err = more;
		}
	}
	if (rc == MSB_OK)
		rc = qemu_vm_clone_ready(ctx, box, &err);
	if (rc == MSB_OK)
		rc = qemu_vm_kind_write(box->dir, true, in->block, &err);
	if (rc != MSB_OK) {
		snprintf(why, why_size, "%s", msb_error_message(&err));
		if (launched) {
			qemu_kill_box(box);
			remove_vm_files(box->dir);
			/* The clone's console stays for diagnosis: the boot writes a new one. */
			char *from = msb_driver_path(box->dir, "console.log");
			char *to = msb_driver_path(box->dir, "console.clone.log");
			if (from && to)
				rename(from, to);
			free(from);
			free(to);
		}
	}
	msb_error_clear(&err);
	return rc;
}

void qemu_template_fallback(const qemu_ctx *ctx, const msb_driver_box *box, const char *why)
{
	char line[1400];
	snprintf(line, sizeof line, "backend qemu: sandbox %s: no template clone, booting instead: "
		 "%s", box->name, why);
	if (ctx->has_host && ctx->host.log)
		ctx->host.log(ctx->host.ctx, MSB_LOG_WARNING, line);
	else
		fprintf(stderr, "%s\n", line);
	char *path = msb_driver_path(box->dir, "template.fallback");
	FILE *f = path ? fopen(path, "we") : NULL;
	if (f) {
		fprintf(f, "%s\n", why);
		fclose(f);
	}
	free(path);
}
