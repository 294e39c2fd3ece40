#!/bin/sh
# conformance.sh — the conformance kit's egress suite, allowlist half included, against the
# real process, bwrap, gvisor and qemu backends: the kit stands its link-local peers up at the addresses
# this node's test map gives its names (a /29 and a loopback address derived from the pid,
# so concurrent runs do not meet), and every case must pass. Needs root (the kit's network
# namespace); skips otherwise.
set -u
top_builddir=${MSB_TOP_BUILDDIR:-$(pwd)}
msb=$top_builddir/core/cli/msb
# The kit's own probe program, carried into the guest by the closed case (as run_all.sh does).
MSB_CONFORMANCE_PROBE=${MSB_CONFORMANCE_PROBE:-$top_builddir/core/conformance/msb-probe}
export MSB_CONFORMANCE_PROBE
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "SKIP: the kit's link-local peers need root and iproute2"; exit 77
fi
dir=$(mktemp -d /tmp/msb-egress-conf-XXXXXX) || exit 1
chmod 711 "$dir"
trap 'rm -rf "$dir"' EXIT
a=$(( 1 + $$ % 200 )); [ "$a" = 169 ] && a=170
b=$(( 8 * ( ($$ / 200) % 30 ) ))
status=0
guest=${MSB_QEMU_GUEST:-$top_builddir/plugins/qemu/guest}
for backend in ${MSB_EGRESS_CONFORMANCE_BACKENDS:-process bwrap gvisor qemu}; do
	plugin=$top_builddir/plugins/$backend/.libs/$backend.so
	extra= image=
	if [ "$backend" = qemu ]; then
		# The microVM's busybox has no python3 for the side-channel case: the python
		# store image has (build-aux/python-image.sh; the case says so when absent).
		if [ ! -r "$guest/vmlinuz" ] || [ ! -x /usr/bin/qemu-system-x86_64 ]; then
			echo "qemu: skipped (no guest kernel at $guest, or no qemu-system-x86_64)"; continue
		fi
		extra="init: $top_builddir/plugins/qemu/msb-qemu-init
relay: $top_builddir/plugins/qemu/msb-qemu-relay
guest_dir: $guest
boot_timeout: 120s"
		image="--image python"
	fi
	cat > "$dir/$backend.yaml" <<YAML
$extra
state_dir: $dir/state-$backend
agent: $top_builddir/sdk/agent/msb-agent
egress_ports: [80]
egress_allow_ranges: [169.254.$a.$b/29]
egress_test_hosts:
  listed.conformance.msb.test: 169.254.$a.$((b + 2))
  other.conformance.msb.test: 169.254.$a.$((b + 3))
  loopback.conformance.msb.test: 127.78.$a.$((b + 1))
YAML
	# shellcheck disable=SC2086 # $image is empty or two words
	out=$("$msb" conformance "$plugin" --config "$dir/$backend.yaml" --suite egress $image 2>&1)
	echo "$out"
	if ! echo "$out" | grep -q '^6 passed, 0 failed, 0 skipped'; then
		echo "FAIL: $backend: every egress case must pass"; status=1
	fi
done
exit $status
