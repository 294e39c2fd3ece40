/*
 * config_mutations.c — every real plugin's own `config:` reader against hostile values.
 *
 * Each key of a valid config is, in turn, given every value below (or dropped), and the
 * plugin is opened through the loader. An open must end in MSB_OK or in a refusal that says
 * something; it must not crash, and it must leave no file descriptor behind (counted over
 * the whole run). The ASan+UBSan pass runs this too, so a read past a buffer or an overflow
 * in a reader's arithmetic fails here. The typed getters (msb/node.h) have their own tests;
 * this is about what each plugin builds on them: image maps, id ranges, the pids minimum,
 * paths checked at open. state_dir is left alone: a valid one would be created.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/loader.h>

#include "msb_test.h"

/* Values a host could write by mistake, or on purpose. */
static const char *const hostile[] = {
	"", "~", "0", "-1", "1", "65534", "18446744073709551615", "18446744073709551616",
	"99999999999999999999999", "1e309", "-1e309", ".nan", ".inf", "0.0000001", "1.5", "0x10",
	"nan", "inf", "1e-300", "1TiB", "16EiB", "99999999999EiB", "-1MiB", "0s", "-5s", "1e12s",
	"20000000m", "[]", "[1, 2]", "{}",
	"{a: 1}", "{a: /}", "\"\"", "/", "/nonexistent/msb/x", "../..", "relative/path", "\"a\\tb\"",
	"true", "yes", "per-sandbox", "nobody", "root", "host", "ptrace", "tcg", "kvm",
};

typedef struct plugin_case {
	const char *module;
	const char *base; /* "key: value" lines, each key once: a config that opens */
} plugin_case;

static char state[64];
static char base_buf[4][2048];

static const plugin_case *cases(size_t *n)
{
	static plugin_case c[4];
	const char *guest = getenv("MSB_QEMU_GUEST");
	snprintf(base_buf[0], sizeof base_buf[0],
		 "run_code: [sh]\ntimeout: 5s\nmax_output: 1MiB\nrlimit_nproc: 64\n"
		 "rlimit_as: 1GiB\nuid: 65534\ngid: 65534\ndisk: 64MiB\n");
	snprintf(base_buf[1], sizeof base_buf[1],
		 "run_code: [sh]\nmemory: 256MiB\npids: 64\ncpus: 0.5\ntmp_size: 16MiB\n"
		 "cgroup_parent: msb-test/mutations\nimages: {tiny: /tmp}\nuser: per-sandbox\n"
		 "id_base: 500000\nid_count: 10\nstop_timeout: 2s\nstart_timeout: 5s\ndisk: 64MiB\n");
	snprintf(base_buf[2], sizeof base_buf[2],
		 "run_code: [sh]\nplatform: ptrace\nmemory: 256MiB\npids: 4096\ncpus: 1\n"
		 "tmp_size: 16MiB\nimages: {tiny: /tmp}\nrlimit_nproc: 32\ndisk: 64MiB\n");
	snprintf(base_buf[3], sizeof base_buf[3],
		 "run_code: [sh]\naccel: tcg\nmemory: 256MiB\nboot_timeout: 30s\n%s%s%s",
		 guest ? "guest_dir: " : "", guest ? guest : "", guest ? "\n" : "");
	c[0] = (plugin_case){ MSB_TEST_MODULE("plugins/process", "process"), base_buf[0] };
	c[1] = (plugin_case){ MSB_TEST_MODULE("plugins/bwrap", "bwrap"), base_buf[1] };
	c[2] = (plugin_case){ MSB_TEST_MODULE("plugins/gvisor", "gvisor"), base_buf[2] };
	c[3] = (plugin_case){ MSB_TEST_MODULE("plugins/qemu", "qemu"), base_buf[3] };
	*n = 4;
	return c;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* The config `base` with line `line` (0-based) replaced by "key: value" (value NULL: dropped). */
static void mutate(const char *base, int line, const char *key, const char *value, char *out,
		   size_t size)
{
	size_t used = (size_t)snprintf(out, size, "state_dir: %s\n", state);
	const char *p = base;
	for (int i = 0; *p; i++) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
		if (i != line)
			used += (size_t)snprintf(out + used, size - used, "%.*s", (int)len, p);
		else if (value)
			used += (size_t)snprintf(out + used, size - used, "%s: %s\n", key, value);
		p += len;
	}
}

/* Open `plugin` with `yaml`; MSB_OK, or a refusal that says something. */
static msb_errc open_once(const msb_plugin *plugin, const char *yaml)
{
	msb_error err = MSB_ERROR_INIT;
	msb_config_doc *doc = NULL;
	if (msb_config_doc_parse(yaml, strlen(yaml), "<mutation>", &doc, &err) != MSB_OK) {
		msb_error_clear(&err); /* the document reader's refusal, not the plugin's */
		return MSB_E_CONFIG;
	}
	msb_backend *backend = NULL;
	msb_errc rc = msb_backend_open(plugin, msb_config_doc_root(doc), NULL, NULL, &backend, &err);
	if (rc == MSB_OK)
		msb_backend_close(backend);
	else if (!msb_error_message(&err)[0])
		fail_msg("refused with code %d and no message:\n%s", (int)rc, yaml);
	msb_error_clear(&err);
	msb_config_doc_free(doc);
	return rc;
}

static void every_key_takes_every_hostile_value(void **state_)
{
	(void)state_;
	msb_loader *loader = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_loader_new(&loader, &err), MSB_OK);
	size_t n;
	const plugin_case *c = cases(&n);
	static char yaml[16384];
	for (size_t k = 0; k < n; k++) {
		const msb_plugin *plugin = NULL;
		if (msb_loader_load(loader, c[k].module, &plugin, &err) != MSB_OK)
			fail_msg("%s", msb_error_message(&err));
		mutate(c[k].base, -1, NULL, NULL, yaml, sizeof yaml);
		msb_errc unmutated = open_once(plugin, yaml);
		int fds = open_fds();
		unsigned opened = 0, refused = 0;
		int line = 0;
		for (const char *p = c[k].base; *p; line++) {
			char key[64];
			size_t klen = strcspn(p, ":");
			snprintf(key, sizeof key, "%.*s", (int)klen, p);
			for (size_t v = 0; v <= sizeof hostile / sizeof *hostile; v++) {
				bool drop = v == sizeof hostile / sizeof *hostile;
				mutate(c[k].base, line, key, drop ? NULL : hostile[v], yaml, sizeof yaml);
				if (open_once(plugin, yaml) == MSB_OK)
					opened++;
				else
					refused++;
			}
			char *long_value = malloc(6001);
			assert_non_null(long_value);
			memset(long_value, 'a', 6000);
			long_value[0] = '/';
			long_value[6000] = '\0';
			mutate(c[k].base, line, key, long_value, yaml, sizeof yaml);
			open_once(plugin, yaml);
			free(long_value);
			p = strchr(p, '\n') + 1;
		}
		/* Still itself afterwards: the unmutated config opens (or is refused) as before. */
		mutate(c[k].base, -1, NULL, NULL, yaml, sizeof yaml);
		printf("# %s: %u opened, %u refused; unmutated: %s\n", strrchr(c[k].module, '/') + 1,
		       opened, refused, unmutated == MSB_OK ? "opens" : "refused");
		assert_int_equal(open_once(plugin, yaml), unmutated);
		assert_true(refused > 0);
		if (open_fds() != fds)
			fail_msg("%s: %d file descriptors before the mutations, %d after",
				 c[k].module, fds, open_fds());
	}
	msb_loader_free(loader);
}

int main(void)
{
	snprintf(state, sizeof state, "/tmp/msb-config-mutations-XXXXXX");
	if (!mkdtemp(state))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_key_takes_every_hostile_value),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", state);
	return system(cmd) == 0 ? failed : 1;
}
