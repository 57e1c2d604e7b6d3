/*
 * comm.h: the trainer's collective communication between ranks: start-up from the job's
 * environment, asynchronous all-reduce of a buffer, waiting on it, barrier and broadcast.
 * Two modes behind the same calls:
 *
 * CPU ranks (trn_comm_new): Open MPI (comm_mpi.c) when started by mpirun, else one rank
 * (comm_local.c; also every process of a build without MPI). Progress happens on a
 * communication thread (the only thread that calls MPI), so an all-reduce advances while the
 * caller computes: the caller queues work and goes on. An MPI failure is -EIO with MPI's
 * message in trn_comm_error().
 *
 * GPU ranks (trn_comm_new_gpu): NCCL (comm_nccl.c), one GPU per rank, ordered against the
 * caller's compute stream; no thread. Which memory each call takes:
 *   - all-reduce and broadcast take a buffer in device memory (cudaMalloc'd or managed:
 *     the gradient buckets, the weights) or in host memory (the F64 scalars the trainer sums:
 *     losses, flags; the step counters it broadcasts), told apart by asking CUDA, for any
 *     dtype. A device buffer is reduced in stream order: the all-reduce runs after the work
 *     queued on the compute stream before the call, and trn_comm_wait makes the compute
 *     stream (not the host) wait for it. A host buffer is staged through device memory on the
 *     NCCL stream: trn_comm_wait blocks until the result is back in it. Both kinds are
 *     read at the call (the host one copied then), written by the time they are waited on.
 *   - barrier and broadcast block the host until done; a broadcast of a device buffer is
 *     ordered after the compute stream's work queued before it.
 * The time a device all-reduce took is known only after the GPU has run it:
 * trn_comm_gpu_times() collects it once the caller has synchronised. A CUDA or NCCL
 * failure is -EIO with their text in trn_comm_error(); NCCL's asynchronous errors (a peer
 * gone) are looked for at every wait, times, barrier and broadcast, and abort the
 * communicator: every later call is -EIO.
 *
 * A started all-reduce is a handle that must be waited on; nothing assumes it complete
 * before. Requests run in the order they were started, on every rank alike (callers start
 * them in the same order everywhere, as collectives require).
 *
 * One thread (the training loop) calls these functions; in GPU mode it is the thread that
 * created the communicator. Errors are -errno.
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
 * Starts a communicator for CPU ranks: MPI when built with it and run under mpirun
 * (OMPI_COMM_WORLD_SIZE in the environment), else one rank. Returns 0 or -errno; *ret is set
 * even on failure, for trn_comm_error(), and is the caller's to free either way.
 */
int trn_comm_new(struct trn_comm **ret);
/*
 * Starts a communicator for a GPU rank: NCCL on `device` (an index among the visible
 * devices, which becomes the calling thread's current device; trn_comm_local_rank() modulo
 * the device count is the usual choice), ordered against `stream`, the caller's compute
 * stream (a cudaStream_t; NULL: the legacy default stream), which must outlive the
 * communicator. Every rank needs rank 0's ncclUniqueId, which travels:
 *   - under mpirun (OMPI_COMM_WORLD_SIZE set): by MPI (trn_comm_mpi_bootstrap);
 *   - else with WORLD_SIZE > 1 (a gsched job whose worker starts one task per rank, RANK and
 *     WORLD_SIZE set): through the job's key/value store in gschedd (trainer/kv.h), under
 *     a key naming the job's attempt (GSCHED_ATTEMPT, else SLURM_RESTART_COUNT, else 0);
 *     the other ranks wait up to TRN_COMM_BOOTSTRAP_MS for rank 0;
 *   - else the process is the only rank and nothing travels.
 * Blocks until every rank has joined (ncclCommInitRank). Returns 0; -ENOTSUP built without
 * NCCL (or under mpirun built without MPI); -ENODEV no such device (none visible, no
 * driver); -EINVAL a bad RANK / WORLD_SIZE; -ETIMEDOUT rank 0's id never came; -ENOENT
 * WORLD_SIZE > 1 outside a gsched job; -EIO a CUDA or NCCL failure. As trn_comm_new, *ret
 * is set even on failure, for trn_comm_error(), and is the caller's to free either way.
 */
int trn_comm_new_gpu(int device, void *stream, struct trn_comm **ret);
#define TRN_COMM_BOOTSTRAP_MS 600000
/* Finalizes; every request must have been waited on. NULL allowed. In GPU mode, waits
 * (watching for NCCL errors) for what the NCCL stream still runs, then destroys the NCCL
 * communicator, or aborts it when it has failed. */
void trn_comm_free(struct trn_comm *c);

int trn_comm_rank(const struct trn_comm *c);
int trn_comm_size(const struct trn_comm *c);
/* "mpi", "local" or "nccl". */
const char *trn_comm_backend(const struct trn_comm *c);
const char *trn_comm_error(const struct trn_comm *c);
bool trn_comm_on_gpu(const struct trn_comm *c);

/*
 * This process's rank among the ranks on its node: OMPI_COMM_WORLD_LOCAL_RANK under
 * mpirun (OMPI_COMM_WORLD_SIZE set; a LOCAL_RANK there is the launching task's own,
 * inherited by every rank), else LOCAL_RANK (gsched's workers, torchrun), else SLURM_LOCALID
 * (srun), else 0; 0 also for a value that is not a non-negative number. gsched gives each task its
 * GPUs as CUDA_VISIBLE_DEVICES, so the rank's device is this modulo the number of visible devices.
 */
int trn_comm_local_rank(void);

/*
 * Start-up over MPI, for GPU ranks whose collectives go through NCCL: initialises MPI when
 * it is not (from the calling thread), broadcasts len bytes of buf from rank 0 of
 * MPI_COMM_WORLD to every rank, sets *rank and *size, and finalizes MPI again when it
 * initialised it. MPI cannot start twice in a process: call it once, and not in a process
 * that uses the MPI backend (trn_comm_new). Returns 0, -ENOTSUP built without MPI or with
 * MPI finalized already, -EINVAL for len over INT_MAX, -EIO with MPI's message in err.
 */
int trn_comm_mpi_bootstrap(int *rank, int *size, void *buf, size_t len, char *err, size_t errlen);

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
 *
 * GPU mode, a device buffer: does not block the host. The compute stream waits for the
 * all-reduce (work queued on it after this call runs after it); *busy_ns and *waited_ns are
 * 0, the times come later from trn_comm_gpu_times(). A host buffer: blocks until the result
 * is in it, watching for NCCL errors; *busy_ns is the collective's time on the GPU,
 * *waited_ns how long this call blocked.
 */
int trn_comm_wait(struct trn_comm *c, struct trn_comm_req *r, uint64_t *busy_ns,
                  uint64_t *waited_ns);

/* What trn_comm_wait_times tells of a request it waited for. */
struct trn_comm_times {
    uint64_t busy_ns, waited_ns; /* as trn_comm_wait's */
    /* CPU mode: when the communication thread began and ended the collective, on the
     * monotonic clock (gs_clock_mono_ns); ended - began is busy_ns. GPU mode: 0. */
    uint64_t began_ns, ended_ns;
};
/* trn_comm_wait, also telling when the collective ran (the profiler's comm lane). */
int trn_comm_wait_times(struct trn_comm *c, struct trn_comm_req *r, struct trn_comm_times *t);

/*
 * GPU mode: for the device-buffer all-reduces waited on since the last call, *busy_ns
 * (NULL allowed) gets the sum of their times on the NCCL stream (timing events around each
 * collective) and *exposed_ns how long the compute stream stood at those waits (timing
 * events just before and after each), after its earlier work was done: the communication
 * the computation did not hide. Call it once the compute stream has been synchronised (at
 * the end of a step); earlier it blocks, watching for NCCL errors, until those waits have
 * passed on the GPU (so called before a synchronisation it turns a lost peer into -EIO
 * instead of a hang). 0, -EINVAL for a CPU communicator, -EIO.
 */
int trn_comm_gpu_times(struct trn_comm *c, uint64_t *busy_ns, uint64_t *exposed_ns);

/* Blocking, after every request started before them. */
int trn_comm_barrier(struct trn_comm *c);
int trn_comm_broadcast(struct trn_comm *c, void *buf, size_t bytes, int root);

#endif
