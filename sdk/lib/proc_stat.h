/*
 * proc_stat.h — what libmsb-sdk reads of another process in /proc (not installed): its
 * state and when it started, which tells a live process from a recycled pid.
 */
#ifndef MSB_PROC_STAT_H
#define MSB_PROC_STAT_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Field 22 of /proc/<pid>/stat (clock ticks since boot) into *start, field 3 (R, S, Z, …)
 * into *state. false when there is no such process or the file cannot be read.
 */
bool msb_proc_start_time(pid_t pid, unsigned long long *start, char *state);

#endif
