/*
 * ops.h: the forward and backward kernels of gsched-train's GPT-2 style model, CPU versions.
 * The CUDA versions (a later issue) take the same arguments with device pointers, so nothing
 * here assumes a CPU: shapes are arguments, scratch memory is the caller's (a *_ws_bytes()
 * function says how much), no kernel allocates, and a kernel's result does not depend on how
 * the work is split.
 *
 * Conventions, for every kernel:
 *  - `dt` is the storage dtype (kernels/dtype.h) of every `void *` tensor: activations, the
 *    weight copy the forward pass reads, activation gradients. Arithmetic is float; a stored
 *    value is rounded once.
 *  - Parameter gradients (`float *dw`, `dbias`, LayerNorm and embedding grads) are float and
 *    ACCUMULATED (+=): the caller zeroes them once per optimizer step, so micro-batches add
 *    up. Each kernel adds one freshly summed float per element (the encoder's scatter-add
 *    adds row by row).
 *  - Activation gradients are overwritten unless the comment says "accumulates".
 *  - Layouts are row-major: [B,T,C] means C is contiguous. N is B*T where rows are independent.
 *  - Outputs must not overlap inputs unless the comment allows it (GELU, residual, classifier).
 *  - Returns 0, or -EINVAL for a NULL required pointer, a non-positive shape, a dtype outside
 *    the enum, or too small a workspace; nothing is written then.
 *
 * Determinism: every kernel gives bitwise the same outputs whatever the OpenMP thread count,
 * because reductions run in a fixed order that depends only on the shapes (see each .c file).
 * Results do depend on the CPU's instruction set: the matmul's fallback for CPUs without FMA
 * rounds each multiply and add separately, so it differs (by float rounding) from the AVX2
 * and AVX-512 paths, which agree with each other bit for bit. bf16 matmuls on CPUs with
 * AVX512-BF16 run a dot-product path (vdpbf16ps) that adds the products of k and k+1 before
 * accumulating in fp32 (and flushes denormals): still fixed-order and thread-count
 * independent, but not bitwise equal to the fp32 kernel on the rounded inputs (the fp32
 * sums differ by float rounding, so a stored bf16 value can differ by one ulp);
 * GSCHED_KERN_ISA=avx512 selects the float path instead.
 *
 * Threads: each kernel opens its own OpenMP parallel region with the current OpenMP thread
 * count (omp_set_num_threads, OMP_NUM_THREADS); any thread may call, and calls touching
 * different buffers may run at once. Without OpenMP the kernels run on the calling thread.
 */
#ifndef GS_KERN_OPS_H
#define GS_KERN_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"

/*
 * Sets how many threads the kernels use from now on (n >= 1; the workspace sizes below grow
 * with it, so set it before sizing them) and returns the count in effect: always 1 without
 * OpenMP. gs_kern_threads() says the current count.
 */
int gs_kern_set_threads(int n);
int gs_kern_threads(void);

/* Encoder: out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. wte [V,C], wpe [maxT,C] in dt.
 * Tokens must lie in [0, V): -EINVAL otherwise (checked before anything is written). */
int gs_kern_encoder_fwd(void *out, const int32_t *tokens, const void *wte, const void *wpe, int B,
                        int T, int C, int V, enum gs_kern_dtype dt);
/* dwte[tokens[b,t],:] += dout[b,t,:], dwpe[t,:] += sum_b dout[b,t,:]; dwte/dwpe float. The
 * scatter-add runs in (t, b) order for every channel. */
int gs_kern_encoder_bwd(float *dwte, float *dwpe, const void *dout, const int32_t *tokens, int B,
                        int T, int C, int V, enum gs_kern_dtype dt);

/* LayerNorm over C for N rows: out = (inp - mean) * rstd * weight + bias, eps 1e-5. weight,
 * bias [C] in dt; mean, rstd [N] float, saved for the backward pass (may be NULL to skip). */
int gs_kern_layernorm_fwd(void *out, float *mean, float *rstd, const void *inp, const void *weight,
                          const void *bias, int N, int C, enum gs_kern_dtype dt);
/* dinp ACCUMULATES (+=, it sits on the residual stream); dweight, dbias float +=. */
int gs_kern_layernorm_bwd(void *dinp, float *dweight, float *dbias, const void *dout,
                          const void *inp, const void *weight, const float *mean, const float *rstd,
                          int N, int C, enum gs_kern_dtype dt);

/* Bytes of workspace gs_kern_matmul_fwd/bwd need on these shapes to use every OpenMP thread
 * (per thread 2 KiB per row of max(N, C, OC), plus 288 KiB); with less they use fewer
 * threads, with less than one thread's share they fail. 0 for a non-positive shape. */
size_t gs_kern_matmul_ws_bytes(int N, int C, int OC);
/* out[N,OC] = inp[N,C] . W[OC,C]^T + bias[OC] (bias may be NULL). */
int gs_kern_matmul_fwd(void *out, const void *inp, const void *w, const void *bias, int N, int C,
                       int OC, enum gs_kern_dtype dt, void *ws, size_t ws_bytes);
/* dinp[N,C] = dout . W (overwritten; NULL skips), dw[OC,C] += dout^T . inp (float),
 * dbias[OC] += column sums of dout (float; NULL skips). */
int gs_kern_matmul_bwd(void *dinp, float *dw, float *dbias, const void *dout, const void *inp,
                       const void *w, int N, int C, int OC, enum gs_kern_dtype dt, void *ws,
                       size_t ws_bytes);

/* Causal multi-head self-attention from qkv [B,T,3C] (q, k, v each C wide, NH heads of C/NH
 * channels) to out [B,T,C]. Saves the softmax probabilities att [B,NH,T,T] (float; entries
 * above the diagonal are written as 0) for the backward pass, rather than recomputing them.
 * Both passes need gs_kern_attention_ws_bytes() of workspace to use every OpenMP thread
 * (0 for a bad shape); with less they use fewer threads, with less than one's they fail. */
size_t gs_kern_attention_ws_bytes(int T, int C, int NH);
int gs_kern_attention_fwd(void *out, float *att, const void *qkv, int B, int T, int C, int NH,
                          enum gs_kern_dtype dt, void *ws, size_t ws_bytes);
/* dqkv [B,T,3C] overwritten, from dout [B,T,C], the saved att and qkv. */
int gs_kern_attention_bwd(void *dqkv, const void *dout, const float *att, const void *qkv, int B,
                          int T, int C, int NH, enum gs_kern_dtype dt, void *ws, size_t ws_bytes);

/* GELU, tanh approximation, over n elements. Backward: dinp = dout * gelu'(inp), overwritten;
 * dinp may be dout (in place). */
int gs_kern_gelu_fwd(void *out, const void *inp, size_t n, enum gs_kern_dtype dt);
int gs_kern_gelu_bwd(void *dinp, const void *inp, const void *dout, size_t n,
                     enum gs_kern_dtype dt);

/* Residual: out = a + b (out may be a or b). Backward ACCUMULATES: da += dout, db += dout
 * (either may be NULL), each rounded once per element. */
int gs_kern_residual_fwd(void *out, const void *a, const void *b, size_t n, enum gs_kern_dtype dt);
int gs_kern_residual_bwd(void *da, void *db, const void *dout, size_t n, enum gs_kern_dtype dt);

/*
 * Fused classifier over N rows of logits [N,Vp] (dt), of which the first V are real: softmax
 * over those V, losses[n] = -log p[targets[n]] (float), and, when `backward`, the logits
 * overwritten in place by dlogits = scale * (p - onehot(target)), padded columns [V,Vp) set
 * to 0. scale is the per-token loss weight: 0 means 1/N (the mean over the micro-batch);
 * pass e.g. loss_scale/(B*T*accum) for anything else. A target of -1 masks the row: loss 0,
 * gradient 0. Any other target outside [0, V) is -EINVAL, found before anything is written.
 */
int gs_kern_classifier(void *logits, float *losses, const int32_t *targets, int N, int V, int Vp,
                       float scale, bool backward, enum gs_kern_dtype dt);

/* Global gradient norm: sqrt of the sum of squares over `count` float arrays, summed in a
 * fixed order (fixed 8192-element chunks, each summed in float lanes, chunks added in double
 * in index order, arrays in the order given), so the result is the same for any thread count. */
int gs_kern_grad_norm(const float *const *arrays, const size_t *lens, int count, float *ret_norm);
/* g *= scale over n elements (clipping multiplies by gs_kern_clip_scale()). */
int gs_kern_grad_scale(float *g, size_t n, float scale);
/* The clip factor for a global norm: max_norm / (norm + 1e-6) when norm > max_norm > 0, else 1. */
float gs_kern_clip_scale(float norm, float max_norm);
/* Loss-scale unscale: g *= inv_scale, and *found_nonfinite |= whether any element was (before
 * scaling) inf or NaN. found_nonfinite is only ever set, never cleared, so one flag can
 * gather every array of a step. */
int gs_kern_grad_unscale(float *g, size_t n, float inv_scale, bool *found_nonfinite);

#endif
