# tests/loader: the plugin loader against the fixture plugins, declarations and narrowing,
# backends opened from plugins, and a plugin built out of tree against the installed SDK.
check_PROGRAMS += tests/loader/test_loader tests/loader/test_declarations tests/loader/test_backend tests/loader/test_resolve
TESTS += tests/loader/test_loader tests/loader/test_declarations tests/loader/test_backend tests/loader/test_resolve
tests_loader_test_loader_SOURCES = tests/loader/test_loader.c
tests_loader_test_loader_CPPFLAGS = $(TEST_CPPFLAGS)
tests_loader_test_loader_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_loader_test_declarations_SOURCES = tests/loader/test_declarations.c
tests_loader_test_declarations_CPPFLAGS = $(TEST_CPPFLAGS)
tests_loader_test_declarations_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_loader_test_backend_SOURCES = tests/loader/test_backend.c
tests_loader_test_backend_CPPFLAGS = $(TEST_CPPFLAGS)
tests_loader_test_backend_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
tests_loader_test_resolve_SOURCES = tests/loader/test_resolve.c
tests_loader_test_resolve_CPPFLAGS = $(TEST_CPPFLAGS)
tests_loader_test_resolve_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
check_PROGRAMS += tests/loader/test_abi_append
TESTS += tests/loader/test_abi_append
tests_loader_test_abi_append_SOURCES = tests/loader/test_abi_append.c
tests_loader_test_abi_append_CPPFLAGS = $(TEST_CPPFLAGS)
tests_loader_test_abi_append_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
TESTS += tests/loader/sdk_install.sh
EXTRA_DIST += tests/loader/sdk_install.sh

# Loads racing on one loader. named.c is built once per name, so the race has distinct
# plugins to load; it runs again under ThreadSanitizer (TSAN_TESTS in Makefile.am).
LOADER_NAMED = tests/loader/named_0.la tests/loader/named_1.la tests/loader/named_2.la \
	tests/loader/named_3.la tests/loader/named_4.la tests/loader/named_5.la
check_LTLIBRARIES += $(LOADER_NAMED)
LOADER_NAMED_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/fixtures
LOADER_NAMED_LIBADD = sdk/libmsb-sdk.la
tests_loader_named_0_la_SOURCES = tests/loader/named.c
tests_loader_named_0_la_CPPFLAGS = $(LOADER_NAMED_CPPFLAGS) -DNAMED_FIXTURE=\"loader_named_0\"
tests_loader_named_0_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_loader_named_0_la_LIBADD = $(LOADER_NAMED_LIBADD)
tests_loader_named_1_la_SOURCES = tests/loader/named.c
tests_loader_named_1_la_CPPFLAGS = $(LOADER_NAMED_CPPFLAGS) -DNAMED_FIXTURE=\"loader_named_1\"
tests_loader_named_1_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_loader_named_1_la_LIBADD = $(LOADER_NAMED_LIBADD)
tests_loader_named_2_la_SOURCES = tests/loader/named.c
tests_loader_named_2_la_CPPFLAGS = $(LOADER_NAMED_CPPFLAGS) -DNAMED_FIXTURE=\"loader_named_2\"
tests_loader_named_2_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_loader_named_2_la_LIBADD = $(LOADER_NAMED_LIBADD)
tests_loader_named_3_la_SOURCES = tests/loader/named.c
tests_loader_named_3_la_CPPFLAGS = $(LOADER_NAMED_CPPFLAGS) -DNAMED_FIXTURE=\"loader_named_3\"
tests_loader_named_3_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_loader_named_3_la_LIBADD = $(LOADER_NAMED_LIBADD)
tests_loader_named_4_la_SOURCES = tests/loader/named.c
tests_loader_named_4_la_CPPFLAGS = $(LOADER_NAMED_CPPFLAGS) -DNAMED_FIXTURE=\"loader_named_4\"
tests_loader_named_4_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_loader_named_4_la_LIBADD = $(LOADER_NAMED_LIBADD)
tests_loader_named_5_la_SOURCES = tests/loader/named.c
tests_loader_named_5_la_CPPFLAGS = $(LOADER_NAMED_CPPFLAGS) -DNAMED_FIXTURE=\"loader_named_5\"
tests_loader_named_5_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_loader_named_5_la_LIBADD = $(LOADER_NAMED_LIBADD)
check_PROGRAMS += tests/loader/test_loader_threads
TESTS += tests/loader/test_loader_threads
tests_loader_test_loader_threads_SOURCES = tests/loader/test_loader_threads.c
tests_loader_test_loader_threads_CPPFLAGS = $(TEST_CPPFLAGS)
tests_loader_test_loader_threads_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
# The plugins it dlopens, so `make tests/loader/test_loader_threads` alone (the TSan pass) builds them.
EXTRA_tests_loader_test_loader_threads_DEPENDENCIES = $(LOADER_NAMED) tests/fixtures/good.la \
	tests/fixtures/silent.la
# Broken and hostile plugin files: refused before dlopen or in the probe child, never fatal.
check_PROGRAMS += tests/loader/test_loader_hostile
TESTS += tests/loader/test_loader_hostile
tests_loader_test_loader_hostile_SOURCES = tests/loader/test_loader_hostile.c
tests_loader_test_loader_hostile_CPPFLAGS = $(TEST_CPPFLAGS)
tests_loader_test_loader_hostile_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
EXTRA_tests_loader_test_loader_hostile_DEPENDENCIES = $(HOSTILE_FIXTURES) tests/fixtures/good.la \
	tests/fixtures/silent.la

# The pre-dlopen ELF check's fuzz target without libFuzzer: hand-made complete shared objects
# and fixed mutants of them, in every pass of `make check` (tests/lib/fuzz_replay.h).
check_PROGRAMS += tests/loader/fuzz_elf_replay
TESTS += tests/loader/fuzz_elf_replay
tests_loader_fuzz_elf_replay_SOURCES = tests/lib/fuzz_replay.c tests/lib/fuzz_replay.h \
	tests/loader/fuzz_elf.c tests/loader/fuzz_elf_seeds.c
tests_loader_fuzz_elf_replay_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/core/lib \
	-DFUZZ_REPLAY_MUTANTS=200000
tests_loader_fuzz_elf_replay_LDADD = core/libmsb.la sdk/libmsb-sdk.la

# libFuzzer target for the ELF check, on demand only: `make fuzz-elf` (clang + libFuzzer),
# then `tests/loader/fuzz_elf -max_total_time=300 tests/loader/fuzz_elf_corpus`.
FUZZ_ELF_SRCS = core/lib/loader_elf.c sdk/lib/error.c
CLEANFILES += tests/loader/fuzz_elf
clean-local: clean-fuzz-elf
clean-fuzz-elf:
	-rm -rf tests/loader/fuzz_elf_corpus
fuzz-elf: $(top_srcdir)/tests/loader/fuzz_elf.c $(FUZZ_ELF_SRCS:%=$(top_srcdir)/%)
	@mkdir -p tests/loader/fuzz_elf_corpus
	cp tests/fixtures/.libs/good.so tests/fixtures/.libs/silent.so tests/loader/fuzz_elf_corpus/ || :
	clang -g -O1 -fsanitize=fuzzer,address,undefined $(AM_CPPFLAGS) -I$(top_srcdir)/core/lib \
		$(top_srcdir)/tests/loader/fuzz_elf.c $(FUZZ_ELF_SRCS:%=$(top_srcdir)/%) \
		-o tests/loader/fuzz_elf
.PHONY: fuzz-elf clean-fuzz-elf
