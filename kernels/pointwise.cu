/*
 * pointwise.cu: CUDA twins of pointwise_cpu.c (gpu.h): GELU (tanh approximation) forward and
 * backward, and the residual add forward and backward.
 *
 * Work split: one thread per element over a grid-stride loop, PW_THREADS threads a block and
 * at most PW_BLOCK_CAP blocks, so any n runs on a bounded grid. Each element is computed by
 * one thread from its own inputs alone: there is no reduction, so the bits never depend on
 * the split. In-place use (gelu's dinp == dout, the residual's out == a or b) is safe because
 * the thread that owns an element reads it before writing it and no other thread touches it.
 *
 * Numerics: float arithmetic, 16-bit values widened on load and rounded once on store, as on
 * the CPU. The residual kernels are one rounded addition per element, so they give exactly
 * the CPU's bits. GELU uses CUDA's tanhf (within 2 ulp) where the CPU uses a vectorisable
 * 1 - 2/(e^2u + 1), and nvcc may contract a*b+c into an FMA: GELU agrees with the CPU within
 * float rounding, not bit for bit.
 */
#include <cerrno>

#include "kernels/gpu_internal.h"

#define PW_THREADS 256u
#define PW_BLOCK_CAP 8192u /* x 256 threads: far more than an H200 keeps resident */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

template <int DT> static __global__ void gelu_fwd_kernel(void *out, const void *inp, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = gs_dload(inp, i, DT);
        float u = GELU_K * (x + GELU_A * x * x * x);

        gs_dstore(out, i, DT, 0.5f * x * (1.0f + tanhf(u)));
    }
}

template <int DT>
static __global__ void gelu_bwd_kernel(void *dinp, const void *inp, const void *dout, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = gs_dload(inp, i, DT);
        float u = GELU_K * (x + GELU_A * x * x * x);
        float th = tanhf(u);
        float du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;

        gs_dstore(dinp, i, DT, gs_dload(dout, i, DT) * grad);
    }
}

template <int DT>
static __global__ void residual_fwd_kernel(void *out, const void *a, const void *b, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        gs_dstore(out, i, DT, gs_dload(a, i, DT) + gs_dload(b, i, DT));
}

template <int DT>
static __global__ void residual_bwd_kernel(void *da, void *db, const void *dout, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float grad = gs_dload(dout, i, DT);

        if (da != NULL)
            gs_dstore(da, i, DT, gs_dload(da, i, DT) + grad);
        if (db != NULL)
            gs_dstore(db, i, DT, gs_dload(db, i, DT) + grad);
    }
}

/* One instantiation per storage dtype, indexed by enum gs_kern_dtype. */
typedef void (*unary_kernel)(void *, const void *, size_t);
typedef void (*binary_kernel)(void *, const void *, const void *, size_t);
typedef void (*residual_bwd_fn)(void *, void *, const void *, size_t);

static const unary_kernel gelu_fwd_kernels[] = {
    gelu_fwd_kernel<GS_KERN_F32>, gelu_fwd_kernel<GS_KERN_BF16>, gelu_fwd_kernel<GS_KERN_F16>};
static const binary_kernel gelu_bwd_kernels[] = {
    gelu_bwd_kernel<GS_KERN_F32>, gelu_bwd_kernel<GS_KERN_BF16>, gelu_bwd_kernel<GS_KERN_F16>};
static const binary_kernel residual_fwd_kernels[] = {residual_fwd_kernel<GS_KERN_F32>,
                                                     residual_fwd_kernel<GS_KERN_BF16>,
                                                     residual_fwd_kernel<GS_KERN_F16>};
static const residual_bwd_fn residual_bwd_kernels[] = {residual_bwd_kernel<GS_KERN_F32>,
                                                       residual_bwd_kernel<GS_KERN_BF16>,
                                                       residual_bwd_kernel<GS_KERN_F16>};

static unsigned pw_blocks(size_t n)
{
    return gs_kern_gpu_blocks(n, PW_THREADS, PW_BLOCK_CAP);
}

extern "C" int gs_kern_gpu_gelu_fwd(struct gs_kern_gpu *g, void *out, const void *inp, size_t n,
                                    enum gs_kern_dtype dt)
{
    if (g == NULL || out == NULL || inp == NULL || gs_kern_dtype_size(dt) == 0)
        return -EINVAL;
    if (n == 0)
        return 0;
    gelu_fwd_kernels[dt]<<<pw_blocks(n), PW_THREADS, 0, g->stream>>>(out, inp, n);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_gelu_bwd(struct gs_kern_gpu *g, void *dinp, const void *inp,
                                    const void *dout, size_t n, enum gs_kern_dtype dt)
{
    if (g == NULL || dinp == NULL || inp == NULL || dout == NULL || gs_kern_dtype_size(dt) == 0)
        return -EINVAL;
    if (n == 0)
        return 0;
    gelu_bwd_kernels[dt]<<<pw_blocks(n), PW_THREADS, 0, g->stream>>>(dinp, inp, dout, n);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_residual_fwd(struct gs_kern_gpu *g, void *out, const void *a,
                                        const void *b, size_t n, enum gs_kern_dtype dt)
{
    if (g == NULL || out == NULL || a == NULL || b == NULL || gs_kern_dtype_size(dt) == 0)
        return -EINVAL;
    if (n == 0)
        return 0;
    residual_fwd_kernels[dt]<<<pw_blocks(n), PW_THREADS, 0, g->stream>>>(out, a, b, n);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_residual_bwd(struct gs_kern_gpu *g, void *da, void *db, const void *dout,
                                        size_t n, enum gs_kern_dtype dt)
{
    if (g == NULL || dout == NULL || gs_kern_dtype_size(dt) == 0)
        return -EINVAL;
    if (n == 0 || (da == NULL && db == NULL))
        return 0;
    residual_bwd_kernels[dt]<<<pw_blocks(n), PW_THREADS, 0, g->stream>>>(da, db, dout, n);
    return gs_kern_dev_check(cudaGetLastError());
}
