/*
 * ckpt.c: the checkpoint writer thread (see ckpt.h). A mutex and a condition variable
 * guard three facts: whether a job is pending or being written, its step and length, and
 * the last result. The staging buffer is the caller's between stage and submit and the
 * thread's between submit and the job's end; the handover happens under the mutex.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "trainer/tensorfile.h"
#include "trainer/trace.h"

struct trn_ckpt_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *dir;
    uint32_t keep;
    void *buf;
    size_t cap;
    bool busy, stop; /* busy: a job is pending or being written */
    uint64_t step;
    size_t len;
    int result;              /* of the last job, until reported */
    char *last_path;         /* of the newest completed checkpoint */
    uint64_t last_done_ms;   /* wall time it was on disk */
    struct trn_trace *trace; /* jobs started meanwhile go on its timeline; NULL: none */
    bool job_traced;         /* the job in flight adds a span to trace when it ends */
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *ckpt_path(const char *dir, uint64_t step)
{
    size_t n = strlen(dir) + 40;
    char *p = malloc(n);

    if (p != NULL)
        snprintf(p, n, "%s/ckpt-%08" PRIu64 ".gstf", dir, step);
    return p;
}

/* "ckpt-00000120.gstf" -> 120; false for any other name (temporary files among them). */
static bool parse_name(const char *name, uint64_t *ret_step)
{
    const char *p = name + 5;
    uint64_t step = 0;
    size_t digits = 0;

    if (strncmp(name, "ckpt-", 5) != 0)
        return false;
    for (; *p >= '0' && *p <= '9' && digits < 19; p++, digits++)
        step = step * 10 + (uint64_t)(*p - '0');
    if (digits == 0 || strcmp(p, ".gstf") != 0)
        return false;
    *ret_step = step;
    return true;
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? 1 : x > y ? -1 : 0;
}

/* Steps of the checkpoints in dir, newest first. */
static int list_steps(const char *dir, uint64_t **ret, size_t *ret_n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    uint64_t *steps = NULL, step;
    size_t n = 0, cap = 0;

    if (d == NULL)
        return -errno;
    while ((e = readdir(d)) != NULL) {
        if (!parse_name(e->d_name, &step))
            continue;
        if (n == cap) {
            uint64_t *more = realloc(steps, (cap = cap ? cap * 2 : 16) * sizeof(*steps));

            if (more == NULL) {
                free(steps);
                closedir(d);
                return -ENOMEM;
            }
            steps = more;
        }
        steps[n++] = step;
    }
    closedir(d);
    if (n > 1)
        qsort(steps, n, sizeof(*steps), cmp_desc);
    *ret = steps;
    *ret_n = n;
    return 0;
}

/* Deletes all but the newest keep checkpoints; failures only cost disk space. */
static void prune(const char *dir, uint32_t keep)
{
    uint64_t *steps = NULL;
    size_t n = 0;

    if (list_steps(dir, &steps, &n) < 0)
        return;
    for (size_t i = keep; i < n; i++) {
        char *p = ckpt_path(dir, steps[i]);

        if (p != NULL)
            unlink(p);
        free(p);
    }
    free(steps);
}

/* The write on the writer's lane, and inside it its parts: the data, fsync, rename (the
 * directory's fsync with it), so that a slow filesystem shows which one waits. */
static void trace_write(struct trn_trace *tr, const struct trn_ckpt_writer *w,
                        const struct trn_write_times *t)
{
    static const char *const part[] = {"write data", "fsync", "rename"};
    const uint64_t at[] = {t->start, t->written, t->synced, t->renamed};
    struct trn_trace_event ev = {.name = "write",
                                 .cat = "checkpoint",
                                 .lane = TRN_TRACE_CKPT_WRITER,
                                 .start_ns = t->start,
                                 .end_ns = t->renamed,
                                 .args = {{"step", (int64_t)w->step}, {"bytes", (int64_t)w->len}}};

    trn_trace_add(tr, &ev);
    for (int i = 0; i < 3; i++) {
        ev.name = part[i];
        ev.start_ns = at[i];
        ev.end_ns = at[i + 1] > at[i] ? at[i + 1] : at[i]; /* a part a failure skipped: empty */
        ev.args[1] = (struct trn_trace_arg){NULL, 0};
        trn_trace_add(tr, &ev);
    }
}

static void *writer_main(void *data)
{
    struct trn_ckpt_writer *w = data;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        struct trn_trace *tr;
        struct trn_write_times t;
        char *path;
        int rc;

        while (!w->busy && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->busy)
            break; /* stop, nothing pending */
        tr = w->trace;
        w->job_traced = tr != NULL;
        pthread_mutex_unlock(&w->mu);
        path = ckpt_path(w->dir, w->step);
        rc = path == NULL
                 ? -ENOMEM
                 : trn_write_file_durably_timed(path, w->buf, w->len, tr != NULL ? &t : NULL);
        if (rc == 0)
            prune(w->dir, w->keep);
        if (tr != NULL && path != NULL)
            trace_write(tr, w, &t);
        pthread_mutex_lock(&w->mu);
        w->job_traced = false;
        w->result = rc;
        if (rc == 0) {
            free(w->last_path);
            w->last_path = path;
            w->last_done_ms = gs_clock_wall_ms();
        } else {
            free(path);
        }
        w->busy = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int trn_ckpt_writer_new(const char *dir, uint32_t keep, struct trn_ckpt_writer **ret)
{
    struct trn_ckpt_writer *w;
    int rc;

    if (keep == 0)
        return -EINVAL;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -ENOMEM;
    w->keep = keep;
    w->dir = strdup(dir);
    if (w->dir == NULL) {
        free(w);
        return -ENOMEM;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    rc = -pthread_create(&w->thread, NULL, writer_main, w);
    if (rc < 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w->dir);
        free(w);
        return rc;
    }
    *ret = w;
    return 0;
}

void trn_ckpt_writer_free(struct trn_ckpt_writer *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true; /* the thread finishes a pending job first */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->buf);
    free(w->dir);
    free(w->last_path);
    free(w);
}

/* Waits for the job in flight with the mutex held; returns and clears its result. */
static int wait_idle(struct trn_ckpt_writer *w, uint64_t *stall_ns)
{
    uint64_t t0 = now_ns();
    int rc;

    while (w->busy)
        pthread_cond_wait(&w->cv, &w->mu);
    if (stall_ns != NULL)
        *stall_ns += now_ns() - t0;
    rc = w->result;
    w->result = 0;
    return rc;
}

int trn_ckpt_stage(struct trn_ckpt_writer *w, size_t size, void **ret_buf, uint64_t *stall_ns)
{
    int rc;

    pthread_mutex_lock(&w->mu);
    rc = wait_idle(w, stall_ns);
    pthread_mutex_unlock(&w->mu);
    if (size > w->cap) {
        void *bigger = realloc(w->buf, size); /* the thread is idle: the buffer is ours */

        if (bigger == NULL)
            return -ENOMEM;
        w->buf = bigger;
        w->cap = size;
    }
    *ret_buf = w->buf;
    return rc;
}

int trn_ckpt_submit(struct trn_ckpt_writer *w, uint64_t step, size_t len)
{
    pthread_mutex_lock(&w->mu);
    if (w->busy || len > w->cap) {
        pthread_mutex_unlock(&w->mu);
        return -EINVAL; /* not staged first */
    }
    w->step = step;
    w->len = len;
    w->busy = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int trn_ckpt_flush(struct trn_ckpt_writer *w, uint64_t *stall_ns)
{
    int rc;

    pthread_mutex_lock(&w->mu);
    rc = wait_idle(w, stall_ns);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

const char *trn_ckpt_last_path(const struct trn_ckpt_writer *w)
{
    return w->last_path; /* written by the thread only while busy, read here when idle */
}

uint64_t trn_ckpt_last_done_ms(struct trn_ckpt_writer *w)
{
    uint64_t ms;

    pthread_mutex_lock(&w->mu); /* the thread may be finishing a write now */
    ms = w->last_done_ms;
    pthread_mutex_unlock(&w->mu);
    return ms;
}

int trn_ckpt_find_latest(const char *dir, char **ret_path, uint64_t *ret_step)
{
    uint64_t *steps = NULL;
    size_t n = 0;
    int rc = list_steps(dir, &steps, &n);

    if (rc < 0)
        return rc == -ENOTDIR ? -ENOENT : rc;
    if (n == 0) {
        free(steps);
        return -ENOENT;
    }
    *ret_path = ckpt_path(dir, steps[0]);
    *ret_step = steps[0];
    free(steps);
    return *ret_path != NULL ? 0 : -ENOMEM;
}

void trn_ckpt_trace(struct trn_ckpt_writer *w, struct trn_trace *t)
{
    pthread_mutex_lock(&w->mu);
    w->trace = t;
    while (t == NULL && w->busy && w->job_traced) /* its span goes in first */
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}
