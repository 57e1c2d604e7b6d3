/*
 * report.c: sreport cluster utilization's arithmetic (report.h). Node by node: its
 * history rows become intervals of up, down or in maintenance over the window, its size
 * times their length is reported (and down or planned down, for those); each allocation on
 * it counts over the part of the window the node was known, and the part of that which fell
 * while the node was down or in maintenance comes off that time, so a job running on a
 * draining node is allocated, not down.
 */
#include "scheduler/report.h"

#include <stdlib.h>
#include <string.h>

#include "common/sort.h"

static int by_node_time(const void *pa, const void *pb)
{
    const struct sched_report_state *a = pa, *b = pb;
    int c = strcmp(a->node, b->node);

    if (c != 0)
        return c;
    return a->at_ms < b->at_ms ? -1 : a->at_ms > b->at_ms;
}

static int by_node(const void *pa, const void *pb)
{
    const struct sched_report_alloc *a = pa, *b = pb;

    return strcmp(a->node, b->node);
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

    return hi > lo ? hi - lo : 0;
}

/* The length of [a0, a1) within both [b0, b1) and [c0, c1). */
static uint64_t overlap3(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1, uint64_t c0,
                         uint64_t c1)
{
    return overlap(a0 > b0 ? a0 : b0, a1 < b1 ? a1 : b1, c0, c1);
}

/* One node: its rows st[0..n) (sorted by time), its allocations al[0..nal). */
static void one_node(const struct sched_report_state *st, size_t n, struct sched_report_alloc *al,
                     size_t nal, uint64_t start, uint64_t end, struct sched_report_usage *u)
{
    /* [0]: down, [1]: planned down; each per TRES, as is what jobs held in that time */
    uint64_t off[2][SCHED_REPORT_NTRES] = {{0}}, held[2][SCHED_REPORT_NTRES] = {{0}};
    uint64_t known = st[0].at_ms;

    for (size_t i = 0; i < n; i++) {
        uint64_t to = i + 1 < n ? st[i + 1].at_ms : end, len = overlap(st[i].at_ms, to, start, end);

        u[SCHED_REPORT_CPU].reported += (uint64_t)st[i].cores * len;
        u[SCHED_REPORT_GPU].reported += (uint64_t)st[i].gpus * len;
        if (!st[i].up || st[i].maint) {
            off[st[i].maint][SCHED_REPORT_CPU] += (uint64_t)st[i].cores * len;
            off[st[i].maint][SCHED_REPORT_GPU] += (uint64_t)st[i].gpus * len;
        }
    }
    for (size_t k = 0; k < nal; k++) {
        struct sched_report_alloc *a = &al[k];
        uint64_t a1 = a->end_ms != 0 ? a->end_ms : end;
        uint64_t from = start > known ? start : known, len = overlap(a->start_ms, a1, from, end);

        a->counted = len;
        u[SCHED_REPORT_CPU].allocated += (uint64_t)a->cores * len;
        u[SCHED_REPORT_GPU].allocated += (uint64_t)a->gpus * len;
        for (size_t i = 0; i < n; i++) {
            uint64_t to = i + 1 < n ? st[i + 1].at_ms : end, both;

            if (st[i].up && !st[i].maint)
                continue;
            both = overlap3(a->start_ms, a1, st[i].at_ms, to, start, end);
            held[st[i].maint][SCHED_REPORT_CPU] += (uint64_t)a->cores * both;
            held[st[i].maint][SCHED_REPORT_GPU] += (uint64_t)a->gpus * both;
        }
    }
    for (int t = 0; t < SCHED_REPORT_NTRES; t++) {
        u[t].down += off[0][t] > held[0][t] ? off[0][t] - held[0][t] : 0;
        u[t].plnd_down += off[1][t] > held[1][t] ? off[1][t] - held[1][t] : 0;
    }
}

void sched_report_compute(struct sched_report_state *states, size_t nstates,
                          struct sched_report_alloc *allocs, size_t nallocs, uint64_t start_ms,
                          uint64_t end_ms, struct sched_report_usage ret[SCHED_REPORT_NTRES],
                          uint64_t *ret_known_since)
{
    size_t k = 0;

    memset(ret, 0, SCHED_REPORT_NTRES * sizeof(*ret));
    *ret_known_since = 0;
    if (nstates > 0)
        gs_sort(states, nstates, sizeof(*states), by_node_time);
    for (size_t i = 0; i < nallocs; i++)
        allocs[i].counted = 0; /* those on nodes without history stay so */
    if (nallocs > 0)
        gs_sort(allocs, nallocs, sizeof(*allocs), by_node);
    for (size_t i = 0; i < nstates;) {
        size_t j = i, a0;

        while (j < nstates && strcmp(states[j].node, states[i].node) == 0)
            j++;
        if (*ret_known_since == 0 || states[i].at_ms < *ret_known_since)
            *ret_known_since = states[i].at_ms;
        while (k < nallocs && strcmp(allocs[k].node, states[i].node) < 0)
            k++; /* a node without history: nothing known of it */
        a0 = k;
        while (k < nallocs && strcmp(allocs[k].node, states[i].node) == 0)
            k++;
        if (end_ms > start_ms)
            one_node(&states[i], j - i, &allocs[a0], k - a0, start_ms, end_ms, ret);
        i = j;
    }
    for (int t = 0; t < SCHED_REPORT_NTRES; t++) {
        uint64_t used = ret[t].allocated + ret[t].down + ret[t].plnd_down;

        ret[t].idle = ret[t].reported > used ? ret[t].reported - used : 0;
    }
}
