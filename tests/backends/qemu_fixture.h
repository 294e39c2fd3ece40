/*
 * qemu_fixture.h — opening the real `qemu` plugin for a test or a benchmark: a temporary
 * state dir, a config written as YAML (the path sandbox.yaml takes), the in-tree agent,
 * guest init and relay, the guest fetched by `make qemu-guest`, and a leak check.
 */
#ifndef MSB_QEMU_FIXTURE_H
#define MSB_QEMU_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_fixture.h"

#define QEMU_INIT MSB_TOP_BUILDDIR "/plugins/qemu/msb-qemu-init"
#define QEMU_RELAY MSB_TOP_BUILDDIR "/plugins/qemu/msb-qemu-relay"
#define QEMU_GUEST MSB_TOP_BUILDDIR "/plugins/qemu/guest"
#define QEMU_PLUGIN MSB_TEST_MODULE("plugins/qemu", "qemu")
#define QEMU_BINARY "/usr/bin/qemu-system-x86_64"

/*
 * The guest directory: $MSB_QEMU_GUEST, else the build tree's (make qemu-guest), else the
 * installed one (make install-qemu-guest, what the README's set-up runs).
 */
static inline const char *qemu_fixture_guest(void)
{
	const char *g = getenv("MSB_QEMU_GUEST");
	if (g && *g)
		return g;
	if (access(QEMU_GUEST "/vmlinuz", R_OK) != 0 && access(MSB_DATADIR "/qemu/vmlinuz", R_OK) == 0)
		return MSB_DATADIR "/qemu";
	return QEMU_GUEST;
}

/* Whether a real microVM can be booted here; `why` says what is missing. */
static inline bool qemu_fixture_usable(char *why, size_t n)
{
	char kernel[256];
	snprintf(kernel, sizeof kernel, "%s/vmlinuz", qemu_fixture_guest());
	if (access(QEMU_BINARY, X_OK) != 0) {
		snprintf(why, n, "%s is not installed (Debian package qemu-system-x86)", QEMU_BINARY);
		return false;
	}
	if (access(kernel, R_OK) != 0) {
		snprintf(why, n, "no guest kernel at %s (nor in " MSB_DATADIR "/qemu): run `make "
			 "qemu-guest` or plugins/qemu/fetch-guest.sh", kernel);
		return false;
	}
	return true;
}

/* Open the plugin with `extra` YAML lines appended; `state` NULL: a fresh temporary dir. */
static inline msb_errc qemu_fixture_open(backend_fixture *fx, const char *state, const char *extra,
					 msb_error *err)
{
	msb_errc rc = backend_fixture_state(fx, state, "/tmp/msb-qemu-test-XXXXXX", err);
	bool own_guest = strstr(extra, "guest_dir:") != NULL;
	bool own_relay = strstr(extra, "relay:") != NULL;
	return rc ? rc : backend_fixture_load(fx, QEMU_PLUGIN, err,
					      "state_dir: %s\nagent: %s\ninit: %s\n%s%s%s%s%s%s%s",
					      fx->state, BACKEND_FIXTURE_AGENT, QEMU_INIT,
					      own_relay ? "" : "relay: ", own_relay ? "" : QEMU_RELAY,
					      own_relay ? "" : "\n", own_guest ? "" : "guest_dir: ",
					      own_guest ? "" : qemu_fixture_guest(),
					      own_guest ? "" : "\n", extra);
}

/*
 * The leak check: nothing in the state dir but lock files and the accelerator verdict, no
 * QEMU process whose command line names the state dir. Removes the state dir. Returns the
 * number of leaks, printing each.
 */
static inline int qemu_fixture_leaks(backend_fixture *fx)
{
	int leaks = 0;
	char cmd[512], line[512];
	snprintf(cmd, sizeof cmd, "ls -A %s 2>/dev/null | grep -v -e '\\.lock$' -e '^accel$'", fx->state);
	FILE *p = popen(cmd, "r");
	while (p && fgets(line, sizeof line, p)) {
		fprintf(stderr, "leak: %s/%s", fx->state, line);
		leaks++;
	}
	if (p)
		pclose(p);
	snprintf(cmd, sizeof cmd, "grep -l -a -F '%s' /proc/[0-9]*/cmdline 2>/dev/null | grep -v self",
		 fx->state);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof line, p)) {
		char path[600];
		snprintf(path, sizeof path, "%.*s", (int)strcspn(line, "\n"), line);
		/* The grep itself names the state dir too; only a live process other than it counts. */
		FILE *c = fopen(path, "re");
		char comm[64] = "";
		if (c) {
			size_t n = fread(comm, 1, sizeof comm - 1, c);
			comm[n] = '\0';
			fclose(c);
		}
		if (strstr(comm, "qemu")) {
			fprintf(stderr, "leak: a QEMU still runs for %s (%s)\n", fx->state, path);
			leaks++;
		}
	}
	if (p)
		pclose(p);
	snprintf(cmd, sizeof cmd, "rm -rf %s", fx->state);
	if (system(cmd) != 0)
		leaks++;
	return leaks;
}

#endif
