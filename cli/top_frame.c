/*
 * top_frame.c: the lines of one `gsched top` frame (top_frame.h):
 *
 *     gsched top  2 nodes  8 GPUs  allocated 6 (75%)  busy 3 of 6 (50%)  idle-flagged 2
 *     sort node  user -  partition -  idle only no
 *     NODE         CPU%  MEM GiB      GPU UTIL                     MEM GiB    POWER TEMP JOB   ...
 *     n1            12%   3.1/15.6    0   [||||||||||      ]  62%   3.0/80.0   250W  61C 42    ...
 *                                     1   [                ]   0%   0.1/80.0    60W  35C 42    ...
 *
 * A GPU without figures (a node without NVML) shows its allocation only. Busy means
 * allocated and not under the idle threshold now (gschedd's idle_since_ms is 0); idle
 * flagged is gschedd's flag. Totals count the GPUs of nodes that are up, filters or not.
 */
#include "cli/top_frame.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"

#define BAR_WIDTH 16

static const char *const sort_names[CLI_TOP_SORT_COUNT] = {"node", "util", "idle"};

const char *cli_top_sort_name(enum cli_top_sort sort)
{
    return (unsigned)sort < CLI_TOP_SORT_COUNT ? sort_names[sort] : "?";
}

void cli_top_frame_release(struct cli_top_frame *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->lines[i].text);
    free(f->lines);
    memset(f, 0, sizeof(*f));
}

int cli_top_add(struct cli_top_frame *f, enum cli_top_look look, const char *text)
{
    if (f->n == f->cap) {
        size_t cap = f->cap > 0 ? 2 * f->cap : 32;
        struct cli_top_line *l = realloc(f->lines, cap * sizeof(*l));

        if (l == NULL)
            return -ENOMEM;
        f->lines = l;
        f->cap = cap;
    }
    f->lines[f->n].text = strdup(text);
    if (f->lines[f->n].text == NULL)
        return -ENOMEM;
    f->lines[f->n++].look = look;
    return 0;
}

static int addf(struct cli_top_frame *f, enum cli_top_look look, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int addf(struct cli_top_frame *f, enum cli_top_look look, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    return cli_top_add(f, look, line);
}

static const Gs__JobInfo *find_job(const Gs__QueueReply *q, uint64_t id)
{
    for (size_t i = 0; q != NULL && id != 0 && i < q->n_jobs; i++)
        if (q->jobs[i]->job_id == id)
            return q->jobs[i];
    return NULL;
}

static bool node_up(const Gs__NodeInfo *n)
{
    return n->state == GS__NODE_STATE__NODE_STATE_UP ||
           n->state == GS__NODE_STATE__NODE_STATE_DRAINING;
}

static const Gs__GpuStats *gpu_stats(const Gs__NodeInfo *n, uint32_t index)
{
    for (size_t i = 0; i < n->n_gpu_stats; i++)
        if (n->gpu_stats[i]->index == index)
            return n->gpu_stats[i];
    return NULL;
}

static bool gpu_free(const Gs__NodeInfo *n, uint32_t index)
{
    for (size_t i = 0; i < n->n_free_gpus; i++)
        if (n->free_gpus[i] == index)
            return true;
    return false;
}

struct totals {
    uint32_t nodes, gpus, allocated, busy, idle;
};

static void count(const Gs__NodesReply *nodes, struct totals *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; nodes != NULL && i < nodes->n_nodes; i++) {
        const Gs__NodeInfo *n = nodes->nodes[i];

        t->nodes++;
        if (!node_up(n))
            continue;
        t->gpus += n->gpus_total;
        t->allocated += n->gpus_total - n->gpus_free;
        for (size_t k = 0; k < n->n_gpu_stats; k++) {
            const Gs__GpuStats *g = n->gpu_stats[k];

            if (g->job_id != 0 && g->idle)
                t->idle++;
            else if (g->job_id != 0 && g->idle_since_ms == 0)
                t->busy++;
        }
    }
}

static double pct_of(uint32_t part, uint32_t whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

static int put_title(struct cli_top_frame *f, const Gs__NodesReply *nodes,
                     const struct cli_top_opts *o)
{
    struct totals t;
    int rc;

    count(nodes, &t);
    rc = addf(f, CLI_TOP_TITLE,
              "gsched top  %u nodes  %u GPUs  allocated %u (%.0f%%)  busy %u of %u (%.0f%%)  "
              "idle-flagged %u",
              t.nodes, t.gpus, t.allocated, pct_of(t.allocated, t.gpus), t.busy, t.allocated,
              pct_of(t.busy, t.allocated), t.idle);
    if (rc == 0)
        rc = addf(f, CLI_TOP_NORMAL, "sort %s  user %s  partition %s  idle only %s",
                  cli_top_sort_name(o->sort), o->user != NULL ? o->user : "-",
                  o->partition != NULL ? o->partition : "-", o->idle_only ? "yes" : "no");
    if (rc == 0)
        rc = addf(f, CLI_TOP_HEADER,
                  "%-12s %4s %11s  %-3s %-18s %4s %11s %6s %4s %-8s %-10s %8s %6s", "NODE", "CPU%",
                  "MEM GiB", "GPU", "UTIL", "", "MEM GiB", "POWER", "TEMP", "JOB", "USER", "TOK/S",
                  "MFU");
    return rc;
}

static bool wanted(const struct cli_top_opts *o, const Gs__GpuStats *g, const Gs__JobInfo *job)
{
    if (o->idle_only && (g == NULL || !g->idle))
        return false;
    if (o->user != NULL &&
        (job == NULL || job->user == NULL || strcmp(job->user->username, o->user) != 0))
        return false;
    if (o->partition != NULL && (job == NULL || strcmp(job->partition, o->partition) != 0))
        return false;
    return true;
}

static void bar(uint32_t pct, char *out)
{
    uint32_t fill = (pct > 100 ? 100 : pct) * BAR_WIDTH / 100;

    out[0] = '[';
    for (uint32_t i = 0; i < BAR_WIDTH; i++)
        out[1 + i] = i < fill ? '|' : ' ';
    out[BAR_WIDTH + 1] = ']';
    out[BAR_WIDTH + 2] = '\0';
}

/* The columns from GPU on, for GPU index of node n. */
static enum cli_top_look gpu_cells(const Gs__NodeInfo *n, uint32_t index, const Gs__GpuStats *g,
                                   const Gs__JobInfo *job, uint64_t now_ms, char *out, size_t size)
{
    char b[BAR_WIDTH + 3], jobcol[24] = "-", tail[48] = "";
    uint64_t job_id = g != NULL ? g->job_id : 0;
    bool held = g != NULL ? g->job_id != 0 : !gpu_free(n, index);

    if (job_id != 0)
        snprintf(jobcol, sizeof(jobcol), "%llu", (unsigned long long)job_id);
    else if (held)
        snprintf(jobcol, sizeof(jobcol), "alloc");
    if (g != NULL && g->idle)
        snprintf(tail, sizeof(tail), "IDLE %llus",
                 (unsigned long long)(now_ms > g->idle_since_ms ? (now_ms - g->idle_since_ms) / 1000
                                                                : 0));
    else if (job != NULL && job->tokens_per_s > 0)
        snprintf(tail, sizeof(tail), "%8.0f %5.1f%%", job->tokens_per_s, 100.0 * job->mfu);
    if (g == NULL || g->samples == 0) {
        snprintf(out, size, "%-3u %-18s %4s %11s %6s %4s %-8s %-10s %s", index, "(no figures)", "",
                 "", "", "", jobcol, job != NULL && job->user ? job->user->username : "", tail);
        return held ? CLI_TOP_NORMAL : CLI_TOP_FREE;
    }
    bar(g->utilization_pct, b);
    snprintf(out, size, "%-3u %-18s %3u%% %5.1f/%-5.1f %5uW %3dC %-8s %-10s %s", index, b,
             g->utilization_pct, (double)g->memory_used_mib / 1024.0,
             (double)g->memory_total_mib / 1024.0, g->power_w, g->temperature_c, jobcol,
             job != NULL && job->user ? job->user->username : "", tail);
    if (g->idle)
        return CLI_TOP_IDLE;
    return held ? CLI_TOP_BUSY : CLI_TOP_FREE;
}

/* "  jobs 4,7" for the running jobs with a task on node, "" when none. */
static void node_jobs(const Gs__QueueReply *q, const char *node, char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; q != NULL && i < q->n_jobs && len + 24 < size; i++) {
        const Gs__JobInfo *job = q->jobs[i];

        for (size_t k = 0; k < job->n_allocation; k++) {
            if (job->state != GS__JOB_STATE__JOB_STATE_RUNNING ||
                strcmp(job->allocation[k]->node_name, node) != 0)
                continue;
            len += (size_t)snprintf(out + len, size - len, "%s%llu", len == 0 ? "  jobs " : ",",
                                    (unsigned long long)job->job_id);
            break;
        }
    }
}

static int put_node(struct cli_top_frame *f, const Gs__NodeInfo *n, const Gs__QueueReply *q,
                    const struct cli_top_opts *o, uint64_t now_ms)
{
    char head[64], cells[320];
    bool first = true, filtered = o->user != NULL || o->partition != NULL || o->idle_only;
    int rc = 0;

    snprintf(head, sizeof(head), "%-12.12s %3u%% %5.1f/%-5.1f", n->name, n->cpu_util_pct,
             (double)n->memory_used_mib / 1024.0, (double)n->memory_total_mib / 1024.0);
    if (!node_up(n))
        return filtered ? 0 : addf(f, CLI_TOP_DOWN, "%-12.12s down  %s", n->name, n->reason);
    for (uint32_t i = 0; rc == 0 && i < n->gpus_total; i++) {
        const Gs__GpuStats *g = gpu_stats(n, i);
        const Gs__JobInfo *job = find_job(q, g != NULL ? g->job_id : 0);
        enum cli_top_look look;

        if (!wanted(o, g, job))
            continue;
        look = gpu_cells(n, i, g, job, now_ms, cells, sizeof(cells));
        rc = addf(f, look, "%-29s  %s", first ? head : "", cells);
        first = false;
    }
    if (rc == 0 && n->gpus_total == 0 && !filtered) {
        node_jobs(q, n->name, cells, sizeof(cells));
        rc = addf(f, CLI_TOP_NORMAL, "%-29s  (no GPUs)%s", head, cells);
    }
    return rc;
}

static double node_util(const Gs__NodeInfo *n)
{
    double sum = 0;

    for (size_t i = 0; i < n->n_gpu_stats; i++)
        sum += n->gpu_stats[i]->utilization_pct;
    return n->n_gpu_stats > 0 ? sum / (double)n->n_gpu_stats : -1;
}

static uint32_t node_idle(const Gs__NodeInfo *n)
{
    uint32_t k = 0;

    for (size_t i = 0; i < n->n_gpu_stats; i++)
        k += n->gpu_stats[i]->idle;
    return k;
}

/* A node with its sort key: qsort has no context argument, so each entry carries it. */
struct ranked {
    const Gs__NodeInfo *n;
    enum cli_top_sort sort;
    double util;
    uint32_t idle;
};

static int by_key(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;

    if (x->sort == CLI_TOP_SORT_UTIL && x->util != y->util)
        return x->util > y->util ? -1 : 1;
    if (x->sort == CLI_TOP_SORT_IDLE && x->idle != y->idle)
        return x->idle > y->idle ? -1 : 1;
    return strcmp(x->n->name, y->n->name);
}

int cli_top_render(const Gs__NodesReply *nodes, const Gs__QueueReply *queue,
                   const struct cli_top_opts *o, uint64_t now_ms, struct cli_top_frame *f)
{
    size_t n = nodes != NULL ? nodes->n_nodes : 0;
    struct ranked *order = calloc(n + 1, sizeof(*order));
    int rc = order != NULL ? put_title(f, nodes, o) : -ENOMEM;

    for (size_t i = 0; i < n && order != NULL; i++) {
        order[i] = (struct ranked){.n = nodes->nodes[i], .sort = o->sort};
        order[i].util = node_util(order[i].n);
        order[i].idle = node_idle(order[i].n);
    }
    if (rc == 0)
        gs_sort(order, n, sizeof(*order), by_key);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_node(f, order[i].n, queue, o, now_ms);
    free(order);
    return rc;
}
