#!/bin/sh
# cli_image_route.sh — issue 21: a process sandbox shares the host's filesystem, so a spec
# naming a store image is refused when it is routed — by `msb check`, `msb route` and
# `msb exec` — with SandboxCapabilityNotSupported naming the backend, the image and why, and
# no sandbox is started (the state directory stays empty). The host image is served.
set -u
. "$(dirname "$0")/process_cli.sh"
cli_begin image /var/tmp

mkdir "$tmp/state"
cat >"$tmp/sandbox.yaml" <<YAML
version: 1
router:
  min_isolation: os_process
backends:
  - plugin: $plugin
    config:
      state_dir: $tmp/state
      agent: $agent
specs:
  py:
    image: python
  plain:
    image: host
YAML

run "$msb" -c "$tmp/sandbox.yaml" check
[ "$status" -eq 1 ] || fail "check: exit $status, expected 1"
grep -q "py .*REFUSED: SandboxCapabilityNotSupported" "$tmp/out" || fail "check row: $(cat "$tmp/out")"
grep -q "plain .*ok: process" "$tmp/out" || fail "check host row: $(cat "$tmp/out")"

run "$msb" -c "$tmp/sandbox.yaml" route py
[ "$status" -eq 1 ] || fail "route: exit $status, expected 1"
grep -q "^msb: SandboxCapabilityNotSupported: .*'process' cannot run image 'python'" "$tmp/err" ||
	fail "route error: $(cat "$tmp/err")"

run "$msb" -c "$tmp/sandbox.yaml" exec --scope s --thread t py -- true
[ "$status" -eq 125 ] || fail "exec: exit $status, expected 125 (msb refused, no guest status)"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "exec: one error line expected: $(cat "$tmp/err")"
grep -q "^msb: SandboxCapabilityNotSupported: .*image 'python'.*share the host's filesystem" "$tmp/err" ||
	fail "exec error: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/state")" ] || fail "a sandbox was started for a refused spec: $(ls -A "$tmp/state")"

run "$msb" -c "$tmp/sandbox.yaml" --json exec --scope s --thread t py -- true
grep -q '"error": "SandboxCapabilityNotSupported"' "$tmp/out" || fail "exec --json: $(cat "$tmp/out")"

run "$msb" -c "$tmp/sandbox.yaml" exec --scope s --thread t plain -- echo ok
[ "$status" -eq 0 ] && grep -qx ok "$tmp/out" || fail "host image exec: $status $(cat "$tmp/out" "$tmp/err")"

[ "$failures" -eq 0 ] || exit 1
echo "PASS: cli_image_route"
