# tests/lib/engines.sh — start a private dockerd or Podman API service for a test, and stop
# it by pid afterwards (sourced by tests/backends/docker_*.sh and tests/bench).
#
# Every instance is the test's own: its socket, data root, exec root and pid file live in one
# mkdtemp directory, so tests of several helpers (or two runs of one) never share an engine,
# never touch /var/run/docker.sock, and leave nothing behind when they stop. The daemons run
# with no bridge and no iptables: every msb container uses NetworkMode none.
#
#   engine_start docker|podman   sets ENGINE_SOCK, ENGINE_DIR, ENGINE_PID (returns 77 with a
#                                printed reason when the engine cannot start here)
#   engine_stop                  stops it (TERM, then KILL by pid) and removes ENGINE_DIR;
#                                ENGINE_LEFT then says what is still there (empty: nothing)
#   engine_import_image NAME     imports the test image (busybox-static + nothing else) as NAME
#
# Podman needs a containers.conf on this machine kind: root lacks CAP_SYS_RESOURCE (so the
# default ulimits cannot be raised) and there is no systemd (cgroupfs, file events).
#
# A few paths the engines make outside their private directory whatever they are told:
# dockerd's plugin socket directory, containerd's shim socket directory, Podman's blob-info
# cache (written on an image import); and runc's default root, /run/runc, should a runtime
# ever be called without the private --root each engine is given here. Each of these that
# was absent when an instance started and is there when it stops is recorded in
# ENGINE_MADE; the last test engine to stop (no other instance's pid alive) removes what is
# recorded — an empty directory only, and the cache file. A path that was there before any
# test engine started (a real daemon's) is never recorded, so never touched. (dockerd's
# trust key, /etc/docker/key.json by default, is kept in the private directory instead.)

ENGINE_SOCK= ENGINE_DIR= ENGINE_PID= ENGINE_KIND= ENGINE_ABSENT= ENGINE_LEFT=
ENGINE_MADE=/tmp/msb-test-engines.made
ENGINE_GLOBALS="/run/docker/plugins /run/docker /run/containerd/s /run/containerd /run/runc
	/var/lib/containers/cache/blob-info-cache-v1.boltdb /var/lib/containers/cache
	/var/lib/containers /etc/docker/key.json /etc/docker"

# Whether another test engine instance (not this one) is alive, by the pid it recorded.
engine_others_alive() {
	for f in /tmp/msbeng.*/engine.pid; do
		[ -f "$f" ] || continue
		[ "${f%/engine.pid}" = "$ENGINE_DIR" ] && continue
		p=$(cat "$f" 2>/dev/null)
		case "$p" in '' | *[!0-9]*) continue ;; esac
		kill -0 "$p" 2>/dev/null && return 0
	done
	return 1
}

# Record what this instance's lifetime brought into being, and, as the last one, remove it.
engine_sweep_globals() {
	for g in $ENGINE_ABSENT; do
		[ -e "$g" ] && echo "$g" >>"$ENGINE_MADE"
	done
	ENGINE_ABSENT=
	engine_others_alive && return 0
	[ -f "$ENGINE_MADE" ] || return 0
	# Deepest first, so a directory is emptied before it is tried.
	for g in $(sort -u "$ENGINE_MADE" | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-); do
		case "$g" in
		*.boltdb | */key.json) rm -f "$g" ;;
		*) [ -d "$g" ] && rmdir "$g" 2>/dev/null ;;
		esac
	done
	rm -f "$ENGINE_MADE"
}

engine_wait_socket() { # sock timeout_s
	i=0
	while [ $i -lt $(($2 * 10)) ]; do
		if [ -S "$1" ] && curl -sf --max-time 2 --unix-socket "$1" http://d/_ping >/dev/null 2>&1; then
			return 0
		fi
		if [ -n "$ENGINE_PID" ] && ! kill -0 "$ENGINE_PID" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

engine_start() { # docker|podman
	ENGINE_KIND=$1
	command -v curl >/dev/null || { echo "SKIP: curl is not installed"; return 77; }
	ENGINE_ABSENT=
	for g in $ENGINE_GLOBALS; do
		[ -e "$g" ] || ENGINE_ABSENT="$ENGINE_ABSENT $g"
	done
	ENGINE_DIR=$(mktemp -d /tmp/msbeng.XXXXXX) || return 1
	ENGINE_SOCK=$ENGINE_DIR/api.sock
	case "$1" in
	docker)
		command -v dockerd >/dev/null || { echo "SKIP: dockerd is not installed (Debian docker.io)"; return 77; }
		# runsc with --network=none is the only way it runs under Docker on this kernel;
		# --host-uds=create lets the agent bind its socket on the channel bind mount.
		# "fakegv" is runc under the name runsc: what docker-gvisor must see through.
		mkdir -p "$ENGINE_DIR/fake"
		printf '#!/bin/sh\nexec runc "$@"\n' >"$ENGINE_DIR/fake/runsc"
		chmod 755 "$ENGINE_DIR/fake/runsc"
		runtimes='"runtimes": {"fakegv": {"path": "'"$ENGINE_DIR"'/fake/runsc"}'
		if [ -x /usr/bin/runsc ]; then
			runtimes="$runtimes"', "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=create"]}'
		fi
		runtimes="$runtimes},"
		cat >"$ENGINE_DIR/daemon.json" <<EOF
{ $runtimes "storage-driver": "overlay2", "deprecated-key-path": "$ENGINE_DIR/key.json" }
EOF
		dockerd --config-file "$ENGINE_DIR/daemon.json" --data-root "$ENGINE_DIR/data" \
			--exec-root "$ENGINE_DIR/exec" --pidfile "$ENGINE_DIR/dockerd.pid" \
			-H "unix://$ENGINE_SOCK" --iptables=false --ip-masq=false --ip-forward=false \
			--bridge=none --userland-proxy=false >"$ENGINE_DIR/engine.log" 2>&1 &
		ENGINE_PID=$!
		;;
	podman)
		command -v podman >/dev/null || { echo "SKIP: podman is not installed"; return 77; }
		cat >"$ENGINE_DIR/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
		# runc's state under the private directory too (its default root is /run/runc).
		CONTAINERS_CONF=$ENGINE_DIR/containers.conf podman --root "$ENGINE_DIR/data" \
			--runroot "$ENGINE_DIR/run" --tmpdir "$ENGINE_DIR/tmp" \
			--runtime-flag "root=$ENGINE_DIR/runc" \
			--storage-driver overlay system service --time=0 "unix://$ENGINE_SOCK" \
			>"$ENGINE_DIR/engine.log" 2>&1 &
		ENGINE_PID=$!
		;;
	*)
		echo "engine_start: unknown engine $1" >&2
		return 1
		;;
	esac
	echo "$ENGINE_PID" >"$ENGINE_DIR/engine.pid"
	if ! engine_wait_socket "$ENGINE_SOCK" 60; then
		echo "SKIP: $1 could not be started here:"
		tail -5 "$ENGINE_DIR/engine.log" | sed 's/^/  /'
		engine_stop
		return 77
	fi
	return 0
}

# What the stopped instance in directory $1 left: a live process or a mount naming it, the
# directory itself, a rule of dockerd's in the host's iptables (it runs with --iptables=false).
engine_leftovers() {
	for p in $(grep -l -a -F "$1/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
		[ "$p" = $$ ] && continue
		# (The grep itself named the directory: gone by now, as is any process that ended.)
		[ -d "/proc/$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" != grep ] || continue
		grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && continue
		echo "process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | head -c 200)"
	done
	grep -s -F " $1/" /proc/mounts | awk '{ print "mount " $2 }'
	[ -e "$1" ] && echo "directory $1"
	if command -v iptables-save >/dev/null; then
		iptables-save 2>/dev/null | grep -q -i docker && echo "iptables rules naming docker"
	fi
}

engine_stop() {
	ENGINE_LEFT=
	stopped_dir=$ENGINE_DIR
	# Every container first, through the API: Podman's containers and exec sessions are
	# kept by conmon processes of their own, which outlive the service.
	if [ -n "$ENGINE_SOCK" ] && [ -S "$ENGINE_SOCK" ] && command -v jq >/dev/null; then
		for id in $(curl -s --max-time 30 --unix-socket "$ENGINE_SOCK" 'http://d/containers/json?all=1' | jq -r '.[].Id' 2>/dev/null); do
			curl -s -o /dev/null --max-time 60 --unix-socket "$ENGINE_SOCK" -X DELETE "http://d/containers/$id?force=1&v=1"
		done
	fi
	if [ -n "$ENGINE_PID" ]; then
		kill -TERM "$ENGINE_PID" 2>/dev/null
		i=0
		while kill -0 "$ENGINE_PID" 2>/dev/null && [ $i -lt 150 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$ENGINE_PID" 2>/dev/null
		wait "$ENGINE_PID" 2>/dev/null
	fi
	if [ -n "$ENGINE_DIR" ] && [ -d "$ENGINE_DIR" ]; then
		# dockerd's containerd and any shim it left: end them by their pid files, by pid.
		for f in $(find "$ENGINE_DIR" -name '*.pid' 2>/dev/null); do
			p=$(cat "$f" 2>/dev/null)
			case "$p" in '' | *[!0-9]*) continue ;; esac
			kill -KILL "$p" 2>/dev/null
		done
		# And whatever still names this engine's private directory (a conmon waiting out its
		# exit delay): by pid, and only ours — the directory is this instance's mkdtemp.
		for p in $(grep -l -a -F "$ENGINE_DIR/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
			[ "$p" != $$ ] && kill -KILL "$p" 2>/dev/null
		done
		grep -s " $ENGINE_DIR/" /proc/mounts | awk '{print $2}' | sort -r |
			while read -r m; do umount -l "$m" 2>/dev/null; done
		rm -rf "$ENGINE_DIR"
	fi
	engine_sweep_globals
	[ -n "$stopped_dir" ] && ENGINE_LEFT=$(engine_leftovers "$stopped_dir")
	ENGINE_PID= ENGINE_DIR= ENGINE_SOCK=
}

# A tar of the test image's root: busybox (static) and its applets. The agent itself is bound
# in by the backend, so the image needs nothing of msb.
engine_image_tar() { # busybox out.tar
	root=$(mktemp -d /tmp/msbimg.XXXXXX) || return 1
	mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/proc" "$root/sys" "$root/dev"
	cp "$1" "$root/bin/busybox"
	for a in sh cat echo ls sleep true false id kill ps mkdir rm dmesg uname head wc printf \
		touch env sed grep awk yes setsid seq tr cut stat ln mv cp chmod readlink dd sort pwd; do
		ln -s busybox "$root/bin/$a"
	done
	# A `curl` for the egress suite's connection attempts (issue 24): Debian's static busybox
	# wget segfaults on every URL, its nc does not, so this is nc speaking HTTP/1.0 — through
	# $http_proxy when set, as curl does (the agent sets it to its forwarder's proxy port).
	cat >"$root/bin/curl" <<'CURL'
#!/bin/sh
for u; do :; done
hp=${u#http://}; hp=${hp%%/*}; h=${hp%:*}; p=${hp##*:}; [ "$p" = "$hp" ] && p=80
host=$hp target=/
case ",${no_proxy:-}," in *",$h,"*) http_proxy= ;; esac
if [ -n "${http_proxy:-}" ]; then
	target=$u; hp=${http_proxy#http://}; hp=${hp%%/*}; h=${hp%:*}; p=${hp##*:}
fi
printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$target" "$host" | timeout 5 nc "$h" "$p"
CURL
	chmod 755 "$root/bin/curl"
	ln -s busybox "$root/bin/nc"
	ln -s busybox "$root/bin/timeout"
	echo 'root:x:0:0:root:/:/bin/sh' >"$root/etc/passwd"
	echo 'root:x:0:' >"$root/etc/group"
	tar -C "$root" -cf "$2" .
	rc=$?
	rm -rf "$root"
	return $rc
}

engine_import_image() { # name busybox
	tarf=$ENGINE_DIR/image.tar
	engine_image_tar "$2" "$tarf" || return 1
	code=$(curl -s -o "$ENGINE_DIR/import.out" -w '%{http_code}' --unix-socket "$ENGINE_SOCK" \
		-X POST -H 'Content-Type: application/x-tar' --data-binary "@$tarf" \
		"http://d/images/create?fromSrc=-&repo=$1&tag=latest")
	rm -f "$tarf"
	[ "$code" = 200 ] || { echo "image import failed ($code):"; cat "$ENGINE_DIR/import.out"; return 1; }
}
