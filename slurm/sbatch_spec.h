/*
 * sbatch_spec.h: what a parsed sbatch request (slurm/sbatch.h) means as a gsched job
 * (struct gs_jobspec, common/jobspec.h), and the --test-only view of that job. This is the
 * step between `gsched sbatch` reading #SBATCH lines and it sending a SubmitRequest.
 *
 * The mapping follows what Slurm does with the same options:
 *   - the job is a batch job (spec->batch, spec->slurm): the script runs once on the first
 *     node with its arguments, and srun inside it starts the tasks;
 *   - nodes from -N (a range MIN-MAX takes MIN, with a warning), else enough nodes for -n at
 *     --ntasks-per-node, else as many as --nodelist names, else 1; tasks per node from
 *     --ntasks-per-node, else -n spread over the nodes (the first take one more);
 *   - GPUs per node from --gres=gpu:N, --gpus-per-node, --gpus (a total: it must divide
 *     evenly over the nodes) or --gpus-per-task x tasks per node. Several of them given
 *     together must agree; the command line's replace the script's. A GPU type ("a100:2")
 *     becomes the node constraint when -C names none, and is dropped with a warning when it
 *     does (a job has one constraint);
 *   - memory per node from --mem, --mem-per-cpu x CPUs per node or --mem-per-gpu x GPUs per
 *     node; --mem=0 ("all of the node") is left as no request, with a warning;
 *   - output "slurm-%j.out" (arrays "slurm-%A_%a.out") unless -o; errors with the output
 *     unless -e; the working directory -D (relative to the current one) or the current one;
 *   - --requeue lets the job be requeued up to GS_SBATCH_REQUEUE_RESTARTS times (Slurm's
 *     MaxBatchRequeue default), --no-requeue and no option never;
 *   - --export=ALL (the default) passes the submitting environment, less the variables that
 *     describe the submitting shell or an enclosing job (PWD, OLDPWD, SHLVL, _, SLURM_*),
 *     plus the VAR=value pairs given; --export=NONE passes only the named ones. A bare VAR
 *     takes its value from the submitting environment (and is skipped when unset there);
 *   - --reservation names the one reservation the job runs in (one name, as
 *     gs_jobspec_check takes it: Slurm's comma-separated list is refused);
 *   - --gpu-bind is checked and passed to the job's srun steps as SLURM_GPU_BIND in its
 *     environment (srun applies it, common/gpu_bind.h); -m/--distribution likewise as
 *     SLURM_DISTRIBUTION (and SLURM_DIST_PLANESIZE for plane=N; common/task_dist.h);
 *   - --licenses becomes spec->licenses (gs_license_list_parse: Slurm's "|" and "@" are
 *     refused);
 *   - --gres-flags, --signal's R: and non-GPU gres are accepted and not acted on: one
 *     warning lists them;
 *   - a heterogeneous job's further components (sb->het) become spec->het, each mapped by
 *     the same rules as component 0's nodes, tasks, GPUs, CPUs, memory and constraint
 *     (its GPU type its constraint when it names none); a problem in one names it:
 *     "run.sh: het component 1: --gpus: ...".
 * Problems are reported one line each, naming where the option came from and the option:
 *     run.sh: --gpus=5: 5 GPUs do not divide evenly over 2 nodes
 * and any problem means no spec. Pure functions of their input; no global state.
 */
#ifndef GS_SBATCH_SPEC_H
#define GS_SBATCH_SPEC_H

#include <stdbool.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "slurm/sbatch.h"

#define GS_SBATCH_REQUEUE_RESTARTS 5
#define GS_SBATCH_DEFAULT_OUTPUT "slurm-%j.out"
#define GS_SBATCH_DEFAULT_ARRAY_OUTPUT "slurm-%A_%a.out"
#define GS_SBATCH_WRAP_NAME "wrap"
#define GS_SBATCH_STDIN_NAME "sbatch"

/* Where and by whom the job is submitted. */
struct gs_sbatch_env {
    const char *cwd;      /* absolute: the submit directory, and what -D is relative to */
    const char *hostname; /* the submit host */
    const char *user;     /* for %u in the --test-only view; may be NULL */
    char *const *envp;    /* NULL-terminated "NAME=value" of the submitter, for --export */
    bool script_on_stdin; /* no script file: the job is named "sbatch", as Slurm names it */
};

/*
 * Builds the job sb asks for. script_text is the script (NULL with --wrap, which becomes
 * "#!/bin/sh\nCMD\n"); script_args the NULL-terminated arguments after the script (may be
 * NULL). On success stores a new spec in *ret (the caller frees it with gs_jobspec_free)
 * and returns 0; it has passed gs_jobspec_check. Otherwise returns -EINVAL (or -ENOMEM)
 * and appends one line per problem to errors. Warnings go to warnings either way; both may
 * be NULL.
 */
int gs_sbatch_to_jobspec(const struct gs_sbatch *sb, const char *script_text,
                         char *const *script_args, const struct gs_sbatch_env *env,
                         struct gs_jobspec **ret, struct gs_buf *errors, struct gs_buf *warnings);

enum gs_sbatch_show_format {
    GS_SBATCH_SHOW_KV = 0, /* "key=value\n" lines */
    GS_SBATCH_SHOW_JSON,   /* one JSON object, the same keys, and a newline */
};

/*
 * Appends what `gsched sbatch --test-only` shows of spec (as built above; script names it:
 * the path given, "(wrap)" or "(stdin)"): every key, always, in this order:
 *   job_name script nodes ntasks tasks_per_node cpus_per_task cpus_per_gpu gpus_per_node
 *   gpus_per_task mem_per_node_mib time_limit time_min partition account qos constraint
 *   reservation nodelist exclude exclusive array array_size dependency kill_on_invalid_dep hold
 *   requeue max_restarts
 * signal workdir stdout stderr stdout_path stderr_path export Times are Slurm's [D-]HH:MM:SS or
 * UNLIMITED; node names a compressed hostlist; array "0-15:4%2" (a single step when the ids have
 * one, else runs "1,3-5"); dependency "afterok:4,after:5+10" ('?' between terms when any one
 * suffices); signal "B:USR1@55". Options not given are "" (null in JSON). stdout_path and
 * stderr_path are the patterns for the first task of the first array element, %x %u %a %n %t %%
 * filled in and made absolute; the job id (%j %J %A) and node name (%N) are not known yet and stay
 * as written. export is "ALL" or "NONE", then ",NAME" for each variable named. A
 * heterogeneous job's keys above describe its component 0 (ntasks too); then come het_size
 * (the components, the first included) and each further component K's shape as
 *   hetK_nodes hetK_ntasks hetK_tasks_per_node hetK_cpus_per_task hetK_cpus_per_gpu
 *   hetK_gpus_per_node hetK_gpus_per_task hetK_mem_per_node_mib hetK_constraint
 * (JSON: "het_size" and "het", an array of objects with those keys unprefixed). An
 * ordinary job has none of these. Returns 0 or -ENOMEM.
 */
int gs_sbatch_show(const struct gs_jobspec *spec, const struct gs_sbatch *sb, const char *script,
                   const char *user, enum gs_sbatch_show_format format, struct gs_buf *out);

#endif
