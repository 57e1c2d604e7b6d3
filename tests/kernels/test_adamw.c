/*
 * test_adamw.c: the fused AdamW step against a float64 reference written from the formula,
 * and the CUDA twin (gs_kern_gpu_adamw, gpu.h) against the CPU one when a GPU is present
 * (skipped, not passed, when there is none). Tolerances: float32 results within 1e-5 relative
 * of float64 after 20 steps; the GPU within 1e-6 relative of the CPU (it performs the same
 * rounded operations, so it should match bit for bit; test_gpu_kernels.c holds it to that).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/adamw.h"
#include "kernels/device.h"
#include "kernels/gpu.h"

#define N 4099 /* odd, so no kernel gets an even split for free */
#define STEPS 20

static const struct gs_kern_adamw hp_base = {
    .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 1};

/* Deterministic pseudo-random values in [-1, 1). */
static float rnd(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0);
}

static void reference_step(double *p, const float *g, double *m, double *v, size_t n,
                           const struct gs_kern_adamw *hp)
{
    double c1 = 1.0 - pow(hp->beta1, hp->step), c2 = 1.0 - pow(hp->beta2, hp->step);

    for (size_t i = 0; i < n; i++) {
        m[i] = hp->beta1 * m[i] + (1.0 - hp->beta1) * g[i];
        v[i] = hp->beta2 * v[i] + (1.0 - hp->beta2) * (double)g[i] * g[i];
        p[i] -= hp->lr * ((m[i] / c1) / (sqrt(v[i] / c2) + hp->eps) + hp->weight_decay * p[i]);
    }
}

Test(adamw, cpu_step_matches_float64_reference)
{
    static float p[N], g[N], m[N], v[N];
    static double rp[N], rm[N], rv[N];
    struct gs_kern_adamw hp = hp_base;
    uint64_t seed = 42;

    for (size_t i = 0; i < N; i++) {
        p[i] = rnd(&seed);
        rp[i] = p[i];
    }
    for (hp.step = 1; hp.step <= STEPS; hp.step++) {
        for (size_t i = 0; i < N; i++)
            g[i] = rnd(&seed) * 0.1f;
        cr_assert_eq(gs_kern_adamw_cpu(p, g, m, v, N, &hp), 0);
        reference_step(rp, g, rm, rv, N, &hp);
    }
    for (size_t i = 0; i < N; i++)
        cr_assert_leq(fabs(p[i] - rp[i]), 1e-5 * fmax(1.0, fabs(rp[i])), "i=%zu %g vs %g", i,
                      (double)p[i], rp[i]);
}

Test(adamw, rejects_bad_arguments)
{
    float x = 0;
    struct gs_kern_adamw hp = hp_base;

    cr_assert_eq(gs_kern_adamw_cpu(NULL, &x, &x, &x, 1, &hp), -EINVAL);
    cr_assert_eq(gs_kern_adamw_cpu(&x, &x, &x, &x, 1, NULL), -EINVAL);
    hp.step = 0;
    cr_assert_eq(gs_kern_adamw_cpu(&x, &x, &x, &x, 1, &hp), -EINVAL);
    hp.step = 1;
    cr_assert_eq(gs_kern_adamw_cpu(NULL, NULL, NULL, NULL, 0, &hp), 0);
}

Test(adamw, without_cuda_reports_enodev)
{
    int count = -1;

    if (gs_kern_cuda_built())
        cr_skip_test("built with CUDA");
    cr_assert_eq(gs_kern_dev_count(&count), -ENODEV);
    cr_assert_eq(
        gs_kern_gpu_adamw(NULL, NULL, NULL, NULL, NULL, 0, &hp_base, 1.0f, NULL, GS_KERN_F32),
        -ENODEV);
}

static void upload(float **d, const float *h)
{
    cr_assert_eq(gs_kern_dev_alloc(N * sizeof(float), (void **)d), 0, "%s",
                 gs_kern_dev_last_error());
    cr_assert_eq(gs_kern_dev_copy_to(*d, h, N * sizeof(float)), 0);
}

Test(adamw, cuda_step_matches_cpu_step)
{
    static float p[N], g[N], m[N], v[N], out[N];
    float *dp, *dg, *dm, *dv;
    struct gs_kern_adamw hp = hp_base;
    struct gs_kern_gpu *gpu = NULL;
    uint64_t seed = 7;
    int count = 0;

    if (!gs_kern_cuda_built() || gs_kern_dev_count(&count) < 0 || count == 0)
        cr_skip_test("no CUDA device");
    cr_assert_eq(gs_kern_gpu_new(0, &gpu), 0, "%s", gs_kern_dev_last_error());
    for (size_t i = 0; i < N; i++)
        p[i] = rnd(&seed);
    upload(&dp, p);
    upload(&dg, g);
    upload(&dm, m);
    upload(&dv, v);
    for (hp.step = 1; hp.step <= STEPS; hp.step++) {
        for (size_t i = 0; i < N; i++)
            g[i] = rnd(&seed) * 0.1f;
        /* The context's stream need not wait for the default stream's copy: sync first. */
        cr_assert_eq(gs_kern_gpu_sync(gpu), 0);
        cr_assert_eq(gs_kern_dev_copy_to(dg, g, sizeof(g)), 0);
        cr_assert_eq(gs_kern_dev_sync(), 0);
        cr_assert_eq(gs_kern_gpu_adamw(gpu, dp, dg, dm, dv, N, &hp, 1.0f, NULL, GS_KERN_F32), 0);
        cr_assert_eq(gs_kern_adamw_cpu(p, g, m, v, N, &hp), 0);
    }
    cr_assert_eq(gs_kern_gpu_sync(gpu), 0, "%s", gs_kern_dev_last_error());
    cr_assert_eq(gs_kern_dev_copy_from(out, dp, sizeof(out)), 0);
    for (size_t i = 0; i < N; i++)
        cr_assert_leq(fabsf(out[i] - p[i]), 1e-6f * fmaxf(1.0f, fabsf(p[i])), "i=%zu", i);
    gs_kern_dev_free(dp);
    gs_kern_dev_free(dg);
    gs_kern_dev_free(dm);
    gs_kern_dev_free(dv);
    gs_kern_gpu_free(gpu);
}
