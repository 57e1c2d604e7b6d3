/*
 * report.h: sreport cluster utilization's arithmetic, over the history gschedd stores
 * (store.h): when each node was schedulable and how big it was, and which cores and GPUs
 * each job attempt held on which node, from when to when. Pure: no I/O, no clock (now is a
 * parameter); gschedd's sched_report.c reads the rows and answers with the result.
 *
 * For each resource (cores, GPUs), in units x ms over the window [start, end):
 *   reported:  every node's size over the time it was known (from its first history row);
 *   allocated: what job attempts held there, over the same time;
 *   plnd_down: what nodes in a Flags=MAINT reservation had (Slurm's PLND Down: planned
 *              downtime), down or not, less what jobs held on them then;
 *   down:      what nodes down or drained had outside maintenance, less what jobs still
 *              held on them then;
 *   idle:      the rest (reported - allocated - down - plnd_down; never below 0).
 * A node's state holds from its row until its next one (or the window's end): a gap while
 * gschedd itself was stopped counts as the state before it.
 */
#ifndef SCHED_REPORT_H
#define SCHED_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One node history row: from at_ms node is schedulable (up) or not, in a MAINT reservation
 * (maint) or not. */
struct sched_report_state {
    const char *node;
    uint64_t at_ms;
    bool up, maint;
    uint32_t cores, gpus;
};

/* One attempt's allocation on one node; end_ms 0: still held. counted is
 * sched_report_compute's: the ms of it that count (in the window, while its node was
 * known), so that callers can sum allocations by their own keys (user, account). */
struct sched_report_alloc {
    const char *node;
    uint64_t start_ms, end_ms;
    uint32_t cores, gpus;
    const char *user, *account; /* the caller's; not read here */
    uint64_t counted;
};

enum { SCHED_REPORT_CPU = 0, SCHED_REPORT_GPU, SCHED_REPORT_NTRES };

struct sched_report_usage {
    uint64_t allocated, down, plnd_down, idle, reported;
};

/*
 * Fills ret[SCHED_REPORT_CPU] and ret[SCHED_REPORT_GPU] for [start_ms, end_ms) and
 * *ret_known_since (the first history row's time, 0 with none). states and allocs in any
 * order; they are sorted in place (by node, then time).
 */
void sched_report_compute(struct sched_report_state *states, size_t nstates,
                          struct sched_report_alloc *allocs, size_t nallocs, uint64_t start_ms,
                          uint64_t end_ms, struct sched_report_usage ret[SCHED_REPORT_NTRES],
                          uint64_t *ret_known_since);

#endif
