/*
 * model_gpu.c: the model's passes on a GPU, the same sequence as model.c's CPU passes over
 * the CUDA twins of kernels/gpu.h, plus the device arena and the input uploads.
 *
 * Memory: one device allocation at start (trn_model_gpu_open) holds the fp32 weights,
 * gradients and AdamW moments, the 16-bit weight copy, the activations, two input slots and
 * the kernels' workspace; nothing is allocated on the device afterwards, so the arena is the
 * peak. Host-side: two page-locked staging buffers for the input ids.
 *
 * Where the GPU sequence differs from the CPU's, to save passes over memory:
 *  - the residual add and the LayerNorm after it are one kernel (residual_layernorm_fwd):
 *    each block's second residual feeds the next block's ln1 (or the final LayerNorm);
 *  - the MLP's GELU rides on the fc matmul's epilogue (pre-GELU kept for backward) and its
 *    gradient on the projection's backward matmul;
 *  - attention keeps only the log-sum-exp per row and recomputes probabilities in backward.
 *
 * Inputs: a forward pass checks the ids on the host, groups positions by token for the
 * encoder's deterministic backward (gs_kern_encoder_runs), fills one of two page-locked
 * staging slots and uploads it on a copy stream; the compute stream waits for that copy
 * only. The host queues a micro-batch's passes and returns long before the GPU finishes
 * them, so the next micro-batch's upload runs while the GPU computes the current one. Each
 * slot is reused two forward passes later: before refilling it the host waits for its
 * previous upload, and the copy waits (on the device) for the kernels that read it.
 *
 * The host waits for the GPU once per optimizer step, to read the gradient norm and the
 * inf/NaN flag (and, in trn_model_take_loss, the step's loss).
 *
 * CUDA Graphs (trn_model_use_graphs): a training micro-step's forward and backward are each
 * captured once per input slot (the slots' addresses are baked in) and replayed after. What
 * varies per micro-batch lives in device memory (the ids, their runs), except the number of
 * runs: a graph launches one encoder block per position and the runs past the last are left
 * empty. A change of shapes or of the loss weight (fp16's scale) captures anew.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "kernels/gpu.h"
#include "kernels/ops.h"
#include "trainer/model_internal.h"

#define W trn_model_w
#define G trn_model_g
#define Wt trn_model_wt
#define Gt trn_model_gt
#define round_up trn_model_round_up

/* Slot capacity in int32s: tokens, targets, order (N each) and starts (N + 1). */
static size_t slot_ints(uint32_t batch, uint32_t context)
{
    return 4 * (size_t)batch * context + 1;
}

static size_t param_bytes(const struct trn_model_shape *s)
{
    size_t C = s->channels, Vp = trn_vocab_padded(s->vocab);

    return ((size_t)s->layers * (12 * C * C + 13 * C) + 2 * C + (size_t)s->context * C + Vp * C) *
           sizeof(float);
}

/*
 * Walks the device arena as model.c walks the host one: sizes only with base NULL, else
 * hands out the pointers too.
 */
static size_t layout_arena(struct trn_model *m, const struct trn_model_shape *s,
                           enum gs_kern_dtype dt, uint32_t batch, char *base)
{
    size_t P4 = param_bytes(s), dsz = gs_kern_dtype_size(dt);
    size_t slot = round_up(slot_ints(batch, s->context) * sizeof(int32_t));
    size_t off = 0, acts;
#define TAKE(ptr, bytes) TRN_MODEL_TAKE(base, off, ptr, bytes)

    TAKE(m->dp, P4);
    TAKE(m->g, P4);
    TAKE(m->dm, P4);
    TAKE(m->dv, P4);
    if (dt != GS_KERN_F32)
        TAKE(m->w16, P4 / 4 * dsz);
    else if (base != NULL)
        m->w16 = m->dp;
    TAKE(m->slots[0].dev, slot);
    TAKE(m->slots[1].dev, slot);
    TAKE(m->stats, 2 * sizeof(float));
    TAKE(m->loss_acc, 2 * sizeof(float));
#undef TAKE
    acts = trn_model_layout_acts(base != NULL ? m : NULL, s, trn_vocab_padded(s->vocab), batch, dsz,
                                 true, base != NULL ? base + off : NULL);
    return off + acts;
}

size_t trn_model_gpu_bytes(const struct trn_model_shape *s, enum gs_kern_dtype dt, uint32_t batch)
{
    struct trn_model scratch = {0};

    return layout_arena(&scratch, s, dt, batch, NULL);
}

static void *stream_of(const struct trn_model *m)
{
    return gs_kern_gpu_stream(m->gpu);
}

int trn_model_gpu_open(struct trn_model *m)
{
    size_t ints = slot_ints(m->batch, m->shape.context);
    int rc;

    m->arena_bytes = layout_arena(m, &m->shape, m->dt, m->batch, NULL);
    rc = gs_kern_dev_alloc(m->arena_bytes, &m->arena);
    if (rc < 0)
        return rc;
    layout_arena(m, &m->shape, m->dt, m->batch, m->arena);
    m->ws_bytes =
        round_up(gs_kern_gpu_ws_bytes((int)m->batch, (int)m->shape.context, (int)m->shape.channels,
                                      (int)m->shape.heads, (int)m->Vp, m->nparams));
    gs_kern_gpu_set_workspace(m->gpu, m->ws, m->ws_bytes);
    m->clip = 1.0f;
    m->sort_scratch = malloc((size_t)m->batch * m->shape.context * sizeof(int64_t));
    if (m->sort_scratch == NULL)
        return -ENOMEM;
    rc = gs_kern_gpu_stream_new(&m->copy_stream);
    for (int i = 0; rc == 0 && i < 2; i++) {
        struct gpu_slot *s = &m->slots[i];

        rc = gs_kern_host_alloc(ints * sizeof(int32_t), (void **)&s->host);
        if (rc == 0)
            rc = gs_kern_gpu_event_new(false, &s->copied);
        if (rc == 0)
            rc = gs_kern_gpu_event_new(false, &s->freed);
    }
    /* Zero bits are 0.0 in every dtype: weights, gradients, moments and the sums start at 0. */
    if (rc == 0)
        rc = gs_kern_gpu_memset_async(m->arena, 0, m->arena_bytes, stream_of(m));
    if (rc == 0)
        rc = gs_kern_gpu_sync(m->gpu);
    return rc;
}

void trn_model_gpu_close(struct trn_model *m)
{
    if (m->gpu != NULL)
        gs_kern_gpu_sync(m->gpu); /* nothing queued may outlive what it reads */
    for (int i = 0; i < 2; i++) {
        gs_kern_host_free(m->slots[i].host);
        gs_kern_gpu_event_free(m->slots[i].copied);
        gs_kern_gpu_event_free(m->slots[i].freed);
    }
    for (int i = 0; i < 2; i++) {
        gs_kern_gpu_graph_free(m->fwd_graph[i].exec);
        gs_kern_gpu_graph_free(m->bwd_graph[i].exec);
    }
    gs_kern_gpu_stream_free(m->copy_stream);
    gs_kern_dev_free(m->arena);
    free(m->sort_scratch);
}

/* --- host <-> device ------------------------------------------------------------------------ */

int trn_model_gpu_read(const struct trn_model *m, const void *src, void *dst, size_t bytes)
{
    int rc = gs_kern_gpu_copy_async(dst, src, bytes, stream_of(m));

    return rc == 0 ? gs_kern_gpu_sync(m->gpu) : rc;
}

int trn_model_gpu_sync(struct trn_model *m)
{
    size_t bytes = m->nparams * sizeof(float);
    void *st = stream_of(m);
    int rc = gs_kern_gpu_copy_async(m->dp, m->p, bytes, st);

    if (rc == 0)
        rc = gs_kern_gpu_copy_async(m->dm, m->m, bytes, st);
    if (rc == 0)
        rc = gs_kern_gpu_copy_async(m->dv, m->v, bytes, st);
    if (rc == 0 && m->dt != GS_KERN_F32)
        rc = gs_kern_gpu_cast(m->gpu, m->w16, m->dt, m->dp, GS_KERN_F32, m->nparams);
    if (rc == 0)
        rc = gs_kern_gpu_sync(m->gpu); /* the host arrays may change as soon as we return */
    return rc;
}

int trn_model_gpu_fetch(struct trn_model *m)
{
    size_t bytes = m->nparams * sizeof(float);
    void *st = stream_of(m);
    int rc = gs_kern_gpu_copy_async(m->p, m->dp, bytes, st);

    if (rc == 0)
        rc = gs_kern_gpu_copy_async(m->m, m->dm, bytes, st);
    if (rc == 0)
        rc = gs_kern_gpu_copy_async(m->v, m->dv, bytes, st);
    if (rc == 0)
        rc = gs_kern_gpu_sync(m->gpu);
    return rc;
}

/*
 * Stages a micro-batch's ids into the next slot and queues its upload (see the top of the
 * file for the ordering). order/starts only when a backward pass will follow.
 */
static int upload(struct trn_model *m, const int32_t *tokens, const int32_t *targets, int N,
                  bool for_backward, struct gpu_slot **ret)
{
    int next = m->slot ^ 1;
    struct gpu_slot *s = &m->slots[next], *prev = &m->slots[m->slot];
    size_t n = (size_t)N, ints = targets != NULL ? 2 * n : n;
    void *st = stream_of(m);
    int rc;

    /* Everything queued so far includes every kernel that reads the other slot. */
    rc = gs_kern_gpu_event_record(prev->freed, st);
    if (rc == 0)
        rc = gs_kern_gpu_event_sync(s->copied); /* this staging buffer's last upload */
    if (rc < 0)
        return rc;
    memcpy(s->host, tokens, n * sizeof(int32_t));
    if (targets != NULL)
        memcpy(s->host + n, targets, n * sizeof(int32_t));
    if (for_backward) {
        int32_t *starts = s->host + 3 * n;

        rc = gs_kern_encoder_runs(tokens, N, m->sort_scratch, s->host + 2 * n, starts, &s->nuniq);
        /* A graph launches one block per position: the runs past the last are empty. */
        for (int u = s->nuniq + 1; m->graphs && u <= N; u++)
            starts[u] = N;
        ints = 4 * n + 1;
    }
    if (rc == 0)
        rc = gs_kern_gpu_stream_wait(m->copy_stream, s->freed);
    if (rc == 0)
        rc = gs_kern_gpu_copy_async(s->dev, s->host, ints * sizeof(int32_t), m->copy_stream);
    if (rc == 0)
        rc = gs_kern_gpu_event_record(s->copied, m->copy_stream);
    if (rc == 0)
        rc = gs_kern_gpu_stream_wait(st, s->copied);
    if (rc == 0) {
        m->slot = next;
        *ret = s;
    }
    return rc;
}

/* --- forward ------------------------------------------------------------------------------- */

/* The transformer blocks and the final LayerNorm; x is the encoder's output. */
static int blocks_fwd(struct trn_model *m, int Bi, int Ti)
{
    struct gs_kern_gpu *g = m->gpu;
    int C = (int)m->shape.channels, NH = (int)m->shape.heads, N = Bi * Ti;
    uint32_t L = m->shape.layers;
    enum gs_kern_dtype dt = m->dt;
    int rc =
        gs_kern_gpu_layernorm_fwd(g, m->blocks[0].ln1, m->blocks[0].ln1_mean, m->blocks[0].ln1_rstd,
                                  m->encoded, W(m, 0, P_LN1W), W(m, 0, P_LN1B), N, C, dt);

    for (uint32_t l = 0; rc == 0 && l < L; l++) {
        struct block_acts *b = &m->blocks[l];
        const void *x = l > 0 ? m->blocks[l - 1].res3 : m->encoded;
        bool last = l + 1 == L;
        void *next_ln = last ? m->lnf : m->blocks[l + 1].ln1;
        float *next_mean = last ? m->lnf_mean : m->blocks[l + 1].ln1_mean;
        float *next_rstd = last ? m->lnf_rstd : m->blocks[l + 1].ln1_rstd;
        const void *next_w = last ? Wt(m, m->lnfw) : W(m, l + 1, P_LN1W);
        const void *next_b = last ? Wt(m, m->lnfb) : W(m, l + 1, P_LN1B);

        rc = gs_kern_gpu_matmul_fwd(g, b->qkv, NULL, b->ln1, W(m, l, P_QKVW), W(m, l, P_QKVB), N, C,
                                    3 * C, dt);
        if (rc == 0)
            rc = gs_kern_gpu_attention_fwd(g, b->atty, b->att, b->qkv, Bi, Ti, C, NH, dt);
        if (rc == 0)
            rc = gs_kern_gpu_matmul_fwd(g, m->scratch, NULL, b->atty, W(m, l, P_ATTPROJW),
                                        W(m, l, P_ATTPROJB), N, C, C, dt);
        if (rc == 0)
            rc = gs_kern_gpu_residual_layernorm_fwd(g, b->res2, b->ln2, b->ln2_mean, b->ln2_rstd, x,
                                                    m->scratch, W(m, l, P_LN2W), W(m, l, P_LN2B), N,
                                                    C, dt);
        if (rc == 0) /* fch keeps the value before GELU for backward; fch_gelu feeds proj */
            rc = gs_kern_gpu_matmul_fwd(g, b->fch_gelu, b->fch, b->ln2, W(m, l, P_FCW),
                                        W(m, l, P_FCB), N, C, 4 * C, dt);
        if (rc == 0)
            rc = gs_kern_gpu_matmul_fwd(g, m->scratch, NULL, b->fch_gelu, W(m, l, P_FCPROJW),
                                        W(m, l, P_FCPROJB), N, 4 * C, C, dt);
        if (rc == 0)
            rc = gs_kern_gpu_residual_layernorm_fwd(g, b->res3, next_ln, next_mean, next_rstd,
                                                    b->res2, m->scratch, next_w, next_b, N, C, dt);
    }
    return rc;
}

/* The mean loss of this pass alone, read back now (evaluation, tests): one wait. */
static int read_loss_now(struct trn_model *m, const int32_t *targets_dev, int N, double *ret)
{
    float host[2];
    int rc = gs_kern_gpu_memset_async(m->stats, 0, sizeof(host), stream_of(m));

    if (rc == 0)
        rc = gs_kern_gpu_sum_losses(m->gpu, m->stats, m->losses, targets_dev, N);
    if (rc == 0)
        rc = trn_model_gpu_read(m, m->stats, host, sizeof(host));
    if (rc < 0)
        return rc;
    *ret = host[1] > 0 ? (double)host[0] / host[1] : 0.0;
    return 0;
}

/* One pass's arguments, so that it can run directly or inside a graph capture. */
struct pass {
    struct gpu_slot *s;
    int B, T, nuniq;
    float scale;
    bool targets, for_backward, sum_loss;
};

typedef int (*pass_fn)(struct trn_model *m, const struct pass *p);

/* The pass without graphs, after a capture the driver refused: graphs stay off from now. */
static int graphs_refused(struct trn_model *m, pass_fn body, const struct pass *p)
{
    snprintf(m->graph_note, sizeof(m->graph_note), "%s", gs_kern_dev_last_error());
    m->graphs = false;
    return body(m, p);
}

/*
 * Runs body from gg's graph: launched as is when it was captured for these shapes and loss
 * weight, else captured first (the capture only records: the graph is launched after). An
 * argument error inside body is body's own; a capture that fails because something in it
 * cannot be captured falls back to running body directly.
 */
static int graphed(struct trn_model *m, struct gpu_graph *gg, pass_fn body, const struct pass *p)
{
    void *exec = NULL;
    int rc, brc;

    if (gg->exec != NULL && gg->B == (uint32_t)p->B && gg->T == (uint32_t)p->T &&
        gg->scale == p->scale)
        return gs_kern_gpu_graph_launch(m->gpu, gg->exec);
    gs_kern_gpu_graph_free(gg->exec);
    gg->exec = NULL;
    if (gs_kern_gpu_capture_begin(m->gpu) < 0)
        return graphs_refused(m, body, p);
    brc = body(m, p);
    rc = gs_kern_gpu_capture_end(m->gpu, &exec);
    if (rc == -ENOTSUP)
        return graphs_refused(m, body, p);
    if (rc == 0 && brc < 0)
        gs_kern_gpu_graph_free(exec);
    if (rc < 0 || brc < 0)
        return brc < 0 ? brc : rc;
    *gg = (struct gpu_graph){exec, (uint32_t)p->B, (uint32_t)p->T, p->scale};
    return gs_kern_gpu_graph_launch(m->gpu, exec);
}

static int forward_body(struct trn_model *m, const struct pass *p)
{
    int N = p->B * p->T, C = (int)m->shape.channels;
    int V = (int)m->shape.vocab, Vp = (int)m->Vp;
    const int32_t *tok = p->s->dev, *tgt = p->s->dev + N;
    int rc = gs_kern_gpu_encoder_fwd(m->gpu, m->encoded, tok, Wt(m, m->wte), Wt(m, m->wpe), p->B,
                                     p->T, C, V, m->dt);

    if (rc == 0)
        rc = blocks_fwd(m, p->B, p->T);
    if (rc == 0)
        rc = gs_kern_gpu_matmul_fwd(m->gpu, m->logits, NULL, m->lnf, Wt(m, m->wte), NULL, N, C, Vp,
                                    m->dt);
    if (rc == 0 && p->targets)
        rc = gs_kern_gpu_classifier(m->gpu, m->logits, m->losses, tgt, N, V, Vp, p->scale,
                                    p->for_backward, m->dt);
    if (rc == 0 && p->sum_loss)
        rc = gs_kern_gpu_sum_losses(m->gpu, m->loss_acc, m->losses, tgt, N);
    return rc;
}

int trn_model_gpu_forward(struct trn_model *m, const int32_t *tokens, const int32_t *targets,
                          uint32_t B, uint32_t T, float grad_scale, bool for_backward,
                          double *ret_loss)
{
    struct pass p = {
        .B = (int)B,
        .T = (int)T,
        .scale = grad_scale,
        .targets = targets != NULL,
        .for_backward = for_backward,
        .sum_loss = targets != NULL && ret_loss == NULL,
    };
    int N = p.B * p.T;
    int rc = trn_model_check_ids(m, tokens, targets, (size_t)N);

    if (rc == 0)
        rc = upload(m, tokens, targets, N, for_backward, &p.s);
    if (rc < 0)
        return rc;
    if (m->graphs && for_backward && p.sum_loss)
        rc = graphed(m, &m->fwd_graph[m->slot], forward_body, &p);
    else
        rc = forward_body(m, &p);
    if (rc == 0 && targets != NULL && ret_loss != NULL)
        rc = read_loss_now(m, p.s->dev + N, N, ret_loss);
    return rc;
}

int trn_model_gpu_take_loss(struct trn_model *m, double *ret_sum, double *ret_count)
{
    float host[2];
    int rc = trn_model_gpu_read(m, m->loss_acc, host, sizeof(host));

    if (rc == 0)
        rc = gs_kern_gpu_memset_async(m->loss_acc, 0, sizeof(host), stream_of(m));
    if (rc < 0)
        return rc;
    *ret_sum += host[0];
    *ret_count += host[1];
    return 0;
}

/* --- backward ------------------------------------------------------------------------------ */

static int block_bwd(struct trn_model *m, uint32_t l, int Bi, int Ti)
{
    struct gs_kern_gpu *g = m->gpu;
    struct block_acts *b = &m->blocks[l];
    const void *x = l > 0 ? m->blocks[l - 1].res3 : m->encoded;
    int C = (int)m->shape.channels, NH = (int)m->shape.heads, N = Bi * Ti;
    enum gs_kern_dtype dt = m->dt;
    /* res3 = res2 + proj(gelu(fc(ln2(res2)))): dres is the gradient of both terms; the
     * projection's backward applies GELU's derivative to its dinp on the way. */
    int rc = gs_kern_gpu_matmul_bwd(g, m->dbig, G(m, l, P_FCPROJW), G(m, l, P_FCPROJB), m->dres,
                                    b->fch_gelu, W(m, l, P_FCPROJW), b->fch, N, 4 * C, C, dt);

    if (rc == 0)
        rc = gs_kern_gpu_matmul_bwd(g, m->dc, G(m, l, P_FCW), G(m, l, P_FCB), m->dbig, b->ln2,
                                    W(m, l, P_FCW), NULL, N, C, 4 * C, dt);
    if (rc == 0)
        rc = gs_kern_gpu_layernorm_bwd(g, m->dres, G(m, l, P_LN2W), G(m, l, P_LN2B), m->dc, b->res2,
                                       W(m, l, P_LN2W), b->ln2_mean, b->ln2_rstd, N, C, dt);
    /* res2 = x + proj(attn(qkv(ln1(x)))): likewise. */
    if (rc == 0)
        rc = gs_kern_gpu_matmul_bwd(g, m->dc, G(m, l, P_ATTPROJW), G(m, l, P_ATTPROJB), m->dres,
                                    b->atty, W(m, l, P_ATTPROJW), NULL, N, C, C, dt);
    if (rc == 0)
        rc = gs_kern_gpu_attention_bwd(g, m->dqkv, m->dc, b->atty, b->att, b->qkv, Bi, Ti, C, NH,
                                       dt);
    if (rc == 0)
        rc = gs_kern_gpu_matmul_bwd(g, m->dc, G(m, l, P_QKVW), G(m, l, P_QKVB), m->dqkv, b->ln1,
                                    W(m, l, P_QKVW), NULL, N, C, 3 * C, dt);
    if (rc == 0)
        rc = gs_kern_gpu_layernorm_bwd(g, m->dres, G(m, l, P_LN1W), G(m, l, P_LN1B), m->dc, x,
                                       W(m, l, P_LN1W), b->ln1_mean, b->ln1_rstd, N, C, dt);
    return rc;
}

static int backward_body(struct trn_model *m, const struct pass *p)
{
    int N = p->B * p->T, C = (int)m->shape.channels;
    int V = (int)m->shape.vocab, Vp = (int)m->Vp;
    const int32_t *tok = p->s->dev, *order = p->s->dev + 2 * N, *starts = p->s->dev + 3 * N;
    struct gs_kern_gpu *g = m->gpu;
    enum gs_kern_dtype dt = m->dt;
    int rc;

    /* The logits now hold their gradient (the classifier). */
    rc = gs_kern_gpu_matmul_bwd(g, m->dc, Gt(m, m->wte), NULL, m->logits, m->lnf, Wt(m, m->wte),
                                NULL, N, C, Vp, dt);
    if (rc == 0)
        rc = gs_kern_gpu_memset_async(m->dres, 0, (size_t)N * C * m->dsz, stream_of(m));
    if (rc == 0)
        rc = gs_kern_gpu_layernorm_bwd(g, m->dres, Gt(m, m->lnfw), Gt(m, m->lnfb), m->dc,
                                       m->blocks[m->shape.layers - 1].res3, Wt(m, m->lnfw),
                                       m->lnf_mean, m->lnf_rstd, N, C, dt);
    if (rc == 0)
        rc = trn_model_grads_ready(m, m->lnfw + 1);
    for (uint32_t l = m->shape.layers; rc == 0 && l-- > 0;) {
        rc = block_bwd(m, l, p->B, p->T);
        if (rc == 0)
            rc = trn_model_grads_ready(m, m->block[l * P_PER_BLOCK + P_LN1W] + 1);
    }
    if (rc == 0)
        rc = gs_kern_gpu_encoder_bwd(g, Gt(m, m->wte), Gt(m, m->wpe), m->dres, tok, order, starts,
                                     p->nuniq, p->B, p->T, C, V, dt);
    if (rc == 0)
        rc = trn_model_grads_ready(m, m->ntensors);
    return rc;
}

int trn_model_gpu_backward(struct trn_model *m)
{
    struct gpu_slot *s = &m->slots[m->slot];
    struct pass p = {.s = s, .B = (int)m->fwd_B, .T = (int)m->fwd_T, .nuniq = s->nuniq};

    /* Data parallelism's hook queues work of its own between kernels: never in a graph. */
    if (m->graphs && m->ready == NULL) {
        p.nuniq = p.B * p.T; /* the upload padded the runs for this */
        return graphed(m, &m->bwd_graph[m->slot], backward_body, &p);
    }
    return backward_body(m, &p);
}

/* --- optimizer ----------------------------------------------------------------------------- */

int trn_model_gpu_grad_prepare(struct trn_model *m, float inv_scale, float *ret_norm,
                               bool *found_nonfinite, float max_norm)
{
    float host[2];
    int rc = gs_kern_gpu_memset_async(m->stats, 0, sizeof(host), stream_of(m));

    if (rc == 0)
        rc = gs_kern_gpu_grad_stats(m->gpu, m->g, m->nparams, inv_scale, m->stats);
    if (rc == 0)
        rc = trn_model_gpu_read(m, m->stats, host, sizeof(host)); /* the step's one wait */
    if (rc < 0)
        return rc;
    *ret_norm = sqrtf(host[0]);
    *found_nonfinite = host[1] != 0.0f || !isfinite(*ret_norm);
    /* Clipping rides on AdamW as a gradient multiplier: no pass of its own. */
    m->clip = *found_nonfinite ? 1.0f : gs_kern_clip_scale(*ret_norm, max_norm);
    return 0;
}

int trn_model_gpu_adamw(struct trn_model *m, const struct trn_adamw *hp)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < m->ntensors; i++) {
        const struct trn_param *t = &m->params[i];
        struct gs_kern_adamw k = trn_model_adamw_hp(hp, t);
        void *copy = m->dt == GS_KERN_F32 ? NULL : (char *)m->w16 + t->offset * m->dsz;

        rc = gs_kern_gpu_adamw(m->gpu, m->dp + t->offset, m->g + t->offset, m->dm + t->offset,
                               m->dv + t->offset, t->count, &k, m->clip, copy, m->dt);
    }
    m->clip = 1.0f;
    return rc;
}
