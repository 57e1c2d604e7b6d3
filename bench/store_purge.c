/*
 * store_purge.c: how long scheduler.purge_after's deletes hold gschedd's database thread
 * (sched_store_purge, scheduler/store.h), against the commit that thread does most: a
 * burst of submits.
 *
 * Usage: store_purge [JOBS] [BATCH]. A store in a temporary directory gets JOBS finished
 * jobs (default 100,000), each with a task, a step, an allocation row and three events, as
 * gschedd writes them, plus node history; then the whole purge runs in transactions of
 * BATCH jobs (default 1,000, gschedd's), each committed as the journal does (WAL,
 * synchronous=FULL). Printed: the median and largest batch, the whole purge, and, as the
 * baseline measured in the same run on the same file, the median commit of BATCH new job
 * rows (a submit burst of that size). The ratio is what one purge batch costs other
 * commits waiting behind it, in submit bursts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/sort.h"
#include "scheduler/store.h"

#define EVENTS_PER_JOB 3

static uint64_t median(uint64_t *v, size_t n)
{
    gs_sort(v, n, sizeof(*v), gs_cmp_u64);
    return n > 0 ? v[n / 2] : 0;
}

static int put_job(struct sched_store *st, uint64_t id, uint64_t end_ms, const char *spec,
                   size_t spec_len)
{
    struct sched_job_row j = {.id = id,
                              .name = "train",
                              .uid = 1000,
                              .gid = 1000,
                              .user = "ada",
                              .state = 3,
                              .submit_ms = end_ms - 60000,
                              .start_ms = end_ms - 50000,
                              .end_ms = end_ms,
                              .attempt = 1,
                              .spec = spec,
                              .spec_len = spec_len};
    struct sched_task_row t = {.job_id = id,
                               .node = "node0042",
                               .attempt = 1,
                               .state = 3,
                               .start_ms = end_ms - 50000,
                               .end_ms = end_ms};
    struct sched_step_row s = {.job_id = id,
                               .step = 0,
                               .name = "batch",
                               .nodelist = "node0042",
                               .nnodes = 1,
                               .ntasks = 1,
                               .state = 3,
                               .end_ms = end_ms};
    struct sched_alloc_row a = {id, 1, "node0042", 8, 1, end_ms - 50000, 0, "ada", "physics"};
    int rc = sched_store_put_job(st, &j);

    if (rc == 0)
        rc = sched_store_put_task(st, &t);
    if (rc == 0)
        rc = sched_store_put_step(st, &s);
    if (rc == 0)
        rc = sched_store_put_alloc(st, &a);
    if (rc == 0)
        rc = sched_store_end_allocs(st, id, end_ms);
    for (int e = 0; rc == 0 && e < EVENTS_PER_JOB; e++)
        rc = sched_store_add_event(st, end_ms - 60000 + e, id, "node0042", "RUNNING", "");
    return rc;
}

int main(int argc, char **argv)
{
    size_t jobs = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    size_t batch = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000;
    char dir[] = "/tmp/gsched-purge-bench-XXXXXX", path[128], cmd[160], spec[1200];
    struct sched_store *st = NULL;
    struct gs_error err = {0};
    struct sched_store_purge p = {0};
    uint64_t *batch_ns = NULL, *commit_ns = NULL, whole = 0, t0, id = 1, purge_med, commit_med;
    size_t nbatches = 0, ncommits = 0, deleted = 0;
    int rc;

    if (jobs == 0 || batch == 0 || mkdtemp(dir) == NULL)
        return 2;
    snprintf(path, sizeof(path), "%s/gsched.db", dir);
    memset(spec, 'x', sizeof(spec)); /* a packed job spec is about 1 KB */
    rc = sched_store_open(path, &st, &err);
    batch_ns = calloc(jobs / batch + 2, sizeof(*batch_ns));
    commit_ns = calloc(jobs / batch + 2, sizeof(*commit_ns));
    if (rc < 0 || batch_ns == NULL || commit_ns == NULL) {
        fprintf(stderr, "store_purge: %s\n", rc < 0 ? err.msg : "out of memory");
        return 1;
    }
    /* Filled in commits of BATCH jobs, each timed: the baseline. */
    for (size_t done = 0; rc == 0 && done < jobs; done += batch) {
        t0 = gs_clock_mono_ns();
        rc = sched_store_begin(st);
        for (size_t k = 0; rc == 0 && k < batch && done + k < jobs; k++, id++)
            rc = put_job(st, id, 1000000 + id, spec, sizeof(spec));
        for (int n = 0; rc == 0 && n < 4; n++)
            rc = sched_store_put_node_state(st, 1000000 + id, n % 2 ? "node0042" : "node0043",
                                            n % 2 == 0, false, 64, 8);
        if (rc == 0)
            rc = sched_store_commit(st);
        commit_ns[ncommits++] = gs_clock_mono_ns() - t0;
    }
    p.before_ms = UINT64_C(1) << 62;
    p.max_jobs = batch;
    while (rc == 0 && !p.done) {
        t0 = gs_clock_mono_ns();
        rc = sched_store_begin(st);
        if (rc == 0)
            rc = sched_store_purge(st, &p);
        if (rc == 0)
            rc = sched_store_commit(st);
        batch_ns[nbatches] = gs_clock_mono_ns() - t0;
        whole += batch_ns[nbatches++];
        deleted += p.deleted;
        p.after_id = p.last_id;
    }
    if (rc < 0) {
        fprintf(stderr, "store_purge: %s\n", gs_strerror(rc));
        return 1;
    }
    purge_med = median(batch_ns, nbatches); /* sorted from here on */
    commit_med = median(commit_ns, ncommits);
    printf("store_purge: jobs=%zu batch=%zu deleted=%zu batches=%zu\n", jobs, batch, deleted,
           nbatches);
    printf("purge_batch_ms median=%.2f max=%.2f whole_s=%.2f\n", (double)purge_med / 1e6,
           (double)batch_ns[nbatches - 1] / 1e6, (double)whole / 1e9);
    printf("submit_commit_ms median=%.2f (%zu jobs a commit, the baseline)\n",
           (double)commit_med / 1e6, batch);
    printf("ratio purge_batch/submit_commit=%.2f\n", (double)purge_med / (double)commit_med);
    sched_store_close(st);
    free(batch_ns);
    free(commit_ns);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
