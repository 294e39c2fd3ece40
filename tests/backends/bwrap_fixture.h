/*
 * bwrap_fixture.h — opening the real `bwrap` plugin for a test: a temporary state dir, a
 * config written as YAML (the same path sandbox.yaml takes), the in-tree agent, and a
 * leak check that finds no process, mount, cgroup or directory left when the test is done.
 */
#ifndef MSB_BWRAP_FIXTURE_H
#define MSB_BWRAP_FIXTURE_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend_fixture.h"

#define BWRAP_PLUGIN MSB_TEST_MODULE("plugins/bwrap", "bwrap")

/*
 * Whether this kernel lets bwrap make its namespaces at all: the one reason the suite may
 * skip. Run the way the backend runs it (as nobody when root), so a kernel that refuses
 * unprivileged user namespaces is caught here rather than as a failed acquire.
 */
static inline bool bwrap_fixture_usable(char *why, size_t n)
{
	if (access("/usr/bin/bwrap", X_OK) != 0 && system("command -v bwrap >/dev/null 2>&1") != 0) {
		snprintf(why, n, "bubblewrap is not installed (Debian package bubblewrap)");
		return false;
	}
	const char *probe = geteuid() == 0
		? "setpriv --reuid 65534 --regid 65534 --clear-groups bwrap --unshare-all --ro-bind / / true 2>/dev/null"
		: "bwrap --unshare-all --ro-bind / / true 2>/dev/null";
	if (system(probe) != 0) {
		snprintf(why, n, "this kernel forbids the namespaces bwrap needs (bwrap --unshare-all failed)");
		return false;
	}
	return true;
}

/*
 * Whether this test may create cgroups (root): without, the sandboxes run with no limits
 * and the cases about limits skip, saying why.
 */
static inline bool bwrap_fixture_cgroups(void)
{
	return geteuid() == 0;
}

#define BWRAP_NEED_CGROUPS()                                                             \
	do {                                                                             \
		if (!bwrap_fixture_cgroups()) {                                          \
			printf("skip: limits need cgroups, which need root here\n");    \
			skip();                                                          \
		}                                                                        \
	} while (0)

/* The fixture's cgroup parent, "msb-test/<the state dir's name>": one per test run. */
static inline void bwrap_fixture_cgroup_parent(const backend_fixture *fx, char *out, size_t n)
{
	snprintf(out, n, "msb-test/%s", strrchr(fx->state, '/') + 1);
}

/*
 * Open the plugin with `extra` YAML lines appended to the fixture's config (may be ""), on
 * the state dir `state` (NULL: a fresh temporary one).
 */
static inline msb_errc bwrap_fixture_open(backend_fixture *fx, const char *state, const char *extra,
					  msb_error *err)
{
	msb_errc rc = backend_fixture_state(fx, state, "/tmp/msb-bwrap-test-XXXXXX", err);
	if (rc)
		return rc;
	char parent[96];
	bwrap_fixture_cgroup_parent(fx, parent, sizeof parent);
	return backend_fixture_load(fx, BWRAP_PLUGIN, err,
				    "state_dir: %s\n"
				    "agent: %s\n"
				    "cgroup_parent: %s\n"
				    "%s"
				    "tmp_size: 8MiB\n"
				    "rlimit_fsize: 16MiB\n"
				    "%s",
				    fx->state, BACKEND_FIXTURE_AGENT, parent,
				    bwrap_fixture_cgroups() ? "memory: 96MiB\npids: 48\ncpus: 1\n"
							    : "memory: 0\npids: 0\ncpus: 0\n",
				    extra);
}

/* Whether any line of /proc/self/mountinfo mentions `needle`. */
static inline bool bwrap_mount_mentions(const char *needle)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[8192];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* Count entries of `dir` other than the driver's lock files. */
static inline int bwrap_state_leftovers(const char *dir, char *first, size_t n)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls -A %s 2>/dev/null | grep -v '\\.lock$'", dir);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	int count = 0;
	char line[512];
	while (fgets(line, sizeof line, p)) {
		if (!count && first)
			snprintf(first, n, "%s", line);
		count++;
	}
	pclose(p);
	return count;
}

/*
 * The leak check: no sandbox directory in the state dir, no mount naming it, no cgroup
 * under the test's parent in any hierarchy. Removes the (empty) parents and the state dir.
 * Returns the number of leaks found, printing each.
 */
static inline int bwrap_fixture_leaks(backend_fixture *fx)
{
	int leaks = 0;
	char first[512] = "";
	int left = bwrap_state_leftovers(fx->state, first, sizeof first);
	if (left) {
		fprintf(stderr, "leak: %d entries left in %s (first: %s)\n", left, fx->state, first);
		leaks++;
	}
	if (bwrap_mount_mentions(fx->state)) {
		fprintf(stderr, "leak: a mount still names %s\n", fx->state);
		leaks++;
	}
	static const char *const roots[] = { "memory", "pids", "cpu", "cpu,cpuacct", "freezer", "unified", "" };
	char parent[96];
	bwrap_fixture_cgroup_parent(fx, parent, sizeof parent);
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
		char path[256];
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s/%s", roots[i], parent);
		if (rmdir(path) != 0 && errno != ENOENT) {
			fprintf(stderr, "leak: cgroup %s: %s\n", path, strerror(errno));
			leaks++;
		}
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s/msb-test", roots[i]);
		rmdir(path); /* shared by concurrent runs: only when empty */
	}
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", fx->state);
	if (system(cmd) != 0)
		leaks++;
	return leaks;
}

/*
 * What the sweep (backend_fixture_sweep) adds for bwrap: the fixture's cgroup parents, and
 * first the spares in them (msb/cgroup.h) that a case which failed before closing its
 * instance, or planted them, left; then the shared msb-test, if no other run is using it
 * (rmdir takes only an empty cgroup).
 */
static inline void bwrap_fixture_sweep_parents(const char *state)
{
	const char *name = strrchr(state, '/') + 1;
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rmdir /sys/fs/cgroup/*/msb-test/%s/spare-* /sys/fs/cgroup/msb-test/%s/spare-* "
		 "/sys/fs/cgroup/*/msb-test/%s /sys/fs/cgroup/msb-test/%s /sys/fs/cgroup/*/msb-test "
		 "2>/dev/null; true", name, name, name, name);
	if (system(cmd) != 0)
		fprintf(stderr, "sweep: could not run rmdir\n");
}

#endif
