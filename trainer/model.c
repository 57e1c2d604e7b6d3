/*
 * model.c: the GPT-style model's memory layout, forward and backward passes and optimizer
 * step, as a sequence of kernels/ops.h calls (see model.h for the architecture).
 *
 * Activations kept for backward, per block: ln1 (+ mean, rstd), qkv, the attention output
 * and probabilities, the residual after attention, ln2 (+ stats), the MLP's pre- and
 * post-GELU values and the block's output. The projections' own outputs are not kept: they
 * only feed a residual add, and backward needs just the gradient flowing through it. The
 * gradient of the residual stream lives in one buffer that every block's backward adds into
 * (the LayerNorm backward accumulates), so a residual add costs nothing in backward; three
 * scratch buffers hold the other activation gradients of the block being processed.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/model.h"
#include "trainer/model_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "kernels/adamw.h"
#include "kernels/ops.h"
#include "trainer/rng.h"
#include "trainer/trace.h"

static const char *const block_names[P_PER_BLOCK] = {
    "ln1.w", "ln1.b", "attn.qkv.w", "attn.qkv.b", "attn.proj.w", "attn.proj.b",
    "ln2.w", "ln2.b", "mlp.fc.w",   "mlp.fc.b",   "mlp.proj.w",  "mlp.proj.b",
};

uint32_t trn_vocab_padded(uint32_t vocab)
{
    return (vocab + 63) / 64 * 64;
}

static bool shape_ok(const struct trn_model_shape *s)
{
    return s->layers > 0 && s->heads > 0 && s->channels > 0 && s->context > 0 && s->vocab > 1 &&
           s->channels % s->heads == 0 && s->vocab <= (1u << 24) && s->channels <= 65536;
}

size_t trn_model_round_up(size_t n)
{
    return (n + TRN_MODEL_ALIGN - 1) / TRN_MODEL_ALIGN * TRN_MODEL_ALIGN;
}

#define round_up trn_model_round_up

/* --- parameters ----------------------------------------------------------------------------- */

static size_t param_elems(const struct trn_model_shape *s, uint32_t Vp)
{
    size_t C = s->channels;

    return (size_t)s->layers * (12 * C * C + 13 * C) + 2 * C + (size_t)s->context * C + Vp * C;
}

static void add_param(struct trn_model *m, const char *name, uint32_t rank, uint32_t d0,
                      uint32_t d1, size_t *ret_index)
{
    struct trn_param *p = &m->params[m->ntensors];

    snprintf(p->name, sizeof(p->name), "%s", name);
    p->rank = rank;
    p->dims[0] = d0;
    p->dims[1] = rank > 1 ? d1 : 0;
    p->count = rank > 1 ? (size_t)d0 * d1 : d0;
    p->offset = m->nparams;
    p->decay = rank > 1;
    m->nparams += p->count;
    *ret_index = m->ntensors++;
}

/* Backward order: lnf, blocks L-1 .. 0 (each reversed), wpe, wte. */
static void layout_params(struct trn_model *m)
{
    uint32_t C = m->shape.channels;
    const uint32_t rows[P_PER_BLOCK] = {C, C, 3 * C, 3 * C, C, C, C, C, 4 * C, 4 * C, C, C};
    const uint32_t cols[P_PER_BLOCK] = {0, 0, C, 0, C, 0, 0, 0, C, 0, 4 * C, 0};
    char name[32];

    add_param(m, "lnf.b", 1, C, 0, &m->lnfb);
    add_param(m, "lnf.w", 1, C, 0, &m->lnfw);
    for (uint32_t l = m->shape.layers; l-- > 0;) {
        for (int k = P_PER_BLOCK; k-- > 0;) {
            snprintf(name, sizeof(name), "h.%u.%s", l, block_names[k]);
            add_param(m, name, cols[k] > 0 ? 2 : 1, rows[k], cols[k],
                      &m->block[l * P_PER_BLOCK + (uint32_t)k]);
        }
    }
    add_param(m, "wpe", 2, m->shape.context, C, &m->wpe);
    add_param(m, "wte", 2, m->Vp, C, &m->wte);
}

/* A block's tensor k in the dt copy (what kernels read) and in the fp32 gradients. */
const void *trn_model_w(const struct trn_model *m, uint32_t l, int k)
{
    return (const char *)m->w16 +
           m->params[m->block[l * P_PER_BLOCK + (uint32_t)k]].offset * m->dsz;
}

float *trn_model_g(const struct trn_model *m, uint32_t l, int k)
{
    return m->g + m->params[m->block[l * P_PER_BLOCK + (uint32_t)k]].offset;
}

const void *trn_model_wt(const struct trn_model *m, size_t index)
{
    return (const char *)m->w16 + m->params[index].offset * m->dsz;
}

float *trn_model_gt(const struct trn_model *m, size_t index)
{
    return m->g + m->params[index].offset;
}

#define W trn_model_w
#define G trn_model_g
#define Wt trn_model_wt
#define Gt trn_model_gt

/* --- activations ---------------------------------------------------------------------------- */

struct act_sizes {
    size_t BTC, BT, att, logits;
};

/* The CPU keeps attention's probabilities [B,NH,T,T]; the GPU only their log-sum-exp. */
static struct act_sizes act_sizes(const struct trn_model_shape *s, uint32_t Vp, uint32_t batch,
                                  bool gpu)
{
    size_t BT = (size_t)batch * s->context;

    return (struct act_sizes){
        .BTC = BT * s->channels,
        .BT = BT,
        .att = (size_t)batch * s->heads * s->context * (gpu ? 1 : s->context),
        .logits = BT * Vp,
    };
}

/* The kernels' scratch: on the CPU the most any matmul (its size grows with the largest of
 * its three dimensions: N rows, 4C wide, Vp logits) or the attention needs; on the GPU what
 * gpu.h says its kernels need. */
static size_t ws_size(const struct trn_model_shape *s, uint32_t Vp, uint32_t batch, bool gpu)
{
    int N = (int)(batch * s->context), C4 = 4 * (int)s->channels;
    size_t a, b;

    if (gpu)
        return round_up(gs_kern_gpu_ws_bytes((int)batch, (int)s->context, (int)s->channels,
                                             (int)s->heads, (int)Vp, param_elems(s, Vp)));
    a = gs_kern_attention_ws_bytes((int)s->context, (int)s->channels, (int)s->heads);
    b = gs_kern_matmul_ws_bytes(N, C4, (int)Vp > C4 ? (int)Vp : C4);
    return round_up(a > b ? a : b);
}

/*
 * Walks the activation arena: with base NULL it only adds up the size; otherwise it also
 * hands out the pointers into m. One function for both, so the size and the layout cannot
 * drift apart.
 */
size_t trn_model_layout_acts(struct trn_model *m, const struct trn_model_shape *s, uint32_t Vp,
                             uint32_t batch, size_t dsz, bool gpu, char *base)
{
    struct act_sizes z = act_sizes(s, Vp, batch, gpu);
    struct trn_model scratch;
    struct block_acts tmp;
    size_t off = 0;
#define TAKE(ptr, bytes) TRN_MODEL_TAKE(base, off, ptr, bytes)

    if (base == NULL)
        m = &scratch; /* only sizes are wanted: the pointers go nowhere */
    for (uint32_t l = 0; l < s->layers; l++) {
        struct block_acts *b = base != NULL ? &m->blocks[l] : &tmp;

        TAKE(b->ln1, z.BTC * dsz);
        TAKE(b->ln1_mean, z.BT * 4);
        TAKE(b->ln1_rstd, z.BT * 4);
        TAKE(b->qkv, 3 * z.BTC * dsz);
        TAKE(b->atty, z.BTC * dsz);
        TAKE(b->att, z.att * 4);
        TAKE(b->res2, z.BTC * dsz);
        TAKE(b->ln2, z.BTC * dsz);
        TAKE(b->ln2_mean, z.BT * 4);
        TAKE(b->ln2_rstd, z.BT * 4);
        TAKE(b->fch, 4 * z.BTC * dsz);
        TAKE(b->fch_gelu, 4 * z.BTC * dsz);
        TAKE(b->res3, z.BTC * dsz);
    }
    TAKE(m->encoded, z.BTC * dsz);
    TAKE(m->lnf, z.BTC * dsz);
    TAKE(m->lnf_mean, z.BT * 4);
    TAKE(m->lnf_rstd, z.BT * 4);
    TAKE(m->logits, z.logits * dsz);
    TAKE(m->losses, z.BT * 4);
    TAKE(m->tokens, z.BT * 4);
    TAKE(m->targets, z.BT * 4);
    TAKE(m->scratch, z.BTC * dsz);
    TAKE(m->dres, z.BTC * dsz);
    TAKE(m->dc, z.BTC * dsz);
    TAKE(m->dqkv, 3 * z.BTC * dsz);
    TAKE(m->dbig, 4 * z.BTC * dsz);
    TAKE(m->ws, ws_size(s, Vp, batch, gpu));
#undef TAKE
    return off;
}

size_t trn_model_bytes(const struct trn_model_shape *shape, enum gs_kern_dtype dt, uint32_t batch)
{
    uint32_t Vp = trn_vocab_padded(shape->vocab);
    size_t P = param_elems(shape, Vp), dsz = gs_kern_dtype_size(dt);

    return 4 * round_up(P * 4) + (dt != GS_KERN_F32 ? round_up(P * dsz) : 0) +
           trn_model_layout_acts(NULL, shape, Vp, batch, dsz, false, NULL);
}

size_t trn_model_bytes_on(const struct trn_model_shape *shape, enum gs_kern_dtype dt,
                          uint32_t batch, bool gpu)
{
    return gpu ? trn_model_gpu_bytes(shape, dt, batch) : trn_model_bytes(shape, dt, batch);
}

double trn_model_flops_per_token(const struct trn_model_shape *s, uint32_t T)
{
    double C = s->channels, L = s->layers, Vp = trn_vocab_padded(s->vocab);
    double matmul = 2.0 * (L * 12.0 * C * C + Vp * C);     /* forward, per token */
    double attn = L * 2.0 * 2.0 * C * ((double)T + 1) / 2; /* q.k and att.v, causal */

    return 3.0 * (matmul + attn); /* backward costs twice the forward */
}

/* --- life cycle ---------------------------------------------------------------------------- */

static void *arena(size_t bytes)
{
    void *p = NULL;

    if (posix_memalign(&p, TRN_MODEL_ALIGN, round_up(bytes > 0 ? bytes : 1)) != 0)
        return NULL;
    memset(p, 0, round_up(bytes > 0 ? bytes : 1)); /* also makes the pages resident now */
    return p;
}

int trn_model_new(const struct trn_model_shape *shape, enum gs_kern_dtype dt, uint32_t batch,
                  struct trn_model **ret)
{
    return trn_model_new_on(shape, dt, batch, NULL, ret);
}

/* The host side: parameter table, master arrays; on the CPU also gradients, the 16-bit copy
 * and the activations. */
static int open_host(struct trn_model *m)
{
    bool cpu = m->gpu == NULL;
    size_t acts;

    m->p = arena(m->nparams * 4);
    m->m = arena(m->nparams * 4);
    m->v = arena(m->nparams * 4);
    if (m->p == NULL || m->m == NULL || m->v == NULL)
        return -ENOMEM;
    if (!cpu)
        return 0;
    m->g = arena(m->nparams * 4);
    m->w16 = m->dt == GS_KERN_F32 ? (void *)m->p : arena(m->nparams * m->dsz);
    acts = trn_model_layout_acts(m, &m->shape, m->Vp, m->batch, m->dsz, false, NULL);
    m->acts = arena(acts);
    if (m->g == NULL || m->w16 == NULL || m->acts == NULL)
        return -ENOMEM;
    trn_model_layout_acts(m, &m->shape, m->Vp, m->batch, m->dsz, false, m->acts);
    m->ws_bytes = ws_size(&m->shape, m->Vp, m->batch, false);
    return 0;
}

int trn_model_new_on(const struct trn_model_shape *shape, enum gs_kern_dtype dt, uint32_t batch,
                     struct gs_kern_gpu *gpu, struct trn_model **ret)
{
    struct trn_model *m;
    size_t nt;
    int rc;

    if (!shape_ok(shape) || batch == 0 || gs_kern_dtype_size(dt) == 0)
        return -EINVAL;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return -ENOMEM;
    m->shape = *shape;
    m->Vp = trn_vocab_padded(shape->vocab);
    m->batch = batch;
    m->dt = dt;
    m->dsz = gs_kern_dtype_size(dt);
    m->gpu = gpu;
    nt = (size_t)shape->layers * P_PER_BLOCK + 4;
    m->params = calloc(nt, sizeof(*m->params));
    m->block = calloc((size_t)shape->layers * P_PER_BLOCK, sizeof(*m->block));
    m->blocks = calloc(shape->layers, sizeof(*m->blocks));
    if (m->params == NULL || m->block == NULL || m->blocks == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    layout_params(m);
    rc = open_host(m);
    if (rc == 0 && gpu != NULL)
        rc = trn_model_gpu_open(m);
out:
    if (rc < 0) {
        trn_model_free(m);
        return rc;
    }
    *ret = m;
    return 0;
}

void trn_model_free(struct trn_model *m)
{
    if (m == NULL)
        return;
    if (m->gpu != NULL) {
        trn_model_gpu_close(m); /* the device arena and the GPU's own host buffers */
    } else {
        if (m->w16 != m->p)
            free(m->w16);
        free(m->g);
        free(m->acts);
    }
    free(m->p);
    free(m->m);
    free(m->v);
    free(m->params);
    free(m->block);
    free(m->blocks);
    free(m);
}

bool trn_model_on_gpu(const struct trn_model *m)
{
    return m->gpu != NULL;
}

struct gs_kern_gpu *trn_model_gpu(const struct trn_model *m)
{
    return m->gpu;
}

size_t trn_model_mem_bytes(const struct trn_model *m)
{
    if (m->gpu != NULL)
        return m->arena_bytes + gs_kern_gpu_attention_scratch_bytes(m->gpu);
    return trn_model_bytes(&m->shape, m->dt, m->batch);
}

const struct trn_model_shape *trn_model_shape(const struct trn_model *m)
{
    return &m->shape;
}

enum gs_kern_dtype trn_model_dtype(const struct trn_model *m)
{
    return m->dt;
}

size_t trn_model_nparams(const struct trn_model *m)
{
    return m->nparams;
}

size_t trn_model_ntensors(const struct trn_model *m)
{
    return m->ntensors;
}

const struct trn_param *trn_model_param(const struct trn_model *m, size_t i)
{
    return i < m->ntensors ? &m->params[i] : NULL;
}

const struct trn_param *trn_model_find(const struct trn_model *m, const char *name)
{
    for (size_t i = 0; i < m->ntensors; i++) {
        if (strcmp(m->params[i].name, name) == 0)
            return &m->params[i];
    }
    return NULL;
}

float *trn_model_params(struct trn_model *m)
{
    return m->p;
}

float *trn_model_grads(struct trn_model *m)
{
    return m->g;
}

float *trn_model_adam_m(struct trn_model *m)
{
    return m->m;
}

float *trn_model_adam_v(struct trn_model *m)
{
    return m->v;
}

void trn_model_init(struct trn_model *m, uint64_t seed)
{
    struct trn_rng rng;
    float proj_std = 0.02f / sqrtf(2.0f * (float)m->shape.layers);

    trn_rng_seed(&rng, seed);
    /* Forward order, so that a seed gives the same weights whatever the layout. */
    for (size_t k = m->ntensors; k-- > 0;) {
        const struct trn_param *t = &m->params[k];
        float *p = m->p + t->offset;
        size_t len = strlen(t->name);
        bool bias = t->name[len - 1] == 'b', norm = strstr(t->name, "ln") != NULL;
        bool proj = strstr(t->name, ".proj.w") != NULL;

        for (size_t i = 0; i < t->count; i++)
            p[i] = norm   ? (bias ? 0.0f : 1.0f)
                   : bias ? 0.0f
                          : (float)trn_rng_normal(&rng) * (proj ? proj_std : 0.02f);
    }
    /* Rows of the padded vocabulary are never a token: zero, and they stay zero. */
    memset(m->p + m->params[m->wte].offset + (size_t)m->shape.vocab * m->shape.channels, 0,
           (size_t)(m->Vp - m->shape.vocab) * m->shape.channels * sizeof(float));
}

int trn_model_sync(struct trn_model *m)
{
    if (m->gpu != NULL)
        return trn_model_gpu_sync(m);
    return m->dt == GS_KERN_F32 ? 0 : gs_kern_cast(m->w16, m->dt, m->p, GS_KERN_F32, m->nparams);
}

int trn_model_use_graphs(struct trn_model *m, bool on)
{
    if (m->gpu == NULL)
        return -ENOTSUP;
    m->graphs = on;
    return 0;
}

int trn_model_use_cudnn_attention(struct trn_model *m)
{
    const struct trn_model_shape *s = &m->shape;
    int rc;

    if (m->gpu == NULL)
        return -ENOTSUP;
    rc = gs_kern_gpu_set_attention_cudnn(m->gpu, true);
    if (rc == 0)
        rc = gs_kern_gpu_attention_prepare(m->gpu, (int)m->batch, (int)s->context, (int)s->channels,
                                           (int)s->heads, m->dt);
    if (rc < 0)
        gs_kern_gpu_set_attention_cudnn(m->gpu, false);
    return rc;
}

const char *trn_model_graph_note(const struct trn_model *m)
{
    return m->graph_note;
}

int trn_model_fetch(struct trn_model *m)
{
    return m->gpu != NULL ? trn_model_gpu_fetch(m) : 0;
}

int trn_model_read_grads(const struct trn_model *m, float *dst)
{
    if (m->gpu != NULL)
        return trn_model_gpu_read(m, m->g, dst, m->nparams * sizeof(float));
    memcpy(dst, m->g, m->nparams * sizeof(float));
    return 0;
}

int trn_model_take_loss(struct trn_model *m, double *ret_mean)
{
    double sum = m->loss_sum, count = m->loss_count;
    int rc = 0;

    if (m->gpu != NULL)
        rc = trn_model_gpu_take_loss(m, &sum, &count);
    m->loss_sum = m->loss_count = 0;
    *ret_mean = count > 0 ? sum / count : 0.0;
    return rc;
}

int trn_model_check_ids(const struct trn_model *m, const int32_t *tokens, const int32_t *targets,
                        size_t n)
{
    int32_t V = (int32_t)m->shape.vocab;

    for (size_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= V)
            return -EINVAL;
        if (targets != NULL && (targets[i] < -1 || targets[i] >= V))
            return -EINVAL;
    }
    return 0;
}

/* --- forward ------------------------------------------------------------------------------- */

void trn_model_trace(struct trn_model *m, struct trn_trace *tr, int64_t step)
{
    m->trace = tr;
    m->trace_step = step;
}

/* The clock for a part's span, when a step is profiled (no clock read otherwise). */
static uint64_t part_start(const struct trn_model *m)
{
    return m->trace != NULL ? gs_clock_mono_ns() : 0;
}

/* A part's span from `from` to now: layer >= 0 for a block. */
static void part_span(const struct trn_model *m, const char *name, const char *pass, uint64_t from,
                      int64_t layer)
{
    if (m->trace != NULL)
        trn_trace_span(m->trace, TRN_TRACE_COMPUTE, name, pass, from, "step", m->trace_step,
                       layer >= 0 ? "layer" : NULL, layer);
}

static int cpu_forward(struct trn_model *m, const int32_t *tokens, const int32_t *targets,
                       uint32_t B, uint32_t T, float grad_scale, bool for_backward,
                       double *ret_loss)
{
    int Bi = (int)B, Ti = (int)T, C = (int)m->shape.channels, NH = (int)m->shape.heads;
    int N = Bi * Ti, V = (int)m->shape.vocab, Vp = (int)m->Vp;
    enum gs_kern_dtype dt = m->dt;
    const void *x;
    double sum = 0;
    uint64_t from = part_start(m);
    int rc;

    memcpy(m->tokens, tokens, (size_t)N * sizeof(*tokens));
    rc = gs_kern_encoder_fwd(m->encoded, tokens, Wt(m, m->wte), Wt(m, m->wpe), Bi, Ti, C, V, dt);
    part_span(m, "embedding", "forward", from, -1);
    x = m->encoded;
    for (uint32_t l = 0; rc == 0 && l < m->shape.layers; l++) {
        struct block_acts *b = &m->blocks[l];

        from = part_start(m);
        rc = gs_kern_layernorm_fwd(b->ln1, b->ln1_mean, b->ln1_rstd, x, W(m, l, P_LN1W),
                                   W(m, l, P_LN1B), N, C, dt);
        if (rc == 0)
            rc = gs_kern_matmul_fwd(b->qkv, b->ln1, W(m, l, P_QKVW), W(m, l, P_QKVB), N, C, 3 * C,
                                    dt, m->ws, m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_attention_fwd(b->atty, b->att, b->qkv, Bi, Ti, C, NH, dt, m->ws,
                                       m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_matmul_fwd(m->scratch, b->atty, W(m, l, P_ATTPROJW), W(m, l, P_ATTPROJB),
                                    N, C, C, dt, m->ws, m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_residual_fwd(b->res2, x, m->scratch, (size_t)N * C, dt);
        if (rc == 0)
            rc = gs_kern_layernorm_fwd(b->ln2, b->ln2_mean, b->ln2_rstd, b->res2, W(m, l, P_LN2W),
                                       W(m, l, P_LN2B), N, C, dt);
        if (rc == 0)
            rc = gs_kern_matmul_fwd(b->fch, b->ln2, W(m, l, P_FCW), W(m, l, P_FCB), N, C, 4 * C, dt,
                                    m->ws, m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_gelu_fwd(b->fch_gelu, b->fch, (size_t)N * 4 * C, dt);
        if (rc == 0)
            rc = gs_kern_matmul_fwd(m->scratch, b->fch_gelu, W(m, l, P_FCPROJW), W(m, l, P_FCPROJB),
                                    N, 4 * C, C, dt, m->ws, m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_residual_fwd(b->res3, b->res2, m->scratch, (size_t)N * C, dt);
        part_span(m, "block", "forward", from, (int64_t)l);
        x = b->res3;
    }
    from = part_start(m);
    if (rc == 0)
        rc = gs_kern_layernorm_fwd(m->lnf, m->lnf_mean, m->lnf_rstd, x, Wt(m, m->lnfw),
                                   Wt(m, m->lnfb), N, C, dt);
    if (rc == 0)
        rc = gs_kern_matmul_fwd(m->logits, m->lnf, Wt(m, m->wte), NULL, N, C, Vp, dt, m->ws,
                                m->ws_bytes);
    if (rc == 0 && targets != NULL) {
        memcpy(m->targets, targets, (size_t)N * sizeof(*targets));
        rc = gs_kern_classifier(m->logits, m->losses, targets, N, V, Vp, grad_scale, for_backward,
                                dt);
    }
    part_span(m, "head", "forward", from, -1);
    if (rc < 0)
        return rc;
    if (targets != NULL) {
        int counted = 0;

        for (int i = 0; i < N; i++) {
            if (targets[i] >= 0) {
                sum += m->losses[i];
                counted++;
            }
        }
        if (ret_loss != NULL) {
            *ret_loss = counted > 0 ? sum / counted : 0.0;
        } else {
            m->loss_sum += sum;
            m->loss_count += counted;
        }
    }
    return 0;
}

int trn_model_forward(struct trn_model *m, const int32_t *tokens, const int32_t *targets,
                      uint32_t B, uint32_t T, float grad_scale, bool for_backward, double *ret_loss)
{
    int rc;

    m->ready_for_backward = m->logits_valid = false;
    if (B == 0 || T == 0 || B > m->batch || T > m->shape.context || (for_backward && !targets))
        return -EINVAL;
    if (m->gpu != NULL)
        rc = trn_model_gpu_forward(m, tokens, targets, B, T, grad_scale, for_backward, ret_loss);
    else
        rc = cpu_forward(m, tokens, targets, B, T, grad_scale, for_backward, ret_loss);
    if (rc < 0)
        return rc;
    m->fwd_B = B;
    m->fwd_T = T;
    m->ready_for_backward = for_backward;
    m->logits_valid = !for_backward;
    return 0;
}

int trn_model_logits(const struct trn_model *m, uint32_t b, uint32_t t, float *out)
{
    size_t row;

    if (b >= m->fwd_B || t >= m->fwd_T || !m->logits_valid)
        return -EINVAL; /* after a training forward the logits are gradients now */
    row = ((size_t)b * m->fwd_T + t) * m->Vp;
    if (m->gpu != NULL) {
        /* One row to the host, converted there: sampling's path, not training's. */
        void *host = malloc((size_t)m->shape.vocab * m->dsz);
        int rc = host == NULL ? -ENOMEM
                              : trn_model_gpu_read(m, (const char *)m->logits + row * m->dsz, host,
                                                   (size_t)m->shape.vocab * m->dsz);

        for (uint32_t i = 0; rc == 0 && i < m->shape.vocab; i++)
            out[i] = gs_kern_load(host, i, m->dt);
        free(host);
        return rc;
    }
    for (uint32_t i = 0; i < m->shape.vocab; i++)
        out[i] = gs_kern_load(m->logits, row + i, m->dt);
    return 0;
}

/* --- backward ------------------------------------------------------------------------------ */

/* Tells the hook that every gradient slot before tensor index `first_pending` is final. */
int trn_model_grads_ready(struct trn_model *m, size_t first_pending)
{
    size_t final = first_pending < m->ntensors ? m->params[first_pending].offset : m->nparams;

    return m->ready != NULL ? m->ready(final, m->ready_data) : 0;
}

static int cpu_backward(struct trn_model *m)
{
    int B = (int)m->fwd_B, T = (int)m->fwd_T, C = (int)m->shape.channels;
    int NH = (int)m->shape.heads, N = B * T, Vp = (int)m->Vp, V = (int)m->shape.vocab;
    enum gs_kern_dtype dt = m->dt;
    uint64_t from = part_start(m);
    int rc;

    /* The logits now hold their gradient (gs_kern_classifier). */
    rc = gs_kern_matmul_bwd(m->dc, Gt(m, m->wte), NULL, m->logits, m->lnf, Wt(m, m->wte), N, C, Vp,
                            dt, m->ws, m->ws_bytes);
    memset(m->dres, 0, (size_t)N * C * m->dsz); /* zero bits are 0.0 in every dtype */
    if (rc == 0)
        rc = gs_kern_layernorm_bwd(m->dres, Gt(m, m->lnfw), Gt(m, m->lnfb), m->dc,
                                   m->blocks[m->shape.layers - 1].res3, Wt(m, m->lnfw), m->lnf_mean,
                                   m->lnf_rstd, N, C, dt);
    if (rc == 0)
        rc = trn_model_grads_ready(m, m->lnfw + 1); /* lnf.b and lnf.w lead the layout */
    part_span(m, "head", "backward", from, -1);
    for (uint32_t l = m->shape.layers; rc == 0 && l-- > 0;) {
        struct block_acts *b = &m->blocks[l];
        const void *x = l > 0 ? m->blocks[l - 1].res3 : m->encoded;

        from = part_start(m);
        /* res3 = res2 + proj(gelu(fc(ln2(res2)))): dres is the gradient of both terms. */
        rc = gs_kern_matmul_bwd(m->dbig, G(m, l, P_FCPROJW), G(m, l, P_FCPROJB), m->dres,
                                b->fch_gelu, W(m, l, P_FCPROJW), N, 4 * C, C, dt, m->ws,
                                m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_gelu_bwd(m->dbig, b->fch, m->dbig, (size_t)N * 4 * C, dt);
        if (rc == 0)
            rc = gs_kern_matmul_bwd(m->dc, G(m, l, P_FCW), G(m, l, P_FCB), m->dbig, b->ln2,
                                    W(m, l, P_FCW), N, C, 4 * C, dt, m->ws, m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_layernorm_bwd(m->dres, G(m, l, P_LN2W), G(m, l, P_LN2B), m->dc, b->res2,
                                       W(m, l, P_LN2W), b->ln2_mean, b->ln2_rstd, N, C, dt);
        /* res2 = x + proj(attn(qkv(ln1(x)))): likewise. */
        if (rc == 0)
            rc = gs_kern_matmul_bwd(m->dc, G(m, l, P_ATTPROJW), G(m, l, P_ATTPROJB), m->dres,
                                    b->atty, W(m, l, P_ATTPROJW), N, C, C, dt, m->ws, m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_attention_bwd(m->dqkv, m->dc, b->att, b->qkv, B, T, C, NH, dt, m->ws,
                                       m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_matmul_bwd(m->dc, G(m, l, P_QKVW), G(m, l, P_QKVB), m->dqkv, b->ln1,
                                    W(m, l, P_QKVW), N, C, 3 * C, dt, m->ws, m->ws_bytes);
        if (rc == 0)
            rc = gs_kern_layernorm_bwd(m->dres, G(m, l, P_LN1W), G(m, l, P_LN1B), m->dc, x,
                                       W(m, l, P_LN1W), b->ln1_mean, b->ln1_rstd, N, C, dt);
        /* Block l's tensors end with its ln1.w (laid out reversed); what follows is pending. */
        if (rc == 0)
            rc = trn_model_grads_ready(m, m->block[l * P_PER_BLOCK + P_LN1W] + 1);
        part_span(m, "block", "backward", from, (int64_t)l);
    }
    from = part_start(m);
    if (rc == 0)
        rc = gs_kern_encoder_bwd(Gt(m, m->wte), Gt(m, m->wpe), m->dres, m->tokens, B, T, C, V, dt);
    if (rc == 0)
        rc = trn_model_grads_ready(m, m->ntensors);
    part_span(m, "embedding", "backward", from, -1);
    return rc;
}

int trn_model_backward(struct trn_model *m)
{
    if (!m->ready_for_backward)
        return -EINVAL;
    m->ready_for_backward = false;
    return m->gpu != NULL ? trn_model_gpu_backward(m) : cpu_backward(m);
}

void trn_model_on_grads_ready(struct trn_model *m, trn_grads_ready_fn ready, void *data)
{
    m->ready = ready;
    m->ready_data = data;
}

int trn_model_zero_grads(struct trn_model *m)
{
    if (m->gpu != NULL)
        return gs_kern_gpu_memset_async(m->g, 0, m->nparams * sizeof(float),
                                        gs_kern_gpu_stream(m->gpu));
    memset(m->g, 0, m->nparams * sizeof(float));
    return 0;
}

/* --- optimizer ----------------------------------------------------------------------------- */

int trn_model_grad_prepare(struct trn_model *m, float inv_scale, float max_norm, float *ret_norm,
                           bool *found_nonfinite)
{
    const float *arr = m->g;
    size_t len = m->nparams;
    float norm = 0, clip;
    int rc = 0;

    *found_nonfinite = false;
    if (m->gpu != NULL)
        return trn_model_gpu_grad_prepare(m, inv_scale, ret_norm, found_nonfinite, max_norm);
    if (inv_scale != 1.0f)
        rc = gs_kern_grad_unscale(m->g, m->nparams, inv_scale, found_nonfinite);
    if (rc == 0)
        rc = gs_kern_grad_norm(&arr, &len, 1, &norm);
    if (rc < 0)
        return rc;
    if (!isfinite(norm))
        *found_nonfinite = true;
    *ret_norm = norm;
    clip = gs_kern_clip_scale(norm, max_norm);
    if (!*found_nonfinite && clip < 1.0f)
        rc = gs_kern_grad_scale(m->g, m->nparams, clip);
    return rc;
}

struct gs_kern_adamw trn_model_adamw_hp(const struct trn_adamw *hp, const struct trn_param *t)
{
    return (struct gs_kern_adamw){
        .lr = hp->lr,
        .beta1 = hp->beta1,
        .beta2 = hp->beta2,
        .eps = hp->eps,
        .weight_decay = t->decay ? hp->weight_decay : 0.0f,
        .step = (int)hp->t,
    };
}

int trn_model_adamw(struct trn_model *m, const struct trn_adamw *hp)
{
    int rc = 0;

    if (m->gpu != NULL)
        return trn_model_gpu_adamw(m, hp);
    for (size_t i = 0; rc == 0 && i < m->ntensors; i++) {
        const struct trn_param *t = &m->params[i];
        struct gs_kern_adamw k = trn_model_adamw_hp(hp, t);

        rc = gs_kern_adamw_copy_cpu(m->p + t->offset, m->g + t->offset, m->m + t->offset,
                                    m->v + t->offset, t->count, &k,
                                    (char *)m->w16 + t->offset * m->dsz, m->dt);
    }
    return rc;
}
