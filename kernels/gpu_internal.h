/*
 * gpu_internal.h: what the .cu files of kernels/ share and nobody else sees: the context
 * behind struct gs_kern_gpu, launch helpers, and 16-bit loads and stores on the device that
 * round exactly as dtype.h does on the host. Included only by .cu files (it needs CUDA's
 * headers); C callers see gpu.h.
 */
#ifndef GS_KERN_GPU_INTERNAL_H
#define GS_KERN_GPU_INTERNAL_H

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "kernels/device_internal.h"
#include "kernels/gpu.h"
}

struct gs_kern_gpu {
    int device;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *ws; /* caller's device scratch (gs_kern_gpu_set_workspace) */
    size_t ws_bytes;
    bool tf32;
    int cc_major;  /* compute capability: Tensor-Core attention needs 8 (mma.sync bf16) */
    bool att_simt; /* gs_kern_gpu_set_attention_simt: the SIMT attention kernels only */
    struct gs_kern_cudnn *cudnn; /* cuDNN's attention plans; NULL: that path is off */
};

/* cuBLASLt's own workspace: the front of the context's workspace. Kernels run one after
 * another on the context's stream, so every kernel may use the workspace from its start. */
#define GS_KERN_GPU_LT_WS_BYTES ((size_t)32 << 20)

/* Scratch the non-matmul, non-attention kernels need at most (per-block partial sums of the
 * LayerNorm, bias and gradient reductions) for these shapes; gs_kern_gpu_ws_bytes() takes
 * the largest of this, cuBLASLt's and attention's. Defined in layernorm.cu. */
size_t gs_kern_gpu_reduce_ws_bytes(int B, int T, int C, int Vp, size_t n_grads);
/* Attention backward's per-row scratch (attention.cu) and the bias gradient's per-chunk
 * partial sums (matmul.cu) for these shapes. */
size_t gs_kern_gpu_attention_ws_bytes(int B, int T, int NH);
size_t gs_kern_gpu_bias_ws_bytes(int N, int OC);

/* Tensor-Core attention (attention_tc.cu): whether it takes these arguments (bf16 or fp16,
 * head size a multiple of 8 up to 64, sm_80 or later, every tensor in ptrs 16-byte aligned,
 * not switched off); then its forward, and its backward from lse and D = dout . out (dvec,
 * [B,NH,T] float) computed by attention.cu. Arguments are checked by the callers there. */
bool gs_kern_gpu_attention_tc_takes(const struct gs_kern_gpu *g, int C, int NH,
                                    enum gs_kern_dtype dt, const void *const *ptrs, int nptrs);
int gs_kern_gpu_attention_tc_fwd(struct gs_kern_gpu *g, void *out, float *lse, const void *qkv,
                                 int B, int T, int C, int NH, enum gs_kern_dtype dt);
int gs_kern_gpu_attention_tc_bwd(struct gs_kern_gpu *g, void *dqkv, const void *dout,
                                 const float *lse, const float *dvec, const void *qkv, int B, int T,
                                 int C, int NH, enum gs_kern_dtype dt);

/* cuDNN's fused attention (attention_cudnn.cu; attention_cudnn_none.cu stands in for a build
 * without cuDNN): whether it runs this call (its path on, a plan prepared for the shapes,
 * every pointer 16-byte aligned), the passes (arguments checked by attention.cu), and the
 * context's part to free. Its plans' workspace is its own, allocated when they are built. */
bool gs_kern_gpu_cudnn_takes(const struct gs_kern_gpu *g, int B, int T, int C, int NH,
                             enum gs_kern_dtype dt, const void *const *ptrs, int nptrs);
int gs_kern_gpu_cudnn_fwd(struct gs_kern_gpu *g, void *out, float *lse, const void *qkv, int B,
                          int T, int C, int NH, enum gs_kern_dtype dt);
int gs_kern_gpu_cudnn_bwd(struct gs_kern_gpu *g, void *dqkv, const void *dout, const void *out,
                          const float *lse, const void *qkv, int B, int T, int C, int NH,
                          enum gs_kern_dtype dt);
void gs_kern_gpu_cudnn_free(struct gs_kern_gpu *g);

/* grad.cu's fixed grid (GRAD_BLOCKS there), and so its per-block partials in the workspace:
 * a float and an int per block. Fixed, not per device, so sums repeat on any GPU. */
#define GS_KERN_GPU_GRAD_BLOCKS 1024u
#define GS_KERN_GPU_GRAD_PARTS_BYTES                                                               \
    ((size_t)GS_KERN_GPU_GRAD_BLOCKS * (sizeof(float) + sizeof(int)))

/* The sum of v over a warp, in the same butterfly order on every lane and every run. */
static __device__ __forceinline__ float gs_warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* The sum of v over the block (a multiple of 32 threads), returned to every thread, in a
 * fixed order. red: __shared__ float[32]. The leading barrier keeps a previous reduction's
 * readers from seeing red overwritten. */
static __device__ __forceinline__ float gs_block_sum(float v, float *red)
{
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;

    v = gs_warp_sum(v);
    __syncthreads();
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    return gs_warp_sum(lane < (int)blockDim.x / 32 ? red[lane] : 0.0f);
}

static inline unsigned gs_kern_gpu_blocks(size_t n, unsigned threads, unsigned cap)
{
    size_t b = (n + threads - 1) / threads;

    return (unsigned)(b == 0 ? 1 : (b > cap ? cap : b));
}

/* Element i of a tensor of dtype dt, widened to float (the device twin of gs_kern_load). */
static __device__ __forceinline__ float gs_dload(const void *p, size_t i, int dt)
{
    if (dt == GS_KERN_BF16)
        return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (dt == GS_KERN_F16)
        return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

/* v rounded once (to nearest even) into element i (the twin of gs_kern_store). */
static __device__ __forceinline__ void gs_dstore(void *p, size_t i, int dt, float v)
{
    if (dt == GS_KERN_BF16)
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    else if (dt == GS_KERN_F16)
        ((__half *)p)[i] = __float2half_rn(v);
    else
        ((float *)p)[i] = v;
}

#endif
