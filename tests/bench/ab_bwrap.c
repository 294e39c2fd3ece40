/*
 * ab_bwrap.c — which of two builds of the bwrap backend starts and ends a sandbox faster,
 * on a machine whose speed drifts by more than the difference between runs.
 *
 *   tests/bench/ab_bwrap A/bwrap.so A/msb-agent B/bwrap.so B/msb-agent [ROUNDS]
 *
 * Both are loaded into one process (separate loaders, state directories and cgroup parents)
 * and their cold cycles — acquire + exec `true` + dispose — alternate, the order swapped
 * every round, so drift lands on both alike. It prints each side's medians and the median
 * of the per-round differences (B - A), the figure to trust. Copy a build's plugin and
 * agent aside before rebuilding the other. A change inside libmsb-sdk needs each side's
 * own copy of it: link the objects in plugins/bwrap/.libs with every object in the .libs
 * directories under sdk, `gcc -shared -Wl,-Bsymbolic … -lseccomp -lpthread -lm` (and A the
 * same way), or both sides share whichever libmsb-sdk loads first.
 *
 * MSB_AB_FIRST=1 compares instances' first starts instead: each cycle runs in an instance
 * opened for it (the open and close untimed), so nothing was made ahead for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msb/config.h>
#include <msb/driver.h>
#include <msb/loader.h>

#include "bench_cycle.h"

#define MAX_ROUNDS 1000

typedef struct side {
	const struct msb_backend_v27 *ops;
	msb_backend_instance *self;
	msb_backend *backend; /* closed at the end: a plugin may hold cgroups for its next start */
	const msb_plugin *plugin;
	msb_config_doc *doc;
	double t[4][MAX_ROUNDS]; /* acquire, first exec, dispose, whole cycle */
} side;

static msb_spec spec;

static void die(const char *what, const msb_error *err)
{
	fprintf(stderr, "ab_bwrap: %s%s%s\n", what, err ? ": " : "", err ? msb_error_message(err) : "");
	exit(1);
}

static void open_side(side *s, const char *plugin, const char *agent, const char *state,
		      const char *tag)
{
	msb_error err = MSB_ERROR_INIT;
	char yaml[1024];
	snprintf(yaml, sizeof yaml, "state_dir: %s/%s\nagent: %s\ncgroup_parent: msb-bench/ab-%s-%s\n",
		 state, tag, agent, tag, strrchr(state, '-') + 1);
	msb_config_doc *doc = NULL;
	msb_loader *loader = NULL;
	const msb_plugin *p = NULL;
	msb_backend *b = NULL;
	if (msb_config_doc_parse(yaml, strlen(yaml), "<ab>", &doc, &err) ||
	    msb_loader_new(&loader, &err) || msb_loader_load(loader, plugin, &p, &err) ||
	    msb_backend_open(p, msb_config_doc_root(doc), NULL, NULL, &b, &err))
		die(plugin, &err);
	s->ops = msb_backend_ops(b);
	s->self = msb_backend_instance_of(b);
	s->backend = b;
	s->plugin = p;
	s->doc = doc;
	/* The loader and document live as long as the process. */
}

static bool first_starts;

static void cycle(side *s, int round)
{
	char thread[32];
	snprintf(thread, sizeof thread, "ab-%d", round);
	bench_cycle c;
	const char *failed = NULL;
	msb_error err = MSB_ERROR_INIT;
	msb_backend *fresh = NULL;
	if (first_starts &&
	    msb_backend_open(s->plugin, msb_config_doc_root(s->doc), NULL, NULL, &fresh, &err))
		die("open", &err);
	const struct msb_backend_v27 *ops = fresh ? msb_backend_ops(fresh) : s->ops;
	msb_backend_instance *self = fresh ? msb_backend_instance_of(fresh) : s->self;
	if (!bench_cold_cycle(ops, self, &spec, thread, &c, &failed, &err))
		die(failed, &err);
	msb_backend_close(fresh);
	if (round >= 0) {
		s->t[0][round] = c.acquire;
		s->t[1][round] = c.exec;
		s->t[2][round] = c.dispose;
		s->t[3][round] = c.acquire + c.exec + c.dispose;
	}
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: ab_bwrap A.so A-agent B.so B-agent [ROUNDS]\n");
		return 2;
	}
	int rounds = argc > 5 ? atoi(argv[5]) : 41;
	if (rounds < 1 || rounds > MAX_ROUNDS)
		die("ROUNDS must be 1..1000", NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	first_starts = getenv("MSB_AB_FIRST") && strcmp(getenv("MSB_AB_FIRST"), "0") != 0;
	char state[] = "/dev/shm/msb-ab-XXXXXX";
	if (!mkdtemp(state) || chmod(state, 0711))
		die("state directory", NULL);
	msb_spec_init(&spec, "bench");
	static side a, b;
	open_side(&a, argv[1], argv[2], state, "a");
	open_side(&b, argv[3], argv[4], state, "b");
	cycle(&a, -1); /* the page cache warmed for both */
	cycle(&b, -1);
	static double diff[4][MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		side *first = r % 2 ? &b : &a, *second = r % 2 ? &a : &b;
		cycle(first, r);
		cycle(second, r);
		for (int k = 0; k < 4; k++)
			diff[k][r] = b.t[k][r] - a.t[k][r];
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	static const char *const names[4] = { "acquire", "first exec", "dispose", "cold cycle" };
	printf("(%d alternating rounds; medians, ms)\n", rounds);
	for (int k = 0; k < 4; k++)
		printf("%-11s A %7.3f   B %7.3f   B - A %+7.3f\n", names[k],
		       bench_median(a.t[k], (size_t)rounds), bench_median(b.t[k], (size_t)rounds),
		       bench_median(diff[k], (size_t)rounds));
	msb_backend_close(a.backend);
	msb_backend_close(b.backend);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s; rmdir /sys/fs/cgroup/*/msb-bench/ab-?-%s /sys/fs/cgroup/*/msb-bench 2>/dev/null",
		 state, strrchr(state, '-') + 1);
	return system(cmd) == 0 ? 0 : 0;
}
