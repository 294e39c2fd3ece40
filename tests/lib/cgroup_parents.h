/*
 * cgroup_parents.h — for C tests that run a backend with its default cgroup parent
 * (msb/<backend> under every hierarchy): disposal removes each sandbox's own cgroup, and the
 * parents the backend made on first use are removed here, when the test made them and they
 * are empty again, so a test leaves the machine as it found it. rmdir only ever removes an
 * empty cgroup.
 */
#ifndef MSB_TEST_CGROUP_PARENTS_H
#define MSB_TEST_CGROUP_PARENTS_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MSB_TEST_CG_MAX 32

typedef struct msb_test_cg_parents {
	const char *rel[4];                 /* e.g. "msb/gvisor", "msb": children first */
	bool existed[MSB_TEST_CG_MAX][4];
	char hierarchy[MSB_TEST_CG_MAX][64];
	size_t n;
} msb_test_cg_parents;

static inline void msb_test_cg_path(const msb_test_cg_parents *p, size_t h, size_t r, char *out, size_t n)
{
	snprintf(out, n, "/sys/fs/cgroup/%s/%s", p->hierarchy[h], p->rel[r]);
}

/* Remember which of the parents exist now, in every hierarchy. */
static inline void msb_test_cg_note(msb_test_cg_parents *p)
{
	DIR *d = opendir("/sys/fs/cgroup");
	p->n = 0;
	for (struct dirent *e; d && (e = readdir(d)) && p->n < MSB_TEST_CG_MAX;) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof p->hierarchy[0])
			continue;
		strcpy(p->hierarchy[p->n], e->d_name);
		for (size_t r = 0; r < 4 && p->rel[r]; r++) {
			char path[256];
			struct stat st;
			msb_test_cg_path(p, p->n, r, path, sizeof path);
			p->existed[p->n][r] = stat(path, &st) == 0;
		}
		p->n++;
	}
	if (d)
		closedir(d);
}

/* Remove the parents this test made, children first; a non-empty one stays. */
static inline void msb_test_cg_clean(const msb_test_cg_parents *p)
{
	for (size_t h = 0; h < p->n; h++)
		for (size_t r = 0; r < 4 && p->rel[r]; r++) {
			char path[256];
			msb_test_cg_path(p, h, r, path, sizeof path);
			if (!p->existed[h][r])
				rmdir(path);
		}
}

#endif
