/*
 * grad_cpu.c: whole-gradient operations of an optimizer step: the global norm (for clipping
 * and for the log), scaling (clipping), and the fp16 loss-scale unscale with its inf/NaN
 * check.
 *
 * The norm must not depend on the thread count (exact resume compares it), so the sum runs
 * in fixed 8192-element chunks: each chunk is summed in 16 float lanes and the lanes added in
 * order, chunk sums are kept per chunk (a batch of at most 64 at a time, on the stack) and
 * added in double in index order. Threads only decide who computes which chunk.
 */
#include "kernels/ops.h"

#include <errno.h>
#include <math.h>

#include "kernels/cpu_internal.h"

#define CHUNK 8192
#define BATCH 64
#define LANES 16

static float chunk_sumsq(const float *g, size_t n)
{
    float lane[LANES] = {0}, sum = 0.0f;
    size_t i = 0;

    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            lane[j] += g[i + j] * g[i + j];
    for (int j = 0; i < n; i++, j++)
        lane[j] += g[i] * g[i];
    for (int j = 0; j < LANES; j++)
        sum += lane[j];
    return sum;
}

static double array_sumsq(const float *g, size_t n)
{
    size_t chunks = (n + CHUNK - 1) / CHUNK;
    double total = 0.0;

    for (size_t c0 = 0; c0 < chunks; c0 += BATCH) {
        float part[BATCH];
        int m = chunks - c0 < BATCH ? (int)(chunks - c0) : BATCH;

        GS_OMP(parallel for schedule(static))
        for (int j = 0; j < m; j++) {
            size_t at = (c0 + (size_t)j) * CHUNK;

            part[j] = chunk_sumsq(g + at, n - at < CHUNK ? n - at : CHUNK);
        }
        for (int j = 0; j < m; j++)
            total += part[j];
    }
    return total;
}

int gs_kern_grad_norm(const float *const *arrays, const size_t *lens, int count, float *ret_norm)
{
    double total = 0.0;

    if (ret_norm == NULL || count < 0 || (count > 0 && (arrays == NULL || lens == NULL)))
        return -EINVAL;
    for (int a = 0; a < count; a++)
        if (lens[a] > 0 && arrays[a] == NULL)
            return -EINVAL;
    for (int a = 0; a < count; a++)
        total += array_sumsq(arrays[a], lens[a]);
    *ret_norm = (float)sqrt(total);
    return 0;
}

int gs_kern_grad_scale(float *g, size_t n, float scale)
{
    if (n > 0 && g == NULL)
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (size_t i = 0; i < n; i++)
        g[i] *= scale;
    return 0;
}

float gs_kern_clip_scale(float norm, float max_norm)
{
    if (max_norm <= 0.0f || !(norm > max_norm))
        return 1.0f;
    return max_norm / (norm + 1e-6f);
}

int gs_kern_grad_unscale(float *g, size_t n, float inv_scale, bool *found_nonfinite)
{
    int bad = 0;

    if (found_nonfinite == NULL || (n > 0 && g == NULL))
        return -EINVAL;
    GS_OMP(parallel for schedule(static) reduction(| : bad))
    for (size_t i = 0; i < n; i++) {
        bad |= !isfinite(g[i]);
        g[i] *= inv_scale;
    }
    if (bad)
        *found_nonfinite = true;
    return 0;
}
