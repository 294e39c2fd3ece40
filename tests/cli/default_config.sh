#!/bin/sh
# default_config.sh — one default sandbox.yaml, from configure: `msb --help`, the "no
# sandbox.yaml" refusal and the installed msb(1) name the same file.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
src=${MSB_TOP_SRCDIR:-$top/..}
msb="$top/core/cli/msb"
[ -x "$msb" ] || { echo "SKIP: $msb is not built"; exit 77; }
tmp=$(mktemp -d /tmp/msb-defcfg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
sysconfdir=$(sed -n "s/^sysconfdir = //p" "$top/Makefile")
prefix=$(sed -n "s/^prefix = //p" "$top/Makefile")
sysconfdir=$(echo "$sysconfdir" | sed "s|\${prefix}|$prefix|")
want="$sysconfdir/msb/sandbox.yaml"
"$msb" --help >"$tmp/help" 2>&1
grep -qF "$want" "$tmp/help" || fail "--help does not name $want: $(cat "$tmp/help")"
(cd "$tmp" && "$msb" check) >/dev/null 2>"$tmp/err"
[ -e "$want" ] || grep -qF "$want" "$tmp/err" || fail "the no-config refusal does not name $want: $(cat "$tmp/err")"
# The page as `make install` writes it.
mkdir -p "$tmp/root/man" && cp "$src/doc/msb.1" "$tmp/root/man/msb.1"
make -s -C "$top" install-msb-man-paths DESTDIR="$tmp/root" man1dir=/man >/dev/null 2>&1 ||
	fail "install-msb-man-paths failed"
grep -qF "$want" "$tmp/root/man/msb.1" || fail "the installed msb(1) does not name $want"
grep -qE "(^|[ (])/etc/msb/sandbox.yaml" "$tmp/root/man/msb.1" && [ "$want" != /etc/msb/sandbox.yaml ] &&
	fail "the installed msb(1) still names /etc/msb/sandbox.yaml"
grep -q "@sysconfdir@" "$tmp/root/man/msb.1" && fail "the installed msb(1) keeps @sysconfdir@"
[ "$failures" -eq 0 ]
