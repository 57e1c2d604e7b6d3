/*
 * test_grad.c: the optimizer-step kernels: global gradient norm (against a float64 sum,
 * within 1e-6 relative, and bitwise the same for 1, 2 and 3 threads), clip and scale, the
 * loss-scale unscale with its inf/NaN flag, and AdamW writing the 16-bit weight copy (the
 * copy must be exactly the rounded fp32 weights, which must equal plain AdamW's).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adamw.h"
#include "kernels/ops.h"
#include "kref.h"

enum { G1 = 100003, G2 = 8192 * 70 + 5, G3 = 7 };

static float *g1, *g2, *g3;

static void setup(void)
{
    g1 = malloc(G1 * sizeof(float));
    g2 = malloc(G2 * sizeof(float));
    g3 = malloc(G3 * sizeof(float));
    cr_assert(g1 && g2 && g3);
    kref_fill(g1, G1, 1.0f, 1);
    kref_fill(g2, G2, 0.01f, 2);
    kref_fill(g3, G3, 100.0f, 3);
}

static void teardown(void)
{
    free(g1);
    free(g2);
    free(g3);
}

static float norm_of_all(void)
{
    const float *arrays[3] = {g1, g2, g3};
    const size_t lens[3] = {G1, G2, G3};
    float norm = -1;

    cr_assert_eq(gs_kern_grad_norm(arrays, lens, 3, &norm), 0);
    return norm;
}

Test(grad, norm_matches_float64_sum, .init = setup, .fini = teardown)
{
    double want = 0;

    for (size_t i = 0; i < G1; i++)
        want += (double)g1[i] * g1[i];
    for (size_t i = 0; i < G2; i++)
        want += (double)g2[i] * g2[i];
    for (size_t i = 0; i < G3; i++)
        want += (double)g3[i] * g3[i];
    want = sqrt(want);
    cr_assert_leq(fabs(norm_of_all() - want), 1e-6 * want, "%g vs %g", (double)norm_of_all(), want);
}

Test(grad, norm_is_the_same_for_any_thread_count, .init = setup, .fini = teardown)
{
    float n[3];

    for (int t = 0; t < 3; t++) {
        kref_set_threads(t + 1);
        n[t] = norm_of_all();
    }
    cr_assert_eq(memcmp(&n[0], &n[1], sizeof(float)), 0);
    cr_assert_eq(memcmp(&n[0], &n[2], sizeof(float)), 0);
}

Test(grad, norm_of_nothing_is_zero_and_bad_arguments_fail)
{
    const float *arrays[1] = {NULL};
    const size_t lens[1] = {3};
    float norm = -1;

    cr_assert_eq(gs_kern_grad_norm(NULL, NULL, 0, &norm), 0);
    cr_assert_eq(norm, 0.0f);
    cr_assert_eq(gs_kern_grad_norm(arrays, lens, 1, &norm), -EINVAL);
    cr_assert_eq(gs_kern_grad_norm(arrays, lens, 1, NULL), -EINVAL);
}

Test(grad, clip_scales_only_above_the_limit)
{
    float g[5] = {3, -4, 0, 1, 2};

    cr_assert_eq(gs_kern_clip_scale(0.5f, 1.0f), 1.0f);
    cr_assert_eq(gs_kern_clip_scale(5.0f, 0.0f), 1.0f, "max_norm 0: clipping off");
    cr_assert_float_eq(gs_kern_clip_scale(5.0f, 1.0f), 0.2f, 1e-6f);
    cr_assert_eq(gs_kern_grad_scale(g, 5, 0.5f), 0);
    cr_assert_eq(g[0], 1.5f);
    cr_assert_eq(g[1], -2.0f);
    cr_assert_eq(g[4], 1.0f);
    cr_assert_eq(gs_kern_grad_scale(NULL, 1, 0.5f), -EINVAL);
}

Test(grad, unscale_multiplies_and_flags_inf_and_nan)
{
    float g[1000];
    bool found = false;

    kref_fill(g, 1000, 1024.0f, 9);
    cr_assert_eq(gs_kern_grad_unscale(g, 1000, 1.0f / 1024, &found), 0);
    cr_assert_not(found);
    cr_assert_leq(fabsf(g[17]), 1.0f);
    g[999] = INFINITY;
    cr_assert_eq(gs_kern_grad_unscale(g, 1000, 1.0f, &found), 0);
    cr_assert(found);
    found = false;
    g[999] = 0;
    g[500] = NAN;
    cr_assert_eq(gs_kern_grad_unscale(g, 1000, 1.0f, &found), 0);
    cr_assert(found);
    g[500] = 0;
    cr_assert_eq(gs_kern_grad_unscale(g, 1000, 1.0f, &found), 0);
    cr_assert(found, "the flag is only ever set, so one flag gathers a whole step");
    cr_assert_eq(gs_kern_grad_unscale(g, 1000, 1.0f, NULL), -EINVAL);
}

Test(adamw, copy_variant_writes_the_rounded_weights)
{
    enum { N = 4099 };
    static float p1[N], p2[N], g[N], m1[N], v1[N], m2[N], v2[N];
    static uint16_t copy[N];
    struct gs_kern_adamw hp = {
        .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};

    kref_fill(p1, N, 1.0f, 1);
    memcpy(p2, p1, sizeof(p1));
    for (hp.step = 1; hp.step <= 5; hp.step++) {
        kref_fill(g, N, 0.1f, 100 + (uint64_t)hp.step);
        cr_assert_eq(gs_kern_adamw_cpu(p1, g, m1, v1, N, &hp), 0);
        cr_assert_eq(gs_kern_adamw_copy_cpu(p2, g, m2, v2, N, &hp, copy, GS_KERN_BF16), 0);
    }
    cr_assert_eq(memcmp(p1, p2, sizeof(p1)), 0);
    for (int i = 0; i < N; i++)
        cr_assert_eq(copy[i], gs_kern_f32_to_bf16(p2[i]), "i=%d", i);
    cr_assert_eq(gs_kern_adamw_copy_cpu(p2, g, m2, v2, N, &hp, NULL, GS_KERN_BF16), -EINVAL);
}
