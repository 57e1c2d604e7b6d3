/*
 * sched_metrics.c: /metrics, gschedd's state in the Prometheus text format (prom.h), and
 * the counters behind it (struct sched_stats, sched_internal.h). docs/monitoring.md lists
 * every metric.
 *
 * The text is rendered whole on each scrape, on the loop thread, from what gschedd holds in
 * memory: the job table, the node registry and the cluster's free resources. It is one
 * pass over the jobs and a few over the nodes, into one buffer: a thousand nodes of eight
 * GPUs render in a few milliseconds. The renderer is a list of sections, each a function
 * over (writer, context) that writes whole families: a new group of metrics is one more
 * entry in `sections`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "gsched_config.h"
#include "scheduler/prom.h"
#include "scheduler/sched_http_routes.h"
#include "scheduler/sched_internal.h"

void sched_stats_time_pass(struct sched_ctx *s, void (*pass)(struct sched_ctx *s))
{
    uint64_t start = gs_clock_mono_ns();

    pass(s);
    s->stats.plan_ns_last = gs_clock_mono_ns() - start;
    if (s->stats.plan_ns_last > s->stats.plan_ns_max)
        s->stats.plan_ns_max = s->stats.plan_ns_last;
    s->stats.plan_ns_sum += s->stats.plan_ns_last;
    s->stats.plan_passes++;
}

static void render_build_info(struct sched_prom *p, struct sched_ctx *s)
{
    (void)s;
    sched_prom_family(p, "gsched_build_info", "gauge", "Always 1; the gschedd version as a label.");
    sched_prom_sample(p, "gsched_build_info", 1, "version", GSCHED_VERSION, NULL);
}

/* --- jobs by state and partition ------------------------------------------------------- */

#define NSTATES (SCHED_JOB_OUT_OF_MEMORY + 1)

/* The job's partition as an index into cfg->partitions; npartitions when not configured. */
static size_t partition_of(const struct gs_config *cfg, const struct sched_job *job,
                           size_t default_index)
{
    const char *name = job->spec != NULL ? job->spec->partition : NULL;

    if (name == NULL)
        return default_index;
    for (size_t i = 0; i < cfg->npartitions; i++) {
        if (strcmp(cfg->partitions[i].name, name) == 0)
            return i;
    }
    return cfg->npartitions;
}

static size_t default_partition(const struct gs_config *cfg)
{
    const struct gs_config_partition *d = gs_config_partition(cfg, NULL);

    return d != NULL ? (size_t)(d - cfg->partitions) : cfg->npartitions;
}

/* PENDING and RUNNING are always written (0 included), other states when some job has it. */
static void write_job_counts(struct sched_prom *p, const struct gs_config *cfg,
                             const uint64_t *counts)
{
    for (size_t part = 0; part <= cfg->npartitions; part++) {
        const char *pname = part < cfg->npartitions ? cfg->partitions[part].name : "";

        for (int st = SCHED_JOB_PENDING; st < NSTATES; st++) {
            uint64_t n = counts[part * NSTATES + (size_t)st];
            bool live = st == SCHED_JOB_PENDING || st == SCHED_JOB_RUNNING;

            if (n == 0 && (!live || part == cfg->npartitions))
                continue;
            sched_prom_sample(p, "gsched_jobs", (double)n, "state",
                              sched_job_state_name((enum sched_job_state)st), "partition", pname,
                              NULL);
        }
    }
}

static void render_jobs(struct sched_prom *p, struct sched_ctx *s)
{
    const struct gs_config *cfg = s->cfg;
    size_t njobs = sched_jobs_count(s->jobs), def = default_partition(cfg);
    uint64_t *counts = calloc((cfg->npartitions + 1) * NSTATES, sizeof(*counts));

    if (counts == NULL) {
        p->rc = -ENOMEM;
        return;
    }
    for (size_t i = 0; i < njobs; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->state >= SCHED_JOB_PENDING && job->state < NSTATES)
            counts[partition_of(cfg, job, def) * NSTATES + job->state]++;
    }
    sched_prom_family(
        p, "gsched_jobs", "gauge",
        "Jobs gschedd holds in memory, by state and partition (ended states: those ended "
        "within scheduler.min_job_age or still needed).");
    write_job_counts(p, cfg, counts);
    free(counts);
}

/* --- nodes ----------------------------------------------------------------------------- */

/* Up: UP and its worker connected (a drained node is up, only not schedulable). */
static bool node_up(const struct sched_node *n)
{
    return n->up && n->conn != NULL;
}

static void render_node_states(struct sched_prom *p, struct sched_ctx *s)
{
    size_t count[5] = {0};

    for (size_t i = 0; i < s->nnodes; i++) {
        Gs__NodeState st = sched_node_state(s, s->nodes[i]);
        count[(size_t)st < 5 ? (size_t)st : 0]++;
    }
    sched_prom_family(p, "gsched_nodes", "gauge",
                      "Nodes by state (up: schedulable; draining: drained with jobs still on it).");
    sched_prom_sample(p, "gsched_nodes", (double)count[GS__NODE_STATE__NODE_STATE_UP], "state",
                      "up", NULL);
    sched_prom_sample(p, "gsched_nodes", (double)count[GS__NODE_STATE__NODE_STATE_DOWN], "state",
                      "down", NULL);
    sched_prom_sample(p, "gsched_nodes", (double)count[GS__NODE_STATE__NODE_STATE_DRAINING],
                      "state", "draining", NULL);
    sched_prom_sample(p, "gsched_nodes", (double)count[GS__NODE_STATE__NODE_STATE_DRAINED], "state",
                      "drained", NULL);
}

/* What /metrics says of one node, computed once per scrape. */
struct node_figures {
    double up, gpus, gpus_allocated, cores, cores_allocated, memory, memory_allocated;
    double heartbeat;
};

static double allocated(double total, double free_amount)
{
    return total > free_amount ? total - free_amount : 0;
}

static void node_figures(struct sched_ctx *s, const struct sched_node *n, struct node_figures *f)
{
    const Gs__NodeTopology *t = n->topology;
    const double mib = 1048576.0;

    f->up = node_up(n);
    f->gpus = t != NULL ? (double)t->n_gpus : 0;
    f->cores = t != NULL ? (double)t->cores : 0;
    f->memory = t != NULL ? (double)t->memory_mib * mib : 0;
    f->gpus_allocated = allocated(f->gpus, sched_cluster_free_gpus(s->cluster, n->index));
    f->cores_allocated = allocated(f->cores, sched_cluster_free_cores(s->cluster, n->index));
    f->memory_allocated =
        allocated(f->memory, (double)sched_cluster_free_mem(s->cluster, n->index) * mib);
    f->heartbeat = (double)n->last_heartbeat_wall / 1000.0;
}

/* A family with one gauge per node, labelled node: a field of struct node_figures. */
struct node_gauge {
    const char *name;
    const char *help;
    size_t field;
};

#define FIGURE(member) offsetof(struct node_figures, member)

static const struct node_gauge node_gauges[] = {
    {"gsched_node_up", "1 when the node is schedulable (UP, its worker connected), else 0.",
     FIGURE(up)},
    {"gsched_node_gpus", "GPUs of the node.", FIGURE(gpus)},
    {"gsched_node_gpus_allocated", "GPUs of the node allocated to jobs.", FIGURE(gpus_allocated)},
    {"gsched_node_cores", "CPU cores of the node.", FIGURE(cores)},
    {"gsched_node_cores_allocated", "CPU cores of the node allocated to jobs.",
     FIGURE(cores_allocated)},
    {"gsched_node_memory_bytes", "Memory of the node.", FIGURE(memory)},
    {"gsched_node_memory_allocated_bytes", "Memory of the node allocated to jobs.",
     FIGURE(memory_allocated)},
    {"gsched_node_last_heartbeat_timestamp_seconds",
     "When the node's worker was last heard from (Unix time; 0: not since gschedd started).",
     FIGURE(heartbeat)},
};

static void render_node_gauges(struct sched_prom *p, struct sched_ctx *s)
{
    struct node_figures *figs = malloc((s->nnodes + 1) * sizeof(*figs));

    if (figs == NULL) {
        p->rc = -ENOMEM;
        return;
    }
    for (size_t i = 0; i < s->nnodes; i++)
        node_figures(s, s->nodes[i], &figs[i]);
    for (size_t g = 0; g < sizeof(node_gauges) / sizeof(node_gauges[0]); g++) {
        const struct node_gauge *ng = &node_gauges[g];

        sched_prom_family(p, ng->name, "gauge", ng->help);
        for (size_t i = 0; i < s->nnodes; i++) {
            double v = *(const double *)(const void *)((const char *)&figs[i] + ng->field);

            sched_prom_sample(p, ng->name, v, "node", s->nodes[i]->name, NULL);
        }
    }
    free(figs);
}

/* --- allocated GPUs -------------------------------------------------------------------- */

static void write_job_gpus(struct sched_prom *p, struct sched_ctx *s, const struct sched_job *job)
{
    char id[24], gpu[8];

    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    for (uint32_t k = 0; k < job->alloc.nnodes; k++) {
        const struct sched_node_alloc *na = &job->alloc.nodes[k];
        const char *node = sched_cluster_node_name(s->cluster, na->node);

        for (int g = 0; g < SCHED_MAX_GPUS; g++) {
            if ((na->gpus >> g & 1) == 0)
                continue;
            snprintf(gpu, sizeof(gpu), "%d", g);
            sched_prom_sample(p, "gsched_gpu_allocated", 1, "node", node, "gpu", gpu, "job", id,
                              "user", job->user, NULL);
        }
    }
}

static void render_gpus(struct sched_prom *p, struct sched_ctx *s)
{
    size_t njobs = sched_jobs_count(s->jobs);

    sched_prom_family(p, "gsched_gpu_allocated", "gauge",
                      "1 for each GPU a running job holds, labelled with the job and its user.");
    /* Every job before plan_from has ended (sched_engine.c keeps it so). */
    for (size_t i = s->plan_from; i < njobs; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->state == SCHED_JOB_RUNNING)
            write_job_gpus(p, s, job);
    }
}

/* --- counters -------------------------------------------------------------------------- */

static void render_counters(struct sched_prom *p, struct sched_ctx *s)
{
    const struct sched_stats *st = &s->stats;

    sched_prom_family(p, "gsched_jobs_submitted_total", "counter",
                      "Jobs submitted since gschedd started (each array element counts).");
    sched_prom_sample(p, "gsched_jobs_submitted_total", (double)st->jobs_submitted, NULL);
    sched_prom_family(p, "gsched_jobs_started_total", "counter",
                      "Job starts since gschedd started (each attempt of a requeued job counts).");
    sched_prom_sample(p, "gsched_jobs_started_total", (double)st->jobs_started, NULL);
    sched_prom_family(
        p, "gsched_preemptions_total", "counter",
        "Running jobs requeued for a job of a higher QOS tier since gschedd started.");
    sched_prom_sample(p, "gsched_preemptions_total", (double)st->preemptions, NULL);
    sched_prom_family(p, "gsched_preempted_work_seconds_total", "counter",
                      "Their work lost since their last checkpoint: GPU-seconds (core-seconds for "
                      "jobs without GPUs).");
    sched_prom_sample(p, "gsched_preempted_work_seconds_total", st->preempt_lost_s, NULL);
    sched_prom_family(p, "gsched_sched_pass_seconds", "summary",
                      "Time of the planning passes since gschedd started.");
    sched_prom_sample(p, "gsched_sched_pass_seconds_sum", (double)st->plan_ns_sum / 1e9, NULL);
    sched_prom_sample(p, "gsched_sched_pass_seconds_count", (double)st->plan_passes, NULL);
    sched_prom_family(p, "gsched_sched_last_pass_seconds", "gauge",
                      "Time of the last planning pass.");
    sched_prom_sample(p, "gsched_sched_last_pass_seconds", (double)st->plan_ns_last / 1e9, NULL);
    sched_prom_family(p, "gsched_store_purged_jobs_total", "counter",
                      "Jobs deleted from the database since gschedd started, as ended longer "
                      "ago than scheduler.purge_after.");
    sched_prom_sample(p, "gsched_store_purged_jobs_total", (double)s->history_purged, NULL);
}

/* The sections of /metrics, in order; the GPU telemetry's are sched_telemetry.c's. */
static void (*const sections[])(struct sched_prom *p, struct sched_ctx *s) = {
    render_build_info, render_jobs,     render_node_states,      render_node_gauges,
    render_gpus,       render_counters, sched_telemetry_metrics,
};

int sched_metrics_render(struct sched_ctx *s, struct gs_buf *out)
{
    uint64_t start = gs_clock_mono_ns();
    struct sched_prom p;

    /* Room for a typical scrape at once: some 60 lines of 100 bytes per 8-GPU node with
     * telemetry, so that a large scrape is not copied while it grows. */
    if (gs_buf_reserve(out, 4096 + s->nnodes * 6144) < 0)
        return -ENOMEM;
    sched_prom_init(&p, out);
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]) && p.rc == 0; i++)
        sections[i](&p, s);
    sched_prom_family(&p, "gsched_metrics_render_seconds", "gauge",
                      "How long gschedd took to render the previous scrape of /metrics.");
    sched_prom_sample(&p, "gsched_metrics_render_seconds", (double)s->stats.metrics_ns_last / 1e9,
                      NULL);
    s->stats.metrics_ns_last = gs_clock_mono_ns() - start;
    return sched_prom_finish(&p);
}

int sched_metrics_route(struct sched_ctx *s, const struct sched_http_request *req,
                        struct gs_buf *body, const char **content_type)
{
    (void)req;
    *content_type = "text/plain; version=0.0.4; charset=utf-8";
    return sched_metrics_render(s, body);
}
