# core/lib/tool: the tool-call session (tool_*.c) and the host-tool registry (host_tool*.c).
core_libmsb_la_SOURCES += \
	core/lib/tool_internal.h \
	core/lib/tool_session.c \
	core/lib/tool_call.c \
	core/lib/tool_cleanup.c
