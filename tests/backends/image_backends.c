/*
 * image_backends.c — store images run on the real engines: an OCI layout (two layers,
 * whiteouts), a docker save archive and a rootfs tarball, each imported into a store of the
 * test's own and run by bwrap, gvisor and qemu (each skipped with its reason when the engine is
 * missing); the process backend refuses any image but the host's. The image carries the microVM guest's static busybox, so the commands run are
 * the image's and not the host's; its root is read-only and the spec's work_dir writable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/image_store.h>

#include "bwrap_fixture.h"
#include "gvisor_fixture.h"
#include "qemu_fixture.h"
#include "backend_cases.h"
#include "../image/image_test.h"

static img_scratch scratch;
static char busybox[512];
static msb_spec spec;

typedef struct engine {
	const char *name;
	backend_opener open;
	bool (*usable)(char *why, size_t n);
} engine;

/* Import the three kinds under names oci, docker, rootfs. */
static void import_all(void)
{
	char manifest[72], layer1[400], config[72], tar[200], src[200];
	msb_error err = MSB_ERROR_INIT;
	img_make_oci_with(&scratch, busybox, manifest, layer1);
	snprintf(src, sizeof src, "%s/oci", scratch.src);
	assert_int_equal(msb_image_import(scratch.store, "oci", src, NULL, NULL, &err), MSB_OK);
	img_make_docker_with(&scratch, busybox, NULL, config, tar);
	assert_int_equal(msb_image_import(scratch.store, "docker", tar, NULL, NULL, &err), MSB_OK);
	snprintf(src, sizeof src, "%s/rootfs.tar.gz", scratch.src);
	img_tar *t = img_tar_open(src, "gzip");
	img_tar_busybox(t, busybox);
	img_tar_file(t, "etc/marker", "rootfs\n", 0644);
	img_tar_close(t);
	assert_int_equal(msb_image_import(scratch.store, "rootfs", src, NULL, NULL, &err), MSB_OK);
	/* Users by name, from the image's own account files (the host has neither). */
	static const char passwd[] = "root:x:0:0::/root:/bin/sh\nappuser:x:1234:2345::/:/bin/sh\n";
	static const char groups[] = "root:x:0:\nappgroup:x:3456:\n";
	img_make_oci_user(&scratch, busybox, "user", "appuser:appgroup", passwd, groups);
	img_make_oci_user(&scratch, busybox, "ghost", "ghost", passwd, groups);
	const char *const names[] = { "user", "ghost" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(src, sizeof src, "%s/%s", scratch.src, names[i]);
		assert_int_equal(msb_image_import(scratch.store, names[i], src, NULL, NULL, &err),
				 MSB_OK);
	}
}

/* Close the plugin and remove its state directory. */
static void close_and_remove(backend_fixture *fx)
{
	backend_fixture_close(fx);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->state);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fx->state);
}

/* In the sandbox of `image`, `script` (run by the image's busybox sh) prints `want`. */
static void runs(backend_fixture *fx, const char *image, const char *script, const char *want)
{
	msb_spec s = spec;
	s.image = image;
	msb_sandbox_handle *h = backend_acquire(fx, &s, image, NULL);
	assert_non_null(h);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .timeout = 60 };
	msb_exec_result r = { 0 };
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = fx->ops->exec(h, &req, &r, &err);
	/* The verdict first, the sandbox disposed, then the failure: a failed assertion jumps
	 * out, and must not leave a VM or container running behind it. */
	char why[1024] = "";
	if (rc)
		snprintf(why, sizeof why, "%s: exec: %s", image, msb_error_message(&err));
	else if (r.out.len != strlen(want) || memcmp(r.out.data, want, r.out.len))
		snprintf(why, sizeof why, "%s: printed \"%.*s\" (stderr \"%.*s\"), wanted \"%s\"",
			 image, (int)r.out.len, r.out.data ? (char *)r.out.data : "",
			 (int)r.err.len, r.err.data ? (char *)r.err.data : "", want);
	msb_error_clear(&err);
	msb_exec_result_free(&r);
	fx->ops->release(h);
	backend_dispose(fx, image, NULL);
	if (why[0])
		fail_msg("%s", why);
}

/* A spec of `image` is refused at acquire (MSB_E_VALUE, the message holding `says`);
 * nothing is left. */
static void image_is_refused(backend_fixture *fx, const char *image, const char *says)
{
	msb_spec s = spec;
	s.image = image;
	msb_key k = backend_key(image, NULL);
	msb_sandbox_handle *h = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(fx->ops->acquire(fx->self, &k, &s, &h, &err), MSB_E_VALUE);
	if (!strstr(msb_error_message(&err), says))
		fail_msg("the refusal of image %s says \"%s\", not \"%s\"", image,
			 msb_error_message(&err), says);
	msb_error_clear(&err);
	msb_disposal_failure f = { 0 };
	fx->ops->dispose(fx->self, &k, &f);
	msb_disposal_failure_free(&f);
}

/*
 * The image config's Env reaches every command (the OCI image's PATH and IMAGE_VAR, the
 * docker archive's FROM); the spec's work_dir wins over the image's WorkingDir (/srv), as
 * the directory commands start in and as HOME; a request's own variable wins over the image's.
 */
static void image_config_honoured(backend_fixture *fx)
{
	runs(fx, "oci", "echo $IMAGE_VAR $PATH $HOME; pwd",
	     "from-config /bin:/usr/bin /msb/work\n/msb/work\n");
	runs(fx, "docker", "echo $FROM", "docker\n");
	runs(fx, "rootfs", "echo ${IMAGE_VAR:-unset}", "unset\n");
}

/*
 * The image config's User is who the commands are: "1000" (the OCI image) is uid 1000 in
 * group 0, "appuser:appgroup" the ids the image's own /etc/passwd and /etc/group give; the
 * work directory is that user's and writable, /tmp too, the image's root not. A User the
 * image does not define is refused at acquire, naming it and the file, and leaves nothing.
 */
static void image_user_honoured(backend_fixture *fx)
{
	runs(fx, "oci", "busybox id -u; busybox id -g; busybox grep CapEff /proc/self/status",
	     "1000\n0\nCapEff:\t0000000000000000\n");
	runs(fx, "user", "busybox id -u; busybox id -g; echo w > w && cat w; busybox stat -c %u .;"
	     "echo t > /tmp/t && cat /tmp/t; echo x > /etc/x 2>/dev/null || echo denied",
	     "1234\n3456\nw\n1234\nt\ndenied\n");
	image_is_refused(fx, "ghost", "config User \"ghost\" refused: user ghost is not in the "
			 "image's /etc/passwd");
}

static void run_on(const engine *e)
{
	char why[512];
	if (!e->usable(why, sizeof why)) {
		printf("skip %s: %s\n", e->name, why);
		skip();
	}
	char extra[300];
	snprintf(extra, sizeof extra, "images_dir: %s\n", scratch.store);
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	if (e->open(&fx, NULL, extra, &err) != MSB_OK)
		fail_msg("open %s: %s", e->name, msb_error_message(&err));
	/* Whiteouts applied: etc/gone and opq/old are not there, the rest is; root read-only. */
	runs(&fx, "oci", "cat /etc/keep /opq/new; ls /etc/gone /opq/old 2>/dev/null;"
	     "echo x > /etc/new 2>/dev/null || echo ro; echo w > w && cat w",
	     "kept\nnew\nro\nw\n");
	runs(&fx, "docker", "cat /etc/new; ls /etc/old 2>/dev/null; echo", "y\n");
	runs(&fx, "rootfs", "cat /etc/marker; test -e /usr/bin/python3 || echo no-host-usr",
	     "rootfs\nno-host-usr\n");
	image_config_honoured(&fx);
	image_user_honoured(&fx);
	/* A name in neither config images: nor the store is refused, naming the store. */
	image_is_refused(&fx, "absent", scratch.store);
	close_and_remove(&fx);
}

static void bwrap_runs_store_images(void **state)
{
	(void)state;
	static const engine e = { "bwrap", bwrap_fixture_open, bwrap_fixture_usable };
	run_on(&e);
}

static void gvisor_runs_store_images(void **state)
{
	(void)state;
	static const engine e = { "gvisor", gvisor_fixture_open, gvisor_fixture_usable };
	run_on(&e);
}

/* Import a rootfs tarball whose /etc/marker says `marker`, as `name`. */
static void import_marker(const char *name, const char *marker)
{
	char src[200];
	snprintf(src, sizeof src, "%s/%s-%s.tar", scratch.src, name, marker);
	img_tar *t = img_tar_open(src, "none");
	img_tar_busybox(t, busybox);
	img_tar_file(t, "etc/marker", marker, 0644);
	img_tar_close(t);
	msb_error err = MSB_ERROR_INIT;
	if (msb_image_import(scratch.store, name, src, NULL, NULL, &err) != MSB_OK)
		fail_msg("import %s: %s", name, msb_error_message(&err));
}

/* bwrap over the test's store, with `image` imported as v1 (skipped when bwrap cannot run). */
static void bwrap_on_store(backend_fixture *fx, const char *image)
{
	char why[512];
	if (!bwrap_fixture_usable(why, sizeof why)) {
		printf("skip bwrap: %s\n", why);
		skip();
	}
	import_marker(image, "v1");
	char extra[300];
	snprintf(extra, sizeof extra, "images_dir: %s\n", scratch.store);
	msb_error err = MSB_ERROR_INIT;
	if (bwrap_fixture_open(fx, NULL, extra, &err) != MSB_OK)
		fail_msg("open bwrap: %s", msb_error_message(&err));
}

/* `script`'s output in the sandbox of (thread "moving", image "moving"); not disposed. */
static void moving_prints(backend_fixture *fx, const char *script, const char *want)
{
	msb_spec s = spec;
	s.image = "moving";
	msb_sandbox_handle *h = backend_acquire(fx, &s, "moving", NULL);
	assert_non_null(h);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	msb_exec_request req = { .argv = argv, .timeout = 60 };
	msb_exec_result r = { 0 };
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(fx->ops->exec(h, &req, &r, &err), MSB_OK);
	if (r.out.len != strlen(want) || memcmp(r.out.data, want, r.out.len))
		fail_msg("printed \"%.*s\", wanted \"%s\"", (int)r.out.len,
			 r.out.data ? (char *)r.out.data : "", want);
	msb_exec_result_free(&r);
	fx->ops->release(h);
}

/*
 * A key's sandbox is of the image it started from: re-acquired with the image unchanged it
 * is the same sandbox (its work dir kept), re-acquired after the name was re-imported with
 * other content it is a fresh one from the new image.
 */
/* The digest the backend's image_digest operation reports for image "moving". */
static void digest_of_moving(backend_fixture *fx, char *out)
{
	msb_spec s = spec;
	s.image = "moving";
	msb_error err = MSB_ERROR_INIT;
	assert_non_null(fx->ops->image_digest);
	if (fx->ops->image_digest(fx->self, &s, out, MSB_IMAGE_DIGEST_SIZE, &err) != MSB_OK)
		fail_msg("image_digest: %s", msb_error_message(&err));
}

static void reimport_on(const engine *e, const char *extra_config)
{
	char why[512];
	if (!e->usable(why, sizeof why)) {
		printf("skip %s: %s\n", e->name, why);
		skip();
	}
	import_marker("moving", "v1");
	char extra[400];
	snprintf(extra, sizeof extra, "images_dir: %s\n%s", scratch.store, extra_config);
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	if (e->open(&fx, NULL, extra, &err) != MSB_OK)
		fail_msg("open %s: %s", e->name, msb_error_message(&err));
	char d1[MSB_IMAGE_DIGEST_SIZE], d2[MSB_IMAGE_DIGEST_SIZE];
	digest_of_moving(&fx, d1);
	msb_image_record rec;
	assert_int_equal(msb_image_inspect(scratch.store, "moving", &rec, &err), MSB_OK);
	assert_string_equal(d1, rec.digest);
	msb_image_record_free(&rec);
	moving_prints(&fx, "cat /etc/marker; echo kept > w", "v1");
	moving_prints(&fx, "cat /etc/marker w", "v1kept\n");
	import_marker("moving", "v2");
	digest_of_moving(&fx, d2);
	assert_string_not_equal(d1, d2);
	moving_prints(&fx, "cat /etc/marker; cat w 2>/dev/null; true", "v2");
	backend_dispose(&fx, "moving", NULL);
	close_and_remove(&fx);
}

/*
 * Warm pools (issue 22): a pool entry started from an image is adopted while the image is
 * what it was, and refused as stale (MSB_E_VALUE, the entry left for the host to dispose)
 * once the name was re-imported: a pooled sandbox of the old image is never handed out.
 */
static void a_pool_entry_of_a_reimported_image_is_stale(void **state)
{
	(void)state;
	backend_fixture fx;
	bwrap_on_store(&fx, "pooled");
	msb_error err = MSB_ERROR_INIT;
	msb_spec s = spec;
	s.image = "pooled";
	msb_key e1 = { "msb-pool", "bp", "", "e1" }, e2 = { "msb-pool", "bp", "", "e2" };
	msb_key k1 = backend_key("adopted", NULL), k2 = backend_key("stale", NULL);
	msb_sandbox_handle *h = NULL;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fx.ops->acquire(fx.self, i ? &e2 : &e1, &s, &h, &err), MSB_OK);
		fx.ops->release(h);
	}
	h = NULL;
	assert_int_equal(fx.ops->adopt(fx.self, &e1, &k1, &s, &h, &err), MSB_OK);
	assert_non_null(h);
	fx.ops->release(h);
	import_marker("pooled", "v2");
	h = NULL;
	assert_int_equal(fx.ops->adopt(fx.self, &e2, &k2, &s, &h, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "stale"));
	assert_null(h);
	msb_error_clear(&err);
	msb_disposal_failure f = { 0 };
	assert_false(fx.ops->dispose(fx.self, &e2, &f));
	assert_false(fx.ops->dispose(fx.self, &k1, &f));
	assert_false(fx.ops->dispose(fx.self, &k2, &f));
	close_and_remove(&fx);
}

/*
 * A key's sandbox is of the image it started from: re-acquired with the image unchanged it
 * is the same sandbox (its work dir kept), re-acquired after the name was re-imported with
 * other content it is a fresh one from the new image — on each engine — and the digest the
 * backend reports (what the router keys its table by and the observer sees) moves with it.
 */
static void bwrap_reimported_image_is_not_served_by_the_old_sandbox(void **state)
{
	(void)state;
	static const engine e = { "bwrap", bwrap_fixture_open, bwrap_fixture_usable };
	reimport_on(&e, "");
}

static void gvisor_reimported_image_is_not_served_by_the_old_sandbox(void **state)
{
	(void)state;
	static const engine e = { "gvisor", gvisor_fixture_open, gvisor_fixture_usable };
	reimport_on(&e, "");
}

static void qemu_reimported_image_is_not_served_by_the_old_sandbox(void **state)
{
	(void)state;
	static const engine e = { "qemu", qemu_fixture_open, qemu_fixture_usable };
	reimport_on(&e, "boot_timeout: 120s\n");
}

/* The process backend has no image to give but the host's, and says so rather than run. */
/*
 * qemu: the image as a read-only erofs disk under an overlay, built once per digest and
 * cached beside the image; the agent still from the initramfs. The overlay's upper layer
 * takes writes (the root is writable inside the VM, never the cached disk).
 */
static void qemu_runs_store_images(void **state)
{
	(void)state;
	static const engine e = { "qemu", qemu_fixture_open, qemu_fixture_usable };
	char why[512];
	if (!e.usable(why, sizeof why)) {
		printf("skip qemu: %s\n", why);
		skip();
	}
	char extra[300];
	/* rev reverses its stdin's lines: only the image's own runtime would print "cba". */
	snprintf(extra, sizeof extra, "images_dir: %s\nboot_timeout: 120s\n"
		 "image_run_code:\n  rootfs: [/bin/busybox, rev]\n", scratch.store);
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	if (e.open(&fx, NULL, extra, &err) != MSB_OK)
		fail_msg("open qemu: %s", msb_error_message(&err));
	/* The OCI image runs as its User, 1000, who may not write the image's /etc; root (the
	 * docker archive sets no User) may, into the overlay's upper layer. */
	runs(&fx, "oci", "cat /etc/keep /opq/new; ls /etc/gone /opq/old 2>/dev/null;"
	     "echo w > /etc/w 2>/dev/null || echo denied; test -x /msb/agent && echo agent",
	     "kept\nnew\ndenied\nagent\n");
	runs(&fx, "docker", "cat /etc/new; ls /etc/old 2>/dev/null; echo; echo w > /etc/w && cat /etc/w",
	     "y\nw\n");
	runs(&fx, "rootfs", "cat /etc/marker", "rootfs\n");
	image_config_honoured(&fx);
	image_user_honoured(&fx);
	/* The agents hold their ports open from before the drop: the image's user can open
	 * none of them (not even between two host connections). */
	runs(&fx, "user", "test -e /dev/virtio-ports/msb.agent.0 && echo port;"
	     "for p in /dev/virtio-ports/*; do (: < $p) 2>/dev/null && echo opened $p;"
	     "done; echo none", "port\nnone\n");
	msb_spec rs = spec;
	rs.image = "rootfs";
	msb_sandbox_handle *rh = backend_acquire(&fx, &rs, "rootfs-code", NULL);
	assert_non_null(rh);
	msb_exec_result res = { 0 };
	assert_int_equal(fx.ops->run_code(rh, "abc\n", 60, &res, &err), MSB_OK);
	assert_int_equal(res.out.len, 4);
	assert_memory_equal(res.out.data, "cba\n", 4);
	msb_exec_result_free(&res);
	fx.ops->release(rh);
	backend_dispose(&fx, "rootfs-code", NULL);
	msb_image_record r;
	assert_int_equal(msb_image_inspect(scratch.store, "rootfs", &r, &err), MSB_OK);
	char block[600];
	snprintf(block, sizeof block, "%s/rootfs.erofs", r.dir);
	assert_int_equal(access(block, R_OK), 0);
	msb_image_record_free(&r);
	image_is_refused(&fx, "absent", "image \"absent\" refused");
	backend_fixture_close(&fx);
	assert_int_equal(qemu_fixture_leaks(&fx), 0);
}

static void process_refuses_any_image_but_host(void **state)
{
	(void)state;
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = backend_fixture_state(&fx, NULL, "/tmp/msb-image-process-XXXXXX", &err);
	if (!rc)
		rc = backend_fixture_load(&fx, MSB_TEST_MODULE("plugins/process", "process"), &err,
					  "state_dir: %s\nagent: %s\n", fx.state, BACKEND_FIXTURE_AGENT);
	if (rc)
		fail_msg("open process: %s", msb_error_message(&err));
	msb_spec s = spec;
	s.image = "oci";
	msb_key k = backend_key("process-image", NULL);
	msb_sandbox_handle *h = NULL;
	assert_int_equal(fx.ops->acquire(fx.self, &k, &s, &h, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "image \"oci\" refused"));
	msb_error_clear(&err);
	msb_disposal_failure f = { 0 };
	fx.ops->dispose(fx.self, &k, &f);
	msb_disposal_failure_free(&f);
	close_and_remove(&fx);
}

int main(void)
{
	const char *guest = getenv("MSB_QEMU_GUEST");
	snprintf(busybox, sizeof busybox, "%s/busybox", guest ? guest : "build/qemu-guest");
	if (access(busybox, X_OK) != 0) {
		printf("skip: no static busybox at %s (set MSB_QEMU_GUEST)\n", busybox);
		return 77;
	}
	umask(022);
	img_scratch_make(&scratch);
	chmod(scratch.dir, 0755);
	import_all();
	msb_spec_init(&spec, "image-test");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bwrap_runs_store_images),
		cmocka_unit_test(gvisor_runs_store_images),
		cmocka_unit_test(bwrap_reimported_image_is_not_served_by_the_old_sandbox),
		cmocka_unit_test(gvisor_reimported_image_is_not_served_by_the_old_sandbox),
		cmocka_unit_test(qemu_reimported_image_is_not_served_by_the_old_sandbox),
		cmocka_unit_test(a_pool_entry_of_a_reimported_image_is_stale),
		cmocka_unit_test(qemu_runs_store_images),
		cmocka_unit_test(process_refuses_any_image_but_host),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	img_scratch_remove(&scratch);
	return failed ? 1 : 0;
}
