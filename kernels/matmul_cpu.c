/*
 * matmul_cpu.c: the CPU matmul behind the trainer's Linear layers, ~90% of a training step.
 *
 * All three products (forward, dinp, dW) go through one packed GEMM, C[M,N] = A[M,K] . B[K,N],
 * with A and B read through row and column strides so that transposed operands need no copy.
 * The output is cut into MC x NC tiles. A work unit (one NC-wide column block and a run of
 * row blocks) goes to an OpenMP thread, which packs that column block of B over the whole K
 * into NR-column panels once, then for each of its row blocks runs K in KC-deep steps,
 * packing the A block (MC x KC) into MR-row panels. Packing converts bf16/fp16 to float (on
 * the float paths), so the inner loop only ever sees contiguous, aligned floats and stays
 * FMA-bound; packing B once per unit rather than once per tile keeps its cost (it was ~45%
 * of the time) small. The microkernel keeps an MR x NR block of sums in vector registers
 * across a KC step and adds it into the tile's float accumulator; the tile is written out
 * (bias added, rounded once to the storage dtype, or added to a float gradient) after the
 * last step.
 *
 * bf16 on CPUs with AVX512-BF16 takes a second path: both operands are packed as bf16 k
 * pairs (no widening; an odd K is padded with a zero) and an 8 x 32 microkernel of
 * vdpbf16ps (_mm512_dpbf16_ps) multiplies each pair and adds both products into an fp32
 * accumulator, twice the flops per instruction of the float FMA. The same tiles, workspace
 * and write-out (rounded once to bf16 for activations, fp32 += for dW) serve both paths.
 *
 * Which path runs is picked once per call, in this order, taking the first the CPU has and
 * the cap allows: avx512bf16 (bf16 operands only), avx512 (MR 8, NR 32), avx2 (AVX2+FMA,
 * 6 x 16), generic (4 x 8). GSCHED_KERN_ISA=<one of those names> caps the choice, for tests
 * and benchmarks: =avx512 keeps bf16 on the float AVX-512 kernel (widened while packing),
 * where the 16-bit exactness tests hold; an unknown or empty value caps nothing.
 *
 * Determinism: on the float paths every output element is one chain of fused multiply-adds
 * over k = 0..K-1 in order, restarted from the accumulator at each KC boundary, whichever
 * thread computes the tile; on the bf16 path it is one chain of pair-steps (k, k+1) in the
 * same order. So the bits do not depend on the thread count. They do depend on the path:
 * AVX-512 and AVX2 agree bit for bit; generic (no FMA) rounds products separately; the bf16
 * dot product sums each pair before accumulating (and flushes denormals, as the instruction
 * does), so it differs from the float path on the same rounded inputs by float rounding.
 *
 * Workspace per thread: a packed A block (96 KiB), B packed over K for one column block
 * (K x 512 floats, with K the largest of N, C, OC: 4 MiB at N = 2048) and the tile
 * accumulator (192 KiB). NC = 512 halves the A packing per flop against 256 (packing was
 * a fifth of the time); the 512 KiB B block of one KC step still fits the 1 MiB L2. The bf16
 * path stores bf16 pairs in the same places and uses half of each piece but the tile.
 */
#include "kernels/ops.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_internal.h"

#if GS_KERN_HAVE_BF16_DOT
#include <immintrin.h>
#endif

#define MC 96  /* multiple of every MR */
#define NC 512 /* multiple of every NR */
#define KC 256

/* One operand: element (r, c) lives at p[r * rs + c * cs]. */
struct mat {
    const void *p;
    enum gs_kern_dtype dt;
    size_t rs, cs;
};

/* Where a finished tile goes: stored as round(sum + bias[col]) in dt, or added to float. */
struct dst {
    void *p;
    enum gs_kern_dtype dt;
    size_t ld;
    const void *bias; /* per column, in dt; NULL for none */
    bool accumulate;  /* float destination, +=  */
};

typedef void (*ukr_fn)(int kc, const float *ap, const float *bp, float *c, size_t ldc);

/* The instruction sets, widest first; GSCHED_KERN_ISA names one to cap the choice. */
enum isa { ISA_AVX512BF16, ISA_AVX512, ISA_AVX2, ISA_GENERIC };

struct ukr {
    int mr, nr;
    ukr_fn fn;     /* float microkernel; NULL on the bf16 dot-product path */
    bool bf16_dot; /* bf16 operands packed as k pairs, run by ukr_avx512bf16 */
};

/*
 * The microkernels, one per instruction set, generated from one body: NV vectors of VL
 * floats per row, MR rows. GCC vector extensions map a vector onto one register of the
 * target (zmm, ymm or xmm), and -ffp-contract=fast (set for this file) fuses a*b+c into an
 * FMA where the target has one.
 */
#define UKR_BODY(VT, VL, MR, NV)                                                                   \
    VT acc[MR][NV];                                                                                \
    for (int i = 0; i < MR; i++)                                                                   \
        for (int v = 0; v < NV; v++)                                                               \
            acc[i][v] = *(const VT *)(c + i * ldc + v * VL);                                       \
    for (int p = 0; p < kc; p++) {                                                                 \
        VT b[NV];                                                                                  \
        for (int v = 0; v < NV; v++)                                                               \
            b[v] = *(const VT *)(bp + (size_t)p * (VL * NV) + v * VL);                             \
        for (int i = 0; i < MR; i++) {                                                             \
            float a = ap[(size_t)p * MR + i];                                                      \
            for (int v = 0; v < NV; v++)                                                           \
                acc[i][v] += a * b[v];                                                             \
        }                                                                                          \
    }                                                                                              \
    for (int i = 0; i < MR; i++)                                                                   \
        for (int v = 0; v < NV; v++)                                                               \
            *(VT *)(c + i * ldc + v * VL) = acc[i][v];

typedef float v16sf __attribute__((vector_size(64)));
typedef float v8sf __attribute__((vector_size(32)));
typedef float v4sf __attribute__((vector_size(16)));

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f,avx2,fma"))) static void
ukr_avx512(int kc, const float *ap, const float *bp, float *c, size_t ldc)
{
    UKR_BODY(v16sf, 16, 8, 2)
}

__attribute__((target("avx2,fma"))) static void ukr_avx2(int kc, const float *ap, const float *bp,
                                                         float *c, size_t ldc)
{
    UKR_BODY(v8sf, 8, 6, 2)
}
#endif

static void ukr_generic(int kc, const float *ap, const float *bp, float *c, size_t ldc)
{
    UKR_BODY(v4sf, 4, 4, 2)
}

/*
 * The bf16 dot-product microkernel (AVX512-BF16). Both operands stay bf16 in the packed
 * panels, as k pairs: lane j of a B vector holds columns j's elements k and k+1, and one
 * 32-bit broadcast carries row i's pair of A. vdpbf16ps multiplies the pairs and adds both
 * products into the fp32 lane: half the instructions of the float kernel for the same flops.
 * kcp is the (even) padded depth of the step; an odd K ends with a zero pair half.
 */
#define BF16_MR 8
#define BF16_NR 32
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
/* Helpers of run_unit_bf16(), inlined into it with its instruction set. */
#define BF16_INLINE BF16_TARGET static inline __attribute__((always_inline))

#if GS_KERN_HAVE_BF16_DOT
BF16_TARGET static void ukr_avx512bf16(int kcp, const uint16_t *ap, const uint16_t *bp, float *c,
                                       size_t ldc)
{
    __m512 acc[BF16_MR][2];

    for (int i = 0; i < BF16_MR; i++)
        for (int v = 0; v < 2; v++)
            acc[i][v] = _mm512_load_ps(c + i * ldc + v * 16);
    for (int q = 0; q < kcp / 2; q++) {
        const uint16_t *bq = bp + (size_t)q * 2 * BF16_NR;
        __m512bh b0 = (__m512bh)_mm512_load_si512((const void *)bq);
        __m512bh b1 = (__m512bh)_mm512_load_si512((const void *)(bq + 32));

        for (int i = 0; i < BF16_MR; i++) {
            uint32_t pair;
            __m512bh a;

            memcpy(&pair, ap + ((size_t)q * BF16_MR + i) * 2, sizeof(pair));
            a = (__m512bh)_mm512_set1_epi32((int)pair);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a, b1);
        }
    }
    for (int i = 0; i < BF16_MR; i++)
        for (int v = 0; v < 2; v++)
            _mm512_store_ps(c + i * ldc + v * 16, acc[i][v]);
}
#endif

/* The cap GSCHED_KERN_ISA sets: its value names the widest path allowed (an unknown or
 * empty value caps nothing). */
static enum isa isa_cap(void)
{
    static const char *const names[] = {"avx512bf16", "avx512", "avx2", "generic"};
    const char *force = getenv("GSCHED_KERN_ISA");

    for (int i = 0; force != NULL && i < (int)(sizeof(names) / sizeof(names[0])); i++)
        if (strcmp(force, names[i]) == 0)
            return (enum isa)i;
    return ISA_AVX512BF16;
}

/* The widest microkernel the CPU runs for this dtype, under the GSCHED_KERN_ISA cap (so
 * tests and benchmarks can exercise the narrower paths on any machine). The bf16 dot
 * product only applies when both operands are bf16. */
static struct ukr pick_ukr(enum gs_kern_dtype dt)
{
    enum isa cap = isa_cap();

#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
#if GS_KERN_HAVE_BF16_DOT
    if (cap == ISA_AVX512BF16 && dt == GS_KERN_BF16 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bf16"))
        return (struct ukr){BF16_MR, BF16_NR, NULL, true};
#endif
    if (cap <= ISA_AVX512 && __builtin_cpu_supports("avx512f"))
        return (struct ukr){8, 32, ukr_avx512, false};
    if (cap <= ISA_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (struct ukr){6, 16, ukr_avx2, false};
#endif
    (void)cap;
    (void)dt;
    return (struct ukr){4, 8, ukr_generic, false};
}

GS_KERN_INLINE float ld(const void *p, size_t i, enum gs_kern_dtype dt)
{
    return gs_kern_load(p, i, dt);
}

/* Touches the cache lines of n elements of x from element `at` on (rs == 1 runs only). */
GS_KERN_INLINE void prefetch_run(const struct mat *x, size_t at, int n)
{
    const char *p = (const char *)x->p + at * gs_kern_dtype_size(x->dt);
    size_t bytes = (size_t)n * gs_kern_dtype_size(x->dt);

    if (x->rs != 1)
        return;
    for (size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch(p + off);
}

/*
 * Packing, instantiated per dtype (DT) so the inner loops have no switch. Rows past the
 * matrix are zero-filled, so the microkernel never sees an edge. Two loop orders, by which
 * way the source is contiguous: along k (each panel row is one contiguous run), or along the
 * rows (then each k step reads one contiguous run of `rows` elements and deals it out to the
 * panels, instead of revisiting the same strided lines once per panel).
 */
#define PACK_ALONG_K(DT)                                                                           \
    for (int pr = 0; pr < rows; pr += R) {                                                         \
        float *out = dst + (size_t)pr * cols;                                                      \
        int live = rows - pr < R ? rows - pr : R;                                                  \
        size_t at[32]; /* R <= 32 */                                                               \
                                                                                                   \
        for (int i = 0; i < live; i++)                                                             \
            at[i] = (r0 + (size_t)(pr + i)) * x->rs + c0;                                          \
        for (int p = 0; p < cols; p++, out += R) {                                                 \
            for (int i = 0; i < live; i++)                                                         \
                out[i] = ld(x->p, at[i] + (size_t)p, DT);                                          \
            for (int i = live; i < R; i++)                                                         \
                out[i] = 0.0f;                                                                     \
        }                                                                                          \
    }

/* Prefetches the run PF k steps ahead: the rows of a strided source are far apart, so the
 * hardware prefetcher does not see them coming. */
#define PF 4
#define PACK_ALONG_ROWS(DT)                                                                        \
    for (int p = 0; p < cols; p++) {                                                               \
        size_t at = (c0 + (size_t)p) * x->cs + r0 * x->rs;                                         \
                                                                                                   \
        if (p + PF < cols)                                                                         \
            prefetch_run(x, at + PF * x->cs, rows);                                                \
        for (int pr = 0; pr < rows; pr += R) {                                                     \
            float *out = dst + (size_t)pr * cols + (size_t)p * R;                                  \
            int live = rows - pr < R ? rows - pr : R;                                              \
                                                                                                   \
            for (int i = 0; i < live; i++)                                                         \
                out[i] = ld(x->p, at + (size_t)(pr + i) * x->rs, DT);                              \
            for (int i = live; i < R; i++)                                                         \
                out[i] = 0.0f;                                                                     \
        }                                                                                          \
    }

#define PACK(DT)                                                                                   \
    do {                                                                                           \
        if (x->cs == 1) {                                                                          \
            PACK_ALONG_K(DT)                                                                       \
        } else {                                                                                   \
            PACK_ALONG_ROWS(DT)                                                                    \
        }                                                                                          \
    } while (0)

/* Packs rows [r0, r0+rows) x cols [c0, c0+cols) of x into R-row panels, each panel k-major
 * (element (i, p) of a panel at p*R + i), converting to float. */
GS_KERN_INLINE void pack(float *dst, const struct mat *x, size_t r0, int rows, size_t c0, int cols,
                         int R)
{
    switch (x->dt) {
    case GS_KERN_BF16:
        PACK(GS_KERN_BF16);
        break;
    case GS_KERN_F16:
        PACK(GS_KERN_F16);
        break;
    case GS_KERN_F32:
        PACK(GS_KERN_F32);
        break;
    }
}

/* The finished tile: rows [ic, ic+mc) x cols [jc, jc+nc) of the destination. */
GS_KERN_INLINE void write_tile(const struct dst *d, const float *tile, size_t ldt, size_t ic,
                               int mc, size_t jc, int nc)
{
    for (int i = 0; i < mc; i++) {
        const float *t = tile + (size_t)i * ldt;
        size_t row = (ic + (size_t)i) * d->ld + jc;

        if (d->accumulate) {
            float *o = (float *)d->p + row;

            for (int j = 0; j < nc; j++)
                o[j] += t[j];
            continue;
        }
        for (int j = 0; j < nc; j++) {
            float v = t[j];

            if (d->bias != NULL)
                v += ld(d->bias, jc + (size_t)j, d->dt);
            gs_kern_store(d->p, row + (size_t)j, d->dt, v);
        }
    }
}

struct gemm {
    struct mat a, bt; /* A [M,K]; B seen transposed, [N,K], so both pack the same way */
    struct dst c;
    int m, n, k;
    struct ukr u;
    size_t thread_floats; /* each thread's share of the workspace */
};

#define WS_A ((size_t)MC * KC)
#define WS_C ((size_t)MC * NC)

/* A thread's workspace: one packed A block, B packed over the whole K for one column block
 * (so every row block of a work unit reuses it), and the tile accumulator. */
static size_t thread_floats(int k)
{
    return WS_A + WS_C + gs_kern_round_up((size_t)k, KC) * NC;
}

/* Packs B's columns [jc, jc+nc) for all of K: block pc (KC deep) at offset pc * ncp. */
GS_KERN_INLINE void pack_b(const struct gemm *g, float *bp, size_t jc, int nc, int ncp)
{
    for (int pc = 0; pc < g->k; pc += KC) {
        int kc = g->k - pc < KC ? g->k - pc : KC;

        pack(bp + (size_t)pc * ncp, &g->bt, jc, nc, (size_t)pc, kc, g->u.nr);
    }
}

/* One output tile, rows [ic, ic+mc), against the packed B of its column block. */
GS_KERN_INLINE void run_tile(const struct gemm *g, float *ws, size_t ic, size_t jc, int nc, int ncp)
{
    int mc = g->m - (int)ic < MC ? g->m - (int)ic : MC;
    int mcp = (int)gs_kern_round_up((size_t)mc, (size_t)g->u.mr);
    float *ap = ws, *ct = ws + WS_A, *bp = ws + WS_A + WS_C;

    memset(ct, 0, (size_t)mcp * NC * sizeof(float));
    for (int pc = 0; pc < g->k; pc += KC) {
        int kc = g->k - pc < KC ? g->k - pc : KC;
        const float *bk = bp + (size_t)pc * ncp;

        pack(ap, &g->a, ic, mc, (size_t)pc, kc, g->u.mr);
        for (int jr = 0; jr < ncp; jr += g->u.nr)
            for (int ir = 0; ir < mcp; ir += g->u.mr)
                g->u.fn(kc, ap + (size_t)ir * kc, bk + (size_t)jr * kc, ct + (size_t)ir * NC + jr,
                        NC);
    }
    write_tile(&g->c, ct, NC, ic, mc, jc, nc);
}

/* A work unit: column block j, row blocks [b0, b1). Compiled per ISA (with everything it
 * inlines: packing, write-out) so the copies and conversions use the wide registers too. */
GS_KERN_CLONES static void run_unit(const struct gemm *g, float *ws, int j, int b0, int b1)
{
    size_t jc = (size_t)j * NC;
    int nc = g->n - (int)jc < NC ? g->n - (int)jc : NC;
    int ncp = (int)gs_kern_round_up((size_t)nc, (size_t)g->u.nr);

    pack_b(g, ws + WS_A + WS_C, jc, nc, ncp);
    for (int b = b0; b < b1; b++)
        run_tile(g, ws, (size_t)b * MC, jc, nc, ncp);
}

#if GS_KERN_HAVE_BF16_DOT
/*
 * Packing for the bf16 dot-product path: the same panels as pack(), but the elements stay
 * bf16 and go in k pairs: element (i, p) of an R-row panel at (p/2 * R + i) * 2 + p%2, the
 * panel round_up(cols, 2) deep, an odd last k paired with a zero. No conversion, so this is
 * a copy; the two loop orders are pack()'s.
 */
/* Eight rows' next eight k pairs (32 bytes each, from row[0..7] at pair q) into the panel
 * layout: an 8 x 8 transpose of 32-bit pairs, out32 then holds pair q+j of the eight rows at
 * out32[j * R .. j * R + 7]. Three rounds of 256-bit unpacks and lane swaps. */
BF16_INLINE void transpose_pairs_8x8(uint32_t *out32, const uint16_t *const *row, int q, int R)
{
    __m256i r[8], t[8], u[8];

    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_si256((const __m256i *)(const void *)(row[i] + 2 * q));
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_si256((__m256i *)(void *)(out32 + (size_t)j * R),
                            _mm256_permute2x128_si256(u[j], u[j + 4], 0x20));
        _mm256_storeu_si256((__m256i *)(void *)(out32 + (size_t)(j + 4) * R),
                            _mm256_permute2x128_si256(u[j], u[j + 4], 0x31));
    }
}

/* Source contiguous along k: full panels go eight pairs at a time through the transpose,
 * the rest (partial panels, the tail of k, an odd last k) pair by pair. */
BF16_INLINE void pack_pairs_along_k(uint16_t *dst, const struct mat *x, size_t r0, int rows,
                                    size_t c0, int cols, int R)
{
    const uint16_t *src = x->p;
    int colsp = cols + (cols & 1);

    for (int pr = 0; pr < rows; pr += R) {
        uint16_t *out = dst + (size_t)pr * colsp;
        int live = rows - pr < R ? rows - pr : R, q = 0;
        const uint16_t *row[32]; /* R <= 32 */

        for (int i = 0; i < live; i++)
            row[i] = src + (r0 + (size_t)(pr + i)) * x->rs + c0;
        if (live == R && R % 8 == 0)
            for (; q + 8 <= cols / 2; q += 8)
                for (int i = 0; i < R; i += 8)
                    transpose_pairs_8x8((uint32_t *)(void *)(out + (size_t)q * 2 * R) + i, row + i,
                                        q, R);
        for (out += (size_t)q * 2 * R; q < colsp / 2; q++, out += 2 * R) {
            if (2 * q + 1 < cols) {
                for (int i = 0; i < live; i++)
                    memcpy(out + 2 * i, row[i] + 2 * q, 2 * sizeof(uint16_t));
            } else {
                for (int i = 0; i < live; i++) {
                    out[2 * i] = row[i][2 * q];
                    out[2 * i + 1] = 0;
                }
            }
            memset(out + 2 * live, 0, (size_t)(R - live) * 2 * sizeof(uint16_t));
        }
    }
}

BF16_INLINE void pack_pairs_along_rows(uint16_t *dst, const struct mat *x, size_t r0, int rows,
                                       size_t c0, int cols, int R)
{
    const uint16_t *src = x->p;
    int colsp = cols + (cols & 1);

    for (int q = 0; q < colsp / 2; q++) {
        size_t at0 = (c0 + (size_t)(2 * q)) * x->cs + r0 * x->rs, at1 = at0 + x->cs;
        bool odd_end = 2 * q + 1 == cols;

        if (2 * q + PF + 1 < cols) {
            prefetch_run(x, at0 + PF * x->cs, rows);
            prefetch_run(x, at1 + PF * x->cs, rows);
        }
        for (int pr = 0; pr < rows; pr += R) {
            uint16_t *out = dst + (size_t)pr * colsp + (size_t)q * 2 * R;
            int live = rows - pr < R ? rows - pr : R;
            size_t at = (size_t)pr * x->rs;

            for (int i = 0; i < live; i++) {
                out[2 * i] = src[at0 + at + (size_t)i * x->rs];
                out[2 * i + 1] = odd_end ? 0 : src[at1 + at + (size_t)i * x->rs];
            }
            memset(out + 2 * live, 0, (size_t)(R - live) * 2 * sizeof(uint16_t));
        }
    }
}

BF16_INLINE void pack_pairs(uint16_t *dst, const struct mat *x, size_t r0, int rows, size_t c0,
                            int cols, int R)
{
    if (x->cs == 1)
        pack_pairs_along_k(dst, x, r0, rows, c0, cols, R);
    else
        pack_pairs_along_rows(dst, x, r0, rows, c0, cols, R);
}

/* write_tile() for a bf16 destination, with the dtype known so the rounding vectorises (the
 * generic one was a sixth of the bf16 path's time); the same rounding, so the same bits. */
BF16_INLINE void write_tile_bf16(const struct dst *d, const float *tile, size_t ldt, size_t ic,
                                 int mc, size_t jc, int nc)
{
    const uint16_t *bias = d->bias != NULL ? (const uint16_t *)d->bias + jc : NULL;

    if (d->accumulate || d->dt != GS_KERN_BF16) {
        write_tile(d, tile, ldt, ic, mc, jc, nc);
        return;
    }
    for (int i = 0; i < mc; i++) {
        const float *t = tile + (size_t)i * ldt;
        uint16_t *o = (uint16_t *)d->p + (ic + (size_t)i) * d->ld + jc;

        if (bias != NULL)
            for (int j = 0; j < nc; j++)
                o[j] = gs_kern_f32_to_bf16(t[j] + gs_kern_bf16_to_f32(bias[j]));
        else
            for (int j = 0; j < nc; j++)
                o[j] = gs_kern_f32_to_bf16(t[j]);
    }
}

/* run_tile() on the bf16 path: the workspace holds bf16 pairs where it held floats (half
 * the bytes), the tile accumulator is the same float tile. */
BF16_INLINE void run_tile_bf16(const struct gemm *g, float *ws, size_t ic, size_t jc, int nc,
                               int ncp)
{
    int mc = g->m - (int)ic < MC ? g->m - (int)ic : MC;
    int mcp = (int)gs_kern_round_up((size_t)mc, BF16_MR);
    uint16_t *ap = (uint16_t *)ws;
    float *ct = ws + WS_A;
    const uint16_t *bp = (const uint16_t *)(ws + WS_A + WS_C);

    memset(ct, 0, (size_t)mcp * NC * sizeof(float));
    for (int pc = 0; pc < g->k; pc += KC) {
        int kc = g->k - pc < KC ? g->k - pc : KC;
        int kcp = kc + (kc & 1);
        const uint16_t *bk = bp + (size_t)pc * ncp;

        pack_pairs(ap, &g->a, ic, mc, (size_t)pc, kc, BF16_MR);
        for (int jr = 0; jr < ncp; jr += BF16_NR)
            for (int ir = 0; ir < mcp; ir += BF16_MR)
                ukr_avx512bf16(kcp, ap + (size_t)ir * kcp, bk + (size_t)jr * kcp,
                               ct + (size_t)ir * NC + jr, NC);
    }
    write_tile_bf16(&g->c, ct, NC, ic, mc, jc, nc);
}

/* run_unit() on the bf16 path: B's column block packed as pairs over all of K (block pc at
 * pc * ncp bf16 elements), then the row blocks against it. */
BF16_TARGET static void run_unit_bf16(const struct gemm *g, float *ws, int j, int b0, int b1)
{
    size_t jc = (size_t)j * NC;
    int nc = g->n - (int)jc < NC ? g->n - (int)jc : NC;
    int ncp = (int)gs_kern_round_up((size_t)nc, BF16_NR);
    uint16_t *bp = (uint16_t *)(ws + WS_A + WS_C);

    for (int pc = 0; pc < g->k; pc += KC) {
        int kc = g->k - pc < KC ? g->k - pc : KC;

        pack_pairs(bp + (size_t)pc * ncp, &g->bt, jc, nc, (size_t)pc, kc, BF16_NR);
    }
    for (int b = b0; b < b1; b++)
        run_tile_bf16(g, ws, (size_t)b * MC, jc, nc, ncp);
}
#endif

/* One work unit on the path pick_ukr() chose. */
static void run_work(const struct gemm *g, float *ws, int j, int b0, int b1)
{
#if GS_KERN_HAVE_BF16_DOT
    if (g->u.bf16_dot) {
        run_unit_bf16(g, ws, j, b0, b1);
        return;
    }
#endif
    run_unit(g, ws, j, b0, b1);
}

/* Enough for all three products of one layer: K is C, OC or N. */
static size_t shape_floats(int N, int C, int OC)
{
    int k = N > C ? N : C;

    return thread_floats(k > OC ? k : OC);
}

size_t gs_kern_matmul_ws_bytes(int N, int C, int OC)
{
    if (N <= 0 || C <= 0 || OC <= 0)
        return 0;
    return shape_floats(N, C, OC) * sizeof(float) * (size_t)gs_kern_max_threads() + GS_KERN_ALIGN;
}

/*
 * Work units are (column block, a contiguous run of row blocks): each packs its B column
 * block once and runs its rows against it. Row blocks are split into as many runs as there
 * are threads, so even a single column block keeps every thread busy; which thread runs a
 * unit does not change any result.
 */
static int gemm_run(struct gemm *g, void *ws, size_t ws_bytes)
{
    int col_blocks = (g->n + NC - 1) / NC, row_blocks = (g->m + MC - 1) / MC;
    int threads = gs_kern_max_threads(), runs, units;
    size_t per = g->thread_floats * sizeof(float);
    float *base;

    if (ws == NULL || ws_bytes < per + GS_KERN_ALIGN)
        return -EINVAL;
    if ((size_t)threads > (ws_bytes - GS_KERN_ALIGN) / per)
        threads = (int)((ws_bytes - GS_KERN_ALIGN) / per);
    runs = threads < row_blocks ? threads : row_blocks;
    units = col_blocks * runs;
    if (threads > units)
        threads = units;
    g->u = pick_ukr(g->a.dt == g->bt.dt ? g->a.dt : GS_KERN_F32);
    base = gs_kern_align_ptr(ws);
    GS_OMP(parallel num_threads(threads))
    {
        float *mine = base + g->thread_floats * (size_t)gs_kern_thread_num();

        GS_OMP(for schedule(dynamic, 1))
        for (int u = 0; u < units; u++) {
            int r = u % runs;

            run_work(g, mine, u / runs, r * row_blocks / runs, (r + 1) * row_blocks / runs);
        }
    }
    return 0;
}

static bool shape_bad(int N, int C, int OC, enum gs_kern_dtype dt)
{
    return N <= 0 || C <= 0 || OC <= 0 || !gs_kern_dtype_ok(dt);
}

int gs_kern_matmul_fwd(void *out, const void *inp, const void *w, const void *bias, int N, int C,
                       int OC, enum gs_kern_dtype dt, void *ws, size_t ws_bytes)
{
    struct gemm g = {
        .a = {inp, dt, (size_t)C, 1},
        .bt = {w, dt, (size_t)C, 1}, /* B(k=c, n=oc) = W[oc, c] */
        .c = {out, dt, (size_t)OC, bias, false},
        .m = N,
        .n = OC,
        .k = C,
        .thread_floats = shape_floats(N, C, OC),
    };

    if (out == NULL || inp == NULL || w == NULL || shape_bad(N, C, OC, dt))
        return -EINVAL;
    return gemm_run(&g, ws, ws_bytes);
}

/* Column sums of dout for columns [o0, o0+w), w <= BIAS_COLS, rows in order, added to
 * dbias. Compiled per ISA with the dtype fixed per loop, so the sums vectorise across the
 * columns (each column's order of additions is unchanged). */
#define BIAS_COLS 64
#define BIAS_SUM(DT)                                                                               \
    for (int n = 0; n < N; n++)                                                                    \
        for (int j = 0; j < w; j++)                                                                \
            sum[j] += ld(dout, (size_t)n * OC + (size_t)(o0 + j), DT);

GS_KERN_CLONES static void bias_grad_cols(float *dbias, const void *dout, int N, int OC, int o0,
                                          enum gs_kern_dtype dt)
{
    float sum[BIAS_COLS] = {0};
    int w = OC - o0 < BIAS_COLS ? OC - o0 : BIAS_COLS;

    switch (dt) {
    case GS_KERN_BF16:
        BIAS_SUM(GS_KERN_BF16)
        break;
    case GS_KERN_F16:
        BIAS_SUM(GS_KERN_F16)
        break;
    case GS_KERN_F32:
        BIAS_SUM(GS_KERN_F32)
        break;
    }
    for (int j = 0; j < w; j++)
        dbias[o0 + j] += sum[j];
}

/* dbias[oc] += sum over n of dout[n, oc], rows in order: each thread owns whole columns. */
static void bias_grad(float *dbias, const void *dout, int N, int OC, enum gs_kern_dtype dt)
{
    GS_OMP(parallel for schedule(static))
    for (int o0 = 0; o0 < OC; o0 += BIAS_COLS)
        bias_grad_cols(dbias, dout, N, OC, o0, dt);
}

int gs_kern_matmul_bwd(void *dinp, float *dw, float *dbias, const void *dout, const void *inp,
                       const void *w, int N, int C, int OC, enum gs_kern_dtype dt, void *ws,
                       size_t ws_bytes)
{
    struct gemm gi = {
        .a = {dout, dt, (size_t)OC, 1},
        .bt = {w, dt, 1, (size_t)C}, /* B(k=oc, n=c) = W[oc, c] */
        .c = {dinp, dt, (size_t)C, NULL, false},
        .m = N,
        .n = C,
        .k = OC,
        .thread_floats = shape_floats(N, C, OC),
    };
    struct gemm gw = {
        .a = {dout, dt, 1, (size_t)OC}, /* A(m=oc, k=n) = dout[n, oc] */
        .bt = {inp, dt, 1, (size_t)C},  /* B(k=n, n=c) = inp[n, c] */
        .c = {dw, GS_KERN_F32, (size_t)C, NULL, true},
        .m = OC,
        .n = C,
        .k = N,
        .thread_floats = shape_floats(N, C, OC),
    };
    int rc;

    if (dw == NULL || dout == NULL || inp == NULL || w == NULL || shape_bad(N, C, OC, dt))
        return -EINVAL;
    if (ws == NULL || ws_bytes < gw.thread_floats * sizeof(float) + GS_KERN_ALIGN)
        return -EINVAL;
    if (dinp != NULL) {
        rc = gemm_run(&gi, ws, ws_bytes);
        if (rc < 0)
            return rc;
    }
    rc = gemm_run(&gw, ws, ws_bytes);
    if (rc == 0 && dbias != NULL)
        bias_grad(dbias, dout, N, OC, dt);
    return rc;
}
