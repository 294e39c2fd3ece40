# sdk/confine: path confinement for every backend's file operations (msb/confine.h).
# Compiled into libmsb-sdk so plugins link it; the static guest agent compiles the same
# sources, which is why they need libc and sdk/lib/{error,buf}.c alone.
msbinclude_HEADERS += sdk/include/msb/confine.h
MSB_CONFINE_SOURCES = \
	sdk/confine/confine_internal.h \
	sdk/lib/libc_compat.h \
	sdk/confine/confine_path.c \
	sdk/confine/confine_resolve.c \
	sdk/confine/confine_write.c \
	sdk/confine/confine_read.c \
	sdk/confine/confine_stat.c \
	sdk/confine/confine_remove.c
sdk_libmsb_sdk_la_SOURCES += $(MSB_CONFINE_SOURCES)
