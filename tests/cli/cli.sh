#!/bin/sh
# cli.sh — the msb command end to end, spawned as a process: every subcommand in text and
# --json, exit codes, and the one-line error format "msb: <SeedErrorName>: <sentence>".
# Backends: the inprocess fake (plugins/inprocess) and the loader's fixture plugins.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
src=${MSB_TOP_SRCDIR:-$top/..}
msb="$top/core/cli/msb"
inproc="$top/plugins/inprocess/.libs/inprocess.so"
fixtures="$top/tests/fixtures/.libs"
for f in "$msb" "$inproc" "$fixtures/good.so"; do
	[ -e "$f" ] || { echo "SKIP: $f is not built"; exit 77; }
done

tmp=$(mktemp -d /tmp/msb-cli.XXXXXX)
. "$src/tests/lib/cgroup_parents.sh"
# A persistent backend's sandboxes are disposed however the script ends, then the state goes,
# then the cgroup parents a backend made for them.
cleanup() {
	[ -f "$tmp/bwrap.yaml" ] && "$msb" -c "$tmp/bwrap.yaml" dispose --scope rt --thread t1 >/dev/null 2>&1
	[ -f "$tmp/default.yaml" ] && "$msb" -c "$tmp/default.yaml" dispose --scope demo --thread t1 >/dev/null 2>&1
	[ -f "$tmp/default.yaml" ] && "$msb" -c "$tmp/default.yaml" dispose --scope demo --thread t2 >/dev/null 2>&1
	rm -rf "$tmp"
	msb_cg_clean
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run CMD…: stdout → $tmp/out, stderr → $tmp/err, status → $status
# Under --json, stdout must be exactly one JSON object (checked where python3 is present).
have_python=$(command -v python3 >/dev/null 2>&1 && echo yes)
run() {
	"$@" >"$tmp/out" 2>"$tmp/err"; status=$?
	case " $* " in *" --json "*)
		[ -n "$have_python" ] && ! python3 -c 'import json,sys; assert isinstance(json.load(sys.stdin), dict)' \
			<"$tmp/out" 2>/dev/null && fail "not one JSON object from: $* -> $(cat "$tmp/out")"
	esac
	return 0
}
expect_status() { [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1 (stderr: $(cat "$tmp/err"))"; }
expect_out() { grep -qF -- "$1" "$tmp/out" || fail "$2: stdout lacks '$1': $(cat "$tmp/out")"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "$2: stderr lacks '$1': $(cat "$tmp/err")"; }
# The error contract: exactly one line on stderr, "msb: Name: sentence".
expect_error_line() {
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$2: expected one error line, got: $(cat "$tmp/err")"
	grep -q "^msb: $1: ." "$tmp/err" || fail "$2: expected 'msb: $1: …', got: $(cat "$tmp/err")"
}
expect_json_error() {
	grep -q "^{\"error\": \"$1\", \"message\": \"" "$tmp/out" || fail "$2: expected JSON error $1, got: $(cat "$tmp/out")"
}

cfg="$tmp/sandbox.yaml"
cat >"$cfg" <<YAML
version: 1
router:
  min_isolation: none
backends:
  - plugin: $inproc
    config:
      capabilities: [exec, run_code, files_in, files_out, files_list, files_delete]
      egress_modes: [closed]
      default_stdout: "default out\n"
      outputs:
        - {match: "fail-with-three", stdout: "partial", stderr: "boom", exit_code: 3}
      programs:
        - {match: "print", stdout: "42"}
specs:
  shell:
    requires: [exec, files_in, files_out, files_list, files_delete]
  python:
    requires: [exec, run_code]
  report:
    requires: [exec, files_out]
    declared_outputs:
      - {path: report.txt, required: true}
  maybe:
    requires: [exec, files_out]
    declared_outputs:
      - {path: maybe.txt, required: false}
YAML

# ---- snapshots (issue 22) refused where no backend declares them ---------------------------
run "$msb" -c "$cfg" exec shell --scope s --thread fork --from s1 -- true
expect_status 125 "exec --from on inprocess"; expect_error_line SandboxCapabilityNotSupported "exec --from refused at route time"
expect_err "snapshot" "exec --from names the capability"
run "$msb" -c "$cfg" snapshot save shell --scope s --thread snap s1
expect_status 1 "snapshot save on inprocess"; expect_error_line NotImplementedError "snapshot save refused"
run "$msb" -c "$cfg" snapshot ls; expect_status 0 "snapshot ls with none"
run "$msb" -c "$cfg" snapshot rm s1; expect_status 1 "snapshot rm with none"; expect_error_line ValueError "snapshot rm refused"
run "$msb" -c "$cfg" dispose --scope s --thread snap
run "$msb" -c "$cfg" snapshot frob; expect_status 2 "snapshot unknown verb"

# ---- usage and help --------------------------------------------------------------------
run "$msb"; expect_status 2 "no command"
run "$msb" frobnicate; expect_status 2 "unknown command"; expect_err "unknown command 'frobnicate'" "unknown command"
run "$msb" --help; expect_status 0 "--help"; expect_out "check" "--help lists commands"
run "$msb" --version; expect_status 0 "--version"; expect_out "plugin ABI 27" "--version"
for c in check plugins route exec run-code put get ls rm stat reclaim collect dispose ps attach kill wait snapshot; do
	run "$msb" "$c" --help; expect_status 0 "$c --help"; expect_out "usage: msb" "$c --help"
done
run "$msb" -c "$cfg" exec shell -- true; expect_status 2 "exec without --scope/--thread"
expect_err "--scope and --thread are required" "exec without key"
run "$msb" -c "$cfg" collect report --scope s --thread t; expect_status 2 "collect without --out"
run "$msb" -c "$cfg" check --bogus; expect_status 2 "unknown option"
# Every usage refusal: exit 2, one line "msb CMD: why (try 'msb CMD --help')".
usage_refused() { # WORDS CMD ARGS…
	words=$1; shift; c=$1
	run "$msb" -c "$cfg" "$@"; expect_status 2 "$c $*"
	expect_err "msb $c: $words" "$c usage"; expect_err "(try 'msb $c --help')" "$c usage"
}
for c in check plugins route exec run-code put get ls rm collect dispose conformance; do
	usage_refused "unknown option" "$c" --bogus
done
k="--scope s --thread t"
usage_refused "takes no arguments" check extra
usage_refused "takes no arguments" dispose $k extra
usage_refused "takes one KIND" route
usage_refused "takes one KIND" route shell python
usage_refused "needs KIND and, after --, the command to run" exec $k
usage_refused "takes one KIND" run-code $k
usage_refused "--timeout: 'soon' is not a duration" run-code $k --timeout soon python -e 1
usage_refused "--timeout: 'soon' is not a duration" exec $k --timeout soon shell -- true
usage_refused "takes KIND LOCAL GUEST" put shell $k only-one
usage_refused "takes KIND GUEST [LOCAL]" get shell $k
usage_refused "takes KIND [GUEST_DIR]" ls
usage_refused "takes KIND GUEST" rm shell $k
usage_refused "takes one KIND" collect $k --out "$tmp"
usage_refused "--out DIR is required: where the artifacts land" collect report $k
usage_refused "--scope and --thread are required" get shell a.txt

# ---- check -----------------------------------------------------------------------------
run "$msb" -c "$cfg" check; expect_status 0 "check"
expect_out "spec    shell            ok: inprocess" "check table"
run "$msb" -c "$cfg" --json check; expect_status 0 "check --json"
expect_out '"ok": true' "check --json"; expect_out '{"kind": "python", "backend": "inprocess"}' "check --json"
# -c and --json are taken after the subcommand too
run "$msb" check -c "$cfg" --json; expect_status 0 "check, options after"; expect_out '"ok": true' "options after"

# A spec no backend can serve: the table says why, the command fails.
sed 's/requires: \[exec, run_code\]/requires: [exec, snapshot]/' "$cfg" >"$tmp/refuse.yaml"
run "$msb" -c "$tmp/refuse.yaml" check; expect_status 1 "check with a refusal"
expect_out "REFUSED: SandboxCapabilityNotSupported" "check refusal row"
expect_err "1 of 4 spec(s) refused" "check refusal summary"
run "$msb" -c "$tmp/refuse.yaml" --json check; expect_status 1 "check --json refusal"
expect_out '"error": "SandboxCapabilityNotSupported"' "check --json refusal"

# The default posture: no router section means a microvm floor; the fake is refused.
sed '/^router:/,/min_isolation/d' "$cfg" >"$tmp/strict.yaml"
run "$msb" -c "$tmp/strict.yaml" check; expect_status 1 "default floor"
expect_error_line SandboxBackendNotPermitted "default floor refuses rung none"

# A configuration mistake: one line, with file:line:column.
printf 'version: 1\nrouter:\n  selction: per_spec\nbackends:\n  - plugin: %s\n' "$inproc" >"$tmp/typo.yaml"
run "$msb" -c "$tmp/typo.yaml" check; expect_status 1 "typo"
expect_error_line SandboxConfigInvalid "typo"
expect_err "$tmp/typo.yaml:3:3: router.selction: unknown key 'selction' (did you mean 'selection'?)" "typo position"
run "$msb" -c "$tmp/typo.yaml" --json check; expect_status 1 "typo --json"
expect_json_error SandboxConfigInvalid "typo --json"
run "$msb" -c "$tmp/nope.yaml" check; expect_status 1 "missing file"; expect_error_line FileNotFoundError "missing file"
# No -c, no ./sandbox.yaml: refused naming both places looked in, unless a system-wide file is installed.
mkdir "$tmp/empty"
(cd "$tmp/empty" && "$msb" check >"$tmp/out" 2>"$tmp/err"); status=$?
if grep -q "no sandbox.yaml" "$tmp/err"; then
	expect_status 1 "no file anywhere"; expect_error_line FileNotFoundError "no file anywhere"
	expect_err "looked for ./sandbox.yaml and " "no file names where it looked"; expect_err "-c FILE" "no file says what to do"
else
	echo "note: a system-wide sandbox.yaml is installed here; the not-found refusal was not provoked"
fi

# The default file: ./sandbox.yaml when -c is not given.
(cd "$tmp" && "$msb" check >"$tmp/out" 2>"$tmp/err"); status=$?
expect_status 0 "./sandbox.yaml by default"
expect_out "sandbox.yaml: 1 backend(s)" "./sandbox.yaml by default"

# ---- plugins ---------------------------------------------------------------------------
run "$msb" plugins "$fixtures/good.so"; expect_status 0 "plugins good"
expect_out "fixture_good" "plugins good"; expect_out "rung              container" "plugins good rung"
expect_out "observes_egress   false  (unstated: silence rule)" "plugins marks unstated"
run "$msb" --json plugins "$fixtures/good.so"; expect_status 0 "plugins --json"
expect_out '"unstated": ["observes_egress"]' "plugins --json unstated"
expect_out '"egress_modes": ["allowlist", "closed"]' "plugins --json declarations"
# A plugin built against ABI 27's first header (before operations were appended) loads.
if [ -e "$fixtures/abi27.so" ]; then
	run "$msb" plugins "$fixtures/abi27.so"; expect_status 0 "plugins abi27 (an older struct_size)"
	expect_out "fixture_good" "plugins abi27"
fi
if [ -e "$fixtures/silent.so" ]; then
	run "$msb" plugins "$fixtures/silent.so"; expect_status 0 "plugins silent"
	expect_out "egress_modes      {}  (unstated: silence rule)" "silent: egress reads as {}"
	expect_out "capabilities      {exec, files_in}  (unstated: silence rule)" "silent: default capabilities"
fi
# Every broken fixture: refused with one error line naming the file, exit 1.
broken=0
for so in "$fixtures"/*.so; do
	# Loadable on purpose (their init or a dependency is the point), or slow by design
	# (a constructor that hangs is refused at the 10 s probe bound; test_loader_hostile has it).
	case "$(basename "$so")" in good.so|silent.so|same_name.so|abi27.so|abi27s.so|hostile_dep_stale_user.so|libhostile_dep_descriptor.so|\
		hostile_init_*.so|hostile_ctor_sleep.so|hostile_sysv_hash.so) continue ;; esac
	broken=$((broken + 1))
	run "$msb" plugins "$so"; expect_status 1 "plugins $(basename "$so")"
	grep -q "^msb: [A-Za-z]*: .*$(basename "$so")" "$tmp/err" || fail "plugins $(basename "$so"): refusal does not name the file: $(cat "$tmp/err")"
	run "$msb" --json plugins "$so"; expect_status 1 "plugins --json $(basename "$so")"
	expect_out '"error": "' "plugins --json $(basename "$so")"
done
# A few refusals by their words: both ABI versions, the missing operation, the stale symbol.
check_refusal() {
	[ -e "$fixtures/$1.so" ] || return 0
	run "$msb" plugins "$fixtures/$1.so"; expect_error_line SandboxBackendNotPermitted "plugins $1"
	expect_err "$2" "plugins $1 names the problem"
}
check_refusal old_abi "built for ABI 26, this host speaks 27"
check_refusal no_reclaim "msb_backend_v27.reclaim is NULL"
check_refusal stale_limits "stale bare symbol 'msb_backend_limits'"
check_refusal process_rung "'process' is a retired isolation rung"
# A hostile constructor costs a refusal from the probe child, and --json stays whole.
if [ -e "$fixtures/hostile_ctor_exit.so" ]; then
	run "$msb" --json plugins "$fixtures/hostile_ctor_exit.so" "$fixtures/good.so"
	expect_status 1 "plugins --json with a constructor calling exit(0)"
	expect_out '"ok": false}' "plugins --json: the JSON is complete after a constructor's exit"
	expect_out '"name": "fixture_good"' "plugins --json: the good plugin after the hostile one"
	expect_out 'called exit()' "plugins --json: the exit is named"
	run "$msb" --json plugins "$fixtures/hostile_ctor_printf.so"
	expect_status 1 "plugins --json with a constructor's printf"
	expect_out 'wrote 17 bytes to stdout' "plugins --json: the printf is named, not printed"
	run "$msb" plugins "$fixtures/hostile_name_newline.so"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a newline in a name forged a line: $(cat "$tmp/err")"
	expect_err "fine\\x0aplugin forged_line" "the name is shown escaped"
fi
[ "$broken" -gt 0 ] || echo "note: no broken fixtures built; run 'make check' to build them"
# Two plugins declaring one backend name: the second is refused, naming both files.
if [ -e "$fixtures/same_name.so" ]; then
	run "$msb" plugins "$fixtures/good.so" "$fixtures/same_name.so"; expect_status 1 "plugins same name"
	expect_err "same_name.so" "same name: names the second file"; expect_err "good.so" "same name: names the first file"
fi
# One good and one broken: the good one is still described, the status says not all loaded.
run "$msb" plugins "$fixtures/good.so" "$src/tests/fixtures/not_a_plugin.so.txt"; expect_status 1 "plugins mixed"
expect_out "fixture_good" "plugins mixed"; expect_error_line ImportError "plugins not a plugin"
# A PATH is a file, never a name for dlopen's library search.
(cd "$fixtures" && "$msb" plugins good.so >"$tmp/out" 2>"$tmp/err"); status=$?
expect_status 0 "plugins relative path"; expect_out "file              ./good.so" "plugins relative path"
(cd "$tmp" && "$msb" plugins libc.so.6 >"$tmp/out" 2>"$tmp/err"); status=$?
expect_status 1 "plugins bare library name"; expect_error_line ImportError "plugins bare library name"
# Without paths: the configured plugins.
run "$msb" -c "$cfg" plugins; expect_status 0 "plugins from config"; expect_out "inprocess" "plugins from config"
run "$msb" -c "$cfg" --json plugins; expect_status 0 "plugins from config --json"; expect_out '"name": "inprocess"' "plugins --json config"

# ---- route -----------------------------------------------------------------------------
run "$msb" -c "$cfg" route shell; expect_status 0 "route"; expect_out "shell -> inprocess (none)" "route"
# A spec that streams routes to a plugin with exec_stream; one built before it is refused.
printf '  live:\n    requires: [exec]\n    streaming: true\n' >"$tmp/live.yaml"
cat "$cfg" "$tmp/live.yaml" >"$tmp/streaming.yaml"
run "$msb" -c "$tmp/streaming.yaml" route live; expect_status 0 "route a streaming spec"
sed "s|plugin: $inproc|plugin: $fixtures/abi27.so|" "$tmp/streaming.yaml" | sed '/^    config:/,/^specs:/{/^specs:/!d}' >"$tmp/streaming_old.yaml"
if [ -e "$fixtures/abi27.so" ]; then
	run "$msb" -c "$tmp/streaming_old.yaml" route live; expect_status 1 "route a streaming spec to an ABI-27-first plugin"
	expect_err "exec_stream operation" "the streaming refusal names the operation"
	expect_err "abi27.so" "the streaming refusal names the plugin"
fi
run "$msb" -c "$cfg" --json route shell; expect_status 0 "route --json"
expect_out '"backend": "inprocess", "isolation": "none", "selection": "fixed"' "route --json"
run "$msb" -c "$cfg" route nosuchkind; expect_status 1 "route unknown kind"
expect_error_line ValueError "route unknown kind"; expect_err "kinds: shell, python, report, maybe" "route lists kinds"
cat >"$tmp/perspec.yaml" <<YAML
version: 1
router: {min_isolation: none, selection: per_spec}
backends:
  - plugin: $inproc
    config: {capabilities: [exec, files_in], egress_modes: [closed]}
  - plugin: $fixtures/good.so
specs:
  coder:
    requires: [exec, run_code]
    files_in: {max_bytes_per_file: 1MiB, max_total_bytes: 4MiB, max_files: 16}
    files_out: {max_bytes_per_file: 1MiB, max_total_bytes: 4MiB, max_files: 16}
  plain: {}
YAML
run "$msb" -c "$tmp/perspec.yaml" route coder; expect_status 0 "route per_spec"
expect_out "coder -> fixture_good (container)" "route per_spec chosen"
expect_out "passed over inprocess: SandboxCapabilityNotSupported" "route per_spec passed over"
run "$msb" -c "$tmp/perspec.yaml" --json route coder; expect_status 0 "route per_spec --json"
expect_out '"passed_over": [{"backend": "inprocess", "error": "SandboxCapabilityNotSupported"' "route --json passed over"
run "$msb" -c "$tmp/perspec.yaml" route plain; expect_out "plain -> inprocess" "route per_spec first wins"
# A backend below the floor under per_spec: kept, never routed to, warned about once.
sed 's/min_isolation: none/min_isolation: container/' "$tmp/perspec.yaml" >"$tmp/floor.yaml"
run "$msb" -c "$tmp/floor.yaml" route coder; expect_status 0 "per_spec above the floor"
expect_out "passed over inprocess: SandboxBackendNotPermitted" "route names the floor refusal"
run "$msb" -c "$tmp/floor.yaml" check; expect_err "msb: warning: " "check prints the router's warning"
expect_err "inprocess" "the warning names the backend below the floor"
run "$msb" -c "$tmp/floor.yaml" --json check; expect_out '"warnings": ["' "check --json carries the warning"

# ---- exec ------------------------------------------------------------------------------
run "$msb" -c "$cfg" exec shell --scope s --thread t -- uname -a; expect_status 0 "exec"
[ "$(cat "$tmp/out")" = "default out" ] || fail "exec stdout passed through: $(cat "$tmp/out")"
run "$msb" -c "$cfg" exec shell --scope s --thread t --agent a --call c --timeout 5 -- fail-with-three now
expect_status 3 "exec passes the guest's exit status"
[ "$(cat "$tmp/out")" = "partial" ] || fail "exec stdout: $(cat "$tmp/out")"
[ "$(cat "$tmp/err")" = "boom" ] || fail "exec stderr: $(cat "$tmp/err")"
run "$msb" -c "$cfg" --json exec shell --scope s --thread t -- fail-with-three; expect_status 3 "exec --json status"
expect_out '"exit_code": 3, "signal": 0, "timed_out": false, "stdout": "partial", "stderr": "boom"' "exec --json"
# The fake runs nothing: a background command has ended at once, with its scripted answer.
run "$msb" -c "$cfg" exec --background shell --scope s --thread t -- fail-with-three; expect_status 0 "exec --background"
[ "$(cat "$tmp/out")" = "fake1" ] || fail "exec --background prints the handle: $(cat "$tmp/out")"
run "$msb" -c "$cfg" --json exec --background shell --scope s --thread t -- fail-with-three
expect_out '"state": "exited", "running": false, "exit_code": 3' "exec --background --json: the fake's command has ended"
run "$msb" -c "$cfg" exec --background --ring 0 shell --scope s --thread t -- true; expect_status 2 "--ring 0"
run "$msb" -c "$cfg" exec --ring 10 shell --scope s --thread t -- true; expect_status 2 "--ring without --background"
run "$msb" -c "$cfg" exec nosuchkind --scope s --thread t -- true; expect_status 125 "exec refused"
expect_error_line ValueError "exec refused"
sed 's/default_stdout:/fail_acquire: SandboxBackendError\n      default_stdout:/' "$cfg" >"$tmp/failacq.yaml"
run "$msb" -c "$tmp/failacq.yaml" exec shell --scope s --thread t -- true; expect_status 125 "exec acquire failed"
expect_error_line SandboxBackendError "exec acquire failed"
run "$msb" -c "$tmp/failacq.yaml" --json exec shell --scope s --thread t -- true; expect_status 125 "exec --json failure"
expect_json_error SandboxBackendError "exec --json failure"
run "$msb" -c "$cfg" exec shell --scope s --thread t --timeout soon -- true; expect_status 2 "bad --timeout"
# Standard input that cannot be read (a directory) is refused, not sent as empty.
"$msb" -c "$cfg" exec shell --scope s --thread t --stdin -- cat <"$tmp" >"$tmp/out" 2>"$tmp/err"; status=$?
expect_status 125 "exec --stdin unreadable"; expect_error_line OSError "exec --stdin unreadable"
expect_err "exec: cannot read standard input" "exec --stdin names what failed"

# Progress: a slow acquire says so on a terminal, and never into a pipe.
sed 's/default_stdout:/acquire_delay: 700ms\n      default_stdout:/' "$cfg" >"$tmp/slow.yaml"
run "$msb" -c "$tmp/slow.yaml" exec shell --scope s --thread t -- true; expect_status 0 "slow acquire, piped"
grep -q booting "$tmp/err" && fail "progress printed into a pipe: $(cat "$tmp/err")"
if command -v script >/dev/null 2>&1; then
	script -qc "'$msb' -c '$tmp/slow.yaml' exec shell --scope s --thread t -- true" /dev/null >"$tmp/out" 2>&1
	expect_out "msb: starting a 'shell' sandbox on inprocess (booting" "progress on a terminal"
fi

# ---- run-code --------------------------------------------------------------------------
run "$msb" -c "$cfg" run-code python --scope s --thread t -e 'print(6*7)'; expect_status 0 "run-code -e"
[ "$(cat "$tmp/out")" = "42" ] || fail "run-code output: $(cat "$tmp/out")"
echo 'print(1)' | "$msb" -c "$cfg" --json run-code python --scope s --thread t >"$tmp/out" 2>"$tmp/err"; status=$?
expect_status 0 "run-code stdin"; expect_out '"stdout": "42"' "run-code --json from stdin"
"$msb" -c "$cfg" run-code python --scope s --thread t <"$tmp" >"$tmp/out" 2>"$tmp/err"; status=$?
expect_status 125 "run-code stdin unreadable"; expect_error_line OSError "run-code stdin unreadable"
expect_err "run-code: cannot read the program from standard input" "run-code stdin names what failed"
# A backend that does not declare run_code: the call is refused before it reaches it.
sed 's/capabilities: \[exec, run_code, files_in, files_out, files_list, files_delete\]/capabilities: [exec, files_in]/' "$cfg" |
	sed 's/requires: \[.*\]/requires: [exec]/' >"$tmp/nocode.yaml"
run "$msb" -c "$tmp/nocode.yaml" run-code shell --scope s --thread t -e 'print(1)'; expect_status 125 "run-code not declared"
expect_error_line NotImplementedError "run-code on a backend without run_code"

# ---- put / get / ls / rm ---------------------------------------------------------------
printf 'hello\n' >"$tmp/local.txt"
run "$msb" -c "$cfg" put shell --scope s --thread t "$tmp/local.txt" in/a.txt; expect_status 0 "put"
[ -s "$tmp/out" ] && fail "put prints nothing in text mode: $(cat "$tmp/out")"
run "$msb" -c "$cfg" --json put shell --scope s --thread t "$tmp/local.txt" a.txt; expect_status 0 "put --json"
expect_out '{"path": "a.txt", "bytes": 6}' "put --json"
run "$msb" -c "$cfg" put shell --scope s --thread t "$tmp/absent" a.txt; expect_status 1 "put missing local"
expect_error_line FileNotFoundError "put missing local"
expect_err "put: cannot open '$tmp/absent'" "put missing local names the file"
run "$msb" -c "$cfg" put shell --scope s --thread t "$tmp" a.txt; expect_status 1 "put a directory"
expect_error_line OSError "put a directory"; expect_err "put: cannot read '$tmp' to copy it in" "put a directory"
run "$msb" -c "$cfg" put shell --scope s --thread t "$tmp/local.txt" ../escape.txt; expect_status 1 "put escaping work_dir"
grep -q "^msb: [A-Za-z]*: " "$tmp/err" || fail "put escape: $(cat "$tmp/err")"
# The fake keeps files in its process; a file put by another msb run is not there.
run "$msb" -c "$cfg" get shell --scope s --thread t a.txt; expect_status 1 "get absent"
expect_error_line FileNotFoundError "get absent"
run "$msb" -c "$cfg" --json get shell --scope s --thread t a.txt; expect_status 1 "get --json absent"
expect_json_error FileNotFoundError "get --json absent"
run "$msb" -c "$cfg" ls shell --scope s --thread t; expect_status 0 "ls"
# A name a guest chose reaches the terminal only escaped: an ESC in a refusal is \x1b.
esc=$(printf '\033')
run "$msb" -c "$cfg" get shell --scope s --thread t "x${esc}[2Jy"; expect_status 1 "get of a name with ESC"
expect_error_line FileNotFoundError "get of a name with ESC"; expect_err 'x\x1b[2Jy' "the refusal shows ESC escaped"
grep -q "$esc" "$tmp/err" && fail "a raw ESC reached stderr: $(od -c "$tmp/err" | head -3)"
run "$msb" -c "$cfg" --json ls shell --scope s --thread t; expect_status 0 "ls --json"; expect_out '{"entries": [' "ls --json"
run "$msb" -c "$cfg" rm shell --scope s --thread t a.txt; expect_status 1 "rm absent"
expect_error_line FileNotFoundError "rm absent"
run "$msb" -c "$tmp/nocode.yaml" rm shell --scope s --thread t -r a; expect_status 1 "rm not declared"
expect_error_line NotImplementedError "rm gated by files_delete"

# ---- collect ---------------------------------------------------------------------------
mkdir "$tmp/landing"
run "$msb" -c "$cfg" collect report --scope s --thread t --out "$tmp/landing"; expect_status 1 "collect required missing"
expect_error_line SandboxOutputMissing "collect required missing"
run "$msb" -c "$cfg" --json collect report --scope s --thread t --out "$tmp/landing"; expect_status 1 "collect --json"
expect_json_error SandboxOutputMissing "collect --json"
run "$msb" -c "$cfg" collect maybe --scope s --thread t --out "$tmp/landing"; expect_status 0 "collect optional absent"
run "$msb" -c "$cfg" --json collect maybe --scope s --thread t --out "$tmp/landing"; expect_status 0 "collect --json ok"
expect_out '{"landed": []}' "collect --json nothing landed"
run "$msb" -c "$cfg" collect maybe --scope s --thread t --out "$tmp/no-such-dir"; expect_status 1 "collect bad --out"

# ---- dispose ---------------------------------------------------------------------------
run "$msb" -c "$cfg" dispose --scope s --thread t; expect_status 0 "dispose"; expect_out "disposed 0 sandbox(es)" "dispose"
run "$msb" -c "$cfg" --json dispose --scope s --thread t; expect_status 0 "dispose --json"
expect_out '{"disposed": 0, "undisposed": null}' "dispose --json"
run "$msb" -c "$cfg" --json dispose --scope s --thread t --agent a; expect_status 0 "dispose one key"
expect_out '{"undisposed": null}' "dispose one key --json"
sed 's/default_stdout:/fail_dispose_scope: refused\n      default_stdout:/' "$cfg" >"$tmp/faildisp.yaml"
run "$msb" -c "$tmp/faildisp.yaml" dispose --scope s --thread t; expect_status 1 "dispose not landed"
expect_error_line SandboxUnclean "dispose not landed"; expect_err "(refused)" "dispose names the code"
run "$msb" -c "$tmp/faildisp.yaml" --json dispose --scope s --thread t; expect_status 1 "dispose --json not landed"
expect_out '"undisposed": {"code": "refused"' "dispose --json not landed"
run "$msb" -c "$cfg" dispose --scope s; expect_status 2 "dispose without --thread"

# ---- a round trip across msb processes, on a backend whose sandboxes outlive them -------
bwrap_so="$top/plugins/bwrap/.libs/bwrap.so"
agent="$top/sdk/agent/msb-agent"
if [ -e "$bwrap_so" ] && [ -x "$agent" ]; then
	cat >"$tmp/bwrap.yaml" <<YAML
version: 1
router: {min_isolation: container}
backends:
  - plugin: $bwrap_so
    config: {state_dir: $tmp/state, agent: $agent}
specs:
  shell:
    requires: [exec, files_in, files_out, files_list, files_delete]
  report:
    requires: [exec, files_in, files_out]
    declared_outputs:
      - {path: out/r.txt, media_type: text/plain, name: r.txt}
YAML
	b="$tmp/bwrap.yaml"
	run "$msb" -c "$b" check
	if [ "$status" -ne 0 ]; then
		echo "note: the bwrap backend cannot serve here, round trip skipped: $(cat "$tmp/err")"
	else
		k="--scope rt --thread t1"
		run "$msb" -c "$b" put shell $k "$tmp/local.txt" dir/a.txt; expect_status 0 "rt put"
		run "$msb" -c "$b" get shell $k dir/a.txt; expect_status 0 "rt get"
		[ "$(cat "$tmp/out")" = "hello" ] || fail "rt get content: $(cat "$tmp/out")"
		run "$msb" -c "$b" get shell $k dir/a.txt "$tmp/back.txt"; expect_status 0 "rt get to a file"
		cmp -s "$tmp/local.txt" "$tmp/back.txt" || fail "rt get to a file: content differs"
		run "$msb" -c "$b" get shell $k dir/a.txt "$tmp/back.txt"; expect_status 1 "rt get over an existing file"
		expect_error_line SandboxLandingExists "rt get refuses to replace"
		expect_err "get: cannot create '$tmp/back.txt'" "rt get names the file"; expect_err "(use --force" "rt get says how to replace"
		if [ -w /dev/full ]; then
			run "$msb" -c "$b" get shell $k dir/a.txt /dev/full --force; expect_status 1 "rt get into a full device"
			expect_error_line OSError "rt get into a full device"; expect_err "get: cannot write '/dev/full'" "rt get names what it could not write"
		fi
		run "$msb" -c "$b" --json get shell $k dir/a.txt; expect_out '"content": "hello\n"' "rt get --json"
		run "$msb" -c "$b" ls shell $k dir; expect_status 0 "rt ls"; expect_out "file               6  dir/a.txt" "rt ls"
		run "$msb" -c "$b" --json ls shell $k dir; expect_out '{"path": "dir/a.txt", "kind": "file", "size": 6}' "rt ls --json"
		# Names a guest chose, listed: control bytes and "\" escaped, one entry a line.
		run "$msb" -c "$b" exec shell $k -- sh -c 'mkdir n && touch "n/e$(printf "\033")[2Jx" "n/two
lines" "n/back\\slash" "n/csi$(printf "\302\233")1"'
		expect_status 0 "rt make hostile names"
		run "$msb" -c "$b" ls shell $k n; expect_status 0 "rt ls hostile names"
		expect_out 'n/e\x1b[2Jx' "rt ls escapes ESC"; expect_out 'n/two\x0alines' "rt ls escapes a newline"
		expect_out 'n/back\\slash' "rt ls escapes a backslash"
		expect_out 'n/csi\xc2\x9b1' "rt ls escapes U+009B (CSI) in UTF-8"
		[ "$(wc -l <"$tmp/out")" -eq 4 ] || fail "rt ls: one line per entry: $(cat "$tmp/out")"
		grep -q "$esc" "$tmp/out" && fail "rt ls: a raw ESC reached stdout"
		run "$msb" -c "$b" exec shell $k -- cat dir/a.txt; expect_status 0 "rt exec sees the file"
		[ "$(cat "$tmp/out")" = "hello" ] || fail "rt exec: $(cat "$tmp/out")"
		run "$msb" -c "$b" exec shell $k -- sh -c 'echo out; echo err >&2; exit 7'; expect_status 7 "rt exec status"
		[ "$(cat "$tmp/out")" = "out" ] && [ "$(cat "$tmp/err")" = "err" ] || fail "rt exec streams: $(cat "$tmp/out") / $(cat "$tmp/err")"
		# Guest bytes that are not UTF-8 still make valid JSON: \u00XX per stray byte.
		run "$msb" -c "$b" --json exec shell $k -- printf 'a\377\001"\n'
		expect_out '"stdout": "a\u00ff\u0001\"\n"' "rt exec --json escapes bytes"
		# ... and the exact bytes ride beside, base64, so a JSON reader loses nothing.
		expect_out '"stdout_base64": "Yf8BIgo="' "rt exec --json carries non-UTF-8 bytes losslessly"
		run "$msb" -c "$b" --json exec shell $k -- printf 'caf\303\251'
		grep -q 'stdout_base64' "$tmp/out" && fail "rt exec --json: base64 beside valid UTF-8: $(cat "$tmp/out")"
		run "$msb" -c "$b" exec shell $k -- sh -c 'printf "\377\376x" > bin.dat'
		run "$msb" -c "$b" --json get shell $k bin.dat; expect_status 0 "rt get --json binary"
		expect_out '"content_base64": "//54"' "rt get --json carries non-UTF-8 bytes losslessly"
		# stat: kind and size, links not followed; absent is exit 1.
		run "$msb" -c "$b" stat shell $k dir/a.txt; expect_status 0 "rt stat"; expect_out "file               6  dir/a.txt" "rt stat"
		run "$msb" -c "$b" --json stat shell $k dir; expect_out '{"path": "dir", "found": true, "kind": "directory"' "rt stat --json"
		run "$msb" -c "$b" stat shell $k no-such; expect_status 1 "rt stat absent"; expect_err "no-such: not found" "rt stat absent"
		# get --max-bytes: a file over it is refused, never truncated; over the spec's cap is refused.
		run "$msb" -c "$b" get shell $k --max-bytes 3 dir/a.txt; expect_status 1 "rt get --max-bytes"
		expect_error_line SandboxTransferCapExceeded "rt get --max-bytes refuses, never truncates"
		[ -s "$tmp/out" ] && fail "rt get --max-bytes printed bytes: $(cat "$tmp/out")"
		run "$msb" -c "$b" get shell $k --max-bytes 6 dir/a.txt; expect_status 0 "rt get --max-bytes at the size"
		run "$msb" -c "$b" get shell $k --max-bytes 1TiB dir/a.txt; expect_status 1 "rt get --max-bytes over the spec"
		expect_error_line SandboxTransferLimitsNotPermitted "rt get --max-bytes over the spec's cap"
		run "$msb" -c "$b" get shell $k --max-bytes nope dir/a.txt; expect_status 2 "rt get --max-bytes not a size"
		# reclaim: a tree goes; a missing one is success.
		run "$msb" -c "$b" exec shell $k -- sh -c 'mkdir -p run/x/y && touch run/x/y/z'
		run "$msb" -c "$b" reclaim shell $k /msb/work/run; expect_status 0 "rt reclaim"
		run "$msb" -c "$b" stat shell $k run; expect_status 1 "rt reclaim removed the tree"
		run "$msb" -c "$b" --json reclaim shell $k /msb/work/run; expect_status 0 "rt reclaim missing is success"
		expect_out '{"reclaimed": "/msb/work/run"}' "rt reclaim --json"
		echo 'from stdin' | "$msb" -c "$b" exec shell $k --stdin -- cat >"$tmp/out" 2>"$tmp/err"; status=$?
		expect_status 0 "rt exec --stdin"; expect_out "from stdin" "rt exec --stdin"
		run "$msb" -c "$b" exec shell $k --timeout 0.5 -- sleep 5; expect_status 124 "rt exec timeout"
		expect_err "msb: TimeoutError:" "rt exec timeout line"
		# Streamed: the same bytes and status; with --json one line per chunk, then the result.
		run "$msb" -c "$b" exec shell $k --stream -- sh -c 'echo out; echo err >&2; exit 7'
		expect_status 7 "rt exec --stream status"
		[ "$(cat "$tmp/out")" = "out" ] && [ "$(cat "$tmp/err")" = "err" ] || fail "rt exec --stream: $(cat "$tmp/out") / $(cat "$tmp/err")"
		"$msb" -c "$b" --json exec shell $k --stream -- sh -c 'echo one; sleep 0.3; echo two >&2' >"$tmp/out" 2>"$tmp/err"; status=$?
		expect_status 0 "rt exec --stream --json"
		[ "$(sed -n 1p "$tmp/out")" = '{"event": "output", "stream": "stdout", "data": "one\n"}' ] || fail "rt exec --stream --json first line: $(cat "$tmp/out")"
		[ "$(sed -n 2p "$tmp/out")" = '{"event": "output", "stream": "stderr", "data": "two\n"}' ] || fail "rt exec --stream --json second line: $(cat "$tmp/out")"
		sed -n 3p "$tmp/out" | grep -qF '"exit_code": 0, "signal": 0, "timed_out": false, "stdout": "", "stderr": ""' || fail "rt exec --stream --json result: $(cat "$tmp/out")"
		[ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "rt exec --stream --json: 3 lines: $(cat "$tmp/out")"
		if [ -n "$have_python" ]; then
			python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]' <"$tmp/out" || fail "rt exec --stream --json: not JSON lines"
		fi
		# The first line reaches a reader while the command still sleeps.
		ahead=$("$msb" -c "$b" exec shell $k --stream -- sh -c 'echo first; sleep 3; echo second' |
			{ read -r line; t1=$(date +%s%N); cat >/dev/null; t2=$(date +%s%N); echo $(( (t2 - t1) / 1000000 )); })
		[ "${ahead:-0}" -ge 2000 ] || fail "rt exec --stream: the first line came only ${ahead:-?} ms before the end"
		printf 'typed\n' | "$msb" -c "$b" exec shell $k --stream --stdin -- cat >"$tmp/out" 2>"$tmp/err"; status=$?
		expect_status 0 "rt exec --stream --stdin"; expect_out "typed" "rt exec --stream --stdin"
		run "$msb" -c "$b" exec shell $k --stream --timeout 1 -- sh -c 'echo early; sleep 30'
		expect_status 124 "rt exec --stream timeout"; expect_out "early" "rt exec --stream keeps output at the timeout"
		expect_err "msb: TimeoutError:" "rt exec --stream timeout line"
		# -it: an interactive shell under a terminal sized as ours; ours restored after,
		# also when msb is killed by a signal while raw.
		if command -v script >/dev/null 2>&1; then
			(sleep 2; printf 'stty size; echo $((6*7)); exit 3\n'; sleep 2) |
				script -qec "stty rows 33 cols 99; before=\$(stty -g); $msb -c $b exec shell $k -it -- sh; echo msb-exit=\$?; [ \"\$(stty -g)\" = \"\$before\" ] && echo restored" /dev/null >"$tmp/out" 2>&1
			expect_out "33 99" "rt exec -it: the guest sees the terminal's size"
			expect_out "42" "rt exec -it: the shell runs what is typed"
			expect_out "msb-exit=3" "rt exec -it: the shell's status is msb's"
			expect_out "restored" "rt exec -it: the terminal is restored"
			# (An asynchronous list's stdin is /dev/null unless redirected: given the tty.)
			script -qec "t=\$(tty); before=\$(stty -g); $msb -c $b exec shell $k -it -- sleep 30 <\$t & p=\$!; sleep 2; [ \"\$(stty -g)\" != \"\$before\" ] && echo was-raw; kill -TERM \$p; wait \$p; echo msb-exit=\$?; [ \"\$(stty -g)\" = \"\$before\" ] && echo restored" /dev/null </dev/null >"$tmp/out" 2>&1
			expect_out "was-raw" "rt exec -it: the terminal is raw while the command runs"
			expect_out "msb-exit=143" "rt exec -it killed by SIGTERM dies of it"
			expect_out "restored" "rt exec -it: the terminal is restored after SIGTERM"
		fi
		run "$msb" -c "$b" rm shell $k dir/a.txt; expect_status 0 "rt rm"
		run "$msb" -c "$b" get shell $k dir/a.txt; expect_status 1 "rt get after rm"
		# collect: the declared output lands under --out, once; --replace lands it again.
		mkdir "$tmp/rt-landing"
		run "$msb" -c "$b" put report $k "$tmp/local.txt" out/r.txt; expect_status 0 "rt put report"
		run "$msb" -c "$b" collect report $k --out "$tmp/rt-landing"; expect_status 0 "rt collect"
		expect_out "r.txt (6 bytes)" "rt collect display"
		cmp -s "$tmp/local.txt" "$tmp/rt-landing/r.txt" || fail "rt collect: landed content differs"
		run "$msb" -c "$b" collect report $k --out "$tmp/rt-landing"; expect_status 1 "rt collect again"
		expect_error_line SandboxLandingExists "rt collect refuses an existing landing"
		run "$msb" -c "$b" --json collect report $k --out "$tmp/rt-landing" --replace; expect_status 0 "rt collect --replace"
		expect_out '{"landed": [{"name": "r.txt", "media_type": "text/plain", "display": "r.txt (6 bytes)"' "rt collect --json"
		run "$msb" -c "$b" --json dispose $k; expect_status 0 "rt dispose"
		expect_out '{"disposed": 2, "undisposed": null}' "rt dispose --json"
	fi
fi

# ---- the shipped default, as the README's demo runs it (agent, init, relay, guest and state from this tree)
qemu_so="$top/plugins/qemu/.libs/qemu.so"
qemu_init="$top/plugins/qemu/msb-qemu-init"
qemu_relay="$top/plugins/qemu/msb-qemu-relay"
guest=${MSB_QEMU_GUEST:-$top/plugins/qemu/guest}
if ! grep -q '^  - name: qemu' "$src/conf/sandbox.yaml"; then
	fail "conf/sandbox.yaml no longer registers qemu first: update this demo test with it"
elif [ ! -e "$qemu_so" ] || [ ! -x "$agent" ] || [ ! -x "$qemu_init" ] || [ ! -x "$qemu_relay" ]; then
	echo "note: the qemu plugin, agent, guest init or relay is not built here; default-file demo skipped"
elif [ ! -s "$guest/vmlinuz" ] || ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	echo "note: no microVM guest at $guest or no qemu-system-x86_64 (run 'make qemu-guest'); default-file demo skipped"
else
	sed "s|^      run_code: \[sh\].*|&\n      agent: $agent\n      init: $qemu_init\n      relay: $qemu_relay\n      guest_dir: $guest\n      state_dir: $tmp/default-state|" \
		"$src/conf/sandbox.yaml" >"$tmp/default.yaml"
	export MSB_PLUGIN_PATH="$top/plugins/qemu/.libs"
	run "$msb" -c "$tmp/default.yaml" check
	expect_status 0 "check on conf/sandbox.yaml (the default microvm floor)"
	expect_out "spec    shell            ok: qemu" "conf/sandbox.yaml routes shell to qemu"
	run "$msb" -c "$tmp/default.yaml" exec shell --scope demo --thread t1 -- uname -r
	expect_status 0 "demo exec"; expect_out "cloud-amd64" "demo exec runs in the microVM's own kernel"
	run "$msb" -c "$tmp/default.yaml" run-code script --scope demo --thread t1 -e 'echo $((6*7))'
	expect_status 0 "demo run-code"; expect_out "42" "demo run-code"
	# A snapshot of the running microVM forks another: the file written before the save.
	run "$msb" -c "$tmp/default.yaml" exec shell --scope demo --thread t1 -- sh -c 'echo saved > kept.txt'
	expect_status 0 "demo write before the snapshot"
	run "$msb" -c "$tmp/default.yaml" snapshot save shell --scope demo --thread t1 demo-s1
	expect_status 0 "demo snapshot save"
	run "$msb" -c "$tmp/default.yaml" snapshot ls; expect_status 0 "demo snapshot ls"
	expect_out "$(printf 'qemu\tdemo-s1')" "demo snapshot ls names it"
	run "$msb" -c "$tmp/default.yaml" exec shell --scope demo --thread t2 --from demo-s1 -- cat kept.txt
	expect_status 0 "demo exec --from"; expect_out "saved" "demo fork has the source's file"
	run "$msb" -c "$tmp/default.yaml" snapshot rm demo-s1; expect_status 0 "demo snapshot rm"
	run "$msb" -c "$tmp/default.yaml" dispose --scope demo --thread t2; expect_status 0 "demo fork dispose"
	run "$msb" -c "$tmp/default.yaml" dispose --scope demo --thread t1; expect_status 0 "demo dispose"
	unset MSB_PLUGIN_PATH
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all msb command checks passed"
