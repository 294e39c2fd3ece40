/*
 * qemu_initramfs.c — the qemu backend's cpio newc writer, read back by an independent
 * parser here: headers, name and data padding, modes, symlinks, the trailer, atomic
 * replacement, and the refusals (a missing host file) — without booting anything.
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

#include "initramfs.h"
#include "msb_test.h"

typedef struct member {
	char name[256];
	unsigned mode;
	size_t size;
	unsigned char data[64];
} member;

static unsigned long hex8(const unsigned char *p)
{
	char buf[9];
	memcpy(buf, p, 8);
	buf[8] = '\0';
	return strtoul(buf, NULL, 16);
}

/* Parse a newc archive from memory into `out`; returns the count, or -1 on a format error. */
static int parse(const unsigned char *a, size_t len, member *out, int max)
{
	size_t pos = 0;
	int n = 0;
	while (pos + 110 <= len && n < max) {
		if (memcmp(a + pos, "070701", 6) != 0)
			return -1;
		unsigned mode = (unsigned)hex8(a + pos + 14);
		size_t size = hex8(a + pos + 54), namesz = hex8(a + pos + 94);
		size_t name_at = pos + 110;
		if (name_at + namesz > len || a[name_at + namesz - 1] != '\0')
			return -1;
		size_t data_at = (name_at + namesz + 3) & ~(size_t)3;
		if (data_at + size > len)
			return -1;
		member *m = &out[n++];
		snprintf(m->name, sizeof m->name, "%s", (const char *)a + name_at);
		m->mode = mode;
		m->size = size;
		memcpy(m->data, a + data_at, size < sizeof m->data ? size : sizeof m->data);
		pos = (data_at + size + 3) & ~(size_t)3;
		if (!strcmp(m->name, "TRAILER!!!"))
			return pos == len ? n : -1;
	}
	return -1;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static unsigned char buf[1 << 16];
	*len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	return buf;
}

static void writes_what_the_kernel_reads(void **state)
{
	(void)state;
	char dir[] = "/tmp/msb-initramfs-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char host[128], out[128];
	snprintf(host, sizeof host, "%s/payload", dir);
	snprintf(out, sizeof out, "%s/out.cpio", dir);
	FILE *f = fopen(host, "w");
	assert_non_null(f);
	fputs("abcde", f); /* five bytes: the data needs padding */
	fclose(f);

	msb_initramfs_entry e[] = {
		{ "bin", S_IFDIR | 0755, NULL, NULL, 0 },
		{ "bin/tool", S_IFREG | 0755, host, NULL, 0 },
		{ "bin/sh", S_IFLNK | 0777, NULL, "/bin/busybox", 12 },
		{ "msb/args", S_IFREG | 0644, NULL, "a\0bc\0", 5 },
	};
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_initramfs_write(out, e, 4, &err), MSB_OK);
	size_t len;
	unsigned char *a = slurp(out, &len);
	assert_int_equal(len % 4, 0);
	member m[8];
	assert_int_equal(parse(a, len, m, 8), 5);
	assert_string_equal(m[0].name, "bin");
	assert_int_equal(m[0].mode, S_IFDIR | 0755);
	assert_string_equal(m[1].name, "bin/tool");
	assert_int_equal(m[1].size, 5);
	assert_memory_equal(m[1].data, "abcde", 5);
	assert_int_equal(m[2].mode, S_IFLNK | 0777);
	assert_memory_equal(m[2].data, "/bin/busybox", 12);
	assert_int_equal(m[3].size, 5);
	assert_memory_equal(m[3].data, "a\0bc\0", 5);
	assert_string_equal(m[4].name, "TRAILER!!!");

	/* Rewriting replaces the archive whole, and leaves no temporary beside it. */
	assert_int_equal(msb_initramfs_write(out, e, 1, &err), MSB_OK);
	a = slurp(out, &len);
	assert_int_equal(parse(a, len, m, 8), 2);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 2", dir);
	assert_int_equal(system(cmd), 0);

	/* A host file that is not there is refused by name, and the old archive stays. */
	msb_initramfs_entry bad[] = { { "x", S_IFREG | 0644, "/nonexistent/file", NULL, 0 } };
	assert_int_equal(msb_initramfs_write(out, bad, 1, &err), MSB_E_NOT_FOUND);
	assert_non_null(strstr(msb_error_message(&err), "/nonexistent/file"));
	msb_error_clear(&err);
	a = slurp(out, &len);
	assert_int_equal(parse(a, len, m, 8), 2);
	assert_int_equal(system(cmd), 0);

	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(writes_what_the_kernel_reads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
