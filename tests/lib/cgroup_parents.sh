# cgroup_parents.sh — sourced by shell tests that run a backend with its default cgroup
# parent (msb/<backend> under every hierarchy). Disposal removes each sandbox's own cgroup;
# the parents are the backend's, made on first use and kept for the next sandbox. A test
# must leave the machine as it found it, so: note which msb* parents exist before, and on
# exit remove the ones the test made (rmdir: only ever an empty cgroup, never a live one).
msb_cg_list() {
	find /sys/fs/cgroup -mindepth 2 -maxdepth 4 -type d -path '/sys/fs/cgroup/*/msb*' 2>/dev/null | sort
}
msb_cg_before=$(msb_cg_list)
msb_cg_clean() {
	msb_cg_list | sort -r | while read -r dir; do
		printf '%s\n' "$msb_cg_before" | grep -qxF "$dir" || rmdir "$dir" 2>/dev/null || true
	done
}
