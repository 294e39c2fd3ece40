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

check_PROGRAMS += tests/agent/test_agent_stream
TESTS += tests/agent/test_agent_stream
tests_agent_test_agent_stream_SOURCES = tests/agent/test_agent_stream.c tests/agent/agent_fixture.h
tests_agent_test_agent_stream_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_agent_stream_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_agent_stream_DEPENDENCIES = $(AGENT_TEST_DEPS)

check_PROGRAMS += tests/agent/test_agent_background
TESTS += tests/agent/test_agent_background
tests_agent_test_agent_background_SOURCES = tests/agent/test_agent_background.c tests/agent/agent_fixture.h
tests_agent_test_agent_background_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_agent_background_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_agent_background_DEPENDENCIES = $(AGENT_TEST_DEPS)

check_PROGRAMS += tests/agent/test_agent_proto tests/agent/test_agent_listen
TESTS += tests/agent/test_agent_proto tests/agent/test_agent_listen
tests_agent_test_agent_proto_SOURCES = tests/agent/test_agent_proto.c tests/agent/fake_agent.h
tests_agent_test_agent_proto_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_agent_proto_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_agent_listen_SOURCES = tests/agent/test_agent_listen.c tests/agent/agent_fixture.h
tests_agent_test_agent_listen_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_agent_listen_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_agent_listen_DEPENDENCIES = $(AGENT_TEST_DEPS)

# Both sides' fuzz targets without libFuzzer — the agent decoding a request, the client
# reading what a hostile agent can answer — on their seeds and fixed mutants of them, in
# every pass of `make check` (tests/lib/fuzz_replay.h).
check_PROGRAMS += tests/agent/fuzz_agent_decode_replay
TESTS += tests/agent/fuzz_agent_decode_replay
tests_agent_fuzz_agent_decode_replay_SOURCES = tests/lib/fuzz_replay.c tests/lib/fuzz_replay.h \
	tests/agent/fuzz_agent_decode.c tests/agent/fuzz_agent_decode_seeds.c
# A decode is a few microseconds: 40000 mutants of each of nine seeds.
tests_agent_fuzz_agent_decode_replay_CPPFLAGS = $(TEST_CPPFLAGS) -DFUZZ_REPLAY_MUTANTS=40000
tests_agent_fuzz_agent_decode_replay_LDADD = sdk/libmsb-sdk.la

check_PROGRAMS += tests/agent/fuzz_agent_reply_replay
TESTS += tests/agent/fuzz_agent_reply_replay
tests_agent_fuzz_agent_reply_replay_SOURCES = tests/lib/fuzz_replay.c tests/lib/fuzz_replay.h \
	tests/agent/fuzz_agent_reply.c tests/agent/fuzz_agent_reply_seeds.c tests/agent/fake_agent.h
# A run is a socket and a client (50 us), not a decode: fewer mutants.
tests_agent_fuzz_agent_reply_replay_CPPFLAGS = $(TEST_CPPFLAGS) -DFUZZ_REPLAY_MUTANTS=4000
tests_agent_fuzz_agent_reply_replay_LDADD = sdk/libmsb-sdk.la $(PTHREAD_LIBS)

# libFuzzer targets for the decoder and the client, on demand only: `make fuzz-agent` (clang +
# libFuzzer). The client's is linked from the SDK's own sources, for coverage.
FUZZ_AGENT_SRCS = tests/agent/fuzz_agent_decode.c $(MSB_AGENT_PROTO_SOURCES) \
	sdk/lib/error.c sdk/lib/buf.c sdk/lib/env.c
CLEANFILES += tests/agent/fuzz_agent_decode tests/agent/fuzz_agent_reply
fuzz-agent: $(FUZZ_AGENT_SRCS:%=$(top_srcdir)/%) $(top_srcdir)/tests/agent/fuzz_agent_reply.c
	@mkdir -p tests/agent
	clang -g -O1 -fsanitize=fuzzer,address,undefined -include $(top_builddir)/config.h \
		-I$(top_srcdir)/sdk/include $(FUZZ_AGENT_SRCS:%=$(top_srcdir)/%) \
		-o tests/agent/fuzz_agent_decode
	srcs=; for f in $(sdk_libmsb_sdk_la_SOURCES); do \
		case $$f in *.c) srcs="$$srcs $(top_srcdir)/$$f";; esac; done; \
	clang -g -O1 -fsanitize=fuzzer,address,undefined $(AM_CPPFLAGS) \
		$(top_srcdir)/tests/agent/fuzz_agent_reply.c $$srcs $(SECCOMP_LIBS) $(PTHREAD_LIBS) \
		$(LIBS) -lm -o tests/agent/fuzz_agent_reply
.PHONY: fuzz-agent

# An agent impostor (tests/backends/forged_caps.c configures a backend to start it): linked
# from the protocol's sources alone, static like msb-agent, so it runs wherever that does.
check_PROGRAMS += tests/agent/forged_agent
tests_agent_forged_agent_SOURCES = tests/agent/forged_agent.c $(MSB_AGENT_PROTO_SOURCES) sdk/lib/env.c \
	sdk/lib/error.c sdk/lib/buf.c
tests_agent_forged_agent_CFLAGS = $(WARN_CFLAGS)
tests_agent_forged_agent_LDFLAGS = -all-static

# msb_launch_agent's failure reports (the launch every namespace boundary shares).
check_PROGRAMS += tests/agent/test_launch
TESTS += tests/agent/test_launch
tests_agent_test_launch_SOURCES = tests/agent/test_launch.c
tests_agent_test_launch_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_launch_LDADD = $(AGENT_TEST_LDADD)

# One polarity for "failed": a boundary's stop returns true when it failed, as dispose does.
check_PROGRAMS += tests/agent/test_driver_stop
TESTS += tests/agent/test_driver_stop
tests_agent_test_driver_stop_SOURCES = tests/agent/test_driver_stop.c
tests_agent_test_driver_stop_CPPFLAGS = $(TEST_CPPFLAGS) $(CMOCKA_CFLAGS)
tests_agent_test_driver_stop_LDADD = $(AGENT_TEST_LDADD)
tests_agent_test_driver_stop_DEPENDENCIES = $(AGENT_TEST_DEPS)
