# plugins/process: the `process` backend (rung os_process), a boundary driver over the SDK's
# guest agent and driver (msb/driver.h).
msbplugin_LTLIBRARIES += plugins/process/process.la
plugins_process_process_la_SOURCES = plugins/process/process.c \
	plugins/process/process_mounts.h plugins/process/process_mounts.c \
	plugins/process/process_uid.h plugins/process/process_uid.c
plugins_process_process_la_LDFLAGS = $(PLUGIN_LINKFLAGS)
plugins_process_process_la_LIBADD = sdk/libmsb-sdk.la
