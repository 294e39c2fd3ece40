#!/bin/sh
# python-image.sh — the default `python` image: Debian minbase + python3, built once with
# debootstrap from the Debian mirror this machine's apt is configured with, cached OUTSIDE
# the clone (so CI and a second clone reuse it), then imported into the image store.
#
#   sh build-aux/python-image.sh MSB [CACHE_DIR]
#
# MSB is the msb command that imports it (into $MSB_IMAGES_DIR or the store's default); "-"
# builds the cached tarball only (the test job: its tests import it into stores of their own).
# CACHE_DIR defaults to /var/cache/msb/images; the rootfs tarball there is rebuilt only when
# it is missing. /dev is left out: the store refuses device nodes, and every backend gives
# the sandbox a /dev of its own.
set -eu
msb=$1
cache=${2:-/var/cache/msb/images}
suite=bookworm
tarball="$cache/python-$suite-rootfs.tar.gz"

# The first Debian archive URI apt is configured with (deb822 .sources, or one-line lists).
mirror() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" && $2 !~ /^\[/ && $2 !~ /security/ { print $2; exit }' "$f"
	done
}

if [ ! -s "$tarball" ]; then
	url=$(mirror | head -n 1)
	[ -n "$url" ] || { echo "python-image: no Debian mirror in /etc/apt/sources.list*" >&2; exit 1; }
	mkdir -p "$cache"
	work=$(mktemp -d "$cache/build-XXXXXX")
	trap 'rm -rf "$work"' EXIT
	echo "python-image: debootstrap $suite (minbase + python3) from $url"
	debootstrap --variant=minbase --include=python3 "$suite" "$work/root" "$url" \
		>"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log"; exit 1; }
	rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
	tar -C "$work/root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
		-czf "$work/rootfs.tar.gz" .
	mv "$work/rootfs.tar.gz" "$tarball"
fi
[ "$msb" = - ] || "$msb" image import python "$tarball"
