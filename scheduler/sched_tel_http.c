/*
 * sched_tel_http.c: GPU telemetry as gschedd's HTTP server shows it: the telemetry families
 * of /metrics (per GPU by node and index, idle GPUs with their job and user, node CPU and
 * memory, running jobs' utilisation, idle share, tokens/s and MFU), the telemetry keys of
 * /api/v1's nodes, GPUs and jobs, and /api/v1/history/NODE (each GPU's recent summaries and
 * its last hour by minute) for the status page's charts. Read-only, on the loop thread;
 * the figures are telemetry.h's and usage.h's.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"
#include "scheduler/prom.h"
#include "scheduler/sched_http_routes.h"
#include "scheduler/sched_internal.h"
#include "scheduler/telemetry.h"

/* --- /metrics ------------------------------------------------------------------------- */

/* One per-GPU family: its name, type, help and how to read it (NAN: leave the GPU out). */
struct gpu_family {
    const char *name, *type, *help;
    double (*value)(const struct sched_tel_gpu *g);
};

static double v_util(const struct sched_tel_gpu *g)
{
    return g->latest.s.util_pct;
}

static double v_mem_util(const struct sched_tel_gpu *g)
{
    return g->latest.s.mem_util_pct;
}

static double v_mem_used(const struct sched_tel_gpu *g)
{
    return (double)g->latest.s.mem_used_mib * 1048576.0;
}

static double v_mem_total(const struct sched_tel_gpu *g)
{
    return g->latest.mem_total_mib > 0 ? (double)g->latest.mem_total_mib * 1048576.0 : NAN;
}

static double v_power(const struct sched_tel_gpu *g)
{
    return g->latest.s.power_w > 0 ? g->latest.s.power_w : NAN;
}

static double v_temp(const struct sched_tel_gpu *g)
{
    return g->latest.s.temperature_c >= 0 ? g->latest.s.temperature_c : NAN;
}

static double v_clock(const struct sched_tel_gpu *g)
{
    return g->latest.sm_clock_mhz > 0 ? g->latest.sm_clock_mhz * 1e6 : NAN;
}

static double v_throttle(const struct sched_tel_gpu *g)
{
    return (double)g->latest.throttle_reasons;
}

static double v_ecc(const struct sched_tel_gpu *g)
{
    return (double)g->latest.ecc_uncorrected;
}

static double v_xid(const struct sched_tel_gpu *g)
{
    return (double)g->xid_total;
}

static double v_below(const struct sched_tel_gpu *g)
{
    return g->owner != 0 && g->below_since_ms != 0 ? 1 : 0;
}

static const struct gpu_family gpu_families[] = {
    {"gsched_gpu_utilization_percent", "gauge",
     "SM utilisation, mean of the worker's samples in its last heartbeat.", v_util},
    {"gsched_gpu_memory_utilization_percent", "gauge", "Memory controller busy, mean.", v_mem_util},
    {"gsched_gpu_memory_used_bytes", "gauge", "Device memory in use.", v_mem_used},
    {"gsched_gpu_memory_total_bytes", "gauge", "Device memory in all.", v_mem_total},
    {"gsched_gpu_power_watts", "gauge", "Board power draw, mean.", v_power},
    {"gsched_gpu_temperature_celsius", "gauge", "GPU temperature.", v_temp},
    {"gsched_gpu_sm_clock_hertz", "gauge", "SM clock.", v_clock},
    {"gsched_gpu_clock_event_reasons", "gauge",
     "NVML's clocks-event (throttle) reason bits seen since the last heartbeat; 0 none.",
     v_throttle},
    {"gsched_gpu_ecc_uncorrected_errors", "gauge",
     "Volatile uncorrected ECC errors since the driver loaded.", v_ecc},
    {"gsched_gpu_xid_errors_total", "counter", "Xid errors reported since gschedd started.", v_xid},
    {"gsched_gpu_below_idle_threshold", "gauge",
     "1 while an allocated GPU is under the idle threshold (flagged or not yet).", v_below},
};

/* Every reporting GPU's {node="...",gpu="..."} once per scrape: the per-GPU families write
 * some 90,000 lines for a thousand 8-GPU nodes, and escaping each label set anew was half
 * the time. GPU g of cluster node n is at text + at[first[n] + g] for len[...] bytes. */
struct gpu_labels {
    struct gs_buf text;
    size_t *first; /* per s->nodes entry: its first slot */
    uint32_t *at, *len;
};

static int gpu_labels_make(struct sched_ctx *s, struct gpu_labels *l)
{
    size_t slots = 0, k = 0;
    char gpu[12];
    int rc = 0;

    memset(l, 0, sizeof(*l));
    gs_buf_init(&l->text);
    l->first = calloc(s->nnodes + 1, sizeof(*l->first));
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct sched_tel_node *tn = sched_tel_node_get(s->tel, s->nodes[i]->index);

        slots += tn != NULL ? tn->ngpus : 0;
    }
    l->at = calloc(slots + 1, sizeof(*l->at));
    l->len = calloc(slots + 1, sizeof(*l->len));
    if (l->first == NULL || l->at == NULL || l->len == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < s->nnodes && rc == 0; i++) {
        const struct sched_tel_node *tn = sched_tel_node_get(s->tel, s->nodes[i]->index);

        l->first[i] = k;
        for (uint32_t g = 0; tn != NULL && g < tn->ngpus && rc == 0; g++, k++) {
            snprintf(gpu, sizeof(gpu), "%u", g);
            l->at[k] = (uint32_t)l->text.len;
            rc = sched_prom_labels(&l->text, "node", s->nodes[i]->name, "gpu", gpu, NULL);
            l->len[k] = (uint32_t)(l->text.len - l->at[k]);
        }
    }
    return rc;
}

static void gpu_labels_release(struct gpu_labels *l)
{
    gs_buf_release(&l->text);
    free(l->first);
    free(l->at);
    free(l->len);
}

static void metrics_gpu_family(struct sched_prom *p, struct sched_ctx *s,
                               const struct gpu_labels *l, const struct gpu_family *fam)
{
    sched_prom_family(p, fam->name, fam->type, fam->help);
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct sched_tel_node *tn = sched_tel_node_get(s->tel, s->nodes[i]->index);

        for (uint32_t g = 0; tn != NULL && g < tn->ngpus; g++) {
            double v = tn->gpus[g].known ? fam->value(&tn->gpus[g]) : NAN;
            size_t k = l->first[i] + g;

            if (!isnan(v))
                sched_prom_sample_labels(p, fam->name, l->text.data + l->at[k], l->len[k], v);
        }
    }
}

/* Flagged GPUs with their job and user, what an alert is written on. */
static void metrics_idle(struct sched_prom *p, struct sched_ctx *s, uint64_t now)
{
    char gpu[12], id[24];

    sched_prom_family(p, "gsched_gpu_idle_seconds", "gauge",
                      "How long an allocated GPU flagged idle has been under the threshold.");
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct sched_tel_node *tn = sched_tel_node_get(s->tel, s->nodes[i]->index);

        for (uint32_t g = 0; tn != NULL && g < tn->ngpus; g++) {
            const struct sched_tel_gpu *tg = &tn->gpus[g];
            const struct sched_job *job = tg->flagged ? sched_jobs_find(s->jobs, tg->owner) : NULL;

            if (job == NULL)
                continue;
            snprintf(gpu, sizeof(gpu), "%u", g);
            snprintf(id, sizeof(id), "%" PRIu64, job->id);
            sched_prom_sample(p, "gsched_gpu_idle_seconds",
                              (double)(now - tg->below_since_ms) / 1000.0, "node",
                              s->nodes[i]->name, "gpu", gpu, "job", id, "user", job->user, NULL);
        }
    }
}

static void metrics_nodes(struct sched_prom *p, struct sched_ctx *s)
{
    sched_prom_family(p, "gsched_node_cpu_utilization_percent", "gauge",
                      "The node's CPU busy between its last two heartbeats.");
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct sched_tel_node *tn = sched_tel_node_get(s->tel, s->nodes[i]->index);

        if (tn != NULL && tn->at_ms > 0)
            sched_prom_sample(p, "gsched_node_cpu_utilization_percent", tn->cpu_util_pct, "node",
                              s->nodes[i]->name, NULL);
    }
    sched_prom_family(p, "gsched_node_memory_used_bytes", "gauge",
                      "The node's memory in use (total less available).");
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct sched_tel_node *tn = sched_tel_node_get(s->tel, s->nodes[i]->index);

        if (tn != NULL && tn->mem_total_mib > 0)
            sched_prom_sample(p, "gsched_node_memory_used_bytes",
                              (double)tn->mem_used_mib * 1048576.0, "node", s->nodes[i]->name,
                              NULL);
    }
}

/* Running jobs: their GPU use so far and the trainer's latest throughput. */
static void metrics_jobs(struct sched_prom *p, struct sched_ctx *s)
{
    static const char *const names[] = {"gsched_job_gpu_utilization_percent",
                                        "gsched_job_gpu_idle_ratio", "gsched_job_tokens_per_second",
                                        "gsched_job_mfu_ratio"};
    static const char *const helps[] = {
        "Mean SM utilisation of the job's GPUs since it started.",
        "Share of the job's GPU time under the idle threshold.",
        "Training throughput from the job's latest progress report.",
        "Model FLOPs utilisation from the job's latest progress report."};
    size_t njobs = sched_jobs_count(s->jobs);
    char id[24];

    for (size_t f = 0; f < 4; f++) {
        sched_prom_family(p, names[f], "gauge", helps[f]);
        for (size_t i = s->plan_from; i < njobs; i++) {
            const struct sched_job *job = sched_jobs_at(s->jobs, i);
            const struct sched_job_usage *u = &job->usage;
            const struct sched_job_progress *pr = job->progress;
            double v = NAN;

            if (job->state != SCHED_JOB_RUNNING)
                continue;
            if (f == 0 && u->gpu_alloc_ms > 0)
                v = sched_usage_util_mean(u);
            else if (f == 1 && u->gpu_alloc_ms > 0)
                v = (double)u->gpu_idle_ms / (double)u->gpu_alloc_ms;
            else if (f == 2 && pr != NULL && pr->tokens_per_s > 0)
                v = pr->tokens_per_s;
            else if (f == 3 && pr != NULL && pr->mfu > 0)
                v = pr->mfu;
            if (isnan(v))
                continue;
            snprintf(id, sizeof(id), "%" PRIu64, job->id);
            sched_prom_sample(p, names[f], v, "job", id, "user", job->user, NULL);
        }
    }
}

void sched_telemetry_metrics(struct sched_prom *p, struct sched_ctx *s)
{
    struct gpu_labels labels;

    if (s->tel == NULL)
        return;
    if (gpu_labels_make(s, &labels) < 0)
        p->rc = -ENOMEM;
    for (size_t f = 0; f < sizeof(gpu_families) / sizeof(gpu_families[0]) && p->rc == 0; f++)
        metrics_gpu_family(p, s, &labels, &gpu_families[f]);
    gpu_labels_release(&labels);
    metrics_idle(p, s, gs_clock_wall_ms());
    metrics_nodes(p, s);
    metrics_jobs(p, s);
}

/* --- JSON for the HTTP API (sched_api.c) and the status page ---------------------------- */

static void kv_or_null(struct gs_json *j, const char *key, bool known, double v)
{
    gs_json_key(j, key);
    if (known)
        gs_json_double(j, v);
    else
        gs_json_null(j);
}

void sched_telemetry_gpu_json(struct gs_json *j, struct sched_ctx *s, const struct sched_node *n,
                              uint32_t gpu)
{
    const struct sched_tel_node *tn = s->tel != NULL ? sched_tel_node_get(s->tel, n->index) : NULL;
    const struct sched_tel_gpu *g = tn != NULL && gpu < tn->ngpus ? &tn->gpus[gpu] : NULL;
    bool known = g != NULL && g->known;
    const struct sched_tel_figures *f = known ? &g->latest : NULL;

    kv_or_null(j, "util_pct", known, known ? f->s.util_pct : 0);
    kv_or_null(j, "util_max_pct", known, known ? f->s.util_max_pct : 0);
    kv_or_null(j, "mem_used_mib", known, known ? f->s.mem_used_mib : 0);
    kv_or_null(j, "mem_total_mib", known && f->mem_total_mib > 0, known ? f->mem_total_mib : 0);
    kv_or_null(j, "power_w", known && f->s.power_w > 0, known ? f->s.power_w : 0);
    kv_or_null(j, "temperature_c", known && f->s.temperature_c >= 0,
               known ? f->s.temperature_c : 0);
    kv_or_null(j, "sm_clock_mhz", known && f->sm_clock_mhz > 0, known ? f->sm_clock_mhz : 0);
    kv_or_null(j, "sampled_ms", known, known ? (double)f->s.at_ms : 0);
    gs_json_kv_uint(j, "xid_errors", g != NULL ? g->xid_total : 0);
    gs_json_kv_bool(j, "idle", g != NULL && g->flagged);
    kv_or_null(j, "below_threshold_since_ms", g != NULL && g->owner != 0 && g->below_since_ms > 0,
               g != NULL ? (double)g->below_since_ms : 0);
}

void sched_telemetry_node_json(struct gs_json *j, struct sched_ctx *s, const struct sched_node *n)
{
    const struct sched_tel_node *tn = s->tel != NULL ? sched_tel_node_get(s->tel, n->index) : NULL;
    bool known = tn != NULL && tn->at_ms > 0;

    gs_json_kv_bool(j, "nvml", known && tn->nvml);
    kv_or_null(j, "cpu_util_pct", known, known ? tn->cpu_util_pct : 0);
    kv_or_null(j, "memory_used_mib", known && tn->mem_total_mib > 0,
               known ? (double)tn->mem_used_mib : 0);
}

void sched_telemetry_usage_json(struct gs_json *j, struct sched_ctx *s, const struct sched_job *job)
{
    struct sched_usage_msg m;

    gs_json_key(j, "usage");
    if (job->start_ms == 0 || sched_telemetry_job_usage(s, job, &m) < 0) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_kv_bool(j, "telemetry", m.usage.telemetry);
    gs_json_kv_uint(j, "gpus_alloc", m.usage.gpus_alloc);
    gs_json_kv_uint(j, "gpus_used", m.usage.gpus_used);
    gs_json_kv_uint(j, "gpu_alloc_ms", m.usage.gpu_alloc_ms);
    gs_json_kv_uint(j, "gpu_idle_ms", m.usage.gpu_idle_ms);
    kv_or_null(j, "gpu_util_mean_pct", m.usage.gpu_alloc_ms > 0, m.usage.gpu_util_mean_pct);
    gs_json_kv_uint(j, "gpu_util_max_pct", m.usage.gpu_util_max_pct);
    gs_json_kv_uint(j, "gpu_mem_peak_mib", m.usage.gpu_mem_peak_mib);
    gs_json_kv_uint(j, "cpu_time_ms", m.usage.cpu_time_ms);
    gs_json_kv_uint(j, "rss_peak_mib", m.usage.rss_peak_mib);
    gs_json_kv_uint(j, "wall_ms", m.usage.wall_ms);
    gs_json_kv_uint(j, "idle_flags", m.usage.idle_flags);
    gs_json_key(j, "idle_gpus");
    gs_json_array_begin(j);
    for (size_t i = 0; i < m.nidle; i++)
        gs_json_string(j, m.idle_gpus[i]);
    gs_json_array_end(j);
    gs_json_object_end(j);
    sched_telemetry_usage_release(&m);
}

/* One GPU's rings: "recent" [at_ms, util, util_max, mem_mib, power_w] per heartbeat summary,
 * "minutes" [minute_start_ms, util_mean, util_max, mem_max_mib, power_mean_w]. */
static void history_gpu(struct gs_json *j, const struct sched_tel_gpu *g, uint32_t index,
                        uint64_t since_ms)
{
    struct sched_tel_sample fine[SCHED_TEL_FINE];
    struct sched_tel_bucket coarse[SCHED_TEL_COARSE];
    size_t nf = sched_tel_fine(g, since_ms, fine, SCHED_TEL_FINE);
    size_t nc = sched_tel_coarse(g, since_ms, coarse, SCHED_TEL_COARSE);

    gs_json_object_begin(j);
    gs_json_kv_uint(j, "index", index);
    gs_json_key(j, "recent");
    gs_json_array_begin(j);
    for (size_t i = 0; i < nf; i++) {
        gs_json_array_begin(j);
        gs_json_uint(j, fine[i].at_ms);
        gs_json_uint(j, fine[i].util_pct);
        gs_json_uint(j, fine[i].util_max_pct);
        gs_json_uint(j, fine[i].mem_used_mib);
        gs_json_uint(j, fine[i].power_w);
        gs_json_array_end(j);
    }
    gs_json_array_end(j);
    gs_json_key(j, "minutes");
    gs_json_array_begin(j);
    for (size_t i = 0; i < nc; i++) {
        gs_json_array_begin(j);
        gs_json_uint(j, coarse[i].minute * 60000);
        gs_json_double(j, coarse[i].count > 0 ? (double)coarse[i].util_sum / coarse[i].count : 0);
        gs_json_uint(j, coarse[i].util_max_pct);
        gs_json_uint(j, coarse[i].mem_max_mib);
        gs_json_double(j,
                       coarse[i].count > 0 ? (double)coarse[i].power_sum_w / coarse[i].count : 0);
        gs_json_array_end(j);
    }
    gs_json_array_end(j);
    gs_json_object_end(j);
}

int sched_api_history(struct sched_ctx *s, const struct sched_http_request *req,
                      struct gs_buf *body, const char **content_type)
{
    struct sched_node *n = sched_node_find(s, req->rest);
    const struct sched_tel_node *tn;
    uint64_t now = gs_clock_wall_ms();
    struct gs_json j;
    int rc;

    if (n == NULL)
        return -ENOENT;
    tn = s->tel != NULL ? sched_tel_node_get(s->tel, n->index) : NULL;
    gs_json_init(&j, body);
    gs_json_object_begin(&j);
    gs_json_kv_string(&j, "node", n->name);
    gs_json_kv_uint(&j, "now_ms", now);
    gs_json_key(&j, "gpus");
    gs_json_array_begin(&j);
    for (uint32_t g = 0; tn != NULL && g < tn->ngpus; g++)
        history_gpu(&j, &tn->gpus[g], g, now > 3600000 ? now - 3600000 : 0);
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    if (rc == 0)
        rc = gs_buf_putc(body, '\n');
    *content_type = "application/json";
    return rc;
}
