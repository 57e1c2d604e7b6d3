/*
 * state.h: everything a checkpoint holds, to and from a tensor file (tensorfile.h): the
 * model's shape and storage precision, the fp32 master weights, AdamW's moments and step
 * count, the loss scaler, the RNG and the data position. Resuming from it continues the run
 * bit for bit: the 16-bit weight copy is rebuilt from the master weights by the same rounding
 * the optimizer step uses.
 *
 * Tensors: "gsched.ckpt" (i32 [1], format version), "shape" (i32: layers heads channels
 * context vocab precision), "step", "adam_t", "data" (epoch, sample), "data.plan" (the data
 * plan's assignment digest, sharding/loader.h; 0 without a plan), "scaler.*", "rng" (u64
 * values as i32 lo/hi pairs), "params", "adam.m", "adam.v" (f32, nparams, model.h's
 * backward order). "data.plan" came later within format 1: a checkpoint without it loads
 * with digest 0, and readers that predate it ignore it (tensors are found by name).
 * "data.rest" (i32: the bit count as a lo/hi pair, then the bitmap's 64-bit words as pairs),
 * only while the position is inside the rest of an epoch begun after a change of data
 * assignment: the samples that epoch read before it (sharding/rest.h); absent, none.
 */
#ifndef TRN_STATE_H
#define TRN_STATE_H

#include <stdint.h>

#include "common/buf.h"
#include "trainer/model.h"
#include "trainer/rng.h"
#include "trainer/schedule.h"
#include "trainer/tensorfile.h"

struct trn_state {
    uint64_t step;   /* optimizer steps done */
    uint64_t adam_t; /* steps applied (fp16 skips do not count) */
    uint64_t data_epoch, data_sample;
    uint64_t data_plan; /* the loader's assignment digest at that position; 0: no plan */
    /* > 0: the position is inside the rest of data_epoch, whose samples read before that
     * rest began are a bitmap of this many bits, kept beside the state (the caller's) */
    uint64_t data_rest_bits;
    struct trn_loss_scaler scaler;
    struct trn_rng rng;
};

/* Bytes of the checkpoint of m and st. */
size_t trn_state_size(const struct trn_model *m, const struct trn_state *st);
/* Serializes m, st and (when st->data_rest_bits > 0) the rest's bitmap rest into buf
 * (trn_state_size bytes). 0, -EINVAL or -ENOMEM. */
int trn_state_save(struct trn_model *m, const struct trn_state *st, const uint64_t *rest, void *buf,
                   size_t size);

/*
 * The shape and precision a checkpoint was written with, to build the model it loads into.
 * Returns 0, or -EINVAL with "PATH: ..." in err.
 */
int trn_state_shape(const struct trn_tf *tf, const char *path, struct trn_model_shape *shape,
                    enum gs_kern_dtype *dt, struct gs_buf *err);
/*
 * Loads a checkpoint into m (which must have its shape) and st; the 16-bit copy is synced.
 * With ret_rest, a "data.rest" bitmap goes to *ret_rest (malloc'd, the caller frees; NULL
 * without one) and its bit count to st->data_rest_bits; without, it is ignored (0 bits).
 * Returns 0, -ENOMEM, or -EINVAL naming what does not match.
 */
int trn_state_load(const struct trn_tf *tf, const char *path, struct trn_model *m,
                   struct trn_state *st, uint64_t **ret_rest, struct gs_buf *err);

#endif
