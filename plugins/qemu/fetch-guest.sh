#!/bin/sh
# plugins/qemu/fetch-guest.sh — put the microVM guest's parts where the qemu backend looks.
#
# Usage: fetch-guest.sh DEST
#
# The microvm rung boots Debian's linux-image-cloud-amd64 kernel. It is FETCHED with
# `apt-get download` and unpacked with `dpkg -x` into DEST — never installed, because
# installing it would touch /boot and the host's boot loader for a kernel the host never
# boots. Afterwards DEST holds:
#
#   vmlinuz         the kernel image
#   modules/        lib/modules/<version>/ of the same package (virtio_console & co.)
#   version         the kernel release string, e.g. 6.1.0-57-cloud-amd64
#   busybox         Debian's busybox-static: the guest's shell and tools (the guest has no
#                   other userland; the cloud kernel has no 9p to borrow the host's)
#   busybox.applets `busybox --list-full`: where each applet's link goes in the guest
#
# Idempotent: a DEST whose `version` names the release the meta package points at is left
# alone. Runs as root on a fresh Debian 12 (apt-get update is run once if the package is
# unknown to apt). Exits non-zero, saying why, on anything it cannot do.
set -eu

dest=${1:?usage: fetch-guest.sh DEST}
meta=linux-image-cloud-amd64

say() { printf 'fetch-guest: %s\n' "$*" >&2; }

# The meta package depends on exactly one versioned image package; that one holds the files.
resolve() {
	apt-cache depends "$meta" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -n 1
}

pkg=$(resolve || true)
if [ -z "$pkg" ]; then
	say "apt does not know $meta yet; running apt-get update"
	apt-get update -qq
	pkg=$(resolve || true)
fi
[ -n "$pkg" ] || { say "cannot resolve $meta to a kernel image package"; exit 1; }
release=${pkg#linux-image-}

if [ -f "$dest/version" ] && [ "$(cat "$dest/version")" = "$release" ] &&
	[ -s "$dest/vmlinuz" ] && [ -d "$dest/modules/kernel" ] && [ -x "$dest/busybox" ] &&
	[ -s "$dest/busybox.applets" ]; then
	say "kernel $release already in $dest"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
say "downloading $pkg"
# apt-get download writes into the current directory; _apt must be able to write there.
chmod 0777 "$work"
(cd "$work" && apt-get download -qq "$pkg" busybox-static)
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done

[ -s "$work/root/boot/vmlinuz-$release" ] || { say "no /boot/vmlinuz-$release in $pkg"; exit 1; }
[ -d "$work/root/lib/modules/$release" ] || { say "no lib/modules/$release in $pkg"; exit 1; }
[ -x "$work/root/bin/busybox" ] || { say "no bin/busybox in busybox-static"; exit 1; }

# Assemble beside DEST and swap in, so a reader never sees a half-written kernel directory.
mkdir -p "$(dirname "$dest")"
stage="$dest.new.$$"
rm -rf "$stage"
mkdir -p "$stage"
cp "$work/root/boot/vmlinuz-$release" "$stage/vmlinuz"
cp -a "$work/root/lib/modules/$release" "$stage/modules"
cp "$work/root/bin/busybox" "$stage/busybox"
# Its applets as paths (bin/sh, usr/bin/env…): the guest gets them as links, no installer.
"$stage/busybox" --list-full >"$stage/busybox.applets"
printf '%s\n' "$release" >"$stage/version"
rm -rf "$dest.old.$$"
[ ! -e "$dest" ] || mv "$dest" "$dest.old.$$"
mv "$stage" "$dest"
rm -rf "$dest.old.$$"
say "kernel $release unpacked into $dest"
