/*
 * test_sbatch_spec.c: what sbatch options mean as a gsched job (slurm/sbatch_spec.h):
 * nodes and tasks, each GPU form, CPUs, each memory form, times, names and paths, arrays,
 * dependencies, requeue, signals, --export, the command line over the script, the options
 * accepted without effect, every refusal naming its option, and the --test-only view.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "slurm/sbatch_spec.h"

#define SHEBANG "#!/bin/bash\n"
#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))

static char *test_envp[] = {
    "HOME=/home/alice",
    "PATH=/usr/bin:/bin",
    "PWD=/home/alice/run",
    "OLDPWD=/tmp",
    "SHLVL=2",
    "_=/usr/bin/sbatch",
    "SLURM_JOB_ID=77",
    "GSCHED_SOCKET=/run/g.sock",
    "BASH_FUNC_f%%=() {",
    "VENV=/opt/venv",
    NULL,
};

static const struct gs_sbatch_env test_env = {
    .cwd = "/home/alice/run",
    .hostname = "login1",
    .user = "alice",
    .envp = test_envp,
    .script_on_stdin = false,
};

/* Warnings and errors of the last conversion; Criterion runs each test in its own process. */
static struct gs_buf warnings, errors;
static struct gs_sbatch *last_sb;

static int convert(const char *script, int argc, char **argv, char **args,
                   const struct gs_sbatch_env *env, struct gs_jobspec **ret)
{
    struct gs_sbatch *sb = NULL;
    int rc;

    gs_buf_reset(&warnings);
    gs_buf_reset(&errors);
    gs_sbatch_free(last_sb);
    last_sb = NULL;
    rc = gs_sbatch_parse(script, script != NULL ? strlen(script) : 0, "run.sh", argc, argv, &sb,
                         &errors, &warnings);
    cr_assert_eq(rc, 0, "parse: rc=%d errors:\n%s", rc, errors.data != NULL ? errors.data : "");
    last_sb = sb;
    return gs_sbatch_to_jobspec(sb, script, args, env, ret, &errors, &warnings);
}

static struct gs_jobspec *spec_cli(const char *script, int argc, char **argv)
{
    struct gs_jobspec *spec = NULL;
    int rc = convert(script, argc, argv, NULL, &test_env, &spec);

    cr_assert_eq(rc, 0, "rc=%d errors:\n%s", rc, errors.data != NULL ? errors.data : "");
    cr_assert_not_null(spec);
    return spec;
}

static struct gs_jobspec *spec_of(const char *script)
{
    return spec_cli(script, 0, NULL);
}

/* Converts expecting failure; returns the error text (owned by errors). */
static const char *fail_cli(const char *script, int argc, char **argv)
{
    struct gs_jobspec *spec = (struct gs_jobspec *)&errors; /* must stay untouched */
    int rc = convert(script, argc, argv, NULL, &test_env, &spec);

    cr_assert_eq(rc, -EINVAL, "rc=%d", rc);
    cr_assert_eq(spec, (struct gs_jobspec *)&errors, "output written on failure");
    cr_assert_not_null(errors.data);
    return errors.data;
}

static const char *fail_of(const char *script)
{
    return fail_cli(script, 0, NULL);
}

static bool has_env(const struct gs_jobspec *s, const char *kv)
{
    for (size_t i = 0; i < s->nenv; i++)
        if (strcmp(s->env[i], kv) == 0)
            return true;
    return false;
}

static bool has_env_name(const struct gs_jobspec *s, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < s->nenv; i++)
        if (strncmp(s->env[i], name, n) == 0 && s->env[i][n] == '=')
            return true;
    return false;
}

static void assert_has(const char *text, const char *part)
{
    cr_assert(text != NULL && strstr(text, part) != NULL, "'%s' not in:\n%s", part,
              text != NULL ? text : "(null)");
}

/* ---- defaults, name, script, paths ---- */

Test(sbatch_spec, defaults_are_slurms)
{
    struct gs_jobspec *s = spec_of(SHEBANG "echo hi\n");

    cr_assert(s->batch && s->slurm);
    cr_assert_str_eq(s->name, "run.sh");
    cr_assert_str_eq(s->script, SHEBANG "echo hi\n");
    cr_assert_null(s->argv);
    cr_assert_eq(s->nodes, 1);
    cr_assert_eq(s->tasks_per_node, 1);
    cr_assert_eq(s->ntasks, 0);
    cr_assert_eq(s->cpus_per_task, 1);
    cr_assert_eq(s->cpus_per_gpu, 0);
    cr_assert_eq(s->gpus_per_node, 0);
    cr_assert_eq(s->mem_per_node_mib, 0);
    cr_assert_eq(s->time_limit_s, GS_DURATION_INFINITE);
    cr_assert_str_eq(s->stdout_pattern, "slurm-%j.out");
    cr_assert_null(s->stderr_pattern);
    cr_assert(s->truncate_output, "Slurm's open mode: truncate");
    cr_assert_str_eq(s->workdir, "/home/alice/run");
    cr_assert_str_eq(s->submit_dir, "/home/alice/run");
    cr_assert_str_eq(s->submit_host, "login1");
    cr_assert_eq(s->max_restarts, 0);
    cr_assert_null(s->partition);
    cr_assert_null(s->constraint);
    cr_assert_eq(s->ndeps, 0);
    cr_assert_eq(s->array.ntask_ids, 0);
    cr_assert(!s->hold && !s->exclusive && !s->singleton);
    cr_assert_eq(s->nice, 0);
    cr_assert_eq(warnings.len, 0, "warnings: %s", warnings.data);
    gs_jobspec_free(s);
}

Test(sbatch_spec, name_from_the_path_or_option)
{
    struct gs_sbatch *sb = NULL;
    struct gs_jobspec *s = NULL;

    cr_assert_eq(
        gs_sbatch_parse(SHEBANG, strlen(SHEBANG), "jobs/train.sh", 0, NULL, &sb, NULL, NULL), 0);
    cr_assert_eq(gs_sbatch_to_jobspec(sb, SHEBANG, NULL, &test_env, &s, NULL, NULL), 0);
    cr_assert_str_eq(s->name, "train.sh");
    gs_jobspec_free(s);
    gs_sbatch_free(sb);
    s = spec_of(SHEBANG "#SBATCH -J llama\n");
    cr_assert_str_eq(s->name, "llama");
    gs_jobspec_free(s);
}

Test(sbatch_spec, stdin_script_is_named_sbatch)
{
    struct gs_sbatch_env env = test_env;
    struct gs_jobspec *s = NULL;

    env.script_on_stdin = true;
    cr_assert_eq(convert(SHEBANG "true\n", 0, NULL, NULL, &env, &s), 0);
    cr_assert_str_eq(s->name, "sbatch");
    gs_jobspec_free(s);
}

Test(sbatch_spec, wrap_becomes_a_sh_script)
{
    struct gs_jobspec *s = spec_cli(NULL, ARGC("--wrap", "python3 train.py --lr 1"),
                                    ARGV("--wrap", "python3 train.py --lr 1"));

    cr_assert_str_eq(s->script, "#!/bin/sh\npython3 train.py --lr 1\n");
    cr_assert_str_eq(s->name, "wrap");
    gs_jobspec_free(s);
}

Test(sbatch_spec, script_arguments)
{
    struct gs_jobspec *s = NULL;

    cr_assert_eq(convert(SHEBANG, 0, NULL, ARGV("run 7", "", "--x"), &test_env, &s), 0, "%s",
                 errors.data);
    cr_assert_eq(s->argc, 3);
    cr_assert_str_eq(s->argv[0], "run 7");
    cr_assert_str_eq(s->argv[1], "");
    cr_assert_str_eq(s->argv[2], "--x");
    cr_assert_null(s->argv[3]);
    cr_assert_not_null(s->script);
    gs_jobspec_free(s);
}

Test(sbatch_spec, open_mode_append_or_truncate_by_any_prefix)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --open-mode=append\n");

    cr_assert_not(s->truncate_output);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --open-mode=A\n#SBATCH --open-mode=T\n");
    cr_assert(s->truncate_output, "the last one counts");
    gs_jobspec_free(s);
}

Test(sbatch_spec, chdir_and_outputs)
{
    struct gs_jobspec *s =
        spec_of(SHEBANG "#SBATCH -D ../exp/./a//b/..\n#SBATCH -o o-%j.txt\n#SBATCH -e e-%j.txt\n");

    cr_assert_str_eq(s->workdir, "/home/alice/exp/a");
    cr_assert_str_eq(s->submit_dir, "/home/alice/run");
    cr_assert_str_eq(s->stdout_pattern, "o-%j.txt");
    cr_assert_str_eq(s->stderr_pattern, "e-%j.txt");
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --chdir=/scratch/x\n");
    cr_assert_str_eq(s->workdir, "/scratch/x");
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -D ../../../..\n");
    cr_assert_str_eq(s->workdir, "/");
    gs_jobspec_free(s);
}

/* ---- nodes and tasks ---- */

Test(sbatch_spec, nodes_and_tasks)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 2\n");

    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->tasks_per_node, 1);
    cr_assert_eq(gs_jobspec_ntasks(s), 2);
    gs_jobspec_free(s);
    /* -n alone: one node, all tasks on it */
    s = spec_of(SHEBANG "#SBATCH -n 3\n");
    cr_assert_eq(s->nodes, 1);
    cr_assert_eq(s->tasks_per_node, 3);
    cr_assert_eq(s->ntasks, 0);
    gs_jobspec_free(s);
    /* -n over -N: spread, the first nodes one more */
    s = spec_of(SHEBANG "#SBATCH -N 3 -n 7\n");
    cr_assert_eq(s->nodes, 3);
    cr_assert_eq(s->tasks_per_node, 3);
    cr_assert_eq(s->ntasks, 7);
    cr_assert_eq(gs_jobspec_node_tasks(s, 0), 3);
    cr_assert_eq(gs_jobspec_node_tasks(s, 2), 2);
    gs_jobspec_free(s);
    /* --ntasks-per-node with -n and no -N: the nodes needed */
    s = spec_of(SHEBANG "#SBATCH -n 8 --ntasks-per-node=4\n");
    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->tasks_per_node, 4);
    cr_assert_eq(s->ntasks, 0);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -N 2 --ntasks-per-node=4\n");
    cr_assert_eq(gs_jobspec_ntasks(s), 8);
    gs_jobspec_free(s);
}

Test(sbatch_spec, node_range_takes_the_minimum)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 2-4\n");

    cr_assert_eq(s->nodes, 2);
    assert_has(warnings.data, "run.sh: --nodes: 2-4: gsched allocates a fixed count");
    gs_jobspec_free(s);
}

Test(sbatch_spec, fewer_tasks_than_nodes_shrinks_the_job)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 4 -n 2\n");

    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->tasks_per_node, 1);
    assert_has(warnings.data, "--ntasks: 2 tasks cannot use 4 nodes");
    gs_jobspec_free(s);
}

Test(sbatch_spec, tasks_that_do_not_fit)
{
    assert_has(fail_of(SHEBANG "#SBATCH -N 2 -n 9 --ntasks-per-node=4\n"),
               "run.sh: --ntasks: 9 tasks do not fit 2 nodes of --ntasks-per-node=4");
}

Test(sbatch_spec, nodelist_sets_the_node_count)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -w node[1-3] -x node[7,9]\n");

    cr_assert_eq(s->nodes, 3);
    cr_assert_eq(s->nnodelist, 3);
    cr_assert_str_eq(s->nodelist[2], "node3");
    cr_assert_null(s->nodelist[3]);
    cr_assert_eq(s->nexclude, 2);
    cr_assert_str_eq(s->exclude[1], "node9");
    gs_jobspec_free(s);
    assert_has(fail_of(SHEBANG "#SBATCH -N 2 -w n[1-3]\n"),
               "run.sh: --nodelist: names 3 nodes but --nodes asks for 2");
}

/* ---- GPUs ---- */

Test(sbatch_spec, gpu_forms)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 2 --gres=gpu:4\n");

    cr_assert_eq(s->gpus_per_node, 4);
    cr_assert_null(s->constraint);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gres=gpu\n");
    cr_assert_eq(s->gpus_per_node, 1);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gpus-per-node=8\n");
    cr_assert_eq(s->gpus_per_node, 8);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -N 2 -G 4\n");
    cr_assert_eq(s->gpus_per_node, 2);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -N 1 -n 4 --gpus-per-task=2\n");
    cr_assert_eq(s->gpus_per_node, 8);
    cr_assert_eq(s->gpus_per_task, 2);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gres=gpu:0\n");
    cr_assert_eq(s->gpus_per_node, 0);
    gs_jobspec_free(s);
}

Test(sbatch_spec, gpus_must_divide_over_nodes)
{
    assert_has(fail_of(SHEBANG "#SBATCH -N 2 --gpus=5\n"),
               "run.sh: --gpus: 5 GPUs do not divide evenly over 2 nodes");
    assert_has(fail_cli(SHEBANG, ARGC("-N", "3", "--gpus=4"), ARGV("-N", "3", "--gpus=4")),
               "command line: --gpus: 4 GPUs do not divide evenly over 3 nodes");
}

Test(sbatch_spec, gpu_options_must_agree)
{
    struct gs_jobspec *s;

    assert_has(fail_of(SHEBANG "#SBATCH --gres=gpu:4 --gpus-per-node=2\n"),
               "run.sh: --gpus-per-node: asks for 2 GPUs per node, --gres for 4");
    s = spec_of(SHEBANG "#SBATCH -N 2 --gres=gpu:4 --gpus=8\n");
    cr_assert_eq(s->gpus_per_node, 4);
    gs_jobspec_free(s);
    /* --gpus-per-task within what --gpus-per-node gives is fine; beyond it is not */
    s = spec_of(SHEBANG "#SBATCH -n 2 --gpus-per-task=1 --gpus-per-node=4\n");
    cr_assert_eq(s->gpus_per_node, 4);
    cr_assert_eq(s->gpus_per_task, 1);
    gs_jobspec_free(s);
    assert_has(fail_of(SHEBANG "#SBATCH -n 4 --gpus-per-task=2 --gpus-per-node=4\n"),
               "--gpus-per-task: 4 tasks per node need 8 GPUs, --gpus-per-node gives 4");
}

Test(sbatch_spec, command_line_gpus_replace_the_scripts)
{
    struct gs_jobspec *s = spec_cli(SHEBANG "#SBATCH --gres=gpu:a100:4\n",
                                    ARGC("--gpus-per-node=2"), ARGV("--gpus-per-node=2"));

    cr_assert_eq(s->gpus_per_node, 2);
    cr_assert_null(s->constraint); /* the script's type went with its count */
    gs_jobspec_free(s);
}

Test(sbatch_spec, gpu_type_becomes_the_constraint)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --gres=gpu:a100:2\n");

    cr_assert_eq(s->gpus_per_node, 2);
    cr_assert_str_eq(s->constraint, "a100");
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gpus-per-node=h100:8 -C ib\n");
    cr_assert_str_eq(s->constraint, "ib&h100");
    cr_assert_eq(warnings.len, 0, "%s", warnings.data);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gres=gpu:a100:1 -C 'ib|roce'\n");
    cr_assert_str_eq(s->constraint, "ib|roce&a100"); /* read left to right: (ib|roce)&a100 */
    gs_jobspec_free(s);
    assert_has(fail_of(SHEBANG "#SBATCH --gres=gpu:a100:2 --gpus-per-node=h100:2\n"),
               "--gpus-per-node: GPU type 'h100' differs from --gres's 'a100'");
}

/* --switches=COUNT[@TIME]: TIME as --time reads it, at most a day. */
Test(sbatch_spec, switches_and_their_wait)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N4 --switches=1@10:00\n");

    cr_assert_eq(s->switches, 1);
    cr_assert(s->switch_wait_set);
    cr_assert_eq(s->switch_wait_s, 600);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -N4 --switches=2\n");
    cr_assert_eq(s->switches, 2);
    cr_assert_not(s->switch_wait_set, "the scheduler's max_switch_wait then");
    gs_jobspec_free(s);
}

/* ---- CPUs and memory ---- */

Test(sbatch_spec, cpus)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -c 8\n");

    cr_assert_eq(s->cpus_per_task, 8);
    cr_assert_eq(s->cpus_per_gpu, 0);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gpus-per-node=2 --cpus-per-gpu=6\n");
    cr_assert_eq(s->cpus_per_gpu, 6);
    cr_assert_eq(s->cpus_per_task, 0);
    gs_jobspec_free(s);
    assert_has(fail_of(SHEBANG "#SBATCH --cpus-per-gpu=6\n"),
               "run.sh: --cpus-per-gpu: the job asks for no GPUs");
}

Test(sbatch_spec, memory_forms)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --mem=64G\n");

    cr_assert_eq(s->mem_per_node_mib, 65536);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -n 4 -c 2 --mem-per-cpu=1G\n");
    cr_assert_eq(s->mem_per_node_mib, 8192);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gpus-per-node=4 --cpus-per-gpu=2 --mem-per-cpu=100\n");
    cr_assert_eq(s->mem_per_node_mib, 800);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --gres=gpu:4 --mem-per-gpu=40G\n");
    cr_assert_eq(s->mem_per_node_mib, 4 * 40960);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --mem=0\n");
    cr_assert_eq(s->mem_per_node_mib, 0);
    assert_has(warnings.data, "run.sh: --mem: 0 (all of a node's memory) is not reserved");
    gs_jobspec_free(s);
    assert_has(fail_of(SHEBANG "#SBATCH --mem-per-gpu=10G\n"),
               "run.sh: --mem-per-gpu: the job asks for no GPUs");
}

Test(sbatch_spec, command_line_memory_replaces_the_scripts)
{
    struct gs_jobspec *s =
        spec_cli(SHEBANG "#SBATCH --mem=64G\n", ARGC("--mem-per-cpu=2G"), ARGV("--mem-per-cpu=2G"));

    cr_assert_eq(s->mem_per_node_mib, 2048);
    gs_jobspec_free(s);
}

/* ---- times, strings, flags ---- */

Test(sbatch_spec, times)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -t 1-02:03:04 --time-min=30\n");

    cr_assert_eq(s->time_limit_s, 86400 + 2 * 3600 + 3 * 60 + 4);
    cr_assert_eq(s->time_min_s, 1800);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -t 0\n"); /* Slurm: no limit */
    cr_assert_eq(s->time_limit_s, GS_DURATION_INFINITE);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -t UNLIMITED\n");
    cr_assert_eq(s->time_limit_s, GS_DURATION_INFINITE);
    gs_jobspec_free(s);
}

Test(sbatch_spec, strings_and_flags)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -p gpu -A nlp -q high -C ib --exclusive\n"
                                           "#SBATCH -H\n");

    cr_assert_str_eq(s->partition, "gpu");
    cr_assert_str_eq(s->account, "nlp");
    cr_assert_str_eq(s->qos, "high");
    cr_assert_str_eq(s->constraint, "ib");
    cr_assert(s->exclusive);
    cr_assert(s->hold);
    gs_jobspec_free(s);
}

Test(sbatch_spec, reservation_becomes_the_jobs)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --reservation=maint\n");
    const char *msg;

    cr_assert_str_eq(s->reservation, "maint");
    cr_assert_null(warnings.data, "acted on, so no warning: %s", warnings.data);
    gs_jobspec_free(s);
    s = spec_cli(SHEBANG "#SBATCH --reservation=maint\n", ARGC("--reservation=r2"),
                 ARGV("--reservation=r2"));
    cr_assert_str_eq(s->reservation, "r2", "the command line over the script");
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -N 1\n");
    cr_assert_null(s->reservation);
    gs_jobspec_free(s);
    /* Slurm takes a list; the scheduler matches one name, so a list is refused, not lost. */
    msg = fail_of(SHEBANG "#SBATCH --reservation=r1,r2\n");
    cr_assert_not_null(strstr(msg, "run.sh: --reservation: reservation must be one name"), "%s",
                       msg);
}

Test(sbatch_spec, nice_becomes_the_jobs)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --nice=-20\n");

    cr_assert_eq(s->nice, -20);
    gs_jobspec_free(s);
    s = spec_cli(SHEBANG "#SBATCH --nice=-20\n", ARGC("--nice"), ARGV("--nice"));
    cr_assert_eq(s->nice, 100, "--nice alone: 100, and the command line wins");
    gs_jobspec_free(s);
}

Test(sbatch_spec, command_line_overrides_the_script)
{
    struct gs_jobspec *s =
        spec_cli(SHEBANG "#SBATCH -J a -N 4 -p cpu -t 10 -o x.out\n",
                 ARGC("-J", "b", "-N2", "--partition=gpu", "-t", "5", "-o", "y.out"),
                 ARGV("-J", "b", "-N2", "--partition=gpu", "-t", "5", "-o", "y.out"));

    cr_assert_str_eq(s->name, "b");
    cr_assert_eq(s->nodes, 2);
    cr_assert_str_eq(s->partition, "gpu");
    cr_assert_eq(s->time_limit_s, 300);
    cr_assert_str_eq(s->stdout_pattern, "y.out");
    gs_jobspec_free(s);
}

Test(sbatch_spec, requeue)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --requeue\n");

    cr_assert_eq(s->max_restarts, GS_SBATCH_REQUEUE_RESTARTS);
    gs_jobspec_free(s);
    s = spec_cli(SHEBANG "#SBATCH --requeue\n", ARGC("--no-requeue"), ARGV("--no-requeue"));
    cr_assert_eq(s->max_restarts, 0);
    gs_jobspec_free(s);
}

Test(sbatch_spec, signal)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --signal=B:USR1@55\n");

    cr_assert_eq(s->warn_signal, SIGUSR1);
    cr_assert_eq(s->warn_before_s, 55);
    cr_assert(s->warn_batch_only);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --signal=TERM\n");
    cr_assert_eq(s->warn_signal, SIGTERM);
    cr_assert_eq(s->warn_before_s, GS_SBATCH_SIGNAL_DEFAULT_S);
    cr_assert(!s->warn_batch_only);
    gs_jobspec_free(s);
}

Test(sbatch_spec, licenses_are_read_and_a_bad_list_refused_naming_the_option)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --licenses=matlab:2,fluent\n");

    cr_assert_eq(s->nlicenses, 2);
    cr_assert_str_eq(s->licenses[0].name, "matlab");
    cr_assert_eq(s->licenses[0].count, 2);
    cr_assert_eq(s->licenses[1].count, 1);
    gs_jobspec_free(s);
    assert_has(fail_of(SHEBANG "#SBATCH -L matlab|fluent\n"),
               "'matlab|fluent': '|' (any one of several licenses) is not supported");
    gs_buf_reset(&errors);
    assert_has(fail_of(SHEBANG "#SBATCH --licenses=matlab:0\n"), "--licenses");
}

Test(sbatch_spec, accepted_without_effect_warns_once)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --gpu-bind=closest --reservation=r1 -L a:1\n"
                                           "#SBATCH --gres-flags=enforce-binding\n"
                                           "#SBATCH --gres=gpu:2,nic:1 --signal=R:USR2@30\n");

    cr_assert_eq(s->gpus_per_node, 2);
    cr_assert_str_eq(warnings.data, "accepted and not acted on: "
                                    "--gres-flags, --gres entries other than gpu, --signal=R:\n");
    cr_assert_eq(s->nlicenses, 1, "-L is acted on");
    gs_jobspec_free(s);
}

/* --gpu-bind reaches the job's srun steps through SLURM_GPU_BIND, as Slurm's does. */
Test(sbatch_spec, gpu_bind_goes_to_the_steps)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --gpus-per-node=4 --gpu-bind=map_gpu:1,0\n");

    cr_assert(has_env(s, "SLURM_GPU_BIND=map_gpu:1,0"));
    gs_jobspec_free(s);
    cr_assert_not_null(
        strstr(fail_of(SHEBANG "#SBATCH --gpu-bind=closet\n"), "--gpu-bind: 'closet' is none of"),
        "%s", errors.data);
}

/* --tmp: MiB by default, as Slurm's, each node's TmpDisk at least; 0 asks for nothing. */
Test(sbatch_spec, tmp_is_each_nodes_temporary_disk)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --tmp=10G\n");

    cr_assert_eq(s->tmp_per_node_mib, 10240);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --tmp=300\n");
    cr_assert_eq(s->tmp_per_node_mib, 300);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --tmp=0\n");
    cr_assert_eq(s->tmp_per_node_mib, 0);
    gs_jobspec_free(s);
}

/* -k and --no-kill=off; -M and --prefer reach the job as given. */
Test(sbatch_spec, no_kill_clusters_prefer)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -k -M a,b --prefer=fast\n");

    cr_assert(s->no_kill);
    cr_assert_str_eq(s->clusters, "a,b");
    cr_assert_str_eq(s->prefer, "fast");
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --no-kill=off\n");
    cr_assert_not(s->no_kill);
    gs_jobspec_free(s);
}

/* --mincpus and -O become the job's; --mem-per-cpu counts the cores a node gives. */
Test(sbatch_spec, mincpus_and_overcommit)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -n 1 --mincpus=4 --mem-per-cpu=1G\n");

    cr_assert_eq(s->min_cpus_per_node, 4);
    cr_assert_not(s->overcommit);
    cr_assert_eq(s->mem_per_node_mib, 4096, "4 cores a node, 1G each");
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -n 4 -c 2 -O --mem-per-cpu=1G\n");
    cr_assert(s->overcommit);
    cr_assert_eq(s->mem_per_node_mib, 2048, "one task's 2 cores");
    gs_jobspec_free(s);
}

/* -m reaches the steps as SLURM_DISTRIBUTION (plane's size also alone). */
Test(sbatch_spec, distribution_goes_to_the_steps)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 2 -m cyclic:block\n");

    cr_assert(has_env(s, "SLURM_DISTRIBUTION=cyclic:block"));
    cr_assert_not(has_env(s, "SLURM_DIST_PLANESIZE=2"));
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -N 2 --distribution=plane=2\n");
    cr_assert(has_env(s, "SLURM_DISTRIBUTION=plane=2"));
    cr_assert(has_env(s, "SLURM_DIST_PLANESIZE=2"));
    gs_jobspec_free(s);
}

/* --ntasks-per-gpu: K tasks per GPU, bound single:K unless --gpu-bind says otherwise. */
Test(sbatch_spec, ntasks_per_gpu_from_the_gpus_or_the_tasks)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 2 --gpus-per-node=4 --ntasks-per-gpu=2\n");

    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->gpus_per_node, 4);
    cr_assert_eq(s->tasks_per_node, 8);
    cr_assert_eq(s->ntasks, 0, "even: 2 x 8");
    cr_assert(has_env(s, "SLURM_GPU_BIND=single:2"));
    cr_assert(has_env(s, "SLURM_NTASKS_PER_GPU=2"));
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -n 6 --ntasks-per-gpu=1\n");
    cr_assert_eq(s->nodes, 1);
    cr_assert_eq(s->gpus_per_node, 6, "the GPUs follow from the tasks");
    cr_assert_eq(s->tasks_per_node, 6);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -N 2 -n 7 --ntasks-per-gpu=2 --gpu-bind=closest\n");
    cr_assert_eq(s->gpus_per_node, 2, "4 GPUs for 7 tasks, over 2 nodes");
    cr_assert_eq(s->tasks_per_node, 4);
    cr_assert_eq(s->ntasks, 7);
    cr_assert(has_env(s, "SLURM_GPU_BIND=closest"), "the job's own --gpu-bind wins");
    cr_assert_not(has_env(s, "SLURM_GPU_BIND=single:2"));
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -G 8 -N 2 -n 5 --ntasks-per-gpu=1\n");
    cr_assert_eq(s->gpus_per_node, 4);
    cr_assert_eq(s->tasks_per_node, 4);
    cr_assert_eq(s->ntasks, 5);
    gs_jobspec_free(s);
}

Test(sbatch_spec, ntasks_per_gpu_refusals_name_the_option)
{
    assert_has(fail_of(SHEBANG "#SBATCH --ntasks-per-gpu=2\n"), "--ntasks-per-gpu: needs GPUs");
    assert_has(
        fail_of(SHEBANG "#SBATCH --gpus-per-node=2 --ntasks-per-node=2 --ntasks-per-gpu=1\n"),
        "cannot be used with --ntasks-per-node");
    assert_has(fail_of(SHEBANG "#SBATCH --gpus-per-task=1 -n 2 --ntasks-per-gpu=1\n"),
               "cannot be used with --gpus-per-task");
    assert_has(fail_of(SHEBANG "#SBATCH --gpus-per-node=2 -n 5 --ntasks-per-gpu=2\n"),
               "5 tasks do not fit 1 nodes of 2 GPUs at 2 per GPU");
    assert_has(fail_of(SHEBANG "#SBATCH --gpus-per-node=64 --ntasks-per-gpu=100\n"),
               "more than gsched allows");
}

Test(sbatch_spec, priority_and_wait)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --priority=500 -W\n");

    cr_assert_eq(s->priority, 500);
    cr_assert(last_sb->wait, "#SBATCH -W: sbatch waits");
    gs_jobspec_free(s);
    s = spec_cli(SHEBANG "#SBATCH --priority=500\n", ARGC("--priority=-7"), ARGV("--priority=-7"));
    cr_assert_eq(s->priority, -7);
    cr_assert_not(last_sb->wait);
    gs_jobspec_free(s);
}

/* ---- arrays and dependencies ---- */

Test(sbatch_spec, array)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --array=0-15:4%2\n");

    cr_assert_eq(s->array.ntask_ids, 4);
    cr_assert_eq(s->array.task_ids[0], 0);
    cr_assert_eq(s->array.task_ids[3], 12);
    cr_assert_eq(s->array.throttle, 2);
    cr_assert_str_eq(s->stdout_pattern, "slurm-%A_%a.out");
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH -a 3,1 -o a_%a.out\n");
    cr_assert_eq(s->array.ntask_ids, 2);
    cr_assert_eq(s->array.task_ids[0], 1);
    cr_assert_str_eq(s->stdout_pattern, "a_%a.out");
    gs_jobspec_free(s);
}

Test(sbatch_spec, dependencies)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -d afterok:4:5,after:6+10,singleton\n");

    cr_assert_eq(s->ndeps, 3);
    cr_assert_eq(s->deps[0].type, GS_DEP_AFTEROK);
    cr_assert_eq(s->deps[0].job_id, 4);
    cr_assert_eq(s->deps[1].job_id, 5);
    cr_assert_eq(s->deps[2].type, GS_DEP_AFTER);
    cr_assert_eq(s->deps[2].delay_min, 10);
    cr_assert(s->singleton);
    cr_assert(!s->depends_any);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --dependency=afterany:4?afternotok:5\n");
    cr_assert_eq(s->ndeps, 2);
    cr_assert(s->depends_any);
    cr_assert_eq(s->deps[1].type, GS_DEP_AFTERNOTOK);
    gs_jobspec_free(s);
}

/* ---- --export ---- */

Test(sbatch_spec, export_all_passes_the_environment)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH --export=ALL,VENV=/other,EXTRA=1\n");

    cr_assert(has_env(s, "HOME=/home/alice"));
    cr_assert(has_env(s, "PATH=/usr/bin:/bin"));
    cr_assert(has_env(s, "GSCHED_SOCKET=/run/g.sock"));
    cr_assert(has_env(s, "VENV=/other"));
    cr_assert(!has_env(s, "VENV=/opt/venv"));
    cr_assert(has_env(s, "EXTRA=1"));
    cr_assert(!has_env_name(s, "PWD"));
    cr_assert(!has_env_name(s, "OLDPWD"));
    cr_assert(!has_env_name(s, "SHLVL"));
    cr_assert(!has_env_name(s, "_"));
    cr_assert(!has_env_name(s, "SLURM_JOB_ID"));
    cr_assert(!has_env_name(s, "BASH_FUNC_f%%"));
    cr_assert_eq(s->nenv, 5);
    gs_jobspec_free(s);
    s = spec_of(SHEBANG); /* the default is ALL */
    cr_assert(has_env(s, "HOME=/home/alice"));
    gs_jobspec_free(s);
}

Test(sbatch_spec, export_none_passes_only_the_named)
{
    struct gs_jobspec *s =
        spec_of(SHEBANG "#SBATCH --export=NONE,HOME,X=1,X=2,UNSET_HERE,SLURM_JOB_ID\n");

    cr_assert_eq(s->nenv, 3, "nenv=%zu", s->nenv);
    cr_assert(has_env(s, "HOME=/home/alice"));
    cr_assert(has_env(s, "X=2"));
    cr_assert(has_env(s, "SLURM_JOB_ID=77")); /* named: passed even so */
    gs_jobspec_free(s);
    s = spec_of(SHEBANG "#SBATCH --export=NONE\n");
    cr_assert_eq(s->nenv, 0);
    gs_jobspec_free(s);
}

/* ---- whole-job checks ---- */

Test(sbatch_spec, script_name_that_is_no_job_name)
{
    struct gs_sbatch *sb = NULL;
    struct gs_jobspec *s = NULL;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(gs_sbatch_parse(SHEBANG, strlen(SHEBANG), "dir/a\tb.sh", 0, NULL, &sb, NULL, NULL),
                 0);
    cr_assert_eq(gs_sbatch_to_jobspec(sb, SHEBANG, NULL, &test_env, &s, &err, NULL), -EINVAL);
    cr_assert_null(s);
    assert_has(err.data, "--job-name: the script's name 'a\tb.sh' is no job name; give --job-name");
    gs_buf_release(&err);
    gs_sbatch_free(sb);
}

Test(sbatch_spec, every_problem_is_reported)
{
    const char *e = fail_of(SHEBANG "#SBATCH -N 2 --gpus=3 --mem-per-gpu=1G\n#SBATCH -w n[1-5]\n");

    assert_has(e, "run.sh: --nodelist: names 5 nodes but --nodes asks for 2\n");
    assert_has(e, "run.sh: --gpus: 3 GPUs do not divide evenly over 2 nodes\n");
    assert_has(e, "run.sh: --mem-per-gpu: the job asks for no GPUs\n");
}

Test(sbatch_spec, too_many_gpus_per_task)
{
    assert_has(fail_of(SHEBANG "#SBATCH -n 64 --gpus-per-task=32\n"),
               "--gpus-per-task: 32 GPUs x 64 tasks per node is more than 1024 GPUs per node");
}

/* ---- heterogeneous jobs ---- */

Test(sbatch_spec, het_components_get_the_same_rules_as_the_first)
{
    struct gs_jobspec *s =
        spec_of(SHEBANG "#SBATCH -J het -p gpu -t 30 -N 2 --gres=gpu:a100:4 -c 8\n"
                        "#SBATCH --mem-per-gpu=10G\n"
                        "#SBATCH hetjob\n"
                        "#SBATCH -p gpu -n 6 --ntasks-per-node=3 -c 2 --mem-per-cpu=1G\n"
                        "#SBATCH hetjob\n"
                        "#SBATCH -N 2 --gpus=h100:4 --cpus-per-gpu=2 -C fast\n"
                        "srun hostname\n");
    const struct gs_het_component *c1, *c2;

    cr_assert_eq(s->nhet, 2);
    cr_assert_not_null(s->het);
    c1 = &s->het[0];
    c2 = &s->het[1];
    /* component 0: the spec's own fields */
    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->tasks_per_node, 1);
    cr_assert_eq(s->gpus_per_node, 4);
    cr_assert_eq(s->cpus_per_task, 8);
    cr_assert_eq(s->mem_per_node_mib, 40960);
    cr_assert_str_eq(s->constraint, "a100");
    cr_assert_str_eq(s->partition, "gpu");
    cr_assert_eq(s->time_limit_s, 1800);
    /* component 1: nodes from -n and --ntasks-per-node, memory per CPU x its CPUs */
    cr_assert_eq(c1->nodes, 2);
    cr_assert_eq(c1->tasks_per_node, 3);
    cr_assert_eq(c1->ntasks, 0);
    cr_assert_eq(c1->cpus_per_task, 2);
    cr_assert_eq(c1->cpus_per_gpu, 0);
    cr_assert_eq(c1->gpus_per_node, 0);
    cr_assert_eq(c1->gpus_per_task, 0);
    cr_assert_eq(c1->mem_per_node_mib, 6144);
    cr_assert_null(c1->constraint);
    /* component 2: -G divided over its nodes; -C ANDed with the GPU type */
    cr_assert_eq(c2->nodes, 2);
    cr_assert_eq(c2->gpus_per_node, 2);
    cr_assert_eq(c2->cpus_per_gpu, 2);
    cr_assert_eq(c2->cpus_per_task, 0);
    cr_assert_eq(c2->tasks_per_node, 1);
    cr_assert_eq(c2->mem_per_node_mib, 0);
    cr_assert_str_eq(c2->constraint, "fast&h100");
    cr_assert_eq(gs_jobspec_total_nodes(s), 6);
    cr_assert_eq(gs_jobspec_ntasks(s), 2 + 6 + 2);
    gs_jobspec_free(s);
}

Test(sbatch_spec, het_uneven_tasks_and_gpus_per_task)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 1\n#SBATCH hetjob\n"
                                           "#SBATCH -N 3 -n 7 --gpus-per-task=2\n");

    cr_assert_eq(s->het[0].nodes, 3);
    cr_assert_eq(s->het[0].tasks_per_node, 3);
    cr_assert_eq(s->het[0].ntasks, 7);
    cr_assert_eq(s->het[0].gpus_per_task, 2);
    cr_assert_eq(s->het[0].gpus_per_node, 6);
    cr_assert_eq(gs_jobspec_ntasks(s), 8);
    gs_jobspec_free(s);
}

Test(sbatch_spec, het_empty_component_is_one_node_one_task)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 4 --gpus-per-node=2 --mem=8G -C x\n"
                                           "#SBATCH hetjob\n");

    cr_assert_eq(s->nhet, 1);
    cr_assert_eq(s->het[0].nodes, 1);
    cr_assert_eq(s->het[0].tasks_per_node, 1);
    cr_assert_eq(s->het[0].ntasks, 0);
    cr_assert_eq(s->het[0].cpus_per_task, 1);
    cr_assert_eq(s->het[0].cpus_per_gpu, 0);
    cr_assert_eq(s->het[0].gpus_per_node, 0);
    cr_assert_eq(s->het[0].gpus_per_task, 0);
    cr_assert_eq(s->het[0].mem_per_node_mib, 0);
    cr_assert_null(s->het[0].constraint);
    cr_assert_eq(s->nodes, 4);
    gs_jobspec_free(s);
}

Test(sbatch_spec, het_command_line_components)
{
    struct gs_jobspec *s = spec_cli(SHEBANG "#SBATCH -J x\n", ARGC("-N", "2", ":", "-n", "5"),
                                    ARGV("-N", "2", ":", "-n", "5"));

    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->nhet, 1);
    cr_assert_eq(s->het[0].nodes, 1);
    cr_assert_eq(s->het[0].tasks_per_node, 5);
    cr_assert(s->batch);
    gs_jobspec_free(s);
}

Test(sbatch_spec, het_component_problem_names_the_component)
{
    const char *e = fail_of(SHEBANG "#SBATCH -N 2 --gpus=4\n#SBATCH hetjob\n"
                                    "#SBATCH -N 2 --gpus=3\n#SBATCH hetjob\n"
                                    "#SBATCH --cpus-per-gpu=2\n");

    assert_has(e, "run.sh: het component 1: --gpus: 3 GPUs do not divide evenly over 2 nodes\n");
    assert_has(e, "run.sh: het component 2: --cpus-per-gpu: the job asks for no GPUs\n");
    cr_assert(strstr(e, "run.sh: --gpus") == NULL, "%s", e);
}

Test(sbatch_spec, het_other_gres_warned_once)
{
    struct gs_jobspec *s = spec_of(SHEBANG "#SBATCH -N 1\n#SBATCH hetjob\n"
                                           "#SBATCH --gres=gpu:1,nic:1\n");

    cr_assert_eq(s->het[0].gpus_per_node, 1);
    cr_assert_str_eq(warnings.data, "accepted and not acted on: --gres entries other than gpu\n");
    gs_jobspec_free(s);
}

/* ---- the --test-only view ---- */

static char *show(const char *script, int argc, char **argv, enum gs_sbatch_show_format f)
{
    struct gs_jobspec *s = spec_cli(script, argc, argv);
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(gs_sbatch_show(s, last_sb, "run.sh", "alice", f, &out), 0);
    gs_jobspec_free(s);
    return gs_buf_detach(&out, NULL);
}

Test(sbatch_spec, show_kv_in_fixed_order)
{
    char *out = show(SHEBANG "#SBATCH -J sweep -N 2 -n 3 -c 2 --gres=gpu:a100:2 --mem=8G\n"
                             "#SBATCH -t 1-00:00:30 --time-min=90 -p gpu -A nlp -q high\n"
                             "#SBATCH --reservation=maint -L matlab:2,fluent\n"
                             "#SBATCH -w n[1-2] -x n7 --exclusive -a 0-15:4%2 -H --requeue\n"
                             "#SBATCH --nice=-5\n"
                             "#SBATCH -d afterok:4?after:5+10 --signal=B:USR1@55\n"
                             "#SBATCH -o logs/%x_%A_%3a.out --export=NONE,HOME,X=1\n",
                     0, NULL, GS_SBATCH_SHOW_KV);

    cr_assert_str_eq(out, "job_name=sweep\n"
                          "script=run.sh\n"
                          "nodes=2\n"
                          "ntasks=3\n"
                          "tasks_per_node=2\n"
                          "cpus_per_task=2\n"
                          "cpus_per_gpu=0\n"
                          "gpus_per_node=2\n"
                          "gpus_per_task=0\n"
                          "mem_per_node_mib=8192\n"
                          "time_limit=1-00:00:30\n"
                          "time_min=01:30:00\n"
                          "partition=gpu\n"
                          "account=nlp\n"
                          "qos=high\n"
                          "constraint=a100\n"
                          "reservation=maint\n"
                          "licenses=matlab:2,fluent:1\n"
                          "nodelist=n[1-2]\n"
                          "exclude=n7\n"
                          "exclusive=yes\n"
                          "array=0-12:4%2\n"
                          "array_size=4\n"
                          "dependency=afterok:4?after:5+10\n"
                          "kill_on_invalid_dep=\n"
                          "hold=yes\n"
                          "nice=-5\n"
                          "requeue=yes\n"
                          "max_restarts=5\n"
                          "signal=B:USR1@55\n"
                          "workdir=/home/alice/run\n"
                          "stdout=logs/%x_%A_%3a.out\n"
                          "stderr=\n"
                          "open_mode=truncate\n"
                          "mail_type=NONE\n"
                          "mail_user=\n"
                          "stdout_path=/home/alice/run/logs/sweep_%A_000.out\n"
                          "stderr_path=/home/alice/run/logs/sweep_%A_000.out\n"
                          "export=NONE,HOME,X\n");
    free(out);
}

Test(sbatch_spec, show_defaults_and_lists)
{
    char *out = show(SHEBANG "#SBATCH -a 1,3-5,9 -e %u-%j.err\n", 0, NULL, GS_SBATCH_SHOW_KV);

    assert_has(out, "\ntime_limit=UNLIMITED\n");
    assert_has(out, "\ntime_min=\n");
    assert_has(out, "\narray=1,3-5,9\n");
    assert_has(out, "\narray_size=5\n");
    assert_has(out, "\nstdout=slurm-%A_%a.out\n");
    assert_has(out, "\nstdout_path=/home/alice/run/slurm-%A_1.out\n");
    assert_has(out, "\nstderr_path=/home/alice/run/alice-%j.err\n");
    assert_has(out, "\nexport=ALL\n");
    assert_has(out, "\nrequeue=no\n");
    assert_has(out, "\nhold=no\nnice=0\n");
    assert_has(out, "\nreservation=\n");
    free(out);
}

Test(sbatch_spec, show_json)
{
    char *out = show(SHEBANG "#SBATCH -N 2 -t 5 -d singleton\n", 0, NULL, GS_SBATCH_SHOW_JSON);

    cr_assert_eq(out[0], '{');
    cr_assert_eq(out[strlen(out) - 1], '\n');
    assert_has(out, "\"job_name\":\"run.sh\"");
    assert_has(out, "\"nodes\":2,");
    assert_has(out, "\"time_limit\":\"00:05:00\"");
    assert_has(out, "\"partition\":null");
    assert_has(out, "\"reservation\":null");
    assert_has(out, "\"exclusive\":false");
    assert_has(out, "\"nice\":0,");
    assert_has(out, "\"dependency\":\"singleton\"");
    assert_has(out, "\"export\":\"ALL\"}");
    free(out);
}

Test(sbatch_spec, show_het_components)
{
    char *out = show(SHEBANG "#SBATCH -N 2 -n 3 --gpus-per-node=2\n#SBATCH hetjob\n"
                             "#SBATCH -n 4 --mem=1G -C big\n#SBATCH hetjob\n",
                     0, NULL, GS_SBATCH_SHOW_KV);

    /* the job's keys describe component 0 (ntasks too, not the sum) */
    assert_has(out, "nodes=2\nntasks=3\ntasks_per_node=2\n");
    assert_has(out, "export=ALL\nhet_size=3\n"
                    "het1_nodes=1\nhet1_ntasks=4\nhet1_tasks_per_node=4\nhet1_cpus_per_task=1\n"
                    "het1_cpus_per_gpu=0\nhet1_gpus_per_node=0\nhet1_gpus_per_task=0\n"
                    "het1_mem_per_node_mib=1024\nhet1_constraint=big\n"
                    "het2_nodes=1\nhet2_ntasks=1\nhet2_tasks_per_node=1\nhet2_cpus_per_task=1\n"
                    "het2_cpus_per_gpu=0\nhet2_gpus_per_node=0\nhet2_gpus_per_task=0\n"
                    "het2_mem_per_node_mib=0\nhet2_constraint=\n");
    cr_assert_eq(out[strlen(out) - 1], '\n');
    cr_assert(strstr(out, "het2_constraint=\n")[strlen("het2_constraint=\n")] == '\0', "%s", out);
    free(out);
    out = show(SHEBANG "#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH -n 4 -C big\n", 0, NULL,
               GS_SBATCH_SHOW_JSON);
    assert_has(out, "\"export\":\"ALL\",\"het_size\":2,\"het\":[{\"nodes\":1,\"ntasks\":4,"
                    "\"tasks_per_node\":4,\"cpus_per_task\":1,\"cpus_per_gpu\":0,"
                    "\"gpus_per_node\":0,\"gpus_per_task\":0,\"mem_per_node_mib\":0,"
                    "\"constraint\":\"big\"}]}\n");
    free(out);
    /* an ordinary job shows none of them */
    out = show(SHEBANG "#SBATCH -N 2\n", 0, NULL, GS_SBATCH_SHOW_KV);
    cr_assert(strstr(out, "het") == NULL, "%s", out);
    free(out);
}
