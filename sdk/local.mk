# sdk/: what third parties build against — the public headers, msb.pc, and libmsb-sdk,
# the small library of helpers every backend links (errors, vocabulary, results, config reads).
lib_LTLIBRARIES += sdk/libmsb-sdk.la
sdk_libmsb_sdk_la_SOURCES = \
	sdk/lib/error.c \
	sdk/lib/vocab.c \
	sdk/lib/buf.c \
	sdk/lib/env.c \
	sdk/lib/disposal.c \
	sdk/lib/spec.c \
	sdk/lib/node.c \
	sdk/lib/image.c \
	sdk/lib/spawn.c \
	sdk/lib/netns.c \
	sdk/lib/unix_socket.c \
	sdk/lib/disk.c \
	sdk/lib/proc_stat.h \
	sdk/lib/proc_stat.c
sdk_libmsb_sdk_la_LIBADD = -lm
sdk_libmsb_sdk_la_LDFLAGS = -version-info 0:0:0 -no-undefined $(SAN_CFLAGS)

msbinclude_HEADERS += \
	sdk/include/msb/error.h \
	sdk/include/msb/vocab.h \
	sdk/include/msb/types.h \
	sdk/include/msb/node.h \
	sdk/include/msb/backend.h \
	sdk/include/msb/stream.h \
	sdk/include/msb/background.h \
	sdk/include/msb/image.h \
	sdk/include/msb/spawn.h \
	sdk/include/msb/netns.h \
	sdk/include/msb/unix_socket.h \
	sdk/include/msb/disk.h

nodist_pkgconfig_DATA += sdk/msb.pc
EXTRA_DIST += sdk/msb.pc.in

include sdk/confine/confine.mk
include sdk/agent/agent.mk
include sdk/cgroup/cgroup.mk
include sdk/image/image.mk
include sdk/egress/egress.mk
