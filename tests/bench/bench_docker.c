/*
 * bench_docker.c — the docker backend against its own engine's CLI, in one run, per engine.
 *
 *   bare run    `docker run --rm --network none IMAGE true`: what one command costs as a
 *               fresh container, the way the seed's CLI-driven docker backend pays it
 *   cold        acquire a new key + exec `true` + dispose, through the loaded plugin
 *               (create, start, inspect over the API; the agent's HELLO; remove, verified)
 *   bare exec   `docker exec CONTAINER true` in a running container
 *   warm        exec `true` through the agent of a live sandbox: one round trip and a fork
 *   floor       one bare vfork + exec + wait of the image's `true` inside that sandbox
 *               (exec_floor): what no agent can go below, and so the best warm ratio the
 *               container's runtime allows (`docker exec` / floor)
 *
 * Targets (issue 24): cold within 1.2x the bare run; warm at least 20x faster than the bare
 * exec. Run by bench_docker.sh, which starts a private dockerd and Podman service, imports
 * the test image and sets MSB_DOCKER_SOCKET, MSB_DOCKER_IMAGE and MSB_DOCKER_ENGINE; run
 * directly, it hands itself to that script. With MSB_DOCKER_RUNTIME=runsc (dockerd with runsc
 * registered) it measures docker-gvisor instead, against `docker run --rm --runtime=runsc`
 * and `docker exec` into a runsc container: the same comparisons on gVisor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../backends/backend_fixture.h"
#include "bench_warm.h"
#include "exec_floor.h"

#define DOCKER_PLUGIN MSB_TEST_MODULE("plugins/docker", "docker")
#define DOCKER_GVISOR_PLUGIN MSB_TEST_MODULE("plugins/docker", "docker-gvisor")

/* One shell command's wall time in ms, or -1 when it failed. */
static double timed(const char *cmd)
{
	double t0 = bench_now_ms();
	int rc = system(cmd);
	return rc == 0 ? bench_now_ms() - t0 : -1;
}

int main(int argc, char **argv)
{
	const char *sock = getenv("MSB_DOCKER_SOCKET"), *image = getenv("MSB_DOCKER_IMAGE");
	const char *engine = getenv("MSB_DOCKER_ENGINE");
	if (!sock || !image) {
		execl("/bin/sh", "sh", MSB_TOP_SRCDIR "/tests/bench/bench_docker.sh", argv[0],
		      argc > 1 ? argv[1] : NULL, (char *)NULL);
		perror("bench_docker: sh");
		return 1;
	}
	engine = engine ? engine : "docker";
	const char *runtime = getenv("MSB_DOCKER_RUNTIME");
	bool gvisor = runtime && strcmp(runtime, "runsc") == 0;
	char label[64], rt_opt[64] = "";
	snprintf(label, sizeof label, "%s%s", engine, gvisor ? " docker-gvisor (runsc)" : "");
	if (gvisor)
		snprintf(rt_opt, sizeof rt_opt, "--runtime=runsc ");
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	rounds = rounds < 1 ? 1 : rounds > 32 ? 32 : rounds;
	backend_fixture fx;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = backend_fixture_state(&fx, NULL, "/tmp/msb-docker-bench-XXXXXX", &err);
	if (rc == MSB_OK)
		rc = backend_fixture_load(&fx, gvisor ? DOCKER_GVISOR_PLUGIN : DOCKER_PLUGIN, &err, "state_dir: %s\nagent: %s\n"
					  "socket: %s\nimage: %s\n", fx.state, BACKEND_FIXTURE_AGENT,
					  sock, image);
	if (rc != MSB_OK) {
		fprintf(stderr, "bench_docker: %s\n", msb_error_message(&err));
		return 1;
	}
	char cli[4400];
	snprintf(cli, sizeof cli, "docker -H unix://%s", sock);
	msb_spec spec;
	msb_spec_init(&spec, "bench");
	double bare[32], cold[32];
	char cmd[5000];
	for (int i = 0; i < rounds; i++) {
		snprintf(cmd, sizeof cmd, "%s run --rm %s--network none %s true >/dev/null", cli,
			 rt_opt, image);
		bare[i] = timed(cmd);
		char thread[32];
		snprintf(thread, sizeof thread, "cold-%d", i);
		msb_key key = { "bench", thread, "agent", "" };
		msb_sandbox_handle *h = NULL;
		double t0 = bench_now_ms();
		if (fx.ops->acquire(fx.self, &key, &spec, &h, &err) != MSB_OK || bench_exec_true(&fx, h)) {
			fprintf(stderr, "bench_docker: cold: %s\n", msb_error_message(&err));
			return 1;
		}
		double t1 = bench_now_ms();
		fx.ops->release(h);
		msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
		if (fx.ops->dispose(fx.self, &key, &f)) {
			fprintf(stderr, "bench_docker: dispose: %s\n", f.detail);
			return 1;
		}
		cold[i] = bench_now_ms() - t0;
		printf("  %s round %d: docker run --rm true %.0f ms; msb acquire+exec %.0f ms, "
		       "+dispose %.0f ms\n", label, i, bare[i], t1 - t0, cold[i]);
	}
	double mb = bench_median(bare, (size_t)rounds), mc = bench_median(cold, (size_t)rounds);
	printf("%s cold: docker run --rm true %.0f ms; msb acquire+exec+dispose %.0f ms; ratio "
	       "%.2fx (target <= 1.2x)\n", label, mb, mc, mc / mb);

	/* The bare exec: a long-lived container of the same image, `docker exec` into it. */
	char name[64];
	snprintf(name, sizeof name, "msb-bench-exec-%ld", (long)getpid());
	snprintf(cmd, sizeof cmd, "%s run -d --name %s %s--network none %s sleep 600 >/dev/null",
		 cli, name, rt_opt, image);
	double bexec[32];
	int bad = system(cmd) != 0;
	for (int i = 0; !bad && i < rounds; i++) {
		snprintf(cmd, sizeof cmd, "%s exec %s true", cli, name);
		bexec[i] = timed(cmd);
		bad = bexec[i] < 0;
	}
	snprintf(cmd, sizeof cmd, "%s rm -f %s >/dev/null 2>&1", cli, name);
	if (system(cmd) != 0)
		bad = 1;
	msb_key key = { "bench", "warm", "agent", "" };
	msb_sandbox_handle *h = NULL;
	if (fx.ops->acquire(fx.self, &key, &spec, &h, &err) != MSB_OK) {
		fprintf(stderr, "bench_docker: warm: %s\n", msb_error_message(&err));
		return 1;
	}
	double mw, ms;
	if (bench_warm(&fx, &spec, h, 20, 300, &mw, &ms))
		return 1;
	double mbe = bad ? -1 : bench_median(bexec, (size_t)rounds);
	printf("%s warm: docker exec true %.1f ms; msb exec true through the agent %.2f ms; %.0fx "
	       "faster (target >= 20x); stat_file round trip %.2f ms\n", label, mbe, mw, mbe / mw, ms);
	double floor_ms = exec_floor_measure(&fx, h, spec.work_dir, 200);
	if (floor_ms > 0)
		printf("%s floor: one vfork+exec+wait of true inside %.2f ms; msb adds %.2f ms; "
		       "the best warm ratio this runtime allows: %.0fx\n", label, floor_ms,
		       mw - floor_ms, mbe / floor_ms);
	else
		printf("%s floor: exec_floor did not run in the sandbox\n", label);
	fx.ops->release(h);
	msb_disposal_failure f = { MSB_DISPOSAL_UNKNOWN, NULL };
	bool left = fx.ops->dispose(fx.self, &key, &f);
	msb_disposal_failure_free(&f);
	backend_fixture_close(&fx);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.state);
	if (system(cmd) != 0)
		bad = 1;
	return bad || left ? 1 : 0;
}
