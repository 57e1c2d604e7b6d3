/*
 * comm.h: the trainer's collective communication between ranks: start-up from the job's
 * environment, asynchronous all-reduce of a buffer, waiting on it, barrier and broadcast.
 * Backends: Open MPI for CPU ranks (comm_mpi.c), a single-rank one when the program was not
 * started by mpirun or was built without MPI (comm_local.c); NCCL for GPU ranks comes with
 * the CUDA kernels behind the same calls.
 *
 * A started all-reduce is a handle that must be waited on; nothing assumes it complete
 * before. Progress happens on a communication thread (the only thread that calls MPI), so
 * an all-reduce advances while the caller computes: the caller queues work and goes on.
 * Requests run in the order they were started, on every rank alike (callers start them in
 * the same order everywhere, as collectives require).
 *
 * One thread (the training loop) calls these functions. Errors are -errno; an MPI failure is
 * -EIO with MPI's message in trn_comm_error().
 */
#ifndef TRN_COMM_H
#define TRN_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum trn_comm_dtype {
    TRN_COMM_F32 = 0,
    TRN_COMM_BF16, /* half the bytes on the wire; each pairwise sum is done in fp32 */
    TRN_COMM_F64,  /* small exact-ish scalars: losses, counts, flags */
};

struct trn_comm;
struct trn_comm_req;

/*
 * Starts the communicator: MPI when built with it and run under mpirun (OMPI_COMM_WORLD_SIZE
 * in the environment), else one rank. Returns 0 or -errno.
 */
int trn_comm_new(struct trn_comm **ret);
/* Finalizes; every request must have been waited on. NULL allowed. */
void trn_comm_free(struct trn_comm *c);

int trn_comm_rank(const struct trn_comm *c);
int trn_comm_size(const struct trn_comm *c);
/* "mpi" or "local". */
const char *trn_comm_backend(const struct trn_comm *c);
const char *trn_comm_error(const struct trn_comm *c);

/*
 * Starts summing count elements of buf over every rank, in place, divided by the number of
 * ranks when average. buf must stay untouched until the request is waited on. *ret is the
 * handle (freed by trn_comm_wait). Returns 0 or -errno.
 */
int trn_comm_allreduce(struct trn_comm *c, void *buf, size_t count, enum trn_comm_dtype dt,
                       bool average, struct trn_comm_req **ret);
/*
 * Waits for a request and frees it. *busy_ns (NULL allowed) gets how long the collective
 * itself ran on the communication thread, *waited_ns how long this call blocked: their
 * difference is the part hidden behind the caller's work. Returns the request's result.
 */
int trn_comm_wait(struct trn_comm *c, struct trn_comm_req *r, uint64_t *busy_ns,
                  uint64_t *waited_ns);

/* Blocking, after every request started before them. */
int trn_comm_barrier(struct trn_comm *c);
int trn_comm_broadcast(struct trn_comm *c, void *buf, size_t bytes, int root);

#endif
