#!/bin/sh
# cli_timeout.sh — what the msb command says about a run that ran out or was cut (issue 17):
# --timeout 0 is refused instead of silently meaning the backend's default and then being
# reported as "(0s)"; a timeout under the configured default says so; msb's note and timeout
# lines start on lines of their own, never glued to the guest's last stderr line. Backend:
# process (real, as the output cap and the timeout are the agent's).
set -u
. "$(dirname "$0")/process_cli.sh"
cli_begin timeout

cat >"$cfg" <<YAML
version: 1
router:
  min_isolation: os_process
backends:
  - plugin: $plugin
    config:
      state_dir: $tmp/state
      agent: $agent
      max_output: 16
      timeout: 1
specs:
  shell:
    requires: [exec]
YAML
k="--scope s --thread t"

run "$msb" -c "$cfg" exec shell $k --timeout 0 -- true; expect_status 2 "--timeout 0"
expect_err "--timeout: '0' is no time to run in" "--timeout 0 says why"
run "$msb" -c "$cfg" run-code shell $k --timeout 0 -e true; expect_status 2 "run-code --timeout 0"

# Cut at the configured 16-byte cap, with a last stderr line that does not end.
run "$msb" -c "$cfg" exec shell $k -- sh -c 'printf 0123456789abcdefXYZ; printf partial >&2'
expect_status 0 "a cut run"
[ "$(cat "$tmp/out")" = "0123456789abcdef" ] || fail "stdout cut at 16: $(cat "$tmp/out")"
[ "$(sed -n 1p "$tmp/err")" = "partial" ] || fail "the guest's line stays its own: $(cat "$tmp/err")"
sed -n 2p "$tmp/err" | grep -q "^msb: note: the guest's stdout was cut" || fail "the note starts its own line: $(cat "$tmp/err")"

# The configured 1 s timeout, no --timeout given: the line says whose timeout it was.
run "$msb" -c "$cfg" exec shell $k -- sh -c 'printf waiting >&2; sleep 30'
expect_status 124 "configured timeout"
[ "$(sed -n 1p "$tmp/err")" = "waiting" ] || fail "the guest's line before the timeout: $(cat "$tmp/err")"
sed -n 2p "$tmp/err" | grep -q "^msb: TimeoutError: the command ran out of time (the backend's configured timeout" ||
	fail "the timeout line names the configured timeout: $(cat "$tmp/err")"
grep -q "(0s)" "$tmp/err" && fail "a 0 s timeout reported: $(cat "$tmp/err")"
run "$msb" -c "$cfg" exec shell $k --timeout 0.5 -- sleep 30
expect_status 124 "--timeout 0.5"; expect_err "ran out of time (0.5s)" "--timeout 0.5 named"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "PASS: cli_timeout"
