/*
 * driver_box.c — one sandbox's footprint in the state directory: its name, paths, lock,
 * metadata and pid file.
 *
 * Key strings come from the host's request context and may carry anything a conversation
 * id can; they never become a path component. The name is a hash, and the metadata stores
 * the fields hex-encoded, so no byte of a key is ever interpreted by the filesystem or by a
 * line parser.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver_internal.h"
#include "../lib/proc_stat.h"
#include "sha256.h"

static const char *const meta_names[4] = { "scope", "thread", "agent_dir", "call_id" };

void driver_key_from(const msb_key *key, driver_key *out)
{
	const char *f[4] = { key->scope, key->thread_id, key->agent_dir, key->call_id };
	for (int i = 0; i < 4; i++)
		out->field[i] = f[i] ? f[i] : "";
}

static void hash_field(msb_sha256 *s, const char *v)
{
	/* Length-prefixed, so ("ab","c") and ("a","bc") hash apart. */
	uint64_t n = strlen(v);
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(n >> (8 * i));
	msb_sha256_update(s, len, sizeof len);
	msb_sha256_update(s, v, n);
}

/*
 * 2 * `bytes` hex digits of SHA-256 over a domain tag, the state directory and the first
 * `fields` key fields (plus `kind` when not NULL), each length-prefixed.
 */
static void hash_part(const char *tag, const char *state_dir, const driver_key *k, int fields,
		      const char *kind, size_t bytes, char *out)
{
	msb_sha256 s;
	msb_sha256_init(&s);
	hash_field(&s, tag);
	hash_field(&s, state_dir ? state_dir : "");
	for (int i = 0; i < fields; i++)
		hash_field(&s, k->field[i]);
	if (kind)
		hash_field(&s, kind);
	unsigned char d[32];
	msb_sha256_final(&s, d);
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

size_t driver_name_prefix(const char *state_dir, const driver_key *k, bool scope_only,
			  char out[DRIVER_PREFIX_MAX])
{
	memcpy(out, "sk-", 3);
	hash_part("msb-scope-v2", state_dir, k, 2, NULL, 4, out + 3);
	if (scope_only)
		return 11;
	hash_part("msb-key-v2", state_dir, k, 4, NULL, 4, out + 11);
	return 19;
}

void msb_driver_sandbox_name(const char *state_dir, const msb_key *key, const char *kind,
			     char name[36])
{
	driver_key k;
	driver_key_from(key, &k);
	driver_name_prefix(state_dir, &k, false, name);
	hash_part("msb-sandbox-v2", state_dir, &k, 4, kind ? kind : "", 8, name + 19);
}

msb_errc driver_paths_make(const msb_backend_instance *inst, const char *name, driver_paths *p,
			   msb_error *err)
{
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "%s", name);
	const char *state = inst->config.state_dir;
	char lockname[48];
	snprintf(lockname, sizeof lockname, "%s.lock", name);
	p->dir = msb_driver_path(state, name);
	p->lock = msb_driver_path(state, lockname);
	if (p->dir) {
		p->sock = msb_driver_path(p->dir, "agent.sock");
		p->pid = msb_driver_path(p->dir, "agent.pid");
		p->work = msb_driver_path(p->dir, "work");
		p->meta = msb_driver_path(p->dir, "meta");
		p->egress_dir = msb_driver_path(p->dir, "egress");
	}
	if (p->egress_dir)
		p->egress_sock = msb_driver_path(p->egress_dir, "px");
	if (!p->dir || !p->lock || !p->sock || !p->pid || !p->work || !p->meta || !p->egress_sock) {
		driver_paths_free(p);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	p->box = (msb_driver_box){ .name = p->name, .dir = p->dir, .socket_path = p->sock,
				   .pid_path = p->pid, .work_dir = p->work, .config = &inst->config };
	return MSB_OK;
}

void driver_paths_free(driver_paths *p)
{
	free(p->dir);
	free(p->sock);
	free(p->pid);
	free(p->work);
	free(p->meta);
	free(p->lock);
	free(p->egress_dir);
	free(p->egress_sock);
	memset(p, 0, sizeof *p);
}

int driver_lock(const driver_paths *p, msb_error *err)
{
	/*
	 * The lock file is removed at disposal while held; a waiter that then gets the lock
	 * holds an inode nobody else can find, so it checks and starts again on the new one.
	 */
	for (int attempt = 0; attempt < 100; attempt++) {
		int fd = open(p->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			break;
		while (flock(fd, LOCK_EX) < 0) {
			if (errno != EINTR) {
				int e = errno;
				close(fd);
				msb_error_set_errno(err, MSB_E_BACKEND, e, "sandbox %s: flock %s",
						    p->name, p->lock);
				return -1;
			}
		}
		struct stat held, named;
		if (fstat(fd, &held) == 0 && stat(p->lock, &named) == 0 &&
		    held.st_ino == named.st_ino && held.st_dev == named.st_dev)
			return fd;
		close(fd);
	}
	msb_error_set_errno(err, MSB_E_BACKEND, errno, "sandbox %s: cannot take its lock %s",
			    p->name, p->lock);
	return -1;
}

void driver_unlock_remove(const driver_paths *p, int fd)
{
	unlink(p->lock);
	close(fd);
}

msb_errc driver_meta_write(const driver_paths *p, const driver_key *key, const char *kind,
			   msb_error *err)
{
	FILE *f = fopen(p->meta, "wxe");
	if (!f)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "sandbox %s: writing %s",
					   p->name, p->meta);
	/* The scope and thread names are the host's business alone: owner only, whatever the
	 * umask (the directory is 0700 too; this holds if it is ever opened up). */
	fchmod(fileno(f), 0600);
	const char *values[5] = { key->field[0], key->field[1], key->field[2], key->field[3], kind };
	static const char *const names[5] = { "scope", "thread", "agent_dir", "call_id", "kind" };
	for (int i = 0; i < 5; i++) {
		fprintf(f, "%s ", names[i]);
		for (const unsigned char *c = (const unsigned char *)values[i]; *c; c++)
			fprintf(f, "%02x", *c);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "sandbox %s: writing %s",
					   p->name, p->meta);
	return MSB_OK;
}

/* Whether the hex-encoded `hex` (up to end of line) spells `value`. */
static bool hex_equals(const char *hex, const char *value)
{
	for (const unsigned char *v = (const unsigned char *)value; *v; v++, hex += 2) {
		unsigned x;
		if (sscanf(hex, "%2x", &x) != 1 || x != *v)
			return false;
	}
	return *hex == '\n' || *hex == '\0';
}

bool driver_meta_matches(const driver_paths *p, const driver_key *key, bool scope_only)
{
	FILE *f = fopen(p->meta, "re");
	if (!f)
		return false;
	char *line = NULL;
	size_t cap = 0;
	int matched = 0, wanted = scope_only ? 2 : 4;
	while (getline(&line, &cap, f) > 0) {
		for (int i = 0; i < wanted; i++) {
			size_t n = strlen(meta_names[i]);
			if (!strncmp(line, meta_names[i], n) && line[n] == ' ' &&
			    hex_equals(line + n + 1, key->field[i]))
				matched++;
		}
	}
	free(line);
	fclose(f);
	return matched == wanted;
}

bool msb_driver_pid_running(pid_t pid)
{
	unsigned long long st = 0;
	char state = 0;
	return msb_proc_start_time(pid, &st, &state) && state != 'Z' && state != 'X';
}

msb_errc msb_driver_write_pid(const msb_driver_box *box, pid_t pid, msb_error *err)
{
	unsigned long long st = 0;
	char state;
	if (!msb_proc_start_time(pid, &st, &state))
		return msb_error_set(err, MSB_E_BACKEND, "sandbox %s: process %ld is already gone",
				     box->name, (long)pid);
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", box->pid_path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "sandbox %s: writing %s",
					   box->name, tmp);
	fprintf(f, "%ld %llu\n", (long)pid, st);
	if (fclose(f) != 0 || rename(tmp, box->pid_path) != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "sandbox %s: writing %s",
					   box->name, box->pid_path);
	return MSB_OK;
}

pid_t msb_driver_read_live_pid(const msb_driver_box *box)
{
	FILE *f = fopen(box->pid_path, "re");
	if (!f)
		return 0;
	long pid = 0;
	unsigned long long recorded = 0, now = 0;
	int n = fscanf(f, "%ld %llu", &pid, &recorded);
	fclose(f);
	char state = 0;
	if (n != 2 || pid <= 0 || !msb_proc_start_time((pid_t)pid, &now, &state) || now != recorded)
		return 0;
	return state == 'Z' || state == 'X' ? 0 : (pid_t)pid;
}
