/*
 * plugins/gvisor/gvisor_bundle.c — the OCI bundle of one sandbox: runtime spec, written as
 * JSON by hand (a dozen fields, no JSON library needed, every string escaped).
 *
 * What each piece is for:
 *  - root: the image's root directory, read-only — a command cannot change the image any
 *    other sandbox runs from; for the built-in `host` image, a root of the sandbox's own
 *    with only the host's programs, libraries and a few /etc files bound in (host_image);
 *  - the work directory: a tmpfs of `disk:` bytes at the spec's work_dir, inside the
 *    sentry's memory (charged to the sandbox's cgroup) — not a host directory, so a guest
 *    that fills it gets ENOSPC and the host's disk is never written through it, and no
 *    host directory at all is writable from inside;
 *  - the channel directory: the agent's socket, reaching the host through runsc's
 *    --host-uds=create (the sandbox may create sockets on its bind mounts, never connect to
 *    the host's); it holds nothing but that socket;
 *  - under `egress: allowlist`, the proxy's socket directory <dir>/egress, read-only at its
 *    own path (the forwarder connects to px there: runsc runs with --host-uds=all then, and
 *    the agent's forwarder relays bytes itself, as a Sentry socket is no host descriptor to
 *    pass), and its hosts file as /etc/hosts (only the allowed names, no resolver);
 *  - /tmp: a tmpfs of tmp_size, inside the sandbox's memory;
 *  - namespaces: a new network namespace with --network=none is `egress: closed` — loopback
 *    inside gVisor's own netstack and no device at all;
 *  - no cgroupsPath and no resources: the limits are the cgroup msb makes and starts runsc
 *    inside (gvisor_runsc.c), so runsc has nothing to create, join or remove.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gvisor_internal.h"

#define GVISOR_ID_CAPS "\"CAP_CHOWN\", \"CAP_SETUID\", \"CAP_SETGID\", \"CAP_SETPCAP\""

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void bind_mount(FILE *f, const char *dest, const char *source, bool rw)
{
	fputs(",\n    {\"destination\": ", f);
	json_str(f, dest);
	fputs(", \"type\": \"bind\", \"source\": ", f);
	json_str(f, source);
	fprintf(f, ", \"options\": [\"rbind\", \"%s\", \"nosuid\", \"nodev\"]}", rw ? "rw" : "ro");
}

/*
 * The built-in `host` image, as bwrap builds it: an empty root of the sandbox's own
 * (<dir>/rootfs, read-only) with the host paths msb/image.h lists bound into it. The
 * container's root user would read whatever the host's root can, so what is not bound is
 * what keeps it out.
 *
 * A small regular file on that list (/etc/passwd, /etc/ld.so.cache, …) is copied into the
 * root instead of bound: each bind is a mount gVisor sets up with a gofer connection of its
 * own, ~2 ms of every start here (five of them: ~10 ms, A/B on `runsc run`), where copying
 * 60 KB costs a fraction of one. The copy shows the same bytes, read-only like the rest of
 * the root; what it does not show is a change the host makes later.
 */
#define HOST_FILE_COPY_MAX (1024 * 1024)

/* Copy regular file `src` (opened without following a link) to new file `dest`. */
static bool copy_file(const char *src, const char *dest)
{
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int out = in < 0 ? -1 : open(dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	bool ok = out >= 0;
	char buf[65536];
	for (ssize_t n; ok && (n = read(in, buf, sizeof buf)) != 0;) {
		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0;
		for (ssize_t off = 0; ok && off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			ok = w > 0 || (w < 0 && errno == EINTR);
			off += w > 0 ? w : 0;
		}
	}
	int e = errno;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0)
		ok = false;
	errno = e;
	return ok;
}

/* Recreate `src` under `rootfs`: a link as the same link, a small file as a copy, else a
 * mount point. True: bind it. */
static bool host_entry(const char *rootfs, const char *src, bool *bind)
{
	struct stat st;
	char dest[4300];
	*bind = false;
	if (lstat(src, &st) != 0)
		return true; /* not on this host: nothing to show */
	snprintf(dest, sizeof dest, "%s%s", rootfs, src);
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlink(src, target, sizeof target - 1);
		if (n <= 0)
			return false;
		target[n] = '\0';
		return symlink(target, dest) == 0 || errno == EEXIST;
	}
	if (S_ISREG(st.st_mode) && st.st_size <= HOST_FILE_COPY_MAX)
		return copy_file(src, dest);
	*bind = S_ISDIR(st.st_mode) || S_ISREG(st.st_mode);
	if (S_ISDIR(st.st_mode))
		return mkdir(dest, 0755) == 0 || errno == EEXIST;
	if (S_ISREG(st.st_mode)) {
		int fd = open(dest, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
		return fd >= 0;
	}
	return true;
}

/* mkdir -p `dir` under `rootfs`, for a mount point of the spec's work dir. */
static bool make_dirs(const char *rootfs, const char *dir)
{
	char path[4300];
	snprintf(path, sizeof path, "%s%s", rootfs, dir);
	for (char *p = path + strlen(rootfs) + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(path, 0755) != 0 && errno != EEXIST)
				return false;
			*p = c;
			if (!c)
				return true;
		}
	}
}

/*
 * msb-statx.so beside the agent binary, into `out`; false when there is none. It goes into
 * a root of the host's image only (it is built for the host's C library): this runsc
 * refuses statx's AT_NO_AUTOMOUNT, which GNU ls -l and stat pass, and the agent preloads
 * the shim that drops it (sdk/agent/statx_fix.c).
 */
static bool statx_shim(const msb_driver_box *box, char *out, size_t n)
{
	snprintf(out, n, "%s", box->config->agent_path);
	char *slash = strrchr(out, '/');
	size_t at = slash ? (size_t)(slash + 1 - out) : 0;
	snprintf(out + at, n - at, "msb-statx.so");
	return access(out, R_OK) == 0;
}

/* Build <dir>/rootfs and emit the host image's binds; false (errno set) on failure. */
static bool host_image(FILE *f, const msb_driver_box *box, const char *rootfs)
{
	if (mkdir(rootfs, 0755) != 0 && errno != EEXIST)
		return false;
	char etc[4400];
	snprintf(etc, sizeof etc, "%s/etc", rootfs);
	if (mkdir(etc, 0755) != 0 && errno != EEXIST)
		return false;
	static const char *const points[] = { "/proc", "/dev", "/tmp", "/sys", GVISOR_CHANNEL_DIR };
	for (size_t i = 0; i < sizeof points / sizeof *points; i++)
		if (!make_dirs(rootfs, points[i]))
			return false;
	if (!make_dirs(rootfs, box->spec->work_dir))
		return false;
	char agent[4400];
	if (box->egress_socket) {
		snprintf(agent, sizeof agent, "%s", box->egress_socket);
		*strrchr(agent, '/') = '\0';
		if (!make_dirs(rootfs, agent))
			return false;
		snprintf(agent, sizeof agent, "%s/etc/hosts", rootfs);
		int hf = open(agent, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (hf < 0)
			return false;
		close(hf);
	}
	snprintf(agent, sizeof agent, "%s%s", rootfs, GVISOR_AGENT_PATH);
	int fd = open(agent, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	if (fd < 0)
		return false;
	close(fd);
	/* The statx shim's mount point, when there is a shim to mount (statx_shim). */
	char shim[4200];
	if (statx_shim(box, shim, sizeof shim)) {
		snprintf(agent, sizeof agent, "%s%s", rootfs, GVISOR_STATX_SHIM_PATH);
		fd = open(agent, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return false;
		close(fd);
	}
	for (const char *const *p = msb_image_host_paths(); *p; p++) {
		bool bind;
		if (!host_entry(rootfs, *p, &bind))
			return false;
		if (bind)
			bind_mount(f, *p, *p, false);
	}
	return true;
}

void gvisor_cgroup_leaf(const msb_driver_box *box, char out[64])
{
	uint32_t h = 2166136261u; /* FNV-1a: a name, not a secret */
	for (const unsigned char *p = (const unsigned char *)box->config->state_dir; *p; p++)
		h = (h ^ *p) * 16777619u;
	snprintf(out, 64, "%s-%08x", box->name, h);
}

/* <dir>/egress at its own path, and its hosts file as the guest's /etc/hosts. */
static void egress_mounts(FILE *f, const msb_driver_box *box)
{
	char dir[4200], hosts[4300];
	snprintf(dir, sizeof dir, "%s", box->egress_socket);
	*strrchr(dir, '/') = '\0';
	snprintf(hosts, sizeof hosts, "%s/" MSB_EGRESS_HOSTS_LEAF, dir);
	bind_mount(f, dir, dir, false);
	bind_mount(f, "/etc/hosts", hosts, false);
}

msb_errc gvisor_bundle_write(const gvisor_ctx *ctx, const msb_driver_box *box, const char *root,
			     const char *chan_dir, msb_error *err)
{
	char **argv = NULL;
	msb_errc rc = msb_driver_agent_argv(box, "--listen", GVISOR_CHANNEL_DIR "/agent.sock",
					    box->spec->work_dir, NULL, -1, &argv, err);
	if (rc != MSB_OK)
		return rc;
	char path[4200];
	snprintf(path, sizeof path, "%s/bundle", box->dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		free(argv);
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: mkdir %s", path);
	}
	snprintf(path, sizeof path, "%s/bundle/config.json", box->dir);
	FILE *f = fopen(path, "we");
	if (!f) {
		free(argv);
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: writing %s", path);
	}
	fputs("{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {\n    \"terminal\": false,\n"
	      "    \"user\": {\"uid\": 0, \"gid\": 0},\n", f);
	/* An image's User: what the agent needs to hand the work directory to it and drop to it
	 * (msb-agent --uid); it drops every capability before it serves (harden.c). */
	if (box->has_image_user)
		fputs("    \"capabilities\": {\"bounding\": [" GVISOR_ID_CAPS "], \"effective\": ["
		      GVISOR_ID_CAPS "], \"permitted\": [" GVISOR_ID_CAPS "]},\n", f);
	fputs("    \"args\": [", f);
	json_str(f, GVISOR_AGENT_PATH);
	for (char **a = argv + 1; *a; a++) {
		fputs(", ", f);
		json_str(f, *a);
	}
	if (box->egress_socket)
		fputs(", \"--egress-transport\", \"relay\"", f);
	char rootfs[4300];
	snprintf(rootfs, sizeof rootfs, "%s/rootfs", box->dir);
	fputs("],\n    \"env\": [\"PATH=/usr/local/bin:/usr/bin:/bin\"],\n    \"cwd\": \"/\",\n"
	      "    \"noNewPrivileges\": true\n  },\n  \"root\": {\"path\": ", f);
	json_str(f, root ? root : rootfs);
	fputs(", \"readonly\": true},\n  \"hostname\": \"msb\",\n  \"mounts\": [\n"
	      "    {\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"}", f);
	fprintf(f, ",\n    {\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": \"tmpfs\", "
		"\"options\": [\"nosuid\", \"nodev\", \"size=%llu\"]}", (unsigned long long)ctx->tmp_size);
	fputs(",\n    {\"destination\": ", f);
	json_str(f, box->spec->work_dir);
	fprintf(f, ", \"type\": \"tmpfs\", \"source\": \"tmpfs\", "
		"\"options\": [\"nosuid\", \"nodev\", \"mode=0700\", \"size=%llu\"]}",
		(unsigned long long)ctx->disk);
	bind_mount(f, GVISOR_CHANNEL_DIR, chan_dir, true);
	bind_mount(f, GVISOR_AGENT_PATH, box->config->agent_path, false);
	if (box->egress_socket)
		egress_mounts(f, box);
	char shim[4200];
	if (!root && statx_shim(box, shim, sizeof shim))
		bind_mount(f, GVISOR_STATX_SHIM_PATH, shim, false);
	if (!root && !host_image(f, box, rootfs)) {
		int e = errno;
		fclose(f);
		free(argv);
		return msb_error_set_errno(err, MSB_E_BACKEND, e, "backend gvisor: sandbox %s: "
					   "building the host image's root in %s", box->name, rootfs);
	}
	fputs("\n  ],\n  \"linux\": {\n    \"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\"}, "
	      "{\"type\": \"ipc\"}, {\"type\": \"uts\"}, {\"type\": \"mount\"}]\n  }\n}\n", f);
	free(argv);
	if (fclose(f) != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: writing %s", path);
	return MSB_OK;
}
