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
