#!/bin/sh
# bench_docker.sh BENCH [ROUNDS] — run the docker backend's benchmark (bench_docker.c) once per
# engine: a private dockerd, then a private Podman API service (tests/lib/engines.sh), each
# with the busybox test image imported; an engine that cannot start here is skipped. On
# dockerd with runsc registered, docker-gvisor is measured as well (MSB_DOCKER_RUNTIME=runsc).
set -u
bench=$1
rounds=${2:-7}
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/engines.sh"
busybox=
for c in "${MSB_QEMU_GUEST:-/nonexistent}/busybox" "$(dirname "$bench")/../../plugins/qemu/guest/busybox" /bin/busybox; do
	[ -x "$c" ] && busybox=$c && break
done
[ -n "$busybox" ] || { echo "bench_docker: skipped: no static busybox (MSB_QEMU_GUEST)"; exit 0; }
command -v docker >/dev/null || { echo "bench_docker: skipped: no docker CLI for the baseline"; exit 0; }
trap engine_stop EXIT
status=0
for e in ${MSB_DOCKER_ENGINES:-docker podman}; do
	engine_start "$e" || continue
	if engine_import_image "msbbench$$" "$busybox"; then
		MSB_DOCKER_SOCKET=$ENGINE_SOCK MSB_DOCKER_IMAGE=msbbench$$:latest MSB_DOCKER_ENGINE=$e \
			"$bench" "$rounds" || status=1
		# docker-gvisor where dockerd has runsc registered (Podman ignores the runtime, and
		# docker-gvisor refuses to load there: nothing to measure).
		if [ "$e" = docker ] && curl -s --unix-socket "$ENGINE_SOCK" http://d/info | grep -q '"runsc"'; then
			MSB_DOCKER_SOCKET=$ENGINE_SOCK MSB_DOCKER_IMAGE=msbbench$$:latest MSB_DOCKER_ENGINE=$e \
				MSB_DOCKER_RUNTIME=runsc "$bench" "$rounds" || status=1
		fi
	else
		status=1
	fi
	engine_stop
	[ -z "$ENGINE_LEFT" ] || { echo "bench_docker: left by the stopped $e: $ENGINE_LEFT"; status=1; }
done
exit $status
