/*
 * ddp.c: gradient buckets and their all-reduces (see ddp.h). Buckets are contiguous ranges
 * of the flat gradient array, so an all-reduce needs no packing: it runs on the gradients in
 * place (or on their bf16 copy). The hook runs on the training thread between kernels; it
 * only queues requests, so it costs backward nothing measurable. On a GPU the same code
 * runs on device pointers: the communicator tells them apart and orders them against the
 * compute stream (comm.h).
 *
 * While a recorder is set (trn_ddp_trace), each bucket's start time is noted and its span
 * recorded when it is waited for, with the times the communication thread ran it
 * (trn_comm_wait_times); on a GPU, when it has been queued. All of it on the training thread.
 */
#include "trainer/ddp.h"

#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "kernels/dtype.h"

struct bucket {
    size_t begin, end; /* in floats of the flat array */
    struct trn_comm_req *req;
    uint64_t launch_ns; /* when started, while tracing */
};

struct trn_ddp {
    struct trn_comm *comm;
    struct trn_model *model;
    struct bucket *b;
    uint32_t nb, next; /* buckets; the first not yet started */
    bool overlap, bf16;
    uint16_t *wire; /* bf16 copies of the gradients, when bf16 */
    int error;      /* of a start from the hook */
    struct trn_trace *trace;
    uint64_t flows; /* flow arrows drawn so far: each one's id */
};

int trn_ddp_new(struct trn_comm *c, struct trn_model *m, const struct trn_ddp_opts *o,
                struct trn_ddp **ret)
{
    size_t cap = o->bucket_bytes > 0 ? o->bucket_bytes : (size_t)25 << 20;
    size_t first = o->first_bucket_bytes > 0 ? o->first_bucket_bytes : (size_t)1 << 20;
    size_t n = trn_model_ntensors(m), begin = 0;
    struct trn_ddp *d;

    if (o->bf16 && trn_comm_on_gpu(c))
        return -ENOTSUP; /* the host casts below would read device memory */
    d = calloc(1, sizeof(*d));
    if (d == NULL)
        return -ENOMEM;
    d->comm = c;
    d->model = m;
    d->overlap = o->overlap;
    d->bf16 = o->bf16;
    d->b = calloc(n, sizeof(*d->b)); /* at most one bucket per tensor */
    if (d->bf16)
        d->wire = malloc(trn_model_nparams(m) * sizeof(*d->wire) + 1);
    if (d->b == NULL || (d->bf16 && d->wire == NULL)) {
        trn_ddp_free(d);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct trn_param *p = trn_model_param(m, i);
        size_t end = p->offset + p->count, limit = d->nb == 0 ? first : cap;

        if ((end - begin) * sizeof(float) >= limit || i + 1 == n) {
            d->b[d->nb++] = (struct bucket){.begin = begin, .end = end};
            begin = end;
        }
    }
    *ret = d;
    return 0;
}

void trn_ddp_free(struct trn_ddp *d)
{
    if (d == NULL)
        return;
    free(d->b);
    free(d->wire);
    free(d);
}

uint32_t trn_ddp_buckets(const struct trn_ddp *d)
{
    return d->nb;
}

void trn_ddp_trace(struct trn_ddp *d, struct trn_trace *t)
{
    d->trace = t;
}

static int64_t bucket_bytes(const struct trn_ddp *d, const struct bucket *b)
{
    return (int64_t)((b->end - b->begin) * (d->bf16 ? sizeof(uint16_t) : sizeof(float)));
}

/*
 * A bucket's all-reduce on the comm lane: as the communication thread ran it (CPU), from
 * its start to its end, with how long it queued behind the buckets before it; on a GPU the
 * host only queued it, and that is what is shown.
 */
static void trace_bucket(struct trn_ddp *d, const struct bucket *b, const struct trn_comm_times *t)
{
    bool gpu = trn_comm_on_gpu(d->comm);
    struct trn_trace_event ev = {
        .name = gpu ? "all-reduce queued" : "all-reduce",
        .cat = "comm",
        .lane = TRN_TRACE_COMM,
        .start_ns = gpu ? b->launch_ns : t->began_ns,
        .end_ns = gpu ? gs_clock_mono_ns() : t->ended_ns,
        .args = {{"bucket", b - d->b},
                 {"bytes", bucket_bytes(d, b)},
                 {"queued_us", gpu ? 0 : (int64_t)(t->began_ns - b->launch_ns) / 1000}},
    };

    trn_trace_add(d->trace, &ev);
    /* An arrow from where backward handed the bucket over to its all-reduce (CPU: on a GPU
     * both ends are the host's same moment). */
    if (!gpu)
        trn_trace_flow(d->trace, "gradients", "comm", TRN_TRACE_COMPUTE, b->launch_ns,
                       TRN_TRACE_COMM, t->began_ns, ++d->flows);
}

static int start(struct trn_ddp *d, struct bucket *b)
{
    float *g = trn_model_grads(d->model) + b->begin;
    size_t n = b->end - b->begin;
    int rc;

    if (d->trace != NULL)
        b->launch_ns = gs_clock_mono_ns();
    if (!d->bf16) {
        rc = trn_comm_allreduce(d->comm, g, n, TRN_COMM_F32, true, &b->req);
    } else {
        for (size_t i = 0; i < n; i++)
            d->wire[b->begin + i] = gs_kern_f32_to_bf16(g[i]);
        rc = trn_comm_allreduce(d->comm, d->wire + b->begin, n, TRN_COMM_BF16, true, &b->req);
    }
    if (rc == 0 && d->trace != NULL && trn_comm_on_gpu(d->comm))
        trace_bucket(d, b, NULL);
    return rc;
}

static int on_ready(size_t final, void *data)
{
    struct trn_ddp *d = data;

    while (d->error == 0 && d->next < d->nb && d->b[d->next].end <= final) {
        d->error = start(d, &d->b[d->next]);
        if (d->error == 0)
            d->next++;
    }
    return d->error;
}

void trn_ddp_arm(struct trn_ddp *d)
{
    d->next = 0;
    d->error = 0;
    if (d->overlap)
        trn_model_on_grads_ready(d->model, on_ready, d);
}

int trn_ddp_finish(struct trn_ddp *d, struct trn_ddp_stats *st)
{
    uint64_t t0 = d->trace != NULL ? gs_clock_mono_ns() : 0;
    int rc = d->error;

    trn_model_on_grads_ready(d->model, NULL, NULL);
    *st = (struct trn_ddp_stats){.buckets = d->nb};
    while (rc == 0 && d->next < d->nb) { /* overlap off, or a hook that never came */
        rc = start(d, &d->b[d->next]);
        if (rc == 0)
            d->next++;
    }
    /* Wait for every started bucket, even after an error: none may outlive its buffer. */
    for (uint32_t i = 0; i < d->next; i++) {
        struct bucket *b = &d->b[i];
        struct trn_comm_times t;
        int r = trn_comm_wait_times(d->comm, b->req, &t);

        b->req = NULL;
        st->comm_ns += t.busy_ns;
        st->exposed_ns += t.waited_ns;
        if (r == 0 && d->trace != NULL && !trn_comm_on_gpu(d->comm))
            trace_bucket(d, b, &t);
        if (r < 0 && rc == 0)
            rc = r;
        if (r == 0 && d->bf16) {
            float *g = trn_model_grads(d->model);

            for (size_t k = b->begin; k < b->end; k++)
                g[k] = gs_kern_bf16_to_f32(d->wire[k]);
        }
    }
    trn_trace_span(d->trace, TRN_TRACE_COMPUTE, "comm wait", "comm", t0, "buckets", d->next, NULL,
                   0);
    d->next = 0;
    return rc;
}

int trn_ddp_gpu_stats(struct trn_ddp *d, struct trn_ddp_stats *st)
{
    if (!trn_comm_on_gpu(d->comm))
        return 0;
    return trn_comm_gpu_times(d->comm, &st->comm_ns, &st->exposed_ns);
}
