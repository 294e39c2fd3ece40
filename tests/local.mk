# Each test area keeps its own rules.
include tests/lib/local.mk
include tests/fixtures/local.mk
include tests/vocab/local.mk
include tests/loader/local.mk
include tests/router/local.mk
include tests/tools/local.mk
include tests/config/local.mk
include tests/cli/local.mk
include tests/files/local.mk
include tests/agent/local.mk
include tests/backends/local.mk
include tests/conformance/local.mk
include tests/bench/local.mk
include tests/egress/local.mk
