/*
 * bench_files.c — what confinement costs on the file path: msb_confine_write_file +
 * msb_confine_read_file of 32 MiB, against plain open/write/close + open/read/close of the
 * same bytes to a plain path in the same directory, in the same run.
 *
 * The confined write is a temporary file + rename and the confined read adds an fstat and a
 * probe byte; both resolve through openat2 (or the O_NOFOLLOW walk, measured too). Rounds
 * alternate baseline and confined, and which of the two goes first, so that page-cache and
 * writeback state hit both alike; the median and the minimum of each are reported. The
 * directory is $TMPDIR (default /tmp): run it once on a disk filesystem and once on tmpfs
 * to tell filesystem allocation cost from confinement cost. No fsync on either side: durability is a separate choice
 * (MSB_CONFINE_SYNC), and it would measure the disk, not the confinement.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <msb/confine.h>

#define SIZE ((size_t)32 << 20)
#define ROUNDS 31

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[n / 2];
}

/* `fresh`: unlink first and create anew, rather than truncate the existing file and rewrite it. */
static void plain_round(const char *path, bool fresh, const unsigned char *data, unsigned char *back)
{
	if (fresh)
		unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | (fresh ? O_EXCL : O_TRUNC) | O_CLOEXEC, 0644);
	for (size_t off = 0; off < SIZE;) {
		ssize_t n = write(fd, data + off, SIZE - off);
		if (n <= 0)
			exit(1);
		off += (size_t)n;
	}
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (size_t off = 0; off < SIZE;) {
		ssize_t n = read(fd, back + off, SIZE - off);
		if (n <= 0)
			exit(1);
		off += (size_t)n;
	}
	close(fd);
}

static void confined_round_flags(int root, const unsigned char *data, msb_buf *back,
				 unsigned flags)
{
	msb_error err = MSB_ERROR_INIT;
	back->len = 0;
	if (msb_confine_write_file(root, "sub/confined.bin", data, SIZE, flags, &err) != MSB_OK ||
	    msb_confine_read_file(root, "sub/confined.bin", SIZE, back, &err) != MSB_OK ||
	    back->len != SIZE) {
		fprintf(stderr, "bench_files: %s\n", msb_error_message(&err));
		exit(1);
	}
}

static void confined_round(int root, const unsigned char *data, msb_buf *back)
{
	confined_round_flags(root, data, back, 0);
}

/* What durability costs on top: MSB_CONFINE_SYNC fsyncs before the swap. */
static void measure_sync(int root, const unsigned char *data, msb_buf *cback)
{
	double t_sync[7], t_conf[7];
	for (int i = 0; i < 7; i++) {
		double t = now();
		confined_round_flags(root, data, cback, MSB_CONFINE_SYNC);
		t_sync[i] = now() - t;
		t = now();
		confined_round(root, data, cback);
		t_conf[i] = now() - t;
	}
	double s = median(t_sync, 7), c = median(t_conf, 7);
	printf("files sync     32 MiB write+read, median ms: confined %.2f, confined + fsync %.2f; ratio %.2f\n",
	       c * 1e3, s * 1e3, s / c);
}

static void measure(const char *label, int root, const char *plain, const unsigned char *data,
		    unsigned char *back, msb_buf *cback)
{
	double t_trunc[ROUNDS], t_fresh[ROUNDS], t_conf[ROUNDS];
	plain_round(plain, false, data, back); /* warm every path once */
	confined_round(root, data, cback);
	for (int i = 0; i < ROUNDS; i++) {
		/* rotate which goes first, so none always inherits another's writeback */
		for (int k = 0; k < 3; k++) {
			double t = now();
			switch ((i + k) % 3) {
			case 0:
				plain_round(plain, false, data, back);
				t_trunc[i] = now() - t;
				break;
			case 1:
				plain_round(plain, true, data, back);
				t_fresh[i] = now() - t;
				break;
			default:
				confined_round(root, data, cback);
				t_conf[i] = now() - t;
			}
		}
	}
	if (memcmp(cback->data, data, SIZE) != 0 || memcmp(back, data, SIZE) != 0) {
		fprintf(stderr, "bench_files: bytes read back differ\n");
		exit(1);
	}
	double tr = median(t_trunc, ROUNDS), fr = median(t_fresh, ROUNDS), c = median(t_conf, ROUNDS);
	/* after median() sorted them, [0] is the run least disturbed by the rest of the machine */
	printf("files %-8s 32 MiB write+read, median (min) ms: plain overwrite %.2f (%.2f), "
	       "plain fresh file %.2f (%.2f), confined %.2f (%.2f); confined/overwrite %.3f (%.3f), "
	       "confined/fresh %.3f (%.3f)\n",
	       label, tr * 1e3, t_trunc[0] * 1e3, fr * 1e3, t_fresh[0] * 1e3, c * 1e3, t_conf[0] * 1e3,
	       c / tr, t_conf[0] / t_trunc[0], c / fr, t_conf[0] / t_fresh[0]);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], plain[4200], sub[4200];
	snprintf(dir, sizeof dir, "%s/msb-bench-files-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	char *real = realpath(dir, NULL);
	snprintf(plain, sizeof plain, "%s/sub/plain.bin", real);
	snprintf(sub, sizeof sub, "%s/sub", real);
	unsigned char *data = malloc(SIZE), *back = malloc(SIZE);
	if (!data || !back || mkdir(sub, 0700) != 0)
		return 1;
	for (size_t i = 0; i < SIZE; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 13);
	msb_error err = MSB_ERROR_INIT;
	int root;
	if (msb_confine_open_root(real, &root, &err) != MSB_OK) {
		fprintf(stderr, "bench_files: %s\n", msb_error_message(&err));
		return 1;
	}
	msb_buf cback = { 0 };
	if (msb_confine_uses_openat2())
		measure("openat2", root, plain, data, back, &cback);
	msb_confine_force_fallback(true);
	measure("walk", root, plain, data, back, &cback);
	measure_sync(root, data, &cback);
	close(root);
	unlink(plain);
	snprintf(plain, sizeof plain, "%s/sub/confined.bin", real);
	unlink(plain);
	rmdir(sub);
	rmdir(real);
	free(real);
	free(data);
	free(back);
	msb_buf_free(&cback);
	return 0;
}
