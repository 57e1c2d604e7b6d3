/*
 * sched_purge.c: finished jobs leave gschedd's memory, as Slurm's MinJobAge has slurmctld
 * purge them, and come back from the store when asked for.
 *
 * Without it the job table grows by every job ever run (about 1.3 KB each: spec, tasks,
 * history). From the cron, a finished job is forgotten once it ended more than
 * scheduler.min_job_age ago (default 5 min; "0s": never), unless something still needs its
 * state in memory:
 *   - a pending job depends on it (jobs.c judges dependencies from the other job's state;
 *     a dependency on an array's first element stands for every element, which all stay);
 *   - it is an element of an array with an element still unfinished (scancel/squeue of the
 *     array id go through the first element);
 *   - a `gsched wait` names it;
 *   - it was submitted with a client key less than SCHED_PURGE_KEY_HOLD_MS ago (a retried
 *     submit must find it; an array's elements stay with their first); its key is dropped
 *     with it.
 * Its rows (job, tasks, events) stay in SQLite. The table removes it in one pass that keeps
 * id order and plan_from (jobs.h, sched_jobs_forget). A new submit naming a forgotten job as
 * a dependency is refused as unknown, as slurmctld refuses a purged one.
 *
 * Reading back (gsched show, sacct, queue --all): the store belongs to the journal's writer
 * thread, so a read is queued there (sched_journal_read) with copies of what it needs; the
 * writer copies the rows out (no loop state touched), and the loop, in the read's done
 * callback, makes detached jobs of them (sched_persist.c) for sched_query.c to answer with.
 * The CLI is held meanwhile and answered only then; the loop never waits on SQLite.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/gsched.pb-c.h"
#include "scheduler/sched_internal.h"
#include "scheduler/submit_keys.h"
#include "common/sort.h"

/* --- what keeps a finished job in memory --------------------------------------------------- */

static int push_id(struct sched_purge_pins *p, uint64_t id)
{
    if (p->nids == p->capids) {
        size_t cap = p->capids ? p->capids * 2 : 16;
        uint64_t *v = realloc(p->ids, cap * sizeof(*v));

        if (v == NULL)
            return -ENOMEM;
        p->ids = v;
        p->capids = cap;
    }
    p->ids[p->nids++] = id;
    return 0;
}

static int push_array(struct sched_purge_pins *p, uint64_t id, uint32_t count)
{
    if (p->narrays == p->caparrays) {
        size_t cap = p->caparrays ? p->caparrays * 2 : 16;
        struct sched_purge_array *v = realloc(p->arrays, cap * sizeof(*v));

        if (v == NULL)
            return -ENOMEM;
        p->arrays = v;
        p->caparrays = cap;
    }
    p->arrays[p->narrays++] = (struct sched_purge_array){id, count > 0 ? count : 1};
    return 0;
}

static int cmp_array(const void *a, const void *b)
{
    return gs_cmp_u64(&((const struct sched_purge_array *)a)->id,
                      &((const struct sched_purge_array *)b)->id);
}

/* Sorts and drops repeats (of arrays: the largest count kept). */
static void settle(struct sched_purge_pins *p)
{
    size_t k = 0;

    gs_sort(p->ids, p->nids, sizeof(*p->ids), gs_cmp_u64);
    for (size_t i = 0; i < p->nids; i++) {
        if (k == 0 || p->ids[k - 1] != p->ids[i])
            p->ids[k++] = p->ids[i];
    }
    p->nids = k;
    gs_sort(p->arrays, p->narrays, sizeof(*p->arrays), cmp_array);
    k = 0;
    for (size_t i = 0; i < p->narrays; i++) {
        if (k > 0 && p->arrays[k - 1].id == p->arrays[i].id) {
            if (p->arrays[i].count > p->arrays[k - 1].count)
                p->arrays[k - 1].count = p->arrays[i].count;
            continue;
        }
        p->arrays[k++] = p->arrays[i];
    }
    p->narrays = k;
}

/* A pending job's dependencies: the jobs, and whole arrays named by their first id. */
static int pin_deps(struct sched_ctx *s, struct sched_purge_pins *p, const struct gs_jobspec *sp)
{
    int rc = 0;

    for (size_t d = 0; rc == 0 && d < sp->ndeps; d++) {
        const struct sched_job *other = sched_jobs_find(s->jobs, sp->deps[d].job_id);

        rc = push_id(p, sp->deps[d].job_id);
        if (rc == 0 && other != NULL && other->spec->array.array_job_id == other->id)
            rc = push_array(p, other->id, other->spec->array.count);
    }
    return rc;
}

int sched_purge_pins_build(struct sched_ctx *s, struct sched_purge_pins *p)
{
    size_t n = sched_jobs_count(s->jobs);
    int rc = 0;

    p->nids = p->narrays = 0;
    /* Every job before plan_from has ended: what pins lies in the rest. */
    for (size_t i = s->plan_from; rc == 0 && i < n; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);
        const struct gs_jobspec *sp = job->spec;

        if (sched_job_finished(job))
            continue;
        if (sp->array.array_job_id != 0)
            rc = push_array(p, sp->array.array_job_id, sp->array.count);
        if (rc == 0 && job->state == SCHED_JOB_PENDING)
            rc = pin_deps(s, p, sp);
    }
    for (const struct sched_waiter *w = s->waiters; rc == 0 && w != NULL; w = w->next) {
        for (size_t i = 0; rc == 0 && i < w->njobs; i++)
            rc = push_id(p, w->job_ids[i]);
    }
    if (rc == 0)
        settle(p);
    return rc;
}

bool sched_purge_pinned(const struct sched_purge_pins *p, const struct sched_job *job)
{
    uint64_t array = job->spec->array.array_job_id;
    struct sched_purge_array key = {array, 0};

    if (p->nids > 0 && bsearch(&job->id, p->ids, p->nids, sizeof(*p->ids), gs_cmp_u64) != NULL)
        return true;
    return array != 0 && p->narrays > 0 &&
           bsearch(&key, p->arrays, p->narrays, sizeof(*p->arrays), cmp_array) != NULL;
}

void sched_purge_pins_release(struct sched_purge_pins *p)
{
    free(p->ids);
    free(p->arrays);
    memset(p, 0, sizeof(*p));
}

/* --- forgetting, from the cron ------------------------------------------------------------- */

struct forget_run {
    struct sched_ctx *s;
    struct sched_purge_pins pins;
    uint64_t now;
};

/*
 * Ended over min_job_age ago, and past its submit key's hold. The hold covers every array
 * element (a retried submit's reply counts them; only the first holds the key): elements
 * are submitted together, with one submit time. Never looks at the table (forget_one runs
 * while it is compacted).
 */
static bool old_enough(const struct sched_ctx *s, const struct sched_job *job, uint64_t now)
{
    uint64_t ended = job->end_ms;
    bool keyed = job->submit_key != NULL || job->spec->array.array_job_id != 0;

    if (ended == 0) /* a row from before end times were kept: its last known time */
        ended = job->start_ms > job->submit_ms ? job->start_ms : job->submit_ms;
    if (now < ended || now - ended < s->cfg->min_job_age_ms)
        return false;
    return !keyed || (now >= job->submit_ms && now - job->submit_ms >= SCHED_PURGE_KEY_HOLD_MS);
}

static bool forget_one(void *data, const struct sched_job *job)
{
    struct forget_run *r = data;
    struct sched_ctx *s = r->s;

    if (!old_enough(s, job, r->now) || sched_purge_pinned(&r->pins, job))
        return false;
    if (job->submit_key != NULL &&
        sched_submit_keys_get(s->submit_keys, job->uid, job->submit_key) == job->id)
        sched_submit_keys_drop(s->submit_keys, job->uid, job->submit_key);
    return true;
}

void sched_purge_tick(struct sched_ctx *s)
{
    struct forget_run r = {.s = s, .now = gs_clock_wall_ms()};
    size_t n = sched_jobs_count(s->jobs), forgotten;
    bool any = false;
    int rc;

    if (s->cfg->min_job_age_ms == 0 || s->stopping || s->journal == NULL)
        return;
    for (size_t i = 0; i < n && !any; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);
        any = sched_job_finished(job) && old_enough(s, job, r.now);
    }
    if (!any)
        return;
    rc = sched_purge_pins_build(s, &r.pins);
    if (rc < 0) {
        GS_LOG(GS_LOG_WARN, "error=\"%s\" finished jobs not forgotten this time", gs_strerror(rc));
        sched_purge_pins_release(&r.pins);
        return;
    }
    forgotten = sched_jobs_forget(s->jobs, forget_one, &r, &s->plan_from);
    sched_purge_pins_release(&r.pins);
    if (forgotten == 0)
        return;
    s->jobs_forgotten += forgotten;
    s->jobs_in_store_only = true;
    GS_LOG(GS_LOG_INFO,
           "forgotten=%zu jobs=%zu forgotten_total=%llu min_job_age_s=%llu finished jobs "
           "forgotten, their rows stay in the store",
           forgotten, sched_jobs_count(s->jobs), (unsigned long long)s->jobs_forgotten,
           (unsigned long long)(s->cfg->min_job_age_ms / 1000));
}

/* --- reading forgotten jobs back --------------------------------------------------------- */

/* A job row copied out of SQLite: its strings and blobs in one allocation it owns. */
struct stored_job {
    struct sched_job_row row;
    char *buf;
};

struct stored_task {
    struct sched_task_row row;
    char *node;
};

struct stored_event {
    uint64_t at_ms, job_id;
    char *kind, *detail;
};

struct stored_step {
    struct sched_step_row row;
    char *name, *nodelist, *max_rss_node;
};

struct stored_read {
    struct sched_ctx *s;
    struct sched_cli *cli;
    uint64_t request_id;
    sched_stored_fn done;
    void *arg;
    /* the query, copied */
    uint64_t *ids;
    size_t nids;
    char *name, *user;
    uint32_t states, max;
    bool with_history, arrays, with_steps;
    uint64_t ended_before_ms;
    /* what the writer thread read */
    struct stored_job *jobs;
    size_t njobs, capjobs;
    struct stored_task *tasks;
    size_t ntasks, captasks;
    struct stored_event *events;
    size_t nevents, capevents;
    struct stored_step *steps;
    size_t nsteps, capsteps;
    uint64_t array_of; /* copy_element: only elements of this array */
};

static void *grow(void **v, size_t *n, size_t *cap, size_t size)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        char *nv = realloc(*v, c * size);

        if (nv == NULL)
            return NULL;
        *v = nv;
        *cap = c;
    }
    return (char *)*v + (*n)++ * size;
}

static size_t text_len(const char *s)
{
    return s != NULL ? strlen(s) + 1 : 0;
}

/* Copies s into *p (advanced), or leaves NULL. */
static const char *put_text(char **p, const char *s)
{
    char *at = *p;

    if (s == NULL)
        return NULL;
    memcpy(at, s, strlen(s) + 1);
    *p += strlen(s) + 1;
    return at;
}

static const void *put_blob(char **p, const void *b, size_t len)
{
    char *at = *p;

    if (b == NULL)
        return NULL;
    if (len > 0)
        memcpy(at, b, len);
    *p += len;
    return at;
}

/* Writer thread: one job row into r->jobs. */
static int copy_job(const struct sched_job_row *row, void *data)
{
    struct stored_read *r = data;
    size_t len = text_len(row->name) + text_len(row->user) + text_len(row->reason) +
                 text_len(row->submit_key) + (row->spec != NULL ? row->spec_len : 0) +
                 (row->usage != NULL ? row->usage_len : 0) + 1;
    struct stored_job *j;
    char *p;

    if (r->array_of != 0 && row->id != r->array_of) {
        /* an element of the array being read: its spec must say so (ids may be others') */
        Gs__JobSpec *pb = gs__job_spec__unpack(NULL, row->spec_len, row->spec);
        bool mine = pb != NULL && pb->array != NULL && pb->array->array_job_id == r->array_of;

        gs__job_spec__free_unpacked(pb, NULL);
        if (!mine)
            return 0;
    }
    j = grow((void **)&r->jobs, &r->njobs, &r->capjobs, sizeof(*j));
    if (j == NULL)
        return -ENOMEM;
    j->buf = p = malloc(len);
    if (p == NULL) {
        r->njobs--;
        return -ENOMEM;
    }
    j->row = *row;
    j->row.name = put_text(&p, row->name);
    j->row.user = put_text(&p, row->user);
    j->row.reason = put_text(&p, row->reason);
    j->row.submit_key = put_text(&p, row->submit_key);
    j->row.spec = put_blob(&p, row->spec, row->spec_len);
    j->row.usage = put_blob(&p, row->usage, row->usage_len);
    j->row.alloc = NULL; /* finished: no allocation to show */
    j->row.alloc_len = 0;
    return 0;
}

static int copy_task(const struct sched_task_row *row, void *data)
{
    struct stored_read *r = data;
    struct stored_task *t = grow((void **)&r->tasks, &r->ntasks, &r->captasks, sizeof(*t));

    if (t == NULL)
        return -ENOMEM;
    t->row = *row;
    t->node = strdup(row->node != NULL ? row->node : "");
    if (t->node == NULL) {
        r->ntasks--;
        return -ENOMEM;
    }
    t->row.node = t->node;
    return 0;
}

static int copy_event(uint64_t at_ms, uint64_t job_id, const char *node, const char *kind,
                      const char *detail, void *data)
{
    struct stored_read *r = data;
    struct stored_event *e = grow((void **)&r->events, &r->nevents, &r->capevents, sizeof(*e));

    (void)node;
    if (e == NULL)
        return -ENOMEM;
    e->at_ms = at_ms;
    e->job_id = job_id;
    e->kind = strdup(kind != NULL ? kind : "");
    e->detail = strdup(detail != NULL ? detail : "");
    if (e->kind == NULL || e->detail == NULL) {
        free(e->kind);
        free(e->detail);
        r->nevents--;
        return -ENOMEM;
    }
    return 0;
}

static int copy_step(const struct sched_step_row *row, void *data)
{
    struct stored_read *r = data;
    struct stored_step *st = grow((void **)&r->steps, &r->nsteps, &r->capsteps, sizeof(*st));

    if (st == NULL)
        return -ENOMEM;
    st->row = *row;
    st->name = strdup(row->name != NULL ? row->name : "");
    st->nodelist = strdup(row->nodelist != NULL ? row->nodelist : "");
    st->max_rss_node = strdup(row->max_rss_node != NULL ? row->max_rss_node : "");
    if (st->name == NULL || st->nodelist == NULL || st->max_rss_node == NULL) {
        free(st->name);
        free(st->nodelist);
        free(st->max_rss_node);
        r->nsteps--;
        return -ENOMEM;
    }
    st->row.name = st->name;
    st->row.nodelist = st->nodelist;
    st->row.max_rss_node = st->max_rss_node;
    return 0;
}

static int cmp_stored(const void *a, const void *b)
{
    return gs_cmp_u64(&((const struct stored_job *)a)->row.id,
                      &((const struct stored_job *)b)->row.id);
}

/* Writer thread: the jobs named (arrays whole when asked) and, for each, its array. */
static int read_ids(struct sched_store *store, struct stored_read *r)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < r->nids && r->njobs < r->max; i++) {
        size_t before = r->njobs;
        const struct sched_job_row *row;
        Gs__JobSpec *pb;
        uint64_t last;

        rc = sched_store_load_jobs_range(store, r->ids[i], r->ids[i], copy_job, r);
        if (rc < 0 || !r->arrays || r->njobs == before)
            continue;
        row = &r->jobs[before].row;
        pb = gs__job_spec__unpack(NULL, row->spec_len, row->spec);
        if (pb != NULL && pb->array != NULL && pb->array->array_job_id == row->id &&
            pb->array->task_count > 1) {
            last = row->id + pb->array->task_count - 1;
            r->array_of = row->id;
            rc = sched_store_load_jobs_range(store, row->id + 1, last, copy_job, r);
            r->array_of = 0;
        }
        gs__job_spec__free_unpacked(pb, NULL);
    }
    return rc;
}

/* Writer thread: the rows asked for, then their tasks (and events). Loop state untouched. */
static int read_rows(struct sched_store *store, void *data)
{
    struct stored_read *r = data;
    struct sched_store_job_filter f = {.name = r->name,
                                       .user = r->user,
                                       .states = r->states,
                                       .ended_before_ms = r->ended_before_ms,
                                       .max = r->max};
    size_t k = 0;
    int rc;

    if (r->nids > 0)
        rc = read_ids(store, r);
    else
        rc = sched_store_load_finished(store, &f, copy_job, r);
    if (rc < 0)
        return rc;
    gs_sort(r->jobs, r->njobs, sizeof(*r->jobs), cmp_stored);
    for (size_t i = 0; i < r->njobs; i++) { /* an id named twice is read twice */
        if (k > 0 && r->jobs[k - 1].row.id == r->jobs[i].row.id) {
            free(r->jobs[i].buf);
            continue;
        }
        r->jobs[k++] = r->jobs[i];
    }
    r->njobs = k;
    for (size_t i = 0; rc == 0 && i < r->njobs; i++) {
        uint64_t id = r->jobs[i].row.id;

        rc = sched_store_load_tasks_range(store, id, id, copy_task, r);
        if (rc == 0 && r->with_history)
            rc = sched_store_load_events_range(store, id, id, copy_event, r);
        if (rc == 0 && r->with_steps)
            rc = sched_store_load_steps_range(store, id, id, copy_step, r);
    }
    return rc;
}

static void read_free(struct stored_read *r)
{
    for (size_t i = 0; i < r->njobs; i++)
        free(r->jobs[i].buf);
    for (size_t i = 0; i < r->ntasks; i++)
        free(r->tasks[i].node);
    for (size_t i = 0; i < r->nevents; i++) {
        free(r->events[i].kind);
        free(r->events[i].detail);
    }
    for (size_t i = 0; i < r->nsteps; i++) {
        free(r->steps[i].name);
        free(r->steps[i].nodelist);
        free(r->steps[i].max_rss_node);
    }
    free(r->jobs);
    free(r->tasks);
    free(r->events);
    free(r->steps);
    free(r->ids);
    free(r->name);
    free(r->user);
    free(r);
}

/*
 * Loop thread: one stored job as a detached job with its tasks and history. Tasks and events
 * were read job by job in id order (by rank, by when they were written): *ti and *ei walk
 * them along with the jobs.
 */
static int make_job(struct stored_read *r, const struct stored_job *sj, size_t *ti, size_t *ei,
                    size_t *si, struct sched_job **ret)
{
    uint64_t id = sj->row.id;
    struct sched_job *job;
    int rc = sched_persist_job_detached(&sj->row, &job);

    while (*ti < r->ntasks && r->tasks[*ti].row.job_id < id)
        ++*ti;
    for (; rc == 0 && *ti < r->ntasks && r->tasks[*ti].row.job_id == id; ++*ti)
        rc = sched_persist_job_task(r->s, job, &r->tasks[*ti].row);
    while (*ei < r->nevents && r->events[*ei].job_id < id)
        ++*ei;
    for (; rc == 0 && *ei < r->nevents && r->events[*ei].job_id == id; ++*ei) {
        const struct stored_event *e = &r->events[*ei];

        rc = sched_persist_job_event(job, e->at_ms, e->kind, e->detail);
    }
    while (*si < r->nsteps && r->steps[*si].row.job_id < id)
        ++*si;
    for (; rc == 0 && *si < r->nsteps && r->steps[*si].row.job_id == id; ++*si)
        rc = sched_step_acct_restore(job, &r->steps[*si].row);
    if (rc < 0 && job != NULL) {
        sched_job_detached_free(job);
        job = NULL;
    }
    *ret = job;
    return rc;
}

static void read_done(int status, void *data)
{
    struct stored_read *r = data;
    struct sched_job **jobs = calloc(r->njobs + 1, sizeof(*jobs));
    char why[160] = "";
    size_t n = 0, ti = 0, ei = 0, si = 0;

    if (status == 0 && jobs == NULL)
        status = -ENOMEM;
    for (size_t i = 0; status == 0 && i < r->njobs; i++) {
        const struct stored_job *sj = &r->jobs[i];
        int rc;

        if (sched_jobs_find(r->s->jobs, sj->row.id) != NULL)
            continue; /* memory holds it: the caller answers from there */
        rc = make_job(r, sj, &ti, &ei, &si, &jobs[n]);
        if (rc == 0) {
            n++;
            continue;
        }
        GS_LOG(GS_LOG_ERROR, "job=%llu error=\"%s\" stored job unreadable",
               (unsigned long long)sj->row.id, gs_strerror(rc));
        if (rc == -ENOMEM || r->nids > 0) { /* named: say so; else the others still show */
            status = rc;
            snprintf(why, sizeof(why), "job %llu: %s", (unsigned long long)sj->row.id,
                     rc == -ENOMEM ? "out of memory" : "its stored record cannot be read");
        }
    }
    if (status < 0 && why[0] == '\0')
        snprintf(why, sizeof(why), "reading the state database: %s", gs_strerror(status));
    if (status < 0)
        GS_LOG(GS_LOG_WARN, "request=%llu error=\"%s\" stored jobs not read",
               (unsigned long long)r->request_id, why);
    r->done(r->cli, r->request_id, status, why, status == 0 ? jobs : NULL, status == 0 ? n : 0,
            r->arg);
    for (size_t i = 0; i < n; i++)
        sched_job_detached_free(jobs[i]);
    free(jobs);
    read_free(r);
}

static char *dup_opt(const char *s, bool *oom)
{
    char *d;

    if (s == NULL || s[0] == '\0')
        return NULL;
    d = strdup(s);
    *oom = *oom || d == NULL;
    return d;
}

int sched_stored_read(struct sched_cli *c, uint64_t request_id, const struct sched_stored_query *q,
                      sched_stored_fn done, void *arg)
{
    struct sched_ctx *s = c->s;
    struct stored_read *r;
    uint64_t now = gs_clock_wall_ms(), age = s->cfg->min_job_age_ms;
    bool oom = false;
    int rc;

    if (s->journal == NULL)
        return -ESHUTDOWN;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -ENOMEM;
    r->s = s;
    r->cli = c;
    r->request_id = request_id;
    r->done = done;
    r->arg = arg;
    r->states = q->states;
    r->max = q->max;
    r->with_history = q->with_history;
    r->arrays = q->arrays;
    r->with_steps = q->with_steps;
    /* Jobs that ended within min_job_age are all in memory: not worth reading. */
    r->ended_before_ms = age > 0 && now > age ? now - age : 0;
    r->name = dup_opt(q->name, &oom);
    r->user = dup_opt(q->user, &oom);
    if (q->nids > 0) {
        r->ids = malloc(q->nids * sizeof(*r->ids));
        oom = oom || r->ids == NULL;
        if (r->ids != NULL) {
            memcpy(r->ids, q->ids, q->nids * sizeof(*r->ids));
            r->nids = q->nids;
        }
    }
    if (oom) {
        read_free(r);
        return -ENOMEM;
    }
    rc = sched_journal_read(s->journal, read_rows, read_done, r);
    if (rc < 0) {
        read_free(r);
        return rc;
    }
    sched_cli_hold(c);
    return 0;
}
