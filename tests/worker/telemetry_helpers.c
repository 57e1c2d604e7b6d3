/*
 * telemetry_helpers.c: the script file and the session children of telemetry_helpers.h.
 * _DEFAULT_SOURCE: MAP_ANONYMOUS.
 */
#define _DEFAULT_SOURCE
#include "telemetry_helpers.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char script_path[64];

void script_create(const char *text)
{
    int fd;

    snprintf(script_path, sizeof(script_path), "/tmp/gsched-nvml-XXXXXX");
    fd = mkstemp(script_path);
    cr_assert_geq(fd, 0);
    close(fd);
    setenv("GSCHED_FAKE_NVML_SCRIPT", script_path, 1);
    script_write("%s", text);
}

void script_write(const char *fmt, ...)
{
    char tmp[80];
    va_list ap;
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.new", script_path);
    f = fopen(tmp, "w");
    cr_assert_not_null(f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, script_path), 0);
}

void script_remove(void)
{
    if (script_path[0] != '\0')
        unlink(script_path);
    unsetenv("GSCHED_FAKE_NVML_SCRIPT");
}

static void child_main(bool busy, size_t mib, pid_t parent)
{
    time_t until = time(NULL) + 60;
    volatile unsigned long spins = 0;
    char *mem;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent || setsid() < 0)
        _exit(1);
    mem = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        _exit(1);
    memset(mem, 1, mib << 20);
    while (time(NULL) < until) {
        if (busy)
            spins++;
        else
            sleep(1);
    }
    _exit(0);
}

void poll_pause(void)
{
    struct timespec ms = {0, 2000000};

    nanosleep(&ms, NULL);
}

pid_t child_start(bool busy, size_t mib)
{
    pid_t parent = getpid(), pid = fork();

    time_t deadline = time(NULL) + 10;

    cr_assert_geq(pid, 0);
    if (pid == 0)
        child_main(busy, mib, parent);
    while (getsid(pid) != pid) {
        cr_assert_lt(time(NULL), deadline, "child %d never left our session", (int)pid);
        poll_pause();
    }
    return pid;
}

void child_stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}
