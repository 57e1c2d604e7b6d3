/*
 * sched_persist.c: how gschedd's state reaches SQLite and comes back after a restart.
 *
 * The loop never touches the database while running: it builds a change, a self-contained
 * snapshot of rows (jobs with their packed spec and allocation, tasks, events, nodes), and
 * hands it to the journal's writer thread; the change's continuation runs on the loop once
 * the rows are on disk. That continuation is where acknowledgements go out (a submit's
 * reply, a task exit's ack), so nothing is acknowledged before it is durable.
 *
 * At start, before the journal's thread exists, the loop thread reads everything back:
 * nodes first (so allocations can be mapped onto cluster indices), then jobs, their tasks,
 * their history and their steps' accounting records (srun steps still running then end
 * CANCELLED: none outlives gschedd). Running jobs take their resources again; whether they
 * still run is settled when their workers register (sched_failover_reconcile).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/jobspec_mail.h"
#include "common/log.h"
#include "proto/jobspec.h"
#include "scheduler/mail.h"
#include "scheduler/sched_internal.h"

struct ch_job {
    struct sched_job_row row;
    char *name, *user, *reason;
    uint8_t *spec, *alloc;
    void *usage;
    char *submit_key;
};

struct ch_task {
    struct sched_task_row row;
    char *node;
};

struct ch_event {
    uint64_t at_ms, job_id;
    char *node, *kind, *detail;
};

struct ch_node {
    struct sched_node_row row;
    char *name;
    char *drain_reason;
    uint8_t *topology;
};

struct ch_usage {
    char *account, *user;
    double usage;
    uint64_t at_ms;
};

struct ch_step {
    struct sched_step_row row;
    char *name, *nodelist, *max_rss_node;
};

struct ch_resv {
    char *name;
    uint8_t *spec; /* NULL: delete it */
    size_t len;
};

/* A running srun step's record (live_steps), or its removal, or one of its task exits
 * (live_step_exits: exit set, record the packed exit of rank). */
struct ch_live {
    uint64_t job_id;
    uint32_t step, rank;
    bool exit;
    uint8_t *record; /* NULL: delete it */
    size_t len;
};

/* History for sreport: an attempt's allocation on a node (end_ms 0: it opens), or the
 * end of a job's open ones (node NULL); a node's availability. */
struct ch_alloc {
    struct sched_alloc_row row;
    char *node, *user, *account;
};

struct ch_node_state {
    uint64_t at_ms;
    char *node;
    bool up, maint;
    uint32_t cores, gpus;
};

struct sched_change {
    int rc;
    struct ch_resv *resv;
    size_t nresv;
    struct ch_usage *usage;
    size_t nusage;
    struct ch_job *jobs;
    size_t njobs;
    struct ch_task *tasks;
    size_t ntasks;
    uint64_t *clears;
    size_t nclears;
    struct ch_event *events;
    size_t nevents;
    struct ch_node *nodes;
    size_t nnodes;
    struct ch_step *steps;
    size_t nsteps;
    struct ch_live *lives;
    size_t nlives;
    struct ch_alloc *allocs;
    size_t nallocs;
    struct ch_node_state *states;
    size_t nstates;
    struct sched_ctx *s;
    sched_change_fn then;
    void *arg;
};

struct sched_change *sched_change_new(struct sched_ctx *s)
{
    struct sched_change *ch = calloc(1, sizeof(struct sched_change));

    if (ch != NULL)
        ch->s = s;
    return ch;
}

/* A new zeroed slot at the end of *v, or NULL (and ch->rc set) when out of memory. */
static void *grow(struct sched_change *ch, void **v, size_t *n, size_t size)
{
    char *nv;

    if (ch == NULL || ch->rc < 0)
        return NULL;
    nv = realloc(*v, (*n + 1) * size);
    if (nv == NULL) {
        ch->rc = -ENOMEM;
        return NULL;
    }
    *v = nv;
    memset(nv + *n * size, 0, size);
    return nv + (*n)++ * size;
}

static char *dup_or_fail(struct sched_change *ch, const char *str)
{
    char *d = strdup(str != NULL ? str : "");

    if (d == NULL)
        ch->rc = -ENOMEM;
    return d;
}

static void change_free(struct sched_change *ch)
{
    for (size_t i = 0; i < ch->nresv; i++) {
        free(ch->resv[i].name);
        free(ch->resv[i].spec);
    }
    free(ch->resv);
    for (size_t i = 0; i < ch->nusage; i++) {
        free(ch->usage[i].account);
        free(ch->usage[i].user);
    }
    free(ch->usage);
    for (size_t i = 0; i < ch->njobs; i++) {
        free(ch->jobs[i].name);
        free(ch->jobs[i].user);
        free(ch->jobs[i].reason);
        free(ch->jobs[i].spec);
        free(ch->jobs[i].alloc);
        free(ch->jobs[i].usage);
        free(ch->jobs[i].submit_key);
    }
    for (size_t i = 0; i < ch->ntasks; i++)
        free(ch->tasks[i].node);
    for (size_t i = 0; i < ch->nevents; i++) {
        free(ch->events[i].node);
        free(ch->events[i].kind);
        free(ch->events[i].detail);
    }
    for (size_t i = 0; i < ch->nnodes; i++) {
        free(ch->nodes[i].name);
        free(ch->nodes[i].drain_reason);
        free(ch->nodes[i].topology);
    }
    for (size_t i = 0; i < ch->nsteps; i++) {
        free(ch->steps[i].name);
        free(ch->steps[i].nodelist);
        free(ch->steps[i].max_rss_node);
    }
    free(ch->steps);
    for (size_t i = 0; i < ch->nlives; i++)
        free(ch->lives[i].record);
    free(ch->lives);
    for (size_t i = 0; i < ch->nallocs; i++) {
        free(ch->allocs[i].node);
        free(ch->allocs[i].user);
        free(ch->allocs[i].account);
    }
    free(ch->allocs);
    for (size_t i = 0; i < ch->nstates; i++)
        free(ch->states[i].node);
    free(ch->states);
    free(ch->jobs);
    free(ch->tasks);
    free(ch->clears);
    free(ch->events);
    free(ch->nodes);
    free(ch);
}

static int pack_spec(const struct gs_jobspec *spec, uint8_t **ret, size_t *ret_len)
{
    struct gs_proto_jobspec_view view;
    size_t len;
    int rc = gs_proto_jobspec_view_init(&view, spec);

    if (rc < 0)
        return rc;
    len = gs__job_spec__get_packed_size(&view.spec);
    *ret = malloc(len > 0 ? len : 1);
    if (*ret != NULL)
        *ret_len = gs__job_spec__pack(&view.spec, *ret);
    gs_proto_jobspec_view_release(&view);
    return *ret != NULL ? 0 : -ENOMEM;
}

/* The allocation as a LaunchTasks holding only where the job runs: nodes and master port. */
static int pack_alloc(struct sched_ctx *s, const struct sched_job *job, uint8_t **ret,
                      size_t *ret_len)
{
    Gs__LaunchTasks lt = GS__LAUNCH_TASKS__INIT;
    struct sched_alloc_msg m;
    uint32_t lost[SCHED_MAX_JOB_NODES];
    size_t len;
    int rc = sched_alloc_msg_build(s, job, &m);

    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < m.n && i < SCHED_MAX_JOB_NODES; i++) {
        if (sched_job_nokill_lost(job, i))
            lost[lt.n_nokill_lost++] = i;
    }
    lt.nokill_lost = lost;
    lt.job_id = job->id;
    lt.attempt = job->attempt;
    lt.n_allocation = m.n;
    lt.allocation = m.ptrs;
    lt.world_size = job->ntasks;
    lt.master_port = job->master_port;
    len = gs__launch_tasks__get_packed_size(&lt);
    *ret = malloc(len > 0 ? len : 1);
    if (*ret != NULL)
        *ret_len = gs__launch_tasks__pack(&lt, *ret);
    sched_alloc_msg_release(&m);
    return *ret != NULL ? 0 : -ENOMEM;
}

/*
 * A running job's attempt opens a row per node of its allocation (again at every write:
 * the store keeps the first); a job written in any other state after it has run closes
 * its open rows, at its end or, requeued, now.
 */
static void stage_allocs(struct sched_change *ch, const struct sched_job *job)
{
    struct ch_alloc *a;

    if (job->state != SCHED_JOB_RUNNING) {
        if (job->attempt == 0 ||
            (a = grow(ch, (void **)&ch->allocs, &ch->nallocs, sizeof(*a))) == NULL)
            return;
        a->row.job_id = job->id;
        a->row.end_ms =
            sched_job_finished(job) && job->end_ms != 0 ? job->end_ms : gs_clock_wall_ms();
        return;
    }
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        const struct sched_node_alloc *na = &job->alloc.nodes[i];
        uint32_t cores = sched_node_alloc_cores(na);

        if ((a = grow(ch, (void **)&ch->allocs, &ch->nallocs, sizeof(*a))) == NULL)
            return;
        a->node = dup_or_fail(ch, sched_cluster_node_name(ch->s->cluster, na->node));
        a->user = dup_or_fail(ch, job->user);
        a->account = dup_or_fail(ch, job->spec->account);
        a->row = (struct sched_alloc_row){job->id,
                                          job->attempt,
                                          a->node,
                                          cores,
                                          (uint32_t)__builtin_popcountll(na->gpus),
                                          job->start_ms,
                                          0,
                                          a->user,
                                          a->account};
    }
}

void sched_change_node_state(struct sched_change *ch, uint64_t at_ms, const char *node, bool up,
                             bool maint, uint32_t cores, uint32_t gpus)
{
    struct ch_node_state *n = grow(ch, (void **)&ch->states, &ch->nstates, sizeof(*n));

    if (n == NULL)
        return;
    *n = (struct ch_node_state){at_ms, dup_or_fail(ch, node), up, maint, cores, gpus};
}

void sched_change_job(struct sched_change *ch, const struct sched_job *job)
{
    struct ch_job *cj = grow(ch, (void **)&ch->jobs, &ch->njobs, sizeof(*cj));
    struct sched_job_row *r;

    if (cj == NULL)
        return;
    r = &cj->row;
    cj->name = dup_or_fail(ch, job->spec->name);
    cj->user = dup_or_fail(ch, job->user);
    cj->reason = dup_or_fail(ch, job->reason);
    if (job->submit_key != NULL)
        cj->submit_key = dup_or_fail(ch, job->submit_key);
    if (ch->rc == 0)
        ch->rc = pack_spec(job->spec, &cj->spec, &r->spec_len);
    if (ch->rc == 0 && job->state == SCHED_JOB_RUNNING)
        ch->rc = pack_alloc(ch->s, job, &cj->alloc, &r->alloc_len);
    if (ch->rc == 0)
        ch->rc = sched_usage_pack(&job->usage, &cj->usage, &r->usage_len);
    r->id = job->id;
    r->name = cj->name;
    r->uid = job->uid;
    r->gid = job->gid;
    r->user = cj->user;
    r->priority = job->spec->priority;
    r->state = job->state;
    r->reason = cj->reason;
    r->held = job->held;
    r->submit_ms = job->submit_ms;
    r->start_ms = job->start_ms;
    r->end_ms = job->end_ms;
    r->exit_code = job->exit_code;
    r->signaled = job->signaled;
    r->term_signal = job->term_signal;
    r->restarts = job->restarts;
    r->attempt = job->attempt;
    r->spec = cj->spec;
    r->alloc = cj->alloc;
    r->usage = cj->usage;
    r->submit_key = cj->submit_key;
    r->suspend_at_ms = job->suspended ? job->suspend_at_ms : 0;
    r->suspended_ms = job->suspended_ms;
    r->resume_at_ms = job->resume_ms;
    stage_allocs(ch, job);
    /* A resume, or an end while suspended, gave its steps their share of the suspension
     * (jobs.c, end_suspension): stored with the job, so that each is a whole. */
    for (uint32_t i = 0; job->suspended_ms > 0 && i < job->nsteps; i++) {
        if (job->steps[i].attempt == job->attempt && job->steps[i].suspended_ms > 0)
            sched_change_step(ch, job->id, &job->steps[i]);
    }
}

/* A task's row state: RUNNING until it ends, then what its end means for the job. */
static int task_state(const struct sched_task *t)
{
    if (!t->ended)
        return SCHED_JOB_RUNNING;
    switch (t->how) {
    case SCHED_TASK_CANCELLED:
        return SCHED_JOB_CANCELLED;
    case SCHED_TASK_TIMEOUT:
        return SCHED_JOB_TIMEOUT;
    case SCHED_TASK_LAUNCH_FAILED:
        return SCHED_JOB_FAILED;
    case SCHED_TASK_OOM:
        return SCHED_JOB_OUT_OF_MEMORY;
    default:
        return t->exit_code != 0 || t->term_signal != 0 ? SCHED_JOB_FAILED : SCHED_JOB_COMPLETED;
    }
}

void sched_change_task(struct sched_change *ch, const struct sched_job *job, uint32_t rank)
{
    struct sched_ctx *s = ch->s;
    const struct sched_task *t = &job->tasks[rank];
    struct ch_task *ct = grow(ch, (void **)&ch->tasks, &ch->ntasks, sizeof(*ct));
    /* cluster_node, not the allocation: the last task's row is written after the
     * allocation went back, and must still say where it ran (NodeList, gsched logs). */
    const char *node = t->cluster_node < sched_cluster_nnodes(s->cluster)
                           ? sched_cluster_node_name(s->cluster, t->cluster_node)
                           : NULL;

    if (ct == NULL)
        return;
    ct->node = dup_or_fail(ch, node != NULL ? node : "");
    ct->row = (struct sched_task_row){.job_id = job->id,
                                      .rank = rank,
                                      .node = ct->node,
                                      .attempt = job->attempt,
                                      .state = task_state(t),
                                      .pid = t->pid,
                                      .exit_code = t->exit_code,
                                      .signaled = t->term_signal != 0,
                                      .term_signal = t->term_signal,
                                      .end_reason = (int)t->how,
                                      .start_ms = t->start_ms,
                                      .end_ms = t->end_ms};
}

void sched_change_tasks(struct sched_change *ch, const struct sched_job *job)
{
    for (uint32_t r = 0; r < job->ntasks && job->tasks != NULL; r++)
        sched_change_task(ch, job, r);
}

void sched_change_step(struct sched_change *ch, uint64_t job_id, const struct sched_step_acct *a)
{
    struct ch_step *cs = grow(ch, (void **)&ch->steps, &ch->nsteps, sizeof(*cs));

    if (cs == NULL)
        return;
    sched_step_acct_row(a, job_id, &cs->row);
    cs->name = dup_or_fail(ch, a->name);
    cs->nodelist = dup_or_fail(ch, a->nodelist);
    cs->max_rss_node = dup_or_fail(ch, a->max_rss_node);
    cs->row.name = cs->name;
    cs->row.nodelist = cs->nodelist;
    cs->row.max_rss_node = cs->max_rss_node;
}

void sched_change_live_step(struct sched_change *ch, uint64_t job_id, uint32_t step,
                            uint8_t *record, size_t len)
{
    struct ch_live *l = grow(ch, (void **)&ch->lives, &ch->nlives, sizeof(*l));

    if (l == NULL) {
        free(record);
        return;
    }
    *l = (struct ch_live){.job_id = job_id, .step = step, .record = record, .len = len};
}

void sched_change_live_exit(struct sched_change *ch, uint64_t job_id, uint32_t step, uint32_t rank,
                            uint8_t *exit, size_t len)
{
    struct ch_live *l =
        exit != NULL ? grow(ch, (void **)&ch->lives, &ch->nlives, sizeof(*l)) : NULL;

    if (l == NULL) {
        free(exit);
        return;
    }
    *l = (struct ch_live){
        .job_id = job_id, .step = step, .rank = rank, .exit = true, .record = exit, .len = len};
}

void sched_change_clear_tasks(struct sched_change *ch, uint64_t job_id)
{
    uint64_t *slot = grow(ch, (void **)&ch->clears, &ch->nclears, sizeof(*slot));

    if (slot != NULL)
        *slot = job_id;
}

void sched_change_event(struct sched_change *ch, uint64_t at_ms, uint64_t job_id, const char *node,
                        const char *kind, const char *detail)
{
    struct ch_event *e = grow(ch, (void **)&ch->events, &ch->nevents, sizeof(*e));

    if (e == NULL)
        return;
    e->at_ms = at_ms;
    e->job_id = job_id;
    e->node = dup_or_fail(ch, node);
    e->kind = dup_or_fail(ch, kind);
    e->detail = dup_or_fail(ch, detail);
}

void sched_change_usage(struct sched_change *ch, const char *account, const char *user,
                        double usage, uint64_t at_ms)
{
    struct ch_usage *u = grow(ch, (void **)&ch->usage, &ch->nusage, sizeof(*u));

    if (u == NULL)
        return;
    u->account = dup_or_fail(ch, account);
    u->user = dup_or_fail(ch, user);
    u->usage = usage;
    u->at_ms = at_ms;
}

void sched_change_resv(struct sched_change *ch, const char *name, const void *spec, size_t len)
{
    struct ch_resv *r = grow(ch, (void **)&ch->resv, &ch->nresv, sizeof(*r));

    if (r == NULL)
        return;
    r->name = dup_or_fail(ch, name);
    if (spec == NULL)
        return;
    r->spec = malloc(len > 0 ? len : 1);
    if (r->spec == NULL) {
        ch->rc = -ENOMEM;
        return;
    }
    memcpy(r->spec, spec, len);
    r->len = len;
}

void sched_change_node(struct sched_change *ch, const struct sched_node *n)
{
    struct ch_node *cn = grow(ch, (void **)&ch->nodes, &ch->nnodes, sizeof(*cn));
    size_t len;

    if (cn == NULL)
        return;
    cn->name = dup_or_fail(ch, n->name);
    len = gs__node_topology__get_packed_size(n->topology);
    cn->topology = malloc(len > 0 ? len : 1);
    if (cn->topology == NULL) {
        ch->rc = -ENOMEM;
        return;
    }
    cn->row.topology_len = gs__node_topology__pack(n->topology, cn->topology);
    cn->row.topology = cn->topology;
    cn->row.name = cn->name;
    cn->row.state = n->up ? "up" : "down";
    cn->row.last_seen_ms = n->last_heartbeat_wall;
    if (n->drain) {
        cn->drain_reason = dup_or_fail(ch, n->drain_reason);
        cn->row.drain_reason = cn->drain_reason;
    }
}

/* Writer thread: the rows in an order that keeps a requeue's clear before its new tasks. */
static int apply_change(struct sched_store *store, void *data)
{
    struct sched_change *ch = data;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < ch->nclears; i++)
        rc = sched_store_clear_tasks(store, ch->clears[i]);
    for (size_t i = 0; rc == 0 && i < ch->njobs; i++)
        rc = sched_store_put_job(store, &ch->jobs[i].row);
    for (size_t i = 0; rc == 0 && i < ch->ntasks; i++)
        rc = sched_store_put_task(store, &ch->tasks[i].row);
    for (size_t i = 0; rc == 0 && i < ch->nsteps; i++)
        rc = sched_store_put_step(store, &ch->steps[i].row);
    for (size_t i = 0; rc == 0 && i < ch->nlives; i++) {
        const struct ch_live *l = &ch->lives[i];
        if (l->exit)
            rc = sched_store_put_live_exit(store, l->job_id, l->step, l->rank, l->record, l->len);
        else if (l->record != NULL)
            rc = sched_store_put_live_step(store, l->job_id, l->step, l->record, l->len);
        else
            rc = sched_store_delete_live_step(store, l->job_id, l->step);
    }
    for (size_t i = 0; rc == 0 && i < ch->nevents; i++) {
        const struct ch_event *e = &ch->events[i];
        rc = sched_store_add_event(store, e->at_ms, e->job_id, e->node, e->kind, e->detail);
    }
    for (size_t i = 0; rc == 0 && i < ch->nnodes; i++)
        rc = sched_store_put_node(store, &ch->nodes[i].row);
    for (size_t i = 0; rc == 0 && i < ch->nusage; i++) {
        const struct ch_usage *u = &ch->usage[i];
        rc = sched_store_put_usage(store, u->account, u->user, u->usage, u->at_ms);
    }
    for (size_t i = 0; rc == 0 && i < ch->nresv; i++) {
        const struct ch_resv *r = &ch->resv[i];
        rc = r->spec != NULL ? sched_store_put_resv(store, r->name, r->spec, r->len)
                             : sched_store_delete_resv(store, r->name);
    }
    for (size_t i = 0; rc == 0 && i < ch->nallocs; i++) {
        const struct sched_alloc_row *a = &ch->allocs[i].row;
        rc = a->node != NULL ? sched_store_put_alloc(store, a)
                             : sched_store_end_allocs(store, a->job_id, a->end_ms);
    }
    for (size_t i = 0; rc == 0 && i < ch->nstates; i++) {
        const struct ch_node_state *n = &ch->states[i];
        rc = sched_store_put_node_state(store, n->at_ms, n->node, n->up, n->maint, n->cores,
                                        n->gpus);
    }
    return rc;
}

static void change_done(int status, void *data)
{
    struct sched_change *ch = data;

    if (status < 0)
        GS_LOG(GS_LOG_ERROR, "error=\"%s\" state change not stored", gs_strerror(status));
    if (ch->then != NULL)
        ch->then(ch->s, status, ch->arg);
    change_free(ch);
}

void sched_change_commit(struct sched_ctx *s, struct sched_change *ch, sched_change_fn then,
                         void *arg)
{
    int rc;

    if (ch == NULL) {
        if (then != NULL)
            then(s, -ENOMEM, arg);
        return;
    }
    ch->s = s;
    ch->then = then;
    ch->arg = arg;
    rc = ch->rc;
    if (rc == 0)
        rc = s->journal != NULL ? sched_journal_submit(s->journal, apply_change, change_done, ch)
                                : -ESHUTDOWN;
    if (rc < 0)
        change_done(rc, ch);
}

/* --- reload at start ----------------------------------------------------------------- */

static int load_node(const struct sched_node_row *row, void *data)
{
    struct sched_ctx *s = data;
    Gs__NodeTopology *t = gs__node_topology__unpack(NULL, row->topology_len, row->topology);
    struct sched_node *n;

    if (t == NULL) {
        GS_LOG(GS_LOG_WARN, "node=%s stored topology unreadable, forgotten", row->name);
        return 0;
    }
    n = sched_node_add(s, row->name, t);
    gs__node_topology__free_unpacked(t, NULL);
    if (n == NULL)
        return -ENOMEM;
    /* Up but unschedulable until its worker registers again; the heartbeat deadline
     * starts now, so a node that never comes back fails its jobs over in due time. */
    n->up = strcmp(row->state, "up") == 0;
    snprintf(n->reason, sizeof(n->reason), "%s",
             n->up ? "waiting for its worker after a scheduler restart" : "down before restart");
    n->last_heartbeat_mono = gs_clock_mono_ms();
    n->last_heartbeat_wall = row->last_seen_ms;
    /* Down already: its jobs move as they would have (its worker, unheard since before the
     * restart, has fenced itself by then) unless it registers first. */
    if (!n->up)
        n->failover_due_mono = n->last_heartbeat_mono + sched_fence_ms(s) + s->heartbeat_ms;
    n->drain = row->drain_reason != NULL;
    snprintf(n->drain_reason, sizeof(n->drain_reason), "%s", n->drain ? row->drain_reason : "");
    sched_node_update_schedulable(s, n);
    return 0;
}

/* Rebuilds a running job's allocation from its stored LaunchTasks and takes it again. */
static int restore_alloc(struct sched_ctx *s, struct sched_job *job, const void *blob, size_t len)
{
    Gs__LaunchTasks *lt = gs__launch_tasks__unpack(NULL, len, blob);
    struct sched_alloc alloc;
    uint32_t attempt = job->attempt, tpn;
    int rc = -EINVAL;

    sched_alloc_init(&alloc);
    if (lt == NULL || lt->n_allocation == 0)
        goto out;
    alloc.nodes = calloc(lt->n_allocation, sizeof(*alloc.nodes));
    if (alloc.nodes == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    alloc.cap = (uint32_t)lt->n_allocation;
    alloc.exclusive = job->spec->exclusive;
    for (size_t i = 0; i < lt->n_allocation; i++) {
        const Gs__NodeAllocation *na = lt->allocation[i];
        struct sched_node *n = sched_node_find(s, na->node_name);
        struct sched_node_alloc *a = &alloc.nodes[alloc.nnodes++];

        if (n == NULL)
            goto out;
        a->node = n->index;
        a->mem_mib = na->mem_mib;
        for (size_t g = 0; g < na->n_gpus; g++)
            a->gpus |= na->gpus[g] < SCHED_MAX_GPUS ? 1ULL << na->gpus[g] : 0;
        for (size_t c = 0; c < na->n_cores; c++) {
            if (na->cores[c] < SCHED_MAX_CORES)
                a->cores[na->cores[c] / 64] |= 1ULL << (na->cores[c] % 64);
        }
    }
    tpn = lt->allocation[0]->ntasks;
    job->state = SCHED_JOB_PENDING;
    job->attempt = attempt > 0 ? attempt - 1 : 0; /* start counts it again */
    rc = sched_job_start(job, &alloc, tpn > 0 ? tpn : 1, job->start_ms);
    if (rc == 0) {
        sched_cluster_take(s->cluster, &job->alloc);
        job->master_port = lt->master_port;
        for (size_t i = 0; i < lt->n_nokill_lost; i++) {
            if (lt->nokill_lost[i] < alloc.nnodes) /* start cleared them */
                job->nokill_lost[lt->nokill_lost[i] / 64] |= UINT64_C(1)
                                                             << (lt->nokill_lost[i] % 64);
        }
    }
out:
    if (rc < 0)
        job->state = SCHED_JOB_RUNNING;
    sched_alloc_release(&alloc);
    gs__launch_tasks__free_unpacked(lt, NULL);
    return rc;
}

/* A row's spec, or NULL (why says it) when it cannot be read. */
static struct gs_jobspec *spec_of_row(const struct sched_job_row *row, struct gs_error *err)
{
    Gs__JobSpec *pb =
        row->spec != NULL ? gs__job_spec__unpack(NULL, row->spec_len, row->spec) : NULL;
    struct gs_jobspec *spec = NULL;

    gs_error_clear(err);
    if (pb == NULL)
        gs_error_set(err, -EBADMSG, 0, 0, "unpack");
    else if (gs_proto_jobspec_from_pb(pb, &spec, err) < 0)
        spec = NULL;
    gs__job_spec__free_unpacked(pb, NULL);
    return spec;
}

/* scontrol suspend's record, as the row has it. */
static void fill_suspension(struct sched_job *job, const struct sched_job_row *row)
{
    job->suspended = row->suspend_at_ms != 0;
    job->suspend_at_ms = row->suspend_at_ms;
    job->suspended_ms = row->suspended_ms;
    job->resume_ms = row->resume_at_ms;
}

/* The row's columns into job (made with the row's spec). */
static void fill_job(struct sched_job *job, const struct sched_job_row *row)
{
    job->uid = row->uid;
    job->gid = row->gid;
    snprintf(job->user, sizeof(job->user), "%s", row->user != NULL ? row->user : "");
    snprintf(job->reason, sizeof(job->reason), "%s", row->reason != NULL ? row->reason : "");
    job->held = row->held;
    job->state = (enum sched_job_state)row->state;
    job->start_ms = row->start_ms;
    job->end_ms = row->end_ms;
    job->exit_code = row->exit_code;
    job->signaled = row->signaled;
    job->term_signal = row->term_signal;
    job->restarts = row->restarts;
    job->attempt = row->attempt;
    fill_suspension(job, row);
}

static bool state_ok(int state)
{
    return state >= SCHED_JOB_PENDING && state <= SCHED_JOB_OUT_OF_MEMORY;
}

int sched_persist_job_detached(const struct sched_job_row *row, struct sched_job **ret)
{
    struct gs_error err;
    struct gs_jobspec *spec;
    struct sched_job *job;

    *ret = NULL;
    if (!state_ok(row->state))
        return -EBADMSG;
    spec = spec_of_row(row, &err);
    if (spec == NULL)
        return err.code == -ENOMEM ? -ENOMEM : -EBADMSG;
    job = sched_job_detached_new(row->id, spec, row->submit_ms);
    if (job == NULL)
        return -ENOMEM;
    fill_job(job, row);
    if (job->state == SCHED_JOB_REQUEUED)
        job->state = SCHED_JOB_PENDING;
    if (row->usage != NULL && sched_usage_from_packed(&job->usage, row->usage, row->usage_len) < 0)
        GS_LOG(GS_LOG_WARN, "job=%llu stored usage unreadable, dropped",
               (unsigned long long)job->id);
    *ret = job;
    return 0;
}

static int load_job(const struct sched_job_row *row, void *data)
{
    struct sched_ctx *s = data;
    struct gs_jobspec *spec;
    struct sched_job *job;
    struct gs_error err;
    uint64_t start_ms = row->start_ms;

    if (sched_jobs_find(s->jobs, row->id) != NULL)
        return 0; /* loaded already (a job pinned in memory, read again) */
    spec = spec_of_row(row, &err);
    if (spec == NULL || !state_ok(row->state)) {
        GS_LOG(GS_LOG_ERROR, "job=%llu error=\"%s\" stored job unreadable, skipped",
               (unsigned long long)row->id, spec == NULL ? err.msg : "state out of range");
        gs_jobspec_free(spec);
        return 0;
    }
    job = sched_jobs_add(s->jobs, row->id, spec, row->submit_ms);
    if (job == NULL)
        return -ENOMEM;
    fill_job(job, row);
    if (job->state == SCHED_JOB_REQUEUED)
        job->state = SCHED_JOB_PENDING;
    if (job->state == SCHED_JOB_RUNNING &&
        (row->alloc == NULL || restore_alloc(s, job, row->alloc, row->alloc_len) < 0)) {
        GS_LOG(GS_LOG_WARN, "job=%llu stored allocation unusable, requeued",
               (unsigned long long)job->id);
        job->state = SCHED_JOB_PENDING;
        sched_alloc_release(&job->alloc);
    }
    if (job->state == SCHED_JOB_RUNNING) { /* restore_alloc started it afresh */
        job->start_ms = start_ms;
        fill_suspension(job, row);
    }
    /* What happened before the restart was mailed about then, if at all. */
    job->mail_seen = job->state;
    (void)sched_mail_time_share(job, gs_clock_wall_ms(), &job->mail_sent);
    if (sched_keys_restore(s, job, row->submit_key) < 0)
        return -ENOMEM;
    if (row->usage != NULL && sched_usage_from_packed(&job->usage, row->usage, row->usage_len) < 0)
        GS_LOG(GS_LOG_WARN, "job=%llu stored usage unreadable, dropped",
               (unsigned long long)job->id);
    return 0;
}

static enum sched_task_end task_end_of(int end_reason)
{
    switch (end_reason) {
    case SCHED_TASK_CANCELLED:
    case SCHED_TASK_TIMEOUT:
    case SCHED_TASK_LAUNCH_FAILED:
    case SCHED_TASK_OOM:
        return (enum sched_task_end)end_reason;
    default:
        return SCHED_TASK_EXITED;
    }
}

/* A finished job keeps its tasks' ends and nodes, for `gsched show` and `gsched logs`. */
static int restore_ended_task(struct sched_ctx *s, struct sched_job *job,
                              const struct sched_task_row *row)
{
    struct sched_node *n = sched_node_find(s, row->node);
    struct sched_task *t, *v;

    if (row->rank >= 1u << 20)
        return 0;
    if (row->rank >= job->ntasks) {
        v = realloc(job->tasks, (row->rank + 1) * sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        memset(v + job->ntasks, 0, (row->rank + 1 - job->ntasks) * sizeof(*v));
        job->tasks = v;
        job->ntasks = row->rank + 1;
    }
    t = &job->tasks[row->rank];
    t->cluster_node = n != NULL ? n->index : UINT32_MAX;
    t->ended = true;
    t->how = task_end_of(row->end_reason);
    t->pid = row->pid;
    t->exit_code = row->exit_code;
    t->term_signal = row->term_signal;
    t->start_ms = row->start_ms;
    t->end_ms = row->end_ms;
    return 0;
}

int sched_persist_job_task(struct sched_ctx *s, struct sched_job *job,
                           const struct sched_task_row *row)
{
    if (row->job_id != job->id || row->attempt != job->attempt || job->state == SCHED_JOB_RUNNING)
        return 0;
    return restore_ended_task(s, job, row);
}

static int load_task(const struct sched_task_row *row, void *data)
{
    struct sched_ctx *s = data;
    struct sched_job *job = sched_jobs_find(s->jobs, row->job_id);
    struct sched_task *t;

    if (job == NULL || row->attempt != job->attempt)
        return 0;
    if (job->state != SCHED_JOB_RUNNING)
        return restore_ended_task(s, job, row);
    if (row->rank >= job->ntasks)
        return 0;
    t = &job->tasks[row->rank];
    t->pid = row->pid;
    t->started = row->pid > 0;
    t->start_ms = row->start_ms;
    if (row->state != SCHED_JOB_RUNNING)
        sched_job_task_ended(job, row->rank, task_end_of(row->end_reason), row->exit_code,
                             row->term_signal, row->end_ms);
    return 0;
}

static int load_step(const struct sched_step_row *row, void *data)
{
    struct sched_ctx *s = data;
    struct sched_job *job = sched_jobs_find(s->jobs, row->job_id);

    return job != NULL ? sched_step_acct_restore(job, row) : 0;
}

/* Events are stored with the state's name as their kind (sched_job_state_name). */
static enum sched_job_state state_of_kind(const char *kind)
{
    for (int i = SCHED_JOB_PENDING; i <= SCHED_JOB_OUT_OF_MEMORY; i++) {
        if (strcmp(kind, sched_job_state_name((enum sched_job_state)i)) == 0)
            return (enum sched_job_state)i;
    }
    return SCHED_JOB_PENDING;
}

int sched_persist_job_event(struct sched_job *job, uint64_t at_ms, const char *kind,
                            const char *detail)
{
    return sched_job_note(job, at_ms, state_of_kind(kind != NULL ? kind : ""), detail);
}

static int load_event(uint64_t at_ms, uint64_t job_id, const char *node, const char *kind,
                      const char *detail, void *data)
{
    struct sched_ctx *s = data;
    struct sched_job *job = sched_jobs_find(s->jobs, job_id);

    (void)node;
    return job != NULL ? sched_persist_job_event(job, at_ms, kind, detail) : 0;
}

/*
 * The jobs gschedd holds in memory (scheduler.min_job_age > 0): those not finished, those
 * that ended within min_job_age (or the submit-key hold), then the finished ones the others
 * pin (a pending job's dependency, an array with an unfinished element: loaded whole). The
 * others stay in the store alone, read back when asked for.
 */
/*
 * A pending job whose dependencies could already never be met was mailed about that
 * (INVALID_DEPEND) before the restart; the reason it was noticed by is the planning pass's,
 * not stored, so it is judged here, once every job it may depend on is loaded.
 */
static void invalid_depend_seen(struct sched_ctx *s)
{
    size_t n = sched_jobs_count(s->jobs);

    for (size_t i = 0; i < n; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->state == SCHED_JOB_PENDING &&
            (job->spec->mail_types & GS_MAIL_INVALID_DEPEND) != 0 &&
            sched_job_deps(s->jobs, job, NULL) == SCHED_DEP_NEVER)
            job->mail_sent |= GS_MAIL_INVALID_DEPEND;
    }
}

static int load_jobs(struct sched_ctx *s, struct sched_store *store)
{
    uint64_t age = s->cfg->min_job_age_ms, now = gs_clock_wall_ms();
    uint64_t keep = age > SCHED_PURGE_KEY_HOLD_MS ? age : SCHED_PURGE_KEY_HOLD_MS;
    struct sched_purge_pins pins = {0};
    size_t live, n;
    int rc;

    if (age == 0) {
        rc = sched_store_load_jobs(store, load_job, s);
        if (rc == 0)
            invalid_depend_seen(s);
        return rc;
    }
    rc = sched_store_load_live_jobs(store, now > keep ? now - keep : 0, load_job, s);
    live = sched_jobs_count(s->jobs);
    /* Twice: a pinned first element, once loaded, says how many elements its array has. */
    for (int round = 0; rc == 0 && round < 2; round++) {
        sched_purge_pins_release(&pins);
        rc = sched_purge_pins_build(s, &pins);
        for (size_t i = 0; rc == 0 && i < pins.nids; i++)
            rc = sched_store_load_jobs_range(store, pins.ids[i], pins.ids[i], load_job, s);
        for (size_t i = 0; rc == 0 && i < pins.narrays; i++) {
            const struct sched_purge_array *a = &pins.arrays[i];
            rc = sched_store_load_jobs_range(store, a->id, a->id + a->count - 1, load_job, s);
        }
    }
    sched_purge_pins_release(&pins);
    if (rc == 0)
        invalid_depend_seen(s);
    n = sched_jobs_count(s->jobs);
    /* Ids go 1, 2, ... with no gaps: fewer in memory means some are in the store alone. */
    s->jobs_in_store_only = s->next_job_id > n + 1;
    if (rc == 0)
        GS_LOG(GS_LOG_INFO,
               "min_job_age_s=%llu loaded=%zu pinned=%zu in_store_only=%llu jobs that ended "
               "earlier stay in the store",
               (unsigned long long)(age / 1000), n, n - live,
               (unsigned long long)(s->next_job_id > n + 1 ? s->next_job_id - 1 - n : 0));
    return rc;
}

/* Whether path lies inside dir. */
static bool inside(const char *path, const char *dir)
{
    size_t len = strlen(dir);

    while (len > 1 && dir[len - 1] == '/')
        len--;
    return strncmp(path, dir, len) == 0 && path[len] == '/';
}

/* The state directory (and its missing parents, 0755) made; the directory itself is gschedd's
 * alone, 0700, also when an older one was more open, as Slurm keeps StateSaveLocation: it
 * holds every user's job environments. Where the CLI socket is configured inside it, others
 * must reach the socket by name: 0711 then (no listing, no reading). A mode is only ever
 * tightened. */
static int make_state_dir(const char *path, const char *socket_path)
{
    mode_t mode = inside(socket_path, path) ? 0711 : 0700;
    struct stat st;
    char buf[512];

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -errno;
    if (stat(buf, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    /* tightened only: a 0700 one with the socket inside stays so (a one-user cluster) */
    if (st.st_uid == geteuid() && (st.st_mode & 07777 & ~mode) != 0 && chmod(buf, mode) < 0)
        return -errno;
    return 0;
}

/*
 * sreport's history: every node known from before is down from now until its worker
 * registers again (sched_node_update_schedulable writes that row), so a node that never
 * comes back is not counted up for good. One transaction, not an fsync per node.
 */
static int nodes_down_at_start(struct sched_ctx *s, struct sched_store *store)
{
    uint64_t now = gs_clock_wall_ms();
    int rc = s->nnodes > 0 ? sched_store_begin(store) : 0;

    for (size_t i = 0; rc == 0 && i < s->nnodes; i++) {
        const struct sched_node *n = s->nodes[i];

        /* out of any MAINT reservation too, until the first tick says again (sched_resv.c) */
        rc = sched_store_put_node_state(store, now, n->name, false, false, n->topology->cores,
                                        (uint32_t)n->topology->n_gpus);
    }
    if (s->nnodes == 0)
        return rc;
    if (rc == 0)
        return sched_store_commit(store);
    (void)sched_store_rollback(store); /* the error that made it is the one to tell */
    return rc;
}

static int load_live_step(uint64_t job_id, uint32_t step, const void *record, size_t len,
                          void *data)
{
    return sched_steps_restore(data, job_id, step, record, len);
}

static int load_live_exit(uint64_t job_id, uint32_t step, const void *exit, size_t len, void *data)
{
    return sched_steps_restore_exit(data, job_id, step, exit, len);
}

int sched_persist_open(struct sched_ctx *s, struct gs_error *err)
{
    struct sched_store *store = NULL;
    char path[600];
    int rc = make_state_dir(s->state_dir, s->cfg->socket_path != NULL ? s->cfg->socket_path : "");

    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "state directory %s: %s", s->state_dir, gs_strerror(rc));
    snprintf(path, sizeof(path), "%s/gsched.db", s->state_dir);
    rc = sched_store_open(path, &store, err);
    if (rc < 0)
        return rc;
    rc = sched_store_next_job_id(store, &s->next_job_id);
    /* srun steps gschedd kept a record of are taken up again below (their sruns reattach);
     * the others' tasks are ended when their workers register (sched_failover_reconcile). */
    if (rc == 0)
        rc = sched_store_prune_live_steps(store);
    if (rc == 0)
        rc = sched_store_end_running_steps(store, SCHED_JOB_CANCELLED, gs_clock_wall_ms());
    if (rc == 0)
        rc = sched_store_load_nodes(store, load_node, s);
    if (rc == 0)
        rc = nodes_down_at_start(s, store);
    if (rc == 0)
        rc = load_jobs(s, store);
    /* Only from the oldest job in memory on: those before are in the store alone. */
    if (rc == 0 && sched_jobs_count(s->jobs) > 0) {
        uint64_t first = sched_jobs_at(s->jobs, 0)->id;

        rc = sched_store_load_tasks_range(store, first, UINT64_MAX, load_task, s);
        if (rc == 0)
            rc = sched_store_load_events_range(store, first, UINT64_MAX, load_event, s);
        if (rc == 0)
            rc = sched_store_load_steps_range(store, first, UINT64_MAX, load_step, s);
        if (rc == 0)
            rc = sched_store_load_live_steps(store, load_live_step, s);
        if (rc == 0)
            rc = sched_store_load_live_exits(store, load_live_exit, s);
    }
    if (rc == 0)
        rc = sched_store_load_usage(store, sched_policy_load_usage, s);
    if (rc == 0)
        rc = sched_store_load_resvs(store, sched_resv_load, s);
    if (rc < 0) {
        sched_store_close(store);
        return gs_error_set(err, rc, 0, 0, "loading %s: %s", path, gs_strerror(rc));
    }
    s->journal = sched_journal_new(s->loop, store);
    if (s->journal == NULL) {
        sched_store_close(store);
        return gs_error_set(err, -ENOMEM, 0, 0, "cannot start the journal");
    }
    sched_steps_restore_done(s);
    GS_LOG(GS_LOG_INFO, "db=%s jobs=%zu nodes=%zu next_job=%llu state loaded", path,
           sched_jobs_count(s->jobs), s->nnodes, (unsigned long long)s->next_job_id);
    return 0;
}
