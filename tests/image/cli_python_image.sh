#!/bin/sh
# cli_python_image.sh — the default `python` image (build-aux/python-image.sh: Debian minbase
# + python3), imported into a store of the test's own and run through the msb command by
# every backend that takes a store image: bwrap, gvisor and qemu (microVM) each run a Python
# program with the image's own python3 (the host's is not there: the image's version and
# its /etc/debian_version are printed), write a file in the work directory and read it
# back, and cannot write the image's root (qemu's is an overlay on guest RAM: there the
# write lands, and the next sandbox does not see it). The same root as an OCI layout whose
# config says User "nobody" runs as Debian's nobody (65534:65534, from the image's passwd). Each engine that cannot run here is skipped with
# its reason. The image tarball is cached outside the clone by the set-up (both README
# commands build it); without it the whole test is skipped, saying how to make it.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
msb="$top/core/cli/msb"
agent="$top/sdk/agent/msb-agent"
tarball=${MSB_PYTHON_ROOTFS:-/var/cache/msb/images/python-bookworm-rootfs.tar.gz}
[ -x "$msb" ] && [ -x "$agent" ] || { echo "SKIP: msb or msb-agent is not built"; exit 77; }
[ -s "$tarball" ] || {
	echo "SKIP: no python image rootfs at $tarball (sh build-aux/python-image.sh - makes it)"
	exit 77
}
# /var/tmp: a sandbox of the process rung has a /tmp of its own.
tmp=$(mktemp -d /var/tmp/msb-cli-python.XXXXXX) || exit 1
chmod 711 "$tmp"
cleanup() {
	for c in "$tmp"/*.yaml; do
		[ -f "$c" ] && "$msb" -c "$c" dispose --scope py --thread t >/dev/null 2>&1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
export MSB_IMAGES_DIR="$tmp/store"
failures=0 ran=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$msb" image import python "$tarball" >"$tmp/out" 2>"$tmp/err" ||
	{ echo "FAIL: import: $(cat "$tmp/err")"; exit 1; }
# The version the image's python3 reports, read off its own root: not the host's.
root=$("$msb" image inspect python --json | sed -n 's/.*"root": "\([^"]*\)".*/\1/p')
want_version=$(ls "$root/usr/lib" | sed -n 's/^python\(3\.[0-9]*\)$/\1/p' | head -n 1)
want_debian=$(cat "$root/etc/debian_version")
[ -n "$want_version" ] && [ -n "$want_debian" ] || { echo "FAIL: the imported root has no python3"; exit 1; }

# The same root as an OCI layout whose config says User "nobody": the name is Debian's own
# (65534:65534 in the image's /etc/passwd), resolved there, not on the host.
oci="$tmp/oci"
mkdir -p "$oci/blobs/sha256"
layer=$(sha256sum "$tarball" | cut -d' ' -f1)
cp "$tarball" "$oci/blobs/sha256/$layer"
blob() { # blob JSON: store it, print its digest
	printf '%s' "$1" >"$oci/blob.tmp"
	d=$(sha256sum "$oci/blob.tmp" | cut -d' ' -f1)
	mv "$oci/blob.tmp" "$oci/blobs/sha256/$d"
	echo "$d"
}
cfg_digest=$(blob '{"architecture":"amd64","os":"linux","config":{"User":"nobody","Env":["PATH=/usr/local/bin:/usr/bin:/bin"]},"rootfs":{"type":"layers","diff_ids":[]}}')
man=$(blob "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$cfg_digest\",\"size\":1},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$layer\",\"size\":1}]}")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":1}]}' "$man" >"$oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$oci/oci-layout"
"$msb" image import python-nobody "$oci" >"$tmp/out" 2>"$tmp/err" ||
	{ echo "FAIL: import the OCI layout: $(cat "$tmp/err")"; exit 1; }
rm -rf "$oci"

engine_config() { # engine_config ENGINE: the YAML of a router with that one backend
	e=$1
	extra="run_code: [python3]"
	floor=container
	case $e in
	gvisor) floor=hardened_container ;;
	qemu)
		guest=${MSB_QEMU_GUEST:-$top/plugins/qemu/guest}
		floor=microvm
		extra="init: $top/plugins/qemu/msb-qemu-init
      relay: $top/plugins/qemu/msb-qemu-relay
      guest_dir: $guest
      boot_timeout: 120s
      image_run_code: {python: [python3], python-nobody: [python3]}" ;;
	esac
	cat <<YAML
version: 1
router: {min_isolation: $floor}
backends:
  - plugin: $top/plugins/$e/.libs/$e.so
    config:
      state_dir: $tmp/state-$e
      agent: $agent
      images_dir: $MSB_IMAGES_DIR
      $extra
specs:
  python:
    image: python
    requires: [exec, run_code, files_in, files_out]
  nobody:
    image: python-nobody
    requires: [exec, run_code, files_in, files_out]
YAML
}

for e in bwrap gvisor qemu; do
	[ -e "$top/plugins/$e/.libs/$e.so" ] || { echo "skip $e: the plugin is not built"; continue; }
	case $e in
	gvisor) command -v runsc >/dev/null 2>&1 || { echo "skip gvisor: no runsc"; continue; } ;;
	qemu)
		[ -s "${MSB_QEMU_GUEST:-$top/plugins/qemu/guest}/vmlinuz" ] &&
			command -v qemu-system-x86_64 >/dev/null 2>&1 ||
			{ echo "skip qemu: no guest kernel or no qemu-system-x86_64"; continue; } ;;
	esac
	cfg="$tmp/$e.yaml"
	engine_config "$e" >"$cfg"
	if ! "$msb" -c "$cfg" check >"$tmp/out" 2>"$tmp/err"; then
		echo "skip $e: it cannot serve here: $(cat "$tmp/err" "$tmp/out" | head -n 3)"
		continue
	fi
	ran=$((ran + 1))
	"$msb" -c "$cfg" run-code python --scope py --thread t --timeout 300 -e '
import sys
print("%d.%d" % sys.version_info[:2], open("/etc/debian_version").read().strip())
open("made.txt", "w").write("by python\n")
try:
    open("/usr/x", "w")
    print("wrote /usr")
except OSError:
    print("root read-only")
' >"$tmp/out" 2>"$tmp/err" || fail "$e: run-code: $(cat "$tmp/err")"
	# bwrap and gvisor show the root read-only; the microVM's is an overlay on guest RAM.
	root_says="root read-only"
	[ "$e" = qemu ] && root_says="wrote /usr"
	printf '%s %s\n%s\n' "$want_version" "$want_debian" "$root_says" >"$tmp/want"
	cmp -s "$tmp/out" "$tmp/want" ||
		fail "$e: printed '$(cat "$tmp/out")', wanted '$(cat "$tmp/want")' ($(cat "$tmp/err"))"
	"$msb" -c "$cfg" exec python --scope py --thread t -- cat made.txt >"$tmp/out" 2>"$tmp/err"
	[ "$(cat "$tmp/out")" = "by python" ] || fail "$e: the work dir kept '$(cat "$tmp/out")' ($(cat "$tmp/err"))"
	"$msb" -c "$cfg" dispose --scope py --thread t >/dev/null 2>&1 || fail "$e: dispose"
	[ -z "$(ls -A "$tmp/state-$e" 2>/dev/null | grep '^sk-')" ] || fail "$e: a sandbox was left"
	# What one sandbox wrote over the image reaches no later one: the store is not written.
	"$msb" -c "$cfg" exec python --scope py --thread t -- sh -c 'test -e /usr/x && echo leaked || echo clean' \
		>"$tmp/out" 2>"$tmp/err"
	[ "$(cat "$tmp/out")" = clean ] || fail "$e: a new sandbox saw '$(cat "$tmp/out")' ($(cat "$tmp/err"))"
	[ -e "$root/usr/x" ] && fail "$e: the store's root was written"
	"$msb" -c "$cfg" dispose --scope py --thread t >/dev/null 2>&1 || fail "$e: dispose"
	# The image's User: Debian's nobody, who owns the work directory and writes in it.
	"$msb" -c "$cfg" run-code nobody --scope py --thread t --timeout 300 -e '
import os, pwd
open("mine", "w").write("x")
print(os.getuid(), os.getgid(), pwd.getpwuid(os.getuid()).pw_name, os.stat("mine").st_uid)
' >"$tmp/out" 2>"$tmp/err" || fail "$e: run-code as nobody: $(cat "$tmp/err")"
	[ "$(cat "$tmp/out")" = "65534 65534 nobody 65534" ] ||
		fail "$e: the User nobody image printed '$(cat "$tmp/out")' ($(cat "$tmp/err"))"
	"$msb" -c "$cfg" dispose --scope py --thread t >/dev/null 2>&1 || fail "$e: dispose"
done
[ "$ran" -gt 0 ] || { echo "SKIP: no engine could run the image here"; exit 77; }
[ "$failures" -eq 0 ] || exit 1
echo "ok: the python image ran on $ran engine(s)"
