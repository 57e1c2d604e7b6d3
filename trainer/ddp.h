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
 *
 * With a GPU communicator (trn_comm_on_gpu) the plan is the same and the buckets are device
 * pointers into the model's gradient arena (trn_model_grads() on a GPU model). Starting a
 * bucket only queues its all-reduce on the NCCL stream, ordered after the kernels the compute
 * stream has been given so far (the backward kernels that wrote it); trn_ddp_finish() makes
 * the compute stream wait for every bucket and returns without blocking the host, so the
 * optimizer's kernels queued next run after the averaging. The times are not known then:
 * finish leaves comm_ns and exposed_ns 0, and trn_ddp_gpu_stats(), called after the step's
 * end-of-step synchronisation, fills them in. bf16 all-reduce is not done on GPUs yet
 * (trn_ddp_new refuses it with -ENOTSUP): the gradients are fp32 and would need a cast
 * kernel each way around the collective.
 */
#ifndef TRN_DDP_H
#define TRN_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainer/comm.h"
#include "trainer/model.h"
#include "trainer/trace.h"

struct trn_ddp_opts {
    size_t bucket_bytes, first_bucket_bytes; /* 0: 25 MiB, 1 MiB */
    bool overlap;
    bool bf16;
};

struct trn_ddp_stats {
    uint64_t comm_ns;    /* the all-reduces' own time on the communication thread (GPU: on
                            the NCCL stream) */
    uint64_t exposed_ns; /* how long the optimizer waited for them (GPU: the compute stream) */
    uint32_t buckets;
};

struct trn_ddp;

/* Plans the buckets of m's gradients; c and m must outlive it. 0, -ENOMEM, or -ENOTSUP for
 * bf16 with a GPU communicator. */
int trn_ddp_new(struct trn_comm *c, struct trn_model *m, const struct trn_ddp_opts *o,
                struct trn_ddp **ret);
void trn_ddp_free(struct trn_ddp *d);
uint32_t trn_ddp_buckets(const struct trn_ddp *d);

/*
 * Records into t (NULL: stop recording; the default) each bucket's all-reduce on the comm
 * lane — with a CPU communicator as the communication thread ran it, with a GPU one the
 * host's queueing of it — and trn_ddp_finish's wait on the compute lane ("comm wait").
 */
void trn_ddp_trace(struct trn_ddp *d, struct trn_trace *t);

/* Before the backward pass whose gradients are to be averaged: hooks into the model. */
void trn_ddp_arm(struct trn_ddp *d);
/* After it: starts what has not started, waits for every bucket, unhooks. 0 or -errno. On a
 * GPU the waits are the compute stream's and st's times are 0 (trn_ddp_gpu_stats). */
int trn_ddp_finish(struct trn_ddp *d, struct trn_ddp_stats *st);
/*
 * With a GPU communicator: sets st->comm_ns and st->exposed_ns for the buckets of the last
 * trn_ddp_finish (trn_comm_gpu_times: the device all-reduces waited on since it was last
 * asked). Call it after the step's end-of-step synchronisation, or before it to turn a lost
 * rank into -EIO instead of a hang there (it then blocks until the buckets are done). With a
 * CPU communicator it changes nothing. 0 or -errno (the error in trn_comm_error()).
 */
int trn_ddp_gpu_stats(struct trn_ddp *d, struct trn_ddp_stats *st);

#endif
