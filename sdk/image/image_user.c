/*
 * image_user.c — an image config's User as the uid and gid its commands run as.
 *
 * The forms are OCI's: "user", "uid", "user:group", "uid:gid", "user:gid", "uid:group".
 * Names are looked up in the image's own /etc/passwd and /etc/group, never the host's (the
 * same name may be another uid there, or none), and those files are guest-authored bytes:
 * they are opened beneath the image's root (a link is resolved inside it, as the guest
 * would see it, so one aimed out finds nothing), read up to a bound, and parsed line by
 * line with nothing trusted but the fields used. A name no
 * line gives is refused, naming the image's file: running the workload as some other user
 * (root, say) instead would be exactly the silent downgrade msb never makes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <msb/confine.h>
#include <msb/image_store.h>

/* /etc/passwd and /etc/group larger than this are refused, not read on. */
#define ACCOUNT_FILE_MAX (4u << 20)
/* The largest id taken: (uid_t)-1 means "unchanged" to setresuid, so it names no one. */
#define ID_MAX 4294967294ull

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* A decimal id, or -1 when `s` is not one (empty, signed, not all digits, too large). */
static long long parse_id(const char *s, size_t len)
{
	if (len == 0 || len > 10)
		return -1;
	unsigned long long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v <= ID_MAX ? (long long)v : -1;
}

/* Whether `s` (len bytes) could be a user or group name: no ':' or control bytes. */
static bool name_ok(const char *s, size_t len)
{
	if (len == 0 || len > 256)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x21 || s[i] == ':' || s[i] == 0x7f)
			return false;
	return true;
}

/*
 * The line of account file `text` whose first field is `name` (len bytes), or whose third
 * field is id `by_id` (>= 0; then `name` is NULL): its third field into *id and, for
 * passwd, its fourth into *gid. 1 when found, 0 when not, -1 when the matching line is
 * malformed.
 */
static int account_find(const char *text, const char *name, size_t len, long long by_id,
			long long *id, long long *gid)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		const char *stop = end ? end : line + strlen(line);
		/* The first four ':'-separated fields: name, password, id, (passwd) group id. */
		const char *f[4];
		size_t fl[4], k = 0;
		for (const char *p = line; k < 4 && p <= stop; k++) {
			const char *c = memchr(p, ':', (size_t)(stop - p));
			f[k] = p;
			fl[k] = (size_t)((c ? c : stop) - p);
			if (!c)
				break;
			p = c + 1;
		}
		k = k < 4 ? k + 1 : 4;
		bool match = false;
		if (k >= 3 && name)
			match = fl[0] == len && memcmp(f[0], name, len) == 0;
		else if (k >= 3)
			match = parse_id(f[2], fl[2]) == by_id;
		if (match) {
			*id = parse_id(f[2], fl[2]);
			if (gid)
				*gid = k >= 4 ? parse_id(f[3], fl[3]) : -1;
			return *id < 0 || (gid && *gid < 0) ? -1 : 1;
		}
		line = end ? end + 1 : NULL;
	}
	return 0;
}

/*
 * Read <root>/<rel> as the guest would find it: links followed, but resolved inside the root
 * (RESOLVE_IN_ROOT: an absolute one, or "..", stops at the image's root), never a magic
 * link, never another mount; opened non-blocking (a FIFO does not hang the start) and read
 * only when regular and within the bound. *present false (and MSB_OK) when the image has no
 * such file. Without openat2 (before Linux 5.6) a link is not followed at all.
 */
static msb_errc read_account_file(int root_fd, const char *rel, msb_buf *text, bool *present,
				  msb_error *err)
{
	struct open_how how = { .flags = O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
	*present = false;
	int fd = (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
	if (fd < 0 && errno == ENOSYS)
		fd = openat(root_fd, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return MSB_OK;
	if (fd < 0)
		return msb_error_set_errno(err, MSB_E_VALUE, errno, "opening %s", rel);
	*present = true;
	struct stat st;
	msb_errc rc = MSB_OK;
	if (fstat(fd, &st) < 0)
		rc = msb_error_set_errno(err, MSB_E_VALUE, errno, "%s", rel);
	else if (!S_ISREG(st.st_mode))
		rc = msb_error_set(err, MSB_E_VALUE, "%s is not a regular file", rel);
	else if ((uint64_t)st.st_size > ACCOUNT_FILE_MAX)
		rc = msb_error_set(err, MSB_E_VALUE, "%s is %lld bytes, over the %u a file of accounts "
				   "may be; refused rather than read in part", rel,
				   (long long)st.st_size, ACCOUNT_FILE_MAX);
	char chunk[8192];
	/* Bounded by the cap even if the file grows while it is read. */
	while (rc == MSB_OK) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = msb_error_set_errno(err, MSB_E_VALUE, errno, "reading %s", rel);
		else if (n == 0)
			break;
		else if (text->len + (size_t)n > ACCOUNT_FILE_MAX)
			rc = msb_error_set(err, MSB_E_VALUE, "%s grew past %u bytes while read", rel,
					   ACCOUNT_FILE_MAX);
		else
			rc = msb_buf_append(text, chunk, (size_t)n, err);
	}
	close(fd);
	if (rc == MSB_OK && text->len && memchr(text->data, '\0', text->len))
		rc = msb_error_set(err, MSB_E_VALUE, "%s holds a NUL byte", rel);
	if (rc == MSB_OK && !text->data)
		rc = msb_buf_append(text, "", 0, err);
	return rc;
}

/* A name the image's account file `file` does not give (found: 0) or gives malformed (-1). */
static msb_errc refuse_name(msb_error *err, const char *image, const char *user,
			    const char *what, const char *name, size_t len, const char *file,
			    bool have_file, int found)
{
	if (!have_file)
		return msb_error_set(err, MSB_E_VALUE, "image \"%s\": config User \"%s\" refused: "
				     "%s %.*s cannot be looked up: the image has no %s", image, user,
				     what, (int)len, name, file);
	if (found < 0)
		return msb_error_set(err, MSB_E_VALUE, "image \"%s\": config User \"%s\" refused: "
				     "the image's %s has a malformed line for %s %.*s", image, user,
				     file, what, (int)len, name);
	return msb_error_set(err, MSB_E_VALUE, "image \"%s\": config User \"%s\" refused: %s "
			     "%.*s is not in the image's %s, so there is no id to run its commands "
			     "as", image, user, what, (int)len, name, file);
}

msb_errc msb_image_user_resolve(const char *root, const char *image, const char *user,
				long *uid, long *gid, msb_error *err)
{
	*uid = *gid = -1;
	if (!user || !*user)
		return MSB_OK;
	const char *colon = strchr(user, ':');
	size_t ulen = colon ? (size_t)(colon - user) : strlen(user);
	const char *group = colon ? colon + 1 : NULL;
	size_t glen = group ? strlen(group) : 0;
	if (!name_ok(user, ulen) || (group && !name_ok(group, glen)))
		return msb_error_set(err, MSB_E_VALUE, "image \"%s\": config User \"%s\" refused: "
				     "expected user, uid, user:group or uid:gid", image, user);
	long long u = parse_id(user, ulen), g = group ? parse_id(group, glen) : -1;
	bool need_passwd = u < 0 || !group, need_group = group && g < 0;
	int root_fd = -1;
	msb_buf passwd = { 0 }, groups = { 0 };
	bool have_passwd = false, have_group = false;
	msb_errc rc = MSB_OK;
	if (need_passwd || need_group)
		rc = msb_confine_open_root(root, &root_fd, err);
	if (rc == MSB_OK && need_passwd)
		rc = read_account_file(root_fd, "etc/passwd", &passwd, &have_passwd, err);
	if (rc == MSB_OK && need_group)
		rc = read_account_file(root_fd, "etc/group", &groups, &have_group, err);
	if (root_fd >= 0)
		close(root_fd);
	if (rc != MSB_OK) {
		msb_error_prefix(err, "image \"%s\": config User \"%s\": reading the image's "
				 "account files: ", image, user);
		goto out;
	}
	long long pw_gid = -1;
	if (u < 0) {
		int f = have_passwd ? account_find((const char *)passwd.data, user, ulen, -1, &u,
						   &pw_gid) : 0;
		if (f <= 0) {
			rc = refuse_name(err, image, user, "user", user, ulen, "/etc/passwd",
					 have_passwd, f);
			goto out;
		}
	} else if (!group && have_passwd) {
		/* A uid the image names: its primary group; one it does not: group 0, as Docker. */
		long long id;
		if (account_find((const char *)passwd.data, NULL, 0, u, &id, &pw_gid) <= 0)
			pw_gid = 0;
	} else if (!group) {
		pw_gid = 0;
	}
	if (group && g < 0) {
		int f = have_group ? account_find((const char *)groups.data, group, glen, -1, &g,
						  NULL) : 0;
		if (f <= 0) {
			rc = refuse_name(err, image, user, "group", group, glen, "/etc/group",
					 have_group, f);
			goto out;
		}
	}
	*uid = (long)u;
	*gid = (long)(group ? g : pw_gid);
out:
	msb_buf_free(&passwd);
	msb_buf_free(&groups);
	return rc;
}
