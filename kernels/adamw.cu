/*
 * adamw.cu: CUDA AdamW step (see adamw.h). One thread per element over a grid-stride loop, so
 * any n runs with a bounded grid; the arithmetic matches adamw_cpu.c operation for operation
 * so results agree within float32 rounding.
 */
#include <cerrno>
#include <cuda_runtime.h>

extern "C" {
#include "kernels/adamw.h"
#include "kernels/device_internal.h"
}

static __global__ void adamw_kernel(float *param, const float *grad, float *m, float *v, size_t n,
                                    struct gs_kern_adamw hp, float corr1, float corr2)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = grad[i];
        float mi = hp.beta1 * m[i] + (1.0f - hp.beta1) * g;
        float vi = hp.beta2 * v[i] + (1.0f - hp.beta2) * g * g;
        float update = (mi / corr1) / (sqrtf(vi / corr2) + hp.eps);

        m[i] = mi;
        v[i] = vi;
        param[i] -= hp.lr * (update + hp.weight_decay * param[i]);
    }
}

extern "C" int gs_kern_adamw_cuda(float *d_param, const float *d_grad, float *d_m, float *d_v,
                                  size_t n, const struct gs_kern_adamw *hp, void *stream)
{
    const int threads = 256;
    size_t blocks;
    float corr1, corr2;

    if (hp == NULL || hp->step < 1)
        return -EINVAL;
    if (n == 0)
        return 0;
    if (d_param == NULL || d_grad == NULL || d_m == NULL || d_v == NULL)
        return -EINVAL;
    corr1 = 1.0f - powf(hp->beta1, (float)hp->step);
    corr2 = 1.0f - powf(hp->beta2, (float)hp->step);
    blocks = (n + threads - 1) / threads;
    if (blocks > 65535)
        blocks = 65535;
    adamw_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(d_param, d_grad, d_m, d_v,
                                                                         n, *hp, corr1, corr2);
    return gs_kern_dev_check(cudaGetLastError());
}
