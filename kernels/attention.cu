/*
 * attention.cu: causal multi-head self-attention on the GPU (gs_kern_gpu_attention_fwd/bwd,
 * gpu.h), the flash-style twin of attention_cpu.c: the T x T matrix of scores never exists
 * in memory. Layouts are row-major, as on the CPU: qkv [B,T,3C] (q at channel 0, k at C, v at
 * 2C; head h owns channels h*hs .. h*hs+hs-1 of each, hs = C/NH), out and dout [B,T,C], lse
 * [B,NH,T] (float): the log-sum-exp of row t's scaled scores q.k/sqrt(hs), saved by the
 * forward pass so the backward pass can recompute any probability as exp(s - lse).
 *
 * How work is split. A block owns ROWS = 64 rows of one (batch, head): query rows in the
 * forward and dQ kernels, key rows in the dK/dV kernel. Each row belongs to a group of
 * G = D/16 adjacent threads of one warp (D = 32, 64 or 128: hs rounded up, channels past hs
 * held as zeros), and lane g of a group owns channels g, g+G, g+2G, ... (16 of them), so a
 * group reads G consecutive floats of a shared tile and the groups of a warp read the same
 * ones (a broadcast, no bank conflicts). A dot product is each lane's 16 products in order,
 * then a butterfly over the G lanes (__shfl_xor 1, 2, 4): every lane ends with the same bits,
 * since each step adds the same two values in either order. The other operand streams
 * through shared memory in tiles of 32 rows, converted to float once.
 *  - Forward: per (b, h, tile of 64 query rows), the key tiles from 0 to the block's last
 *    query: scores of the tile, masked above the diagonal, then the online softmax in fp32
 *    (running max m, running sum l, output rescaled by exp(m_old - m_new)), keys in
 *    increasing order. out = o / l rounded once to dt; lse = m + log(l).
 *  - Backward (FlashAttention-2): first D[b,h,t] = dout . out over the head's channels (a
 *    warp per row, fp32, into the workspace). Then one kernel per (b, h, tile of 64 keys)
 *    loops over the query tiles from the diagonal on, recomputing p = exp(s - lse) and
 *    ds = p (dout.v - D) / sqrt(hs), summing dV += p dout and dK += ds q in increasing query
 *    order; and one per (b, h, tile of 64 queries) loops over the key tiles up to the
 *    diagonal summing dQ += ds k in increasing key order. Each of dq, dk, dv is owned by one
 *    thread per element and stored once, so dqkv is overwritten whole and nothing adds
 *    across blocks.
 *
 * Determinism: no atomics; every sum (the dot products, the butterflies, the softmax, the
 * gradient accumulations, D) runs in an order fixed by the shapes. Heaviest query tiles are
 * scheduled first, which changes timing only.
 *
 * Precision: fp32 arithmetic throughout, storage values widened on load and rounded once
 * on store. Against the CPU (which saves the probabilities): the summation orders differ,
 * and D comes from the stored (rounded) out rather than from sum(p * dout.v), which for bf16
 * differs by bf16 rounding of out.
 *
 * SIMT fp32 with shared-memory tiles: the path for fp32, head sizes 65..128, GPUs before
 * sm_80 and unaligned tensors; bf16 and fp16 with head sizes up to 64 run on Tensor Cores
 * (attention_tc.cu) unless gs_kern_gpu_set_attention_simt says otherwise, after the same
 * D kernel. hs up to 128 (-EINVAL past it). Shapes prepared for cuDNN's fused attention
 * (gs_kern_gpu_attention_prepare) go there instead, before any of these.
 * Scratch: the backward pass takes B*NH*T floats of the workspace for D (-ENOSPC if short).
 */
#include <cerrno>
#include <cmath>

#include "kernels/gpu_internal.h"

#define CH 16   /* channels per thread */
#define ROWS 64 /* rows (queries or keys) per block */
#define TILE 32 /* rows of the streamed operand per shared-memory tile */
#define HS_MAX 128

struct att_args {
    const void *qkv, *dout, *out;
    void *o, *dqkv;
    float *lse;
    float *dvec; /* D[b,h,t], in the workspace */
    int T, C, NH, hs, dt;
    float scale;
};

size_t gs_kern_gpu_attention_ws_bytes(int B, int T, int NH)
{
    if (B <= 0 || T <= 0 || NH <= 0)
        return 0;
    return (size_t)B * (size_t)NH * (size_t)T * sizeof(float);
}

/* The sum of x over the G lanes of a group, the same bits in every lane. */
template <int G> static __device__ __forceinline__ float group_sum(float x)
{
#pragma unroll
    for (int off = 1; off < G; off <<= 1)
        x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

/* Element c of row t, part p (0 q, 1 k, 2 v) of head h in the [B,T,3C] tensor. */
static __device__ __forceinline__ size_t qkv_at(const struct att_args &a, int b, int t, int p,
                                                int h, int c)
{
    return ((size_t)b * a.T + t) * 3 * (size_t)a.C + (size_t)p * a.C + (size_t)h * a.hs + c;
}

/* Element c of row t of head h in a [B,T,C] tensor. */
static __device__ __forceinline__ size_t row_at(const struct att_args &a, int b, int t, int h,
                                                int c)
{
    return ((size_t)b * a.T + t) * (size_t)a.C + (size_t)h * a.hs + c;
}

/* This lane's channels of row t (zeros past hs or past T). */
template <int G>
static __device__ __forceinline__ void load_lane(float *x, const void *src, size_t at0, int lane,
                                                 int hs, bool valid, int dt)
{
#pragma unroll
    for (int s = 0; s < CH; s++) {
        int c = lane + G * s;

        x[s] = valid && c < hs ? gs_dload(src, at0 + c, dt) : 0.0f;
    }
}

template <int G>
static __device__ __forceinline__ void store_lane(void *dst, size_t at0, const float *x, float mul,
                                                  int lane, int hs, int dt)
{
#pragma unroll
    for (int s = 0; s < CH; s++) {
        int c = lane + G * s;

        if (c < hs)
            gs_dstore(dst, at0 + c, dt, x[s] * mul);
    }
}

/* Rows t0 .. t0+TILE-1 of part p of head h into a [TILE][D] float tile (zeros past T, hs). */
template <int D>
static __device__ __forceinline__ void load_tile(float (*tile)[D], const struct att_args &a,
                                                 const void *src, bool fused, int b, int t0, int p,
                                                 int h)
{
    for (int e = threadIdx.x; e < TILE * D; e += blockDim.x) {
        int j = e / D, c = e % D, t = t0 + j;
        bool ok = t < a.T && c < a.hs;
        size_t at = fused ? qkv_at(a, b, t, p, h, c) : row_at(a, b, t, h, c);

        tile[j][c] = ok ? gs_dload(src, at, a.dt) : 0.0f;
    }
}

/* Sum over this lane's channels of x[s] * row[lane + G*s], in order. */
template <int D>
static __device__ __forceinline__ float lane_dot(const float *x, const float *row, int lane)
{
    constexpr int G = D / CH;
    float sum = 0.0f;

#pragma unroll
    for (int s = 0; s < CH; s++)
        sum += x[s] * row[lane + G * s];
    return sum;
}

/* --- forward ------------------------------------------------------------------------------ */

/* One key tile of the online softmax for this thread's query row i. */
template <int D>
static __device__ __forceinline__ void fwd_tile(const struct att_args &a, const float (*ks)[D],
                                                const float (*vs)[D], const float *q, float *o,
                                                float &m, float &l, int i, int k0, int lane)
{
    constexpr int G = D / CH;
    float s[TILE], tmax = -INFINITY, mnew, alpha;

#pragma unroll
    for (int j = 0; j < TILE; j++) {
        float dot = group_sum<G>(lane_dot<D>(q, ks[j], lane));
        int t = k0 + j;

        s[j] = t <= i && t < a.T ? dot * a.scale : -INFINITY;
        tmax = fmaxf(tmax, s[j]);
    }
    /* key 0 is in the first tile and never masked, so m is finite from then on */
    mnew = fmaxf(m, tmax);
    alpha = expf(m - mnew);
    l *= alpha;
#pragma unroll
    for (int c = 0; c < CH; c++)
        o[c] *= alpha;
#pragma unroll
    for (int j = 0; j < TILE; j++) {
        float p = expf(s[j] - mnew);

        l += p;
#pragma unroll
        for (int c = 0; c < CH; c++)
            o[c] += p * vs[j][lane + G * c];
    }
    m = mnew;
}

template <int D> static __global__ void __launch_bounds__(ROWS *(D / CH)) att_fwd(att_args a)
{
    constexpr int G = D / CH;
    __shared__ float ks[TILE][D], vs[TILE][D];
    int b = blockIdx.x / a.NH, h = blockIdx.x % a.NH;
    int q0 = (gridDim.y - 1 - blockIdx.y) * ROWS; /* the longest rows first */
    int i = q0 + threadIdx.x / G, lane = threadIdx.x % G;
    int last = (q0 + ROWS < a.T ? q0 + ROWS : a.T) - 1;
    bool valid = i < a.T;
    float q[CH], o[CH] = {}, m = -INFINITY, l = 0.0f;

    load_lane<G>(q, a.qkv, qkv_at(a, b, i, 0, h, 0), lane, a.hs, valid, a.dt);
    for (int k0 = 0; k0 <= last; k0 += TILE) {
        __syncthreads(); /* the previous tile is used up */
        load_tile<D>(ks, a, a.qkv, true, b, k0, 1, h);
        load_tile<D>(vs, a, a.qkv, true, b, k0, 2, h);
        __syncthreads();
        fwd_tile<D>(a, ks, vs, q, o, m, l, i, k0, lane);
    }
    if (!valid)
        return;
    store_lane<G>(a.o, row_at(a, b, i, h, 0), o, 1.0f / l, lane, a.hs, a.dt);
    if (lane == 0)
        a.lse[((size_t)blockIdx.x) * a.T + i] = m + logf(l);
}

/* --- backward ----------------------------------------------------------------------------- */

/* D[b,h,t] = sum over the head's channels of dout * out: one warp per row, lane sums
 * channels lane, lane+32, ... in order, then a butterfly. */
static __global__ void att_dvec(att_args a, int rows)
{
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    int bh, t, b, h;
    float sum = 0.0f;

    if (r >= rows) /* whole warps leave together */
        return;
    bh = r / a.T, t = r % a.T, b = bh / a.NH, h = bh % a.NH;
    for (int c = lane; c < a.hs; c += 32)
        sum += gs_dload(a.dout, row_at(a, b, t, h, c), a.dt) *
               gs_dload(a.out, row_at(a, b, t, h, c), a.dt);
    sum = group_sum<32>(sum);
    if (lane == 0)
        a.dvec[r] = sum;
}

/* p and ds of query i against key j from their scaled-score dot product and dout.v. */
static __device__ __forceinline__ void probs(const struct att_args &a, bool ok, float dot, float dp,
                                             float lse, float dval, float &p, float &ds)
{
    p = ok ? expf(dot * a.scale - lse) : 0.0f;
    ds = ok ? p * (dp - dval) * a.scale : 0.0f;
}

/* dK and dV of this thread's key row j over one tile of queries q0 .. q0+TILE-1. */
template <int D>
static __device__ __forceinline__ void dkv_tile(const struct att_args &a, const float (*qs)[D],
                                                const float (*gs)[D], const float *lses,
                                                const float *dvals, const float *k, const float *v,
                                                float *dk, float *dv, int j, int q0, int lane)
{
    constexpr int G = D / CH;

#pragma unroll 4
    for (int r = 0; r < TILE; r++) {
        float dot = group_sum<G>(lane_dot<D>(k, qs[r], lane));
        float dp = group_sum<G>(lane_dot<D>(v, gs[r], lane));
        int i = q0 + r;
        float p, ds;

        probs(a, j < a.T && i >= j && i < a.T, dot, dp, lses[r], dvals[r], p, ds);
#pragma unroll
        for (int c = 0; c < CH; c++) {
            dv[c] += p * gs[r][lane + G * c];
            dk[c] += ds * qs[r][lane + G * c];
        }
    }
}

template <int D> static __global__ void __launch_bounds__(ROWS *(D / CH)) att_bwd_kv(att_args a)
{
    constexpr int G = D / CH;
    __shared__ float qs[TILE][D], gs[TILE][D], lses[TILE], dvals[TILE];
    int b = blockIdx.x / a.NH, h = blockIdx.x % a.NH;
    int k0 = blockIdx.y * ROWS; /* the longest (earliest) keys have the lowest index */
    int j = k0 + threadIdx.x / G, lane = threadIdx.x % G;
    bool valid = j < a.T;
    float k[CH], v[CH], dk[CH] = {}, dv[CH] = {};

    load_lane<G>(k, a.qkv, qkv_at(a, b, j, 1, h, 0), lane, a.hs, valid, a.dt);
    load_lane<G>(v, a.qkv, qkv_at(a, b, j, 2, h, 0), lane, a.hs, valid, a.dt);
    for (int q0 = k0 / TILE * TILE; q0 < a.T; q0 += TILE) {
        __syncthreads();
        load_tile<D>(qs, a, a.qkv, true, b, q0, 0, h);
        load_tile<D>(gs, a, a.dout, false, b, q0, 0, h);
        if (threadIdx.x < TILE) {
            int i = q0 + threadIdx.x;
            size_t at = (size_t)blockIdx.x * a.T + i;

            lses[threadIdx.x] = i < a.T ? a.lse[at] : 0.0f;
            dvals[threadIdx.x] = i < a.T ? a.dvec[at] : 0.0f;
        }
        __syncthreads();
        dkv_tile<D>(a, qs, gs, lses, dvals, k, v, dk, dv, j, q0, lane);
    }
    if (!valid)
        return;
    store_lane<G>(a.dqkv, qkv_at(a, b, j, 1, h, 0), dk, 1.0f, lane, a.hs, a.dt);
    store_lane<G>(a.dqkv, qkv_at(a, b, j, 2, h, 0), dv, 1.0f, lane, a.hs, a.dt);
}

/* dQ of this thread's query row i over one tile of keys k0 .. k0+TILE-1. */
template <int D>
static __device__ __forceinline__ void
dq_tile(const struct att_args &a, const float (*ks)[D], const float (*vs)[D], const float *q,
        const float *g, float *dq, float lse, float dval, int i, int k0, int lane)
{
    constexpr int G = D / CH;

#pragma unroll 4
    for (int j = 0; j < TILE; j++) {
        float dot = group_sum<G>(lane_dot<D>(q, ks[j], lane));
        float dp = group_sum<G>(lane_dot<D>(g, vs[j], lane));
        int t = k0 + j;
        float p, ds;

        probs(a, i < a.T && t <= i, dot, dp, lse, dval, p, ds);
#pragma unroll
        for (int c = 0; c < CH; c++)
            dq[c] += ds * ks[j][lane + G * c];
    }
}

template <int D> static __global__ void __launch_bounds__(ROWS *(D / CH)) att_bwd_q(att_args a)
{
    constexpr int G = D / CH;
    __shared__ float ks[TILE][D], vs[TILE][D];
    int b = blockIdx.x / a.NH, h = blockIdx.x % a.NH;
    int q0 = (gridDim.y - 1 - blockIdx.y) * ROWS;
    int i = q0 + threadIdx.x / G, lane = threadIdx.x % G;
    int last = (q0 + ROWS < a.T ? q0 + ROWS : a.T) - 1;
    bool valid = i < a.T;
    size_t at = (size_t)blockIdx.x * a.T + i;
    float q[CH], g[CH], dq[CH] = {};
    float lse = valid ? a.lse[at] : 0.0f, dval = valid ? a.dvec[at] : 0.0f;

    load_lane<G>(q, a.qkv, qkv_at(a, b, i, 0, h, 0), lane, a.hs, valid, a.dt);
    load_lane<G>(g, a.dout, row_at(a, b, i, h, 0), lane, a.hs, valid, a.dt);
    for (int k0 = 0; k0 <= last; k0 += TILE) {
        __syncthreads();
        load_tile<D>(ks, a, a.qkv, true, b, k0, 1, h);
        load_tile<D>(vs, a, a.qkv, true, b, k0, 2, h);
        __syncthreads();
        dq_tile<D>(a, ks, vs, q, g, dq, lse, dval, i, k0, lane);
    }
    if (valid)
        store_lane<G>(a.dqkv, qkv_at(a, b, i, 0, h, 0), dq, 1.0f, lane, a.hs, a.dt);
}

/* --- host side ---------------------------------------------------------------------------- */

static bool args_bad(int B, int T, int C, int NH, enum gs_kern_dtype dt)
{
    if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0 || C / NH > HS_MAX)
        return true;
    return dt != GS_KERN_F32 && dt != GS_KERN_BF16 && dt != GS_KERN_F16;
}

static struct att_args make_args(int T, int C, int NH, enum gs_kern_dtype dt)
{
    struct att_args a = {};

    a.T = T, a.C = C, a.NH = NH, a.hs = C / NH, a.dt = (int)dt;
    a.scale = 1.0f / sqrtf((float)a.hs);
    return a;
}

enum pass { PASS_FWD, PASS_BWD_KV, PASS_BWD_Q };

template <int D>
static void launch(enum pass pass, const struct att_args &a, dim3 grid, cudaStream_t stream)
{
    unsigned threads = ROWS * (D / CH);

    if (pass == PASS_FWD)
        att_fwd<D><<<grid, threads, 0, stream>>>(a);
    else if (pass == PASS_BWD_KV)
        att_bwd_kv<D><<<grid, threads, 0, stream>>>(a);
    else
        att_bwd_q<D><<<grid, threads, 0, stream>>>(a);
}

/* One pass over all (b, h) and row tiles, instantiated for hs rounded up to 32, 64 or 128. */
static int run(struct gs_kern_gpu *g, enum pass pass, const struct att_args &a, int B)
{
    dim3 grid((unsigned)(B * a.NH), (unsigned)((a.T + ROWS - 1) / ROWS));

    if (a.hs <= 32)
        launch<32>(pass, a, grid, g->stream);
    else if (a.hs <= 64)
        launch<64>(pass, a, grid, g->stream);
    else
        launch<128>(pass, a, grid, g->stream);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_attention_fwd(struct gs_kern_gpu *g, void *out, float *lse,
                                         const void *qkv, int B, int T, int C, int NH,
                                         enum gs_kern_dtype dt)
{
    struct att_args a;
    const void *ptrs[] = {out, qkv};

    if (g == NULL || out == NULL || lse == NULL || qkv == NULL || args_bad(B, T, C, NH, dt))
        return -EINVAL;
    if ((T + ROWS - 1) / ROWS > 65535)
        return -EINVAL;
    if (gs_kern_gpu_cudnn_takes(g, B, T, C, NH, dt, ptrs, 2))
        return gs_kern_gpu_cudnn_fwd(g, out, lse, qkv, B, T, C, NH, dt);
    if (gs_kern_gpu_attention_tc_takes(g, C, NH, dt, ptrs, 2))
        return gs_kern_gpu_attention_tc_fwd(g, out, lse, qkv, B, T, C, NH, dt);
    a = make_args(T, C, NH, dt);
    a.qkv = qkv, a.o = out, a.lse = lse;
    return run(g, PASS_FWD, a, B);
}

extern "C" int gs_kern_gpu_attention_bwd(struct gs_kern_gpu *g, void *dqkv, const void *dout,
                                         const void *out, const float *lse, const void *qkv, int B,
                                         int T, int C, int NH, enum gs_kern_dtype dt)
{
    struct att_args a;
    int rows = B * NH * T, rc;
    const void *ptrs[] = {dqkv, dout, out, qkv};

    if (g == NULL || dqkv == NULL || dout == NULL || out == NULL || lse == NULL || qkv == NULL ||
        args_bad(B, T, C, NH, dt) || (T + ROWS - 1) / ROWS > 65535)
        return -EINVAL;
    if (gs_kern_gpu_cudnn_takes(g, B, T, C, NH, dt, ptrs, 4))
        return gs_kern_gpu_cudnn_bwd(g, dqkv, dout, out, lse, qkv, B, T, C, NH, dt);
    if (g->ws == NULL || g->ws_bytes < gs_kern_gpu_attention_ws_bytes(B, T, NH))
        return -ENOSPC;
    a = make_args(T, C, NH, dt);
    a.qkv = qkv, a.dout = dout, a.out = out, a.dqkv = dqkv;
    a.lse = (float *)lse, a.dvec = (float *)g->ws;
    att_dvec<<<(unsigned)((rows + 7) / 8), 256, 0, g->stream>>>(a, rows);
    rc = gs_kern_dev_check(cudaGetLastError());
    if (rc == 0 && gs_kern_gpu_attention_tc_takes(g, C, NH, dt, ptrs, 4))
        return gs_kern_gpu_attention_tc_bwd(g, dqkv, dout, lse, a.dvec, qkv, B, T, C, NH, dt);
    if (rc == 0)
        rc = run(g, PASS_BWD_KV, a, B);
    if (rc == 0)
        rc = run(g, PASS_BWD_Q, a, B);
    return rc;
}
