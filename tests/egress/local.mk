# tests/egress: `egress: allowlist` (sdk/egress) — its policy and proxy alone, and on the
# real backends, attacked from inside against link-local peers in a namespace the test makes.
check_PROGRAMS += tests/egress/test_egress_process
TESTS += tests/egress/test_egress_process
tests_egress_test_egress_process_SOURCES = tests/egress/test_egress_backend.c tests/egress/egress_peer.h
tests_egress_test_egress_process_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -DEGRESS_BACKEND='"process"'
tests_egress_test_egress_process_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_egress_test_egress_process_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	plugins/process/process.la sdk/agent/msb-agent

check_PROGRAMS += tests/egress/test_egress_bwrap
TESTS += tests/egress/test_egress_bwrap
tests_egress_test_egress_bwrap_SOURCES = tests/egress/test_egress_backend.c tests/egress/egress_peer.h
tests_egress_test_egress_bwrap_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -DEGRESS_BACKEND='"bwrap"' -DEGRESS_HOSTS_FILE
tests_egress_test_egress_bwrap_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_egress_test_egress_bwrap_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	plugins/bwrap/bwrap.la sdk/agent/msb-agent

# The policy and the request parse alone (http.c compiled in: its parse is not exported).
check_PROGRAMS += tests/egress/test_egress_policy
TESTS += tests/egress/test_egress_policy
tests_egress_test_egress_policy_SOURCES = tests/egress/test_egress_policy.c sdk/egress/http.c
tests_egress_test_egress_policy_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_egress_test_egress_policy_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)

# The conformance kit's egress suite on process and bwrap, allowlist half for real.
TESTS += tests/egress/conformance.sh
EXTRA_DIST += tests/egress/conformance.sh
TESTS += tests/egress/cli_verbose.sh
EXTRA_DIST += tests/egress/cli_verbose.sh

# gVisor: the forwarder relays bytes over its unix connections (a Sentry socket is no host
# descriptor), the proxy's directory bound in with --host-uds=all.
check_PROGRAMS += tests/egress/test_egress_gvisor
TESTS += tests/egress/test_egress_gvisor
tests_egress_test_egress_gvisor_SOURCES = tests/egress/test_egress_backend.c tests/egress/egress_peer.h
tests_egress_test_egress_gvisor_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -DEGRESS_BACKEND='"gvisor"' -DEGRESS_HOSTS_FILE
tests_egress_test_egress_gvisor_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_egress_test_egress_gvisor_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	plugins/gvisor/gvisor.la sdk/agent/msb-agent

# The proxy alone: a slow name's resolution stalls no other connection (loopback, no root).
check_PROGRAMS += tests/egress/test_egress_resolver
TESTS += tests/egress/test_egress_resolver
tests_egress_test_egress_resolver_SOURCES = tests/egress/test_egress_resolver.c
tests_egress_test_egress_resolver_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_egress_test_egress_resolver_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)

# qemu: no network device; the forwarder multiplexes every connection over a virtio-serial
# port of its own, served by msb-qemu-relay's egress mode. The probe runs from the python
# store image (the guest's own busybox has no python3).
check_PROGRAMS += tests/egress/test_egress_qemu
TESTS += tests/egress/test_egress_qemu
tests_egress_test_egress_qemu_SOURCES = tests/egress/test_egress_backend.c tests/egress/egress_peer.h
tests_egress_test_egress_qemu_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS) -DEGRESS_BACKEND='"qemu"' -DEGRESS_QEMU -DEGRESS_HOSTS_FILE
tests_egress_test_egress_qemu_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_egress_test_egress_qemu_DEPENDENCIES = core/libmsb.la sdk/libmsb-sdk.la \
	plugins/qemu/qemu.la sdk/agent/msb-agent plugins/qemu/msb-qemu-init plugins/qemu/msb-qemu-relay

# The mux a microVM's egress port carries (sdk/agent/egress_mux.c), both ends in one process.
check_PROGRAMS += tests/egress/test_egress_mux
TESTS += tests/egress/test_egress_mux
tests_egress_test_egress_mux_SOURCES = tests/egress/test_egress_mux.c sdk/agent/egress_mux.c
tests_egress_test_egress_mux_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_egress_test_egress_mux_LDADD = $(CMOCKA_LIBS)
