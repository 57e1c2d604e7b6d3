/*
 * test_matmul.c: gs_kern_matmul_fwd/bwd (kernels/matmul_cpu.c).
 *
 * fp32 forward against a float64 reference, backward against central differences of that
 * reference (loss = sum(r * out) for a random r, so dout = r), on a small odd shape and on a
 * shape past every blocking edge (rows past MC=96, K past KC=256, columns past NC=256 and
 * not a multiple of any NR). Tolerance: 1e-4 of the largest reference magnitude (fp32
 * accumulation error over K <= 515 is ~1e-6 relative). 16-bit: the kernel must equal the
 * fp32 kernel run on the rounded inputs, its output then rounded (same order of operations:
 * 0 ulps for the activations; dW, a float, bit-identical), on the float paths
 * (GSCHED_KERN_ISA=avx512 keeps bf16 off the dot-product path). Determinism: bitwise equal
 * for 1, 2 and 3 threads, fp32 and bf16.
 *
 * bf16 on the AVX512-BF16 dot-product path (the default for bf16 where the CPU has it; on
 * other CPUs the same tests run the float path, which meets the same bounds): inputs rounded
 * to bf16, against float64 on those rounded values. Activations (out, dinp) are rounded
 * once to bf16, so |got - want| <= 2^-8 |want| + 1e-5 max(1, max |want|): half a bf16 ulp
 * (2^-9) of rounding, doubled for the fp32 sums. dW is fp32 and held to 1e-5 of the largest
 * magnitude (fp32 sums of exact bf16 products; ~2e-7 observed). Shapes: odd K in all
 * three products past every blocking edge, K = 1, and a small odd shape.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "kref.h"

struct mm {
    int n, c, oc;
    float *inp, *w, *bias, *dout;
    double *dinp64, *dw64, *dbias64, *dout64; /* the reference's copies, perturbed by FD */
    void *ws;
    size_t ws_bytes;
};

static void mm_init(struct mm *m, int n, int c, int oc, uint64_t seed)
{
    *m = (struct mm){.n = n, .c = c, .oc = oc};
    m->inp = calloc((size_t)n * c, sizeof(float));
    m->w = calloc((size_t)oc * c, sizeof(float));
    m->bias = calloc((size_t)oc, sizeof(float));
    m->dout = calloc((size_t)n * oc, sizeof(float));
    cr_assert(m->inp && m->w && m->bias && m->dout);
    kref_fill(m->inp, (size_t)n * c, 1.0f, seed);
    kref_fill(m->w, (size_t)oc * c, 0.5f, seed + 1);
    kref_fill(m->bias, (size_t)oc, 0.5f, seed + 2);
    kref_fill(m->dout, (size_t)n * oc, 1.0f, seed + 3);
    m->dinp64 = kref_to_f64(m->inp, (size_t)n * c);
    m->dw64 = kref_to_f64(m->w, (size_t)oc * c);
    m->dbias64 = kref_to_f64(m->bias, (size_t)oc);
    m->dout64 = kref_to_f64(m->dout, (size_t)n * oc);
    m->ws_bytes = gs_kern_matmul_ws_bytes(m->n, m->c, m->oc);
    m->ws = malloc(m->ws_bytes);
    cr_assert_not_null(m->ws);
}

static void mm_free(struct mm *m)
{
    free(m->inp);
    free(m->w);
    free(m->bias);
    free(m->dout);
    free(m->dinp64);
    free(m->dw64);
    free(m->dbias64);
    free(m->dout64);
    free(m->ws);
}

/* out = inp . w^T + bias in float64; x is inp, w, bias as doubles. */
static void ref_fwd(double *out, const double *inp, const double *w, const double *bias, int n,
                    int c, int oc)
{
    for (int i = 0; i < n; i++)
        for (int o = 0; o < oc; o++) {
            double s = bias ? bias[o] : 0.0;

            for (int k = 0; k < c; k++)
                s += inp[(size_t)i * c + k] * w[(size_t)o * c + k];
            out[(size_t)i * oc + o] = s;
        }
}

static double mm_loss(void *ctx)
{
    struct mm *m = ctx;
    size_t no = (size_t)m->n * m->oc;
    double *out = malloc(no * sizeof(double)), l = 0.0;

    ref_fwd(out, m->dinp64, m->dw64, m->dbias64, m->n, m->c, m->oc);
    for (size_t i = 0; i < no; i++)
        l += m->dout64[i] * out[i];
    free(out);
    return l;
}

/* Rounds the operands to dt in place and refreshes the float64 copies, so the reference
 * sees exactly the values a 16-bit kernel reads. */
static void mm_round(struct mm *m, enum gs_kern_dtype dt)
{
    size_t ni = (size_t)m->n * m->c, nw = (size_t)m->oc * m->c, no = (size_t)m->n * m->oc;

    kref_round_inplace(m->inp, ni, dt);
    kref_round_inplace(m->w, nw, dt);
    kref_round_inplace(m->bias, (size_t)m->oc, dt);
    kref_round_inplace(m->dout, no, dt);
    for (size_t i = 0; i < ni; i++)
        m->dinp64[i] = m->inp[i];
    for (size_t i = 0; i < nw; i++)
        m->dw64[i] = m->w[i];
    for (int i = 0; i < m->oc; i++)
        m->dbias64[i] = m->bias[i];
    for (size_t i = 0; i < no; i++)
        m->dout64[i] = m->dout[i];
}

/* The backward products in float64: dinp = dout . W, dw = dout^T . inp, dbias. */
static void ref_bwd(const struct mm *m, double *dinp, double *dw, double *db)
{
    int n = m->n, c = m->c, oc = m->oc;

    memset(dinp, 0, (size_t)n * c * sizeof(double));
    memset(dw, 0, (size_t)oc * c * sizeof(double));
    memset(db, 0, (size_t)oc * sizeof(double));
    for (int i = 0; i < n; i++)
        for (int o = 0; o < oc; o++) {
            double g = m->dout64[(size_t)i * oc + o];

            db[o] += g;
            for (int k = 0; k < c; k++) {
                dinp[(size_t)i * c + k] += g * m->dw64[(size_t)o * c + k];
                dw[(size_t)o * c + k] += g * m->dinp64[(size_t)i * c + k];
            }
        }
}

static void check_forward(int n, int c, int oc)
{
    struct mm m;
    size_t no = (size_t)n * oc;
    float *out;
    double *want = malloc(no * sizeof(double));

    mm_init(&m, n, c, oc, 11);
    out = calloc(no, sizeof(float));
    cr_assert_eq(
        gs_kern_matmul_fwd(out, m.inp, m.w, m.bias, n, c, oc, GS_KERN_F32, m.ws, m.ws_bytes), 0);
    ref_fwd(want, m.dinp64, m.dw64, m.dbias64, n, c, oc);
    kref_check_close(out, want, no, 1e-4, "out");
    cr_assert_eq(gs_kern_matmul_fwd(out, m.inp, m.w, NULL, n, c, oc, GS_KERN_F32, m.ws, m.ws_bytes),
                 0);
    ref_fwd(want, m.dinp64, m.dw64, NULL, n, c, oc);
    kref_check_close(out, want, no, 1e-4, "out without bias");
    free(out);
    free(want);
    mm_free(&m);
}

Test(matmul, forward_matches_float64_small_odd_shape)
{
    check_forward(7, 12, 20);
}

Test(matmul, forward_matches_float64_past_blocking_edges)
{
    check_forward(197, 515, 289);
}

Test(matmul, backward_matches_finite_differences)
{
    struct mm m;
    float dinp[7 * 12], dw[20 * 12] = {0}, dbias[20] = {0};

    mm_init(&m, 7, 12, 20, 21);
    cr_assert_eq(gs_kern_matmul_bwd(dinp, dw, dbias, m.dout, m.inp, m.w, 7, 12, 20, GS_KERN_F32,
                                    m.ws, m.ws_bytes),
                 0);
    kref_check_fd(mm_loss, &m, m.dinp64, 7 * 12, dinp, 1e-5, "dinp");
    kref_check_fd(mm_loss, &m, m.dw64, 20 * 12, dw, 1e-5, "dw");
    kref_check_fd(mm_loss, &m, m.dbias64, 20, dbias, 1e-5, "dbias");
    mm_free(&m);
}

Test(matmul, backward_matches_float64_past_blocking_edges)
{
    enum { N = 197, C = 515, OC = 289 };
    struct mm m;
    float *dinp = calloc((size_t)N * C, sizeof(float)), *dw = calloc((size_t)OC * C, 4);
    float dbias[OC] = {0};
    double *want_dinp = calloc((size_t)N * C, 8), *want_dw = calloc((size_t)OC * C, 8);
    double want_db[OC];

    mm_init(&m, N, C, OC, 31);
    cr_assert_eq(gs_kern_matmul_bwd(dinp, dw, dbias, m.dout, m.inp, m.w, N, C, OC, GS_KERN_F32,
                                    m.ws, m.ws_bytes),
                 0);
    ref_bwd(&m, want_dinp, want_dw, want_db);
    kref_check_close(dinp, want_dinp, (size_t)N * C, 1e-4, "dinp");
    kref_check_close(dw, want_dw, (size_t)OC * C, 1e-4, "dw");
    kref_check_close(dbias, want_db, OC, 1e-4, "dbias");
    free(dinp);
    free(dw);
    free(want_dinp);
    free(want_dw);
    mm_free(&m);
}

Test(matmul, backward_accumulates_parameter_gradients)
{
    struct mm m;
    float dw1[20 * 12] = {0}, dw2[20 * 12], db1[20] = {0}, db2[20];

    mm_init(&m, 7, 12, 20, 41);
    cr_assert_eq(gs_kern_matmul_bwd(NULL, dw1, db1, m.dout, m.inp, m.w, 7, 12, 20, GS_KERN_F32,
                                    m.ws, m.ws_bytes),
                 0);
    for (int i = 0; i < 20 * 12; i++)
        dw2[i] = 3.0f;
    for (int i = 0; i < 20; i++)
        db2[i] = -2.0f;
    cr_assert_eq(gs_kern_matmul_bwd(NULL, dw2, db2, m.dout, m.inp, m.w, 7, 12, 20, GS_KERN_F32,
                                    m.ws, m.ws_bytes),
                 0);
    for (int i = 0; i < 20 * 12; i++)
        cr_assert_eq(dw2[i], 3.0f + dw1[i], "dw[%d]", i);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(db2[i], -2.0f + db1[i], "dbias[%d]", i);
    mm_free(&m);
}

/* The 16-bit kernel against the fp32 kernel on rounded inputs, output rounded. */
static void check_16bit(enum gs_kern_dtype dt)
{
    enum { N = 197, C = 300, OC = 270 };
    struct mm m;
    size_t no = (size_t)N * OC, ni = (size_t)N * C, nw = (size_t)OC * C;
    void *inp16, *w16, *b16, *dout16, *out16 = calloc(no, 2), *dinp16 = calloc(ni, 2);
    float *out32 = calloc(no, 4), *dinp32 = calloc(ni, 4), *dw16 = calloc(nw, 4),
          *dw32 = calloc(nw, 4), db16[OC] = {0}, db32[OC] = {0};
    void *want_out, *want_dinp;

    /* The fp32 order of operations is the float microkernels' (bf16 pairs differ). */
    cr_assert_eq(setenv("GSCHED_KERN_ISA", "avx512", 1), 0);
    mm_init(&m, N, C, OC, 51);
    inp16 = kref_to_dtype(m.inp, ni, dt);
    w16 = kref_to_dtype(m.w, nw, dt);
    b16 = kref_to_dtype(m.bias, OC, dt);
    dout16 = kref_to_dtype(m.dout, no, dt);
    kref_round_inplace(m.inp, ni, dt);
    kref_round_inplace(m.w, nw, dt);
    kref_round_inplace(m.bias, OC, dt);
    kref_round_inplace(m.dout, no, dt);
    cr_assert_eq(gs_kern_matmul_fwd(out16, inp16, w16, b16, N, C, OC, dt, m.ws, m.ws_bytes), 0);
    cr_assert_eq(
        gs_kern_matmul_bwd(dinp16, dw16, db16, dout16, inp16, w16, N, C, OC, dt, m.ws, m.ws_bytes),
        0);
    cr_assert_eq(
        gs_kern_matmul_fwd(out32, m.inp, m.w, m.bias, N, C, OC, GS_KERN_F32, m.ws, m.ws_bytes), 0);
    cr_assert_eq(gs_kern_matmul_bwd(dinp32, dw32, db32, m.dout, m.inp, m.w, N, C, OC, GS_KERN_F32,
                                    m.ws, m.ws_bytes),
                 0);
    want_out = kref_to_dtype(out32, no, dt);
    want_dinp = kref_to_dtype(dinp32, ni, dt);
    kref_check_ulps(out16, want_out, no, dt, 0, "out");
    kref_check_ulps(dinp16, want_dinp, ni, dt, 0, "dinp");
    cr_assert_eq(memcmp(dw16, dw32, nw * 4), 0, "dw differs from the fp32 kernel's");
    cr_assert_eq(memcmp(db16, db32, sizeof(db16)), 0, "dbias differs from the fp32 kernel's");
    free(inp16);
    free(w16);
    free(b16);
    free(dout16);
    free(out16);
    free(dinp16);
    free(out32);
    free(dinp32);
    free(dw16);
    free(dw32);
    free(want_out);
    free(want_dinp);
    mm_free(&m);
}

Test(matmul, bf16_equals_fp32_on_rounded_values)
{
    check_16bit(GS_KERN_BF16);
}

Test(matmul, fp16_equals_fp32_on_rounded_values)
{
    check_16bit(GS_KERN_F16);
}

/* The same product on 1, 2 and 3 threads (workspace sized for each) gives the same bits. */
static void check_thread_counts(enum gs_kern_dtype dt)
{
    enum { N = 300, C = 521, OC = 130 };
    struct mm m;
    size_t es = gs_kern_dtype_size(dt), ni = (size_t)N * C, nw = (size_t)OC * C,
           no = (size_t)N * OC;
    void *out[3], *dinp[3], *inp, *w, *bias, *dout;
    float *dw[3];

    mm_init(&m, N, C, OC, 61);
    inp = kref_to_dtype(m.inp, ni, dt);
    w = kref_to_dtype(m.w, nw, dt);
    bias = kref_to_dtype(m.bias, OC, dt);
    dout = kref_to_dtype(m.dout, no, dt);
    for (int t = 0; t < 3; t++) {
        out[t] = calloc(no, es);
        dinp[t] = calloc(ni, es);
        dw[t] = calloc(nw, 4);
        kref_set_threads(t + 1);
        free(m.ws);
        m.ws_bytes = gs_kern_matmul_ws_bytes(N, C, OC);
        m.ws = malloc(m.ws_bytes);
        cr_assert_eq(gs_kern_matmul_fwd(out[t], inp, w, bias, N, C, OC, dt, m.ws, m.ws_bytes), 0);
        cr_assert_eq(
            gs_kern_matmul_bwd(dinp[t], dw[t], NULL, dout, inp, w, N, C, OC, dt, m.ws, m.ws_bytes),
            0);
    }
    for (int t = 1; t < 3; t++) {
        cr_assert_eq(memcmp(out[0], out[t], no * es), 0, "out, %d threads", t + 1);
        cr_assert_eq(memcmp(dinp[0], dinp[t], ni * es), 0, "dinp, %d threads", t + 1);
        cr_assert_eq(memcmp(dw[0], dw[t], nw * 4), 0, "dw, %d threads", t + 1);
    }
    for (int t = 0; t < 3; t++) {
        free(out[t]);
        free(dinp[t]);
        free(dw[t]);
    }
    free(inp);
    free(w);
    free(bias);
    free(dout);
    mm_free(&m);
}

Test(matmul, same_bits_for_any_thread_count)
{
    check_thread_counts(GS_KERN_F32);
}

Test(matmul, bf16_same_bits_for_any_thread_count)
{
    check_thread_counts(GS_KERN_BF16);
}

Test(matmul, rejects_bad_arguments_and_small_workspace)
{
    struct mm m;
    float out[7 * 20];
    size_t one;

    mm_init(&m, 7, 12, 20, 71);
    for (int i = 0; i < 7 * 20; i++)
        out[i] = 9.0f;
    cr_assert_eq(gs_kern_matmul_fwd(out, m.inp, m.w, NULL, 7, 12, 20, GS_KERN_F32, m.ws, 100),
                 -EINVAL);
    cr_assert_eq(
        gs_kern_matmul_fwd(out, m.inp, m.w, NULL, 0, 12, 20, GS_KERN_F32, m.ws, m.ws_bytes),
        -EINVAL);
    cr_assert_eq(gs_kern_matmul_fwd(out, NULL, m.w, NULL, 7, 12, 20, GS_KERN_F32, m.ws, m.ws_bytes),
                 -EINVAL);
    cr_assert_eq(gs_kern_matmul_fwd(out, m.inp, m.w, NULL, 7, 12, 20, (enum gs_kern_dtype)5, m.ws,
                                    m.ws_bytes),
                 -EINVAL);
    cr_assert_eq(gs_kern_matmul_bwd(NULL, NULL, NULL, m.dout, m.inp, m.w, 7, 12, 20, GS_KERN_F32,
                                    m.ws, m.ws_bytes),
                 -EINVAL);
    for (int i = 0; i < 7 * 20; i++)
        cr_assert_eq(out[i], 9.0f);
    /* One thread's share is enough: the kernel then runs on one thread. */
    kref_set_threads(1);
    one = gs_kern_matmul_ws_bytes(7, 12, 20);
    kref_set_threads(4);
#ifdef _OPENMP
    cr_assert_gt(gs_kern_matmul_ws_bytes(7, 12, 20), one);
#endif
    cr_assert_eq(gs_kern_matmul_fwd(out, m.inp, m.w, NULL, 7, 12, 20, GS_KERN_F32, m.ws, one), 0);
    cr_assert_eq(gs_kern_matmul_fwd(out, m.inp, m.w, NULL, 7, 12, 20, GS_KERN_F32, m.ws, one - 1),
                 -EINVAL);
    mm_free(&m);
}

/* The narrower microkernels, forced through GSCHED_KERN_ISA (each test is its own process):
 * AVX2 must give the AVX-512 path's bits (same FMA chain per element), the generic one (no
 * FMA) must still match float64 within the fp32 tolerance. */
static void run_all(struct mm *m, float *out, float *dinp, float *dw)
{
    cr_assert_eq(gs_kern_matmul_fwd(out, m->inp, m->w, m->bias, m->n, m->c, m->oc, GS_KERN_F32,
                                    m->ws, m->ws_bytes),
                 0);
    cr_assert_eq(gs_kern_matmul_bwd(dinp, dw, NULL, m->dout, m->inp, m->w, m->n, m->c, m->oc,
                                    GS_KERN_F32, m->ws, m->ws_bytes),
                 0);
}

Test(matmul, fallback_microkernels_agree)
{
    enum { N = 101, C = 300, OC = 45 };
    struct mm m;
    static float out[3][N * OC], dinp[3][N * C], dw[3][OC * C];
    static const char *isa[3] = {"", "avx2", "generic"};
    double *want = malloc(N * OC * sizeof(double));

    mm_init(&m, N, C, OC, 81);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(setenv("GSCHED_KERN_ISA", isa[k], 1), 0);
        run_all(&m, out[k], dinp[k], dw[k]);
    }
    unsetenv("GSCHED_KERN_ISA");
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
        cr_assert_eq(memcmp(out[0], out[1], sizeof(out[0])), 0, "avx2 forward");
        cr_assert_eq(memcmp(dinp[0], dinp[1], sizeof(dinp[0])), 0, "avx2 dinp");
        cr_assert_eq(memcmp(dw[0], dw[1], sizeof(dw[0])), 0, "avx2 dw");
    }
    ref_fwd(want, m.dinp64, m.dw64, m.dbias64, N, C, OC);
    kref_check_close(out[2], want, N * OC, 1e-4, "generic forward");
    for (int i = 0; i < N * C; i++)
        cr_assert_float_eq(dinp[2][i], dinp[0][i], 1e-4f * (1.0f + fabsf(dinp[0][i])), "dinp %d",
                           i);
    for (int i = 0; i < OC * C; i++)
        cr_assert_float_eq(dw[2][i], dw[0][i], 1e-4f * (1.0f + fabsf(dw[0][i])), "dw %d", i);
    free(want);
    mm_free(&m);
}

/* |got - want| <= 2^-8 |want| + 1e-5 max(1, max |want|) for a bf16 tensor (see the top). */
static void check_bf16_close(const void *got16, const double *want, size_t n, const char *what)
{
    float *got = kref_from_dtype(got16, n, GS_KERN_BF16);
    double scale = 1.0;

    for (size_t j = 0; j < n; j++)
        scale = fmax(scale, fabs(want[j]));
    for (size_t j = 0; j < n; j++)
        cr_assert_leq(fabs(got[j] - want[j]), ldexp(fabs(want[j]), -8) + 1e-5 * scale,
                      "%s[%zu]: kernel %.9g, want %.9g", what, j, (double)got[j], want[j]);
    free(got);
}

/* bf16 forward and backward against float64 on the rounded inputs, dW accumulated onto a
 * nonzero start. */
static void check_bf16(int n, int c, int oc)
{
    struct mm m;
    size_t ni = (size_t)n * c, nw = (size_t)oc * c, no = (size_t)n * oc;
    void *inp, *w, *bias, *dout, *out = calloc(no, 2), *dinp = calloc(ni, 2);
    float *dw = calloc(nw, 4), *db = calloc((size_t)oc, 4);
    double *want_out = malloc(no * 8), *want_dinp = malloc(ni * 8), *want_dw = malloc(nw * 8),
           *want_db = malloc((size_t)oc * 8);

    mm_init(&m, n, c, oc, 91);
    mm_round(&m, GS_KERN_BF16);
    inp = kref_to_dtype(m.inp, ni, GS_KERN_BF16);
    w = kref_to_dtype(m.w, nw, GS_KERN_BF16);
    bias = kref_to_dtype(m.bias, (size_t)oc, GS_KERN_BF16);
    dout = kref_to_dtype(m.dout, no, GS_KERN_BF16);
    for (size_t i = 0; i < nw; i++)
        dw[i] = 0.25f;
    cr_assert_eq(gs_kern_matmul_fwd(out, inp, w, bias, n, c, oc, GS_KERN_BF16, m.ws, m.ws_bytes),
                 0);
    cr_assert_eq(
        gs_kern_matmul_bwd(dinp, dw, db, dout, inp, w, n, c, oc, GS_KERN_BF16, m.ws, m.ws_bytes),
        0);
    ref_fwd(want_out, m.dinp64, m.dw64, m.dbias64, n, c, oc);
    ref_bwd(&m, want_dinp, want_dw, want_db);
    for (size_t i = 0; i < nw; i++)
        want_dw[i] += 0.25;
    check_bf16_close(out, want_out, no, "out");
    check_bf16_close(dinp, want_dinp, ni, "dinp");
    kref_check_close(dw, want_dw, nw, 1e-5, "dw");
    kref_check_close(db, want_db, (size_t)oc, 1e-5, "dbias");
    free(inp);
    free(w);
    free(bias);
    free(dout);
    free(out);
    free(dinp);
    free(dw);
    free(db);
    free(want_out);
    free(want_dinp);
    free(want_dw);
    free(want_db);
    mm_free(&m);
}

Test(matmul, bf16_matches_float64_past_blocking_edges_with_odd_k)
{
    check_bf16(197, 515, 289); /* K odd in all three products: 515, 289, 197 */
}

Test(matmul, bf16_matches_float64_on_small_shapes)
{
    check_bf16(7, 12, 20);
    check_bf16(5, 1, 3); /* K = 1: one pair, half zero */
    check_bf16(1, 33, 1);
}

Test(matmul, bf16_backward_matches_finite_differences)
{
    struct mm m;
    void *inp, *w, *dout, *dinp16 = calloc(7 * 13, 2);
    float *dinp, dw[20 * 13] = {0}, dbias[20] = {0};

    mm_init(&m, 7, 13, 20, 23);
    mm_round(&m, GS_KERN_BF16);
    inp = kref_to_dtype(m.inp, 7 * 13, GS_KERN_BF16);
    w = kref_to_dtype(m.w, 20 * 13, GS_KERN_BF16);
    dout = kref_to_dtype(m.dout, 7 * 20, GS_KERN_BF16);
    cr_assert_eq(gs_kern_matmul_bwd(dinp16, dw, dbias, dout, inp, w, 7, 13, 20, GS_KERN_BF16, m.ws,
                                    m.ws_bytes),
                 0);
    dinp = kref_from_dtype(dinp16, 7 * 13, GS_KERN_BF16);
    kref_check_fd(mm_loss, &m, m.dinp64, 7 * 13, dinp, 4e-3, "dinp"); /* rounded to bf16 */
    kref_check_fd(mm_loss, &m, m.dw64, 20 * 13, dw, 1e-5, "dw");
    kref_check_fd(mm_loss, &m, m.dbias64, 20, dbias, 1e-5, "dbias");
    free(inp);
    free(w);
    free(dout);
    free(dinp16);
    free(dinp);
    mm_free(&m);
}

/* Where the CPU has AVX512-BF16, bf16 runs the dot-product path by default and under
 * GSCHED_KERN_ISA=avx512bf16, and GSCHED_KERN_ISA=avx512 moves it back to the float
 * microkernel: dW (a float, summed in pairs on one path, one FMA at a time on the other)
 * then differs. */
Test(matmul, bf16_dot_path_is_the_default_and_avx512_forces_the_float_path)
{
    enum { N = 97, C = 301, OC = 64 };
    static const char *isa[3] = {"", "avx512bf16", "avx512"};
    struct mm m;
    void *inp, *dout, *w;
    float *dw[3];

    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16"))
        cr_skip_test("no AVX512-BF16 on this CPU");
    mm_init(&m, N, C, OC, 101);
    inp = kref_to_dtype(m.inp, (size_t)N * C, GS_KERN_BF16);
    w = kref_to_dtype(m.w, (size_t)OC * C, GS_KERN_BF16);
    dout = kref_to_dtype(m.dout, (size_t)N * OC, GS_KERN_BF16);
    for (int k = 0; k < 3; k++) {
        dw[k] = calloc((size_t)OC * C, 4);
        cr_assert_eq(setenv("GSCHED_KERN_ISA", isa[k], 1), 0);
        cr_assert_eq(gs_kern_matmul_bwd(NULL, dw[k], NULL, dout, inp, w, N, C, OC, GS_KERN_BF16,
                                        m.ws, m.ws_bytes),
                     0);
    }
    unsetenv("GSCHED_KERN_ISA");
    cr_assert_eq(memcmp(dw[0], dw[1], (size_t)OC * C * 4), 0, "default vs avx512bf16");
    cr_assert_neq(memcmp(dw[0], dw[2], (size_t)OC * C * 4), 0, "avx512 did not change the path");
    for (int k = 0; k < 3; k++)
        free(dw[k]);
    free(inp);
    free(w);
    free(dout);
    mm_free(&m);
}
