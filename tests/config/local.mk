# tests/config: sandbox.yaml — a test per refusal rule (file:line:column + message), and the
# shipped files read whole.
check_PROGRAMS += tests/config/test_config
TESTS += tests/config/test_config
tests_config_test_config_SOURCES = tests/config/test_config.c
tests_config_test_config_CPPFLAGS = $(TEST_CPPFLAGS)
tests_config_test_config_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
