/*
 * layernorm.cu: CUDA twins of layernorm_cpu.c (gpu.h): LayerNorm forward, the fused residual
 * add + LayerNorm forward, and the backward pass; also the size of the scratch the
 * non-matmul kernels need (gs_kern_gpu_reduce_ws_bytes, gpu_internal.h).
 *
 * Work split.
 *  - Forward: one warp per row, LN_WARPS rows a block. Each lane walks the channels
 *    c = lane, lane + 32, ... three times: the sum for the mean, the squared deviations for
 *    the variance (two passes, as the CPU, so no cancellation), then the output. The row
 *    stays in L1 between passes. mean and 1/std are saved as float, eps 1e-5.
 *  - Fused residual: the first pass also stores res = a + b rounded to the storage dtype and
 *    reads the stored value back, so the statistics and the output come from exactly what
 *    res holds, as residual_fwd followed by layernorm_fwd would compute. res may be a or b:
 *    each element is read and then written by the lane that owns it, and nobody else reads it.
 *  - Backward, vectorised (ln_bwd_vec_kernel, where C is a multiple of 16 bytes and up to
 *    1024 16-bit or 512 fp32 channels): one warp per chunk of LN_BWD_ROWS rows, each lane
 *    owning 16-byte groups of channels across the chunk's rows (weights and parameter-
 *    gradient partials in registers, every element read once). Otherwise (the fallback,
 *    ln_bwd_kernel): one block per chunk of LN_BWD_ROWS rows. Its warps first compute dinp for the
 *    chunk's rows (warp per row: the two row sums, then dinp += ..., accumulated in float
 *    and rounded once); then its threads walk channels and sum dout * xhat and dout over the
 *    chunk's rows in row order into per-chunk partial sums in the context's workspace.
 *    A second kernel adds the partials of each channel in a fixed tree over chunk order and
 *    adds the result to dweight and dbias once.
 *
 * Determinism: every sum has a fixed shape. A warp's row sums are a butterfly of shuffles
 * (each lane adds its channels in order, then five xor-shuffle steps; IEEE addition is
 * commutative, so every lane ends with the same bits); the parameter gradients depend only on
 * N, C and the chunk size. No atomics, so a run repeats bit for bit. The CPU sums each row and
 * each channel in one sequential chain, so the two agree within float rounding.
 */
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

#include "kernels/gpu_internal.h"

#define LN_EPS 1e-5f
#define LN_WARPS 8     /* rows per block in the forward pass (256 threads) */
#define LN_BWD_ROWS 32 /* rows per chunk of the parameter-gradient partial sums */
#define LN_BWD_THREADS 256
#define LN_VEC_WARPS 4  /* warps (chunks) per block of the vectorised backward */
#define LN_VEC_MAX 4    /* 16-byte groups per lane at most: C up to 1024 16-bit, 512 fp32 */
#define SUM_CHANNELS 32 /* channels per block of the partial-sum kernel ... */
#define SUM_LANES 16    /* ... and chunk lanes per channel */

template <int DT, bool RES>
static __global__ void ln_fwd_kernel(void *out, float *mean, float *rstd, void *res, const void *a,
                                     const void *b, const void *weight, const void *bias, int N,
                                     int C)
{
    int row = (int)blockIdx.x * LN_WARPS + (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const void *x = RES ? res : a;
    size_t base;
    float m = 0.0f, var = 0.0f, s;

    if (row >= N) /* the whole warp leaves together: row is the same on every lane */
        return;
    base = (size_t)row * (size_t)C;
    for (int c = lane; c < C; c += 32) {
        size_t i = base + (size_t)c;

        if (RES)
            gs_dstore(res, i, DT, gs_dload(a, i, DT) + gs_dload(b, i, DT));
        m += gs_dload(x, i, DT);
    }
    m = gs_warp_sum(m) / (float)C;
    for (int c = lane; c < C; c += 32) {
        float d = gs_dload(x, base + (size_t)c, DT) - m;

        var += d * d;
    }
    var = gs_warp_sum(var);
    s = 1.0f / sqrtf(var / (float)C + LN_EPS);
    for (int c = lane; c < C; c += 32) {
        size_t i = base + (size_t)c;
        float xhat = (gs_dload(x, i, DT) - m) * s;

        gs_dstore(out, i, DT,
                  xhat * gs_dload(weight, (size_t)c, DT) + gs_dload(bias, (size_t)c, DT));
    }
    if (lane == 0 && mean != NULL)
        mean[row] = m;
    if (lane == 0 && rstd != NULL)
        rstd[row] = s;
}

/* dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight, for one row, by
 * one warp. */
template <int DT>
static __device__ void ln_bwd_row(void *dinp, const void *dout, const void *inp, const void *weight,
                                  float m, float s, size_t base, int C, int lane)
{
    float gmean = 0.0f, gxmean = 0.0f;

    for (int c = lane; c < C; c += 32) {
        size_t i = base + (size_t)c;
        float xhat = (gs_dload(inp, i, DT) - m) * s;
        float g = gs_dload(dout, i, DT) * gs_dload(weight, (size_t)c, DT);

        gmean += g;
        gxmean += g * xhat;
    }
    gmean = gs_warp_sum(gmean) / (float)C;
    gxmean = gs_warp_sum(gxmean) / (float)C;
    for (int c = lane; c < C; c += 32) {
        size_t i = base + (size_t)c;
        float xhat = (gs_dload(inp, i, DT) - m) * s;
        float g = gs_dload(dout, i, DT) * gs_dload(weight, (size_t)c, DT);
        float d = (g - gmean - xhat * gxmean) * s;

        gs_dstore(dinp, i, DT, gs_dload(dinp, i, DT) + d);
    }
}

/* Block `chunk` owns rows [chunk * LN_BWD_ROWS, + LN_BWD_ROWS): dinp for them, and the
 * chunk's partial sums part_dw/part_db [chunk][C] of dout * xhat and dout. */
template <int DT>
static __global__ void ln_bwd_kernel(void *dinp, float *part_dw, float *part_db, const void *dout,
                                     const void *inp, const void *weight, const float *mean,
                                     const float *rstd, int N, int C)
{
    int chunk = (int)blockIdx.x, row0 = chunk * LN_BWD_ROWS;
    int rows = N - row0 < LN_BWD_ROWS ? N - row0 : LN_BWD_ROWS;
    int lane = (int)threadIdx.x % 32;

    for (int r = (int)threadIdx.x / 32; r < rows; r += LN_BWD_THREADS / 32) {
        int n = row0 + r;

        ln_bwd_row<DT>(dinp, dout, inp, weight, mean[n], rstd[n], (size_t)n * (size_t)C, C, lane);
    }
    for (int c = (int)threadIdx.x; c < C; c += LN_BWD_THREADS) {
        float dw = 0.0f, db = 0.0f;

        for (int r = 0; r < rows; r++) {
            size_t i = (size_t)(row0 + r) * (size_t)C + (size_t)c;
            float g = gs_dload(dout, i, DT);
            float xhat = (gs_dload(inp, i, DT) - mean[row0 + r]) * rstd[row0 + r];

            dw += g * xhat;
            db += g;
        }
        part_dw[(size_t)chunk * (size_t)C + (size_t)c] = dw;
        part_db[(size_t)chunk * (size_t)C + (size_t)c] = db;
    }
}

/* 16 bytes of storage (E elements) at element i, widened to float, and back. */
template <int DT> struct ln_vec {
    static constexpr int E = DT == GS_KERN_F32 ? 4 : 8;

    static __device__ __forceinline__ void load(float *x, const void *p, size_t i)
    {
        uint4 v = *(const uint4 *)((const char *)p + i * (16 / E));

        if (DT == GS_KERN_F32) {
            memcpy(x, &v, sizeof(v));
            return;
        }
        uint16_t h[8];

        memcpy(h, &v, sizeof(v));
#pragma unroll
        for (int e = 0; e < 8; e++)
            x[e] = gs_dload(h, (size_t)e, DT);
    }

    static __device__ __forceinline__ void store(void *p, size_t i, const float *x)
    {
        uint4 v;

        if (DT == GS_KERN_F32) {
            memcpy(&v, x, sizeof(v));
        } else {
            uint16_t h[8];

#pragma unroll
            for (int e = 0; e < 8; e++)
                gs_dstore(h, (size_t)e, DT, x[e]);
            memcpy(&v, h, sizeof(v));
        }
        *(uint4 *)((char *)p + i * (16 / E)) = v;
    }
};

/* The vectorised backward: one warp per chunk of LN_BWD_ROWS rows, LN_VEC_WARPS warps a
 * block. Lane l owns the 16-byte groups l, l + 32, ... (at most NV of them) of every row, so
 * it keeps their weights and its dweight/dbias partial sums in registers over the chunk's
 * rows, issues all of a row's loads at once, and reads each element of dout, inp and dinp
 * once. The chunk's partials go to the workspace as with ln_bwd_kernel, summed by
 * ln_param_sum_kernel. Needs C a multiple of E (16 bytes) and 16-byte aligned tensors. */
template <int DT, int NV>
static __global__ void __launch_bounds__(LN_VEC_WARPS * 32)
    ln_bwd_vec_kernel(void *dinp, float *part_dw, float *part_db, const void *dout, const void *inp,
                      const void *weight, const float *mean, const float *rstd, int N, int C)
{
    constexpr int E = ln_vec<DT>::E;
    int chunk = (int)blockIdx.x * LN_VEC_WARPS + (int)threadIdx.x / 32;
    int lane = (int)threadIdx.x % 32, groups = C / E, row0 = chunk * LN_BWD_ROWS;
    int rows = N - row0 < LN_BWD_ROWS ? N - row0 : LN_BWD_ROWS;
    float w[NV][E], dw[NV][E] = {}, db[NV][E] = {};

    if (row0 >= N) /* the whole warp leaves together */
        return;
#pragma unroll
    for (int v = 0; v < NV; v++)
        if (lane + 32 * v < groups)
            ln_vec<DT>::load(w[v], weight, (size_t)(lane + 32 * v) * E);
    for (int r = 0; r < rows; r++) {
        int n = row0 + r;
        size_t base = (size_t)n * (size_t)C;
        float m = mean[n], s = rstd[n], gm = 0.0f, gxm = 0.0f;
        float d[NV][E], xh[NV][E];

#pragma unroll
        for (int v = 0; v < NV; v++) {
            size_t i = base + (size_t)(lane + 32 * v) * E;

            if (lane + 32 * v >= groups)
                continue;
            ln_vec<DT>::load(d[v], dout, i);
            ln_vec<DT>::load(xh[v], inp, i);
        }
#pragma unroll
        for (int v = 0; v < NV; v++) {
            if (lane + 32 * v >= groups)
                continue;
#pragma unroll
            for (int e = 0; e < E; e++) {
                float x = (xh[v][e] - m) * s, gg = d[v][e] * w[v][e];

                xh[v][e] = x;
                dw[v][e] += d[v][e] * x;
                db[v][e] += d[v][e];
                d[v][e] = gg;
                gm += gg;
                gxm += gg * x;
            }
        }
        gm = gs_warp_sum(gm) / (float)C;
        gxm = gs_warp_sum(gxm) / (float)C;
#pragma unroll
        for (int v = 0; v < NV; v++) {
            size_t i = base + (size_t)(lane + 32 * v) * E;
            float o[E];

            if (lane + 32 * v >= groups)
                continue;
            ln_vec<DT>::load(o, dinp, i);
#pragma unroll
            for (int e = 0; e < E; e++)
                o[e] += (d[v][e] - gm - xh[v][e] * gxm) * s;
            ln_vec<DT>::store(dinp, i, o);
        }
    }
#pragma unroll
    for (int v = 0; v < NV; v++) {
        size_t i = (size_t)chunk * (size_t)C + (size_t)(lane + 32 * v) * E;

        if (lane + 32 * v >= groups)
            continue;
#pragma unroll
        for (int e = 0; e < E; e += 4) {
            ln_vec<GS_KERN_F32>::store(part_dw + i + e, 0, dw[v] + e);
            ln_vec<GS_KERN_F32>::store(part_db + i + e, 0, db[v] + e);
        }
    }
}

/* Block (SUM_CHANNELS x SUM_LANES) per SUM_CHANNELS channels: lane y sums chunks y, y +
 * SUM_LANES, ... in order, then lane 0 adds the lanes' sums in lane order and adds the total
 * to dweight/dbias once. */
static __global__ void ln_param_sum_kernel(float *dweight, float *dbias, const float *part_dw,
                                           const float *part_db, int chunks, int C)
{
    __shared__ float sdw[SUM_LANES][SUM_CHANNELS], sdb[SUM_LANES][SUM_CHANNELS];
    int x = (int)threadIdx.x, y = (int)threadIdx.y;
    int c = (int)blockIdx.x * SUM_CHANNELS + x;
    float dw = 0.0f, db = 0.0f;

    if (c < C) {
        for (int k = y; k < chunks; k += SUM_LANES) {
            dw += part_dw[(size_t)k * (size_t)C + (size_t)c];
            db += part_db[(size_t)k * (size_t)C + (size_t)c];
        }
    }
    sdw[y][x] = dw;
    sdb[y][x] = db;
    __syncthreads();
    if (y != 0 || c >= C)
        return;
    for (int l = 1; l < SUM_LANES; l++) {
        dw += sdw[l][x];
        db += sdb[l][x];
    }
    dweight[c] += dw;
    dbias[c] += db;
}

typedef void (*ln_fwd_fn)(void *, float *, float *, void *, const void *, const void *,
                          const void *, const void *, int, int);
typedef void (*ln_bwd_fn)(void *, float *, float *, const void *, const void *, const void *,
                          const float *, const float *, int, int);

/* One instantiation per storage dtype, indexed by enum gs_kern_dtype. */
static const ln_fwd_fn ln_fwd_kernels[] = {ln_fwd_kernel<GS_KERN_F32, false>,
                                           ln_fwd_kernel<GS_KERN_BF16, false>,
                                           ln_fwd_kernel<GS_KERN_F16, false>};
static const ln_fwd_fn residual_ln_fwd_kernels[] = {ln_fwd_kernel<GS_KERN_F32, true>,
                                                    ln_fwd_kernel<GS_KERN_BF16, true>,
                                                    ln_fwd_kernel<GS_KERN_F16, true>};
static const ln_bwd_fn ln_bwd_kernels[] = {ln_bwd_kernel<GS_KERN_F32>, ln_bwd_kernel<GS_KERN_BF16>,
                                           ln_bwd_kernel<GS_KERN_F16>};

/* The vectorised backward for these arguments, or NULL where it does not apply (C not a
 * multiple of 16 bytes or past LN_VEC_MAX groups a lane, a tensor not 16-byte aligned). */
static ln_bwd_fn ln_bwd_vec_for(enum gs_kern_dtype dt, int C, const void *dinp, const void *dout,
                                const void *inp, const void *weight)
{
    int e = dt == GS_KERN_F32 ? 4 : 8, nv = (C / e + 31) / 32;
    uintptr_t addr = (uintptr_t)dinp | (uintptr_t)dout | (uintptr_t)inp | (uintptr_t)weight;
    static const ln_bwd_fn k[3][LN_VEC_MAX] = {
        {ln_bwd_vec_kernel<GS_KERN_F32, 1>, ln_bwd_vec_kernel<GS_KERN_F32, 2>,
         ln_bwd_vec_kernel<GS_KERN_F32, 3>, ln_bwd_vec_kernel<GS_KERN_F32, 4>},
        {ln_bwd_vec_kernel<GS_KERN_BF16, 1>, ln_bwd_vec_kernel<GS_KERN_BF16, 2>,
         ln_bwd_vec_kernel<GS_KERN_BF16, 3>, ln_bwd_vec_kernel<GS_KERN_BF16, 4>},
        {ln_bwd_vec_kernel<GS_KERN_F16, 1>, ln_bwd_vec_kernel<GS_KERN_F16, 2>,
         ln_bwd_vec_kernel<GS_KERN_F16, 3>, ln_bwd_vec_kernel<GS_KERN_F16, 4>}};

    if (C % e != 0 || nv > LN_VEC_MAX || (addr & 15u) != 0)
        return NULL;
    return k[dt][nv - 1];
}

static size_t ln_chunks(int N)
{
    return ((size_t)N + LN_BWD_ROWS - 1) / LN_BWD_ROWS;
}

static size_t ln_bwd_ws_bytes(int N, int C)
{
    return 2 * ln_chunks(N) * (size_t)C * sizeof(float);
}

size_t gs_kern_gpu_reduce_ws_bytes(int B, int T, int C, int Vp, size_t n_grads)
{
    size_t bytes;

    (void)Vp; /* the classifier reduces within a block and needs no scratch */
    if (B <= 0 || T <= 0 || C <= 0 || (size_t)B * (size_t)T > INT_MAX)
        return 0;
    bytes = ln_bwd_ws_bytes(B * T, C);
    if (n_grads > 0 && bytes < GS_KERN_GPU_GRAD_PARTS_BYTES)
        bytes = GS_KERN_GPU_GRAD_PARTS_BYTES;
    return bytes;
}

static bool ln_shape_bad(const struct gs_kern_gpu *g, int N, int C, enum gs_kern_dtype dt)
{
    return g == NULL || N <= 0 || C <= 0 || gs_kern_dtype_size(dt) == 0;
}

static unsigned ln_fwd_blocks(int N)
{
    return (unsigned)((N + LN_WARPS - 1) / LN_WARPS);
}

extern "C" int gs_kern_gpu_layernorm_fwd(struct gs_kern_gpu *g, void *out, float *mean, float *rstd,
                                         const void *inp, const void *weight, const void *bias,
                                         int N, int C, enum gs_kern_dtype dt)
{
    if (ln_shape_bad(g, N, C, dt) || out == NULL || inp == NULL || weight == NULL || bias == NULL)
        return -EINVAL;
    ln_fwd_kernels[dt]<<<ln_fwd_blocks(N), LN_WARPS * 32, 0, g->stream>>>(
        out, mean, rstd, NULL, inp, NULL, weight, bias, N, C);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_residual_layernorm_fwd(struct gs_kern_gpu *g, void *res, void *out,
                                                  float *mean, float *rstd, const void *a,
                                                  const void *b, const void *weight,
                                                  const void *bias, int N, int C,
                                                  enum gs_kern_dtype dt)
{
    if (ln_shape_bad(g, N, C, dt) || res == NULL || out == NULL || a == NULL || b == NULL ||
        weight == NULL || bias == NULL)
        return -EINVAL;
    residual_ln_fwd_kernels[dt]<<<ln_fwd_blocks(N), LN_WARPS * 32, 0, g->stream>>>(
        out, mean, rstd, res, a, b, weight, bias, N, C);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_layernorm_bwd(struct gs_kern_gpu *g, void *dinp, float *dweight,
                                         float *dbias, const void *dout, const void *inp,
                                         const void *weight, const float *mean, const float *rstd,
                                         int N, int C, enum gs_kern_dtype dt)
{
    size_t chunks = ln_chunks(N);
    float *part_dw, *part_db;
    ln_bwd_fn vec;
    dim3 sum_threads(SUM_CHANNELS, SUM_LANES);
    int rc;

    if (ln_shape_bad(g, N, C, dt) || dinp == NULL || dweight == NULL || dbias == NULL ||
        dout == NULL || inp == NULL || weight == NULL || mean == NULL || rstd == NULL)
        return -EINVAL;
    if (g->ws == NULL || g->ws_bytes < ln_bwd_ws_bytes(N, C))
        return -ENOSPC;
    part_dw = (float *)g->ws;
    part_db = part_dw + chunks * (size_t)C;
    vec = ln_bwd_vec_for(dt, C, dinp, dout, inp, weight);
    if (vec != NULL)
        vec<<<(unsigned)((chunks + LN_VEC_WARPS - 1) / LN_VEC_WARPS), LN_VEC_WARPS * 32, 0,
              g->stream>>>(dinp, part_dw, part_db, dout, inp, weight, mean, rstd, N, C);
    else
        ln_bwd_kernels[dt]<<<(unsigned)chunks, LN_BWD_THREADS, 0, g->stream>>>(
            dinp, part_dw, part_db, dout, inp, weight, mean, rstd, N, C);
    rc = gs_kern_dev_check(cudaGetLastError());
    if (rc < 0)
        return rc;
    ln_param_sum_kernel<<<(unsigned)((C + SUM_CHANNELS - 1) / SUM_CHANNELS), sum_threads, 0,
                          g->stream>>>(dweight, dbias, part_dw, part_db, (int)chunks, C);
    return gs_kern_dev_check(cudaGetLastError());
}
