# sdk/image: the image store (msb/image_store.h) — import, verify, confined unpack. In
# libmsb-sdk because the backends resolve a spec's image through it; libarchive parses tar and
# its compressions, Jansson the OCI/docker JSON, libcrypto the sha256 of every blob.
msbinclude_HEADERS += sdk/include/msb/image_store.h
sdk_libmsb_sdk_la_SOURCES += \
	sdk/image/image_internal.h \
	sdk/image/image_blob.c \
	sdk/image/image_source.c \
	sdk/image/image_pack.c \
	sdk/image/image_unpack.c \
	sdk/image/image_user.c \
	sdk/image/image_store.c
sdk_libmsb_sdk_la_CPPFLAGS = $(AM_CPPFLAGS) -DMSB_LOCALSTATEDIR='"$(localstatedir)"'
sdk_libmsb_sdk_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(ARCHIVE_CFLAGS) $(CRYPTO_CFLAGS)
sdk_libmsb_sdk_la_LIBADD += $(JANSSON_LIBS) $(ARCHIVE_LIBS) $(CRYPTO_LIBS)
