/*
 * comm_local.c: the one-rank backend: a process started without mpirun trains alone, and
 * every collective is the identity (an average over one rank is the value itself).
 */
#include <stddef.h>

#include "kernels/dtype.h"
#include "trainer/comm_internal.h"

static int local_init(void **state, int *rank, int *size, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *state = NULL;
    *rank = 0;
    *size = 1;
    return 0;
}

static void local_finalize(void *state)
{
    (void)state;
}

static int local_allreduce(void *state, void *buf, size_t count, enum trn_comm_dtype dt,
                           bool average, char *err, size_t errlen)
{
    (void)state;
    (void)buf;
    (void)count;
    (void)dt;
    (void)average;
    (void)err;
    (void)errlen;
    return 0;
}

static int local_barrier(void *state, char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    return 0;
}

static int local_broadcast(void *state, void *buf, size_t bytes, int root, char *err, size_t errlen)
{
    (void)state;
    (void)buf;
    (void)bytes;
    (void)root;
    (void)err;
    (void)errlen;
    return 0;
}

const struct trn_comm_backend trn_comm_local_backend = {
    .name = "local",
    .init = local_init,
    .finalize = local_finalize,
    .allreduce = local_allreduce,
    .barrier = local_barrier,
    .broadcast = local_broadcast,
};

void trn_comm_scale(void *buf, size_t count, enum trn_comm_dtype dt, double factor)
{
    if (dt == TRN_COMM_F32) {
        float *f = buf;

        for (size_t i = 0; i < count; i++)
            f[i] *= (float)factor;
        return;
    }
    if (dt == TRN_COMM_F64) {
        double *d = buf;

        for (size_t i = 0; i < count; i++)
            d[i] *= factor;
        return;
    }
    for (size_t i = 0; i < count; i++) {
        uint16_t *h = buf;

        h[i] = gs_kern_f32_to_bf16(gs_kern_bf16_to_f32(h[i]) * (float)factor);
    }
}
