#!/bin/sh
# hostile.sh — hostile guests against every agent-backed backend, through the msb command
# only, the way an attacker holding one conversation would try (issue 17). Each backend
# whose engine is missing here is skipped with the reason printed; the script skips (77)
# when none can run.
#
# Two sandboxes, A and B, of different scopes. A holds a secret file in its work directory
# and a daemon carrying a secret in its environment. From B (and so also against B's own
# agent and boundary helpers, and the host's processes), tests/hostile/probe tries every
# process it can see: memory (/proc/<pid>/mem both ways, process_vm_readv/writev, ptrace),
# fds (/proc/<pid>/fd, pidfd_getfd), environ, cwd/root, the other ptrace-guarded /proc
# files, and signals to A's daemon. Then B tries A's files and `meta` by host path and
# through /proc/*/{cwd,root}, A's environment by grep, A's SysV IPC, and A's daemon by its
# host pid. In each sandbox: capabilities in any set and no_new_privs, the host's
# /etc/shadow, a setuid-root and a file-capability binary (process, which shares the host's
# files), and filling the disk: ENOSPC inside at the configured `disk:`, nothing written
# on the host (its state dir, /var/tmp, /dev/shm, /tmp, /). After disposal: no process, no
# mount, no uid record, no sandbox directory left.
#
# The docker backend runs them on each engine: "docker" (dockerd, runc), "podman" (the docker
# plugin on Podman's API service) and "docker-gvisor" (dockerd with runsc), each on a private
# engine started here and stopped at exit (tests/lib/engines.sh), from a busybox image.
#
# MSB_HOSTILE_BACKENDS (default "process bwrap gvisor qemu docker docker-gvisor podman") picks
# the backends;
# MSB_TOP_BUILDDIR=<an older build> MSB_HOSTILE_PROBE=<this build's probe> MSB_HOSTILE_LEGACY=1
# runs the same guests against a build from before issue 17, where they must get through.
set -u
top=${MSB_TOP_BUILDDIR:?run from make check, or set MSB_TOP_BUILDDIR}
src=${MSB_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/engines.sh"
msb="$top/core/cli/msb"
agent="$top/sdk/agent/msb-agent"
probe=${MSB_HOSTILE_PROBE:-$top/tests/hostile/probe}
for f in "$msb" "$agent" "$probe"; do
	[ -x "$f" ] || { echo "SKIP: $f is not built"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the hostile guests need root (per-sandbox uids, cgroups, engines)"; exit 77; }

tmp=$(mktemp -d /tmp/msb-hostile.XXXXXX)
chmod 0700 "$tmp"
# The setuid and file-capability binaries must be outside /tmp, which a process sandbox
# replaces with its own: beside the probe, in the build tree, removed at exit.
suid="${probe%/*}/suid-id.$$"
fcap="${probe%/*}/fcap-cat.$$"
mark=$((860000000 + $$))
only=${MSB_HOSTILE_BACKENDS:-process bwrap gvisor qemu docker docker-gvisor podman}
image=msbhostile$$:latest
failures=0
ran=0
cleanup() {
	for cfg in "$tmp"/*.yaml; do
		[ -f "$cfg" ] || continue
		for s in hostile-a hostile-b hostile-fill; do
			"$msb" -c "$cfg" dispose --scope $s --thread t >/dev/null 2>&1
		done
	done
	engine_stop
	rm -f "$suid" "$fcap" /var/tmp/msb-hostile-$mark /dev/shm/msb-hostile-$mark \
		/tmp/msb-hostile-$mark /msb-hostile-$mark /msb/work/pwned-$mark
	rm -rf "$tmp"
	for d in /sys/fs/cgroup/msb-test/hostile-$$ /sys/fs/cgroup/*/msb-test/hostile-$$; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
	return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $be: $*" | head -c 1500; echo; failures=$((failures + 1)); }

# x SANDBOX ARGV…: exec in sandbox hostile-SANDBOX; stdout+stderr → $out, status → $st
x() {
	sb=$1
	shift
	out=$("$msb" -c "$cfg" exec shell --scope "hostile-$sb" --thread t --timeout 120 -- "$@" 2>&1)
	st=$?
}
# put SANDBOX LOCAL GUEST
put() { "$msb" -c "$cfg" put shell --scope "hostile-$1" --thread t "$2" "$3" >/dev/null 2>&1; }
# The live (not zombie) processes whose command line names any of the arguments, but this
# shell's own greps.
live_naming() {
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = $$ ] && continue
		for n in "$@"; do
			if grep -q -a -F -- "$n" "$p/cmdline" 2>/dev/null; then
				case $(cat "$p/comm" 2>/dev/null) in grep|cat) continue ;; esac
				grep -q '^State:.*Z' "$p/status" 2>/dev/null || echo "${p#/proc/}: $({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null)"
			fi
		done
	done
}
# A's daemon on the host: the process whose command line is exactly `sleep <mark>` (msb's
# own command line, which holds the marker too, must never be taken for it).
daemon_pid() {
	for p in /proc/[0-9]*; do
		[ "$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null)" = "sleep $mark " ] && { echo "${p#/proc/}"; return; }
	done
}
reached() { printf '%s\n' "$out" | grep REACHED; }

# The plugin file of a backend (the docker plugin serves "podman" too).
plugin_of() {
	case $1 in
	docker | podman) echo "$top/plugins/docker/.libs/docker.so" ;;
	docker-gvisor) echo "$top/plugins/docker/.libs/docker-gvisor.so" ;;
	*) echo "$top/plugins/$1/.libs/$1.so" ;;
	esac
}
# The engine a docker backend runs on ("" for the others).
engine_of() {
	case $1 in
	docker | docker-gvisor) echo docker ;;
	podman) echo podman ;;
	esac
}
# A static busybox for the engines' test image.
busybox=
for c in "${MSB_QEMU_GUEST:-/nonexistent}/busybox" "$top/plugins/qemu/guest/busybox" /bin/busybox; do
	if [ -x "$c" ] && file "$c" 2>/dev/null | grep -q 'statically linked'; then
		busybox=$c
		break
	fi
done

write_config() {
	plugin=$(plugin_of "$be")
	state="$tmp/$be-state"
	cfg="$tmp/$be.yaml"
	case $be in
	process) extra="" ;;
	bwrap) extra="tmp_size: 16MiB
      memory: 256MiB
      cgroup_parent: msb-test/hostile-$$" ;;
	gvisor) extra="tmp_size: 16MiB" ;;
	docker | docker-gvisor | podman) extra="socket: $ENGINE_SOCK
      image: $image
      tmp_size: 16MiB" ;;
	qemu) extra="init: $top/plugins/qemu/msb-qemu-init
      relay: $top/plugins/qemu/msb-qemu-relay
      guest_dir: ${MSB_QEMU_GUEST:-$top/plugins/qemu/guest}
      run_code: [sh]" ;;
	esac
	# The ceiling the fill meets (qemu's is its guest's memory); left out against a build
	# from before the key existed (to see each attack succeed there).
	disk="disk: 32MiB"
	[ "$be" = qemu ] || [ -n "${MSB_HOSTILE_LEGACY:-}" ] && disk=""
	cat >"$cfg" <<YAML
version: 1
router: {min_isolation: none}
backends:
  - plugin: $plugin
    config:
      state_dir: $state
      agent: $agent
      timeout: 120s
      $disk
      $extra
specs:
  shell:
    requires: [exec, files_in, files_out, files_list, files_delete]
YAML
}

# Why a backend cannot run here ("" when it can).
why_not() {
	[ -f "$(plugin_of "$be")" ] || { echo "plugin not built"; return; }
	case $be in
	docker | docker-gvisor | podman)
		[ -n "$busybox" ] || { echo "no static busybox for the engine's test image (MSB_QEMU_GUEST)"; return; }
		command -v jq >/dev/null || { echo "jq is not installed"; return; }
		;;
	esac
	case $be in
	bwrap) command -v bwrap >/dev/null || echo "bubblewrap is not installed" ;;
	gvisor) [ -x /usr/bin/runsc ] || echo "runsc is not installed" ;;
	qemu) command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86 is not installed"; return; }
		[ -r "${MSB_QEMU_GUEST:-$top/plugins/qemu/guest}/vmlinuz" ] || echo "no guest kernel (make qemu-guest)" ;;
	esac
}

# Start the engine $be runs on (stopping another first) and import the test image, unless
# it runs already; on failure, why says why.
ensure_engine() {
	kind=$(engine_of "$be")
	[ -n "$kind" ] || return 0
	[ "$ENGINE_KIND" = "$kind" ] && [ -n "$ENGINE_SOCK" ] && return 0
	if [ -n "$ENGINE_SOCK" ]; then
		engine_stop
		[ -z "$ENGINE_LEFT" ] || fail "left by the stopped engine: $ENGINE_LEFT"
	fi
	if ! engine_start "$kind" >"$tmp/engine.out" 2>&1; then
		why="$(sed 's/^SKIP: //' "$tmp/engine.out" | tr '\n' ' ')"
		ENGINE_KIND=
		return 1
	fi
	if ! engine_import_image "$image" "$busybox" >"$tmp/engine.out" 2>&1; then
		fail "the test image could not be imported into $kind: $(cat "$tmp/engine.out")"
		why="no test image"
		engine_stop
		ENGINE_KIND=
		return 1
	fi
	# docker-gvisor needs runsc registered with the engine (engines.sh does where it is installed).
	if [ "$be" = docker-gvisor ] && ! curl -s --max-time 30 --unix-socket "$ENGINE_SOCK" http://d/info |
		jq -e '.Runtimes.runsc' >/dev/null; then
		why="the engine has no runsc runtime (runsc is not installed)"
		return 1
	fi
	return 0
}

attack() {
	# A: a secret in its work directory and a daemon holding one in its environment.
	x a sh -c "echo A-SECRET-$mark > secret && SECRET_ENV=A-ENV-$mark setsid sleep $mark </dev/null >/dev/null 2>&1 & sleep 1; id -u"
	[ "$st" = 0 ] || { fail "sandbox A could not be started: $out"; return; }
	uid_a=$out
	# The spec's work_dir is where the command runs and where its files are (issue 19).
	x a sh -c 'pwd; cat /msb/work/secret'
	[ "$out" = "/msb/work
A-SECRET-$mark" ] || fail "the command does not run in the spec's work_dir /msb/work: $out"
	x b sh -c 'id -u'
	[ "$st" = 0 ] || { fail "sandbox B could not be started: $out"; return; }
	uid_b=$out
	if [ "$be" = process ]; then
		[ "$uid_a" != 0 ] && [ "$uid_b" != 0 ] || fail "a sandbox runs as root (A uid $uid_a, B uid $uid_b)"
		[ "$uid_a" != "$uid_b" ] || fail "A and B share uid $uid_a"
	fi
	for s in a b; do
		put $s "$probe" probe || { fail "put the probe into $s"; return; }
		x $s chmod 0755 probe
	done

	# B against everything it can see: its own agent and helpers, A's daemon, the host.
	x b ./probe scan "$mark"
	if [ "$be" = gvisor ] || [ "$be" = docker-gvisor ]; then
		# gVisor's sentry (runsc 20221219) leaves a non-dumpable task's read-only /proc
		# metadata to its uid: what that reveals is printed, never failed on (see
		# doc/threat-model.md); its environment must hold nothing but the bundle's PATH (and
		# the HOME runsc adds; under Docker, the HOSTNAME the engine sets).
		meta='(fd link|environ|maps|auxv|io|fdinfo/[0-9]+|smaps|numa_maps|stack|syscall|personality) read$'
		gap=$(reached | grep -E " \.?msb-agent $meta")
		[ -n "$gap" ] && echo "$be: known gap, read-only metadata of the agent: $(printf '%s\n' "$gap" | sed 's/.*msb-agent //' | sort -u | tr '\n' ',')"
		out=$(printf '%s\n' "$out" | grep -v -E " \.?msb-agent $meta")
		x b sh -c 'for p in /proc/[0-9]*; do case $(cat $p/comm 2>/dev/null) in *msb-agent) tr "\0" "\n" < $p/environ 2>/dev/null;; esac; done | sort -u'
		extra_env=$(printf '%s\n' "$out" | grep -v -e '^PATH=' -e '^HOME=' -e '^HOSTNAME=sandbox$' -e '^$')
		[ -z "$extra_env" ] || fail "the agent's environment holds more than PATH: $extra_env"
		x b ./probe scan "$mark"
		out=$(printf '%s\n' "$out" | grep -v -E " \.?msb-agent $meta")
	fi
	reached >/dev/null && fail "B reached a process it must not: $(reached | head -20)"
	printf '%s\n' "$out" | grep -q "probe: [0-9]* targets" || fail "the probe did not run in B: $out"
	echo "$be: B's probe: $(printf '%s\n' "$out" | grep 'probe:')"

	# B against A's files and environment, by host path and through /proc.
	x b sh -c "cat $state/*/work/secret $state/*/meta /proc/*/cwd/secret /proc/*/root/msb/work/secret \
		/proc/*/root$state/*/work/secret 2>/dev/null; grep -a -h -o 'A-ENV-[0-9]*' /proc/*/environ 2>/dev/null; \
		ls $state/ 2>/dev/null; for d in $state/*/work; do echo pwned > \$d/pwned-$mark 2>/dev/null; done; \
		for p in /proc/[0-9]*; do [ \"\$(tr '\\0' ' ' < \$p/cmdline 2>/dev/null)\" = 'sleep $mark ' ] || continue; \
		echo pwned > \$p/cwd/pwned-$mark 2>/dev/null; echo pwned > \$p/root/msb/work/pwned-$mark 2>/dev/null; done; true"
	case $out in *A-SECRET-$mark*|*A-ENV-$mark*|*scope*|*sk-*) fail "B read A's secrets or meta: $out" ;; esac
	# And on the host: each meta is owner-only, and so are process's state and sandbox
	# directories (bwrap adds search permission to them for bwrap itself, never read).
	dirs=
	[ "$be" = process ] && dirs="$state $(echo "$state"/sk-*)"
	open_up=$(find $dirs "$state"/sk-*/meta -maxdepth 0 -perm /077 2>/dev/null)
	[ -z "$open_up" ] || fail "readable by others on the host: $open_up"
	x a sh -c "ls; ls $state/*/work 2>/dev/null"
	case $out in *pwned*) fail "B wrote into A's work directory: $out" ;; esac

	# B against A's daemon by its host pid (the test finds it on the host).
	hostpid=$(daemon_pid)
	if [ -n "$hostpid" ]; then
		x b sh -c "kill -0 $hostpid 2>/dev/null && echo signalled; cat /proc/$hostpid/environ 2>/dev/null"
		case $out in *signalled*|*A-ENV*) fail "B reached A's daemon (host pid $hostpid): $out" ;; esac
	fi
	x a sh -c "for p in /proc/[0-9]*; do [ \"\$(tr '\\0' ' ' < \$p/cmdline 2>/dev/null)\" = 'sleep $mark ' ] && echo alive; done; true"
	case $out in *alive*) ;; *) fail "A's daemon did not survive B's attempts: $out" ;; esac

	# B against A's SysV IPC (where the guest has the tools).
	x a sh -c 'command -v ipcmk >/dev/null && id=$(ipcmk -M 4096 -p 0666 | grep -o "[0-9]*$") &&
		ipcs -m | awk -v id="$id" "\$2 == id { print \$1 }"'
	if [ "$st" = 0 ] && [ -n "$out" ]; then
		shmkey=$out
		x b sh -c 'ipcs -m 2>/dev/null'
		case $out in *"$shmkey"*) fail "B sees A's SysV shared memory (key $shmkey)" ;; esac
	fi

	# Privilege, in A: no capability in any set, no_new_privs, not the host's shadow.
	x a ./probe caps
	reached >/dev/null && fail "A holds privilege: $(reached)"
	shadow=$(head -1 /etc/shadow 2>/dev/null)
	x a sh -c 'cat /etc/shadow 2>/dev/null | head -1'
	[ -n "$shadow" ] && [ "$out" = "$shadow" ] && fail "A read the host's /etc/shadow"
	if [ "$be" = process ]; then
		cp /usr/bin/id "$suid" && chmod 4755 "$suid"
		x a "$suid" -u
		[ "$st" = 0 ] && [ "$out" = 0 ] && fail "a setuid-root binary ran as root in A"
		if command -v setcap >/dev/null; then
			cp /bin/cat "$fcap" && setcap cap_dac_read_search+ep "$fcap" 2>/dev/null &&
				x a "$fcap" /etc/shadow && [ "$st" = 0 ] && fail "a file-capability binary read /etc/shadow in A"
		fi
	fi

	# The disk: ENOSPC inside at the ceiling, and nothing on the host.
	before=$(du -sk "$state" | cut -f1)
	x a sh -c "dd if=/dev/zero of=fill bs=1M count=64 2>&1; ls -l fill; \
		dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; \
		for d in /var/tmp /dev/shm /tmp /; do echo x > \$d/msb-hostile-$mark 2>/dev/null; done; true"
	if [ "$be" != qemu ]; then
		n=$(printf '%s\n' "$out" | grep -c "No space left on device")
		[ "$n" -ge 2 ] || fail "no ENOSPC in the work directory and /tmp at the ceiling: $out"
	fi
	after=$(du -sk "$state" | cut -f1)
	[ $((after - before)) -lt 4096 ] || fail "the guest's writes reached the host's disk: $state grew from ${before}k to ${after}k"
	x a rm -f fill /tmp/fill
	for f in /var/tmp /dev/shm /tmp /; do
		[ -e "$f/msb-hostile-$mark" ] && fail "the guest wrote $f/msb-hostile-$mark on the host"
	done

	# Disposal leaves nothing: no process, mount, uid record, sandbox directory.
	for s in a b; do
		"$msb" -c "$cfg" dispose --scope hostile-$s --thread t >/dev/null 2>&1 || fail "dispose $s"
	done
	# (A zombie holds nothing and is its reaper's to collect: a live process is a leak.)
	for i in 1 2 3 4 5 6 7 8 9 10; do
		left=$(live_naming "$state" "sleep $mark")
		[ -z "$left" ] && break
		sleep 0.5
	done
	[ -z "$left" ] || fail "processes left after disposal: $left"
	grep -F "$state" /proc/self/mountinfo && fail "mounts left under $state"
	if [ -n "$(engine_of "$be")" ]; then
		# Through the engine's API: no container, volume or network of msb's left.
		lf='filters=%7B%22label%22%3A%5B%22dev.msb.backend%22%5D%7D'
		left=$(for o in "containers/json?all=1&$lf" "volumes?$lf" "networks?$lf"; do
			curl -s --max-time 30 --unix-socket "$ENGINE_SOCK" "http://d/$o" | jq -c 'if type == "object" then .Volumes else . end | length'
		done | tr '\n' ' ')
		[ "$left" = "0 0 0 " ] || fail "the engine still holds msb's containers/volumes/networks: $left"
	fi
	ls -d "$state"/sk-* 2>/dev/null && fail "sandbox directories left"
	if [ "$be" = process ]; then
		grep -l -F "$state/" /run/msb/process-uids/* 2>/dev/null && fail "uid records left"
		for u in $uid_a $uid_b; do
			ps -e -o uid=,stat= | awk -v u="$u" '$1 == u && $2 !~ /^Z/' | grep -q . &&
				fail "a process still runs as uid $u"
		done
	fi
	return 0
}

# The new keys: each wrong value refused at load, naming the key (disk on the three
# backends that have it, the uid keys on process).
refusals() {
	[ -f "$top/plugins/$be/.libs/$be.so" ] || return 0
	[ "$be" = gvisor ] && [ ! -x /usr/bin/runsc ] && return 0
	bads="disk: 0|disk: 512KiB|disk: lots"
	[ "$be" = process ] && bads="$bads|uid_range: 5-3|uid_range: 0-10|uid_range: 7|uid: host
      uid_range: 2000000-2000009|gid: 5|uid: nobody"
	IFS='|'
	set -- $bads
	unset IFS
	for bad in "$@"; do
		cat >"$tmp/bad.yaml" <<YAML
version: 1
router: {min_isolation: none}
backends:
  - plugin: $top/plugins/$be/.libs/$be.so
    config:
      state_dir: $tmp/bad-state
      agent: $agent
      $bad
specs:
  shell: {}
YAML
		out=$("$msb" -c "$tmp/bad.yaml" check 2>&1)
		st=$?
		key=${bad%%:*}
		[ "$key" = uid ] && case $bad in *uid_range*) key=uid_range ;; esac
		[ "$st" != 0 ] && printf '%s' "$out" | grep -q "$key" ||
			fail "config '$bad' was not refused naming $key: $out"
	done
}

# Per-sandbox uids on process: each its own, none left for a third past the range (refused,
# naming it), given back at disposal and taken again, and a record a crashed msb left
# (naming a sandbox directory that is gone) taken over. A range of this run's own.
uids() {
	be=process
	[ -f "$top/plugins/process/.libs/process.so" ] || return 0
	base=$((2900000 + ($$ % 9000) * 10))
	cfg="$tmp/uids.yaml"
	state="$tmp/uids-state"
	cat >"$cfg" <<YAML
version: 1
router: {min_isolation: none}
backends:
  - plugin: $top/plugins/process/.libs/process.so
    config: {state_dir: $state, agent: $agent, uid_range: $base-$((base + 1))}
specs:
  shell: {}
YAML
	x a id -u; ua=$out
	x b id -u; ub=$out
	[ "$ua" = $base ] && [ "$ub" = $((base + 1)) ] || fail "uids from $base: A $ua, B $ub"
	x fill id -u
	[ "$st" != 0 ] && case $out in *"no uid left"*"uid_range $base-$((base + 1))"*) true ;; *) false ;; esac ||
		fail "a third sandbox past a range of two was not refused naming it: $st $out"
	"$msb" -c "$cfg" dispose --scope hostile-a --thread t >/dev/null 2>&1
	[ -e /run/msb/process-uids/$base ] && fail "uid $base still recorded after disposal"
	x fill id -u
	[ "$out" = $base ] || fail "uid $base was not taken again after disposal: $out"
	"$msb" -c "$cfg" dispose --scope hostile-b --thread t >/dev/null 2>&1
	"$msb" -c "$cfg" dispose --scope hostile-fill --thread t >/dev/null 2>&1
	# A crash's leftover: a record naming a directory that is gone.
	printf '%s\n' "$state/sk-gone-$$" >/run/msb/process-uids/$base
	x a id -u
	[ "$out" = $base ] || fail "a crash-left record of uid $base was not taken over: $out"
	"$msb" -c "$cfg" dispose --scope hostile-a --thread t >/dev/null 2>&1
	for u in $base $((base + 1)); do
		[ -e /run/msb/process-uids/$u ] && fail "uid $u still recorded at the end" && rm -f /run/msb/process-uids/$u
	done
	return 0
}

for be in process bwrap gvisor docker; do
	case " $only " in *" $be "*) refusals ;; esac
done
case " $only " in *" process "*) uids ;; esac

for be in $only; do
	why=$(why_not)
	[ -n "$why" ] || ensure_engine
	if [ -n "$why" ]; then
		echo "skip: $be: $why"
		continue
	fi
	write_config
	ran=$((ran + 1))
	echo "== $be"
	attack
done
if [ -n "$ENGINE_SOCK" ]; then
	be=$ENGINE_KIND
	engine_stop
	[ -z "$ENGINE_LEFT" ] || fail "left by the stopped engine: $ENGINE_LEFT"
fi
[ "$ran" -gt 0 ] || { echo "SKIP: no backend can run here"; exit 77; }
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all hostile guests were stopped"
