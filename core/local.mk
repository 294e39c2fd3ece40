# core/: libmsb (loader, router, config, outputs, observer) and the msb command. It sees
# sdk/; plugins never see it. Each part keeps its own rules file.
lib_LTLIBRARIES += core/libmsb.la
core_libmsb_la_SOURCES = core/lib/version.c
core_libmsb_la_LIBADD = sdk/libmsb-sdk.la $(YAML_LIBS) $(CRYPTO_LIBS) $(JANSSON_LIBS) $(UNISTRING_LIBS) $(FFI_LIBS) $(PTHREAD_LIBS) $(LIBS)
core_libmsb_la_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS) $(FFI_CFLAGS) $(CRYPTO_CFLAGS) $(JANSSON_CFLAGS)
core_libmsb_la_LDFLAGS = -version-info 0:0:0 -no-undefined $(SAN_CFLAGS)
nodist_pkgconfig_DATA += core/msb-host.pc
EXTRA_DIST += core/msb-host.pc.in
msbinclude_HEADERS += \
	core/include/msb/msb.h \
	core/include/msb/loader.h \
	core/include/msb/router.h \
	core/include/msb/pool.h \
	core/include/msb/observer.h \
	core/include/msb/sandbox.h \
	core/include/msb/tool.h \
	core/include/msb/host_tools.h

include core/lib/loader.mk
include core/lib/router.mk
include core/lib/config.mk
include core/lib/outputs.mk
include core/lib/tool.mk
include core/cli/cli.mk
include core/python/python.mk
include core/conformance/conformance.mk
