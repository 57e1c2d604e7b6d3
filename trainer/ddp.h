/*
 * ddp.h: data parallelism's gradient averaging, overlapped with the backward pass. The flat
 * gradient array (model.h: backward order) is cut into buckets at tensor boundaries: a small
 * first one (first_bucket_bytes, default 1 MiB) so that communication starts early, then
 * buckets of bucket_bytes (default 25 MiB), as PyTorch DDP does. Armed before the last
 * micro-step's backward, the model's grads-ready hook starts each bucket's all-reduce (an
 * average over the ranks) as soon as its last gradient is final, while backward goes on with
 * earlier layers; trn_ddp_finish() waits for what is outstanding. Non-final micro-steps of
 * gradient accumulation are not armed, so they communicate nothing.
 *
 * With overlap off every bucket is started after backward instead (the baseline the
 * benchmark compares against). With bf16 the buckets travel as bf16 (half the bytes) and are
 * widened back to fp32 after the wait.
 */
#ifndef TRN_DDP_H
#define TRN_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainer/comm.h"
#include "trainer/model.h"

struct trn_ddp_opts {
    size_t bucket_bytes, first_bucket_bytes; /* 0: 25 MiB, 1 MiB */
    bool overlap;
    bool bf16;
};

struct trn_ddp_stats {
    uint64_t comm_ns;    /* the all-reduces' own time on the communication thread */
    uint64_t exposed_ns; /* how long the optimizer waited for them */
    uint32_t buckets;
};

struct trn_ddp;

/* Plans the buckets of m's gradients; c and m must outlive it. 0 or -ENOMEM. */
int trn_ddp_new(struct trn_comm *c, struct trn_model *m, const struct trn_ddp_opts *o,
                struct trn_ddp **ret);
void trn_ddp_free(struct trn_ddp *d);
uint32_t trn_ddp_buckets(const struct trn_ddp *d);

/* Before the backward pass whose gradients are to be averaged: hooks into the model. */
void trn_ddp_arm(struct trn_ddp *d);
/* After it: starts what has not started, waits for every bucket, unhooks. 0 or -errno. */
int trn_ddp_finish(struct trn_ddp *d, struct trn_ddp_stats *st);

#endif
