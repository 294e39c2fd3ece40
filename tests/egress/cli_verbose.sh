#!/bin/sh
# cli_verbose.sh — `msb exec -v` on an allowlist spec prints each egress decision on stderr
# (a line each, or a JSON object a line with --json), stdout staying the command's own.
# The peer is a python3 server on the host's loopback, reopened by egress_allow_ranges for
# this test alone; names resolve through the test map only.
set -u
B=${MSB_TOP_BUILDDIR:?run from make check}
msb=$B/core/cli/msb
if [ "$(id -u)" != 0 ] || ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: needs root (the sandbox's namespaces) and python3 (the peer and the probe)"; exit 77
fi
dir=$(mktemp -d /tmp/msb-egress-cli-XXXXXX) || exit 1
chmod 711 "$dir"
port=$(( 20001 + ($$ % 20000) * 2 ))
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; "$msb" -c "$dir/sandbox.yaml" dispose --scope s --thread t >/dev/null 2>&1; rm -rf "$dir"' EXIT
cat > "$dir/sandbox.yaml" <<YAML
version: 1
router:
  min_isolation: os_process
backends:
  - plugin: $B/plugins/process/.libs/process.so
    config:
      state_dir: $dir/state
      agent: $B/sdk/agent/msb-agent
      egress_ports: [$port]
      egress_allow_ranges: [127.0.0.1/32]
      egress_test_hosts: {peer.test: 127.0.0.1, other.test: 127.0.0.1}
specs:
  web:
    egress: allowlist
    egress_allow: [peer.test]
YAML
for i in 1 2 3 4 5 6 7 8 9 10; do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
	sleep 0.2
done
probe='import sys, urllib.request
for u in sys.argv[1:]:
    try: print(u, urllib.request.urlopen(u, timeout=10).status)
    except Exception as e: print(u, "refused", getattr(e, "code", ""))'
fail=0
"$msb" -c "$dir/sandbox.yaml" exec web -v --scope s --thread t -- python3 -c "$probe" \
	"http://peer.test:$port/" "http://other.test:$port/" > "$dir/out" 2> "$dir/err"
cat "$dir/out" "$dir/err"
grep -q "^http://peer.test:$port/ 200" "$dir/out" || { echo "FAIL: the listed name did not answer"; fail=1; }
grep -q "^http://other.test:$port/ refused 403" "$dir/out" || { echo "FAIL: the unlisted name was not refused"; fail=1; }
grep -q "^msb: egress: allowed peer.test:$port$" "$dir/err" || { echo "FAIL: no allowed line"; fail=1; }
grep -q "^msb: egress: denied other.test:$port: the name is not on the spec's egress_allow$" "$dir/err" ||
	{ echo "FAIL: no denied line with its reason"; fail=1; }
"$msb" --json -c "$dir/sandbox.yaml" exec web -v --scope s --thread t -- python3 -c "$probe" \
	"http://other.test:$port/" > "$dir/out" 2> "$dir/err"
cat "$dir/err"
grep -q "^{\"event\": \"EgressObserved\", \"destination\": \"other.test:$port\", \"decision\": \"DENY\", \"reason\": \"the name is not on the spec's egress_allow\"}$" "$dir/err" ||
	{ echo "FAIL: no JSON decision line"; fail=1; }
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$dir/out" || { echo "FAIL: stdout is not the result object alone"; fail=1; }
# Without -v nothing is printed about egress.
"$msb" -c "$dir/sandbox.yaml" exec web --scope s --thread t -- python3 -c "$probe" \
	"http://other.test:$port/" > "$dir/out" 2> "$dir/err"
! grep -q "egress" "$dir/err" || { echo "FAIL: decisions printed without -v"; fail=1; }
[ $fail = 0 ] && echo "1 passed, 0 failed"
exit $fail
