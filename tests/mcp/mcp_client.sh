#!/bin/sh
# mcp_client.sh — `msb mcp` driven by a real client: the official MCP TypeScript SDK
# (tests/mcp/package.json, installed by build-aux/bootstrap.sh), against the process backend
# and, where a microVM guest is built, the qemu backend at the microvm floor. client.mjs
# lists the tools and calls each, a refused call, an argument naming the key, an over-cap
# output and a timeout. The sandboxes are disposed and their state checked empty after.
set -eu

: "${MSB_TOP_BUILDDIR:?run me from make check}"
: "${MSB_TOP_SRCDIR:?run me from make check}"
here="$MSB_TOP_SRCDIR/tests/mcp"
command -v node >/dev/null 2>&1 || { echo "SKIP: node is not installed (the MCP client is the TypeScript SDK's)"; exit 77; }
[ -d "$here/node_modules/@modelcontextprotocol/sdk" ] ||
	{ echo "SKIP: the MCP TypeScript SDK is not installed: npm ci --prefix tests/mcp (build-aux/bootstrap.sh does it)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the process backend's sandboxes need root here"; exit 77; }

B=$MSB_TOP_BUILDDIR
msb="$B/core/cli/msb"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/msb-mcp.XXXXXX")
status=0
cleanup() {
	for cfg in "$tmp"/*.yaml; do
		[ -f "$cfg" ] && "$msb" -c "$cfg" dispose --scope "mcp-$$" --thread t1 >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT HUP INT TERM

spec() { # spec IMAGE
	printf '%s\n' 'specs:' '  shell:' "    image: $1" '    work_dir: /msb/work' \
		'    requires: [exec, files_in, files_out]' '    declared_outputs:' \
		'      - {path: out.txt, media_type: text/plain}'
}

cat >"$tmp/process.yaml" <<YAML
version: 1
router:
  min_isolation: os_process
backends:
  - plugin: $B/plugins/process/.libs/process.so
    config:
      state_dir: $tmp/process-state
      agent: $B/sdk/agent/msb-agent
      max_output: 64KiB
$(spec host)
YAML

run_client() { # run_client NAME
	echo "# $1"
	if ! node "$here/client.mjs" "$msb" "$tmp/$1.yaml" shell "mcp-$$" >"$tmp/$1.out" 2>&1; then
		status=1
	fi
	cat "$tmp/$1.out"
	"$msb" -c "$tmp/$1.yaml" dispose --scope "mcp-$$" --thread t1 >/dev/null 2>&1 || { echo "FAIL: $1: dispose"; status=1; }
	left=$(ls -A "$tmp/$1-state" 2>/dev/null | grep '^sk-' || true) # a sandbox's files; qemu keeps its accel probe
	[ -z "$left" ] || { echo "FAIL: $1: the state directory still holds $left"; status=1; }
}
run_client process
# hostile framing, without a client library
python3 "$here/mcp_bounds.py" "$msb" "$tmp/process.yaml" shell || status=1

guest=${MSB_QEMU_GUEST:-$B/plugins/qemu/guest}
if [ -s "$guest/vmlinuz" ] && command -v qemu-system-x86_64 >/dev/null 2>&1 && [ -x "$B/plugins/qemu/msb-qemu-init" ]; then
	cat >"$tmp/qemu.yaml" <<YAML
version: 1
backends:
  - plugin: $B/plugins/qemu/.libs/qemu.so
    config:
      run_code: [sh]
      agent: $B/sdk/agent/msb-agent
      init: $B/plugins/qemu/msb-qemu-init
      relay: $B/plugins/qemu/msb-qemu-relay
      guest_dir: $guest
      state_dir: $tmp/qemu-state
      max_output: 64KiB
$(spec busybox)
YAML
	run_client qemu
else
	echo "note: no microVM guest at $guest or no qemu-system-x86_64: the qemu half is skipped"
fi
exit $status
