/*
 * kref.c: shared helpers of the kernel tests (see kref.h).
 */
#include "kref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

double kref_uniform(uint64_t *state, double lo, double hi)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * ((double)(*state >> 11) / 9007199254740992.0);
}

void kref_fill(float *x, size_t n, float scale, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * (float)kref_uniform(&seed, -1.0, 1.0);
}

static void *alloc(size_t bytes)
{
    void *p = calloc(bytes ? bytes : 1, 1);

    cr_assert_not_null(p);
    return p;
}

double *kref_to_f64(const float *x, size_t n)
{
    double *d = alloc(n * sizeof(double));

    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

void *kref_to_dtype(const float *x, size_t n, enum gs_kern_dtype dt)
{
    void *p = alloc(n * gs_kern_dtype_size(dt));

    for (size_t i = 0; i < n; i++)
        gs_kern_store(p, i, dt, x[i]);
    return p;
}

void kref_round_inplace(float *x, size_t n, enum gs_kern_dtype dt)
{
    float h[1]; /* room for any dtype */

    if (dt == GS_KERN_F32)
        return;
    for (size_t i = 0; i < n; i++) {
        gs_kern_store(h, 0, dt, x[i]);
        x[i] = gs_kern_load(h, 0, dt);
    }
}

float *kref_from_dtype(const void *x, size_t n, enum gs_kern_dtype dt)
{
    float *f = alloc(n * sizeof(float));

    for (size_t i = 0; i < n; i++)
        f[i] = gs_kern_load(x, i, dt);
    return f;
}

void kref_check_fd(kref_loss_fn loss, void *ctx, double *x, size_t n, const float *got, double tol,
                   const char *what)
{
    double *fd = alloc(n * sizeof(double)), scale = 1.0;

    for (size_t j = 0; j < n; j++) {
        double save = x[j], h = 1e-6 * fmax(1.0, fabs(save)), lp, lm;

        x[j] = save + h;
        lp = loss(ctx);
        x[j] = save - h;
        lm = loss(ctx);
        x[j] = save;
        fd[j] = (lp - lm) / (2 * h);
        scale = fmax(scale, fabs(fd[j]));
    }
    for (size_t j = 0; j < n; j++)
        cr_assert_leq(fabs(got[j] - fd[j]), tol * scale, "%s[%zu]: kernel %.9g, differences %.9g",
                      what, j, (double)got[j], fd[j]);
    free(fd);
}

void kref_check_close(const float *got, const double *want, size_t n, double tol, const char *what)
{
    double scale = 1.0;

    for (size_t j = 0; j < n; j++)
        scale = fmax(scale, fabs(want[j]));
    for (size_t j = 0; j < n; j++)
        cr_assert_leq(fabs(got[j] - want[j]), tol * scale, "%s[%zu]: kernel %.9g, want %.9g", what,
                      j, (double)got[j], want[j]);
}

/* Maps a 16-bit float's bits onto a line where adjacent values differ by one. */
static int32_t ordered(uint16_t h)
{
    return (h & 0x8000u) ? -(int32_t)(h & 0x7fffu) : (int32_t)h;
}

void kref_check_ulps(const void *got, const void *want, size_t n, enum gs_kern_dtype dt, int ulps,
                     const char *what)
{
    const uint16_t *g = got, *w = want;

    cr_assert_neq(dt, GS_KERN_F32);
    for (size_t j = 0; j < n; j++) {
        int32_t d = ordered(g[j]) - ordered(w[j]);

        cr_assert_leq(abs(d), ulps, "%s[%zu]: 0x%04x vs 0x%04x (%g vs %g)", what, j, g[j], w[j],
                      (double)gs_kern_load(g, j, dt), (double)gs_kern_load(w, j, dt));
    }
}

void kref_set_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* log(sum_j exp(q_t . k_j / sqrt(hs))) over j <= t, in float64. */
double *kref_attention_lse(const float *qkv, int B, int T, int C, int NH)
{
    int hs = C / NH;
    double *lse = malloc((size_t)B * NH * T * sizeof(double)), *s = malloc(T * sizeof(double));

    cr_assert(lse && s);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                double max = -INFINITY, sum = 0.0;

                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;

                    s[j] = 0.0;
                    for (int i = 0; i < hs; i++)
                        s[j] += (double)q[i] * k[i];
                    s[j] /= sqrt((double)hs);
                    max = fmax(max, s[j]);
                }
                for (int j = 0; j <= t; j++)
                    sum += exp(s[j] - max);
                lse[((size_t)b * NH + h) * T + t] = max + log(sum);
            }
    free(s);
    return lse;
}
