/*
 * comm_internal.h: what a communication backend provides to comm.c. A CPU backend's
 * functions run on the communication thread only, blocking; init runs there first (MPI's
 * main thread is the one that initialised it). The GPU backend's run on the training thread
 * and only queue work on the GPU, except where comm.h says they block. Errors are -errno
 * with a message in err.
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

/*
 * GPU ranks (comm_nccl.c). init leaves *state NULL on failure. A request is the backend's
 * (void *): allreduce makes it, wait hands it back, finalize frees any not handed back.
 */
struct trn_comm_gpu_backend {
    const char *name;
    int (*init)(int device, void *stream, void **state, int *rank, int *size, char *err,
                size_t errlen);
    void (*finalize)(void *state);
    int (*allreduce)(void *state, void *buf, size_t count, enum trn_comm_dtype dt, bool average,
                     void **ret_req, char *err, size_t errlen);
    int (*wait)(void *state, void *req, uint64_t *busy_ns, uint64_t *waited_ns, char *err,
                size_t errlen);
    int (*times)(void *state, uint64_t *busy_ns, uint64_t *exposed_ns, char *err, size_t errlen);
    int (*barrier)(void *state, char *err, size_t errlen);
    int (*broadcast)(void *state, void *buf, size_t bytes, int root, char *err, size_t errlen);
};

/* NULL when built without NCCL (comm_nonccl.c). */
extern const struct trn_comm_gpu_backend *const trn_comm_nccl_backend;

/* A launcher's variable holding a count or rank: its value when it is a non-negative
 * decimal number (up to INT_MAX), else -1 (unset too). */
int trn_comm_env_count(const char *name);

/* Averaging a float or bf16 buffer in place (shared by the backends). */
void trn_comm_scale(void *buf, size_t count, enum trn_comm_dtype dt, double factor);

#endif
