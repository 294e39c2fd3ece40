#!/bin/sh
# hosts_doc.sh — doc/hosts.md's program, done literally and end to end on the process
# backend: extract host.c from the page, compile it against this build tree's libmsb, run it
# over a sandbox.yaml for the process plugin and a fresh store directory, and check what it
# says and what it left: a tool call whose body collected a declared output into the
# file-store sink (recorded before it was written), a host that read it back through the
# read-only store tools, and an effective state naming the backend, rung, scope, egress and
# capabilities. Everything is removed on exit, pass or fail.
set -eu

: "${MSB_TOP_BUILDDIR:?run me from make check}"
: "${MSB_TOP_SRCDIR:?run me from make check}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the process backend's sandboxes need root here"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/msb-hosts-doc.XXXXXX")
state="$tmp/state"
cleanup() {
	# a sandbox the program failed to dispose: end its agent by pid, never by name
	for meta in "$state"/*/pid; do
		[ -f "$meta" ] && kill -KILL "$(cat "$meta")" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT HUP INT TERM
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && sed 's/^/  | /' "$tmp/out"; exit 1; }

make_var() { sed -n "s/^$1 = //p" "$MSB_TOP_BUILDDIR/Makefile"; }
cc=$(make_var CC)
san=$(make_var SAN_CFLAGS)

awk '/<!-- hosts: host.c -->/ { armed = 1; next }
     armed && /^```c$/ { copying = 1; next }
     copying && /^```$/ { exit }
     copying { print }' "$MSB_TOP_SRCDIR/doc/hosts.md" >"$tmp/host.c"
[ -s "$tmp/host.c" ] || fail "no host.c block in doc/hosts.md"

# shellcheck disable=SC2086 # the sanitizer flags are meant to be word-split
$cc $san -std=c17 -Wall -Wextra -Werror -o "$tmp/host" "$tmp/host.c" \
	-I"$MSB_TOP_SRCDIR/sdk/include" -I"$MSB_TOP_SRCDIR/core/include" \
	-L"$MSB_TOP_BUILDDIR/core/.libs" -L"$MSB_TOP_BUILDDIR/sdk/.libs" -lmsb -lmsb-sdk ||
	fail "doc/hosts.md's host.c does not compile cleanly"

mkdir "$tmp/store"
cat >"$tmp/sandbox.yaml" <<YAML
version: 1
router:
  min_isolation: os_process
backends:
  - plugin: $MSB_TOP_BUILDDIR/plugins/process/.libs/process.so
    config:
      state_dir: $state
      agent: $MSB_TOP_BUILDDIR/sdk/agent/msb-agent
specs:
  report:
    image: host
    work_dir: /msb/work
    requires: [exec, files_in, files_out]
    declared_outputs:
      - {path: out/report.txt, media_type: text/plain}
YAML

LD_LIBRARY_PATH="$MSB_TOP_BUILDDIR/core/.libs:$MSB_TOP_BUILDDIR/sdk/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	"$tmp/host" "$tmp/sandbox.yaml" "$tmp/store" >"$tmp/out" 2>&1 || fail "host exited $?"

grep -q '^event: SandboxAcquired backend=process refusal=-$' "$tmp/out" || fail "no served acquire"
call=$(sed -n 's|^provenance: \([0-9a-f]\{24\}\)/out/report.txt 10 bytes sha256=\([0-9a-f]\{64\}\)$|\1|p' "$tmp/out")
[ -n "$call" ] || fail "no provenance record for <call_id>/out/report.txt"
# the record was made before the bytes, and is of the bytes that landed
sum=$(sed -n 's|^provenance: .* sha256=||p' "$tmp/out")
[ "$(sha256sum <"$tmp/store/$call/out/report.txt" | cut -d' ' -f1)" = "$sum" ] ||
	fail "the provenance digest is not that of the landed file"
line_of() { grep -n "$1" "$tmp/out" | head -n 1 | cut -d: -f1; }
[ "$(line_of '^provenance:')" -lt "$(line_of '^event: OutputsCollected files=1$')" ] ||
	fail "provenance did not come before the collection ended"
[ "$(cat "$tmp/store/$call/out/report.txt")" = "all green" ] || fail "the store does not hold the output"
grep -q "^item 0 \[trusted, own label\]: The report is in the outputs store" "$tmp/out" || fail "item 0"
grep -q "^item 1 \[untrusted, the call's label\]: $call/out/report.txt (10 bytes)\$" "$tmp/out" || fail "item 1"
grep -q '^result label: untrusted$' "$tmp/out" || fail "combined label"
grep -q '^event: ToolCallEnded report error=-$' "$tmp/out" || fail "ToolCallEnded"
grep -q '^disposed: 1$' "$tmp/out" || fail "the scope guard did not dispose the sandbox"
grep -q "^outputs_ls: $call/\$" "$tmp/out" || fail "outputs_ls"
grep -q "^event: StoreFileRead $call/out/report.txt found\$" "$tmp/out" || fail "StoreFileRead"
grep -q '^outputs_read: all green$' "$tmp/out" || fail "outputs_read"
json=$(sed -n 's/^effective state: //p' "$tmp/out")
python3 - "$json" "$call" <<'PY' || fail "effective state"
import json, sys
state = json.loads(sys.argv[1])["report"]
assert state["backend"] == "process", state
assert state["isolation"] == "os_process", state
assert state["scope"] == "conversation", state
assert state["egress"] == "closed" and state["egress_allow"] == [], state
assert set(state["capabilities_asked"]) >= {"exec", "files_in", "files_out"}, state
assert {"exec", "files_out"} <= set(state["capabilities_declared"]), state
assert state["call"] == sys.argv[2], state
assert "tenant-1" not in sys.argv[1] and "thread-1" not in sys.argv[1], "a key part leaked"
PY
# nothing of the sandbox is left behind
[ -z "$(ls -A "$state" 2>/dev/null | grep -v '^\.')" ] || fail "the state directory still holds: $(ls -A "$state")"
sed "s/^/  | /" "$tmp/out"
echo "PASS: doc/hosts.md's program ran end to end on the process backend"
