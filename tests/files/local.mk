# tests/files: files in and out — the confinement helpers' adversarial table (openat2 and
# walk), the file-system sink and its race, artifact names, and collect_outputs' phases
# against a fixture backend over a temporary directory.
FILES_TEST_SOURCES = tests/files/files_test.c tests/files/files_test.h
check_PROGRAMS += tests/files/test_confine
TESTS += tests/files/test_confine
tests_files_test_confine_SOURCES = tests/files/test_confine.c $(FILES_TEST_SOURCES)
tests_files_test_confine_CPPFLAGS = $(TEST_CPPFLAGS)
tests_files_test_confine_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
