/*
 * comm_nccl.c: the NCCL backend, for GPU ranks (comm.h's GPU mode), one GPU per rank. Every
 * call runs on the training thread and only queues work, on a stream of its own (the NCCL
 * stream, at the highest priority so that its kernels get SMs while backward fills the GPU):
 *
 *   all-reduce of a device buffer   compute stream: record ready
 *                                   NCCL stream:    wait ready, record t0, ncclAllReduce,
 *                                                   record t1
 *   its wait                        compute stream: record w0, wait t1, record w1
 *
 * so the collective reads the gradients after the kernels that wrote them, the kernels queued
 * after the wait (the optimizer) run after it, and the host never blocks. busy = t1 - t0 (the
 * collective on the NCCL stream, with the time it waits inside for the slowest rank), exposed
 * = w1 - w0 (how long the compute stream stood at the wait). Events can be read only once
 * passed, so a waited request goes on a list and its times are folded in when its last event
 * (w1) has completed: looked at (cudaEventQuery) at every start, waited for at
 * trn_comm_gpu_times. Requests and their events are pooled and reused.
 *
 * A host buffer (the F64 losses and flags the trainer sums) is copied at the call into the
 * request's pinned staging buffer, then up to the device, reduced and copied back, all on the
 * NCCL stream and without waiting for the compute stream (it holds no GPU result); its wait
 * waits for the copy back and copies the result out. Host broadcasts go through a staging
 * pair too, in pieces of at most STAGE_MAX bytes, so that broadcasting the host-side master
 * weights at start-up needs no buffer of their size.
 *
 * Host waits poll with short sleeps and ask NCCL for asynchronous errors between polls, so a
 * rank that died shows up as -EIO instead of a hang. After any failure that may leave the
 * ranks out of step the communicator is aborted at once (ncclCommAbort, which also ends its
 * queued kernels, so streams waiting on them drain) and every later call fails with the first
 * error. CUDA errors this file meets are cleared (cudaGetLastError) so that the kernels' own
 * checks never see them. How the unique id travels: comm.h, trn_comm_new_gpu.
 *
 * Not for use while the compute stream is being captured into a CUDA Graph.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainer/comm.h"
#include "trainer/comm_internal.h"
#include "trainer/kv.h"

/* Host broadcasts travel in pieces of at most this many bytes. */
#define STAGE_MAX ((size_t)16 << 20)

struct req {
    struct req *next;     /* in the free list or the waited list */
    struct req *all_next; /* every request made, for finalize */
    cudaEvent_t ready;    /* compute stream, at the start (no timing) */
    cudaEvent_t t0, t1;   /* NCCL stream, around the collective: t1 is its end */
    cudaEvent_t w0, w1;   /* compute stream, around its wait */
    /* A host buffer's staging, pinned and on the device, cap bytes each, made on first use,
     * and the event after the copy back. */
    void *host, *dev;
    size_t cap;
    cudaEvent_t back;
    void *user; /* the caller's host buffer; NULL for a device buffer */
    size_t bytes;
};

struct nccl_state {
    ncclComm_t comm; /* NULL once aborted */
    int device, rank, size;
    cudaStream_t compute;    /* the caller's, borrowed */
    cudaStream_t stream;     /* NCCL's */
    cudaEvent_t ready, done; /* barrier and broadcast (no timing) */
    float *one;              /* the barrier's element (device) */
    void *stage_host, *stage_dev;
    size_t stage_cap; /* host broadcasts' staging (pinned, device) */
    struct req *all, *free_list, *waited, *waited_tail;
    uint64_t busy_ns, exposed_ns; /* of the requests folded in since the last times() */
    bool failed;
    char failure[256]; /* the first error, repeated by every later call */
};

enum launch_kind { LAUNCH_ALONE, LAUNCH_MPI, LAUNCH_KV };

struct launch {
    enum launch_kind how;
    int rank, size;
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cuda_msg(cudaError_t st, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s: %s", what, cudaGetErrorName(st), cudaGetErrorString(st));
    cudaGetLastError();
    return -EIO;
}

/* After a failure that may have left the ranks out of step: aborts NCCL, so that its queued
 * kernels end, and keeps the message for every later call. */
static int fail(struct nccl_state *s, const char *err)
{
    if (!s->failed) {
        s->failed = true;
        snprintf(s->failure, sizeof(s->failure), "%s", err);
        if (s->comm != NULL)
            ncclCommAbort(s->comm);
        s->comm = NULL;
    }
    return -EIO;
}

static int fail_cuda(struct nccl_state *s, cudaError_t st, const char *what, char *err,
                     size_t errlen)
{
    cuda_msg(st, what, err, errlen);
    return fail(s, err);
}

static int fail_nccl(struct nccl_state *s, ncclResult_t res, const char *what, char *err,
                     size_t errlen)
{
    snprintf(err, errlen, "%s: %s (%s)", what, ncclGetErrorString(res), ncclGetLastError(s->comm));
    return fail(s, err);
}

/* At every entry: the first failure again, or the rank's device made current. */
static int usable(struct nccl_state *s, char *err, size_t errlen)
{
    cudaError_t st;

    if (s->failed) {
        snprintf(err, errlen, "%s", s->failure);
        return -EIO;
    }
    st = cudaSetDevice(s->device);
    return st == cudaSuccess ? 0 : cuda_msg(st, "cudaSetDevice", err, errlen);
}

static int async_check(struct nccl_state *s, char *err, size_t errlen)
{
    ncclResult_t async = ncclSuccess, res = ncclCommGetAsyncError(s->comm, &async);

    if (res != ncclSuccess)
        return fail_nccl(s, res, "ncclCommGetAsyncError", err, errlen);
    if (async != ncclSuccess && async != ncclInProgress)
        return fail_nccl(s, async, "NCCL failed (a rank gone?)", err, errlen);
    return 0;
}

/* Blocks until ev has completed, sleeping 2 us, doubling up to 200 us, between looks, and
 * looking for NCCL's asynchronous errors in between. */
static int host_wait(struct nccl_state *s, cudaEvent_t ev, char *err, size_t errlen)
{
    long ns = 2000;

    for (;;) {
        cudaError_t st = cudaEventQuery(ev);
        struct timespec ts = {0, ns};
        int rc;

        if (st == cudaSuccess)
            return 0;
        if (st != cudaErrorNotReady)
            return fail_cuda(s, st, "waiting for the GPU", err, errlen);
        cudaGetLastError(); /* "not ready" is no error to leave behind */
        rc = async_check(s, err, errlen);
        if (rc < 0)
            return rc;
        nanosleep(&ts, NULL);
        if (ns < 200000)
            ns *= 2;
    }
}

/* Blocks until everything queued on the NCCL stream so far is done. */
static int sync_stream(struct nccl_state *s, char *err, size_t errlen)
{
    cudaError_t st = cudaEventRecord(s->done, s->stream);

    if (st != cudaSuccess)
        return fail_cuda(s, st, "cudaEventRecord", err, errlen);
    return host_wait(s, s->done, err, errlen);
}

static uint64_t elapsed_ns(cudaEvent_t from, cudaEvent_t to)
{
    float ms = 0;

    if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
}

static bool on_device(const void *p)
{
    struct cudaPointerAttributes a;

    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* older drivers: plain host memory is an "invalid value" */
        return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static ncclDataType_t nccl_type(enum trn_comm_dtype dt)
{
    return dt == TRN_COMM_F64 ? ncclFloat64 : dt == TRN_COMM_BF16 ? ncclBfloat16 : ncclFloat32;
}

static size_t dtype_bytes(enum trn_comm_dtype dt)
{
    return dt == TRN_COMM_F64 ? 8 : dt == TRN_COMM_BF16 ? 2 : 4;
}

/* --- requests --------------------------------------------------------------------------- */

static void req_destroy(struct req *r)
{
    cudaEvent_t *ev[] = {&r->ready, &r->t0, &r->t1, &r->w0, &r->w1, &r->back};

    for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
        if (*ev[i] != NULL)
            cudaEventDestroy(*ev[i]);
    }
    if (r->host != NULL)
        cudaFreeHost(r->host);
    if (r->dev != NULL)
        cudaFree(r->dev);
    free(r);
}

static int req_get(struct nccl_state *s, struct req **ret, char *err, size_t errlen)
{
    struct req *r = s->free_list;
    cudaError_t st;

    if (r != NULL) {
        s->free_list = r->next;
        r->next = NULL;
        *ret = r;
        return 0;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    st = cudaEventCreateWithFlags(&r->ready, cudaEventDisableTiming);
    if (st == cudaSuccess)
        st = cudaEventCreate(&r->t0);
    if (st == cudaSuccess)
        st = cudaEventCreate(&r->t1);
    if (st == cudaSuccess)
        st = cudaEventCreate(&r->w0);
    if (st == cudaSuccess)
        st = cudaEventCreate(&r->w1);
    if (st != cudaSuccess) {
        req_destroy(r);
        return cuda_msg(st, "cudaEventCreate", err, errlen);
    }
    r->all_next = s->all;
    s->all = r;
    *ret = r;
    return 0;
}

static void req_put(struct nccl_state *s, struct req *r)
{
    r->user = NULL;
    r->next = s->free_list;
    s->free_list = r;
}

/* Room for a host buffer of `bytes` in r's staging (a reused request keeps its own). */
static int req_stage(struct req *r, size_t bytes, char *err, size_t errlen)
{
    size_t cap = bytes < 256 ? 256 : bytes;
    cudaError_t st = cudaSuccess;

    if (bytes <= r->cap)
        return 0;
    if (r->host != NULL)
        cudaFreeHost(r->host);
    if (r->dev != NULL)
        cudaFree(r->dev);
    r->host = r->dev = NULL;
    r->cap = 0;
    if (r->back == NULL)
        st = cudaEventCreateWithFlags(&r->back, cudaEventDisableTiming);
    if (st == cudaSuccess)
        st = cudaMallocHost(&r->host, cap);
    if (st == cudaSuccess)
        st = cudaMalloc(&r->dev, cap);
    if (st != cudaSuccess)
        return cuda_msg(st, "staging a host buffer", err, errlen);
    r->cap = cap;
    return 0;
}

/* Folds the times of waited requests whose wait has passed on the GPU into the sums and
 * returns them to the pool; with block, waits for all of them. */
static int reap(struct nccl_state *s, bool block, char *err, size_t errlen)
{
    while (s->waited != NULL) {
        struct req *r = s->waited;

        if (block) {
            int rc = host_wait(s, r->w1, err, errlen);

            if (rc < 0)
                return rc;
        } else {
            cudaError_t st = cudaEventQuery(r->w1);

            if (st == cudaErrorNotReady) {
                cudaGetLastError();
                return 0;
            }
            if (st != cudaSuccess)
                return fail_cuda(s, st, "waiting for the GPU", err, errlen);
        }
        s->busy_ns += elapsed_ns(r->t0, r->t1);
        s->exposed_ns += elapsed_ns(r->w0, r->w1);
        s->waited = r->next;
        if (s->waited == NULL)
            s->waited_tail = NULL;
        req_put(s, r);
    }
    return 0;
}

/* --- all-reduce ------------------------------------------------------------------------- */

/* Queues the collective on the NCCL stream between r's timing events. */
static int reduce(struct nccl_state *s, struct req *r, void *buf, size_t count,
                  enum trn_comm_dtype dt, bool average, char *err, size_t errlen)
{
    cudaError_t st = cudaEventRecord(r->t0, s->stream);
    ncclResult_t res = ncclSuccess;

    if (st != cudaSuccess)
        return fail_cuda(s, st, "cudaEventRecord", err, errlen);
    if (count > 0)
        res = ncclAllReduce(buf, buf, count, nccl_type(dt), average ? ncclAvg : ncclSum, s->comm,
                            s->stream);
    if (res != ncclSuccess)
        return fail_nccl(s, res, "ncclAllReduce", err, errlen);
    st = cudaEventRecord(r->t1, s->stream);
    return st == cudaSuccess ? 0 : fail_cuda(s, st, "cudaEventRecord", err, errlen);
}

static int start_device(struct nccl_state *s, struct req *r, void *buf, size_t count,
                        enum trn_comm_dtype dt, bool average, char *err, size_t errlen)
{
    cudaError_t st = cudaEventRecord(r->ready, s->compute);

    if (st == cudaSuccess)
        st = cudaStreamWaitEvent(s->stream, r->ready, 0);
    if (st != cudaSuccess)
        return fail_cuda(s, st, "ordering an all-reduce after the compute stream", err, errlen);
    return reduce(s, r, buf, count, dt, average, err, errlen);
}

static int start_host(struct nccl_state *s, struct req *r, size_t count, enum trn_comm_dtype dt,
                      bool average, char *err, size_t errlen)
{
    int rc = req_stage(r, r->bytes, err, errlen);
    cudaError_t st;

    if (rc < 0)
        return rc; /* nothing queued: the communicator stays usable */
    memcpy(r->host, r->user, r->bytes);
    st = cudaMemcpyAsync(r->dev, r->host, r->bytes, cudaMemcpyHostToDevice, s->stream);
    if (st != cudaSuccess)
        return fail_cuda(s, st, "staging a host buffer", err, errlen);
    rc = reduce(s, r, r->dev, count, dt, average, err, errlen);
    if (rc < 0)
        return rc;
    st = cudaMemcpyAsync(r->host, r->dev, r->bytes, cudaMemcpyDeviceToHost, s->stream);
    if (st == cudaSuccess)
        st = cudaEventRecord(r->back, s->stream);
    return st == cudaSuccess ? 0 : fail_cuda(s, st, "staging a host buffer", err, errlen);
}

static int nccl_allreduce(void *state, void *buf, size_t count, enum trn_comm_dtype dt,
                          bool average, void **ret_req, char *err, size_t errlen)
{
    struct nccl_state *s = state;
    struct req *r = NULL;
    int rc = usable(s, err, errlen);

    if (rc == 0 && count > SIZE_MAX / 8) {
        snprintf(err, errlen, "all-reduce of %zu elements", count);
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = reap(s, false, err, errlen);
    if (rc == 0)
        rc = req_get(s, &r, err, errlen);
    if (rc < 0)
        return rc;
    r->bytes = count * dtype_bytes(dt);
    r->user = count > 0 && !on_device(buf) ? buf : NULL;
    rc = r->user != NULL ? start_host(s, r, count, dt, average, err, errlen)
                         : start_device(s, r, buf, count, dt, average, err, errlen);
    if (rc < 0) {
        req_put(s, r);
        return rc;
    }
    *ret_req = r;
    return 0;
}

/* --- waiting ---------------------------------------------------------------------------- */

static int wait_host(struct nccl_state *s, struct req *r, uint64_t *busy_ns, uint64_t *waited_ns,
                     char *err, size_t errlen)
{
    uint64_t t0 = now_ns();
    int rc = host_wait(s, r->back, err, errlen);

    if (rc == 0) {
        memcpy(r->user, r->host, r->bytes);
        if (busy_ns != NULL)
            *busy_ns = elapsed_ns(r->t0, r->t1);
        if (waited_ns != NULL)
            *waited_ns = now_ns() - t0;
    }
    req_put(s, r);
    return rc;
}

/* The compute stream waits for the collective; the host goes on. r's times are read later
 * (reap), once w1 has passed. */
static int wait_device(struct nccl_state *s, struct req *r, char *err, size_t errlen)
{
    cudaError_t st = cudaEventRecord(r->w0, s->compute);

    if (st == cudaSuccess)
        st = cudaStreamWaitEvent(s->compute, r->t1, 0);
    if (st == cudaSuccess)
        st = cudaEventRecord(r->w1, s->compute);
    if (st != cudaSuccess) {
        req_put(s, r);
        return fail_cuda(s, st, "making the compute stream wait for an all-reduce", err, errlen);
    }
    r->next = NULL;
    if (s->waited_tail != NULL)
        s->waited_tail->next = r;
    else
        s->waited = r;
    s->waited_tail = r;
    return 0;
}

static int nccl_wait(void *state, void *req, uint64_t *busy_ns, uint64_t *waited_ns, char *err,
                     size_t errlen)
{
    struct nccl_state *s = state;
    struct req *r = req;
    int rc = usable(s, err, errlen);

    if (busy_ns != NULL)
        *busy_ns = 0;
    if (waited_ns != NULL)
        *waited_ns = 0;
    if (rc == 0)
        rc = async_check(s, err, errlen);
    if (rc < 0) {
        req_put(s, r);
        return rc;
    }
    return r->user != NULL ? wait_host(s, r, busy_ns, waited_ns, err, errlen)
                           : wait_device(s, r, err, errlen);
}

static int nccl_times(void *state, uint64_t *busy_ns, uint64_t *exposed_ns, char *err,
                      size_t errlen)
{
    struct nccl_state *s = state;
    int rc = usable(s, err, errlen);

    if (rc == 0)
        rc = async_check(s, err, errlen);
    if (rc == 0)
        rc = reap(s, true, err, errlen);
    if (rc < 0)
        return rc;
    if (busy_ns != NULL)
        *busy_ns = s->busy_ns;
    if (exposed_ns != NULL)
        *exposed_ns = s->exposed_ns;
    s->busy_ns = s->exposed_ns = 0;
    return 0;
}

/* --- barrier and broadcast --------------------------------------------------------------- */

static int nccl_barrier(void *state, char *err, size_t errlen)
{
    struct nccl_state *s = state;
    int rc = usable(s, err, errlen);
    ncclResult_t res;

    if (rc < 0)
        return rc;
    res = ncclAllReduce(s->one, s->one, 1, ncclFloat32, ncclSum, s->comm, s->stream);
    if (res != ncclSuccess)
        return fail_nccl(s, res, "ncclAllReduce (barrier)", err, errlen);
    return sync_stream(s, err, errlen);
}

static int bcast_device(struct nccl_state *s, void *buf, size_t bytes, int root, char *err,
                        size_t errlen)
{
    cudaError_t st = cudaEventRecord(s->ready, s->compute);
    ncclResult_t res;

    if (st == cudaSuccess)
        st = cudaStreamWaitEvent(s->stream, s->ready, 0);
    if (st != cudaSuccess)
        return fail_cuda(s, st, "ordering a broadcast after the compute stream", err, errlen);
    res = ncclBroadcast(buf, buf, bytes, ncclInt8, root, s->comm, s->stream);
    if (res != ncclSuccess)
        return fail_nccl(s, res, "ncclBroadcast", err, errlen);
    return sync_stream(s, err, errlen);
}

static int bcast_stage(struct nccl_state *s, size_t bytes, char *err, size_t errlen)
{
    cudaError_t st = cudaSuccess;

    if (bytes <= s->stage_cap)
        return 0;
    if (s->stage_host != NULL)
        cudaFreeHost(s->stage_host);
    if (s->stage_dev != NULL)
        cudaFree(s->stage_dev);
    s->stage_host = s->stage_dev = NULL;
    s->stage_cap = 0;
    st = cudaMallocHost(&s->stage_host, bytes);
    if (st == cudaSuccess)
        st = cudaMalloc(&s->stage_dev, bytes);
    if (st != cudaSuccess)
        return cuda_msg(st, "staging a host broadcast", err, errlen);
    s->stage_cap = bytes;
    return 0;
}

/* One piece of a host broadcast through the staging pair. */
static int bcast_piece(struct nccl_state *s, char *piece, size_t n, int root, char *err,
                       size_t errlen)
{
    cudaError_t st = cudaSuccess;
    ncclResult_t res;
    int rc;

    if (s->rank == root) {
        memcpy(s->stage_host, piece, n);
        st = cudaMemcpyAsync(s->stage_dev, s->stage_host, n, cudaMemcpyHostToDevice, s->stream);
    }
    if (st != cudaSuccess)
        return fail_cuda(s, st, "staging a host broadcast", err, errlen);
    res = ncclBroadcast(s->stage_dev, s->stage_dev, n, ncclInt8, root, s->comm, s->stream);
    if (res != ncclSuccess)
        return fail_nccl(s, res, "ncclBroadcast", err, errlen);
    if (s->rank != root)
        st = cudaMemcpyAsync(s->stage_host, s->stage_dev, n, cudaMemcpyDeviceToHost, s->stream);
    if (st != cudaSuccess)
        return fail_cuda(s, st, "staging a host broadcast", err, errlen);
    rc = sync_stream(s, err, errlen);
    if (rc == 0 && s->rank != root)
        memcpy(piece, s->stage_host, n);
    return rc;
}

static int nccl_broadcast(void *state, void *buf, size_t bytes, int root, char *err, size_t errlen)
{
    struct nccl_state *s = state;
    int rc = usable(s, err, errlen);

    if (rc == 0)
        rc = async_check(s, err, errlen);
    if (rc < 0 || bytes == 0)
        return rc;
    if (on_device(buf))
        return bcast_device(s, buf, bytes, root, err, errlen);
    rc = bcast_stage(s, bytes < STAGE_MAX ? bytes : STAGE_MAX, err, errlen);
    for (size_t off = 0; rc == 0 && off < bytes; off += STAGE_MAX) {
        size_t n = bytes - off < STAGE_MAX ? bytes - off : STAGE_MAX;

        rc = bcast_piece(s, (char *)buf + off, n, root, err, errlen);
    }
    return rc;
}

/* --- start-up and shutdown --------------------------------------------------------------- */

/* Who this rank is, and how the unique id travels, from the launcher's environment. */
static int read_launch(struct launch *l, char *err, size_t errlen)
{
    const char *rank_var = "RANK", *size_var = "WORLD_SIZE";

    *l = (struct launch){LAUNCH_ALONE, 0, 1};
    if (getenv("OMPI_COMM_WORLD_SIZE") != NULL) {
        l->how = LAUNCH_MPI;
        rank_var = "OMPI_COMM_WORLD_RANK";
        size_var = "OMPI_COMM_WORLD_SIZE";
    } else if (getenv("WORLD_SIZE") != NULL) {
        l->how = LAUNCH_KV;
    } else {
        return 0;
    }
    l->size = trn_comm_env_count(size_var);
    l->rank = getenv(rank_var) == NULL && l->size == 1 ? 0 : trn_comm_env_count(rank_var);
    if (l->size < 1 || l->rank < 0 || l->rank >= l->size) {
        snprintf(err, errlen, "%s=%s and %s=%s do not name one rank of the job", rank_var,
                 getenv(rank_var) != NULL ? getenv(rank_var) : "(unset)", size_var,
                 getenv(size_var));
        return -EINVAL;
    }
    if (l->size == 1)
        l->how = LAUNCH_ALONE;
    return 0;
}

static int check_device(int device, char *err, size_t errlen)
{
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    int count = 0;
    cudaError_t st = cudaGetDeviceCount(&count);

    if (st != cudaSuccess) {
        snprintf(err, errlen, "no GPU: %s", cudaGetErrorString(st));
        cudaGetLastError();
        return -ENODEV;
    }
    if (device < 0 || device >= count) {
        snprintf(err, errlen, "no GPU %d: %d visible (CUDA_VISIBLE_DEVICES=%s)", device, count,
                 visible != NULL ? visible : "unset");
        return -ENODEV;
    }
    return 0;
}

static int make_streams(struct nccl_state *s, char *err, size_t errlen)
{
    int least = 0, greatest = 0;
    cudaError_t st = cudaSetDevice(s->device);

    if (st == cudaSuccess)
        st = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (st == cudaSuccess)
        st = cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, greatest);
    if (st == cudaSuccess)
        st = cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming);
    if (st == cudaSuccess)
        st = cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming);
    if (st == cudaSuccess)
        st = cudaMalloc((void **)&s->one, sizeof(*s->one));
    if (st == cudaSuccess)
        st = cudaMemsetAsync(s->one, 0, sizeof(*s->one), s->stream);
    return st == cudaSuccess ? 0 : cuda_msg(st, "setting up the NCCL stream", err, errlen);
}

/* Waits for rank 0's id up to TRN_COMM_BOOTSTRAP_MS in all, asking again should gschedd
 * answer a long wait early. */
static int get_id_kv(const char *key, ncclUniqueId *id, size_t *len, char *why, size_t whylen)
{
    uint64_t deadline = now_ns() + (uint64_t)TRN_COMM_BOOTSTRAP_MS * 1000000u, now;
    int rc;

    do {
        now = now_ns();
        rc = trn_kv_get(key, id, sizeof(*id), len, (int)((deadline - now) / 1000000u), why, whylen);
    } while (rc == -ETIMEDOUT && now_ns() + 1000000u < deadline);
    return rc;
}

/* The key names the job's attempt: a requeued job must not read the last attempt's id. */
static int share_id_kv(const struct launch *l, ncclUniqueId *id, char *err, size_t errlen)
{
    int attempt = trn_comm_env_count("GSCHED_ATTEMPT");
    char key[TRN_KV_KEY_MAX], why[192] = "";
    size_t len = sizeof(*id);
    int rc;

    if (attempt < 0)
        attempt = trn_comm_env_count("SLURM_RESTART_COUNT");
    snprintf(key, sizeof(key), "gsched-train/nccl-id/attempt-%d", attempt < 0 ? 0 : attempt);
    if (l->rank == 0)
        rc = trn_kv_put(key, id, sizeof(*id), why, sizeof(why));
    else
        rc = get_id_kv(key, id, &len, why, sizeof(why));
    if (rc == 0 && len != sizeof(*id)) {
        snprintf(why, sizeof(why), "it holds %zu bytes, not an ncclUniqueId's %zu", len,
                 sizeof(*id));
        rc = -EPROTO;
    }
    if (rc < 0)
        snprintf(err, errlen, "rank %d of %d: sharing NCCL's id through gschedd (key %s): %s%s",
                 l->rank, l->size, key, why,
                 rc == -ENOENT ? " (outside a gsched job: start the ranks with mpirun)" : "");
    return rc;
}

static int share_id(const struct launch *l, ncclUniqueId *id, char *err, size_t errlen)
{
    int rank = -1, size = -1, rc;

    if (l->rank == 0) {
        ncclResult_t res = ncclGetUniqueId(id);

        if (res != ncclSuccess) {
            snprintf(err, errlen, "ncclGetUniqueId: %s (%s)", ncclGetErrorString(res),
                     ncclGetLastError(NULL));
            return -EIO;
        }
    }
    if (l->how == LAUNCH_ALONE)
        return 0;
    if (l->how == LAUNCH_KV)
        return share_id_kv(l, id, err, errlen);
    rc = trn_comm_mpi_bootstrap(&rank, &size, id, sizeof(*id), err, errlen);
    if (rc == 0 && (rank != l->rank || size != l->size)) {
        snprintf(err, errlen, "MPI says rank %d of %d, mpirun's environment rank %d of %d", rank,
                 size, l->rank, l->size);
        rc = -EPROTO;
    }
    return rc;
}

static void nccl_finalize(void *state)
{
    struct nccl_state *s = state;
    char err[256];

    if (s == NULL)
        return;
    cudaSetDevice(s->device);
    if (s->comm != NULL) {
        /* Flushed and destroyed when the NCCL stream drains cleanly, else aborted. */
        int rc = sync_stream(s, err, sizeof(err));

        if (rc == 0 && ncclCommFinalize(s->comm) == ncclSuccess)
            ncclCommDestroy(s->comm);
        else if (s->comm != NULL)
            ncclCommAbort(s->comm);
        s->comm = NULL;
    }
    for (struct req *r = s->all, *next; r != NULL; r = next) {
        next = r->all_next;
        req_destroy(r);
    }
    if (s->ready != NULL)
        cudaEventDestroy(s->ready);
    if (s->done != NULL)
        cudaEventDestroy(s->done);
    if (s->one != NULL)
        cudaFree(s->one);
    if (s->stage_host != NULL)
        cudaFreeHost(s->stage_host);
    if (s->stage_dev != NULL)
        cudaFree(s->stage_dev);
    if (s->stream != NULL)
        cudaStreamDestroy(s->stream);
    cudaGetLastError(); /* leave nothing for the kernels' next check */
    free(s);
}

static int nccl_init(int device, void *stream, void **state, int *rank, int *size, char *err,
                     size_t errlen)
{
    struct nccl_state *s = NULL;
    struct launch l;
    ncclUniqueId id;
    ncclResult_t res;
    int rc = read_launch(&l, err, errlen);

    if (rc == 0)
        rc = check_device(device, err, errlen);
    if (rc == 0 && (s = calloc(1, sizeof(*s))) == NULL) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    if (rc < 0)
        return rc;
    s->device = device;
    s->compute = stream;
    memset(&id, 0, sizeof(id));
    rc = make_streams(s, err, errlen);
    if (rc == 0)
        rc = share_id(&l, &id, err, errlen);
    if (rc == 0) {
        res = ncclCommInitRank(&s->comm, l.size, id, l.rank);
        if (res != ncclSuccess) {
            s->comm = NULL;
            snprintf(err, errlen, "rank %d of %d on GPU %d: ncclCommInitRank: %s (%s)", l.rank,
                     l.size, device, ncclGetErrorString(res), ncclGetLastError(NULL));
            rc = -EIO;
        }
    }
    if (rc < 0) {
        nccl_finalize(s);
        return rc;
    }
    s->rank = l.rank;
    s->size = l.size;
    *state = s;
    *rank = l.rank;
    *size = l.size;
    return 0;
}

static const struct trn_comm_gpu_backend nccl_backend = {
    .name = "nccl",
    .init = nccl_init,
    .finalize = nccl_finalize,
    .allreduce = nccl_allreduce,
    .wait = nccl_wait,
    .times = nccl_times,
    .barrier = nccl_barrier,
    .broadcast = nccl_broadcast,
};

const struct trn_comm_gpu_backend *const trn_comm_nccl_backend = &nccl_backend;
