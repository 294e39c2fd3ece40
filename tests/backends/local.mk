# tests/backends: rules for this area.

# bwrap backend (and the cgroup helpers it limits with).
check_PROGRAMS += tests/backends/bwrap_cgroup
TESTS += tests/backends/bwrap_cgroup
tests_backends_bwrap_cgroup_CPPFLAGS = $(TEST_CPPFLAGS)
tests_backends_bwrap_cgroup_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
