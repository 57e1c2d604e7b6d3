/*
 * test_srun_alloc.c: what an allocation asks for. salloc's options (sbatch's) become the
 * job, named after the command's program unless -J says otherwise; srun outside a job hands
 * on only the options sbatch also reads, as --NAME=VALUE words; bad options make no job.
 * Also srun's --input and --pty.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

Test(srun_alloc, input_and_pty_options, .init = cr_redirect_stderr)
{
    char *none[] = {"srun", "--input=none", "cat"};
    char *pty[] = {"srun", "--pty", "bash"};
    char *all[] = {"srun", "-i", "all", "cat"};
    struct cli_srun_args a = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args b = {.req = GS__STEP_LAUNCH_REQUEST__INIT};
    struct cli_srun_args c = {.req = GS__STEP_LAUNCH_REQUEST__INIT};

    cr_assert_eq(cli_srun_parse(&a, 3, none), 0);
    cr_assert(a.no_input);
    cr_assert_eq(cli_srun_parse(&b, 3, pty), 0);
    cr_assert(b.req.pty && b.unbuffered, "--pty passes output on as it comes");
    cr_assert_not(b.no_input);
    cr_assert_eq(cli_srun_parse(&c, 4, all), -EINVAL, "only task 0 or none");
}
