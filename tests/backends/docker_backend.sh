#!/bin/sh
# docker_backend.sh — the docker backend (and docker-gvisor) against real engines: a private
# dockerd and a private Podman API service, each started here and stopped afterwards
# (tests/lib/engines.sh), with a test image imported from busybox. For each engine:
#  - the conformance kit passes (docker; docker-gvisor too where runsc is registered);
#  - attacks from inside fail: capabilities, no_new_privs, the read-only root, the engine's
#    socket, the network, mounting;
#  - the limits reach the engine (inspect) and the container (its cgroup);
#  - two msb processes with one key meet one sandbox; a timeout kills the command's tree and
#    not the sandbox;
#  - dispose and dispose_scope leave no container, volume or network, checked through the
#    API, also when the state directory was lost (the label sweep);
#  - a container left over under the sandbox's name is replaced, a foreign one refused;
#  - docker-gvisor refuses to load without gVisor, and refuses a sandbox whose runtime only
#    calls itself runsc.
# Skips (77) with the reason when no engine can be started here.
set -u
B=${MSB_TOP_BUILDDIR:?run me from make check}
S=${MSB_TOP_SRCDIR:?run me from make check}
MSB="$B/core/cli/msb"
AGENT="$B/sdk/agent/msb-agent"
. "$S/tests/lib/engines.sh"

BUSYBOX=
for c in "${MSB_QEMU_GUEST:-/nonexistent}/busybox" "$B/plugins/qemu/guest/busybox" /bin/busybox; do
	if [ -x "$c" ] && file "$c" 2>/dev/null | grep -q 'statically linked'; then
		BUSYBOX=$c
		break
	fi
done
[ -n "$BUSYBOX" ] || { echo "SKIP: no static busybox for the test image (MSB_QEMU_GUEST)"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }

tmp=$(mktemp -d /tmp/msb-docker-t.XXXXXX) || exit 1
cleanup() { engine_stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' HUP INT TERM PIPE
fails=0 ran=0 IMAGE=msbtest$$:latest

ok() { echo "ok: $ENGINE_KIND: $1"; }
bad() { echo "FAIL: $ENGINE_KIND: $1"; fails=$((fails + 1)); }
api() { curl -s --max-time 30 --unix-socket "$ENGINE_SOCK" "http://d/v1.41$1"; }
# The containers this backend labelled, on this engine.
ours() { api '/containers/json?all=1&filters=%7B%22label%22%3A%5B%22dev.msb.backend%22%5D%7D' | jq length; }

# config FILE PLUGIN [extra yaml lines] — a sandbox.yaml with one backend on this engine.
config() {
	f=$1 so=$2
	shift 2
	{
		printf 'version: 1\nrouter:\n  min_isolation: container\nbackends:\n'
		printf '  - plugin: %s\n    config:\n' "$so"
		printf '      state_dir: %s\n      agent: %s\n      socket: %s\n' "$tmp/state-$ENGINE_KIND" "$AGENT" "$ENGINE_SOCK"
		printf '      image: %s\n      run_code: sh\n      memory: 256MiB\n      pids: 200\n      cpus: 0.5\n' "$IMAGE"
		for l in "$@"; do printf '      %s\n' "$l"; done
		printf 'specs:\n  shell:\n    requires: [exec, run_code, files_in, files_out]\n'
	} >"$f"
}

# conformance PLUGIN — the kit, through msb conformance, on this engine.
conformance() {
	printf 'state_dir: %s\nagent: %s\nsocket: %s\nimage: %s\nrun_code: sh\n' \
		"$tmp/conf-$ENGINE_KIND-$1" "$AGENT" "$ENGINE_SOCK" "$IMAGE" >"$tmp/conf.yaml"
	# The egress suite's allowlist half (issue 24): the kit's link-local peers at addresses
	# derived from the pid (as tests/egress/conformance.sh does), reached only through the
	# host proxy's socket bound into the container.
	ea=$(( 1 + $$ % 200 )); [ "$ea" = 169 ] && ea=170
	eb=$(( 8 * ( ($$ / 200) % 30 ) ))
	cat >>"$tmp/conf.yaml" <<YAML
egress_ports: [80]
egress_allow_ranges: [169.254.$ea.$eb/29]
egress_test_hosts:
  listed.conformance.msb.test: 169.254.$ea.$((eb + 2))
  other.conformance.msb.test: 169.254.$ea.$((eb + 3))
  loopback.conformance.msb.test: 127.78.$ea.$((eb + 1))
YAML
	"$MSB" conformance "$B/plugins/docker/.libs/$1.so" --config "$tmp/conf.yaml" --tap \
		--run-code-language sh >"$tmp/conf.tap" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && ! grep -q '^not ok' "$tmp/conf.tap" && grep -q ' 0 failed' "$tmp/conf.tap"; then
		ok "conformance $1: $(tail -1 "$tmp/conf.tap")"
	else
		bad "conformance $1 (exit $rc):"
		grep -v '^ok' "$tmp/conf.tap"
	fi
	# The rung probes: every case of the rung the plugin claims ran and passed (not skipped,
	# not "not applicable"); docker-gvisor's userspace-kernel probe is what tells gVisor's
	# interception from the host's kernel.
	cases="address-space-apart no-host-fds other-sandbox-apart own-pid-namespace own-mount-namespace
		no-capabilities no-new-privs own-network-namespace limits-hold"
	[ "$1" = docker-gvisor ] && cases="$cases userspace-kernel"
	for c in $cases; do
		line=$(grep -E "^(not )?ok [0-9]+ - rung/$c( |\$)" "$tmp/conf.tap")
		case "$line" in
		ok*'# SKIP'* | not* | '') bad "conformance $1: rung/$c did not pass: ${line:-missing}" ;;
		*) ok "conformance $1: rung/$c: $(grep -A1 -E "^ok [0-9]+ - rung/$c( |\$)" "$tmp/conf.tap" | sed -n '2s/^# //p' | head -c 200)" ;;
		esac
	done
	# docker: the egress suite's closed case and its allowlist half ran and passed (issue
	# 24; the UDP/IPv6 case needs a python3 the test image lacks). docker-gvisor stays {closed}.
	if [ "$1" = docker ]; then
		for c in closed-reaches-nothing allowlist-listed-answers allowlist-other-refused \
			allowlist-literal-refused allowlist-loopback-refused; do
			line=$(grep -E "^(not )?ok [0-9]+ - egress/$c( |\$)" "$tmp/conf.tap")
			case "$line" in
			ok*'# SKIP'* | not* | '') bad "conformance $1: egress/$c did not pass: ${line:-missing}" ;;
			*) ok "conformance $1: egress/$c" ;;
			esac
		done
	fi
	[ "$(ours)" = 0 ] && ok "conformance $1 left no container" || bad "conformance $1 left containers"
}

# x KEY ARGV… — msb exec in the shell sandbox of conversation (t, KEY); output in $tmp/out.
x() {
	k=$1
	shift
	"$MSB" -c "$tmp/s.yaml" exec shell --scope t --thread "$k" -- "$@" >"$tmp/out" 2>"$tmp/err"
	xrc=$?
	# An expected failure must be the command's, never msb crashing (a sanitizer's report).
	if grep -q 'Sanitizer\|runtime error:' "$tmp/err"; then
		bad "msb itself failed ($xrc) running $*: $(head -c 600 "$tmp/err")"
	fi
	return $xrc
}

# allowlist FILE — FILE's sandbox.yaml gains the spec `web`: `egress: allowlist` of one name.
allowlist() {
	printf '  web:\n    requires: [exec]\n    egress: allowlist\n    egress_allow: [example.test]\n' >>"$1"
}

# `egress: allowlist` on docker (issue 24), attacked from inside: the proxy's directory is
# the only host path added, read-only, so the guest cannot plant, remove or re-mode anything
# in it (a symlink at the hosts file's path would aim the host's next write), and the
# network stays loopback alone.
egress_attacks() {
	config "$tmp/w.yaml" "$B/plugins/docker/.libs/docker.so"
	allowlist "$tmp/w.yaml"
	"$MSB" -c "$tmp/w.yaml" exec web --scope t --thread w -- sh -c '
		d=$(awk "\$2 ~ /\\/egress\$/ {print \$2}" /proc/mounts)
		[ -n "$d" ] || { echo nodir; exit 1; }
		touch "$d/x" 2>/dev/null && echo planted
		ln -s /etc/passwd "$d/h2" 2>/dev/null && echo linked
		rm -f "$d/hosts" 2>/dev/null; [ -e "$d/hosts" ] || echo removed
		chmod 777 "$d" 2>/dev/null && echo chmodded
		[ -S "$d/px" ] && echo socket
		grep -c "" /proc/net/dev' >"$tmp/out" 2>&1
	if [ "$(tr '\n' ' ' <"$tmp/out")" = "socket 3 " ]; then
		ok "allowlist: the egress directory is read-only inside, its socket there, lo alone"
	else
		bad "allowlist attack: $(cat "$tmp/out")"
	fi
	"$MSB" -c "$tmp/w.yaml" dispose --scope t --thread w >/dev/null 2>&1
	[ "$(ours)" = 0 ] && ok "allowlist: dispose leaves nothing" || bad "allowlist left $(ours)"
}

engine_suite() {
	engine_import_image "$IMAGE" "$BUSYBOX" || { bad "image import"; return; }
	ran=$((ran + 1))
	nets_before=$(api /networks | jq length)
	vols_before=$(api /volumes | jq '.Volumes | length')
	conformance docker
	egress_attacks
	gv=
	[ "$ENGINE_KIND" = docker ] && api /info | jq -e '.Runtimes.runsc' >/dev/null && gv=1
	MSB_DOCKER_GVISOR=$gv MSB_DOCKER_SOCKET=$ENGINE_SOCK MSB_DOCKER_IMAGE=$IMAGE "$B/tests/backends/docker_cases" >"$tmp/cases.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "docker_cases: $(grep -c '^\[       OK \]' "$tmp/cases.log") cmocka cases passed"
	else
		bad "docker_cases exited $rc:"
		cat "$tmp/cases.log"
	fi
	config "$tmp/s.yaml" "$B/plugins/docker/.libs/docker.so"

	# Attacks from inside: each must fail.
	x a cat /proc/self/status
	grep -q '^CapEff:[[:space:]]*0000000000000000' "$tmp/out" && ok "no effective capability" || bad "capabilities: $(grep Cap "$tmp/out" | tr '\n' ' ') $(cat "$tmp/err")"
	grep -q '^CapBnd:[[:space:]]*0000000000000000' "$tmp/out" && ok "empty bounding set" || bad "bounding set: $(grep CapBnd "$tmp/out")"
	grep -q '^NoNewPrivs:[[:space:]]*1' "$tmp/out" && ok "no_new_privs" || bad "no_new_privs not set"
	x a sh -c 'echo x > /bin/planted' && bad "wrote into the image's root" || ok "root is read-only"
	x a sh -c 'echo x > /tmp/kept && echo y > kept-too' && ok "/tmp and the work dir writable" || bad "/tmp or work dir not writable: $(cat "$tmp/err")"
	# The engine's /dev/shm is a third writable tmpfs: held to tmp_size (64MiB) as well.
	x a sh -c 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=80 2>&1; rm -f /dev/shm/fill'
	grep -q "No space left" "$tmp/out" && ok "/dev/shm is held to tmp_size" || bad "/dev/shm fill: $(cat "$tmp/out" "$tmp/err")"
	x a sh -c "test -e /var/run/docker.sock || test -e /run/docker.sock || test -e '$ENGINE_SOCK' || test -e /run/podman/podman.sock" && bad "an engine socket is visible inside" || ok "no engine socket inside"
	x a cat /proc/net/dev
	[ "$(grep -c ':' "$tmp/out")" = 1 ] && grep -q 'lo:' "$tmp/out" && ok "loopback only (NetworkMode none)" || bad "network devices: $(cat "$tmp/out")"
	x a busybox mount -t tmpfs none /tmp && bad "mounted inside" || ok "mount refused"
	x a sh -c 'busybox chroot / true' && bad "chroot allowed" || ok "chroot refused (no CAP_SYS_CHROOT)"
	x a sh -c 'busybox ls /.msb' && [ "$(cat "$tmp/out")" = agent.sock ] && ok "channel dir holds only the socket" || bad "channel dir: $(cat "$tmp/out")"

	# A symlink planted where the agent's socket was: the host connects through its own link.
	x a sh -c 'rm /.msb/agent.sock && ln -s /nowhere /.msb/agent.sock'
	x a cat /tmp/kept && [ "$(cat "$tmp/out")" = x ] && ok "a planted channel symlink changes nothing" || bad "after planting: $(cat "$tmp/err")"

	# Limits: what the engine was told, and what the container's cgroup enforces.
	name=$(api '/containers/json?all=1&filters=%7B%22label%22%3A%5B%22dev.msb.backend%22%5D%7D' | jq -r '.[0].Names[0]' | tr -d /)
	# (CapDrop is not compared: Podman reports ALL expanded; CapBnd above is the proof.)
	hc=$(api "/containers/$name/json" | jq -c '.HostConfig | [.Memory, .PidsLimit, .NanoCpus, .ReadonlyRootfs, .NetworkMode, .IpcMode, .SecurityOpt]')
	case "$hc" in
	# (IpcMode: Podman's compat API reports its own "shareable" for the "private" asked.)
	'[268435456,200,500000000,true,"none","private",'*no-new-privileges* | \
		'[268435456,200,500000000,true,"none","shareable",'*no-new-privileges*) ok "limits and restrictions reach the engine: $hc" ;;
	*) bad "inspect: $hc" ;;
	esac
	x a cat /sys/fs/cgroup/pids/pids.max
	[ "$(cat "$tmp/out")" = 200 ] && ok "pids limit in the container's cgroup" || bad "pids.max: $(cat "$tmp/out") $(cat "$tmp/err")"
	api "/containers/$name/json" | jq -r '.Config.Labels | to_entries[] | "\(.key)=\(.value)"' >"$tmp/labels"
	if grep -Eq '^dev.msb.scope=[0-9a-f]{64}$' "$tmp/labels" && grep -Eq '^dev.msb.key=[0-9a-f]{64}$' "$tmp/labels" &&
		grep -Eq '^dev.msb.state=[0-9a-f]{64}$' "$tmp/labels" && grep -q "^dev.msb.name=$name\$" "$tmp/labels"; then
		ok "labels: full digests and the full name"
	else
		bad "labels: $(cat "$tmp/labels")"
	fi

	# A second msb process with the same key meets the same sandbox.
	x a cat /tmp/kept && [ "$(cat "$tmp/out")" = x ] && ok "a later msb process meets the same sandbox" || bad "sandbox not reused: $(cat "$tmp/out" "$tmp/err")"
	[ "$(ours)" = 1 ] && ok "one container for one key" || bad "$(ours) containers for one key"
	# A timeout kills the command's tree, not the sandbox.
	"$MSB" -c "$tmp/s.yaml" exec shell --scope t --thread a --timeout 1 -- sh -c 'sleep 60 & sleep 60' >/dev/null 2>&1
	[ $? = 124 ] && ok "timeout reported (124)" || bad "timeout status"
	x a sh -c 'cat /tmp/kept; busybox ps -o comm | grep -c sleep'
	[ "$(cat "$tmp/out")" = "x
0" ] && ok "the timed-out tree is gone, the sandbox is not" || bad "after timeout: $(cat "$tmp/out" "$tmp/err")"

	# dispose: nothing left, through the API.
	x b true
	"$MSB" -c "$tmp/s.yaml" dispose --scope t --thread a >"$tmp/out" 2>&1 || bad "dispose failed: $(cat "$tmp/out")"
	[ "$(ours)" = 1 ] && ok "dispose removed its container only" || bad "after dispose: $(ours) containers"
	"$MSB" -c "$tmp/s.yaml" dispose --scope t --thread b >/dev/null 2>&1
	[ "$(ours)" = 0 ] && ok "dispose of the other leaves no container" || bad "containers left: $(ours)"

	# The state directory lost: the labels still find the container.
	x c true
	x d true
	rm -rf "$tmp/state-$ENGINE_KIND"
	"$MSB" -c "$tmp/s.yaml" dispose --scope t --thread c >"$tmp/out" 2>&1 || bad "dispose after the state was lost failed: $(tail -40 "$tmp/out")"
	[ "$(ours)" = 1 ] && ok "dispose sweeps by label what the state directory lost" || bad "after sweep: $(ours) containers; $(cat "$tmp/out")"
	"$MSB" -c "$tmp/s.yaml" dispose --scope t --thread d >"$tmp/out" 2>&1 || bad "dispose_scope after the state was lost failed: $(cat "$tmp/out")"
	[ "$(ours)" = 0 ] && ok "dispose_scope sweeps by label too" || bad "after sweep: $(ours)"

	# A stale container under the sandbox's name (its state lost while it ran) is replaced.
	x e sh -c 'echo old > /tmp/mark'
	rm -rf "$tmp/state-$ENGINE_KIND"
	x e sh -c 'cat /tmp/mark 2>/dev/null || echo fresh' && [ "$(cat "$tmp/out")" = fresh ] && [ "$(ours)" = 1 ] &&
		ok "a stale container of the name is replaced (409 handled)" || bad "stale name: $(cat "$tmp/out" "$tmp/err") $(ours)"
	# A foreign container under that name is refused, and left alone.
	name=$(api '/containers/json?all=1&filters=%7B%22label%22%3A%5B%22dev.msb.backend%22%5D%7D' | jq -r '.[0].Names[0]' | tr -d /)
	"$MSB" -c "$tmp/s.yaml" dispose --scope t --thread e >/dev/null 2>&1
	code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$ENGINE_SOCK" -X POST -H 'Content-Type: application/json' \
		-d "{\"Image\":\"$IMAGE\",\"Cmd\":[\"sleep\",\"600\"],\"HostConfig\":{\"NetworkMode\":\"none\"}}" \
		"http://d/v1.41/containers/create?name=$name")
	[ "$code" = 201 ] || bad "could not plant a foreign container ($code)"
	x e true && bad "served over a foreign container" || { grep -q "msb did not create" "$tmp/err" && ok "a foreign container of the name is refused" || bad "foreign: $(cat "$tmp/err")"; }
	[ "$(api "/containers/$name/json" | jq -r .Name)" = "/$name" ] && ok "the foreign container is left alone" || bad "the foreign container was touched"
	curl -s -o /dev/null --unix-socket "$ENGINE_SOCK" -X DELETE "http://d/v1.41/containers/$name?force=1"

	# Nothing else left behind: no volume, no network.
	[ "$(api /volumes | jq '.Volumes | length')" = "$vols_before" ] && ok "no volume left" || bad "volumes: $(api /volumes)"
	[ "$(api /networks | jq length)" = "$nets_before" ] && ok "no network left" || bad "networks: $(api /networks | jq -c '[.[].Name]')"
	# And no object of any kind carries a label of ours.
	lf='filters=%7B%22label%22%3A%5B%22dev.msb.backend%22%5D%7D'
	labelled="$(ours) $(api "/volumes?$lf" | jq '.Volumes | length') $(api "/networks?$lf" | jq length)"
	[ "$labelled" = "0 0 0" ] && ok "no container, volume or network labelled dev.msb.*" || bad "labelled objects left (containers volumes networks): $labelled"

	# The shipped example, pointed at this engine, passes msb check (docker-gvisor's entry
	# only on dockerd with runsc: it refuses to load elsewhere, Podman included, by design).
	sed -e "s|plugin: docker-gvisor|plugin: $B/plugins/docker/.libs/docker-gvisor.so|" \
		-e "s|plugin: docker\$|plugin: $B/plugins/docker/.libs/docker.so|" \
		-e "s|socket: .*|socket: $ENGINE_SOCK|" -e "s|image: .*|image: $IMAGE|" \
		-e "s|      memory: 512MiB.*|&\n      state_dir: $tmp/example-state|" \
		-e "s|      memory: 1GiB.*|&\n      state_dir: $tmp/example-g-state|" \
		"$S/conf/examples/docker.yaml" >"$tmp/example.yaml"
	if [ "$ENGINE_KIND" = podman ] || ! api /info | jq -e '.Runtimes.runsc' >/dev/null; then
		sed -i '/plugin: .*docker-gvisor.so/,/cpus: 1/d' "$tmp/example.yaml"
	fi
	if [ "$ENGINE_KIND" = podman ]; then
		# Without docker-gvisor, the spec that needs hardened_container is refused, naming why;
		# the other two are served by docker.
		"$MSB" -c "$tmp/example.yaml" check >"$tmp/out" 2>&1
		if [ $? != 0 ] && grep -q 'spec    untrusted        REFUSED: SandboxBackendNotPermitted' "$tmp/out" &&
			grep -q 'spec    shell            ok: docker' "$tmp/out" && grep -q 'spec    python           ok: docker' "$tmp/out"; then
			ok "conf/examples/docker.yaml on Podman: shell and python served, untrusted refused (no hardened rung)"
		else
			bad "example: $(cat "$tmp/out")"
		fi
	else
		"$MSB" -c "$tmp/example.yaml" check >"$tmp/out" 2>&1 && ok "conf/examples/docker.yaml passes msb check" ||
			bad "example: $(cat "$tmp/out")"
	fi

	# A backend that cannot reach its engine is refused at load, naming the socket.
	config "$tmp/nosock.yaml" "$B/plugins/docker/.libs/docker.so"
	sed -i "s|socket: .*|socket: $tmp/no.sock|" "$tmp/nosock.yaml"
	"$MSB" -c "$tmp/nosock.yaml" check >"$tmp/out" 2>&1 && bad "loaded without an engine" ||
		{ grep -q "no.sock cannot be reached" "$tmp/out" && ok "unreachable engine refused at load" || bad "no engine: $(cat "$tmp/out")"; }

	if [ "$ENGINE_KIND" = podman ]; then
		# Podman 4.3's compat API lists runsc in /info but ignores HostConfig.Runtime (the
		# container would run under its default runtime): docker-gvisor refuses to load on
		# Podman, naming it and why, and so no sandbox is ever made there.
		config "$tmp/g.yaml" "$B/plugins/docker/.libs/docker-gvisor.so"
		"$MSB" -c "$tmp/g.yaml" check >"$tmp/out" 2>&1 && bad "docker-gvisor loaded on Podman" ||
			{ grep -q "SandboxBackendNotPermitted" "$tmp/out" && grep -q "is Podman Engine.*ignores the runtime" "$tmp/out" &&
				ok "docker-gvisor on Podman refused at load: $(grep -o 'refused to load.*HostConfig.Runtime)' "$tmp/out" | head -1)" ||
				bad "podman gvisor: $(cat "$tmp/out")"; }
		"$MSB" -c "$tmp/g.yaml" exec shell --scope t --thread g -- true >"$tmp/out" 2>&1 && bad "podman served hardened_container" ||
			{ grep -q "SandboxBackendNotPermitted" "$tmp/out" && ok "docker-gvisor on Podman: exec refused too" || bad "podman gvisor exec: $(cat "$tmp/out")"; }
		[ "$(ours)" = 0 ] && ok "the refusal left no container" || bad "refused sandbox left $(ours)"
		return 0
	fi
	# docker-gvisor: the rung is verified, never trusted.
	config "$tmp/g.yaml" "$B/plugins/docker/.libs/docker-gvisor.so" "runtime: runc"
	"$MSB" -c "$tmp/g.yaml" check >"$tmp/out" 2>&1 && bad "docker-gvisor loaded with runc" ||
		{ grep -q "SandboxBackendNotPermitted.*not runsc" "$tmp/out" && ok "docker-gvisor refuses runc at load" || bad "runc: $(cat "$tmp/out")"; }
	config "$tmp/g.yaml" "$B/plugins/docker/.libs/docker-gvisor.so" "runtime: nosuch"
	"$MSB" -c "$tmp/g.yaml" check >"$tmp/out" 2>&1 && bad "docker-gvisor loaded without the runtime" ||
		{ grep -q "has no runtime 'nosuch'" "$tmp/out" && ok "docker-gvisor refuses a missing runtime" || bad "nosuch: $(cat "$tmp/out")"; }
	config "$tmp/g.yaml" "$B/plugins/docker/.libs/docker-gvisor.so" "runtime: fakegv"
	"$MSB" -c "$tmp/g.yaml" exec shell --scope t --thread g -- true >"$tmp/out" 2>&1 && bad "served hardened_container over runc named runsc" ||
		{ grep -q "does not see gVisor's kernel" "$tmp/out" && ok "runc named runsc is refused per sandbox" || bad "fakegv: $(cat "$tmp/out")"; }
	[ "$(ours)" = 0 ] && ok "the refused sandbox left no container" || bad "refused sandbox left $(ours)"
	if api /info | jq -e '.Runtimes.runsc' >/dev/null; then
		conformance docker-gvisor
		config "$tmp/g.yaml" "$B/plugins/docker/.libs/docker-gvisor.so"
		# docker-gvisor declares {closed} only: an allowlist spec is refused, naming why.
		allowlist "$tmp/g.yaml"
		"$MSB" -c "$tmp/g.yaml" exec web --scope t --thread g -- true >"$tmp/out" 2>&1 && bad "docker-gvisor served allowlist" ||
			{ grep -q "SandboxEgressNotEnforced.*docker-gvisor.*allowlist" "$tmp/out" && ok "docker-gvisor refuses allowlist: $(head -c 160 "$tmp/out")" || bad "gvisor allowlist: $(cat "$tmp/out")"; }
		[ "$(ours)" = 0 ] && ok "the refused allowlist left no container" || bad "refused allowlist left $(ours)"
		"$MSB" -c "$tmp/g.yaml" exec shell --scope t --thread g -- cat /proc/version >"$tmp/out" 2>&1
		grep -q "Linux version 4.4.0" "$tmp/out" && ok "docker-gvisor runs on gVisor's kernel" || bad "gvisor: $(cat "$tmp/out")"
		"$MSB" -c "$tmp/g.yaml" exec shell --scope t --thread g -- cat /proc/self/status >"$tmp/out" 2>&1
		grep -q '^CapEff:[[:space:]]*0000000000000000' "$tmp/out" && ok "docker-gvisor: no capability" || bad "gvisor caps: $(grep Cap "$tmp/out")"
		"$MSB" -c "$tmp/g.yaml" dispose --scope t --thread g >/dev/null 2>&1
		[ "$(ours)" = 0 ] && ok "docker-gvisor dispose leaves nothing" || bad "gvisor left $(ours)"
	else
		echo "SKIP: $ENGINE_KIND: no runsc runtime registered: docker-gvisor's conformance not run"
	fi
}

for e in ${MSB_DOCKER_ENGINES:-docker podman}; do
	engine_start "$e"
	rc=$?
	if [ $rc -eq 77 ]; then
		continue
	elif [ $rc -ne 0 ]; then
		bad "engine $e did not start"
		continue
	fi
	engine_suite
	engine_stop
	# Stopped, the engine leaves nothing: no process, mount (its netns are bind mounts in its
	# directory), directory or iptables rule.
	[ -z "$ENGINE_LEFT" ] && ok "stopped, the engine left nothing" || bad "left by the stopped engine: $ENGINE_LEFT"
done
echo "docker backend: $ran engine(s) run, $fails failure(s)"
[ $fails -eq 0 ] || exit 1
[ $ran -gt 0 ] || exit 77
exit 0
