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

#include <msb/config.h>
#include <msb/driver.h>
#include <msb/loader.h>

#include "msb_test.h"

#define BWRAP_AGENT MSB_TOP_BUILDDIR "/sdk/agent/msb-agent"
#define BWRAP_PLUGIN MSB_TEST_MODULE("plugins/bwrap", "bwrap")

typedef struct bwrap_fixture {
	char state[64];          /* mkdtemp'd state dir */
	char cgroup_parent[64];  /* "msb-test/bwrap-<pid>" */
	msb_loader *loader;
	msb_backend *backend;
	msb_config_doc *doc;
	const struct msb_backend_v27 *ops;
	msb_backend_instance *self;
} bwrap_fixture;

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

/*
 * Open the plugin with `extra` YAML lines appended to the fixture's config (may be ""), on
 * the state dir `state` (NULL: a fresh temporary one).
 */
static inline msb_errc bwrap_fixture_open(bwrap_fixture *fx, const char *state, const char *extra,
					  msb_error *err)
{
	memset(fx, 0, sizeof *fx);
	snprintf(fx->state, sizeof fx->state, "%s", state ? state : "/tmp/msb-bwrap-test-XXXXXX");
	if (!state && !mkdtemp(fx->state))
		return msb_error_set_errno(err, MSB_E_OS, errno, "mkdtemp");
	snprintf(fx->cgroup_parent, sizeof fx->cgroup_parent, "msb-test/%s", strrchr(fx->state, '/') + 1);
	char *yaml = NULL;
	if (asprintf(&yaml,
		     "state_dir: %s\n"
		     "agent: %s\n"
		     "cgroup_parent: %s\n"
		     "%s"
		     "tmp_size: 8MiB\n"
		     "rlimit_fsize: 16MiB\n"
		     "%s",
		     fx->state, BWRAP_AGENT, fx->cgroup_parent,
		     bwrap_fixture_cgroups() ? "memory: 96MiB\npids: 48\ncpus: 1\n"
					     : "memory: 0\npids: 0\ncpus: 0\n",
		     extra) < 0)
		return msb_error_set(err, MSB_E_NOMEM, "asprintf");
	msb_errc rc = msb_config_doc_parse(yaml, strlen(yaml), "<bwrap test>", &fx->doc, err);
	free(yaml);
	const msb_plugin *plugin = NULL;
	if (!rc)
		rc = msb_loader_new(&fx->loader, err);
	if (!rc)
		rc = msb_loader_load(fx->loader, BWRAP_PLUGIN, &plugin, err);
	if (!rc)
		rc = msb_backend_open(plugin, msb_config_doc_root(fx->doc), NULL, NULL, &fx->backend, err);
	if (!rc) {
		fx->ops = msb_backend_ops(fx->backend);
		fx->self = msb_backend_instance_of(fx->backend);
	}
	return rc;
}

static inline void bwrap_fixture_close(bwrap_fixture *fx)
{
	if (fx->backend)
		msb_backend_close(fx->backend);
	if (fx->loader)
		msb_loader_free(fx->loader);
	msb_config_doc_free(fx->doc);
	fx->backend = NULL;
	fx->loader = NULL;
	fx->doc = NULL;
}

/* Whether `pid` is gone (no such process, or a zombie: reaped by the caller's loop). */
static inline bool bwrap_pid_gone(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
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
static inline int bwrap_fixture_leaks(bwrap_fixture *fx)
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
	for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
		char path[256];
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s/%s", roots[i], fx->cgroup_parent);
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

#endif
