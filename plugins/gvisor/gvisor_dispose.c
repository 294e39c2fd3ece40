/*
 * plugins/gvisor/gvisor_dispose.c — the gvisor boundary's stop: ending a sandbox without a
 * second runsc start.
 *
 * Why no `runsc delete --force`: it is a second start of a large Go binary (30-35 ms here)
 * to do three things msb can do itself and check better. Everything runsc started for the
 * sandbox (the gofer, the sandbox process, its ptrace stubs) was born inside the sandbox's
 * cgroup, so killing by cgroup ends all of it, forks in flight included, and an empty
 * cgroup proves it. runsc's state is the container's files in a root of the sandbox's own
 * (<dir>/runsc), so dropping it is a directory removal. And runsc mounts only inside the
 * mount namespaces of its gofer and sandbox, which die with them; that none is left in
 * msb's own is checked anyway. Each step that fails is reported (DisposalFailure), and the
 * sandbox's directory stays so a later dispose retries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/cgroup.h>
#include <msb/confine.h>

#include "gvisor_internal.h"

/* Kill every member of the sandbox's cgroup, wait for it to empty and remove it. */
static bool end_cgroup(const msb_driver_box *box, const char *file, double timeout,
		       msb_disposal_failure *failure)
{
	msb_cgroup *cg = NULL;
	msb_error e = MSB_ERROR_INIT;
	msb_errc rc = msb_cgroup_load(file, &cg, &e);
	if (rc == MSB_E_NOT_FOUND) {
		msb_error_clear(&e);
		return true; /* the start never got as far as a cgroup: nothing of it ran */
	}
	if (rc == MSB_OK)
		rc = msb_cgroup_destroy(cg, timeout, &e);
	msb_cgroup_free(cg);
	if (rc == MSB_OK)
		unlink(file);
	else
		msb_disposal_failure_set(failure, rc == MSB_E_TIMEOUT ? MSB_DISPOSAL_TIMEOUT :
					 MSB_DISPOSAL_UNKNOWN, "backend gvisor: sandbox %s: its "
					 "cgroup: %s", box->name, msb_error_message(&e));
	msb_error_clear(&e);
	return rc == MSB_OK;
}

/* runsc's state of the container (its root of the sandbox's own), removed and checked gone. */
static bool drop_state(const msb_driver_box *box, msb_disposal_failure *failure)
{
	char *root = msb_driver_path(box->dir, "runsc");
	msb_error e = MSB_ERROR_INIT;
	msb_errc rc = root ? msb_confine_reclaim(root, box->dir, &e) : MSB_E_NOMEM;
	struct stat st;
	bool gone = rc == MSB_OK && lstat(root, &st) != 0 && errno == ENOENT;
	if (!gone)
		msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "backend gvisor: sandbox %s: "
					 "runsc's state %s could not be removed: %s", box->name,
					 root ? root : "", rc == MSB_OK ? "it is still there" :
					 root ? msb_error_message(&e) : "out of memory");
	msb_error_clear(&e);
	free(root);
	return gone;
}

/* Undo mountinfo's escapes (a space is \040, a backslash \134) in place. */
static void unescape(char *s)
{
	char *out = s;
	for (const char *in = s; *in; out++) {
		if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' &&
		    in[3] >= '0' && in[3] <= '7') {
			*out = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
			in += 4;
		} else {
			*out = *in++;
		}
	}
	*out = '\0';
}

/* Whether a mount point of msb's own mount namespace lies in the sandbox's directory. */
static bool mounts_gone(const msb_driver_box *box, msb_disposal_failure *failure)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "backend gvisor: sandbox %s: "
					 "cannot read /proc/self/mountinfo to check its mounts are "
					 "gone: %s", box->name, strerror(errno));
		return false;
	}
	size_t n = strlen(box->dir);
	char line[8192], point[4096];
	bool left = false;
	/* Field 5 is the mount point; a path with a space is escaped (\040), never split. */
	while (!left && fgets(line, sizeof line, f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		unescape(point);
		left = strncmp(point, box->dir, n) == 0 && (point[n] == '/' || point[n] == '\0');
	}
	fclose(f);
	if (left)
		msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "backend gvisor: sandbox %s: "
					 "%s is still mounted", box->name, point);
	return !left;
}

/*
 * A sandbox an earlier version of this plugin started keeps its runsc state in the shared
 * root <state_dir>/runsc and its cgroups in runsc's hands; this stop cannot end those
 * truthfully, so it says so instead of reporting them gone.
 */
static bool no_shared_root_state(const msb_driver_box *box, msb_disposal_failure *failure)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/runsc/%s_sandbox:%s.state", box->config->state_dir,
		 box->name, box->name);
	struct stat st;
	if (lstat(path, &st) != 0)
		return true;
	msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "backend gvisor: sandbox %s: it was "
				 "started by an earlier msb, whose runsc state (%s) and cgroups this "
				 "one does not end: run `runsc --root=%s/runsc delete --force %s`",
				 box->name, path, box->config->state_dir, box->name);
	return false;
}

bool gvisor_dispose(const msb_driver_box *box, double timeout, msb_disposal_failure *failure)
{
	char *file = msb_driver_path(box->dir, "cgroup");
	if (!file) {
		msb_disposal_failure_set(failure, MSB_DISPOSAL_UNKNOWN, "backend gvisor: sandbox %s: "
					 "out of memory", box->name);
		return true;
	}
	/* In this order: the state goes only once nothing can still be using it. */
	bool ok = end_cgroup(box, file, timeout, failure) && drop_state(box, failure) &&
		  mounts_gone(box, failure) && no_shared_root_state(box, failure);
	free(file);
	return !ok;
}
