# tests/agent: the guest agent, its protocol and client, tested host-side against the real
# static binary (sdk/agent/msb-agent) over socketpairs and unix sockets.
AGENT_TEST_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)
AGENT_TEST_DEPS = sdk/libmsb-sdk.la sdk/agent/msb-agent

check_PROGRAMS += tests/agent/test_agent_exec
TESTS += tests/agent/test_agent_exec
tests_agent_test_agent_exec_SOURCES = tests/agent/test_agent_exec.c tests/agent/agent_fixture.h
tests_agent_test_agent_exec_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_agent_exec_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_agent_exec_DEPENDENCIES = $(AGENT_TEST_DEPS)
