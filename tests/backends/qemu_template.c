/*
 * qemu_template.c — qemu templates (issue 22), on real microVMs: sandboxes start as clones
 * of one saved guest; two clones never share an RNG state, a file or a process; a template
 * whose inputs changed is made anew; a corrupt template is refused and a boot serves,
 * saying why.
 *
 * The attack on shared RAM: a clone filling its memory leaves the template's RAM file (which
 * every clone maps copy-on-write) unchanged; with template_share_ram: false no clone maps
 * it at all. A clone's snapshot forks with the clone's files and processes.
 * TCG boots are slow: the suite boots four guests in all (the template, the changed
 * inputs' template, the fallback, the unshared template) and restores four clones and a fork. Skips (77) without QEMU or
 * the guest kernel.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "qemu_fixture.h"
#include "backend_cases.h"

#define TEMPLATE_CONFIG "memory: 256MiB\ntemplate: true\n"

static backend_fixture fx;
static msb_spec spec;

/* How many finished templates the state dir holds (build dirs are not counted). */
static int count_templates(const char *state, char *last, size_t n)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s/templates", state);
	DIR *d = opendir(dir);
	int count = 0;
	struct dirent *e;
	struct timespec newest = { 0, 0 };
	while (d && (e = readdir(d)))
		if (strlen(e->d_name) == 32) {
			count++;
			/* `last` is the newest (readdir's order is no order): the template just made. */
			char path[700];
			struct stat st;
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			if (last && stat(path, &st) == 0 &&
			    (st.st_mtim.tv_sec > newest.tv_sec ||
			     (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec >= newest.tv_nsec))) {
				newest = st.st_mtim;
				snprintf(last, n, "%s", path);
			}
		}
	if (d)
		closedir(d);
	return count;
}

/* Whether the sandbox's directory holds template.fallback (a boot served); its text. */
static bool fell_back(msb_sandbox_handle *h, char *why, size_t n)
{
	char *path = msb_driver_path(msb_driver_sandbox_box(h)->dir, "template.fallback");
	FILE *f = fopen(path, "re");
	free(path);
	if (why && n)
		why[0] = '\0';
	if (!f)
		return false;
	if (why && !fgets(why, (int)n, f))
		why[0] = '\0';
	fclose(f);
	return true;
}

/* The SHA-256 of a file, by sha256sum (64 hex digits), into `out`. */
static bool file_digest(const char *path, char out[65])
{
	char cmd[700];
	snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
	FILE *p = popen(cmd, "r");
	bool ok = p && fscanf(p, "%64s", out) == 1;
	if (p)
		pclose(p);
	return ok;
}

/* Whether QEMU `pid` maps `path`, and with which permissions (e.g. "rw-p"). */
static bool maps_file(pid_t pid, const char *path, char perms[8])
{
	char maps[64], line[4400];
	snprintf(maps, sizeof maps, "/proc/%ld/maps", (long)pid);
	FILE *f = fopen(maps, "re");
	bool found = false;
	while (f && !found && fgets(line, sizeof line, f))
		if (strstr(line, path)) {
			found = true;
			sscanf(line, "%*s %7s", perms);
		}
	if (f)
		fclose(f);
	return found;
}

/* The plugin again on the same state dir, with another configuration. */
static void reopen(const char *config)
{
	backend_fixture_close(&fx);
	msb_error err = MSB_ERROR_INIT;
	char *keep = strdup(fx.state);
	msb_errc rc = qemu_fixture_open(&fx, keep, config, &err);
	if (rc)
		fprintf(stderr, "reopen: %s\n", msb_error_message(&err));
	msb_error_clear(&err);
	free(keep);
	assert_int_equal(rc, MSB_OK);
}

static int group_setup(void **state)
{
	(void)state;
	msb_spec_init(&spec, "code");
	msb_error err = MSB_ERROR_INIT;
	if (qemu_fixture_open(&fx, NULL, TEMPLATE_CONFIG, &err) != MSB_OK) {
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
		msb_error_clear(&err);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	backend_fixture_close(&fx);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s/templates %s/snapshots", fx.state, fx.state);
	int rc = system(cmd);
	return qemu_fixture_leaks(&fx) || rc ? -1 : 0;
}

static void two_clones_share_nothing(void **state)
{
	(void)state;
	msb_sandbox_handle *a = backend_acquire(&fx, &spec, "clone-a", NULL);
	assert_non_null(a);
	char why[1024];
	if (fell_back(a, why, sizeof why))
		fail_msg("the first acquire booted instead of cloning: %s", why);
	assert_int_equal(count_templates(fx.state, NULL, 0), 1);
	msb_sandbox_handle *b = backend_acquire(&fx, &spec, "clone-b", NULL);
	assert_non_null(b);
	assert_false(fell_back(b, NULL, 0));
	assert_int_equal(count_templates(fx.state, NULL, 0), 1);

	/*
	 * The attack on the shared RAM: a clone writing its memory must not write the
	 * template's pages under the other clones. QEMU maps the template's RAM file privately
	 * (copy-on-write), and the file is unchanged after a clone filled 32 MiB of its memory.
	 */
	char tdir[700], ram[800], before[65], after[65], perms[8] = "";
	assert_int_equal(count_templates(fx.state, tdir, sizeof tdir), 1);
	snprintf(ram, sizeof ram, "%s/ram", tdir);
	assert_true(file_digest(ram, before));
	assert_true(maps_file(backend_recorded(a, "qemu.pid"), ram, perms));
	assert_int_equal(perms[3], 'p');
	msb_exec_result w = backend_run(&fx, a, 60, 0, "dd if=/dev/zero bs=1M count=32 2>/dev/null | tr '\\0' 'A' > /tmp/fill; echo ok");
	assert_string_equal(backend_out(&w), "ok\n");
	msb_exec_result_free(&w);
	assert_true(file_digest(ram, after));
	assert_string_equal(before, after);

	/* Each writes a file and leaves a process running; neither sees the other's. */
	msb_exec_result r = backend_run(&fx, a, 20, 0, "echo a > mine.txt; (exec sleep 6001 &) ; echo ok");
	assert_string_equal(backend_out(&r), "ok\n");
	msb_exec_result_free(&r);
	r = backend_run(&fx, b, 20, 0, "echo b > mine.txt; (exec sleep 6002 &) ; echo ok");
	assert_string_equal(backend_out(&r), "ok\n");
	msb_exec_result_free(&r);
	r = backend_run(&fx, a, 20, 0, "cat mine.txt; ps | grep -c 'sleep 600[2]'; ps | grep -c 'sleep 600[1]'");
	assert_string_equal(backend_out(&r), "a\n0\n1\n");
	msb_exec_result_free(&r);
	r = backend_run(&fx, b, 20, 0, "cat mine.txt; ps | grep -c 'sleep 600[1]'; ps | grep -c 'sleep 600[2]'");
	assert_string_equal(backend_out(&r), "b\n0\n1\n");
	msb_exec_result_free(&r);

	/*
	 * The kernel's generator: restored from one template, both would produce the same bytes
	 * until their next reseed; each was reseeded from host entropy on restore.
	 */
	msb_exec_result ra = backend_run(&fx, a, 20, 0, "head -c 32 /dev/urandom | od -An -tx1; hostname");
	msb_exec_result rb = backend_run(&fx, b, 20, 0, "head -c 32 /dev/urandom | od -An -tx1; hostname");
	assert_true(strlen(backend_out(&ra)) > 64);
	assert_string_not_equal(backend_out(&ra), backend_out(&rb));
	/* Its hostname is its own sandbox's name, and its clock is now's, not the template's. */
	assert_non_null(strstr(backend_out(&ra), msb_driver_sandbox_box(a)->name));
	assert_non_null(strstr(backend_out(&rb), msb_driver_sandbox_box(b)->name));
	msb_exec_result_free(&ra);
	msb_exec_result_free(&rb);
	r = backend_run(&fx, a, 20, 0, "date +%%s");
	long guest = atol(backend_out(&r));
	msb_exec_result_free(&r);
	long host = (long)time(NULL);
	assert_true(guest > host - 30 && guest < host + 30);

	/* A clone's snapshot (its RAM the private mapping) forks with what the clone had. */
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(fx.ops->snapshot_save(a, "of-a-clone", &err), MSB_OK);
	msb_key fk = backend_key("clone-fork", NULL);
	msb_sandbox_handle *fork = NULL;
	msb_errc frc = fx.ops->snapshot_start(fx.self, &fk, &spec, "of-a-clone", &fork, &err);
	if (frc)
		fprintf(stderr, "snapshot_start: %s\n", msb_error_message(&err));
	assert_int_equal(frc, MSB_OK);
	r = backend_run(&fx, fork, 20, 0, "cat mine.txt; ps | grep -c 'sleep 600[1]'");
	assert_string_equal(backend_out(&r), "a\n1\n");
	msb_exec_result_free(&r);
	assert_int_equal(fx.ops->snapshot_remove(fx.self, "of-a-clone", &err), MSB_OK);
	msb_error_clear(&err);
	fx.ops->release(fork);
	backend_dispose(&fx, "clone-fork", NULL);

	fx.ops->release(a);
	fx.ops->release(b);
	backend_dispose(&fx, "clone-a", NULL);
	backend_dispose(&fx, "clone-b", NULL);
}

static void changed_inputs_make_a_new_template(void **state)
{
	(void)state;
	reopen(TEMPLATE_CONFIG "template_warmup: [\"echo warm > /tmp/warm\"]\n");
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "changed", NULL);
	assert_non_null(h);
	assert_false(fell_back(h, NULL, 0));
	assert_int_equal(count_templates(fx.state, NULL, 0), 2);
	/* The warm-up ran in the template: its clone has what it left. */
	msb_exec_result r = backend_run(&fx, h, 20, 0, "cat /tmp/warm");
	assert_string_equal(backend_out(&r), "warm\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "changed", NULL);
}

static void corrupt_template_is_refused_and_a_boot_serves(void **state)
{
	(void)state;
	char dir[700], path[800];
	/* Only the changed inputs' template is this configuration's: corrupt every one. */
	char cmd[900];
	snprintf(cmd, sizeof cmd, "for s in %s/templates/*/state; do printf 'XXXXXXXX' | dd of=$s "
		 "bs=1 seek=4096 conv=notrunc status=none; done", fx.state);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(count_templates(fx.state, dir, sizeof dir), 2);
	snprintf(path, sizeof path, "%s/state", dir);
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "corrupt", NULL);
	assert_non_null(h);
	char why[1024];
	assert_true(fell_back(h, why, sizeof why));
	fprintf(stderr, "fallback said: %s", why);
	assert_non_null(strstr(why, "refused"));
	/* The refused template is gone (the next acquire makes it anew); the boot answers. */
	assert_int_equal(count_templates(fx.state, NULL, 0), 1);
	msb_exec_result r = backend_run(&fx, h, 20, 0, "echo booted");
	assert_string_equal(backend_out(&r), "booted\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "corrupt", NULL);
}

/* template_share_ram: false — the RAM is in the state; no clone maps a template's file. */
static void unshared_ram_is_each_clone_s_own(void **state)
{
	(void)state;
	reopen(TEMPLATE_CONFIG "template_share_ram: false\n");
	msb_sandbox_handle *h = backend_acquire(&fx, &spec, "unshared", NULL);
	assert_non_null(h);
	char why[1024];
	if (fell_back(h, why, sizeof why))
		fail_msg("booted instead of cloning: %s", why);
	/* QEMU maps the template's initramfs (it reads -initrd so); never a RAM file. */
	char perms[8], tdir[700], ram[800];
	count_templates(fx.state, tdir, sizeof tdir);
	snprintf(ram, sizeof ram, "%s/ram", tdir);
	assert_int_equal(access(ram, F_OK), -1);
	assert_false(maps_file(backend_recorded(h, "qemu.pid"), "/ram", perms));
	msb_exec_result r = backend_run(&fx, h, 20, 0, "echo unshared");
	assert_string_equal(backend_out(&r), "unshared\n");
	msb_exec_result_free(&r);
	fx.ops->release(h);
	backend_dispose(&fx, "unshared", NULL);
}

int main(void)
{
	char why[512];
	if (!qemu_fixture_usable(why, sizeof why)) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_clones_share_nothing),
		cmocka_unit_test(changed_inputs_make_a_new_template),
		cmocka_unit_test(corrupt_template_is_refused_and_a_boot_serves),
		cmocka_unit_test(unshared_ram_is_each_clone_s_own),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
