# core/lib/tool: the tool-call session (tool_*.c) and the host-tool registry (host_tool*.c).
core_libmsb_la_SOURCES += \
	core/lib/tool_internal.h \
	core/lib/tool_session.c \
	core/lib/tool_call.c \
	core/lib/tool_cleanup.c
core_libmsb_la_SOURCES += \
	core/lib/host_tool_internal.h \
	core/lib/host_tool_registry.c \
	core/lib/host_tool_aggregate.c \
	core/lib/host_tool_ffi.c \
	core/lib/host_tool_args.c \
	core/lib/host_tool_run.c
core_libmsb_la_SOURCES += core/lib/host_tool_exec.c
# The effective-state record: one entry per tool, to persist beside a transcript.
core_libmsb_la_SOURCES += core/lib/tool_items.c core/lib/effective_states.c
msbinclude_HEADERS += core/include/msb/effective_state.h
