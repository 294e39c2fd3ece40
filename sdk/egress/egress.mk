# sdk/egress: the egress enforcer (msb/egress.h) — the host-side proxy every agent-backed
# backend runs for `egress: allowlist`, its policy, and the HTTP proxy request parse.
msbinclude_HEADERS += sdk/include/msb/egress.h
sdk_libmsb_sdk_la_SOURCES += \
	sdk/egress/egress_internal.h \
	sdk/egress/policy.c \
	sdk/egress/http.c \
	sdk/egress/proxy.c \
	sdk/egress/resolver.c \
	sdk/egress/netns_ports.c
