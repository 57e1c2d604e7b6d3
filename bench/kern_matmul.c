/*
 * kern_matmul.c: GFLOP/s of the trainer's CPU matmul (kernels/matmul_cpu.c) against a
 * straightforward triple loop, in the same run, for the Linear shapes of the reference model
 * (N = B*T = 2048 rows, C = 384): qkv (OC 1152), attention projection (384), MLP up (1536),
 * LM head (256), and the MLP down projection (C 1536 -> 384). Each shape is timed for the
 * forward product, the dinp product (dout . W) and the dW product (dout^T . inp), in fp32 and
 * bf16, on every OpenMP thread (OMP_NUM_THREADS to change).
 *
 *     kern_matmul [REPEATS]      default 5: the best of REPEATS runs of the blocked kernel
 *                                 is reported, the baseline runs once
 *
 * The baseline is the plain loop nest a first C trainer has (llm.c's naive CPU matmul):
 * OpenMP over output rows, an inner dot product, converting 16-bit inputs element by element.
 * dinp is timed as the best full backward call minus the best call with dinp NULL (dW only).
 * A register-resident FMA loop on every thread, first, gives the attainable peak to compare,
 * and a vdpbf16ps loop the same for bf16 where the CPU has AVX512-BF16 (the matmul's bf16
 * path there). There each bf16 shape is timed a second time on the float AVX-512 kernel
 * (GSCHED_KERN_ISA=avx512, set and cleared around it), for the dot / float ratio.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#define OMP_FOR _Pragma("omp parallel for schedule(static)")
#define OMP_PAR_SUM(x) _Pragma("omp parallel for schedule(static, 1) reduction(+ : sink)")
#else
#define OMP_FOR
#define OMP_PAR_SUM(x)
#endif

#include "kernels/dtype.h"
#include "kernels/ops.h"

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 10 || defined(__clang__))
#include <immintrin.h>
#define HAVE_BF16_PROBE 1
#else
#define HAVE_BF16_PROBE 0
#endif

struct shape {
    const char *name;
    int n, c, oc;
};

static const struct shape shapes[] = {
    {"qkv", 2048, 384, 1152},   {"attproj", 2048, 384, 384}, {"fc", 2048, 384, 1536},
    {"lmhead", 2048, 384, 256}, {"fcproj", 2048, 1536, 384},
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill(void *p, size_t n, enum gs_kern_dtype dt, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        gs_kern_store(p, i, dt, (float)((double)(seed >> 11) / 9007199254740992.0 - 0.5));
    }
}

static void naive_fwd(void *out, const void *inp, const void *w, int N, int C, int OC,
                      enum gs_kern_dtype dt)
{
    OMP_FOR
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            float s = 0.0f;

            for (int c = 0; c < C; c++)
                s += gs_kern_load(inp, (size_t)n * C + c, dt) *
                     gs_kern_load(w, (size_t)o * C + c, dt);
            gs_kern_store(out, (size_t)n * OC + o, dt, s);
        }
}

static void naive_dinp(void *dinp, const void *dout, const void *w, int N, int C, int OC,
                       enum gs_kern_dtype dt)
{
    OMP_FOR
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            float s = 0.0f;

            for (int o = 0; o < OC; o++)
                s += gs_kern_load(dout, (size_t)n * OC + o, dt) *
                     gs_kern_load(w, (size_t)o * C + c, dt);
            gs_kern_store(dinp, (size_t)n * C + c, dt, s);
        }
}

static void naive_dw(float *dw, const void *dout, const void *inp, int N, int C, int OC,
                     enum gs_kern_dtype dt)
{
    OMP_FOR
    for (int o = 0; o < OC; o++)
        for (int c = 0; c < C; c++) {
            float s = 0.0f;

            for (int n = 0; n < N; n++)
                s += gs_kern_load(dout, (size_t)n * OC + o, dt) *
                     gs_kern_load(inp, (size_t)n * C + c, dt);
            dw[(size_t)o * C + c] += s;
        }
}

/* The machine's attainable FMA rate, measured in the same run: every thread runs 16
 * independent register-resident FMA chains (what the matmul's 8 x 32 microkernel holds),
 * so "blocked / probe" is the fraction of peak the matmul reaches. AVX-512 only; 0 when the
 * CPU lacks it. */
typedef float v16sf __attribute__((vector_size(64)));

#if defined(__x86_64__)
__attribute__((target("avx512f,fma"))) static float fma_chains(long iters)
{
    v16sf acc[16], mul, add;
    float sum = 0.0f;

    for (int i = 0; i < 16; i++)
        acc[i] = (v16sf){0} + 0.1f * (float)i + 0.03f;
    mul = (v16sf){0} + 0.999f;
    add = (v16sf){0} + 0.001f;
    for (long k = 0; k < iters; k++)
        for (int i = 0; i < 16; i++)
            acc[i] = acc[i] * mul + add;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            sum += acc[i][j];
    return sum;
}
#endif

/* The same with 16 vdpbf16ps chains: 64 flops per instruction (16 lanes, 2 products). */
#if HAVE_BF16_PROBE
__attribute__((target("avx512f,avx512bf16"))) static float dot_chains(long iters)
{
    __m512 acc[16];
    __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80); /* (1.0, 1.0) */
    __m512bh b = (__m512bh)_mm512_set1_epi32(0x33803380); /* tiny: no overflow */
    float sum = 0.0f;

    for (int i = 0; i < 16; i++)
        acc[i] = _mm512_set1_ps(0.1f * (float)i);
    for (long k = 0; k < iters; k++)
        for (int i = 0; i < 16; i++)
            acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    for (int i = 0; i < 16; i++)
        sum += _mm512_reduce_add_ps(acc[i]);
    return sum;
}
#endif

/* Whether the CPU runs vdpbf16ps (and so the matmul's bf16 dot-product path). */
static bool bf16_probe_ok(void)
{
#if HAVE_BF16_PROBE
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

static double bf16_probe(int threads)
{
    const long iters = 20000000;
    double best = 1e30;
    float sink = 0.0f;

#if HAVE_BF16_PROBE
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16"))
        return 0.0;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s(), dt;

        OMP_PAR_SUM(sink)
        for (int t = 0; t < threads; t++)
            sink += dot_chains(iters);
        dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
#endif
    if (sink == 12345.0f)
        printf("\n");
    return (double)threads * iters * 16 * 64 / best * 1e-9;
}

static double peak_probe(int threads)
{
    const long iters = 20000000;
    double t0, best = 1e30;
    float sink = 0.0f;

#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f"))
        return 0.0;
    for (int r = 0; r < 3; r++) {
        double dt;

        t0 = now_s();
        OMP_PAR_SUM(sink)
        for (int t = 0; t < threads; t++)
            sink += fma_chains(iters);
        dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
#endif
    if (sink == 12345.0f) /* keeps the loops from being discarded */
        printf("\n");
    return (double)threads * iters * 16 * 16 * 2 / best * 1e-9;
}

struct bufs {
    void *inp, *w, *out, *dout, *dinp, *ws;
    float *dw;
    size_t ws_bytes;
};

/* Seconds for the three blocked products (best of `repeats`) and, with `naive`, the three
 * baseline ones (one run each: the triple loop is slow and steady), in t[0..2] and t[3..5]. */
static int time_shape(const struct shape *s, enum gs_kern_dtype dt, int repeats,
                      const struct bufs *b, bool naive, double t[6])
{
    double full = 1e30;

    for (int k = 0; k < 3; k++)
        t[k] = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0, t1, t2, t3;
        int rc;

        t0 = now_s();
        rc = gs_kern_matmul_fwd(b->out, b->inp, b->w, NULL, s->n, s->c, s->oc, dt, b->ws,
                                b->ws_bytes);
        t1 = now_s();
        rc |= gs_kern_matmul_bwd(NULL, b->dw, NULL, b->dout, b->inp, b->w, s->n, s->c, s->oc, dt,
                                 b->ws, b->ws_bytes);
        t2 = now_s();
        rc |= gs_kern_matmul_bwd(b->dinp, b->dw, NULL, b->dout, b->inp, b->w, s->n, s->c, s->oc, dt,
                                 b->ws, b->ws_bytes);
        t3 = now_s();
        if (rc != 0)
            return -EIO;
        t[0] = t1 - t0 < t[0] ? t1 - t0 : t[0];
        t[2] = t2 - t1 < t[2] ? t2 - t1 : t[2];
        full = t3 - t2 < full ? t3 - t2 : full;
    }
    t[1] = full - t[2]; /* best full backward minus best dW-only: the dinp product */
    if (!naive)
        return 0;
    t[3] = now_s();
    naive_fwd(b->out, b->inp, b->w, s->n, s->c, s->oc, dt);
    t[4] = now_s();
    naive_dinp(b->dinp, b->dout, b->w, s->n, s->c, s->oc, dt);
    t[5] = now_s();
    naive_dw(b->dw, b->dout, b->inp, s->n, s->c, s->oc, dt);
    t[3] = t[4] - t[3];
    t[4] = t[5] - t[4];
    t[5] = now_s() - t[5];
    return 0;
}

/* One dtype over every shape. bf16, where the CPU has AVX512-BF16 and GSCHED_KERN_ISA is
 * unset, is also timed on the float AVX-512 kernel, shape by shape right after the dot
 * product path, so the two columns see the same machine load. */
static int run(enum gs_kern_dtype dt, int repeats)
{
    bool float_too = dt == GS_KERN_BF16 && getenv("GSCHED_KERN_ISA") == NULL && bf16_probe_ok();
    static const char *ops[3] = {"fwd", "dinp", "dw"};
    size_t big = 2048 * 1536;
    size_t es = gs_kern_dtype_size(dt);
    struct bufs b = {0};
    int rc = 0;

    b.ws_bytes = gs_kern_matmul_ws_bytes(2048, 1536, 1536);
    b.inp = malloc(big * es);
    b.w = malloc(big * es);
    b.out = malloc(big * 4 * es);
    b.dout = malloc(big * 4 * es);
    b.dinp = malloc(big * es);
    b.dw = calloc(big, sizeof(float));
    b.ws = malloc(b.ws_bytes);
    if (!b.inp || !b.w || !b.out || !b.dout || !b.dinp || !b.dw || !b.ws) {
        rc = -ENOMEM;
        goto out;
    }
    fill(b.inp, big, dt, 1);
    fill(b.w, big, dt, 2);
    fill(b.dout, big * 4, dt, 3);
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const struct shape *s = &shapes[i];
        double flop = 2.0 * s->n * s->c * s->oc, t[6], alt[6];

        rc = time_shape(s, dt, repeats, &b, true, t);
        if (rc == 0 && float_too) {
            setenv("GSCHED_KERN_ISA", "avx512", 1);
            rc = time_shape(s, dt, repeats, &b, false, alt);
            unsetenv("GSCHED_KERN_ISA");
        }
        if (rc < 0)
            goto out;
        for (int k = 0; k < 3; k++) {
            char fl[64] = "-";

            if (float_too)
                snprintf(fl, sizeof(fl), "%.1f | %.2fx", flop / alt[k] * 1e-9, alt[k] / t[k]);
            else
                snprintf(fl, sizeof(fl), "- | -");
            printf("| %s | %s N=%d C=%d OC=%d | %s | %.1f | %.1f | %.1fx | %s |\n",
                   dt == GS_KERN_F32 ? "fp32" : "bf16", s->name, s->n, s->c, s->oc, ops[k],
                   flop / t[k] * 1e-9, flop / t[k + 3] * 1e-9, t[k + 3] / t[k], fl);
        }
    }
out:
    free(b.inp);
    free(b.w);
    free(b.out);
    free(b.dout);
    free(b.dinp);
    free(b.dw);
    free(b.ws);
    return rc;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 5;
    int threads = 1;

    if (repeats < 1) {
        fprintf(stderr, "usage: kern_matmul [REPEATS]\n");
        return 2;
    }
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    printf("kern_matmul: threads=%d repeats=%d (blocked: best of)\n", threads, repeats);
    printf("fma probe: %.1f GFLOP/s (16 AVX-512 FMA chains per thread, all threads)\n",
           peak_probe(threads));
    printf("bf16 dot probe: %.1f GFLOP/s (16 vdpbf16ps chains per thread, all threads; 0: none)\n",
           bf16_probe(threads));
    printf("GSCHED_KERN_ISA=%s\n", getenv("GSCHED_KERN_ISA") ? getenv("GSCHED_KERN_ISA") : "");
    printf(
        "| dtype | shape | product | blocked GFLOP/s | naive GFLOP/s | ratio | bf16 on the float "
        "kernel GFLOP/s | dot / float |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    if (run(GS_KERN_F32, repeats) < 0 || run(GS_KERN_BF16, repeats) < 0) {
        fprintf(stderr, "kern_matmul: kernel failed\n");
        return 1;
    }
    return 0;
}
