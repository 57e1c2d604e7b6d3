/*
 * wait_set.c: a wait's jobs, sorted, with the cursor before which all have got there (see
 * wait_set.h).
 */
#include "scheduler/wait_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Moves the cursor over the jobs from it on that have got there. */
static void advance(struct sched_wait_set *ws, sched_wait_reached_fn reached, void *data)
{
    while (ws->reached < ws->n && reached(ws->sorted[ws->reached], data))
        ws->reached++;
}

int sched_wait_set_init(struct sched_wait_set *ws, const uint64_t *ids, size_t n,
                        sched_wait_reached_fn reached, void *data)
{
    *ws = (struct sched_wait_set){0};
    ws->sorted = malloc((n > 0 ? n : 1) * sizeof(*ws->sorted));
    if (ws->sorted == NULL)
        return -ENOMEM;
    if (n > 0)
        memcpy(ws->sorted, ids, n * sizeof(*ids));
    qsort(ws->sorted, n, sizeof(*ws->sorted), cmp_id);
    ws->n = n;
    advance(ws, reached, data);
    return 0;
}

void sched_wait_set_release(struct sched_wait_set *ws)
{
    free(ws->sorted);
    *ws = (struct sched_wait_set){0};
}

/* The first index of id, or n. */
static size_t find(const struct sched_wait_set *ws, uint64_t id)
{
    size_t lo = 0, hi = ws->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (ws->sorted[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ws->n && ws->sorted[lo] == id ? lo : ws->n;
}

bool sched_wait_set_changed(struct sched_wait_set *ws, uint64_t id, bool now_reached,
                            sched_wait_reached_fn reached, void *data)
{
    size_t at = find(ws, id);

    if (at == ws->n)
        return sched_wait_set_done(ws);
    if (!now_reached) {
        if (at < ws->reached)
            ws->reached = at;
        return false;
    }
    if (at == ws->reached)
        advance(ws, reached, data);
    return sched_wait_set_done(ws);
}
