#!/bin/sh
# cli_image.sh — `msb image` end to end, spawned as a process: import (a directory and a
# tarball), ls, inspect, rm and gc, in text and --json; a refused import (a built-in name, a
# hostile tarball) exits 1 with the one-line error format and leaves nothing registered.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
msb="$top/core/cli/msb"
[ -x "$msb" ] || { echo "SKIP: $msb is not built"; exit 77; }
tmp=$(mktemp -d /tmp/msb-cli-image.XXXXXX)
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
store="$tmp/store"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { "$msb" "$@" --images-dir "$store" >"$tmp/out" 2>"$tmp/err"; status=$?; }
expect() { [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1 ($(cat "$tmp/err"))"; }
has() { grep -qF -- "$1" "$tmp/out" || fail "$2: stdout lacks '$1': $(cat "$tmp/out")"; }
json() {
	python3 -c 'import json,sys; json.load(sys.stdin)' <"$tmp/out" 2>/dev/null ||
		fail "$1: not JSON: $(cat "$tmp/out")"
}

mkdir -p "$tmp/tree/etc" && echo hi >"$tmp/tree/etc/hello"
run image import tree "$tmp/tree" --json
expect 0 "import a directory"; json "import --json"; has '"format": "directory"' "import --json"
digest=$(sed -n 's/.*"digest": "\(sha256:[0-9a-f]*\)".*/\1/p' "$tmp/out")
[ -n "$digest" ] || fail "import --json names no digest"
[ "$(cat "$store/images/${digest#sha256:}/rootfs/etc/hello")" = hi ] || fail "the root is not unpacked"

tar -C "$tmp/tree" -czf "$tmp/root.tgz" .
run image import tgz "$tmp/root.tgz"
expect 0 "import a tarball"; has "rootfs-tar" "import text"
run image ls --json
expect 0 "ls"; json "ls --json"; has '"name": "tgz"' "ls"; has '"name": "tree"' "ls"
run image inspect tree --json
expect 0 "inspect"; json "inspect --json"; has "\"digest\": \"$digest\"" "inspect"

# Refusals: one line "msb: Name: sentence", exit 1, nothing registered.
run image import host "$tmp/tree"
expect 1 "import as host"; grep -q '^msb: ValueError: .*built-in' "$tmp/err" || fail "host: $(cat "$tmp/err")"
python3 - "$tmp/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    i = tarfile.TarInfo("../escape"); data = b"x"; i.size = len(data)
    t.addfile(i, io.BytesIO(data))
PY
run image import evil "$tmp/evil.tar"
expect 1 "hostile tarball"; grep -q 'entry "../escape" refused' "$tmp/err" || fail "evil: $(cat "$tmp/err")"
[ -e "$tmp/escape" ] && fail "the hostile entry landed outside the store"
run image inspect evil
expect 1 "a refused import registers nothing"

run image rm tree --json
expect 0 "rm"; json "rm --json"
run image rm tree
expect 1 "rm twice"
run image gc --json
expect 0 "gc"; json "gc --json"; has '"removed": ' "gc"
[ -d "$store/images/${digest#sha256:}" ] && fail "gc left the unnamed image"
run image ls
expect 0 "ls after gc"; has "tgz" "ls after gc"

[ "$failures" -eq 0 ] || exit 1
echo "cli_image: all passed"
