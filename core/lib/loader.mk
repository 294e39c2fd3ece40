# core/lib/loader.mk: the plugin loader — declarations and their silence rules, dlopen and
# descriptor validation, plugin resolution, opening backends.
core_libmsb_la_SOURCES += \
	core/lib/plugin_internal.h \
	core/lib/declarations.c \
	core/lib/loader.c \
	core/lib/loader_elf.h \
	core/lib/loader_elf.c \
	core/lib/loader_probe.c \
	core/lib/loader_validate.c \
	core/lib/loader_resolve.c \
	core/lib/loader_backend.c
