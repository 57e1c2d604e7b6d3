/*
 * test_dtype.c: the float <-> bf16 / fp16 conversions of kernels/dtype.h and the bulk cast.
 *
 * Edge cases are asserted by bit pattern (ties to even, subnormals, overflow, inf, NaN).
 * Beyond those, bf16 is compared with a brute-force nearest-even choice made in double, and
 * fp16 with the CPU's own F16C conversion (round to nearest even) over a sweep of float bit
 * patterns; fp16 -> float is checked exhaustively against the format's definition.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/dtype.h"
#include "kref.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_F16C_ORACLE 1
/* CPUID leaf 1, ECX bit 29; asked directly because clang 14's __builtin_cpu_supports does
 * not know "f16c". */
static int has_f16c(void)
{
    unsigned int a, b, c, d;

    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
__attribute__((target("f16c"))) static uint16_t f16c_convert(float f)
{
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
#else
#define HAVE_F16C_ORACLE 0
#endif

static float from_bits(uint32_t u)
{
    return gs_kern_bits_f32(u);
}

Test(dtype, bf16_rounds_ties_to_even)
{
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x3f808000)), 0x3f80); /* 1 + 2^-8: tie, down */
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x3f818000)), 0x3f82); /* tie, up to even */
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x3f808001)), 0x3f81); /* just above tie */
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x3f807fff)), 0x3f80); /* just below */
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0xbf818000)), 0xbf82); /* negative tie */
    cr_assert_eq(gs_kern_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(gs_kern_f32_to_bf16(-0.0f), 0x8000);
}

Test(dtype, bf16_handles_overflow_subnormals_inf_nan)
{
    cr_assert_eq(gs_kern_f32_to_bf16(FLT_MAX), 0x7f80);               /* rounds up to inf */
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x7f7f7fff)), 0x7f7f); /* largest finite */
    cr_assert_eq(gs_kern_f32_to_bf16(INFINITY), 0x7f80);
    cr_assert_eq(gs_kern_f32_to_bf16(-INFINITY), 0xff80);
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x00008000)), 0x0000); /* subnormal tie */
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x00018000)), 0x0002);
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x00010000)), 0x0001); /* kept subnormal */
    /* A NaN whose payload sits in the dropped bits must not round into infinity. */
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x7f800001)), 0x7fc0);
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0xff800001)), 0xffc0);
    cr_assert_eq(gs_kern_f32_to_bf16(from_bits(0x7fffffff)), 0x7fff);
    cr_assert(isnan(gs_kern_bf16_to_f32(gs_kern_f32_to_bf16(NAN))));
    cr_assert_eq(gs_kern_bf16_to_f32(0x3f80), 1.0f);
}

/* The nearest bf16 by brute force: truncate, then compare distances in double. */
static uint16_t bf16_nearest(float f)
{
    uint32_t x = gs_kern_f32_bits(f);
    uint16_t lo = (uint16_t)(x >> 16), hi = (uint16_t)(lo + 1);
    double dl = fabs((double)f - gs_kern_bf16_to_f32(lo));
    double dh = fabs((double)gs_kern_bf16_to_f32(hi) - (double)f);

    if ((hi & 0x7f80) == 0x7f80) /* hi is infinity: IEEE rounds there past the halfway point */
        dh = fabs(0x1p128 * (f < 0 ? -1 : 1) - (double)f);
    if (dl < dh || (dl == dh && (lo & 1) == 0))
        return lo;
    return hi;
}

Test(dtype, bf16_matches_brute_force_nearest_even)
{
    uint64_t seed = 1;

    for (int i = 0; i < 2000000; i++) {
        uint32_t x = (uint32_t)(kref_uniform(&seed, 0, 4294967296.0));
        float f = from_bits(x);

        if (isnan(f))
            continue;
        cr_assert_eq(gs_kern_f32_to_bf16(f), bf16_nearest(f), "x=0x%08x", x);
    }
}

Test(dtype, f16_edge_cases)
{
    cr_assert_eq(gs_kern_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(gs_kern_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);     /* tie, to even */
    cr_assert_eq(gs_kern_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02); /* tie, to even */
    cr_assert_eq(gs_kern_f32_to_f16(65504.0f), 0x7bff);            /* largest finite */
    cr_assert_eq(gs_kern_f32_to_f16(65519.996f), 0x7bff);          /* below the tie */
    cr_assert_eq(gs_kern_f32_to_f16(65520.0f), 0x7c00);            /* tie: to inf */
    cr_assert_eq(gs_kern_f32_to_f16(1e6f), 0x7c00);
    cr_assert_eq(gs_kern_f32_to_f16(-1e6f), 0xfc00);
    cr_assert_eq(gs_kern_f32_to_f16(INFINITY), 0x7c00);
    cr_assert_eq(gs_kern_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(gs_kern_f32_to_f16(0x1p-14f), 0x0400);           /* smallest normal */
    cr_assert_eq(gs_kern_f32_to_f16(1023.5f * 0x1p-24f), 0x0400); /* tie into normal */
    cr_assert_eq(gs_kern_f32_to_f16(1022.5f * 0x1p-24f), 0x03fe); /* tie, to even */
    cr_assert_eq(gs_kern_f32_to_f16(0x1p-24f), 0x0001);           /* smallest subnormal */
    cr_assert_eq(gs_kern_f32_to_f16(0x1p-25f), 0x0000);           /* tie, to zero */
    cr_assert_eq(gs_kern_f32_to_f16(nextafterf(0x1p-25f, 1.0f)), 0x0001);
    cr_assert_eq(gs_kern_f32_to_f16(3 * 0x1p-25f), 0x0002);          /* tie, to even */
    cr_assert_eq(gs_kern_f32_to_f16(-0x1p-30f), 0x8000);             /* underflow keeps sign */
    cr_assert_eq(gs_kern_f32_to_f16(from_bits(1)), 0x0000);          /* float subnormal */
    cr_assert_eq(gs_kern_f32_to_f16(from_bits(0x7f800001)), 0x7e00); /* sNaN stays NaN */
    cr_assert_eq(gs_kern_f32_to_f16(from_bits(0xffc00000)), 0xfe00);
    cr_assert(isnan(gs_kern_f16_to_f32(gs_kern_f32_to_f16(NAN))));
}

static double f16_definition(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double s = (h & 0x8000) ? -1.0 : 1.0;

    if (e == 0)
        return s * m * 0x1p-24;
    return s * ldexp(1.0 + m / 1024.0, e - 15);
}

Test(dtype, f16_to_f32_is_exact_for_every_value)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = gs_kern_f16_to_f32((uint16_t)h);
        int e = (h >> 10) & 0x1f;

        if (e == 0x1f) {
            cr_assert_eq(isnan(f) != 0, (h & 0x3ff) != 0, "h=0x%04x", h);
            if ((h & 0x3ff) == 0)
                cr_assert(isinf(f) && (f < 0) == ((h & 0x8000) != 0));
            continue;
        }
        cr_assert_eq((double)f, f16_definition((uint16_t)h), "h=0x%04x", h);
        cr_assert_eq(gs_kern_f32_to_f16(f), h, "round trip h=0x%04x", h); /* -0 included */
    }
}

static void sweep_f16(uint32_t from, uint32_t to, uint32_t step)
{
    for (uint64_t x = from; x <= to; x += step) {
        float f = from_bits((uint32_t)x);

        if (isnan(f))
            continue;
        cr_assert_eq(gs_kern_f32_to_f16(f), f16c_convert(f), "x=0x%08x", (uint32_t)x);
    }
}

Test(dtype, f16_matches_f16c_hardware)
{
#if HAVE_F16C_ORACLE
    if (!has_f16c())
        cr_skip_test("no F16C on this CPU");
    sweep_f16(0, 0xffffffffu, 509);                       /* every range, coarse */
    sweep_f16(0x33000000u - 4096, 0x38800000u + 4096, 1); /* subnormal range, every value */
    sweep_f16(0x477fe000u - 4096, 0x47800000u + 4096, 1); /* around the overflow */
    sweep_f16(0xb3000000u - 4096, 0xb3000000u + 4096, 1);
#else
    cr_skip_test("no F16C oracle on this architecture");
#endif
}

Test(dtype, cast_matches_scalar_conversions)
{
    enum { N = 1001 };
    static float src[N], back[N];
    static uint16_t h[N];

    kref_fill(src, N, 70000.0f, 5);
    src[0] = NAN;
    src[1] = INFINITY;
    src[2] = 1e-6f;
    for (int dt = GS_KERN_BF16; dt <= GS_KERN_F16; dt++) {
        cr_assert_eq(gs_kern_cast(h, (enum gs_kern_dtype)dt, src, GS_KERN_F32, N), 0);
        cr_assert_eq(gs_kern_cast(back, GS_KERN_F32, h, (enum gs_kern_dtype)dt, N), 0);
        for (int i = 0; i < N; i++) {
            uint16_t want[2] = {0};

            want[0] = dt == GS_KERN_BF16 ? gs_kern_f32_to_bf16(src[i]) : gs_kern_f32_to_f16(src[i]);
            float wantf = gs_kern_load(want, 0, (enum gs_kern_dtype)dt);

            cr_assert_eq(h[i], want[0], "dt=%d i=%d", dt, i);
            cr_assert(back[i] == wantf || (isnan(back[i]) && isnan(wantf)), "dt=%d i=%d", dt, i);
        }
    }
    cr_assert_eq(gs_kern_cast(back, GS_KERN_F32, src, GS_KERN_F32, N), 0);
    cr_assert_eq(memcmp(back, src, sizeof(src)), 0);
}

Test(dtype, cast_rejects_bad_arguments)
{
    float x = 1.0f, y = 2.0f;

    cr_assert_eq(gs_kern_cast(&y, (enum gs_kern_dtype)7, &x, GS_KERN_F32, 1), -EINVAL);
    cr_assert_eq(gs_kern_cast(NULL, GS_KERN_F32, &x, GS_KERN_F32, 1), -EINVAL);
    cr_assert_eq(y, 2.0f);
    cr_assert_eq(gs_kern_cast(NULL, GS_KERN_F32, NULL, GS_KERN_BF16, 0), 0);
    cr_assert_eq(gs_kern_dtype_size(GS_KERN_F16), 2);
}
