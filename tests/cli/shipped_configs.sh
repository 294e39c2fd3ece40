#!/bin/sh
# shipped_configs.sh — every configuration msb ships (conf/*.yaml, conf/examples/*.yaml) is
# run through `msb check`, and what it says must be what the file's own comments say. Each
# file carries lines of the form
#   # msb check: SPEC ok BACKEND           the spec routes to BACKEND
#   # msb check: SPEC refused ERRORNAME    the spec is refused on purpose, with that name
#   # msb check: warning WORD              a router warning mentions WORD
# and every spec the file defines must have a line: a file without claims, a claim that does
# not hold, or a spec nobody claimed, fails. The plugins are the ones built in this tree.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
src=${MSB_TOP_SRCDIR:-$top/..}
msb="$top/core/cli/msb"
[ -x "$msb" ] || { echo "SKIP: $msb is not built"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed to read --json"; exit 77; }
MSB_PLUGIN_PATH=
for p in inprocess process bwrap gvisor qemu docker; do
	MSB_PLUGIN_PATH="$MSB_PLUGIN_PATH${MSB_PLUGIN_PATH:+:}$top/plugins/$p/.libs"
done
export MSB_PLUGIN_PATH
tmp=$(mktemp -d /tmp/msb-shipped.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
checked=0
for f in "$src"/conf/*.yaml "$src"/conf/examples/*.yaml; do
	name=${f#"$src"/}
	grep '^# msb check: ' "$f" | sed 's/^# msb check: //' >"$tmp/claims"
	if [ ! -s "$tmp/claims" ]; then
		echo "FAIL: $name says nothing of what 'msb check' answers (no '# msb check:' lines)"
		failures=$((failures + 1))
		continue
	fi
	"$msb" -c "$f" --json check >"$tmp/out" 2>"$tmp/err"
	status=$?
	"$msb" -c "$f" check >"$tmp/text" 2>&1
	text_status=$?
	if python3 - "$name" "$tmp/claims" "$tmp/out" "$status" "$text_status" <<'PY'
import json, sys
name, claims_file, out_file, status, text_status = sys.argv[1:6]
bad = []
try:
    doc = json.load(open(out_file))
except ValueError as e:
    print("FAIL: %s: msb check --json is not JSON: %s" % (name, e)); sys.exit(1)
if doc.get("error") == "ImportError" and "cannot be opened" in doc.get("message", ""):
    print("SKIP-FILE: %s: a plugin is not built here: %s" % (name, doc["message"])); sys.exit(2)
if doc.get("stage") == "load" and "cannot be reached" in doc.get("message", ""):
    # an engine-backed example (docker.yaml): tests/backends/docker_backend.sh checks it
    # against an engine it starts itself
    print("SKIP-FILE: %s: the engine it names is not running here: %s" % (name, doc["message"])); sys.exit(2)
if "specs" not in doc:
    print("FAIL: %s: msb check refused the file: %s" % (name, doc)); sys.exit(1)
specs = {s["kind"]: s for s in doc["specs"]}
claimed, refused = set(), False
for line in open(claims_file):
    w = line.split()
    if len(w) == 2 and w[0] == "warning":
        if not any(w[1] in x for x in doc.get("warnings", [])):
            bad.append("no warning mentions '%s' (warnings: %s)" % (w[1], doc.get("warnings")))
        continue
    if len(w) != 3 or w[1] not in ("ok", "refused"):
        bad.append("cannot read the claim '%s'" % line.strip()); continue
    kind, verdict, what = w
    claimed.add(kind)
    s = specs.get(kind)
    if s is None:
        bad.append("claims spec '%s', which the file does not define" % kind)
    elif verdict == "ok" and s.get("backend") != what:
        bad.append("spec '%s' should route to %s, got %s" % (kind, what, s))
    elif verdict == "refused":
        refused = True
        if s.get("error") != what:
            bad.append("spec '%s' should be refused with %s, got %s" % (kind, what, s))
for kind in specs:
    if kind not in claimed:
        bad.append("spec '%s' has no '# msb check:' line saying what check answers" % kind)
want = "1" if refused else "0"
if status != want or text_status != want:
    bad.append("exit status %s (--json) and %s (text), expected %s" % (status, text_status, want))
for b in bad:
    print("FAIL: %s: %s" % (name, b))
sys.exit(1 if bad else 0)
PY
	then
		echo "ok: $name"
		checked=$((checked + 1))
	else
		rc=$?
		[ "$rc" -eq 2 ] && continue
		failures=$((failures + 1))
		sed 's/^/  stderr: /' "$tmp/err"
	fi
done
[ "$checked" -gt 0 ] || { echo "SKIP: no shipped file could be checked here"; exit 77; }
[ "$failures" -eq 0 ]
