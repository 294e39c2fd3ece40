/*
 * netns_probe.h — which network namespace a process is in, and which ones this process
 * holds descriptors of: what the tests of msb/netns.h and of the backends that use it look
 * at from outside.
 */
#ifndef MSB_NETNS_PROBE_H
#define MSB_NETNS_PROBE_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The inode of /proc/<pid>/ns/net (0: this thread's own), or 0 when it cannot be read. */
static inline unsigned long netns_probe_of(long pid)
{
	char path[64];
	if (pid)
		snprintf(path, sizeof path, "/proc/%ld/ns/net", pid);
	else
		snprintf(path, sizeof path, "/proc/thread-self/ns/net");
	struct stat st;
	return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* How many descriptors of this process refer to a network namespace; the first one's inode
 * in *first (when not NULL; 0 when there is none). */
static inline int netns_probe_held(unsigned long *first)
{
	if (first)
		*first = 0;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		char path[300], target[64];
		unsigned long ino;
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(path, target, sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "net:[%lu]", &ino) != 1)
			continue;
		if (first && !n)
			*first = ino;
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

#endif
