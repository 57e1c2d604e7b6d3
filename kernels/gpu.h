/*
 * gpu.h: the CUDA twins of the kernels in ops.h and adamw.h, and the execution context they
 * run in. A twin takes the same shapes, dtypes and conventions as its CPU version (ops.h:
 * storage dtype for activations and the 16-bit weights, fp32 parameter gradients that
 * ACCUMULATE, row-major layouts) with device pointers, and only queues work: every call
 * enqueues on the context's stream and returns, so 0 means "queued". A fault inside a kernel
 * surfaces at the next synchronising call (gs_kern_gpu_sync, a copy to the host).
 *
 * Where a twin differs from its CPU version, it is for a reason given here:
 *  - No workspace arguments. Kernels draw scratch from the context's workspace, set once by
 *    the caller from its device arena (gs_kern_gpu_set_workspace), sized with
 *    gs_kern_gpu_ws_bytes() for the largest shapes it will run, so nothing is allocated
 *    inside a training step and a CUDA Graph can capture any call.
 *  - Attention is flash-style: forward saves the softmax's log-sum-exp per row (lse
 *    [B,NH,T], float) instead of the probabilities [B,NH,T,T]; backward recomputes them tile
 *    by tile from q, k and lse and also reads the forward output. The T x T matrix never
 *    exists in memory.
 *  - Token ids and targets are not range-checked on the device (that would cost a copy back
 *    per call): the caller checks them on the host before uploading them. An id outside
 *    [0, V) reads or writes nothing and contributes zero; a target outside [0, V) other than
 *    -1 counts as masked.
 *  - The encoder's scatter-add is made deterministic without atomics: the host groups the
 *    positions by token id (gs_kern_encoder_runs, below) and uploads the grouping with the
 *    batch; each token's gradient row is then summed by one thread block in position order.
 *  - The MLP's GELU can ride on its matmuls (cuBLASLt epilogues): matmul_fwd with pre_gelu
 *    writes gelu(x.W^T + b) to out and the value before GELU to pre_gelu; matmul_bwd with
 *    pre_gelu multiplies dinp by gelu'(pre_gelu).
 *  - Residual add and the LayerNorm that follows it are one kernel (one read of the stream).
 *  - Gradient post-processing is one pass: gs_kern_gpu_grad_stats unscales, looks for inf or
 *    NaN and sums squares into a 2-float device result; AdamW takes the clip factor as a
 *    multiplier on the gradient instead of a separate scaling pass.
 *  - The mean loss is summed on the device (gs_kern_gpu_sum_losses), so a training step needs
 *    no copy back until its end.
 *
 * Precision: arithmetic is fp32, 16-bit values rounded once when stored, as on the CPU.
 * Matmuls run on Tensor Cores through cuBLASLt with fp32 accumulation: bf16 and fp16 inputs
 * as they are, fp32 inputs in full fp32 unless gs_kern_gpu_set_tf32() allows TF32.
 *
 * Determinism: no kernel adds floats with atomics; every reduction runs in a fixed order that
 * depends only on the shapes, so a run repeats bit for bit on the same GPU and library
 * versions. GPU and CPU results differ by float rounding (summation order, FMA contraction,
 * Tensor Core accumulation), within per-dtype tolerances that the tests state.
 *
 * Errors: 0, -EINVAL for the argument errors the CPU twin reports (checked on the host
 * before anything is queued), -ENOSPC when the workspace is too small for the shapes, -ENODEV
 * when built without CUDA (gpu_none.c), -EIO on a CUDA or cuBLASLt error with its text in
 * gs_kern_dev_last_error(). A context is used by one thread at a time.
 */
#ifndef GS_KERN_GPU_H
#define GS_KERN_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/adamw.h"
#include "kernels/dtype.h"

/* --- the context ------------------------------------------------------------------------- */

struct gs_kern_gpu;

struct gs_kern_gpu_info {
    char name[96];          /* "NVIDIA H200" */
    int major, minor;       /* compute capability */
    int sms;                /* streaming multiprocessors */
    size_t total_bytes;     /* device memory */
    size_t free_bytes;      /* free when asked */
    double bf16_peak_flops; /* dense bf16 Tensor Core peak, FLOP/s (0 when unknown) */
};

/*
 * Makes `device` (an index among the visible devices) the calling thread's current device
 * and creates a context on it: a compute stream, a cuBLASLt handle. The workspace is unset
 * until gs_kern_gpu_set_workspace(). *ret is the caller's to free with gs_kern_gpu_free().
 */
int gs_kern_gpu_new(int device, struct gs_kern_gpu **ret);
void gs_kern_gpu_free(struct gs_kern_gpu *g);
int gs_kern_gpu_device(const struct gs_kern_gpu *g);
/* The compute stream (a cudaStream_t) for callers that order other work after it. */
void *gs_kern_gpu_stream(const struct gs_kern_gpu *g);
int gs_kern_gpu_info(const struct gs_kern_gpu *g, struct gs_kern_gpu_info *ret);
/* Device scratch for the kernels (caller-owned, outlives its use; bytes from
 * gs_kern_gpu_ws_bytes()). */
void gs_kern_gpu_set_workspace(struct gs_kern_gpu *g, void *ws, size_t bytes);
/* Lets fp32 matmuls use TF32 Tensor Cores (off by default: exact fp32 products). */
void gs_kern_gpu_set_tf32(struct gs_kern_gpu *g, bool allow);
/* Attention on CUDA cores only (SIMT fp32), also where the Tensor-Core kernels would run
 * (bf16/fp16, head size up to 64, sm_80+): for tests and comparisons; off by default. */
void gs_kern_gpu_set_attention_simt(struct gs_kern_gpu *g, bool simt);
/*
 * cuDNN's fused flash attention, where the build found cuDNN 9 (gs_kern_cudnn_built()). On,
 * attention_fwd/bwd run through cuDNN for the shapes whose plans were prepared (below) and
 * through the kernels of our own for every other call (fp32, other shapes): building a plan
 * takes long, so none is built inside a training step or a CUDA Graph capture. Turning it on
 * without cuDNN is -ENOTSUP. Unlike the kernels of our own, cuDNN may pick an engine whose
 * backward adds with atomics: gs_kern_gpu_attention_engine() says "nondeterministic" then.
 * cuDNN's scratch is not the context's workspace: the plans' own device memory, allocated
 * when they are built (its size in gs_kern_gpu_attention_engine()).
 */
bool gs_kern_cudnn_built(void);
int gs_kern_gpu_set_attention_cudnn(struct gs_kern_gpu *g, bool on);
/*
 * Builds cuDNN's forward and backward attention plans for these shapes (bf16 or fp16, head
 * size C/NH a multiple of 8 up to 128, T > 1) and keeps them, with their scratch: 0, or
 * -ENOTSUP when the cuDNN path is off or cuDNN refuses the shapes, -EIO on a CUDA error (the
 * scratch's allocation among them), -ENOMEM; the reason in gs_kern_dev_last_error(). Again for the
 * same shapes is 0 at once. Not inside a CUDA Graph capture: it waits for the stream.
 */
int gs_kern_gpu_attention_prepare(struct gs_kern_gpu *g, int B, int T, int C, int NH,
                                  enum gs_kern_dtype dt);
/* Whether attention over these shapes runs through cuDNN now. */
bool gs_kern_gpu_attention_on_cudnn(const struct gs_kern_gpu *g, int B, int T, int C, int NH,
                                    enum gs_kern_dtype dt);
/* The engines of the last prepared plans, for logs: "fwd engine 7, bwd engine 9 (...)", or
 * "" before any. */
const char *gs_kern_gpu_attention_engine(const struct gs_kern_gpu *g);
/* Device bytes the cuDNN path holds for its plans (0 when off). */
size_t gs_kern_gpu_attention_scratch_bytes(const struct gs_kern_gpu *g);
/* Waits for everything queued on the compute stream. */
int gs_kern_gpu_sync(struct gs_kern_gpu *g);

/*
 * Workspace bytes the kernels need for micro-batches of up to B x T tokens of a model with C
 * channels, NH heads, padded vocabulary Vp, and gradient arrays of up to n_grads floats: the
 * most any one call needs (cuBLASLt's workspace, attention's per-row scratch, the reductions'
 * per-block partial sums). 0 for a non-positive shape.
 */
size_t gs_kern_gpu_ws_bytes(int B, int T, int C, int NH, int Vp, size_t n_grads);

/* --- streams, events, copies --------------------------------------------------------------- */

/* Extra streams and events, for the input copies and the all-reduce beside the compute
 * stream. Handles are cudaStream_t / cudaEvent_t behind void *; free accepts NULL. Events
 * are created without timing unless `timing`. */
int gs_kern_gpu_stream_new(void **ret);
void gs_kern_gpu_stream_free(void *stream);
int gs_kern_gpu_event_new(bool timing, void **ret);
void gs_kern_gpu_event_free(void *event);
int gs_kern_gpu_event_record(void *event, void *stream);
/* Work queued on `stream` after this call waits for `event` (the host does not wait). */
int gs_kern_gpu_stream_wait(void *stream, void *event);
int gs_kern_gpu_event_sync(void *event);
/* Milliseconds between two recorded timing events (after both completed). */
int gs_kern_gpu_event_ms(void *start, void *end, float *ret_ms);
int gs_kern_gpu_stream_sync(void *stream);
/* Asynchronous copy in either direction (cudaMemcpyDefault) on `stream`; from or to
 * page-locked host memory it does not block the host. */
int gs_kern_gpu_copy_async(void *dst, const void *src, size_t bytes, void *stream);
int gs_kern_gpu_memset_async(void *dst, int byte, size_t bytes, void *stream);

/* --- CUDA Graphs --------------------------------------------------------------------------- */

/* Captures what the calling thread queues on g's stream between begin and end into an
 * executable graph (*ret, freed by gs_kern_gpu_graph_free). A capture the driver refuses
 * (an operation that cannot be captured) is -ENOTSUP from end, with the reason in
 * gs_kern_dev_last_error(); the stream is usable again either way. */
int gs_kern_gpu_capture_begin(struct gs_kern_gpu *g);
int gs_kern_gpu_capture_end(struct gs_kern_gpu *g, void **ret_graph);
int gs_kern_gpu_graph_launch(struct gs_kern_gpu *g, void *graph);
void gs_kern_gpu_graph_free(void *graph);

/* --- the model's kernels ------------------------------------------------------------------- */

/*
 * Host side of the encoder's deterministic backward: groups the N positions (b*T + t) by
 * token id. order[N] gets the positions sorted by (token, position); starts[0 .. nuniq]
 * where run u is order[starts[u] .. starts[u+1]); *ret_nuniq the number of distinct ids.
 * scratch holds N 64-bit keys. Pure C, no CUDA needed. 0 or -EINVAL.
 */
int gs_kern_encoder_runs(const int32_t *tokens, int N, int64_t *scratch, int32_t *order,
                         int32_t *starts, int *ret_nuniq);

int gs_kern_gpu_encoder_fwd(struct gs_kern_gpu *g, void *out, const int32_t *tokens,
                            const void *wte, const void *wpe, int B, int T, int C, int V,
                            enum gs_kern_dtype dt);
/* dwte[token] += its positions' dout rows (one run per distinct token, from
 * gs_kern_encoder_runs, uploaded), dwpe[t] += sum over b of dout[b,t]. Empty runs
 * (starts[u] == starts[u + 1]) are allowed and do nothing, so a caller that needs a launch
 * independent of the batch (a CUDA Graph) can pass nuniq = B*T with starts padded by N. */
int gs_kern_gpu_encoder_bwd(struct gs_kern_gpu *g, float *dwte, float *dwpe, const void *dout,
                            const int32_t *tokens, const int32_t *order, const int32_t *starts,
                            int nuniq, int B, int T, int C, int V, enum gs_kern_dtype dt);

int gs_kern_gpu_layernorm_fwd(struct gs_kern_gpu *g, void *out, float *mean, float *rstd,
                              const void *inp, const void *weight, const void *bias, int N, int C,
                              enum gs_kern_dtype dt);
/* res = a + b (res may be a or b), then out = LayerNorm(res) as layernorm_fwd: one pass. */
int gs_kern_gpu_residual_layernorm_fwd(struct gs_kern_gpu *g, void *res, void *out, float *mean,
                                       float *rstd, const void *a, const void *b,
                                       const void *weight, const void *bias, int N, int C,
                                       enum gs_kern_dtype dt);
/* dinp ACCUMULATES (+=); dweight, dbias float +=. */
int gs_kern_gpu_layernorm_bwd(struct gs_kern_gpu *g, void *dinp, float *dweight, float *dbias,
                              const void *dout, const void *inp, const void *weight,
                              const float *mean, const float *rstd, int N, int C,
                              enum gs_kern_dtype dt);

/* out[N,OC] = inp[N,C] . W[OC,C]^T + bias (bias may be NULL); with pre_gelu (NULL: none),
 * out = gelu(that) and pre_gelu[N,OC] = that. */
int gs_kern_gpu_matmul_fwd(struct gs_kern_gpu *g, void *out, void *pre_gelu, const void *inp,
                           const void *w, const void *bias, int N, int C, int OC,
                           enum gs_kern_dtype dt);
/* dinp[N,C] = dout . W (overwritten; NULL skips), times gelu'(pre_gelu[N,C]) when pre_gelu is
 * given (the input of this layer was gelu(pre_gelu)); dw[OC,C] += dout^T . inp (float);
 * dbias[OC] += column sums of dout (float; NULL skips). */
int gs_kern_gpu_matmul_bwd(struct gs_kern_gpu *g, void *dinp, float *dw, float *dbias,
                           const void *dout, const void *inp, const void *w, const void *pre_gelu,
                           int N, int C, int OC, enum gs_kern_dtype dt);

/* out [B,T,C] from qkv [B,T,3C]; lse [B,NH,T] float saved for backward. */
int gs_kern_gpu_attention_fwd(struct gs_kern_gpu *g, void *out, float *lse, const void *qkv, int B,
                              int T, int C, int NH, enum gs_kern_dtype dt);
/* dqkv [B,T,3C] overwritten, from dout, the forward's out and lse, and qkv. */
int gs_kern_gpu_attention_bwd(struct gs_kern_gpu *g, void *dqkv, const void *dout, const void *out,
                              const float *lse, const void *qkv, int B, int T, int C, int NH,
                              enum gs_kern_dtype dt);

int gs_kern_gpu_gelu_fwd(struct gs_kern_gpu *g, void *out, const void *inp, size_t n,
                         enum gs_kern_dtype dt);
int gs_kern_gpu_gelu_bwd(struct gs_kern_gpu *g, void *dinp, const void *inp, const void *dout,
                         size_t n, enum gs_kern_dtype dt);
int gs_kern_gpu_residual_fwd(struct gs_kern_gpu *g, void *out, const void *a, const void *b,
                             size_t n, enum gs_kern_dtype dt);
int gs_kern_gpu_residual_bwd(struct gs_kern_gpu *g, void *da, void *db, const void *dout, size_t n,
                             enum gs_kern_dtype dt);

/* As gs_kern_classifier: losses[N] float; with backward, logits become dlogits in place. */
int gs_kern_gpu_classifier(struct gs_kern_gpu *g, void *logits, float *losses,
                           const int32_t *targets, int N, int V, int Vp, float scale, bool backward,
                           enum gs_kern_dtype dt);
/* acc[0] += the sum of losses over rows whose target is >= 0, acc[1] += their count (device
 * floats; one block, fixed order). */
int gs_kern_gpu_sum_losses(struct gs_kern_gpu *g, float *acc, const float *losses,
                           const int32_t *targets, int N);

/*
 * One pass over n gradient floats: g *= inv_scale (skipped when 1), then out[0] += the sum
 * of squares of the result and out[1] = 1 if any element was inf or NaN (left as it was
 * otherwise), in device floats. Call it per array and read out once: the norm is
 * sqrt(out[0]). Fixed-order block reduction through the workspace.
 */
int gs_kern_gpu_grad_stats(struct gs_kern_gpu *g, float *grad, size_t n, float inv_scale,
                           float *out);

/* AdamW (adamw.h) on the gradient times grad_scale (the clip factor; 1 for none); also
 * writes the new weights rounded to dt into copy unless copy is NULL. */
int gs_kern_gpu_adamw(struct gs_kern_gpu *g, float *param, const float *grad, float *m, float *v,
                      size_t n, const struct gs_kern_adamw *hp, float grad_scale, void *copy,
                      enum gs_kern_dtype dt);

/* dst (dtype dt) = src (dtype st), n elements; same dtype copies. */
int gs_kern_gpu_cast(struct gs_kern_gpu *g, void *dst, enum gs_kern_dtype dt, const void *src,
                     enum gs_kern_dtype st, size_t n);

#endif
