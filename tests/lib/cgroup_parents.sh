# cgroup_parents.sh — sourced by shell tests that run a backend with its default cgroup
# parent (msb/<backend> under every hierarchy). Disposal removes each sandbox's own cgroup;
# the parents are the backend's, made on first use and kept for the next sandbox. A test
# must leave the machine as it found it, so: note which msb* parents exist before, and on
# exit remove the ones the test made (rmdir: only ever an empty cgroup, never a live one).
# Only those parents: msb and msb/<backend>, in every hierarchy (v1 and a hybrid's v2 one
# level down, a pure v2 mount at the top). Never below them, and never another test's tree
# (msb-test/…, msb-bench/…): an empty cgroup there may be a spare another process is about
# to start a sandbox in (msb/cgroup.h, "Made ahead").
msb_cg_list() {
	for d in /sys/fs/cgroup/msb /sys/fs/cgroup/msb/* /sys/fs/cgroup/*/msb /sys/fs/cgroup/*/msb/*; do
		[ -d "$d" ] || continue
		case ${d##*/} in spare-*|sk-*|sb-*) continue ;; esac
		printf '%s\n' "$d"
	done | sort -u
}
msb_cg_before=$(msb_cg_list)
msb_cg_clean() {
	msb_cg_list | sort -r | while read -r dir; do
		printf '%s\n' "$msb_cg_before" | grep -qxF "$dir" || rmdir "$dir" 2>/dev/null || true
	done
}
