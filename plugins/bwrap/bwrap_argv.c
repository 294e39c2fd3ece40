/*
 * bwrap_argv.c — the bubblewrap command line, flag by flag, each with what it protects.
 *
 * The root is an empty tmpfs that bwrap builds; the image's top-level entries are bound into
 * it read-only, the sandbox's own pieces (work dir, socket dir, agent, /tmp, /proc, /dev)
 * on top, and the root itself is remounted read-only last, so the only writable places are
 * the work dir, the socket dir and the private /tmp.
 */
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msb/image.h>

#include "bwrap_argv.h"

typedef struct argv_builder {
	char **items;
	size_t len, cap;
	bool failed;
} argv_builder;

static void push(argv_builder *b, const char *s)
{
	if (b->failed)
		return;
	if (b->len + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char **p = realloc(b->items, cap * sizeof *p);
		if (!p) {
			b->failed = true;
			return;
		}
		b->items = p;
		b->cap = cap;
	}
	char *copy = strdup(s);
	if (!copy) {
		b->failed = true;
		return;
	}
	b->items[b->len++] = copy;
	b->items[b->len] = NULL;
}

static void push2(argv_builder *b, const char *a, const char *c)
{
	push(b, a);
	push(b, c);
}

static void push3(argv_builder *b, const char *a, const char *c, const char *d)
{
	push(b, a);
	push(b, c);
	push(b, d);
}

static void push_fd(argv_builder *b, const char *flag, int fd, const char *dest)
{
	char num[16];
	snprintf(num, sizeof num, "%d", fd);
	push3(b, flag, num, dest);
}

/*
 * One top-level entry of an image: a symlink is recreated as one (a usr-merged /bin ->
 * usr/bin must stay a link, or ld.so paths break), a directory or file is bound read-only.
 */
static void push_entry(argv_builder *b, const char *src, const char *dest)
{
	struct stat st;
	if (lstat(src, &st) != 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(src, target, sizeof target - 1);
		if (n <= 0)
			return;
		target[n] = '\0';
		push3(b, "--symlink", target, dest);
	} else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
		push3(b, "--ro-bind", src, dest);
	}
}

/* The built-in `host` image: the host paths msb/image.h lists, each read-only, under an /etc
 * that holds nothing else. */
static void push_host_image(argv_builder *b)
{
	push2(b, "--dir", "/etc");
	for (const char *const *p = msb_image_host_paths(); *p; p++)
		push_entry(b, *p, *p);
}

/* The places this file mounts itself; an image's own entry of that name is not used. */
static bool reserved(const char *name)
{
	static const char *const names[] = { ".", "..", "proc", "dev", "sys", "tmp", "msb" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

static void push_root_image(argv_builder *b, const char *root)
{
	DIR *d = opendir(root);
	if (!d) {
		b->failed = true;
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (reserved(e->d_name))
			continue;
		char src[PATH_MAX], dest[NAME_MAX + 2];
		snprintf(src, sizeof src, "%s/%s", root, e->d_name);
		snprintf(dest, sizeof dest, "/%s", e->d_name);
		push_entry(b, src, dest);
	}
	closedir(d);
}

static bool has_hosts_file(const char *root)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof path, "%s/etc/hosts", root);
	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

msb_errc msb_bwrap_argv(const char *bwrap, const msb_bwrap_layout *l, const char *const *command,
			char ***argv, msb_error *err)
{
	argv_builder b = { 0 };
	push(&b, bwrap);
	/* Every namespace: mount, pid, ipc, uts, cgroup, network (empty but for lo: closed
	 * egress) and user (so no host uid holds a capability inside). */
	push(&b, "--unshare-all");
	/* The network namespace then is one made ahead, as empty, which the launch joined
	 * before bwrap ran: the same closed egress without its 0.55 ms in the start. */
	if (l->netns_joined)
		push(&b, "--share-net");
	/* An image's User: the one uid (and gid) the user namespace maps, onto the caller's, so
	 * the work directory the caller owns is that user's inside and nothing else is. */
	if (l->sandbox_ids) {
		char id[24];
		snprintf(id, sizeof id, "%ld", l->sandbox_uid);
		push2(&b, "--uid", id);
		snprintf(id, sizeof id, "%ld", l->sandbox_gid);
		push2(&b, "--gid", id);
	}
	/* No capability at all inside, even in the sandbox's own user namespace. */
	push2(&b, "--cap-drop", "ALL");
	/* bwrap and the sandbox's init die with bwrap's parent: the launcher's resident keeper
	 * (bwrap_launch.c), not the short-lived msb that started it. */
	push(&b, "--die-with-parent");
	/* A session of its own: no controlling terminal to push keystrokes into (TIOCSTI). */
	push(&b, "--new-session");
	push(&b, "--clearenv");
	push2(&b, "--hostname", "msb");
	if (l->image_root)
		push_root_image(&b, l->image_root);
	else
		push_host_image(&b);
	push2(&b, "--proc", "/proc");
	push2(&b, "--dev", "/dev");
	if (l->tmp_size) {
		char size[32];
		snprintf(size, sizeof size, "%llu", (unsigned long long)l->tmp_size);
		push2(&b, "--size", size);
	}
	push2(&b, "--tmpfs", "/tmp");
	/*
	 * The work directory on a tmpfs of its own, of `disk:` bytes, rather than a host
	 * directory: a guest that fills it gets ENOSPC inside and never fills the host's disk.
	 * Its pages are charged to the sandbox's memory cgroup (they are written by the
	 * sandbox's processes), so the lower of disk and memory binds. It lives as long as the
	 * sandbox's mount namespace: nothing to unmount, on any path out.
	 */
	if (l->work_disk && l->work_guest) {
		char size[32];
		snprintf(size, sizeof size, "%llu", (unsigned long long)l->work_disk);
		push2(&b, "--perms", "0700");
		push2(&b, "--size", size);
		push2(&b, "--tmpfs", l->work_guest);
	} else if (l->work_fd >= 0) {
		push_fd(&b, "--bind-fd", l->work_fd, l->work_guest);
	}
	if (l->agent_fd >= 0)
		push_fd(&b, "--ro-bind-fd", l->agent_fd, MSB_BWRAP_GUEST_AGENT);
	/* Read-only: the guest may connect to the proxy's socket, never replace it. */
	if (l->egress_dir)
		push3(&b, "--ro-bind", l->egress_dir, l->egress_dir);
	/* The allowed names at their loopback addresses, where the guest's resolver looks. On an
	 * image root only over a hosts file it has (a read-only /etc takes no new file). */
	if (l->egress_hosts && (!l->image_root || has_hosts_file(l->image_root)))
		push3(&b, "--ro-bind", l->egress_hosts, "/etc/hosts");
	if (l->seccomp_fd >= 0) {
		char num[16];
		snprintf(num, sizeof num, "%d", l->seccomp_fd);
		push2(&b, "--seccomp", num);
	}
	if (l->work_guest)
		push2(&b, "--chdir", l->work_guest);
	/* Last: the root tmpfs (and the directories bwrap made in it) becomes read-only. */
	push2(&b, "--remount-ro", "/");
	push(&b, "--");
	for (size_t i = 0; command && command[i]; i++)
		push(&b, command[i]);
	if (b.failed) {
		msb_bwrap_argv_free(b.items);
		return msb_error_set(err, MSB_E_NOMEM, "bwrap: cannot build the command line%s%s",
				     l->image_root ? " for image root " : "",
				     l->image_root ? l->image_root : "");
	}
	*argv = b.items;
	return MSB_OK;
}

void msb_bwrap_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}
