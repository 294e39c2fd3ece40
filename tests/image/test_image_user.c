/*
 * test_image_user.c — an image config's User resolved against the image's own account files
 * (msb_image_user_resolve): every OCI form, the group a bare uid gets, and each way a
 * guest-authored /etc/passwd or /etc/group can be hostile (a symlink out of the root, a
 * parent that is one, a FIFO, a directory, a NUL, a file past the bound, a malformed line)
 * refused, never read from outside and never hung on. A name the image does not define is
 * refused, naming it and the file; no form falls back to another user.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/image_store.h>

#include "image_test.h"

static const char passwd[] =
	"root:x:0:0:root:/root:/bin/sh\n"
	"# a comment line is no user\n"
	"\n"
	"daemon:x:1:1::/:/bin/false\n"
	"app:x:1234:2345:an app:/home/app:/bin/sh\n"
	"short:x:77\n"
	"bad:x:12ab:1::/:/bin/sh\n";
static const char groups[] = "root:x:0:\nstaff:x:3456:app\nodd:x:-4:\n";

typedef struct fixture {
	img_scratch s;
	char root[200];
	char etc[220];
} fixture;

static void write_in(const fixture *f, const char *rel, const char *content)
{
	char path[400];
	snprintf(path, sizeof path, "%s/%s", f->root, rel);
	img_write(path, content, strlen(content));
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	img_scratch_make(&f->s);
	snprintf(f->root, sizeof f->root, "%s/root", f->s.src);
	snprintf(f->etc, sizeof f->etc, "%s/etc", f->root);
	img_mkdirs(f->etc);
	write_in(f, "etc/passwd", passwd);
	write_in(f, "etc/group", groups);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	assert_true(img_outside_intact(&f->s));
	img_scratch_remove(&f->s);
	free(f);
	return 0;
}

static void resolves(const fixture *f, const char *user, long uid, long gid)
{
	long u = -9, g = -9;
	msb_error err = MSB_ERROR_INIT;
	if (msb_image_user_resolve(f->root, "img", user, &u, &g, &err) != MSB_OK)
		fail_msg("User \"%s\": %s", user ? user : "(null)", msb_error_message(&err));
	if (u != uid || g != gid)
		fail_msg("User \"%s\": %ld:%ld, wanted %ld:%ld", user ? user : "(null)", u, g, uid,
			 gid);
}

/* Refused, MSB_E_VALUE, the message holding the image, the User and `says`; ids left -1. */
static void refused(const fixture *f, const char *user, const char *says)
{
	long u = -9, g = -9;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = msb_image_user_resolve(f->root, "img", user, &u, &g, &err);
	if (rc == MSB_OK)
		fail_msg("User \"%s\" resolved to %ld:%ld; it should be refused (%s)", user, u, g,
			 says);
	const char *m = msb_error_message(&err);
	if (!strstr(m, "image \"img\"") || !strstr(m, says))
		fail_msg("User \"%s\": \"%s\" should name the image and say \"%s\"", user, m, says);
	assert_int_equal(u, -1);
	assert_int_equal(g, -1);
	msb_error_clear(&err);
}

static void every_form_resolves(void **state)
{
	fixture *f = *state;
	resolves(f, NULL, -1, -1);
	resolves(f, "", -1, -1);
	resolves(f, "root", 0, 0);
	resolves(f, "0", 0, 0);
	resolves(f, "app", 1234, 2345);
	resolves(f, "1234", 1234, 2345);   /* a uid the image names: its passwd group */
	resolves(f, "777", 777, 0);        /* one it does not: group 0, as Docker */
	resolves(f, "app:staff", 1234, 3456);
	resolves(f, "app:99", 1234, 99);
	resolves(f, "1234:staff", 1234, 3456);
	resolves(f, "1000:1000", 1000, 1000);
	resolves(f, "4294967294:0", 4294967294L, 0);
}

static void unknown_names_are_refused(void **state)
{
	fixture *f = *state;
	refused(f, "ghost", "user ghost is not in the image's /etc/passwd");
	refused(f, "app:nogroup", "group nogroup is not in the image's /etc/group");
	refused(f, "Root", "is not in the image's /etc/passwd"); /* names are exact */
	/* The host's users mean nothing here: the host has a "nobody", this image does not. */
	refused(f, "nobody", "is not in the image's /etc/passwd");
	/* Not ids: (uid_t)-1 is "unchanged" to setresuid, the rest are not numbers. */
	refused(f, "4294967295", "is not in the image's /etc/passwd");
	refused(f, "-1", "is not in the image's /etc/passwd");
	refused(f, "99999999999", "is not in the image's /etc/passwd");
}

static void malformed_users_are_refused(void **state)
{
	fixture *f = *state;
	refused(f, "a:b:c", "expected user, uid, user:group or uid:gid");
	refused(f, ":0", "expected user");
	refused(f, "0:", "expected user");
	refused(f, "app\n", "expected user");
	refused(f, "a b", "expected user");
	/* The line for the name is there but its ids are not numbers, or it has too few fields. */
	refused(f, "bad", "malformed line");
	refused(f, "short", "malformed line");
	refused(f, "app:odd", "malformed line");
}

/* Numeric forms need no account file, so an image without one still runs them. */
static void no_account_files(void **state)
{
	fixture *f = *state;
	char path[400];
	snprintf(path, sizeof path, "%s/passwd", f->etc);
	unlink(path);
	snprintf(path, sizeof path, "%s/group", f->etc);
	unlink(path);
	resolves(f, "1000:1000", 1000, 1000);
	resolves(f, "5", 5, 0);
	refused(f, "app", "user app cannot be looked up: the image has no /etc/passwd");
	refused(f, "5:staff", "group staff cannot be looked up: the image has no /etc/group");
}

/* The account files are the guest's: a link is resolved as the guest would, inside the
 * image's root, so one aimed out of it (absolute, "..", a parent that is a link) finds
 * nothing there and never reads the host's file. */
static void links_out_are_not_followed(void **state)
{
	fixture *f = *state;
	char outside[300], path[400];
	/* An outside file that would resolve "intruder" if it were read. */
	snprintf(outside, sizeof outside, "%s/passwd", f->s.dir);
	img_write(outside, "intruder:x:4242:4242::/:/bin/sh\n", 32);
	snprintf(path, sizeof path, "%s/passwd", f->etc);
	unlink(path);
	assert_int_equal(symlink(outside, path), 0);
	refused(f, "intruder", "the image has no /etc/passwd");
	unlink(path);
	char rel[400];
	snprintf(rel, sizeof rel, "../../../passwd");
	assert_int_equal(symlink(rel, path), 0);
	refused(f, "intruder", "the image has no /etc/passwd");
	unlink(path);
	/* The parent a link out: etc -> the scratch directory, which holds that passwd. */
	char etc_moved[300];
	snprintf(etc_moved, sizeof etc_moved, "%s.moved", f->etc);
	assert_int_equal(rename(f->etc, etc_moved), 0);
	assert_int_equal(symlink(f->s.dir, f->etc), 0);
	refused(f, "intruder", "the image has no /etc/passwd");
	unlink(f->etc);
	assert_int_equal(rename(etc_moved, f->etc), 0);
	unlink(outside);
	/* A link that stays inside the root is the image's own business, and is followed. */
	write_in(f, "passwd.real", "linked:x:31:32::/:/bin/sh\n");
	unlink(path);
	assert_int_equal(symlink("../passwd.real", path), 0);
	resolves(f, "linked", 31, 32);
	unlink(path);
	assert_int_equal(symlink("/passwd.real", path), 0); /* absolute: from the image's root */
	resolves(f, "linked", 31, 32);
}

static void hostile_files_are_refused(void **state)
{
	fixture *f = *state;
	char path[400];
	snprintf(path, sizeof path, "%s/passwd", f->etc);
	/* A FIFO: opened, it would block for ever; it is refused as not a regular file. */
	unlink(path);
	assert_int_equal(mkfifo(path, 0644), 0);
	refused(f, "app", "etc/passwd is not a regular file");
	unlink(path);
	/* A directory. */
	assert_int_equal(mkdir(path, 0755), 0);
	refused(f, "app", "etc/passwd is not a regular file");
	rmdir(path);
	/* A NUL: a line could end there for one reader and not another. */
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fwrite("app:x:1:1::/:/bin/sh\n\0root:x:0:0::/:/bin/sh\n", 1, 44, fp);
	fclose(fp);
	refused(f, "app", "NUL");
	/* Past the 4 MiB bound: refused, not read to its end. */
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(ftruncate(fileno(fp), (4 << 20) + 1), 0);
	fclose(fp);
	refused(f, "app", "over the 4194304 a file of accounts may be");
	unlink(path);
	write_in(f, "etc/passwd", passwd);
	resolves(f, "app", 1234, 2345);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_form_resolves, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_names_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed_users_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(no_account_files, setup, teardown),
		cmocka_unit_test_setup_teardown(links_out_are_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(hostile_files_are_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
