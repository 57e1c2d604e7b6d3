/*
 * adamw_cpu.c: CPU AdamW step, the reference for kernels/adamw.cu. Plain loops the compiler
 * vectorises; bias corrections are computed once per call, not per element.
 */
#include "kernels/adamw.h"

#include <errno.h>
#include <math.h>

int gs_kern_adamw_cpu(float *param, const float *grad, float *m, float *v, size_t n,
                      const struct gs_kern_adamw *hp)
{
    float corr1, corr2;

    if (hp == NULL || hp->step < 1)
        return -EINVAL;
    if (n > 0 && (param == NULL || grad == NULL || m == NULL || v == NULL))
        return -EINVAL;
    corr1 = 1.0f - powf(hp->beta1, (float)hp->step);
    corr2 = 1.0f - powf(hp->beta2, (float)hp->step);
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float mi = hp->beta1 * m[i] + (1.0f - hp->beta1) * g;
        float vi = hp->beta2 * v[i] + (1.0f - hp->beta2) * g * g;
        float update = (mi / corr1) / (sqrtf(vi / corr2) + hp->eps);

        m[i] = mi;
        v[i] = vi;
        param[i] -= hp->lr * (update + hp->weight_decay * param[i]);
    }
    return 0;
}
