/*
 * cgroup_mounts.c — which cgroup hierarchies this machine mounts, and which controllers each
 * carries, read from /proc/self/mountinfo rather than assumed from a conventional layout:
 * /sys/fs/cgroup may be a v2 mount, a tmpfs of v1 mounts, or a hybrid with v2 at
 * /sys/fs/cgroup/unified holding nothing but hugetlb.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

msb_errc msb_cgroup_mounts_read(msb_cgroup_mounts *out, msb_error *err)
{
	return msb_cgroup_mounts_parse("/proc/self/mountinfo", out, err);
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
