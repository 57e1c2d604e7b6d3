/*
 * step_keep.c: running srun steps kept over a gschedd restart. Each running step has a row
 * in the store's live_steps (a packed gs.StepRecord: its layout, the cores and GPUs it
 * holds, where srun's stdin goes), written when it starts, and a row in live_step_exits for
 * each of its ended tasks, written with the exit in the same transaction as the step's
 * accounting row (a row each, not the record again: a step of N tasks writes O(N) bytes
 * over its life, not O(N^2)). Both are deleted once every task has ended. At start-up each
 * record of a running job's current attempt comes back as a running step without srun
 * (detached), with its exits: its workers' tasks are kept when they register
 * (sched_failover_reconcile asks sched_steps_known) and srun, which lost its connection,
 * reattaches (StepAttach, sched_steps.c), or the step's tasks end when it does not come
 * back in time.
 *
 * A step waiting for resources is not kept: its srun sends the request again, with the
 * same launch key, which finds the step if gschedd started it (keyed_step, sched_steps.c).
 *
 * srun's stdin in flight when gschedd stopped is not kept here either: srun sends again what
 * the tasks had not taken (StepInput.end and resent), and the workers skip what they have.
 * Nor are PMIx and PMI fences under way: the workers send their parts, and the last answer
 * they had, again when they register (sched_pmix.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/step_acct.h"
#include "scheduler/steps_internal.h"

/* st's layout as a record (its exits are rows of their own), packed into *ret (malloc'd);
 * 0 or -ENOMEM. */
static int record_pack(const struct sched_step *st, uint8_t **ret, size_t *ret_len)
{
    Gs__StepRecord rec = GS__STEP_RECORD__INIT;
    Gs__StepRecordNode *nodes = calloc(st->nnodes + 1, sizeof(*nodes));
    Gs__StepRecordNode **node_ptrs = calloc(st->nnodes + 1, sizeof(*node_ptrs));
    uint64_t *cores = calloc((size_t)st->nnodes * SCHED_STEP_CORE_WORDS + 1, sizeof(*cores));
    int rc = -ENOMEM;

    *ret = NULL;
    if (nodes == NULL || node_ptrs == NULL || cores == NULL)
        goto out;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        const struct step_node *sn = &st->nodes[i];
        static const struct sched_step_grant none;
        const struct sched_step_grant *g =
            st->grants != NULL ? &st->grants[sn->alloc_index] : &none;

        gs__step_record_node__init(&nodes[i]);
        nodes[i].alloc_index = sn->alloc_index;
        nodes[i].first = sn->first;
        nodes[i].ntasks = sn->ntasks;
        nodes[i].gpus = g->gpus;
        nodes[i].held = g->held;
        nodes[i].reads = sn->reads;
        nodes[i].cores = cores + (size_t)i * SCHED_STEP_CORE_WORDS;
        nodes[i].n_cores = SCHED_STEP_CORE_WORDS;
        memcpy(nodes[i].cores, g->cores, sizeof(g->cores));
        node_ptrs[i] = &nodes[i];
    }
    rec.attempt = st->attempt;
    rec.uid = st->uid;
    rec.n_nodes = st->nnodes;
    rec.nodes = node_ptrs;
    rec.n_ranks = st->ntasks;
    rec.ranks = st->ranks;
    rec.output_window = st->out_window;
    rec.input_acks = st->in_acks;
    rec.input_all = st->in_all;
    rec.input_rank = st->in_rank;
    rec.launch_key = (char *)st->launch_key;
    *ret_len = gs__step_record__get_packed_size(&rec);
    *ret = malloc(*ret_len + 1);
    if (*ret == NULL)
        goto out;
    gs__step_record__pack(&rec, *ret);
    rc = 0;
out:
    free(nodes);
    free(node_ptrs);
    free(cores);
    return rc;
}

void sched_step_keep(struct sched_change *ch, const struct sched_step *st, const Gs__TaskExit *ex)
{
    uint8_t *record = NULL;
    size_t len = 0;

    if (st->nexited == st->ntasks) { /* the last exit: nothing left to keep */
        sched_change_live_step(ch, st->job_id, st->step, NULL, 0);
        return;
    }
    if (ex != NULL) {
        len = gs__task_exit__get_packed_size(ex);
        if ((record = malloc(len + 1)) != NULL) {
            gs__task_exit__pack(ex, record);
            sched_change_live_exit(ch, st->job_id, st->step, ex->rank, record, len);
            return;
        }
    } else if (record_pack(st, &record, &len) == 0) {
        sched_change_live_step(ch, st->job_id, st->step, record, len);
        return;
    }
    GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u out of memory: the step is not kept", st->job_id,
           st->step - 1);
}

/* Whether rec lays its step out on job's nodes as a step of it can be. */
static bool record_fits(const Gs__StepRecord *rec, const struct sched_job *job)
{
    uint32_t tasks = 0;

    if (rec->n_ranks == 0 || rec->n_nodes == 0 || rec->n_nodes > job->alloc.nnodes)
        return false;
    for (size_t i = 0; i < rec->n_nodes; i++) {
        const Gs__StepRecordNode *n = rec->nodes[i];

        if (n->alloc_index >= job->alloc.nnodes || n->first != tasks || n->ntasks == 0 ||
            n->n_cores != SCHED_STEP_CORE_WORDS || n->ntasks > rec->n_ranks - tasks)
            return false;
        tasks += n->ntasks;
    }
    for (size_t r = 0; r < rec->n_ranks; r++) {
        if (rec->ranks[r] >= rec->n_ranks)
            return false;
    }
    return tasks == rec->n_ranks;
}

/* The step's accounting record as its exits say (its row keeps no per-task figures): the
 * ended tasks' exits again, so that it closes with the last one, with their CPU time; the
 * running tasks' comes with their workers' next heartbeats. */
static void acct_from_exits(struct sched_job *job, const struct sched_step *st)
{
    struct sched_step_acct *a = sched_step_acct_find(job, st->step);

    if (a == NULL || a->state != SCHED_JOB_RUNNING || a->ntasks != st->ntasks)
        return;
    a->cpu_done_ms = 0;
    a->nexited = 0;
    a->any_failed = a->any_cancelled = a->any_timeout = a->any_oom = false;
    for (uint32_t r = 0; a->task_cpu_ms != NULL && r < a->ntasks; r++)
        a->task_cpu_ms[r] = 0;
    for (uint32_t r = 0; r < st->ntasks; r++) {
        const Gs__TaskExit *ex = st->exits[r];

        if (ex != NULL)
            sched_step_acct_exit(a, r, ex->node_name, sched_task_end_of(ex->end_reason),
                                 ex->exit_code, (int32_t)ex->term_signal, ex->max_rss_kib,
                                 ex->cpu_time_ms, ex->end_time_ms);
    }
}

/* ex (owned by st from here on, or freed) as st's exit of its rank, unless st has one. */
static void take_exit(struct sched_step *st, Gs__TaskExit *ex)
{
    if (ex->rank >= st->ntasks || st->exits[ex->rank] != NULL) {
        gs__task_exit__free_unpacked(ex, NULL);
        return;
    }
    st->exits[ex->rank] = ex;
    st->exited[ex->rank] = true;
    st->nexited++;
}

/* st's nodes and grants from rec (checked by record_fits); 0 or -ENOMEM. */
static int take_layout(struct sched_step *st, const Gs__StepRecord *rec,
                       const struct sched_job *job)
{
    st->nodes = calloc(rec->n_nodes + 1, sizeof(*st->nodes));
    st->grants = calloc(job->alloc.nnodes + 1, sizeof(*st->grants));
    st->ranks = calloc(rec->n_ranks + 1, sizeof(*st->ranks));
    st->exited = calloc(rec->n_ranks + 1, sizeof(*st->exited));
    st->exits = calloc(rec->n_ranks + 1, sizeof(*st->exits));
    if (st->nodes == NULL || st->grants == NULL || st->ranks == NULL || st->exited == NULL ||
        st->exits == NULL)
        return -ENOMEM;
    st->nnodes = (uint32_t)rec->n_nodes;
    st->ntasks = (uint32_t)rec->n_ranks;
    memcpy(st->ranks, rec->ranks, rec->n_ranks * sizeof(*st->ranks));
    for (uint32_t i = 0; i < st->nnodes; i++) {
        const Gs__StepRecordNode *n = rec->nodes[i];
        struct sched_step_grant *g = &st->grants[n->alloc_index];

        st->nodes[i] = (struct step_node){.index = job->alloc.nodes[n->alloc_index].node,
                                          .alloc_index = n->alloc_index,
                                          .first = n->first,
                                          .ntasks = n->ntasks,
                                          .reads = n->reads};
        g->gpus = n->gpus;
        g->held = n->held;
        memcpy(g->cores, n->cores, sizeof(g->cores));
    }
    for (size_t k = 0; k < rec->n_exits; k++) { /* a record of schema 13 holds its exits */
        Gs__TaskExit *ex = gs_proto_task_exit_copy(rec->exits[k]);

        if (ex == NULL)
            return -ENOMEM;
        take_exit(st, ex);
    }
    return 0;
}

int sched_steps_restore(struct sched_ctx *s, uint64_t job_id, uint32_t step, const void *record,
                        size_t len)
{
    struct sched_job *job = sched_jobs_find(s->jobs, job_id);
    Gs__StepRecord *rec = gs__step_record__unpack(NULL, len, record);
    struct sched_step_seq *q = NULL;
    struct sched_step *st = NULL;
    int rc = 0;

    /* Of an attempt that ended, or unreadable: its tasks end when their workers register. */
    if (rec == NULL || job == NULL || job->state != SCHED_JOB_RUNNING ||
        rec->attempt != job->attempt || step == 0 || !record_fits(rec, job) ||
        sched_step_find(s, job_id, step) != NULL) {
        GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u step record not taken up", job_id,
               step > 0 ? step - 1 : 0);
        goto out;
    }
    rc = -ENOMEM;
    if ((q = sched_step_seq_get(s, job)) == NULL || (st = calloc(1, sizeof(*st))) == NULL)
        goto out;
    st->job_id = job_id;
    st->step = step;
    st->attempt = rec->attempt;
    st->uid = rec->uid;
    st->out_window = rec->output_window;
    st->in_acks = rec->input_acks;
    st->in_all = rec->input_all;
    st->in_rank = rec->input_rank;
    snprintf(st->launch_key, sizeof(st->launch_key), "%s",
             rec->launch_key != NULL ? rec->launch_key : "");
    st->detached_ms = gs_clock_mono_ms();
    rc = take_layout(st, rec, job);
    if (rc < 0)
        goto out;
    if (st->nexited == st->ntasks) { /* it ended as gschedd stopped: kept for srun alone */
        free(st->grants);
        st->grants = NULL;
        st->released = true;
    } else if (sched_step_alloc_hold(q->held, st->grants) < 0) {
        GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u held by another step: not taken up", job_id,
               step - 1);
        goto out;
    }
    for (uint32_t i = 0; i < st->nnodes; i++) /* told again by the workers as they register */
        st->nodes[i].in_acked = st->nodes[i].reads ? 0 : UINT64_MAX;
    if (step > q->last)
        q->last = step;
    st->next = s->steps;
    s->steps = st;
    st = NULL;
out:
    if (st != NULL) /* not linked, holding nothing */
        sched_step_destroy(st);
    if (rec != NULL)
        gs__step_record__free_unpacked(rec, NULL);
    return rc;
}

int sched_steps_restore_exit(struct sched_ctx *s, uint64_t job_id, uint32_t step, const void *exit,
                             size_t len)
{
    struct sched_step *st = sched_step_find(s, job_id, step);
    Gs__TaskExit *ex;

    if (st == NULL || st->nexited == st->ntasks)
        return 0; /* of a step left out */
    ex = gs__task_exit__unpack(NULL, len, exit);
    if (ex == NULL) {
        GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u unreadable task exit left out", job_id,
               step - 1);
        return 0;
    }
    take_exit(st, ex);
    return 0;
}

/* Each step taken up as its exits leave it: one whose every task had ended holds nothing
 * (its last exit deletes its rows, so only rows written apart can say so), and its
 * accounting record follows its exits. */
static void restored_steps_done(struct sched_ctx *s)
{
    for (struct sched_step *st = s->steps; st != NULL; st = st->next) {
        struct sched_job *job = sched_jobs_find(s->jobs, st->job_id);

        if (st->nexited == st->ntasks && !st->released)
            sched_step_release(s, st);
        if (job != NULL)
            acct_from_exits(job, st);
        GS_LOG(GS_LOG_INFO,
               "job=%" PRIu64 " step=%u tasks=%u exited=%u step taken up, "
               "srun awaited",
               st->job_id, st->step - 1, st->ntasks, st->nexited);
    }
}

void sched_steps_restore_done(struct sched_ctx *s)
{
    size_t count = sched_jobs_count(s->jobs);
    struct sched_change *ch = NULL;
    uint64_t now = gs_clock_wall_ms();

    restored_steps_done(s);
    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);

        for (uint32_t k = 0; job->state == SCHED_JOB_RUNNING && k < job->nsteps; k++) {
            struct sched_step_acct *a = &job->steps[k];

            if (a->step == SCHED_STEP_BATCH || a->state != SCHED_JOB_RUNNING ||
                a->attempt != job->attempt || sched_step_find(s, job->id, a->step) != NULL)
                continue;
            /* its record was not taken up: its tasks end when their workers register */
            sched_step_acct_close(a, SCHED_JOB_CANCELLED, now);
            if (ch == NULL && (ch = sched_change_new(s)) == NULL)
                return;
            sched_change_step(ch, job->id, a);
            sched_change_live_step(ch, job->id, a->step, NULL, 0);
        }
    }
    if (ch != NULL)
        sched_change_commit(s, ch, NULL, NULL);
}
