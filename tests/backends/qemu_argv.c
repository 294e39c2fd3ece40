/*
 * qemu_argv.c — the QEMU command line the qemu backend builds, checked without booting:
 * the guest kernel's command line carries every TCG speed setting whole (a fixed-size
 * buffer once cut `mitigations=off` to `mitigations=`, which the kernel rejects, silently
 * leaving its mitigations on), and a KVM guest gets none of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "qemu_internal.h"

/* The value following `-append` in argv. */
static const char *kernel_cmdline(char **argv)
{
	for (char **a = argv; *a; a++)
		if (!strcmp(*a, "-append") && a[1])
			return a[1];
	return NULL;
}

/* Whether `word` is one whole space-separated word of `line`. */
static bool has_word(const char *line, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(line, word); p; p = strstr(p + 1, word))
		if ((p == line || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

/* Whether this host's /proc/cpuinfo states a clock rate (what tsc_early_khz is made from). */
static bool host_states_mhz(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256];
	double mhz = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	if (f)
		fclose(f);
	return mhz * 1000.0 >= 1.0;
}

static qemu_ctx ctx = { .guest_dir = "/guest", .init_path = "/guest/init",
			.qemu = "/usr/bin/qemu-system-x86_64", .memory = 256u << 20 };

static void tcg_cmdline_is_whole(void **state)
{
	(void)state;
	if (!host_states_mhz())
		skip(); /* no rate to hand over: the TCG settings are left out together */
	char **argv = qemu_launch_argv(&ctx, QEMU_ACCEL_TCG, "/run/sb", "/run/sb/initrd",
				       "msb_probe=1", true);
	assert_non_null(argv);
	const char *line = kernel_cmdline(argv);
	assert_non_null(line);
	assert_true(has_word(line, "mitigations=off"));
	assert_true(has_word(line, "tsc=reliable"));
	assert_true(has_word(line, "no_timer_check"));
	assert_true(has_word(line, "msb_probe=1"));
	assert_non_null(strstr(line, " tsc_early_khz="));
	free(argv);
}

static void kvm_cmdline_has_no_tcg_settings(void **state)
{
	(void)state;
	char **argv = qemu_launch_argv(&ctx, QEMU_ACCEL_KVM, "/run/sb", "/run/sb/initrd", NULL,
				       true);
	assert_non_null(argv);
	const char *line = kernel_cmdline(argv);
	assert_non_null(line);
	assert_null(strstr(line, "mitigations"));
	assert_null(strstr(line, "tsc_early_khz"));
	free(argv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tcg_cmdline_is_whole),
		cmocka_unit_test(kvm_cmdline_has_no_tcg_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
