/*
 * sched_history_purge.c: the store's old records deleted, as slurmdbd's PurgeJobAfter and
 * PurgeEventAfter have it do, so that a long-lived cluster's database does not grow by
 * every job it ever ran (sched_purge.c only takes finished jobs out of memory).
 *
 * With scheduler.purge_after > 0, once at start and then hourly, the jobs that ended more
 * than purge_after ago go from the store with their tasks, steps, allocations and events,
 * as do the events of no job and node history before then (sched_store_purge): sacct,
 * gsched show and sreport no longer see them. Jobs gschedd still holds in memory (a pending
 * job depends on one, say) keep their rows, so what the loop knows always has its row.
 *
 * The deletes run on the journal's writer thread, in batches of PURGE_BATCH jobs, each one
 * change of its own: the submits committed meanwhile wait for one batch at most, never for
 * the whole purge. The next batch is queued from the previous one's done callback.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"

#define PURGE_BATCH 1000
#define PURGE_EVERY_MS (3600 * 1000)

struct purge_run {
    struct sched_ctx *s;
    struct sched_store_purge p;
    uint64_t *keep;
    size_t total;
};

static int apply(struct sched_store *store, void *data)
{
    struct purge_run *r = data;

    return sched_store_purge(store, &r->p);
}

static void finish(struct purge_run *r, int status)
{
    struct sched_ctx *s = r->s;

    s->history_purge_busy = false;
    s->history_purge_next_mono = gs_clock_mono_ms() + PURGE_EVERY_MS;
    if (status < 0)
        GS_LOG(GS_LOG_WARN, "error=\"%s\" purged=%zu old history not purged, next try in an hour",
               gs_strerror(status), r->total);
    else if (r->total > 0)
        GS_LOG(GS_LOG_INFO,
               "purged=%zu purged_total=%llu purge_after_s=%llu jobs that ended before %llu "
               "deleted from the store, with older node history and events",
               r->total, (unsigned long long)s->history_purged,
               (unsigned long long)(s->cfg->purge_after_ms / 1000),
               (unsigned long long)r->p.before_ms);
    free(r->keep);
    free(r);
}

static void done(int status, void *data)
{
    struct purge_run *r = data;
    int rc;

    if (status == 0) {
        r->total += r->p.deleted;
        r->s->history_purged += r->p.deleted;
    }
    if (status < 0 || r->p.done || r->s->stopping) {
        finish(r, status);
        return;
    }
    r->p.after_id = r->p.last_id;
    rc = sched_journal_submit(r->s->journal, apply, done, r);
    if (rc < 0)
        finish(r, rc);
}

/* The ids of the finished jobs gschedd holds, ascending (the table is in id order). */
static int held_ids(struct sched_ctx *s, uint64_t **ret, size_t *ret_n)
{
    size_t n = sched_jobs_count(s->jobs), k = 0;
    uint64_t *v = malloc((n + 1) * sizeof(*v));

    if (v == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (sched_job_finished(job))
            v[k++] = job->id;
    }
    *ret = v;
    *ret_n = k;
    return 0;
}

void sched_history_purge_tick(struct sched_ctx *s)
{
    uint64_t now = gs_clock_wall_ms(), mono = gs_clock_mono_ms();
    struct purge_run *r;
    int rc;

    if (s->cfg->purge_after_ms == 0 || s->stopping || s->journal == NULL || s->history_purge_busy ||
        mono < s->history_purge_next_mono || now <= s->cfg->purge_after_ms)
        return;
    r = calloc(1, sizeof(*r));
    rc = r == NULL ? -ENOMEM : held_ids(s, &r->keep, &r->p.nkeep);
    if (rc == 0) {
        r->s = s;
        r->p.keep = r->keep;
        r->p.before_ms = now - s->cfg->purge_after_ms;
        r->p.max_jobs = PURGE_BATCH;
        rc = sched_journal_submit(s->journal, apply, done, r);
    }
    if (rc < 0) {
        GS_LOG(GS_LOG_WARN, "error=\"%s\" old history not purged, next try in an hour",
               gs_strerror(rc));
        s->history_purge_next_mono = mono + PURGE_EVERY_MS;
        if (r != NULL)
            free(r->keep);
        free(r);
        return;
    }
    s->history_purge_busy = true;
}
