#!/bin/sh
# cli_background.sh — background commands through the msb command (issue 23), each step a
# separate msb process, on the real process backend: exec --background prints a handle that
# a later msb uses (ps, attach, wait, kill, all also with --json); attach follows until the
# end and exits with the command's status; the ring's drop is reported; a bounded wait
# returns 124 while it still runs; a signal to an ended command is refused; dispose reaps
# what still runs (gone from the host's process table); bad operands are usage errors.
set -u
. "$(dirname "$0")/process_cli.sh"
cli_begin bg

cat >"$cfg" <<YAML
version: 1
router:
  min_isolation: os_process
backends:
  - plugin: $plugin
    config:
      state_dir: $tmp/state
      agent: $agent
specs:
  shell:
    requires: [exec]
YAML
m="$msb -c $cfg"
k="--scope s --thread t"

run $m exec --background shell $k -- sh -c 'echo one; echo two >&2; sleep 5; echo three; exit 3'
expect_status 0 "exec --background"
id=$(cat "$tmp/out")
case "$id" in *[!0-9a-z]*|"") fail "the handle is a word: '$id'" ;; esac
run $m ps shell $k; expect_status 0 "ps"; expect_out "$id" "ps lists it"; expect_out "running" "ps: running"
run $m --json ps shell $k; expect_out "\"id\": \"$id\"" "ps --json"; expect_out '"state": "running"' "ps --json state"
run $m attach shell "$id" $k; expect_status 3 "attach exits with the command's status"
[ "$(cat "$tmp/out")" = "one
three" ] || fail "attach stdout: $(cat "$tmp/out")"
expect_err "two" "attach stderr"
run $m --json attach shell "$id" $k; expect_status 3 "attach --json"
expect_out '{"event": "output", "stream": "stdout", "offset": 0, "data": "one\n' "attach --json chunk"
expect_out '"state": "exited"' "attach --json status"
run $m wait shell "$id" $k; expect_status 3 "wait on an ended command"

# The ring: 64 bytes kept of 1700 written; the drop said.
run $m exec --background --ring 64 shell $k -- sh -c 'i=0; while [ $i -lt 100 ]; do echo 0123456789abcdef; i=$((i+1)); done'
r=$(cat "$tmp/out")
run $m wait shell "$r" $k --timeout 20; expect_status 0 "the ring's command ends"
run $m attach shell "$r" $k; expect_status 0 "attach to the ring"
expect_err "1636 bytes of the command's stdout were dropped" "the drop is said"
[ "$(wc -c <"$tmp/out")" -eq 64 ] || fail "the ring holds 64 bytes: $(wc -c <"$tmp/out")"
run $m --json attach shell "$r" $k
expect_out '{"event": "dropped", "stream": "stdout", "bytes": 1636}' "the drop as JSON"

# A bounded wait on a command that keeps running; the signal; the refused second one.
marker="msb-cli-bg-$$"
run $m exec --background shell $k -- sh -c "sleep 300; echo $marker"
s=$(cat "$tmp/out")
run $m wait shell "$s" $k --timeout 0.3; expect_status 124 "a bounded wait"
expect_err "still runs after 0.3s" "the wait says it still runs"
run $m --json kill shell "$s" $k -s KILL; expect_status 0 "kill"; expect_out '"signal": 9' "kill --json"
run $m --json wait shell "$s" $k --timeout 10; expect_status 137 "killed by SIGKILL"
expect_out '"signal": 9' "wait --json says the signal"
run $m kill shell "$s" $k; expect_status 1 "kill an ended command"
expect_err "ValueError" "the refusal's name"; expect_err "has ended" "the refusal says why"

# Dispose reaps what still runs: gone from the host's process table.
run $m exec --background shell $k -- sh -c "sleep 300; echo $marker"
ps -eo args | grep -v grep | grep -q "$marker" || fail "the background command is on the host's process table"
run $m dispose $k; expect_status 0 "dispose"
for i in 1 2 3 4 5 6 7 8 9 10; do ps -eo args | grep -v grep | grep -q "$marker" || break; sleep 0.2; done
ps -eo args | grep -v grep | grep -q "$marker" && fail "dispose left the background command running"
run $m ps shell $k; expect_status 0 "ps after dispose"
grep -q running "$tmp/out" && fail "a new sandbox lists nothing running: $(cat "$tmp/out")"

# Operands.
run $m attach shell "../etc" $k; expect_status 2 "a handle of the wrong shape"
run $m kill shell abc $k -s NOPE; expect_status 2 "a signal that is none"
run $m exec --background -t shell $k -- true; expect_status 2 "--background with -t"
run $m attach shell 0123abcd $k; expect_status 125 "an unknown handle"; expect_err "FileNotFoundError" "unknown handle named"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "PASS: cli_background"
