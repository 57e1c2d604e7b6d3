/*
 * cast_cpu.c: bulk conversion between the storage dtypes (kernels/dtype.h), used for the
 * 16-bit weight copy, for loading fixtures and for checkpoints. Element-wise, so any split
 * over threads gives the same bits.
 */
#include "kernels/dtype.h"

#include <errno.h>

#include "kernels/cpu_internal.h"

int gs_kern_cast(void *dst, enum gs_kern_dtype dt, const void *src, enum gs_kern_dtype st, size_t n)
{
    if (!gs_kern_dtype_ok(dt) || !gs_kern_dtype_ok(st))
        return -EINVAL;
    if (n > 0 && (dst == NULL || src == NULL))
        return -EINVAL;
    if (dt == st) {
        memcpy(dst, src, n * gs_kern_dtype_size(dt));
        return 0;
    }
    GS_OMP(parallel for schedule(static))
    for (size_t i = 0; i < n; i++)
        gs_kern_store(dst, i, dt, gs_kern_load(src, i, st));
    return 0;
}
