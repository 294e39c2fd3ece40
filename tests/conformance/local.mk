# tests/conformance: the conformance kit held to its own promise. One fixture backend
# (fixture.c, a temp-dir host filesystem over the SDK confinement helpers) built honest, minimal,
# and once per deliberate defect; test_conformance asserts the honest one passes every case and
# each broken one is caught by the case meant to catch it. run_all.sh runs the kit over every
# shipped plugin through `msb conformance`.
CONF_FIXTURE_LDFLAGS = $(FIXTURE_LINKFLAGS)
CONF_FIXTURE_LIBADD = sdk/libmsb-sdk.la $(PTHREAD_LIBS)

check_LTLIBRARIES += tests/conformance/conf_good.la tests/conformance/conf_minimal.la tests/conformance/conf_fake_run_code.la tests/conformance/conf_ignore_wd.la tests/conformance/conf_follow_symlink.la tests/conformance/conf_silent_dispose.la tests/conformance/conf_leak_calls.la tests/conformance/conf_join_argv.la tests/conformance/conf_kill_child_only.la tests/conformance/conf_open_egress.la tests/conformance/conf_truncate_read.la tests/conformance/conf_no_output_cap.la \
	tests/conformance/conf_allowlist_open.la tests/conformance/conf_allowlist_shut.la \
	tests/conformance/conf_scope_miscount.la tests/conformance/conf_shallow_dispose.la \
	tests/conformance/conf_crash.la tests/conformance/conf_hang.la tests/conformance/conf_racy_acquire.la \
	tests/conformance/conf_exit.la tests/conformance/conf_buffered_stream.la \
	tests/conformance/conf_abi27.la tests/conformance/conf_keep_caps.la

tests_conformance_conf_keep_caps_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_keep_caps_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_KEEP_CAPS -DFIXTURE_NAME=\"conf_keep_caps\"
tests_conformance_conf_keep_caps_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_keep_caps_la_LIBADD = $(CONF_FIXTURE_LIBADD)

# The honest fixture built against ABI 27's first header (tests/fixtures/abi27_backend.h): an
# older plugin, its descriptor ending before the appended operations, under today's kit.
tests_conformance_conf_abi27_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_abi27_la_CPPFLAGS = $(AM_CPPFLAGS) -include $(top_srcdir)/tests/fixtures/abi27_backend.h \
	-DFIXTURE_DEFECT=DEFECT_NONE -DFIXTURE_NAME=\"conf_abi27\"
tests_conformance_conf_abi27_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_abi27_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_buffered_stream_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_buffered_stream_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_BUFFERED_STREAM -DFIXTURE_NAME=\"conf_buffered_stream\"
tests_conformance_conf_buffered_stream_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_buffered_stream_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_good_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_good_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_NONE -DFIXTURE_NAME=\"conf_good\"
tests_conformance_conf_good_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_good_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_minimal_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_minimal_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_NONE -DFIXTURE_NAME=\"conf_minimal\" -DFIXTURE_MINIMAL
tests_conformance_conf_minimal_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_minimal_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_fake_run_code_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_fake_run_code_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_FAKE_RUN_CODE -DFIXTURE_NAME=\"conf_fake_run_code\"
tests_conformance_conf_fake_run_code_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_fake_run_code_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_ignore_wd_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_ignore_wd_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_IGNORE_WD -DFIXTURE_NAME=\"conf_ignore_wd\"
tests_conformance_conf_ignore_wd_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_ignore_wd_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_follow_symlink_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_follow_symlink_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_FOLLOW_SYMLINK -DFIXTURE_NAME=\"conf_follow_symlink\"
tests_conformance_conf_follow_symlink_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_follow_symlink_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_silent_dispose_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_silent_dispose_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_SILENT_DISPOSE -DFIXTURE_NAME=\"conf_silent_dispose\"
tests_conformance_conf_silent_dispose_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_silent_dispose_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_leak_calls_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_leak_calls_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_LEAK_CALLS -DFIXTURE_NAME=\"conf_leak_calls\"
tests_conformance_conf_leak_calls_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_leak_calls_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_join_argv_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_join_argv_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_JOIN_ARGV -DFIXTURE_NAME=\"conf_join_argv\"
tests_conformance_conf_join_argv_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_join_argv_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_kill_child_only_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_kill_child_only_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_KILL_CHILD_ONLY -DFIXTURE_NAME=\"conf_kill_child_only\"
tests_conformance_conf_kill_child_only_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_kill_child_only_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_open_egress_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_open_egress_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_OPEN_EGRESS -DFIXTURE_NAME=\"conf_open_egress\"
tests_conformance_conf_open_egress_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_open_egress_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_truncate_read_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_truncate_read_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_TRUNCATE_READ -DFIXTURE_NAME=\"conf_truncate_read\"
tests_conformance_conf_truncate_read_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_truncate_read_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_no_output_cap_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_no_output_cap_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_NO_OUTPUT_CAP -DFIXTURE_NAME=\"conf_no_output_cap\"
tests_conformance_conf_no_output_cap_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_no_output_cap_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_allowlist_open_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_allowlist_open_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_ALLOWLIST_OPEN -DFIXTURE_NAME=\"conf_allowlist_open\"
tests_conformance_conf_allowlist_open_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_allowlist_open_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_allowlist_shut_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_allowlist_shut_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_ALLOWLIST_SHUT -DFIXTURE_NAME=\"conf_allowlist_shut\"
tests_conformance_conf_allowlist_shut_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_allowlist_shut_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_scope_miscount_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_scope_miscount_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_SCOPE_MISCOUNT -DFIXTURE_NAME=\"conf_scope_miscount\"
tests_conformance_conf_scope_miscount_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_scope_miscount_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_shallow_dispose_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_shallow_dispose_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_SHALLOW_DISPOSE -DFIXTURE_NAME=\"conf_shallow_dispose\"
tests_conformance_conf_shallow_dispose_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_shallow_dispose_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_crash_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_crash_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_CRASH -DFIXTURE_NAME=\"conf_crash\"
tests_conformance_conf_crash_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_crash_la_LIBADD = $(CONF_FIXTURE_LIBADD)
tests_conformance_conf_exit_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_exit_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_EXIT -DFIXTURE_NAME=\"conf_exit\"
tests_conformance_conf_exit_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_exit_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_hang_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_hang_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_HANG -DFIXTURE_NAME=\"conf_hang\"
tests_conformance_conf_hang_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_hang_la_LIBADD = $(CONF_FIXTURE_LIBADD)

tests_conformance_conf_racy_acquire_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_racy_acquire_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=DEFECT_RACY_ACQUIRE -DFIXTURE_NAME=\"conf_racy_acquire\"
tests_conformance_conf_racy_acquire_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_racy_acquire_la_LIBADD = $(CONF_FIXTURE_LIBADD)

check_PROGRAMS += tests/conformance/test_conformance
TESTS += tests/conformance/test_conformance
tests_conformance_test_conformance_SOURCES = tests/conformance/test_conformance.c \
	tests/conformance/finding_text.h
tests_conformance_test_conformance_CPPFLAGS = $(TEST_CPPFLAGS)
tests_conformance_test_conformance_LDADD = core/conformance/libmsb-conformance.la core/libmsb.la \
	sdk/libmsb-sdk.la $(CMOCKA_LIBS)

# Every shipped plugin through `msb conformance` (skips a plugin whose engine is absent).
TESTS += tests/conformance/plugins_fast.sh tests/conformance/plugin_qemu.sh
EXTRA_DIST += tests/conformance/run_all.sh tests/conformance/plugins_fast.sh \
	tests/conformance/plugin_qemu.sh

# doc/writing-a-backend.md's walkthrough, done literally against a temporary install.
TESTS += tests/conformance/walkthrough.sh
EXTRA_DIST += tests/conformance/walkthrough.sh

# `msb conformance` as a command: statuses, --config, --suite, --json, --tap, refusals.
TESTS += tests/conformance/cli.sh
EXTRA_DIST += tests/conformance/cli.sh

# The container fixture (fixture_container.c): honest, and once per defect the rung and
# disposal suites must catch.
check_LTLIBRARIES += tests/conformance/conf_container.la tests/conformance/conf_ct_lying_dispose.la \
	tests/conformance/conf_ct_guest_dispose.la tests/conformance/conf_ct_host_root.la \
	tests/conformance/conf_ct_no_pidns.la tests/conformance/conf_ct_leak_fd.la
tests_conformance_conf_container_la_SOURCES = tests/conformance/fixture_container.c
tests_conformance_conf_container_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"conf_container\"
tests_conformance_conf_container_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_container_la_LIBADD = $(CONF_FIXTURE_LIBADD)
tests_conformance_conf_ct_lying_dispose_la_SOURCES = tests/conformance/fixture_container.c
tests_conformance_conf_ct_lying_dispose_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"conf_ct_lying_dispose\" -DCONTAINER_DEFECT=1
tests_conformance_conf_ct_lying_dispose_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_ct_lying_dispose_la_LIBADD = $(CONF_FIXTURE_LIBADD)
tests_conformance_conf_ct_guest_dispose_la_SOURCES = tests/conformance/fixture_container.c
tests_conformance_conf_ct_guest_dispose_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"conf_ct_guest_dispose\" -DCONTAINER_DEFECT=2
tests_conformance_conf_ct_guest_dispose_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_ct_guest_dispose_la_LIBADD = $(CONF_FIXTURE_LIBADD)
tests_conformance_conf_ct_host_root_la_SOURCES = tests/conformance/fixture_container.c
tests_conformance_conf_ct_host_root_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"conf_ct_host_root\" -DCONTAINER_DEFECT=3
tests_conformance_conf_ct_host_root_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_ct_host_root_la_LIBADD = $(CONF_FIXTURE_LIBADD)
tests_conformance_conf_ct_no_pidns_la_SOURCES = tests/conformance/fixture_container.c
tests_conformance_conf_ct_no_pidns_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"conf_ct_no_pidns\" -DCONTAINER_DEFECT=4
tests_conformance_conf_ct_no_pidns_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_ct_no_pidns_la_LIBADD = $(CONF_FIXTURE_LIBADD)
tests_conformance_conf_ct_leak_fd_la_SOURCES = tests/conformance/fixture_container.c
tests_conformance_conf_ct_leak_fd_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"conf_ct_leak_fd\" -DCONTAINER_DEFECT=5
tests_conformance_conf_ct_leak_fd_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_ct_leak_fd_la_LIBADD = $(CONF_FIXTURE_LIBADD)

# Four more of the defects the issue 19 trial planted, each caught by the case meant for it.
check_LTLIBRARIES += tests/conformance/conf_share_threads.la
tests_conformance_conf_share_threads_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_share_threads_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=19 -DFIXTURE_NAME=\"conf_share_threads\"
tests_conformance_conf_share_threads_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_share_threads_la_LIBADD = $(CONF_FIXTURE_LIBADD)
check_LTLIBRARIES += tests/conformance/conf_run_code_no_timeout.la
tests_conformance_conf_run_code_no_timeout_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_run_code_no_timeout_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=20 -DFIXTURE_NAME=\"conf_run_code_no_timeout\"
tests_conformance_conf_run_code_no_timeout_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_run_code_no_timeout_la_LIBADD = $(CONF_FIXTURE_LIBADD)
check_LTLIBRARIES += tests/conformance/conf_clear_truncation.la
tests_conformance_conf_clear_truncation_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_clear_truncation_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=21 -DFIXTURE_NAME=\"conf_clear_truncation\"
tests_conformance_conf_clear_truncation_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_clear_truncation_la_LIBADD = $(CONF_FIXTURE_LIBADD)
check_LTLIBRARIES += tests/conformance/conf_write_follows_link.la
tests_conformance_conf_write_follows_link_la_SOURCES = tests/conformance/fixture.c
tests_conformance_conf_write_follows_link_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DEFECT=22 -DFIXTURE_NAME=\"conf_write_follows_link\"
tests_conformance_conf_write_follows_link_la_LDFLAGS = $(CONF_FIXTURE_LDFLAGS)
tests_conformance_conf_write_follows_link_la_LIBADD = $(CONF_FIXTURE_LIBADD)
