/*
 * encoder_runs.c: the host half of the CUDA encoder's deterministic backward (gpu.h). The
 * positions of a micro-batch are sorted by (token id, position) so that the device can sum
 * each token's gradient rows in one thread block, in a fixed order, with no atomics. Plain C:
 * it runs on the host while the previous micro-batch computes.
 */
#include "kernels/gpu.h"

#include <errno.h>
#include <stdlib.h>

#include "common/sort.h"

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

int gs_kern_encoder_runs(const int32_t *tokens, int N, int64_t *scratch, int32_t *order,
                         int32_t *starts, int *ret_nuniq)
{
    int nuniq = 0;

    if (tokens == NULL || scratch == NULL || order == NULL || starts == NULL || ret_nuniq == NULL ||
        N <= 0)
        return -EINVAL;
    for (int i = 0; i < N; i++) {
        if (tokens[i] < 0)
            return -EINVAL;
        scratch[i] = (int64_t)tokens[i] << 32 | (int64_t)i; /* one key sorts by both */
    }
    gs_sort(scratch, (size_t)N, sizeof(*scratch), cmp_key);
    for (int i = 0; i < N; i++) {
        order[i] = (int32_t)(scratch[i] & 0xffffffff);
        if (i == 0 || scratch[i] >> 32 != scratch[i - 1] >> 32)
            starts[nuniq++] = i;
    }
    starts[nuniq] = N;
    *ret_nuniq = nuniq;
    return 0;
}
