/*
 * msb_test.h — what every test binary knows about the tree it was built in. MSB_TOP_BUILDDIR
 * and MSB_TOP_SRCDIR are set by TEST_CPPFLAGS (Makefile.am).
 */
#ifndef MSB_TEST_H
#define MSB_TEST_H

/* A libtool module built in this tree: MSB_TEST_MODULE("plugins/inprocess", "inprocess"). */
#define MSB_TEST_MODULE(dir, name) MSB_TOP_BUILDDIR "/" dir "/.libs/" name ".so"
/* A fixture plugin built under tests/fixtures. */
#define MSB_TEST_FIXTURE(name) MSB_TEST_MODULE("tests/fixtures", name)

/* Exit status automake's test driver reads as SKIP; print the reason first. */
#define MSB_TEST_SKIP 77

#endif
