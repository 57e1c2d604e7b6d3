/*
 * sched_api.c: the read-only JSON of gschedd's HTTP server (/api/v1/nodes, /api/v1/jobs,
 * /api/v1/jobs/ID; routes in http.c), what a web status page needs: nodes with who holds
 * each GPU, jobs with their allocation and latest training progress. Fields are listed in
 * docs/monitoring.md; times are Unix milliseconds, null when they have not happened.
 *
 * Everything is read from the scheduler's memory on the loop thread, as `gsched nodes`,
 * `gsched queue` and `gsched show` read it; nothing here changes state. Each answer is
 * built in the caller's buffer with common/json.h's writer, whose errors are sticky: a
 * handler checks once, at gs_json_finish.
 */
#define _GNU_SOURCE /* strverscmp */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/units.h"
#include "scheduler/sched_http_routes.h"
#include "scheduler/sched_internal.h"
#include "common/sort.h"

#define JSON_TYPE "application/json"

/* A time in ms, or null when it is 0 (not yet). */
static void kv_ms(struct gs_json *j, const char *key, uint64_t ms)
{
    gs_json_key(j, key);
    if (ms == 0)
        gs_json_null(j);
    else
        gs_json_uint(j, ms);
}

static void kv_double(struct gs_json *j, const char *key, double v)
{
    gs_json_key(j, key);
    gs_json_double(j, v);
}

/* Closes the top object, ends the text with a newline; 0 or the writer's error. */
static int finish(struct gs_json *j, struct gs_buf *body, const char **content_type)
{
    int rc;

    gs_json_object_end(j);
    rc = gs_json_finish(j);
    if (rc == 0)
        rc = gs_buf_putc(body, '\n');
    *content_type = JSON_TYPE;
    return rc;
}

/* --- nodes ----------------------------------------------------------------------------- */

/* Who holds each GPU: SCHED_MAX_GPUS entries per cluster node (free() it), NULL if no memory. */
static const struct sched_job **gpu_holders(struct sched_ctx *s)
{
    size_t ncluster = sched_cluster_nnodes(s->cluster), njobs = sched_jobs_count(s->jobs);
    const struct sched_job **holders = calloc(ncluster * SCHED_MAX_GPUS + 1, sizeof(*holders));

    for (size_t i = s->plan_from; holders != NULL && i < njobs; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        for (uint32_t k = 0; job->state == SCHED_JOB_RUNNING && k < job->alloc.nnodes; k++) {
            const struct sched_node_alloc *na = &job->alloc.nodes[k];

            for (int g = 0; g < SCHED_MAX_GPUS && na->node < ncluster; g++) {
                if (na->gpus >> g & 1)
                    holders[na->node * SCHED_MAX_GPUS + (size_t)g] = job;
            }
        }
    }
    return holders;
}

static void write_node_gpus(struct gs_json *j, struct sched_ctx *s, const struct sched_node *n,
                            const struct sched_job **held)
{
    gs_json_key(j, "gpus");
    gs_json_array_begin(j);
    for (size_t g = 0; g < n->topology->n_gpus && g < SCHED_MAX_GPUS; g++) {
        const Gs__Gpu *gpu = n->topology->gpus[g];

        gs_json_object_begin(j);
        gs_json_kv_uint(j, "index", gpu->index);
        gs_json_kv_string(j, "model", gpu->model);
        gs_json_kv_uint(j, "memory_mib", gpu->memory_mib);
        gs_json_key(j, "job");
        if (gpu->index < SCHED_MAX_GPUS && held[gpu->index] != NULL)
            gs_json_uint(j, held[gpu->index]->id);
        else
            gs_json_null(j);
        gs_json_kv_string(j, "user",
                          gpu->index < SCHED_MAX_GPUS && held[gpu->index] != NULL
                              ? held[gpu->index]->user
                              : NULL);
        sched_telemetry_gpu_json(j, s, n, gpu->index);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
}

static void write_node_features(struct gs_json *j, const Gs__NodeTopology *t)
{
    gs_json_key(j, "features");
    gs_json_array_begin(j);
    for (size_t i = 0; i < t->n_features; i++)
        gs_json_string(j, t->features[i]);
    gs_json_array_end(j);
}

/* One node; free figures are 0 while it is down, as `gsched nodes` shows them. */
static void write_node(struct gs_json *j, struct sched_ctx *s, const struct sched_node *n,
                       const struct sched_job **held)
{
    const Gs__NodeTopology *t = n->topology;
    Gs__NodeState st = sched_node_state(s, n);

    gs_json_object_begin(j);
    gs_json_kv_string(j, "name", n->name);
    gs_json_kv_string(j, "state",
                      st == GS__NODE_STATE__NODE_STATE_UP         ? "up"
                      : st == GS__NODE_STATE__NODE_STATE_DRAINING ? "draining"
                      : st == GS__NODE_STATE__NODE_STATE_DRAINED  ? "drained"
                                                                  : "down");
    gs_json_kv_string(j, "reason", sched_node_reason(n));
    gs_json_kv_bool(j, "maint", sched_resv_node_maint(s, n->name, gs_clock_wall_ms()));
    gs_json_kv_bool(j, "connected", n->conn != NULL);
    gs_json_kv_string(j, "address", t->address);
    gs_json_kv_string(j, "worker_version", n->worker_version);
    write_node_features(j, t);
    gs_json_kv_uint(j, "gpus_total", t->n_gpus);
    gs_json_kv_uint(j, "gpus_free", n->up ? sched_cluster_free_gpus(s->cluster, n->index) : 0);
    write_node_gpus(j, s, n, held);
    gs_json_kv_uint(j, "cores_total", t->cores);
    gs_json_kv_uint(j, "cores_free", n->up ? sched_cluster_free_cores(s->cluster, n->index) : 0);
    gs_json_kv_uint(j, "memory_mib", t->memory_mib);
    gs_json_kv_uint(j, "memory_free_mib", n->up ? sched_cluster_free_mem(s->cluster, n->index) : 0);
    kv_ms(j, "last_heartbeat_ms", n->last_heartbeat_wall);
    sched_telemetry_node_json(j, s, n);
    gs_json_object_end(j);
}

static int by_name(const void *a, const void *b)
{
    const struct sched_node *x = *(const struct sched_node *const *)a;
    const struct sched_node *y = *(const struct sched_node *const *)b;

    return strverscmp(x->name, y->name);
}

int sched_api_nodes(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                    const char **content_type)
{
    const struct sched_job **holders = gpu_holders(s);
    struct sched_node **sorted = malloc((s->nnodes + 1) * sizeof(*sorted));
    struct gs_json j;
    int rc = -ENOMEM;

    (void)req;
    if (holders == NULL || sorted == NULL)
        goto out;
    memcpy(sorted, s->nodes, s->nnodes * sizeof(*sorted));
    gs_sort(sorted, s->nnodes, sizeof(*sorted), by_name);
    gs_json_init(&j, body);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "now_ms", gs_clock_wall_ms());
    gs_json_key(&j, "nodes");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < s->nnodes; i++) {
        if (sorted[i]->topology != NULL)
            write_node(&j, s, sorted[i], &holders[(size_t)sorted[i]->index * SCHED_MAX_GPUS]);
    }
    gs_json_array_end(&j);
    rc = finish(&j, body, content_type);
out:
    free(holders);
    free(sorted);
    return rc;
}

/* --- jobs ------------------------------------------------------------------------------ */

static const char *partition_name(struct sched_ctx *s, const struct sched_job *job)
{
    const struct gs_config_partition *d;

    if (job->spec->partition != NULL)
        return job->spec->partition;
    d = gs_config_partition(s->cfg, NULL);
    return d != NULL ? d->name : NULL;
}

/* Where a running job runs: per node its GPUs, core count and memory. */
static void write_allocation(struct gs_json *j, struct sched_ctx *s, const struct sched_job *job)
{
    uint32_t gpus = 0;

    gs_json_key(j, "allocation");
    gs_json_array_begin(j);
    for (uint32_t k = 0; job->state == SCHED_JOB_RUNNING && k < job->alloc.nnodes; k++) {
        const struct sched_node_alloc *na = &job->alloc.nodes[k];
        uint32_t cores = sched_node_alloc_cores(na);

        gs_json_object_begin(j);
        gs_json_kv_string(j, "node", sched_cluster_node_name(s->cluster, na->node));
        gs_json_key(j, "gpus");
        gs_json_array_begin(j);
        for (int g = 0; g < SCHED_MAX_GPUS; g++) {
            if (na->gpus >> g & 1) {
                gs_json_int(j, g);
                gpus++;
            }
        }
        gs_json_array_end(j);
        gs_json_kv_uint(j, "cores", cores);
        gs_json_kv_uint(j, "memory_mib", na->mem_mib);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
    gs_json_kv_uint(j, "gpus_allocated", gpus);
}

/* The latest progress report (sched_internal.h), or null before any. */
static void write_progress(struct gs_json *j, const struct sched_job_progress *p)
{
    gs_json_key(j, "progress");
    if (p == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    kv_ms(j, "received_ms", p->received_ms);
    gs_json_kv_uint(j, "attempt", p->attempt);
    gs_json_kv_uint(j, "step", p->step);
    gs_json_kv_uint(j, "steps", p->steps);
    kv_double(j, "loss", p->loss);
    kv_double(j, "tokens_per_s", p->tokens_per_s);
    kv_double(j, "mfu", p->mfu);
    kv_double(j, "lr", p->lr);
    gs_json_kv_uint(j, "eval_step", p->eval_step);
    kv_double(j, "eval_loss", p->eval_loss);
    gs_json_kv_uint(j, "ranks", p->ranks);
    kv_double(j, "comm_ms", p->comm_ms);
    kv_double(j, "comm_exposed_ms", p->comm_exposed_ms);
    kv_double(j, "overlap", p->overlap);
    gs_json_kv_string(j, "text", p->text);
    gs_json_object_end(j);
}

/* What the job asked for. */
static void write_request(struct gs_json *j, const struct gs_jobspec *spec)
{
    gs_json_kv_int(j, "priority", spec->priority);
    gs_json_kv_uint(j, "nodes_requested", gs_jobspec_total_nodes(spec));
    gs_json_kv_uint(j, "gpus_per_node", spec->gpus_per_node);
    gs_json_key(j, "time_limit_s");
    if (spec->time_limit_s == GS_DURATION_INFINITE)
        gs_json_null(j);
    else
        gs_json_uint(j, spec->time_limit_s);
    if (spec->array.array_job_id != 0) {
        gs_json_kv_uint(j, "array_job_id", spec->array.array_job_id);
        gs_json_kv_uint(j, "array_task_id", spec->array.task_id);
    }
}

/* How it ended, or nulls while it has not. */
static void write_outcome(struct gs_json *j, const struct sched_job *job)
{
    bool ended = sched_job_finished(job);

    gs_json_key(j, "exit_code");
    if (ended)
        gs_json_int(j, job->exit_code);
    else
        gs_json_null(j);
    gs_json_key(j, "signal");
    if (ended && job->signaled)
        gs_json_int(j, job->term_signal);
    else
        gs_json_null(j);
}

static void write_job_fields(struct gs_json *j, struct sched_ctx *s, const struct sched_job *job)
{
    gs_json_kv_uint(j, "id", job->id);
    gs_json_kv_string(j, "name", job->spec->name);
    gs_json_kv_string(j, "user", job->user);
    gs_json_kv_uint(j, "uid", job->uid);
    gs_json_kv_string(j, "state", sched_job_state_name(job->state));
    gs_json_kv_string(j, "reason", job->reason);
    gs_json_kv_string(j, "partition", partition_name(s, job));
    gs_json_kv_bool(j, "held", job->held);
    write_request(j, job->spec);
    kv_ms(j, "submit_ms", job->submit_ms);
    kv_ms(j, "expected_start_ms", job->expected_start_ms);
    if (job->state == SCHED_JOB_PENDING && job->expected_start_ms > 0 && job->sched_nodes != NULL)
        gs_json_kv_string(j, "sched_nodes", job->sched_nodes);
    kv_ms(j, "start_ms", job->start_ms);
    kv_ms(j, "end_ms", sched_job_finished(job) ? job->end_ms : 0);
    /* scontrol suspend: "state" stays RUNNING; the run time leaves the suspended time out. */
    gs_json_kv_bool(j, "suspended", job->suspended);
    gs_json_kv_uint(j, "run_ms", sched_job_run_ms(job, gs_clock_wall_ms()));
    gs_json_kv_uint(j, "attempt", job->attempt);
    gs_json_kv_uint(j, "restarts", job->restarts);
    write_outcome(j, job);
    write_allocation(j, s, job);
    write_progress(j, job->progress);
    sched_telemetry_usage_json(j, s, job);
}

static void write_job(struct gs_json *j, struct sched_ctx *s, const struct sched_job *job)
{
    gs_json_object_begin(j);
    write_job_fields(j, s, job);
    gs_json_object_end(j);
}

int sched_api_jobs(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                   const char **content_type)
{
    const char *all = sched_http_arg(req, "all");
    bool with_ended = all != NULL && strcmp(all, "0") != 0;
    size_t njobs = sched_jobs_count(s->jobs);
    struct gs_json j;

    gs_json_init(&j, body);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "now_ms", gs_clock_wall_ms());
    gs_json_key(&j, "jobs");
    gs_json_array_begin(&j);
    /* Every job before plan_from has ended (sched_engine.c keeps it so). */
    for (size_t i = with_ended ? 0 : s->plan_from; i < njobs; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (with_ended || !sched_job_finished(job))
            write_job(&j, s, job);
    }
    gs_json_array_end(&j);
    return finish(&j, body, content_type);
}

static void write_history(struct gs_json *j, const struct sched_job *job)
{
    gs_json_key(j, "history");
    gs_json_array_begin(j);
    for (size_t i = 0; i < job->nhistory; i++) {
        gs_json_object_begin(j);
        gs_json_kv_uint(j, "at_ms", job->history[i].at_ms);
        gs_json_kv_string(j, "state", sched_job_state_name(job->history[i].state));
        gs_json_kv_string(j, "detail", job->history[i].detail);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
}

int sched_api_job(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                  const char **content_type)
{
    const struct sched_job *job;
    struct gs_json j;
    char *end;
    uint64_t id;

    if (req->rest[0] < '0' || req->rest[0] > '9')
        return -EINVAL;
    errno = 0;
    id = strtoull(req->rest, &end, 10);
    if (*end != '\0' || errno != 0)
        return -EINVAL;
    job = sched_jobs_find(s->jobs, id);
    if (job == NULL)
        return -ENOENT;
    gs_json_init(&j, body);
    gs_json_object_begin(&j);
    write_job_fields(&j, s, job);
    write_history(&j, job);
    return finish(&j, body, content_type);
}
