/*
 * comm_nompi.c: for builds without Open MPI: there is no MPI backend, so every CPU process
 * is a single rank (comm_local.c), whatever launched it, and GPU ranks cannot start under
 * mpirun (trn_comm_mpi_bootstrap refuses).
 */
#include <errno.h>
#include <stdio.h>

#include "trainer/comm.h"
#include "trainer/comm_internal.h"

const struct trn_comm_backend *const trn_comm_mpi_backend = NULL;

int trn_comm_mpi_bootstrap(int *rank, int *size, void *buf, size_t len, char *err, size_t errlen)
{
    (void)rank;
    (void)size;
    (void)buf;
    (void)len;
    snprintf(err, errlen,
             "started by mpirun, but this gsched-train was built without MPI "
             "(install libopenmpi-dev and rebuild, or launch the ranks with gsched)");
    return -ENOTSUP;
}
