# tests/backends: rules for this area.

# bwrap backend (and the cgroup helpers it limits with).
check_PROGRAMS += tests/backends/bwrap_cgroup
TESTS += tests/backends/bwrap_cgroup
tests_backends_bwrap_cgroup_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/sdk/cgroup $(SECCOMP_CFLAGS)
tests_backends_bwrap_cgroup_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(SECCOMP_LIBS)
check_PROGRAMS += tests/backends/bwrap_launch
TESTS += tests/backends/bwrap_launch
tests_backends_bwrap_launch_SOURCES = tests/backends/bwrap_launch.c plugins/bwrap/bwrap_launch.c
tests_backends_bwrap_launch_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/bwrap
tests_backends_bwrap_launch_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_bwrap_launch_DEPENDENCIES = sdk/libmsb-sdk.la sdk/agent/msb-agent
check_PROGRAMS += tests/backends/bwrap_backend
TESTS += tests/backends/bwrap_backend
tests_backends_bwrap_backend_SOURCES = tests/backends/bwrap_backend.c tests/backends/bwrap_fixture.h \
	tests/backends/stand_in.h \
	tests/backends/backend_fixture.h tests/backends/backend_cases.h
tests_backends_bwrap_backend_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_bwrap_backend_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_bwrap_backend_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la plugins/bwrap/bwrap.la sdk/agent/msb-agent

# The process backend, for real (process_*).
check_PROGRAMS += tests/backends/process_test tests/backends/process_helper
TESTS += tests/backends/process_test
tests_backends_process_test_SOURCES = tests/backends/process_test.c tests/backends/stand_in.h
tests_backends_process_test_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_process_test_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_backends_process_test_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	sdk/agent/msb-agent plugins/process/process.la tests/backends/process_helper
tests_backends_process_helper_SOURCES = tests/backends/process_helper.c
tests_backends_process_helper_CFLAGS = $(WARN_CFLAGS)
tests_backends_process_helper_LDFLAGS =

# The qemu backend, booting real microVMs (qemu_*). Needs `make qemu-guest` (skips without).
check_PROGRAMS += tests/backends/qemu_backend
TESTS += tests/backends/qemu_backend
tests_backends_qemu_backend_SOURCES = tests/backends/qemu_backend.c tests/backends/qemu_fixture.h \
	tests/backends/backend_fixture.h tests/backends/backend_cases.h
tests_backends_qemu_backend_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_qemu_backend_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_backends_qemu_backend_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	sdk/agent/msb-agent plugins/qemu/qemu.la plugins/qemu/msb-qemu-init \
	plugins/qemu/msb-qemu-relay
# Templates (issue 22): clones of one saved guest, inputs, a corrupt template's fallback.
check_PROGRAMS += tests/backends/qemu_template
TESTS += tests/backends/qemu_template
tests_backends_qemu_template_SOURCES = tests/backends/qemu_template.c tests/backends/qemu_fixture.h \
	tests/backends/backend_fixture.h tests/backends/backend_cases.h
tests_backends_qemu_template_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_qemu_template_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_backends_qemu_template_DEPENDENCIES = $(tests_backends_qemu_backend_DEPENDENCIES)
# The snapshot capability (issue 22): a snapshot forks a sandbox as it was at save time.
check_PROGRAMS += tests/backends/qemu_snapshot
TESTS += tests/backends/qemu_snapshot
tests_backends_qemu_snapshot_SOURCES = tests/backends/qemu_snapshot.c tests/backends/qemu_fixture.h \
	tests/backends/backend_fixture.h tests/backends/backend_cases.h
tests_backends_qemu_snapshot_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_qemu_snapshot_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_backends_qemu_snapshot_DEPENDENCIES = $(tests_backends_qemu_backend_DEPENDENCIES)
check_PROGRAMS += tests/backends/qemu_initramfs
TESTS += tests/backends/qemu_initramfs
tests_backends_qemu_initramfs_SOURCES = tests/backends/qemu_initramfs.c plugins/qemu/initramfs.c
tests_backends_qemu_initramfs_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_qemu_initramfs_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
check_PROGRAMS += tests/backends/qemu_relay
TESTS += tests/backends/qemu_relay
tests_backends_qemu_relay_SOURCES = tests/backends/qemu_relay.c plugins/qemu/relay.c \
	plugins/qemu/relay_spawn.c
tests_backends_qemu_relay_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_qemu_relay_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_qemu_relay_DEPENDENCIES = sdk/libmsb-sdk.la plugins/qemu/msb-qemu-relay
check_PROGRAMS += tests/backends/qemu_argv
TESTS += tests/backends/qemu_argv
tests_backends_qemu_argv_SOURCES = tests/backends/qemu_argv.c plugins/qemu/qemu_launch.c
tests_backends_qemu_argv_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_qemu_argv_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
check_PROGRAMS += tests/backends/bwrap_config
TESTS += tests/backends/bwrap_config
tests_backends_bwrap_config_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_bwrap_config_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_bwrap_config_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la plugins/bwrap/bwrap.la

# Every real plugin's config: reader against hostile values, key by key (no sandbox is started).
check_PROGRAMS += tests/backends/config_mutations
TESTS += tests/backends/config_mutations
tests_backends_config_mutations_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_config_mutations_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_config_mutations_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la sdk/agent/msb-agent \
	plugins/process/process.la plugins/bwrap/bwrap.la plugins/gvisor/gvisor.la plugins/qemu/qemu.la

# The gvisor backend, running real gVisor containers (gvisor_*). Skips without a usable runsc.
check_PROGRAMS += tests/backends/gvisor_backend
TESTS += tests/backends/gvisor_backend
tests_backends_gvisor_backend_SOURCES = tests/backends/gvisor_backend.c tests/backends/gvisor_fixture.h \
	tests/backends/backend_fixture.h tests/backends/backend_cases.h
tests_backends_gvisor_backend_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_gvisor_backend_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_gvisor_backend_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	sdk/agent/msb-agent plugins/gvisor/gvisor.la

# The docker backend (and docker-gvisor) against a private dockerd and Podman service that the
# test starts and stops itself (tests/lib/engines.sh): conformance, attacks from inside,
# limits, reuse across processes, disposal checked through the API. Skips without an engine.
TESTS += tests/backends/docker_backend.sh
# Its cmocka half (backend_cases.h on the docker plugin), run by docker_backend.sh per engine.
check_PROGRAMS += tests/backends/docker_cases
tests_backends_docker_cases_SOURCES = tests/backends/docker_cases.c tests/backends/backend_fixture.h \
	tests/backends/backend_cases.h
tests_backends_docker_cases_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_docker_cases_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_docker_cases_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	sdk/agent/msb-agent plugins/docker/docker.la plugins/docker/docker-gvisor.la
EXTRA_DIST += tests/backends/docker_backend.sh tests/lib/engines.sh
# The docker backend's API client against stand-in engines that hang, flood, speak no HTTP
# or refuse without JSON: clear errors within api_timeout, nothing half-made left.
TESTS += tests/backends/docker_bad_engine.sh
EXTRA_DIST += tests/backends/docker_bad_engine.sh

# The process backend through sandbox.yaml, the router and the msb_sandbox API.
check_PROGRAMS += tests/backends/process_router
TESTS += tests/backends/process_router
tests_backends_process_router_SOURCES = tests/backends/process_router.c
tests_backends_process_router_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_process_router_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_process_router_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	sdk/agent/msb-agent plugins/process/process.la

# The kept mount table under threads (also a TSAN_TESTS entry, see Makefile.am).
check_PROGRAMS += tests/backends/cgroup_mounts_threads
TESTS += tests/backends/cgroup_mounts_threads
tests_backends_cgroup_mounts_threads_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/sdk/cgroup
tests_backends_cgroup_mounts_threads_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)

# Store images (OCI layout, docker save, rootfs tarball) run on bwrap, gvisor and qemu.
check_PROGRAMS += tests/backends/image_backends
TESTS += tests/backends/image_backends
tests_backends_image_backends_SOURCES = tests/backends/image_backends.c \
	tests/backends/bwrap_fixture.h tests/backends/gvisor_fixture.h \
	tests/backends/backend_fixture.h tests/backends/backend_cases.h $(IMAGE_TEST_SOURCES)
tests_backends_image_backends_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_image_backends_CFLAGS = $(IMAGE_TEST_CFLAGS)
tests_backends_image_backends_LDADD = core/libmsb.la $(IMAGE_TEST_LIBS) $(PTHREAD_LIBS)
tests_backends_image_backends_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	plugins/bwrap/bwrap.la plugins/gvisor/gvisor.la plugins/process/process.la sdk/agent/msb-agent \
	plugins/qemu/qemu.la plugins/qemu/msb-qemu-init plugins/qemu/msb-qemu-relay

# The host holds its configured caps against a forged agent (tests/agent/forged_agent).
check_PROGRAMS += tests/backends/forged_caps
TESTS += tests/backends/forged_caps
tests_backends_forged_caps_SOURCES = tests/backends/forged_caps.c tests/backends/backend_fixture.h
tests_backends_forged_caps_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_forged_caps_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_forged_caps_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	tests/agent/forged_agent plugins/process/process.la

# A timed-out command leaves nothing it started, on every backend this machine runs.
check_PROGRAMS += tests/backends/timeout_tree
TESTS += tests/backends/timeout_tree
tests_backends_timeout_tree_SOURCES = tests/backends/timeout_tree.c tests/backends/backend_fixture.h \
	tests/backends/backend_cases.h tests/backends/bwrap_fixture.h tests/backends/gvisor_fixture.h \
	tests/backends/qemu_fixture.h
tests_backends_timeout_tree_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/plugins/qemu
tests_backends_timeout_tree_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_backends_timeout_tree_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la sdk/agent/msb-agent \
	plugins/process/process.la plugins/bwrap/bwrap.la plugins/gvisor/gvisor.la plugins/qemu/qemu.la \
	plugins/qemu/msb-qemu-init plugins/qemu/msb-qemu-relay

# GNU ls -l and stat inside gVisor on the host image (this runsc refuses AT_NO_AUTOMOUNT).
check_PROGRAMS += tests/backends/gvisor_statx
TESTS += tests/backends/gvisor_statx
tests_backends_gvisor_statx_SOURCES = tests/backends/gvisor_statx.c tests/backends/gvisor_fixture.h \
	tests/backends/backend_fixture.h tests/backends/backend_cases.h
tests_backends_gvisor_statx_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_backends_gvisor_statx_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_backends_gvisor_statx_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	sdk/agent/msb-agent sdk/agent/msb-statx.so plugins/gvisor/gvisor.la
