/*
 * suite_disposal.c — what dispose owes: afterwards nothing of the sandbox is reachable (the
 * same key acquires a fresh, empty one); a delete that did not land is reported as a
 * DisposalFailure, never silence; dispose_scope counts what it disposed truthfully and
 * leaves other conversations alone.
 *
 * Provoking a failed delete without knowing the engine: the guest write-protects a directory
 * holding a marker (chmod 0500). A backend whose delete runs with the guest's authority
 * cannot remove it and must say so; one that deletes with more authority removes it. Either
 * is conforming. What is not is silence while the marker survives — the kit re-acquires the
 * key and looks.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"
#include "probe.h"

/*
 * Acquire the key again after a dispose, by the means the guest cannot fake: the backend's
 * own acquire. A refusal as SandboxUnclean after a dispose that reported nothing is the
 * backend contradicting itself (it said disposed; its own acquire says it is not).
 */
static bool reacquire_after(conf_run *run, conf_box *box, bool reported)
{
	msb_error err = MSB_ERROR_INIT;
	conf_box_release(run, box);
	msb_errc rc = run->ops->acquire(run->self, &box->key, &box->spec, &box->handle, &err);
	if (rc == MSB_E_UNCLEAN && !reported)
		conf_fail(run, "a dispose that reported no failure to have landed",
			  "the next acquire of the key was refused: SandboxUnclean: %s",
			  msb_error_message(&err));
	msb_error_clear(&err);
	if (rc == MSB_OK && box->handle)
		return true;
	return !conf_decided(run) && conf_box_reacquire(run, box);
}

/* Host processes whose command line holds `nonce` (a host-visible backend's leftovers). */
static long host_process_with(const char *nonce, char *cmd, size_t size)
{
	DIR *d = opendir("/proc");
	long found = 0;
	for (struct dirent *e; d && !found && (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300];
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, cmd, size - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			cmd[i] = cmd[i] ? cmd[i] : ' ';
		cmd[n] = '\0';
		if (strstr(cmd, nonce))
			found = atol(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * A marker file, a nested one and — where the kit's probe can run — a daemon of the guest's
 * (own session, a nonce in its argv) are planted; after dispose, the host's process table
 * must not hold the daemon, and a fresh acquire of the key must find none of it.
 */
static void case_dispose_leaves_nothing(conf_run *run)
{
	conf_box *box = conf_box_acquire(run, "dispose", NULL, MSB_SCOPE_CONVERSATION);
	if (!box)
		return;
	char marker[96], nested[200], nonce[96] = "";
	conf_unique(run, "before", marker, sizeof(marker));
	snprintf(nested, sizeof(nested), "%s-dir/deeper/file", marker);
	if (!conf_plant(run, box, marker, "before dispose") || !conf_plant(run, box, nested, "nested"))
		return;
	/* A boundary owns its processes from os_process up; rung none promises no such thing. */
	if (msb_isolation_meets(msb_backend_isolation(run->backend), MSB_ISO_OS_PROCESS) &&
	    conf_has(run, MSB_CAP_FILES_IN) && conf_exec_usable(run, box)) {
		conf_unique(run, "linger", nonce, sizeof(nonce));
		const char *args[] = { "linger", nonce, "600", NULL };
		char *out = NULL;
		if (!conf_probe_run(run, box, args, &out))
			return;
		free(out);
	}
	msb_disposal_failure f = { 0 };
	bool reported = conf_box_dispose(run, box, &f);
	if (reported)
		conf_fail(run, "a plain dispose to land", "it reported a %s failure: %s",
			  msb_word_name(MSB_AXIS_DISPOSAL_CODE, f.code), f.detail ? f.detail : "(no detail)");
	msb_disposal_failure_free(&f);
	char cmd[512];
	/* A process SIGKILLed a moment ago may take a moment to leave the table: 2 s of grace. */
	long pid = 0;
	for (int i = 0; nonce[0] && i < 40 && (pid = host_process_with(nonce, cmd, sizeof cmd)); i++)
		usleep(50000);
	if (pid > 0)
		conf_fail(run, "every process of the sandbox gone after dispose",
			  "the guest's daemon is still running on the host as pid %ld: %s", pid, cmd);
	if (conf_decided(run) || !reacquire_after(run, box, reported))
		return;
	int seen = conf_exists(run, box, marker), seen_nested = conf_exists(run, box, nested);
	char first[256] = "";
	long entries = conf_work_dir_entries(run, box, first, sizeof(first));
	if (seen < 0 || seen_nested < 0)
		conf_skip(run, "nothing declared (exec or files_out) can look for a file");
	else if (seen || seen_nested)
		conf_fail(run, "the same key to acquire a fresh sandbox after dispose",
			  "%s, written before dispose, is still there", seen ? marker : nested);
	else if (entries > 0)
		conf_fail(run, "a fresh, empty work dir after dispose",
			  "the work dir holds %ld entr%s (%s)", entries, entries == 1 ? "y" : "ies", first);
}

static void case_dispose_unknown_key(conf_run *run)
{
	conf_box *box = conf_box_new(run, "never-acquired", NULL, MSB_SCOPE_CONVERSATION);
	if (!box)
		return;
	msb_disposal_failure f = { 0 };
	if (conf_box_dispose(run, box, &f))
		conf_fail(run, "dispose of a key never acquired to be quiet: there was nothing to delete",
			  "a %s failure: %s", msb_word_name(MSB_AXIS_DISPOSAL_CODE, f.code),
			  f.detail ? f.detail : "(no detail)");
	msb_disposal_failure_free(&f);
}

static void case_failed_dispose_reported(conf_run *run)
{
	conf_box *box = conf_box_acquire(run, "obstructed", NULL, MSB_SCOPE_CONVERSATION);
	if (!box)
		return;
	if (!conf_exec_usable(run, box)) {
		conf_skip(run, "obstructing a delete needs an exec that runs real programs");
		return;
	}
	char dir[96], marker[200];
	conf_unique(run, "obst", dir, sizeof(dir));
	snprintf(marker, sizeof(marker), "%s/inner/marker", dir);
	const char *args[] = { dir, NULL };
	if (!conf_sh_ok(run, box, NULL, "a write-protected directory planted",
			"set -e; mkdir -p \"$1/inner\"; printf m > \"$1/inner/marker\"; chmod 0500 \"$1/inner\" \"$1\"",
			args))
		return;
	msb_disposal_failure f = { 0 };
	bool reported = conf_box_dispose(run, box, &f);
	if (reported) {
		if ((int)f.code < 0 || f.code >= MSB_DISPOSAL__COUNT || !f.detail || !f.detail[0])
			conf_fail(run, "a DisposalFailure with a known code and a detail",
				  "code %d, detail %s", (int)f.code, f.detail ? "\"\"" : "NULL");
	}
	msb_disposal_failure_free(&f);
	if (!reacquire_after(run, box, reported))
		return;
	int seen = conf_exists(run, box, marker);
	if (!reported && seen == 1)
		conf_fail(run, "a dispose that did not land to report a DisposalFailure",
			  "dispose reported nothing, yet %s survived it", marker);
	/* Undo the obstruction so the suite's own cleanup lands. */
	conf_sh_ok(run, box, NULL, "the obstruction undone", "chmod -R u+w \"$1\" 2>/dev/null || true", args);
	if (reported) {
		msb_disposal_failure again = { 0 };
		if (conf_box_dispose(run, box, &again))
			conf_fail(run, "a retried dispose to land once the obstruction was gone",
				  "it reported %s: %s", msb_word_name(MSB_AXIS_DISPOSAL_CODE, again.code),
				  again.detail ? again.detail : "");
		msb_disposal_failure_free(&again);
	}
}

static void case_dispose_scope_counts(conf_run *run)
{
	conf_box *k1 = conf_box_new(run, "purge", NULL, MSB_SCOPE_CONVERSATION);
	conf_box *k2 = conf_box_new(run, "purge", NULL, MSB_SCOPE_CONVERSATION);
	if (!k1 || !k2)
		return;
	/* One conversation, two agents: two sandboxes under one (scope, thread). */
	snprintf(k2->thread, sizeof(k2->thread), "%s", k1->thread);
	snprintf(k1->agent, sizeof(k1->agent), "agent-one");
	snprintf(k2->agent, sizeof(k2->agent), "agent-two");
	if (!conf_box_reacquire(run, k1) || !conf_box_reacquire(run, k2))
		return;
	conf_box *other = conf_box_acquire(run, "bystander", NULL, MSB_SCOPE_CONVERSATION);
	if (!other)
		return;
	char m1[96], m3[96];
	conf_unique(run, "purged", m1, sizeof(m1));
	conf_unique(run, "kept", m3, sizeof(m3));
	if (!conf_plant(run, k1, m1, "1") || !conf_plant(run, other, m3, "3"))
		return;
	conf_box_release(run, k1);
	conf_box_release(run, k2);
	msb_scope_purge purge = { 0 };
	run->ops->dispose_scope(run->self, "conformance", k1->thread, &purge);
	if (purge.disposed != 2 || purge.has_undisposed)
		conf_fail(run, "dispose_scope of a conversation holding two sandboxes: disposed 2, nothing undisposed",
			  "disposed %llu%s%s", (unsigned long long)purge.disposed,
			  purge.has_undisposed ? ", undisposed: " : "",
			  purge.has_undisposed && purge.undisposed.detail ? purge.undisposed.detail : "");
	msb_scope_purge_free(&purge);
	if (conf_decided(run))
		return;
	msb_scope_purge again = { 0 };
	run->ops->dispose_scope(run->self, "conformance", k1->thread, &again);
	if (again.disposed != 0)
		conf_fail(run, "a second dispose_scope to count 0", "disposed %llu",
			  (unsigned long long)again.disposed);
	msb_scope_purge_free(&again);
	if (conf_decided(run) || !conf_box_reacquire(run, k1))
		return;
	int gone = conf_exists(run, k1, m1), kept = conf_exists(run, other, m3);
	if (gone < 0 || kept < 0)
		conf_skip(run, "nothing declared (exec or files_out) can look for a file");
	else if (gone)
		conf_fail(run, "the purged conversation's sandbox gone", "%s is still there", m1);
	else if (!kept)
		conf_fail(run, "another conversation left alone by dispose_scope", "%s, in thread %s, is gone",
			  m3, other->thread);
}

static const conf_case disposal_cases[] = {
	{ "dispose-leaves-nothing", 0, case_dispose_leaves_nothing },
	{ "dispose-unknown-key-quiet", 0, case_dispose_unknown_key },
	{ "failed-dispose-reported", MSB_BIT(MSB_CAP_EXEC), case_failed_dispose_reported },
	{ "dispose-scope-counts", 0, case_dispose_scope_counts },
};

const conf_suite conf_suite_disposal = {
	.name = "disposal",
	.cases = disposal_cases,
	.n_cases = sizeof(disposal_cases) / sizeof(disposal_cases[0]),
};
