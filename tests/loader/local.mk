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
TESTS += tests/loader/sdk_install.sh
EXTRA_DIST += tests/loader/sdk_install.sh
