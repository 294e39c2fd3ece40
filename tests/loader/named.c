/*
 * named.c — a valid fixture plugin whose backend name is set at build time (NAMED_FIXTURE),
 * so tests/loader builds several distinct plugins from one source: loading many at once on
 * one loader needs plugins that do not collide on their names.
 */
#include "fixture.h"

#ifndef NAMED_FIXTURE
#error "build named.c with -DNAMED_FIXTURE=\"a name\""
#endif

MSB_BACKEND_DEFINE(
	.name = NAMED_FIXTURE,
	.isolation = "os_process",
	FIXTURE_OPS,
);
