/*
 * telemetry.c: sampling on the worker's loop, the per-heartbeat summary and its heartbeat
 * fields (see telemetry.h).
 *
 * Threads: while a sample is in flight (t->in_flight), t->result and the NVML handle belong
 * to the pool thread running do_sample(), which touches nothing else; everything else,
 * and those two between samples, belong to the loop thread. t->nvml is set in new() and
 * only closed once no sample is in flight.
 *
 * Memory: everything is allocated in new() for the node's GPU count (the summaries, the
 * sample buffers, and the GpuStats / GpuProcess storage a heartbeat points into), except
 * the list of sessions a scan returns, which replaces the previous one.
 */
#include "worker/telemetry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker/nvml.h"
#include "worker/procstat.h"

/* One GPU's samples since the last fill. */
struct gpu_summary {
    uint32_t samples; /* in which NVML found the GPU */
    uint64_t util_sum, mem_util_sum, power_sum;
    uint32_t util_n, mem_util_n, power_n; /* samples that knew the figure */
    uint32_t util_max;
    uint64_t mem_used_max_mib;
    uint64_t throttle_reasons; /* OR */
    uint32_t xid_count;
    struct wrk_nvml_sample latest;
    pid_t sessions[WRK_NVML_MAX_PROCS]; /* of latest.procs; 0 unknown */
};

/* What one sample produced, written by the pool thread. */
struct sample_result {
    struct wrk_nvml_sample *gpus;          /* ngpus, when NVML is open */
    pid_t (*sessions)[WRK_NVML_MAX_PROCS]; /* of each GPU's processes */
    bool scan;                             /* asked: scan the sessions too */
    bool have_cpu, have_memory, have_load, scanned;
    struct wrk_procstat_cpu cpu;
    uint64_t memory_used_mib, memory_total_mib;
    uint32_t load_x100;
    struct wrk_session_usage *usage; /* when scanned; taken over by the loop thread */
    size_t nusage;
};

struct wrk_telemetry {
    uv_loop_t *loop;
    uv_timer_t timer;
    uv_work_t work;
    uint64_t interval_ms;
    struct wrk_nvml *nvml; /* NULL: no NVML */
    int ngpus;
    bool in_flight, closing, timer_closed;
    bool scan_wanted; /* the next sample scans the sessions */
    unsigned samples;
    struct sample_result result;
    /* The summary since the last fill, and the one the last fill reported. */
    struct gpu_summary *gpus, *prev_gpus;
    uint32_t *xid_last; /* per GPU, since start */
    bool have_cpu_base, have_cpu;
    struct wrk_procstat_cpu cpu_base, cpu; /* at the last fill, and latest */
    uint32_t cpu_pct;                      /* the last reported */
    uint64_t memory_used_mib, memory_total_mib;
    uint32_t load_x100;
    struct wrk_session_usage *usage; /* latest scan, sorted by session */
    size_t nusage;
    /* What a heartbeat points into (telemetry.h). */
    Gs__GpuStats *stats, **stats_ptrs;
    Gs__GpuProcess *procs, **procs_ptrs; /* ngpus x WRK_NVML_MAX_PROCS */
    void (*closed)(void *data);
    void *closed_data;
};

static void free_telemetry(struct wrk_telemetry *t)
{
    wrk_nvml_close(t->nvml);
    free(t->result.gpus);
    free(t->result.sessions);
    free(t->result.usage);
    free(t->gpus);
    free(t->prev_gpus);
    free(t->xid_last);
    free(t->usage);
    free(t->stats);
    free(t->stats_ptrs);
    free(t->procs);
    free(t->procs_ptrs);
    free(t);
}

/* The sessions of each GPU process, to find their jobs on the loop thread. */
static void find_sessions(struct sample_result *r, int ngpus)
{
    for (int g = 0; g < ngpus; g++) {
        for (int k = 0; k < r->gpus[g].nprocs; k++) {
            pid_t session = 0;

            wrk_procstat_session_of((pid_t)r->gpus[g].procs[k].pid, &session);
            r->sessions[g][k] = session;
        }
    }
}

/* Pool thread. */
static void do_sample(uv_work_t *req)
{
    struct wrk_telemetry *t = req->data;
    struct sample_result *r = &t->result;

    if (t->nvml != NULL) {
        wrk_nvml_sample(t->nvml, r->gpus);
        find_sessions(r, t->ngpus);
    }
    r->have_cpu = wrk_procstat_read_cpu(&r->cpu) == 0;
    r->have_memory = wrk_procstat_read_memory(&r->memory_used_mib, &r->memory_total_mib) == 0;
    r->have_load = wrk_procstat_read_loadavg(&r->load_x100) == 0;
    r->scanned = r->scan && wrk_procstat_sessions(&r->usage, &r->nusage) == 0;
}

static void add_gpu_sample(struct gpu_summary *s, const struct wrk_nvml_sample *in,
                           const pid_t *sessions)
{
    s->xid_count += in->xid_count;
    if (!in->found)
        return;
    s->samples++;
    if (in->util_pct >= 0) {
        s->util_sum += (uint64_t)in->util_pct;
        s->util_n++;
        if ((uint32_t)in->util_pct > s->util_max)
            s->util_max = (uint32_t)in->util_pct;
    }
    if (in->mem_util_pct >= 0) {
        s->mem_util_sum += (uint64_t)in->mem_util_pct;
        s->mem_util_n++;
    }
    if (in->power_w > 0) {
        s->power_sum += in->power_w;
        s->power_n++;
    }
    if (in->mem_used_mib > s->mem_used_max_mib)
        s->mem_used_max_mib = in->mem_used_mib;
    s->throttle_reasons |= in->throttle_reasons;
    s->latest = *in;
    memcpy(s->sessions, sessions, sizeof(s->sessions));
}

static void apply_node(struct wrk_telemetry *t, struct sample_result *r)
{
    if (r->have_cpu) {
        t->cpu = r->cpu;
        t->have_cpu = true;
        if (!t->have_cpu_base) {
            t->cpu_base = r->cpu;
            t->have_cpu_base = true;
        }
    }
    if (r->have_memory) {
        t->memory_used_mib = r->memory_used_mib;
        t->memory_total_mib = r->memory_total_mib;
    }
    if (r->have_load)
        t->load_x100 = r->load_x100;
    if (r->scanned) {
        free(t->usage);
        t->usage = r->usage;
        t->nusage = r->nusage;
        r->usage = NULL;
        t->scan_wanted = false;
    }
}

static void apply(struct wrk_telemetry *t)
{
    struct sample_result *r = &t->result;

    for (int g = 0; t->nvml != NULL && g < t->ngpus; g++) {
        add_gpu_sample(&t->gpus[g], &r->gpus[g], r->sessions[g]);
        if (r->gpus[g].xid_count > 0)
            t->xid_last[g] = r->gpus[g].xid_last;
    }
    apply_node(t, r);
    t->samples++;
}

static void finish_close(struct wrk_telemetry *t)
{
    void (*closed)(void *data) = t->closed;
    void *data = t->closed_data;

    if (!t->timer_closed || t->in_flight)
        return;
    free_telemetry(t);
    if (closed != NULL)
        closed(data);
}

/* Loop thread, once do_sample() returned (or was cancelled: status UV_ECANCELED). */
static void after_sample(uv_work_t *req, int status)
{
    struct wrk_telemetry *t = req->data;

    t->in_flight = false;
    if (status == 0 && !t->closing)
        apply(t);
    free(t->result.usage);
    t->result.usage = NULL;
    if (t->closing)
        finish_close(t);
}

int wrk_telemetry_sample_now(struct wrk_telemetry *t)
{
    int rc;

    if (t->closing)
        return -ECANCELED;
    if (t->in_flight)
        return -EBUSY;
    t->result.scan = t->scan_wanted;
    t->result.scanned = false;
    rc = uv_queue_work(t->loop, &t->work, do_sample, after_sample);
    if (rc == 0)
        t->in_flight = true;
    return rc;
}

static void on_tick(uv_timer_t *timer)
{
    wrk_telemetry_sample_now(timer->data);
}

static int alloc_gpus(struct wrk_telemetry *t)
{
    size_t n = (size_t)t->ngpus + 1, nprocs = n * WRK_NVML_MAX_PROCS;

    t->gpus = calloc(n, sizeof(*t->gpus));
    t->prev_gpus = calloc(n, sizeof(*t->prev_gpus));
    t->xid_last = calloc(n, sizeof(*t->xid_last));
    t->stats = calloc(n, sizeof(*t->stats));
    t->stats_ptrs = calloc(n, sizeof(*t->stats_ptrs));
    t->procs = calloc(nprocs, sizeof(*t->procs));
    t->procs_ptrs = calloc(nprocs, sizeof(*t->procs_ptrs));
    t->result.gpus = calloc(n, sizeof(*t->result.gpus));
    t->result.sessions = calloc(n, sizeof(*t->result.sessions));
    if (t->gpus == NULL || t->prev_gpus == NULL || t->xid_last == NULL || t->stats == NULL ||
        t->stats_ptrs == NULL || t->procs == NULL || t->procs_ptrs == NULL ||
        t->result.gpus == NULL || t->result.sessions == NULL)
        return -ENOMEM;
    return 0;
}

struct wrk_telemetry *wrk_telemetry_new(uv_loop_t *loop, const struct wrk_telemetry_opts *opts)
{
    struct wrk_telemetry *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    t->loop = loop;
    t->interval_ms = opts->interval_ms;
    t->ngpus = opts->ngpus > 0 ? opts->ngpus : 0;
    t->scan_wanted = true;
    t->work.data = t;
    if (alloc_gpus(t) < 0) {
        free_telemetry(t);
        return NULL;
    }
    if (t->ngpus > 0 &&
        wrk_nvml_open(opts->nvml_library, opts->bus_ids, t->ngpus, &t->nvml) == -ENOMEM) {
        free_telemetry(t);
        return NULL;
    }
    uv_timer_init(loop, &t->timer);
    t->timer.data = t;
    if (t->interval_ms > 0)
        uv_timer_start(&t->timer, on_tick, 0, t->interval_ms);
    return t;
}

static void on_timer_closed(uv_handle_t *handle)
{
    struct wrk_telemetry *t = handle->data;

    t->timer_closed = true;
    finish_close(t);
}

void wrk_telemetry_close(struct wrk_telemetry *t, void (*closed)(void *data), void *data)
{
    if (t == NULL || t->closing)
        return;
    t->closing = true;
    t->closed = closed;
    t->closed_data = data;
    if (t->in_flight)
        uv_cancel((uv_req_t *)&t->work); /* fails harmlessly once it runs */
    uv_close((uv_handle_t *)&t->timer, on_timer_closed);
}

bool wrk_telemetry_nvml(const struct wrk_telemetry *t)
{
    return t->nvml != NULL;
}

int wrk_telemetry_nvml_gpus(const struct wrk_telemetry *t)
{
    return t->nvml != NULL ? wrk_nvml_found(t->nvml) : 0;
}

unsigned wrk_telemetry_samples(const struct wrk_telemetry *t)
{
    return t->samples;
}

/* The job of the running task whose session this is, 0 none. */
static uint64_t job_of_session(const Gs__Heartbeat *hb, pid_t session)
{
    for (size_t i = 0; session > 0 && i < hb->n_running; i++)
        if (hb->running[i]->pid == session)
            return hb->running[i]->job_id;
    return 0;
}

static void fill_processes(struct wrk_telemetry *t, int g, const struct gpu_summary *s,
                           const Gs__Heartbeat *hb)
{
    Gs__GpuStats *st = t->stats_ptrs[g];
    Gs__GpuProcess *procs = &t->procs[(size_t)g * WRK_NVML_MAX_PROCS];
    Gs__GpuProcess **ptrs = &t->procs_ptrs[(size_t)g * WRK_NVML_MAX_PROCS];

    for (int k = 0; k < s->latest.nprocs; k++) {
        gs__gpu_process__init(&procs[k]);
        procs[k].pid = s->latest.procs[k].pid;
        procs[k].memory_mib = s->latest.procs[k].memory_mib;
        procs[k].job_id = job_of_session(hb, s->sessions[k]);
        ptrs[k] = &procs[k];
    }
    st->processes = s->latest.nprocs > 0 ? ptrs : NULL;
    st->n_processes = s->latest.nprocs > 0 ? (size_t)s->latest.nprocs : 0;
}

static void fill_gpu(struct wrk_telemetry *t, int g, const Gs__Heartbeat *hb)
{
    /* Nothing new since the last heartbeat: its figures again, Xids not counted twice. */
    const struct gpu_summary *s = t->gpus[g].samples > 0 ? &t->gpus[g] : &t->prev_gpus[g];
    Gs__GpuStats *st = t->stats_ptrs[g] = &t->stats[g];

    gs__gpu_stats__init(st);
    st->index = (uint32_t)g;
    st->samples = s->samples;
    st->temperature_c = s->samples > 0 ? s->latest.temperature_c : -1;
    st->xid_last = t->xid_last[g];
    st->xid_count = t->gpus[g].xid_count;
    if (s->samples == 0)
        return;
    st->utilization_pct = s->util_n > 0 ? (uint32_t)((s->util_sum + s->util_n / 2) / s->util_n) : 0;
    st->utilization_max_pct = s->util_max;
    st->memory_util_pct =
        s->mem_util_n > 0 ? (uint32_t)((s->mem_util_sum + s->mem_util_n / 2) / s->mem_util_n) : 0;
    st->power_w = s->power_n > 0 ? (uint32_t)((s->power_sum + s->power_n / 2) / s->power_n) : 0;
    st->memory_used_mib = s->latest.mem_used_mib;
    st->memory_used_max_mib = s->mem_used_max_mib;
    st->memory_total_mib = s->latest.mem_total_mib;
    st->sm_clock_mhz = s->latest.sm_clock_mhz;
    st->throttle_reasons = s->throttle_reasons;
    st->ecc_uncorrected = s->latest.ecc_uncorrected;
    fill_processes(t, g, s, hb);
}

static void fill_tasks(const struct wrk_telemetry *t, Gs__Heartbeat *hb)
{
    for (size_t i = 0; i < hb->n_running; i++) {
        Gs__TaskRef *task = hb->running[i];
        const struct wrk_session_usage *u = wrk_procstat_find(t->usage, t->nusage, task->pid);

        task->cpu_time_ms = u != NULL ? u->cpu_ms : 0;
        task->rss_mib = u != NULL ? u->rss_mib : 0;
    }
}

static void fill_node(struct wrk_telemetry *t, Gs__Heartbeat *hb)
{
    if (t->have_cpu && t->cpu.total > t->cpu_base.total) {
        t->cpu_pct = wrk_procstat_cpu_pct(&t->cpu_base, &t->cpu);
        t->cpu_base = t->cpu;
    }
    hb->cpu_util_pct = t->cpu_pct;
    hb->memory_used_mib = t->memory_used_mib;
    hb->memory_total_mib = t->memory_total_mib;
    hb->load_avg_x100 = t->load_x100;
    hb->nvml = t->nvml != NULL;
}

/* A new summary: the one just reported is kept for a heartbeat with no sample. */
static void reset_summary(struct wrk_telemetry *t)
{
    for (int g = 0; g < t->ngpus; g++) {
        if (t->gpus[g].samples > 0)
            t->prev_gpus[g] = t->gpus[g];
        memset(&t->gpus[g], 0, sizeof(t->gpus[g]));
    }
    t->scan_wanted = true;
}

int wrk_telemetry_fill(struct wrk_telemetry *t, Gs__Heartbeat *hb)
{
    fill_node(t, hb);
    fill_tasks(t, hb);
    if (t->nvml != NULL) {
        for (int g = 0; g < t->ngpus; g++)
            fill_gpu(t, g, hb);
        hb->gpus = t->stats_ptrs;
        hb->n_gpus = (size_t)t->ngpus;
    }
    reset_summary(t);
    return 0;
}
