# core/conformance: libmsb-conformance, the kit that holds a backend to its declarations.
# Installed with the SDK (plugin authors run it out of tree); `msb conformance` wraps it.
lib_LTLIBRARIES += core/conformance/libmsb-conformance.la
core_conformance_libmsb_conformance_la_SOURCES = \
	core/conformance/kit.h \
	core/conformance/peer.h \
	core/conformance/run.c \
	core/conformance/report.c \
	core/conformance/verdict.c \
	core/conformance/box.c \
	core/conformance/peer.c \
	core/conformance/egress_log.h \
	core/conformance/egress_log.c \
	core/conformance/netpeer.h \
	core/conformance/netpeer.c \
	core/conformance/write.c \
	core/conformance/suite_exec.c \
	core/conformance/suite_run_code.c \
	core/conformance/suite_files.c \
	core/conformance/suite_egress.c \
	core/conformance/suite_scope.c \
	core/conformance/suite_disposal.c \
	core/conformance/suite_stream.c \
	core/conformance/suite_stream_bg.c \
	core/conformance/probe.h \
	core/conformance/probe.c \
	core/conformance/suite_rung.c
core_conformance_libmsb_conformance_la_LIBADD = core/libmsb.la sdk/libmsb-sdk.la $(PTHREAD_LIBS)
core_conformance_libmsb_conformance_la_LDFLAGS = -version-info 0:0:0 -no-undefined $(SAN_CFLAGS)
msbinclude_HEADERS += core/include/msb/conformance.h
nodist_pkgconfig_DATA += core/conformance/msb-conformance.pc
EXTRA_DIST += core/conformance/msb-conformance.pc.in

# msb-probe: the kit's own program inside the guest (probe_main.c says why). Static and libc
# only, like msb-agent, so it runs in a root that holds no libraries; never sanitized.
pkglibexec_PROGRAMS += core/conformance/msb-probe
core_conformance_msb_probe_SOURCES = core/conformance/probe_main.c
core_conformance_msb_probe_CFLAGS = $(WARN_CFLAGS) -O2
core_conformance_msb_probe_LDFLAGS = -all-static
