# tests/router: the router's checks, selection, acquire/dispose lifecycle, observer, caller
# key, the sandbox wrappers and the inprocess fake.
#
# The inprocess source is built again as test-only plugins: a plugin's name is unique among
# loaded plugins and its rung is fixed in its descriptor, so a test wanting several backends
# on several rungs loads several plugins.
INPROC_VARIANT_LDFLAGS = $(FIXTURE_LINKFLAGS)
INPROC_VARIANT_LIBADD = sdk/libmsb-sdk.la $(PTHREAD_LIBS)
check_LTLIBRARIES += tests/router/inproc_b.la tests/router/inproc_container.la \
	tests/router/inproc_microvm.la tests/router/inproc_vm.la tests/router/inproc_silent.la
tests_router_inproc_b_la_SOURCES = $(INPROCESS_SOURCES)
tests_router_inproc_b_la_CPPFLAGS = $(AM_CPPFLAGS) -DINPROCESS_NAME=\"inproc_b\"
tests_router_inproc_b_la_LDFLAGS = $(INPROC_VARIANT_LDFLAGS)
tests_router_inproc_b_la_LIBADD = $(INPROC_VARIANT_LIBADD)
tests_router_inproc_container_la_SOURCES = $(INPROCESS_SOURCES)
tests_router_inproc_container_la_CPPFLAGS = $(AM_CPPFLAGS) -DINPROCESS_NAME=\"inproc_container\" \
	-DINPROCESS_ISOLATION=\"container\"
tests_router_inproc_container_la_LDFLAGS = $(INPROC_VARIANT_LDFLAGS)
tests_router_inproc_container_la_LIBADD = $(INPROC_VARIANT_LIBADD)
tests_router_inproc_microvm_la_SOURCES = $(INPROCESS_SOURCES)
tests_router_inproc_microvm_la_CPPFLAGS = $(AM_CPPFLAGS) -DINPROCESS_NAME=\"inproc_microvm\" \
	-DINPROCESS_ISOLATION=\"microvm\"
tests_router_inproc_microvm_la_LDFLAGS = $(INPROC_VARIANT_LDFLAGS)
tests_router_inproc_microvm_la_LIBADD = $(INPROC_VARIANT_LIBADD)
tests_router_inproc_vm_la_SOURCES = $(INPROCESS_SOURCES)
tests_router_inproc_vm_la_CPPFLAGS = $(AM_CPPFLAGS) -DINPROCESS_NAME=\"inproc_vm\" -DINPROCESS_ISOLATION=\"vm\"
tests_router_inproc_vm_la_LDFLAGS = $(INPROC_VARIANT_LDFLAGS)
tests_router_inproc_vm_la_LIBADD = $(INPROC_VARIANT_LIBADD)
tests_router_inproc_silent_la_SOURCES = $(INPROCESS_SOURCES)
tests_router_inproc_silent_la_CPPFLAGS = $(AM_CPPFLAGS) -DINPROCESS_NAME=\"inproc_silent\" \
	-DINPROCESS_ISOLATION=\"vm\" -DINPROCESS_SILENT
tests_router_inproc_silent_la_LDFLAGS = $(INPROC_VARIANT_LDFLAGS)
tests_router_inproc_silent_la_LIBADD = $(INPROC_VARIANT_LIBADD)
# A backend that breaks the contract where no descriptor check can see it (misbehaving.c).
check_LTLIBRARIES += tests/router/misbehaving.la
tests_router_misbehaving_la_SOURCES = tests/router/misbehaving.c tests/fixtures/fixture.h
tests_router_misbehaving_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/fixtures
tests_router_misbehaving_la_LDFLAGS = $(FIXTURE_LINKFLAGS)
tests_router_misbehaving_la_LIBADD = sdk/libmsb-sdk.la

ROUTER_TEST_FIXTURE = tests/router/router_fixture.h tests/router/router_fixture.c
ROUTER_TEST_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS) $(PTHREAD_LIBS) -ldl
# The plugins they dlopen, so `make tests/router/test_x` alone (the TSan pass) builds them.
ROUTER_TEST_DEPS = plugins/inprocess/inprocess.la tests/router/inproc_b.la tests/router/inproc_container.la \
	tests/router/inproc_microvm.la tests/router/inproc_vm.la tests/router/inproc_silent.la \
	tests/router/misbehaving.la
ROUTER_TESTS = tests/router/test_router_construct
check_PROGRAMS += $(ROUTER_TESTS)
TESTS += $(ROUTER_TESTS)
tests_router_test_router_construct_SOURCES = tests/router/test_router_construct.c $(ROUTER_TEST_FIXTURE)
tests_router_test_router_construct_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_router_construct_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_router_construct_DEPENDENCIES = $(ROUTER_TEST_DEPS)
ROUTER_TESTS += tests/router/test_router_checks
tests_router_test_router_checks_SOURCES = tests/router/test_router_checks.c $(ROUTER_TEST_FIXTURE)
tests_router_test_router_checks_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_router_checks_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_router_checks_DEPENDENCIES = $(ROUTER_TEST_DEPS)
ROUTER_TESTS += tests/router/test_router_acquire
tests_router_test_router_acquire_SOURCES = tests/router/test_router_acquire.c $(ROUTER_TEST_FIXTURE)
tests_router_test_router_acquire_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_router_acquire_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_router_acquire_DEPENDENCIES = $(ROUTER_TEST_DEPS)
ROUTER_TESTS += tests/router/test_router_purge
tests_router_test_router_purge_SOURCES = tests/router/test_router_purge.c $(ROUTER_TEST_FIXTURE)
tests_router_test_router_purge_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_router_purge_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_router_purge_DEPENDENCIES = $(ROUTER_TEST_DEPS)
ROUTER_TESTS += tests/router/test_router_observer
tests_router_test_router_observer_SOURCES = tests/router/test_router_observer.c $(ROUTER_TEST_FIXTURE)
tests_router_test_router_observer_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_router_observer_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_router_observer_DEPENDENCIES = $(ROUTER_TEST_DEPS)
ROUTER_TESTS += tests/router/test_router_sandbox
tests_router_test_router_sandbox_SOURCES = tests/router/test_router_sandbox.c $(ROUTER_TEST_FIXTURE)
tests_router_test_router_sandbox_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_router_sandbox_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_router_sandbox_DEPENDENCIES = $(ROUTER_TEST_DEPS)
ROUTER_TESTS += tests/router/test_pool
tests_router_test_pool_SOURCES = tests/router/test_pool.c $(ROUTER_TEST_FIXTURE)
tests_router_test_pool_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_pool_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_pool_DEPENDENCIES = $(ROUTER_TEST_DEPS)
ROUTER_TESTS += tests/router/test_caller
tests_router_test_caller_SOURCES = tests/router/test_caller.c
tests_router_test_caller_CPPFLAGS = $(TEST_CPPFLAGS)
tests_router_test_caller_LDADD = core/libmsb.la sdk/libmsb-sdk.la $(CMOCKA_LIBS)
ROUTER_TESTS += tests/router/test_router_noalloc
tests_router_test_router_noalloc_SOURCES = tests/router/test_router_noalloc.c $(ROUTER_TEST_FIXTURE)
tests_router_test_router_noalloc_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/plugins/inprocess
tests_router_test_router_noalloc_LDADD = $(ROUTER_TEST_LDADD)
EXTRA_tests_router_test_router_noalloc_DEPENDENCIES = $(ROUTER_TEST_DEPS)
