/*
 * adamw.cu: CUDA twin of adamw_cpu.c (gpu.h: gs_kern_gpu_adamw): the fused AdamW step on the
 * gradient times grad_scale (the clip factor), optionally writing the new weights rounded to
 * the storage dtype into the 16-bit copy the forward pass reads.
 *
 * Work split: one thread per element over a grid-stride loop (ADAMW_THREADS threads a block,
 * at most ADAMW_BLOCK_CAP blocks). Elements are independent, so the bits never depend on the
 * split. The bias corrections are computed once on the host with powf, exactly as the CPU
 * does, and every operation on the device is written with a round-to-nearest intrinsic
 * (__fmul_rn, __fadd_rn, ...), which nvcc never contracts into an FMA: the step performs the
 * CPU's operations in the CPU's order, each rounded once, so both give the same floats.
 */
#include <cerrno>
#include <cmath>

#include "kernels/gpu_internal.h"

#define ADAMW_THREADS 256u
#define ADAMW_BLOCK_CAP 8192u

struct adamw_consts {
    float lr, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay;
    float corr1, corr2, grad_scale;
};

template <int DT>
static __global__ void adamw_kernel(float *param, const float *grad, float *m, float *v, size_t n,
                                    struct adamw_consts k, void *copy)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = __fmul_rn(grad[i], k.grad_scale);
        float mi = __fadd_rn(__fmul_rn(k.beta1, m[i]), __fmul_rn(k.one_minus_beta1, g));
        float vi =
            __fadd_rn(__fmul_rn(k.beta2, v[i]), __fmul_rn(__fmul_rn(k.one_minus_beta2, g), g));
        float update =
            __fdiv_rn(__fdiv_rn(mi, k.corr1), __fadd_rn(__fsqrt_rn(__fdiv_rn(vi, k.corr2)), k.eps));
        float p = param[i];

        p = __fsub_rn(p, __fmul_rn(k.lr, __fadd_rn(update, __fmul_rn(k.weight_decay, p))));
        m[i] = mi;
        v[i] = vi;
        param[i] = p;
        if (copy != NULL)
            gs_dstore(copy, i, DT, p);
    }
}

typedef void (*adamw_fn)(float *, const float *, float *, float *, size_t, struct adamw_consts,
                         void *);

/* One instantiation per dtype of the copy, indexed by enum gs_kern_dtype. */
static const adamw_fn adamw_kernels[] = {adamw_kernel<GS_KERN_F32>, adamw_kernel<GS_KERN_BF16>,
                                         adamw_kernel<GS_KERN_F16>};

extern "C" int gs_kern_gpu_adamw(struct gs_kern_gpu *g, float *param, const float *grad, float *m,
                                 float *v, size_t n, const struct gs_kern_adamw *hp,
                                 float grad_scale, void *copy, enum gs_kern_dtype dt)
{
    struct adamw_consts k;

    if (g == NULL || hp == NULL || hp->step < 1 || gs_kern_dtype_size(dt) == 0)
        return -EINVAL;
    if (n > 0 && (param == NULL || grad == NULL || m == NULL || v == NULL))
        return -EINVAL;
    if (n == 0)
        return 0;
    k.lr = hp->lr;
    k.beta1 = hp->beta1;
    k.beta2 = hp->beta2;
    k.one_minus_beta1 = 1.0f - hp->beta1;
    k.one_minus_beta2 = 1.0f - hp->beta2;
    k.eps = hp->eps;
    k.weight_decay = hp->weight_decay;
    k.corr1 = 1.0f - powf(hp->beta1, (float)hp->step);
    k.corr2 = 1.0f - powf(hp->beta2, (float)hp->step);
    k.grad_scale = grad_scale;
    adamw_kernels[dt]<<<gs_kern_gpu_blocks(n, ADAMW_THREADS, ADAMW_BLOCK_CAP), ADAMW_THREADS, 0,
                        g->stream>>>(param, grad, m, v, n, k, copy);
    return gs_kern_dev_check(cudaGetLastError());
}
