#!/bin/sh
# pool.sh — warm pools end to end (issue 22) on real backends, through the msb command:
# `msb pool fill` starts entries, an exec adopts one (the state dir holds no more sandboxes
# than before it), the pool never hands back a disposed sandbox, an edited backend config
# makes the entries stale (the next fill disposes them), `msb pool drain` disposes the rest,
# four processes racing for two entries adopt each once, and a pool on a backend without the
# adopt operation is refused at load. process, bwrap and (with MSB_QEMU_GUEST) qemu, each
# skipped with a reason when it cannot serve here; every entry made is drained.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
src=${MSB_TOP_SRCDIR:-$top/..}
msb="$top/core/cli/msb"
agent="$top/sdk/agent/msb-agent"
for f in "$msb" "$agent"; do
	[ -e "$f" ] || { echo "SKIP: $f is not built"; exit 77; }
done
tmp=$(mktemp -d /tmp/msb-pool.XXXXXX)
. "$src/tests/lib/cgroup_parents.sh"
cleanup() {
	for y in "$tmp"/*.yaml; do
		[ -f "$y" ] || continue
		"$msb" -c "$y" pool drain >/dev/null 2>&1
		for t in t1 t2 t3 r0 r1 r2 r3; do "$msb" -c "$y" dispose --scope p --thread $t >/dev/null 2>&1; done
	done
	rm -rf "$tmp"
	msb_cg_clean
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failures=0 served=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# Under --json, stdout must be exactly one JSON object (checked where python3 is present).
run() {
	"$@" >"$tmp/out" 2>"$tmp/err"; status=$?
	case " $* " in *" --json "*)
		command -v python3 >/dev/null 2>&1 &&
			! python3 -c 'import json,sys; assert isinstance(json.load(sys.stdin), dict)' <"$tmp/out" 2>/dev/null &&
			fail "not one JSON object from: $* -> $(cat "$tmp/out")"
	esac
	return 0
}
expect_status() { [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1 (stderr: $(cat "$tmp/err"))"; }
expect_out() { grep -qF -- "$1" "$tmp/out" || fail "$2: stdout lacks '$1': $(cat "$tmp/out")"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "$2: stderr lacks '$1': $(cat "$tmp/err")"; }
# Live sandbox directories in a state dir (entries and adopted ones alike).
boxes() { ls "$1" 2>/dev/null | grep -c '^sk-[0-9a-f]*$'; }

config() { # name plugin floor extra-config
	cat >"$tmp/$1.yaml" <<YAML
version: 1
router: {min_isolation: $3}
pool_dir: $tmp/pool-$1
backends:
  - plugin: $2
    config: {state_dir: $tmp/state-$1, agent: $agent$4}
specs:
  shell:
    requires: [exec, files_in, files_out]
    pool: 2
YAML
}

one_backend() { # name plugin floor
	name=$1 so=$2
	[ -e "$so" ] || { echo "note: $so is not built: $name skipped"; return; }
	config "$name" "$so" "$3" ""
	y="$tmp/$name.yaml" st="$tmp/state-$name"
	run "$msb" -c "$y" check
	if [ "$status" -ne 0 ]; then
		echo "note: $name cannot serve here, skipped: $(cat "$tmp/err")"
		return
	fi
	served=$((served + 1))
	run "$msb" -c "$y" pool fill --json; expect_status 0 "$name fill"
	expect_out '"started": 2' "$name fill"
	run "$msb" -c "$y" pool ls --json; expect_status 0 "$name ls"
	expect_out '"ready": 2' "$name ls"
	expect_out '"size": 2' "$name ls"
	[ "$(boxes "$st")" -eq 2 ] || fail "$name: 2 entries expected in $st: $(ls "$st")"

	# An exec adopts an entry: no new sandbox, one entry fewer listed.
	run "$msb" -c "$y" exec shell --scope p --thread t1 -- sh -c 'echo used >mark; echo ok'
	expect_status 0 "$name exec"; expect_out ok "$name exec"
	[ "$(boxes "$st")" -eq 2 ] || fail "$name: adoption started a sandbox: $(ls "$st")"
	run "$msb" -c "$y" pool ls --json; expect_out '"ready": 1' "$name ls after adopt"
	# The adopted sandbox is the key's: the same key sees its file.
	run "$msb" -c "$y" exec shell --scope p --thread t1 -- cat mark
	expect_status 0 "$name reuse"; expect_out used "$name reuse"

	# Disposed, it is gone: the next key adopts the other entry and sees no mark.
	run "$msb" -c "$y" dispose --scope p --thread t1; expect_status 0 "$name dispose"
	run "$msb" -c "$y" exec shell --scope p --thread t2 -- sh -c 'test ! -e mark && echo clean'
	expect_status 0 "$name second"; expect_out clean "$name second"
	run "$msb" -c "$y" pool ls --json; expect_out '"ready": 0' "$name ls empty"
	# Empty: a cold start serves, as without a pool.
	run "$msb" -c "$y" exec shell --scope p --thread t3 -- true; expect_status 0 "$name cold"

	# Refill by two fillers at once: one at a time per blueprint, so two entries, not four.
	"$msb" -c "$y" pool fill --json >"$tmp/fill-a" 2>&1 &
	fa=$!
	"$msb" -c "$y" pool fill --json >"$tmp/fill-b" 2>&1 || fail "$name fill b: $(cat "$tmp/fill-b")"
	wait $fa || fail "$name fill a: $(cat "$tmp/fill-a")"
	sa=$(sed -n 's/.*"started": \([0-9]*\).*/\1/p' "$tmp/fill-a")
	sb=$(sed -n 's/.*"started": \([0-9]*\).*/\1/p' "$tmp/fill-b")
	started=$((${sa:-0} + ${sb:-0}))
	[ "$started" = 2 ] || fail "$name: two fillers started $started entries: $(cat "$tmp/fill-a" "$tmp/fill-b")"
	run "$msb" -c "$y" pool ls --json; expect_out '"ready": 2' "$name two fillers"
	[ "$(boxes "$st")" -eq 4 ] || fail "$name: two fillers: 4 sandboxes expected (t2, t3, 2 entries): $(ls "$st")"

	# Then edit the backend's config: the entries are stale and a fill disposes them.
	config "$name" "$so" "$3" ", timeout: 29s"
	run "$msb" -c "$y" pool fill --json; expect_status 0 "$name fill after edit"
	expect_out '"stale": 2' "$name stale"; expect_out '"started": 2' "$name fresh"

	# Four processes race for the two entries: each entry is adopted once, the other two
	# acquires start cold, and every key holds only what it wrote itself.
	for i in 0 1 2 3; do
		"$msb" -c "$y" exec shell --scope p --thread r$i -- \
			sh -c "test ! -e who && echo r$i >who && echo ok" >"$tmp/race$i" 2>&1 &
	done
	wait
	for i in 0 1 2 3; do
		grep -qx ok "$tmp/race$i" || fail "$name race r$i: $(cat "$tmp/race$i")"
		run "$msb" -c "$y" exec shell --scope p --thread r$i -- cat who
		expect_out "r$i" "$name race r$i owns its sandbox"
	done
	run "$msb" -c "$y" pool ls --json; expect_out '"ready": 0' "$name ls after race"
	[ "$(boxes "$st")" -eq 6 ] || fail "$name: race: 6 sandboxes expected (4 racers, t2, t3): $(ls "$st")"

	# A long-lived host refills by itself: msb mcp starts the pool's filler, and stops it
	# (waiting for a start under way) when its input ends.
	mkfifo "$tmp/mcp.in"
	"$msb" -c "$y" mcp --kind shell --scope p --thread m <"$tmp/mcp.in" >/dev/null 2>"$tmp/mcp.err" &
	mcp=$!
	exec 3>"$tmp/mcp.in"
	i=0
	while [ $i -lt 200 ] && ! "$msb" -c "$y" pool ls --json 2>/dev/null | grep -q '"ready": 2'; do
		sleep 0.1; i=$((i + 1))
	done
	exec 3>&-
	wait $mcp || fail "$name: msb mcp exited $? ($(cat "$tmp/mcp.err"))"
	rm -f "$tmp/mcp.in"
	run "$msb" -c "$y" pool ls --json; expect_out '"ready": 2' "$name refilled by msb mcp"
	run "$msb" -c "$y" pool drain --json; expect_status 0 "$name drain"
	expect_out '"disposed": 2' "$name drain"
	for t in t2 t3 r0 r1 r2 r3; do run "$msb" -c "$y" dispose --scope p --thread $t; done
	[ "$(boxes "$st")" -eq 0 ] || fail "$name: left behind in $st: $(ls "$st")"
	[ -z "$(ls "$tmp/pool-$name/$name" 2>/dev/null)" ] || fail "$name: registry left: $(ls -R "$tmp/pool-$name")"
}

one_backend process "$top/plugins/process/.libs/process.so" none
one_backend bwrap "$top/plugins/bwrap/.libs/bwrap.so" container

# qemu: a pool entry is a pre-booted microVM. One entry, adopted, disposed; drained empty.
# The guest: $MSB_QEMU_GUEST, else the build tree's (make qemu-guest), as the qemu tests find it.
if [ -z "${MSB_QEMU_GUEST:-}" ] && [ -e "$top/qemu-guest/vmlinuz" ]; then
	MSB_QEMU_GUEST=$top/qemu-guest
	export MSB_QEMU_GUEST
fi
if [ -n "${MSB_QEMU_GUEST:-}" ] && [ -e "$top/plugins/qemu/.libs/qemu.so" ]; then
	cat >"$tmp/qemu.yaml" <<YAML
version: 1
pool_dir: $tmp/pool-qemu
backends:
  - plugin: $top/plugins/qemu/.libs/qemu.so
    config: {state_dir: $tmp/state-qemu}
specs:
  shell: {pool: 1}
YAML
	y="$tmp/qemu.yaml" st="$tmp/state-qemu"
	run "$msb" -c "$y" pool fill --json
	if [ "$status" -ne 0 ]; then
		echo "note: qemu cannot boot here, skipped: $(cat "$tmp/out" "$tmp/err")"
	else
		served=$((served + 1))
		expect_out '"started": 1' "qemu fill"
		run "$msb" -c "$y" exec shell --scope p --thread t1 -- sh -c 'echo vm >m; cat m'
		expect_status 0 "qemu exec"; expect_out vm "qemu exec"
		[ "$(boxes "$st")" -eq 1 ] || fail "qemu: adoption booted a VM: $(ls "$st")"
		run "$msb" -c "$y" pool ls --json; expect_out '"ready": 0' "qemu ls after adopt"
		run "$msb" -c "$y" dispose --scope p --thread t1; expect_status 0 "qemu dispose"
		run "$msb" -c "$y" pool drain --json; expect_status 0 "qemu drain"
		[ "$(boxes "$st")" -eq 0 ] || fail "qemu: left behind in $st: $(ls "$st")"
	fi
else
	echo "note: MSB_QEMU_GUEST is not set: qemu skipped"
fi

# A backend without adopt: the pool is refused at load, naming the spec's line and why.
for fx in good abi27; do
	cat >"$tmp/$fx-refused.yml" <<YAML
version: 1
router: {min_isolation: none}
pool_dir: $tmp/pool-refused
backends:
  - plugin: $top/tests/fixtures/.libs/$fx.so
specs:
  k:
    files_in: {max_bytes_per_file: 1MiB, max_total_bytes: 4MiB, max_files: 16}
    files_out: {max_bytes_per_file: 1MiB, max_total_bytes: 4MiB, max_files: 16}
    pool: 1
YAML
	run "$msb" -c "$tmp/$fx-refused.yml" check; expect_status 1 "$fx pool refused"
	expect_err "NotImplementedError" "$fx pool refused"
	expect_err "specs.k.pool" "$fx pool refused"
	expect_err "no adopt operation" "$fx pool refused"
done
expect_err "built before the operation was appended" "abi27 pool refused"
# A relative pool_dir and an oversized pool are refused at their own line.
inproc="$top/plugins/inprocess/.libs/inprocess.so"
printf 'version: 1\npool_dir: rel\nbackends: [{plugin: %s}]\n' "$inproc" >"$tmp/rel.yml"
run "$msb" -c "$tmp/rel.yml" check; expect_err "pool_dir 'rel' refused" "relative pool_dir"
printf 'version: 1\nbackends: [{plugin: %s}]\nspecs:\n  k: {pool: 65}\n' "$inproc" >"$tmp/big.yml"
run "$msb" -c "$tmp/big.yml" check; expect_err "at most 64" "pool 65"

# No pool asked for: said, not an empty success; a wrong action is a usage error.
printf 'version: 1\nrouter: {min_isolation: none}\nbackends: [{plugin: %s}]\nspecs:\n  k: {}\n' "$inproc" >"$tmp/none.yml"
run "$msb" -c "$tmp/none.yml" pool fill; expect_status 1 "fill without pools"
expect_err "no spec asks for a pool" "fill without pools"
run "$msb" -c "$tmp/none.yml" pool refill; expect_status 2 "unknown pool action"
expect_err "fill, ls or drain" "unknown pool action"

[ "$served" -gt 0 ] || { echo "SKIP: neither process nor bwrap can serve here"; exit 77; }
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "pool.sh: ok"
