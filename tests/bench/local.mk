# tests/bench: benchmarks. Built by `make bench` (never by `make check`: speed is measured,
# not asserted in timed tests). Each prints its figures as ratios against a baseline it
# measures in the same run; doc/performance.md records them.
# Add a benchmark with:  BENCHES += tests/bench/bench_x  and its _SOURCES/_LDADD.
BENCHES =
EXTRA_PROGRAMS += $(BENCHES)
CLEANFILES += $(BENCHES)
bench: $(BENCHES)
	@set -e; for b in $(BENCHES); do echo "== $$b"; ./$$b; done
.PHONY: bench

BENCHES += tests/bench/bench_loader
tests_bench_bench_loader_SOURCES = tests/bench/bench_loader.c
tests_bench_bench_loader_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_loader_LDADD = core/libmsb.la sdk/libmsb-sdk.la
# It loads the good fixture plugin, which only `make check` would otherwise build.
EXTRA_tests_bench_bench_loader_DEPENDENCIES = tests/fixtures/good.la

BENCHES += tests/bench/bench_router
tests_bench_bench_router_SOURCES = tests/bench/bench_router.c
tests_bench_bench_router_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_router_LDADD = core/libmsb.la sdk/libmsb-sdk.la
EXTRA_tests_bench_bench_router_DEPENDENCIES = plugins/inprocess/inprocess.la

BENCHES += tests/bench/bench_files
tests_bench_bench_files_SOURCES = tests/bench/bench_files.c
tests_bench_bench_files_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_files_LDADD = sdk/libmsb-sdk.la

BENCHES += tests/bench/bench_wake
tests_bench_bench_wake_SOURCES = tests/bench/bench_wake.c tests/bench/bench_stats.h
tests_bench_bench_wake_CPPFLAGS = $(TEST_CPPFLAGS)

# Not a benchmark of its own: two builds of the bwrap backend alternated in one process
# (`make tests/bench/ab_bwrap`; usage in the file).
EXTRA_PROGRAMS += tests/bench/ab_bwrap
CLEANFILES += tests/bench/ab_bwrap
tests_bench_ab_bwrap_SOURCES = tests/bench/ab_bwrap.c tests/bench/bench_cycle.h tests/bench/bench_stats.h
tests_bench_ab_bwrap_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_ab_bwrap_LDADD = core/libmsb.la sdk/libmsb-sdk.la

BENCHES += tests/bench/bench_bwrap
tests_bench_bench_bwrap_SOURCES = tests/bench/bench_bwrap.c tests/bench/bench_cycle.h \
	plugins/bwrap/bwrap_argv.c plugins/bwrap/bwrap_seccomp.c plugins/bwrap/bwrap_config.c
tests_bench_bench_bwrap_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/bwrap $(SECCOMP_CFLAGS)
tests_bench_bench_bwrap_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(SECCOMP_LIBS)
EXTRA_tests_bench_bench_bwrap_DEPENDENCIES = plugins/bwrap/bwrap.la sdk/agent/msb-agent

BENCHES += tests/bench/bench_config
tests_bench_bench_config_SOURCES = tests/bench/bench_config.c
tests_bench_bench_config_CPPFLAGS = $(TEST_CPPFLAGS) $(YAML_CFLAGS)
tests_bench_bench_config_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(YAML_LIBS)
EXTRA_tests_bench_bench_config_DEPENDENCIES = plugins/inprocess/inprocess.la

# The process backend against bare fork+exec and a bare agent start.
BENCHES += tests/bench/bench_process
tests_bench_bench_process_SOURCES = tests/bench/bench_process.c
tests_bench_bench_process_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_process_LDADD = core/libmsb.la sdk/libmsb-sdk.la
tests_bench_bench_process_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la sdk/agent/msb-agent \
	plugins/process/process.la

# The qemu backend against a bare microVM boot to a marker, in one run.
BENCHES += tests/bench/bench_qemu
tests_bench_bench_qemu_SOURCES = tests/bench/bench_qemu.c \
	plugins/qemu/qemu_launch.c plugins/qemu/qemu_guest.c plugins/qemu/qemu_accel.c \
	plugins/qemu/initramfs.c
tests_bench_bench_qemu_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/qemu
tests_bench_bench_qemu_LDADD = core/libmsb.la sdk/libmsb-sdk.la
tests_bench_bench_qemu_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la sdk/agent/msb-agent \
	plugins/qemu/qemu.la plugins/qemu/msb-qemu-init \
	plugins/qemu/msb-qemu-relay tests/bench/exec_floor

BENCHES += tests/bench/bench_conformance
tests_bench_bench_conformance_SOURCES = tests/bench/bench_conformance.c
tests_bench_bench_conformance_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_conformance_LDADD = core/conformance/libmsb-conformance.la core/libmsb.la sdk/libmsb-sdk.la
EXTRA_tests_bench_bench_conformance_DEPENDENCIES = tests/conformance/conf_good.la \
	plugins/process/process.la plugins/bwrap/bwrap.la sdk/agent/msb-agent

# The gvisor backend against `runsc run … true`, in one run.
BENCHES += tests/bench/bench_gvisor
tests_bench_bench_gvisor_SOURCES = tests/bench/bench_gvisor.c
tests_bench_bench_gvisor_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_gvisor_LDADD = core/libmsb.la sdk/libmsb-sdk.la
tests_bench_bench_gvisor_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la sdk/agent/msb-agent \
	plugins/gvisor/gvisor.la tests/bench/exec_floor

# qemu templates (issue 22): clone against boot, python warm-up, idle memory of 8 each.
BENCHES += tests/bench/bench_qemu_template
tests_bench_bench_qemu_template_SOURCES = tests/bench/bench_qemu_template.c
tests_bench_bench_qemu_template_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/qemu
tests_bench_bench_qemu_template_LDADD = core/libmsb.la sdk/libmsb-sdk.la
tests_bench_bench_qemu_template_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	sdk/agent/msb-agent plugins/qemu/qemu.la plugins/qemu/msb-qemu-init \
	plugins/qemu/msb-qemu-relay

# Copied into a live sandbox by bench_gvisor and bench_qemu (exec_floor.h): static, because
# the qemu guest has no libc of its own; never sanitized, like msb-agent.
EXTRA_PROGRAMS += tests/bench/exec_floor
CLEANFILES += tests/bench/exec_floor
tests_bench_exec_floor_CFLAGS = $(WARN_CFLAGS) -O2
tests_bench_exec_floor_LDFLAGS = -all-static

BENCHES += tests/bench/bench_tools
tests_bench_bench_tools_SOURCES = tests/bench/bench_tools.c
tests_bench_bench_tools_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_tools_LDADD = core/libmsb.la sdk/libmsb-sdk.la
EXTRA_tests_bench_bench_tools_DEPENDENCIES = plugins/inprocess/inprocess.la

# Header-only helpers the benchmarks above include.
EXTRA_DIST += tests/bench/bench_stats.h tests/bench/bench_warm.h

BENCHES += tests/bench/bench_cgroup
tests_bench_bench_cgroup_SOURCES = tests/bench/bench_cgroup.c
tests_bench_bench_cgroup_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_cgroup_LDADD = sdk/libmsb-sdk.la

# Reaching msb from an agent client: MCP tools/call against `msb exec` from a shell, and the
# Python binding's exec against the C API's (tests/bench/bench_mcp.py, process backend).
bench: bench-clients
bench-clients: core/cli/msb plugins/process/process.la sdk/agent/msb-agent
	@echo "== tests/bench/bench_mcp.py"; $(PYTHON) $(top_srcdir)/tests/bench/bench_mcp.py $(abs_top_builddir)
.PHONY: bench-clients
EXTRA_DIST += tests/bench/bench_mcp.py

BENCHES += tests/bench/bench_image
tests_bench_bench_image_SOURCES = tests/bench/bench_image.c tests/bench/bench_stats.h
tests_bench_bench_image_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_image_LDADD = sdk/libmsb-sdk.la

BENCHES += tests/bench/bench_image_boot
tests_bench_bench_image_boot_SOURCES = tests/bench/bench_image_boot.c tests/bench/bench_stats.h
tests_bench_bench_image_boot_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_image_boot_LDADD = sdk/libmsb-sdk.la

# What the kill of a timed-out command's whole tree costs each command (issue 17).
BENCHES += tests/bench/bench_tree
tests_bench_bench_tree_SOURCES = tests/bench/bench_tree.c tests/bench/bench_warm.h tests/bench/bench_stats.h
tests_bench_bench_tree_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_tree_LDADD = core/libmsb.la sdk/libmsb-sdk.la
tests_bench_bench_tree_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la sdk/agent/msb-agent \
	plugins/process/process.la plugins/bwrap/bwrap.la

# The docker backend against `docker run --rm … true` and `docker exec … true`, on a private
# dockerd and a private Podman service (bench_docker.sh starts and stops them).
BENCHES += tests/bench/bench_docker
tests_bench_bench_docker_SOURCES = tests/bench/bench_docker.c
tests_bench_bench_docker_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_docker_LDADD = core/libmsb.la sdk/libmsb-sdk.la
tests_bench_bench_docker_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la sdk/agent/msb-agent \
	plugins/docker/docker.la plugins/docker/docker-gvisor.la tests/bench/exec_floor
EXTRA_DIST += tests/bench/bench_docker.sh

BENCHES += tests/bench/bench_stream
tests_bench_bench_stream_SOURCES = tests/bench/bench_stream.c tests/bench/bench_stats.h
tests_bench_bench_stream_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/tests/backends
tests_bench_bench_stream_LDADD = core/libmsb.la sdk/libmsb-sdk.la
EXTRA_tests_bench_bench_stream_DEPENDENCIES = plugins/process/process.la plugins/bwrap/bwrap.la \
	plugins/qemu/qemu.la sdk/agent/msb-agent

# egress: allowlist's per-connection and bulk cost through the proxy (issue 20);
# `tests/bench/bench_egress bwrap` (gvisor, qemu) for the other backends.
BENCHES += tests/bench/bench_egress
tests_bench_bench_egress_SOURCES = tests/bench/bench_egress.c
tests_bench_bench_egress_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_egress_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(PTHREAD_LIBS)
# Warm pools (issue 22): pooled acquire → first exec against a cold one, process, bwrap, qemu.
BENCHES += tests/bench/bench_pool
tests_bench_bench_pool_SOURCES = tests/bench/bench_pool.c tests/bench/bench_stats.h
tests_bench_bench_pool_CPPFLAGS = $(TEST_CPPFLAGS)
tests_bench_bench_pool_LDADD = core/libmsb.la sdk/libmsb-sdk.la
EXTRA_tests_bench_bench_pool_DEPENDENCIES = plugins/process/process.la plugins/bwrap/bwrap.la \
	plugins/qemu/qemu.la
EXTRA_tests_bench_bench_egress_DEPENDENCIES = plugins/process/process.la plugins/bwrap/bwrap.la \
	plugins/gvisor/gvisor.la plugins/qemu/qemu.la plugins/qemu/msb-qemu-init plugins/qemu/msb-qemu-relay \
	sdk/agent/msb-agent
