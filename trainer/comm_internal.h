/*
 * comm_internal.h: what a communication backend provides to comm.c. Every function runs on
 * the communication thread only, blocking; init runs there first (MPI's main thread is the
 * one that initialised it). Errors are -errno with a message in err.
 */
#ifndef TRN_COMM_INTERNAL_H
#define TRN_COMM_INTERNAL_H

#include "trainer/comm.h"

struct trn_comm_backend {
    const char *name;
    int (*init)(void **state, int *rank, int *size, char *err, size_t errlen);
    void (*finalize)(void *state);
    int (*allreduce)(void *state, void *buf, size_t count, enum trn_comm_dtype dt, bool average,
                     char *err, size_t errlen);
    int (*barrier)(void *state, char *err, size_t errlen);
    int (*broadcast)(void *state, void *buf, size_t bytes, int root, char *err, size_t errlen);
};

extern const struct trn_comm_backend trn_comm_local_backend;
/* NULL when built without MPI. */
extern const struct trn_comm_backend *const trn_comm_mpi_backend;

/* Averaging a float or bf16 buffer in place (shared by the backends). */
void trn_comm_scale(void *buf, size_t count, enum trn_comm_dtype dt, double factor);

#endif
