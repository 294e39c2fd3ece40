# core/lib outputs: getting files back — collect_outputs, artifact names, the file-system sink.
core_libmsb_la_SOURCES += \
	core/lib/outputs_internal.h \
	core/lib/sink_internal.h \
	core/lib/artifact_name.c \
	core/lib/outputs_collect.c \
	core/lib/outputs_landed.c \
	core/lib/sink_display.c \
	core/lib/sink_fs.c
msbinclude_HEADERS += core/include/msb/outputs.h
