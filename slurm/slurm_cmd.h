/*
 * slurm_cmd.h: the plumbing the Slurm-named commands (squeue, sinfo, sacct, scancel,
 * scontrol) share, as opposed to what they print (slurm_fmt.h): asking gschedd for the
 * queue, the partitions and the nodes, turning what the user typed into the job ids to act
 * on, choosing the -o/-O layout, and writing the listing out.
 *
 * Every function here prints its own failure as Slurm does ("squeue: error: ...", cmd names
 * the command) and returns the exit status to leave with: 0, or 1 for every failure, since
 * scripts written against Slurm test for 1. Single-threaded, like the CLI.
 */
#ifndef GS_SLURM_SLURM_CMD_H
#define GS_SLURM_SLURM_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/frame.h"
#include "slurm/slurm_fmt.h"

/* The most job references one command line may hold (-j lists, operands). */
#define SLURM_MAX_REFS 256

/*
 * Sends req to gschedd at socket_opt's socket (--socket, else as cli_socket_path finds it)
 * and stores the reply in *ret_reply (free with gs_proto_envelope_free) when its body is
 * want. Returns 0, or 1 with the failure printed.
 */
int slurm_call(const char *socket_opt, Gs__Envelope *req, Gs__Envelope__BodyCase want,
               Gs__Envelope **ret_reply);
/*
 * As slurm_call, with gschedd's refusals in the command's words: "CMD: error: MESSAGE" (and
 * its details), or enoent when not NULL and the refusal is -ENOENT; another answer than
 * want is "CMD: error: gschedd answered with X, not Y (too old a gschedd?)".
 */
int slurm_call_as(const char *cmd, const char *socket_opt, Gs__Envelope *req,
                  Gs__Envelope__BodyCase want, const char *enoent, Gs__Envelope **ret_reply);

/*
 * Asks gschedd for the jobs refs name (none: every job; at most SLURM_MAX_REFS are sent),
 * finished ones too when include_finished, into *ret_reply (a QUEUE_REPLY). gschedd matches
 * an id against a job's own and its array's, so 123 brings 123_*. Returns 0 or 1.
 */
int slurm_fetch_jobs(const char *socket_opt, const struct slurm_job_ref *refs, size_t nrefs,
                     bool include_finished, Gs__Envelope **ret_reply);

/* As slurm_fetch_jobs, each job with its step records (JobInfo.steps): sacct, sstat. */
int slurm_fetch_steps(const char *socket_opt, const struct slurm_job_ref *refs, size_t nrefs,
                      bool include_finished, Gs__Envelope **ret_reply);

/* The partitions (PARTITIONS_REPLY) and the nodes (NODES_REPLY), both freed by the caller. */
int slurm_fetch_cluster(const char *socket_opt, Gs__Envelope **ret_parts, Gs__Envelope **ret_nodes);

/*
 * Refuses a ref naming one component of a heterogeneous job ("42+1") where a command acts
 * on jobs: gschedd cancels, holds, releases, requeues and updates a heterogeneous job only
 * as a whole, and acting on all of 42 when 42+1 was asked for would do more than was asked.
 * Prints "CMD: error: 42+1: gsched acts on a heterogeneous job as a whole; use 42" for the
 * first such ref and returns 1; 0 when none of the n is one.
 */
int slurm_refs_whole(const char *cmd, const struct slurm_job_ref *refs, size_t n);

/*
 * The job ids a command acts on (scancel, scontrol hold/release/requeue): when f names only
 * plain job ids, those ids as typed (gschedd expands an array's itself); when some ref names
 * array elements or f filters on more than ids, the ids of the queue's jobs (not ended) that
 * f matches. A ref naming a component ("42+1") is refused first (slurm_refs_whole), before
 * gschedd is asked anything, so that nothing is acted on. *ret_ids is caller-freed (possibly
 * with *ret_n 0). ret_queue may be NULL; else it gets the queue reply the ids came from, or
 * NULL when none was asked for. Returns 0 or 1.
 */
int slurm_resolve_ids(const char *cmd, const char *socket_opt, const struct slurm_filter *f,
                      uint64_t **ret_ids, size_t *ret_n, Gs__Envelope **ret_queue);

/*
 * -j JOBS (squeue, sacct): the comma-separated list's jobs appended to refs[*n...] (at most
 * SLURM_MAX_REFS), else "CMD: error: Invalid job id: WORD" or "at most 256 job ids". 0/1.
 */
int slurm_jobs_option(const char *cmd, const char *list, struct slurm_job_ref *refs, size_t *n);

/*
 * -t/-s STATES for a job filter: sets *mask, else prints "CMD: error: Invalid WHAT
 * specified: WORD" (what: "job state" for squeue and scancel, "state" for sacct). 0 or 1.
 */
int slurm_states_option(const char *cmd, const char *what, const char *list, uint32_t *mask);

/*
 * The layout squeue and sinfo print: -o format when given, else -O names (20 wide unless
 * they say), else the command's fallback -o format. Returns 0 or 1 ("CMD: error: why").
 */
int slurm_format_choose(const char *cmd, const char *format, const char *names,
                        const char *fallback, const struct slurm_field *fields, size_t nfields,
                        struct slurm_format *ret);

/*
 * Writes the listing built in out to stdout when rc (how building it went) is 0. Returns 0,
 * or 1 with "CMD: error: cannot write the listing" when rc < 0 or the write failed.
 */
int slurm_print(const char *cmd, int rc, const struct gs_buf *out);

/* The caller's user name for --me and sacct's default, or the uid when it has none. */
const char *slurm_my_name(char *out, size_t size);
/* gid's group name (getgrgid), or the number in buf when it has none. */
const char *slurm_group_name(uint32_t gid, char *buf, size_t size);

#endif
