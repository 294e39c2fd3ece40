# plugins/gvisor: the `gvisor` backend (rung hardened_container), a boundary driver over the
# SDK's guest agent and driver (msb/driver.h), with runsc as the engine.
msbplugin_LTLIBRARIES += plugins/gvisor/gvisor.la
plugins_gvisor_gvisor_la_SOURCES = \
	plugins/gvisor/gvisor.c \
	plugins/gvisor/gvisor_internal.h \
	plugins/gvisor/gvisor_bundle.c \
	plugins/gvisor/gvisor_dispose.c \
	plugins/gvisor/gvisor_runsc.c
plugins_gvisor_gvisor_la_LDFLAGS = $(PLUGIN_LINKFLAGS)
plugins_gvisor_gvisor_la_LIBADD = sdk/libmsb-sdk.la

EXTRA_DIST += plugins/gvisor/README.md
