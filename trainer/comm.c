/*
 * comm.c: the communication thread and its queue (see comm.h), shared by the backends. The
 * training thread appends requests; the communication thread takes them in order and runs
 * each with the backend's blocking call, so one thread alone talks to MPI (MPI_THREAD_FUNNELED
 * from that thread is all MPI must support) and progress never waits for the caller to poll.
 * Barrier and broadcast go through the same queue, so they stay ordered with the
 * all-reduces started before them.
 *
 * In GPU mode (trn_comm_new_gpu) there is no thread and no queue: every call goes straight
 * to the GPU backend, which only queues work on the GPU (the NCCL stream keeps the order).
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/comm.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainer/comm_internal.h"

enum op { OP_ALLREDUCE, OP_BARRIER, OP_BCAST, OP_STOP };

struct trn_comm_req {
    struct trn_comm_req *next;
    enum op op;
    void *buf;
    size_t count;
    enum trn_comm_dtype dt;
    bool average;
    int root;
    bool done;
    int result;
    uint64_t began_ns, ended_ns; /* on the communication thread */
    void *gpu_req;               /* GPU mode: the backend's request */
};

struct trn_comm {
    const struct trn_comm_backend *be;         /* CPU mode */
    const struct trn_comm_gpu_backend *gpu_be; /* GPU mode (NULL: built without NCCL) */
    bool gpu;                                  /* GPU mode: no thread, no queue */
    void *be_state;
    int rank, size;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct trn_comm_req *head, *tail;
    bool started; /* the thread has initialised the backend */
    int init_rc;
    char error[256];
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run(struct trn_comm *c, struct trn_comm_req *r)
{
    switch (r->op) {
    case OP_ALLREDUCE:
        return c->be->allreduce(c->be_state, r->buf, r->count, r->dt, r->average, c->error,
                                sizeof(c->error));
    case OP_BARRIER:
        return c->be->barrier(c->be_state, c->error, sizeof(c->error));
    case OP_BCAST:
        return c->be->broadcast(c->be_state, r->buf, r->count, r->root, c->error, sizeof(c->error));
    case OP_STOP:
        break;
    }
    return 0;
}

static void *comm_main(void *data)
{
    struct trn_comm *c = data;
    int rc = c->be->init(&c->be_state, &c->rank, &c->size, c->error, sizeof(c->error));

    pthread_mutex_lock(&c->mu);
    c->init_rc = rc;
    c->started = true;
    pthread_cond_broadcast(&c->cv);
    for (;;) {
        struct trn_comm_req *r;
        uint64_t t0;

        while (c->head == NULL)
            pthread_cond_wait(&c->cv, &c->mu);
        r = c->head;
        c->head = r->next;
        if (c->head == NULL)
            c->tail = NULL;
        if (r->op == OP_STOP) {
            r->done = true;
            pthread_cond_broadcast(&c->cv);
            break;
        }
        pthread_mutex_unlock(&c->mu);
        t0 = now_ns();
        rc = c->init_rc < 0 ? c->init_rc : run(c, r);
        pthread_mutex_lock(&c->mu);
        r->began_ns = t0;
        r->ended_ns = now_ns();
        r->result = rc;
        r->done = true;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (c->init_rc == 0)
        c->be->finalize(c->be_state);
    return NULL;
}

static const struct trn_comm_backend *choose_backend(void)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");

    if (trn_comm_mpi_backend != NULL && size != NULL && atoi(size) >= 1)
        return trn_comm_mpi_backend;
    return &trn_comm_local_backend;
}

int trn_comm_new(struct trn_comm **ret)
{
    struct trn_comm *c = calloc(1, sizeof(*c));
    int rc;

    if (c == NULL)
        return -ENOMEM;
    c->be = choose_backend();
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    rc = -pthread_create(&c->thread, NULL, comm_main, c);
    if (rc < 0) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    while (!c->started)
        pthread_cond_wait(&c->cv, &c->mu);
    rc = c->init_rc;
    pthread_mutex_unlock(&c->mu);
    *ret = c;
    return rc; /* on failure the caller still frees c, which stops the thread */
}

int trn_comm_new_gpu(int device, void *stream, struct trn_comm **ret)
{
    struct trn_comm *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return -ENOMEM;
    c->gpu = true;
    c->gpu_be = trn_comm_nccl_backend;
    *ret = c; /* on failure too: the caller reads the error, then frees c */
    if (c->gpu_be == NULL) {
        snprintf(c->error, sizeof(c->error),
                 "GPU ranks need NCCL, and this gsched-train was built without it "
                 "(configure with CUDA and NCCL installed)");
        return -ENOTSUP;
    }
    return c->gpu_be->init(device, stream, &c->be_state, &c->rank, &c->size, c->error,
                           sizeof(c->error));
}

/* A GPU communicator whose start failed takes no more calls (as a CPU one, where every
 * request returns the start's error). */
static int gpu_not_started(struct trn_comm *c)
{
    snprintf(c->error, sizeof(c->error), "the GPU communicator did not start");
    return -EIO;
}

static struct trn_comm_req *new_req(enum op op)
{
    struct trn_comm_req *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->op = op;
    return r;
}

static void submit(struct trn_comm *c, struct trn_comm_req *r)
{
    pthread_mutex_lock(&c->mu);
    if (c->tail != NULL)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void trn_comm_free(struct trn_comm *c)
{
    struct trn_comm_req *stop;

    if (c == NULL)
        return;
    if (c->gpu) {
        if (c->be_state != NULL)
            c->gpu_be->finalize(c->be_state);
        free(c);
        return;
    }
    stop = new_req(OP_STOP);
    if (stop != NULL) {
        submit(c, stop);
        pthread_join(c->thread, NULL);
        free(stop);
    } else {
        pthread_detach(c->thread); /* out of memory at exit: let the process end it */
    }
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int trn_comm_rank(const struct trn_comm *c)
{
    return c->rank;
}

int trn_comm_size(const struct trn_comm *c)
{
    return c->size;
}

const char *trn_comm_backend(const struct trn_comm *c)
{
    return c->gpu ? "nccl" : c->be->name;
}

bool trn_comm_on_gpu(const struct trn_comm *c)
{
    return c->gpu;
}

int trn_comm_env_count(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if (v == NULL || *v < '0' || *v > '9')
        return -1;
    errno = 0;
    n = strtol(v, &end, 10);
    return errno == 0 && *end == '\0' && n <= INT_MAX ? (int)n : -1;
}

int trn_comm_local_rank(void)
{
    int r;

    if (getenv("OMPI_COMM_WORLD_SIZE") != NULL)
        r = trn_comm_env_count("OMPI_COMM_WORLD_LOCAL_RANK");
    else if (getenv("LOCAL_RANK") != NULL)
        r = trn_comm_env_count("LOCAL_RANK");
    else
        r = trn_comm_env_count("SLURM_LOCALID");
    return r < 0 ? 0 : r;
}

const char *trn_comm_error(const struct trn_comm *c)
{
    return c->error;
}

/* GPU mode: the request is a handle around the backend's. */
static int gpu_allreduce(struct trn_comm *c, void *buf, size_t count, enum trn_comm_dtype dt,
                         bool average, struct trn_comm_req **ret)
{
    struct trn_comm_req *r;
    int rc;

    if (c->be_state == NULL)
        return gpu_not_started(c);
    r = new_req(OP_ALLREDUCE);
    if (r == NULL)
        return -ENOMEM;
    rc = c->gpu_be->allreduce(c->be_state, buf, count, dt, average, &r->gpu_req, c->error,
                              sizeof(c->error));
    if (rc < 0) {
        free(r);
        return rc;
    }
    *ret = r;
    return 0;
}

int trn_comm_allreduce(struct trn_comm *c, void *buf, size_t count, enum trn_comm_dtype dt,
                       bool average, struct trn_comm_req **ret)
{
    struct trn_comm_req *r;

    if (buf == NULL && count > 0)
        return -EINVAL;
    if (c->gpu)
        return gpu_allreduce(c, buf, count, dt, average, ret);
    r = new_req(OP_ALLREDUCE);
    if (r == NULL)
        return -ENOMEM;
    r->buf = buf;
    r->count = count;
    r->dt = dt;
    r->average = average;
    submit(c, r);
    *ret = r;
    return 0;
}

int trn_comm_wait_times(struct trn_comm *c, struct trn_comm_req *r, struct trn_comm_times *t)
{
    uint64_t t0 = now_ns();
    int rc;

    *t = (struct trn_comm_times){0};
    if (c->gpu) {
        rc = c->gpu_be->wait(c->be_state, r->gpu_req, &t->busy_ns, &t->waited_ns, c->error,
                             sizeof(c->error));
        free(r);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    while (!r->done)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    t->waited_ns = now_ns() - t0;
    t->began_ns = r->began_ns;
    t->ended_ns = r->ended_ns;
    t->busy_ns = r->ended_ns - r->began_ns;
    rc = r->result;
    free(r);
    return rc;
}

int trn_comm_wait(struct trn_comm *c, struct trn_comm_req *r, uint64_t *busy_ns,
                  uint64_t *waited_ns)
{
    struct trn_comm_times t;
    int rc = trn_comm_wait_times(c, r, &t);

    if (busy_ns != NULL)
        *busy_ns = t.busy_ns;
    if (waited_ns != NULL)
        *waited_ns = t.waited_ns;
    return rc;
}

static int blocking(struct trn_comm *c, struct trn_comm_req *r)
{
    if (r == NULL)
        return -ENOMEM;
    submit(c, r);
    return trn_comm_wait(c, r, NULL, NULL);
}

int trn_comm_gpu_times(struct trn_comm *c, uint64_t *busy_ns, uint64_t *exposed_ns)
{
    if (!c->gpu) {
        snprintf(c->error, sizeof(c->error), "GPU times asked of a CPU communicator");
        return -EINVAL;
    }
    if (c->be_state == NULL)
        return gpu_not_started(c);
    return c->gpu_be->times(c->be_state, busy_ns, exposed_ns, c->error, sizeof(c->error));
}

int trn_comm_barrier(struct trn_comm *c)
{
    if (c->gpu)
        return c->be_state != NULL ? c->gpu_be->barrier(c->be_state, c->error, sizeof(c->error))
                                   : gpu_not_started(c);
    return blocking(c, new_req(OP_BARRIER));
}

int trn_comm_broadcast(struct trn_comm *c, void *buf, size_t bytes, int root)
{
    struct trn_comm_req *r;

    if (root < 0 || root >= c->size || (buf == NULL && bytes > 0))
        return -EINVAL;
    if (c->gpu && c->be_state == NULL)
        return gpu_not_started(c);
    if (c->gpu) /* blocking: nothing is queued on the communication thread */
        return c->gpu_be->broadcast(c->be_state, buf, bytes, root, c->error, sizeof(c->error));
    r = new_req(OP_BCAST);
    if (r != NULL) {
        r->buf = buf;
        r->count = bytes;
        r->root = root;
    }
    return blocking(c, r);
}
