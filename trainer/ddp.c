/*
 * ddp.c: gradient buckets and their all-reduces (see ddp.h). Buckets are contiguous ranges
 * of the flat gradient array, so an all-reduce needs no packing: it runs on the gradients in
 * place (or on their bf16 copy). The hook runs on the training thread between kernels; it
 * only queues requests, so it costs backward nothing measurable. On a GPU the same code
 * runs on device pointers: the communicator tells them apart and orders them against the
 * compute stream (comm.h).
 */
#include "trainer/ddp.h"

#include <errno.h>
#include <stdlib.h>

#include "kernels/dtype.h"

struct bucket {
    size_t begin, end; /* in floats of the flat array */
    struct trn_comm_req *req;
};

struct trn_ddp {
    struct trn_comm *comm;
    struct trn_model *model;
    struct bucket *b;
    uint32_t nb, next; /* buckets; the first not yet started */
    bool overlap, bf16;
    uint16_t *wire; /* bf16 copies of the gradients, when bf16 */
    int error;      /* of a start from the hook */
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
            d->b[d->nb++] = (struct bucket){begin, end, NULL};
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

static int start(struct trn_ddp *d, struct bucket *b)
{
    float *g = trn_model_grads(d->model) + b->begin;
    size_t n = b->end - b->begin;

    if (!d->bf16)
        return trn_comm_allreduce(d->comm, g, n, TRN_COMM_F32, true, &b->req);
    for (size_t i = 0; i < n; i++)
        d->wire[b->begin + i] = gs_kern_f32_to_bf16(g[i]);
    return trn_comm_allreduce(d->comm, d->wire + b->begin, n, TRN_COMM_BF16, true, &b->req);
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
        uint64_t busy = 0, waited = 0;
        int r = trn_comm_wait(d->comm, b->req, &busy, &waited);

        b->req = NULL;
        st->comm_ns += busy;
        st->exposed_ns += waited;
        if (r < 0 && rc == 0)
            rc = r;
        if (r == 0 && d->bf16) {
            float *g = trn_model_grads(d->model);

            for (size_t k = b->begin; k < b->end; k++)
                g[k] = gs_kern_bf16_to_f32(d->wire[k]);
        }
    }
    d->next = 0;
    return rc;
}

int trn_ddp_gpu_stats(struct trn_ddp *d, struct trn_ddp_stats *st)
{
    if (!trn_comm_on_gpu(d->comm))
        return 0;
    return trn_comm_gpu_times(d->comm, &st->comm_ns, &st->exposed_ns);
}
