/*
 * keeper.c: the fence for a worker that dies (keeper.h). The keeper is forked, not exec'd,
 * so that it needs no program of its own; it runs only what is safe in a fresh fork of a
 * process without threads: reads of one pipe, the ledger file, kill and the log's write.
 *
 * The pipe carries lines: "fence N" (milliseconds) after each registration, "bye" before a
 * clean stop. The keeper closes every descriptor but the pipe and stderr (the log), so that
 * it holds no socket, cgroup or data file of the worker's.
 */
#define _GNU_SOURCE /* pipe2, prctl */
#include "worker/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/ledger.h"

#define KEEPER_FD 3

/* Moves the pipe to KEEPER_FD and closes every descriptor above it (0-2 stay: stderr is
 * the log). */
static void close_others(int pipe_fd)
{
    if (pipe_fd != KEEPER_FD) {
        dup2(pipe_fd, KEEPER_FD);
        close(pipe_fd);
    }
    (void)close_range(KEEPER_FD + 1, ~0U, 0);
}

static void sleep_ms(uint64_t ms)
{
    struct timespec left = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
}

/* Reads the worker's lines until the pipe ends; whether it said goodbye, the last fence. */
static bool read_until_end(uint64_t *fence_ms)
{
    char buf[256], line[64];
    size_t have = 0;
    ssize_t n;

    for (;;) {
        n = read(KEEPER_FD, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (have < sizeof(line) - 1)
                    line[have++] = buf[i];
                continue;
            }
            line[have] = '\0';
            have = 0;
            if (strcmp(line, "bye") == 0)
                return true;
            if (strncmp(line, "fence ", 6) == 0)
                *fence_ms = strtoull(line + 6, NULL, 10);
        }
    }
}

static void keeper_main(const char *ledger_path)
{
    struct wrk_ledger_entry *v = NULL;
    uint64_t fence_ms = 0;
    size_t n = 0;

    prctl(PR_SET_NAME, "gsched-keeper");
    signal(SIGTERM, SIG_IGN); /* a stop signal is the worker's; this one ends with it */
    signal(SIGINT, SIG_IGN);
    if (read_until_end(&fence_ms) || fence_ms == 0)
        _exit(0);
    if (wrk_ledger_read(ledger_path, &v, &n) < 0 || n == 0)
        _exit(0);
    GS_LOG(GS_LOG_WARN,
           "tasks=%zu fence_ms=%" PRIu64 " worker gone, its tasks end before "
           "the fence timeout",
           n, fence_ms);
    sleep_ms(fence_ms * 4 / 5);
    wrk_ledger_end(v, n, "task of a worker that died ended by its keeper (fence)");
    free(v);
    _exit(0);
}

int wrk_keeper_start(const char *ledger_path, pid_t *ret_pid)
{
    int fds[2];
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    pid = fork();
    if (pid < 0) {
        int rc = -errno;

        close(fds[0]);
        close(fds[1]);
        return rc;
    }
    if (pid == 0) {
        close(fds[1]);
        close_others(fds[0]);
        keeper_main(ledger_path);
    }
    close(fds[0]);
    if (ret_pid != NULL)
        *ret_pid = pid;
    return fds[1];
}

static void say(int fd, const char *line)
{
    size_t len = strlen(line), off = 0;

    while (fd >= 0 && off < len) {
        ssize_t n = write(fd, line + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the keeper is gone: nothing to tell */
        off += (size_t)n;
    }
}

void wrk_keeper_set_fence(int fd, uint64_t fence_ms)
{
    char line[48];

    snprintf(line, sizeof(line), "fence %" PRIu64 "\n", fence_ms);
    say(fd, line);
}

void wrk_keeper_goodbye(int fd)
{
    if (fd < 0)
        return;
    say(fd, "bye\n");
    close(fd);
}
