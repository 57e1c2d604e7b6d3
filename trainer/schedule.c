/*
 * schedule.c: learning-rate schedule and fp16 loss scaler (see schedule.h). The cosine is
 * computed in double from the step number alone, never accumulated, so the value at step n
 * does not depend on how the run got there (straight or resumed).
 */
#include "trainer/schedule.h"

#include <math.h>

double trn_lr_at(const struct trn_lr_schedule *s, uint64_t step)
{
    double ratio;

    if (step < s->warmup_steps)
        return s->lr * (double)(step + 1) / (double)s->warmup_steps;
    if (step >= s->steps)
        return s->min_lr;
    /* Here warmup_steps <= step < steps, so the span is at least one step. */
    ratio = (double)(step - s->warmup_steps) / (double)(s->steps - s->warmup_steps);
    return s->min_lr + 0.5 * (1.0 + cos(3.14159265358979323846 * ratio)) * (s->lr - s->min_lr);
}

void trn_loss_scaler_init(struct trn_loss_scaler *ls, double init, double growth, double backoff,
                          uint32_t interval)
{
    *ls = (struct trn_loss_scaler){
        .scale = init,
        .growth = growth,
        .backoff = backoff,
        .interval = interval,
    };
}

bool trn_loss_scaler_update(struct trn_loss_scaler *ls, bool found_inf)
{
    if (found_inf) {
        ls->scale *= ls->backoff;
        if (ls->scale < 1.0)
            ls->scale = 1.0; /* below 1 it would only shrink small gradients further */
        ls->clean_steps = 0;
        ls->skipped++;
        return false;
    }
    if (++ls->clean_steps >= ls->interval) {
        ls->scale *= ls->growth;
        ls->clean_steps = 0;
    }
    return true;
}
