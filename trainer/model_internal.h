/*
 * model_internal.h: the model's struct and layout helpers, shared by model.c (layout, life
 * cycle, the CPU passes) and model_gpu.c (the same passes as CUDA kernels, gpu.h). Nothing
 * outside those two files includes it.
 *
 * Where things live. The fp32 master arrays p, m, v are always host memory: they are what
 * initialisation, checkpoints and rank 0's broadcast read and write. On the CPU the kernels
 * use them directly. On a GPU the kernels use device copies (dp, dm, dv) in one device arena
 * with the gradients, the 16-bit weights, the activations and the kernels' workspace;
 * trn_model_sync() pushes the host arrays there and trn_model_fetch() brings them back. The
 * gradient array g and the activation pointers are always where the kernels run.
 */
#ifndef TRN_MODEL_INTERNAL_H
#define TRN_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/gpu.h"
#include "trainer/model.h"

#define TRN_MODEL_ALIGN 256 /* cuBLASLt and vector loads want 16 bytes; 256 costs nothing */

/* Parameter tensors of one block, in forward order (their slots are laid out reversed). */
enum {
    P_LN1W,
    P_LN1B,
    P_QKVW,
    P_QKVB,
    P_ATTPROJW,
    P_ATTPROJB,
    P_LN2W,
    P_LN2B,
    P_FCW,
    P_FCB,
    P_FCPROJW,
    P_FCPROJB,
    P_PER_BLOCK
};

struct block_acts {
    void *ln1, *qkv, *atty, *res2, *ln2, *fch, *fch_gelu, *res3;
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd;
    float *att; /* CPU: probabilities [B,NH,T,T]; GPU: log-sum-exp [B,NH,T] */
};

/* One of the two device input slots a micro-batch's ids are copied into (model_gpu.c). */
struct gpu_slot {
    int32_t *host; /* page-locked staging: tokens, targets, order, starts */
    int32_t *dev;  /* the same four arrays on the device */
    void *copied;  /* event on the copy stream: this slot's upload is done */
    void *freed;   /* event on the compute stream: the kernels reading it are done */
    int nuniq;
};

struct trn_model {
    struct trn_model_shape shape;
    uint32_t Vp, batch;
    enum gs_kern_dtype dt;
    size_t dsz; /* bytes per stored element */

    struct trn_param *params; /* [ntensors], in backward order */
    size_t ntensors, nparams;
    size_t wte, wpe, lnfw, lnfb; /* indices into params */
    size_t *block;               /* [layers * P_PER_BLOCK] indices into params */
    float *p, *m, *v;            /* host fp32 master weights and AdamW moments */
    float *g;                    /* gradients, where the kernels run */
    void *w16;                   /* the dt copy the forward pass reads (== p or dp for fp32) */
    void *acts;                  /* one allocation for everything below */
    void *encoded, *lnf, *logits, *scratch, *dres, *dc, *dqkv, *dbig;
    float *lnf_mean, *lnf_rstd, *losses;
    int32_t *tokens, *targets;
    struct block_acts *blocks;
    void *ws;
    size_t ws_bytes;

    /* Loss accumulated over forward passes since trn_model_take_loss (host; the GPU keeps
     * its own sum in loss_acc). */
    double loss_sum, loss_count;

    /* GPU only (gpu == NULL on the CPU). */
    struct gs_kern_gpu *gpu; /* the caller's context */
    void *arena;             /* the one device allocation */
    size_t arena_bytes;
    float *dp, *dm, *dv;
    float *stats;    /* [2]: grad_stats' sum of squares and non-finite flag */
    float *loss_acc; /* [2]: summed losses and their count */
    float clip;      /* the last grad_prepare's clip factor, applied inside AdamW */
    void *copy_stream;
    struct gpu_slot slots[2];
    int slot; /* of the last forward pass */
    int64_t *sort_scratch;
    /* CUDA Graphs of a training micro-step's forward and backward, one per input slot (their
     * addresses differ), valid for the shapes and loss weight they were captured with. */
    bool graphs;
    struct gpu_graph {
        void *exec;
        uint32_t B, T;
        float scale;
    } fwd_graph[2], bwd_graph[2];
    char graph_note[192]; /* why a capture was refused ("" while none was) */

    trn_grads_ready_fn ready; /* data parallelism's hook, or NULL */
    void *ready_data;
    struct trn_trace *trace; /* the profiled step's recorder (trn_model_trace), or NULL */
    int64_t trace_step;
    uint32_t fwd_B, fwd_T; /* of the last forward pass */
    bool ready_for_backward;
    bool logits_valid; /* false once the classifier turned them into their gradient */
};

size_t trn_model_round_up(size_t n);
/* An arena walk's step: the next `bytes` (rounded up) go to ptr when there is a base, and
 * off moves past them either way; one walk serves to size an arena and to lay it out. */
#define TRN_MODEL_TAKE(base, off, ptr, bytes)                                                      \
    do {                                                                                           \
        if ((base) != NULL)                                                                        \
            (ptr) = (void *)((base) + (off));                                                      \
        (off) += trn_model_round_up(bytes);                                                        \
    } while (0)
/* Walks the activation arena (model.c): with base NULL only sizes it; gpu selects the GPU
 * layout (attention's lse instead of its probabilities, the GPU kernels' workspace). */
size_t trn_model_layout_acts(struct trn_model *m, const struct trn_model_shape *s, uint32_t Vp,
                             uint32_t batch, size_t dsz, bool gpu, char *base);
/* A block's tensor k in the dt copy and in the gradients; a tensor by index likewise. */
const void *trn_model_w(const struct trn_model *m, uint32_t l, int k);
float *trn_model_g(const struct trn_model *m, uint32_t l, int k);
const void *trn_model_wt(const struct trn_model *m, size_t index);
float *trn_model_gt(const struct trn_model *m, size_t index);
/* AdamW's settings for tensor t: weight decay only where t->decay. */
struct gs_kern_adamw trn_model_adamw_hp(const struct trn_adamw *hp, const struct trn_param *t);
/* Hands the hook the prefix of gradients before tensor index first_pending. */
int trn_model_grads_ready(struct trn_model *m, size_t first_pending);
/* Checks a micro-batch's ids on the host: tokens in [0, V), targets in [-1, V). */
int trn_model_check_ids(const struct trn_model *m, const int32_t *tokens, const int32_t *targets,
                        size_t n);

/* model_gpu.c: the GPU arena and passes, called by model.c when m->gpu is set. */
size_t trn_model_gpu_bytes(const struct trn_model_shape *s, enum gs_kern_dtype dt, uint32_t batch);
int trn_model_gpu_open(struct trn_model *m);
void trn_model_gpu_close(struct trn_model *m);
int trn_model_gpu_sync(struct trn_model *m);
int trn_model_gpu_fetch(struct trn_model *m);
int trn_model_gpu_forward(struct trn_model *m, const int32_t *tokens, const int32_t *targets,
                          uint32_t B, uint32_t T, float grad_scale, bool for_backward,
                          double *ret_loss);
int trn_model_gpu_backward(struct trn_model *m);
int trn_model_gpu_take_loss(struct trn_model *m, double *ret_sum, double *ret_count);
int trn_model_gpu_grad_prepare(struct trn_model *m, float inv_scale, float *ret_norm,
                               bool *found_nonfinite, float max_norm);
int trn_model_gpu_adamw(struct trn_model *m, const struct trn_adamw *hp);
int trn_model_gpu_read(const struct trn_model *m, const void *src, void *dst, size_t bytes);

#endif
