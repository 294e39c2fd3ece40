#!/bin/sh
# walkthrough.sh — doc/writing-a-backend.md's "From an empty directory to a conforming
# plugin", done literally: extract shelf.c from the document, build it in an empty directory
# with nothing but `pkg-config --cflags --libs msb` (answering for this build tree), and run
# `msb conformance` on it. It must fail no case, and the cases the document says apply must
# have passed. Everything is removed on exit, pass or fail.
set -eu

: "${MSB_TOP_BUILDDIR:?run me from make check}"
: "${MSB_TOP_SRCDIR:?run me from make check}"
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config is not installed"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/msb-walkthrough.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT HUP INT TERM

# The compiler and sanitizer flags this tree was configured with (an instrumented libmsb can
# only be loaded by an instrumented program).
make_var() { sed -n "s/^$1 = //p" "$MSB_TOP_BUILDDIR/Makefile"; }
cc=$(make_var CC)
san=$(make_var SAN_CFLAGS)

# pkg-config answering for this build tree, as it would for an installed SDK. Deliberately not
# `make install`: libtool relinks libraries in place while it installs, and every other test
# running beside this one would find libmsb missing for that moment (tests/loader/sdk_install.sh
# is the test of the installed layout itself).
mkdir "$tmp/pc"
cat >"$tmp/pc/msb.pc" <<PC
Name: msb
Description: msb backend SDK (this build tree)
Version: 0.27.0
Libs: -L$MSB_TOP_BUILDDIR/sdk/.libs -lmsb-sdk
Cflags: -I$MSB_TOP_SRCDIR/sdk/include
PC
export PKG_CONFIG_PATH="$tmp/pc"
export PKG_CONFIG_LIBDIR="$tmp/pc"
export LD_LIBRARY_PATH="$MSB_TOP_BUILDDIR/sdk/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
MSB="$MSB_TOP_BUILDDIR/core/cli/msb"

# The source exactly as the document shows it: the ```c block after the walkthrough marker,
# which must also be the installed example (doc/examples/NAME).
extract() {
	mkdir -p "$tmp/$1"
	awk -v mark="<!-- walkthrough: $1.c -->" '$0 == mark { armed = 1; next }
	     armed && /^```c$/ { copying = 1; next }
	     copying && /^```$/ { exit }
	     copying { print }' "$MSB_TOP_SRCDIR/doc/writing-a-backend.md" >"$tmp/$1/$1.c"
	[ -s "$tmp/$1/$1.c" ] || { echo "FAIL: no $1.c block in doc/writing-a-backend.md"; exit 1; }
	cmp -s "$tmp/$1/$1.c" "$MSB_TOP_SRCDIR/doc/examples/$1.c" ||
		{ echo "FAIL: doc/examples/$1.c is not the guide's $1.c"; exit 1; }
}
extract shelf

# shellcheck disable=SC2046 # pkg-config output is meant to be word-split
$cc $san -std=c17 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/shelf/shelf.so" \
	"$tmp/shelf/shelf.c" $(pkg-config --cflags --libs msb)

printf 'root: %s/store\n' "$tmp/shelf" >"$tmp/shelf/shelf.yaml"
status=0
"$MSB" conformance "$tmp/shelf/shelf.so" --config "$tmp/shelf/shelf.yaml" --tap \
	>"$tmp/shelf/out.tap" 2>&1 || status=$?
cat "$tmp/shelf/out.tap"
[ "$status" -eq 0 ] || { echo "FAIL: msb conformance exited $status on the walkthrough plugin"; exit 1; }
for c in files/write-refuses-dotdot files/read-max-bytes-refused files/reclaim-missing-is-success \
	scope/calls-apart disposal/dispose-scope-counts; do
	grep -q "^ok [0-9]* - $c\$" "$tmp/shelf/out.tap" || { echo "FAIL: $c did not pass"; exit 1; }
done
grep -q "^ok [0-9]* - exec/runs-a-program # SKIP not applicable" "$tmp/shelf/out.tap" ||
	{ echo "FAIL: exec was not reported not applicable"; exit 1; }
# Every sandbox the kit acquired was disposed: the store is empty.
[ -z "$(ls -A "$tmp/shelf/store")" ] || { echo "FAIL: the kit left sandboxes behind:"; ls "$tmp/shelf/store"; exit 1; }
echo "PASS: the walkthrough plugin, built out of tree, conforms"

# The container walk: crate.c, under 150 lines, built the same way, every applicable case
# passed (the rung probes included). It needs root (mount namespaces, pivot_root).
extract crate
lines=$(wc -l <"$tmp/crate/crate.c")
[ "$lines" -lt 150 ] || { echo "FAIL: crate.c is $lines lines, the guide promises under 150"; exit 1; }
# shellcheck disable=SC2046
$cc $san -std=c17 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/crate/crate.so" \
	"$tmp/crate/crate.c" $(pkg-config --cflags --libs msb)
if [ "$(id -u)" -ne 0 ] || ! unshare -m -p -n -f true 2>/dev/null; then
	echo "SKIP: crate.c built; running it needs root and namespaces"
	exit 0
fi
mkdir "$tmp/crate/state"
chmod 755 "$tmp" "$tmp/crate"
printf 'state_dir: %s/crate/state\nagent: %s/sdk/agent/msb-agent\n' "$tmp" "$MSB_TOP_BUILDDIR" >"$tmp/crate/crate.yaml"
status=0
MSB_CONFORMANCE_PROBE="$MSB_TOP_BUILDDIR/core/conformance/msb-probe" \
	"$MSB" conformance "$tmp/crate/crate.so" --config "$tmp/crate/crate.yaml" --tap \
	--run-code-language sh >"$tmp/crate/out.tap" 2>&1 || status=$?
cat "$tmp/crate/out.tap"
[ "$status" -eq 0 ] || { echo "FAIL: msb conformance exited $status on crate"; exit 1; }
grep -q '# SKIP [^n]' "$tmp/crate/out.tap" && { echo "FAIL: a case was skipped on crate"; exit 1; }
for c in rung/own-pid-namespace rung/own-mount-namespace rung/no-capabilities rung/no-new-privs \
	rung/no-host-fds rung/other-sandbox-apart rung/limits-hold disposal/dispose-leaves-nothing; do
	grep -q "^ok [0-9]* - $c\$" "$tmp/crate/out.tap" || { echo "FAIL: $c did not pass on crate"; exit 1; }
done
echo "PASS: the container walkthrough (crate.c, $lines lines), built out of tree, conforms"
