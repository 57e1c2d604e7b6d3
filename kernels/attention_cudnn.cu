/*
 * attention_cudnn.cu: causal attention through cuDNN's fused flash attention, the
 * alternative to attention.cu's kernels of our own for the shapes whose plans were prepared
 * (gpu.h: gs_kern_gpu_set_attention_cudnn, gs_kern_gpu_attention_prepare). Plain calls of
 * cuDNN 9's backend API; no cuDNN frontend (a C++ header library Debian does not package).
 *
 * cuDNN fuses attention when it is handed an operation graph of the shape its flash engines
 * recognise; before 9.21 there is no single causal attention operation, so the graphs are
 * spelled out (cuDNN's documentation of its attention support):
 *  - forward: S = Q.K^T (K^T through strides), times the scale, the causal mask (row and
 *    column indices, row >= col, the rest -inf), then the softmax spelled as its max, exp,
 *    sum and log: lse = max + ln(sum) is written as the stats tensor and P = exp / sum,
 *    rounded to the input dtype, feeds O = P.V.
 *  - backward: softmax_sum = rowsum(dO * O) into scratch; P recomputed as exp(scale S - lse)
 *    under the mask; dV = P^T.dO; dS = P (dO.V^T - softmax_sum) scale; dK = dS^T.Q;
 *    dQ = dS.K. Two forms: dQ straight into dqkv (the one cuDNN's deterministic engines
 *    take, tried first), or dQ summed in fp32 scratch then converted (when no engine takes
 *    the first).
 * Layouts come through strides, nothing is copied: q, k and v are [B,NH,T,hs] views of qkv
 * [B,T,3C] (row stride 3C), out, dout and the gradients views of [B,T,C] rows, and lse
 * [B,NH,T] is cuDNN's stats tensor [B,NH,T,1]: the natural-log log-sum-exp of the scaled,
 * masked scores, the same values attention.cu saves, so either backward can follow either
 * forward.
 *
 * Plans: gs_kern_gpu_attention_prepare builds both graphs for one set of shapes, takes
 * cuDNN's heuristics' engines in their order (first those without the NONDETERMINISTIC
 * note, then any) and keeps the first plan that finalises, with the descriptors it was built
 * from. Up to MAX_SHAPES sets are kept; preparing another drops the one used longest ago.
 * Scratch: softmax_sum (and dQ's fp32 sum) then the plans' own workspace, in one device
 * buffer of this context grown by prepare, never while a step runs.
 *
 * Not yet run on a GPU. Without one, tests/kernels/test_cudnn_graph.c builds every descriptor
 * and the operation graphs, and asks cuDNN's heuristics which engines take them on a
 * described H100 (gs_kern_cudnn_check_graph); plans and numbers need a device
 * (tests/kernels/test_gpu_gemm.c, bench/gpu_check.sh).
 */
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cudnn.h>

#include "kernels/gpu_internal.h"

extern "C" {
#include "kernels/attention_cudnn.h"
}

#define MAX_DESC 224 /* a backward graph has about 120, plus the heuristics' configurations */
#define MAX_OPS 40
#define MAX_CFGS 64
#define MAX_SHAPES 4
#define SCRATCH_ALIGN 256

/* The tensors the caller's memory (or a host scalar) backs: the variant pack's ids. Virtual
 * tensors are numbered from UID_VIRTUAL on. */
enum {
    UID_Q = 1,
    UID_K,
    UID_V,
    UID_O,
    UID_STATS,
    UID_DO,
    UID_DQ,
    UID_DK,
    UID_DV,
    UID_SCALE,
    UID_NEG_INF,
    UID_ONE,
    UID_SOFTMAX_SUM,
    UID_DQ_ACCUM,
    UID_VIRTUAL = 100,
};

/* One graph's descriptors (destroyed together, with its plan: the plan was made from them)
 * and the first failure while building it; every helper does nothing once one failed. */
struct graph {
    cudnnBackendDescriptor_t desc[MAX_DESC];
    int ndesc;
    cudnnBackendDescriptor_t ops[MAX_OPS];
    int nops;
    int64_t next_uid;
    int rc;
    char why[400];
};

struct shapes {
    int64_t B, H, S, D, C;
    cudnnDataType_t io;
};

struct plan {
    struct graph *gr;
    cudnnBackendDescriptor_t exec;
    int64_t ws_bytes; /* the plan's own workspace */
    int64_t engine;   /* cuDNN's global engine index */
    bool nondet;      /* the engine carries the NONDETERMINISTIC note */
    bool dq_accum;    /* backward: the form that sums dQ in fp32 scratch */
};

struct shape_plans {
    bool used;
    int B, T, C, NH;
    enum gs_kern_dtype dt;
    unsigned long stamp; /* last use, for dropping the oldest */
    struct plan fwd, bwd;
};

struct gs_kern_cudnn {
    cudnnHandle_t h;
    struct shape_plans sets[MAX_SHAPES];
    unsigned long clock;
    void *scratch; /* device memory: front tensors, then the plan's workspace */
    size_t scratch_bytes;
    char engine[240];
};

/* --- building descriptors ------------------------------------------------------------------ */

static void gr_fail(struct graph *gr, cudnnStatus_t st, const char *what)
{
    char detail[256] = "";

    if (gr->rc != 0)
        return;
    cudnnGetLastErrorString(detail, sizeof(detail));
    snprintf(gr->why, sizeof(gr->why), "%s: %s%s%s", what, cudnnGetErrorString(st),
             detail[0] != '\0' ? ": " : "", detail);
    gr->rc = st == CUDNN_STATUS_ALLOC_FAILED ? -ENOMEM : -ENOTSUP;
}

static cudnnBackendDescriptor_t gr_new(struct graph *gr, cudnnBackendDescriptorType_t type,
                                       const char *what)
{
    cudnnBackendDescriptor_t d = NULL;
    cudnnStatus_t st;

    if (gr->rc != 0)
        return NULL;
    if (gr->ndesc == MAX_DESC) {
        snprintf(gr->why, sizeof(gr->why), "%s: more than %d descriptors", what, MAX_DESC);
        gr->rc = -ENOMEM;
        return NULL;
    }
    st = cudnnBackendCreateDescriptor(type, &d);
    if (st != CUDNN_STATUS_SUCCESS) {
        gr_fail(gr, st, what);
        return NULL;
    }
    gr->desc[gr->ndesc++] = d;
    return d;
}

static void gr_set(struct graph *gr, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                   cudnnBackendAttributeType_t type, int64_t n, const void *v, const char *what)
{
    cudnnStatus_t st;
    char where[96];

    if (gr->rc != 0)
        return;
    st = cudnnBackendSetAttribute(d, name, type, n, v);
    if (st != CUDNN_STATUS_SUCCESS) {
        snprintf(where, sizeof(where), "%s: attribute %d", what, (int)name);
        gr_fail(gr, st, where);
    }
}

static void gr_fin(struct graph *gr, cudnnBackendDescriptor_t d, const char *what)
{
    cudnnStatus_t st;

    if (gr->rc != 0)
        return;
    st = cudnnBackendFinalize(d);
    if (st != CUDNN_STATUS_SUCCESS)
        gr_fail(gr, st, what);
}

static void gr_free(struct graph *gr)
{
    if (gr == NULL)
        return;
    for (int i = gr->ndesc - 1; i >= 0; i--)
        cudnnBackendDestroyDescriptor(gr->desc[i]);
    free(gr);
}

enum { T_VIRTUAL = 1, T_BY_VALUE = 2 };

/* A rank-4 tensor; uid 0 takes the graph's next virtual id. */
static cudnnBackendDescriptor_t tensor(struct graph *gr, int64_t uid, const int64_t *dims,
                                       const int64_t *strides, cudnnDataType_t dt, int flags)
{
    cudnnBackendDescriptor_t t = gr_new(gr, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    int64_t align = 16;
    bool yes = true;

    if (uid == 0)
        uid = gr->next_uid++;
    gr_set(gr, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor");
    gr_set(gr, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor");
    gr_set(gr, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor");
    gr_set(gr, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor");
    gr_set(gr, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor");
    if (flags & T_VIRTUAL)
        gr_set(gr, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, "tensor");
    if (flags & T_BY_VALUE)
        gr_set(gr, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, "tensor");
    gr_fin(gr, t, "tensor");
    return t;
}

/* A float passed by value from the host (its variant-pack pointer is a host address). */
static cudnnBackendDescriptor_t scalar(struct graph *gr, int64_t uid)
{
    static const int64_t one[4] = {1, 1, 1, 1};

    return tensor(gr, uid, one, one, CUDNN_DATA_FLOAT, T_BY_VALUE);
}

/* Adds an operation of the given type: descs[i] (NULL ones left out) set as its attribute
 * names[i], then finalised. */
static void add_op(struct graph *gr, cudnnBackendDescriptorType_t type, int n,
                   const cudnnBackendAttributeName_t *names, const cudnnBackendDescriptor_t *descs,
                   const char *what)
{
    cudnnBackendDescriptor_t op = gr_new(gr, type, what);

    for (int i = 0; i < n; i++)
        if (descs[i] != NULL)
            gr_set(gr, op, names[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &descs[i], what);
    gr_fin(gr, op, what);
    if (gr->rc != 0)
        return;
    if (gr->nops == MAX_OPS) {
        snprintf(gr->why, sizeof(gr->why), "more than %d operations", MAX_OPS);
        gr->rc = -ENOMEM;
        return;
    }
    gr->ops[gr->nops++] = op;
}

/* y = mode(x, b, t) with arithmetic in prec; axis >= 0 for GEN_INDEX. Returns y. */
static cudnnBackendDescriptor_t pointwise(struct graph *gr, cudnnPointwiseMode_t mode,
                                          cudnnDataType_t prec, int64_t axis,
                                          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                          cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y)
{
    static const cudnnBackendAttributeName_t names[] = {
        CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
        CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
        CUDNN_ATTR_OPERATION_POINTWISE_YDESC};
    cudnnBackendDescriptor_t pw = gr_new(gr, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    char what[40];

    snprintf(what, sizeof(what), "pointwise mode %d", (int)mode);
    gr_set(gr, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what);
    gr_set(gr, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, what);
    if (axis >= 0)
        gr_set(gr, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, what);
    gr_fin(gr, pw, what);
    {
        const cudnnBackendDescriptor_t descs[] = {pw, x, b, t, y};

        add_op(gr, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, 5, names, descs, what);
    }
    return y;
}

/* c = a . b (batched over the first two dimensions), fp32 accumulation. Returns c. */
static cudnnBackendDescriptor_t matmul(struct graph *gr, cudnnBackendDescriptor_t a,
                                       cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c)
{
    static const cudnnBackendAttributeName_t names[] = {
        CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
        CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_ATTR_OPERATION_MATMUL_DESC};
    cudnnBackendDescriptor_t md = gr_new(gr, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;

    gr_set(gr, md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "matmul");
    gr_fin(gr, md, "matmul");
    {
        const cudnnBackendDescriptor_t descs[] = {a, b, c, md};

        add_op(gr, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, 4, names, descs, "matmul");
    }
    return c;
}

/* y = x reduced (max or sum) over the dimensions where y has 1. Returns y. */
static cudnnBackendDescriptor_t reduction(struct graph *gr, cudnnReduceTensorOp_t mode,
                                          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
    static const cudnnBackendAttributeName_t names[] = {CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
                                                        CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
                                                        CUDNN_ATTR_OPERATION_REDUCTION_DESC};
    cudnnBackendDescriptor_t rd = gr_new(gr, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;

    gr_set(gr, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode,
           "reduction");
    gr_set(gr, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "reduction");
    gr_fin(gr, rd, "reduction");
    {
        const cudnnBackendDescriptor_t descs[] = {x, y, rd};

        add_op(gr, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, 3, names, descs, "reduction");
    }
    return y;
}

/* y = x seen through y's dimensions and strides (the transposes of the backward). */
static cudnnBackendDescriptor_t reshape(struct graph *gr, cudnnBackendDescriptor_t x,
                                        cudnnBackendDescriptor_t y)
{
    static const cudnnBackendAttributeName_t names[] = {CUDNN_ATTR_OPERATION_RESHAPE_XDESC,
                                                        CUDNN_ATTR_OPERATION_RESHAPE_YDESC};
    const cudnnBackendDescriptor_t descs[] = {x, y};

    add_op(gr, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, 2, names, descs, "reshape");
    return y;
}

/* --- the two graphs -------------------------------------------------------------------------- */

/* Dimensions and strides of the graphs' tensors for one set of shapes (R = 3C, qkv's rows). */
struct layout {
    int64_t qd[4], qs[4]; /* q, k, v, dq, dk, dv: [B,H,S,D] views of a 3C-wide row */
    int64_t kd[4], ks[4]; /* k^T and v^T: [B,H,D,S] */
    int64_t od[4], os[4]; /* out, dout: [B,H,S,D] views of a C-wide row */
    int64_t hd[4], hs[4]; /* packed [B,H,S,D] (dQ's fp32 sum, dout * out) */
    int64_t sd[4], ss[4]; /* scores [B,H,S,S] */
    int64_t sts[4];       /* their transpose's strides */
    int64_t rd[4], rs[4]; /* per row [B,H,S,1] (lse, the sums) */
};

static void layout_of(const struct shapes *s, struct layout *l)
{
    int64_t B = s->B, H = s->H, S = s->S, D = s->D, C = s->C, R = 3 * s->C;
    const int64_t qd[4] = {B, H, S, D}, qs[4] = {S * R, D, R, 1};
    const int64_t kd[4] = {B, H, D, S}, ks[4] = {S * R, D, 1, R};
    const int64_t os[4] = {S * C, D, C, 1}, hs[4] = {H * S * D, S * D, D, 1};
    const int64_t sd[4] = {B, H, S, S}, ss[4] = {H * S * S, S * S, S, 1};
    const int64_t sts[4] = {H * S * S, S * S, 1, S};
    const int64_t rd[4] = {B, H, S, 1}, rs[4] = {H * S, S, 1, 1};

    memcpy(l->qd, qd, sizeof(qd)), memcpy(l->qs, qs, sizeof(qs));
    memcpy(l->kd, kd, sizeof(kd)), memcpy(l->ks, ks, sizeof(ks));
    memcpy(l->od, qd, sizeof(qd)), memcpy(l->os, os, sizeof(os));
    memcpy(l->hd, qd, sizeof(qd)), memcpy(l->hs, hs, sizeof(hs));
    memcpy(l->sd, sd, sizeof(sd)), memcpy(l->ss, ss, sizeof(ss));
    memcpy(l->sts, sts, sizeof(sts));
    memcpy(l->rd, rd, sizeof(rd)), memcpy(l->rs, rs, sizeof(rs));
}

/* A fresh virtual scores-shaped tensor of type dt. */
static cudnnBackendDescriptor_t vscores(struct graph *gr, const struct layout *l,
                                        cudnnDataType_t dt)
{
    return tensor(gr, 0, l->sd, l->ss, dt, T_VIRTUAL);
}

static cudnnBackendDescriptor_t vrow(struct graph *gr, const struct layout *l)
{
    return tensor(gr, 0, l->rd, l->rs, CUDNN_DATA_FLOAT, T_VIRTUAL);
}

/* x where the key is not after the query (row >= column), -inf elsewhere. */
static cudnnBackendDescriptor_t causal(struct graph *gr, const struct layout *l,
                                       cudnnBackendDescriptor_t x)
{
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t row, col, keep;

    row = pointwise(gr, CUDNN_POINTWISE_GEN_INDEX, F, 2, x, NULL, NULL,
                    vscores(gr, l, CUDNN_DATA_INT32));
    col = pointwise(gr, CUDNN_POINTWISE_GEN_INDEX, F, 3, x, NULL, NULL,
                    vscores(gr, l, CUDNN_DATA_INT32));
    keep = pointwise(gr, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, -1, row, col, NULL,
                     vscores(gr, l, CUDNN_DATA_BOOLEAN));
    return pointwise(gr, CUDNN_POINTWISE_BINARY_SELECT, F, -1, x, scalar(gr, UID_NEG_INF), keep,
                     vscores(gr, l, F));
}

/* Operations of the forward graph: q, k, v, out, lse (stats), scale, -inf. */
static void build_fwd(struct graph *gr, const struct shapes *s)
{
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    struct layout l;
    cudnnBackendDescriptor_t q, k, v, o, stats, sc, m, e, z;

    layout_of(s, &l);
    q = tensor(gr, UID_Q, l.qd, l.qs, s->io, 0);
    k = tensor(gr, UID_K, l.kd, l.ks, s->io, 0);
    v = tensor(gr, UID_V, l.qd, l.qs, s->io, 0);
    o = tensor(gr, UID_O, l.od, l.os, s->io, 0);
    stats = tensor(gr, UID_STATS, l.rd, l.rs, F, 0);
    sc = matmul(gr, q, k, vscores(gr, &l, F));
    sc = pointwise(gr, CUDNN_POINTWISE_MUL, F, -1, sc, scalar(gr, UID_SCALE), NULL,
                   vscores(gr, &l, F));
    sc = causal(gr, &l, sc);
    m = reduction(gr, CUDNN_REDUCE_TENSOR_MAX, sc, vrow(gr, &l));
    e = pointwise(gr, CUDNN_POINTWISE_SUB, F, -1, sc, m, NULL, vscores(gr, &l, F));
    e = pointwise(gr, CUDNN_POINTWISE_EXP, F, -1, e, NULL, NULL, vscores(gr, &l, F));
    z = reduction(gr, CUDNN_REDUCE_TENSOR_ADD, e, vrow(gr, &l));
    pointwise(gr, CUDNN_POINTWISE_ADD, F, -1, m,
              pointwise(gr, CUDNN_POINTWISE_LOG, F, -1, z, NULL, NULL, vrow(gr, &l)), NULL, stats);
    /* P in the input dtype: the second product's operands are of one type. */
    e = pointwise(gr, CUDNN_POINTWISE_DIV, F, -1, e, z, NULL, vscores(gr, &l, s->io));
    matmul(gr, e, v, o);
}

/* Operations of the backward graph: q, k, v, out, dout, lse, dq, dk, dv, scale, -inf, 1,
 * softmax_sum (and with dq_accum dQ's fp32 sum) in scratch. */
static void build_bwd(struct graph *gr, const struct shapes *s, bool dq_accum)
{
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    struct layout l;
    cudnnBackendDescriptor_t q, k, vt, o, dout, stats, dq, dk, dv, scale, ssum, sc, p, ds, kk;

    layout_of(s, &l);
    q = tensor(gr, UID_Q, l.qd, l.qs, s->io, 0);
    k = tensor(gr, UID_K, l.kd, l.ks, s->io, 0);
    vt = tensor(gr, UID_V, l.kd, l.ks, s->io, 0);
    o = tensor(gr, UID_O, l.od, l.os, s->io, 0);
    dout = tensor(gr, UID_DO, l.od, l.os, s->io, 0);
    stats = tensor(gr, UID_STATS, l.rd, l.rs, F, 0);
    dq = tensor(gr, UID_DQ, l.qd, l.qs, s->io, 0);
    dk = tensor(gr, UID_DK, l.qd, l.qs, s->io, 0);
    dv = tensor(gr, UID_DV, l.qd, l.qs, s->io, 0);
    scale = scalar(gr, UID_SCALE);

    /* softmax_sum = rowsum(dout * out), times 1 to land in a tensor of its own. */
    ssum = pointwise(gr, CUDNN_POINTWISE_MUL, F, -1, dout, o, NULL,
                     tensor(gr, 0, l.hd, l.hs, F, T_VIRTUAL));
    ssum = reduction(gr, CUDNN_REDUCE_TENSOR_ADD, ssum, vrow(gr, &l));
    ssum = pointwise(gr, CUDNN_POINTWISE_MUL, F, -1, ssum, scalar(gr, UID_ONE), NULL,
                     tensor(gr, UID_SOFTMAX_SUM, l.rd, l.rs, F, 0));

    /* P = exp(scale S - lse) under the mask. */
    sc = matmul(gr, q, k, vscores(gr, &l, F));
    sc = pointwise(gr, CUDNN_POINTWISE_MUL, F, -1, sc, scale, NULL, vscores(gr, &l, F));
    sc = pointwise(gr, CUDNN_POINTWISE_SUB, F, -1, sc, stats, NULL, vscores(gr, &l, F));
    sc = causal(gr, &l, sc);
    p = pointwise(gr, CUDNN_POINTWISE_EXP, F, -1, sc, NULL, NULL, vscores(gr, &l, F));

    /* dV = P^T . dout */
    matmul(gr, reshape(gr, p, tensor(gr, 0, l.sd, l.sts, s->io, T_VIRTUAL)), dout, dv);

    /* dS = P (dout . V^T - softmax_sum) scale */
    ds = matmul(gr, dout, vt, vscores(gr, &l, F));
    ds = pointwise(gr, CUDNN_POINTWISE_SUB, F, -1, ds, ssum, NULL, vscores(gr, &l, F));
    ds = pointwise(gr, CUDNN_POINTWISE_MUL, F, -1, ds, p, NULL, vscores(gr, &l, F));
    ds = pointwise(gr, CUDNN_POINTWISE_MUL, F, -1, ds, scale, NULL, vscores(gr, &l, F));

    /* dK = dS^T . Q */
    matmul(gr, reshape(gr, ds, tensor(gr, 0, l.sd, l.sts, s->io, T_VIRTUAL)), q, dk);

    /* dQ = dS . K, K seen again as [B,H,S,D] */
    kk = reshape(gr, k, tensor(gr, 0, l.qd, l.qs, F, T_VIRTUAL));
    if (dq_accum) {
        cudnnBackendDescriptor_t acc = tensor(gr, UID_DQ_ACCUM, l.hd, l.hs, F, 0);

        pointwise(gr, CUDNN_POINTWISE_IDENTITY, F, -1, matmul(gr, ds, kk, acc), NULL, NULL, dq);
    } else {
        matmul(gr, ds, kk, dq);
    }
}

static int shapes_of(int B, int T, int C, int NH, enum gs_kern_dtype dt, struct shapes *s,
                     char *why, size_t n)
{
    if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0) {
        snprintf(why, n, "bad shapes B=%d T=%d C=%d NH=%d", B, T, C, NH);
        return -EINVAL;
    }
    if (dt != GS_KERN_BF16 && dt != GS_KERN_F16) {
        snprintf(why, n, "cuDNN's fused attention takes bf16 or fp16, not fp32");
        return -ENOTSUP;
    }
    if ((C / NH) % 8 != 0 || C / NH > 128) {
        snprintf(why, n,
                 "cuDNN's fused attention takes head sizes that are multiples of 8 "
                 "up to 128, not %d",
                 C / NH);
        return -ENOTSUP;
    }
    if (T == 1) {
        snprintf(why, n, "cuDNN's fused attention takes sequences longer than 1");
        return -ENOTSUP;
    }
    *s = (struct shapes){B,      NH, T,
                         C / NH, C,  dt == GS_KERN_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF};
    return 0;
}

static struct graph *graph_new(void)
{
    struct graph *gr = (struct graph *)calloc(1, sizeof(*gr));

    if (gr != NULL)
        gr->next_uid = UID_VIRTUAL;
    return gr;
}

/* --- plans ----------------------------------------------------------------------------------- */

/* The engine behind an engine configuration: its global index and whether it carries the
 * NONDETERMINISTIC note. */
static int engine_of(cudnnBackendDescriptor_t cfg, int64_t *ret_index, bool *ret_nondet)
{
    cudnnBackendDescriptor_t eng = NULL;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n = 0;
    int rc = -ENOTSUP;

    *ret_index = -1, *ret_nondet = false;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return -ENOMEM;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &n, &eng) != CUDNN_STATUS_SUCCESS)
        goto out;
    if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 ret_index) != CUDNN_STATUS_SUCCESS)
        goto out;
    n = 0;
    if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                                 notes) != CUDNN_STATUS_SUCCESS)
        goto out;
    for (int64_t i = 0; i < n; i++)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
            *ret_nondet = true;
    rc = 0;
out:
    cudnnBackendDestroyDescriptor(eng);
    return rc;
}

/* The operation graph of gr's operations: for a device through its handle h, or without one
 * (h NULL), for a device described by properties instead. */
static cudnnBackendDescriptor_t op_graph(struct graph *gr, cudnnHandle_t h, const char *pass)
{
    cudnnBackendDescriptor_t og = gr_new(gr, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, pass);

    gr_set(gr, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, gr->nops, gr->ops,
           pass);
    if (h != NULL)
        gr_set(gr, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, pass);
    gr_fin(gr, og, pass);
    return og;
}

/* cuDNN's engine configurations for graph og, best first (heuristics mode A), on the handle's
 * device or the one dp describes (NULL: the handle's): how many were filled into cfgs. */
static int64_t heuristics(struct graph *gr, cudnnBackendDescriptor_t og,
                          cudnnBackendDescriptor_t dp, cudnnBackendDescriptor_t *cfgs,
                          const char *pass)
{
    cudnnBackendDescriptor_t heur = gr_new(gr, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, pass);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t n = 0, got = 0;
    cudnnStatus_t st;

    gr_set(gr, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og,
           pass);
    gr_set(gr, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, pass);
    if (dp != NULL)
        gr_set(gr, heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &dp,
               pass);
    gr_fin(gr, heur, pass);
    if (gr->rc != 0)
        return 0;
    st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
    if (st != CUDNN_STATUS_SUCCESS) {
        gr_fail(gr, st, pass);
        return 0;
    }
    n = n > MAX_CFGS ? MAX_CFGS : n;
    for (int64_t i = 0; i < n; i++)
        cfgs[i] = gr_new(gr, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, pass);
    /* A configuration cuDNN cannot set up here (an engine missing a library) is left out. */
    if (gr->rc == 0 && n > 0) {
        st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfgs);
        if (st != CUDNN_STATUS_SUCCESS)
            gr_fail(gr, st, pass);
    }
    return gr->rc == 0 ? got : 0;
}

/* Finalises the graph built in p->gr, asks the heuristics, and keeps the first engine whose
 * plan finalises, deterministic ones first. */
static int make_plan(cudnnHandle_t h, struct plan *p, const char *pass)
{
    struct graph *gr = p->gr;
    cudnnBackendDescriptor_t cfgs[MAX_CFGS];
    int64_t got = heuristics(gr, op_graph(gr, h, pass), NULL, cfgs, pass);
    char last[256] = "";

    if (gr->rc != 0)
        return gr->rc;
    for (int round = 0; round < 2; round++) {
        for (int64_t i = 0; i < got; i++) {
            cudnnBackendDescriptor_t exec = NULL;
            int64_t index, ws = 0, cnt;
            bool nondet;

            if (engine_of(cfgs[i], &index, &nondet) < 0 || nondet != (round == 1))
                continue;
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &exec) !=
                CUDNN_STATUS_SUCCESS)
                continue;
            if (cudnnBackendSetAttribute(exec, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
                                         1, &h) == CUDNN_STATUS_SUCCESS &&
                cudnnBackendSetAttribute(exec, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                         &cfgs[i]) == CUDNN_STATUS_SUCCESS &&
                cudnnBackendFinalize(exec) == CUDNN_STATUS_SUCCESS &&
                cudnnBackendGetAttribute(exec, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                         CUDNN_TYPE_INT64, 1, &cnt, &ws) == CUDNN_STATUS_SUCCESS) {
                p->exec = exec, p->ws_bytes = ws, p->engine = index, p->nondet = nondet;
                return 0;
            }
            cudnnGetLastErrorString(last, sizeof(last));
            cudnnBackendDestroyDescriptor(exec);
        }
    }
    snprintf(gr->why, sizeof(gr->why),
             "%s: none of cuDNN's %lld engines for the graph built a "
             "plan%s%s",
             pass, (long long)got, last[0] != '\0' ? ": " : "", last);
    gr->rc = -ENOTSUP;
    return gr->rc;
}

static void plan_free(struct plan *p)
{
    if (p->exec != NULL)
        cudnnBackendDestroyDescriptor(p->exec);
    gr_free(p->gr);
    *p = (struct plan){};
}

static void set_free(struct shape_plans *set)
{
    plan_free(&set->fwd);
    plan_free(&set->bwd);
    set->used = false;
}

/* Builds one pass's plan for s into p: 0 or an error with the reason kept for last_error. */
static int build_pass(cudnnHandle_t h, const struct shapes *s, bool bwd, bool dq_accum,
                      struct plan *p)
{
    const char *pass = !bwd ? "forward" : dq_accum ? "backward (dQ summed in fp32)" : "backward";
    int rc;

    *p = (struct plan){};
    p->gr = graph_new();
    if (p->gr == NULL)
        return gs_kern_dev_fail(-ENOMEM, "cuDNN attention: out of memory");
    p->dq_accum = dq_accum;
    if (bwd)
        build_bwd(p->gr, s, dq_accum);
    else
        build_fwd(p->gr, s);
    rc = p->gr->rc;
    if (rc == 0)
        rc = make_plan(h, p, pass);
    if (rc < 0) {
        if (p->gr->why[0] != '\0')
            gs_kern_dev_fail(rc, "cuDNN attention %s: %s", pass, p->gr->why);
        plan_free(p);
    }
    return rc;
}

extern "C" int gs_kern_cudnn_check_graph(int B, int T, int C, int NH, enum gs_kern_dtype dt,
                                         bool bwd, bool dq_accum, const char *device_json,
                                         int64_t *engines, int *ret_nengines, char *why, size_t n)
{
    struct shapes s;
    struct graph *gr;
    cudnnBackendDescriptor_t og, dp, cfgs[MAX_CFGS];
    int64_t got = 0;
    int rc = shapes_of(B, T, C, NH, dt, &s, why, n), kept = 0;

    if (rc < 0)
        return rc;
    gr = graph_new();
    if (gr == NULL)
        return -ENOMEM;
    if (bwd)
        build_bwd(gr, &s, dq_accum);
    else
        build_fwd(gr, &s);
    og = op_graph(gr, NULL, "operation graph");
    if (device_json != NULL) {
        dp = gr_new(gr, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "device properties");
        gr_set(gr, dp, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
               (int64_t)strlen(device_json), device_json, "device properties");
        gr_fin(gr, dp, "device properties");
        got = heuristics(gr, og, dp, cfgs, "heuristics");
    }
    for (int64_t i = 0; gr->rc == 0 && i < got && kept < *ret_nengines; i++) {
        bool nondet;

        if (engine_of(cfgs[i], &engines[kept], &nondet) == 0)
            kept++;
    }
    rc = gr->rc;
    *ret_nengines = kept;
    snprintf(why, n, "%s", rc < 0 ? gr->why : "");
    gr_free(gr);
    return rc;
}

static size_t align_up(size_t n)
{
    return (n + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
}

/* Scratch in front of a backward plan's workspace: softmax_sum, then dQ's fp32 sum. */
static size_t front_bytes(const struct shape_plans *set, size_t *ret_accum_off)
{
    size_t rows = (size_t)set->B * (size_t)set->NH * (size_t)set->T;
    size_t off = align_up(rows * sizeof(float));

    if (ret_accum_off != NULL)
        *ret_accum_off = off;
    if (set->bwd.dq_accum)
        off += align_up(rows * (size_t)(set->C / set->NH) * sizeof(float));
    return off;
}

static size_t set_scratch_bytes(const struct shape_plans *set)
{
    size_t ws =
        (size_t)(set->fwd.ws_bytes > set->bwd.ws_bytes ? set->fwd.ws_bytes : set->bwd.ws_bytes);

    return front_bytes(set, NULL) + align_up(ws);
}

static struct shape_plans *find_set(const struct gs_kern_cudnn *c, int B, int T, int C, int NH,
                                    enum gs_kern_dtype dt)
{
    for (int i = 0; c != NULL && i < MAX_SHAPES; i++) {
        const struct shape_plans *s = &c->sets[i];

        if (s->used && s->B == B && s->T == T && s->C == C && s->NH == NH && s->dt == dt)
            return (struct shape_plans *)s;
    }
    return NULL;
}

/* Grows the scratch to what every kept set needs; the stream is drained first, since queued
 * work may still use the old buffer. */
static int grow_scratch(struct gs_kern_gpu *g)
{
    struct gs_kern_cudnn *c = g->cudnn;
    size_t need = 0;
    void *p = NULL;
    int rc;

    for (int i = 0; i < MAX_SHAPES; i++)
        if (c->sets[i].used && set_scratch_bytes(&c->sets[i]) > need)
            need = set_scratch_bytes(&c->sets[i]);
    if (need <= c->scratch_bytes)
        return 0;
    rc = gs_kern_dev_check(cudaStreamSynchronize(g->stream));
    if (rc == 0)
        rc = gs_kern_dev_check(cudaMalloc(&p, need));
    if (rc < 0)
        return rc;
    cudaFree(c->scratch);
    c->scratch = p, c->scratch_bytes = need;
    return 0;
}

/* --- gpu.h ----------------------------------------------------------------------------------- */

extern "C" bool gs_kern_cudnn_built(void)
{
    return true;
}

void gs_kern_gpu_cudnn_free(struct gs_kern_gpu *g)
{
    struct gs_kern_cudnn *c = g->cudnn;

    if (c == NULL)
        return;
    for (int i = 0; i < MAX_SHAPES; i++)
        set_free(&c->sets[i]);
    if (c->scratch != NULL) {
        cudaStreamSynchronize(g->stream);
        cudaFree(c->scratch);
    }
    if (c->h != NULL)
        cudnnDestroy(c->h);
    free(c);
    g->cudnn = NULL;
}

extern "C" int gs_kern_gpu_set_attention_cudnn(struct gs_kern_gpu *g, bool on)
{
    struct gs_kern_cudnn *c;
    cudnnStatus_t st;
    size_t v = cudnnGetVersion();

    if (g == NULL)
        return -EINVAL;
    if (!on) {
        gs_kern_gpu_cudnn_free(g);
        return 0;
    }
    if (g->cudnn != NULL)
        return 0;
    /* The backend API keeps its calls and values within a major version. */
    if (v / 10000 != CUDNN_MAJOR)
        return gs_kern_dev_fail(-ENOTSUP,
                                "cuDNN %zu loaded, built against %d: another major "
                                "version",
                                v, CUDNN_VERSION);
    c = (struct gs_kern_cudnn *)calloc(1, sizeof(*c));
    if (c == NULL)
        return -ENOMEM;
    st = cudaSetDevice(g->device) == cudaSuccess ? cudnnCreate(&c->h) : CUDNN_STATUS_INTERNAL_ERROR;
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnSetStream(c->h, g->stream);
    if (st != CUDNN_STATUS_SUCCESS) {
        char detail[256] = "";

        cudnnGetLastErrorString(detail, sizeof(detail));
        if (c->h != NULL)
            cudnnDestroy(c->h);
        free(c);
        return gs_kern_dev_fail(-ENOTSUP, "cudnnCreate: %s%s%s", cudnnGetErrorString(st),
                                detail[0] != '\0' ? ": " : "", detail);
    }
    g->cudnn = c;
    return 0;
}

extern "C" int gs_kern_gpu_attention_prepare(struct gs_kern_gpu *g, int B, int T, int C, int NH,
                                             enum gs_kern_dtype dt)
{
    struct gs_kern_cudnn *c;
    struct shape_plans *set;
    struct shapes s;
    char why[200];
    int rc;

    if (g == NULL)
        return -EINVAL;
    c = g->cudnn;
    if (c == NULL)
        return gs_kern_dev_fail(-ENOTSUP, "the cuDNN attention path is off");
    rc = shapes_of(B, T, C, NH, dt, &s, why, sizeof(why));
    if (rc < 0)
        return gs_kern_dev_fail(rc, "%s", why);
    set = find_set(c, B, T, C, NH, dt);
    if (set != NULL)
        return 0;
    set = &c->sets[0];
    for (int i = 1; i < MAX_SHAPES; i++)
        if (!c->sets[i].used || (set->used && c->sets[i].stamp < set->stamp))
            set = &c->sets[i];
    set_free(set);
    rc = build_pass(c->h, &s, false, false, &set->fwd);
    if (rc == 0 && build_pass(c->h, &s, true, false, &set->bwd) < 0)
        rc = build_pass(c->h, &s, true, true, &set->bwd);
    if (rc < 0) {
        set_free(set);
        return rc;
    }
    set->used = true;
    set->B = B, set->T = T, set->C = C, set->NH = NH, set->dt = dt;
    set->stamp = ++c->clock;
    rc = grow_scratch(g);
    if (rc < 0) {
        set_free(set);
        return rc;
    }
    snprintf(
        c->engine, sizeof(c->engine),
        "cuDNN %zu: forward engine %lld%s, backward engine %lld%s%s, %.1f MiB scratch",
        cudnnGetVersion(), (long long)set->fwd.engine, set->fwd.nondet ? " (nondeterministic)" : "",
        (long long)set->bwd.engine, set->bwd.nondet ? " (nondeterministic)" : "",
        set->bwd.dq_accum ? " with dQ summed in fp32" : "", (double)c->scratch_bytes / (1 << 20));
    return 0;
}

extern "C" bool gs_kern_gpu_attention_on_cudnn(const struct gs_kern_gpu *g, int B, int T, int C,
                                               int NH, enum gs_kern_dtype dt)
{
    return g != NULL && find_set(g->cudnn, B, T, C, NH, dt) != NULL;
}

extern "C" const char *gs_kern_gpu_attention_engine(const struct gs_kern_gpu *g)
{
    return g != NULL && g->cudnn != NULL ? g->cudnn->engine : "";
}

extern "C" size_t gs_kern_gpu_attention_scratch_bytes(const struct gs_kern_gpu *g)
{
    return g != NULL && g->cudnn != NULL ? g->cudnn->scratch_bytes : 0;
}

/* --- running --------------------------------------------------------------------------------- */

bool gs_kern_gpu_cudnn_takes(const struct gs_kern_gpu *g, int B, int T, int C, int NH,
                             enum gs_kern_dtype dt, const void *const *ptrs, int nptrs)
{
    if (g->cudnn == NULL || find_set(g->cudnn, B, T, C, NH, dt) == NULL)
        return false;
    for (int i = 0; i < nptrs; i++)
        if ((uintptr_t)ptrs[i] % 16 != 0)
            return false;
    return true;
}

/* Runs plan p with the tensors ids[i] at ptrs[i] and workspace ws. */
static int execute(struct gs_kern_cudnn *c, const struct plan *p, int n, const int64_t *ids,
                   void **ptrs, void *ws, const char *pass)
{
    cudnnBackendDescriptor_t vp = NULL;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    char detail[256] = "";

    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                                      ids);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                      &ws);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendFinalize(vp);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendExecute(c->h, p->exec, vp);
    if (vp != NULL)
        cudnnBackendDestroyDescriptor(vp);
    if (st == CUDNN_STATUS_SUCCESS)
        return 0;
    cudnnGetLastErrorString(detail, sizeof(detail));
    return gs_kern_dev_fail(-EIO, "cuDNN attention %s: %s%s%s", pass, cudnnGetErrorString(st),
                            detail[0] != '\0' ? ": " : "", detail);
}

int gs_kern_gpu_cudnn_fwd(struct gs_kern_gpu *g, void *out, float *lse, const void *qkv, int B,
                          int T, int C, int NH, enum gs_kern_dtype dt)
{
    struct shape_plans *set = find_set(g->cudnn, B, T, C, NH, dt);
    char *base = (char *)qkv;
    size_t row = (size_t)C * gs_kern_dtype_size(dt);
    float scale = 1.0f / sqrtf((float)(C / NH)), neg_inf = -INFINITY;
    int64_t ids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_NEG_INF};
    void *ptrs[] = {base, base + row, base + 2 * row, out, lse, &scale, &neg_inf};

    set->stamp = ++g->cudnn->clock;
    return execute(g->cudnn, &set->fwd, 7, ids, ptrs, g->cudnn->scratch, "forward");
}

int gs_kern_gpu_cudnn_bwd(struct gs_kern_gpu *g, void *dqkv, const void *dout, const void *out,
                          const float *lse, const void *qkv, int B, int T, int C, int NH,
                          enum gs_kern_dtype dt)
{
    struct gs_kern_cudnn *c = g->cudnn;
    struct shape_plans *set = find_set(c, B, T, C, NH, dt);
    char *base = (char *)qkv, *dbase = (char *)dqkv, *scratch = (char *)c->scratch;
    size_t row = (size_t)C * gs_kern_dtype_size(dt), accum_off;
    size_t front = front_bytes(set, &accum_off);
    float scale = 1.0f / sqrtf((float)(C / NH)), neg_inf = -INFINITY, one = 1.0f;
    int64_t ids[] = {UID_Q,       UID_K,   UID_V,           UID_O,       UID_DO,
                     UID_STATS,   UID_DQ,  UID_DK,          UID_DV,      UID_SCALE,
                     UID_NEG_INF, UID_ONE, UID_SOFTMAX_SUM, UID_DQ_ACCUM};
    void *ptrs[] = {base,        base + row, base + 2 * row, (void *)out,        (void *)dout,
                    (void *)lse, dbase,      dbase + row,    dbase + 2 * row,    &scale,
                    &neg_inf,    &one,       scratch,        scratch + accum_off};

    set->stamp = ++c->clock;
    return execute(c, &set->bwd, set->bwd.dq_accum ? 14 : 13, ids, ptrs, scratch + front,
                   "backward");
}
