/*
 * procstat.c: /proc readers for the telemetry (see procstat.h). Each file is read whole
 * into a stack buffer with one read(2): the kernel builds these small files in one go, so
 * a single read sees a consistent snapshot.
 *
 * /proc/PID/stat: "pid (comm) state ppid pgrp session ...". comm may hold spaces and
 * parentheses, so fields are counted from the last ')'. After it come state (field 3),
 * ppid, pgrp, session (6), ..., utime (14), stime, cutime, cstime (17), ..., rss (24, pages).
 */
#include "worker/procstat.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/path.h"
#include "common/sort.h"

#define MIB (1024ull * 1024ull)

/* One process's share of its session, in the kernel's units. */
struct proc_usage {
    pid_t session;
    uint64_t ticks;
    uint64_t rss_pages;
};

int wrk_procstat_read_cpu(struct wrk_procstat_cpu *ret_cpu)
{
    unsigned long long v[8];
    char buf[512];
    ssize_t len = gs_path_read_small("/proc/stat", buf, sizeof(buf));

    if (len < 0)
        return (int)len;
    if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) != 8)
        return -EIO;
    ret_cpu->total = 0;
    for (int i = 0; i < 8; i++)
        ret_cpu->total += v[i];
    ret_cpu->busy = ret_cpu->total - v[3] - v[4];
    return 0;
}

uint32_t wrk_procstat_cpu_pct(const struct wrk_procstat_cpu *from,
                              const struct wrk_procstat_cpu *to)
{
    uint64_t total, busy;

    if (to->total <= from->total || to->busy < from->busy)
        return 0;
    total = to->total - from->total;
    busy = to->busy - from->busy;
    return busy >= total ? 100 : (uint32_t)((busy * 100 + total / 2) / total);
}

int wrk_procstat_read_memory(uint64_t *ret_used_mib, uint64_t *ret_total_mib)
{
    unsigned long long total_kib = 0, avail_kib = 0;
    bool have_total = false, have_avail = false;
    char buf[4096];
    ssize_t len = gs_path_read_small("/proc/meminfo", buf, sizeof(buf));

    if (len < 0)
        return (int)len;
    for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (sscanf(line, "MemTotal: %llu kB", &total_kib) == 1)
            have_total = true;
        else if (sscanf(line, "MemAvailable: %llu kB", &avail_kib) == 1)
            have_avail = true;
    }
    if (!have_total || !have_avail || avail_kib > total_kib)
        return -EIO;
    *ret_used_mib = (total_kib - avail_kib) / 1024;
    *ret_total_mib = total_kib / 1024;
    return 0;
}

int wrk_procstat_read_loadavg(uint32_t *ret_x100)
{
    char buf[256];
    ssize_t len = gs_path_read_small("/proc/loadavg", buf, sizeof(buf));
    double load;

    if (len < 0)
        return (int)len;
    if (sscanf(buf, "%lf", &load) != 1 || load < 0 || load > 1e7)
        return -EIO;
    *ret_x100 = (uint32_t)(load * 100 + 0.5);
    return 0;
}

static int read_proc(pid_t pid, struct proc_usage *ret_usage)
{
    unsigned long long utime, stime;
    long long cutime, cstime, rss;
    int ppid, pgrp, session;
    char path[64], buf[1024], state;
    const char *end;
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    len = gs_path_read_small(path, buf, sizeof(buf));
    if (len < 0)
        return len == -ESRCH ? -ENOENT : (int)len;
    end = strrchr(buf, ')');
    if (end == NULL ||
        sscanf(end + 1,
               " %c %d %d %d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %*d "
               "%*d %*u %*u %lld",
               &state, &ppid, &pgrp, &session, &utime, &stime, &cutime, &cstime, &rss) != 9)
        return -EIO;
    ret_usage->session = session;
    ret_usage->ticks =
        utime + stime + (uint64_t)(cutime > 0 ? cutime : 0) + (uint64_t)(cstime > 0 ? cstime : 0);
    ret_usage->rss_pages = rss > 0 ? (uint64_t)rss : 0;
    return 0;
}

int wrk_procstat_session_of(pid_t pid, pid_t *ret_session)
{
    struct proc_usage u;
    int rc = read_proc(pid, &u);

    if (rc == 0)
        *ret_session = u.session;
    return rc;
}

static pid_t pid_of(const char *name)
{
    char *end;
    long pid;

    if (!isdigit((unsigned char)name[0]))
        return 0;
    pid = strtol(name, &end, 10);
    return *end == '\0' && pid > 0 ? (pid_t)pid : 0;
}

/* Every live process but the kernel's threads, in *ret_procs (the caller frees it). */
static int read_all(struct proc_usage **ret_procs, size_t *ret_n)
{
    struct proc_usage *procs = NULL;
    size_t n = 0, cap = 0;
    DIR *dir = opendir("/proc");
    struct dirent *de;
    int rc = 0;

    if (dir == NULL)
        return -errno;
    while (rc == 0 && (de = readdir(dir)) != NULL) {
        pid_t pid = pid_of(de->d_name);
        struct proc_usage u;

        if (pid == 0 || read_proc(pid, &u) < 0 || u.session <= 0)
            continue; /* gone meanwhile, or a kernel thread */
        if (n == cap) {
            struct proc_usage *grown = realloc(procs, (cap = cap * 2 + 256) * sizeof(*procs));

            if (grown == NULL) {
                rc = -ENOMEM;
                break;
            }
            procs = grown;
        }
        procs[n++] = u;
    }
    closedir(dir);
    if (rc < 0) {
        free(procs);
        return rc;
    }
    *ret_procs = procs;
    *ret_n = n;
    return 0;
}

static int by_session(const void *a, const void *b)
{
    pid_t x = ((const struct proc_usage *)a)->session, y = ((const struct proc_usage *)b)->session;

    return (x > y) - (x < y);
}

int wrk_procstat_sessions(struct wrk_session_usage **ret_usage, size_t *ret_n)
{
    uint64_t tick_hz = (uint64_t)sysconf(_SC_CLK_TCK), page = (uint64_t)sysconf(_SC_PAGESIZE);
    struct wrk_session_usage *usage = NULL;
    struct proc_usage *procs = NULL;
    size_t n = 0, nsessions = 0;
    int rc = read_all(&procs, &n);

    if (rc < 0)
        return rc;
    gs_sort(procs, n, sizeof(*procs), by_session);
    usage = calloc(n + 1, sizeof(*usage));
    if (usage == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n;) {
        uint64_t ticks = 0, pages = 0;
        size_t j = i;

        for (; j < n && procs[j].session == procs[i].session; j++) {
            ticks += procs[j].ticks;
            pages += procs[j].rss_pages;
        }
        usage[nsessions++] = (struct wrk_session_usage){
            procs[i].session, ticks * 1000 / (tick_hz > 0 ? tick_hz : 100), pages * page / MIB};
        i = j;
    }
    *ret_usage = usage;
    *ret_n = nsessions;
out:
    free(procs);
    return rc;
}

const struct wrk_session_usage *wrk_procstat_find(const struct wrk_session_usage *usage, size_t n,
                                                  pid_t session)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (usage[mid].session == session)
            return &usage[mid];
        if (usage[mid].session < session)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
