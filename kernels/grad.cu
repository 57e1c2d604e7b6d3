/*
 * grad.cu: CUDA twin of grad_cpu.c's step-end pass (gpu.h: gs_kern_gpu_grad_stats): one read
 * of a gradient array that unscales it in place (when inv_scale != 1), adds the sum of
 * squares of the result to out[0] and sets out[1] = 1 when any result is inf or NaN (the
 * flag is only ever set, so one out gathers every array of a step).
 *
 * Work split: a first kernel runs a grid of min(GRAD_BLOCKS, ceil(n / GRAD_THREADS)) blocks
 * (a function of n alone, never of the device) of GRAD_THREADS threads over a grid-stride
 * loop; each block writes its sum of squares and its inf/NaN flag to the context's
 * workspace. A second kernel, one block of GRAD_BLOCKS threads, adds the partial sums and
 * adds the total to out[0].
 *
 * Determinism: which thread reads which element depends only on n; each thread sums its
 * elements in index order; blocks combine their threads' sums with a fixed tree (five
 * xor-shuffle steps in each warp, then the warps' sums in a fixed pattern), and the second
 * kernel combines the blocks' sums with the same fixed tree in block order. No atomics, so the
 * sum repeats bit for bit on any GPU. It differs from the CPU's fixed 8192-element chunks
 * (summed in double) by float rounding.
 */
#include <cerrno>

#include "kernels/gpu_internal.h"

#define GRAD_BLOCKS GS_KERN_GPU_GRAD_BLOCKS
#define GRAD_THREADS 256u

static __global__ void grad_partial_kernel(float *grad, size_t n, float inv_scale, float *part_sum,
                                           int *part_bad)
{
    __shared__ float red[32];
    size_t stride = (size_t)gridDim.x * GRAD_THREADS;
    float sum = 0.0f;
    int bad = 0;

    for (size_t i = (size_t)blockIdx.x * GRAD_THREADS + threadIdx.x; i < n; i += stride) {
        float x = grad[i];

        if (inv_scale != 1.0f) {
            x *= inv_scale;
            grad[i] = x;
        }
        bad |= !isfinite(x); /* an inf or NaN stays one after scaling (inf * 0 is NaN) */
        sum += x * x;
    }
    sum = gs_block_sum(sum, red);
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0) {
        part_sum[blockIdx.x] = sum;
        part_bad[blockIdx.x] = bad;
    }
}

static __global__ void grad_final_kernel(float *out, const float *part_sum, const int *part_bad,
                                         unsigned parts)
{
    __shared__ float red[32];
    float sum = threadIdx.x < parts ? part_sum[threadIdx.x] : 0.0f;
    int bad = threadIdx.x < parts ? part_bad[threadIdx.x] : 0;

    sum = gs_block_sum(sum, red);
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0) {
        out[0] += sum;
        if (bad)
            out[1] = 1.0f;
    }
}

extern "C" int gs_kern_gpu_grad_stats(struct gs_kern_gpu *g, float *grad, size_t n, float inv_scale,
                                      float *out)
{
    unsigned blocks = gs_kern_gpu_blocks(n, GRAD_THREADS, GRAD_BLOCKS);
    float *part_sum;
    int *part_bad, rc;

    if (g == NULL || out == NULL || (n > 0 && grad == NULL))
        return -EINVAL;
    if (n == 0)
        return 0;
    if (g->ws == NULL || g->ws_bytes < (size_t)blocks * (sizeof(float) + sizeof(int)))
        return -ENOSPC;
    part_sum = (float *)g->ws;
    part_bad = (int *)(part_sum + blocks);
    grad_partial_kernel<<<blocks, GRAD_THREADS, 0, g->stream>>>(grad, n, inv_scale, part_sum,
                                                                part_bad);
    rc = gs_kern_dev_check(cudaGetLastError());
    if (rc < 0)
        return rc;
    grad_final_kernel<<<1, GRAD_BLOCKS, 0, g->stream>>>(out, part_sum, part_bad, blocks);
    return gs_kern_dev_check(cudaGetLastError());
}
