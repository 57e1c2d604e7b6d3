/*
 * sched_telemetry.c: the workers' telemetry inside gschedd. A heartbeat's GPU figures go
 * into the per-GPU rings and idle state (telemetry.h), each GPU's time is charged to the
 * job holding it (usage.h), and its tasks' CPU time with it; a GPU flagged idle gets a line
 * in its job's history and the log, and the job's partition policy (partition.idle_action)
 * decides the rest: nothing more, or a cancel/requeue once the GPU has idled idle_grace past
 * its flag. The CLI's NodeInfo and JobInfo read the figures back from here.
 *
 * Who holds a GPU comes from the running jobs' allocations, looked up again only when the
 * node's allocations moved (sched_cluster_alloc_gen), so a heartbeat costs O(its GPUs and
 * tasks). Loop thread only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"
#include "scheduler/telemetry.h"

static void refresh_owners(struct sched_ctx *s, struct sched_node *n)
{
    uint64_t gen = sched_cluster_alloc_gen(s->cluster, n->index);
    size_t njobs = sched_jobs_count(s->jobs);

    if (n->owners_valid && n->owners_gen == gen)
        return;
    memset(n->gpu_owner, 0, sizeof(n->gpu_owner));
    memset(n->gpu_owner_slot, 0, sizeof(n->gpu_owner_slot));
    for (size_t i = s->plan_from; i < njobs; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->state != SCHED_JOB_RUNNING)
            continue;
        for (uint32_t k = 0; k < job->alloc.nnodes; k++) {
            uint64_t gpus = job->alloc.nodes[k].gpus;

            if (job->alloc.nodes[k].node != n->index)
                continue;
            for (uint32_t g = 0; g < SCHED_MAX_GPUS; g++) {
                if (gpus & (UINT64_C(1) << g)) {
                    n->gpu_owner[g] = job->id;
                    n->gpu_owner_slot[g] = (uint16_t)k;
                }
            }
        }
    }
    n->owners_gen = gen;
    n->owners_valid = true;
}

static uint8_t pct(uint32_t v)
{
    return (uint8_t)(v > 100 ? 100 : v);
}

static uint32_t clamp32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void figures_of(const Gs__GpuStats *gs, struct sched_tel_figures *f)
{
    memset(f, 0, sizeof(*f));
    f->s.util_pct = pct(gs->utilization_pct);
    f->s.util_max_pct = pct(gs->utilization_max_pct > gs->utilization_pct ? gs->utilization_max_pct
                                                                          : gs->utilization_pct);
    f->s.mem_util_pct = pct(gs->memory_util_pct);
    f->s.mem_used_mib = clamp32(gs->memory_used_mib);
    f->s.mem_used_max_mib =
        clamp32(gs->memory_used_max_mib > gs->memory_used_mib ? gs->memory_used_max_mib
                                                              : gs->memory_used_mib);
    f->s.power_w = (uint16_t)(gs->power_w > UINT16_MAX ? UINT16_MAX : gs->power_w);
    f->s.temperature_c =
        (int16_t)(gs->temperature_c < -1 || gs->temperature_c > 1000 ? -1 : gs->temperature_c);
    f->mem_total_mib = gs->memory_total_mib;
    f->sm_clock_mhz = gs->sm_clock_mhz;
    f->throttle_reasons = gs->throttle_reasons;
    f->ecc_uncorrected = gs->ecc_uncorrected;
    f->xid_last = gs->xid_last;
    f->xid_count = gs->xid_count;
    f->samples = gs->samples;
    for (size_t i = 0; i < gs->n_processes && f->nprocs < SCHED_TEL_PROCS; i++) {
        f->procs[f->nprocs++] = (struct sched_tel_proc){
            .pid = gs->processes[i]->pid,
            .mem_mib = gs->processes[i]->memory_mib,
            .job_id = gs->processes[i]->job_id,
        };
    }
}

/* The time one summary stands for: since the GPU's previous one, at most a few heartbeats. */
static uint64_t covered_ms(const struct sched_ctx *s, const struct sched_tel_gpu *g,
                           const struct sched_job *job, uint64_t now)
{
    uint64_t cap = 3 * s->heartbeat_ms;
    uint64_t since = g->known && g->owner == job->id ? g->latest.s.at_ms : job->start_ms;

    if (since == 0 || since > now)
        return 0;
    if (!(g->known && g->owner == job->id) && now - since > s->heartbeat_ms)
        return s->heartbeat_ms; /* the first summary of this job on this GPU */
    return now - since < cap ? now - since : cap;
}

/* Cancel/requeue once a flagged GPU has idled past its partition's grace. */
static void apply_policy(struct sched_ctx *s, struct sched_job *job, const struct sched_node *n,
                         uint32_t gpu, const struct sched_tel_gpu *g, uint64_t now)
{
    const struct gs_config_partition *p = sched_job_partition(s, job->spec);
    /* A suspended job's GPUs idle by root's doing; resumed, it gets its grace afresh. */
    uint64_t since = g->flagged_at_ms > job->resume_ms ? g->flagged_at_ms : job->resume_ms;
    char why[160];

    if (p == NULL || !g->flagged || job->suspended ||
        (p->idle_action != GS_IDLE_CANCEL && p->idle_action != GS_IDLE_REQUEUE) ||
        now < since + p->idle_grace_s * 1000)
        return;
    snprintf(why, sizeof(why), "%s by gsched: GPU %s:%u idle (under %u%%) for %" PRIu64 " s",
             p->idle_action == GS_IDLE_CANCEL ? "cancelled" : "requeued", n->name, gpu,
             sched_tel_threshold(s->tel), (now - g->below_since_ms) / 1000);
    GS_LOG(GS_LOG_WARN, "job=%llu node=%s gpu=%u action=%s idle policy",
           (unsigned long long)job->id, n->name, gpu, gs_idle_action_name(p->idle_action));
    sched_action_idle_end(s, job, p->idle_action == GS_IDLE_REQUEUE, why);
}

/* The "notify" policy: a line in the job's stderr through the GPU's worker, if it knows
 * JobNotice (protocol 1.5; an older worker would close the connection on it). */
static void notify_owner(struct sched_ctx *s, const struct sched_job *job, struct sched_node *n,
                         uint32_t gpu, uint64_t idle_s)
{
    const struct gs_config_partition *p = sched_job_partition(s, job->spec);
    const Gs__Hello *hello = n->conn != NULL ? gs_proto_conn_peer_hello(n->conn) : NULL;
    Gs__JobNotice notice = GS__JOB_NOTICE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char text[256];

    if (p == NULL || p->idle_action != GS_IDLE_NOTIFY || hello == NULL || hello->protocol_minor < 5)
        return;
    snprintf(text, sizeof(text),
             "GPU %s:%u of job %llu has been idle (under %u%% utilisation) for %llu s; "
             "a job should hold only the GPUs it uses",
             n->name, gpu, (unsigned long long)job->id, sched_tel_threshold(s->tel),
             (unsigned long long)idle_s);
    notice.job_id = job->id;
    notice.text = text;
    env.body_case = GS__ENVELOPE__BODY_JOB_NOTICE;
    env.job_notice = &notice;
    sched_node_send(n, &env);
}

/* A history line (stored) for an idle flag raised or cleared on one of job's GPUs. */
static void note_idle(struct sched_ctx *s, struct sched_job *job, struct sched_node *n,
                      uint32_t gpu, const struct sched_tel_gpu *g, bool flagged, uint64_t now)
{
    struct sched_change *ch = sched_change_new(s);
    char detail[160];

    if (flagged) {
        job->usage.idle_flags++;
        snprintf(detail, sizeof(detail), "GPU %s:%u idle: under %u%% for %" PRIu64 " s", n->name,
                 gpu, sched_tel_threshold(s->tel), (now - g->below_since_ms) / 1000);
    } else {
        snprintf(detail, sizeof(detail), "GPU %s:%u busy again", n->name, gpu);
    }
    GS_LOG(flagged ? GS_LOG_WARN : GS_LOG_INFO, "job=%llu node=%s gpu=%u user=%s %s",
           (unsigned long long)job->id, n->name, gpu, job->user,
           flagged ? "gpu idle flagged" : "gpu idle cleared");
    sched_job_note(job, now, job->state, detail);
    if (flagged && !job->suspended) /* root stopped it: no news to its owner */
        notify_owner(s, job, n, gpu, (now - g->below_since_ms) / 1000);
    if (ch == NULL)
        return;
    sched_change_event(ch, now, job->id, n->name, sched_job_state_name(job->state), detail);
    sched_change_commit(s, ch, NULL, NULL);
}

static void record_gpu(struct sched_ctx *s, struct sched_node *n, struct sched_tel_node *tn,
                       const Gs__GpuStats *gs, uint64_t now)
{
    struct sched_tel_gpu *g = &tn->gpus[gs->index];
    uint64_t owner = n->gpu_owner[gs->index];
    struct sched_job *job = owner != 0 ? sched_jobs_find(s->jobs, owner) : NULL;
    struct sched_tel_figures f;
    enum sched_tel_idle change;
    uint64_t dt = 0;

    if (job != NULL && job->state != SCHED_JOB_RUNNING)
        job = NULL;
    figures_of(gs, &f);
    if (f.samples == 0)
        return;
    if (job != NULL)
        dt = covered_ms(s, g, job, now);
    change = sched_tel_record(s->tel, g, &f, job != NULL ? job->id : 0, now);
    if (job == NULL)
        return;
    sched_usage_gpu(&job->usage, n->gpu_owner_slot[gs->index], job->alloc.nnodes, gs->index,
                    f.s.util_pct, f.s.util_max_pct, f.s.mem_used_max_mib, dt,
                    f.s.util_max_pct < sched_tel_threshold(s->tel));
    if (change != SCHED_TEL_IDLE_SAME)
        note_idle(s, job, n, gs->index, g, change == SCHED_TEL_IDLE_FLAGGED, now);
    apply_policy(s, job, n, gs->index, g, now);
}

void sched_telemetry_heartbeat(struct sched_ctx *s, struct sched_node *n, const Gs__Heartbeat *hb)
{
    uint32_t ngpus = n->topology != NULL ? (uint32_t)n->topology->n_gpus : 0;
    uint64_t now = gs_clock_wall_ms();
    struct sched_tel_node *tn;

    if (s->tel == NULL || (tn = sched_tel_node(s->tel, n->index, ngpus)) == NULL)
        return;
    tn->nvml = hb->nvml;
    tn->cpu_util_pct = hb->cpu_util_pct;
    tn->mem_used_mib = hb->memory_used_mib;
    tn->mem_total_mib = hb->memory_total_mib;
    tn->at_ms = now;
    refresh_owners(s, n);
    for (size_t i = 0; i < hb->n_gpus; i++) {
        if (hb->gpus[i]->index < ngpus && ngpus <= SCHED_MAX_GPUS)
            record_gpu(s, n, tn, hb->gpus[i], now);
    }
    for (size_t i = 0; i < hb->n_running; i++) {
        const Gs__TaskRef *t = hb->running[i];
        struct sched_job *job = sched_jobs_find(s->jobs, t->job_id);
        struct sched_step_acct *a;

        if (job == NULL || job->state != SCHED_JOB_RUNNING ||
            (t->cpu_time_ms == 0 && t->rss_mib == 0))
            continue;
        sched_usage_task(&job->usage, t->step, t->rank, t->cpu_time_ms, t->rss_mib);
        /* sstat's figures of a running step (and sacct's until its tasks' exits say) */
        if ((a = sched_step_acct_find(job, t->step)) != NULL)
            sched_step_acct_sample(a, t->rank, n->name, t->rss_mib * 1024, t->cpu_time_ms);
    }
}

void sched_telemetry_msgs_release(struct sched_tel_msgs *m)
{
    free(m->stats);
    free(m->ptrs);
    free(m->procs);
    free(m->proc_ptrs);
    memset(m, 0, sizeof(*m));
}

static void fill_stats(const struct sched_tel_gpu *g, uint32_t index, Gs__GpuStats *st)
{
    const struct sched_tel_figures *f = &g->latest;

    gs__gpu_stats__init(st);
    st->index = index;
    st->samples = f->samples;
    st->utilization_pct = f->s.util_pct;
    st->utilization_max_pct = f->s.util_max_pct;
    st->memory_util_pct = f->s.mem_util_pct;
    st->memory_used_mib = f->s.mem_used_mib;
    st->memory_used_max_mib = f->s.mem_used_max_mib;
    st->memory_total_mib = f->mem_total_mib;
    st->temperature_c = f->s.temperature_c;
    st->power_w = f->s.power_w;
    st->sm_clock_mhz = f->sm_clock_mhz;
    st->throttle_reasons = f->throttle_reasons;
    st->ecc_uncorrected = f->ecc_uncorrected;
    st->xid_last = f->xid_last;
    st->xid_count = (uint32_t)(g->xid_total > UINT32_MAX ? UINT32_MAX : g->xid_total);
    st->job_id = g->owner;
    st->idle = g->flagged;
    st->idle_since_ms = g->below_since_ms;
    st->sampled_at_ms = f->s.at_ms;
}

int sched_telemetry_node_info(struct sched_ctx *s, const struct sched_node *n, Gs__NodeInfo *info,
                              struct sched_tel_msgs *m)
{
    const struct sched_tel_node *tn = s->tel != NULL ? sched_tel_node_get(s->tel, n->index) : NULL;
    size_t np = 0;

    memset(m, 0, sizeof(*m));
    if (n->up) {
        uint64_t mask = sched_cluster_free_gpu_mask(s->cluster, n->index);

        for (uint32_t g = 0; g < SCHED_MAX_GPUS; g++)
            if (mask & (UINT64_C(1) << g))
                m->free_gpus[info->n_free_gpus++] = g;
        info->free_gpus = m->free_gpus;
    }
    if (tn == NULL)
        return 0;
    info->cpu_util_pct = tn->cpu_util_pct;
    info->memory_used_mib = tn->mem_used_mib;
    m->stats = calloc(tn->ngpus + 1, sizeof(*m->stats));
    m->ptrs = calloc(tn->ngpus + 1, sizeof(*m->ptrs));
    m->procs = calloc((size_t)tn->ngpus * SCHED_TEL_PROCS + 1, sizeof(*m->procs));
    m->proc_ptrs = calloc((size_t)tn->ngpus * SCHED_TEL_PROCS + 1, sizeof(*m->proc_ptrs));
    if (m->stats == NULL || m->ptrs == NULL || m->procs == NULL || m->proc_ptrs == NULL) {
        sched_telemetry_msgs_release(m);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < tn->ngpus; i++) {
        const struct sched_tel_gpu *g = &tn->gpus[i];
        Gs__GpuStats *st = &m->stats[info->n_gpu_stats];

        if (!g->known)
            continue;
        fill_stats(g, i, st);
        st->processes = &m->proc_ptrs[np];
        for (uint32_t k = 0; k < g->latest.nprocs; k++, np++) {
            gs__gpu_process__init(&m->procs[np]);
            m->procs[np].pid = g->latest.procs[k].pid;
            m->procs[np].memory_mib = g->latest.procs[k].mem_mib;
            m->procs[np].job_id = g->latest.procs[k].job_id;
            m->proc_ptrs[np] = &m->procs[np];
            st->n_processes++;
        }
        m->ptrs[info->n_gpu_stats++] = st;
    }
    info->gpu_stats = m->ptrs;
    return 0;
}

void sched_telemetry_usage_release(struct sched_usage_msg *m)
{
    for (size_t i = 0; i < m->nidle; i++)
        free(m->idle_gpus[i]);
    free(m->idle_gpus);
    memset(m, 0, sizeof(*m));
}

/* "node:gpu" for each GPU of a running job flagged idle now. */
static int idle_gpus(struct sched_ctx *s, const struct sched_job *job, struct sched_usage_msg *m)
{
    for (uint32_t k = 0; k < job->alloc.nnodes; k++) {
        const struct sched_node_alloc *a = &job->alloc.nodes[k];
        const struct sched_tel_node *tn = sched_tel_node_get(s->tel, a->node);

        for (uint32_t g = 0; tn != NULL && g < tn->ngpus && g < SCHED_MAX_GPUS; g++) {
            char name[96], **v;

            if (!(a->gpus & (UINT64_C(1) << g)) || !tn->gpus[g].flagged ||
                tn->gpus[g].owner != job->id || a->node >= s->nnodes)
                continue;
            v = realloc(m->idle_gpus, (m->nidle + 1) * sizeof(*v));
            if (v == NULL)
                return -ENOMEM;
            m->idle_gpus = v;
            snprintf(name, sizeof(name), "%s:%u", s->nodes[a->node]->name, g);
            if ((v[m->nidle] = strdup(name)) == NULL)
                return -ENOMEM;
            m->nidle++;
        }
    }
    return 0;
}

int sched_telemetry_job_usage(struct sched_ctx *s, const struct sched_job *job,
                              struct sched_usage_msg *m)
{
    uint64_t end = job->end_ms > 0 ? job->end_ms : gs_clock_wall_ms();
    uint32_t gpus = 0, used;
    int rc = 0;

    memset(m, 0, sizeof(*m));
    gs__job_usage__init(&m->usage);
    sched_usage_to_msg(&job->usage, &m->usage);
    for (uint32_t k = 0; k < job->alloc.nnodes; k++)
        gpus += (uint32_t)__builtin_popcountll(job->alloc.nodes[k].gpus);
    if (gpus == 0 && job->spec != NULL)
        gpus = gs_jobspec_total_gpus(job->spec);
    m->usage.gpus_alloc = gpus;
    used = m->usage.gpus_used;
    m->usage.gpus_used = used > gpus ? gpus : used;
    m->usage.wall_ms = job->start_ms > 0 && end > job->start_ms ? end - job->start_ms : 0;
    if (job->state == SCHED_JOB_RUNNING && s->tel != NULL)
        rc = idle_gpus(s, job, m);
    m->usage.n_idle_gpus = m->nidle;
    m->usage.idle_gpus = m->idle_gpus;
    return rc;
}

void sched_telemetry_job_ended(struct sched_ctx *s, struct sched_job *job, struct sched_change *ch)
{
    const struct sched_job_usage *u = &job->usage;
    uint32_t alloc = gs_jobspec_total_gpus(job->spec);
    uint32_t used = sched_usage_gpus_used(u);
    char detail[160];

    if (u->gpu_alloc_ms == 0 || alloc == 0 || used >= alloc)
        return;
    snprintf(detail, sizeof(detail), "used %u of its %u GPUs (the others never went over %u%%)",
             used, alloc, sched_tel_threshold(s->tel));
    GS_LOG(GS_LOG_WARN, "job=%llu user=%s gpus=%u used=%u job held gpus it never used",
           (unsigned long long)job->id, job->user, alloc, used);
    sched_job_note(job, job->end_ms, job->state, detail);
    sched_change_event(ch, job->end_ms, job->id, "", sched_job_state_name(job->state), detail);
}
