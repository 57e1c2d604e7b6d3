/*
 * adamw_cpu.c: CPU AdamW step, the reference for kernels/adamw.cu. Plain loops the compiler
 * vectorises, split over OpenMP threads (each element is independent, so the bits do not
 * depend on the split); bias corrections are computed once per call, not per element. The
 * _copy variant also rounds each new weight into the 16-bit copy the forward pass reads.
 */
#include "kernels/adamw.h"

#include <errno.h>
#include <math.h>

#include "kernels/cpu_internal.h"

static int adamw(float *param, const float *grad, float *m, float *v, size_t n,
                 const struct gs_kern_adamw *hp, void *copy, enum gs_kern_dtype dt)
{
    float corr1, corr2;

    if (hp == NULL || hp->step < 1)
        return -EINVAL;
    if (n > 0 && (param == NULL || grad == NULL || m == NULL || v == NULL))
        return -EINVAL;
    corr1 = 1.0f - powf(hp->beta1, (float)hp->step);
    corr2 = 1.0f - powf(hp->beta2, (float)hp->step);
    GS_OMP(parallel for schedule(static))
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float mi = hp->beta1 * m[i] + (1.0f - hp->beta1) * g;
        float vi = hp->beta2 * v[i] + (1.0f - hp->beta2) * g * g;
        float update = (mi / corr1) / (sqrtf(vi / corr2) + hp->eps);

        m[i] = mi;
        v[i] = vi;
        param[i] -= hp->lr * (update + hp->weight_decay * param[i]);
        if (copy != NULL)
            gs_kern_store(copy, i, dt, param[i]);
    }
    return 0;
}

int gs_kern_adamw_cpu(float *param, const float *grad, float *m, float *v, size_t n,
                      const struct gs_kern_adamw *hp)
{
    return adamw(param, grad, m, v, n, hp, NULL, GS_KERN_F32);
}

int gs_kern_adamw_copy_cpu(float *param, const float *grad, float *m, float *v, size_t n,
                           const struct gs_kern_adamw *hp, void *copy, enum gs_kern_dtype dt)
{
    if ((n > 0 && copy == NULL) || !gs_kern_dtype_ok(dt))
        return -EINVAL;
    return adamw(param, grad, m, v, n, hp, copy, dt);
}
