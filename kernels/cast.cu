/*
 * cast.cu: CUDA twin of cast_cpu.c (gpu.h: gs_kern_gpu_cast): bulk conversion between the
 * storage dtypes on the device, for the 16-bit weight copy and for loading checkpoints.
 *
 * Work split: one thread per element over a grid-stride loop (CAST_THREADS threads a block,
 * at most CAST_BLOCK_CAP blocks); the same dtype is a device-to-device copy on the context's
 * stream. Element-wise, so the split never changes the bits. Conversions round to nearest
 * even in hardware, as dtype.h does on the host, so the two give the same bits for every
 * value but NaN (CUDA writes a canonical NaN where dtype.h keeps the payload's top bits).
 */
#include <cerrno>

#include "kernels/gpu_internal.h"

#define CAST_THREADS 256u
#define CAST_BLOCK_CAP 8192u

template <int ST, int DT> static __global__ void cast_kernel(void *dst, const void *src, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        gs_dstore(dst, i, DT, gs_dload(src, i, ST));
}

typedef void (*cast_fn)(void *, const void *, size_t);

/* [source dtype][destination dtype]; the diagonal is a plain copy (no kernel). */
static const cast_fn cast_kernels[3][3] = {
    {NULL, cast_kernel<GS_KERN_F32, GS_KERN_BF16>, cast_kernel<GS_KERN_F32, GS_KERN_F16>},
    {cast_kernel<GS_KERN_BF16, GS_KERN_F32>, NULL, cast_kernel<GS_KERN_BF16, GS_KERN_F16>},
    {cast_kernel<GS_KERN_F16, GS_KERN_F32>, cast_kernel<GS_KERN_F16, GS_KERN_BF16>, NULL},
};

extern "C" int gs_kern_gpu_cast(struct gs_kern_gpu *g, void *dst, enum gs_kern_dtype dt,
                                const void *src, enum gs_kern_dtype st, size_t n)
{
    if (g == NULL || gs_kern_dtype_size(dt) == 0 || gs_kern_dtype_size(st) == 0)
        return -EINVAL;
    if (n > 0 && (dst == NULL || src == NULL))
        return -EINVAL;
    if (n == 0)
        return 0;
    if (dt == st)
        return gs_kern_dev_check(cudaMemcpyAsync(dst, src, n * gs_kern_dtype_size(dt),
                                                 cudaMemcpyDeviceToDevice, g->stream));
    cast_kernels[st][dt]<<<gs_kern_gpu_blocks(n, CAST_THREADS, CAST_BLOCK_CAP), CAST_THREADS, 0,
                           g->stream>>>(dst, src, n);
    return gs_kern_dev_check(cudaGetLastError());
}
