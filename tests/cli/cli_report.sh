#!/bin/sh
# cli_report.sh — what msb's output says when things are refused, for a machine and a
# person: per_spec refusals carry each backend's own error name and the class router.h
# decides; `route --json` carries the router's below-floor warning as `check --json` does;
# every --json error names its stage; `msb check` shows each backend's effective
# declarations; the passed-over reason never quotes the fixed selection's sentence.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
msb="$top/core/cli/msb"
lo="$top/plugins/inprocess/.libs/inprocess.so"
hi="$top/tests/router/.libs/inproc_container.so"
for f in "$msb" "$lo" "$hi"; do [ -e "$f" ] || { echo "SKIP: $f is not built"; exit 77; }; done
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed to read --json"; exit 77; }
tmp=$(mktemp -d /tmp/msb-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# py EXPR: evaluate EXPR with `d` the JSON document in $tmp/out; fail with $2 when false.
py() { python3 -c "import json,sys; d=json.load(open('$tmp/out')); sys.exit(0 if ($1) else 1)" || fail "$2: $(cat "$tmp/out")"; }

# A below-floor backend (none) registered first, a container one second, per_spec.
cat >"$tmp/sandbox.yaml" <<YAML
version: 1
router:
  min_isolation: container
  selection: per_spec
backends:
  - plugin: $lo
  - plugin: $hi
    config:
      capabilities: [exec, files_in, files_out]
      egress_modes: [closed]
    declarations:
      capabilities: [exec, files_in]
      limits:
        files_in: {max_files: 4}
specs:
  served:
    requires: [exec]
    files_in: {max_files: 4}
  refused:
    requires: [exec, files_out]
    files_in: {max_files: 4}
YAML
"$msb" -c "$tmp/sandbox.yaml" --json route served >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "route served: exit $?"
py 'd["backend"] == "inproc_container"' "route served goes to inproc_container"
py 'any("below this host" in w and "inprocess" in w for w in d["warnings"])' "route --json carries the below-floor warning"
py 'd["passed_over"][0]["backend"] == "inprocess" and d["passed_over"][0]["error"] == "SandboxBackendNotPermitted"' "passed_over names its class"
py '"would hide the misconfiguration" not in json.dumps(d)' "the passed-over reason does not quote the fixed selection's sentence"
[ -s "$tmp/err" ] && fail "route --json wrote to stderr: $(cat "$tmp/err")"
"$msb" -c "$tmp/sandbox.yaml" route served >"$tmp/text" 2>"$tmp/err"
grep -q "warning: .*below this host" "$tmp/err" || fail "route (text) warns on stderr: $(cat "$tmp/err")"
grep -q "would hide the misconfiguration" "$tmp/text" && fail "route (text) quotes the fixed sentence: $(cat "$tmp/text")"

"$msb" -c "$tmp/sandbox.yaml" --json route refused >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] || fail "route refused: exit status"
py 'd["error"] == "SandboxCapabilityNotSupported"' "per_spec class: the first floor-clearing backend's, not NoSandboxBackend"
py 'd["stage"] == "route"' "route refusal names its stage"
py '[r["error"] for r in d["refusals"]] == ["SandboxBackendNotPermitted", "SandboxCapabilityNotSupported"]' "each backend's own error name"
py 'any("below this host" in w for w in d["warnings"])' "a refused route --json keeps its warnings"

"$msb" -c "$tmp/sandbox.yaml" --json check >"$tmp/out" 2>"$tmp/err"
py 'd["backends"][1]["declarations"]["capabilities"] == ["exec", "files_in"]' "check --json: effective capabilities (config widened, entry narrowed)"
py 'd["backends"][1]["declarations"]["limits"]["files_in"]["max_files"] == 4' "check --json: the narrowed ceiling"
py 'd["backends"][1]["declarations"]["limits"]["files_in"]["max_total_bytes"] == 33554432' "check --json: the unwritten ceiling kept at the backend's own"
py '[s.get("error") for s in d["specs"]] == [None, "SandboxCapabilityNotSupported"]' "check --json: the spec verdicts"
py '[r["error"] for r in d["specs"][1]["refusals"]] == ["SandboxBackendNotPermitted", "SandboxCapabilityNotSupported"]' "check --json: each backend's own refusal"
"$msb" -c "$tmp/sandbox.yaml" check >"$tmp/text" 2>&1
grep -q "capabilities      {exec, files_in}" "$tmp/text" || fail "check (text) shows effective declarations: $(cat "$tmp/text")"
grep -q "in: 8MiB/file, 32MiB total, 4 files" "$tmp/text" || fail "check (text) shows the narrowed limits: $(cat "$tmp/text")"

# Stages of --json errors.
"$msb" -c "$tmp/nonexistent.yaml" --json check >"$tmp/out" 2>/dev/null
py 'd["stage"] == "load"' "a missing file fails at load"
sed 's/min_isolation: container/min_isolation: vm/' "$tmp/sandbox.yaml" >"$tmp/vm.yaml"
"$msb" -c "$tmp/vm.yaml" --json check >"$tmp/out" 2>/dev/null
py 'd["stage"] == "construct" and d["error"] == "SandboxBackendNotPermitted"' "nothing clearing the floor fails at construct"
# The fixed selection's floor refusal names the file, the entry's line and the floor's.
printf 'version: 1\nrouter:\n  min_isolation: container\nbackends:\n  - plugin: %s\nspecs:\n  a: {}\n' "$lo" >"$tmp/fixed.yaml"
"$msb" -c "$tmp/fixed.yaml" check >/dev/null 2>"$tmp/err"
grep -q "^msb: SandboxBackendNotPermitted: $tmp/fixed.yaml:5:5: backends\[0\] (floor at $tmp/fixed.yaml:3:18, router.min_isolation): " "$tmp/err" ||
	fail "the floor refusal names file and lines: $(cat "$tmp/err")"
printf 'version: 1\nbackends:\n  - plugin: %s\nspecs:\n  a: {}\n' "$lo" >"$tmp/default-floor.yaml"
"$msb" -c "$tmp/default-floor.yaml" check >/dev/null 2>"$tmp/err"
grep -q "$tmp/default-floor.yaml:3:5: backends\[0\] (floor: the default" "$tmp/err" ||
	fail "the default floor's refusal names file and line: $(cat "$tmp/err")"
"$msb" -c "$tmp/sandbox.yaml" --json exec --scope s --thread t refused -- true >"$tmp/out" 2>/dev/null
py 'd["stage"] == "route"' "exec of a refused kind fails at route"
# A sandbox.yaml naming a plugin whose constructor exits: check refuses it from the probe
# child and still writes one complete JSON object.
hostile="$top/tests/fixtures/.libs/hostile_ctor_abort.so"
if [ -e "$hostile" ]; then
	printf 'version: 1\nrouter:\n  min_isolation: none\nbackends:\n  - plugin: %s\nspecs:\n  a: {}\n' "$hostile" >"$tmp/hostile.yaml"
	"$msb" -c "$tmp/hostile.yaml" --json check >"$tmp/out" 2>"$tmp/err"
	[ $? -eq 1 ] || fail "check of a plugin whose constructor aborts: exit status"
	py 'd["error"] == "ImportError" and d["stage"] == "load" and "SIGABRT" in d["message"] and "backends[0].plugin" in d["message"]' "check refuses an aborting constructor at load, positioned"
fi
[ "$failures" -eq 0 ]
