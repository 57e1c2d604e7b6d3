/*
 * classifier_cpu.c: the fused LM-head loss: softmax over the real vocabulary, per-token
 * cross-entropy, and the logits' gradient written over the logits, so the [N,Vp] probability
 * tensor is never stored (the largest activation of a small-vocabulary model otherwise).
 *
 * The vocabulary is padded to Vp (a multiple of 64, for the matmul); the padded columns take
 * no part in the softmax and get a zero gradient. Rows are independent, so any thread split
 * gives the same bits.
 */
#include "kernels/ops.h"

#include <errno.h>
#include <math.h>

#include "kernels/cpu_internal.h"

static void classify_row(void *logits, float *losses, int32_t target, size_t n, int V, int Vp,
                         float scale, bool backward, enum gs_kern_dtype dt)
{
    size_t row = n * (size_t)Vp;
    float max = -INFINITY, sum = 0.0f, inv;

    for (int v = 0; v < V; v++) {
        float x = gs_kern_load(logits, row + (size_t)v, dt);

        if (x > max)
            max = x;
    }
    for (int v = 0; v < V; v++)
        sum += expf(gs_kern_load(logits, row + (size_t)v, dt) - max);
    losses[n] = 0.0f;
    if (target >= 0)
        losses[n] = logf(sum) + max - gs_kern_load(logits, row + (size_t)target, dt);
    if (!backward)
        return;
    inv = 1.0f / sum;
    for (int v = 0; v < Vp; v++) {
        float d = 0.0f;

        if (target >= 0 && v < V) {
            float p = expf(gs_kern_load(logits, row + (size_t)v, dt) - max) * inv;

            d = scale * (p - (v == target ? 1.0f : 0.0f));
        }
        gs_kern_store(logits, row + (size_t)v, dt, d);
    }
}

int gs_kern_classifier(void *logits, float *losses, const int32_t *targets, int N, int V, int Vp,
                       float scale, bool backward, enum gs_kern_dtype dt)
{
    if (logits == NULL || losses == NULL || targets == NULL || !gs_kern_dtype_ok(dt))
        return -EINVAL;
    if (N <= 0 || V <= 0 || Vp < V)
        return -EINVAL;
    for (int n = 0; n < N; n++)
        if (targets[n] < -1 || targets[n] >= V)
            return -EINVAL;
    if (scale == 0.0f)
        scale = 1.0f / (float)N;
    GS_OMP(parallel for schedule(static))
    for (int n = 0; n < N; n++)
        classify_row(logits, losses, targets[n], (size_t)n, V, Vp, scale, backward, dt);
    return 0;
}
