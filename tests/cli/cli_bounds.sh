#!/bin/sh
# cli_bounds.sh — every host input the msb command sends into a sandbox is read with a bound
# and refused before it is exceeded (issue 17): put's LOCAL (a file over files_in, /dev/zero,
# a FIFO, standard input that never ends), exec --stdin and run-code's program on stdin, and
# sandbox.yaml itself (a FIFO). Each is refused naming the cap, quickly, with memory near the
# cap rather than the input's size. Backend: the inprocess fake.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
msb="$top/core/cli/msb"
inproc="$top/plugins/inprocess/.libs/inprocess.so"
for f in "$msb" "$inproc"; do
	[ -e "$f" ] || { echo "SKIP: $f is not built"; exit 77; }
done
tmp=$(mktemp -d /tmp/msb-cli-bounds.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run CMD…: stdout → $tmp/out, stderr → $tmp/err, status → $status, peak RSS (KiB) → $rss.
# Bounded by timeout(1): a read that hangs is a failure, not a stuck suite.
run() {
	/usr/bin/time -f %M -o "$tmp/rss" timeout 30 "$@" >"$tmp/out" 2>"$tmp/err"; status=$?
	rss=$(tail -n 1 "$tmp/rss" 2>/dev/null); case $rss in ''|*[!0-9]*) rss=0;; esac
	[ "$status" -eq 124 ] && fail "hung (timeout 30 s): $*"
	return 0
}
expect_status() { [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1 (stderr: $(cat "$tmp/err"))"; }
expect_err() { grep -qF -- "$1" "$tmp/err" || fail "$2: stderr lacks '$1': $(cat "$tmp/err")"; }
expect_error_line() {
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$2: expected one error line, got: $(cat "$tmp/err")"
	grep -q "^msb: $1: ." "$tmp/err" || fail "$2: expected 'msb: $1: …', got: $(cat "$tmp/err")"
}
# Memory near the cap: the 8 MiB default cap, the program and its buffers, far below what
# reading the input to its end would cost. Sanitizer builds carry their shadow memory.
rss_limit=$((96 * 1024))
expect_rss() { [ "$rss" -le "$rss_limit" ] || fail "$1: peak RSS $rss KiB, over $rss_limit KiB"; }

cfg="$tmp/sandbox.yaml"
cat >"$cfg" <<YAML
version: 1
router:
  min_isolation: none
backends:
  - plugin: $inproc
    config:
      capabilities: [exec, run_code, files_in, files_out]
      egress_modes: [closed]
      programs:
        - {match: "print", stdout: "42"}
specs:
  shell:
    requires: [exec, files_in, files_out]
  small:
    requires: [exec, run_code, files_in]
    files_in: {max_bytes_per_file: 1000, max_total_bytes: 1000, max_files: 4}
YAML
k="--scope s --thread t"

# ---- put: files_in in force, as files_out is for get -----------------------------------
head -c 1000 /dev/zero >"$tmp/at-cap"
head -c 1001 /dev/zero >"$tmp/over-cap"
run "$msb" -c "$cfg" put small $k "$tmp/at-cap" a.bin; expect_status 0 "put at the cap"
run "$msb" -c "$cfg" put small $k "$tmp/over-cap" a.bin; expect_status 1 "put one byte over the cap"
expect_error_line SandboxTransferCapExceeded "put over cap"
expect_err "'$tmp/over-cap' (for a.bin) is over this workload's files_in max_bytes_per_file of 1000 bytes" "put names the file and the cap"
# The issue's case: 20 MB under the 8 MiB default. Sparse, so it costs no disk.
truncate -s 20000000 "$tmp/twenty"
run "$msb" -c "$cfg" put shell $k "$tmp/twenty" big.bin; expect_status 1 "put 20 MB"
expect_error_line SandboxTransferCapExceeded "put 20 MB"
expect_err "max_bytes_per_file of 8388608 bytes" "put 20 MB names the default cap"
expect_rss "put 20 MB"

# ---- put: what is not a regular file ---------------------------------------------------
run "$msb" -c "$cfg" put shell $k /dev/zero z.bin; expect_status 1 "put /dev/zero"
expect_error_line ValueError "put /dev/zero"; expect_err "'/dev/zero' is a character device, not a regular file" "put /dev/zero"
expect_rss "put /dev/zero"
mkfifo "$tmp/fifo"
run "$msb" -c "$cfg" put shell $k "$tmp/fifo" f.bin; expect_status 1 "put a FIFO"
expect_error_line ValueError "put a FIFO"; expect_err "is a FIFO, not a regular file" "put a FIFO"
# Standard input is a stream by nature: read, but only up to the cap.
run sh -c "exec \"\$0\" -c \"\$1\" put shell $k - z.bin </dev/zero" "$msb" "$cfg"
expect_status 1 "put - from /dev/zero"; expect_error_line SandboxTransferCapExceeded "put - from /dev/zero"
expect_err "standard input" "put - names its input"
expect_rss "put - from /dev/zero"

# ---- exec --stdin and run-code from stdin ----------------------------------------------
run sh -c "exec \"\$0\" -c \"\$1\" exec shell $k --stdin -- cat </dev/zero" "$msb" "$cfg"
expect_status 125 "exec --stdin from /dev/zero"; expect_error_line SandboxTransferCapExceeded "exec --stdin endless"
expect_err "exec: standard input is over this workload's files_in max_bytes_per_file of 8388608 bytes" "exec --stdin names the cap"
expect_rss "exec --stdin from /dev/zero"
head -c 1001 /dev/zero >"$tmp/program"
run sh -c "exec \"\$0\" -c \"\$1\" run-code small $k <\"\$2\"" "$msb" "$cfg" "$tmp/program"
expect_status 125 "run-code program over the cap"; expect_error_line SandboxTransferCapExceeded "run-code over cap"
expect_err "max_bytes_per_file of 1000 bytes" "run-code names the cap"
run sh -c "exec \"\$0\" -c \"\$1\" run-code small $k </dev/zero" "$msb" "$cfg"
expect_status 125 "run-code from /dev/zero"; expect_rss "run-code from /dev/zero"

# ---- sandbox.yaml ----------------------------------------------------------------------
mkfifo "$tmp/fifo.yaml"
run "$msb" -c "$tmp/fifo.yaml" check; expect_status 1 "a FIFO as sandbox.yaml"
expect_error_line SandboxConfigInvalid "a FIFO as sandbox.yaml"; expect_err "is a FIFO, not a regular file" "FIFO config"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "PASS: cli_bounds"
