/*
 * gvisor_fixture.h — opening the real `gvisor` plugin for a test or a benchmark: a temporary
 * state dir, a config written as YAML (the path sandbox.yaml takes), the in-tree agent, and
 * a leak check (no sandbox directory, no runsc container, no cgroup, no process).
 */
#ifndef MSB_GVISOR_FIXTURE_H
#define MSB_GVISOR_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_fixture.h"

#define GVISOR_PLUGIN MSB_TEST_MODULE("plugins/gvisor", "gvisor")
#define GVISOR_RUNSC "/usr/bin/runsc"

/*
 * Whether runsc can run a container here at all: `runsc run` of `true` with the backend's
 * platform and flags. `why` says what failed, with runsc's own words.
 */
static inline bool gvisor_fixture_usable(char *why, size_t n)
{
	if (access(GVISOR_RUNSC, X_OK) != 0) {
		snprintf(why, n, "%s is not installed (Debian package runsc)", GVISOR_RUNSC);
		return false;
	}
	char dir[] = "/tmp/msb-gvisor-probe-XXXXXX";
	if (!mkdtemp(dir)) {
		snprintf(why, n, "mkdtemp: %s", strerror(errno));
		return false;
	}
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "cd %s && printf '%%s' '{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"/bin/true\"],"
		 "\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0}},\"root\":{\"path\":\"/\",\"readonly\":true}}'"
		 " > config.json && %s --root=%s/r --platform=ptrace --network=none run --bundle %s probe"
		 " > %s/out 2>&1", dir, GVISOR_RUNSC, dir, dir, dir);
	int rc = system(cmd);
	if (rc != 0) {
		char out[400] = "", path[128];
		snprintf(path, sizeof path, "%s/out", dir);
		FILE *f = fopen(path, "re");
		if (f) {
			size_t k = fread(out, 1, sizeof out - 1, f);
			out[k] = '\0';
			fclose(f);
		}
		snprintf(why, n, "runsc cannot run a container on this kernel: %s", out);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return false;
	return rc == 0;
}

/* Open the plugin with `extra` YAML lines appended; `state` NULL: a fresh temporary dir. */
static inline msb_errc gvisor_fixture_open(backend_fixture *fx, const char *state, const char *extra,
					   msb_error *err)
{
	msb_errc rc = backend_fixture_state(fx, state, "/tmp/msb-gvisor-test-XXXXXX", err);
	return rc ? rc : backend_fixture_load(fx, GVISOR_PLUGIN, err, "state_dir: %s\nagent: %s\n%s",
					      fx->state, BACKEND_FIXTURE_AGENT, extra);
}

/*
 * Whether an argument of process `pid`'s command line equals `needle` (`exact`) or contains
 * it. The command line, NULs turned to spaces, is left in `buf` for messages.
 */
static inline bool gvisor_fixture_cmdline_names(long pid, const char *needle, bool exact, char *buf,
						size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	bool names = false;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		names = names || (exact ? strcmp(buf + i, needle) == 0 : strstr(buf + i, needle) != NULL);
	for (size_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	return names;
}

/* How many runsc processes name `state` on their command line (printing each). */
static inline int gvisor_fixture_runsc_procs(const char *state)
{
	DIR *d = opendir("/proc");
	int found = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char buf[8192];
		long pid = atol(e->d_name);
		if (pid > 0 && gvisor_fixture_cmdline_names(pid, state, false, buf, sizeof buf) &&
		    strstr(buf, "runsc")) {
			fprintf(stderr, "leak: runsc process %ld still names %s\n", pid, state);
			found++;
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* What the sweep (backend_fixture_sweep) adds for gVisor: SIGKILL, by pid, every runsc
 * process still naming `state` (one outside the sandbox's cgroup, or with none). */
static inline void gvisor_fixture_sweep_runsc(const char *state)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char buf[8192];
		long pid = atol(e->d_name);
		if (pid > 0 && gvisor_fixture_cmdline_names(pid, state, false, buf, sizeof buf) &&
		    strstr(buf, "runsc"))
			kill((pid_t)pid, SIGKILL);
	}
	if (d)
		closedir(d);
	usleep(200000); /* their exits, before the directory goes */
}

/*
 * The leak check: nothing in the state dir but lock files, the platform verdict and an
 * empty <state>/runsc (the shared runsc root of earlier versions; each sandbox now has its
 * own, inside its directory), and no runsc process whose command line names the state dir
 * (the cgroups are checked per sandbox by the tests). Removes the state dir. Returns the
 * number of leaks, printing each.
 */
static inline int gvisor_fixture_leaks(backend_fixture *fx)
{
	int leaks = 0;
	char cmd[600], line[512];
	snprintf(cmd, sizeof cmd,
		 "cd '%s' 2>/dev/null && { ls -A | grep -v -e '\\.lock$' -e '^runsc$' -e '^platform$'; ls -A runsc 2>/dev/null; }",
		 fx->state);
	FILE *p = popen(cmd, "r");
	while (p && fgets(line, sizeof line, p)) {
		fprintf(stderr, "leak: in %s: %s", fx->state, line);
		leaks++;
	}
	if (p)
		pclose(p);
	leaks += gvisor_fixture_runsc_procs(fx->state);
	/* Quoted: a test may give its state dir a space. */
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->state);
	if (system(cmd) != 0)
		leaks++;
	return leaks;
}

#endif
