/*
 * classifier.cu: CUDA twins of classifier_cpu.c (gpu.h): the fused softmax + cross-entropy +
 * dlogits-in-place over the padded vocabulary, and the device-side sum of the per-row losses.
 *
 * Work split. Classifier: one block (CLS_THREADS threads) per row. Thread i walks columns
 * i, i + CLS_THREADS, ... of the row three times: the maximum over the real vocabulary [0, V),
 * the sum of exp(x - max) (float, as on the CPU), and, with backward, the gradient
 * scale * (p - onehot) written over the logits, padded columns [V, Vp) written as 0. A masked
 * row (target -1, or any target outside [0, V): the host checks targets, not the device) gets
 * loss 0 and, with backward, an all-zero gradient row. The target's logit is read before the
 * block's first barrier, so no thread has overwritten it yet.
 * Loss sum: one block of SUM_THREADS threads; thread i adds the rows i, i + SUM_THREADS, ...
 * whose target is >= 0, in order.
 *
 * Determinism: block reductions have a fixed shape: each warp combines its lanes with five
 * xor-shuffle steps (IEEE addition and fmaxf are commutative, so every lane ends with the
 * same bits), the warps' results go through shared memory, and every warp then combines them
 * in the same fixed pattern, so all threads hold the same value. No atomics: a run repeats
 * bit for bit. The CPU sums each row in one sequential chain (and its libm's expf/logf differ
 * from CUDA's by an ulp or two), so the two agree within float rounding.
 */
#include <cerrno>

#include "kernels/gpu_internal.h"

#define CLS_THREADS 512
#define SUM_THREADS 1024

static __device__ __forceinline__ float warp_max(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

static __device__ float block_max(float v, float *red)
{
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;

    v = warp_max(v);
    __syncthreads();
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    return warp_max(lane < (int)blockDim.x / 32 ? red[lane] : -INFINITY);
}

template <int DT>
static __global__ void classifier_kernel(void *logits, float *losses, const int32_t *targets, int V,
                                         int Vp, float scale, bool backward)
{
    __shared__ float red[32];
    size_t base = (size_t)blockIdx.x * (size_t)Vp;
    int target = targets[blockIdx.x];
    float row_max = -INFINITY, sum = 0.0f, xt = 0.0f, inv;

    if (target < 0 || target >= V) { /* masked: the same branch for the whole block */
        if (threadIdx.x == 0)
            losses[blockIdx.x] = 0.0f;
        for (int v = (int)threadIdx.x; backward && v < Vp; v += CLS_THREADS)
            gs_dstore(logits, base + (size_t)v, DT, 0.0f);
        return;
    }
    if (threadIdx.x == 0)
        xt = gs_dload(logits, base + (size_t)target, DT);
    for (int v = (int)threadIdx.x; v < V; v += CLS_THREADS)
        row_max = fmaxf(row_max, gs_dload(logits, base + (size_t)v, DT));
    row_max = block_max(row_max, red);
    for (int v = (int)threadIdx.x; v < V; v += CLS_THREADS)
        sum += expf(gs_dload(logits, base + (size_t)v, DT) - row_max);
    sum = gs_block_sum(sum, red);
    if (threadIdx.x == 0)
        losses[blockIdx.x] = logf(sum) + row_max - xt;
    if (!backward)
        return;
    inv = 1.0f / sum;
    for (int v = (int)threadIdx.x; v < Vp; v += CLS_THREADS) {
        float d = 0.0f;

        if (v < V) {
            float p = expf(gs_dload(logits, base + (size_t)v, DT) - row_max) * inv;

            d = scale * (p - (v == target ? 1.0f : 0.0f));
        }
        gs_dstore(logits, base + (size_t)v, DT, d);
    }
}

static __global__ void sum_losses_kernel(float *acc, const float *losses, const int32_t *targets,
                                         int N)
{
    __shared__ float red[32];
    float sum = 0.0f, count = 0.0f;

    for (int i = (int)threadIdx.x; i < N; i += SUM_THREADS) {
        if (targets[i] >= 0) {
            sum += losses[i];
            count += 1.0f; /* exact: a thread counts at most N / SUM_THREADS rows */
        }
    }
    sum = gs_block_sum(sum, red);
    count = gs_block_sum(count, red);
    if (threadIdx.x == 0) {
        acc[0] += sum;
        acc[1] += count;
    }
}

typedef void (*classifier_fn)(void *, float *, const int32_t *, int, int, float, bool);

/* One instantiation per storage dtype, indexed by enum gs_kern_dtype. */
static const classifier_fn classifier_kernels[] = {classifier_kernel<GS_KERN_F32>,
                                                   classifier_kernel<GS_KERN_BF16>,
                                                   classifier_kernel<GS_KERN_F16>};

extern "C" int gs_kern_gpu_classifier(struct gs_kern_gpu *g, void *logits, float *losses,
                                      const int32_t *targets, int N, int V, int Vp, float scale,
                                      bool backward, enum gs_kern_dtype dt)
{
    if (g == NULL || logits == NULL || losses == NULL || targets == NULL ||
        gs_kern_dtype_size(dt) == 0)
        return -EINVAL;
    if (N <= 0 || V <= 0 || Vp < V)
        return -EINVAL;
    if (scale == 0.0f)
        scale = 1.0f / (float)N;
    classifier_kernels[dt]<<<(unsigned)N, CLS_THREADS, 0, g->stream>>>(logits, losses, targets, V,
                                                                       Vp, scale, backward);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_sum_losses(struct gs_kern_gpu *g, float *acc, const float *losses,
                                      const int32_t *targets, int N)
{
    if (g == NULL || acc == NULL || losses == NULL || targets == NULL || N <= 0)
        return -EINVAL;
    sum_losses_kernel<<<1, SUM_THREADS, 0, g->stream>>>(acc, losses, targets, N);
    return gs_kern_dev_check(cudaGetLastError());
}
