/*
 * attention_cpu.c: causal multi-head self-attention from the fused qkv tensor [B,T,3C]
 * (q at channel 0, k at C, v at 2C; head h owns channels h*hs..(h+1)*hs of each).
 *
 * The forward pass saves the softmax probabilities att [B,NH,T,T] in float, which is all the
 * backward pass needs besides qkv; recomputing them would save B*NH*T*T floats per layer at
 * the cost of a second QK^T. Work is split by (batch, head): one thread takes a whole head,
 * converts its K and V to float in its workspace once, and runs every query row in order.
 * In the backward pass dK and dV sum over query rows: each row's score gradients and
 * probabilities are kept (transposed) in the workspace, and once every row is done each
 * position's dK and dV are summed over rows in increasing order and rounded once, so the
 * bits do not depend on the thread count. Workspace: 6*T*hs + 2*T*T floats per thread.
 * The per-head loops are compiled for AVX-512, AVX2 and plain x86-64 (target_clones) and
 * vectorise across positions (scores against K and V stored transposed) or across channels;
 * each sum still runs in one fixed order, with no FMA contraction (ISO C mode), so the clones
 * give the same bits too.
 */
#include "kernels/ops.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu_internal.h"

#define CLONES GS_KERN_CLONES

struct head {
    int T, C, NH, hs;
    enum gs_kern_dtype dt;
    float scale;
    /* this thread's workspace: K and V as [T,hs] and transposed [hs,T]; for the backward
     * pass every q and dout row [T,hs] and the score gradients and probabilities transposed
     * [T,T]; one row of scores, the current q row, an output row */
    float *k, *v, *kt, *vt, *qs, *gs, *dpt, *att_t, *row, *q, *acc;
};

static size_t ws_floats(int T, int hs)
{
    return gs_kern_round_up(
        6 * (size_t)T * (size_t)hs + 2 * (size_t)T * (size_t)T + (size_t)T + 2 * (size_t)hs, 16);
}

size_t gs_kern_attention_ws_bytes(int T, int C, int NH)
{
    if (T <= 0 || C <= 0 || NH <= 0 || C % NH != 0)
        return 0;
    return ws_floats(T, C / NH) * sizeof(float) * (size_t)gs_kern_max_threads() + GS_KERN_ALIGN;
}

static void carve(struct head *h, float *mine)
{
    size_t th = (size_t)h->T * (size_t)h->hs;

    h->k = mine;
    h->v = h->k + th;
    h->kt = h->v + th;
    h->vt = h->kt + th;
    h->qs = h->vt + th;
    h->gs = h->qs + th;
    h->dpt = h->gs + th;
    h->att_t = h->dpt + (size_t)h->T * (size_t)h->T;
    h->row = h->att_t + (size_t)h->T * (size_t)h->T;
    h->q = h->row + h->T;
    h->acc = h->q + h->hs;
}

/* Row t, channels base..base+hs of a [B,T,width] tensor, to and from float. The dtype switch
 * sits outside the loops so each copy is a plain (vectorisable) conversion loop. */
#define ROW_LOOP(STMT)                                                                             \
    switch (h->dt) {                                                                               \
    case GS_KERN_F32:                                                                              \
        for (int i = 0; i < h->hs; i++)                                                            \
            STMT(GS_KERN_F32);                                                                     \
        break;                                                                                     \
    case GS_KERN_BF16:                                                                             \
        for (int i = 0; i < h->hs; i++)                                                            \
            STMT(GS_KERN_BF16);                                                                    \
        break;                                                                                     \
    case GS_KERN_F16:                                                                              \
        for (int i = 0; i < h->hs; i++)                                                            \
            STMT(GS_KERN_F16);                                                                     \
        break;                                                                                     \
    }

GS_KERN_INLINE void load_row(float *restrict dst, const void *src, size_t b, int t,
                             const struct head *h, int width, int base)
{
    size_t at = ((b * (size_t)h->T + (size_t)t) * (size_t)width) + (size_t)base;
#define LOAD_ONE(DT) dst[i] = gs_kern_load(src, at + (size_t)i, DT)
    ROW_LOOP(LOAD_ONE)
#undef LOAD_ONE
}

GS_KERN_INLINE void store_row(void *dst, const float *restrict src, size_t b, int t,
                              const struct head *h, int width, int base)
{
    size_t at = ((b * (size_t)h->T + (size_t)t) * (size_t)width) + (size_t)base;
#define STORE_ONE(DT) gs_kern_store(dst, at + (size_t)i, DT, src[i])
    ROW_LOOP(STORE_ONE)
#undef STORE_ONE
}

GS_KERN_INLINE void load_kv(struct head *h, const void *qkv, size_t b, int head)
{
    for (int t = 0; t < h->T; t++) {
        load_row(h->k + (size_t)t * h->hs, qkv, b, t, h, 3 * h->C, h->C + head * h->hs);
        load_row(h->v + (size_t)t * h->hs, qkv, b, t, h, 3 * h->C, 2 * h->C + head * h->hs);
        for (int i = 0; i < h->hs; i++) {
            h->kt[(size_t)i * h->T + t] = h->k[(size_t)t * h->hs + i];
            h->vt[(size_t)i * h->T + t] = h->v[(size_t)t * h->hs + i];
        }
    }
}

#define BLK 16

/* row[t2] = sum over i of a[i] * xt[i][t2] for t2 <= t: the dot products of a with every
 * earlier position, W positions at a time in registers (64, then 16, then one), each summed
 * over i in order, so the block width never changes a result. The 16-wide blocks may compute
 * up to 15 positions past t (row[] must hold T): cheaper than a scalar tail. */
#define SCORE_BLOCK(W, LIMIT)                                                                      \
    for (; t2 <= t && t2 + (W) <= (LIMIT); t2 += (W)) {                                            \
        float acc[W] = {0};                                                                        \
        const float *col = xt + t2;                                                                \
                                                                                                   \
        for (int i = 0; i < hs; i++, col += T)                                                     \
            for (int j = 0; j < (W); j++)                                                          \
                acc[j] += a[i] * col[j];                                                           \
        memcpy(row + t2, acc, sizeof(acc));                                                        \
    }

GS_KERN_INLINE void scores(float *restrict row, const float *restrict a, const float *restrict xt,
                           int t, int T, int hs)
{
    int t2 = 0;

    SCORE_BLOCK(64, t + 1)
    SCORE_BLOCK(16, T) /* may run past t, into row[] entries the caller ignores */
    SCORE_BLOCK(1, t + 1)
}

/* out[i] = sum over t2 in [from, to] of w[t2] * x[t2][i]: W channels at a time in registers,
 * each summed over t2 in increasing order. */
#define GATHER_BLOCK(W)                                                                            \
    for (; i0 + (W) <= hs; i0 += (W)) {                                                            \
        float acc[W] = {0};                                                                        \
        const float *col = x + (size_t)from * hs + i0;                                             \
                                                                                                   \
        for (int t2 = from; t2 <= to; t2++, col += hs) {                                           \
            float wt = w[t2];                                                                      \
                                                                                                   \
            for (int j = 0; j < (W); j++)                                                          \
                acc[j] += wt * col[j];                                                             \
        }                                                                                          \
        memcpy(out + i0, acc, sizeof(acc));                                                        \
    }

GS_KERN_INLINE void gather(float *restrict out, const float *restrict w, const float *restrict x,
                           int from, int to, int hs)
{
    int i0 = 0;

    GATHER_BLOCK(64)
    GATHER_BLOCK(16)
    GATHER_BLOCK(1)
}

/* Largest of x[0..n), in BLK lanes (max is exact, so the grouping cannot change it). */
GS_KERN_INLINE float row_max(const float *x, int n)
{
    float lane[BLK], max = -INFINITY;
    int i = 0;

    for (int j = 0; j < BLK; j++)
        lane[j] = -INFINITY;
    for (; i + BLK <= n; i += BLK)
        for (int j = 0; j < BLK; j++)
            lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
    for (; i < n; i++)
        max = x[i] > max ? x[i] : max;
    for (int j = 0; j < BLK; j++)
        max = lane[j] > max ? lane[j] : max;
    return max;
}

/* x[i] = exp(x[i] - max) and their sum, in BLK lanes added in a fixed order. */
GS_KERN_INLINE float exp_sum(float *x, int n, float max)
{
    float lane[BLK] = {0}, sum = 0.0f;
    int i = 0;

    for (; i + BLK <= n; i += BLK)
        for (int j = 0; j < BLK; j++) {
            x[i + j] = gs_kern_expf(x[i + j] - max);
            lane[j] += x[i + j];
        }
    for (; i < n; i++) {
        x[i] = gs_kern_expf(x[i] - max);
        sum += x[i];
    }
    for (int j = 0; j < BLK; j++)
        sum += lane[j];
    return sum;
}

/* One query row: att[t, 0..t] = softmax(q . k / sqrt(hs)), out = att . v. */
GS_KERN_INLINE void fwd_row(struct head *h, float *att, int t)
{
    float inv;

    scores(att, h->q, h->kt, t, h->T, h->hs);
    for (int t2 = 0; t2 <= t; t2++)
        att[t2] *= h->scale;
    inv = 1.0f / exp_sum(att, t + 1, row_max(att, t + 1));
    for (int t2 = 0; t2 <= t; t2++)
        att[t2] *= inv;
    gather(h->acc, att, h->v, 0, t, h->hs);
    for (int t2 = t + 1; t2 < h->T; t2++)
        att[t2] = 0.0f;
}

CLONES static void fwd_head(struct head *h, void *out, float *att, const void *qkv, size_t b,
                            int head)
{
    load_kv(h, qkv, b, head);
    for (int t = 0; t < h->T; t++) {
        load_row(h->q, qkv, b, t, h, 3 * h->C, head * h->hs);
        fwd_row(h, att + (size_t)t * h->T, t);
        store_row(out, h->acc, b, t, h, h->C, head * h->hs);
    }
}

static int setup(struct head *h, int B, int T, int C, int NH, enum gs_kern_dtype dt, void *ws,
                 size_t ws_bytes, int *threads)
{
    size_t per;

    if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0 || !gs_kern_dtype_ok(dt))
        return -EINVAL;
    *h = (struct head){.T = T, .C = C, .NH = NH, .hs = C / NH, .dt = dt};
    h->scale = 1.0f / sqrtf((float)h->hs);
    per = ws_floats(T, h->hs) * sizeof(float);
    if (ws == NULL || ws_bytes < per + GS_KERN_ALIGN)
        return -EINVAL;
    *threads = gs_kern_max_threads();
    if ((size_t)*threads > (ws_bytes - GS_KERN_ALIGN) / per)
        *threads = (int)((ws_bytes - GS_KERN_ALIGN) / per);
    return 0;
}

int gs_kern_attention_fwd(void *out, float *att, const void *qkv, int B, int T, int C, int NH,
                          enum gs_kern_dtype dt, void *ws, size_t ws_bytes)
{
    struct head proto;
    int threads, rc;

    if (out == NULL || att == NULL || qkv == NULL)
        return -EINVAL;
    rc = setup(&proto, B, T, C, NH, dt, ws, ws_bytes, &threads);
    if (rc < 0)
        return rc;
    GS_OMP(parallel for schedule(dynamic, 1) num_threads(threads))
    for (int bh = 0; bh < B * NH; bh++) {
        struct head h = proto;
        size_t b = (size_t)(bh / NH);
        int head = bh % NH;
        float *a = att + (size_t)bh * (size_t)T * (size_t)T;

        carve(&h, (float *)gs_kern_align_ptr(ws) + ws_floats(T, h.hs) * gs_kern_thread_num());
        fwd_head(&h, out, a, qkv, b, head);
    }
    return 0;
}

/* sum of a[i] * b[i] in BLK lanes added in a fixed order */
GS_KERN_INLINE float dot_lanes(const float *a, const float *b, int n)
{
    float lane[BLK] = {0}, sum = 0.0f;
    int i = 0;

    for (; i + BLK <= n; i += BLK)
        for (int j = 0; j < BLK; j++)
            lane[j] += a[i + j] * b[i + j];
    for (; i < n; i++)
        sum += a[i] * b[i];
    for (int j = 0; j < BLK; j++)
        sum += lane[j];
    return sum;
}

/* One query row backward: dq into acc; the score gradients and probabilities of the row go
 * into column t of the transposed [T,T] matrices, for dK and dV afterwards. */
GS_KERN_INLINE void bwd_row(struct head *h, const float *att, int t)
{
    const float *g = h->gs + (size_t)t * h->hs;
    float dsum;
    int T = h->T;

    scores(h->row, g, h->vt, t, T, h->hs); /* d att = dout . v */
    dsum = dot_lanes(att, h->row, t + 1);
    for (int t2 = 0; t2 <= t; t2++) {
        h->row[t2] = att[t2] * (h->row[t2] - dsum) * h->scale; /* d pre-softmax score */
        h->dpt[(size_t)t2 * T + t] = h->row[t2];
        h->att_t[(size_t)t2 * T + t] = att[t2];
    }
    gather(h->acc, h->row, h->k, 0, t, h->hs);
}

/* dK[t2] = sum over t >= t2 of dpre[t][t2] q[t], dV[t2] = sum of att[t][t2] dout[t], each in
 * increasing t: the order the row-by-row accumulation would have. */
CLONES static void bwd_head(struct head *h, void *dqkv, const void *dout, const float *att,
                            const void *qkv, size_t b, int head)
{
    int T = h->T, C = h->C, hs = h->hs;

    load_kv(h, qkv, b, head);
    for (int t = 0; t < T; t++) {
        load_row(h->qs + (size_t)t * hs, qkv, b, t, h, 3 * C, head * hs);
        load_row(h->gs + (size_t)t * hs, dout, b, t, h, C, head * hs);
    }
    for (int t = 0; t < T; t++) {
        bwd_row(h, att + (size_t)t * T, t);
        store_row(dqkv, h->acc, b, t, h, 3 * C, head * hs);
    }
    for (int t2 = 0; t2 < T; t2++) {
        gather(h->acc, h->dpt + (size_t)t2 * T, h->qs, t2, T - 1, hs);
        store_row(dqkv, h->acc, b, t2, h, 3 * C, C + head * hs);
        gather(h->acc, h->att_t + (size_t)t2 * T, h->gs, t2, T - 1, hs);
        store_row(dqkv, h->acc, b, t2, h, 3 * C, 2 * C + head * hs);
    }
}

int gs_kern_attention_bwd(void *dqkv, const void *dout, const float *att, const void *qkv, int B,
                          int T, int C, int NH, enum gs_kern_dtype dt, void *ws, size_t ws_bytes)
{
    struct head proto;
    int threads, rc;

    if (dqkv == NULL || dout == NULL || att == NULL || qkv == NULL)
        return -EINVAL;
    rc = setup(&proto, B, T, C, NH, dt, ws, ws_bytes, &threads);
    if (rc < 0)
        return rc;
    GS_OMP(parallel for schedule(dynamic, 1) num_threads(threads))
    for (int bh = 0; bh < B * NH; bh++) {
        struct head h = proto;
        size_t b = (size_t)(bh / NH);
        int head = bh % NH;

        carve(&h, (float *)gs_kern_align_ptr(ws) + ws_floats(T, h.hs) * gs_kern_thread_num());
        bwd_head(&h, dqkv, dout, att + (size_t)bh * (size_t)T * (size_t)T, qkv, b, head);
    }
    return 0;
}
