/*
 * test_srun_alloc.c: what an allocation asks for. salloc's options (sbatch's) become the
 * job, named after the command's program unless -J says otherwise; srun outside a job hands
 * on only the options sbatch also reads, as --NAME=VALUE words; bad options make no job.
 * Also srun's --input and --pty, and -m (--distribution) with its host lists.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jobspec.h"
#include "common/units.h"
#include "slurm/alloc.h"
#include "slurm/srun.h"

Test(alloc_spec, salloc_options_make_the_job_named_after_the_program)
{
    char *opts[] = {"-N2", "--ntasks-per-node=2", "-t", "10", "--gres=gpu:1"};
    struct gs_jobspec *spec = NULL;

    cr_assert_eq(cli_alloc_spec("salloc", opts, 5, "/bin/bash", &spec), 0);
    cr_assert_eq(spec->nodes, 2);
    cr_assert_eq(spec->tasks_per_node, 2);
    cr_assert_eq(spec->gpus_per_node, 1);
    cr_assert_eq(spec->time_limit_s, 600);
    cr_assert_str_eq(spec->name, "bash");
    cr_assert(spec->batch && spec->slurm, "a Slurm batch-like job");
    cr_assert_not(spec->allocation, "only gschedd sets it");
    gs_jobspec_free(spec);
}

Test(alloc_spec, job_name_option_wins_and_no_options_ask_for_one_node)
{
    char *named[] = {"-J", "interactive"};
    struct gs_jobspec *spec = NULL;

    cr_assert_eq(cli_alloc_spec("salloc", named, 2, "sh", &spec), 0);
    cr_assert_str_eq(spec->name, "interactive");
    cr_assert_eq(spec->nodes, 1);
    cr_assert_eq(spec->time_limit_s, GS_DURATION_INFINITE);
    gs_jobspec_free(spec);
}

Test(alloc_spec, bad_options_make_no_job, .init = cr_redirect_stderr)
{
    char *bad[] = {"--nodse=2"};
    char *bad_time[] = {"-t", "soon"};
    struct gs_jobspec *spec = NULL;

    cr_assert_lt(cli_alloc_spec("salloc", bad, 1, "sh", &spec), 0);
    cr_assert_lt(cli_alloc_spec("salloc", bad_time, 2, "sh", &spec), 0);
    cr_assert_null(spec);
}

Test(srun_alloc, only_the_options_sbatch_reads_go_to_the_allocation)
{
    char *argv[] = {"srun", "-N2", "-n",           "4",       "-l",  "-t",   "5",
                    "-p",   "gpu", "--gres=gpu:1", "--exact", "-Jx", "echo", "hi"};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    const char *want[] = {"--nodes=2",       "--ntasks=4",   "--time=5",
                          "--partition=gpu", "--gres=gpu:1", "--job-name=x"};
    char **words = NULL;

    cr_assert_eq(cli_srun_parse(&a, 14, argv), 0);
    cr_assert_eq(a.ncommand, 2);
    cr_assert_str_eq(a.command[0], "echo");
    cr_assert_eq(a.nalloc, 6);
    cr_assert_eq(cli_srun_alloc_words(&a, &words), 0);
    for (int i = 0; i < 6; i++) {
        cr_assert_str_eq(words[i], want[i]);
        free(words[i]);
    }
    cr_assert_null(words[6]);
    free(words);
}

Test(srun_alloc, srun_words_make_the_job)
{
    char *argv[] = {"srun", "-N2", "--ntasks-per-node=3", "-l", "python3", "x.py"};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct gs_jobspec *spec = NULL;
    char **words = NULL;

    cr_assert_eq(cli_srun_parse(&a, 6, argv), 0);
    cr_assert_eq(cli_srun_alloc_words(&a, &words), 0);
    cr_assert_eq(cli_alloc_spec("srun", words, a.nalloc, a.command[0], &spec), 0);
    cr_assert_eq(spec->nodes, 2);
    cr_assert_eq(spec->tasks_per_node, 3);
    cr_assert_str_eq(spec->name, "python3");
    gs_jobspec_free(spec);
    for (int i = 0; i < a.nalloc; i++)
        free(words[i]);
    free(words);
}

/* The request's input fields after parsing argv (argc words). */
static int input_of(int argc, char **argv, struct cli_srun_args *a)
{
    *a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    if (cli_srun_parse(a, argc, argv) != 0)
        return -EINVAL;
    return cli_srun_io_request(a);
}

Test(srun_alloc, input_modes, .init = cr_redirect_stderr)
{
    char *plain[] = {"srun", "cat"};
    char *none[] = {"srun", "--input=none", "cat"};
    char *all[] = {"srun", "-i", "all", "cat"};
    char *task[] = {"srun", "-i3", "cat"};
    char *file[] = {"srun", "--input", "in-%t.txt", "cat"};
    char *digits_file[] = {"srun", "-i", "3x", "cat"};
    char *bad[] = {"srun", "-i", "in-%q", "cat"};
    char *huge[] = {"srun", "-i", "99999999999", "cat"};
    char *pty[] = {"srun", "--pty", "bash"};
    char *pty_task[] = {"srun", "--pty", "-i", "2", "bash"};
    struct cli_srun_args a;

    cr_assert_eq(input_of(2, plain, &a), 0);
    cr_assert(a.req.input && a.req.input_all && a.req.input_acks, "Slurm's default: all tasks");
    cr_assert_eq(input_of(3, none, &a), 0);
    cr_assert(!a.req.input && a.req.stdin_pattern[0] == '\0');
    cr_assert_eq(input_of(4, all, &a), 0);
    cr_assert(a.req.input && a.req.input_all);
    cr_assert_eq(input_of(3, task, &a), 0);
    cr_assert(a.req.input && !a.req.input_all && a.req.input_rank == 3);
    cr_assert_eq(input_of(4, file, &a), 0);
    cr_assert(!a.req.input);
    cr_assert_str_eq(a.req.stdin_pattern, "in-%t.txt");
    cr_assert_eq(input_of(4, digits_file, &a), 0, "not all digits: a file name");
    cr_assert_str_eq(a.req.stdin_pattern, "3x");
    cr_assert_eq(input_of(4, bad, &a), -EINVAL, "an unknown placeholder is refused");
    cr_assert_eq(input_of(4, huge, &a), -EINVAL);
    cr_assert_eq(input_of(3, pty, &a), 0);
    cr_assert(a.req.pty && a.unbuffered, "--pty passes output on as it comes");
    cr_assert_eq(input_of(5, pty_task, &a), -EINVAL, "a terminal is task 0's");
}

/* A step's --gres: its gpu entry is GPUs per node; other gres change nothing; none and gpu:0
 * ask for no GPU, and a later gpu entry takes that back. */
Test(srun_alloc, step_gres_is_gpus_per_node, .init = cr_redirect_stderr)
{
    char *typed[] = {"srun", "--gres=nic:1,gpu:a100:3", "true"};
    char *plain[] = {"srun", "--gres", "gpu", "true"};
    char *other[] = {"srun", "--gres=nic:2", "true"};
    char *zero[] = {"srun", "--gres=gpu:0", "true"};
    char *none[] = {"srun", "--gres=none", "true"};
    char *again[] = {"srun", "--gres=none", "--gres=gpu:2", "true"};
    char *bad[] = {"srun", "--gres=gpu:1:2", "true"};
    struct cli_srun_args a;

    a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    cr_assert_eq(cli_srun_parse(&a, 3, typed), 0);
    cr_assert_eq(a.req.gpus_per_node, 3);
    a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    cr_assert_eq(cli_srun_parse(&a, 4, plain), 0);
    cr_assert_eq(a.req.gpus_per_node, 1, "gpu alone is one");
    a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    cr_assert_eq(cli_srun_parse(&a, 3, other), 0);
    cr_assert_eq(a.req.gpus_per_node, 0);
    cr_assert_not(a.req.no_gpus, "no gpu entry: the job's GPUs, as without --gres");
    a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    cr_assert_eq(cli_srun_parse(&a, 3, zero), 0);
    cr_assert(a.req.gpus_per_node == 0 && a.req.no_gpus);
    a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    cr_assert_eq(cli_srun_parse(&a, 3, none), 0);
    cr_assert(a.req.gpus_per_node == 0 && a.req.no_gpus);
    a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    cr_assert_eq(cli_srun_parse(&a, 4, again), 0);
    cr_assert(a.req.gpus_per_node == 2 && !a.req.no_gpus);
    a = (struct cli_srun_args){.req = GS__STEP_LAUNCH_REQUEST__INIT};
    cr_assert_eq(cli_srun_parse(&a, 3, bad), -EINVAL);
}

Test(srun_alloc, output_modes, .init = cr_redirect_stderr)
{
    char *argv[] = {"srun", "-o", "none", "--error=2", "--open-mode=a", "cat"};
    char *file[] = {"srun", "--output=out-%4t-%N.txt", "cat"};
    char *bad_mode[] = {"srun", "--open-mode=sideways", "cat"};
    char *bad[] = {"srun", "-e", "%", "cat"};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args b = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args c = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args d = {.req = GS__STEP_LAUNCH_REQUEST__INIT};

    cr_assert_eq(cli_srun_parse(&a, 6, argv), 0);
    cr_assert(a.out.given && a.out.mode == CLI_SRUN_IO_NONE);
    cr_assert(a.err.given && a.err.mode == CLI_SRUN_IO_TASK && a.err.rank == 2);
    cr_assert(a.append);
    cr_assert_eq(cli_srun_parse(&b, 3, file), 0);
    cr_assert(b.out.mode == CLI_SRUN_IO_FILE && !b.err.given);
    cr_assert_str_eq(b.out.pattern, "out-%4t-%N.txt");
    cr_assert_eq(cli_srun_parse(&c, 3, bad_mode), -EINVAL);
    cr_assert_eq(cli_srun_parse(&d, 4, bad), -EINVAL);
}

/* Where each task's streams go, for a step of 4 tasks on 2 nodes laid out cyclic. */
Test(srun_alloc, output_sinks)
{
    char dir[] = "/tmp/srun-sinks-XXXXXX";
    char *nodes[] = {"n1", "n2"};
    uint32_t tpn[] = {2, 2}, rank_nodes[] = {0, 1, 0, 1};
    Gs__StepLaunchReply rep = GS__STEP_LAUNCH_REPLY__INIT;
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_sinks k;
    char path[256];

    cr_assert_not_null(mkdtemp(dir));
    unsetenv("SLURM_JOB_NODELIST");
    rep.ntasks = 4;
    rep.step_id = 7;
    rep.n_nodes = rep.n_tasks_per_node = 2;
    rep.nodes = nodes;
    rep.tasks_per_node = tpn;
    rep.n_rank_nodes = 4;
    rep.rank_nodes = rank_nodes;
    a.job_id = 42;
    a.req.workdir = dir;
    cr_assert_eq(cli_srun_io_parse("output", "o-%s-%N.txt", &a.out), 0);
    cr_assert_eq(cli_srun_io_parse("error", "1", &a.err), 0);
    cr_assert_eq(cli_srun_sinks_open(&k, &a, &rep), 0);
    cr_assert_eq(k.nfiles, 2, "one file per node");
    cr_assert_eq(cli_srun_sink_fd(&k, 0, 0), cli_srun_sink_fd(&k, 2, 0), "ranks 0, 2 on n1");
    cr_assert_neq(cli_srun_sink_fd(&k, 0, 0), cli_srun_sink_fd(&k, 1, 0));
    cr_assert_eq(cli_srun_sink_fd(&k, 1, 1), STDERR_FILENO, "-e 1: task 1's stderr");
    cr_assert_eq(cli_srun_sink_fd(&k, 0, 1), -1, "and no other's");
    snprintf(path, sizeof(path), "%s/o-7-n2.txt", dir);
    cr_assert_eq(access(path, F_OK), 0, "%s", path);
    cli_srun_sinks_close(&k);
    unlink(path);
    snprintf(path, sizeof(path), "%s/o-7-n1.txt", dir);
    unlink(path);

    /* -o FILE alone: stderr into the same file; an older gschedd's reply: block layout */
    rep.n_rank_nodes = 0;
    a.err = (struct cli_srun_io){0};
    cr_assert_eq(cli_srun_io_parse("output", "t%t-n%n", &a.out), 0);
    cr_assert_eq(cli_srun_sinks_open(&k, &a, &rep), 0);
    cr_assert_eq(k.nfiles, 4);
    cr_assert_eq(cli_srun_sink_fd(&k, 3, 0), cli_srun_sink_fd(&k, 3, 1));
    snprintf(path, sizeof(path), "%s/t1-n0", dir);
    cr_assert_eq(access(path, F_OK), 0, "block: rank 1 on the first node");
    snprintf(path, sizeof(path), "%s/t2-n1", dir);
    cr_assert_eq(access(path, F_OK), 0);
    cli_srun_sinks_close(&k);
    for (int t = 0; t < 4; t++) {
        snprintf(path, sizeof(path), "%s/t%d-n%d", dir, t, t / 2);
        unlink(path);
    }
    cr_assert_eq(rmdir(dir), 0, "nothing else was written");
}

/* The value of the request's environment variable key, NULL when it has none. */
static const char *req_env(const Gs__StepLaunchRequest *req, const char *key)
{
    for (size_t i = 0; i < req->n_env; i++)
        if (strcmp(req->env[i]->key, key) == 0)
            return req->env[i]->value;
    return NULL;
}

/* -m, else sbatch's SLURM_DISTRIBUTION (plane's size from SLURM_DIST_PLANESIZE); a typo
 * sends nothing; the tasks see -m as SLURM_DISTRIBUTION. */
Test(srun_dist, option_or_environment, .init = cr_redirect_stderr)
{
    char *given[] = {"srun", "-m", "cyclic:fcyclic", "true"};
    char *plain[] = {"srun", "true"};
    char *typo[] = {"srun", "--distribution=plane=x", "true"};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args b = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args c = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_owned own = {.workdir = GS_BUF_INIT}, own2 = {.workdir = GS_BUF_INIT};

    setenv("SLURM_JOB_ID", "5", 1);
    setenv("SLURM_DISTRIBUTION", "plane", 1);
    setenv("SLURM_DIST_PLANESIZE", "4", 1);
    cr_assert_eq(cli_srun_parse(&a, 4, given), 0);
    cr_assert_eq(cli_srun_request(&a, &own), 0);
    cr_assert_str_eq(a.req.distribution, "cyclic:fcyclic", "-m wins over the environment");
    cr_assert_eq(a.dist.sockets, GS_DIST_SOCKETS_FCYCLIC);
    cr_assert_str_eq(req_env(&a.req, "SLURM_DISTRIBUTION"), "cyclic:fcyclic");
    cr_assert_eq(cli_srun_parse(&b, 2, plain), 0);
    cr_assert_eq(cli_srun_request(&b, &own2), 0);
    cr_assert_str_eq(b.req.distribution, "plane=4");
    cr_assert_eq(b.dist.plane, 4);
    cr_assert_eq(cli_srun_parse(&c, 3, typo), -EINVAL);
    cli_srun_owned_release(&own);
    cli_srun_owned_release(&own2);
}

/* -m arbitrary: SLURM_HOSTFILE's hosts, else -w's with its repeats; not both. */
Test(srun_dist, arbitrary_host_lists, .init = cr_redirect_stderr)
{
    char path[] = "/tmp/srun_hostfile.XXXXXX";
    int fd = mkstemp(path);
    char *from_file[] = {"srun", "-m", "arbitrary", "true"};
    char *from_w[] = {"srun", "-m", "arbitrary", "-w", "n1,n1,n2", "true"};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args b = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args c = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_owned own = {.workdir = GS_BUF_INIT}, own2 = {.workdir = GS_BUF_INIT};
    struct cli_srun_owned own3 = {.workdir = GS_BUF_INIT};
    const char text[] = "n2\nn1, n[3-4]\n\n";

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
    close(fd);
    setenv("SLURM_JOB_ID", "5", 1);
    setenv("SLURM_HOSTFILE", path, 1);
    cr_assert_eq(cli_srun_parse(&a, 4, from_file), 0);
    cr_assert_eq(cli_srun_request(&a, &own), 0);
    cr_assert_eq(a.req.n_task_nodes, 4);
    cr_assert_str_eq(a.req.task_nodes[0], "n2");
    cr_assert_str_eq(a.req.task_nodes[1], "n1");
    cr_assert_str_eq(a.req.task_nodes[3], "n4");
    cr_assert_eq(cli_srun_parse(&c, 6, from_w), 0);
    cr_assert_eq(cli_srun_request(&c, &own3), -EINVAL, "a host file and -w");
    unsetenv("SLURM_HOSTFILE");
    cr_assert_eq(cli_srun_parse(&b, 6, from_w), 0);
    cr_assert_eq(cli_srun_request(&b, &own2), 0);
    cr_assert_eq(b.req.n_task_nodes, 3);
    cr_assert_str_eq(b.req.task_nodes[1], "n1");
    cr_assert_eq(b.req.n_nodelist, 0, "-w is the host list, not a node set");
    unlink(path);
    cli_srun_owned_release(&own);
    cli_srun_owned_release(&own2);
    cli_srun_owned_release(&own3);
}

/* -t is the step's own limit (Slurm's forms, 0 none); -W counts seconds, 0 allowed. */
Test(srun_limits, time_and_wait, .init = cr_redirect_stderr)
{
    char *timed[] = {"srun", "-t", "1:30", "-W", "0", "true"};
    char *none[] = {"srun", "--time=0", "--wait=5", "true"};
    char *bad_time[] = {"srun", "-t", "soon", "true"};
    char *bad_wait[] = {"srun", "-W", "-1", "true"};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args b = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args c = {.req = GS__STEP_LAUNCH_REQUEST__INIT};

    cr_assert_eq(cli_srun_parse(&a, 6, timed), 0);
    cr_assert_eq(a.req.time_limit_s, 90);
    cr_assert_eq(a.wait_s, 0);
    cr_assert_eq(cli_srun_parse(&b, 4, none), 0);
    cr_assert_eq(b.req.time_limit_s, 0);
    cr_assert_eq(b.wait_s, 5);
    cr_assert_eq(cli_srun_parse(&c, 4, bad_time), -EINVAL);
    cr_assert_eq(cli_srun_parse(&c, 4, bad_wait), -EINVAL);
}

/* --threads-per-core and --hint over the job's setting (SLURM_THREADS_PER_CORE in srun's
 * environment): the tasks see the step's; --ntasks-per-core only 1. */
Test(srun_threads, hint_and_threads_per_core, .init = cr_redirect_stderr)
{
    char *nomt[] = {"srun", "--hint=nomultithread", "true"};
    char *two[] = {"srun", "--threads-per-core=2", "--ntasks-per-core=1", "true"};
    char *all[] = {"srun", "--hint=compute_bound", "true"};
    char *plain[] = {"srun", "--hint=memory_bound", "true"};
    char *bad[][3] = {{"srun", "--hint=fast", "true"},
                      {"srun", "--threads-per-core=65", "true"},
                      {"srun", "--ntasks-per-core=2", "true"}};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args b = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args c = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args d = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_owned own[4] = {{.workdir = GS_BUF_INIT},
                                    {.workdir = GS_BUF_INIT},
                                    {.workdir = GS_BUF_INIT},
                                    {.workdir = GS_BUF_INIT}};

    setenv("SLURM_JOB_ID", "5", 1);
    setenv("SLURM_THREADS_PER_CORE", "1", 1); /* the job's: sbatch --hint=nomultithread */
    cr_assert_eq(cli_srun_parse(&a, 3, nomt), 0);
    cr_assert_eq(cli_srun_request(&a, &own[0]), 0);
    cr_assert_eq(a.req.threads_per_core, 1);
    cr_assert_str_eq(req_env(&a.req, "SLURM_THREADS_PER_CORE"), "1");
    cr_assert_eq(cli_srun_parse(&b, 4, two), 0);
    cr_assert_eq(cli_srun_request(&b, &own[1]), 0);
    cr_assert_eq(b.req.threads_per_core, 2);
    cr_assert_str_eq(req_env(&b.req, "SLURM_THREADS_PER_CORE"), "2");
    cr_assert_eq(cli_srun_parse(&c, 3, all), 0);
    cr_assert_eq(cli_srun_request(&c, &own[2]), 0);
    cr_assert_eq(c.req.threads_per_core, GS_STEP_THREADS_ALL, "every thread, over the job's");
    cr_assert_null(req_env(&c.req, "SLURM_THREADS_PER_CORE"));
    cr_assert_eq(cli_srun_parse(&d, 3, plain), 0, "memory_bound is warned about");
    cr_assert_eq(cli_srun_request(&d, &own[3]), 0);
    cr_assert_eq(d.req.threads_per_core, 0, "the job's");
    cr_assert_str_eq(req_env(&d.req, "SLURM_THREADS_PER_CORE"), "1");
    for (size_t i = 0; i < 3; i++) {
        struct cli_srun_args e = {.req = GS__STEP_LAUNCH_REQUEST__INIT};

        cr_assert_eq(cli_srun_parse(&e, 3, bad[i]), -EINVAL, "%s", bad[i][1]);
    }
    unsetenv("SLURM_THREADS_PER_CORE");
    for (size_t i = 0; i < 4; i++)
        cli_srun_owned_release(&own[i]);
}

/* What task `rank` of an MPMD step prints: the program --multi-prog builds, run by sh. */
static const char *mpmd_task(const struct gs_buf *script, int rank)
{
    static char out[256];
    char cmd[64];
    FILE *f;
    size_t n;

    snprintf(cmd, sizeof(cmd), "SLURM_PROCID=%d /bin/sh -c \"$MP\" mp 2>&1", rank);
    cr_assert_eq(setenv("MP", script->data, 1), 0);
    f = popen(cmd, "r");
    cr_assert_not_null(f);
    n = fread(out, 1, sizeof(out) - 1, f);
    out[n] = '\0';
    pclose(f);
    return out;
}

/* --multi-prog: each task runs its own line, %t its rank, %o its offset in the line's ranks,
 * * the rest; quotes group words; a rank no line names fails; bad lines name their place. */
Test(srun_multi_prog, each_task_runs_its_line)
{
    char path[] = "/tmp/srun_mp.XXXXXX", why[300] = "";
    int fd = mkstemp(path);
    const char conf[] = "# MPMD\n"
                        "0      echo 'first %t' \"a b\"\n"
                        "\n"
                        "1-2,5  echo rest %t off=%o\n";
    struct gs_buf script = GS_BUF_INIT;

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, conf, sizeof(conf) - 1), (ssize_t)sizeof(conf) - 1);
    close(fd);
    cr_assert_eq(cli_srun_multi_prog(path, &script, why, sizeof(why)), 0, "%s", why);
    cr_assert_str_eq(mpmd_task(&script, 0), "first 0 a b\n");
    cr_assert_str_eq(mpmd_task(&script, 2), "rest 2 off=1\n");
    cr_assert_str_eq(mpmd_task(&script, 5), "rest 5 off=2\n");
    cr_assert_str_eq(mpmd_task(&script, 3),
                     "srun: error: task 3: no line of the --multi-prog file names it\n");
    gs_buf_reset(&script);
    fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_eq(write(fd, "4 echo four\n* echo any %t %o\n", 29), 29);
    close(fd);
    cr_assert_eq(cli_srun_multi_prog(path, &script, why, sizeof(why)), 0, "%s", why);
    cr_assert_str_eq(mpmd_task(&script, 7), "any 7 7\n");
    cr_assert_str_eq(mpmd_task(&script, 4), "four\n");
    gs_buf_reset(&script);
    fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_eq(write(fd, "0 true\n0-1 false\n", 17), 17);
    close(fd);
    cr_assert_eq(cli_srun_multi_prog(path, &script, why, sizeof(why)), -EINVAL);
    cr_assert_not_null(strstr(why, ":2: task 0 is on an earlier line too"), "%s", why);
    fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_eq(write(fd, "x-1 true\n", 9), 9);
    close(fd);
    cr_assert_eq(cli_srun_multi_prog(path, &script, why, sizeof(why)), -EINVAL);
    cr_assert_not_null(strstr(why, ":1: 'x-1' is not a list of task ranks"), "%s", why);
    unlink(path);
    gs_buf_release(&script);
}

/* --ntasks-per-gpu binds each K tasks to one GPU unless --gpu-bind says otherwise, and the
 * tasks see both counts; the options Slurm's srun excludes are refused; outside a job they
 * shape the allocation. */
Test(srun_alloc, per_gpu_options, .init = cr_redirect_stderr)
{
    char *per[] = {"srun", "--ntasks-per-gpu=2", "--cpus-per-gpu", "3", "true"};
    char *bound[] = {"srun", "--ntasks-per-gpu=2", "--gpu-bind=closest", "true"};
    char *bad[][5] = {{"srun", "--cpus-per-gpu=2", "-c", "2", "true"},
                      {"srun", "--ntasks-per-gpu=2", "--ntasks-per-node=2", "true", NULL},
                      {"srun", "--ntasks-per-gpu=2", "--gpus-per-task=1", "true", NULL},
                      {"srun", "--gres=none", "--cpus-per-gpu=2", "true", NULL}};
    int nbad[] = {5, 4, 4, 4};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args b = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_owned own[2] = {{.workdir = GS_BUF_INIT}, {.workdir = GS_BUF_INIT}};
    char **words = NULL;

    setenv("SLURM_JOB_ID", "5", 1);
    setenv("SLURM_GPU_BIND", "closest", 1); /* the job's: the step's K wins */
    cr_assert_eq(cli_srun_parse(&a, 5, per), 0);
    cr_assert_eq(cli_srun_request(&a, &own[0]), 0);
    cr_assert(a.req.ntasks_per_gpu == 2 && a.req.cpus_per_gpu == 3);
    cr_assert_str_eq(a.req.gpu_bind, "single:2");
    cr_assert_str_eq(req_env(&a.req, "SLURM_NTASKS_PER_GPU"), "2");
    cr_assert_str_eq(req_env(&a.req, "SLURM_CPUS_PER_GPU"), "3");
    cr_assert_eq(cli_srun_alloc_words(&a, &words), 0);
    cr_assert_str_eq(words[0], "--ntasks-per-gpu=2");
    cr_assert_str_eq(words[1], "--cpus-per-gpu=3");
    cr_assert_null(words[2]);
    free(words[0]);
    free(words[1]);
    free(words);
    unsetenv("SLURM_GPU_BIND");
    cr_assert_eq(cli_srun_parse(&b, 4, bound), 0);
    cr_assert_eq(cli_srun_request(&b, &own[1]), 0);
    cr_assert_str_eq(b.req.gpu_bind, "closest", "the step's own --gpu-bind wins");
    for (size_t i = 0; i < 4; i++) {
        struct cli_srun_args e = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
        struct cli_srun_owned o = {.workdir = GS_BUF_INIT};

        cr_assert_eq(cli_srun_parse(&e, nbad[i], bad[i]), 0);
        cr_assert_eq(cli_srun_request(&e, &o), -EINVAL, "%s %s", bad[i][1], bad[i][2]);
        cli_srun_owned_release(&o);
    }
    for (size_t i = 0; i < 2; i++)
        cli_srun_owned_release(&own[i]);
}
