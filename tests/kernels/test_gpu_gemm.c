/*
 * test_gpu_gemm.c: the CUDA matmul (cuBLASLt) and flash-style attention (kernels/gpu.h)
 * against their CPU twins (ops.h) on the same inputs, rounded to the dtype first so both
 * read the same values; the attention's lse against log(sum(exp)) in float64. Every GPU test
 * skips itself (counted as skipped) when no CUDA device is visible; one test checks the
 * stubs of a CPU-only build instead.
 *
 * Tolerances, |gpu - cpu| <= rel * |cpu| + abs * max(1, max |cpu|):
 *  - plain products: fp32 abs 1e-5 (both sum exact fp32 products, in different orders);
 *    bf16 rel 2^-7, fp16 rel 2^-10 (an output may round to the neighbouring 16-bit value:
 *    one ulp), abs 1e-4; TF32 abs 5e-3 (10-bit mantissa products over K = 96).
 *  - with the GELU (fused epilogues or the unfused path): abs 2e-3, bf16 rel 2^-6, fp16 rel
 *    2^-9 (two ulps): cuBLASLt's tanh may be the hardware approximation (2^-11 relative),
 *    and the fused path rounds once where the CPU rounds after the product and again after
 *    the GELU.
 *  - dW and dbias (fp32, accumulated onto nonzero values): abs 1e-5.
 *  - attention out and dqkv: fp32 abs 2e-5 (online softmax and a different summation
 *    order); bf16 rel 2^-7 abs 5e-3, fp16 rel 2^-10 abs 5e-4: besides one ulp of rounding,
 *    the GPU's backward takes D = dout.out from the stored (rounded) out where the CPU sums
 *    p * dout.v in fp32. (The kernels' code run on the CPU under a thread-per-lane emulation
 *    stayed within 1/100 of these for fp32 and 1/3 for 16 bits.)
 *  - lse: abs 1e-5 (of max(1, |lse|) ~ 10), against float64 on the rounded inputs.
 * Determinism: two runs of matmul fwd/bwd and attention fwd/bwd give the same bits, and so
 * does the same work captured into a CUDA Graph and replayed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "kernels/gpu.h"
#include "kernels/ops.h"
#include "kref.h"

struct tol {
    double rel, abs;
};

struct dev {
    struct gs_kern_gpu *g;
    void *ws;
    bool tf32;
};

static bool have_device(void)
{
    int n = 0;

    return gs_kern_cuda_built() && gs_kern_dev_count(&n) == 0 && n > 0;
}

#define NEED_DEVICE()                                                                              \
    do {                                                                                           \
        if (!have_device())                                                                        \
            cr_skip_test("no CUDA device");                                                        \
    } while (0)

/* A context on device 0 with a workspace for every shape below. */
static void dev_open(struct dev *d)
{
    size_t bytes = gs_kern_gpu_ws_bytes(2, 1024, 256, 2, 4096, (size_t)1 << 20);

    *d = (struct dev){0};
    cr_assert_eq(gs_kern_gpu_new(0, &d->g), 0, "%s", gs_kern_dev_last_error());
    cr_assert_gt(bytes, 0);
    cr_assert_eq(gs_kern_dev_alloc(bytes, &d->ws), 0);
    gs_kern_gpu_set_workspace(d->g, d->ws, bytes);
}

static void dev_close(struct dev *d)
{
    gs_kern_gpu_free(d->g);
    gs_kern_dev_free(d->ws);
}

static void gpu_ok(int rc, const char *what)
{
    cr_assert_eq(rc, 0, "%s: %d (%s)", what, rc, gs_kern_dev_last_error());
}

/* n floats in [-scale, scale), rounded to dt. */
static float *fill(size_t n, float scale, uint64_t seed, enum gs_kern_dtype dt)
{
    float *x = malloc((n ? n : 1) * sizeof(float));

    cr_assert_not_null(x);
    kref_fill(x, n, scale, seed);
    kref_round_inplace(x, n, dt);
    return x;
}

static void *dev_bytes(size_t bytes)
{
    void *p = NULL;

    cr_assert_eq(gs_kern_dev_alloc(bytes, &p), 0);
    return p;
}

/* x rounded to dt, on the device (the copy has landed when this returns). */
static void *up(const float *x, size_t n, enum gs_kern_dtype dt)
{
    size_t bytes = n * gs_kern_dtype_size(dt);
    void *h = kref_to_dtype(x, n, dt), *p = dev_bytes(bytes);

    cr_assert_eq(gs_kern_dev_copy_to(p, h, bytes), 0);
    cr_assert_eq(gs_kern_dev_sync(), 0);
    free(h);
    return p;
}

/* Device memory filled with 0xff bytes (NaN in every dtype): an element a kernel should
 * have written and did not fails every comparison. */
static void *junk(struct dev *d, size_t bytes)
{
    void *p = dev_bytes(bytes);

    gpu_ok(gs_kern_gpu_memset_async(p, 0xff, bytes, gs_kern_gpu_stream(d->g)), "memset");
    gpu_ok(gs_kern_gpu_sync(d->g), "sync");
    return p;
}

static void *down_raw(const void *p, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);

    cr_assert_not_null(h);
    cr_assert_eq(gs_kern_dev_copy_from(h, p, bytes), 0, "%s", gs_kern_dev_last_error());
    return h;
}

/* n elements of dtype dt from the device, as floats (after gs_kern_gpu_sync). */
static float *down(const void *p, size_t n, enum gs_kern_dtype dt)
{
    void *h = down_raw(p, n * gs_kern_dtype_size(dt));
    float *f = kref_from_dtype(h, n, dt);

    free(h);
    return f;
}

static void check_tol(const float *got, const double *want, size_t n, struct tol t,
                      const char *what)
{
    double scale = 1.0;

    for (size_t j = 0; j < n; j++)
        scale = fmax(scale, fabs(want[j]));
    for (size_t j = 0; j < n; j++)
        cr_assert_leq(fabs(got[j] - want[j]), t.rel * fabs(want[j]) + t.abs * scale,
                      "%s[%zu]: gpu %.9g, cpu %.9g", what, j, (double)got[j], want[j]);
}

static void check_vs(const float *got, const float *want, size_t n, struct tol t, const char *what)
{
    double *w = kref_to_f64(want, n);

    check_tol(got, w, n, t, what);
    free(w);
}

static struct tol gemm_tol(enum gs_kern_dtype dt, bool tf32)
{
    if (dt == GS_KERN_BF16)
        return (struct tol){0x1p-7, 1e-4};
    if (dt == GS_KERN_F16)
        return (struct tol){0x1p-10, 1e-4};
    return (struct tol){0.0, tf32 ? 5e-3 : 1e-5};
}

static struct tol gelu_tol(enum gs_kern_dtype dt)
{
    if (dt == GS_KERN_BF16)
        return (struct tol){0x1p-6, 2e-3};
    if (dt == GS_KERN_F16)
        return (struct tol){0x1p-9, 2e-3};
    return (struct tol){0.0, 2e-3};
}

static const struct tol grad_tol = {0.0, 1e-5};

static struct tol att_tol(enum gs_kern_dtype dt)
{
    if (dt == GS_KERN_BF16)
        return (struct tol){0x1p-7, 5e-3};
    if (dt == GS_KERN_F16)
        return (struct tol){0x1p-10, 5e-4};
    return (struct tol){0.0, 2e-5};
}

/* --- matmul -------------------------------------------------------------------------------- */

/* One Linear layer's operands as floats holding dt values; dw0, db0 the gradients' initial
 * values (float); pre the backward's gelu input [n, c]. */
struct mm {
    int n, c, oc;
    enum gs_kern_dtype dt;
    float *inp, *w, *bias, *dout, *pre, *dw0, *db0;
};

static void mm_init(struct mm *m, int n, int c, int oc, enum gs_kern_dtype dt)
{
    size_t ni = (size_t)n * c, nw = (size_t)oc * c, no = (size_t)n * oc;

    *m = (struct mm){.n = n, .c = c, .oc = oc, .dt = dt};
    m->inp = fill(ni, 1.0f, 11, dt);
    m->w = fill(nw, 0.5f, 12, dt);
    m->bias = fill((size_t)oc, 0.5f, 13, dt);
    m->dout = fill(no, 1.0f, 14, dt);
    m->pre = fill(ni, 2.0f, 15, dt);
    m->dw0 = fill(nw, 0.25f, 16, GS_KERN_F32);
    m->db0 = fill((size_t)oc, 0.25f, 17, GS_KERN_F32);
}

static void mm_free(struct mm *m)
{
    free(m->inp);
    free(m->w);
    free(m->bias);
    free(m->dout);
    free(m->pre);
    free(m->dw0);
    free(m->db0);
}

static float *copy_floats(const float *x, size_t n)
{
    float *y = malloc((n ? n : 1) * sizeof(float));

    cr_assert_not_null(y);
    memcpy(y, x, n * sizeof(float));
    return y;
}

/* The CPU twin: out (after the GELU when gelu) and the GELU's input, as floats. */
static void cpu_fwd(const struct mm *m, bool bias, bool gelu, float **ret_out, float **ret_pre)
{
    size_t no = (size_t)m->n * m->oc, ws_bytes = gs_kern_matmul_ws_bytes(m->n, m->c, m->oc);
    void *inp = kref_to_dtype(m->inp, (size_t)m->n * m->c, m->dt);
    void *w = kref_to_dtype(m->w, (size_t)m->oc * m->c, m->dt);
    void *b = kref_to_dtype(m->bias, (size_t)m->oc, m->dt);
    void *out = calloc(no, sizeof(float)), *act = calloc(no, sizeof(float));
    void *ws = malloc(ws_bytes);

    cr_assert(out && act && ws);
    cr_assert_eq(
        gs_kern_matmul_fwd(out, inp, w, bias ? b : NULL, m->n, m->c, m->oc, m->dt, ws, ws_bytes),
        0);
    if (gelu)
        cr_assert_eq(gs_kern_gelu_fwd(act, out, no, m->dt), 0);
    *ret_pre = gelu ? kref_from_dtype(out, no, m->dt) : NULL;
    *ret_out = kref_from_dtype(gelu ? act : out, no, m->dt);
    free(inp);
    free(w);
    free(b);
    free(out);
    free(act);
    free(ws);
}

static void gpu_fwd(struct dev *d, const struct mm *m, bool bias, bool gelu, float **ret_out,
                    float **ret_pre)
{
    size_t no = (size_t)m->n * m->oc, es = gs_kern_dtype_size(m->dt);
    void *inp = up(m->inp, (size_t)m->n * m->c, m->dt), *w = up(m->w, (size_t)m->oc * m->c, m->dt);
    void *b = up(m->bias, (size_t)m->oc, m->dt);
    void *out = junk(d, no * es), *pre = gelu ? junk(d, no * es) : NULL;

    gpu_ok(
        gs_kern_gpu_matmul_fwd(d->g, out, pre, inp, w, bias ? b : NULL, m->n, m->c, m->oc, m->dt),
        "matmul_fwd");
    gpu_ok(gs_kern_gpu_sync(d->g), "sync");
    *ret_out = down(out, no, m->dt);
    *ret_pre = gelu ? down(pre, no, m->dt) : NULL;
    gs_kern_dev_free(inp);
    gs_kern_dev_free(w);
    gs_kern_dev_free(b);
    gs_kern_dev_free(out);
    gs_kern_dev_free(pre);
}

static void check_fwd(struct dev *d, int n, int c, int oc, enum gs_kern_dtype dt, bool bias,
                      bool gelu)
{
    struct mm m;
    size_t no = (size_t)n * oc;
    float *want, *want_pre, *got, *got_pre;

    mm_init(&m, n, c, oc, dt);
    cpu_fwd(&m, bias, gelu, &want, &want_pre);
    gpu_fwd(d, &m, bias, gelu, &got, &got_pre);
    if (gelu) {
        check_vs(got_pre, want_pre, no, gemm_tol(dt, d->tf32), "pre_gelu");
        check_vs(got, want, no, gelu_tol(dt), "gelu(out)");
    } else {
        check_vs(got, want, no, gemm_tol(dt, d->tf32), "out");
    }
    free(want);
    free(want_pre);
    free(got);
    free(got_pre);
    mm_free(&m);
}

/* Backward results as floats: dinp (NULL when skipped), dw, dbias (NULL when skipped). */
struct grads {
    float *dinp, *dw, *db;
};

static void grads_free(struct grads *r)
{
    free(r->dinp);
    free(r->dw);
    free(r->db);
}

static void cpu_bwd(const struct mm *m, bool gelu, bool all, struct grads *r)
{
    size_t ni = (size_t)m->n * m->c, nw = (size_t)m->oc * m->c;
    size_t ws_bytes = gs_kern_matmul_ws_bytes(m->n, m->c, m->oc);
    void *inp = kref_to_dtype(m->inp, ni, m->dt), *w = kref_to_dtype(m->w, nw, m->dt);
    void *dout = kref_to_dtype(m->dout, (size_t)m->n * m->oc, m->dt);
    void *pre = kref_to_dtype(m->pre, ni, m->dt), *dinp = calloc(ni, sizeof(float));
    void *ws = malloc(ws_bytes);

    cr_assert(dinp && ws);
    r->dw = copy_floats(m->dw0, nw);
    r->db = all ? copy_floats(m->db0, (size_t)m->oc) : NULL;
    cr_assert_eq(gs_kern_matmul_bwd(all ? dinp : NULL, r->dw, r->db, dout, inp, w, m->n, m->c,
                                    m->oc, m->dt, ws, ws_bytes),
                 0);
    if (all && gelu)
        cr_assert_eq(gs_kern_gelu_bwd(dinp, pre, dinp, ni, m->dt), 0);
    r->dinp = all ? kref_from_dtype(dinp, ni, m->dt) : NULL;
    free(inp);
    free(w);
    free(dout);
    free(pre);
    free(dinp);
    free(ws);
}

static void gpu_bwd(struct dev *d, const struct mm *m, bool gelu, bool all, struct grads *r)
{
    size_t ni = (size_t)m->n * m->c, nw = (size_t)m->oc * m->c;
    void *inp = up(m->inp, ni, m->dt), *w = up(m->w, nw, m->dt);
    void *dout = up(m->dout, (size_t)m->n * m->oc, m->dt), *pre = up(m->pre, ni, m->dt);
    void *dinp = junk(d, ni * gs_kern_dtype_size(m->dt));
    float *dw = up(m->dw0, nw, GS_KERN_F32), *db = up(m->db0, (size_t)m->oc, GS_KERN_F32);

    gpu_ok(gs_kern_gpu_matmul_bwd(d->g, all ? dinp : NULL, dw, all ? db : NULL, dout, inp, w,
                                  gelu ? pre : NULL, m->n, m->c, m->oc, m->dt),
           "matmul_bwd");
    gpu_ok(gs_kern_gpu_sync(d->g), "sync");
    r->dinp = all ? down(dinp, ni, m->dt) : NULL;
    r->dw = down(dw, nw, GS_KERN_F32);
    r->db = down(db, (size_t)m->oc, GS_KERN_F32);
    gs_kern_dev_free(inp);
    gs_kern_dev_free(w);
    gs_kern_dev_free(dout);
    gs_kern_dev_free(pre);
    gs_kern_dev_free(dinp);
    gs_kern_dev_free(dw);
    gs_kern_dev_free(db);
}

/* all: dinp and dbias too (else dw alone, and dbias must stay as it was). */
static void check_bwd(struct dev *d, int n, int c, int oc, enum gs_kern_dtype dt, bool gelu,
                      bool all)
{
    struct mm m;
    struct grads want, got;

    mm_init(&m, n, c, oc, dt);
    cpu_bwd(&m, gelu, all, &want);
    gpu_bwd(d, &m, gelu, all, &got);
    check_vs(got.dw, want.dw, (size_t)oc * c, grad_tol, "dw");
    if (all) {
        check_vs(got.dinp, want.dinp, (size_t)n * c, gelu ? gelu_tol(dt) : gemm_tol(dt, false),
                 "dinp");
        check_vs(got.db, want.db, (size_t)oc, grad_tol, "dbias");
    } else {
        cr_assert_eq(memcmp(got.db, m.db0, (size_t)oc * sizeof(float)), 0, "dbias touched");
    }
    grads_free(&want);
    grads_free(&got);
    mm_free(&m);
}

/* N odd (the only dimension cuBLASLt leaves free for 16-bit operands: C and OC are the
 * leading dimensions, multiples of 8 for 16-byte rows), with and without bias and GELU. */
static void check_matmul(enum gs_kern_dtype dt)
{
    struct dev d;

    NEED_DEVICE();
    dev_open(&d);
    for (int bias = 0; bias < 2; bias++)
        for (int gelu = 0; gelu < 2; gelu++)
            check_fwd(&d, 67, 96, 200, dt, bias, gelu);
    check_fwd(&d, 259, 256, 1024, dt, true, true);
    check_bwd(&d, 67, 96, 200, dt, false, true);
    check_bwd(&d, 67, 96, 200, dt, true, true);
    check_bwd(&d, 67, 96, 200, dt, false, false);
    check_bwd(&d, 1, 8, 8, dt, true, true);
    dev_close(&d);
}

Test(gpu_gemm, matmul_matches_cpu_fp32)
{
    check_matmul(GS_KERN_F32);
}

Test(gpu_gemm, matmul_matches_cpu_bf16)
{
    check_matmul(GS_KERN_BF16);
}

Test(gpu_gemm, matmul_matches_cpu_fp16)
{
    check_matmul(GS_KERN_F16);
}

/* 600 rows: the bias gradient's partial sums over three row chunks. */
Test(gpu_gemm, bias_gradient_sums_several_row_chunks)
{
    struct dev d;

    NEED_DEVICE();
    dev_open(&d);
    check_bwd(&d, 600, 64, 96, GS_KERN_F32, false, true);
    check_bwd(&d, 600, 64, 96, GS_KERN_BF16, false, true);
    dev_close(&d);
}

/* OC and C not multiples of 8: cuBLASLt cannot take the GELU input's leading dimension, so
 * the bias and GELU run as separate steps (fp32: any leading dimension is allowed). */
Test(gpu_gemm, matmul_gelu_unfused_on_odd_leading_dimensions)
{
    struct dev d;

    NEED_DEVICE();
    dev_open(&d);
    check_fwd(&d, 37, 29, 45, GS_KERN_F32, true, true);
    check_fwd(&d, 37, 29, 45, GS_KERN_F32, false, true);
    check_fwd(&d, 37, 29, 45, GS_KERN_F32, true, false);
    check_bwd(&d, 37, 29, 45, GS_KERN_F32, true, true);
    dev_close(&d);
}

Test(gpu_gemm, tf32_switch_trades_fp32_exactness_and_back)
{
    struct dev d;

    NEED_DEVICE();
    dev_open(&d);
    gs_kern_gpu_set_tf32(d.g, true);
    d.tf32 = true;
    check_fwd(&d, 67, 96, 200, GS_KERN_F32, true, false);
    gs_kern_gpu_set_tf32(d.g, false);
    d.tf32 = false;
    check_fwd(&d, 67, 96, 200, GS_KERN_F32, true, false);
    dev_close(&d);
}

/* --- attention ----------------------------------------------------------------------------- */

struct att {
    int B, T, C, NH;
    enum gs_kern_dtype dt;
    float *qkv, *dout; /* inputs, rounded to dt */
    float *out, *dqkv; /* results */
};

static void att_cpu(struct att *a, struct att *r)
{
    size_t n3 = (size_t)a->B * a->T * 3 * a->C, n = (size_t)a->B * a->T * a->C;
    size_t ws_bytes = gs_kern_attention_ws_bytes(a->T, a->C, a->NH);
    void *qkv = kref_to_dtype(a->qkv, n3, a->dt), *dout = kref_to_dtype(a->dout, n, a->dt);
    void *out = calloc(n, sizeof(float)), *dqkv = calloc(n3, sizeof(float));
    float *att = calloc((size_t)a->B * a->NH * a->T * a->T, sizeof(float));
    void *ws = malloc(ws_bytes);

    cr_assert(out && dqkv && att && ws);
    cr_assert_eq(gs_kern_attention_fwd(out, att, qkv, a->B, a->T, a->C, a->NH, a->dt, ws, ws_bytes),
                 0);
    cr_assert_eq(
        gs_kern_attention_bwd(dqkv, dout, att, qkv, a->B, a->T, a->C, a->NH, a->dt, ws, ws_bytes),
        0);
    r->out = kref_from_dtype(out, n, a->dt);
    r->dqkv = kref_from_dtype(dqkv, n3, a->dt);
    free(qkv);
    free(dout);
    free(out);
    free(dqkv);
    free(att);
    free(ws);
}

static float *att_gpu(struct dev *d, struct att *a, struct att *r)
{
    size_t n3 = (size_t)a->B * a->T * 3 * a->C, n = (size_t)a->B * a->T * a->C;
    size_t es = gs_kern_dtype_size(a->dt), nl = (size_t)a->B * a->NH * a->T;
    void *qkv = up(a->qkv, n3, a->dt), *dout = up(a->dout, n, a->dt);
    void *out = junk(d, n * es), *dqkv = junk(d, n3 * es);
    float *lse = junk(d, nl * sizeof(float)), *ret;

    gpu_ok(gs_kern_gpu_attention_fwd(d->g, out, lse, qkv, a->B, a->T, a->C, a->NH, a->dt),
           "attention_fwd");
    gpu_ok(
        gs_kern_gpu_attention_bwd(d->g, dqkv, dout, out, lse, qkv, a->B, a->T, a->C, a->NH, a->dt),
        "attention_bwd");
    gpu_ok(gs_kern_gpu_sync(d->g), "sync");
    r->out = down(out, n, a->dt);
    r->dqkv = down(dqkv, n3, a->dt);
    ret = down(lse, nl, GS_KERN_F32);
    gs_kern_dev_free(qkv);
    gs_kern_dev_free(dout);
    gs_kern_dev_free(out);
    gs_kern_dev_free(dqkv);
    gs_kern_dev_free(lse);
    return ret;
}

static void check_attention(struct dev *d, int B, int T, int C, int NH, enum gs_kern_dtype dt)
{
    struct att a = {.B = B, .T = T, .C = C, .NH = NH, .dt = dt}, want = {0}, got = {0};
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C, nl = (size_t)B * NH * T;
    double *lse_want;
    float *lse;

    a.qkv = fill(n3, 1.5f, 31, dt);
    a.dout = fill(n, 1.0f, 32, dt);
    att_cpu(&a, &want);
    lse = att_gpu(d, &a, &got);
    lse_want = kref_attention_lse(a.qkv, B, T, C, NH);
    check_vs(got.out, want.out, n, att_tol(dt), "out");
    check_tol(lse, lse_want, nl, (struct tol){0.0, 1e-5}, "lse");
    check_vs(got.dqkv, want.dqkv, n3, att_tol(dt), "dqkv");
    free(a.qkv);
    free(a.dout);
    free(want.out);
    free(want.dqkv);
    free(got.out);
    free(got.dqkv);
    free(lse);
    free(lse_want);
}

/* hs = 32 over a ragged T (the last 64-row tile 3 rows deep), then hs = 64 at T = 256 and
 * over a ragged T of several tiles. bf16 and fp16 run the Tensor-Core kernels here unless
 * simt asks for the SIMT ones. */
static void check_attention_dtype(enum gs_kern_dtype dt, bool simt)
{
    struct dev d;

    NEED_DEVICE();
    dev_open(&d);
    gs_kern_gpu_set_attention_simt(d.g, simt);
    check_attention(&d, 2, 67, 96, 3, dt);
    check_attention(&d, 1, 256, 128, 2, dt);
    check_attention(&d, 2, 200, 256, 4, dt);
    dev_close(&d);
}

Test(gpu_gemm, attention_matches_cpu_fp32)
{
    check_attention_dtype(GS_KERN_F32, false);
}

Test(gpu_gemm, attention_matches_cpu_bf16)
{
    check_attention_dtype(GS_KERN_BF16, false);
}

Test(gpu_gemm, attention_matches_cpu_fp16)
{
    check_attention_dtype(GS_KERN_F16, false);
}

/* The SIMT kernels where the Tensor-Core ones would run: the fallback stays tested. */
Test(gpu_gemm, attention_simt_matches_cpu_16bit)
{
    check_attention_dtype(GS_KERN_BF16, true);
    check_attention_dtype(GS_KERN_F16, true);
}

/* A context with the cuDNN attention path on (skips where there is no device or no cuDNN). */
static void cudnn_open(struct dev *d)
{
    NEED_DEVICE();
    if (!gs_kern_cudnn_built())
        cr_skip_test("built without cuDNN");
    dev_open(d);
    gpu_ok(gs_kern_gpu_set_attention_cudnn(d->g, true), "set_attention_cudnn");
}

/* cuDNN's fused attention over the same shapes, against the same CPU results and tolerances
 * (its P is rounded to the dtype before P.V, as the Tensor-Core kernels' is): the plans are
 * prepared per shape first, and a refusal fails the test with cuDNN's reason. */
static void check_attention_cudnn(enum gs_kern_dtype dt)
{
    static const int shapes[][4] = {{2, 67, 96, 3}, {1, 256, 128, 2}, {2, 200, 256, 4}};
    struct dev d;

    cudnn_open(&d);
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const int *s = shapes[i];

        gpu_ok(gs_kern_gpu_attention_prepare(d.g, s[0], s[1], s[2], s[3], dt), "prepare");
        cr_assert(gs_kern_gpu_attention_on_cudnn(d.g, s[0], s[1], s[2], s[3], dt));
        cr_assert_gt(gs_kern_gpu_attention_scratch_bytes(d.g), 0, "softmax_sum at least");
        check_attention(&d, s[0], s[1], s[2], s[3], dt);
    }
    cr_log_info("cuDNN attention: %s", gs_kern_gpu_attention_engine(d.g));
    dev_close(&d);
}

Test(gpu_gemm, attention_cudnn_matches_cpu_16bit)
{
    check_attention_cudnn(GS_KERN_BF16);
    check_attention_cudnn(GS_KERN_F16);
}

/* fp32 and unprepared shapes stay on the kernels of our own with the cuDNN path on. */
Test(gpu_gemm, attention_cudnn_leaves_other_shapes_to_our_kernels)
{
    struct dev d;

    cudnn_open(&d);
    cr_assert_eq(gs_kern_gpu_attention_prepare(d.g, 2, 67, 96, 3, GS_KERN_F32), -ENOTSUP);
    cr_assert(!gs_kern_gpu_attention_on_cudnn(d.g, 2, 67, 96, 3, GS_KERN_F32));
    check_attention(&d, 2, 67, 96, 3, GS_KERN_F32);
    cr_assert(!gs_kern_gpu_attention_on_cudnn(d.g, 2, 45, 160, 2, GS_KERN_BF16));
    check_attention(&d, 2, 45, 160, 2, GS_KERN_BF16);
    dev_close(&d);
}

/* Head sizes 4 (far below the 32-channel instance), 80 (channels padded to 128) and 128. */
Test(gpu_gemm, attention_head_sizes_up_to_128)
{
    struct dev d;

    NEED_DEVICE();
    dev_open(&d);
    check_attention(&d, 2, 5, 12, 3, GS_KERN_F32);
    check_attention(&d, 2, 45, 160, 2, GS_KERN_F32);
    check_attention(&d, 1, 130, 256, 2, GS_KERN_F32);
    check_attention(&d, 1, 130, 256, 2, GS_KERN_BF16);
    dev_close(&d);
}

/* --- determinism and graphs ---------------------------------------------------------------- */

/* One bf16 "step": a Linear layer with bias and GELU forward, a Linear backward whose input
 * was a GELU (dinp, dw, dbias accumulated onto fixed initial values; 600 rows, three bias
 * chunks), and attention forward and backward. */
struct step {
    struct mm m;
    struct att a;
    void *inp, *w, *b, *dout, *bpre, *out, *pre, *dinp, *qkv, *adout, *aout, *dqkv;
    float *dw, *db, *lse;
};

#define STEP_N 600
#define STEP_C 64
#define STEP_OC 256
#define ATT_B 2
#define ATT_T 100
#define ATT_C 128
#define ATT_NH 2

static void step_init(struct dev *d, struct step *s)
{
    struct mm *m = &s->m;
    struct att *a = &s->a;
    size_t ni = STEP_N * STEP_C, no = STEP_N * STEP_OC, nw = STEP_OC * STEP_C;
    size_t n3 = ATT_B * ATT_T * 3 * ATT_C, n = ATT_B * ATT_T * ATT_C;

    mm_init(m, STEP_N, STEP_C, STEP_OC, GS_KERN_BF16);
    s->inp = up(m->inp, ni, m->dt);
    s->w = up(m->w, nw, m->dt);
    s->b = up(m->bias, STEP_OC, m->dt);
    s->dout = up(m->dout, no, m->dt);
    s->bpre = up(m->pre, ni, m->dt);
    s->out = junk(d, no * 2);
    s->pre = junk(d, no * 2);
    s->dinp = junk(d, ni * 2);
    s->dw = junk(d, nw * 4);
    s->db = junk(d, STEP_OC * 4);
    *a = (struct att){.B = ATT_B, .T = ATT_T, .C = ATT_C, .NH = ATT_NH, .dt = GS_KERN_BF16};
    a->qkv = fill(n3, 1.5f, 41, a->dt);
    a->dout = fill(n, 1.0f, 42, a->dt);
    s->qkv = up(a->qkv, n3, a->dt);
    s->adout = up(a->dout, n, a->dt);
    s->aout = junk(d, n * 2);
    s->dqkv = junk(d, n3 * 2);
    s->lse = junk(d, ATT_B * ATT_NH * ATT_T * 4);
}

static void step_free(struct step *s)
{
    void *dev[] = {s->inp, s->w,     s->b,    s->dout, s->bpre, s->out, s->pre, s->dinp,
                   s->qkv, s->adout, s->aout, s->dqkv, s->dw,   s->db,  s->lse};

    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        gs_kern_dev_free(dev[i]);
    mm_free(&s->m);
    free(s->a.qkv);
    free(s->a.dout);
}

/* The step's work, queued on g's stream. */
static void step_queue(struct dev *d, struct step *s)
{
    struct mm *m = &s->m;
    struct att *a = &s->a;

    gpu_ok(
        gs_kern_gpu_matmul_fwd(d->g, s->out, s->pre, s->inp, s->w, s->b, m->n, m->c, m->oc, m->dt),
        "matmul_fwd");
    gpu_ok(gs_kern_gpu_matmul_bwd(d->g, s->dinp, s->dw, s->db, s->dout, s->inp, s->w, s->bpre, m->n,
                                  m->c, m->oc, m->dt),
           "matmul_bwd");
    gpu_ok(gs_kern_gpu_attention_fwd(d->g, s->aout, s->lse, s->qkv, a->B, a->T, a->C, a->NH, a->dt),
           "attention_fwd");
    gpu_ok(gs_kern_gpu_attention_bwd(d->g, s->dqkv, s->adout, s->aout, s->lse, s->qkv, a->B, a->T,
                                     a->C, a->NH, a->dt),
           "attention_bwd");
}

/* Every output's bytes, concatenated (malloc'ed; after gs_kern_gpu_sync). */
static unsigned char *step_results(const struct step *s, size_t *ret_bytes)
{
    const size_t ni = STEP_N * STEP_C, no = STEP_N * STEP_OC, nw = STEP_OC * STEP_C;
    const size_t n3 = ATT_B * ATT_T * 3 * ATT_C, n = ATT_B * ATT_T * ATT_C;
    const struct {
        const void *p;
        size_t bytes;
    } outs[] = {{s->out, no * 2},     {s->pre, no * 2},
                {s->dinp, ni * 2},    {s->dw, nw * 4},
                {s->db, STEP_OC * 4}, {s->aout, n * 2},
                {s->dqkv, n3 * 2},    {s->lse, ATT_B * ATT_NH * ATT_T * 4}};
    size_t total = 0, at = 0;
    unsigned char *all;

    for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++)
        total += outs[i].bytes;
    all = malloc(total);
    cr_assert_not_null(all);
    for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
        void *h = down_raw(outs[i].p, outs[i].bytes);

        memcpy(all + at, h, outs[i].bytes);
        at += outs[i].bytes;
        free(h);
    }
    *ret_bytes = total;
    return all;
}

/* Runs the step from the same initial gradients, directly or captured into a CUDA Graph
 * and replayed, and returns its outputs' bytes. */
static unsigned char *step_run(struct dev *d, struct step *s, bool graph, size_t *ret_bytes)
{
    void *exec = NULL;

    cr_assert_eq(gs_kern_dev_copy_to(s->dw, s->m.dw0, STEP_OC * STEP_C * 4), 0);
    cr_assert_eq(gs_kern_dev_copy_to(s->db, s->m.db0, STEP_OC * 4), 0);
    cr_assert_eq(gs_kern_dev_sync(), 0);
    if (graph) {
        gpu_ok(gs_kern_gpu_capture_begin(d->g), "capture_begin");
        step_queue(d, s);
        gpu_ok(gs_kern_gpu_capture_end(d->g, &exec), "capture_end");
        cr_assert_not_null(exec);
        gpu_ok(gs_kern_gpu_graph_launch(d->g, exec), "graph_launch");
    } else {
        step_queue(d, s);
    }
    gpu_ok(gs_kern_gpu_sync(d->g), "sync");
    gs_kern_gpu_graph_free(exec);
    return step_results(s, ret_bytes);
}

Test(gpu_gemm, repeats_bit_for_bit)
{
    struct dev d;
    struct step s;
    unsigned char *first, *second;
    size_t bytes, bytes2;

    NEED_DEVICE();
    dev_open(&d);
    step_init(&d, &s);
    first = step_run(&d, &s, false, &bytes);
    second = step_run(&d, &s, false, &bytes2);
    cr_assert_eq(bytes, bytes2);
    cr_assert_eq(memcmp(first, second, bytes), 0, "two runs differ");
    free(first);
    free(second);
    step_free(&s);
    dev_close(&d);
}

/* The direct run comes first: it also loads every kernel, which capture should not do. */
Test(gpu_gemm, graph_replays_the_same_bits)
{
    struct dev d;
    struct step s;
    unsigned char *direct, *replayed;
    size_t bytes, bytes2;

    NEED_DEVICE();
    dev_open(&d);
    step_init(&d, &s);
    direct = step_run(&d, &s, false, &bytes);
    replayed = step_run(&d, &s, true, &bytes2);
    cr_assert_eq(bytes, bytes2);
    cr_assert_eq(memcmp(direct, replayed, bytes), 0, "graph differs from the direct run");
    free(direct);
    free(replayed);
    step_free(&s);
    dev_close(&d);
}

/* Synchronising a capturing stream is illegal: the capture is refused (-ENOTSUP, with a
 * reason), and the stream then works as before. */
Test(gpu_gemm, refused_capture_leaves_the_stream_usable)
{
    struct dev d;
    void *exec = NULL;

    NEED_DEVICE();
    dev_open(&d);
    gpu_ok(gs_kern_gpu_capture_begin(d.g), "capture_begin");
    cr_assert_lt(gs_kern_gpu_sync(d.g), 0);
    cr_assert_eq(gs_kern_gpu_capture_end(d.g, &exec), -ENOTSUP);
    cr_assert_null(exec);
    cr_assert_neq(gs_kern_dev_last_error()[0], '\0');
    check_fwd(&d, 67, 96, 200, GS_KERN_BF16, true, true);
    dev_close(&d);
}

Test(gpu_gemm, info_describes_the_device)
{
    struct dev d;
    struct gs_kern_gpu_info info;

    NEED_DEVICE();
    dev_open(&d);
    gpu_ok(gs_kern_gpu_info(d.g, &info), "info");
    cr_assert_neq(info.name[0], '\0');
    cr_assert_geq(info.major, 8, "built for sm_80 and sm_90 only");
    cr_assert_gt(info.sms, 0);
    cr_assert_gt(info.total_bytes, 0);
    cr_assert_leq(info.free_bytes, info.total_bytes);
    if (strstr(info.name, "H200") != NULL)
        cr_assert_eq(info.bf16_peak_flops, 989e12);
    cr_assert_eq(gs_kern_gpu_device(d.g), 0);
    cr_assert_not_null(gs_kern_gpu_stream(d.g));
    dev_close(&d);
}

/* Host -> device -> host on a second stream, ordered by an event, timed by two more. */
Test(gpu_gemm, streams_events_and_copies_round_trip)
{
    enum { N = 1 << 16 };
    void *stream = NULL, *done = NULL, *t0 = NULL, *t1 = NULL, *dev = NULL;
    float *host = NULL, *back = NULL, ms = -1.0f;
    struct dev d;

    NEED_DEVICE();
    dev_open(&d);
    gpu_ok(gs_kern_gpu_stream_new(&stream), "stream_new");
    gpu_ok(gs_kern_gpu_event_new(false, &done), "event_new");
    gpu_ok(gs_kern_gpu_event_new(true, &t0), "event_new");
    gpu_ok(gs_kern_gpu_event_new(true, &t1), "event_new");
    cr_assert_eq(gs_kern_host_alloc(2 * N * sizeof(float), (void **)&host), 0);
    back = host + N;
    dev = dev_bytes(N * sizeof(float));
    kref_fill(host, N, 1.0f, 51);
    memset(back, 0, N * sizeof(float));
    gpu_ok(gs_kern_gpu_event_record(t0, stream), "record");
    gpu_ok(gs_kern_gpu_copy_async(dev, host, N * sizeof(float), stream), "copy up");
    gpu_ok(gs_kern_gpu_event_record(done, stream), "record");
    /* the compute stream waits for the upload, then copies it back */
    gpu_ok(gs_kern_gpu_stream_wait(gs_kern_gpu_stream(d.g), done), "stream_wait");
    gpu_ok(gs_kern_gpu_copy_async(back, dev, N * sizeof(float), gs_kern_gpu_stream(d.g)),
           "copy down");
    gpu_ok(gs_kern_gpu_event_record(t1, stream), "record");
    gpu_ok(gs_kern_gpu_sync(d.g), "sync");
    gpu_ok(gs_kern_gpu_stream_sync(stream), "stream_sync");
    gpu_ok(gs_kern_gpu_event_sync(t1), "event_sync");
    gpu_ok(gs_kern_gpu_event_ms(t0, t1, &ms), "event_ms");
    cr_assert_geq(ms, 0.0f);
    cr_assert_eq(memcmp(host, back, N * sizeof(float)), 0);
    cr_assert_eq(gs_kern_gpu_copy_async(dev, host, 0, stream), 0);
    gs_kern_dev_free(dev);
    gs_kern_host_free(host);
    gs_kern_gpu_event_free(done);
    gs_kern_gpu_event_free(t0);
    gs_kern_gpu_event_free(t1);
    gs_kern_gpu_stream_free(stream);
    dev_close(&d);
}

Test(gpu_gemm, rejects_bad_arguments_before_queuing)
{
    struct dev d;
    void *buf;
    float *f;
    enum gs_kern_dtype bad = (enum gs_kern_dtype)7;

    NEED_DEVICE();
    dev_open(&d);
    buf = dev_bytes(1 << 20);
    f = buf;
    cr_assert_eq(gs_kern_gpu_matmul_fwd(d.g, buf, NULL, buf, buf, NULL, 0, 8, 8, GS_KERN_F32),
                 -EINVAL);
    cr_assert_eq(gs_kern_gpu_matmul_fwd(d.g, NULL, NULL, buf, buf, NULL, 8, 8, 8, GS_KERN_F32),
                 -EINVAL);
    cr_assert_eq(gs_kern_gpu_matmul_fwd(d.g, buf, NULL, buf, buf, NULL, 8, 8, 8, bad), -EINVAL);
    cr_assert_eq(
        gs_kern_gpu_matmul_bwd(d.g, buf, NULL, NULL, buf, buf, buf, NULL, 8, 8, 8, GS_KERN_F32),
        -EINVAL);
    cr_assert_eq(gs_kern_gpu_attention_fwd(d.g, buf, f, buf, 1, 4, 10, 3, GS_KERN_F32), -EINVAL);
    cr_assert_eq(gs_kern_gpu_attention_fwd(d.g, buf, f, buf, 1, 4, 258, 1, GS_KERN_F32), -EINVAL);
    cr_assert_eq(gs_kern_gpu_attention_fwd(d.g, buf, f, buf, 1, 4, 8, 2, bad), -EINVAL);
    gs_kern_gpu_set_workspace(d.g, NULL, 0);
    cr_assert_eq(gs_kern_gpu_attention_bwd(d.g, buf, buf, buf, f, buf, 1, 4, 8, 2, GS_KERN_F32),
                 -ENOSPC);
    cr_assert_eq(gs_kern_gpu_matmul_bwd(d.g, buf, f, f, buf, buf, buf, NULL, 8, 8, 8, GS_KERN_F32),
                 -ENOSPC);
    gpu_ok(gs_kern_gpu_sync(d.g), "sync");
    gs_kern_dev_free(buf);
    dev_close(&d);
}

Test(gpu_gemm, cpu_only_build_reports_no_device)
{
    struct gs_kern_gpu *g = NULL;
    void *graph = NULL, *stream = NULL;
    float f = 0.0f;

    if (gs_kern_cuda_built())
        cr_skip_test("built with CUDA");
    cr_assert_eq(gs_kern_gpu_new(0, &g), -ENODEV);
    cr_assert_null(g);
    cr_assert_eq(gs_kern_gpu_stream_new(&stream), -ENODEV);
    cr_assert_eq(gs_kern_gpu_ws_bytes(1, 64, 64, 2, 128, 1024), 0);
    cr_assert_eq(gs_kern_gpu_matmul_fwd(g, &f, NULL, &f, &f, NULL, 1, 1, 1, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_matmul_bwd(g, &f, &f, &f, &f, &f, &f, NULL, 1, 1, 1, GS_KERN_F32),
                 -ENODEV);
    cr_assert_eq(gs_kern_gpu_attention_fwd(g, &f, &f, &f, 1, 1, 1, 1, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_attention_bwd(g, &f, &f, &f, &f, &f, 1, 1, 1, 1, GS_KERN_F32),
                 -ENODEV);
    cr_assert_eq(gs_kern_gpu_capture_begin(g), -ENODEV);
    cr_assert_eq(gs_kern_gpu_capture_end(g, &graph), -ENODEV);
    cr_assert_eq(gs_kern_gpu_graph_launch(g, graph), -ENODEV);
}
