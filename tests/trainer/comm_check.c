/*
 * comm_check.c: the trainer's communicator across real processes (run by comm.sh under
 * mpirun -np 2, and alone as one rank): all-reduce sums and averages in fp32 and bf16,
 * broadcast, barrier, requests completing in order, and progress while the caller computes
 * (an all-reduce started before a stretch of work is done, or nearly, when the work ends).
 * Prints "comm_check rank R/W: ok ..." and exits 0, or says what failed and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/dtype.h"
#include "trainer/comm.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "comm_check: " __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU work for about ms milliseconds that the compiler cannot drop. */
static double work(double ms)
{
    double t0 = now_ms(), x = 1.0;

    while (now_ms() - t0 < ms) {
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    }
    return x;
}

int main(void)
{
    struct trn_comm *c = NULL;
    struct trn_comm_req *r1, *r2;
    size_t n = 1000, big = (size_t)8 << 20;
    float *a = malloc(n * sizeof(float)), *b = malloc(big * sizeof(float));
    uint16_t *h = malloc(n * sizeof(uint16_t));
    uint64_t busy = 0, waited = 0, busy2 = 0, waited2 = 0;
    unsigned char blob[64];
    int rank, size, rc = trn_comm_new(&c);
    double sink;

    if (rc < 0 || a == NULL || b == NULL || h == NULL) {
        fprintf(stderr, "comm_check: start-up failed: %d %s\n", rc, c ? trn_comm_error(c) : "");
        return 1;
    }
    rank = trn_comm_rank(c);
    size = trn_comm_size(c);

    /* Sum, then average, in fp32; two requests in flight at once, waited in order. */
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(rank + 1) * (float)i;
    for (size_t i = 0; i < 1024; i++)
        b[i] = (float)rank;
    CHECK(trn_comm_allreduce(c, a, n, TRN_COMM_F32, false, &r1) == 0, "allreduce start");
    CHECK(trn_comm_allreduce(c, b, 1024, TRN_COMM_F32, true, &r2) == 0, "allreduce start");
    CHECK(trn_comm_wait(c, r1, NULL, NULL) == 0, "wait: %s", trn_comm_error(c));
    CHECK(trn_comm_wait(c, r2, NULL, NULL) == 0, "wait: %s", trn_comm_error(c));
    for (size_t i = 0; i < n; i++) {
        float want = (float)(size * (size + 1) / 2) * (float)i;

        CHECK(a[i] == want, "sum[%zu] = %g, want %g", i, a[i], want);
    }
    CHECK(fabsf(b[7] - (float)(size - 1) / 2.0f) < 1e-6f, "average = %g", b[7]);

    /* bf16: sums of small integers are exact in 8 bits of mantissa. */
    for (size_t i = 0; i < n; i++)
        h[i] = gs_kern_f32_to_bf16((float)(i % 16) + (float)rank);
    CHECK(trn_comm_allreduce(c, h, n, TRN_COMM_BF16, false, &r1) == 0, "bf16 start");
    CHECK(trn_comm_wait(c, r1, NULL, NULL) == 0, "bf16 wait: %s", trn_comm_error(c));
    for (size_t i = 0; i < n; i++) {
        float want = (float)size * (float)(i % 16) + (float)(size * (size - 1) / 2);

        CHECK(gs_kern_bf16_to_f32(h[i]) == want, "bf16 sum[%zu] = %g, want %g", i,
              gs_kern_bf16_to_f32(h[i]), want);
    }

    /* Broadcast and barrier. */
    memset(blob, rank == 0 ? 0xA5 : 0, sizeof(blob));
    CHECK(trn_comm_broadcast(c, blob, sizeof(blob), 0) == 0, "bcast: %s", trn_comm_error(c));
    CHECK(blob[0] == 0xA5 && blob[63] == 0xA5, "bcast did not arrive");
    CHECK(trn_comm_broadcast(c, blob, sizeof(blob), size) == -EINVAL, "a root past the ranks");
    CHECK(trn_comm_barrier(c) == 0, "barrier: %s", trn_comm_error(c));

    /* Progress during compute: time an all-reduce alone, then one behind twice as much work. */
    for (size_t i = 0; i < big; i++)
        b[i] = 1.0f;
    CHECK(trn_comm_allreduce(c, b, big, TRN_COMM_F32, true, &r1) == 0, "big start");
    CHECK(trn_comm_wait(c, r1, &busy, &waited) == 0, "big wait");
    CHECK(trn_comm_barrier(c) == 0, "barrier");
    CHECK(trn_comm_allreduce(c, b, big, TRN_COMM_F32, true, &r2) == 0, "big start");
    sink = work(2.0 * (double)busy / 1e6 + 5.0);
    CHECK(trn_comm_wait(c, r2, &busy2, &waited2) == 0, "big wait");
    if (size > 1)
        CHECK(waited2 * 2 <= busy2,
              "the all-reduce did not progress during compute: it ran "
              "%.1f ms and the wait after the work still took %.1f ms",
              (double)busy2 / 1e6, (double)waited2 / 1e6);
    printf("comm_check rank %d/%d backend=%s: %s; 32 MiB all-reduce %.1f ms alone, behind "
           "%.1f ms of work: waited %.2f ms of %.1f ms (overlap %.2f) [%g]\n",
           rank, size, trn_comm_backend(c), failures ? "FAILED" : "ok", (double)busy / 1e6,
           2.0 * (double)busy / 1e6 + 5.0, (double)waited2 / 1e6, (double)busy2 / 1e6,
           busy2 > 0 ? 1.0 - (double)waited2 / (double)busy2 : 1.0, sink > 0 ? 0.0 : 1.0);
    trn_comm_free(c);
    free(a);
    free(b);
    free(h);
    return failures ? 1 : 0;
}
