/*
 * cgroup_spare.c — the next sandbox's cgroup, made while this one starts, and the sweep of
 * the ones a host left when it died (msb/cgroup.h, "Made ahead").
 *
 * A sandbox's directories take 0.2 ms to make on this kind of machine (the v1 memory and
 * cpu ones most), and they must exist before its first process is born inside them, so
 * they sat at the head of every start. A start then waits ~5 ms for its engine, with a CPU
 * idle: the spare is made there, limits written, and the next start only takes it.
 *
 * A spare's name says whose it is, "spare-<pid>-<start time>-<n>", so that a sweep can tell
 * one whose process is gone from one in use: a pid alone could have been reused. A spare a
 * start has taken keeps its name for the sandbox's life, and the sandbox's own processes
 * keep it from being swept even after its host is gone: rmdir refuses a populated cgroup.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "../lib/proc_stat.h"

struct msb_cgroup_spare {
	pthread_mutex_t lock;
	msb_cgroup *cg;          /* made and limited, not yet taken; NULL when none */
	unsigned long takes;     /* starts so far: the first makes none, the second the first */
	unsigned long made;      /* spares made, for their names */
	pid_t owner;             /* the process that made it (a fork's copy leaves it alone) */
	unsigned long long owner_start;
	char *parent;
	msb_cgroup_limits limits;
};

msb_errc msb_cgroup_spare_new(const char *parent, const msb_cgroup_limits *limits,
			      msb_cgroup_spare **out, msb_error *err)
{
	msb_cgroup_spare *s = calloc(1, sizeof *s);
	char state;
	if (!s || !(s->parent = strdup(parent))) {
		free(s);
		return msb_error_set(err, MSB_E_NOMEM, "cgroups: out of memory");
	}
	pthread_mutex_init(&s->lock, NULL);
	s->owner = getpid();
	s->limits = *limits;
	if (!msb_proc_start_time(s->owner, &s->owner_start, &state))
		s->owner = 0; /* no /proc: a spare could never be told from a live one; make none */
	*out = s;
	return MSB_OK;
}

static void discard(msb_cgroup *cg)
{
	if (!cg)
		return;
	msb_cgroup_destroy(cg, 1.0, NULL);
	msb_cgroup_free(cg);
}

/* Whether every directory of `cg` is still there: an empty cgroup is what tidying tools
 * (and a careless script) remove, and a start launched into a missing one fails. */
static bool all_there(const msb_cgroup *cg)
{
	for (size_t i = 0; i < cg->len; i++)
		if (access(cg->dirs[i].path, F_OK) != 0)
			return false;
	return true;
}

msb_cgroup *msb_cgroup_spare_take(msb_cgroup_spare *s)
{
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	msb_cgroup *cg = s->owner == getpid() ? s->cg : NULL;
	if (cg)
		s->cg = NULL;
	s->takes++;
	pthread_mutex_unlock(&s->lock);
	if (cg && !all_there(cg)) {
		discard(cg); /* what is left of it */
		cg = NULL;
	}
	return cg;
}

void msb_cgroup_spare_refill(msb_cgroup_spare *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	/* One start is a one-shot `msb exec`; from the second on, more are likely to follow. */
	bool wanted = !s->cg && s->takes >= 2 && s->owner == getpid();
	unsigned long n = wanted ? s->made++ : 0;
	pthread_mutex_unlock(&s->lock);
	if (!wanted)
		return;
	char name[80];
	snprintf(name, sizeof name, "spare-%ld-%llu-%lu", (long)s->owner, s->owner_start, n);
	msb_cgroup *cg = NULL;
	/* Any failure here is the next start's to meet, in line, and to report in its words. */
	if (msb_cgroup_prepare(s->parent, name, &s->limits, &cg, NULL) != MSB_OK)
		return;
	if (cg->len == 0 || msb_cgroup_apply(cg, NULL) != MSB_OK) {
		discard(cg);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (!s->cg) {
		s->cg = cg;
		cg = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	discard(cg); /* another thread's start filled it first */
}

void msb_cgroup_spare_free(msb_cgroup_spare *s)
{
	if (!s)
		return;
	if (s->owner == getpid())
		discard(s->cg);
	else
		msb_cgroup_free(s->cg);
	pthread_mutex_destroy(&s->lock);
	free(s->parent);
	free(s);
}

/* Whether the spare named `name` belongs to a process that no longer runs. */
static bool orphaned(const char *name)
{
	long pid;
	unsigned long long start, now;
	unsigned long n;
	int used = 0;
	if (sscanf(name, "spare-%ld-%llu-%lu%n", &pid, &start, &n, &used) != 3 || name[used] || pid <= 0)
		return false;
	char state;
	return !msb_proc_start_time((pid_t)pid, &now, &state) || now != start || state == 'Z' ||
	       state == 'X';
}

size_t msb_cgroup_spares_sweep(const char *parent)
{
	msb_cgroup_mounts *mounts = malloc(sizeof *mounts);
	if (!mounts || strstr(parent, "..") || msb_cgroup_mounts_read(mounts, NULL) != MSB_OK) {
		free(mounts);
		return 0;
	}
	size_t removed = 0;
	for (size_t i = 0; i < mounts->len; i++) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s/%s", mounts->items[i].path, parent);
		DIR *d = opendir(dir);
		for (struct dirent *e; d && (e = readdir(d));) {
			char path[PATH_MAX + 256];
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			if (orphaned(e->d_name) && rmdir(path) == 0)
				removed++;
		}
		if (d)
			closedir(d);
	}
	free(mounts);
	return removed;
}
