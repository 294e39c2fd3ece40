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

check_PROGRAMS += tests/agent/test_agent_proto tests/agent/test_agent_listen
TESTS += tests/agent/test_agent_proto tests/agent/test_agent_listen
tests_agent_test_agent_proto_SOURCES = tests/agent/test_agent_proto.c
tests_agent_test_agent_proto_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_agent_proto_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_agent_listen_SOURCES = tests/agent/test_agent_listen.c tests/agent/agent_fixture.h
tests_agent_test_agent_listen_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_agent_listen_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_agent_listen_DEPENDENCIES = $(AGENT_TEST_DEPS)

# libFuzzer target for the decoder, on demand only: `make fuzz-agent` (clang + libFuzzer).
FUZZ_AGENT_SRCS = tests/agent/fuzz_agent_decode.c sdk/agent/proto.c sdk/agent/request.c \
	sdk/lib/error.c sdk/lib/buf.c
EXTRA_DIST += tests/agent/fuzz_agent_decode.c
CLEANFILES += tests/agent/fuzz_agent_decode
fuzz-agent: $(FUZZ_AGENT_SRCS:%=$(top_srcdir)/%)
	@mkdir -p tests/agent
	clang -g -O1 -fsanitize=fuzzer,address,undefined -include $(top_builddir)/config.h \
		-I$(top_srcdir)/sdk/include $(FUZZ_AGENT_SRCS:%=$(top_srcdir)/%) \
		-o tests/agent/fuzz_agent_decode
.PHONY: fuzz-agent
