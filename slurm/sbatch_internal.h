/*
 * sbatch_internal.h: what the sbatch files of slurm/ share among themselves and no one
 * else needs: sbatch.c (reading the options), sbatch_spec.c (the job they mean) and
 * sbatch_show.c (its --test-only view). Pure functions; no global state.
 */
#ifndef GS_SBATCH_INTERNAL_H
#define GS_SBATCH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Appends ids (ascending) as runs, Slurm's way of writing them: "0-3,7,9-11". 0 or -ENOMEM. */
int gs_sbatch_runs_text(struct gs_buf *out, const uint32_t *ids, size_t n);

#endif
