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
# The file store: a host's store (a vtable, and one over a directory), the file-store sink
# landing "<call_id>/<name>" in it, and the read-only tools a model reads it back with.
core_libmsb_la_SOURCES += \
	core/lib/store_dir.c \
	core/lib/sink_store.c \
	core/lib/store_tools.c
msbinclude_HEADERS += core/include/msb/store.h
