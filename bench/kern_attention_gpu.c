/*
 * kern_attention_gpu.c: the GPU attention kernels' speed at one layer of GPT-2 124M's shape
 * (B 16, T 1024, 12 heads of 64 channels, bf16): milliseconds a call and TFLOP/s of the
 * Tensor-Core kernels (kernels/attention_tc.cu) and, as the baseline in the same run, of the
 * SIMT kernels (kernels/attention.cu), forward and backward; then whether the two agree on
 * out and dqkv (bf16 tolerances of tests/kernels/test_gpu_gemm.c). Where the build has
 * cuDNN, a second line does the same for cuDNN's fused attention (kernels/attention_cudnn.cu)
 * against the Tensor-Core kernels, or says why cuDNN refused the shapes.
 *
 *     kern_attention_gpu [B T C NH [REPEATS]]     default 16 1024 768 12, REPEATS 20
 *
 * FLOPs are counted as FlashAttention counts them: the causal forward is 2 T^2 hs per
 * (batch, head) (Q K^T and P V over the lower triangle), the backward 2.5 times that. The
 * times are the host's around REPEATS calls and a sync, after one call to warm up. Exits 2
 * with "no CUDA device" where there is none (bench/gpu_check.sh runs it on a GPU), 1 when
 * the paths disagree or a call fails.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/device.h"
#include "kernels/dtype.h"
#include "kernels/gpu.h"

#define DT GS_KERN_BF16

struct bufs {
    void *qkv, *dout, *out, *dqkv, *ws;
    float *lse;
};

struct timing {
    double fwd_ms, bwd_ms;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n values in [-scale, scale) of dtype DT, copied to a new device buffer *ret. */
static int upload_random(size_t n, float scale, uint64_t seed, void **ret)
{
    uint16_t *h = malloc(n * sizeof(*h));
    int rc;

    if (h == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        gs_kern_store(h, i, DT, scale * (float)((double)(seed >> 11) / 4503599627370496.0 - 1.0));
    }
    rc = gs_kern_dev_alloc(n * sizeof(*h), ret);
    if (rc == 0)
        rc = gs_kern_dev_copy_to(*ret, h, n * sizeof(*h));
    free(h);
    return rc;
}

struct shape {
    int B, T, C, NH;
};

static int fwd(struct gs_kern_gpu *g, const struct bufs *b, const struct shape *s)
{
    return gs_kern_gpu_attention_fwd(g, b->out, b->lse, b->qkv, s->B, s->T, s->C, s->NH, DT);
}

static int bwd(struct gs_kern_gpu *g, const struct bufs *b, const struct shape *s)
{
    return gs_kern_gpu_attention_bwd(g, b->dqkv, b->dout, b->out, b->lse, b->qkv, s->B, s->T, s->C,
                                     s->NH, DT);
}

enum path { TC, SIMT, CUDNN };

/* One forward and one backward on path p, waited for. */
static int once(struct gs_kern_gpu *g, const struct bufs *b, const struct shape *s, enum path p)
{
    int rc;

    gs_kern_gpu_set_attention_simt(g, p == SIMT);
    rc = gs_kern_gpu_set_attention_cudnn(g, p == CUDNN);
    if (rc == 0 && p == CUDNN)
        rc = gs_kern_gpu_attention_prepare(g, s->B, s->T, s->C, s->NH, DT);
    if (rc == 0)
        rc = fwd(g, b, s);
    if (rc == 0)
        rc = bwd(g, b, s);
    return rc == 0 ? gs_kern_gpu_sync(g) : rc;
}

/* The mean milliseconds of a forward and of a backward call, on path p, after one of each to
 * warm up. */
static int time_path(struct gs_kern_gpu *g, const struct bufs *b, const struct shape *s, int reps,
                     enum path p, struct timing *ret)
{
    int (*const pass[2])(struct gs_kern_gpu *, const struct bufs *, const struct shape *) = {fwd,
                                                                                             bwd};
    double *ms[2] = {&ret->fwd_ms, &ret->bwd_ms};
    int rc = once(g, b, s, p);

    for (int k = 0; k < 2 && rc == 0; k++) {
        double t0 = now_s();

        for (int i = 0; i < reps && rc == 0; i++)
            rc = pass[k](g, b, s);
        if (rc == 0)
            rc = gs_kern_gpu_sync(g);
        *ms[k] = (now_s() - t0) * 1e3 / reps;
    }
    return rc;
}

/* The number of elements of got outside |got - want| <= 2^-7 |want| + 5e-3 max(1, max |want|). */
static size_t count_off(const uint16_t *got, const uint16_t *want, size_t n)
{
    double scale = 1.0;
    size_t off = 0;

    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(gs_kern_load(want, i, DT)));
    for (size_t i = 0; i < n; i++) {
        double w = gs_kern_load(want, i, DT), d = fabs(gs_kern_load(got, i, DT) - w);

        off += !(d <= fabs(w) / 128.0 + 5e-3 * scale);
    }
    return off;
}

/* Runs path p once and copies out and dqkv back into host buffers. */
static int results(struct gs_kern_gpu *g, const struct bufs *b, const struct shape *s, enum path p,
                   uint16_t *out, uint16_t *dqkv)
{
    size_t n = (size_t)s->B * s->T * s->C;
    int rc = once(g, b, s, p);

    if (rc == 0)
        rc = gs_kern_dev_copy_from(out, b->out, n * 2);
    if (rc == 0)
        rc = gs_kern_dev_copy_from(dqkv, b->dqkv, 3 * n * 2);
    return rc;
}

int main(int argc, char **argv)
{
    int B = 16, T = 1024, C = 768, NH = 12, reps = 20, ndev = 0, rc;
    struct gs_kern_gpu *g = NULL;
    struct bufs b = {0};
    struct timing tc, simt;
    struct shape sh;
    uint16_t *out_tc = NULL, *out_simt = NULL, *dqkv_tc = NULL, *dqkv_simt = NULL;
    size_t n, ws_bytes, off_out, off_dqkv;
    double flop;

    if (argc >= 5) {
        B = atoi(argv[1]), T = atoi(argv[2]), C = atoi(argv[3]), NH = atoi(argv[4]);
        if (argc >= 6)
            reps = atoi(argv[5]);
    }
    if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0 || reps <= 0) {
        fprintf(stderr, "usage: kern_attention_gpu [B T C NH [REPEATS]] (C a multiple of NH)\n");
        return 1;
    }
    if (gs_kern_dev_count(&ndev) != 0 || ndev == 0) {
        printf("kern_attention_gpu: no CUDA device\n");
        return 2;
    }
    sh = (struct shape){B, T, C, NH};
    n = (size_t)B * T * C;
    ws_bytes = gs_kern_gpu_ws_bytes(B, T, C, NH, C, 1);
    rc = gs_kern_gpu_new(0, &g);
    if (rc == 0)
        rc = upload_random(3 * n, 1.5f, 31, &b.qkv);
    if (rc == 0)
        rc = upload_random(n, 1.0f, 32, &b.dout);
    if (rc == 0)
        rc = gs_kern_dev_alloc(n * 2, &b.out);
    if (rc == 0)
        rc = gs_kern_dev_alloc(3 * n * 2, &b.dqkv);
    if (rc == 0)
        rc = gs_kern_dev_alloc((size_t)B * NH * T * sizeof(float), (void **)&b.lse);
    if (rc == 0)
        rc = gs_kern_dev_alloc(ws_bytes, &b.ws);
    if (rc != 0)
        goto out;
    gs_kern_gpu_set_workspace(g, b.ws, ws_bytes);
    rc = time_path(g, &b, &sh, reps, TC, &tc);
    if (rc == 0)
        rc = time_path(g, &b, &sh, reps, SIMT, &simt);
    if (rc != 0)
        goto out;
    out_tc = malloc(n * 2), out_simt = malloc(n * 2);
    dqkv_tc = malloc(3 * n * 2), dqkv_simt = malloc(3 * n * 2);
    if (!out_tc || !out_simt || !dqkv_tc || !dqkv_simt) {
        rc = -ENOMEM;
        goto out;
    }
    rc = results(g, &b, &sh, TC, out_tc, dqkv_tc);
    if (rc == 0)
        rc = results(g, &b, &sh, SIMT, out_simt, dqkv_simt);
    if (rc != 0)
        goto out;
    off_out = count_off(out_tc, out_simt, n);
    off_dqkv = count_off(dqkv_tc, dqkv_simt, 3 * n);
    flop = 2.0 * B * NH * (double)T * T * (C / NH);
    printf("attention bf16 B=%d T=%d C=%d NH=%d: tensor-core fwd %.3f ms %.1f TFLOP/s, bwd %.3f "
           "ms %.1f TFLOP/s; simt fwd %.3f ms %.1f TFLOP/s, bwd %.3f ms %.1f TFLOP/s; "
           "tc/simt speed fwd %.2fx bwd %.2fx; tc vs simt: %zu of %zu out and %zu of %zu dqkv "
           "elements outside tolerance\n",
           B, T, C, NH, tc.fwd_ms, flop / tc.fwd_ms * 1e-9, tc.bwd_ms,
           2.5 * flop / tc.bwd_ms * 1e-9, simt.fwd_ms, flop / simt.fwd_ms * 1e-9, simt.bwd_ms,
           2.5 * flop / simt.bwd_ms * 1e-9, simt.fwd_ms / tc.fwd_ms, simt.bwd_ms / tc.bwd_ms,
           off_out, n, off_dqkv, 3 * n);
    if (off_out != 0 || off_dqkv != 0)
        rc = -EDOM;
    if (rc == 0 && gs_kern_cudnn_built()) {
        /* cuDNN against the Tensor-Core kernels, whose results are in out_tc and dqkv_tc. */
        struct timing cd;

        if (time_path(g, &b, &sh, reps, CUDNN, &cd) != 0 ||
            results(g, &b, &sh, CUDNN, out_simt, dqkv_simt) != 0) {
            printf("cudnn: refused or failed: %s\n", gs_kern_dev_last_error());
            rc = -EDOM;
            goto out;
        }
        off_out = count_off(out_simt, out_tc, n);
        off_dqkv = count_off(dqkv_simt, dqkv_tc, 3 * n);
        printf("cudnn fused attention (%s): fwd %.3f ms %.1f TFLOP/s, bwd %.3f ms %.1f TFLOP/s; "
               "cudnn/tc speed fwd %.2fx bwd %.2fx; cudnn vs tc: %zu of %zu out and %zu of %zu "
               "dqkv elements outside tolerance\n",
               gs_kern_gpu_attention_engine(g), cd.fwd_ms, flop / cd.fwd_ms * 1e-9, cd.bwd_ms,
               2.5 * flop / cd.bwd_ms * 1e-9, tc.fwd_ms / cd.fwd_ms, tc.bwd_ms / cd.bwd_ms, off_out,
               n, off_dqkv, 3 * n);
        if (off_out != 0 || off_dqkv != 0)
            rc = -EDOM;
    }
out:
    if (rc != 0 && rc != -EDOM)
        fprintf(stderr, "kern_attention_gpu: %s (%s)\n", strerror(-rc), gs_kern_dev_last_error());
    free(out_tc), free(out_simt), free(dqkv_tc), free(dqkv_simt);
    gs_kern_dev_free(b.qkv), gs_kern_dev_free(b.dout), gs_kern_dev_free(b.out);
    gs_kern_dev_free(b.dqkv), gs_kern_dev_free(b.lse), gs_kern_dev_free(b.ws);
    gs_kern_gpu_free(g);
    return rc == 0 ? 0 : 1;
}
