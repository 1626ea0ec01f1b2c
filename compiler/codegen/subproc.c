/*
 * subproc — child processes for compiler tools (subproc.h).
 */
#include "subproc.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

int subproc_start(char *const argv[], const char *dir, const char *log, pid_t *pid) {
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc) return rc;
    if (dir) rc = posix_spawn_file_actions_addchdir_np(&fa, dir);
    if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!rc) rc = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

int subproc_wait(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int subproc_run(char *const argv[], const char *dir, const char *log, int *status) {
    pid_t pid;
    int rc = subproc_start(argv, dir, log, &pid);
    if (rc) return rc;
    *status = subproc_wait(pid);
    return 0;
}
