/*
 * comm_mpi.c: the Open MPI backend, for CPU ranks started by mpirun (or by gsched's MPI
 * launcher). It runs on comm.c's communication thread, which initialises MPI and is the only
 * thread that calls it (MPI_THREAD_FUNNELED). Collectives use a duplicate of MPI_COMM_WORLD
 * whose errors return instead of aborting, so a failure becomes -EIO with MPI's message.
 *
 * bf16 travels as 2-byte elements with a user-defined sum: each pairwise combination adds in
 * fp32 and rounds once to bf16, as NCCL does for its bf16 reductions.
 *
 * An all-reduce is started non-blocking and then tested with short sleeps in between rather
 * than waited for in MPI_Allreduce: Open MPI's blocking calls spin on the CPU, and where the
 * ranks' compute threads have every core (the usual case: one rank per core or per GPU's
 * share of cores) a spinning communication thread takes half a core from the backward pass
 * it is meant to hide behind. Measured on 2 ranks x 1 core, 1 MiB buckets: spinning made the
 * overlapped step 2.5x slower than no overlap at all (bench/ddp.sh).
 *
 * GPU ranks use MPI for one thing only: trn_comm_mpi_bootstrap() carries NCCL's unique id
 * from rank 0 to the others at start-up, from the training thread, and finalizes MPI again.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/dtype.h"
#include "trainer/comm.h"
#include "trainer/comm_internal.h"

struct mpi_state {
    MPI_Comm comm;
    MPI_Datatype bf16;
    MPI_Op bf16_sum;
    bool initialised_here;
};

static int mpi_fail(int code, const char *what, char *err, size_t errlen)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof(msg), "MPI error %d", code);
    snprintf(err, errlen, "%s: %s", what, msg);
    return -EIO;
}

static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const uint16_t *a = in;
    uint16_t *b = inout;

    (void)type;
    for (int i = 0; i < *len; i++)
        b[i] = gs_kern_f32_to_bf16(gs_kern_bf16_to_f32(a[i]) + gs_kern_bf16_to_f32(b[i]));
}

static int mpi_init(void **state, int *rank, int *size, char *err, size_t errlen)
{
    struct mpi_state *s = calloc(1, sizeof(*s));
    int provided = 0, flag = 0, rc;

    if (s == NULL)
        return -ENOMEM;
    MPI_Initialized(&flag);
    if (!flag) {
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            free(s);
            return mpi_fail(rc, "MPI_Init_thread", err, errlen);
        }
        s->initialised_here = true;
    }
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &s->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_contiguous(2, MPI_BYTE, &s->bf16);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&s->bf16);
    if (rc == MPI_SUCCESS)
        rc = MPI_Op_create(bf16_sum, 1, &s->bf16_sum);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(s->comm, rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(s->comm, size);
    if (rc != MPI_SUCCESS) {
        free(s);
        return mpi_fail(rc, "MPI set-up", err, errlen);
    }
    *state = s;
    return 0;
}

static void mpi_finalize(void *state)
{
    struct mpi_state *s = state;

    MPI_Op_free(&s->bf16_sum);
    MPI_Type_free(&s->bf16);
    MPI_Comm_free(&s->comm);
    if (s->initialised_here)
        MPI_Finalize();
    free(s);
}

/* Tests req until it completes, sleeping 5 us, doubling up to 50 us, between tests. */
static int test_with_backoff(MPI_Request *req)
{
    long ns = 5000;
    int done = 0, rc;

    while ((rc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) {
        struct timespec ts = {0, ns};

        nanosleep(&ts, NULL);
        if (ns < 50000)
            ns *= 2;
    }
    return rc;
}

/* MPI counts are ints: a longer buffer goes in pieces. */
#define PIECE ((size_t)1 << 30)

static int mpi_allreduce(void *state, void *buf, size_t count, enum trn_comm_dtype dt, bool average,
                         char *err, size_t errlen)
{
    struct mpi_state *s = state;
    size_t esize = dt == TRN_COMM_F64 ? 8 : dt == TRN_COMM_F32 ? 4 : 2;
    MPI_Datatype type = dt == TRN_COMM_F64 ? MPI_DOUBLE : dt == TRN_COMM_F32 ? MPI_FLOAT : s->bf16;
    MPI_Op op = dt == TRN_COMM_BF16 ? s->bf16_sum : MPI_SUM;
    int size = 1, rc = MPI_Comm_size(s->comm, &size);

    for (size_t off = 0; rc == MPI_SUCCESS && off < count; off += PIECE) {
        size_t n = count - off < PIECE ? count - off : PIECE;

        MPI_Request req;

        rc = MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + off * esize, (int)n, type, op, s->comm,
                            &req);
        if (rc == MPI_SUCCESS)
            rc = test_with_backoff(&req);
    }
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Allreduce", err, errlen);
    if (average && size > 1)
        trn_comm_scale(buf, count, dt, 1.0 / (double)size);
    return 0;
}

static int mpi_barrier(void *state, char *err, size_t errlen)
{
    struct mpi_state *s = state;
    int rc = MPI_Barrier(s->comm);

    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "MPI_Barrier", err, errlen);
}

static int mpi_broadcast(void *state, void *buf, size_t bytes, int root, char *err, size_t errlen)
{
    struct mpi_state *s = state;
    int rc = MPI_SUCCESS;

    for (size_t off = 0; rc == MPI_SUCCESS && off < bytes; off += PIECE) {
        size_t n = bytes - off < PIECE ? bytes - off : PIECE;

        rc = MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, s->comm);
    }
    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "MPI_Bcast", err, errlen);
}

static const struct trn_comm_backend mpi_backend = {
    .name = "mpi",
    .init = mpi_init,
    .finalize = mpi_finalize,
    .allreduce = mpi_allreduce,
    .barrier = mpi_barrier,
    .broadcast = mpi_broadcast,
};

const struct trn_comm_backend *const trn_comm_mpi_backend = &mpi_backend;

int trn_comm_mpi_bootstrap(int *rank, int *size, void *buf, size_t len, char *err, size_t errlen)
{
    MPI_Comm comm = MPI_COMM_NULL;
    int initialised = 0, finalized = 0, provided = 0, r = 0, n = 0, rc;
    bool here = false;

    if (len > INT_MAX) {
        snprintf(err, errlen, "MPI start-up: %zu bytes are more than one broadcast takes", len);
        return -EINVAL;
    }
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalized);
    if (finalized) {
        snprintf(err, errlen, "MPI start-up: MPI was finalized already in this process");
        return -ENOTSUP;
    }
    if (!initialised) {
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Init_thread", err, errlen);
        here = true;
    }
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(comm, &r);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(comm, &n);
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(buf, (int)len, MPI_BYTE, 0, comm);
    if (rc != MPI_SUCCESS)
        mpi_fail(rc, "MPI start-up", err, errlen);
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    if (here)
        MPI_Finalize();
    if (rc != MPI_SUCCESS)
        return -EIO;
    *rank = r;
    *size = n;
    return 0;
}
