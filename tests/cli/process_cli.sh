# process_cli.sh — sourced, not run: the set-up the msb-command tests on the real process
# backend share. `cli_begin NAME [DIR]` finds the built msb, process.so and msb-agent (SKIP
# when one is missing), makes $tmp under DIR (/tmp by default; /var/tmp where the sandbox
# must see it: a process sandbox has a private /tmp), names $cfg, disposes the test's key
# (scope s, thread t) and removes $tmp on exit, and defines fail, run and expect_*.
cli_begin() {
	top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
	msb="$top/core/cli/msb"
	plugin="$top/plugins/process/.libs/process.so"
	agent="$top/sdk/agent/msb-agent"
	for f in "$msb" "$plugin" "$agent"; do
		[ -e "$f" ] || { echo "SKIP: $f is not built"; exit 77; }
	done
	tmp=$(mktemp -d "${2:-/tmp}/msb-cli-$1.XXXXXX")
	cfg="$tmp/sandbox.yaml"
	trap cli_cleanup EXIT
	trap 'exit 1' INT TERM
	failures=0
}
cli_cleanup() {
	[ -f "$cfg" ] && "$msb" -c "$cfg" dispose --scope s --thread t >/dev/null 2>&1
	rm -rf "$tmp"
}
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"; status=$?; }
expect_status() { [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1 (stderr: $(cat "$tmp/err"))"; }
expect_out() { grep -qF -- "$1" "$tmp/out" || fail "$2: stdout lacks '$1': $(cat "$tmp/out")"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "$2: stderr lacks '$1': $(cat "$tmp/err")"; }
