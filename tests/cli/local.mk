# tests/cli: the msb command end to end, spawned as a process, against the inprocess fake
# and the loader's fixture plugins (which therefore build first).
TESTS += tests/cli/cli.sh tests/cli/pool.sh
EXTRA_DIST += tests/cli/cli.sh tests/cli/pool.sh
# Host input read with a bound (issue 17): put, --stdin, run-code, sandbox.yaml.
TESTS += tests/cli/cli_bounds.sh
EXTRA_DIST += tests/cli/cli_bounds.sh
# What exec says about a timeout and a cut (issue 17), against the real process backend.
TESTS += tests/cli/cli_timeout.sh
EXTRA_DIST += tests/cli/cli_timeout.sh tests/cli/process_cli.sh
# Every shipped configuration through `msb check`, held to what its comments claim.
TESTS += tests/cli/shipped_configs.sh
EXTRA_DIST += tests/cli/shipped_configs.sh
# Refusals as a machine and a person read them: classes, per-backend names, stages, warnings.
TESTS += tests/cli/cli_report.sh
EXTRA_DIST += tests/cli/cli_report.sh
TESTS += tests/cli/default_config.sh
EXTRA_DIST += tests/cli/default_config.sh
# Background commands across msb processes (issue 23), on the real process backend.
TESTS += tests/cli/cli_background.sh
EXTRA_DIST += tests/cli/cli_background.sh

TESTS += tests/cli/cli_image_route.sh
EXTRA_DIST += tests/cli/cli_image_route.sh
