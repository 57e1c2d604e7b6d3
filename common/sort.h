/*
 * gs_sort: qsort for arrays that may be empty. An empty array is often a NULL
 * pointer, and qsort's pointer is declared never null (UBSan reports it even
 * with n == 0), so every sort in the tree goes through here.
 */
#ifndef GS_SORT_H
#define GS_SORT_H

#include <stdint.h>
#include <stdlib.h>

static inline void gs_sort(void *base, size_t n, size_t size,
                           int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

/* Ascending uint64_t, for gs_sort and bsearch over id arrays. */
static inline int gs_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

#endif
