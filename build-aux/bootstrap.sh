#!/bin/sh
# bootstrap.sh — everything a fresh Debian 12 machine needs, as root, then one job:
#   sh build-aux/bootstrap.sh demo    install msb, check conf/sandbox.yaml, run a command in a sandbox
#   sh build-aux/bootstrap.sh check   build and run the whole test suite: plain, ASan+UBSan, TSan
# It is idempotent: a second run installs nothing new and rebuilds only what changed.
set -eu
job=${1:-check}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Every package the project needs, and why, in one place: the toolchain and autotools; the
# libraries of README.md's dependencies; musl-tools, the C library msb-agent is linked with
# (it starts 0.2 ms sooner than with glibc: configure.ac); the engines (bubblewrap, gVisor's
# runsc, QEMU, with cpio and kmod to build its initramfs); and what the tests and the demo
# use (ip, python3 for stand-in agents, ps, util-linux's tools, and ca-certificates for apt's downloads).
# Jansson (JSON), libarchive (image layers), libcrypto (digests) and libcurl (the Docker Engine
# API over its unix socket) are the format libraries: configure.ac says why each.
# docker.io and podman are the engines of the docker backend; debootstrap builds the default
# python image, erofs-utils and e2fsprogs turn an image into the microVM's block device, and
# passt's pasta forwards a port into a network namespace. curl and jq: the docker backend's
# tests start private engines and check what is left through the Engine API (tests/lib/engines.sh).
packages="
  build-essential autoconf automake libtool pkg-config musl-tools
  libyaml-dev libcmocka-dev libffi-dev libseccomp-dev libunistring-dev
  libjansson-dev libarchive-dev libssl-dev libcurl4-openssl-dev
  docker.io podman debootstrap erofs-utils e2fsprogs passt
  bubblewrap runsc qemu-system-x86 cpio kmod
  iproute2 python3 procps psmisc util-linux ca-certificates curl jq
"
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "bootstrap: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
fi

# The MCP server's test drives it with the official MCP TypeScript SDK's client, from the npm
# registry (tests/mcp/package-lock.json pins it). Node.js comes with this machine kind; on a
# Debian 12 without it, Debian's nodejs and npm serve (the SDK needs Node 18 or later).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "bootstrap: installing: nodejs npm"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
if [ ! -d tests/mcp/node_modules/@modelcontextprotocol/sdk ] ||
	[ tests/mcp/package-lock.json -nt tests/mcp/node_modules ]; then
	npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error
fi

# The microVM backend boots Debian's cloud kernel and busybox-static, unpacked into the
# tree (never installed into /boot); every build below and its tests use this one copy.
MSB_QEMU_GUEST="$top/build/qemu-guest"
export MSB_QEMU_GUEST
sh plugins/qemu/fetch-guest.sh "$MSB_QEMU_GUEST"

[ -x configure ] || autoreconf -fi

build() { # build DIR [configure args…]
	dir=$1; shift
	mkdir -p "$dir"
	if [ ! -f "$dir/Makefile" ]; then
		(cd "$dir" && "$top/configure" -q "$@")
	fi
	make -C "$dir" -s -j"$(nproc)"
}

summary() { # one closing line over every pass run so far, for people and CI alike
	awk '/^# (PASS|FAIL|ERROR|SKIP|XPASS):/ { n[$2] += $3 }
	     END { printf "tests: %d passed, %d failed, %d skipped\n",
	           n["PASS:"], n["FAIL:"] + n["ERROR:"] + n["XPASS:"], n["SKIP:"] }' \
		$(for d in build build-asan build-tsan; do [ -f "$d/test-suite.log" ] && echo "$d/test-suite.log"; done)
}

check_in() { # check_in DIR [make args…]: run the suite, show the failing logs if any
	dir=$1; shift
	rm -f "$dir/test-suite.log"
	if ! make -C "$dir" -s -j"$(nproc)" check "$@"; then
		for log in $(grep -l -E '^:test-result: (FAIL|ERROR)' $(find "$dir/tests" -name '*.trs') 2>/dev/null | sed 's/\.trs$/.log/'); do
			echo "==== $log"; tail -n 80 "$log"
		done
		summary
		exit 1
	fi
}

case "$job" in
demo)
	build build
	make -C build -s install install-qemu-guest >build/install.log 2>&1 ||
		{ cat build/install.log; exit 1; }
	echo "bootstrap: msb installed under $(sed -n 's/^prefix = //p' build/Makefile) (log: build/install.log)"
	ldconfig
	unset MSB_QEMU_GUEST # the installed msb finds its installed guest
	msb -c conf/sandbox.yaml check
	msb -c conf/sandbox.yaml exec shell --scope demo --thread t1 -- uname -a
	# The default python image: debootstrap once (cached in /var/cache/msb/images), imported
	# into the store; then a Python program in a microVM.
	sh build-aux/python-image.sh "$(command -v msb)"
	msb -c conf/sandbox.yaml run-code python --scope demo --thread t1 -e 'import sys; print(sys.version)'
	msb -c conf/sandbox.yaml dispose --scope demo --thread t1
	;;
check)
	build build
	# The python image's tarball (cached outside the clone, built once): the tests that run
	# it on every engine import it themselves, and skip, saying so, when it cannot be made.
	sh build-aux/python-image.sh - || echo "bootstrap: no python image tarball; its tests will skip"
	check_in build
	build build-asan --enable-sanitizers=address,undefined
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	export ASAN_OPTIONS UBSAN_OPTIONS
	check_in build-asan
	# ThreadSanitizer over the tests that race threads on purpose.
	build build-tsan --enable-sanitizers=thread
	tsan_tests=$(make -s -C build-tsan print-tsan-tests)
	[ -z "$tsan_tests" ] || check_in build-tsan TESTS="$tsan_tests"
	summary
	;;
*)
	echo "usage: sh build-aux/bootstrap.sh demo|check" >&2
	exit 2
	;;
esac
