/*
 * bench_image_boot.c — cold start with a store image against the built-in one, same run,
 * through the msb command (what a host pays: config load, route, acquire, first command,
 * then dispose outside the timing):
 *   - qemu: cold acquire → first `python3 -c pass` in the `python` store image (an erofs
 *     disk under an overlay) against cold acquire → `true` in the busybox initramfs;
 *   - bwrap: cold acquire → `/bin/sh -c true` in the python store image against the host image.
 * The python image must be in the store ($MSB_IMAGES_DIR, else the default): made by
 * build-aux/python-image.sh. Without it (or without an engine) that pair is skipped, saying why.
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
#define B MSB_TOP_BUILDDIR

static char yaml[128], state[64];


static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Median seconds of `msb exec KIND -- CMD` on a fresh sandbox; negative when it failed. */
static double cold(const char *kind, const char *cmd)
{
	double t[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		double t0 = (bench_now_ms() / 1000.0);
		int rc = sh(B "/core/cli/msb -c %s exec %s --scope bench --thread %s%d -- %s "
			    ">/dev/null", yaml, kind, kind, i, cmd);
		t[i] = (bench_now_ms() / 1000.0) - t0;
		sh(B "/core/cli/msb -c %s dispose --scope bench --thread %s%d >/dev/null", yaml,
		   kind, i);
		if (rc != 0)
			return -1;
	}
	return bench_median(t, ROUNDS);
}

static void pair(const char *what, const char *kind, const char *cmd, const char *base_kind,
		 const char *base_cmd)
{
	double img = cold(kind, cmd), base = cold(base_kind, base_cmd);
	if (img < 0 || base < 0) {
		printf("%s: skipped (a run failed; is the engine usable here?)\n", what);
		return;
	}
	printf("%s: store image %.2f s, built-in %.2f s, ratio %.2fx\n", what, img, base,
	       img / base);
}

int main(void)
{
	msb_image_record rec;
	msb_error err = MSB_ERROR_INIT;
	const char *store = msb_image_store_default_dir();
	if (msb_image_inspect(store, "python", &rec, &err) != MSB_OK) {
		printf("skip: no python image in %s (sh build-aux/python-image.sh MSB): %s\n", store,
		       msb_error_message(&err));
		msb_error_clear(&err);
		return 0;
	}
	msb_image_record_free(&rec);
	snprintf(state, sizeof state, "/tmp/msb-bench-image-boot-XXXXXX");
	if (!mkdtemp(state))
		return 1;
	/* One backend a file, so `selection: fixed` is that backend and nothing else routes. */
	snprintf(yaml, sizeof yaml, "%s/qemu.yaml", state);
	FILE *f = fopen(yaml, "w");
	if (!f)
		return 1;
	fprintf(f, "version: 1\nplugin_path: [" B "/plugins/qemu/.libs]\nbackends:\n"
		"  - plugin: qemu\n    config:\n      agent: " B "/sdk/agent/msb-agent\n"
		"      init: " B "/plugins/qemu/msb-qemu-init\n"
		"      relay: " B "/plugins/qemu/msb-qemu-relay\n"
		"      state_dir: %s/qemu\n      boot_timeout: 180s\n      images_dir: %s\n"
		"specs:\n  py: {image: python}\n  bb: {}\n", state, store);
	fclose(f);
	sh("mkdir -p %s/qemu %s/bwrap", state, state);
	pair("qemu: cold acquire -> first python3 -c pass (python image) vs true (busybox)", "py",
	     "python3 -c pass", "bb", "true");
	snprintf(yaml, sizeof yaml, "%s/bwrap.yaml", state);
	if (!(f = fopen(yaml, "w")))
		return 1;
	fprintf(f, "version: 1\nplugin_path: [" B "/plugins/bwrap/.libs]\n"
		"router: {min_isolation: container}\nbackends:\n"
		"  - plugin: bwrap\n    config:\n      agent: " B "/sdk/agent/msb-agent\n"
		"      state_dir: %s/bwrap\n      images_dir: %s\n"
		"specs:\n  py: {image: python}\n  host: {}\n", state, store);
	fclose(f);
	pair("bwrap: cold acquire -> first /bin/sh -c true (python image vs host image)", "py",
	     "/bin/sh -c true", "host", "/bin/sh -c true");
	sh("rm -rf %s", state);
	return 0;
}
