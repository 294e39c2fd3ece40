# tests/hostile: hostile guests against every agent-backed backend, through the msb command
# (issue 17). The probe runs inside guests of every kind, a busybox microVM included: static,
# and never sanitized (the sanitizer runtimes cannot be linked statically).
check_PROGRAMS += tests/hostile/probe
tests_hostile_probe_SOURCES = tests/hostile/probe.c
tests_hostile_probe_CFLAGS = $(WARN_CFLAGS) -O2
tests_hostile_probe_LDFLAGS = -all-static
TESTS += tests/hostile/hostile.sh
EXTRA_DIST += tests/hostile/hostile.sh
