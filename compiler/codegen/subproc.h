/*
 * subproc — running a compiler tool as a child process: the one way bertc
 * starts a program (the host C++ compiler for the emulated device's image,
 * ptxas for GPU code).
 *
 * A child runs in a directory of the caller's choosing, reads /dev/null
 * and writes stdout and stderr together into one log file there, so a
 * failure's message can quote the tool's own words, and no output of a
 * tool ever reaches bertc's own stdout or stderr.  posix_spawn (not fork)
 * keeps it safe to call from several threads at once: kbuild runs ptxas
 * on a pool of threads.
 *
 * A tool named without a '/' is looked up in PATH; one named with a '/'
 * runs as given.
 */
#ifndef BERTC_SUBPROC_H
#define BERTC_SUBPROC_H

#include <sys/types.h>

/* Starts argv in `dir` (NULL: the current directory) with stdout+stderr
 * into `log` (relative to dir; created or truncated, mode 0600): 0 and
 * *pid, or the errno value that stopped it. */
int subproc_start(char *const argv[], const char *dir, const char *log, pid_t *pid);
/* Waits for a child: its exit status, or -1 if it did not exit normally. */
int subproc_wait(pid_t pid);
/* subproc_start then subproc_wait: 0 and *status, or an errno value. */
int subproc_run(char *const argv[], const char *dir, const char *log, int *status);

#endif
