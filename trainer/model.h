/*
 * model.h: the GPT-style decoder gsched-train trains (the model of tests/reference/
 * gen_fixtures.py): token and position embeddings, `layers` blocks of LayerNorm → causal
 * multi-head attention → residual, LayerNorm → MLP (4x, GELU) → residual, a final LayerNorm
 * and an LM head tied to the token embedding, over a vocabulary padded to a multiple of 64.
 *
 * Memory is allocated once, in trn_model_new(), as four arenas: fp32 master parameters,
 * fp32 gradients, AdamW's two moments, and the activations of one micro-batch (plus, for
 * bf16/fp16, the 16-bit weight copy the forward pass reads). Nothing is allocated in
 * forward, backward or the optimizer step.
 *
 * Parameter tensors sit in the flat arrays in BACKWARD order (final LayerNorm, the last
 * block, ..., the first block, wpe, wte), the order in which backward completes their
 * gradients, so that data-parallel training can all-reduce the flat gradient buffer in
 * contiguous buckets as they fill.
 *
 * On a GPU (trn_model_new_on with a kernels/gpu.h context) the same passes run as CUDA
 * kernels: one device arena holds the fp32 weights, gradients, AdamW moments, the 16-bit
 * copy, the activations and the kernels' workspace, allocated here and nowhere else; the
 * passes only queue work on the context's stream. The fp32 master weights and moments
 * returned by trn_model_params/adam_m/adam_v stay host arrays: trn_model_sync() pushes them
 * to the device, trn_model_fetch() brings the device's back. trn_model_grads() is where the
 * kernels accumulate (device memory on a GPU); trn_model_read_grads() copies it to the host.
 *
 * Single-threaded API (the kernels use OpenMP inside); the model is the caller's to free.
 */
#ifndef TRN_MODEL_H
#define TRN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/gpu.h"

struct trn_model_shape {
    uint32_t layers, heads, channels, context; /* context: the longest sequence */
    uint32_t vocab;                            /* real tokens; padded up to a multiple of 64 */
};

/* One parameter tensor's place in the flat arrays (fixture and checkpoint names). */
struct trn_param {
    char name[32]; /* "wte", "h.3.attn.qkv.w", ... as in tests/reference */
    size_t offset, count;
    uint32_t rank, dims[2];
    bool decay; /* weight decay applies: matrices and embeddings, not biases or norms */
};

struct trn_adamw {
    float lr, beta1, beta2, eps, weight_decay;
    uint64_t t; /* 1-based step number, for bias correction */
};

struct trn_model;

uint32_t trn_vocab_padded(uint32_t vocab);

/* Bytes trn_model_new() allocates for this shape, micro-batch and dtype. */
size_t trn_model_bytes(const struct trn_model_shape *shape, enum gs_kern_dtype dt, uint32_t batch);
/* The same for the GPU's device arena when gpu (what auto micro-batch sizes against free
 * device memory), else trn_model_bytes(). */
size_t trn_model_bytes_on(const struct trn_model_shape *shape, enum gs_kern_dtype dt,
                          uint32_t batch, bool gpu);
/* Model FLOPs of forward + backward per token at sequence length T (matmuls and attention). */
double trn_model_flops_per_token(const struct trn_model_shape *shape, uint32_t T);

/*
 * A model for micro-batches of up to `batch` sequences of up to shape->context tokens, with
 * storage dtype dt. Parameters start at zero: call trn_model_init() or load them, then
 * trn_model_sync(). Returns 0, -EINVAL for a bad shape, -ENOMEM.
 */
int trn_model_new(const struct trn_model_shape *shape, enum gs_kern_dtype dt, uint32_t batch,
                  struct trn_model **ret);
/* The same on the GPU of context gpu (NULL: the CPU), which the caller keeps alive longer
 * than the model. -ENOMEM when the device arena does not fit, -EIO on a CUDA error. */
int trn_model_new_on(const struct trn_model_shape *shape, enum gs_kern_dtype dt, uint32_t batch,
                     struct gs_kern_gpu *gpu, struct trn_model **ret);
void trn_model_free(struct trn_model *m);
bool trn_model_on_gpu(const struct trn_model *m);
struct gs_kern_gpu *trn_model_gpu(const struct trn_model *m); /* NULL on the CPU */
/* The model's memory: on a GPU the device arena plus, with cuDNN's attention on, that
 * path's scratch (the peak: nothing else is allocated); trn_model_bytes() on the CPU. */
size_t trn_model_mem_bytes(const struct trn_model *m);

const struct trn_model_shape *trn_model_shape(const struct trn_model *m);
enum gs_kern_dtype trn_model_dtype(const struct trn_model *m);
size_t trn_model_nparams(const struct trn_model *m);
size_t trn_model_ntensors(const struct trn_model *m);
const struct trn_param *trn_model_param(const struct trn_model *m, size_t i);
const struct trn_param *trn_model_find(const struct trn_model *m, const char *name);
/* The flat fp32 arrays, nparams long each, in backward order. */
float *trn_model_params(struct trn_model *m);
float *trn_model_grads(struct trn_model *m);
float *trn_model_adam_m(struct trn_model *m);
float *trn_model_adam_v(struct trn_model *m);

/* GPT-2's initialisation from a seed: N(0, 0.02) weights, output projections scaled by
 * 1/sqrt(2*layers), zero biases, unit LayerNorm weights; padded embedding rows zero. */
void trn_model_init(struct trn_model *m, uint64_t seed);
/* After the host master arrays changed (init, loading, a broadcast): refreshes the 16-bit
 * weight copy from them and, on a GPU, uploads weights and moments first. */
int trn_model_sync(struct trn_model *m);
/* On a GPU: waits for queued work and copies the device's weights and moments into the host
 * arrays (before a checkpoint or a checksum). Nothing to do on the CPU. */
int trn_model_fetch(struct trn_model *m);
/*
 * On a GPU: replays the forward and backward passes of training micro-steps (with targets,
 * without ret_loss, no grads-ready hook during backward) from CUDA Graphs captured on first
 * use, one per input slot, shapes and loss weight, instead of launching each kernel: the
 * host's launch cost leaves the step. Other passes run as before. -ENOTSUP on the CPU. A
 * capture the driver refuses turns graphs off and the pass runs without them;
 * trn_model_graph_note() then says why (else "").
 */
int trn_model_use_graphs(struct trn_model *m, bool on);
const char *trn_model_graph_note(const struct trn_model *m);
/*
 * On a GPU: runs attention over the training shapes (batch x context) through cuDNN's fused
 * flash attention, its plans built now; other shapes (sampling) keep the kernels of our own.
 * -ENOTSUP on the CPU, or where cuDNN is not built or refuses (fp32, the shapes), -EIO when
 * its scratch cannot be had: the reason in gs_kern_dev_last_error(), and attention stays on
 * the kernels of our own.
 */
int trn_model_use_cudnn_attention(struct trn_model *m);
/* Copies the nparams gradients to dst (host). */
int trn_model_read_grads(const struct trn_model *m, float *dst);

/*
 * Forward pass over B x T tokens (B <= batch, T <= context). With targets, *ret_loss gets the
 * mean cross-entropy (a target of -1 is masked out) and, when for_backward, the logits'
 * gradient is prepared with weight grad_scale per token (e.g. loss_scale / (B*T*accum)); a
 * trn_model_backward() must follow. Without targets only the logits are computed. Returns 0
 * or -EINVAL (bad sizes, a token id outside the vocabulary).
 */
int trn_model_forward(struct trn_model *m, const int32_t *tokens, const int32_t *targets,
                      uint32_t B, uint32_t T, float grad_scale, bool for_backward,
                      double *ret_loss);
/*
 * The mean loss over every row with a target of the forward passes without ret_loss since
 * the last call, and a fresh start; on a GPU this waits for those passes (the one copy back
 * per step). A forward pass with ret_loss reports its own loss there instead (and waits for
 * it on a GPU): evaluation does that, a training step passes NULL and asks here.
 */
int trn_model_take_loss(struct trn_model *m, double *ret_mean);
/* Adds the last forward pass's gradients into trn_model_grads(). 0 or -EINVAL. */
int trn_model_backward(struct trn_model *m);
/*
 * Called during trn_model_backward() each time the gradients of a prefix of the flat array
 * are final: ready(final, data) means grads[0 .. final) will not change again in this pass
 * (after the final LayerNorm, after each block, and at the end with final = nparams). Data
 * parallelism starts its all-reduces from here, while backward goes on. NULL: none.
 * A nonzero return from ready stops the pass with that error.
 */
typedef int (*trn_grads_ready_fn)(size_t final, void *data);
void trn_model_on_grads_ready(struct trn_model *m, trn_grads_ready_fn ready, void *data);

struct trn_trace;
/*
 * Records the parts of the CPU forward and backward passes (the embedding, each block, the
 * head: the final LayerNorm, the logits and the loss) as spans of tr's compute lane, named
 * "embedding", "block" (argument "layer") and "head", category "forward" or "backward",
 * each with argument "step" = step; they nest inside the caller's own forward and backward
 * spans. NULL stops. On a GPU nothing is recorded here: the host only queues those kernels
 * (metrics.jsonl has the device's times).
 */
void trn_model_trace(struct trn_model *m, struct trn_trace *tr, int64_t step);
int trn_model_zero_grads(struct trn_model *m);
/* Logits of sequence b at position t of the last forward pass, as vocab floats. */
int trn_model_logits(const struct trn_model *m, uint32_t b, uint32_t t, float *out);

/*
 * Gradient post-processing and the AdamW step, over every tensor: unscale by inv_scale
 * (fp16; 1 otherwise) noting any inf/NaN in *found_nonfinite, the global norm (returned,
 * before clipping), clipping to max_norm (0: none). trn_model_adamw() then applies the step
 * with weight decay on `decay` tensors only, and refreshes the 16-bit copy in the same pass.
 */
int trn_model_grad_prepare(struct trn_model *m, float inv_scale, float max_norm, float *ret_norm,
                           bool *found_nonfinite);
int trn_model_adamw(struct trn_model *m, const struct trn_adamw *hp);

#endif
