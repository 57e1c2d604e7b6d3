/*
 * cpu_internal.h: what the CPU kernels share and nobody else sees: OpenMP behind macros (the
 * library builds, single-threaded, without it), the thread count, and workspace carving.
 *
 * Threading: the kernels open their own OpenMP parallel regions; the caller's thread count is
 * whatever OpenMP is set to (omp_set_num_threads, OMP_NUM_THREADS). The kernels keep no state
 * between calls, so any thread may call them, one call at a time per output buffer.
 */
#ifndef GS_KERN_CPU_INTERNAL_H
#define GS_KERN_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#define GS_PRAGMA(x) _Pragma(#x)
#define GS_OMP(x) GS_PRAGMA(omp x)
static inline int gs_kern_max_threads(void)
{
    return omp_get_max_threads();
}
static inline int gs_kern_thread_num(void)
{
    return omp_get_thread_num();
}
#else
#define GS_OMP(x)
static inline int gs_kern_max_threads(void)
{
    return 1;
}
static inline int gs_kern_thread_num(void)
{
    return 0;
}
#endif

/* Workspace pieces start on cache lines so packed panels load aligned. */
#define GS_KERN_ALIGN 64

static inline size_t gs_kern_round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static inline void *gs_kern_align_ptr(void *p)
{
    uintptr_t u = (uintptr_t)p;

    return (void *)((u + GS_KERN_ALIGN - 1) & ~(uintptr_t)(GS_KERN_ALIGN - 1));
}

/* Compile a hot loop for AVX-512, AVX2 and baseline x86-64, picked at load time. Only on
 * functions without OpenMP pragmas inside: call them from the parallel loop instead. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GS_KERN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GS_KERN_CLONES
#endif

/* Whether the compiler can build the matmul's AVX512-BF16 dot-product path (GCC 10 and
 * clang 11 have the _mm512_dpbf16_ps intrinsic); whether it runs is checked at run time.
 * -DGS_KERN_HAVE_BF16_DOT=0 leaves it out. */
#ifndef GS_KERN_HAVE_BF16_DOT
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 11) ||                       \
                            (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10))
#define GS_KERN_HAVE_BF16_DOT 1
#else
#define GS_KERN_HAVE_BF16_DOT 0
#endif
#endif

/* For helpers of a GS_KERN_CLONES function: they must be inlined to get the clone's ISA. */
#define GS_KERN_INLINE static inline __attribute__((always_inline))

/*
 * exp(x) to ~2 float ulps, in straight-line float arithmetic the compiler vectorises (libm's
 * expf is a call per element): x = k*ln2 + r with |r| <= ln2/2, exp(r) by a degree-7 Taylor
 * polynomial, 2^k put into the exponent bits. Inputs are clamped to [-87, 88], so the result
 * is finite and nonzero. Rounding to k uses the 1.5*2^23 trick, exact in round-to-nearest.
 */
static inline float gs_kern_expf(float x)
{
    const float big = 12582912.0f;
    float kf, r, p;
    int32_t k;
    uint32_t bits;
    float scale;

    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    kf = (x * 1.44269504f + big) - big;
    r = (x - kf * 0.693145752f) - kf * 1.42860677e-6f;
    p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    k = (int32_t)kf; /* in [-126, 127]: 2^k is a normal float */
    bits = (uint32_t)(k + 127) << 23;
    memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

static inline int gs_kern_dtype_ok(int dt)
{
    return dt >= 0 && dt <= 2;
}

#endif
