# core/lib: sandbox.yaml — YAML into an msb_node tree (yaml_*.c), the schema (config_*.c).
core_libmsb_la_SOURCES += \
	core/lib/config_internal.h \
	core/lib/config_arena.c \
	core/lib/config_refuse.c \
	core/lib/yaml_env.c \
	core/lib/yaml_parse.c \
	core/lib/config_read.c \
	core/lib/config_router.c \
	core/lib/config_declarations.c \
	core/lib/config_backends.c \
	core/lib/config_specs.c \
	core/lib/config_pool.c \
	core/lib/config_load.c
msbinclude_HEADERS += core/include/msb/config.h
