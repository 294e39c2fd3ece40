# tests/vocab: the vocabulary, the error type, spec defaults, positioned config reads.
check_PROGRAMS += tests/vocab/test_vocab
TESTS += tests/vocab/test_vocab
tests_vocab_test_vocab_CPPFLAGS = $(TEST_CPPFLAGS)
tests_vocab_test_vocab_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_vocab_test_vocab_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)

# msb_spawn_shared (msb/spawn.h), the SDK's shared-memory spawn.
check_PROGRAMS += tests/vocab/test_spawn
TESTS += tests/vocab/test_spawn
tests_vocab_test_spawn_CPPFLAGS = $(TEST_CPPFLAGS)
tests_vocab_test_spawn_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_vocab_test_spawn_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)

check_PROGRAMS += tests/vocab/test_netns
TESTS += tests/vocab/test_netns
tests_vocab_test_netns_CPPFLAGS = $(TEST_CPPFLAGS)
tests_vocab_test_netns_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_vocab_test_netns_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS)

check_PROGRAMS += tests/vocab/test_unix_socket
TESTS += tests/vocab/test_unix_socket
tests_vocab_test_unix_socket_CPPFLAGS = $(TEST_CPPFLAGS)
tests_vocab_test_unix_socket_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_vocab_test_unix_socket_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
