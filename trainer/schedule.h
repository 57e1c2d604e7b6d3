/*
 * schedule.h: the two scalars that change from one optimizer step to the next: the learning
 * rate (linear warmup, then cosine decay to a floor) and, for fp16, the dynamic loss scale.
 * Both are pure functions of their inputs and a small state, so a resumed run that restores
 * the state continues with bitwise the same values.
 */
#ifndef TRN_SCHEDULE_H
#define TRN_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

struct trn_lr_schedule {
    double lr, min_lr;
    uint32_t warmup_steps, steps;
};

/*
 * The learning rate of 0-based step: lr * (step + 1) / warmup during warmup, then a half
 * cosine from lr (at step warmup) towards min_lr (reached at step `steps`, one past the last).
 */
double trn_lr_at(const struct trn_lr_schedule *s, uint64_t step);

/*
 * Dynamic loss scaling (fp16): start at init; a step whose gradients hold an inf or a NaN is
 * skipped and the scale multiplied by backoff; after interval clean steps in a row it is
 * multiplied by growth. Saved in checkpoints as is.
 */
struct trn_loss_scaler {
    double scale, growth, backoff;
    uint32_t interval;
    uint32_t clean_steps; /* since the last change */
    uint64_t skipped;     /* steps skipped so far, for the metrics */
};

void trn_loss_scaler_init(struct trn_loss_scaler *ls, double init, double growth, double backoff,
                          uint32_t interval);
/* Records one step's outcome; returns true when the step must be applied, false to skip it. */
bool trn_loss_scaler_update(struct trn_loss_scaler *ls, bool found_inf);

#endif
