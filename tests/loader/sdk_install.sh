#!/bin/sh
# sdk_install.sh — a backend built out of tree against the *installed* SDK loads.
#
# Installs this build into a temporary DESTDIR, builds a small plugin there with nothing but
# `pkg-config --cflags --libs msb`, builds a small host program with `pkg-config msb-host`,
# and has the host load the plugin through libmsb. Then the guide's examples as installed
# (doc/examples: shelf.c, and crate.c, the container backend the guide promises in under 150
# lines) are built the same way and loaded too; walkthrough.sh runs the kit on that source.
# Everything is removed on exit, pass or fail.
set -eu

: "${MSB_TOP_BUILDDIR:?run me from make check}"
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config is not installed"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/msb-sdk-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# The compiler and sanitizer flags this tree was configured with: an instrumented libmsb
# can only be linked into an instrumented program.
make_var() { sed -n "s/^$1 = //p" "$MSB_TOP_BUILDDIR/Makefile"; }
cc=$(make_var CC)
san=$(make_var SAN_CFLAGS)
sanitizers=$(printf '%s\n' "$san" | sed -n 's/.*-fsanitize=\([^ ]*\).*/\1/p')
prefix=/opt/msb-sdk-test
libdir=$prefix/lib

# A private build of the libraries, headers and .pc files: installing from the shared build
# tree would make libtool relink its libraries in place while other tests are running them.
# A nested make must not inherit the test harness's jobserver.
#
# A source tree configured in place (`./configure && make && make check`, the README's
# "Building by hand") refuses a second, out-of-tree configure ("source directory already
# configured"): the private build is then made from a copy of the distributed sources
# (`make distdir`), which is what a tarball would hold.
src=$MSB_TOP_SRCDIR
if [ -f "$MSB_TOP_SRCDIR/config.status" ]; then
	src="$tmp/src"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$MSB_TOP_BUILDDIR" distdir \
		distdir="$src" >"$tmp/distdir.log" 2>&1 || {
		cat "$tmp/distdir.log"
		echo "FAIL: make distdir (for a private build beside an in-place one) failed"
		exit 1
	}
fi
mkdir "$tmp/build"
(
	cd "$tmp/build" &&
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$src/configure" -q CC="$cc" \
		--prefix="$prefix" --libdir="$libdir" \
		--enable-sanitizers="${sanitizers:-no}" &&
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -j2 install-libLTLIBRARIES \
		install-msbincludeHEADERS install-nodist_pkgconfigDATA \
		install-dist_examplesDATA DESTDIR="$tmp/dest"
) >"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log"
	echo "FAIL: a private build and install of the SDK into $tmp/dest failed"
	exit 1
}

export PKG_CONFIG_PATH="$tmp/dest$libdir/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$tmp/dest"
export PKG_CONFIG_LIBDIR="$PKG_CONFIG_PATH"
for f in "$tmp/dest$prefix/include/msb/backend.h" "$PKG_CONFIG_PATH/msb.pc"; do
	[ -f "$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done

cat >"$tmp/outoftree.c" <<'PLUGIN'
/* Every SDK header, each compiled as a third party would: strict C17, no _GNU_SOURCE. */
#include <msb/agent.h>
#include <msb/backend.h>
#include <msb/cgroup.h>
#include <msb/confine.h>
#include <msb/driver.h>
#include <msb/error.h>
#include <msb/image.h>
#include <msb/launch.h>
#include <msb/mount_plan.h>
#include <msb/node.h>
#include <msb/spawn.h>
#include <msb/types.h>
#include <msb/unix_socket.h>
#include <msb/vocab.h>

static msb_errc oot_init(const msb_node *config, const msb_host *host,
			 msb_backend_instance **self, msb_error *err)
{
	(void)host;
	*self = NULL;
	return msb_node_check_keys(config, (const char *const[]){ NULL }, err);
}
static void oot_fini(msb_backend_instance *self) { (void)self; }
static msb_errc oot_acquire(msb_backend_instance *self, const msb_key *key, const msb_spec *spec,
			    msb_sandbox_handle **sandbox, msb_error *err)
{
	(void)self, (void)key, (void)spec, (void)sandbox;
	return msb_error_set(err, MSB_E_BACKEND, "outoftree: no engine");
}
static bool oot_dispose(msb_backend_instance *self, const msb_key *key, msb_disposal_failure *f)
{
	(void)self, (void)key, (void)f;
	return false;
}
static void oot_dispose_scope(msb_backend_instance *self, const char *scope, const char *thread,
			      msb_scope_purge *purge)
{
	(void)self, (void)scope, (void)thread, (void)purge;
}
static void oot_release(msb_sandbox_handle *sandbox) { (void)sandbox; }
static msb_errc oot_exec(msb_sandbox_handle *sandbox, const msb_exec_request *req,
			 msb_exec_result *res, msb_error *err)
{
	(void)sandbox, (void)req, (void)res;
	return msb_error_set(err, MSB_E_BACKEND, "outoftree: no engine");
}
static msb_errc oot_reclaim(msb_sandbox_handle *sandbox, const char *dir, const char *wd,
			    double timeout, msb_error *err)
{
	(void)sandbox, (void)dir, (void)wd, (void)timeout, (void)err;
	return MSB_OK;
}

MSB_BACKEND_DEFINE(
	.name = "outoftree",
	.isolation = "container",
	.declarations = { .capabilities = MSB_WORDS("exec"), .egress_modes = MSB_WORDS("closed") },
	.init = oot_init, .fini = oot_fini, .acquire = oot_acquire, .dispose = oot_dispose,
	.dispose_scope = oot_dispose_scope, .release = oot_release, .exec = oot_exec,
	.reclaim = oot_reclaim,
);
PLUGIN

cat >"$tmp/host.c" <<'HOST'
#include <stdio.h>
#include <msb/loader.h>

int main(int argc, char **argv)
{
	msb_loader *loader;
	msb_error err = MSB_ERROR_INIT;
	const msb_plugin *p;
	if (argc != 2 || msb_loader_new(&loader, &err) != MSB_OK)
		return 2;
	if (msb_loader_load(loader, argv[1], &p, &err) != MSB_OK) {
		fprintf(stderr, "%s: %s\n", msb_errc_name(err.code), msb_error_message(&err));
		msb_error_clear(&err);
		msb_loader_free(loader);
		return 1;
	}
	printf("%s %s caps=%u egress=%u\n", msb_plugin_name(p),
	       msb_word_name(MSB_AXIS_ISOLATION, (int)msb_plugin_isolation(p)),
	       (unsigned)msb_plugin_declarations(p)->capabilities,
	       (unsigned)msb_plugin_declarations(p)->egress_modes);
	msb_loader_free(loader);
	return 0;
}
HOST

# shellcheck disable=SC2046 # pkg-config output is meant to be word-split
$cc $san -std=c17 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/outoftree.so" "$tmp/outoftree.c" \
	$(pkg-config --cflags --libs msb)
# shellcheck disable=SC2046
$cc $san -std=c17 -Wall -Wextra -Werror -o "$tmp/host" "$tmp/host.c" \
	$(pkg-config --cflags --libs msb-host)

out=$(LD_LIBRARY_PATH="$tmp/dest$libdir" "$tmp/host" "$tmp/outoftree.so")
echo "$out"
# exec is bit 0, closed is bit 2 in the installed vocabulary.
[ "$out" = "outoftree container caps=1 egress=4" ] || {
	echo "FAIL: unexpected load result: $out"
	exit 1
}
echo "PASS: a plugin built against the installed SDK loads"

# The guide's examples, from where the install put them, against the installed SDK alone.
examples="$tmp/dest$prefix/share/doc/msb/examples"
for ex in shelf crate; do
	[ -f "$examples/$ex.c" ] || { echo "FAIL: $examples/$ex.c was not installed"; exit 1; }
	# shellcheck disable=SC2046
	$cc $san -std=c17 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/$ex.so" "$examples/$ex.c" \
		$(pkg-config --cflags --libs msb) || { echo "FAIL: the installed $ex.c does not build"; exit 1; }
	out=$(LD_LIBRARY_PATH="$tmp/dest$libdir" "$tmp/host" "$tmp/$ex.so") ||
		{ echo "FAIL: the installed $ex.c built but did not load: $out"; exit 1; }
	echo "$out"
done
lines=$(wc -l <"$examples/crate.c")
[ "$lines" -lt 150 ] || { echo "FAIL: the installed crate.c is $lines lines, the guide promises under 150"; exit 1; }
case $out in "crate container "*) ;; *) echo "FAIL: crate.c loaded as $out"; exit 1 ;; esac
echo "PASS: the guide's examples (crate.c, $lines lines) build out of tree from the installed SDK and load"
