/*
 * test_attention.c: causal multi-head attention (kernels/attention_cpu.c) against a float64
 * reference written here: forward output and saved probabilities (tolerance 1e-5 of the
 * largest magnitude), backward against central differences of the reference forward (loss =
 * sum(r * out), tolerance 1e-4), on B=2, T=5, C=12, NH=3; forward on T=37, C=48, NH=4 and
 * backward against a float64 backward on T=83, C=160, NH=2 (the kernel's block edges, where
 * finite differences would be slow). 16-bit: equal to the fp32 kernel on
 * rounded inputs, rounded (0 ulps). Bitwise the same for 1, 2 and 3 threads.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "kref.h"

struct att {
    int B, T, C, NH;
    float *qkv, *dout, *out, *att, *dqkv;
    double *qkv64;
    void *ws;
    size_t ws_bytes;
};

static void att_init(struct att *a, int B, int T, int C, int NH, uint64_t seed)
{
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C;

    *a = (struct att){.B = B, .T = T, .C = C, .NH = NH};
    a->qkv = calloc(n3, 4);
    a->dqkv = calloc(n3, 4);
    a->dout = calloc(n, 4);
    a->out = calloc(n, 4);
    a->att = calloc((size_t)B * NH * T * T, 4);
    cr_assert(a->qkv && a->dqkv && a->dout && a->out && a->att);
    kref_fill(a->qkv, n3, 1.5f, seed);
    kref_fill(a->dout, n, 1.0f, seed + 1);
    a->qkv64 = kref_to_f64(a->qkv, n3);
    a->ws_bytes = gs_kern_attention_ws_bytes(T, C, NH);
    cr_assert_gt(a->ws_bytes, 0);
    a->ws = malloc(a->ws_bytes);
    cr_assert_not_null(a->ws);
}

static void att_free(struct att *a)
{
    free(a->qkv);
    free(a->dqkv);
    free(a->dout);
    free(a->out);
    free(a->att);
    free(a->qkv64);
    free(a->ws);
}

static void att_run(struct att *a)
{
    cr_assert_eq(gs_kern_attention_fwd(a->out, a->att, a->qkv, a->B, a->T, a->C, a->NH, GS_KERN_F32,
                                       a->ws, a->ws_bytes),
                 0);
    cr_assert_eq(gs_kern_attention_bwd(a->dqkv, a->dout, a->att, a->qkv, a->B, a->T, a->C, a->NH,
                                       GS_KERN_F32, a->ws, a->ws_bytes),
                 0);
}

/* out and (when p != NULL) the probabilities, in float64. */
static void att_ref(const struct att *a, double *out, double *p)
{
    int T = a->T, C = a->C, hs = C / a->NH;
    double *pre = malloc((size_t)T * sizeof(double));

    for (int b = 0; b < a->B; b++)
        for (int h = 0; h < a->NH; h++)
            for (int t = 0; t < T; t++) {
                const double *q = a->qkv64 + ((size_t)b * T + t) * 3 * C + h * hs;
                double max = -INFINITY, sum = 0;

                for (int t2 = 0; t2 <= t; t2++) {
                    const double *k = a->qkv64 + ((size_t)b * T + t2) * 3 * C + C + h * hs;

                    pre[t2] = 0;
                    for (int i = 0; i < hs; i++)
                        pre[t2] += q[i] * k[i] / sqrt((double)hs);
                    max = fmax(max, pre[t2]);
                }
                for (int t2 = 0; t2 <= t; t2++)
                    sum += exp(pre[t2] - max);
                for (int i = 0; i < hs; i++) {
                    double o = 0;

                    for (int t2 = 0; t2 <= t; t2++)
                        o += exp(pre[t2] - max) / sum *
                             a->qkv64[((size_t)b * T + t2) * 3 * C + 2 * C + h * hs + i];
                    out[((size_t)b * T + t) * C + h * hs + i] = o;
                }
                for (int t2 = 0; p != NULL && t2 < T; t2++)
                    p[(((size_t)b * a->NH + h) * T + t) * T + t2] =
                        t2 <= t ? exp(pre[t2] - max) / sum : 0.0;
            }
    free(pre);
}

static double att_loss(void *ctx)
{
    struct att *a = ctx;
    size_t n = (size_t)a->B * a->T * a->C;
    double *out = malloc(n * sizeof(double)), sum = 0;

    att_ref(a, out, NULL);
    for (size_t i = 0; i < n; i++)
        sum += a->dout[i] * out[i];
    free(out);
    return sum;
}

static void check_forward(int B, int T, int C, int NH)
{
    struct att a;
    size_t n = (size_t)B * T * C, np = (size_t)B * NH * T * T;
    double *out = malloc(n * 8), *p = malloc(np * 8);

    att_init(&a, B, T, C, NH, 3);
    att_run(&a);
    att_ref(&a, out, p);
    kref_check_close(a.out, out, n, 1e-5, "out");
    kref_check_close(a.att, p, np, 1e-5, "att");
    for (size_t i = 0; i < np; i++)
        if (p[i] == 0.0)
            cr_assert_eq(a.att[i], 0.0f, "att[%zu] above the diagonal", i);
    free(out);
    free(p);
    att_free(&a);
}

Test(attention, forward_matches_float64_small)
{
    check_forward(2, 5, 12, 3);
}

Test(attention, forward_matches_float64_longer)
{
    check_forward(2, 37, 48, 4);
}

Test(attention, backward_matches_finite_differences)
{
    struct att a;

    att_init(&a, 2, 5, 12, 3, 4);
    att_run(&a);
    kref_check_fd(att_loss, &a, a.qkv64, 2 * 5 * 36, a.dqkv, 1e-4, "dqkv");
    att_free(&a);
}

/* The backward pass in float64, from the formulas: dv += p dout, dp = dout . v,
 * ds = p (dp - sum p dp) / sqrt(hs), dq = ds . k, dk += ds q. */
static void att_ref_bwd(const struct att *a, const double *p, double *dqkv)
{
    int T = a->T, C = a->C, hs = C / a->NH;
    double *dp = malloc((size_t)T * sizeof(double));

    for (int b = 0; b < a->B; b++)
        for (int h = 0; h < a->NH; h++)
            for (int t = 0; t < T; t++) {
                const double *pr = p + (((size_t)b * a->NH + h) * T + t) * T;
                const float *g = a->dout + ((size_t)b * T + t) * C + h * hs;
                size_t qt = ((size_t)b * T + t) * 3 * C + h * hs;
                double sum = 0;

                for (int t2 = 0; t2 <= t; t2++) {
                    size_t r2 = ((size_t)b * T + t2) * 3 * C + h * hs;

                    dp[t2] = 0;
                    for (int i = 0; i < hs; i++) {
                        dp[t2] += g[i] * a->qkv64[r2 + 2 * C + i];
                        dqkv[r2 + 2 * C + i] += pr[t2] * g[i];
                    }
                    sum += pr[t2] * dp[t2];
                }
                for (int t2 = 0; t2 <= t; t2++) {
                    size_t r2 = ((size_t)b * T + t2) * 3 * C + h * hs;
                    double ds = pr[t2] * (dp[t2] - sum) / sqrt((double)hs);

                    for (int i = 0; i < hs; i++) {
                        dqkv[qt + i] += ds * a->qkv64[r2 + C + i];
                        dqkv[r2 + C + i] += ds * a->qkv64[qt + i];
                    }
                }
            }
    free(dp);
}

/* T = 83 runs the 64- and 16-wide score blocks and their tails; hs = 80 the 64- and 16-wide
 * channel blocks. The float64 backward above is itself checked against the kernel on the
 * small shape, where finite differences check the kernel. */
static void check_backward_analytic(int B, int T, int C, int NH)
{
    struct att a;
    size_t n3 = (size_t)B * T * 3 * C, np = (size_t)B * NH * T * T;
    double *out = malloc((size_t)B * T * C * 8), *p = malloc(np * 8), *want = calloc(n3, 8);

    att_init(&a, B, T, C, NH, 8);
    att_run(&a);
    att_ref(&a, out, p);
    att_ref_bwd(&a, p, want);
    kref_check_close(a.dqkv, want, n3, 1e-4, "dqkv");
    free(out);
    free(p);
    free(want);
    att_free(&a);
}

Test(attention, backward_matches_float64_past_block_edges)
{
    check_backward_analytic(2, 5, 12, 3);
    check_backward_analytic(1, 83, 160, 2);
}

static void check_16bit(enum gs_kern_dtype dt)
{
    enum { B = 2, T = 9, C = 24, NH = 3 };
    struct att a;
    size_t n3 = B * T * 3 * C, n = B * T * C;
    void *q16, *g16, *o16 = calloc(n, 2), *d16 = calloc(n3, 2), *want_o, *want_d;
    float *att16 = calloc(B * NH * T * T, 4);

    att_init(&a, B, T, C, NH, 5);
    q16 = kref_to_dtype(a.qkv, n3, dt);
    g16 = kref_to_dtype(a.dout, n, dt);
    kref_round_inplace(a.qkv, n3, dt);
    kref_round_inplace(a.dout, n, dt);
    cr_assert_eq(gs_kern_attention_fwd(o16, att16, q16, B, T, C, NH, dt, a.ws, a.ws_bytes), 0);
    cr_assert_eq(gs_kern_attention_bwd(d16, g16, att16, q16, B, T, C, NH, dt, a.ws, a.ws_bytes), 0);
    att_run(&a);
    want_o = kref_to_dtype(a.out, n, dt);
    want_d = kref_to_dtype(a.dqkv, n3, dt);
    kref_check_ulps(o16, want_o, n, dt, 0, "out");
    kref_check_ulps(d16, want_d, n3, dt, 0, "dqkv");
    cr_assert_eq(memcmp(att16, a.att, B * NH * T * T * 4), 0, "att");
    free(q16);
    free(g16);
    free(o16);
    free(d16);
    free(want_o);
    free(want_d);
    free(att16);
    att_free(&a);
}

Test(attention, bf16_and_fp16_equal_fp32_on_rounded_values)
{
    check_16bit(GS_KERN_BF16);
    check_16bit(GS_KERN_F16);
}

Test(attention, same_bits_for_any_thread_count)
{
    struct att a[3];

    for (int t = 0; t < 3; t++) {
        kref_set_threads(t + 1);
        att_init(&a[t], 3, 11, 24, 2, 6);
        att_run(&a[t]);
    }
    for (int t = 1; t < 3; t++) {
        cr_assert_eq(memcmp(a[0].out, a[t].out, 3 * 11 * 24 * 4), 0, "out, %d threads", t + 1);
        cr_assert_eq(memcmp(a[0].dqkv, a[t].dqkv, 3 * 11 * 72 * 4), 0, "dqkv, %d threads", t + 1);
    }
    for (int t = 0; t < 3; t++)
        att_free(&a[t]);
}

Test(attention, rejects_bad_shapes_and_small_workspace)
{
    struct att a;

    att_init(&a, 2, 5, 12, 3, 7);
    cr_assert_eq(gs_kern_attention_ws_bytes(5, 12, 5), 0, "C not a multiple of NH");
    cr_assert_eq(
        gs_kern_attention_fwd(a.out, a.att, a.qkv, 2, 5, 12, 5, GS_KERN_F32, a.ws, a.ws_bytes),
        -EINVAL);
    cr_assert_eq(gs_kern_attention_fwd(a.out, a.att, a.qkv, 2, 5, 12, 3, GS_KERN_F32, a.ws, 64),
                 -EINVAL);
    cr_assert_eq(gs_kern_attention_bwd(a.dqkv, a.dout, NULL, a.qkv, 2, 5, 12, 3, GS_KERN_F32, a.ws,
                                       a.ws_bytes),
                 -EINVAL);
    for (int i = 0; i < 2 * 5 * 12; i++)
        cr_assert_eq(a.out[i], 0.0f);
    att_free(&a);
}
