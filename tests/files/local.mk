# tests/files: files in and out — the confinement helpers' adversarial table (openat2 and
# walk), the file-system sink and its race, artifact names, and collect_outputs' phases
# against a fixture backend over a temporary directory.
FILES_TEST_SOURCES = tests/files/files_test.c tests/files/files_test.h
check_PROGRAMS += tests/files/test_confine
TESTS += tests/files/test_confine
tests_files_test_confine_SOURCES = tests/files/test_confine.c $(FILES_TEST_SOURCES)
tests_files_test_confine_CPPFLAGS = $(TEST_CPPFLAGS)
tests_files_test_confine_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
check_PROGRAMS += tests/files/test_sink
TESTS += tests/files/test_sink
tests_files_test_sink_SOURCES = tests/files/test_sink.c $(FILES_TEST_SOURCES)
tests_files_test_sink_CPPFLAGS = $(TEST_CPPFLAGS)
tests_files_test_sink_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
# A backend over one temporary directory, recording its calls (collect_outputs phase tests).
check_LTLIBRARIES += tests/files/fixture_files.la
tests_files_fixture_files_la_SOURCES = tests/files/fixture_files.c
tests_files_fixture_files_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_files_fixture_files_la_LIBADD = sdk/libmsb-sdk.la
check_PROGRAMS += tests/files/test_outputs
TESTS += tests/files/test_outputs
tests_files_test_outputs_SOURCES = tests/files/test_outputs.c $(FILES_TEST_SOURCES)
tests_files_test_outputs_CPPFLAGS = $(TEST_CPPFLAGS)
tests_files_test_outputs_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
