/*
 * proc_stat.c — a process's state and start time from /proc/<pid>/stat (proc_stat.h).
 */
#include <stdio.h>
#include <string.h>

#include "proc_stat.h"

bool msb_proc_start_time(pid_t pid, unsigned long long *start, char *state)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The name in parentheses may hold anything, ")" and spaces included: skip to the last. */
	char *p = strrchr(buf, ')');
	if (!p)
		return false;
	/* After ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice threads itrealvalue starttime */
	return sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			     "%*d %*d %*d %llu", state, start) == 2;
}
