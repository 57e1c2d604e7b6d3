/*
 * license_plan.c: licenses over time in a planning pass (see license_plan.h).
 *
 * What is free of a license at a time s is what is free now, plus what the holds with an
 * end by then gave back, less what the reservations running at s took. Two kinds of time
 * are asked about, and neither walks the holds (a busy cluster has thousands): now and the
 * times plan.c's shadow walk comes to, which it tells of each hold's end as it passes it
 * (sched_license_walk_back); and the reservations' starts, whose counts are kept up to date
 * as holds and reservations are added (at_resv). A job may take some now only if it leaves
 * enough at each reservation's start before its own end: what is free only falls between
 * two times unless something is given back, and a reservation's start is where it falls.
 */
#include "scheduler/license_plan.h"

#include <errno.h>
#include <stdlib.h>

int sched_license_plan_init(struct sched_license_plan *lp, const uint32_t *total, uint32_t n,
                            uint64_t now_s, size_t max_holds, size_t max_resv)
{
    *lp = (struct sched_license_plan){.total = total, .n = n, .now_s = now_s};
    if (n == 0)
        return 0;
    lp->free = malloc(n * sizeof(*lp->free));
    lp->claimed = calloc(n, sizeof(*lp->claimed));
    lp->holds = malloc((max_holds + 1) * sizeof(*lp->holds));
    lp->resv = malloc((max_resv + 1) * sizeof(*lp->resv));
    lp->at_resv = malloc((max_resv + 1) * n * sizeof(*lp->at_resv));
    if (lp->free == NULL || lp->claimed == NULL || lp->holds == NULL || lp->resv == NULL ||
        lp->at_resv == NULL) {
        sched_license_plan_release(lp);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        lp->free[i] = total[i];
    lp->max_holds = max_holds;
    lp->max_resv = max_resv;
    return 0;
}

void sched_license_plan_release(struct sched_license_plan *lp)
{
    free(lp->free);
    free(lp->claimed);
    free(lp->holds);
    free(lp->resv);
    free(lp->at_resv);
    *lp = (struct sched_license_plan){0};
}

bool sched_license_plan_ever(const struct sched_license_plan *lp,
                             const struct sched_license_need *need, uint32_t nneed)
{
    for (uint32_t i = 0; i < nneed; i++) {
        if (need[i].license >= lp->n || need[i].count > lp->total[need[i].license])
            return false;
    }
    return true;
}

/* Whether a hold ending at end_s has given its counts back by s: ends count only after
 * now, since a job past its limit still holds what it holds until it has gone. */
static bool back_by(const struct sched_license_plan *lp, uint64_t end_s, uint64_t s)
{
    return s > lp->now_s && end_s <= s;
}

static bool running_at(const struct sched_license_hold *h, uint64_t s)
{
    return h->start_s <= s && s < h->end_s;
}

uint32_t sched_license_plan_hold(struct sched_license_plan *lp,
                                 const struct sched_license_need *need, uint32_t nneed,
                                 uint64_t end_s)
{
    bool any = false;

    for (uint32_t i = 0; i < nneed; i++) {
        uint32_t l = need[i].license;

        if (l >= lp->n)
            continue;
        any = true;
        lp->free[l] -= need[i].count;
        for (size_t r = 0; r < lp->nresv; r++) {
            if (!back_by(lp, end_s, lp->resv[r].start_s))
                lp->at_resv[r * lp->n + l] -= need[i].count;
        }
    }
    if (!any || end_s == UINT64_MAX || lp->nholds >= lp->max_holds)
        return SCHED_LICENSE_NO_HOLD;
    lp->holds[lp->nholds] = (struct sched_license_hold){lp->now_s, end_s, need, nneed};
    return (uint32_t)lp->nholds++;
}

void sched_license_plan_reserve(struct sched_license_plan *lp,
                                const struct sched_license_need *need, uint32_t nneed,
                                uint64_t start_s, uint64_t end_s)
{
    size_t at = lp->nresv;
    int64_t *row = lp->at_resv + at * lp->n;

    if (lp->n == 0 || at >= lp->max_resv)
        return;
    lp->resv[lp->nresv++] = (struct sched_license_hold){start_s, end_s, need, nneed};
    for (uint32_t l = 0; l < lp->n; l++)
        row[l] = lp->free[l];
    for (size_t h = 0; h < lp->nholds; h++) {
        const struct sched_license_hold *hold = &lp->holds[h];

        for (uint32_t i = 0; back_by(lp, hold->end_s, start_s) && i < hold->nneed; i++) {
            if (hold->need[i].license < lp->n)
                row[hold->need[i].license] += hold->need[i].count;
        }
    }
    for (size_t r = 0; r <= at; r++) { /* those running at its start take theirs from it */
        for (uint32_t i = 0; running_at(&lp->resv[r], start_s) && i < lp->resv[r].nneed; i++) {
            if (lp->resv[r].need[i].license < lp->n)
                row[lp->resv[r].need[i].license] -= lp->resv[r].need[i].count;
        }
    }
    for (size_t r = 0; r < at; r++) { /* and it from those starting while it runs */
        for (uint32_t i = 0; running_at(&lp->resv[at], lp->resv[r].start_s) && i < nneed; i++) {
            if (need[i].license < lp->n)
                lp->at_resv[r * lp->n + need[i].license] -= need[i].count;
        }
    }
}

/* How many of license h holds. */
static int64_t count_of(const struct sched_license_hold *h, uint32_t license)
{
    int64_t c = 0;

    for (uint32_t i = 0; i < h->nneed; i++)
        c += h->need[i].license == license ? h->need[i].count : 0;
    return c;
}

/*
 * Whether need fits from t until end, where free (per license) is what is free at t beside
 * the holds (late, when not NULL, added only after now): at t less the reservations
 * running then (with_resv), and at each reservation's start in (t, end).
 */
static bool window_fits(const struct sched_license_plan *lp, bool with_resv, const int64_t *free,
                        const int64_t *late, const struct sched_license_need *need, uint32_t nneed,
                        uint64_t t, uint64_t end)
{
    if (!sched_license_plan_ever(lp, need, nneed))
        return false;
    for (uint32_t k = 0; k < nneed; k++) {
        uint32_t l = need[k].license;
        int64_t at_t = free[l] + (late != NULL && t > lp->now_s ? late[l] : 0);

        if (at_t < need[k].count)
            return false; /* short before any reservation: the walk's common case */
        for (size_t r = 0; with_resv && r < lp->nresv; r++) {
            const struct sched_license_hold *res = &lp->resv[r];

            if (running_at(res, t))
                at_t -= count_of(res, l);
            if (res->start_s > t && res->start_s < end &&
                lp->at_resv[r * lp->n + l] < need[k].count)
                return false;
        }
        if (at_t < need[k].count)
            return false;
    }
    return true;
}

bool sched_license_plan_free_now(const struct sched_license_plan *lp,
                                 const struct sched_license_need *need, uint32_t nneed)
{
    return window_fits(lp, false, lp->free, NULL, need, nneed, lp->now_s, lp->now_s);
}

bool sched_license_plan_fits(const struct sched_license_plan *lp,
                             const struct sched_license_need *need, uint32_t nneed, uint64_t end)
{
    return window_fits(lp, true, lp->free, NULL, need, nneed, lp->now_s, end);
}

int sched_license_walk_init(struct sched_license_walk *w, const struct sched_license_plan *lp)
{
    *w = (struct sched_license_walk){0};
    if (lp->n == 0)
        return 0;
    w->free = malloc(lp->n * sizeof(*w->free));
    w->overdue = calloc(lp->n, sizeof(*w->overdue));
    if (w->free == NULL || w->overdue == NULL) {
        sched_license_walk_release(w);
        return -ENOMEM;
    }
    for (uint32_t l = 0; l < lp->n; l++)
        w->free[l] = lp->free[l];
    return 0;
}

void sched_license_walk_release(struct sched_license_walk *w)
{
    free(w->free);
    free(w->overdue);
    *w = (struct sched_license_walk){0};
}

void sched_license_walk_back(struct sched_license_walk *w, const struct sched_license_plan *lp,
                             uint32_t hold, uint64_t at_s)
{
    const struct sched_license_hold *h = hold < lp->nholds ? &lp->holds[hold] : NULL;

    for (uint32_t i = 0; h != NULL && i < h->nneed; i++) {
        if (h->need[i].license < lp->n)
            (at_s > lp->now_s ? w->free : w->overdue)[h->need[i].license] += h->need[i].count;
    }
}

bool sched_license_walk_fits(const struct sched_license_walk *w,
                             const struct sched_license_plan *lp, bool with_resv,
                             const struct sched_license_need *need, uint32_t nneed, uint64_t t,
                             uint64_t end)
{
    return lp->n > 0 && window_fits(lp, with_resv, w->free, w->overdue, need, nneed, t, end);
}

void sched_license_plan_claim(struct sched_license_plan *lp, const struct sched_license_need *need,
                              uint32_t nneed)
{
    for (uint32_t i = 0; i < nneed; i++) {
        if (need[i].license < lp->n)
            lp->claimed[need[i].license] = true;
    }
}

bool sched_license_plan_claimed(const struct sched_license_plan *lp,
                                const struct sched_license_need *need, uint32_t nneed)
{
    for (uint32_t i = 0; i < nneed; i++) {
        if (need[i].license < lp->n && lp->claimed[need[i].license])
            return true;
    }
    return false;
}
