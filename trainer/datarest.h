/*
 * datarest.h: resuming in the middle of an epoch under another data assignment (docs/data.md,
 * "Resuming under another assignment"). A checkpoint records the data position and the
 * digest of the assignment it was reached under; rank 0 keeps that assignment's plan beside
 * it (CKPT_DIR/data-plan-DIGEST.toml). When the run resumes under another assignment (another
 * plan's, or none: digest 0), this works out the samples the epoch had read
 * (sharding/rest.h) so that the loader reads the epoch's others instead of skipping to the
 * next epoch.
 */
#ifndef TRN_DATAREST_H
#define TRN_DATAREST_H

#include <stdint.h>
#include <stdio.h>

#include "sharding/manifest.h"
#include "sharding/planfile.h"
#include "trainer/state.h"

/* The kept plan's file name for an assignment digest: "data-plan-DIGEST.toml". */
void trn_data_plan_file(uint64_t digest, char *out, size_t size);

struct trn_data_rest_in {
    const struct shard_manifest *manifest;
    const struct shard_planfile *plan; /* this run's; NULL: none */
    const char *ckpt_dir;              /* where the old plans are kept */
    uint32_t seq_len;
    uint64_t seed; /* data.seed */
    FILE *out;     /* the one line saying what happens; NULL: none */
};

/*
 * Rank 0 after it loaded st (and *rest, st->data_rest_bits of it, or NULL) from a
 * checkpoint: when st's position is inside an epoch (sample > 0) and this run's assignment
 * is not the one it was reached under, *rest becomes every sample that epoch read (the old
 * *rest freed), st->data_rest_bits its size, st's position (epoch, 0) of the rest and
 * st->data_plan this assignment's digest. When the old plan is not kept, or does not fit,
 * st and *rest are left as they are (the loader then starts the next epoch) and the line
 * says why. Returns 0, or -ENOMEM.
 */
int trn_data_rest(const struct trn_data_rest_in *in, struct trn_state *st, uint64_t **rest);

#endif
