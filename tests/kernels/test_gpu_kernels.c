/*
 * test_gpu_kernels.c: the CUDA twins of kernels/gpu.h (all but matmul and attention, which
 * test_gpu_gemm.c covers) against their CPU versions (ops.h, adamw.h, dtype.h) on the same
 * inputs, in fp32, bf16 and fp16, forward and backward. Shapes are odd (C = 72 and 770
 * channels, N = 37 and 70 rows, V = 100 padded to Vp = 128, 10007 and 300007 elements) so no
 * kernel gets an even split for free; accumulated outputs (dinp of LayerNorm, the residual's
 * da/db, every float parameter gradient, the loss and gradient-norm sums) start from nonzero
 * values on both sides, so "+=" is checked too.
 *
 * Tolerances. Both sides compute in float and round once on store; the GPU sums in another
 * (fixed) order, uses CUDA's expf/logf/tanhf, and may contract a*b+c into an FMA. Element-wise:
 *     |gpu - cpu| <= REL[dt] * |cpu| + 1e-5 * max |cpu| over the tensor
 * REL is 1e-5 for fp32 outputs; 1e-2 for bf16 (1 to 2.5 ulps) and 2e-3 for fp16 (2 to 4
 * ulps), since a float difference of a few ulps can move a value across a 16-bit rounding
 * boundary. Float outputs (parameter gradients, losses, mean/rstd) use the fp32 row whatever
 * the storage dtype: both sides read the same 16-bit inputs. Kernels that are one rounded
 * operation per element must give the CPU's bits exactly: encoder forward, residual forward
 * and backward, the fused residual's res, the unscaled gradient, cast, and AdamW (written
 * without FMA contraction, so its operations are the CPU's).
 *
 * Every GPU test skips itself (cr_skip_test: counted as skipped, never passed) when the build
 * has no CUDA or no device is visible; the CPU-only build checks that the stubs say -ENODEV.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adamw.h"
#include "kernels/device.h"
#include "kernels/gpu.h"
#include "kernels/ops.h"
#include "kref.h"

static const enum gs_kern_dtype dtypes[] = {GS_KERN_F32, GS_KERN_BF16, GS_KERN_F16};
static const char *const dt_names[] = {"fp32", "bf16", "fp16"};
static const double rel_tol[] = {1e-5, 1e-2, 2e-3};
#define SPAN_TOL 1e-5

/* The workspace is sized for shapes at least as large as any test below. */
enum { WS_B = 8, WS_T = 128, WS_C = 1024, WS_NH = 16, WS_VP = 50304, WS_GRADS = 1 << 22 };

/* ---- device session and buffers (freed by close_all, every test's .fini) ---- */

enum { MAX_BUFS = 400 };

static struct gs_kern_gpu *gpu;
static void *ws;
static size_t ws_bytes;
static void *host_bufs[MAX_BUFS], *dev_bufs[MAX_BUFS];
static int n_host, n_dev;

static void open_gpu(void)
{
    int count = 0;

    if (!gs_kern_cuda_built() || gs_kern_dev_count(&count) < 0 || count == 0)
        cr_skip_test("no CUDA device");
    cr_assert_eq(gs_kern_gpu_new(0, &gpu), 0, "%s", gs_kern_dev_last_error());
    ws_bytes = gs_kern_gpu_ws_bytes(WS_B, WS_T, WS_C, WS_NH, WS_VP, WS_GRADS);
    cr_assert_gt(ws_bytes, 0);
    cr_assert_eq(gs_kern_dev_alloc(ws_bytes, &ws), 0, "%s", gs_kern_dev_last_error());
    gs_kern_gpu_set_workspace(gpu, ws, ws_bytes);
}

static void close_all(void)
{
    for (int i = 0; i < n_host; i++)
        free(host_bufs[i]);
    for (int i = 0; i < n_dev; i++)
        gs_kern_dev_free(dev_bufs[i]);
    n_host = n_dev = 0;
    if (gpu != NULL)
        gs_kern_gpu_free(gpu);
    gpu = NULL;
    gs_kern_dev_free(ws);
    ws = NULL;
}

static void *keep(void *p)
{
    cr_assert_not_null(p);
    cr_assert_lt(n_host, MAX_BUFS);
    host_bufs[n_host++] = p;
    return p;
}

static void *hmem(size_t bytes)
{
    return keep(calloc(bytes ? bytes : 1, 1));
}

static void *hcopy(const void *src, size_t bytes)
{
    return memcpy(hmem(bytes), src, bytes);
}

/* n values scale * U[-1, 1) from seed, stored in dtype dt. */
static void *hrand(size_t n, float scale, uint64_t seed, enum gs_kern_dtype dt)
{
    float *f = hmem(n * sizeof(float));

    kref_fill(f, n, scale, seed);
    return dt == GS_KERN_F32 ? (void *)f : keep(kref_to_dtype(f, n, dt));
}

static void *dmem(size_t bytes)
{
    void *d = NULL;

    cr_assert_lt(n_dev, MAX_BUFS);
    cr_assert_eq(gs_kern_dev_alloc(bytes ? bytes : 1, &d), 0, "%s", gs_kern_dev_last_error());
    dev_bufs[n_dev++] = d;
    return d;
}

/* A device copy of host bytes, complete before anything queued later reads it (the context's
 * stream need not be ordered after the copy's). */
static void *dput(const void *h, size_t bytes)
{
    void *d = dmem(bytes);

    cr_assert_eq(gs_kern_dev_copy_to(d, h, bytes), 0, "%s", gs_kern_dev_last_error());
    cr_assert_eq(gs_kern_dev_sync(), 0, "%s", gs_kern_dev_last_error());
    return d;
}

/* A host copy of device bytes, after everything queued on the context has run. */
static void *dget(const void *d, size_t bytes)
{
    void *h = hmem(bytes);

    cr_assert_eq(gs_kern_gpu_sync(gpu), 0, "%s", gs_kern_dev_last_error());
    cr_assert_eq(gs_kern_dev_copy_from(h, d, bytes), 0, "%s", gs_kern_dev_last_error());
    return h;
}

static size_t dsz(enum gs_kern_dtype dt)
{
    return gs_kern_dtype_size(dt);
}

/* got and want hold n values of dtype dt; `run` is the storage dtype of the kernel run. */
static void check_near(const void *got, const void *want, size_t n, enum gs_kern_dtype dt,
                       enum gs_kern_dtype run, const char *what)
{
    double span = 0;

    for (size_t i = 0; i < n; i++)
        span = fmax(span, fabs(gs_kern_load(want, i, dt)));
    for (size_t i = 0; i < n; i++) {
        double g = gs_kern_load(got, i, dt), w = gs_kern_load(want, i, dt);

        cr_assert_leq(fabs(g - w), rel_tol[dt] * fabs(w) + SPAN_TOL * span,
                      "%s (%s run)[%zu]: gpu %.9g, cpu %.9g", what, dt_names[run], i, g, w);
    }
}

/* Bit for bit: n elements of elem_size bytes. */
static void check_same(const void *got, const void *want, size_t n, size_t elem_size,
                       enum gs_kern_dtype run, const char *what)
{
    const unsigned char *g = got, *w = want;

    for (size_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(g + i * elem_size, w + i * elem_size, elem_size), 0,
                     "%s (%s run)[%zu] differs", what, dt_names[run], i);
}

/* ---- encoder ---- */

enum { EB = 3, ET = 13, EN = EB * ET, EC = 72, EV = 100 };

struct enc {
    int32_t tokens[EN], order[EN], starts[EN + 1];
    int64_t keys[EN];
    int nuniq;
    void *wte, *wpe, *dout;
    float *dwte, *dwpe;
};

/* Random inputs; tokens from a few ids, so most repeat (runs of several rows). */
static void enc_init(struct enc *e, enum gs_kern_dtype dt, uint64_t seed)
{
    uint64_t state = seed;

    for (int i = 0; i < EN; i++)
        e->tokens[i] = 7 * (int32_t)kref_uniform(&state, 0, 14); /* 0, 7, ..., 91 */
    e->tokens[5] = EV - 1;
    e->wte = hrand(EV * EC, 1.0f, seed + 1, dt);
    e->wpe = hrand(ET * EC, 1.0f, seed + 2, dt);
    e->dout = hrand(EN * EC, 1.0f, seed + 3, dt);
    e->dwte = hrand(EV * EC, 0.5f, seed + 4, GS_KERN_F32);
    e->dwpe = hrand(ET * EC, 0.5f, seed + 5, GS_KERN_F32);
}

/* The GPU's forward output and gradients for e's inputs (grouping the tokens as the trainer
 * does); e itself is not changed. */
static void enc_gpu(struct enc *e, enum gs_kern_dtype dt, void **out, float **dwte, float **dwpe)
{
    void *d_out = dmem(EN * EC * dsz(dt)), *d_tok = dput(e->tokens, sizeof(e->tokens));
    void *d_dwte = dput(e->dwte, EV * EC * sizeof(float));
    void *d_dwpe = dput(e->dwpe, ET * EC * sizeof(float));
    void *d_order, *d_starts;

    cr_assert_eq(gs_kern_encoder_runs(e->tokens, EN, e->keys, e->order, e->starts, &e->nuniq), 0);
    d_order = dput(e->order, sizeof(e->order));
    d_starts = dput(e->starts, sizeof(e->starts));
    cr_assert_eq(gs_kern_gpu_encoder_fwd(gpu, d_out, d_tok, dput(e->wte, EV * EC * dsz(dt)),
                                         dput(e->wpe, ET * EC * dsz(dt)), EB, ET, EC, EV, dt),
                 0);
    cr_assert_eq(gs_kern_gpu_encoder_bwd(gpu, d_dwte, d_dwpe, dput(e->dout, EN * EC * dsz(dt)),
                                         d_tok, d_order, d_starts, e->nuniq, EB, ET, EC, EV, dt),
                 0);
    *out = dget(d_out, EN * EC * dsz(dt));
    *dwte = dget(d_dwte, EV * EC * sizeof(float));
    *dwpe = dget(d_dwpe, ET * EC * sizeof(float));
}

static void encoder_case(enum gs_kern_dtype dt)
{
    struct enc e;
    void *out = hmem(EN * EC * dsz(dt)), *g_out;
    float *g_dwte, *g_dwpe;

    enc_init(&e, dt, 10 + (uint64_t)dt);
    enc_gpu(&e, dt, &g_out, &g_dwte, &g_dwpe);
    cr_assert_gt(e.nuniq, 1);
    cr_assert_lt(e.nuniq, EN, "some tokens repeat");
    cr_assert_eq(gs_kern_encoder_fwd(out, e.tokens, e.wte, e.wpe, EB, ET, EC, EV, dt), 0);
    cr_assert_eq(gs_kern_encoder_bwd(e.dwte, e.dwpe, e.dout, e.tokens, EB, ET, EC, EV, dt), 0);
    check_same(g_out, out, EN * EC, dsz(dt), dt, "encoder out");
    check_near(g_dwte, e.dwte, EV * EC, GS_KERN_F32, dt, "dwte");
    check_near(g_dwpe, e.dwpe, ET * EC, GS_KERN_F32, dt, "dwpe");
}

Test(gpu_encoder, forward_and_backward_match_cpu_in_every_dtype, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++)
        encoder_case(dtypes[k]);
}

/* Ids >= V (the host's check is the caller's, gpu.h) read nothing and add nothing: the CPU's
 * answer on the same batch with those rows' token 0 and dout 0 for dwte, dout as is for
 * dwpe (positions do not care about ids). */
Test(gpu_encoder, out_of_range_tokens_contribute_nothing, .fini = close_all)
{
    const enum gs_kern_dtype dt = GS_KERN_BF16;
    struct enc e;
    int32_t cpu_tokens[EN];
    void *out = hmem(EN * EC * dsz(dt)), *g_out, *dout0;
    float *g_dwte, *g_dwpe, *dwte0 = NULL;

    open_gpu();
    enc_init(&e, dt, 30);
    e.tokens[2] = EV;
    e.tokens[EN - 1] = 1000;
    enc_gpu(&e, dt, &g_out, &g_dwte, &g_dwpe);
    memcpy(cpu_tokens, e.tokens, sizeof(cpu_tokens));
    cpu_tokens[2] = cpu_tokens[EN - 1] = 0;
    dout0 = hcopy(e.dout, EN * EC * dsz(dt));
    memset((char *)dout0 + 2 * EC * dsz(dt), 0, EC * dsz(dt));
    memset((char *)dout0 + (EN - 1) * EC * dsz(dt), 0, EC * dsz(dt));
    dwte0 = hcopy(e.dwte, EV * EC * sizeof(float));
    cr_assert_eq(
        gs_kern_encoder_bwd(dwte0, hmem(ET * EC * 4), dout0, cpu_tokens, EB, ET, EC, EV, dt), 0);
    cr_assert_eq(gs_kern_encoder_bwd(e.dwte, e.dwpe, e.dout, cpu_tokens, EB, ET, EC, EV, dt), 0);
    check_near(g_dwte, dwte0, EV * EC, GS_KERN_F32, dt, "dwte");
    check_near(g_dwpe, e.dwpe, ET * EC, GS_KERN_F32, dt, "dwpe");
    cr_assert_eq(gs_kern_encoder_fwd(out, cpu_tokens, e.wte, e.wpe, EB, ET, EC, EV, dt), 0);
    for (int r = 0; r < EN; r++)
        if (r != 2 && r != EN - 1)
            check_same((char *)g_out + (size_t)r * EC * dsz(dt),
                       (char *)out + (size_t)r * EC * dsz(dt), EC, dsz(dt), dt, "valid row");
    check_same((char *)g_out + 2 * EC * dsz(dt), (char *)e.wpe + 2 * EC * dsz(dt), EC, dsz(dt), dt,
               "row of id V is wpe alone");
    check_same((char *)g_out + (EN - 1) * EC * dsz(dt), (char *)e.wpe + (ET - 1) * EC * dsz(dt), EC,
               dsz(dt), dt, "row of id 1000 is wpe alone");
}

/* ---- LayerNorm ---- */

struct ln {
    int N, C;
    void *inp, *w, *b, *dout, *dinp;
    float *dw, *db;
};

static void ln_init(struct ln *l, int N, int C, enum gs_kern_dtype dt, uint64_t seed)
{
    size_t n = (size_t)N * (size_t)C;
    float *x = hmem(n * sizeof(float));

    kref_fill(x, n, 2.0f, seed);
    for (size_t i = 0; i < n; i++)
        x[i] += 0.3f * (float)((i / (size_t)C) % 7); /* rows with different means */
    l->N = N;
    l->C = C;
    l->inp = dt == GS_KERN_F32 ? (void *)x : keep(kref_to_dtype(x, n, dt));
    l->w = hrand((size_t)C, 1.0f, seed + 1, dt);
    l->b = hrand((size_t)C, 0.5f, seed + 2, dt);
    l->dout = hrand(n, 1.0f, seed + 3, dt);
    l->dinp = hrand(n, 0.5f, seed + 4, dt);
    l->dw = hrand((size_t)C, 1.0f, seed + 5, GS_KERN_F32);
    l->db = hrand((size_t)C, 1.0f, seed + 6, GS_KERN_F32);
}

static void layernorm_fwd_case(int N, int C, enum gs_kern_dtype dt)
{
    struct ln l;
    size_t n = (size_t)N * (size_t)C;
    void *out = hmem(n * dsz(dt)), *d_out = dmem(n * dsz(dt));
    float *mean = hmem((size_t)N * 4), *rstd = hmem((size_t)N * 4);
    float *d_mean = dmem((size_t)N * 4), *d_rstd = dmem((size_t)N * 4);

    ln_init(&l, N, C, dt, 40 + (uint64_t)dt);
    cr_assert_eq(gs_kern_gpu_layernorm_fwd(gpu, d_out, d_mean, d_rstd, dput(l.inp, n * dsz(dt)),
                                           dput(l.w, (size_t)C * dsz(dt)),
                                           dput(l.b, (size_t)C * dsz(dt)), N, C, dt),
                 0);
    cr_assert_eq(gs_kern_layernorm_fwd(out, mean, rstd, l.inp, l.w, l.b, N, C, dt), 0);
    check_near(dget(d_out, n * dsz(dt)), out, n, dt, dt, "layernorm out");
    check_near(dget(d_mean, (size_t)N * 4), mean, (size_t)N, GS_KERN_F32, dt, "mean");
    check_near(dget(d_rstd, (size_t)N * 4), rstd, (size_t)N, GS_KERN_F32, dt, "rstd");
}

Test(gpu_layernorm, forward_matches_cpu_in_every_dtype, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++) {
        layernorm_fwd_case(37, 72, dtypes[k]);
        layernorm_fwd_case(70, 770, dtypes[k]);
    }
}

/* The backward pass on identical inputs: the CPU forward's mean and rstd go to both. */
static void layernorm_bwd_case(int N, int C, enum gs_kern_dtype dt)
{
    struct ln l;
    size_t n = (size_t)N * (size_t)C;
    float *mean = hmem((size_t)N * 4), *rstd = hmem((size_t)N * 4);
    void *d_dinp, *d_dw, *d_db;

    ln_init(&l, N, C, dt, 50 + (uint64_t)dt);
    cr_assert_eq(gs_kern_layernorm_fwd(hmem(n * dsz(dt)), mean, rstd, l.inp, l.w, l.b, N, C, dt),
                 0);
    d_dinp = dput(l.dinp, n * dsz(dt));
    d_dw = dput(l.dw, (size_t)C * 4);
    d_db = dput(l.db, (size_t)C * 4);
    cr_assert_eq(gs_kern_gpu_layernorm_bwd(gpu, d_dinp, d_dw, d_db, dput(l.dout, n * dsz(dt)),
                                           dput(l.inp, n * dsz(dt)), dput(l.w, (size_t)C * dsz(dt)),
                                           dput(mean, (size_t)N * 4), dput(rstd, (size_t)N * 4), N,
                                           C, dt),
                 0, "%s", gs_kern_dev_last_error());
    cr_assert_eq(
        gs_kern_layernorm_bwd(l.dinp, l.dw, l.db, l.dout, l.inp, l.w, mean, rstd, N, C, dt), 0);
    check_near(dget(d_dinp, n * dsz(dt)), l.dinp, n, dt, dt, "dinp (accumulated)");
    check_near(dget(d_dw, (size_t)C * 4), l.dw, (size_t)C, GS_KERN_F32, dt, "dweight");
    check_near(dget(d_db, (size_t)C * 4), l.db, (size_t)C, GS_KERN_F32, dt, "dbias");
}

/* C = 72, 768 and 512 take the vectorised kernel (16-byte groups; 768 fp32 is past its
 * reach), 770 the fallback; N = 37 and 70 end in a partial chunk of rows. */
Test(gpu_layernorm, backward_accumulates_as_the_cpu_does_in_every_dtype, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++) {
        layernorm_bwd_case(37, 72, dtypes[k]);
        layernorm_bwd_case(70, 770, dtypes[k]);
        layernorm_bwd_case(70, 768, dtypes[k]);
        layernorm_bwd_case(37, 512, dtypes[k]);
    }
}

/* res = a + b and LayerNorm(res) in one kernel against residual_fwd then layernorm_fwd;
 * with in_place, res is a. */
static void residual_layernorm_case(int N, int C, enum gs_kern_dtype dt, bool in_place)
{
    struct ln l;
    size_t n = (size_t)N * (size_t)C;
    void *b = hrand(n, 1.0f, 61, dt), *res = hmem(n * dsz(dt)), *out = hmem(n * dsz(dt));
    float *mean = hmem((size_t)N * 4), *rstd = hmem((size_t)N * 4);
    void *d_a, *d_res, *d_out = dmem(n * dsz(dt));
    float *d_mean = dmem((size_t)N * 4), *d_rstd = dmem((size_t)N * 4);

    ln_init(&l, N, C, dt, 60 + (uint64_t)dt);
    d_a = dput(l.inp, n * dsz(dt));
    d_res = in_place ? d_a : dmem(n * dsz(dt));
    cr_assert_eq(gs_kern_gpu_residual_layernorm_fwd(
                     gpu, d_res, d_out, d_mean, d_rstd, d_a, dput(b, n * dsz(dt)),
                     dput(l.w, (size_t)C * dsz(dt)), dput(l.b, (size_t)C * dsz(dt)), N, C, dt),
                 0);
    cr_assert_eq(gs_kern_residual_fwd(res, l.inp, b, n, dt), 0);
    cr_assert_eq(gs_kern_layernorm_fwd(out, mean, rstd, res, l.w, l.b, N, C, dt), 0);
    check_same(dget(d_res, n * dsz(dt)), res, n, dsz(dt), dt, "res");
    check_near(dget(d_out, n * dsz(dt)), out, n, dt, dt, "layernorm(res)");
    check_near(dget(d_mean, (size_t)N * 4), mean, (size_t)N, GS_KERN_F32, dt, "mean");
    check_near(dget(d_rstd, (size_t)N * 4), rstd, (size_t)N, GS_KERN_F32, dt, "rstd");
}

Test(gpu_layernorm, fused_residual_equals_residual_then_layernorm, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++) {
        residual_layernorm_case(37, 72, dtypes[k], false);
        residual_layernorm_case(70, 770, dtypes[k], true);
    }
}

/* ---- GELU and residual ---- */

enum { PW_N = 10007 };

static void gelu_case(enum gs_kern_dtype dt)
{
    size_t bytes = PW_N * dsz(dt);
    void *inp = hrand(PW_N, 4.0f, 70 + (uint64_t)dt, dt), *dout = hrand(PW_N, 1.0f, 71, dt);
    void *out = hmem(bytes), *d_inp = dput(inp, bytes), *d_g = dput(dout, bytes);
    void *d_out = dmem(bytes);

    cr_assert_eq(gs_kern_gpu_gelu_fwd(gpu, d_out, d_inp, PW_N, dt), 0);
    cr_assert_eq(gs_kern_gpu_gelu_bwd(gpu, d_g, d_inp, d_g, PW_N, dt), 0, "in place");
    cr_assert_eq(gs_kern_gelu_fwd(out, inp, PW_N, dt), 0);
    cr_assert_eq(gs_kern_gelu_bwd(dout, inp, dout, PW_N, dt), 0);
    check_near(dget(d_out, bytes), out, PW_N, dt, dt, "gelu");
    check_near(dget(d_g, bytes), dout, PW_N, dt, dt, "gelu dinp");
}

Test(gpu_pointwise, gelu_matches_cpu_in_every_dtype, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++)
        gelu_case(dtypes[k]);
}

static void residual_case(enum gs_kern_dtype dt)
{
    size_t bytes = PW_N * dsz(dt);
    void *a = hrand(PW_N, 2.0f, 80, dt), *b = hrand(PW_N, 1.0f, 81, dt);
    void *dout = hrand(PW_N, 1.0f, 82, dt), *da = hrand(PW_N, 3.0f, 83, dt);
    void *db = hrand(PW_N, 0.1f, 84, dt), *da_only = hcopy(da, bytes), *out = hmem(bytes);
    void *d_a = dput(a, bytes), *d_dout = dput(dout, bytes), *d_da = dput(da, bytes);
    void *d_db = dput(db, bytes), *d_da_only = dput(da_only, bytes);

    cr_assert_eq(gs_kern_gpu_residual_fwd(gpu, d_a, d_a, dput(b, bytes), PW_N, dt), 0);
    cr_assert_eq(gs_kern_gpu_residual_bwd(gpu, d_da, d_db, d_dout, PW_N, dt), 0);
    cr_assert_eq(gs_kern_gpu_residual_bwd(gpu, d_da_only, NULL, d_dout, PW_N, dt), 0);
    cr_assert_eq(gs_kern_residual_fwd(out, a, b, PW_N, dt), 0);
    cr_assert_eq(gs_kern_residual_bwd(da, db, dout, PW_N, dt), 0);
    cr_assert_eq(gs_kern_residual_bwd(da_only, NULL, dout, PW_N, dt), 0);
    check_same(dget(d_a, bytes), out, PW_N, dsz(dt), dt, "residual out (in place)");
    check_same(dget(d_da, bytes), da, PW_N, dsz(dt), dt, "da");
    check_same(dget(d_db, bytes), db, PW_N, dsz(dt), dt, "db");
    check_same(dget(d_da_only, bytes), da_only, PW_N, dsz(dt), dt, "da, db NULL");
}

Test(gpu_pointwise, residual_gives_the_cpu_bits_in_every_dtype, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++)
        residual_case(dtypes[k]);
}

/* ---- classifier and loss sum ---- */

enum { CN = 37, CV = 100, CVP = 128 };

/* Targets: mostly real; rows 3 and 10 masked (-1) for both; rows 20 and 21 out of range for
 * the GPU (masked there, gpu.h), -1 for the CPU (which rejects them). */
static void cls_targets(int32_t *cpu, int32_t *gpu_targets)
{
    uint64_t state = 90;

    for (int i = 0; i < CN; i++)
        cpu[i] = gpu_targets[i] = (int32_t)kref_uniform(&state, 0, CV);
    cpu[3] = cpu[10] = gpu_targets[3] = gpu_targets[10] = -1;
    cpu[20] = cpu[21] = -1;
    gpu_targets[20] = CV;
    gpu_targets[21] = 100000;
}

static void classifier_case(enum gs_kern_dtype dt, float scale)
{
    size_t bytes = CN * CVP * dsz(dt);
    int32_t targets[CN], gpu_targets[CN];
    void *logits = hrand(CN * CVP, 4.0f, 91 + (uint64_t)dt, dt); /* padding holds junk too */
    void *d_fwd = dput(logits, bytes), *d_bwd = dput(logits, bytes), *d_tg;
    float *losses = hmem(CN * 4), *d_lf = dmem(CN * 4), *d_lb = dmem(CN * 4);

    cls_targets(targets, gpu_targets);
    d_tg = dput(gpu_targets, sizeof(gpu_targets));
    cr_assert_eq(gs_kern_gpu_classifier(gpu, d_fwd, d_lf, d_tg, CN, CV, CVP, scale, false, dt), 0);
    cr_assert_eq(gs_kern_gpu_classifier(gpu, d_bwd, d_lb, d_tg, CN, CV, CVP, scale, true, dt), 0);
    cr_assert_eq(gs_kern_classifier(logits, losses, targets, CN, CV, CVP, scale, false, dt), 0);
    check_same(dget(d_fwd, bytes), logits, CN * CVP, dsz(dt), dt, "logits kept without backward");
    check_near(dget(d_lf, CN * 4), losses, CN, GS_KERN_F32, dt, "losses (forward only)");
    cr_assert_eq(gs_kern_classifier(logits, losses, targets, CN, CV, CVP, scale, true, dt), 0);
    check_near(dget(d_lb, CN * 4), losses, CN, GS_KERN_F32, dt, "losses");
    check_near(dget(d_bwd, bytes), logits, CN * CVP, dt, dt, "dlogits");
}

Test(gpu_classifier, losses_and_dlogits_match_cpu_with_masked_rows, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++) {
        classifier_case(dtypes[k], 0.0f);
        classifier_case(dtypes[k], 2.5f);
    }
}

Test(gpu_classifier, masked_rows_get_zero_loss_and_zero_gradient, .fini = close_all)
{
    const enum gs_kern_dtype dt = GS_KERN_BF16;
    int32_t targets[CN], gpu_targets[CN];
    size_t bytes = CN * CVP * dsz(dt);
    void *d_logits, *dl;
    float *d_losses, *losses;
    static const int masked[] = {3, 10, 20, 21};

    open_gpu();
    d_logits = dput(hrand(CN * CVP, 4.0f, 95, dt), bytes);
    d_losses = dmem(CN * 4);
    cls_targets(targets, gpu_targets);
    cr_assert_eq(gs_kern_gpu_classifier(gpu, d_logits, d_losses,
                                        dput(gpu_targets, sizeof(gpu_targets)), CN, CV, CVP, 0.0f,
                                        true, dt),
                 0);
    losses = dget(d_losses, CN * 4);
    dl = dget(d_logits, bytes);
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(losses[masked[k]], 0.0f, "row %d", masked[k]);
        for (int v = 0; v < CVP; v++)
            cr_assert_eq(gs_kern_load(dl, (size_t)masked[k] * CVP + (size_t)v, dt), 0.0f,
                         "row %d col %d", masked[k], v);
    }
    for (int r = 0; r < CN; r++)
        for (int v = CV; v < CVP; v++)
            cr_assert_eq(gs_kern_load(dl, (size_t)r * CVP + (size_t)v, dt), 0.0f,
                         "row %d padding col %d", r, v);
}

/* Masked rows hold junk losses here, so skipping them shows. */
Test(gpu_classifier, sum_losses_adds_rows_with_a_target, .fini = close_all)
{
    enum { N = 2500 };
    int32_t *targets = hmem(N * 4);
    float *losses = hrand(N, 5.0f, 100, GS_KERN_F32), acc[2] = {1.5f, 7.0f}, *got, *d_acc;
    double want = 1.5;
    int count = 0;
    uint64_t state = 101;

    open_gpu();
    for (int i = 0; i < N; i++) {
        losses[i] = fabsf(losses[i]);                          /* losses are >= 0 */
        targets[i] = (int32_t)kref_uniform(&state, 0, 51) - 1; /* about 1 in 51 masked */
    }
    targets[N - 1] = 1 << 20; /* >= 0: counted (the sum does not know V) */
    for (int i = 0; i < N; i++) {
        if (targets[i] >= 0) {
            want += losses[i];
            count++;
        }
    }
    cr_assert_lt(count, N - 1, "some rows are masked");
    d_acc = dput(acc, sizeof(acc));
    cr_assert_eq(gs_kern_gpu_sum_losses(gpu, d_acc, dput(losses, N * 4), dput(targets, N * 4), N),
                 0);
    got = dget(d_acc, sizeof(acc));
    cr_assert_leq(fabs(got[0] - want), 1e-5 * want, "%.9g vs %.9g", (double)got[0], want);
    cr_assert_eq(got[1], 7.0f + (float)count);
}

/* ---- gradient statistics and AdamW ---- */

static void grad_case(size_t n, float inv_scale, uint64_t seed)
{
    float *g = hrand(n, 1.0f, seed, GS_KERN_F32), out[2] = {2.0f, 0.0f}, *got;
    float *d_g = dput(g, n * 4), *d_out = dput(out, sizeof(out));
    bool found = false;
    double want = 2.0;

    cr_assert_eq(gs_kern_gpu_grad_stats(gpu, d_g, n, inv_scale, d_out), 0, "%s",
                 gs_kern_dev_last_error());
    cr_assert_eq(gs_kern_grad_unscale(g, n, inv_scale, &found), 0);
    for (size_t i = 0; i < n; i++)
        want += (double)g[i] * g[i];
    check_same(dget(d_g, n * 4), g, n, 4, GS_KERN_F32, "unscaled gradient");
    got = dget(d_out, sizeof(out));
    cr_assert_leq(fabs(got[0] - want), 1e-5 * want, "n=%zu: %.9g vs %.9g", n, (double)got[0], want);
    cr_assert_eq(got[1], 0.0f, "n=%zu: nothing was inf or NaN", n);
}

Test(gpu_grad, stats_unscale_and_add_the_sum_of_squares, .fini = close_all)
{
    open_gpu();
    grad_case(300007, 0.5f, 110); /* more than one pass of the fixed grid */
    grad_case(300007, 1.0f, 111);
    grad_case(7, 1.0f / 1024, 112);
}

Test(gpu_grad, stats_flag_inf_and_nan, .fini = close_all)
{
    enum { N = 100003 };
    const float bad[2] = {INFINITY, NAN};
    float *g = hrand(N, 1.0f, 120, GS_KERN_F32), out[2] = {0, 0}, *got;

    open_gpu();
    for (int k = 0; k < 2; k++) {
        float *d_out = dput(out, sizeof(out)), *d_g;

        g[N / 3 + (size_t)k] = bad[k];
        d_g = dput(g, N * 4);
        g[N / 3 + (size_t)k] = 0.0f;
        cr_assert_eq(gs_kern_gpu_grad_stats(gpu, d_g, N, 1.0f, d_out), 0);
        got = dget(d_out, sizeof(out));
        cr_assert_eq(got[1], 1.0f, "%s flagged", k ? "NaN" : "inf");
        /* the flag is only ever set: a clean array after it leaves it set */
        cr_assert_eq(gs_kern_gpu_grad_stats(gpu, dput(g, N * 4), N, 1.0f, d_out), 0);
        cr_assert_eq(((float *)dget(d_out, sizeof(out)))[1], 1.0f);
    }
}

static void adamw_case(enum gs_kern_dtype dt, float grad_scale, bool with_copy)
{
    enum { N = 4099 };
    struct gs_kern_adamw hp = {
        .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
    float *p = hrand(N, 1.0f, 130, GS_KERN_F32), *m = hmem(N * 4), *v = hmem(N * 4);
    float *sg = hmem(N * 4), *d_p = dput(p, N * 4), *d_m = dput(m, N * 4), *d_v = dput(v, N * 4);
    void *copy = hmem(N * dsz(dt)), *d_copy = with_copy ? dmem(N * dsz(dt)) : NULL;

    for (hp.step = 1; hp.step <= 3; hp.step++) {
        float *g = hrand(N, 0.1f, 131 + (uint64_t)hp.step, GS_KERN_F32);

        cr_assert_eq(
            gs_kern_gpu_adamw(gpu, d_p, dput(g, N * 4), d_m, d_v, N, &hp, grad_scale, d_copy, dt),
            0);
        for (int i = 0; i < N; i++)
            sg[i] = g[i] * grad_scale;
        if (with_copy)
            cr_assert_eq(gs_kern_adamw_copy_cpu(p, sg, m, v, N, &hp, copy, dt), 0);
        else
            cr_assert_eq(gs_kern_adamw_cpu(p, sg, m, v, N, &hp), 0);
    }
    check_same(dget(d_p, N * 4), p, N, 4, dt, "param");
    check_same(dget(d_m, N * 4), m, N, 4, dt, "m");
    check_same(dget(d_v, N * 4), v, N, 4, dt, "v");
    if (with_copy)
        check_same(dget(d_copy, N * dsz(dt)), copy, N, dsz(dt), dt, "copy");
}

Test(gpu_adamw, step_gives_the_cpu_bits_with_and_without_the_copy, .fini = close_all)
{
    open_gpu();
    for (int k = 0; k < 3; k++)
        adamw_case(dtypes[k], 0.37f, true);
    adamw_case(GS_KERN_F32, 1.0f, false);
}

/* ---- cast ---- */

Test(gpu_cast, every_pair_of_dtypes_gives_the_cpu_bits, .fini = close_all)
{
    enum { N = 1031, NSPECIAL = 16 };
    /* Signed zeros, infinities, fp16's overflow edge, both formats' ties, subnormals. */
    static const float special[NSPECIAL] = {
        0.0f,     -0.0f,  INFINITY,      -INFINITY,   65504.0f,       65519.0f,
        65520.0f, -1e5f,  1.00390625f,   1.01171875f, 1.00048828125f, 2.98023224e-8f,
        3.5e-8f,  1e-40f, 3.3895314e38f, FLT_MAX};
    float *x = hrand(N, 3.0f, 140, GS_KERN_F32);

    open_gpu();
    memcpy(x, special, sizeof(special));
    for (int s = 0; s < 3; s++) {
        enum gs_kern_dtype st = dtypes[s];
        void *src = st == GS_KERN_F32 ? (void *)x : keep(kref_to_dtype(x, N, st));
        void *d_src = dput(src, N * dsz(st));

        for (int k = 0; k < 3; k++) {
            enum gs_kern_dtype dt = dtypes[k];
            void *dst = hmem(N * dsz(dt)), *d_dst = dmem(N * dsz(dt));

            cr_assert_eq(gs_kern_gpu_cast(gpu, d_dst, dt, d_src, st, N), 0);
            cr_assert_eq(gs_kern_cast(dst, dt, src, st, N), 0);
            check_same(dget(d_dst, N * dsz(dt)), dst, N, dsz(dt), st, dt_names[dt]);
        }
    }
}

/* ---- determinism, arguments, stubs ---- */

/* Runs the reductions twice from the same inputs at a GPT-2-like width; the bits must repeat. */
Test(gpu_kernels, reductions_repeat_bit_for_bit, .fini = close_all)
{
    const enum gs_kern_dtype dt = GS_KERN_BF16;
    enum { N = 1000, C = 768, CR = 16, V = 50257, VP = 50304, NG = 3000017 };
    struct ln l;
    void *logits, *res[2][6];
    float *grads = NULL;
    int32_t targets[CR];

    open_gpu();
    ln_init(&l, N, C, dt, 150);
    logits = hrand((size_t)CR * VP, 8.0f, 151, dt);
    grads = hrand(NG, 1e-3f, 152, GS_KERN_F32);
    for (int i = 0; i < CR; i++)
        targets[i] = i == 5 ? -1 : i * 3001;
    for (int r = 0; r < 2; r++) {
        void *d_dinp = dput(l.dinp, (size_t)N * C * dsz(dt)), *d_dw = dput(l.dw, C * 4);
        void *d_db = dput(l.db, C * 4), *d_mean = dmem(N * 4), *d_rstd = dmem(N * 4);
        void *d_inp = dput(l.inp, (size_t)N * C * dsz(dt)), *d_w = dput(l.w, C * dsz(dt));
        void *d_logits = dput(logits, (size_t)CR * VP * dsz(dt)), *d_loss = dmem(CR * 4);
        float zero[2] = {0, 0}, *d_out = dput(zero, sizeof(zero));

        cr_assert_eq(gs_kern_gpu_layernorm_fwd(gpu, dmem((size_t)N * C * dsz(dt)), d_mean, d_rstd,
                                               d_inp, d_w, dput(l.b, C * dsz(dt)), N, C, dt),
                     0);
        cr_assert_eq(gs_kern_gpu_layernorm_bwd(gpu, d_dinp, d_dw, d_db,
                                               dput(l.dout, (size_t)N * C * dsz(dt)), d_inp, d_w,
                                               d_mean, d_rstd, N, C, dt),
                     0);
        cr_assert_eq(gs_kern_gpu_classifier(gpu, d_logits, d_loss, dput(targets, sizeof(targets)),
                                            CR, V, VP, 0.0f, true, dt),
                     0);
        cr_assert_eq(gs_kern_gpu_grad_stats(gpu, dput(grads, NG * 4), NG, 0.5f, d_out), 0);
        res[r][0] = dget(d_dinp, (size_t)N * C * dsz(dt));
        res[r][1] = dget(d_dw, C * 4);
        res[r][2] = dget(d_db, C * 4);
        res[r][3] = dget(d_logits, (size_t)CR * VP * dsz(dt));
        res[r][4] = dget(d_loss, CR * 4);
        res[r][5] = dget(d_out, sizeof(zero));
    }
    check_same(res[1][0], res[0][0], (size_t)N * C, dsz(dt), dt, "layernorm dinp");
    check_same(res[1][1], res[0][1], C, 4, dt, "layernorm dweight");
    check_same(res[1][2], res[0][2], C, 4, dt, "layernorm dbias");
    check_same(res[1][3], res[0][3], (size_t)CR * VP, dsz(dt), dt, "dlogits");
    check_same(res[1][4], res[0][4], CR, 4, dt, "losses");
    check_same(res[1][5], res[0][5], 2, 4, dt, "gradient sum of squares");
}

Test(gpu_kernels, encoder_backward_repeats_bit_for_bit, .fini = close_all)
{
    const enum gs_kern_dtype dt = GS_KERN_F16;
    enum { B = 4, T = 256, N = B * T, C = 768, V = 1000 };
    int32_t *tokens = hmem(N * 4), *order = hmem(N * 4), *starts = hmem((N + 1) * 4);
    int64_t *keys = hmem(N * 8);
    void *dout = hrand((size_t)N * C, 1.0f, 160, dt), *res[2][2];
    uint64_t state = 161;
    int nuniq;

    open_gpu();
    for (int i = 0; i < N; i++) /* a few very common ids, as text has */
        tokens[i] = i % 3 == 0 ? 198 : (int32_t)kref_uniform(&state, 0, 300);
    cr_assert_eq(gs_kern_encoder_runs(tokens, N, keys, order, starts, &nuniq), 0);
    for (int r = 0; r < 2; r++) {
        float *d_dwte = dput(hmem((size_t)V * C * 4), (size_t)V * C * 4);
        float *d_dwpe = dput(hmem((size_t)T * C * 4), (size_t)T * C * 4);

        cr_assert_eq(
            gs_kern_gpu_encoder_bwd(gpu, d_dwte, d_dwpe, dput(dout, (size_t)N * C * dsz(dt)),
                                    dput(tokens, N * 4), dput(order, N * 4),
                                    dput(starts, (size_t)(nuniq + 1) * 4), nuniq, B, T, C, V, dt),
            0);
        res[r][0] = dget(d_dwte, (size_t)V * C * 4);
        res[r][1] = dget(d_dwpe, (size_t)T * C * 4);
    }
    check_same(res[1][0], res[0][0], (size_t)V * C, 4, dt, "dwte");
    check_same(res[1][1], res[0][1], (size_t)T * C, 4, dt, "dwpe");
}

Test(gpu_kernels, rejects_bad_arguments_before_queueing, .fini = close_all)
{
    const enum gs_kern_dtype bad_dt = (enum gs_kern_dtype)7;
    struct gs_kern_adamw hp = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .step = 0};
    void *d;

    open_gpu();
    d = dmem(1 << 20);
    cr_assert_eq(gs_kern_gpu_layernorm_fwd(NULL, d, d, d, d, d, d, 4, 8, GS_KERN_F32), -EINVAL);
    cr_assert_eq(gs_kern_gpu_layernorm_fwd(gpu, d, d, d, d, d, d, 0, 8, GS_KERN_F32), -EINVAL);
    cr_assert_eq(gs_kern_gpu_layernorm_fwd(gpu, d, d, d, d, d, d, 4, 8, bad_dt), -EINVAL);
    cr_assert_eq(
        gs_kern_gpu_residual_layernorm_fwd(gpu, NULL, d, d, d, d, d, d, d, 4, 8, GS_KERN_F32),
        -EINVAL);
    cr_assert_eq(gs_kern_gpu_layernorm_bwd(gpu, d, d, d, d, d, d, NULL, d, 4, 8, GS_KERN_F32),
                 -EINVAL);
    cr_assert_eq(gs_kern_gpu_encoder_fwd(gpu, d, d, d, d, 2, 0, 8, 10, GS_KERN_F32), -EINVAL);
    cr_assert_eq(gs_kern_gpu_encoder_bwd(gpu, d, d, d, d, d, d, 0, 2, 2, 8, 10, GS_KERN_F32),
                 -EINVAL, "no runs");
    cr_assert_eq(gs_kern_gpu_encoder_bwd(gpu, d, d, d, d, d, d, 5, 2, 2, 8, 10, GS_KERN_F32),
                 -EINVAL, "more runs than rows");
    cr_assert_eq(gs_kern_gpu_gelu_fwd(gpu, NULL, d, 8, GS_KERN_F32), -EINVAL);
    cr_assert_eq(gs_kern_gpu_residual_fwd(gpu, d, d, d, 8, bad_dt), -EINVAL);
    cr_assert_eq(gs_kern_gpu_classifier(gpu, d, d, d, 4, 10, 8, 0.0f, true, GS_KERN_F32), -EINVAL,
                 "Vp < V");
    cr_assert_eq(gs_kern_gpu_sum_losses(gpu, d, d, d, 0), -EINVAL);
    cr_assert_eq(gs_kern_gpu_grad_stats(gpu, NULL, 8, 1.0f, d), -EINVAL);
    cr_assert_eq(gs_kern_gpu_adamw(gpu, d, d, d, d, 8, &hp, 1.0f, NULL, GS_KERN_F32), -EINVAL,
                 "step 0");
    cr_assert_eq(gs_kern_gpu_cast(gpu, d, bad_dt, d, GS_KERN_F32, 8), -EINVAL);
    gs_kern_gpu_set_workspace(gpu, ws, 16);
    cr_assert_eq(gs_kern_gpu_layernorm_bwd(gpu, d, d, d, d, d, d, d, d, 64, 64, GS_KERN_F32),
                 -ENOSPC);
    cr_assert_eq(gs_kern_gpu_grad_stats(gpu, d, 1 << 16, 1.0f, d), -ENOSPC);
    gs_kern_gpu_set_workspace(gpu, ws, ws_bytes);
    cr_assert_eq(gs_kern_gpu_sync(gpu), 0, "nothing was queued that failed");
}

Test(gpu_kernels, stubs_report_enodev_without_cuda)
{
    struct gs_kern_gpu *g = NULL;
    struct gs_kern_adamw hp = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .step = 1};
    float x[8] = {0};
    int32_t t[2] = {0, 0};

    if (gs_kern_cuda_built())
        cr_skip_test("built with CUDA");
    cr_assert_eq(gs_kern_gpu_new(0, &g), -ENODEV);
    cr_assert_null(g);
    cr_assert_eq(gs_kern_gpu_ws_bytes(4, 64, 768, 12, 50304, 1000), 0);
    cr_assert_eq(gs_kern_gpu_encoder_fwd(g, x, t, x, x, 1, 2, 2, 2, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_encoder_bwd(g, x, x, x, t, t, t, 1, 1, 2, 2, 2, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_layernorm_fwd(g, x, x, x, x, x, x, 2, 2, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_residual_layernorm_fwd(g, x, x, x, x, x, x, x, x, 2, 2, GS_KERN_F32),
                 -ENODEV);
    cr_assert_eq(gs_kern_gpu_layernorm_bwd(g, x, x, x, x, x, x, x, x, 2, 2, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_gelu_fwd(g, x, x, 8, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_gelu_bwd(g, x, x, x, 8, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_residual_fwd(g, x, x, x, 8, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_residual_bwd(g, x, x, x, 8, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_classifier(g, x, x, t, 2, 2, 4, 0.0f, true, GS_KERN_F32), -ENODEV);
    cr_assert_eq(gs_kern_gpu_sum_losses(g, x, x, t, 2), -ENODEV);
    cr_assert_eq(gs_kern_gpu_grad_stats(g, x, 8, 1.0f, x), -ENODEV);
    cr_assert_eq(gs_kern_gpu_adamw(g, x, x, x, x, 8, &hp, 1.0f, NULL, GS_KERN_F32), -ENODEV);
    cr_assert(!gs_kern_cudnn_built());
    cr_assert_eq(gs_kern_gpu_set_attention_cudnn(g, true), -ENODEV);
    cr_assert_eq(gs_kern_gpu_attention_prepare(g, 1, 2, 8, 1, GS_KERN_BF16), -ENODEV);
    cr_assert(!gs_kern_gpu_attention_on_cudnn(g, 1, 2, 8, 1, GS_KERN_BF16));
    cr_assert_str_eq(gs_kern_gpu_attention_engine(g), "");
    cr_assert_eq(gs_kern_gpu_attention_scratch_bytes(g), 0);
    cr_assert_eq(gs_kern_gpu_cast(g, x, GS_KERN_BF16, x, GS_KERN_F32, 8), -ENODEV);
}

/* The host half of the encoder's backward runs everywhere: positions grouped by token id,
 * each group in position order, and bad input refused. */
Test(encoder_runs, groups_positions_by_token_in_position_order)
{
    const int32_t tokens[] = {5, 2, 5, 0, 2, 5, 7};
    enum { N = sizeof(tokens) / sizeof(tokens[0]) };
    const int32_t want_order[N] = {3, 1, 4, 0, 2, 5, 6}, want_starts[] = {0, 1, 3, 6, 7};
    int32_t order[N], starts[N + 1], bad[1] = {-1};
    int64_t keys[N];
    int nuniq = 0;

    cr_assert_eq(gs_kern_encoder_runs(tokens, N, keys, order, starts, &nuniq), 0);
    cr_assert_eq(nuniq, 4);
    cr_assert_arr_eq(order, want_order, sizeof(want_order));
    cr_assert_arr_eq(starts, want_starts, sizeof(want_starts));
    cr_assert_eq(gs_kern_encoder_runs(bad, 1, keys, order, starts, &nuniq), -EINVAL);
    cr_assert_eq(gs_kern_encoder_runs(tokens, 0, keys, order, starts, &nuniq), -EINVAL);
    cr_assert_eq(gs_kern_encoder_runs(tokens, N, NULL, order, starts, &nuniq), -EINVAL);
}
