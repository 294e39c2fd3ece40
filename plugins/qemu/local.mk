# plugins/qemu: the `qemu` backend (rung microvm), a boundary driver over the SDK's guest
# agent and driver (msb/driver.h), msb-qemu-init, the guest's static /init, and
# msb-qemu-relay, the host-side relay each VM's socket is served by.
msbplugin_LTLIBRARIES += plugins/qemu/qemu.la
plugins_qemu_qemu_la_SOURCES = \
	plugins/qemu/qemu.c \
	plugins/qemu/qemu_internal.h \
	plugins/qemu/qemu_guest.c \
	plugins/qemu/qemu_launch.c \
	plugins/qemu/qemu_accel.c \
	plugins/qemu/qemu_image.c \
	plugins/qemu/qemu_template.c \
	plugins/qemu/qemu_snapshot.c \
	plugins/qemu/qemu_qmp.c \
	plugins/qemu/qemu_qmp.h \
	plugins/qemu/qemu_egress.c \
	plugins/qemu/relay_spawn.c \
	plugins/qemu/relay.h \
	plugins/qemu/initramfs.c \
	plugins/qemu/initramfs.h \
	plugins/qemu/vminit.h
plugins_qemu_qemu_la_LDFLAGS = $(PLUGIN_LINKFLAGS)
plugins_qemu_qemu_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRYPTO_CFLAGS)
# jansson: QMP's JSON (templates); libcrypto: a template's key and its state's digest.
plugins_qemu_qemu_la_LIBADD = sdk/libmsb-sdk.la $(JANSSON_LIBS) $(CRYPTO_LIBS)

# The guest's PID 1 runs in an initramfs with no libraries: static, libc only, never
# sanitized (the sanitizer runtimes cannot be linked statically).
pkglibexec_PROGRAMS += plugins/qemu/msb-qemu-init
plugins_qemu_msb_qemu_init_SOURCES = plugins/qemu/vminit.c plugins/qemu/vminit.h
plugins_qemu_msb_qemu_init_CFLAGS = $(WARN_CFLAGS) -O2
plugins_qemu_msb_qemu_init_LDFLAGS = -all-static

# The relay lives as long as its VM, so it is a program of its own (a fork left running
# would pin a copy of every page the host writes): static and libc only, like the init, so
# its resident set is its own.
pkglibexec_PROGRAMS += plugins/qemu/msb-qemu-relay
plugins_qemu_msb_qemu_relay_SOURCES = plugins/qemu/relay_main.c plugins/qemu/relay.c \
	plugins/qemu/relay.h plugins/qemu/egress_host.c sdk/agent/egress_mux.c sdk/agent/egress_mux.h
plugins_qemu_msb_qemu_relay_CFLAGS = $(WARN_CFLAGS) -O2
plugins_qemu_msb_qemu_relay_LDFLAGS = -all-static

# fetch-guest.sh DEST: the set-up step that puts Debian's cloud kernel and busybox-static
# where the backend looks ($(pkgdatadir)/qemu by default). `make qemu-guest` fetches into
# the build tree, where the tests and benchmarks look.
dist_pkgdata_DATA += plugins/qemu/fetch-guest.sh
qemu-guest:
	sh $(top_srcdir)/plugins/qemu/fetch-guest.sh $(abs_top_builddir)/plugins/qemu/guest
install-qemu-guest:
	sh $(top_srcdir)/plugins/qemu/fetch-guest.sh $(DESTDIR)$(pkgdatadir)/qemu
.PHONY: qemu-guest install-qemu-guest

EXTRA_DIST += plugins/qemu/README.md
