/*
 * process_uid.c — one unprivileged uid per `process` sandbox, from a configured range.
 *
 * Why one each, not one shared: two sandboxes of one uid can signal each other's
 * processes and reach whatever the other leaves reachable by uid — a file, a socket, a
 * SysV object, a process not yet made undumpable. A uid of its own makes every such
 * check a refusal by the kernel, whatever other layer fails.
 *
 * The records are host-wide, in PROCESS_UID_REGISTRY/<uid>, each holding its sandbox's
 * directory (state dir and name), made with O_EXCL under <registry>.lock: two msb processes
 * — two configurations with different state directories included — never hand one uid to
 * two sandboxes. The sandbox's directory records its uid too (<dir>/uid): that is what
 * disposal reads to give it back. A record naming a sandbox directory that is gone is a
 * crash's leftover and is reclaimed when the scan meets it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process_uid.h"

/* What a record holds, its first line ("" when unreadable). */
static void record_owner(const char *path, char *name, size_t cap)
{
	name[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	ssize_t n = read(fd, name, cap - 1);
	close(fd);
	name[n > 0 ? n : 0] = '\0';
	name[strcspn(name, "\n")] = '\0';
}

static int write_all(const char *path, int flags, const char *text)
{
	int fd = open(path, flags | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Claim `u` for the sandbox directory `dir`: a fresh record, or one whose sandbox is gone. */
static bool claim(long u, const char *dir)
{
	char rec[128], owner[4200], line[4200];
	snprintf(rec, sizeof rec, "%s/%ld", PROCESS_UID_REGISTRY, u);
	snprintf(line, sizeof line, "%s\n", dir);
	if (write_all(rec, O_CREAT | O_EXCL, line) == 0)
		return true;
	if (errno != EEXIST)
		return false;
	record_owner(rec, owner, sizeof owner);
	/* This very sandbox's, from a start whose agent died (it is being started again). */
	if (!strcmp(owner, dir))
		return true;
	struct stat st;
	if (owner[0] == '/' && stat(owner, &st) == 0)
		return false; /* held by a sandbox that still exists */
	return write_all(rec, O_TRUNC, line) == 0;
}

msb_errc process_uid_take(const msb_driver_box *box, long base, long count, long *uid,
			  msb_error *err)
{
	const char *uids = PROCESS_UID_REGISTRY, *lock = PROCESS_UID_REGISTRY ".lock";
	char mine[4300];
	if ((mkdir("/run/msb", 0755) < 0 && errno != EEXIST) || (mkdir(uids, 0700) < 0 && errno != EEXIST))
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend process: mkdir %s", uids);
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend process: %s", lock);
	while (flock(lfd, LOCK_EX) < 0 && errno == EINTR)
		;
	long got = -1;
	for (long u = base; u < base + count && got < 0; u++)
		if (claim(u, box->dir))
			got = u;
	msb_errc rc = MSB_OK;
	if (got < 0)
		rc = msb_error_set(err, MSB_E_BACKEND,
				   "backend process: sandbox %s: refused, no uid left: all %ld of "
				   "uid_range %ld-%ld are held by live sandboxes (widen uid_range)",
				   box->name, count, base, base + count - 1);
	char text[32];
	snprintf(text, sizeof text, "%ld\n", got);
	snprintf(mine, sizeof mine, "%s/uid", box->dir);
	if (rc == MSB_OK && write_all(mine, O_CREAT | O_TRUNC, text) < 0) {
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend process: writing %s", mine);
		snprintf(mine, sizeof mine, "%s/%ld", uids, got);
		unlink(mine);
	}
	close(lfd);
	if (rc == MSB_OK)
		*uid = got;
	return rc;
}

void process_uid_release(const msb_driver_box *box)
{
	char mine[4300], text[32] = "", rec[128], owner[4200];
	snprintf(mine, sizeof mine, "%s/uid", box->dir);
	record_owner(mine, text, sizeof text);
	char *end;
	long u = strtol(text, &end, 10);
	if (!text[0] || *end || u <= 0)
		return;
	snprintf(rec, sizeof rec, "%s/%ld", PROCESS_UID_REGISTRY, u);
	/* Only this sandbox's own: a record another sandbox has since taken over stays. */
	record_owner(rec, owner, sizeof owner);
	if (!strcmp(owner, box->dir))
		unlink(rec);
	unlink(mine);
}

msb_errc process_uid_moved(const char *old_dir, const msb_driver_box *box, msb_error *err)
{
	char mine[4300], text[32] = "", rec[128], owner[4200], line[4200];
	snprintf(mine, sizeof mine, "%s/uid", box->dir);
	record_owner(mine, text, sizeof text);
	char *end;
	long u = strtol(text, &end, 10);
	if (!text[0] || *end || u <= 0)
		return MSB_OK; /* unprivileged: no uid of its own was taken */
	const char *lock = PROCESS_UID_REGISTRY ".lock";
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend process: %s", lock);
	while (flock(lfd, LOCK_EX) < 0 && errno == EINTR)
		;
	snprintf(rec, sizeof rec, "%s/%ld", PROCESS_UID_REGISTRY, u);
	snprintf(line, sizeof line, "%s\n", box->dir);
	record_owner(rec, owner, sizeof owner);
	msb_errc rc = MSB_OK;
	if (strcmp(owner, old_dir) != 0)
		rc = msb_error_set(err, MSB_E_BACKEND, "backend process: sandbox %s: uid %ld is not "
				   "recorded as its own (the record names '%s')", box->name, u, owner);
	else if (write_all(rec, O_TRUNC, line) < 0)
		rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend process: rewriting %s", rec);
	close(lfd);
	return rc;
}
