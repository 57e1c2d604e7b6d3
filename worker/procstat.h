/*
 * procstat.h: the node's CPU, memory and load and its processes' CPU time and resident
 * memory, read from /proc for the worker's telemetry (worker/telemetry.h).
 *
 * Tasks are accounted by session: each gsched task runs in its own session whose id is
 * the task's pid (worker/launch.c), and what it starts stays in that session unless it
 * calls setsid() itself. A session's CPU time is the user + system time of its live
 * processes plus what they collected from children they reaped (cutime + cstime), so the
 * figure does not drop when a child ends; its RSS is the sum over its live processes
 * (shared pages count once per process, as `ps` shows them).
 *
 * Plain functions with no state: any thread (the telemetry calls them from libuv's pool).
 */
#ifndef WRK_PROCSTAT_H
#define WRK_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The first line of /proc/stat, in clock ticks since boot. */
struct wrk_procstat_cpu {
    uint64_t busy;  /* all but idle and iowait */
    uint64_t total; /* user nice system idle iowait irq softirq steal */
};

struct wrk_session_usage {
    pid_t session;
    uint64_t cpu_ms;
    uint64_t rss_mib;
};

/* Returns 0 or a negative errno (-EIO when /proc/stat makes no sense). */
int wrk_procstat_read_cpu(struct wrk_procstat_cpu *ret_cpu);
/* Busy share of the ticks between two readings, 0-100; 0 when no tick passed. */
uint32_t wrk_procstat_cpu_pct(const struct wrk_procstat_cpu *from,
                              const struct wrk_procstat_cpu *to);

/* MemTotal - MemAvailable and MemTotal of /proc/meminfo. Returns 0 or a negative errno. */
int wrk_procstat_read_memory(uint64_t *ret_used_mib, uint64_t *ret_total_mib);
/* The 1-minute load average times 100. Returns 0 or a negative errno. */
int wrk_procstat_read_loadavg(uint32_t *ret_x100);

/* The session id of process pid. Returns 0, -ENOENT when it is gone, or -EIO. */
int wrk_procstat_session_of(pid_t pid, pid_t *ret_session);

/*
 * Every session on the node (but 0, the kernel's threads) with its CPU time and RSS, in
 * *ret_usage (sorted by session; the caller frees it) and *ret_n. Reads /proc/PID/stat of
 * every process once. Returns 0, -ENOMEM, or the error opening /proc.
 */
int wrk_procstat_sessions(struct wrk_session_usage **ret_usage, size_t *ret_n);
/* The entry of session in a sorted list, or NULL. */
const struct wrk_session_usage *wrk_procstat_find(const struct wrk_session_usage *usage, size_t n,
                                                  pid_t session);

#endif
