# tests/tools: the tool-call session (against the inprocess fake) and the host-tool registry.
TOOLS_TEST_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS) -ldl
TOOLS_TESTS = tests/tools/test_tool_session
check_PROGRAMS += $(TOOLS_TESTS)
TESTS += $(TOOLS_TESTS)
tests_tools_test_tool_session_SOURCES = tests/tools/test_tool_session.c $(ROUTER_TEST_FIXTURE)
tests_tools_test_tool_session_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess \
	-I$(top_srcdir)/tests/router
tests_tools_test_tool_session_LDADD = $(TOOLS_TEST_LDADD)
EXTRA_tests_tools_test_tool_session_DEPENDENCIES = plugins/inprocess/inprocess.la
TOOLS_TESTS += tests/tools/test_host_tools
tests_tools_test_host_tools_SOURCES = tests/tools/test_host_tools.c
tests_tools_test_host_tools_CPPFLAGS = $(TEST_CPPFLAGS)
tests_tools_test_host_tools_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS) -lm
# Host-tool calls over exec, for real, on the process backend.
TOOLS_TESTS += tests/tools/test_host_tool_exec
tests_tools_test_host_tool_exec_SOURCES = tests/tools/test_host_tool_exec.c
tests_tools_test_host_tool_exec_CPPFLAGS = $(TEST_CPPFLAGS)
tests_tools_test_host_tool_exec_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
EXTRA_tests_tools_test_host_tool_exec_DEPENDENCIES = sdk/agent/msb-agent plugins/process/process.la
# The file store, the file-store sink and the read-only store tools.
TOOLS_TESTS += tests/tools/test_store
tests_tools_test_store_SOURCES = tests/tools/test_store.c
tests_tools_test_store_CPPFLAGS = $(TEST_CPPFLAGS)
tests_tools_test_store_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
# An itemised tool answer and its labels, and the effective-state record (inprocess fake).
TOOLS_TESTS += tests/tools/test_tool_labels
tests_tools_test_tool_labels_SOURCES = tests/tools/test_tool_labels.c $(ROUTER_TEST_FIXTURE)
tests_tools_test_tool_labels_CPPFLAGS = $(TEST_CPPFLAGS) $(JANSSON_CFLAGS) -I$(top_srcdir)/plugins/inprocess \
	-I$(top_srcdir)/tests/router
tests_tools_test_tool_labels_LDADD = $(TOOLS_TEST_LDADD) $(JANSSON_LIBS)
EXTRA_tests_tools_test_tool_labels_DEPENDENCIES = plugins/inprocess/inprocess.la
# doc/hosts.md's program, compiled and run end to end on the process backend.
TESTS += tests/tools/hosts_doc.sh
EXTRA_DIST += tests/tools/hosts_doc.sh
