/*
 * planner.c: the planning pass over the job table (see planner.h). It gathers the pending
 * jobs that may start and the running ones whose ends the reservation is computed from,
 * hands them to plan.c, and writes why each other job waits.
 */
#include "scheduler/planner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hostlist.h"
#include "common/units.h"
#include "scheduler/license.h"
#include "scheduler/preempt.h"
#include "scheduler/qos.h"
#include "common/sort.h"

/* A waiting job's reason: every pending job gets one at every pass, so no snprintf (a
 * quarter of a busy 100,000-job pass went to formatting "%s"). */
static void set_reason(struct sched_job *job, const char *why)
{
    size_t n = strlen(why);

    if (n >= sizeof(job->reason))
        n = sizeof(job->reason) - 1;
    memcpy(job->reason, why, n);
    job->reason[n] = '\0';
}

void sched_node_masks_apply(const struct sched_node_masks *m, struct sched_req *req)
{
    req->allowed = m->allowed;
    req->required = m->required;
    req->nrequired = m->nrequired;
    req->gpu_masks = m->gpu_masks;
    req->gpu_masked = m->gpu_masked;
    req->ngpu_masked = m->ngpu_masked;
    req->data_bytes = m->data_bytes;
    req->data_nodes = m->data_nodes;
    req->ndata_nodes = m->ndata_nodes;
    req->data_first = m->data_first;
    req->preferred = m->preferred;
    req->gpu_prefer = m->gpu_prefer;
}

void sched_node_masks_release(struct sched_node_masks *m)
{
    if (!m->allowed_borrowed)
        free(m->allowed);
    free(m->required);
    if (m->prefer_own != NULL) /* rare: not a call per job per pass */
        free(m->prefer_own);
    if (!m->data_borrowed) {
        free(m->data_bytes);
        free(m->data_nodes);
    }
    free(m->het);
    *m = (struct sched_node_masks){0};
}

void sched_job_req(const struct gs_jobspec *spec, struct sched_req *req)
{
    *req = (struct sched_req){.nodes = spec->nodes,
                              .gpus_per_node = spec->gpus_per_node,
                              .cores_per_node = gs_jobspec_cores_per_node(spec),
                              .mem_per_node_mib = spec->mem_per_node_mib,
                              .exclusive = spec->exclusive,
                              .constraint = spec->constraint,
                              .affinity =
                                  spec->gpu_affinity == GS_GPU_AFFINITY_STRICT ? GS_GPUSET_STRICT
                                  : spec->gpu_affinity == GS_GPU_AFFINITY_ANY  ? GS_GPUSET_ANY
                                                                               : GS_GPUSET_PREFER};
}

int sched_job_req_masked(const struct gs_jobspec *spec, struct sched_node_masks *m,
                         struct sched_req *req)
{
    sched_job_req(spec, req);
    sched_node_masks_apply(m, req);
    if (spec->nhet == 0)
        return 0;
    free(m->het);
    m->het = calloc(spec->nhet, sizeof(*m->het));
    if (m->het == NULL)
        return -ENOMEM;
    for (uint32_t k = 1; k <= spec->nhet; k++) {
        struct gs_jobspec view;

        gs_jobspec_het_view(spec, k, &view);
        sched_job_req(&view, &m->het[k - 1]);
        sched_node_masks_apply(m, &m->het[k - 1]);
    }
    req->het = m->het;
    req->nhet = spec->nhet;
    return 0;
}

/*
 * sbatch --array=...%N: at most N elements of an array run at once. Elements have
 * consecutive ids, so the pass meets each array's elements in a row and counts once per
 * array; slots go to pending elements in id order.
 */
struct throttle {
    uint64_t array_job_id;
    uint32_t slots;
};

static bool throttle_admits(struct sched_jobs *jobs, struct throttle *th,
                            const struct sched_job *job)
{
    const struct gs_job_array *a = &job->spec->array;

    if (a->array_job_id == 0 || a->throttle == 0)
        return true;
    if (th->array_job_id != a->array_job_id) {
        uint32_t running = 0;

        for (uint64_t id = a->array_job_id; id < a->array_job_id + a->count; id++) {
            const struct sched_job *e = sched_jobs_find(jobs, id);
            running += e != NULL && e->spec->array.array_job_id == a->array_job_id &&
                       e->state == SCHED_JOB_RUNNING;
        }
        th->array_job_id = a->array_job_id;
        th->slots = running < a->throttle ? a->throttle - running : 0;
    }
    if (th->slots == 0)
        return false;
    th->slots--;
    return true;
}

/*
 * sbatch --deadline: a pending job that could not end by its deadline even if it started
 * now (its time limit from now passes it) is removed, as Slurm does.
 */
static bool past_deadline(const struct sched_job *job, uint64_t now_ms)
{
    uint64_t limit = job->spec->time_limit_s;

    if (job->spec->deadline_ms == 0)
        return false;
    if (limit == GS_DURATION_INFINITE || limit > (UINT64_MAX - now_ms) / 1000)
        return true;
    return now_ms + limit * 1000 > job->spec->deadline_ms;
}

/* The pass's inputs, built from the table; masks[i] backs pending[i].req. */
struct gathered {
    struct sched_pending *pending;
    struct sched_running *running;
    struct sched_job **rjobs; /* running[i]'s job */
    struct sched_node_masks *masks;
    size_t nrunning;
    struct sched_qos_usage *qos;      /* NULL without QOS limits */
    uint32_t *lic_total;              /* per configured license, its count (NULL: none) */
    struct sched_license_need *needs; /* the jobs' licenses, which theirs point into */
    /* Advance reservations' licenses (resv_licenses; NULL without any): per reservation,
     * where its entries start (first), and per entry of the view's licenses, what the
     * reservation keeps that its running jobs do not hold (unused); the pending jobs'
     * licenses as they take them once started (held: needs has what they are checked for). */
    const struct sched_planner_hooks *hk;
    size_t *resv_first;
    int64_t *resv_unused;
    struct sched_license_need *held;
    struct sched_job **pjobs; /* out->jobs, for the gate */
    size_t words;             /* in a node mask */
    size_t nnodes;            /* entries of a per-node GPU mask array */
    struct resv_cut *cuts;    /* shared masks of the nodes outside sets of reservations */
    size_t ncuts;
    /* A what-if pass's job (sched_planner_will_run), not in the table: the pass writes
     * its reason only, none of the table's jobs'. NULL in a real pass. */
    struct sched_job *draft;
};

/* A job's pending reason, as set_reason; a what-if pass leaves the table's jobs alone. */
static void note_reason(const struct gathered *g, struct sched_job *job, const char *why)
{
    if (g->draft == NULL || job == g->draft)
        set_reason(job, why);
}

/*
 * The nodes outside the reservations of set (bit i: hooks->resv[i]), shared by the jobs
 * without a mask of their own that those reservations would otherwise meet: one mask per
 * set, not one per job, so 100,000 pending jobs cost a few masks.
 */
struct resv_cut {
    uint64_t set;
    uint64_t *mask;
    bool gpus;        /* mask is per node, the GPUs outside the set's GPU reservations */
    uint32_t *masked; /* then the nodes where that is not every GPU (nmasked; NULL: none) */
    uint32_t nmasked;
};

static const struct sched_planner_resv *resv_find(const struct sched_planner_hooks *hk,
                                                  const char *name)
{
    for (size_t i = 0; i < hk->nresv; i++) {
        if (strcmp(hk->resv[i].name, name) == 0)
            return &hk->resv[i];
    }
    return NULL;
}

static bool resv_over(const struct sched_planner_resv *r, uint64_t now_ms)
{
    return r->end_ms != 0 && r->end_ms <= now_ms;
}

/* Whether a job started now, running to its time limit, would meet r. */
static bool resv_meets(const struct sched_planner_resv *r, uint64_t now_ms, uint64_t limit_s)
{
    if (resv_over(r, now_ms))
        return false;
    if (r->start_ms <= now_ms || limit_s == GS_DURATION_INFINITE ||
        limit_s > (UINT64_MAX - now_ms) / 1000)
        return true;
    return now_ms + limit_s * 1000 > r->start_ms;
}

/* Whether MAGNETIC reservation r, started by now_ms, draws job in (its user or account). */
static bool draws_in(const struct sched_planner_resv *r, const struct sched_job *job,
                     uint64_t now_ms)
{
    const char *account = job->spec->account;

    if (!r->magnetic || r->start_ms > now_ms || resv_over(r, now_ms))
        return false;
    for (size_t i = 0; i < r->nusers; i++) {
        if (job->user[0] != '\0' && strcmp(r->users[i], job->user) == 0)
            return true;
    }
    for (size_t i = 0; account != NULL && account[0] != '\0' && i < r->naccounts; i++) {
        if (strcmp(r->accounts[i], account) == 0)
            return true;
    }
    return false;
}

static void clear_resv_nodes(uint64_t *mask, const struct sched_planner_resv *r, size_t words)
{
    for (size_t w = 0; w < words; w++)
        mask[w] &= ~r->nodes[w];
}

/* The GPUs of the reservations of set (all GPU reservations) taken out of mask. */
static void clear_resv_gpus(uint64_t *mask, const struct sched_planner_hooks *hk, uint64_t set,
                            size_t nnodes)
{
    for (size_t i = 0; i < hk->nresv; i++) {
        if (((set >> i) & 1) && hk->resv[i].gpus != NULL) {
            for (size_t n = 0; n < nnodes; n++)
                mask[n] &= ~hk->resv[i].gpus[n];
        }
    }
}

/* The nodes whose GPU mask is not every GPU, for placement (cluster.h, gpu_masked). */
static int cut_masked(struct resv_cut *cut, size_t nnodes)
{
    if ((cut->masked = malloc((nnodes > 0 ? nnodes : 1) * sizeof(*cut->masked))) == NULL)
        return -ENOMEM;
    for (size_t n = 0; n < nnodes; n++) {
        if (cut->mask[n] != ~UINT64_C(0))
            cut->masked[cut->nmasked++] = (uint32_t)n;
    }
    return 0;
}

/*
 * The shared mask for set: of nodes (whole-node reservations) or, with gpus, of GPUs per
 * node (GPU reservations), with its nodes not every GPU; NULL when out of memory.
 */
static const struct resv_cut *resv_cut(struct gathered *g, const struct sched_planner_hooks *hk,
                                       uint64_t set, bool gpus)
{
    size_t len = gpus ? g->nnodes + 1 : g->words;
    struct resv_cut *grown;
    uint64_t *mask;

    for (size_t i = 0; i < g->ncuts; i++) {
        if (g->cuts[i].set == set && g->cuts[i].gpus == gpus)
            return &g->cuts[i];
    }
    grown = realloc(g->cuts, (g->ncuts + 1) * sizeof(*grown));
    if (grown == NULL)
        return NULL;
    g->cuts = grown;
    mask = malloc(len * sizeof(*mask));
    if (mask == NULL)
        return NULL;
    memset(mask, 0xff, len * sizeof(*mask));
    if (gpus) {
        clear_resv_gpus(mask, hk, set, g->nnodes);
    } else {
        for (size_t i = 0; i < hk->nresv; i++) {
            if ((set >> i) & 1)
                clear_resv_nodes(mask, &hk->resv[i], g->words);
        }
    }
    g->cuts[g->ncuts] = (struct resv_cut){set, mask, gpus, NULL, 0};
    if (gpus && cut_masked(&g->cuts[g->ncuts], g->nnodes) < 0) {
        free(mask);
        return NULL;
    }
    return &g->cuts[g->ncuts++];
}

static uint64_t *resv_cut_mask(struct gathered *g, const struct sched_planner_hooks *hk,
                               uint64_t set, bool gpus)
{
    const struct resv_cut *cut = resv_cut(g, hk, set, gpus);

    return cut != NULL ? cut->mask : NULL;
}

/* m's allowed nodes made its own before they are narrowed (a partition's or a reservation's
 * mask is borrowed). 0 or -ENOMEM. */
static int own_allowed(const struct gathered *g, struct sched_node_masks *m)
{
    uint64_t *copy;

    if (!m->allowed_borrowed)
        return 0;
    if ((copy = malloc(g->words * sizeof(*copy))) == NULL)
        return -ENOMEM;
    memcpy(copy, m->allowed, g->words * sizeof(*copy));
    m->allowed = copy;
    m->allowed_borrowed = false;
    return 0;
}

/*
 * apply_resv's way past 64 reservations, where sets no longer fit a word: masks of the
 * job's own, none shared. 0 or -ENOMEM.
 */
static int resv_over_64(struct gathered *g, const struct sched_planner_hooks *hk,
                        const struct sched_job *job, uint64_t now_ms,
                        const struct sched_planner_resv *own, struct sched_node_masks *m)
{
    uint64_t *gpus = NULL;

    if (m->allowed == NULL) {
        if ((m->allowed = malloc(g->words * sizeof(*m->allowed))) == NULL)
            return -ENOMEM;
        memset(m->allowed, 0xff, g->words * sizeof(*m->allowed));
    } else if (own_allowed(g, m) < 0) {
        return -ENOMEM;
    }
    for (size_t i = 0; i < hk->nresv; i++) {
        const struct sched_planner_resv *r = &hk->resv[i];

        if (r == own || !resv_meets(r, now_ms, job->spec->time_limit_s) ||
            (own == NULL && draws_in(r, job, now_ms)))
            continue;
        if (r->gpus == NULL) {
            clear_resv_nodes(m->allowed, r, g->words);
            continue;
        }
        if (gpus == NULL) {
            struct resv_cut *grown = realloc(g->cuts, (g->ncuts + 1) * sizeof(*grown));

            if (grown == NULL || (gpus = malloc((g->nnodes + 1) * sizeof(*gpus))) == NULL)
                return -ENOMEM;
            g->cuts = grown; /* kept with the shared ones, freed after the pass */
            /* set 0 is never looked up (no reservation met: no mask), so no shared lookup
             * can return this job's own array */
            g->cuts[g->ncuts++] = (struct resv_cut){.set = 0, .mask = gpus, .gpus = true};
            memset(gpus, 0xff, (g->nnodes + 1) * sizeof(*gpus));
        }
        for (size_t n = 0; n < g->nnodes; n++)
            gpus[n] &= ~r->gpus[n];
    }
    m->gpu_masks = gpus;
    return 0;
}

/*
 * A job's advance reservations: narrows m to the nodes it may use. Returns 0 (plan it),
 * 1 (it waits; its reason is written) or -ENOMEM. A job in a FLEX reservation keeps off the
 * others only, like a job in none, so its own nodes and GPUs stay open to it; they rank
 * first (its GPUs chosen first where they are enough). A job in none keeps off the
 * MAGNETIC ones that draw it in no more than its own FLEX one, and the first such one's
 * nodes and GPUs come first in the same way.
 */
static int apply_resv(struct gathered *g, const struct sched_planner_hooks *hk,
                      struct sched_job *job, uint64_t now_ms, struct sched_node_masks *m)
{
    const char *name = job->spec->reservation;
    const struct sched_planner_resv *own = NULL;
    uint64_t set = 0, gpu_set = 0; /* the whole-node and the GPU reservations it would meet */

    if (name != NULL && name[0] != '\0') {
        const struct sched_planner_resv *r = resv_find(hk, name);

        if (r == NULL || resv_over(r, now_ms)) {
            note_reason(g, job, "ReservationDeleted");
            return 1;
        }
        own = r;
    }
    if (own != NULL && !own->flex) {
        const struct sched_planner_resv *r = own;

        if (now_ms < r->start_ms) {
            note_reason(g, job, "Reservation");
            return 1;
        }
    }
    if (own != NULL && !own->flex && !own->any_nodes) {
        const struct sched_planner_resv *r = own;

        if (m->allowed == NULL) {
            m->allowed = (uint64_t *)r->nodes; /* not written through: allowed_borrowed */
            m->allowed_borrowed = true;
        } else {
            if (own_allowed(g, m) < 0)
                return -ENOMEM;
            for (size_t w = 0; w < g->words; w++)
                m->allowed[w] &= r->nodes[w];
        }
        m->gpu_masks = r->gpus; /* its GPUs there, when it keeps GPUs */
        return 0;
    }
    if (own != NULL && !own->nodeless) {
        m->preferred = own->nodes;
        m->gpu_prefer = own->gpus;
    }
    for (size_t i = 0; i < hk->nresv; i++) {
        const struct sched_planner_resv *r = &hk->resv[i];

        if (r->nodeless) /* licenses alone: resv_licenses */
            continue;

        if (own == NULL && draws_in(r, job, now_ms)) {
            if (m->preferred == NULL) {
                m->preferred = r->nodes;
                m->gpu_prefer = r->gpus;
            }
            continue;
        }
        if (r != own && resv_meets(r, now_ms, job->spec->time_limit_s)) {
            if (i >= 64)
                return resv_over_64(g, hk, job, now_ms, own, m);
            if (hk->resv[i].gpus != NULL)
                gpu_set |= UINT64_C(1) << i;
            else
                set |= UINT64_C(1) << i;
        }
    }
    if (gpu_set != 0) {
        const struct resv_cut *cut = resv_cut(g, hk, gpu_set, true);

        if (cut == NULL)
            return -ENOMEM;
        m->gpu_masks = cut->mask;
        m->gpu_masked = cut->masked;
        m->ngpu_masked = cut->nmasked;
    }
    if (set == 0)
        return 0;
    if (m->allowed == NULL) {
        if ((m->allowed = resv_cut_mask(g, hk, set, false)) == NULL)
            return -ENOMEM;
        m->allowed_borrowed = true;
        return 0;
    }
    if (own_allowed(g, m) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < hk->nresv; i++) {
        if ((set >> i) & 1)
            clear_resv_nodes(m->allowed, &hk->resv[i], g->words);
    }
    return 0;
}

/* The next start or end of a reservation after now_ms (0: none), when the pass must run again. */
static uint64_t resv_wake(const struct sched_planner_hooks *hk, uint64_t now_ms)
{
    uint64_t wake = 0;

    for (size_t i = 0; hk != NULL && i < hk->nresv; i++) {
        uint64_t at[2] = {hk->resv[i].start_ms, hk->resv[i].end_ms};

        for (int k = 0; k < 2; k++) {
            if (at[k] > now_ms && (wake == 0 || at[k] < wake))
                wake = at[k];
        }
    }
    return wake;
}

static uint32_t alloc_gpus(const struct sched_alloc *a)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < a->nnodes; i++)
        n += (uint32_t)__builtin_popcountll(a->nodes[i].gpus);
    return n;
}

/* The GPUs (or cores) a request asks for, all nodes and components together. */
static uint32_t req_total(const struct sched_req *r, bool cores)
{
    uint32_t n = (r->nodes > 0 ? r->nodes : 1) * (cores ? r->cores_per_node : r->gpus_per_node);

    for (uint32_t k = 0; k < r->nhet; k++)
        n += req_total(&r->het[k], cores);
    return n;
}

static uint32_t req_gpus(const struct sched_req *r)
{
    return req_total(r, false);
}

/*
 * Until when job may wait for its dataset's nodes (its data.locality_wait, else
 * scheduler.data_locality_wait), in seconds, and from when: when it last became pending
 * (submitted, its --begin time, or its previous attempt's end); 0 when it has no dataset,
 * no wait, or scheduler.data_locality is "off". With scheduler.data_copy_rate, plan.c may
 * end the wait sooner.
 */
static void data_wait(const struct sched_planner_hooks *hk, const struct sched_job *job,
                      struct sched_pending *p)
{
    uint64_t since = job->submit_ms;
    uint32_t wait = job->spec->data.locality_wait_set ? job->spec->data.locality_wait_s
                    : hk != NULL && hk->cfg != NULL   ? hk->cfg->data_locality_wait_s
                                                      : 0;

    p->data_wait_from_s = p->data_wait_until_s = p->data_copy_rate = 0;
    if (hk == NULL || hk->cfg == NULL || wait == 0 || job->spec->data.id[0] == '\0' ||
        hk->cfg->data_locality == GS_DATA_LOCALITY_OFF)
        return;
    if (job->spec->begin_ms > since)
        since = job->spec->begin_ms;
    if (job->end_ms > since)
        since = job->end_ms;
    p->data_wait_from_s = since / 1000;
    p->data_wait_until_s = since / 1000 + wait;
    p->data_copy_rate = hk->cfg->data_copy_rate_mib * GS_MIB;
}

static bool kill_invalid_dep(const struct sched_planner_hooks *hk, const struct sched_job *job)
{
    if (job->spec->kill_invalid_dep != GS_KILL_INVALID_DEP_DEFAULT)
        return job->spec->kill_invalid_dep == GS_KILL_INVALID_DEP_YES;
    return hk != NULL && hk->cfg != NULL && hk->cfg->kill_invalid_depend;
}

/*
 * When a job's wait for its --switches count ends (0: it has none): from when it could
 * first start (submitted, or its --begin), its own wait or scheduler.max_switch_wait,
 * whichever is shorter.
 */
static uint64_t switch_wait_end_ms(const struct sched_planner_hooks *hk,
                                   const struct sched_job *job)
{
    const struct gs_jobspec *s = job->spec;
    uint32_t wait_s = hk != NULL && hk->cfg != NULL ? hk->cfg->max_switch_wait_s : 300;
    uint64_t from_ms = s->begin_ms > job->submit_ms ? s->begin_ms : job->submit_ms;

    if (s->switches == 0 || s->nodes < 2)
        return 0;
    if (s->switch_wait_set && s->switch_wait_s < wait_s)
        wait_s = s->switch_wait_s;
    return from_ms + (uint64_t)wait_s * 1000;
}

/* The job's --switches count while it may still wait for it, then 0 (any switches). */
static uint32_t switches_now(const struct sched_planner_hooks *hk, const struct sched_job *job,
                             uint64_t now_ms)
{
    return now_ms < switch_wait_end_ms(hk, job) ? job->spec->switches : 0;
}

/*
 * Adds a pending job to the pass (out->jobs[out->n], g's arrays), or leaves it out: past
 * its deadline (out->expired), held, throttled, waiting for its reservation (its reason
 * written). Returns 0, or -ENOMEM (left out: the next pass tries again).
 */
static int gather_pending(struct sched_jobs *jobs, const struct sched_planner_hooks *hk,
                          uint64_t now_ms, struct gathered *g, struct sched_plan_out *out,
                          struct throttle *th, struct sched_job *job)
{
    struct sched_pending *p = &g->pending[out->n];
    const char *why;

    if (past_deadline(job, now_ms)) { /* the caller cancels it */
        out->expired[out->nexpired++] = job;
        return 0;
    }
    if ((why = sched_job_hold_reason(jobs, job)) != NULL) {
        note_reason(g, job, why);
        if (strcmp(why, "DependencyNeverSatisfied") == 0 && kill_invalid_dep(hk, job))
            out->invalid_dep[out->ninvalid_dep++] = job; /* the caller cancels it */
        return 0;
    }
    if (!throttle_admits(jobs, th, job)) {
        note_reason(g, job, "JobArrayTaskLimit");
        return 0;
    }
    if (hk != NULL && hk->masks != NULL && hk->masks(hk->data, job->spec, &g->masks[out->n]) < 0)
        return -ENOMEM;
    if (hk != NULL &&
        (hk->nresv > 0 || (job->spec->reservation != NULL && job->spec->reservation[0] != '\0'))) {
        int rc = apply_resv(g, hk, job, now_ms, &g->masks[out->n]);

        if (rc != 0) { /* it waits (1), or out of memory */
            sched_node_masks_release(&g->masks[out->n]);
            return rc < 0 ? rc : 0;
        }
    }
    out->jobs[out->n] = job;
    p->job_id = job->id;
    p->tier = hk != NULL && hk->cfg != NULL ? sched_qos_tier(hk->cfg, job->spec) : 0;
    p->priority = hk != NULL && hk->priority != NULL ? hk->priority(hk->data, job, now_ms)
                                                     : job->spec->priority - job->spec->nice;
    p->submit_seq = job->submit_seq;
    p->time_limit_s = job->spec->time_limit_s == GS_DURATION_INFINITE ? SCHED_TIME_INFINITE
                                                                      : job->spec->time_limit_s;
    data_wait(hk, job, p);
    p->licenses = NULL; /* link_licenses */
    p->nlicenses = (uint32_t)job->spec->nlicenses;
    p->lic_hold = NULL; /* resv_licenses */
    if (sched_job_req_masked(job->spec, &g->masks[out->n], &p->req) < 0) {
        sched_node_masks_release(&g->masks[out->n]);
        return -ENOMEM;
    }
    p->req.max_switches = switches_now(hk, job, now_ms);
    out->n++;
    return 0;
}

static int gather(struct sched_jobs *jobs, size_t from, const struct sched_planner_hooks *hk,
                  uint64_t now_ms, struct gathered *g, struct sched_plan_out *out)
{
    size_t n = sched_jobs_count(jobs), span = n - from;
    struct throttle th = {0};

    g->pending = malloc((span + 1) * sizeof(*g->pending));
    g->running = malloc((span + 1) * sizeof(*g->running));
    g->rjobs = malloc((span + 1) * sizeof(*g->rjobs));
    g->masks = calloc(span + 1, sizeof(*g->masks));
    out->jobs = malloc((span + 1) * sizeof(*out->jobs));
    out->expired = malloc((span + 1) * sizeof(*out->expired));
    out->invalid_dep = malloc((span + 1) * sizeof(*out->invalid_dep));
    if (g->pending == NULL || g->running == NULL || g->rjobs == NULL || g->masks == NULL ||
        out->jobs == NULL || out->expired == NULL || out->invalid_dep == NULL)
        return -ENOMEM;
    if (hk != NULL && hk->cfg != NULL && hk->cfg->nqos > 0 &&
        (g->qos = sched_qos_usage_new(hk->cfg)) == NULL)
        return -ENOMEM;
    if (hk != NULL && hk->cfg != NULL && hk->cfg->nlicenses > 0 &&
        (g->lic_total = sched_license_totals(hk->cfg)) == NULL)
        return -ENOMEM;
    g->pjobs = out->jobs;
    for (size_t i = from; i < n; i++) {
        struct sched_job *job = sched_jobs_at(jobs, i);

        if (job->state == SCHED_JOB_RUNNING) {
            /* A suspended job is planned as if it resumed now: it ends no earlier. */
            uint64_t end = sched_job_limit_end_ms(job, now_ms);

            if (g->qos != NULL &&
                sched_qos_usage_add(g->qos, job->spec, job->user, alloc_gpus(&job->alloc)) < 0)
                return -ENOMEM;
            g->rjobs[g->nrunning] = job;
            g->running[g->nrunning] = (struct sched_running){
                job->id, end == UINT64_MAX ? SCHED_TIME_INFINITE : end / 1000, &job->alloc, NULL,
                (uint32_t)job->spec->nlicenses};
            g->nrunning++;
        }
        if (job->state == SCHED_JOB_PENDING) /* out of memory: it waits for the next pass */
            (void)gather_pending(jobs, hk, now_ms, g, out, &th, job);
    }
    return 0;
}

/* spec's licenses as plan.c's needs into need; without a configuration none is known, and
 * a job naming some waits for them. */
static void needs_of(const struct sched_planner_hooks *hk, const struct gs_jobspec *spec,
                     struct sched_license_need *need)
{
    static const struct gs_config none;

    sched_license_needs(hk != NULL && hk->cfg != NULL ? hk->cfg : &none, spec, need);
}

/*
 * The licenses of the gathered jobs (n pending ones) as plan.c's needs, in one array that
 * theirs point into: a malloc per job would cost a tenth of a busy pass. 0 or -ENOMEM.
 */
static int link_licenses(struct gathered *g, const struct sched_planner_hooks *hk,
                         const struct sched_plan_out *out, size_t n)
{
    size_t total = 0, at = 0;

    for (size_t i = 0; i < n; i++)
        total += g->pending[i].nlicenses;
    for (size_t i = 0; i < g->nrunning; i++)
        total += g->running[i].nlicenses;
    if (total == 0)
        return 0;
    if ((g->needs = malloc(total * sizeof(*g->needs))) == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (g->pending[i].nlicenses > 0) {
            needs_of(hk, out->jobs[i]->spec, g->needs + at);
            g->pending[i].licenses = g->needs + at;
            at += g->pending[i].nlicenses;
        }
    }
    for (size_t i = 0; i < g->nrunning; i++) {
        if (g->running[i].nlicenses > 0) {
            needs_of(hk, g->rjobs[i]->spec, g->needs + at);
            g->running[i].licenses = g->needs + at;
            at += g->running[i].nlicenses;
        }
    }
    return 0;
}

/* Where reservation r's licenses start in resv_unused. */
static size_t resv_entry(const struct gathered *g, const struct sched_planner_resv *r)
{
    return g->resv_first[r - g->hk->resv];
}

/* The reservation a job names, when it keeps licenses; NULL else. */
static const struct sched_planner_resv *lic_resv(const struct gathered *g,
                                                 const struct sched_job *job)
{
    const char *name = job->spec->reservation;
    const struct sched_planner_resv *r;

    if (g->resv_unused == NULL || name == NULL || name[0] == '\0')
        return NULL;
    r = resv_find(g->hk, name);
    return r != NULL && r->nlicenses > 0 ? r : NULL;
}

/*
 * Licenses kept by advance reservations (planner.h). Each keeps, from its start to its end,
 * what it was given less what its running jobs hold (unused). A pending job's licenses are
 * checked as its own count, less what its reservation's unused covers of it, plus every
 * reservation's unused that its time limit would meet (its own's included): what is free
 * must hold all the keeps besides what the job takes outside its own. Once started it holds
 * its own count (held). The check is never below that count, so nothing is ever held
 * twice over; within the pass the keeps stay as they were at its start, which only errs on
 * the safe side (a job of the reservation started in the pass still counts as unused).
 * 0 or -ENOMEM.
 */
static int resv_licenses(struct gathered *g, const struct sched_planner_hooks *hk,
                         const struct sched_plan_out *out, size_t n, uint64_t now_ms)
{
    size_t nl = 0, np = 0;

    for (size_t i = 0; hk != NULL && i < hk->nresv; i++)
        nl += hk->resv[i].nlicenses;
    for (size_t i = 0; i < n; i++)
        np += g->pending[i].nlicenses;
    if (nl == 0 || g->needs == NULL)
        return 0;
    g->hk = hk;
    g->resv_first = malloc(hk->nresv * sizeof(*g->resv_first));
    g->resv_unused = malloc(nl * sizeof(*g->resv_unused));
    g->held = malloc((np + 1) * sizeof(*g->held));
    if (g->resv_first == NULL || g->resv_unused == NULL || g->held == NULL)
        return -ENOMEM;
    for (size_t i = 0, at = 0; i < hk->nresv; i++) {
        const struct sched_planner_resv *r = &hk->resv[i];

        g->resv_first[i] = at;
        at += r->nlicenses;
        for (uint32_t k = 0; k < r->nlicenses; k++)
            g->resv_unused[resv_entry(g, r) + k] = r->licenses[k].count;
    }
    for (size_t j = 0; j < g->nrunning; j++) {
        const struct sched_planner_resv *r = lic_resv(g, g->rjobs[j]);

        for (uint32_t k = 0; r != NULL && k < r->nlicenses; k++)
            for (uint32_t q = 0; q < g->running[j].nlicenses; q++)
                if (g->running[j].licenses[q].license == r->licenses[k].license)
                    g->resv_unused[resv_entry(g, r) + k] -= g->running[j].licenses[q].count;
    }
    for (size_t e = 0; e < nl; e++)
        g->resv_unused[e] = g->resv_unused[e] > 0 ? g->resv_unused[e] : 0;
    memcpy(g->held, g->needs, np * sizeof(*g->held)); /* the pending ones come first */
    for (size_t i = 0; i < n; i++) {
        struct sched_pending *p = &g->pending[i];
        struct sched_license_need *need = (struct sched_license_need *)p->licenses;
        const struct sched_planner_resv *own;

        if (p->nlicenses == 0)
            continue;
        own = lic_resv(g, out->jobs[i]);
        p->lic_hold = g->held + (need - g->needs);
        for (uint32_t q = 0; q < p->nlicenses; q++) {
            int64_t check = need[q].count, covered = 0;

            for (size_t ri = 0; ri < hk->nresv; ri++) {
                const struct sched_planner_resv *r = &hk->resv[ri];

                if (r->nlicenses == 0 ||
                    (r != own && !resv_meets(r, now_ms, out->jobs[i]->spec->time_limit_s)))
                    continue;
                for (uint32_t k = 0; k < r->nlicenses; k++) {
                    int64_t unused = g->resv_unused[resv_entry(g, r) + k];

                    if (r->licenses[k].license != need[q].license)
                        continue;
                    if (r == own) /* its own keeps cover it first */
                        covered = unused < need[q].count ? unused : need[q].count;
                    check += unused;
                }
            }
            check -= covered;
            need[q].count = check > UINT32_MAX ? UINT32_MAX : (uint32_t)check;
        }
    }
    return 0;
}

/* QOS limits as plan.c's gate: the reason a job waits goes into the job. */
static bool gate_may_start(void *data, size_t index)
{
    struct gathered *g = data;
    struct sched_job *job = g->pjobs[index];
    const char *why =
        sched_qos_usage_check(g->qos, job->spec, job->user, req_gpus(&g->pending[index].req));

    if (why != NULL)
        note_reason(g, job, why);
    return why == NULL;
}

static void gate_started(void *data, size_t index)
{
    struct gathered *g = data;
    struct sched_job *job = g->pjobs[index];

    /* Out of memory: the job is not counted, so the next one may pass a limit once. */
    (void)sched_qos_usage_add(g->qos, job->spec, job->user, req_gpus(&g->pending[index].req));
}

/* What plan.c is asked to do beside placing: backfill to a depth, the QOS gate (only with
 * QOS limits), the licenses. */
static struct sched_plan_opts plan_opts(const struct gathered *g,
                                        const struct sched_plan_gate *gate, uint32_t depth,
                                        const struct gs_config *cfg)
{
    return (struct sched_plan_opts){depth, g->qos != NULL ? gate : NULL, g->lic_total,
                                    g->lic_total != NULL ? (uint32_t)cfg->nlicenses : 0};
}

/* Plan order again: tier, priority, submit order (plan.c's); keys copied for qsort. */
struct order_key {
    uint32_t tier;
    int32_t priority;
    uint64_t seq;
    size_t index;
};

static int by_plan_order(const void *pa, const void *pb)
{
    const struct order_key *a = pa, *b = pb;

    if (a->tier != b->tier)
        return a->tier > b->tier ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int add_preemption(struct sched_plan_out *out, struct sched_job *victim,
                          struct sched_job *by, double cost)
{
    struct sched_preemption *v = realloc(out->preempt, (out->npreempt + 1) * sizeof(*v));

    if (v == NULL)
        return -ENOMEM;
    out->preempt = v;
    v[out->npreempt++] = (struct sched_preemption){victim, by, cost};
    return 0;
}

/*
 * Per configured license, what is free once the pass's starts hold theirs (NULL: no
 * licenses configured, or out of memory: *ret_rc says).
 */
static int64_t *licenses_free(const struct gathered *g, const struct sched_plan_out *out,
                              const struct gs_config *cfg, int *ret_rc)
{
    int64_t *free_now;

    *ret_rc = 0;
    if (g->lic_total == NULL)
        return NULL;
    if ((free_now = calloc(cfg->nlicenses + 1, sizeof(*free_now))) == NULL) {
        *ret_rc = -ENOMEM;
        return NULL;
    }
    for (size_t l = 0; l < cfg->nlicenses; l++)
        free_now[l] = g->lic_total[l];
    for (size_t i = 0; i < g->nrunning; i++) {
        for (uint32_t k = 0; k < g->running[i].nlicenses; k++)
            free_now[g->running[i].licenses[k].license] -= g->running[i].licenses[k].count;
    }
    for (size_t i = 0; i < out->n; i++) {
        for (uint32_t k = 0; out->verdicts[i].start && k < g->pending[i].nlicenses; k++)
            free_now[g->pending[i].licenses[k].license] -= g->pending[i].licenses[k].count;
    }
    return free_now;
}

/*
 * Pending jobs of a tier above 0 that found no room, or not their licenses, in plan order,
 * each choosing victims among the running jobs of lower tiers on what the pass left free;
 * jobs whose QOS has preempt_mode "off" are never chosen.
 */
static int preempt(const struct gathered *g, struct sched_cluster *cluster, uint64_t now_ms,
                   const struct gs_config *cfg, struct sched_plan_out *out)
{
    struct sched_preempt_cand *cands = calloc(g->nrunning + 1, sizeof(*cands)), **by_cost = NULL;
    uint64_t *opened = calloc(sched_cluster_nnodes(cluster) / 64 + 1, sizeof(*opened));
    struct order_key *order = calloc(out->n + 1, sizeof(*order));
    size_t n = 0;
    struct sched_cluster *sim = NULL;
    int64_t *lic_free = NULL;
    int rc = -ENOMEM;

    if (cands == NULL || order == NULL || opened == NULL)
        goto out;
    for (size_t i = 0; i < out->n; i++) {
        const struct sched_pending *p = &g->pending[i];
        enum sched_reason why = out->verdicts[i].reason;

        if (!out->verdicts[i].start &&
            (why == SCHED_REASON_RESOURCES || why == SCHED_REASON_LICENSES) && p->tier > 0)
            order[n++] = (struct order_key){p->tier, p->priority, p->submit_seq, i};
    }
    rc = 0;
    if (n == 0)
        goto out;
    gs_sort(order, n, sizeof(*order), by_plan_order);
    for (size_t i = 0; i < g->nrunning; i++) {
        const struct sched_job *r = g->rjobs[i];
        /* preempt_mode "off" (Slurm's PreemptMode=OFF): a tier no preemptor is above, so it
         * is never a victim; cands stays indexed as rjobs, which the victims are read by. */
        uint32_t tier = gs_config_qos_preempt_mode(cfg, r->spec->qos) == GS_PREEMPT_OFF
                            ? UINT32_MAX
                            : sched_qos_tier(cfg, r->spec);

        cands[i] = (struct sched_preempt_cand){
            r->id,
            tier,
            sched_preempt_cost(&r->alloc, r->start_ms, r->checkpoint_ms, now_ms),
            &r->alloc,
            r->preempted_by,
            g->running[i].licenses,
            g->running[i].nlicenses};
    }
    lic_free = licenses_free(g, out, cfg, &rc);
    sim = rc == 0 ? sched_cluster_copy(cluster) : NULL;
    if (sim == NULL || sched_preempt_order(cands, g->nrunning, &by_cost) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < n && rc >= 0; k++) {
        size_t at = order[k].index;
        struct sched_job *job = out->jobs[at];
        const struct sched_pending *p = &g->pending[at];
        struct sched_preempt_lic lic = {p->licenses, p->nlicenses, lic_free,
                                        out->verdicts[at].reason == SCHED_REASON_LICENSES};
        int chosen = sched_preempt_choose_ordered(
            sim, &p->req, job->id, p->tier, cands, g->nrunning, by_cost, opened,
            lic_free != NULL && (p->nlicenses > 0 || lic.anywhere) ? &lic : NULL);

        if (chosen == -ENOMEM)
            rc = chosen;
        for (size_t i = 0; chosen > 0 && rc == 0 && i < g->nrunning; i++) {
            if (cands[i].preempted_by == job->id && g->rjobs[i]->preempted_by != job->id)
                rc = add_preemption(out, g->rjobs[i], job, cands[i].cost);
        }
    }
out:
    sched_cluster_free(sim);
    free(lic_free);
    free(by_cost);
    free(opened);
    free(cands);
    free(order);
    return rc;
}

/* The nodes a waiting job's reservation holds, as a hostlist, into job (none: NULL). Out
 * of memory leaves none: it is only shown. */
static void sched_nodes_note(const struct sched_cluster *cluster, struct sched_job *job,
                             const struct sched_verdict *v)
{
    const char **names;
    struct gs_buf list = GS_BUF_INIT;

    free(job->sched_nodes);
    job->sched_nodes = NULL;
    if (v->nreserved == 0 || (names = calloc(v->nreserved, sizeof(*names))) == NULL)
        return;
    for (uint32_t k = 0; k < v->nreserved; k++)
        names[k] = sched_cluster_node_name(cluster, v->reserved_nodes[k]);
    if (gs_hostlist_compress(names, v->nreserved, &list) == 0 && list.data != NULL)
        job->sched_nodes = strdup(list.data);
    gs_buf_release(&list);
    free(names);
}

/* What gather() built for n jobs (g itself is the caller's). */
static void gathered_release(struct gathered *g, size_t n)
{
    for (size_t i = 0; g->masks != NULL && i < n; i++)
        sched_node_masks_release(&g->masks[i]);
    free(g->masks);
    for (size_t i = 0; i < g->ncuts; i++) {
        free(g->cuts[i].mask);
        free(g->cuts[i].masked);
    }
    free(g->cuts);
    free(g->pending);
    free(g->running);
    free(g->rjobs);
    sched_qos_usage_free(g->qos);
    free(g->lic_total);
    free(g->needs);
    free(g->resv_first);
    free(g->resv_unused);
    free(g->held);
}

int sched_planner_pass(struct sched_jobs *jobs, size_t *plan_from, struct sched_cluster *cluster,
                       const struct sched_planner_hooks *hooks, uint64_t now_ms,
                       struct sched_plan_out *out)
{
    size_t n = sched_jobs_count(jobs);
    struct gathered g = {0};
    int rc;

    *out = (struct sched_plan_out){.res = {0, SCHED_TIME_INFINITE}};
    /* Jobs before the oldest unfinished one never matter again: skip them for good. */
    while (*plan_from < n && sched_job_finished(sched_jobs_at(jobs, *plan_from)))
        (*plan_from)++;
    sched_jobs_set_now(jobs, now_ms / 1000 * 1000);
    g.words = sched_cluster_nnodes(cluster) / 64 + 1;
    g.nnodes = sched_cluster_nnodes(cluster);
    rc = gather(jobs, *plan_from, hooks, now_ms, &g, out);
    out->timed_deps = sched_jobs_timed_waits(jobs);
    out->wake_ms = resv_wake(hooks, now_ms);
    if (rc < 0 || out->n == 0)
        goto out;
    out->verdicts = calloc(out->n, sizeof(*out->verdicts));
    if (out->verdicts == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    sched_verdicts_init(out->verdicts, out->n);
    if ((rc = link_licenses(&g, hooks, out, out->n)) < 0 ||
        (rc = resv_licenses(&g, hooks, out, out->n, now_ms)) < 0)
        goto out;
    {
        struct sched_plan_gate gate = {gate_may_start, gate_started, &g};
        struct sched_plan_opts opts =
            plan_opts(&g, &gate, hooks != NULL ? hooks->backfill_depth : 1,
                      hooks != NULL ? hooks->cfg : NULL);

        rc = sched_plan_with(cluster, g.pending, out->n, g.running, g.nrunning, now_ms / 1000,
                             &opts, out->verdicts, &out->res);
    }
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        struct sched_job *job = out->jobs[i];

        if (out->verdicts[i].start)
            continue;
        if (out->verdicts[i].reason != SCHED_REASON_LIMIT) /* the gate said why */
            set_reason(job, sched_reason_name(out->verdicts[i].reason));
        if (out->verdicts[i].reason == SCHED_REASON_DATA) { /* plan again when its wait ends */
            uint64_t at = out->verdicts[i].wake_s * 1000;

            if (out->wake_ms == 0 || at < out->wake_ms)
                out->wake_ms = at;
        }
        if (g.pending[i].req.max_switches > 0) { /* ... and when its switch wait does */
            uint64_t at = switch_wait_end_ms(hooks, job);

            if (out->wake_ms == 0 || at < out->wake_ms)
                out->wake_ms = at;
        }
        job->expected_start_ms =
            out->verdicts[i].reserved_s != 0 && out->verdicts[i].reserved_s != SCHED_TIME_INFINITE
                ? out->verdicts[i].reserved_s * 1000
                : 0;
        sched_nodes_note(cluster, job, &out->verdicts[i]);
    }
    /* Out of memory choosing victims costs this pass its preemptions, not its starts. */
    if (rc == 0 && hooks != NULL && hooks->cfg != NULL && hooks->cfg->nqos > 0 &&
        preempt(&g, cluster, now_ms, hooks->cfg, out) < 0) {
        free(out->preempt);
        out->preempt = NULL;
        out->npreempt = 0;
    }
out:
    gathered_release(&g, out->n);
    if (rc < 0)
        sched_plan_out_release(out);
    return rc;
}

void sched_plan_out_release(struct sched_plan_out *out)
{
    free(out->preempt);
    free(out->expired);
    free(out->invalid_dep);
    if (out->verdicts != NULL)
        sched_verdicts_release(out->verdicts, out->n);
    free(out->verdicts);
    free(out->jobs);
    *out = (struct sched_plan_out){.res = {0, SCHED_TIME_INFINITE}};
}

/* ---- what if: sched_planner_will_run ---- */

/*
 * A draft of a higher tier that would wait: the pass's preemption over the planned sim,
 * every blocked preemptor ahead of it choosing first. When it finds room (on what its own
 * victims, or earlier ones' leftovers, give back) it would start now, on its victims'
 * nodes, and the answer says so with them. 0 or -ENOMEM; nothing found leaves w as it was.
 */
static int will_run_preempt(const struct gathered *g, struct sched_cluster *sim, uint64_t now_ms,
                            const struct gs_config *cfg, struct sched_plan_out *out,
                            struct sched_job *draft, struct sched_will_run *w)
{
    uint32_t n = 0, nnodes = 0, held = 0, *nodes;
    uint64_t *ids;
    int rc = preempt(g, sim, now_ms, cfg, out);

    if (rc < 0)
        return rc;
    for (size_t i = 0; i < out->npreempt; i++) {
        if (out->preempt[i].by != draft)
            continue;
        n++;
        held += out->preempt[i].victim->alloc.nnodes;
    }
    if (n == 0) /* it could wait for others' victims' leftovers, but those are not promised */
        return 0;
    ids = calloc(n, sizeof(*ids));
    nodes = calloc(held + 1, sizeof(*nodes));
    if (ids == NULL || nodes == NULL) {
        free(ids);
        free(nodes);
        return -ENOMEM;
    }
    n = 0;
    for (size_t i = 0; i < out->npreempt; i++) {
        const struct sched_job *v = out->preempt[i].victim;

        if (out->preempt[i].by != draft)
            continue;
        ids[n++] = v->id;
        for (uint32_t k = 0; k < v->alloc.nnodes; k++) {
            bool seen = false;

            for (uint32_t m = 0; m < nnodes && !seen; m++)
                seen = nodes[m] == v->alloc.nodes[k].node;
            if (!seen)
                nodes[nnodes++] = v->alloc.nodes[k].node;
        }
    }
    sched_will_run_release(w);
    w->now = true;
    w->start_ms = now_ms;
    w->cpus = req_total(&g->pending[out->n - 1].req, true);
    w->nodes = nodes;
    w->nnodes = nnodes;
    w->preempts = ids;
    w->npreempts = n;
    w->reason[0] = '\0';
    return 0;
}

void sched_will_run_release(struct sched_will_run *w)
{
    free(w->nodes);
    free(w->preempts);
    w->nodes = NULL;
    w->nnodes = 0;
    w->preempts = NULL;
    w->npreempts = 0;
}

static uint32_t alloc_cores(const struct sched_alloc *a)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < a->nnodes; i++)
        n += sched_node_alloc_cores(&a->nodes[i]);
    return n;
}

/* How many of the pass's jobs go before the last one (the draft) in plan order. */
static size_t ahead_of_last(const struct sched_pending *p, size_t n)
{
    const struct sched_pending *d = &p[n - 1];
    size_t ahead = 0;

    for (size_t i = 0; i + 1 < n; i++) {
        ahead += p[i].tier > d->tier || (p[i].tier == d->tier && p[i].priority > d->priority) ||
                 (p[i].tier == d->tier && p[i].priority == d->priority &&
                  p[i].submit_seq < d->submit_seq);
    }
    return ahead;
}

/* The draft's verdict as a will-run answer. ENOMEM for its node list. */
static int will_run_answer(const struct sched_verdict *v, const struct sched_req *req, size_t ahead,
                           uint32_t depth, uint64_t now_ms, struct sched_job *draft,
                           struct sched_will_run *w)
{
    const struct sched_alloc *a = &v->alloc;
    uint32_t n = v->start ? a->nnodes : v->nreserved;

    if (v->start) {
        w->now = true;
        w->start_ms = now_ms;
        w->cpus = alloc_cores(a);
    } else if (v->reserved_s != 0 && v->reserved_s != SCHED_TIME_INFINITE) {
        w->start_ms = v->reserved_s * 1000;
        w->cpus = req_total(req, true);
    } else {
        n = 0;
        if (v->reason == SCHED_REASON_DATA) {
            w->start_ms = v->wake_s * 1000; /* its wait ends: it takes what fits then */
            snprintf(w->reason, sizeof(w->reason),
                     "%s: its wait for its dataset's busy nodes ends then",
                     sched_reason_name(v->reason));
        } else if (v->reason == SCHED_REASON_LIMIT) {
            snprintf(w->reason, sizeof(w->reason), "%s", draft->reason); /* the gate's */
        } else if (ahead >= depth) {
            snprintf(w->reason, sizeof(w->reason),
                     "%s: %zu jobs go before it, more than the %u an estimate plans",
                     sched_reason_name(v->reason), ahead, depth - 1);
        } else { /* plan.c found no time: no end in sight for what it needs */
            snprintf(w->reason, sizeof(w->reason),
                     "%s: no start can be predicted (it needs what jobs without a time limit "
                     "hold, or nodes that are down)",
                     sched_reason_name(v->reason));
        }
    }
    if (n == 0)
        return 0;
    if ((w->nodes = malloc(n * sizeof(*w->nodes))) == NULL)
        return -ENOMEM;
    for (uint32_t k = 0; k < n; k++)
        w->nodes[k] = v->start ? a->nodes[k].node : v->reserved_nodes[k];
    w->nnodes = n;
    return 0;
}

int sched_planner_will_run(struct sched_jobs *jobs, size_t plan_from,
                           const struct sched_cluster *cluster,
                           const struct sched_planner_hooks *hooks, uint64_t now_ms,
                           struct sched_job *draft, struct sched_will_run *ret)
{
    struct gathered g = {.draft = draft};
    struct sched_plan_out out = {.res = {0, SCHED_TIME_INFINITE}};
    struct sched_cluster *sim = NULL;
    struct throttle th = {0}; /* the draft is no array's element */
    uint64_t begin_ms = draft->spec->begin_ms;
    uint32_t depth = hooks != NULL && hooks->backfill_depth > 1 ? hooks->backfill_depth : 1;
    size_t ahead;
    int rc;

    *ret = (struct sched_will_run){0};
    g.words = sched_cluster_nnodes(cluster) / 64 + 1;
    g.nnodes = sched_cluster_nnodes(cluster);
    sched_jobs_set_now(jobs, now_ms / 1000 * 1000);
    rc = gather(jobs, plan_from, hooks, now_ms, &g, &out);
    if (rc < 0)
        goto out;
    /* Its --begin is the answer's floor, not a hold: where it would go is still asked. */
    draft->spec->begin_ms = 0;
    rc = gather_pending(jobs, hooks, now_ms, &g, &out, &th, draft);
    draft->spec->begin_ms = begin_ms;
    if (rc < 0)
        goto out;
    if (out.nexpired > 0 && out.expired[out.nexpired - 1] == draft) {
        snprintf(ret->reason, sizeof(ret->reason),
                 "DeadLine: it could not end before its deadline");
        goto out;
    }
    if (out.n == 0 || out.jobs[out.n - 1] != draft) { /* held, or waits: its reason says */
        const struct sched_planner_resv *r = hooks != NULL && draft->spec->reservation != NULL
                                                 ? resv_find(hooks, draft->spec->reservation)
                                                 : NULL;

        snprintf(ret->reason, sizeof(ret->reason), "%s", draft->reason);
        if (strcmp(draft->reason, "Reservation") == 0 && r != NULL) {
            ret->start_ms = r->start_ms;
            snprintf(ret->reason, sizeof(ret->reason), "Reservation: no sooner than %s starts",
                     r->name);
        }
        goto out;
    }
    /* Each job ahead of it holds a reservation, and it one after theirs: its answer is
     * where it fits around them, not EASY's first-blocked-only view. */
    ahead = ahead_of_last(g.pending, out.n);
    if (ahead + 1 > depth)
        depth = ahead + 1 < SCHED_WILL_RUN_DEPTH ? (uint32_t)ahead + 1 : SCHED_WILL_RUN_DEPTH;
    if ((out.verdicts = calloc(out.n, sizeof(*out.verdicts))) == NULL ||
        (sim = sched_cluster_copy(cluster)) == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    sched_verdicts_init(out.verdicts, out.n);
    if ((rc = link_licenses(&g, hooks, &out, out.n)) < 0 ||
        (rc = resv_licenses(&g, hooks, &out, out.n, now_ms)) < 0)
        goto out;
    {
        struct sched_plan_gate gate = {gate_may_start, gate_started, &g};
        struct sched_plan_opts opts =
            plan_opts(&g, &gate, depth, hooks != NULL ? hooks->cfg : NULL);

        rc = sched_plan_with(sim, g.pending, out.n, g.running, g.nrunning, now_ms / 1000, &opts,
                             out.verdicts, &out.res);
    }
    if (rc == 0)
        rc = will_run_answer(&out.verdicts[out.n - 1], &g.pending[out.n - 1].req, ahead, depth,
                             now_ms, draft, ret);
    if (rc == 0 && hooks != NULL && hooks->cfg != NULL && hooks->cfg->nqos > 0 &&
        !out.verdicts[out.n - 1].start)
        rc = will_run_preempt(&g, sim, now_ms, hooks->cfg, &out, draft, ret);
out:
    if (rc == 0 && begin_ms > now_ms && ret->start_ms != 0 && ret->start_ms < begin_ms) {
        ret->start_ms = begin_ms;
        ret->now = false;
    }
    gathered_release(&g, out.n);
    sched_plan_out_release(&out);
    sched_cluster_free(sim);
    if (rc < 0)
        sched_will_run_release(ret);
    return rc;
}
