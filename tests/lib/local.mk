# tests/lib: header-only helpers shared by every test (msb_test.h).
EXTRA_DIST += tests/lib/msb_test.h tests/lib/process_config.h tests/lib/cgroup_parents.h \
	tests/lib/cgroup_parents.sh tests/lib/netns_probe.h
