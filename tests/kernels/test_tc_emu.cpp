/*
 * test_tc_emu.cpp: the Tensor-Core attention kernels of kernels/attention_tc.cu, run on the
 * CPU under warp_emu (one fiber per GPU thread, mma.sync, ldmatrix and cp.async emulated),
 * against the CPU twin (ops.h) on the same rounded inputs, with test_gpu_gemm.c's
 * tolerances. This is how those kernels are tested where there is no GPU: it checks their
 * indexing, masking, tiling, barriers and the ordering of their asynchronous copies, not
 * the hardware's rounding or speed (bench/gpu_check.sh runs them on a GPU).
 *
 * Every shape runs twice: cp.async data landing only when waited for, and landing at once.
 * Built only with the CUDA toolkit's headers (the kernels' code includes them).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "warp_emu.h"

/* CUDA's keywords and built-ins, for the kernels' code compiled as host C++. */
#define __host__
#define __device__
#define __global__
#define __shared__ static
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
/* after CUDA's headers, which have struct fields of these names */
#define threadIdx gs_emu_thread_idx()
#define blockIdx gs_emu_block_idx()
#define gridDim gs_emu_grid_dim()
#define blockDim (gs_emu_dim3{128, 1, 1})
#define __syncthreads() gs_emu_syncthreads()
#define __shfl_xor_sync(mask, v, off) gs_emu_shfl_xor((v), (off))
#include "kernels/gpu_internal.h"
#undef __launch_bounds__
#define __launch_bounds__(...)
#define GS_KERN_EMULATE 1
#include "kernels/attention_tc.cu"

extern "C" {
#include "kernels/ops.h"
#include "kref.h"
}

struct tol {
    double rel, abs;
};

static struct tol att_tol(enum gs_kern_dtype dt)
{
    return dt == GS_KERN_BF16 ? tol{1.0 / 128, 5e-3} : tol{1.0 / 1024, 5e-4};
}

/* |got - want| <= rel |want| + abs max(1, max |want|), element-wise. */
static void check_vs(const float *got, const float *want, size_t n, struct tol t, const char *what)
{
    double scale = 1.0;

    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]),
               lim = t.rel * fabs((double)want[i]) + t.abs * scale;

        cr_assert(d <= lim, "%s[%zu]: emulated %.9g, CPU %.9g (|diff| %.3g > %.3g)", what, i,
                  (double)got[i], (double)want[i], d, lim);
    }
}

struct emu_run {
    tc_args a;
};

template <int DT, int D> static void fwd_body(void *p)
{
    att_tc_fwd<DT, D>(((struct emu_run *)p)->a);
}

template <int DT, int D> static void bwd_kv_body(void *p)
{
    att_tc_bwd_kv<DT, D>(((struct emu_run *)p)->a);
}

template <int DT, int D> static void bwd_q_body(void *p)
{
    att_tc_bwd_q<DT, D>(((struct emu_run *)p)->a);
}

static void launch(void (*body)(void *), struct emu_run *r, int B, const char *what)
{
    struct gs_emu_dim3 grid = {(unsigned)(B * r->a.NH),
                               (unsigned)((r->a.T + TC_ROWS - 1) / TC_ROWS), 1};
    int rc = gs_emu_launch(grid, TC_THREADS, body, r);

    cr_assert_eq(rc, 0, "%s: %s", what, gs_emu_error());
}

template <int DT, int D> static void run_tc(struct emu_run *r, int B, bool backward)
{
    if (!backward) {
        launch(fwd_body<DT, D>, r, B, "forward");
        return;
    }
    launch(bwd_kv_body<DT, D>, r, B, "backward dK dV");
    launch(bwd_q_body<DT, D>, r, B, "backward dQ");
}

template <int DT> static void run_dt(struct emu_run *r, int B, bool backward)
{
    if (r->a.hs <= 32)
        run_tc<DT, 32>(r, B, backward);
    else
        run_tc<DT, 64>(r, B, backward);
}

static void check_shape(int B, int T, int C, int NH, enum gs_kern_dtype dt,
                        enum gs_emu_copy_mode mode)
{
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C, nl = (size_t)B * NH * T;
    size_t ws_bytes = gs_kern_attention_ws_bytes(T, C, NH);
    int hs = C / NH;
    float *qkv = (float *)malloc(n3 * sizeof(float)), *dout = (float *)malloc(n * sizeof(float));
    float *att = (float *)calloc((size_t)B * NH * T * T, sizeof(float));
    float *lse = (float *)malloc(nl * sizeof(float)), *dvec = (float *)malloc(nl * sizeof(float));
    void *ws = malloc(ws_bytes), *qkv_d, *dout_d, *out_cpu, *dqkv_cpu, *out_emu, *dqkv_emu;
    float *want_out, *want_dqkv, *got_out, *got_dqkv;
    double *lse_want;
    struct emu_run r = {tc_make(T, C, NH)};

    cr_assert(qkv && dout && att && lse && dvec && ws);
    kref_fill(qkv, n3, 1.5f, 31);
    kref_fill(dout, n, 1.0f, 32);
    kref_round_inplace(qkv, n3, dt);
    kref_round_inplace(dout, n, dt);
    qkv_d = kref_to_dtype(qkv, n3, dt);
    dout_d = kref_to_dtype(dout, n, dt);
    out_cpu = calloc(n, 2), dqkv_cpu = calloc(n3, 2), out_emu = calloc(n, 2);
    dqkv_emu = malloc(n3 * 2);
    cr_assert(out_cpu && dqkv_cpu && out_emu && dqkv_emu);
    memset(dqkv_emu, 0xff, n3 * 2); /* NaN: every element must be written */

    cr_assert_eq(gs_kern_attention_fwd(out_cpu, att, qkv_d, B, T, C, NH, dt, ws, ws_bytes), 0);
    cr_assert_eq(gs_kern_attention_bwd(dqkv_cpu, dout_d, att, qkv_d, B, T, C, NH, dt, ws, ws_bytes),
                 0);

    gs_emu_set_copy_mode(mode);
    r.a.qkv = (const uint16_t *)qkv_d, r.a.o = (uint16_t *)out_emu, r.a.lse = lse;
    if (dt == GS_KERN_BF16)
        run_dt<GS_KERN_BF16>(&r, B, false);
    else
        run_dt<GS_KERN_F16>(&r, B, false);
    got_out = kref_from_dtype(out_emu, n, dt);
    /* D = dout . out over each head's channels, from the stored out, as attention.cu does */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                float d = 0.0f;

                for (int c = 0; c < hs; c++) {
                    size_t i = ((size_t)b * T + t) * C + (size_t)h * hs + c;

                    d += dout[i] * got_out[i];
                }
                dvec[((size_t)b * NH + h) * T + t] = d;
            }
    r.a.dout = (const uint16_t *)dout_d, r.a.dqkv = (uint16_t *)dqkv_emu;
    r.a.lse_in = lse, r.a.dvec = dvec;
    if (dt == GS_KERN_BF16)
        run_dt<GS_KERN_BF16>(&r, B, true);
    else
        run_dt<GS_KERN_F16>(&r, B, true);

    want_out = kref_from_dtype(out_cpu, n, dt);
    want_dqkv = kref_from_dtype(dqkv_cpu, n3, dt);
    got_dqkv = kref_from_dtype(dqkv_emu, n3, dt);
    check_vs(got_out, want_out, n, att_tol(dt), "out");
    lse_want = kref_attention_lse(qkv, B, T, C, NH);
    for (size_t i = 0; i < nl; i++)
        cr_assert(fabs(lse[i] - lse_want[i]) <= 1e-5 * fmax(1.0, fabs(lse_want[i])),
                  "lse[%zu]: emulated %.9g, float64 %.9g", i, (double)lse[i], lse_want[i]);
    check_vs(got_dqkv, want_dqkv, n3, att_tol(dt), "dqkv");
    free(qkv), free(dout), free(att), free(lse), free(dvec), free(ws);
    free(qkv_d), free(dout_d), free(out_cpu), free(dqkv_cpu), free(out_emu), free(dqkv_emu);
    free(want_out), free(want_dqkv), free(got_out), free(got_dqkv), free(lse_want);
}

/* The shapes of test_gpu_gemm.c's attention tests (hs 32 over a ragged T, hs 64 over whole
 * and ragged tiles) and hs 48 (channels past hs zero-filled), both copy orders. */
static void check_dtype(enum gs_kern_dtype dt)
{
    for (int m = 0; m < 2; m++) {
        enum gs_emu_copy_mode mode = m == 0 ? GS_EMU_COPY_AT_WAIT : GS_EMU_COPY_AT_ISSUE;

        check_shape(2, 67, 96, 3, dt, mode);
        check_shape(1, 256, 128, 2, dt, mode);
        check_shape(1, 200, 256, 4, dt, mode);
        check_shape(1, 130, 96, 2, dt, mode);
    }
}

Test(tc_emu, attention_bf16_matches_cpu, .timeout = 240)
{
    check_dtype(GS_KERN_BF16);
}

Test(tc_emu, attention_fp16_matches_cpu, .timeout = 240)
{
    check_dtype(GS_KERN_F16);
}
