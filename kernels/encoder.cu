/*
 * encoder.cu: CUDA twins of encoder_cpu.c (gpu.h): token + position embedding lookup, and its
 * backward pass into the float embedding gradients, deterministic without atomics.
 *
 * Work split (every block walks channels with one thread per channel, up to 1024):
 *  - Forward: one block per row (b, t): out = wte[token] + wpe[t], one rounded addition per
 *    element, so the bits equal the CPU's.
 *  - dwte: one block per distinct token, i.e. per run of the host's grouping
 *    (gs_kern_encoder_runs: order[starts[u] .. starts[u+1]) are the positions holding token
 *    u, ascending). Each thread sums its channel over the run's rows in run order and adds the
 *    sum to dwte once. Different runs are different tokens, so different rows of dwte: no two
 *    threads ever write the same float.
 *  - dwpe: one block per position t; each thread sums its channel over b = 0 .. B-1 in order
 *    and adds the sum once, the CPU's order exactly.
 *
 * Determinism: every sum runs in an order fixed by the batch's tokens, never by scheduling,
 * so a run repeats bit for bit. dwte's sum runs by position and is added once, where the CPU
 * adds row by row into dwte in (t, b) order, so the two differ by float rounding.
 *
 * Token ids are not range-checked on the device (gpu.h): a token outside [0, V) reads
 * nothing (its forward row is wpe[t] alone) and adds nothing to dwte.
 *
 * Cost: a token that fills k rows is k serial loads per channel for its block (the loads are
 * unrolled so several are in flight; the additions stay in order). The few thousand copies of
 * the commonest tokens in a 64k-token batch make that block the kernel's tail, a fraction of a
 * millisecond; if it ever shows in a profile, split long runs into fixed-size pieces summed
 * through the workspace.
 */
#include <cerrno>
#include <climits>

#include "kernels/gpu_internal.h"

/* One thread per channel up to 1024, a whole number of warps. */
static unsigned channel_threads(int C)
{
    unsigned t = ((unsigned)C + 31u) / 32u * 32u;

    return t > 1024u ? 1024u : t;
}

template <int DT>
static __global__ void encoder_fwd_kernel(void *out, const int32_t *tokens, const void *wte,
                                          const void *wpe, int T, int C, int V)
{
    size_t row = blockIdx.x, te, pe = (row % (size_t)T) * (size_t)C;
    int token = tokens[row];
    bool valid = token >= 0 && token < V;

    te = valid ? (size_t)token * (size_t)C : 0;
    for (int c = (int)threadIdx.x; c < C; c += (int)blockDim.x) {
        float v = gs_dload(wpe, pe + (size_t)c, DT);

        if (valid)
            v = gs_dload(wte, te + (size_t)c, DT) + v;
        gs_dstore(out, row * (size_t)C + (size_t)c, DT, v);
    }
}

template <int DT>
static __global__ void encoder_dwte_kernel(float *dwte, const void *dout, const int32_t *tokens,
                                           const int32_t *order, const int32_t *starts, int C,
                                           int V)
{
    int begin = starts[blockIdx.x], end = starts[blockIdx.x + 1];
    int token;

    if (begin >= end) /* an empty run: a graph sized for every position pads with them */
        return;
    token = tokens[order[begin]];
    if (token < 0 || token >= V) /* the same for the whole block */
        return;
    for (int c = (int)threadIdx.x; c < C; c += (int)blockDim.x) {
        float sum = 0.0f;

#pragma unroll 8
        for (int j = begin; j < end; j++)
            sum += gs_dload(dout, (size_t)order[j] * (size_t)C + (size_t)c, DT);
        dwte[(size_t)token * (size_t)C + (size_t)c] += sum;
    }
}

template <int DT>
static __global__ void encoder_dwpe_kernel(float *dwpe, const void *dout, int B, int T, int C)
{
    size_t t = blockIdx.x;

    for (int c = (int)threadIdx.x; c < C; c += (int)blockDim.x) {
        float sum = 0.0f;

        for (int b = 0; b < B; b++)
            sum += gs_dload(dout, ((size_t)b * (size_t)T + t) * (size_t)C + (size_t)c, DT);
        dwpe[t * (size_t)C + (size_t)c] += sum;
    }
}

typedef void (*encoder_fwd_fn)(void *, const int32_t *, const void *, const void *, int, int, int);
typedef void (*encoder_dwte_fn)(float *, const void *, const int32_t *, const int32_t *,
                                const int32_t *, int, int);
typedef void (*encoder_dwpe_fn)(float *, const void *, int, int, int);

/* One instantiation per storage dtype, indexed by enum gs_kern_dtype. */
static const encoder_fwd_fn encoder_fwd_kernels[] = {encoder_fwd_kernel<GS_KERN_F32>,
                                                     encoder_fwd_kernel<GS_KERN_BF16>,
                                                     encoder_fwd_kernel<GS_KERN_F16>};
static const encoder_dwte_fn encoder_dwte_kernels[] = {encoder_dwte_kernel<GS_KERN_F32>,
                                                       encoder_dwte_kernel<GS_KERN_BF16>,
                                                       encoder_dwte_kernel<GS_KERN_F16>};
static const encoder_dwpe_fn encoder_dwpe_kernels[] = {encoder_dwpe_kernel<GS_KERN_F32>,
                                                       encoder_dwpe_kernel<GS_KERN_BF16>,
                                                       encoder_dwpe_kernel<GS_KERN_F16>};

static bool shape_bad(const struct gs_kern_gpu *g, int B, int T, int C, int V,
                      enum gs_kern_dtype dt)
{
    return g == NULL || B <= 0 || T <= 0 || C <= 0 || V <= 0 || (size_t)B * (size_t)T > INT_MAX ||
           gs_kern_dtype_size(dt) == 0;
}

extern "C" int gs_kern_gpu_encoder_fwd(struct gs_kern_gpu *g, void *out, const int32_t *tokens,
                                       const void *wte, const void *wpe, int B, int T, int C, int V,
                                       enum gs_kern_dtype dt)
{
    if (shape_bad(g, B, T, C, V, dt) || out == NULL || tokens == NULL || wte == NULL || wpe == NULL)
        return -EINVAL;
    encoder_fwd_kernels[dt]<<<(unsigned)(B * T), channel_threads(C), 0, g->stream>>>(
        out, tokens, wte, wpe, T, C, V);
    return gs_kern_dev_check(cudaGetLastError());
}

extern "C" int gs_kern_gpu_encoder_bwd(struct gs_kern_gpu *g, float *dwte, float *dwpe,
                                       const void *dout, const int32_t *tokens,
                                       const int32_t *order, const int32_t *starts, int nuniq,
                                       int B, int T, int C, int V, enum gs_kern_dtype dt)
{
    int rc;

    if (shape_bad(g, B, T, C, V, dt) || dwte == NULL || dwpe == NULL || dout == NULL ||
        tokens == NULL || order == NULL || starts == NULL)
        return -EINVAL;
    if (nuniq <= 0 || nuniq > B * T)
        return -EINVAL;
    encoder_dwte_kernels[dt]<<<(unsigned)nuniq, channel_threads(C), 0, g->stream>>>(
        dwte, dout, tokens, order, starts, C, V);
    rc = gs_kern_dev_check(cudaGetLastError());
    if (rc < 0)
        return rc;
    encoder_dwpe_kernels[dt]<<<(unsigned)T, channel_threads(C), 0, g->stream>>>(dwpe, dout, B, T,
                                                                                C);
    return gs_kern_dev_check(cudaGetLastError());
}
