# sdk/agent: the guest agent (msb-agent, a static libc-only binary), its wire protocol and
# host-side client (in libmsb-sdk), and the driver every agent-backed backend builds on.
msbinclude_HEADERS += sdk/include/msb/agent.h sdk/include/msb/driver.h \
	sdk/include/msb/launch.h sdk/include/msb/mount_plan.h

# The protocol's framing and request decoding are shared by both sides.
# (A request's background id is checked with msb_bg_id_valid, so its file comes along.)
MSB_AGENT_PROTO_SOURCES = sdk/agent/proto.c sdk/agent/request.c sdk/lib/background.c

sdk_libmsb_sdk_la_SOURCES += $(MSB_AGENT_PROTO_SOURCES) \
	sdk/agent/config.c \
	sdk/agent/client_internal.h \
	sdk/agent/client.c \
	sdk/agent/client_greet.c \
	sdk/agent/client_run.c \
	sdk/agent/client_stream.c \
	sdk/agent/client_background.c \
	sdk/agent/client_files.c \
	sdk/agent/sha256.h \
	sdk/agent/sha256.c \
	sdk/agent/driver_internal.h \
	sdk/agent/driver_config.c \
	sdk/agent/driver_box.c \
	sdk/agent/driver_boundary.c \
	sdk/agent/driver.c \
	sdk/agent/driver_snapshot.c \
	sdk/agent/driver_ops.c \
	sdk/agent/driver_adopt.c \
	sdk/agent/driver_egress.c \
	sdk/agent/launch.c \
	sdk/agent/mount_plan.c
sdk_libmsb_sdk_la_LIBADD += $(PTHREAD_LIBS)

# msb-agent runs inside boundaries that may hold no libraries at all (a bare container
# root, a microVM's initramfs): static, libc only, and never sanitized (the sanitizer
# runtimes cannot be linked statically).
pkglibexec_PROGRAMS += sdk/agent/msb-agent
sdk_agent_msb_agent_SOURCES = \
	sdk/agent/agent_internal.h \
	sdk/agent/main.c \
	sdk/agent/harden.c \
	sdk/agent/listen.c \
	sdk/agent/serve.c \
	sdk/agent/run.c \
	sdk/agent/stream.c \
	sdk/agent/background.c \
	sdk/agent/background_read.c \
	sdk/agent/files.c \
	sdk/agent/reap.c \
	sdk/agent/statx_fix.c \
	sdk/agent/egress_forward.c \
	sdk/agent/egress_relay.c \
	sdk/agent/egress_mux.h \
	sdk/agent/egress_mux.c \
	sdk/agent/egress_vm.c \
	$(MSB_AGENT_PROTO_SOURCES) \
	sdk/lib/error.c \
	sdk/lib/buf.c \
	sdk/lib/env.c \
	sdk/lib/unix_socket.c \
	$(MSB_CONFINE_SOURCES)
sdk_agent_msb_agent_CFLAGS = $(WARN_CFLAGS) -O2
sdk_agent_msb_agent_LDFLAGS = -all-static
if AGENT_MUSL
# Linked against musl (configure.ac says why): its specs put musl's headers and start-up
# files in place of glibc's (the link sees these flags too); the kernel's headers come from
# the links configure made.
sdk_agent_msb_agent_CFLAGS += -specs=$(MUSL_SPECS) -idirafter $(top_builddir)/$(MUSL_KERNEL_INCLUDE)
endif

# The kernel-header links configure made for the musl build.
distclean-local:
	rm -rf $(MUSL_KERNEL_INCLUDE)

# msb-statx.so, preloaded into commands on a kernel whose statx refuses AT_NO_AUTOMOUNT
# (sdk/agent/statx_fix.c says which and why). Built for the host's C library, never
# sanitized (it is loaded into programs that are not), beside msb-agent in pkglibexecdir,
# where a boundary that maps the host's image finds it (agent path's directory).
pkglibexec_SCRIPTS = sdk/agent/msb-statx.so
CLEANFILES += sdk/agent/msb-statx.so
EXTRA_DIST += sdk/agent/statx_shim.c
sdk/agent/msb-statx.so: $(top_srcdir)/sdk/agent/statx_shim.c
	@mkdir -p sdk/agent
	$(AM_V_CC)$(CC) -shared -fPIC -O2 $(WARN_CFLAGS) -o $@ $(top_srcdir)/sdk/agent/statx_shim.c
