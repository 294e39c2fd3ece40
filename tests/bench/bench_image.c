/*
 * bench_image.c — importing an image into the store against a bare `tar -x` of the same
 * layer, in the same run (target: import ≤ 1.5× tar). The layer is $MSB_BENCH_IMAGE_LAYER
 * when set (e.g. the python image's rootfs tarball), else a gzip tar of the host's
 * /usr/lib/python3.11 made once here. Import includes what tar does not: copying the blob
 * into the store with its sha256, and opening every entry beneath the root with openat2.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msb/image_store.h>

#include "bench_stats.h"

#define ROUNDS 3

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

int main(void)
{
	char dir[] = "/tmp/msb-bench-image-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char layer[128];
	const char *given = getenv("MSB_BENCH_IMAGE_LAYER");
	if (given) {
		snprintf(layer, sizeof layer, "%s", given);
	} else {
		snprintf(layer, sizeof layer, "%s/layer.tar.gz", dir);
		if (sh("tar -C / -czf '%s' usr/lib/python3.11 2>/dev/null", layer) != 0) {
			printf("skip: cannot pack /usr/lib/python3.11\n");
			sh("rm -rf '%s'", dir);
			return 0;
		}
	}
	double tar_s[ROUNDS], imp_s[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		char out[160], store[160];
		snprintf(out, sizeof out, "%s/tar-%d", dir, i);
		snprintf(store, sizeof store, "%s/store-%d", dir, i);
		sh("mkdir -p '%s'", out);
		sync();
		double t0 = (bench_now_ms() / 1000.0);
		if (sh("tar -C '%s' -xf '%s'", out, layer) != 0)
			return 1;
		tar_s[i] = (bench_now_ms() / 1000.0) - t0;
		msb_error err = MSB_ERROR_INIT;
		sync();
		t0 = (bench_now_ms() / 1000.0);
		if (msb_image_import(store, "bench", layer, NULL, NULL, &err) != MSB_OK) {
			fprintf(stderr, "import: %s\n", msb_error_message(&err));
			return 1;
		}
		imp_s[i] = (bench_now_ms() / 1000.0) - t0;
		sh("rm -rf '%s' '%s'", out, store);
	}
	double tar_med = bench_median(tar_s, ROUNDS), imp_med = bench_median(imp_s, ROUNDS);
	printf("image import of %s: median %.3f s; bare tar -x %.3f s; ratio %.2fx (target <= 1.5x)\n",
	       layer, imp_med, tar_med, imp_med / tar_med);
	sh("rm -rf '%s'", dir);
	return 0;
}
