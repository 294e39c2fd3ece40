# tests/vocab: the vocabulary, the error type, spec defaults, positioned config reads.
check_PROGRAMS += tests/vocab/test_vocab
TESTS += tests/vocab/test_vocab
tests_vocab_test_vocab_CPPFLAGS = $(TEST_CPPFLAGS)
tests_vocab_test_vocab_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_vocab_test_vocab_LDADD = sdk/libmsb-sdk.la $(CMOCKA_LIBS)
