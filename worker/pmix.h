/*
 * pmix.h: the node's PMIx server, for srun --mpi=pmix steps. An MPI library built with PMIx
 * (Open MPI, MPICH, ...) started as a step's task finds the server through the PMIX_*
 * variables the task gets, learns its rank, its peers and where they run from the step's
 * namespace here, and swaps its wire-up data with every other rank at fences: each node's
 * server hands its part to the worker, which sends it to gschedd (PmixFence); gschedd joins
 * the parts of all the step's nodes and sends them back (PmixFenceDone), and the server
 * gives them to its tasks. MPI programs so start with srun alone, without mpirun.
 *
 * One server per worker process (libpmix allows no more), started by the first step that
 * asks for one and kept until the worker stops. A step's namespace ("gsched.<job>.<step>")
 * lives from its launch here until its last task here has ended. libpmix calls back on a
 * thread of its own: those calls are queued and handed to the loop with uv_async_send, so
 * everything else here, and every callback below, runs on the worker's loop.
 *
 * Built only with libpmix (GSCHED_HAVE_PMIX); without it wrk_pmix_new() fails with
 * -EOPNOTSUPP and says so, and a step asking for PMIx fails to launch.
 */
#ifndef WRK_PMIX_H
#define WRK_PMIX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/error.h"

struct wrk_pmix;

/* A fence's part for this node, to send to gschedd (bytes valid during the call). */
typedef void (*wrk_pmix_fence_cb)(void *data, uint64_t job_id, uint32_t step, uint32_t attempt,
                                  uint32_t seq, const void *bytes, size_t len);
/* A task of the step called MPI_Abort (PMIx_Abort): status and its message. */
typedef void (*wrk_pmix_abort_cb)(void *data, uint64_t job_id, uint32_t step, int status,
                                  const char *msg);

/* What a step's namespace says; borrowed for the call. */
struct wrk_pmix_step {
    uint64_t job_id;
    uint32_t step; /* TaskRef.step */
    uint32_t attempt;
    const char *const *nodes; /* the step's nodes, in node order */
    size_t nnodes;
    size_t here;                /* this node's index in nodes */
    const uint32_t *rank_nodes; /* each rank's index in nodes, in rank order */
    size_t nranks;
    uid_t uid; /* whom its tasks run as */
    gid_t gid;
};

/*
 * Starts the server, its files under dir (made, mode 0700; removed at close when libpmix
 * left it empty), this node named node_name to the tasks. fence and abort_cb are called on loop
 * with data. 0 with *ret, or a negative errno with err.
 */
int wrk_pmix_new(uv_loop_t *loop, const char *dir, const char *node_name, wrk_pmix_fence_cb fence,
                 wrk_pmix_abort_cb abort_cb, void *data, struct wrk_pmix **ret,
                 struct gs_error *err);
/* Fails the fences in flight, stops the server and closes its handle; p is freed once it is
 * closed (the loop runs on). NULL does nothing. */
void wrk_pmix_close(struct wrk_pmix *p);

/* Registers s's namespace and its tasks here. 0, or a negative errno with err. */
int wrk_pmix_step_add(struct wrk_pmix *p, const struct wrk_pmix_step *s, struct gs_error *err);
/* The PMIX_* variables of rank of a registered step: a malloc'd NULL-terminated array of
 * malloc'd "KEY=VALUE" (wrk_pmix_env_free). 0, -ENOENT (no such step), -EIO, -ENOMEM. */
int wrk_pmix_task_env(struct wrk_pmix *p, uint64_t job_id, uint32_t step, uint32_t rank,
                      char ***ret_env);
void wrk_pmix_env_free(char **env);
/* The step's last task here ended: its fences in flight fail, its namespace goes. Nothing
 * for a step that has none. */
void wrk_pmix_step_end(struct wrk_pmix *p, uint64_t job_id, uint32_t step);
/* gschedd's PmixFenceDone: the fence's tasks go on with bytes (code 0), or see it fail. */
void wrk_pmix_fence_done(struct wrk_pmix *p, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                         const void *bytes, size_t len);

#endif
