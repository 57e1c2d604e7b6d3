/*
 * adamw.h: the fused AdamW optimizer step, on the CPU and (when built with CUDA) on the GPU.
 *
 * One pass over the parameters updates the first and second moments and the weights:
 *     m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
 *     p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p),  mhat = m/(1-b1^t), vhat = v/(1-b2^t)
 * (decoupled weight decay, as in Loshchilov & Hutter and PyTorch's AdamW). Fusing the three
 * updates reads each array once instead of three times, which is what bounds this step.
 *
 * The CPU function is the reference the CUDA twin (gs_kern_gpu_adamw in gpu.h) is tested
 * against; both take the same hyper-parameters and agree within float32 rounding. Arrays are
 * caller-owned.
 */
#ifndef GS_KERN_ADAMW_H
#define GS_KERN_ADAMW_H

#include <stddef.h>

#include "kernels/dtype.h"

struct gs_kern_adamw {
    float lr;
    float beta1;
    float beta2;
    float eps;
    float weight_decay;
    int step; /* 1-based step number t, for bias correction */
};

/* Returns 0, or -EINVAL for a NULL array with n > 0 or step < 1. */
int gs_kern_adamw_cpu(float *param, const float *grad, float *m, float *v, size_t n,
                      const struct gs_kern_adamw *hp);

/* The same step, which also writes the updated weights, rounded once, into `copy` (n elements
 * of dtype dt: the 16-bit weights the forward pass reads; F32 is allowed and copies). One pass
 * instead of a step and a cast. Returns 0, or -EINVAL as above or for a NULL copy. */
int gs_kern_adamw_copy_cpu(float *param, const float *grad, float *m, float *v, size_t n,
                           const struct gs_kern_adamw *hp, void *copy, enum gs_kern_dtype dt);

#endif
