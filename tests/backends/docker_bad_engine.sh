#!/bin/sh
# docker_bad_engine.sh — the docker backend against engines that misbehave: one that never
# answers, one that answers without end, one that does not speak HTTP, one that refuses with
# a body that is not JSON. Each must be a clear error naming the engine's socket, within the
# configured api_timeout — never a hang, never an unbounded read, never a crash. The stand-in
# engine is a python3 unix-socket server (no real engine needed: this tests msb's client).
set -u
B=${MSB_TOP_BUILDDIR:?run me from make check}
MSB="$B/core/cli/msb"
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
tmp=$(mktemp -d /tmp/msb-docker-bad.XXXXXX) || exit 1
server=
stop_server() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; server=; }
trap 'stop_server; rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fails=0

cat >"$tmp/engine.py" <<'PY'
import os, socket, sys, threading, time
mode, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); s.listen(16)
def serve(c):
    req = b""
    while b"\r\n\r\n" not in req:
        d = c.recv(4096)
        if not d: return
        req += d
    line = req.split(b"\r\n")[0].decode()
    ping = " /v1.41/_ping " in line
    if mode == "hang" or (mode == "hang-later" and not ping):
        time.sleep(120); return
    if ping and mode != "flood" and mode != "garbage":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nOK"); c.close(); return
    if mode == "flood":
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
        try:
            while True: c.sendall(chunk)
        except OSError: return
    if mode == "garbage":
        c.sendall(b"\x00\x01 this is not HTTP\r\n\r\n"); c.close(); return
    if mode == "refuse-create" and "/containers/create" not in line:
        body = b'{"message": "no such container"}'
        c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)); c.close(); return
    if mode in ("refuse", "refuse-create"):
        body = b"boom: <html>not json</html>"
        c.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)); c.close(); return
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY

# case MODE COMMAND WORD — a stand-in engine in MODE; the msb command must fail within
# 20 s (api_timeout is 1 s) with WORD in its output.
case_() {
	mode=$1 cmd=$2 word=$3
	rm -f "$tmp/api.sock"
	python3 "$tmp/engine.py" "$mode" "$tmp/api.sock" &
	server=$!
	i=0
	while [ ! -S "$tmp/api.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	cat >"$tmp/s.yaml" <<YAML
version: 1
router: {min_isolation: container}
backends:
  - plugin: $B/plugins/docker/.libs/docker.so
    config: {state_dir: $tmp/state-$mode, agent: $B/sdk/agent/msb-agent, socket: $tmp/api.sock, image: x, api_timeout: 1s, start_timeout: 2s}
specs:
  shell: {requires: [exec]}
YAML
	start=$(date +%s)
	if [ "$cmd" = check ]; then
		timeout 20 "$MSB" -c "$tmp/s.yaml" check >"$tmp/out" 2>&1
	else
		timeout 20 "$MSB" -c "$tmp/s.yaml" exec shell --scope s --thread t -- true >"$tmp/out" 2>&1
	fi
	rc=$?
	took=$(($(date +%s) - start))
	if [ $rc -eq 124 ] && [ "$cmd" = check ] || [ $took -ge 20 ]; then
		echo "FAIL: $mode: msb hung (killed after 20 s)"; fails=$((fails + 1))
	elif [ $rc -eq 0 ] || [ $rc -ge 128 ]; then
		echo "FAIL: $mode: msb exited $rc"; cat "$tmp/out"; fails=$((fails + 1))
	elif ! grep -q -- "$word" "$tmp/out"; then
		echo "FAIL: $mode: output lacks '$word':"; cat "$tmp/out"; fails=$((fails + 1))
	else
		echo "ok: $mode: refused in ${took}s: $(head -c 300 "$tmp/out")"
	fi
	stop_server
}

case_ hang check "did not answer GET /_ping within 1.0 s"
case_ flood check "with more than 4194304 bytes (refused)"
case_ garbage check "cannot be reached for GET /_ping"
case_ refuse exec "create: the engine answered 500: boom: <html>not json</html>"
case_ hang-later exec "did not answer POST /containers/create"
# An engine that refuses create but answers the rest: the failed start leaves nothing.
case_ refuse-create exec "create: the engine answered 500: boom"
[ -z "$(ls "$tmp/state-refuse-create" 2>/dev/null | grep -v '\.lock$')" ] && echo "ok: a refused create leaves no sandbox behind" ||
	{ echo "FAIL: left: $(ls "$tmp/state-refuse-create")"; fails=$((fails + 1)); }
# One whose cleanup cannot be verified keeps the sandbox addressable (a later dispose retries).
[ -n "$(ls "$tmp/state-refuse" 2>/dev/null | grep -v '\.lock$')" ] && echo "ok: an unverified cleanup keeps the sandbox for a later dispose" ||
	{ echo "FAIL: an unverified cleanup forgot the sandbox"; fails=$((fails + 1)); }
[ $fails -eq 0 ]
