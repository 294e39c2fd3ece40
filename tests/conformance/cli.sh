#!/bin/sh
# cli.sh — `msb conformance` as a command: exit statuses (0 conforming, 1 a failed case or a
# refused plugin, 2 a wrong command line), --config reaching the plugin's init, --suite,
# --json and --tap, and the refusals with their names.
set -u
B=${MSB_TOP_BUILDDIR:?run me from make check}
MSB="$B/core/cli/msb"
FX="$B/tests/conformance/.libs"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msb-conf-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM
fails=0

# expect STATUS WORD COMMAND… — the command exits STATUS and its output contains WORD.
expect() {
	want=$1 word=$2
	shift 2
	"$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" -ne "$want" ] || ! grep -qF -- "$word" "$tmp/out"; then
		echo "FAIL: $* exited $got (wanted $want), output lacks '$word' or is:"
		cat "$tmp/out"
		fails=$((fails + 1))
	else
		echo "ok: $*"
	fi
}

expect 0 "0 failed" "$MSB" conformance "$FX/conf_good.so" --suite files,scope
expect 1 '"case":"argv-verbatim","outcome":"fail"' "$MSB" conformance "$FX/conf_join_argv.so" --suite exec --json
expect 1 "not ok 2 - exec/argv-verbatim" "$MSB" conformance "$FX/conf_join_argv.so" --suite exec --tap
expect 0 "# SKIP not applicable: the backend does not declare run_code" \
	"$MSB" conformance "$FX/conf_minimal.so" --suite run_code --tap
expect 1 "ValueError: conformance: unknown suite 'nosuch'" "$MSB" conformance "$FX/conf_good.so" --suite nosuch
expect 1 "is not absolute" "$MSB" conformance "$FX/conf_good.so" --work-dir relative/dir
expect 2 "name exactly one PLUGIN" "$MSB" conformance
expect 2 "choose one" "$MSB" conformance "$FX/conf_good.so" --json --tap
expect 2 "python or sh" "$MSB" conformance "$FX/conf_good.so" --run-code-language ruby
expect 1 "no/such.so" "$MSB" conformance "$tmp/no/such.so"
# --config is the plugin's own config: node, handed to its init (which refuses a stray key).
printf 'stray_key: 1\n' >"$tmp/node.yaml"
expect 1 "stray_key" "$MSB" conformance "$FX/conf_good.so" --config "$tmp/node.yaml" --suite files
printf 'nope: [\n' >"$tmp/broken.yaml"
expect 1 "broken.yaml" "$MSB" conformance "$FX/conf_good.so" --config "$tmp/broken.yaml"

# A plugin that crashes or hangs ends in a verdict naming the case, not a dead or stuck command.
# (Its fixture's temp dir, which nothing gets to remove, goes with $tmp.)
expect 1 "SandboxBackendError: conformance: $FX/conf_crash.so crashed in files/stat-describes" \
	env TMPDIR="$tmp" "$MSB" conformance "$FX/conf_crash.so" --suite files
expect 1 "SandboxBackendError: conformance: $FX/conf_exit.so ended the process in files/stat-describes (exit status 3)" \
	env TMPDIR="$tmp" "$MSB" conformance "$FX/conf_exit.so" --suite files
started=$(date +%s)
expect 1 "TimeoutError: conformance:" env TMPDIR="$tmp" "$MSB" conformance "$FX/conf_hang.so" --suite files \
	--case-timeout 2
grep -qF "hung in files/read-back: nothing happened for 2 s" "$tmp/out" ||
	{ echo "FAIL: the hang was not named"; cat "$tmp/out"; fails=$((fails + 1)); }
[ $(($(date +%s) - started)) -lt 30 ] || { echo "FAIL: --case-timeout 2 took too long"; fails=$((fails + 1)); }
expect 2 "takes a duration" "$MSB" conformance "$FX/conf_good.so" --case-timeout soon

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
