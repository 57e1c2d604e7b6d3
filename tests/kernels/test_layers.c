/*
 * test_layers.c: the non-matmul layer kernels of kernels/ops.h: encoder, LayerNorm, GELU,
 * residual, fused classifier.
 *
 * Each forward pass is checked against a float64 reference written here, each backward pass
 * against central differences of that reference (loss = sum(r * out) for a random r, so
 * dout = r), on small odd shapes (N=7 or B=2,T=5; C=12; V=19 padded to 24). Tolerances, as a
 * fraction of the largest reference magnitude: forward 1e-5, backward 1e-4 (fp32 arithmetic
 * against float64, ~100 float ulps of headroom). 16-bit: each kernel must give exactly what
 * the fp32 kernel gives on the rounded inputs, rounded once (the kernels widen 16-bit values
 * to float and round only on store, so 0 ulps); float gradients bit-identical.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "kref.h"

#define FWD_TOL 1e-5
#define BWD_TOL 1e-4

static void *to_dt(const float *x, size_t n, enum gs_kern_dtype dt)
{
    return kref_to_dtype(x, n, dt);
}

/* Copies a dt tensor back into x (as float). */
static void back(float *x, const void *p, size_t n, enum gs_kern_dtype dt)
{
    for (size_t i = 0; i < n; i++)
        x[i] = gs_kern_load(p, i, dt);
}

static void round_all(float *x, size_t n, enum gs_kern_dtype dt)
{
    kref_round_inplace(x, n, dt);
}

static void assert_same(const float *a, const float *b, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])), "%s[%zu]: %.9g vs %.9g", what, i,
                  (double)a[i], (double)b[i]);
}

/* ---- LayerNorm ---- */

enum { LN_N = 7, LN_C = 12 };

struct ln {
    float inp[LN_N * LN_C], w[LN_C], b[LN_C], dout[LN_N * LN_C];
    float out[LN_N * LN_C], mean[LN_N], rstd[LN_N], dinp[LN_N * LN_C], dw[LN_C], db[LN_C];
    double x64[LN_N * LN_C], w64[LN_C], b64[LN_C];
};

static void ln_init(struct ln *l, uint64_t seed)
{
    memset(l, 0, sizeof(*l));
    kref_fill(l->inp, LN_N * LN_C, 2.0f, seed);
    for (int i = 0; i < LN_N * LN_C; i++)
        l->inp[i] += (float)(i / LN_C) * 0.3f; /* rows with different means */
    kref_fill(l->w, LN_C, 1.0f, seed + 1);
    kref_fill(l->b, LN_C, 0.5f, seed + 2);
    kref_fill(l->dout, LN_N * LN_C, 1.0f, seed + 3);
    for (int i = 0; i < LN_N * LN_C; i++)
        l->x64[i] = l->inp[i];
    for (int i = 0; i < LN_C; i++) {
        l->w64[i] = l->w[i];
        l->b64[i] = l->b[i];
    }
}

/* Runs forward and backward in dtype dt; dinp starts from l->dinp (it accumulates). */
static void ln_run(struct ln *l, enum gs_kern_dtype dt)
{
    size_t n = LN_N * LN_C;
    void *x = to_dt(l->inp, n, dt), *w = to_dt(l->w, LN_C, dt), *b = to_dt(l->b, LN_C, dt);
    void *g = to_dt(l->dout, n, dt), *out = to_dt(l->out, n, dt), *dx = to_dt(l->dinp, n, dt);

    cr_assert_eq(gs_kern_layernorm_fwd(out, l->mean, l->rstd, x, w, b, LN_N, LN_C, dt), 0);
    cr_assert_eq(gs_kern_layernorm_bwd(dx, l->dw, l->db, g, x, w, l->mean, l->rstd, LN_N, LN_C, dt),
                 0);
    back(l->out, out, n, dt);
    back(l->dinp, dx, n, dt);
    free(x);
    free(w);
    free(b);
    free(g);
    free(out);
    free(dx);
}

static void ln_ref(const struct ln *l, double *out, double *mean, double *rstd)
{
    for (int r = 0; r < LN_N; r++) {
        const double *x = l->x64 + r * LN_C;
        double m = 0, v = 0, s;

        for (int c = 0; c < LN_C; c++)
            m += x[c] / LN_C;
        for (int c = 0; c < LN_C; c++)
            v += (x[c] - m) * (x[c] - m) / LN_C;
        s = 1.0 / sqrt(v + 1e-5);
        for (int c = 0; c < LN_C; c++)
            out[r * LN_C + c] = (x[c] - m) * s * l->w64[c] + l->b64[c];
        mean[r] = m;
        rstd[r] = s;
    }
}

static double ln_loss(void *ctx)
{
    struct ln *l = ctx;
    double out[LN_N * LN_C], mean[LN_N], rstd[LN_N], sum = 0;

    ln_ref(l, out, mean, rstd);
    for (int i = 0; i < LN_N * LN_C; i++)
        sum += l->dout[i] * out[i];
    return sum;
}

Test(layernorm, forward_matches_float64)
{
    struct ln l;
    double out[LN_N * LN_C], mean[LN_N], rstd[LN_N];

    ln_init(&l, 3);
    ln_run(&l, GS_KERN_F32);
    ln_ref(&l, out, mean, rstd);
    kref_check_close(l.out, out, LN_N * LN_C, FWD_TOL, "out");
    kref_check_close(l.mean, mean, LN_N, FWD_TOL, "mean");
    kref_check_close(l.rstd, rstd, LN_N, FWD_TOL, "rstd");
}

Test(layernorm, backward_matches_finite_differences)
{
    struct ln l;

    ln_init(&l, 4);
    ln_run(&l, GS_KERN_F32);
    kref_check_fd(ln_loss, &l, l.x64, LN_N * LN_C, l.dinp, BWD_TOL, "dinp");
    kref_check_fd(ln_loss, &l, l.w64, LN_C, l.dw, BWD_TOL, "dweight");
    kref_check_fd(ln_loss, &l, l.b64, LN_C, l.db, BWD_TOL, "dbias");
}

Test(layernorm, backward_accumulates_into_every_gradient)
{
    struct ln a, b;

    ln_init(&a, 5);
    ln_run(&a, GS_KERN_F32);
    ln_init(&b, 5);
    for (int i = 0; i < LN_N * LN_C; i++)
        b.dinp[i] = 1.5f;
    for (int i = 0; i < LN_C; i++) {
        b.dw[i] = 2.0f;
        b.db[i] = -1.0f;
    }
    ln_run(&b, GS_KERN_F32);
    for (int i = 0; i < LN_N * LN_C; i++)
        cr_assert_float_eq(b.dinp[i], 1.5f + a.dinp[i], 1e-6f, "dinp[%d]", i);
    for (int i = 0; i < LN_C; i++) {
        cr_assert_eq(b.dw[i], 2.0f + a.dw[i]);
        cr_assert_eq(b.db[i], -1.0f + a.db[i]);
    }
}

static void ln_16bit(enum gs_kern_dtype dt)
{
    struct ln h, f;

    ln_init(&h, 6);
    for (int i = 0; i < LN_N * LN_C; i++)
        h.dinp[i] = 0.25f * (float)(i % 5);
    f = h;
    round_all(f.inp, LN_N * LN_C, dt);
    round_all(f.w, LN_C, dt);
    round_all(f.b, LN_C, dt);
    round_all(f.dout, LN_N * LN_C, dt);
    round_all(f.dinp, LN_N * LN_C, dt);
    ln_run(&h, dt);
    ln_run(&f, GS_KERN_F32);
    round_all(f.out, LN_N * LN_C, dt);
    round_all(f.dinp, LN_N * LN_C, dt);
    assert_same(h.out, f.out, LN_N * LN_C, "out");
    assert_same(h.dinp, f.dinp, LN_N * LN_C, "dinp");
    assert_same(h.mean, f.mean, LN_N, "mean");
    assert_same(h.rstd, f.rstd, LN_N, "rstd");
    assert_same(h.dw, f.dw, LN_C, "dweight");
    assert_same(h.db, f.db, LN_C, "dbias");
}

Test(layernorm, bf16_and_fp16_equal_fp32_on_rounded_values)
{
    ln_16bit(GS_KERN_BF16);
    ln_16bit(GS_KERN_F16);
}

/* ---- encoder ---- */

enum { EB = 2, ET = 5, EC = 12, EV = 9 };

struct enc {
    int32_t tok[EB * ET];
    float wte[EV * EC], wpe[ET * EC], dout[EB * ET * EC];
    float out[EB * ET * EC], dwte[EV * EC], dwpe[ET * EC];
    double wte64[EV * EC], wpe64[ET * EC];
};

static void enc_init(struct enc *e)
{
    static const int32_t tok[EB * ET] = {3, 1, 3, 8, 0, 3, 3, 5, 1, 0}; /* repeats on purpose */

    memset(e, 0, sizeof(*e));
    memcpy(e->tok, tok, sizeof(tok));
    kref_fill(e->wte, EV * EC, 1.0f, 7);
    kref_fill(e->wpe, ET * EC, 0.5f, 8);
    kref_fill(e->dout, EB * ET * EC, 1.0f, 9);
    for (int i = 0; i < EV * EC; i++)
        e->wte64[i] = e->wte[i];
    for (int i = 0; i < ET * EC; i++)
        e->wpe64[i] = e->wpe[i];
}

static void enc_run(struct enc *e, enum gs_kern_dtype dt)
{
    void *wte = to_dt(e->wte, EV * EC, dt), *wpe = to_dt(e->wpe, ET * EC, dt);
    void *g = to_dt(e->dout, EB * ET * EC, dt), *out = to_dt(e->out, EB * ET * EC, dt);

    cr_assert_eq(gs_kern_encoder_fwd(out, e->tok, wte, wpe, EB, ET, EC, EV, dt), 0);
    cr_assert_eq(gs_kern_encoder_bwd(e->dwte, e->dwpe, g, e->tok, EB, ET, EC, EV, dt), 0);
    back(e->out, out, EB * ET * EC, dt);
    free(wte);
    free(wpe);
    free(g);
    free(out);
}

static void enc_ref(const struct enc *e, double *out)
{
    for (int r = 0; r < EB * ET; r++)
        for (int c = 0; c < EC; c++)
            out[r * EC + c] = e->wte64[e->tok[r] * EC + c] + e->wpe64[(r % ET) * EC + c];
}

static double enc_loss(void *ctx)
{
    struct enc *e = ctx;
    double out[EB * ET * EC], sum = 0;

    enc_ref(e, out);
    for (int i = 0; i < EB * ET * EC; i++)
        sum += e->dout[i] * out[i];
    return sum;
}

Test(encoder, forward_and_backward_match_reference)
{
    struct enc e;
    double out[EB * ET * EC];

    enc_init(&e);
    enc_run(&e, GS_KERN_F32);
    enc_ref(&e, out);
    kref_check_close(e.out, out, EB * ET * EC, FWD_TOL, "out");
    kref_check_fd(enc_loss, &e, e.wte64, EV * EC, e.dwte, BWD_TOL, "dwte");
    kref_check_fd(enc_loss, &e, e.wpe64, ET * EC, e.dwpe, BWD_TOL, "dwpe");
}

Test(encoder, bf16_equals_fp32_on_rounded_values_and_accumulates)
{
    struct enc h, f;

    enc_init(&h);
    for (int i = 0; i < EV * EC; i++)
        h.dwte[i] = 0.5f;
    f = h;
    round_all(f.wte, EV * EC, GS_KERN_BF16);
    round_all(f.wpe, ET * EC, GS_KERN_BF16);
    round_all(f.dout, EB * ET * EC, GS_KERN_BF16);
    enc_run(&h, GS_KERN_BF16);
    enc_run(&f, GS_KERN_F32);
    round_all(f.out, EB * ET * EC, GS_KERN_BF16);
    assert_same(h.out, f.out, EB * ET * EC, "out");
    assert_same(h.dwte, f.dwte, EV * EC, "dwte");
    assert_same(h.dwpe, f.dwpe, ET * EC, "dwpe");
    cr_assert_eq(h.dwte[2 * EC], 0.5f, "token 2 never appears: its row keeps its value");
}

Test(encoder, rejects_token_out_of_range_and_writes_nothing)
{
    struct enc e;

    enc_init(&e);
    e.tok[7] = EV;
    for (int i = 0; i < EB * ET * EC; i++)
        e.out[i] = 7.0f;
    cr_assert_eq(gs_kern_encoder_fwd(e.out, e.tok, e.wte, e.wpe, EB, ET, EC, EV, GS_KERN_F32),
                 -EINVAL);
    cr_assert_eq(gs_kern_encoder_bwd(e.dwte, e.dwpe, e.dout, e.tok, EB, ET, EC, EV, GS_KERN_F32),
                 -EINVAL);
    for (int i = 0; i < EB * ET * EC; i++)
        cr_assert_eq(e.out[i], 7.0f);
    for (int i = 0; i < EV * EC; i++)
        cr_assert_eq(e.dwte[i], 0.0f);
}

/* ---- GELU and residual ---- */

enum { PN = 103 };

struct pw {
    float x[PN], dout[PN];
    double x64[PN];
};

static double gelu64(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

static double gelu_loss(void *ctx)
{
    struct pw *p = ctx;
    double sum = 0;

    for (int i = 0; i < PN; i++)
        sum += p->dout[i] * gelu64(p->x64[i]);
    return sum;
}

Test(gelu, forward_and_backward_match_reference)
{
    struct pw p;
    float out[PN], dinp[PN];
    double want[PN];

    kref_fill(p.x, PN, 4.0f, 10);
    kref_fill(p.dout, PN, 1.0f, 11);
    for (int i = 0; i < PN; i++) {
        p.x64[i] = p.x[i];
        want[i] = gelu64(p.x[i]);
    }
    cr_assert_eq(gs_kern_gelu_fwd(out, p.x, PN, GS_KERN_F32), 0);
    kref_check_close(out, want, PN, FWD_TOL, "out");
    cr_assert_eq(gs_kern_gelu_bwd(dinp, p.x, p.dout, PN, GS_KERN_F32), 0);
    kref_check_fd(gelu_loss, &p, p.x64, PN, dinp, BWD_TOL, "dinp");
    /* In place: dinp may be dout. */
    cr_assert_eq(gs_kern_gelu_bwd(p.dout, p.x, p.dout, PN, GS_KERN_F32), 0);
    assert_same(p.dout, dinp, PN, "in-place dinp");
}

Test(gelu, fp16_equals_fp32_on_rounded_values)
{
    float x[PN], g[PN], out32[PN], d32[PN], out16[PN], d16[PN];
    void *x16, *g16, *o16 = calloc(PN, 2), *dd16 = calloc(PN, 2);

    kref_fill(x, PN, 4.0f, 12);
    kref_fill(g, PN, 1.0f, 13);
    x16 = to_dt(x, PN, GS_KERN_F16);
    g16 = to_dt(g, PN, GS_KERN_F16);
    round_all(x, PN, GS_KERN_F16);
    round_all(g, PN, GS_KERN_F16);
    cr_assert_eq(gs_kern_gelu_fwd(o16, x16, PN, GS_KERN_F16), 0);
    cr_assert_eq(gs_kern_gelu_bwd(dd16, x16, g16, PN, GS_KERN_F16), 0);
    cr_assert_eq(gs_kern_gelu_fwd(out32, x, PN, GS_KERN_F32), 0);
    cr_assert_eq(gs_kern_gelu_bwd(d32, x, g, PN, GS_KERN_F32), 0);
    back(out16, o16, PN, GS_KERN_F16);
    back(d16, dd16, PN, GS_KERN_F16);
    round_all(out32, PN, GS_KERN_F16);
    round_all(d32, PN, GS_KERN_F16);
    assert_same(out16, out32, PN, "out");
    assert_same(d16, d32, PN, "dinp");
    free(x16);
    free(g16);
    free(o16);
    free(dd16);
}

Test(residual, adds_forward_and_accumulates_backward)
{
    float a[PN], b[PN], out[PN], da[PN], db[PN], g[PN];
    uint16_t a16[PN], g16[PN], out16[PN];

    kref_fill(a, PN, 1.0f, 14);
    kref_fill(b, PN, 1.0f, 15);
    kref_fill(g, PN, 1.0f, 16);
    cr_assert_eq(gs_kern_residual_fwd(out, a, b, PN, GS_KERN_F32), 0);
    for (int i = 0; i < PN; i++) {
        cr_assert_eq(out[i], a[i] + b[i]);
        da[i] = 1.0f;
        db[i] = 2.0f;
    }
    cr_assert_eq(gs_kern_residual_bwd(da, db, g, PN, GS_KERN_F32), 0);
    for (int i = 0; i < PN; i++) {
        cr_assert_eq(da[i], 1.0f + g[i]);
        cr_assert_eq(db[i], 2.0f + g[i]);
    }
    cr_assert_eq(gs_kern_residual_bwd(NULL, db, g, PN, GS_KERN_F32), 0);
    /* bf16: in place, rounded once per element. */
    for (int i = 0; i < PN; i++) {
        a16[i] = gs_kern_f32_to_bf16(a[i]);
        g16[i] = gs_kern_f32_to_bf16(g[i]);
    }
    cr_assert_eq(gs_kern_residual_fwd(out16, a16, g16, PN, GS_KERN_BF16), 0);
    for (int i = 0; i < PN; i++)
        cr_assert_eq(out16[i], gs_kern_f32_to_bf16(gs_kern_bf16_to_f32(a16[i]) +
                                                   gs_kern_bf16_to_f32(g16[i])));
    cr_assert_eq(gs_kern_residual_fwd(out, NULL, b, PN, GS_KERN_F32), -EINVAL);
}

/* ---- classifier ---- */

enum { CN = 7, CV = 19, CVP = 24 };

struct cls {
    float logits[CN * CVP];
    int32_t tgt[CN];
    double x64[CN * CVP];
    double scale;
};

static void cls_init(struct cls *c)
{
    static const int32_t tgt[CN] = {0, 18, 5, -1, 5, 11, 3}; /* row 3 masked */

    kref_fill(c->logits, CN * CVP, 3.0f, 17);
    for (int n = 0; n < CN; n++)
        for (int v = CV; v < CVP; v++)
            c->logits[n * CVP + v] = 1000.0f; /* padding must take no part */
    memcpy(c->tgt, tgt, sizeof(tgt));
    for (int i = 0; i < CN * CVP; i++)
        c->x64[i] = c->logits[i];
    c->scale = 1.0 / CN;
}

static double cls_ref_loss(const struct cls *c, int n)
{
    const double *x = c->x64 + n * CVP;
    double max = x[0], sum = 0;

    for (int v = 1; v < CV; v++)
        max = fmax(max, x[v]);
    for (int v = 0; v < CV; v++)
        sum += exp(x[v] - max);
    return log(sum) + max - x[c->tgt[n]];
}

static double cls_loss(void *ctx)
{
    struct cls *c = ctx;
    double sum = 0;

    for (int n = 0; n < CN; n++)
        if (c->tgt[n] >= 0)
            sum += c->scale * cls_ref_loss(c, n);
    return sum;
}

Test(classifier, loss_and_dlogits_match_reference_with_padded_vocab)
{
    struct cls c;
    float losses[CN];

    cls_init(&c);
    cr_assert_eq(gs_kern_classifier(c.logits, losses, c.tgt, CN, CV, CVP, 0.0f, true, GS_KERN_F32),
                 0);
    for (int n = 0; n < CN; n++) {
        double want = c.tgt[n] < 0 ? 0.0 : cls_ref_loss(&c, n);

        cr_assert_leq(fabs(losses[n] - want), FWD_TOL * fmax(1, want), "loss[%d] %g vs %g", n,
                      (double)losses[n], want);
    }
    /* The padded columns got a zero gradient; the masked row is all zero. */
    kref_check_fd(cls_loss, &c, c.x64, CN * CVP, c.logits, BWD_TOL, "dlogits (scale 1/N)");
    for (int n = 0; n < CN; n++)
        for (int v = CV; v < CVP; v++)
            cr_assert_eq(c.logits[n * CVP + v], 0.0f);
    for (int v = 0; v < CVP; v++)
        cr_assert_eq(c.logits[3 * CVP + v], 0.0f);
}

Test(classifier, takes_a_given_scale_and_can_skip_backward)
{
    struct cls c;
    float losses[CN], keep[CN * CVP];

    cls_init(&c);
    memcpy(keep, c.logits, sizeof(keep));
    cr_assert_eq(gs_kern_classifier(c.logits, losses, c.tgt, CN, CV, CVP, 0.0f, false, GS_KERN_F32),
                 0);
    cr_assert_eq(memcmp(keep, c.logits, sizeof(keep)), 0, "forward only keeps the logits");
    c.scale = 0.375;
    cr_assert_eq(
        gs_kern_classifier(c.logits, losses, c.tgt, CN, CV, CVP, 0.375f, true, GS_KERN_F32), 0);
    kref_check_fd(cls_loss, &c, c.x64, CN * CVP, c.logits, BWD_TOL, "dlogits (scale 0.375)");
}

Test(classifier, bf16_equals_fp32_on_rounded_values)
{
    struct cls c;
    float f[CN * CVP], h[CN * CVP], lf[CN], lh[CN];
    void *x16;

    cls_init(&c);
    x16 = to_dt(c.logits, CN * CVP, GS_KERN_BF16);
    memcpy(f, c.logits, sizeof(f));
    round_all(f, CN * CVP, GS_KERN_BF16);
    cr_assert_eq(gs_kern_classifier(x16, lh, c.tgt, CN, CV, CVP, 0.0f, true, GS_KERN_BF16), 0);
    cr_assert_eq(gs_kern_classifier(f, lf, c.tgt, CN, CV, CVP, 0.0f, true, GS_KERN_F32), 0);
    back(h, x16, CN * CVP, GS_KERN_BF16);
    round_all(f, CN * CVP, GS_KERN_BF16);
    assert_same(h, f, CN * CVP, "dlogits");
    assert_same(lh, lf, CN, "losses");
    free(x16);
}

Test(classifier, rejects_target_outside_vocab_and_writes_nothing)
{
    struct cls c;
    float losses[CN] = {0}, keep[CN * CVP];

    cls_init(&c);
    memcpy(keep, c.logits, sizeof(keep));
    c.tgt[5] = CV; /* a padded column is not a real token */
    cr_assert_eq(gs_kern_classifier(c.logits, losses, c.tgt, CN, CV, CVP, 0.0f, true, GS_KERN_F32),
                 -EINVAL);
    c.tgt[5] = -2;
    cr_assert_eq(gs_kern_classifier(c.logits, losses, c.tgt, CN, CV, CVP, 0.0f, true, GS_KERN_F32),
                 -EINVAL);
    cr_assert_eq(memcmp(keep, c.logits, sizeof(keep)), 0);
    c.tgt[5] = 0;
    cr_assert_eq(
        gs_kern_classifier(c.logits, losses, c.tgt, CN, CV, CV - 1, 0.0f, true, GS_KERN_F32),
        -EINVAL, "Vp < V");
}

/* ---- determinism of the row reductions ---- */

Test(layers, reductions_give_the_same_bits_for_any_thread_count)
{
    enum { N = 301, C = 140, B = 7, T = 43, V = 50 };
    static float x[N * C], w[C], b[C], g[N * C], mean[N], rstd[N];
    static float dinp[3][N * C], dw[3][C], db[3][C], dwte[3][V * C], dwpe[3][T * C];
    static int32_t tok[B * T];

    kref_fill(x, N * C, 2.0f, 20);
    kref_fill(w, C, 1.0f, 21);
    kref_fill(b, C, 1.0f, 22);
    kref_fill(g, N * C, 1.0f, 23);
    for (int i = 0; i < B * T; i++)
        tok[i] = (i * 7 + i / 3) % V;
    cr_assert_eq(gs_kern_layernorm_fwd(x, mean, rstd, x, w, b, N, C, GS_KERN_F32), 0);
    for (int t = 0; t < 3; t++) {
        kref_set_threads(t + 1);
        cr_assert_eq(
            gs_kern_layernorm_bwd(dinp[t], dw[t], db[t], g, x, w, mean, rstd, N, C, GS_KERN_F32),
            0);
        cr_assert_eq(gs_kern_encoder_bwd(dwte[t], dwpe[t], g, tok, B, T, C, V, GS_KERN_F32), 0);
    }
    for (int t = 1; t < 3; t++) {
        cr_assert_eq(memcmp(dinp[0], dinp[t], sizeof(dinp[0])), 0, "dinp, %d threads", t + 1);
        cr_assert_eq(memcmp(dw[0], dw[t], sizeof(dw[0])), 0, "dweight, %d threads", t + 1);
        cr_assert_eq(memcmp(db[0], db[t], sizeof(db[0])), 0, "dbias, %d threads", t + 1);
        cr_assert_eq(memcmp(dwte[0], dwte[t], sizeof(dwte[0])), 0, "dwte, %d threads", t + 1);
        cr_assert_eq(memcmp(dwpe[0], dwpe[t], sizeof(dwpe[0])), 0, "dwpe, %d threads", t + 1);
    }
}
