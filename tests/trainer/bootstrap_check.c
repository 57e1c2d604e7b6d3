/*
 * bootstrap_check.c: the start-up of GPU ranks, checked where there is no GPU.
 * `bootstrap_check mpi` under mpirun -np N (comm.sh, built with MPI): trn_comm_mpi_bootstrap
 * carries 128 bytes from rank 0 to every rank, as it carries NCCL's unique id, the ranks are
 * who mpirun's environment says, and a second start-up is refused (MPI was finalized).
 * `bootstrap_check none` (built without MPI, run alone): it refuses with -ENOTSUP and says
 * why. Then, in a process with no GPU,
 * trn_comm_new_gpu fails cleanly: -ENOTSUP built without NCCL, -ENODEV with it.
 * Prints "bootstrap_check rank R/W: ok ..." and exits 0, or says what failed and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsched_config.h"
#include "kernels/device.h"
#include "trainer/comm.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "bootstrap_check: " __VA_ARGS__);                                      \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 37 + 11);
}

static void check_mpi(bool expect_mpi, int *ret_rank, int *ret_size)
{
    const char *env_rank = getenv("OMPI_COMM_WORLD_RANK"),
               *env_size = getenv("OMPI_COMM_WORLD_SIZE");
    int lead = env_rank == NULL || atoi(env_rank) == 0, rank = -1, size = -1, rc;
    unsigned char blob[128];
    char err[256] = "";

    for (size_t i = 0; i < sizeof(blob); i++)
        blob[i] = lead ? pattern(i) : 0;
    rc = trn_comm_mpi_bootstrap(&rank, &size, blob, sizeof(blob), err, sizeof(err));
    if (!expect_mpi) {
        CHECK(rc == -ENOTSUP && err[0] != '\0', "without MPI: %d '%s', want -ENOTSUP", rc, err);
        *ret_rank = 0;
        *ret_size = 1;
        return;
    }
    CHECK(rc == 0, "bootstrap: %d %s", rc, err);
    CHECK(env_rank != NULL && env_size != NULL && rank == atoi(env_rank) && size == atoi(env_size),
          "MPI says rank %d of %d, mpirun's environment %s of %s", rank, size,
          env_rank ? env_rank : "?", env_size ? env_size : "?");
    for (size_t i = 0; i < sizeof(blob); i++) {
        if (blob[i] != pattern(i)) {
            CHECK(0, "rank %d: byte %zu is %u, want %u", rank, i, blob[i], pattern(i));
            break;
        }
    }
    rc = trn_comm_mpi_bootstrap(&rank, &size, blob, sizeof(blob), err, sizeof(err));
    CHECK(rc == -ENOTSUP, "a second start-up: %d, want -ENOTSUP (MPI finalized)", rc);
    *ret_rank = rank;
    *ret_size = size;
}

/* With no GPU, GPU mode is refused cleanly; returns what it said. */
static void check_gpu_refused(char *said, size_t len)
{
    struct trn_comm *c = NULL;
    int want = GSCHED_HAVE_NCCL ? -ENODEV : -ENOTSUP;
    int rc = trn_comm_new_gpu(trn_comm_local_rank(), NULL, &c);

    CHECK(c != NULL, "no communicator to read the error from");
    CHECK(rc == want, "trn_comm_new_gpu: %d, want %d", rc, want);
    if (c != NULL) {
        CHECK(trn_comm_error(c)[0] != '\0', "no error message");
        snprintf(said, len, "%s", trn_comm_error(c));
    }
    trn_comm_free(c);
}

int main(int argc, char **argv)
{
    char said[256] = "not checked: a GPU is visible";
    int rank = 0, size = 1, ndev = 0;
    bool expect_mpi;

    if (argc != 2 || (strcmp(argv[1], "mpi") != 0 && strcmp(argv[1], "none") != 0)) {
        fprintf(stderr, "usage: bootstrap_check mpi|none (MPI expected, or built without)\n");
        return 2;
    }
    expect_mpi = strcmp(argv[1], "mpi") == 0;
    check_mpi(expect_mpi, &rank, &size);
    if (gs_kern_dev_count(&ndev) < 0)
        ndev = 0;
    if (ndev == 0)
        check_gpu_refused(said, sizeof(said));
    printf("bootstrap_check rank %d/%d: %s; GPU mode: %s\n", rank, size, failures ? "FAILED" : "ok",
           said);
    return failures ? 1 : 0;
}
