#!/bin/sh
# python_binding.sh — the Python binding's unittest suite (tests/python/test_msb.py) against
# this build tree's libmsb, with Debian's python3.
set -eu
: "${MSB_TOP_BUILDDIR:?run me from make check}"
: "${MSB_TOP_SRCDIR:?run me from make check}"
# Debian's python3 (python3 on PATH may be another one on a developer's machine)
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
[ -n "$py" ] || { echo "SKIP: python3 is not installed"; exit 77; }
export MSB_LIBMSB="$MSB_TOP_BUILDDIR/core/.libs/libmsb.so"
export PYTHONPATH="$MSB_TOP_SRCDIR/core/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
# an instrumented libmsb needs its sanitizer runtime first in a process that is not
case "$(sed -n 's/^SAN_CFLAGS = //p' "$MSB_TOP_BUILDDIR/Makefile")" in
*address*) export LD_PRELOAD="$(gcc -print-file-name=libasan.so)${LD_PRELOAD:+ $LD_PRELOAD}"
	export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" ;; # the interpreter's own allocations are not msb's
*thread*) echo "SKIP: the Python binding is not run under ThreadSanitizer"; exit 77 ;;
esac
exec "$py" "$MSB_TOP_SRCDIR/tests/python/test_msb.py" -v 2>&1
