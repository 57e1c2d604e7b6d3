/*
 * pmi.h: the node's PMI server for srun --mpi=pmi2 steps, speaking both PMI wire protocols
 * over a socket each task inherits (PMI_FD): PMI-1 ("simple PMI", one "cmd=NAME key=value
 * ..." line per request; pmi1.c), which MPICH's own client speaks, as Debian's MPICH does,
 * and PMI-2 (length-prefixed "cmd=NAME;key=value;" requests; pmi2.c), which Slurm's
 * libpmi2 speaks. A rank puts its wire-up data into the step's key/value space and enters
 * a barrier; once every rank of the step on this node has, the node's puts since the last
 * barrier go to gschedd as a fence part (the same PmixFence a PMIx step's server sends,
 * worker/pmix.h), gschedd joins the parts of all the step's nodes and sends them back, and
 * every key is then there for any rank to get. Slurm's mpi/pmi2 plugin serves both
 * protocols too: MPICH programs start with srun alone, as under Slurm.
 *
 * Everything runs on the worker's loop: each task's end of the socket pair is a uv_pipe_t.
 * A step's space lives from its launch here until its last task here has ended. Nothing
 * but the task holds the other end, so no other process can talk to a step's server.
 * Not served: spawn, publish/lookup of names, job connect (each refused with an error the
 * client reports), and PMI_PORT (a task reaches its server only through its socket).
 */
#ifndef WRK_PMI_H
#define WRK_PMI_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/error.h"
#include "worker/pmix.h"

struct wrk_pmi;

/* fence sends a step's part to gschedd; abort_cb is a task's PMI_Abort. Both on loop. */
int wrk_pmi_new(uv_loop_t *loop, wrk_pmix_fence_cb fence, wrk_pmix_abort_cb abort_cb, void *data,
                struct wrk_pmi **ret);
/* Drops every step (their tasks' sockets closed); p is freed once their handles are closed
 * (the loop runs on). NULL does nothing. */
void wrk_pmi_close(struct wrk_pmi *p);

/* Registers s's key/value space here (its uid and gid are not used: the socket is the
 * task's alone). 0, or a negative errno with err. */
int wrk_pmi_step_add(struct wrk_pmi *p, const struct wrk_pmix_step *s, struct gs_error *err);
/*
 * The socket for rank of a registered step: the task's end is *ret_fd, to be inherited by
 * it and closed here once it is forked (or not); *ret_env is a malloc'd NULL-terminated
 * array of malloc'd "PMI_FD=...", "PMI_RANK=...", "PMI_SIZE=...", "PMI_JOBID=..."
 * (wrk_pmix_env_free). 0, -ENOENT (no such step), -EEXIST (the rank has one), -errno.
 */
int wrk_pmi_task(struct wrk_pmi *p, uint64_t job_id, uint32_t step, uint32_t rank, int *ret_fd,
                 char ***ret_env);
/* The step's last task here ended: its sockets close and its space goes. Nothing for a
 * step that has none. */
void wrk_pmi_step_end(struct wrk_pmi *p, uint64_t job_id, uint32_t step);
/* gschedd's PmixFenceDone for a step here: its barrier ends (every part's keys kept) or
 * fails. -ENOENT when no step of that name is here (a PMIx step's answer), else 0. */
int wrk_pmi_fence_done(struct wrk_pmi *p, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                       const void *bytes, size_t len);

/*
 * PMI_process_mapping for ranks whose nodes (indices) are rank_nodes: "(vector,(N,C,K),...)",
 * each triple C nodes from node N holding K consecutive ranks each, as MPICH reads it to
 * find which ranks share a node. 0, or -ENOSPC when it does not fit size. Pure.
 */
int wrk_pmi_process_mapping(const uint32_t *rank_nodes, size_t n, char *out, size_t size);

#endif
