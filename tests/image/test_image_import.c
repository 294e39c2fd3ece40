/*
 * test_image_import.c — each source kind imports, verified: an OCI layout with two layers and
 * whiteouts (and the same as an OCI archive), a docker save archive, a rootfs tarball and a
 * directory; a blob whose content does not match its digest is refused and registers
 * nothing; rm and gc reclaim; names and oversized JSON are refused. Every layout here is
 * built by the test from real tars, with the digests computed as an OCI writer would.
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

#include "image_test.h"

static int setup(void **state)
{
	img_scratch *s = calloc(1, sizeof *s);
	img_scratch_make(s);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	img_scratch_remove(*state);
	free(*state);
	return 0;
}

/* Import, failing with the store's own message when it refuses. */
static void import_ok(const char *store, const char *name, const char *src, msb_image_record *r)
{
	msb_error err = MSB_ERROR_INIT;
	if (msb_image_import(store, name, src, NULL, r, &err) != MSB_OK)
		fail_msg("import %s %s: %s", name, src, msb_error_message(&err));
}

static void assert_file(const char *root, const char *rel, const char *want)
{
	char path[600], buf[256];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	if (!want) {
		struct stat st;
		if (lstat(path, &st) == 0)
			fail_msg("%s should not be in the image", rel);
		return;
	}
	if (!img_read(path, buf, sizeof buf))
		fail_msg("%s is missing from the image", rel);
	assert_string_equal(buf, want);
}

static void assert_oci_root(const msb_image_record *r)
{
	assert_file(r->root, "etc/keep", "kept\n");
	assert_file(r->root, "etc/gone", NULL);
	assert_file(r->root, "opq/old", NULL);
	assert_file(r->root, "opq/new", "new\n");
	assert_file(r->root, "etc/.wh.gone", NULL);
	assert_int_equal(r->n_layers, 2);
}

static void oci_layout_with_two_layers_and_whiteouts_imports(void **state)
{
	img_scratch *s = *state;
	char manifest[72], layer1[400], src[200];
	img_make_oci(s, manifest, layer1);
	snprintf(src, sizeof src, "%s/oci", s->src);
	msb_image_record r = { 0 };
	import_ok(s->store, "two", src, &r);
	assert_string_equal(r.digest, manifest);
	assert_string_equal(r.format, "oci-layout");
	assert_oci_root(&r);
	assert_int_equal(r.n_env, 2);
	assert_string_equal(r.env[1], "IMAGE_VAR=from-config");
	assert_string_equal(r.working_dir, "/srv");
	assert_string_equal(r.user, "1000");
	msb_image_record_free(&r);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_image_inspect(s->store, "two", &r, &err), MSB_OK);
	assert_string_equal(r.digest, manifest);
	msb_image_record_free(&r);
	assert_true(img_outside_intact(s));
}

static void oci_archive_imports_to_the_same_digest(void **state)
{
	img_scratch *s = *state;
	char manifest[72], layer1[400], cmd[700], tar[200];
	img_make_oci(s, manifest, layer1);
	snprintf(tar, sizeof tar, "%s/oci.tar", s->src);
	snprintf(cmd, sizeof cmd, "tar -C '%s/oci' -cf '%s' .", s->src, tar);
	assert_int_equal(system(cmd), 0);
	msb_image_record r = { 0 };
	import_ok(s->store, "arch", tar, &r);
	assert_string_equal(r.digest, manifest);
	assert_string_equal(r.format, "oci-archive");
	assert_oci_root(&r);
	msb_image_record_free(&r);
}

static void a_blob_that_does_not_match_its_digest_is_refused(void **state)
{
	img_scratch *s = *state;
	char manifest[72], layer1[400], src[200];
	img_make_oci(s, manifest, layer1);
	/* Same size, one byte changed: only the digest can tell. */
	FILE *f = fopen(layer1, "r+b");
	assert_non_null(f);
	fseek(f, 40, SEEK_SET);
	int c = fgetc(f);
	fseek(f, 40, SEEK_SET);
	fputc(c ^ 0x55, f);
	fclose(f);
	snprintf(src, sizeof src, "%s/oci", s->src);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_image_import(s->store, "bad", src, NULL, NULL, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "digest mismatch"));
	assert_non_null(strstr(msb_error_message(&err), "layer 1"));
	msb_error_clear(&err);
	msb_image_record r;
	assert_int_equal(msb_image_inspect(s->store, "bad", &r, &err), MSB_E_NOT_FOUND);
	msb_error_clear(&err);
	char images[300];
	snprintf(images, sizeof images, "%s/images", s->store);
	assert_int_equal(rmdir(images), 0); /* empty: nothing was unpacked */
}

static void docker_save_archive_imports(void **state)
{
	img_scratch *s = *state;
	char config[72], tar[200];
	img_make_docker(s, NULL, config, tar);
	msb_image_record r = { 0 };
	import_ok(s->store, "dock", tar, &r);
	assert_string_equal(r.digest, config);
	assert_string_equal(r.format, "docker-archive");
	assert_file(r.root, "bin/hello", "#!/bin/sh\necho docker\n");
	assert_file(r.root, "etc/old", NULL);
	assert_file(r.root, "etc/new", "y");
	assert_int_equal(r.n_env, 1);
	msb_image_record_free(&r);
}

static void docker_layer_not_matching_its_diff_id_is_refused(void **state)
{
	img_scratch *s = *state;
	char config[72], tar[200];
	img_make_docker(s, "sha256:0000000000000000000000000000000000000000000000000000000000000000",
		    config, tar);
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_image_import(s->store, "dock", tar, NULL, NULL, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), ID_B "/layer.tar"));
	assert_non_null(strstr(msb_error_message(&err), "digest mismatch"));
	msb_error_clear(&err);
}

static void rootfs_tarball_and_directory_import(void **state)
{
	img_scratch *s = *state;
	char tar[200], dir[200], sub[260];
	snprintf(tar, sizeof tar, "%s/rootfs.tar.gz", s->src);
	img_tar *t = img_tar_open(tar, "gzip");
	img_tar_dir(t, "./", 0755);
	img_tar_file(t, "./etc/os-release", "ID=test\n", 0644);
	img_tar_symlink(t, "./bin", "usr/bin");
	img_tar_close(t);
	char digest[72];
	img_sha256_file(tar, digest);
	msb_image_record r = { 0 };
	import_ok(s->store, "rootfs", tar, &r);
	assert_string_equal(r.digest, digest);
	assert_string_equal(r.format, "rootfs-tar");
	assert_file(r.root, "etc/os-release", "ID=test\n");
	msb_image_record_free(&r);
	snprintf(dir, sizeof dir, "%s/tree", s->src);
	snprintf(sub, sizeof sub, "%s/etc", dir);
	img_mkdirs(sub);
	snprintf(sub, sizeof sub, "%s/etc/motd", dir);
	img_write(sub, "tree\n", 5);
	snprintf(sub, sizeof sub, "%s/escape", dir);
	assert_int_equal(symlink(s->outside, sub), 0);
	import_ok(s->store, "tree", dir, &r);
	assert_string_equal(r.format, "directory");
	assert_file(r.root, "etc/motd", "tree\n");
	/* The link is packed as a link, not followed into what it points at. */
	char link[600], target[200];
	snprintf(link, sizeof link, "%s/escape", r.root);
	ssize_t n = readlink(link, target, sizeof target - 1);
	assert_true(n > 0);
	msb_image_record_free(&r);
	assert_true(img_outside_intact(s));
}

static void rm_and_gc_reclaim_and_ls_lists(void **state)
{
	img_scratch *s = *state;
	char manifest[72], layer1[400], src[200];
	img_make_oci(s, manifest, layer1);
	snprintf(src, sizeof src, "%s/oci", s->src);
	msb_error err = MSB_ERROR_INIT;
	import_ok(s->store, "a", src, NULL);
	import_ok(s->store, "b", src, NULL);
	msb_image_record *list;
	size_t n;
	assert_int_equal(msb_image_list(s->store, &list, &n, &err), MSB_OK);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].name, "a");
	assert_string_equal(list[1].digest, manifest);
	msb_image_records_free(list, n);
	size_t removed = 9;
	assert_int_equal(msb_image_remove(s->store, "a", &err), MSB_OK);
	assert_int_equal(msb_image_gc(s->store, &removed, &err), MSB_OK);
	assert_int_equal(removed, 0); /* b still uses everything */
	assert_int_equal(msb_image_remove(s->store, "b", &err), MSB_OK);
	assert_int_equal(msb_image_remove(s->store, "b", &err), MSB_E_NOT_FOUND);
	msb_error_clear(&err);
	assert_int_equal(msb_image_gc(s->store, &removed, &err), MSB_OK);
	assert_int_equal(removed, 1 + 4); /* the image, its two layers, config and manifest */
	char blobs[300];
	snprintf(blobs, sizeof blobs, "%s/blobs/sha256", s->store);
	assert_int_equal(rmdir(blobs), 0);
}

static void bad_names_and_oversized_json_are_refused(void **state)
{
	img_scratch *s = *state;
	msb_error err = MSB_ERROR_INIT;
	const char *bad[] = { "host", "busybox", "../x", "a/b", "", ".hidden", NULL };
	for (const char **b = bad; *b; b++) {
		assert_int_equal(msb_image_import(s->store, *b, s->src, NULL, NULL, &err),
				 MSB_E_VALUE);
		msb_error_clear(&err);
	}
	char manifest[72], layer1[400], src[200];
	img_make_oci(s, manifest, layer1);
	snprintf(src, sizeof src, "%s/oci", s->src);
	msb_image_limits lim;
	msb_image_limits_default(&lim);
	lim.max_json_bytes = 64;
	assert_int_equal(msb_image_import(s->store, "j", src, &lim, NULL, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "over the 64-byte limit"));
	msb_error_clear(&err);
}

int main(void)
{
	umask(022);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(oci_layout_with_two_layers_and_whiteouts_imports,
						setup, teardown),
		cmocka_unit_test_setup_teardown(oci_archive_imports_to_the_same_digest, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_blob_that_does_not_match_its_digest_is_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(docker_save_archive_imports, setup, teardown),
		cmocka_unit_test_setup_teardown(docker_layer_not_matching_its_diff_id_is_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(rootfs_tarball_and_directory_import, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rm_and_gc_reclaim_and_ls_lists, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_names_and_oversized_json_are_refused, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
