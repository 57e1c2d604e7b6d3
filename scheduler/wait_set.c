/*
 * wait_set.c: a wait's jobs, sorted, with the cursor before which all have got there (see
 * wait_set.h).
 */
#include "scheduler/wait_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"

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
    gs_sort(ws->sorted, n, sizeof(*ws->sorted), gs_cmp_u64);
    for (size_t i = 0; i < n; i++) { /* a job named twice is one job */
        if (ws->n == 0 || ws->sorted[ws->n - 1] != ws->sorted[i])
            ws->sorted[ws->n++] = ws->sorted[i];
    }
    advance(ws, reached, data);
    return 0;
}

void sched_wait_set_release(struct sched_wait_set *ws)
{
    free(ws->sorted);
    *ws = (struct sched_wait_set){0};
}

bool sched_wait_set_changed(struct sched_wait_set *ws, uint64_t id, bool now_reached,
                            sched_wait_reached_fn reached, void *data)
{
    const uint64_t *hit =
        ws->n > 0 ? bsearch(&id, ws->sorted, ws->n, sizeof(id), gs_cmp_u64) : NULL;
    size_t at = hit != NULL ? (size_t)(hit - ws->sorted) : ws->n;

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
