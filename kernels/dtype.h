/*
 * dtype.h: the storage precisions of the trainer's tensors and the scalar conversions between
 * them, shared by every kernel (CPU and, later, CUDA) and by the trainer itself.
 *
 * The rule every kernel follows: "storage" tensors (activations, the 16-bit weight copy,
 * activation gradients) are in the dtype the kernel is given; parameter gradients and the
 * fp32 master weights are always float; arithmetic is always float, so a 16-bit tensor is
 * read, widened to float, computed on, and rounded once (round to nearest, ties to even)
 * when stored, which is what the GPU kernels do.
 *
 * Conversions to 16 bits round to nearest even. bf16 keeps float's range: only NaN needs
 * care (it stays a quiet NaN instead of rounding into infinity). fp16 has subnormals (down to
 * 2^-24, rounded correctly), overflows to infinity from 65520 up, and keeps NaN a NaN.
 * All functions are pure and thread-safe.
 */
#ifndef GS_KERN_DTYPE_H
#define GS_KERN_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum gs_kern_dtype {
    GS_KERN_F32 = 0,
    GS_KERN_BF16,
    GS_KERN_F16,
};

/* Bytes per element: 4 or 2; 0 for a value outside the enum. */
static inline size_t gs_kern_dtype_size(enum gs_kern_dtype dt)
{
    switch (dt) {
    case GS_KERN_F32:
        return 4;
    case GS_KERN_BF16:
    case GS_KERN_F16:
        return 2;
    }
    return 0;
}

static inline uint32_t gs_kern_f32_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float gs_kern_bits_f32(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline uint16_t gs_kern_f32_to_bf16(float f)
{
    uint32_t x = gs_kern_f32_bits(f);
    /* Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even; a carry
     * out of the mantissa bumps the exponent, up to infinity, as it should. */
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t quiet_nan = (x >> 16) | 0x0040u; /* sign and top payload kept */

    /* Both computed and one selected, so that loops over this vectorise. */
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

static inline float gs_kern_bf16_to_f32(uint16_t h)
{
    return gs_kern_bits_f32((uint32_t)h << 16);
}

static inline uint16_t gs_kern_f32_to_f16(float f)
{
    uint32_t x = gs_kern_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    uint32_t h, rest, half;
    int shift;

    if (ax > 0x7f800000u) /* NaN: quiet, top payload bits kept */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* >= 65520 (halfway above 65504, ties to even): infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) { /* normal fp16: rebias the exponent, round 13 bits away */
        h = (ax >> 13) - (112u << 10);
        rest = ax & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    if (ax <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: ties to even, zero */
        return (uint16_t)sign;
    /* Subnormal: the result is round(x * 2^24); 1024 is the smallest normal's bit pattern. */
    shift = 126 - (int)(ax >> 23);
    rest = (ax & 0x7fffffu) | 0x800000u;
    h = rest >> shift;
    half = 1u << (shift - 1);
    rest &= (1u << shift) - 1u;
    if (rest > half || (rest == half && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

static inline float gs_kern_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float sub;

    if (exp == 0x1fu)
        return gs_kern_bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp != 0)
        return gs_kern_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
    sub = (float)mant * 0x1p-24f; /* exact: zero or a subnormal, at most 10 bits */
    return sign ? -sub : sub;
}

/* Reads element i of a tensor of dtype dt as float. */
static inline float gs_kern_load(const void *p, size_t i, enum gs_kern_dtype dt)
{
    switch (dt) {
    case GS_KERN_BF16:
        return gs_kern_bf16_to_f32(((const uint16_t *)p)[i]);
    case GS_KERN_F16:
        return gs_kern_f16_to_f32(((const uint16_t *)p)[i]);
    case GS_KERN_F32:
        break;
    }
    return ((const float *)p)[i];
}

/* Stores v, rounded once to dtype dt, as element i. */
static inline void gs_kern_store(void *p, size_t i, enum gs_kern_dtype dt, float v)
{
    switch (dt) {
    case GS_KERN_BF16:
        ((uint16_t *)p)[i] = gs_kern_f32_to_bf16(v);
        return;
    case GS_KERN_F16:
        ((uint16_t *)p)[i] = gs_kern_f32_to_f16(v);
        return;
    case GS_KERN_F32:
        break;
    }
    ((float *)p)[i] = v;
}

/* Bulk conversion of n elements from src (dtype st) to dst (dtype dt); same dtype copies.
 * Returns 0, or -EINVAL for a NULL array with n > 0 or a dtype outside the enum. */
int gs_kern_cast(void *dst, enum gs_kern_dtype dt, const void *src, enum gs_kern_dtype st,
                 size_t n);

#endif
