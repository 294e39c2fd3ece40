# tests/image: the image store — hostile layers unpacked confined (every escape class as a
# real tar), and imports of each source kind with verification.
IMAGE_TEST_SOURCES = tests/image/image_test.c tests/image/image_test.h tests/image/image_layouts.c
IMAGE_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(ARCHIVE_CFLAGS) $(CRYPTO_CFLAGS)
IMAGE_TEST_LIBS = sdk/libmsb-sdk.la $(ARCHIVE_LIBS) $(CRYPTO_LIBS) $(CMOCKA_LIBS)
check_PROGRAMS += tests/image/test_image_unpack
TESTS += tests/image/test_image_unpack
tests_image_test_image_unpack_SOURCES = tests/image/test_image_unpack.c $(IMAGE_TEST_SOURCES)
tests_image_test_image_unpack_CPPFLAGS = $(TEST_CPPFLAGS)
tests_image_test_image_unpack_CFLAGS = $(IMAGE_TEST_CFLAGS)
tests_image_test_image_unpack_LDADD = $(IMAGE_TEST_LIBS)
check_PROGRAMS += tests/image/test_image_import
TESTS += tests/image/test_image_import
tests_image_test_image_import_SOURCES = tests/image/test_image_import.c $(IMAGE_TEST_SOURCES)
tests_image_test_image_import_CPPFLAGS = $(TEST_CPPFLAGS)
tests_image_test_image_import_CFLAGS = $(IMAGE_TEST_CFLAGS)
tests_image_test_image_import_LDADD = $(IMAGE_TEST_LIBS)
# `msb image` end to end (the command as a process).
TESTS += tests/image/cli_image.sh
EXTRA_DIST += tests/image/cli_image.sh
check_PROGRAMS += tests/image/test_image_user
TESTS += tests/image/test_image_user
tests_image_test_image_user_SOURCES = tests/image/test_image_user.c $(IMAGE_TEST_SOURCES)
tests_image_test_image_user_CPPFLAGS = $(TEST_CPPFLAGS)
tests_image_test_image_user_CFLAGS = $(IMAGE_TEST_CFLAGS)
tests_image_test_image_user_LDADD = $(IMAGE_TEST_LIBS)
# The default python image on every engine that takes a store image, through the msb command.
TESTS += tests/image/cli_python_image.sh
EXTRA_DIST += tests/image/cli_python_image.sh
