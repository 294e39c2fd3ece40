# core/lib/router: the router, the acquired sandbox, the observer and the caller's key.
core_libmsb_la_SOURCES += \
	core/lib/router_internal.h \
	core/lib/router.c \
	core/lib/router_checks.c \
	core/lib/router_spec.c \
	core/lib/router_acquire.c \
	core/lib/pool_internal.h \
	core/lib/pool.c \
	core/lib/pool_blueprint.c \
	core/lib/pool_filler.c \
	core/lib/router_snapshot.c \
	core/lib/sandbox.c \
	core/lib/sandbox_bg.c \
	core/lib/observer.c \
	core/lib/caller.c
