/*
 * pointwise_cpu.c: the element-wise kernels, GELU (tanh approximation, as GPT-2) and the
 * residual add, forward and backward. Each element is computed on its own, so the bits never
 * depend on the thread split; GELU's loops are compiled per instruction set (no FMA
 * contraction, so every clone gives the same bits) with a vectorisable tanh.
 */
#include "kernels/ops.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu_internal.h"

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

static bool args_bad(const void *a, const void *b, enum gs_kern_dtype dt)
{
    return a == NULL || b == NULL || !gs_kern_dtype_ok(dt);
}

#define CHUNK 4096 /* elements per OpenMP task */

/* tanh(u) = 1 - 2 / (exp(2u) + 1): exact limits at +-inf, absolute error ~1e-7 near 0,
 * which is all GELU needs, and it vectorises where libm's tanhf does not. */
GS_KERN_INLINE float tanh_approx(float u)
{
    return 1.0f - 2.0f / (gs_kern_expf(2.0f * u) + 1.0f);
}

#define SUB 256 /* elements converted to float at a time, on the stack */

/* dst[0..n) = src[i0..i0+n) as float; the dtype switch sits outside the loops so each one is
 * a plain conversion loop that vectorises. */
GS_KERN_INLINE void load_floats(float *restrict dst, const void *restrict src, size_t i0, size_t n,
                                enum gs_kern_dtype dt)
{
    switch (dt) {
    case GS_KERN_F32:
        memcpy(dst, (const float *)src + i0, n * sizeof(float));
        break;
    case GS_KERN_BF16:
        for (size_t i = 0; i < n; i++)
            dst[i] = gs_kern_load(src, i0 + i, GS_KERN_BF16);
        break;
    case GS_KERN_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = gs_kern_load(src, i0 + i, GS_KERN_F16);
        break;
    }
}

GS_KERN_INLINE void store_floats(void *restrict dst, const float *restrict src, size_t i0, size_t n,
                                 enum gs_kern_dtype dt)
{
    switch (dt) {
    case GS_KERN_F32:
        memcpy((float *)dst + i0, src, n * sizeof(float));
        break;
    case GS_KERN_BF16:
        for (size_t i = 0; i < n; i++)
            gs_kern_store(dst, i0 + i, GS_KERN_BF16, src[i]);
        break;
    case GS_KERN_F16:
        for (size_t i = 0; i < n; i++)
            gs_kern_store(dst, i0 + i, GS_KERN_F16, src[i]);
        break;
    }
}

/* Widen SUB elements at a time, compute in float, round once on the way back; the float loop
 * in the middle is what vectorises (GCC will not mix the 16-bit and float lanes in one). */
GS_KERN_CLONES static void gelu_chunk(void *out, const void *inp, size_t i0, size_t n,
                                      enum gs_kern_dtype dt)
{
    float x[SUB], y[SUB];

    for (size_t s0 = 0; s0 < n; s0 += SUB) {
        size_t m = n - s0 < SUB ? n - s0 : SUB;

        load_floats(x, inp, i0 + s0, m, dt);
        for (size_t i = 0; i < m; i++) {
            float u = GELU_K * (x[i] + GELU_A * x[i] * x[i] * x[i]);

            y[i] = 0.5f * x[i] * (1.0f + tanh_approx(u));
        }
        store_floats(out, y, i0 + s0, m, dt);
    }
}

/* dinp may be dout (in place): each block of dout is read before its dinp is written. */
GS_KERN_CLONES static void gelu_bwd_chunk(void *dinp, const void *inp, const void *dout, size_t i0,
                                          size_t n, enum gs_kern_dtype dt)
{
    float x[SUB], g[SUB];

    for (size_t s0 = 0; s0 < n; s0 += SUB) {
        size_t m = n - s0 < SUB ? n - s0 : SUB;

        load_floats(x, inp, i0 + s0, m, dt);
        load_floats(g, dout, i0 + s0, m, dt);
        for (size_t i = 0; i < m; i++) {
            float u = GELU_K * (x[i] + GELU_A * x[i] * x[i] * x[i]);
            float th = tanh_approx(u);
            float du = GELU_K * (1.0f + 3.0f * GELU_A * x[i] * x[i]);

            g[i] *= 0.5f * (1.0f + th) + 0.5f * x[i] * (1.0f - th * th) * du;
        }
        store_floats(dinp, g, i0 + s0, m, dt);
    }
}

int gs_kern_gelu_fwd(void *out, const void *inp, size_t n, enum gs_kern_dtype dt)
{
    if (args_bad(out, inp, dt))
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (size_t i0 = 0; i0 < n; i0 += CHUNK)
        gelu_chunk(out, inp, i0, n - i0 < CHUNK ? n - i0 : CHUNK, dt);
    return 0;
}

int gs_kern_gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n, enum gs_kern_dtype dt)
{
    if (args_bad(dinp, inp, dt) || dout == NULL)
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (size_t i0 = 0; i0 < n; i0 += CHUNK)
        gelu_bwd_chunk(dinp, inp, dout, i0, n - i0 < CHUNK ? n - i0 : CHUNK, dt);
    return 0;
}

int gs_kern_residual_fwd(void *out, const void *a, const void *b, size_t n, enum gs_kern_dtype dt)
{
    if (args_bad(a, b, dt) || out == NULL)
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (size_t i = 0; i < n; i++)
        gs_kern_store(out, i, dt, gs_kern_load(a, i, dt) + gs_kern_load(b, i, dt));
    return 0;
}

int gs_kern_residual_bwd(void *da, void *db, const void *dout, size_t n, enum gs_kern_dtype dt)
{
    if (dout == NULL || !gs_kern_dtype_ok(dt))
        return -EINVAL;
    GS_OMP(parallel for schedule(static))
    for (size_t i = 0; i < n; i++) {
        float g = gs_kern_load(dout, i, dt);

        if (da != NULL)
            gs_kern_store(da, i, dt, gs_kern_load(da, i, dt) + g);
        if (db != NULL)
            gs_kern_store(db, i, dt, gs_kern_load(db, i, dt) + g);
    }
    return 0;
}
