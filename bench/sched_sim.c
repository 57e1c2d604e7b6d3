/*
 * sched_sim.c: replays a GPU-cluster trace through gsched's real planner (scheduler/plan.h)
 * in virtual time, once first-come-first-served without backfill and once with EASY
 * backfill, and prints job completion, waiting, utilisation and the cost of a planning pass
 * for both, with their ratios (a baseline measured in the same run).
 *
 *     sched_sim tiresias JOBS.csv CLUSTER.csv [LIMIT_FACTOR [MAX_NODES]]
 *     sched_sim openb NODES.csv PODS.csv [LIMIT_FACTOR [MAX_NODES]]
 *
 * MAX_NODES keeps only the first nodes of the cluster, to replay a trace under contention.
 * Jobs declare a time limit of LIMIT_FACTOR (default 1.5) times their real duration, as
 * users overestimate; they end at their real duration. A job needing more GPUs than a node
 * has is spread over whole nodes (8 GPUs on 4-GPU nodes: 2 nodes x 4). Fractional GPUs of
 * the openb trace are rounded up to one whole GPU, since gsched does not share GPUs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "scheduler/plan.h"

struct sim_job {
    uint64_t id;
    uint64_t submit;
    uint64_t duration;
    uint64_t limit;
    struct sched_req req;
    uint32_t gpus;
    int state; /* 0 not yet submitted, 1 pending, 2 running, 3 done, 4 impossible */
    uint64_t start;
    uint64_t end;
    struct sched_alloc alloc;
};

struct sim {
    struct sim_job *jobs;
    size_t njobs;
    struct sched_node_info *nodes;
    size_t nnodes;
    uint32_t gpus_per_node_max;
};

struct result {
    double avg_wait, avg_jct, makespan, util;
    size_t passes, finished, impossible;
    double pass_us_mean, pass_us_max;
};

static int split_csv(char *line, char **fields, int max)
{
    int n = 0;

    for (char *p = line; n < max;) {
        fields[n++] = p;
        p = strchr(p, ',');
        if (p == NULL)
            break;
        *p++ = '\0';
    }
    return n;
}

/* Reads a CSV file after its header line, calling fn with each row's fields. */
static int read_csv(const char *path, int (*fn)(struct sim *s, char **f, int n), struct sim *s)
{
    char line[4096];
    FILE *f = fopen(path, "r");
    int rc = 0;

    if (f == NULL) {
        fprintf(stderr, "sched_sim: %s: %s\n", path, strerror(errno));
        return -errno;
    }
    if (fgets(line, sizeof(line), f) == NULL)
        rc = -EINVAL;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        char *fields[16];
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] != '\0')
            rc = fn(s, fields, split_csv(line, fields, 16));
    }
    fclose(f);
    return rc;
}

static int add_node(struct sim *s, const char *name, uint32_t gpus, uint32_t cores,
                    uint64_t mem_mib)
{
    struct sched_node_info *n;

    if (s->nnodes % 256 == 0) {
        void *p = realloc(s->nodes, (s->nnodes + 256) * sizeof(*s->nodes));
        if (p == NULL)
            return -ENOMEM;
        s->nodes = p;
    }
    n = &s->nodes[s->nnodes++];
    *n = (struct sched_node_info){
        .name = strdup(name), .ngpus = gpus, .ncores = cores, .mem_mib = mem_mib};
    if (gpus > s->gpus_per_node_max)
        s->gpus_per_node_max = gpus;
    return n->name != NULL ? 0 : -ENOMEM;
}

static int add_job(struct sim *s, uint64_t submit, uint64_t duration, uint32_t gpus, uint32_t cores,
                   uint64_t mem_mib)
{
    struct sim_job *j;

    if (s->njobs % 1024 == 0) {
        void *p = realloc(s->jobs, (s->njobs + 1024) * sizeof(*s->jobs));
        if (p == NULL)
            return -ENOMEM;
        s->jobs = p;
    }
    j = &s->jobs[s->njobs];
    memset(j, 0, sizeof(*j));
    j->id = ++s->njobs;
    j->submit = submit;
    j->duration = duration > 0 ? duration : 1;
    j->gpus = gpus;
    j->req = (struct sched_req){
        .nodes = 1, .gpus_per_node = gpus, .cores_per_node = cores, .mem_per_node_mib = mem_mib};
    return 0;
}

static int tiresias_cluster(struct sim *s, char **f, int n)
{
    int nodes, gpus, cpus;
    char name[32];

    if (n < 5)
        return -EINVAL;
    nodes = atoi(f[0]) * atoi(f[1]);
    gpus = atoi(f[2]);
    cpus = atoi(f[3]);
    for (int i = 0; i < nodes; i++) {
        snprintf(name, sizeof(name), "node%d", i + 1);
        if (add_node(s, name, (uint32_t)gpus, (uint32_t)cpus, strtoull(f[4], NULL, 10) * 1024))
            return -ENOMEM;
    }
    return 0;
}

static int tiresias_job(struct sim *s, char **f, int n)
{
    if (n < 6)
        return -EINVAL;
    return add_job(s, strtoull(f[2], NULL, 10), strtoull(f[5], NULL, 10), (uint32_t)atoi(f[1]), 1,
                   0);
}

static int openb_node(struct sim *s, char **f, int n)
{
    if (n < 4)
        return -EINVAL;
    return add_node(s, f[0], (uint32_t)atoi(f[3]), (uint32_t)(atoi(f[1]) / 1000),
                    strtoull(f[2], NULL, 10));
}

static int openb_pod(struct sim *s, char **f, int n)
{
    uint64_t created, deleted, scheduled;
    uint32_t gpus;

    if (n < 11 || strcmp(f[7], "Pending") == 0)
        return 0; /* never scheduled in the trace: no duration to replay */
    created = strtoull(f[8], NULL, 10);
    deleted = strtoull(f[9], NULL, 10);
    scheduled = strtoull(f[10], NULL, 10);
    gpus = (uint32_t)atoi(f[3]);
    if (gpus == 0 && atoi(f[4]) > 0)
        gpus = 1;
    return add_job(s, created, deleted > scheduled ? deleted - scheduled : 1, gpus,
                   (uint32_t)((atoi(f[1]) + 999) / 1000), strtoull(f[2], NULL, 10));
}

/* Spreads jobs wider than the largest node over whole nodes; -1 when impossible. */
static void shape_jobs(struct sim *s)
{
    uint32_t per = s->gpus_per_node_max;

    for (size_t i = 0; i < s->njobs; i++) {
        struct sim_job *j = &s->jobs[i];

        if (per > 0 && j->gpus > per && j->gpus % per == 0) {
            j->req.nodes = j->gpus / per;
            j->req.gpus_per_node = per;
        }
    }
}

static int load(struct sim *s, const char *format, const char *a, const char *b)
{
    int rc;

    if (strcmp(format, "tiresias") == 0) {
        rc = read_csv(b, tiresias_cluster, s);
        if (rc == 0)
            rc = read_csv(a, tiresias_job, s);
    } else if (strcmp(format, "openb") == 0) {
        rc = read_csv(a, openb_node, s);
        if (rc == 0)
            rc = read_csv(b, openb_pod, s);
    } else {
        fprintf(stderr, "sched_sim: unknown trace format '%s' (tiresias or openb)\n", format);
        return -EINVAL;
    }
    shape_jobs(s);
    return rc;
}

struct run {
    struct sim *s;
    struct sched_cluster *cluster;
    bool backfill;
    uint64_t now;
    size_t next_arrival; /* jobs are sorted by submit time */
    size_t *running;
    size_t nrunning;
    size_t *pending;
    size_t npending;
    struct sched_pending *pend_buf;
    struct sched_running *run_buf;
    struct sched_verdict *verdicts;
    struct result r;
    double gpu_seconds;
};

static int by_submit(const void *pa, const void *pb)
{
    const struct sim_job *a = pa, *b = pb;

    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static uint64_t next_event(const struct run *run)
{
    uint64_t t = UINT64_MAX;

    if (run->next_arrival < run->s->njobs)
        t = run->s->jobs[run->next_arrival].submit;
    for (size_t i = 0; i < run->nrunning; i++) {
        uint64_t end = run->s->jobs[run->running[i]].end;
        if (end < t)
            t = end;
    }
    return t;
}

static void finish_jobs(struct run *run)
{
    for (size_t i = 0; i < run->nrunning;) {
        struct sim_job *j = &run->s->jobs[run->running[i]];

        if (j->end > run->now) {
            i++;
            continue;
        }
        sched_cluster_give_back(run->cluster, &j->alloc);
        j->state = 3;
        run->r.finished++;
        run->running[i] = run->running[--run->nrunning];
    }
}

static void admit_jobs(struct run *run)
{
    char why[160];

    while (run->next_arrival < run->s->njobs &&
           run->s->jobs[run->next_arrival].submit <= run->now) {
        struct sim_job *j = &run->s->jobs[run->next_arrival++];

        if (!sched_cluster_could_ever_fit(run->cluster, &j->req, why, sizeof(why))) {
            j->state = 4;
            run->r.impossible++;
            continue;
        }
        j->state = 1;
        run->pending[run->npending++] = (size_t)(j - run->s->jobs);
    }
}

static void start_job(struct run *run, struct sim_job *j, const struct sched_alloc *alloc)
{
    sched_alloc_copy(&j->alloc, alloc);
    j->state = 2;
    j->start = run->now;
    j->end = run->now + j->duration;
    run->running[run->nrunning++] = (size_t)(j - run->s->jobs);
    run->gpu_seconds += (double)j->gpus * (double)j->duration;
}

/* One planning pass at run->now, timed. */
static int plan_now(struct run *run)
{
    size_t kept = 0;
    uint64_t t0;
    double us;
    int rc;

    for (size_t i = 0; i < run->npending; i++) {
        struct sim_job *j = &run->s->jobs[run->pending[i]];
        run->pend_buf[i] = (struct sched_pending){
            .job_id = j->id, .submit_seq = j->id, .time_limit_s = j->limit, .req = j->req};
    }
    for (size_t i = 0; i < run->nrunning; i++) {
        struct sim_job *j = &run->s->jobs[run->running[i]];
        run->run_buf[i] = (struct sched_running){j->id, j->start + j->limit, &j->alloc};
    }
    sched_verdicts_init(run->verdicts, run->npending);
    t0 = gs_clock_mono_ns();
    rc = sched_plan(run->cluster, run->pend_buf, run->npending, run->run_buf, run->nrunning,
                    run->now, run->verdicts, NULL);
    us = (double)(gs_clock_mono_ns() - t0) / 1e3;
    run->r.passes++;
    run->r.pass_us_mean += us;
    if (us > run->r.pass_us_max)
        run->r.pass_us_max = us;
    for (size_t i = 0; rc == 0 && i < run->npending; i++) {
        struct sim_job *j = &run->s->jobs[run->pending[i]];
        struct sched_verdict *v = &run->verdicts[i];

        if (v->start && v->backfilled && !run->backfill) {
            sched_cluster_give_back(run->cluster, &v->alloc); /* FIFO: no jumping the queue */
            v->start = false;
        }
        if (v->start)
            start_job(run, j, &v->alloc);
        else
            run->pending[kept++] = run->pending[i];
    }
    sched_verdicts_release(run->verdicts, run->npending);
    run->npending = kept;
    return rc;
}

static int simulate(struct sim *s, double limit_factor, bool backfill, struct result *out)
{
    struct run run = {.s = s, .backfill = backfill};
    double wait = 0, jct = 0;
    uint64_t first = UINT64_MAX, last = 0, total_gpus = 0;
    int rc = -ENOMEM;

    run.cluster = sched_cluster_new();
    run.running = calloc(s->njobs + 1, sizeof(size_t));
    run.pending = calloc(s->njobs + 1, sizeof(size_t));
    run.pend_buf = calloc(s->njobs + 1, sizeof(*run.pend_buf));
    run.run_buf = calloc(s->njobs + 1, sizeof(*run.run_buf));
    run.verdicts = calloc(s->njobs + 1, sizeof(*run.verdicts));
    if (!run.cluster || !run.running || !run.pending || !run.pend_buf || !run.run_buf ||
        !run.verdicts)
        goto out;
    for (size_t i = 0; i < s->nnodes; i++) {
        if (sched_cluster_add_node(run.cluster, &s->nodes[i]) < 0)
            goto out;
        total_gpus += s->nodes[i].ngpus;
    }
    for (size_t i = 0; i < s->njobs; i++) {
        struct sim_job *j = &s->jobs[i];
        j->state = 0;
        j->limit = (uint64_t)((double)j->duration * limit_factor + 0.999);
        sched_alloc_init(&j->alloc);
    }
    rc = 0;
    while (rc == 0 && (run.next_arrival < s->njobs || run.nrunning > 0)) {
        run.now = next_event(&run);
        finish_jobs(&run);
        admit_jobs(&run);
        rc = plan_now(&run);
    }
    for (size_t i = 0; i < s->njobs; i++) {
        struct sim_job *j = &s->jobs[i];
        if (j->state != 3)
            continue;
        wait += (double)(j->start - j->submit);
        jct += (double)(j->end - j->submit);
        first = j->submit < first ? j->submit : first;
        last = j->end > last ? j->end : last;
    }
    run.r.avg_wait = run.r.finished ? wait / (double)run.r.finished : 0;
    run.r.avg_jct = run.r.finished ? jct / (double)run.r.finished : 0;
    run.r.makespan = last > first ? (double)(last - first) : 0;
    run.r.util = run.r.makespan > 0 && total_gpus > 0
                     ? run.gpu_seconds / ((double)total_gpus * run.r.makespan)
                     : 0;
    run.r.pass_us_mean = run.r.passes ? run.r.pass_us_mean / (double)run.r.passes : 0;
    *out = run.r;
out:
    for (size_t i = 0; i < s->njobs; i++)
        sched_alloc_release(&s->jobs[i].alloc);
    free(run.running);
    free(run.pending);
    free(run.pend_buf);
    free(run.run_buf);
    free(run.verdicts);
    sched_cluster_free(run.cluster);
    return rc;
}

static void print_result(const char *name, const struct result *r)
{
    printf("%-5s jobs=%zu impossible=%zu avg_wait_s=%.0f avg_jct_s=%.0f makespan_s=%.0f "
           "gpu_util=%.3f passes=%zu pass_us_mean=%.1f pass_us_max=%.1f\n",
           name, r->finished, r->impossible, r->avg_wait, r->avg_jct, r->makespan, r->util,
           r->passes, r->pass_us_mean, r->pass_us_max);
}

int main(int argc, char **argv)
{
    struct sim s = {0};
    struct result fifo, easy;
    double factor = argc > 4 ? atof(argv[4]) : 1.5;
    int rc;

    if (argc < 4 || factor < 1.0) {
        fprintf(stderr, "usage: sched_sim tiresias JOBS.csv CLUSTER.csv [LIMIT_FACTOR [NODES]]\n"
                        "       sched_sim openb NODES.csv PODS.csv [LIMIT_FACTOR [NODES]]\n");
        return 2;
    }
    rc = load(&s, argv[1], argv[2], argv[3]);
    if (rc == 0 && argc > 5 && (size_t)atol(argv[5]) > 0 && (size_t)atol(argv[5]) < s.nnodes) {
        for (size_t i = (size_t)atol(argv[5]); i < s.nnodes; i++)
            free((char *)s.nodes[i].name);
        s.nnodes = (size_t)atol(argv[5]);
    }
    if (rc == 0 && (s.njobs == 0 || s.nnodes == 0))
        rc = -EINVAL;
    if (rc == 0) {
        qsort(s.jobs, s.njobs, sizeof(*s.jobs), by_submit);
        rc = simulate(&s, factor, false, &fifo);
    }
    if (rc == 0)
        rc = simulate(&s, factor, true, &easy);
    if (rc == 0) {
        printf("trace=%s nodes=%zu jobs=%zu limit_factor=%.2f\n", argv[1], s.nnodes, s.njobs,
               factor);
        print_result("fifo", &fifo);
        print_result("easy", &easy);
        printf("ratio easy/fifo: avg_wait=%.3f avg_jct=%.3f makespan=%.3f gpu_util=%.3f\n",
               fifo.avg_wait > 0 ? easy.avg_wait / fifo.avg_wait : 0,
               fifo.avg_jct > 0 ? easy.avg_jct / fifo.avg_jct : 0,
               fifo.makespan > 0 ? easy.makespan / fifo.makespan : 0,
               fifo.util > 0 ? easy.util / fifo.util : 0);
    } else {
        fprintf(stderr, "sched_sim: %s\n", strerror(-rc));
    }
    for (size_t i = 0; i < s.nnodes; i++)
        free((char *)s.nodes[i].name);
    free(s.nodes);
    free(s.jobs);
    return rc == 0 ? 0 : 1;
}
