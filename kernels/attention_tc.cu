/*
 * attention_tc.cu: causal self-attention on Tensor Cores for bf16 and fp16, the fast path
 * behind gs_kern_gpu_attention_fwd/bwd (attention.cu decides, gpu_internal.h): the same
 * layouts, the same saved log-sum-exp and the same D = dout . out scratch as the SIMT
 * kernels there, which stay the path for fp32, head sizes past 64, GPUs before sm_80 and
 * tensors not 16-byte aligned.
 *
 * The products run as mma.sync m16n8k16 (16-bit inputs, fp32 accumulation). A block is four
 * warps and owns 64 rows of one (batch, head); each warp owns 16 of them and keeps their
 * operand fragments in registers for the whole kernel. The other operands stream through
 * shared memory in tiles of 64 rows ([row][channel], rows padded by 8 halves so fragment
 * reads have no bank conflicts), two buffers of each: cp.async copies tile i+1 while tile i
 * is multiplied. ldmatrix reads the B fragments, transposing on the way where a product
 * needs the tile's rows as its k dimension (P V, dS K, P^T dO, dS^T Q).
 *  - Forward (FlashAttention-2): S = Q K^T of the warp's 16 queries against 64 keys (fp32),
 *    masked above the diagonal, online softmax in base 2 (running max m, running sum l,
 *    the output rescaled by 2^(m_old - m_new)), then P rounded to the storage dtype and
 *    O += P V. out = O / l, rounded once; lse = m ln 2 + ln l.
 *  - dK, dV: a block per 64 keys, over the query tiles from the diagonal on: S^T = K Q^T and
 *    dP^T = V dO^T, P^T = 2^(S^T log2e / sqrt(hs) - lse log2e), dS^T = P^T (dP^T - D) / sqrt(hs),
 *    then dV += P^T dO and dK += dS^T Q with P and dS rounded to the storage dtype.
 *  - dQ: a block per 64 queries over the key tiles up to the diagonal, recomputing P and dS
 *    the same way, dQ += dS K. Two kernels instead of FlashAttention-2's atomic dQ: every
 *    element is summed by one thread in a fixed order and stored once, so a run repeats bit
 *    for bit, like the SIMT kernels.
 *
 * Precision: against the SIMT path (fp32 throughout), P and dS are rounded to 16 bits
 * before their products, as FlashAttention does; the tolerances of tests/kernels/
 * test_gpu_gemm.c hold for both paths.
 *
 * Built with GS_KERN_EMULATE (tests/kernels/test_tc_emu.cpp), the primitives (mma, ldmatrix,
 * cp.async) call the includer's CPU emulation instead of PTX and the host side is left out,
 * so the kernels' code is tested on machines without a GPU.
 */
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/gpu_internal.h"

#define TC_ROWS 64 /* rows a block owns, 16 per warp */
#define TC_TILE 64 /* rows of a streamed tile */
#define TC_PAD 8   /* halves of padding per shared-memory row */
#define TC_THREADS 128
#define LOG2E 1.4426950408889634f

struct tc_args {
    const uint16_t *qkv, *dout;
    uint16_t *o, *dqkv;
    const float *lse_in;
    float *lse;
    const float *dvec;
    int T, C, NH, hs;
    float scale, scale2; /* 1/sqrt(hs), and times log2(e) */
};

/* --- fragments ---------------------------------------------------------------------------- */

template <int DT> static __device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
    uint32_t u;

    if (DT == GS_KERN_BF16) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);

        memcpy(&u, &v, sizeof(u));
    } else {
        __half2 v = __floats2half2_rn(lo, hi);

        memcpy(&u, &v, sizeof(u));
    }
    return u;
}

/* c += a . b for one 16x8x16 product: a 16x16 (rows x k), b 16x8 (k x n), c 16x8 fp32. */
template <int DT>
static __device__ __forceinline__ void mma(float *c, const uint32_t *a, const uint32_t *b)
{
#if defined(GS_KERN_EMULATE)
    gs_emu_mma_16816(DT == GS_KERN_BF16, c, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (DT == GS_KERN_BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap(); /* the host never launches these below sm_80 */
#endif
}

/* ldmatrix .x4: four 8 x 8 matrices of 16-bit values, lane l giving the address of row l % 8
 * of matrix l / 8 (16 bytes, 16-byte aligned); r[m] gets matrix m in the mma fragment
 * layout (lane (g, t) = (l / 4, l % 4) holds row g, columns 2t and 2t+1) or, with TRANS, its
 * transpose (rows 2t and 2t+1 of column g). */
template <bool TRANS> static __device__ __forceinline__ void ldsm4(uint32_t *r, const uint16_t *p)
{
#if defined(GS_KERN_EMULATE)
    gs_emu_ldmatrix_x4(r, p, TRANS);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned s = (unsigned)__cvta_generic_to_shared(p);

    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(s));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(s));
#else
    __trap();
#endif
}

/* cp.async of `bytes` (16 or 4) from global src to shared dst, zero-filled when !ok (src is
 * then not read, but stays a valid address). It lands once the thread's group is waited for
 * (cp_wait) and, for the other threads, after the barrier that follows. */
template <int BYTES>
static __device__ __forceinline__ void cp_async(void *dst, const void *src, bool ok)
{
#if defined(GS_KERN_EMULATE)
    gs_emu_cp_async(dst, src, BYTES, ok ? BYTES : 0);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);

    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src),
                     "r"(ok ? 16 : 0)
                     : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src),
                     "r"(ok ? 4 : 0)
                     : "memory");
#else
    __trap();
#endif
}

/* Closes the thread's current group of copies; cp_wait<N> waits until at most the N newest
 * groups are still in flight. */
static __device__ __forceinline__ void cp_commit(void)
{
#if defined(GS_KERN_EMULATE)
    gs_emu_cp_async_commit();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N> static __device__ __forceinline__ void cp_wait(void)
{
#if defined(GS_KERN_EMULATE)
    gs_emu_cp_async_wait(N);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* The 32-bit word (two halves) at column k of row r of a padded tile. */
template <int LD>
static __device__ __forceinline__ uint32_t word(const uint16_t *tile, int r, int k)
{
    return *(const uint32_t *)(tile + r * LD + k);
}

/* The A fragment of rows r0..r0+15, k columns k0..k0+15 of a [rows][LD] tile: lane (g, t),
 * g = lane / 4, t = lane % 4, holds rows g and g+8 at columns 2t, 2t+1 and 2t+8, 2t+9. */
template <int LD>
static __device__ __forceinline__ void frag_a(uint32_t *a, const uint16_t *tile, int r0, int k0)
{
    int lane = (int)threadIdx.x % 32, g = lane / 4, t = lane % 4;

    a[0] = word<LD>(tile, r0 + g, k0 + 2 * t);
    a[1] = word<LD>(tile, r0 + g + 8, k0 + 2 * t);
    a[2] = word<LD>(tile, r0 + g, k0 + 2 * t + 8);
    a[3] = word<LD>(tile, r0 + g + 8, k0 + 2 * t + 8);
}

/* The B fragments (k x n = 16 x 8: lane (g, t) holds column g at k rows 2t, 2t+1 and 2t+8,
 * 2t+9) of two n-tiles, columns n0..n0+7 in b[0..1] and n0+8..n0+15 in b[2..3], at k rows
 * k0..k0+15, in one ldmatrix. frag_b2 reads a tile stored [n][k] (K for Q K^T), frag_bt2 one
 * stored [k][n] (V for P V: keys are both its rows and the product's k), transposed by
 * ldmatrix on the way, so no tile is ever stored transposed. Rows LD = D + 8 halves apart
 * put the 8 rows of each matrix in 8 distinct groups of 4 banks: no conflicts. */
template <int LD>
static __device__ __forceinline__ void frag_b2(uint32_t *b, const uint16_t *tile, int n0, int k0)
{
    int lane = (int)threadIdx.x % 32, m = lane / 8, i = lane % 8;

    ldsm4<false>(b, tile + (n0 + i + (m >> 1) * 8) * LD + k0 + (m & 1) * 8);
}

template <int LD>
static __device__ __forceinline__ void frag_bt2(uint32_t *b, const uint16_t *tile, int n0, int k0)
{
    int lane = (int)threadIdx.x % 32, m = lane / 8, i = lane % 8;

    ldsm4<true>(b, tile + (k0 + i + (m & 1) * 8) * LD + n0 + (m >> 1) * 8);
}

/* An accumulator pair of n-tiles 2j and 2j+1 (16 x 16 fp32) as the A fragment of the next
 * product, rounded to the storage dtype: the accumulator layout (rows g, g+8; columns 2t,
 * 2t+1 of each n-tile) is the A layout's. */
template <int DT>
static __device__ __forceinline__ void acc_to_a(uint32_t *a, const float *lo, const float *hi)
{
    a[0] = pack2<DT>(lo[0], lo[1]);
    a[1] = pack2<DT>(lo[2], lo[3]);
    a[2] = pack2<DT>(hi[0], hi[1]);
    a[3] = pack2<DT>(hi[2], hi[3]);
}

/* acc += x . B for a warp's 16 rows: x the fp32 accumulators of a 16 x 64 product (rounded
 * to the storage dtype as the A operand), B the [64][D] tile (rows LD apart) whose rows are
 * the product's k: P V in the forward pass, dS K in dQ's. */
template <int DT, int D>
static __device__ __forceinline__ void acc_times_tile(float (*acc)[4], const float (*x)[4],
                                                      const uint16_t *tile)
{
#pragma unroll
    for (int j = 0; j < TC_TILE / 16; j++) {
        uint32_t xa[4];

        acc_to_a<DT>(xa, x[2 * j], x[2 * j + 1]);
#pragma unroll
        for (int n = 0; n < D / 8; n += 2) {
            uint32_t b[4];

            frag_bt2<D + TC_PAD>(b, tile, n * 8, j * 16);
            mma<DT>(acc[n], xa, b);
            mma<DT>(acc[n + 1], xa, b + 2);
        }
    }
}

/* Starts copying rows t0..t0+63 of one head's channels into tile [64][D+PAD]: zeros past T
 * and past hs. src points at row 0, channel 0 of the head; rows are `stride` elements apart.
 * 16-byte copies (hs % 8 == 0 and 16-byte aligned tensors: the caller checked). */
template <int D>
static __device__ __forceinline__ void load_tile(uint16_t *tile, const uint16_t *src, size_t stride,
                                                 int t0, int T, int hs)
{
    constexpr int LD = D + TC_PAD, CHUNKS = D / 8;

#pragma unroll
    for (int e = (int)threadIdx.x; e < TC_TILE * CHUNKS; e += TC_THREADS) {
        int r = e / CHUNKS, c = (e % CHUNKS) * 8, t = t0 + r;
        bool ok = t < T && c < hs;

        cp_async<16>(tile + r * LD + c, ok ? src + (size_t)t * stride + c : src, ok);
    }
}

/* The max (OP 0) or sum (OP 1) of x over the 4 lanes that share a row, on every lane. */
template <int OP> static __device__ __forceinline__ float quad(float x)
{
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
        float y = __shfl_xor_sync(0xffffffffu, x, off);

        x = OP == 0 ? fmaxf(x, y) : x + y;
    }
    return x;
}

/* Stores a warp's 16 x D fp32 accumulators, times mul per row (mul0 rows g, mul1 rows g+8),
 * rounded once, into rows r0.. of a row-major tensor: dst points at row 0, channel 0 of the
 * head, rows `stride` apart. Rows past T and channels past hs are skipped. */
template <int DT, int D>
static __device__ __forceinline__ void store_acc(uint16_t *dst, size_t stride,
                                                 const float (*acc)[4], int r0, float mul0,
                                                 float mul1, int T, int hs)
{
    int lane = (int)threadIdx.x % 32, g = lane / 4, t = lane % 4;

#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        int c = n * 8 + 2 * t;

        if (c >= hs)
            continue;
        if (r0 + g < T)
            *(uint32_t *)(dst + (size_t)(r0 + g) * stride + c) =
                pack2<DT>(acc[n][0] * mul0, acc[n][1] * mul0);
        if (r0 + g + 8 < T)
            *(uint32_t *)(dst + (size_t)(r0 + g + 8) * stride + c) =
                pack2<DT>(acc[n][2] * mul1, acc[n][3] * mul1);
    }
}

/* --- forward ------------------------------------------------------------------------------ */

/* Streams K and V through two buffers: tile i+1 is copied while tile i is multiplied. */
template <int DT, int D> static __global__ void __launch_bounds__(TC_THREADS) att_tc_fwd(tc_args a)
{
    constexpr int LD = D + TC_PAD, KC = D / 16, NT = TC_TILE / 8, TS = TC_TILE * LD;
    __shared__ __align__(16) uint16_t ks[2 * TS], vs[2 * TS];
    int bh = (int)blockIdx.x, b = bh / a.NH, h = bh % a.NH;
    int q0 = ((int)gridDim.y - 1 - (int)blockIdx.y) * TC_ROWS; /* the longest rows first */
    int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int r0 = q0 + warp * 16 + g, r1 = r0 + 8; /* this lane's two rows */
    int last = (q0 + TC_ROWS < a.T ? q0 + TC_ROWS : a.T) - 1;
    size_t stride = 3 * (size_t)a.C;
    const uint16_t *base = a.qkv + (size_t)b * a.T * stride + (size_t)h * a.hs;
    uint32_t qa[KC][4];
    float o[D / 8][4] = {}, m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    load_tile<D>(ks + TS, base, stride, q0, a.T, a.hs); /* Q through the second K buffer */
    cp_commit();
    load_tile<D>(ks, base + a.C, stride, 0, a.T, a.hs);
    load_tile<D>(vs, base + 2 * (size_t)a.C, stride, 0, a.T, a.hs);
    cp_commit();
    cp_wait<1>(); /* Q */
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < KC; kc++)
        frag_a<LD>(qa[kc], ks + TS, warp * 16, kc * 16);
    for (int k0 = 0, buf = 0; k0 <= last; k0 += TC_TILE, buf ^= 1) {
        const uint16_t *kt = ks + buf * TS, *vt = vs + buf * TS;
        float s[NT][4] = {};
        float mx0 = -INFINITY, mx1 = -INFINITY, al0, al1;
        bool full = k0 + TC_TILE - 1 <= q0 + warp * 16 && k0 + TC_TILE <= a.T;

        cp_wait<0>();
        __syncthreads(); /* this tile is in; the other buffer (last tile, or Q) is used up */
        if (k0 + TC_TILE <= last) {
            load_tile<D>(ks + (buf ^ 1) * TS, base + a.C, stride, k0 + TC_TILE, a.T, a.hs);
            load_tile<D>(vs + (buf ^ 1) * TS, base + 2 * (size_t)a.C, stride, k0 + TC_TILE, a.T,
                         a.hs);
        }
        cp_commit();
#pragma unroll
        for (int n = 0; n < NT; n += 2)
#pragma unroll
            for (int kc = 0; kc < KC; kc++) {
                uint32_t kb[4];

                frag_b2<LD>(kb, kt, n * 8, kc * 16);
                mma<DT>(s[n], qa[kc], kb);
                mma<DT>(s[n + 1], qa[kc], kb + 2);
            }
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = k0 + n * 8 + 2 * t4 + (e & 1), row = e < 2 ? r0 : r1;
                bool ok = full || (key <= row && key < a.T);

                s[n][e] = ok ? s[n][e] * a.scale2 : -INFINITY;
                if (e < 2)
                    mx0 = fmaxf(mx0, s[n][e]);
                else
                    mx1 = fmaxf(mx1, s[n][e]);
            }
        /* every row sees key k0 <= row (tiles start at or before the block's first row) */
        mx0 = fmaxf(m0, quad<0>(mx0));
        mx1 = fmaxf(m1, quad<0>(mx1));
        al0 = exp2f(m0 - mx0), al1 = exp2f(m1 - mx1);
        m0 = mx0, m1 = mx1;
        l0 *= al0, l1 *= al1;
#pragma unroll
        for (int n = 0; n < D / 8; n++)
            o[n][0] *= al0, o[n][1] *= al0, o[n][2] *= al1, o[n][3] *= al1;
#pragma unroll
        for (int n = 0; n < NT; n++) {
            s[n][0] = exp2f(s[n][0] - m0), s[n][1] = exp2f(s[n][1] - m0);
            s[n][2] = exp2f(s[n][2] - m1), s[n][3] = exp2f(s[n][3] - m1);
            l0 += s[n][0] + s[n][1], l1 += s[n][2] + s[n][3];
        }
        acc_times_tile<DT, D>(o, s, vt);
    }
    l0 = quad<1>(l0), l1 = quad<1>(l1);
    store_acc<DT, D>(a.o + (size_t)b * a.T * a.C + (size_t)h * a.hs, a.C, o, q0 + warp * 16,
                     1.0f / l0, 1.0f / l1, a.T, a.hs);
    if (t4 == 0) {
        float *lse = a.lse + (size_t)bh * a.T;

        if (r0 < a.T)
            lse[r0] = m0 / LOG2E + logf(l0);
        if (r1 < a.T)
            lse[r1] = m1 / LOG2E + logf(l1);
    }
}

/* --- backward ----------------------------------------------------------------------------- */

/* P and dS of one accumulator element: s the raw score, dp = dout . v, lse2 and dv the
 * query's saved lse (times log2 e) and D. */
static __device__ __forceinline__ void p_ds(const tc_args &a, bool ok, float s, float dp,
                                            float lse2, float dv, float &p, float &ds)
{
    p = ok ? exp2f(s * a.scale2 - lse2) : 0.0f;
    ds = p * (dp - dv) * a.scale;
}

/* s += A1 . B1 and dp += A2 . B2 for a warp's 16 rows against a 64-row tile, the A operands
 * in registers ([D/16] fragments), the B operands rows of t1 and t2 ([64][D+PAD]): the
 * scores and dout . v of both backward kernels. */
template <int DT, int D>
static __device__ __forceinline__ void scores_and_dp(float (*s)[4], float (*dp)[4],
                                                     const uint32_t (*a1)[4], const uint16_t *t1,
                                                     const uint32_t (*a2)[4], const uint16_t *t2)
{
    constexpr int LD = D + TC_PAD;

#pragma unroll
    for (int n = 0; n < TC_TILE / 8; n += 2)
#pragma unroll
        for (int kc = 0; kc < D / 16; kc++) {
            uint32_t b1[4], b2[4];

            frag_b2<LD>(b1, t1, n * 8, kc * 16);
            mma<DT>(s[n], a1[kc], b1);
            mma<DT>(s[n + 1], a1[kc], b1 + 2);
            frag_b2<LD>(b2, t2, n * 8, kc * 16);
            mma<DT>(dp[n], a2[kc], b2);
            mma<DT>(dp[n + 1], a2[kc], b2 + 2);
        }
}

/* Starts copying the saved lse and D of queries q0..q0+63 of one (batch, head) into l and d
 * (zeros past T): half the block each, 4 bytes a copy. */
static __device__ __forceinline__ void load_row_stats(float *l, float *d, const float *lse,
                                                      const float *dvec, int q0, int T)
{
    int i = (int)threadIdx.x % TC_TILE, q = q0 + i;
    bool ok = q < T;

    static_assert(TC_THREADS == 2 * TC_TILE, "one thread per query for each of lse and D");
    if ((int)threadIdx.x < TC_TILE)
        cp_async<4>(l + i, ok ? lse + q : lse, ok);
    else
        cp_async<4>(d + i, ok ? dvec + q : dvec, ok);
}

/* A block per 64 keys streams Q, dO and their rows' lse and D through two buffers. */
template <int DT, int D>
static __global__ void __launch_bounds__(TC_THREADS) att_tc_bwd_kv(tc_args a)
{
    constexpr int LD = D + TC_PAD, KC = D / 16, NT = TC_TILE / 8, TS = TC_TILE * LD;
    __shared__ __align__(16) uint16_t qs[2 * TS], gs[2 * TS];
    __shared__ __align__(16) float lses[2 * TC_TILE], dvs[2 * TC_TILE];
    int bh = (int)blockIdx.x, b = bh / a.NH, h = bh % a.NH;
    int k0 = (int)blockIdx.y * TC_ROWS; /* the earliest keys, the most work, first */
    int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int j0 = k0 + warp * 16 + g, j1 = j0 + 8; /* this lane's two keys */
    size_t stride = 3 * (size_t)a.C;
    const uint16_t *base = a.qkv + (size_t)b * a.T * stride + (size_t)h * a.hs;
    const uint16_t *gbase = a.dout + (size_t)b * a.T * a.C + (size_t)h * a.hs;
    const float *lse = a.lse_in + (size_t)bh * a.T, *dvec = a.dvec + (size_t)bh * a.T;
    uint32_t ka[KC][4], va[KC][4];
    float dk[D / 8][4] = {}, dv[D / 8][4] = {};

    load_tile<D>(qs + TS, base + a.C, stride, k0, a.T, a.hs); /* K and V through the second */
    load_tile<D>(gs + TS, base + 2 * (size_t)a.C, stride, k0, a.T, a.hs); /* buffers */
    cp_commit();
    load_tile<D>(qs, base, stride, k0, a.T, a.hs);
    load_tile<D>(gs, gbase, a.C, k0, a.T, a.hs);
    load_row_stats(lses, dvs, lse, dvec, k0, a.T);
    cp_commit();
    cp_wait<1>(); /* K and V */
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < KC; kc++) {
        frag_a<LD>(ka[kc], qs + TS, warp * 16, kc * 16);
        frag_a<LD>(va[kc], gs + TS, warp * 16, kc * 16);
    }
    for (int q0 = k0, buf = 0; q0 < a.T; q0 += TC_TILE, buf ^= 1) {
        const uint16_t *qt = qs + buf * TS, *gt = gs + buf * TS;
        const float *lt = lses + buf * TC_TILE, *dt = dvs + buf * TC_TILE;
        float s[NT][4] = {}, dp[NT][4] = {};
        bool full = q0 >= k0 + TC_ROWS - 1 && q0 + TC_TILE <= a.T && j1 < a.T;

        cp_wait<0>();
        __syncthreads(); /* this tile is in; the other buffers are used up */
        if (q0 + TC_TILE < a.T) {
            int nb = buf ^ 1, q1 = q0 + TC_TILE;

            load_tile<D>(qs + nb * TS, base, stride, q1, a.T, a.hs);
            load_tile<D>(gs + nb * TS, gbase, a.C, q1, a.T, a.hs);
            load_row_stats(lses + nb * TC_TILE, dvs + nb * TC_TILE, lse, dvec, q1, a.T);
        }
        cp_commit();
        scores_and_dp<DT, D>(s, dp, ka, qt, va, gt);
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int col = n * 8 + 2 * t4 + (e & 1), i = q0 + col, key = e < 2 ? j0 : j1;
                bool ok = full || (i >= key && i < a.T && key < a.T);
                float p, ds;

                p_ds(a, ok, s[n][e], dp[n][e], lt[col] * LOG2E, dt[col], p, ds);
                s[n][e] = p, dp[n][e] = ds;
            }
#pragma unroll
        for (int j = 0; j < TC_TILE / 16; j++) {
            uint32_t pa[4], dsa[4];

            acc_to_a<DT>(pa, s[2 * j], s[2 * j + 1]);
            acc_to_a<DT>(dsa, dp[2 * j], dp[2 * j + 1]);
#pragma unroll
            for (int n = 0; n < D / 8; n += 2) {
                uint32_t gb[4], qb[4];

                frag_bt2<LD>(gb, gt, n * 8, j * 16);
                mma<DT>(dv[n], pa, gb);
                mma<DT>(dv[n + 1], pa, gb + 2);
                frag_bt2<LD>(qb, qt, n * 8, j * 16);
                mma<DT>(dk[n], dsa, qb);
                mma<DT>(dk[n + 1], dsa, qb + 2);
            }
        }
    }
    store_acc<DT, D>(a.dqkv + (size_t)b * a.T * stride + a.C + (size_t)h * a.hs, stride, dk,
                     k0 + warp * 16, 1.0f, 1.0f, a.T, a.hs);
    store_acc<DT, D>(a.dqkv + (size_t)b * a.T * stride + 2 * (size_t)a.C + (size_t)h * a.hs, stride,
                     dv, k0 + warp * 16, 1.0f, 1.0f, a.T, a.hs);
}

/* A block per 64 queries streams K and V through two buffers. */
template <int DT, int D>
static __global__ void __launch_bounds__(TC_THREADS) att_tc_bwd_q(tc_args a)
{
    constexpr int LD = D + TC_PAD, KC = D / 16, NT = TC_TILE / 8, TS = TC_TILE * LD;
    __shared__ __align__(16) uint16_t ks[2 * TS], vs[2 * TS];
    int bh = (int)blockIdx.x, b = bh / a.NH, h = bh % a.NH;
    int q0 = ((int)gridDim.y - 1 - (int)blockIdx.y) * TC_ROWS;
    int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int r0 = q0 + warp * 16 + g, r1 = r0 + 8;
    int last = (q0 + TC_ROWS < a.T ? q0 + TC_ROWS : a.T) - 1;
    size_t stride = 3 * (size_t)a.C;
    const uint16_t *base = a.qkv + (size_t)b * a.T * stride + (size_t)h * a.hs;
    const uint16_t *gbase = a.dout + (size_t)b * a.T * a.C + (size_t)h * a.hs;
    const float *lse = a.lse_in + (size_t)bh * a.T, *dvec = a.dvec + (size_t)bh * a.T;
    float lse0 = r0 < a.T ? lse[r0] * LOG2E : 0.0f, lse1 = r1 < a.T ? lse[r1] * LOG2E : 0.0f;
    float dv0 = r0 < a.T ? dvec[r0] : 0.0f, dv1 = r1 < a.T ? dvec[r1] : 0.0f;
    uint32_t qa[KC][4], ga[KC][4];
    float dq[D / 8][4] = {};

    load_tile<D>(ks + TS, base, stride, q0, a.T, a.hs); /* Q and dO through the second */
    load_tile<D>(vs + TS, gbase, a.C, q0, a.T, a.hs);   /* buffers */
    cp_commit();
    load_tile<D>(ks, base + a.C, stride, 0, a.T, a.hs);
    load_tile<D>(vs, base + 2 * (size_t)a.C, stride, 0, a.T, a.hs);
    cp_commit();
    cp_wait<1>(); /* Q and dO */
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < KC; kc++) {
        frag_a<LD>(qa[kc], ks + TS, warp * 16, kc * 16);
        frag_a<LD>(ga[kc], vs + TS, warp * 16, kc * 16);
    }
    for (int k0 = 0, buf = 0; k0 <= last; k0 += TC_TILE, buf ^= 1) {
        const uint16_t *kt = ks + buf * TS, *vt = vs + buf * TS;
        float s[NT][4] = {}, dp[NT][4] = {};
        bool full = k0 + TC_TILE - 1 <= q0 + warp * 16 && k0 + TC_TILE <= a.T && r1 < a.T;

        cp_wait<0>();
        __syncthreads(); /* this tile is in; the other buffer (last tile, or Q and dO) is used up */
        if (k0 + TC_TILE <= last) {
            load_tile<D>(ks + (buf ^ 1) * TS, base + a.C, stride, k0 + TC_TILE, a.T, a.hs);
            load_tile<D>(vs + (buf ^ 1) * TS, base + 2 * (size_t)a.C, stride, k0 + TC_TILE, a.T,
                         a.hs);
        }
        cp_commit();
        scores_and_dp<DT, D>(s, dp, qa, kt, ga, vt);
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = k0 + n * 8 + 2 * t4 + (e & 1), row = e < 2 ? r0 : r1;
                bool ok = full || (key <= row && row < a.T);
                float p, ds;

                p_ds(a, ok, s[n][e], dp[n][e], e < 2 ? lse0 : lse1, e < 2 ? dv0 : dv1, p, ds);
                dp[n][e] = ds;
            }
        acc_times_tile<DT, D>(dq, dp, kt);
    }
    store_acc<DT, D>(a.dqkv + (size_t)b * a.T * stride + (size_t)h * a.hs, stride, dq,
                     q0 + warp * 16, 1.0f, 1.0f, a.T, a.hs);
}

/* --- host side ---------------------------------------------------------------------------- */

static bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

bool gs_kern_gpu_attention_tc_takes(const struct gs_kern_gpu *g, int C, int NH,
                                    enum gs_kern_dtype dt, const void *const *ptrs, int nptrs)
{
    int hs = C / NH;

    if (g->att_simt || g->cc_major < 8 || (dt != GS_KERN_BF16 && dt != GS_KERN_F16))
        return false;
    if (hs > 64 || hs % 8 != 0 || C % 8 != 0)
        return false;
    for (int i = 0; i < nptrs; i++)
        if (!aligned16(ptrs[i]))
            return false;
    return true;
}

static tc_args tc_make(int T, int C, int NH)
{
    tc_args a = {};

    a.T = T, a.C = C, a.NH = NH, a.hs = C / NH;
    a.scale = 1.0f / sqrtf((float)a.hs);
    a.scale2 = a.scale * LOG2E;
    return a;
}

enum tc_pass { TC_FWD, TC_BWD_KV, TC_BWD_Q };

#ifndef GS_KERN_EMULATE /* tests/kernels/test_tc_emu.cpp launches the kernels itself */

template <int DT, int D>
static void tc_launch(enum tc_pass pass, const tc_args &a, dim3 grid, cudaStream_t s)
{
    if (pass == TC_FWD)
        att_tc_fwd<DT, D><<<grid, TC_THREADS, 0, s>>>(a);
    else if (pass == TC_BWD_KV)
        att_tc_bwd_kv<DT, D><<<grid, TC_THREADS, 0, s>>>(a);
    else
        att_tc_bwd_q<DT, D><<<grid, TC_THREADS, 0, s>>>(a);
}

static int tc_run(struct gs_kern_gpu *g, enum tc_pass pass, const tc_args &a, int B,
                  enum gs_kern_dtype dt)
{
    dim3 grid((unsigned)(B * a.NH), (unsigned)((a.T + TC_ROWS - 1) / TC_ROWS));

    if (dt == GS_KERN_BF16 && a.hs <= 32)
        tc_launch<GS_KERN_BF16, 32>(pass, a, grid, g->stream);
    else if (dt == GS_KERN_BF16)
        tc_launch<GS_KERN_BF16, 64>(pass, a, grid, g->stream);
    else if (a.hs <= 32)
        tc_launch<GS_KERN_F16, 32>(pass, a, grid, g->stream);
    else
        tc_launch<GS_KERN_F16, 64>(pass, a, grid, g->stream);
    return gs_kern_dev_check(cudaGetLastError());
}

int gs_kern_gpu_attention_tc_fwd(struct gs_kern_gpu *g, void *out, float *lse, const void *qkv,
                                 int B, int T, int C, int NH, enum gs_kern_dtype dt)
{
    tc_args a = tc_make(T, C, NH);

    a.qkv = (const uint16_t *)qkv, a.o = (uint16_t *)out, a.lse = lse;
    return tc_run(g, TC_FWD, a, B, dt);
}

int gs_kern_gpu_attention_tc_bwd(struct gs_kern_gpu *g, void *dqkv, const void *dout,
                                 const float *lse, const float *dvec, const void *qkv, int B, int T,
                                 int C, int NH, enum gs_kern_dtype dt)
{
    tc_args a = tc_make(T, C, NH);
    int rc;

    a.qkv = (const uint16_t *)qkv, a.dout = (const uint16_t *)dout, a.dqkv = (uint16_t *)dqkv;
    a.lse_in = lse, a.dvec = dvec;
    rc = tc_run(g, TC_BWD_KV, a, B, dt);
    if (rc == 0)
        rc = tc_run(g, TC_BWD_Q, a, B, dt);
    return rc;
}
#endif
