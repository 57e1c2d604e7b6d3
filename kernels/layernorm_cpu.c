/*
 * layernorm_cpu.c: LayerNorm forward and backward over the channel dimension, as in GPT-2.
 *
 * The forward pass saves each row's mean and 1/std (float) so the backward pass needs no
 * second pass over the statistics. Rows are independent, so both passes split rows across
 * threads, except the weight and bias gradients, which sum over rows: those are computed in a
 * separate pass where each thread owns a range of channels and walks every row in order, so
 * the sums come out the same for any thread count, with no per-thread partial buffers.
 */
#include "kernels/ops.h"

#include <errno.h>
#include <math.h>

#include "kernels/cpu_internal.h"

#define LN_EPS 1e-5f
#define COLS 64 /* channels per task in the parameter-gradient pass */

static void ln_row(void *out, float *mean, float *rstd, const void *inp, const void *weight,
                   const void *bias, size_t n, int C, enum gs_kern_dtype dt)
{
    size_t row = n * (size_t)C;
    float m = 0.0f, var = 0.0f, s;

    for (int c = 0; c < C; c++)
        m += gs_kern_load(inp, row + (size_t)c, dt);
    m /= (float)C;
    for (int c = 0; c < C; c++) {
        float d = gs_kern_load(inp, row + (size_t)c, dt) - m;

        var += d * d;
    }
    s = 1.0f / sqrtf(var / (float)C + LN_EPS);
    for (int c = 0; c < C; c++) {
        float x = (gs_kern_load(inp, row + (size_t)c, dt) - m) * s;
        float y = x * gs_kern_load(weight, (size_t)c, dt) + gs_kern_load(bias, (size_t)c, dt);

        gs_kern_store(out, row + (size_t)c, dt, y);
    }
    if (mean != NULL)
        mean[n] = m;
    if (rstd != NULL)
        rstd[n] = s;
}

int gs_kern_layernorm_fwd(void *out, float *mean, float *rstd, const void *inp, const void *weight,
                          const void *bias, int N, int C, enum gs_kern_dtype dt)
{
    if (out == NULL || inp == NULL || weight == NULL || bias == NULL)
        return -EINVAL;
    if (N <= 0 || C <= 0 || !gs_kern_dtype_ok(dt))
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (int n = 0; n < N; n++)
        ln_row(out, mean, rstd, inp, weight, bias, (size_t)n, C, dt);
    return 0;
}

/* dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight. */
static void ln_row_bwd(void *dinp, const void *dout, const void *inp, const void *weight, float m,
                       float s, size_t n, int C, enum gs_kern_dtype dt)
{
    size_t row = n * (size_t)C;
    float gmean = 0.0f, gxmean = 0.0f;

    for (int c = 0; c < C; c++) {
        float xhat = (gs_kern_load(inp, row + (size_t)c, dt) - m) * s;
        float g = gs_kern_load(dout, row + (size_t)c, dt) * gs_kern_load(weight, (size_t)c, dt);

        gmean += g;
        gxmean += g * xhat;
    }
    gmean /= (float)C;
    gxmean /= (float)C;
    for (int c = 0; c < C; c++) {
        size_t i = row + (size_t)c;
        float xhat = (gs_kern_load(inp, i, dt) - m) * s;
        float g = gs_kern_load(dout, i, dt) * gs_kern_load(weight, (size_t)c, dt);
        float d = (g - gmean - xhat * gxmean) * s;

        gs_kern_store(dinp, i, dt, gs_kern_load(dinp, i, dt) + d);
    }
}

static void ln_param_grad(float *dweight, float *dbias, const void *dout, const void *inp,
                          const float *mean, const float *rstd, int N, int C, int c0,
                          enum gs_kern_dtype dt)
{
    float dw[COLS] = {0}, db[COLS] = {0};
    int w = C - c0 < COLS ? C - c0 : COLS;

    for (int n = 0; n < N; n++) {
        size_t row = (size_t)n * (size_t)C + (size_t)c0;

        for (int j = 0; j < w; j++) {
            float g = gs_kern_load(dout, row + (size_t)j, dt);
            float xhat = (gs_kern_load(inp, row + (size_t)j, dt) - mean[n]) * rstd[n];

            dw[j] += g * xhat;
            db[j] += g;
        }
    }
    for (int j = 0; j < w; j++) {
        dweight[c0 + j] += dw[j];
        dbias[c0 + j] += db[j];
    }
}

int gs_kern_layernorm_bwd(void *dinp, float *dweight, float *dbias, const void *dout,
                          const void *inp, const void *weight, const float *mean, const float *rstd,
                          int N, int C, enum gs_kern_dtype dt)
{
    if (dinp == NULL || dweight == NULL || dbias == NULL || dout == NULL || inp == NULL ||
        weight == NULL || mean == NULL || rstd == NULL)
        return -EINVAL;
    if (N <= 0 || C <= 0 || !gs_kern_dtype_ok(dt))
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (int n = 0; n < N; n++)
        ln_row_bwd(dinp, dout, inp, weight, mean[n], rstd[n], (size_t)n, C, dt);
    GS_OMP(parallel for schedule(static))
    for (int c0 = 0; c0 < C; c0 += COLS)
        ln_param_grad(dweight, dbias, dout, inp, mean, rstd, N, C, c0, dt);
    return 0;
}
