/*
 * bwrap_argv.h — the bubblewrap command line of one sandbox. Shared with the benchmark, so
 * that "bare bwrap" there runs with exactly the flags a sandbox gets.
 */
#ifndef MSB_BWRAP_ARGV_H
#define MSB_BWRAP_ARGV_H

#include <stdbool.h>
#include <stdint.h>

#include <msb/error.h>

/* Where the agent appears inside every sandbox. */
#define MSB_BWRAP_GUEST_AGENT "/msb/bin/msb-agent"

/* What one sandbox is made of. An fd of -1 leaves that piece out. */
typedef struct msb_bwrap_layout {
	const char *image_root; /* NULL: the built-in host image */
	const char *work_guest; /* the spec's work_dir */
	int work_fd;            /* O_PATH fd of the host work directory, bound read-write */
	int agent_fd;           /* O_PATH fd of the static agent, bound read-only */
	int seccomp_fd;         /* the compiled filter */
	uint64_t tmp_size;      /* 0: bwrap's default tmpfs size */
	uint64_t work_disk;     /* > 0: the work directory is a tmpfs of this size instead of
				 * the host directory work_fd (which is then left out) */
	const char *egress_dir; /* `egress: allowlist`: the host proxy's socket directory, bound
				 * read-only at the same path inside (msb/egress.h); NULL: none */
	const char *egress_hosts; /* its hosts file, bound read-only as /etc/hosts; NULL: none */
	bool netns_joined;      /* the launch joins a network namespace made ahead (msb/netns.h):
				 * bwrap keeps it rather than making its own */
	bool sandbox_ids;       /* the uid and gid inside the sandbox's user namespace are */
	long sandbox_uid, sandbox_gid; /* these (an image's User); false: the caller's own */
} msb_bwrap_layout;

/*
 * `bwrap` + flags + "--" + `command`, as a NULL-terminated array of heap strings
 * (msb_bwrap_argv_free). The fds are referred to by number: the caller puts them there.
 */
msb_errc msb_bwrap_argv(const char *bwrap, const msb_bwrap_layout *layout,
			const char *const *command, char ***argv, msb_error *err);
void msb_bwrap_argv_free(char **argv);

#endif
