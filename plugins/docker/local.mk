# plugins/docker: the `docker` backend (rung container) and, from the same sources built with
# DOCKER_GVISOR, `docker-gvisor` (rung hardened_container): Docker or Podman through the
# Engine API (libcurl over the unix socket, Jansson, libcrypto for label digests), with the
# SDK's guest agent as each container's init. One descriptor per .so, hence two modules.
DOCKER_PLUGIN_SOURCES = \
	plugins/docker/docker.c \
	plugins/docker/docker_internal.h \
	plugins/docker/docker_api.c \
	plugins/docker/docker_create.c \
	plugins/docker/docker_labels.c
DOCKER_PLUGIN_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS) $(CRYPTO_CFLAGS)
DOCKER_PLUGIN_LIBADD = sdk/libmsb-sdk.la $(JANSSON_LIBS) $(CURL_LIBS) $(CRYPTO_LIBS)
# -z nodelete: a dlclose leaves the plugin, and with it libcurl and the libraries libcurl
# loads (GnuTLS and p11-kit, through librtmp, have thread-local storage), mapped until the
# process exits. Unloaded, their thread-local blocks were left stale in the thread's vector,
# and LeakSanitizer's walk of them at exit crashed (msb dispose under ASan, docker_backend.sh).
DOCKER_PLUGIN_LDFLAGS = $(PLUGIN_LINKFLAGS) -Wl,-z,nodelete

msbplugin_LTLIBRARIES += plugins/docker/docker.la plugins/docker/docker-gvisor.la
plugins_docker_docker_la_SOURCES = $(DOCKER_PLUGIN_SOURCES)
plugins_docker_docker_la_CPPFLAGS = $(DOCKER_PLUGIN_CPPFLAGS)
plugins_docker_docker_la_LDFLAGS = $(DOCKER_PLUGIN_LDFLAGS)
plugins_docker_docker_la_LIBADD = $(DOCKER_PLUGIN_LIBADD)

plugins_docker_docker_gvisor_la_SOURCES = $(DOCKER_PLUGIN_SOURCES) plugins/docker/docker_gvisor.c
plugins_docker_docker_gvisor_la_CPPFLAGS = $(DOCKER_PLUGIN_CPPFLAGS) -DDOCKER_GVISOR
plugins_docker_docker_gvisor_la_LDFLAGS = $(DOCKER_PLUGIN_LDFLAGS)
plugins_docker_docker_gvisor_la_LIBADD = $(DOCKER_PLUGIN_LIBADD)
EXTRA_DIST += plugins/docker/README.md
