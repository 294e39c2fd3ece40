# tests/config: sandbox.yaml — a test per refusal rule (file:line:column + message), and the
# shipped files read whole.
check_PROGRAMS += tests/config/test_config
TESTS += tests/config/test_config
tests_config_test_config_SOURCES = tests/config/test_config.c
tests_config_test_config_CPPFLAGS = $(TEST_CPPFLAGS)
tests_config_test_config_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)

# The extremes the fuzzer and its hand-made inputs found (NUL, depth, many keys, key-path and
# ${VAR} blow-ups), read with msb_config_parse: no plugin needed.
check_PROGRAMS += tests/config/test_config_bounds
TESTS += tests/config/test_config_bounds
tests_config_test_config_bounds_SOURCES = tests/config/test_config_bounds.c
tests_config_test_config_bounds_CPPFLAGS = $(TEST_CPPFLAGS)
tests_config_test_config_bounds_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)

# The reader's fuzz target without libFuzzer: the shipped files and fixed mutants of them, in
# every pass of `make check` (tests/lib/fuzz_replay.h).
check_PROGRAMS += tests/config/fuzz_config_replay
TESTS += tests/config/fuzz_config_replay
tests_config_fuzz_config_replay_SOURCES = tests/lib/fuzz_replay.c tests/lib/fuzz_replay.h \
	tests/config/fuzz_config.c tests/config/fuzz_config_seeds.c
tests_config_fuzz_config_replay_CPPFLAGS = $(TEST_CPPFLAGS) -DFUZZ_REPLAY_MUTANTS=10000
tests_config_fuzz_config_replay_LDADD = core/libmsb.la sdk/libmsb-sdk.la

# libFuzzer target for the reader, on demand only: `make fuzz-config` (clang + libFuzzer).
# It is linked from the library's own sources (not libmsb.la, which gcc built without
# coverage); its corpus is seeded each time from conf/ and the two files in fuzz_seeds/.
FUZZ_CONFIG_LIB_SRCS = $(core_libmsb_la_SOURCES) $(sdk_libmsb_sdk_la_SOURCES)
EXTRA_DIST += tests/config/fuzz_seeds/full.yaml tests/config/fuzz_seeds/refused.yaml
CLEANFILES += tests/config/fuzz_config
clean-local: clean-fuzz-config
clean-fuzz-config:
	-rm -rf tests/config/fuzz_config_corpus
fuzz-config: $(top_srcdir)/tests/config/fuzz_config.c $(FUZZ_CONFIG_LIB_SRCS:%=$(top_srcdir)/%)
	@mkdir -p tests/config/fuzz_config_corpus
	cp $(top_srcdir)/conf/sandbox.yaml $(top_srcdir)/conf/examples/*.yaml \
		$(top_srcdir)/tests/config/fuzz_seeds/*.yaml tests/config/fuzz_config_corpus/
	srcs=; for f in $(FUZZ_CONFIG_LIB_SRCS); do \
		case $$f in *.c) srcs="$$srcs $(top_srcdir)/$$f";; esac; done; \
	clang -g -O1 -fsanitize=fuzzer,address,undefined $(AM_CPPFLAGS) -I$(top_srcdir)/core/lib \
		$(YAML_CFLAGS) $(FFI_CFLAGS) $(top_srcdir)/tests/config/fuzz_config.c $$srcs \
		$(YAML_LIBS) $(UNISTRING_LIBS) $(FFI_LIBS) $(SECCOMP_LIBS) $(PTHREAD_LIBS) $(LIBS) -lm \
		-o tests/config/fuzz_config
.PHONY: fuzz-config clean-fuzz-config
