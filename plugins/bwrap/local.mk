# plugins/bwrap: the `bwrap` backend (rung container): bubblewrap + seccomp + cgroups, with
# the guest agent as the sandbox's resident command (msb/driver.h does the rest).
MSB_BWRAP_SOURCES = \
	plugins/bwrap/bwrap_config.h \
	plugins/bwrap/bwrap_config.c \
	plugins/bwrap/bwrap_argv.h \
	plugins/bwrap/bwrap_argv.c \
	plugins/bwrap/bwrap_seccomp.h \
	plugins/bwrap/bwrap_seccomp.c \
	plugins/bwrap/bwrap_launch.h \
	plugins/bwrap/bwrap_launch.c
msbplugin_LTLIBRARIES += plugins/bwrap/bwrap.la
plugins_bwrap_bwrap_la_SOURCES = plugins/bwrap/bwrap.c $(MSB_BWRAP_SOURCES)
plugins_bwrap_bwrap_la_CFLAGS = $(AM_CFLAGS) $(SECCOMP_CFLAGS)
plugins_bwrap_bwrap_la_LDFLAGS = $(PLUGIN_LINKFLAGS)
plugins_bwrap_bwrap_la_LIBADD = sdk/libmsb-sdk.la $(SECCOMP_LIBS)
