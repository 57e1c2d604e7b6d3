/*
 * comm_nompi.c: for builds without Open MPI: there is no MPI backend, so every process is
 * a single rank (comm_local.c), whatever launched it.
 */
#include <stddef.h>

#include "trainer/comm_internal.h"

const struct trn_comm_backend *const trn_comm_mpi_backend = NULL;
