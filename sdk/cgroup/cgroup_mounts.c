/*
 * cgroup_mounts.c — which cgroup hierarchies this machine mounts, and which controllers each
 * carries, read from /proc/self/mountinfo rather than assumed from a conventional layout:
 * /sys/fs/cgroup may be a v2 mount, a tmpfs of v1 mounts, or a hybrid with v2 at
 * /sys/fs/cgroup/unified holding nothing but hugetlb.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_internal.h"

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* A v2 mount's controllers are whatever its root's cgroup.controllers lists. */
static void read_v2_controllers(msb_cgroup_mount *m)
{
	char file[PATH_MAX + 32];
	snprintf(file, sizeof file, "%s/cgroup.controllers", m->path);
	FILE *f = fopen(file, "re");
	strcpy(m->controllers, ",");
	if (!f)
		return;
	char word[64];
	while (fscanf(f, "%63s", word) == 1) {
		size_t used = strlen(m->controllers);
		if (used + strlen(word) + 2 < sizeof m->controllers) {
			strcat(m->controllers, word);
			strcat(m->controllers, ",");
		}
	}
	fclose(f);
}

/*
 * A v1 mount's super options mix flags (rw, xattr, name=systemd, …) with the controllers it
 * carries: keep only the words that are controller names.
 */
static void v1_controllers(const char *super, char *out, size_t n)
{
	static const char *const known[] = { "cpuset", "cpu", "cpuacct", "blkio", "io", "memory",
					     "devices", "freezer", "net_cls", "perf_event",
					     "net_prio", "hugetlb", "pids", "rdma", "misc" };
	snprintf(out, n, ",");
	char copy[512];
	snprintf(copy, sizeof copy, "%s", super);
	char *save = NULL;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
			if (strcmp(w, known[i]) == 0 && strlen(out) + strlen(w) + 2 < n) {
				strcat(out, w);
				strcat(out, ",");
			}
		}
	}
}

/*
 * One mountinfo line: "id parent maj:min root mountpoint opts [optional…] - fstype source
 * superopts". The optional fields vary in number, so the separator is searched for.
 */
static void parse_line(char *line, msb_cgroup_mounts *out)
{
	char *sep = strstr(line, " - ");
	if (!sep || out->len == MSB_CGROUP_MAX_MOUNTS)
		return;
	*sep = '\0';
	char fstype[32], source[256], super[512];
	if (sscanf(sep + 3, "%31s %255s %511s", fstype, source, super) != 3)
		return;
	bool v2 = strcmp(fstype, "cgroup2") == 0;
	if (!v2 && strcmp(fstype, "cgroup") != 0)
		return;
	char root[PATH_MAX], point[PATH_MAX];
	if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
		return;
	unescape(point);
	msb_cgroup_mount *m = &out->items[out->len];
	if (strlen(point) >= sizeof m->path)
		return;
	strcpy(m->path, point);
	m->v2 = v2;
	if (v2) {
		read_v2_controllers(m);
	} else {
		v1_controllers(super, m->controllers, sizeof m->controllers);
	}
	out->len++;
}

/*
 * The table is read once and kept: reading and parsing mountinfo was 0.15 ms of every
 * sandbox start. It is read again when it may be stale: when the kernel reports a change of
 * the mount table (a mountinfo file kept open polls POLLPRI after any mount or unmount in its
 * namespace, the poll itself consuming the event), when this process has entered another
 * mount namespace since, or when a caller found it wanting (msb_cgroup_mounts_forget). The
 * poll file is opened before the read, so a change during the read is seen next time.
 */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static msb_cgroup_mounts *cache;
static int cache_poll_fd = -1;
static struct stat cache_ns;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static bool cache_fresh(const struct stat *ns)
{
	if (!cache || cache_poll_fd < 0 || !same_file(ns, &cache_ns))
		return false;
	struct pollfd p = { .fd = cache_poll_fd, .events = POLLPRI };
	return poll(&p, 1, 0) == 0;
}

static void cache_drop(void)
{
	free(cache);
	cache = NULL;
	if (cache_poll_fd >= 0)
		close(cache_poll_fd);
	cache_poll_fd = -1;
}

static void copy_mounts(msb_cgroup_mounts *to, const msb_cgroup_mounts *from)
{
	memcpy(to->items, from->items, from->len * sizeof from->items[0]);
	to->len = from->len;
}

msb_errc msb_cgroup_mounts_read(msb_cgroup_mounts *out, msb_error *err)
{
	struct stat ns;
	bool ns_known = stat("/proc/self/ns/mnt", &ns) == 0;
	pthread_mutex_lock(&cache_lock);
	if (ns_known && cache_fresh(&ns)) {
		copy_mounts(out, cache);
		pthread_mutex_unlock(&cache_lock);
		return MSB_OK;
	}
	cache_drop();
	int fd = ns_known ? open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC) : -1;
	msb_errc rc = msb_cgroup_mounts_parse("/proc/self/mountinfo", out, err);
	if (rc == MSB_OK && fd >= 0 && (cache = malloc(sizeof *cache))) {
		copy_mounts(cache, out);
		cache_poll_fd = fd;
		cache_ns = ns;
	} else if (fd >= 0) {
		close(fd);
	}
	pthread_mutex_unlock(&cache_lock);
	return rc;
}

void msb_cgroup_mounts_forget(void)
{
	pthread_mutex_lock(&cache_lock);
	cache_drop();
	pthread_mutex_unlock(&cache_lock);
}

msb_errc msb_cgroup_mounts_parse(const char *mountinfo, msb_cgroup_mounts *out, msb_error *err)
{
	out->len = 0;
	FILE *f = fopen(mountinfo, "re");
	if (!f)
		return msb_error_set_errno(err, MSB_E_OS, errno,
					   "cgroups: cannot read %s to find the mounted hierarchies", mountinfo);
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0)
		parse_line(line, out);
	free(line);
	fclose(f);
	return MSB_OK;
}

static bool carries(const msb_cgroup_mount *m, const char *controller)
{
	char needle[72];
	snprintf(needle, sizeof needle, ",%s,", controller);
	return strstr(m->controllers, needle) != NULL;
}

const msb_cgroup_mount *msb_cgroup_mounts_find(const msb_cgroup_mounts *m, const char *controller)
{
	for (size_t i = 0; i < m->len; i++)
		if (!m->items[i].v2 && carries(&m->items[i], controller))
			return &m->items[i];
	for (size_t i = 0; i < m->len; i++)
		if (m->items[i].v2 && carries(&m->items[i], controller))
			return &m->items[i];
	return NULL;
}

const msb_cgroup_mount *msb_cgroup_mounts_v2(const msb_cgroup_mounts *m)
{
	for (size_t i = 0; i < m->len; i++)
		if (m->items[i].v2)
			return &m->items[i];
	return NULL;
}
