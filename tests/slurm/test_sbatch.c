/*
 * test_sbatch.c: #SBATCH directives and sbatch command-line options as sbatch reads them:
 * every supported option in each of its forms, precedence of the command line, quoting and
 * comments, the value parsers on their own, and every malformed case naming its place.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/units.h"
#include "common/jobspec_mail.h"
#include "slurm/sbatch.h"

#define SHEBANG "#!/bin/bash\n"
#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))

/* Warnings of the last parse; Criterion runs each test in its own process. */
static struct gs_buf warnings;

static struct gs_sbatch *parse_cli(const char *script, int argc, char **argv)
{
    struct gs_buf errors = GS_BUF_INIT;
    struct gs_sbatch *sb = NULL;
    int rc;

    gs_buf_reset(&warnings);
    rc = gs_sbatch_parse(script, script != NULL ? strlen(script) : 0, "run.sh", argc, argv, &sb,
                         &errors, &warnings);
    cr_assert_eq(rc, 0, "rc=%d errors:\n%s", rc, errors.data != NULL ? errors.data : "");
    cr_assert_not_null(sb);
    gs_buf_release(&errors);
    return sb;
}

static struct gs_sbatch *parse(const char *script)
{
    return parse_cli(script, 0, NULL);
}

/* Parses expecting failure; returns the error text (caller frees). */
static char *fail_cli(const char *script, int argc, char **argv)
{
    struct gs_buf errors = GS_BUF_INIT;
    struct gs_sbatch *sb = (struct gs_sbatch *)&errors; /* must stay untouched */
    int rc;

    gs_buf_reset(&warnings);
    rc = gs_sbatch_parse(script, script != NULL ? strlen(script) : 0, "run.sh", argc, argv, &sb,
                         &errors, &warnings);
    cr_assert_eq(rc, -EINVAL, "rc=%d", rc);
    cr_assert_eq(sb, (struct gs_sbatch *)&errors, "output written on failure");
    cr_assert_not_null(errors.data);
    return gs_buf_detach(&errors, NULL);
}

static char *fail(const char *script)
{
    return fail_cli(script, 0, NULL);
}

static void expect_error(const char *script, const char *want)
{
    char *errors = fail(script);

    cr_assert_not_null(strstr(errors, want), "want '%s' in:\n%s", want, errors);
    free(errors);
}

static bool has(const char *text, const char *want)
{
    return text != NULL && strstr(text, want) != NULL;
}

/* ---- directives ---- */

Test(sbatch_directives, reads_long_and_short_forms)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --nodes=2\n"
                                         "#SBATCH --ntasks 16\n"
                                         "#SBATCH -c 4\n"
                                         "#SBATCH -t10\n"
                                         "#SBATCH -Jtrain\n"
                                         "srun ./train\n");

    cr_assert_eq(sb->nodes_min, 2);
    cr_assert_eq(sb->nodes_max, 2);
    cr_assert_eq(sb->ntasks, 16);
    cr_assert_eq(sb->cpus_per_task, 4);
    cr_assert_eq(sb->time_limit_s, 600, "a bare number is minutes");
    cr_assert_str_eq(sb->job_name, "train");
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_NODES], GS_SBATCH_FROM_SCRIPT);
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_PARTITION], GS_SBATCH_UNSET);
    cr_assert_str_eq(sb->script_name, "run.sh");
    gs_sbatch_free(sb);
}

Test(sbatch_directives, gsched_lines_work_like_sbatch_lines)
{
    struct gs_sbatch *sb = parse(SHEBANG "#GSCHED -N 3\n#SBATCH -p gpu\n");

    cr_assert_eq(sb->nodes_min, 3);
    cr_assert_str_eq(sb->partition, "gpu");
    gs_sbatch_free(sb);
}

Test(sbatch_directives, several_options_on_one_line)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -N 2 --gres=gpu:4\t-p  batch\n");

    cr_assert_eq(sb->nodes_min, 2);
    cr_assert_eq(sb->gres.count, 4);
    cr_assert_str_eq(sb->partition, "batch");
    gs_sbatch_free(sb);
}

Test(sbatch_directives, quoted_values_keep_their_spaces)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --job-name=\"my job\"\n"
                                         "#SBATCH -A 'team a'\n"
                                         "#SBATCH --comment \"x # y\"\n");

    cr_assert_str_eq(sb->job_name, "my job");
    cr_assert_str_eq(sb->account, "team a");
    gs_sbatch_free(sb);
}

Test(sbatch_directives, trailing_comment_is_not_an_option)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --time=1:00:00 # one hour\n"
                                         "#SBATCH -N 1 #-N 9\n");

    cr_assert_eq(sb->time_limit_s, 3600);
    cr_assert_eq(sb->nodes_min, 1);
    gs_sbatch_free(sb);
}

Test(sbatch_directives, comments_and_blank_lines_may_come_between)
{
    struct gs_sbatch *sb = parse(SHEBANG "\n# resources\n   \n#SBATCH -N 2\n"
                                         "## SBATCH -N 7 is commented out\n"
                                         "# SBATCH -N 8 too\n"
                                         "#SBATCHX -N 9 is no directive\n"
                                         "  #SBATCH -N 6 indented is a comment\n"
                                         "#SBATCH -n 4\n");

    cr_assert_eq(sb->nodes_min, 2);
    cr_assert_eq(sb->ntasks, 4);
    cr_assert_eq(warnings.len, 0, "warnings: %s", warnings.data);
    gs_sbatch_free(sb);
}

Test(sbatch_directives, directives_after_first_command_are_ignored_with_one_warning)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -N 2\n"     /* 2 */
                                         "module load cuda\n" /* 3 */
                                         "#SBATCH -N 4\n"     /* 4 */
                                         "#SBATCH --bogus\n"  /* 5: ignored, so no error */
                                         "srun ./a\n");

    cr_assert_eq(sb->nodes_min, 2);
    cr_assert(has(warnings.data, "run.sh:4: 2 #SBATCH lines after the first command (line 3)"),
              "%s", warnings.data);
    cr_assert_eq(strchr(warnings.data, '\n'), warnings.data + warnings.len - 1, "one warning");
    gs_sbatch_free(sb);
}

Test(sbatch_directives, first_line_must_be_a_shebang)
{
    expect_error("#SBATCH -N 2\n", "run.sh:1: the first line must start with #!");
    expect_error("", "run.sh:1: the first line must start with #!");
}

Test(sbatch_directives, dos_line_breaks_are_refused_like_sbatch)
{
    expect_error(SHEBANG "#SBATCH -N 2\r\n", "run.sh:2: DOS line breaks");
}

Test(sbatch_directives, unterminated_quote_names_the_line)
{
    expect_error(SHEBANG "\n#SBATCH -J \"abc\n", "run.sh:3: unterminated \" quote");
}

Test(sbatch_directives, a_word_that_is_no_option_is_an_error)
{
    expect_error(SHEBANG "#SBATCH -N 2 nodes\n", "run.sh:2: unexpected argument 'nodes'");
    /* ':' separates components on the command line only */
    expect_error(SHEBANG "#SBATCH -N 1 : -N 2\n", "run.sh:2: unexpected argument ':'");
}

Test(sbatch_directives, a_switch_count_and_its_wait_are_checked)
{
    expect_error("#!/bin/sh\n#SBATCH --switches=one\n",
                 "--switches=one: 'one': COUNT must be a number of switches");
    expect_error("#!/bin/sh\n#SBATCH --switches=1@2-00:00:00\n",
                 "'1@2-00:00:00': TIME must be a time of at most a day");
    expect_error("#!/bin/sh\n#SBATCH --switches=1@soon\n", "TIME must be a time");
}

Test(sbatch_directives, wrap_is_refused_in_a_script)
{
    expect_error(SHEBANG "#SBATCH --wrap=hostname\n",
                 "run.sh:2: --wrap=hostname: only allowed on the command line");
}

/* ---- heterogeneous jobs ---- */

/* Whether no option of sb is set: a component of defaults. */
static bool nothing_set(const struct gs_sbatch *sb)
{
    for (int i = 0; i < GS_SBATCH_OPT_COUNT; i++)
        if (sb->set_by[i] != GS_SBATCH_UNSET)
            return false;
    return true;
}

Test(sbatch_het, two_components_each_with_its_own_options)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -J het -p gpu -N 2 --gres=gpu:a100:4 -c 8\n"
                                         "#SBATCH -C ib\n"
                                         "#SBATCH hetjob\n"
                                         "#SBATCH -n 3 --mem-per-cpu=2G -C cpu\n"
                                         "srun hostname\n");
    const struct gs_sbatch *c1;

    cr_assert_eq(sb->nhet, 1);
    cr_assert_not_null(sb->het);
    c1 = &sb->het[0];
    cr_assert_eq(sb->nodes_min, 2);
    cr_assert_eq(sb->gres.count, 4);
    cr_assert_str_eq(sb->gres.type, "a100");
    cr_assert_eq(sb->cpus_per_task, 8);
    cr_assert_str_eq(sb->constraint, "ib");
    cr_assert_str_eq(sb->partition, "gpu");
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_NTASKS], GS_SBATCH_UNSET);
    cr_assert_eq(c1->ntasks, 3);
    cr_assert_eq(c1->set_by[GS_SBATCH_OPT_NTASKS], GS_SBATCH_FROM_SCRIPT);
    cr_assert_eq(c1->mem_per_cpu_mib, 2048);
    cr_assert_str_eq(c1->constraint, "cpu");
    cr_assert_eq(c1->set_by[GS_SBATCH_OPT_NODES], GS_SBATCH_UNSET);
    cr_assert_eq(c1->set_by[GS_SBATCH_OPT_GRES], GS_SBATCH_UNSET);
    cr_assert_eq(c1->set_by[GS_SBATCH_OPT_CPUS_PER_TASK], GS_SBATCH_UNSET);
    cr_assert_eq(c1->gres.count, 0);
    cr_assert_eq(c1->set_by[GS_SBATCH_OPT_PARTITION], GS_SBATCH_UNSET);
    cr_assert_null(c1->partition);
    cr_assert_null(c1->script_name);
    cr_assert_eq(c1->nhet, 0);
    gs_sbatch_free(sb);
}

Test(sbatch_het, three_components_start_from_the_defaults)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -N 4 --gpus-per-node=8 --mem=64G\n"
                                         "#SBATCH packjob\n"
                                         "#SBATCH --ntasks-per-node=2 --mem-per-gpu=1G\n"
                                         "#SBATCH --gpus-per-node=2\n"
                                         "#SBATCH hetjob\n"
                                         "#GSCHED -c 4\n");

    cr_assert_eq(sb->nhet, 2);
    cr_assert_eq(sb->nodes_min, 4);
    cr_assert_eq(sb->gpus_per_node.count, 8);
    cr_assert_eq(sb->mem_mib, 64 * 1024);
    /* component 1: its own memory form; no conflict with component 0's --mem */
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_NODES], GS_SBATCH_UNSET);
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_MEM], GS_SBATCH_UNSET);
    cr_assert_eq(sb->het[0].mem_per_gpu_mib, 1024);
    cr_assert_eq(sb->het[0].ntasks_per_node, 2);
    cr_assert_eq(sb->het[0].gpus_per_node.count, 2);
    /* component 2: nothing of component 1's */
    cr_assert_eq(sb->het[1].cpus_per_task, 4);
    cr_assert_eq(sb->het[1].set_by[GS_SBATCH_OPT_NTASKS_PER_NODE], GS_SBATCH_UNSET);
    cr_assert_eq(sb->het[1].set_by[GS_SBATCH_OPT_GPUS_PER_NODE], GS_SBATCH_UNSET);
    cr_assert_eq(sb->het[1].set_by[GS_SBATCH_OPT_MEM_PER_GPU], GS_SBATCH_UNSET);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH -N 1\n#SBATCH hetjob\n#SBATCH --mem=1G\n"
                         "#SBATCH --mem-per-cpu=1G\n",
                 "run.sh:5: --mem-per-cpu=1G: conflicts with --mem (line 4); use only one");
}

Test(sbatch_het, conflicting_groups_are_per_component)
{
    char *errors = fail(SHEBANG "#SBATCH -c 2\n#SBATCH hetjob\n#SBATCH -c 4 --cpus-per-gpu=1\n");

    cr_assert(has(errors, "run.sh:4: --cpus-per-gpu=1: conflicts with --cpus-per-task (line 4)"),
              "%s", errors);
    cr_assert_not(has(errors, "line 2"), "%s", errors);
    free(errors);
}

Test(sbatch_het, repeated_whole_job_option_with_the_same_value_is_accepted)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -p gpu -A nlp -t 60 --exclusive --requeue\n"
                                         "#SBATCH -o out-%j.txt -H\n"
                                         "#SBATCH hetjob\n"
                                         "#SBATCH --partition=gpu -A nlp -t 1:00:00 -N 2\n"
                                         "#SBATCH --exclusive --requeue -o out-%j.txt -H\n");

    cr_assert_eq(sb->nhet, 1);
    cr_assert_str_eq(sb->partition, "gpu");
    cr_assert_eq(sb->time_limit_s, 3600);
    cr_assert_eq(sb->het[0].nodes_min, 2);
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_PARTITION], GS_SBATCH_UNSET);
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_TIME], GS_SBATCH_UNSET);
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_EXCLUSIVE], GS_SBATCH_UNSET);
    cr_assert_null(sb->het[0].partition);
    cr_assert_eq(warnings.len, 0, "warnings: %s", warnings.data);
    gs_sbatch_free(sb);
}

Test(sbatch_het, whole_job_option_with_another_value_names_its_line)
{
    char *errors = fail(SHEBANG "#SBATCH -p gpu -t 60 --requeue\n"
                                "#SBATCH hetjob\n"
                                "#SBATCH -p cpu\n"
                                "#SBATCH -N 2 -t 10\n"
                                "#SBATCH -J other --no-requeue\n");

    cr_assert(has(errors, "run.sh:4: -p cpu: '--partition' applies to the whole heterogeneous "
                          "job in gsched: give it before the first 'hetjob' line\n"),
              "%s", errors);
    cr_assert(has(errors, "run.sh:5: -t 10: '--time' applies to the whole heterogeneous job"), "%s",
              errors);
    /* not given in component 0 at all */
    cr_assert(has(errors, "run.sh:6: -J other: '--job-name' applies to the whole"), "%s", errors);
    cr_assert(has(errors, "run.sh:6: --no-requeue: '--no-requeue' applies to the whole"), "%s",
              errors);
    cr_assert_not(has(errors, "-N 2"), "%s", errors);
    free(errors);
}

Test(sbatch_het, nodelist_and_array_are_refused_at_their_line)
{
    expect_error(SHEBANG "#SBATCH -w n[1-2]\n#SBATCH hetjob\n#SBATCH -N 1\n",
                 "run.sh:2: --nodelist: a heterogeneous job takes no node list in gsched");
    expect_error(SHEBANG "#SBATCH -N 1\n#SBATCH hetjob\n#SBATCH -w n1\n",
                 "run.sh:4: -w n1: a heterogeneous job takes no node list in gsched");
    expect_error(SHEBANG "#SBATCH -N 1\n#SBATCH -a 0-3\n#SBATCH hetjob\n",
                 "run.sh:3: --array: a heterogeneous job cannot be a job array");
    expect_error(SHEBANG "#SBATCH hetjob\n#SBATCH --array=1-2\n",
                 "run.sh:3: --array=1-2: a heterogeneous job cannot be a job array");
    {
        char *errors = fail_cli(SHEBANG "#SBATCH hetjob\n", ARGC("-a", "1-3"), ARGV("-a", "1-3"));

        cr_assert(has(errors, "command line: --array: a heterogeneous job cannot be a job array"),
                  "%s", errors);
        free(errors);
    }
    /* without hetjob lines both stay allowed */
    gs_sbatch_free(parse(SHEBANG "#SBATCH -w n1 -a 1-2\n"));
}

Test(sbatch_het, trailing_hetjob_line_makes_an_empty_component)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -N 2 -n 4\n#SBATCH hetjob  # the rest\n");

    cr_assert_eq(sb->nhet, 1);
    cr_assert(nothing_set(&sb->het[0]));
    cr_assert_eq(sb->nodes_min, 2);
    gs_sbatch_free(sb);
    /* first, with no options before it: component 0 is all defaults */
    sb = parse(SHEBANG "#SBATCH hetjob\n#SBATCH -N 3\n#SBATCH hetjob\n");
    cr_assert_eq(sb->nhet, 2);
    cr_assert(nothing_set(sb));
    cr_assert_eq(sb->het[0].nodes_min, 3);
    cr_assert(nothing_set(&sb->het[1]));
    gs_sbatch_free(sb);
}

Test(sbatch_het, hetjob_after_the_first_command_is_ignored_like_any_directive)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -N 2\nhostname\n#SBATCH hetjob\n");

    cr_assert_eq(sb->nhet, 0);
    cr_assert(has(warnings.data, "1 #SBATCH line after the first command"), "%s", warnings.data);
    gs_sbatch_free(sb);
}

Test(sbatch_het, hetjob_goes_on_a_line_of_its_own)
{
    expect_error(SHEBANG "#SBATCH -N 1 hetjob\n",
                 "run.sh:2: 'hetjob' goes on a line of its own: it ends one component");
    expect_error(SHEBANG "#SBATCH packjob -N 2\n", "run.sh:2: 'packjob' goes on a line of its own");
}

Test(sbatch_het, at_most_the_jobspec_limit_of_components)
{
    struct gs_buf script = GS_BUF_INIT;
    char want[64];
    char *errors;

    cr_assert_eq(gs_buf_append_str(&script, SHEBANG), 0);
    for (int i = 1; i < GS_JOBSPEC_HET_MAX; i++)
        cr_assert_eq(gs_buf_append_str(&script, "#SBATCH hetjob\n"), 0);
    gs_sbatch_free(parse(script.data)); /* exactly the limit */
    cr_assert_eq(gs_buf_append_str(&script, "#SBATCH hetjob\n#SBATCH -N x\n"), 0);
    errors = fail(script.data);
    snprintf(want, sizeof(want), "run.sh:%d: a heterogeneous job has at most %d components",
             GS_JOBSPEC_HET_MAX + 1, GS_JOBSPEC_HET_MAX);
    cr_assert(has(errors, want), "%s", errors);
    /* the options past the limit are still checked */
    snprintf(want, sizeof(want), "run.sh:%d: -N x:", GS_JOBSPEC_HET_MAX + 2);
    cr_assert(has(errors, want), "%s", errors);
    free(errors);
    gs_buf_release(&script);
}

Test(sbatch_het, command_line_colon_separates_components)
{
    struct gs_sbatch *sb =
        parse_cli(SHEBANG "#SBATCH -p gpu\n", ARGC("-N", "2", ":", "-n", "4", ":"),
                  ARGV("-N", "2", ":", "-n", "4", ":"));

    cr_assert_eq(sb->nhet, 2);
    cr_assert_eq(sb->nodes_min, 2);
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_NODES], GS_SBATCH_FROM_CLI);
    cr_assert_eq(sb->het[0].ntasks, 4);
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_NTASKS], GS_SBATCH_FROM_CLI);
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_NODES], GS_SBATCH_UNSET);
    cr_assert(nothing_set(&sb->het[1]));
    gs_sbatch_free(sb);
}

Test(sbatch_het, command_line_components_go_over_the_scripts)
{
    struct gs_sbatch *sb =
        parse_cli(SHEBANG "#SBATCH -t 10\n#SBATCH hetjob\n#SBATCH -N 3 --mem=1G\n",
                  ARGC("-t", "20", ":", "-N", "5", "--mem-per-cpu=2G", "-t", "20"),
                  ARGV("-t", "20", ":", "-N", "5", "--mem-per-cpu=2G", "-t", "20"));

    cr_assert_eq(sb->time_limit_s, 1200);
    cr_assert_eq(sb->nhet, 1);
    cr_assert_eq(sb->het[0].nodes_min, 5);
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_NODES], GS_SBATCH_FROM_CLI);
    /* the command line's memory form replaces the script's in that component */
    cr_assert_eq(sb->het[0].set_by[GS_SBATCH_OPT_MEM], GS_SBATCH_UNSET);
    cr_assert_eq(sb->het[0].mem_per_cpu_mib, 2048);
    gs_sbatch_free(sb);
    /* a whole-job option after ':' must match the job's, the command line's own included */
    {
        char *errors = fail_cli(SHEBANG "#SBATCH -t 10\n", ARGC("-N", "1", ":", "-t", "30"),
                                ARGV("-N", "1", ":", "-t", "30"));

        cr_assert(has(errors, "command line: -t 30: '--time' applies to the whole heterogeneous "
                              "job in gsched: give it before the first ':'"),
                  "%s", errors);
        free(errors);
    }
}

Test(sbatch_het, to_kv_shows_each_component)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -N 2 -p gpu\n#SBATCH hetjob\n"
                                         "#SBATCH -n 3 -C big --gpus=h100:2\n#SBATCH hetjob\n");
    struct gs_buf kv = GS_BUF_INIT;

    cr_assert_eq(gs_sbatch_to_kv(sb, &kv), 0);
    cr_assert(has(kv.data, "nodes=2\npartition=gpu\nhet_size=3\n"
                           "het1.ntasks=3\nhet1.gpus=h100:2\nhet1.constraint=big\n"),
              "%s", kv.data);
    cr_assert_not(has(kv.data, "het2."), "%s", kv.data);
    gs_buf_release(&kv);
    gs_sbatch_free(sb);
}

/* ---- command line ---- */

Test(sbatch_cli, command_line_overrides_script_and_records_source)
{
    struct gs_sbatch *sb =
        parse_cli(SHEBANG "#SBATCH -N 2\n#SBATCH -p batch\n#SBATCH -t 5\n",
                  ARGC("-N", "8", "--time=2:00:00"), ARGV("-N", "8", "--time=2:00:00"));

    cr_assert_eq(sb->nodes_min, 8);
    cr_assert_eq(sb->time_limit_s, 7200);
    cr_assert_str_eq(sb->partition, "batch");
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_NODES], GS_SBATCH_FROM_CLI);
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_TIME], GS_SBATCH_FROM_CLI);
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_PARTITION], GS_SBATCH_FROM_SCRIPT);
    gs_sbatch_free(sb);
}

Test(sbatch_cli, last_occurrence_wins_within_a_source)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -N 2\n#SBATCH -N 3\n#SBATCH --requeue\n"
                                         "#SBATCH --no-requeue\n");

    cr_assert_eq(sb->nodes_min, 3);
    cr_assert_eq(sb->requeue, false);
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_REQUEUE], GS_SBATCH_FROM_SCRIPT);
    gs_sbatch_free(sb);
}

Test(sbatch_cli, command_line_memory_option_replaces_the_scripts)
{
    struct gs_sbatch *sb = parse_cli(SHEBANG "#SBATCH --mem=64G\n", ARGC("--mem-per-gpu=10G"),
                                     ARGV("--mem-per-gpu=10G"));

    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_MEM], GS_SBATCH_UNSET);
    cr_assert_eq(sb->mem_mib, 0);
    cr_assert_eq(sb->mem_per_gpu_mib, 10240);
    gs_sbatch_free(sb);
}

Test(sbatch_cli, memory_options_conflict_within_a_source)
{
    char *e = fail(SHEBANG "#SBATCH --mem=4G\n#SBATCH --mem-per-cpu=1G\n");

    cr_assert(has(e, "run.sh:3: --mem-per-cpu=1G: conflicts with --mem (line 2)"), "%s", e);
    free(e);
    e = fail_cli(SHEBANG, ARGC("--mem-per-gpu=1G", "--mem", "2G"),
                 ARGV("--mem-per-gpu=1G", "--mem", "2G"));
    cr_assert(has(e, "command line: --mem 2G: conflicts with --mem-per-gpu"), "%s", e);
    free(e);
}

Test(sbatch_cli, cpus_per_task_and_cpus_per_gpu_conflict)
{
    expect_error(SHEBANG "#SBATCH -c 4 --cpus-per-gpu=8\n",
                 "run.sh:2: --cpus-per-gpu=8: conflicts with --cpus-per-task (line 2)");
}

Test(sbatch_cli, unique_prefix_of_a_long_option_is_accepted)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --job=x --ntasks-per-n=2 --partit=p\n");

    cr_assert_str_eq(sb->job_name, "x");
    cr_assert_eq(sb->ntasks_per_node, 2);
    cr_assert_str_eq(sb->partition, "p");
    gs_sbatch_free(sb);
}

Test(sbatch_cli, ambiguous_prefix_is_an_error)
{
    expect_error(SHEBANG "#SBATCH --node=2\n", "run.sh:2: --node=2: ambiguous option");
}

Test(sbatch_cli, unknown_option_suggests_a_close_name)
{
    char *e = fail_cli(SHEBANG "#SBATCH --ntask-per-node=2\n", ARGC("--parition=gpu"),
                       ARGV("--parition=gpu"));

    cr_assert(has(e, "run.sh:2: --ntask-per-node=2: unknown option (did you mean "
                     "--ntasks-per-node?)"),
              "%s", e);
    cr_assert(has(e, "command line: --parition=gpu: unknown option (did you mean --partition?)"),
              "%s", e);
    free(e);
    expect_error(SHEBANG "#SBATCH --frobnicate\n", "run.sh:2: --frobnicate: unknown option\n");
    expect_error(SHEBANG "#SBATCH -g 2\n", "run.sh:2: -g: unknown option (did you mean -G?)");
    expect_error(SHEBANG "#SBATCH -y\n", "run.sh:2: -y: unknown option\n");
}

Test(sbatch_cli, option_without_its_value_is_an_error)
{
    expect_error(SHEBANG "#SBATCH -N\n", "run.sh:2: -N: needs a value");
    expect_error(SHEBANG "#SBATCH --partition\n", "run.sh:2: --partition: needs a value");
    expect_error(SHEBANG "#SBATCH --hold=yes\n", "run.sh:2: --hold=yes: takes no value");
}

Test(sbatch_cli, every_problem_is_reported_and_nothing_produced)
{
    char *e = fail_cli(SHEBANG "#SBATCH -N x\n#SBATCH --gres=gpu:a100:x\n#SBATCH -t soon\n",
                       ARGC("--mem=lots"), ARGV("--mem=lots"));

    cr_assert(has(e, "run.sh:2: -N x: 'x' is not a node count"), "%s", e);
    cr_assert(has(e, "run.sh:3: --gres=gpu:a100:x: GPU count 'x' is not a number"), "%s", e);
    cr_assert(has(e, "run.sh:4: -t soon: 'soon' is not a time"), "%s", e);
    cr_assert(has(e, "command line: --mem=lots: 'lots' is not a size"), "%s", e);
    free(e);
}

Test(sbatch_cli, clustered_short_flags)
{
    struct gs_sbatch *sb = parse_cli(SHEBANG, ARGC("-HN2"), ARGV("-HN2"));

    cr_assert(sb->hold);
    cr_assert_eq(sb->nodes_min, 2);
    gs_sbatch_free(sb);
}

Test(sbatch_cli, script_index_skips_options_and_their_values)
{
    cr_assert_eq(gs_sbatch_script_index(ARGC("-N", "2", "--time=5", "-J", "x", "run.sh", "a"),
                                        ARGV("-N", "2", "--time=5", "-J", "x", "run.sh", "a")),
                 5);
    cr_assert_eq(gs_sbatch_script_index(ARGC("-N2", "--hold", "--partition", "p", "s.sh"),
                                        ARGV("-N2", "--hold", "--partition", "p", "s.sh")),
                 4);
    cr_assert_eq(
        gs_sbatch_script_index(ARGC("-H", "--", "-weird.sh"), ARGV("-H", "--", "-weird.sh")), 2);
    cr_assert_eq(gs_sbatch_script_index(ARGC("--wrap", "hostname"), ARGV("--wrap", "hostname")), 2);
}

Test(sbatch_cli, double_dash_ends_the_options)
{
    struct gs_sbatch *sb = parse_cli(SHEBANG, ARGC("-N", "2", "--"), ARGV("-N", "2", "--"));

    cr_assert_eq(sb->nodes_min, 2);
    gs_sbatch_free(sb);
}

Test(sbatch_cli, wrap_replaces_the_script)
{
    struct gs_sbatch *sb = parse_cli(NULL, ARGC("--wrap", "srun hostname", "-N", "2"),
                                     ARGV("--wrap", "srun hostname", "-N", "2"));
    struct gs_buf kv = GS_BUF_INIT;

    cr_assert_str_eq(sb->wrap, "srun hostname");
    cr_assert_null(sb->script_name);
    cr_assert_eq(gs_sbatch_to_kv(sb, &kv), 0);
    cr_assert(has(kv.data, "wrap=srun hostname\n"), "%s", kv.data);
    gs_buf_release(&kv);
    gs_sbatch_free(sb);
}

Test(sbatch_cli, wrap_with_a_script_or_neither_is_an_error)
{
    char *e = fail_cli(SHEBANG, ARGC("--wrap=x"), ARGV("--wrap=x"));

    cr_assert(has(e, "command line: --wrap: cannot be combined with a batch script"), "%s", e);
    free(e);
    e = fail_cli(NULL, 0, NULL);
    cr_assert(has(e, "no batch script and no --wrap"), "%s", e);
    free(e);
}

/* ---- options ---- */

Test(sbatch_options, job_name)
{
    struct gs_sbatch *sb =
        parse_cli(SHEBANG "#SBATCH -J a\n", ARGC("--job-name", "b c"), ARGV("--job-name", "b c"));

    cr_assert_str_eq(sb->job_name, "b c");
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH -J a/b\n", "run.sh:2: -J a/b: a job name is 1 to");
    expect_error(SHEBANG "#SBATCH -J ''\n", "run.sh:2: -J : a job name");
}

Test(sbatch_options, nodes_count_or_range)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --nodes=2-4\n");

    cr_assert_eq(sb->nodes_min, 2);
    cr_assert_eq(sb->nodes_max, 4);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH -N 4-2\n", "run.sh:2: -N 4-2: node counts must be");
    expect_error(SHEBANG "#SBATCH -N 0\n", "run.sh:2: -N 0: node counts must be");
    expect_error(SHEBANG "#SBATCH -N 2-\n", "run.sh:2: -N 2-: '2-' is not a node count");
    expect_error(SHEBANG "#SBATCH -N 2x\n", "run.sh:2: -N 2x: '2x' is not a node count");
}

Test(sbatch_options, task_and_cpu_counts)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -n 8 --ntasks-per-node=4\n"
                                         "#SBATCH --cpus-per-gpu=6\n");

    cr_assert_eq(sb->ntasks, 8);
    cr_assert_eq(sb->ntasks_per_node, 4);
    cr_assert_eq(sb->cpus_per_gpu, 6);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH -n 0\n", "run.sh:2: -n 0: '0' is not a count from 1");
    expect_error(SHEBANG "#SBATCH -c -1\n", "run.sh:2: -c -1: '-1' is not a count");
    expect_error(SHEBANG "#SBATCH -c 99999\n", "run.sh:2: -c 99999: '99999' is not a count");
}

Test(sbatch_options, gres_gpu_forms)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --gres=gpu:a100:8\n");

    cr_assert_str_eq(sb->gres.type, "a100");
    cr_assert_eq(sb->gres.count, 8);
    cr_assert_not(sb->gres_other);
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --gres=nic:1,gpu:2\n");
    cr_assert_str_eq(sb->gres.type, "");
    cr_assert_eq(sb->gres.count, 2);
    cr_assert(sb->gres_other);
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --gres gpu\n");
    cr_assert_eq(sb->gres.count, 1);
    gs_sbatch_free(sb);
}

Test(sbatch_options, gres_parser_on_its_own)
{
    struct gs_sbatch_gpus g;
    struct gs_error err;
    bool other = true;

    cr_assert_eq(gs_sbatch_parse_gres("gpu:h100", &g, &other, &err), 0);
    cr_assert_str_eq(g.type, "h100");
    cr_assert_eq(g.count, 1);
    cr_assert_not(other);
    cr_assert_eq(gs_sbatch_parse_gres("gpu:0", &g, &other, &err), 0);
    cr_assert_eq(g.count, 0);
    cr_assert_eq(gs_sbatch_parse_gres("bandwidth:10", &g, &other, &err), 0);
    cr_assert_eq(g.count, 0, "no gpu entry: no GPUs");
    cr_assert(other);
    cr_assert_eq(gs_sbatch_parse_gres("gpu:-1", &g, &other, &err), -EINVAL);
    cr_assert(has(err.msg, "neither a GPU count nor a GPU type"), "%s", err.msg);
    cr_assert_eq(gs_sbatch_parse_gres("gpu:1,gpu:2", &g, &other, &err), -EINVAL);
    cr_assert(has(err.msg, "twice"), "%s", err.msg);
    cr_assert_eq(gs_sbatch_parse_gres("gpu:1,", &g, &other, &err), -EINVAL);
    cr_assert_eq(gs_sbatch_parse_gres("gpu:", &g, &other, &err), -EINVAL);
    cr_assert_eq(gs_sbatch_parse_gres("gpu:a100:", &g, &other, &err), -EINVAL);
    cr_assert_eq(gs_sbatch_parse_gres("gpu:2000", &g, &other, &err), -EINVAL);
}

Test(sbatch_options, gpus_options_with_and_without_type)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -G 16\n#SBATCH --gpus-per-node=h100:8\n"
                                         "#SBATCH --gpus-per-task=1\n");

    cr_assert_eq(sb->gpus.count, 16);
    cr_assert_str_eq(sb->gpus.type, "");
    cr_assert_str_eq(sb->gpus_per_node.type, "h100");
    cr_assert_eq(sb->gpus_per_node.count, 8);
    cr_assert_eq(sb->gpus_per_task.count, 1);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH --gpus=0\n", "run.sh:2: --gpus=0: GPU count must be 1 to");
    expect_error(SHEBANG "#SBATCH --gpus=a100:x\n", "run.sh:2: --gpus=a100:x: GPU count 'x'");
    expect_error(SHEBANG "#SBATCH --gpus=:4\n", "run.sh:2: --gpus=:4: '' is neither");
}

Test(sbatch_options, memory_sizes)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --mem=64G\n");

    cr_assert_eq(sb->mem_mib, 65536);
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --mem=4096\n");
    cr_assert_eq(sb->mem_mib, 4096, "a bare number is MiB");
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --mem=0\n");
    cr_assert_eq(sb->mem_mib, 0);
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_MEM], GS_SBATCH_FROM_SCRIPT, "0 means all memory");
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --mem-per-cpu=1.5G\n");
    cr_assert_eq(sb->mem_per_cpu_mib, 1536);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH --mem-per-cpu=0\n", "--mem-per-cpu=0: must be more than 0");
    expect_error(SHEBANG "#SBATCH --mem=4Q\n", "run.sh:2: --mem=4Q: '4Q' is not a size");
}

Test(sbatch_options, time_in_every_slurm_form)
{
    static const struct {
        const char *text;
        uint64_t seconds;
    } cases[] = {
        {"90", 5400},
        {"90:30", 5430},
        {"1:30:00", 5400},
        {"2-12", 216000},
        {"2-12:30", 217800},
        {"2-12:30:15", 217815},
        {"infinite", GS_DURATION_INFINITE},
        {"UNLIMITED", GS_DURATION_INFINITE},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char script[128];
        struct gs_sbatch *sb;

        snprintf(script, sizeof(script), SHEBANG "#SBATCH --time=%s --time-min=1\n", cases[i].text);
        sb = parse(script);
        cr_assert_eq(sb->time_limit_s, cases[i].seconds, "%s", cases[i].text);
        cr_assert_eq(sb->time_min_s, 60);
        gs_sbatch_free(sb);
    }
    expect_error(SHEBANG "#SBATCH -t 1:99\n", "run.sh:2: -t 1:99: '1:99' is not a time");
}

Test(sbatch_options, time_min_longer_than_time_is_an_error)
{
    expect_error(SHEBANG "#SBATCH -t 10\n#SBATCH --time-min=20\n",
                 "run.sh:3: --time-min: 20:00 is longer than --time 10:00");
}

Test(sbatch_options, string_options)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -p gpu -A proj -q high -C a100&ib\n"
                                         "#SBATCH --reservation=maint --licenses=matlab:2\n"
                                         "#SBATCH --gres-flags=enforce-binding --gpu-bind=closest\n"
                                         "#SBATCH -D /scratch/run -L fluent\n");

    cr_assert_str_eq(sb->partition, "gpu");
    cr_assert_str_eq(sb->account, "proj");
    cr_assert_str_eq(sb->qos, "high");
    cr_assert_str_eq(sb->constraint, "a100&ib");
    cr_assert_str_eq(sb->reservation, "maint");
    cr_assert_str_eq(sb->licenses, "fluent", "-L is --licenses; the last one wins");
    cr_assert_str_eq(sb->gres_flags, "enforce-binding");
    cr_assert_str_eq(sb->gpu_bind, "closest");
    cr_assert_str_eq(sb->chdir, "/scratch/run");
    gs_sbatch_free(sb);
}

Test(sbatch_options, nodelist_and_exclude_are_hostlists)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -w gpu[01-03] --exclude=gpu7,gpu9\n");

    cr_assert_str_eq(sb->nodelist, "gpu[01-03]");
    cr_assert_eq(sb->nodelist_n, 3);
    cr_assert_str_eq(sb->nodelist_names[2], "gpu03");
    cr_assert_eq(sb->exclude_n, 2);
    cr_assert_str_eq(sb->exclude_names[1], "gpu9");
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH -w gpu[3-1\n", "run.sh:2: -w gpu[3-1: ");
    expect_error(SHEBANG "#SBATCH -w ./no-such-hosts\n",
                 "run.sh:2: -w ./no-such-hosts: cannot read the host file ./no-such-hosts");
}

/* A -w value with '/' is a host file, as is --nodefile's: names or hostlists at blanks,
 * commas or line ends, repeats dropped. */
Test(sbatch_options, host_files)
{
    char path[] = "/tmp/sbatch_hosts.XXXXXX", text[300];
    int fd = mkstemp(path);
    const char hosts[] = "gpu1\ngpu[2-3], gpu1\n\n";
    struct gs_sbatch *sb;

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, hosts, sizeof(hosts) - 1), (ssize_t)sizeof(hosts) - 1);
    close(fd);
    snprintf(text, sizeof(text), SHEBANG "#SBATCH -w %s\n", path);
    sb = parse(text);
    cr_assert_eq(sb->nodelist_n, 3);
    cr_assert_str_eq(sb->nodelist_names[0], "gpu1");
    cr_assert_str_eq(sb->nodelist_names[2], "gpu3");
    cr_assert_str_eq(sb->nodelist, "gpu1,gpu[2-3],gpu1");
    gs_sbatch_free(sb);
    snprintf(text, sizeof(text), SHEBANG "#SBATCH --nodefile=%s -x %s\n", path, path);
    sb = parse(text);
    cr_assert_eq(sb->nodelist_n, 3);
    cr_assert_eq(sb->exclude_n, 3);
    gs_sbatch_free(sb);
    unlink(path);
}

Test(sbatch_options, exclusive_flag)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --exclusive\n");

    cr_assert(sb->exclusive);
    cr_assert_eq(warnings.len, 0, "%s", warnings.data);
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --exclusive=user\n");
    cr_assert(sb->exclusive, "=user is met by whole nodes");
    cr_assert(has(warnings.data, "run.sh:2: --exclusive=user: taken as --exclusive"), "%s",
              warnings.data);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH --exclusive=mcs\n",
                 "--exclusive=mcs: only --exclusive (whole nodes) and =user are supported");
}

Test(sbatch_options, output_patterns_are_checked)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -o logs/%x-%j.out -e %A_%4a.%N.%n.%t.%u.%J%%\n");

    cr_assert_str_eq(sb->output, "logs/%x-%j.out");
    cr_assert_str_eq(sb->error, "%A_%4a.%N.%n.%t.%u.%J%%");
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH --output=out.%q\n",
                 "run.sh:2: --output=out.%q: unknown placeholder '%q'");
    expect_error(SHEBANG "#SBATCH -e out%\n", "run.sh:2: -e out%: unknown placeholder '%'");
}

Test(sbatch_options, flags)
{
    struct gs_sbatch *sb =
        parse_cli(SHEBANG "#SBATCH -H --requeue\n", ARGC("--test-only", "--parsable"),
                  ARGV("--test-only", "--parsable"));

    cr_assert(sb->hold);
    cr_assert(sb->requeue);
    cr_assert(sb->test_only);
    cr_assert(sb->parsable);
    gs_sbatch_free(sb);
}

Test(sbatch_options, nice_with_and_without_an_adjustment)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --nice\n");
    struct gs_buf kv = GS_BUF_INIT;

    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_NICE], GS_SBATCH_FROM_SCRIPT);
    cr_assert_eq(sb->nice, 100, "no value: Slurm's 100");
    cr_assert_eq(sb->nice, GS_SBATCH_NICE_DEFAULT);
    cr_assert_eq(gs_sbatch_to_kv(sb, &kv), 0);
    cr_assert(has(kv.data, "\nnice=100\n"), "%s", kv.data);
    gs_buf_release(&kv);
    gs_sbatch_free(sb);

    sb = parse(SHEBANG "#SBATCH --nice=-5\n");
    cr_assert_eq(sb->nice, -5, "negative is for gschedd to refuse to non-root");
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --nice=+3\n");
    cr_assert_eq(sb->nice, 3);
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --nice=1000000\n");
    cr_assert_eq(sb->nice, 1000000);
    gs_sbatch_free(sb);
    sb = parse_cli(SHEBANG "#SBATCH --nice=7\n", ARGC("--nice"), ARGV("--nice"));
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_NICE], GS_SBATCH_FROM_CLI);
    cr_assert_eq(sb->nice, 100, "the command line's replaces the script's");
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH -J x\n");
    cr_assert_eq(sb->set_by[GS_SBATCH_OPT_NICE], GS_SBATCH_UNSET);
    cr_assert_eq(gs_sbatch_to_kv(sb, &kv), 0);
    cr_assert_not(has(kv.data, "nice="), "%s", kv.data);
    gs_buf_release(&kv);
    gs_sbatch_free(sb);

    expect_error(SHEBANG "#SBATCH --nice=abc\n",
                 "run.sh:2: --nice=abc: 'abc' is not an adjustment from -1000000 to 1000000");
    expect_error(SHEBANG "#SBATCH --nice=1000001\n", "run.sh:2: --nice=1000001: '1000001' is not");
    expect_error(SHEBANG "#SBATCH --nice=-1000001\n", "run.sh:2: --nice=-1000001: '-1000001'");
    expect_error(SHEBANG "#SBATCH --nice=\n", "run.sh:2: --nice=: '' is not an adjustment");
    expect_error(SHEBANG "#SBATCH --nice=--1\n", "'--1' is not an adjustment");
    /* An optional value needs '=', as getopt_long reads it: "5" is a word of its own. */
    expect_error(SHEBANG "#SBATCH --nice 5\n", "run.sh:2: unexpected argument '5'");
}

Test(sbatch_options, ignorable_options_warn_once_each)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --mail-type=END,FAIL --mail-user=a@b\n"
                                         "#SBATCH --comment \"hi\" --open-mode=append\n"
                                         "#SBATCH --get-user-env --hint=memory_bound -s\n"
                                         "#SBATCH --hint=compute_bound\n");
    size_t lines = 0;

    for (size_t i = 0; i < warnings.len; i++)
        lines += warnings.data[i] == '\n';
    /* --comment is recorded with the job, --open-mode and mail acted on: no warning. */
    cr_assert_eq(lines, 3, "%s", warnings.data);
    cr_assert(!has(warnings.data, "--mail"), "%s", warnings.data);
    cr_assert_eq(sb->mail_types, GS_MAIL_END | GS_MAIL_FAIL);
    cr_assert_str_eq(sb->mail_user, "a@b");
    cr_assert(has(warnings.data, "run.sh:4: --hint=memory_bound: ignored"), "%s", warnings.data);
    cr_assert(has(warnings.data, "run.sh:4: -s: ignored: jobs never share cores or GPUs"), "%s",
              warnings.data);
    cr_assert(!has(warnings.data, "compute_bound"), "whole cores per task: what every job gets");
    cr_assert_eq(sb->threads_per_core, 0, "compute_bound binds every thread of the cores");
    cr_assert(!has(warnings.data, "--comment") && !has(warnings.data, "--open-mode"), "%s",
              warnings.data);
    cr_assert_str_eq(sb->comment, "hi");
    cr_assert(sb->open_append);
    gs_sbatch_free(sb);
}

Test(sbatch_options, known_slurm_options_gsched_lacks_are_errors)
{
    expect_error(SHEBANG "#SBATCH --ntasks-per-socket=2\n",
                 "run.sh:2: --ntasks-per-socket=2: a Slurm option gsched does not support");
    expect_error(SHEBANG "#SBATCH --ntasks-per-core=2\n",
                 "run.sh:2: --ntasks-per-core=2: gsched gives each task whole cores of its own");
    expect_error(SHEBANG "#SBATCH --mincpus=0\n",
                 "run.sh:2: --mincpus=0: '0' is not a count from 1 to");
    expect_error(SHEBANG "#SBATCH --deadline=whenever\n",
                 "run.sh:2: --deadline=whenever: 'whenever' is not a time");
    expect_error(SHEBANG "#SBATCH --begin=soon\n", "run.sh:2: --begin=soon: 'soon' is not a time");
    expect_error(SHEBANG "#SBATCH --tmp=lots\n", "run.sh:2: --tmp=lots: 'lots' is not a size");
    expect_error(SHEBANG "#SBATCH --no-kill=maybe\n", "run.sh:2: --no-kill=maybe: must be off");
    expect_error(SHEBANG "#SBATCH --wckey=a|b\n", "run.sh:2: --wckey=a|b: one name of 1 to");
    expect_error(SHEBANG "#SBATCH -m block:block:cyclic\n",
                 "run.sh:2: -m block:block:cyclic: the core level 'cyclic' is not supported");
    expect_error(SHEBANG "#SBATCH --distribution=plane\n",
                 "run.sh:2: --distribution=plane: plane needs its size: plane=N");
    expect_error(SHEBANG "#SBATCH --open-mode=overwrite\n",
                 "run.sh:2: --open-mode=overwrite: must be append or truncate");
    expect_error(SHEBANG "#SBATCH --mail-type=END,SOON\n",
                 "run.sh:2: --mail-type=END,SOON: 'SOON' is not a mail type");
    expect_error(SHEBANG "#SBATCH --mail-user=-x\n",
                 "run.sh:2: --mail-user=-x: a mail address does not start with '-'");
    expect_error(SHEBANG "#SBATCH --priority=TOP\n",
                 "run.sh:2: --priority=TOP: TOP is not supported: give a number");
    expect_error(
        SHEBANG "#SBATCH --priority=2000000\n",
        "run.sh:2: --priority=2000000: '2000000' is not a priority from -1000000 to 1000000");
    expect_error(SHEBANG "#SBATCH --ntasks-per-gpu=0\n",
                 "run.sh:2: --ntasks-per-gpu=0: '0' is not a count");
    expect_error(SHEBANG "#SBATCH --kill-on-invalid-dep=maybe\n",
                 "run.sh:2: --kill-on-invalid-dep=maybe: must be yes or no");
}

/* ---- --array ---- */

static struct gs_sbatch_array array_ok(const char *text)
{
    struct gs_sbatch_array a;
    struct gs_error err;

    gs_error_clear(&err);
    cr_assert_eq(gs_sbatch_parse_array(text, &a, &err), 0, "%s: %s", text, err.msg);
    return a;
}

static void array_fails(const char *text, const char *want)
{
    struct gs_sbatch_array a = {(uint32_t *)&a, 77, 77};
    struct gs_error err;

    gs_error_clear(&err);
    cr_assert_eq(gs_sbatch_parse_array(text, &a, &err), -EINVAL, "%s", text);
    cr_assert(has(err.msg, want), "%s: want '%s' in '%s'", text, want, err.msg);
    cr_assert_eq(a.n, 77, "written on failure");
}

Test(sbatch_array, range_list_and_step)
{
    struct gs_sbatch_array a = array_ok("0-15");

    cr_assert_eq(a.n, 16);
    cr_assert_eq(a.ids[15], 15);
    cr_assert_eq(a.throttle, 0);
    gs_sbatch_array_release(&a);
    a = array_ok("1,3,7-9");
    cr_assert_eq(a.n, 5);
    cr_assert_eq(memcmp(a.ids, (uint32_t[]){1, 3, 7, 8, 9}, 5 * sizeof(uint32_t)), 0);
    gs_sbatch_array_release(&a);
    a = array_ok("0-15:4");
    cr_assert_eq(a.n, 4);
    cr_assert_eq(memcmp(a.ids, (uint32_t[]){0, 4, 8, 12}, 4 * sizeof(uint32_t)), 0);
    gs_sbatch_array_release(&a);
}

Test(sbatch_array, ids_are_sorted_and_distinct)
{
    struct gs_sbatch_array a = array_ok("7,1-3,2,7");

    cr_assert_eq(a.n, 4);
    cr_assert_eq(memcmp(a.ids, (uint32_t[]){1, 2, 3, 7}, 4 * sizeof(uint32_t)), 0);
    gs_sbatch_array_release(&a);
}

Test(sbatch_array, throttle)
{
    struct gs_sbatch_array a = array_ok("0-99%4");

    cr_assert_eq(a.n, 100);
    cr_assert_eq(a.throttle, 4);
    gs_sbatch_array_release(&a);
    array_fails("0-9%", "throttle");
    array_fails("0-9%0", "throttle");
    array_fails("0-9%x", "throttle");
}

Test(sbatch_array, limits)
{
    struct gs_sbatch_array a = array_ok("0-99999");

    cr_assert_eq(a.n, GS_SBATCH_ARRAY_MAX_IDS);
    gs_sbatch_array_release(&a);
    a = array_ok("0-3999999:1000");
    cr_assert_eq(a.n, 4000);
    gs_sbatch_array_release(&a);
    array_fails("0-100000", "more than 100000 task ids");
    array_fails("0-50000,60000-110000", "more than 100000");
    array_fails("4000001", "above the limit");
    array_fails("0-4294967296", "expected a task id");
}

Test(sbatch_array, malformed)
{
    array_fails("", "expected a task id");
    array_fails("5-1", "runs backwards");
    array_fails("1-5:0", "step");
    array_fails("1,,2", "expected a task id");
    array_fails("1-", "after '-'");
    array_fails("1x", "unexpected 'x'");
    array_fails("-1", "expected a task id");
}

Test(sbatch_array, in_a_script)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --array=0-15:4%2\n");

    cr_assert_eq(sb->array.n, 4);
    cr_assert_eq(sb->array.throttle, 2);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH -a 3-1\n", "run.sh:2: -a 3-1: range 3-1 runs backwards");
}

/* ---- --dependency ---- */

static struct gs_sbatch_deps deps_ok(const char *text)
{
    struct gs_sbatch_deps d;
    struct gs_error err;

    gs_error_clear(&err);
    cr_assert_eq(gs_sbatch_parse_dependency(text, &d, &err), 0, "%s: %s", text, err.msg);
    return d;
}

static void deps_fail(const char *text, const char *want)
{
    struct gs_sbatch_deps d = {GS_SBATCH_DEP_ANY, NULL, 77};
    struct gs_error err;

    gs_error_clear(&err);
    cr_assert_eq(gs_sbatch_parse_dependency(text, &d, &err), -EINVAL, "%s", text);
    cr_assert(has(err.msg, want), "%s: want '%s' in '%s'", text, want, err.msg);
    cr_assert_eq(d.n, 77);
}

Test(sbatch_dependency, single_and_several_job_ids)
{
    struct gs_sbatch_deps d = deps_ok("afterok:41");

    cr_assert_eq(d.n, 1);
    cr_assert_eq(d.terms[0].dep.type, GS_DEP_AFTEROK);
    cr_assert_eq(d.terms[0].dep.job_id, 41);
    gs_sbatch_deps_release(&d);
    d = deps_ok("afterany:1:2:3");
    cr_assert_eq(d.n, 3);
    cr_assert_eq(d.op, GS_SBATCH_DEP_ALL);
    cr_assert_eq(d.terms[2].dep.type, GS_DEP_AFTERANY);
    cr_assert_eq(d.terms[2].dep.job_id, 3);
    gs_sbatch_deps_release(&d);
}

Test(sbatch_dependency, comma_means_all_question_mark_any)
{
    struct gs_sbatch_deps d = deps_ok("afterok:1:2,afternotok:3,singleton");

    cr_assert_eq(d.op, GS_SBATCH_DEP_ALL);
    cr_assert_eq(d.n, 4);
    cr_assert_eq(d.terms[2].dep.type, GS_DEP_AFTERNOTOK);
    cr_assert(d.terms[3].singleton);
    gs_sbatch_deps_release(&d);
    d = deps_ok("afterok:1?afternotok:2");
    cr_assert_eq(d.op, GS_SBATCH_DEP_ANY);
    cr_assert_eq(d.n, 2);
    cr_assert_eq(d.terms[1].dep.job_id, 2);
    gs_sbatch_deps_release(&d);
}

Test(sbatch_dependency, after_with_delay)
{
    struct gs_sbatch_deps d = deps_ok("after:5+10:6");

    cr_assert_eq(d.n, 2);
    cr_assert_eq(d.terms[0].dep.type, GS_DEP_AFTER);
    cr_assert_eq(d.terms[0].dep.delay_min, 10);
    cr_assert_eq(d.terms[1].dep.delay_min, 0);
    gs_sbatch_deps_release(&d);
}

Test(sbatch_dependency, array_tasks_and_aftercorr)
{
    struct gs_sbatch_deps d = deps_ok("afterok:12_3:12_*:14,aftercorr:20,aftercorr:21_*");

    cr_assert_eq(d.n, 5);
    cr_assert_eq(d.terms[0].dep.job_id, 12);
    cr_assert_eq(d.terms[0].dep.target, GS_DEP_TASK);
    cr_assert_eq(d.terms[0].dep.task_id, 3);
    cr_assert_eq(d.terms[1].dep.target, GS_DEP_ARRAY);
    cr_assert_eq(d.terms[2].dep.target, GS_DEP_JOB);
    cr_assert_eq(d.terms[3].dep.type, GS_DEP_AFTERCORR);
    cr_assert_eq(d.terms[3].dep.job_id, 20);
    cr_assert_eq(d.terms[4].dep.target, GS_DEP_ARRAY);
    gs_sbatch_deps_release(&d);
    d = deps_ok("after:9_0+5");
    cr_assert_eq(d.terms[0].dep.target, GS_DEP_TASK);
    cr_assert_eq(d.terms[0].dep.task_id, 0);
    cr_assert_eq(d.terms[0].dep.delay_min, 5);
    gs_sbatch_deps_release(&d);
}

Test(sbatch_dependency, malformed)
{
    deps_fail("afterok:1,afterany:2?afterok:3", "not both");
    deps_fail("afterok", "is not TYPE:JOBID");
    deps_fail("afterok:", "is not TYPE:JOBID");
    deps_fail("", "is not TYPE:JOBID");
    deps_fail("afterok:1,", "is not TYPE:JOBID");
    deps_fail("afterkinda:1", "unknown dependency type 'afterkinda'");
    deps_fail("afterok:x", "'x' is not a job id");
    deps_fail("afterok:0", "'0' is not a job id");
    deps_fail("afterok:1::2", "'' is not a job id");
    deps_fail("afterok:5+3", "only allowed after 'after:'");
    deps_fail("after:5+", "expected minutes");
    deps_fail("afterok:12_x", "'12_x' is not a job id (JOBID, JOBID_TASK");
    deps_fail("afterok:12_", "'12_' is not a job id");
    deps_fail("afterok:12_4294967296", "is not a job id");
    deps_fail("afterok:12_*5", "is not a job id");
    deps_fail("aftercorr:12_3", "aftercorr pairs each task");
    deps_fail("after:12_3+x", "expected minutes");
}

Test(sbatch_dependency, in_a_script)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH -d afterok:7?afterany:8\n");

    cr_assert_eq(sb->deps.op, GS_SBATCH_DEP_ANY);
    cr_assert_eq(sb->deps.n, 2);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH --dependency=afterok:x\n",
                 "run.sh:2: --dependency=afterok:x: 'x' is not a job id");
}

/* ---- --signal ---- */

static struct gs_sbatch_signal signal_ok(const char *text)
{
    struct gs_sbatch_signal s;
    struct gs_error err;

    gs_error_clear(&err);
    cr_assert_eq(gs_sbatch_parse_signal(text, &s, &err), 0, "%s: %s", text, err.msg);
    return s;
}

Test(sbatch_signal, forms)
{
    struct gs_sbatch_signal s = signal_ok("USR1");

    cr_assert_eq(s.signo, SIGUSR1);
    cr_assert_eq(s.seconds, 60, "default warning time");
    cr_assert_not(s.batch_only);
    s = signal_ok("SIGTERM@120");
    cr_assert_eq(s.signo, SIGTERM);
    cr_assert_eq(s.seconds, 120);
    s = signal_ok("B:usr2@0");
    cr_assert_eq(s.signo, SIGUSR2);
    cr_assert(s.batch_only);
    cr_assert_eq(s.seconds, 0);
    s = signal_ok("10@30");
    cr_assert_eq(s.signo, 10);
    s = signal_ok("R:INT");
    cr_assert(s.reservation_overlap);
    cr_assert_not(s.batch_only);
    s = signal_ok("BR:HUP");
    cr_assert(s.reservation_overlap && s.batch_only);
}

Test(sbatch_signal, malformed)
{
    static const char *const bad[] = {"",       "USR9",  "SIG",   "0",      "65",
                                      "X:USR1", ":USR1", "USR1@", "USR1@x", "USR1@70000"};
    struct gs_sbatch_signal s = {77, 77, false, false};
    struct gs_error err;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(gs_sbatch_parse_signal(bad[i], &s, &err), -EINVAL, "%s", bad[i]);
        cr_assert_eq(s.signo, 77);
    }
    expect_error(SHEBANG "#SBATCH --signal=FOO@10\n", "run.sh:2: --signal=FOO@10: unknown signal");
}

/* ---- --export ---- */

Test(sbatch_export, all_none_and_lists)
{
    struct gs_sbatch_export e;
    struct gs_error err;

    cr_assert_eq(gs_sbatch_parse_export("ALL", &e, &err), 0);
    cr_assert_eq(e.mode, GS_SBATCH_EXPORT_ALL);
    cr_assert_eq(e.n, 0);
    gs_sbatch_export_release(&e);
    cr_assert_eq(gs_sbatch_parse_export("none", &e, &err), 0);
    cr_assert_eq(e.mode, GS_SBATCH_EXPORT_NONE);
    gs_sbatch_export_release(&e);
    cr_assert_eq(gs_sbatch_parse_export("ALL,OMP_NUM_THREADS=8,HOME", &e, &err), 0);
    cr_assert_eq(e.mode, GS_SBATCH_EXPORT_ALL);
    cr_assert_eq(e.n, 2);
    cr_assert_str_eq(e.vars[0], "OMP_NUM_THREADS=8");
    cr_assert_str_eq(e.vars[1], "HOME");
    cr_assert_null(e.vars[2]);
    gs_sbatch_export_release(&e);
    cr_assert_eq(gs_sbatch_parse_export("A=1=2,B", &e, &err), 0);
    cr_assert_eq(e.mode, GS_SBATCH_EXPORT_NONE, "without ALL only the list is exported");
    cr_assert_str_eq(e.vars[0], "A=1=2");
    gs_sbatch_export_release(&e);
}

Test(sbatch_export, malformed)
{
    struct gs_sbatch_export e = {GS_SBATCH_EXPORT_ALL, NULL, 77};
    struct gs_error err;

    cr_assert_eq(gs_sbatch_parse_export("A,ALL", &e, &err), -EINVAL);
    cr_assert(has(err.msg, "must come first"), "%s", err.msg);
    cr_assert_eq(gs_sbatch_parse_export("1X=2", &e, &err), -EINVAL);
    cr_assert(has(err.msg, "'1X' is not a variable name"), "%s", err.msg);
    cr_assert_eq(gs_sbatch_parse_export("", &e, &err), -EINVAL);
    cr_assert_eq(gs_sbatch_parse_export("ALL,", &e, &err), -EINVAL);
    cr_assert_eq(e.n, 77);
    expect_error(SHEBANG "#SBATCH --export=ALL,=x\n", "run.sh:2: --export=ALL,=x: '' is not");
}

/* ---- --test-only output ---- */

Test(sbatch_kv, prints_the_resolved_request)
{
    struct gs_sbatch *sb = parse_cli(SHEBANG "#SBATCH -J train -N 2-4 -n 16 -c 8\n"
                                             "#SBATCH --gres=gpu:a100:8 --mem=0 -t 1-00:00:00\n"
                                             "#SBATCH -a 0-3,7%2 -d afterok:5?singleton\n"
                                             "#SBATCH --signal=B:USR1 --export=ALL,X=1\n"
                                             "#SBATCH -o out-%j.txt --no-requeue -w n[1-2]\n",
                                     ARGC("-p", "gpu", "-H"), ARGV("-p", "gpu", "-H"));
    struct gs_buf kv = GS_BUF_INIT;
    static const char *const want[] = {
        "script=run.sh\n",
        "job_name=train\n",
        "nodes=2-4\n",
        "ntasks=16\n",
        "cpus_per_task=8\n",
        "gres=gpu:a100:8\n",
        "mem=all\n",
        "time_limit=1-00:00:00\n",
        "partition=gpu\n",
        "nodelist=n[1-2]\n",
        "output=out-%j.txt\n",
        "array=0-3,7\n",
        "array_tasks=5\n",
        "array_throttle=2\n",
        "dependency=afterok:5?singleton\n",
        "requeue=no\n",
        "signal=B:USR1@60\n",
        "export=ALL\n",
        "export_var=X=1\n",
        "hold=yes\n",
    };

    cr_assert_eq(gs_sbatch_to_kv(sb, &kv), 0);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_assert(has(kv.data, want[i]), "want '%s' in:\n%s", want[i], kv.data);
    cr_assert_not(has(kv.data, "account="), "unset options are not printed");
    gs_buf_release(&kv);
    gs_sbatch_free(sb);
}

Test(sbatch_kv, sizes_and_gpus_in_canonical_form)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --mem-per-gpu=1536 --gpus=h100:4 -t 90\n"
                                         "#SBATCH --gpus-per-node=2 --dependency=after:3+5\n");
    struct gs_buf kv = GS_BUF_INIT;

    cr_assert_eq(gs_sbatch_to_kv(sb, &kv), 0);
    cr_assert(has(kv.data, "mem_per_gpu=1536M\n"), "%s", kv.data);
    cr_assert(has(kv.data, "gpus=h100:4\n"), "%s", kv.data);
    cr_assert(has(kv.data, "gpus_per_node=2\n"), "%s", kv.data);
    cr_assert(has(kv.data, "time_limit=1:30:00\n"), "%s", kv.data);
    cr_assert(has(kv.data, "dependency=after:3+5\n"), "%s", kv.data);
    gs_buf_release(&kv);
    gs_sbatch_free(sb);
}

/* --begin, at a fixed now: Friday 2026-12-04 16:42:10 UTC. */
Test(sbatch, begin_times_read_as_slurm_reads_them)
{
    const uint64_t now = UINT64_C(1796402530) * 1000;
    struct gs_error err;
    uint64_t t;

    setenv("TZ", "UTC", 1);
    tzset();
    cr_assert_eq(gs_sbatch_parse_begin("now", now, &t, &err), 0);
    cr_assert_eq(t, now);
    cr_assert_eq(gs_sbatch_parse_begin("now+90", now, &t, &err), 0);
    cr_assert_eq(t, now + 90000, "seconds without a unit");
    cr_assert_eq(gs_sbatch_parse_begin("now+2hours", now, &t, &err), 0);
    cr_assert_eq(t, now + 7200000);
    cr_assert_eq(gs_sbatch_parse_begin("17:00", now, &t, &err), 0);
    cr_assert_eq(t, UINT64_C(1796403600) * 1000, "later today");
    cr_assert_eq(gs_sbatch_parse_begin("16:00:30", now, &t, &err), 0);
    cr_assert_eq(t, (UINT64_C(1796400030) + 86400) * 1000, "passed: tomorrow");
    cr_assert_eq(gs_sbatch_parse_begin("2026-12-24T08:30", now, &t, &err), 0);
    cr_assert_eq(t, UINT64_C(1798101000) * 1000);
    cr_assert_eq(gs_sbatch_parse_begin("2026-12-24", now, &t, &err), 0);
    cr_assert_eq(t, UINT64_C(1798070400) * 1000);
    cr_assert_eq(gs_sbatch_parse_begin("midnight", now, &t, &err), 0);
    cr_assert_eq(t, UINT64_C(1796428800) * 1000, "the next midnight");
    cr_assert_eq(gs_sbatch_parse_begin("teatime", now, &t, &err), 0);
    cr_assert_eq(t, (UINT64_C(1796400000) + 86400) * 1000, "16:00 has passed");
    cr_assert_eq(gs_sbatch_parse_begin("tomorrow", now, &t, &err), 0);
    cr_assert_eq(t, UINT64_C(1796428800) * 1000);
    cr_assert_lt(gs_sbatch_parse_begin("soon", now, &t, &err), 0);
    cr_assert(strstr(err.msg, "'soon' is not a time") != NULL, "%s", err.msg);
    cr_assert_lt(gs_sbatch_parse_begin("now+3fortnights", now, &t, &err), 0);
    cr_assert_lt(gs_sbatch_parse_begin("25:00", now, &t, &err), 0);
    cr_assert_lt(gs_sbatch_parse_begin("2026-13-01", now, &t, &err), 0);
    cr_assert_lt(gs_sbatch_parse_begin("12:00x", now, &t, &err), 0);
}

/* --hint=nomultithread is --threads-per-core=1 (the one given last wins, as for any option
 * given twice). */
Test(sbatch_options, threads_per_core_and_hint)
{
    struct gs_sbatch *sb = parse(SHEBANG "#SBATCH --hint=nomultithread\n");

    cr_assert_eq(sb->threads_per_core, 1);
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --threads-per-core=2\n");
    cr_assert_eq(sb->threads_per_core, 2);
    gs_sbatch_free(sb);
    sb = parse(SHEBANG "#SBATCH --hint=nomultithread --threads-per-core=2\n");
    cr_assert_eq(sb->threads_per_core, 2);
    gs_sbatch_free(sb);
    expect_error(SHEBANG "#SBATCH --hint=fast\n", "run.sh:2: --hint=fast: must be nomultithread");
}
