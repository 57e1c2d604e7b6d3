/*
 * matmul_cpu.c: the CPU matmul behind the trainer's Linear layers, ~90% of a training step.
 *
 * All three products (forward, dinp, dW) go through one packed GEMM, C[M,N] = A[M,K] . B[K,N],
 * with A and B read through row and column strides so that transposed operands need no copy.
 * The output is cut into MC x NC tiles. A work unit (one NC-wide column block and a run of
 * row blocks) goes to an OpenMP thread, which packs that column block of B over the whole K
 * into NR-column panels once, then for each of its row blocks runs K in KC-deep steps,
 * packing the A block (MC x KC) into MR-row panels. Packing converts bf16/fp16 to float, so
 * the inner loop only ever sees contiguous, aligned floats and stays FMA-bound; packing B
 * once per unit rather than once per tile keeps its cost (it was ~45% of the time) small. The
 * microkernel keeps an MR x NR block of sums in vector registers across a KC step and adds it
 * into the tile's float accumulator; the tile is written out (bias added, rounded once to the
 * storage dtype, or added to a float gradient) after the last step.
 *
 * Determinism: every output element is one chain of fused multiply-adds over k = 0..K-1 in
 * order, restarted from the accumulator at each KC boundary, whichever thread computes the
 * tile; so the bits do not depend on the thread count. The microkernel is picked once per
 * call by CPU features: AVX-512 (MR 8, NR 32), AVX2+FMA (6, 16), or generic (4, 8, no FMA:
 * it rounds products separately, the one case that gives different bits). The environment
 * variable GSCHED_KERN_ISA=avx2 or =generic caps the choice, for tests and benchmarks.
 *
 * Workspace per thread: a packed A block (96 KiB), B packed over K for one column block
 * (K x 512 floats, with K the largest of N, C, OC: 4 MiB at N = 2048) and the tile
 * accumulator (192 KiB). NC = 512 halves the A packing per flop against 256 (packing was
 * a fifth of the time); the 512 KiB B block of one KC step still fits the 1 MiB L2.
 */
#include "kernels/ops.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_internal.h"

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

struct ukr {
    int mr, nr;
    ukr_fn fn;
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

/* The widest microkernel the CPU runs; GSCHED_KERN_ISA=avx2 or =generic picks a narrower
 * one (so tests and benchmarks can exercise the fallbacks on an AVX-512 machine). */
static struct ukr pick_ukr(void)
{
    const char *force = getenv("GSCHED_KERN_ISA");
    bool generic = force != NULL && strcmp(force, "generic") == 0;
    bool no512 = force != NULL && strcmp(force, "avx2") == 0;

#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!generic && !no512 && __builtin_cpu_supports("avx512f"))
        return (struct ukr){8, 32, ukr_avx512};
    if (!generic && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (struct ukr){6, 16, ukr_avx2};
#endif
    (void)generic;
    (void)no512;
    return (struct ukr){4, 8, ukr_generic};
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
    g->u = pick_ukr();
    base = gs_kern_align_ptr(ws);
    GS_OMP(parallel num_threads(threads))
    {
        float *mine = base + g->thread_floats * (size_t)gs_kern_thread_num();

        GS_OMP(for schedule(dynamic, 1))
        for (int u = 0; u < units; u++) {
            int r = u % runs;

            run_unit(g, mine, u / runs, r * row_blocks / runs, (r + 1) * row_blocks / runs);
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

/* dbias[oc] += sum over n of dout[n, oc], rows in order: each thread owns whole columns. */
static void bias_grad(float *dbias, const void *dout, int N, int OC, enum gs_kern_dtype dt)
{
    GS_OMP(parallel for schedule(static))
    for (int o0 = 0; o0 < OC; o0 += 16) {
        float sum[16] = {0};
        int w = OC - o0 < 16 ? OC - o0 : 16;

        for (int n = 0; n < N; n++)
            for (int j = 0; j < w; j++)
                sum[j] += ld(dout, (size_t)n * OC + (size_t)(o0 + j), dt);
        for (int j = 0; j < w; j++)
            dbias[o0 + j] += sum[j];
    }
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
