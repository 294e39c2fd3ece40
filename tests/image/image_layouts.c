/*
 * image_layouts.c — the image sources the tests build as real files: an OCI layout with two
 * layers and whiteouts, and a legacy `docker save` archive (image_test.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "image_test.h"

/* Move `tmp` to <blobs>/<hex of its digest>; the digest into `digest`. */
static void blob_in(const char *layout, const char *tmp, char digest[72])
{
	img_sha256_file(tmp, digest);
	char path[512];
	snprintf(path, sizeof path, "%s/blobs/sha256/%s", layout, digest + 7);
	assert_int_equal(rename(tmp, path), 0);
}

static void json_blob(const char *layout, const char *json, char digest[72])
{
	char tmp[400];
	snprintf(tmp, sizeof tmp, "%s/json.tmp", layout);
	img_write(tmp, json, strlen(json));
	blob_in(layout, tmp, digest);
}

/* index.json naming `manifest`, and the oci-layout marker. */
static void layout_index(const char *layout, const char *manifest)
{
	char json[400], path[400];
	snprintf(json, sizeof json,
		 "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		 "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"%s\",\"size\":1}]}",
		 manifest);
	snprintf(path, sizeof path, "%s/index.json", layout);
	img_write(path, json, strlen(json));
	snprintf(path, sizeof path, "%s/oci-layout", layout);
	img_write(path, "{\"imageLayoutVersion\":\"1.0.0\"}", 30);
}

/*
 * An OCI layout at <src>/oci: layer 1 (gzip) has etc/keep, etc/gone, opq/old and bin/hello;
 * layer 2 (plain) whites out etc/gone, makes opq opaque with opq/new. The manifest digest is
 * written to `manifest`; the first layer's blob path to `layer1`.
 */
void img_make_oci_with(const img_scratch *s, const char *busybox, char manifest[72],
		       char layer1[400])
{
	char layout[300], blobs[340], tmp[340];
	snprintf(layout, sizeof layout, "%s/oci", s->src);
	snprintf(blobs, sizeof blobs, "%s/blobs/sha256", layout);
	img_mkdirs(blobs);
	snprintf(tmp, sizeof tmp, "%s/l.tmp", layout);
	img_tar *t = img_tar_open(tmp, "gzip");
	img_tar_dir(t, "etc", 0755);
	img_tar_file(t, "etc/keep", "kept\n", 0644);
	img_tar_file(t, "etc/gone", "gone\n", 0644);
	img_tar_file(t, "opq/old", "old\n", 0644);
	img_tar_file(t, "bin/hello", "#!/bin/sh\necho hello from the image\n", 0755);
	if (busybox)
		img_tar_busybox(t, busybox);
	img_tar_close(t);
	char l1[72], l2[72], cfg[72];
	blob_in(layout, tmp, l1);
	snprintf(layer1, 400, "%.300s/%s", blobs, l1 + 7);
	t = img_tar_open(tmp, "none");
	img_tar_file(t, "etc/.wh.gone", "", 0644);
	img_tar_file(t, "opq/.wh..wh..opq", "", 0644);
	img_tar_file(t, "opq/new", "new\n", 0644);
	img_tar_close(t);
	blob_in(layout, tmp, l2);
	json_blob(layout, "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":"
		  "[\"PATH=/bin:/usr/bin\",\"IMAGE_VAR=from-config\"],\"WorkingDir\":\"/srv\","
		  "\"User\":\"1000\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}", cfg);
	char json[1200];
	snprintf(json, sizeof json,
		 "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		 "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
		 "\"digest\":\"%s\",\"size\":1},\"layers\":["
		 "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"%s\",\"size\":1},"
		 "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"%s\",\"size\":1}]}",
		 cfg, l1, l2);
	json_blob(layout, json, manifest);
	layout_index(layout, manifest);
}


/* A legacy `docker save`: manifest.json, <config hex>.json, <id>/layer.tar. */
void img_make_docker_with(const img_scratch *s, const char *busybox, const char *wrong_diff,
			  char config[72], char tar[200])
{
	char dir[300], tmp[400], path[400], l1[72], l2[72];
	snprintf(dir, sizeof dir, "%s/docker", s->src);
	img_mkdirs(dir);
	snprintf(tmp, sizeof tmp, "%s/l.tmp", dir);
	img_tar *t = img_tar_open(tmp, "none");
	img_tar_file(t, "bin/hello", "#!/bin/sh\necho docker\n", 0755);
	img_tar_file(t, "etc/old", "x", 0644);
	if (busybox)
		img_tar_busybox(t, busybox);
	img_tar_close(t);
	img_sha256_file(tmp, l1);
	snprintf(path, sizeof path, "%s/%s", dir, ID_A);
	img_mkdirs(path);
	snprintf(path, sizeof path, "%s/%s/layer.tar", dir, ID_A);
	assert_int_equal(rename(tmp, path), 0);
	t = img_tar_open(tmp, "none");
	img_tar_file(t, "etc/.wh.old", "", 0644);
	img_tar_file(t, "etc/new", "y", 0644);
	img_tar_close(t);
	img_sha256_file(tmp, l2);
	snprintf(path, sizeof path, "%s/%s", dir, ID_B);
	img_mkdirs(path);
	snprintf(path, sizeof path, "%s/%s/layer.tar", dir, ID_B);
	assert_int_equal(rename(tmp, path), 0);
	char json[1000];
	snprintf(json, sizeof json, "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":"
		 "{\"Env\":[\"FROM=docker\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":"
		 "[\"%s\",\"%s\"]}}", l1, wrong_diff ? wrong_diff : l2);
	img_sha256_buf(json, strlen(json), config);
	snprintf(path, sizeof path, "%s/%s.json", dir, config + 7);
	img_write(path, json, strlen(json));
	snprintf(json, sizeof json, "[{\"Config\":\"%s.json\",\"RepoTags\":[\"t:1\"],\"Layers\":"
		 "[\"" ID_A "/layer.tar\",\"" ID_B "/layer.tar\"]}]", config + 7);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	img_write(path, json, strlen(json));
	snprintf(tar, 200, "%s/save.tar", s->src);
	char cmd[800];
	snprintf(cmd, sizeof cmd, "tar -C '%s' -cf '%s' .", dir, tar);
	assert_int_equal(system(cmd), 0);
}


void img_make_oci(const img_scratch *s, char manifest[72], char layer1[400])
{
	img_make_oci_with(s, NULL, manifest, layer1);
}

void img_make_docker(const img_scratch *s, const char *wrong_diff, char config[72],
		     char tar[200])
{
	img_make_docker_with(s, NULL, wrong_diff, config, tar);
}

void img_tar_busybox(img_tar *t, const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *data = malloc((size_t)n + 1);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	data[n] = '\0';
	img_tar_blob(t, "bin/busybox", data, (size_t)n, 0755);
	img_tar_symlink(t, "bin/sh", "busybox");
	free(data);
}

void img_make_oci_user(const img_scratch *s, const char *busybox, const char *leaf,
		       const char *user, const char *passwd, const char *group)
{
	char layout[300], blobs[340], tmp[340];
	snprintf(layout, sizeof layout, "%s/%s", s->src, leaf);
	snprintf(blobs, sizeof blobs, "%s/blobs/sha256", layout);
	img_mkdirs(blobs);
	snprintf(tmp, sizeof tmp, "%s/l.tmp", layout);
	img_tar *t = img_tar_open(tmp, "gzip");
	img_tar_dir(t, "etc", 0755);
	if (passwd)
		img_tar_file(t, "etc/passwd", passwd, 0644);
	if (group)
		img_tar_file(t, "etc/group", group, 0644);
	if (busybox)
		img_tar_busybox(t, busybox);
	img_tar_close(t);
	char layer[72], cfg[72], manifest[72];
	blob_in(layout, tmp, layer);
	char json[1200];
	snprintf(json, sizeof json, "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":"
		 "[\"PATH=/bin\"]%s%s%s},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
		 user ? ",\"User\":\"" : "", user ? user : "", user ? "\"" : "");
	json_blob(layout, json, cfg);
	snprintf(json, sizeof json,
		 "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		 "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
		 "\"digest\":\"%s\",\"size\":1},\"layers\":["
		 "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"%s\","
		 "\"size\":1}]}", cfg, layer);
	json_blob(layout, json, manifest);
	layout_index(layout, manifest);
}
