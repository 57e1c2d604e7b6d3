/*
 * test_jobspec.c: job files as users write them are read into a spec with the right
 * defaults; every mistake is reported at its line:col with a useful message, typos get a
 * suggestion, and a file with any problem yields no spec.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/jobspec.h"
#include "common/jobspec_license.h"
#include "common/jobspec_mail.h"
#include "common/schema.h"
#include "common/units.h"

static struct gs_buf errors;

static void setup(void)
{
    gs_buf_init(&errors);
}

static void teardown(void)
{
    gs_buf_release(&errors);
}

TestSuite(jobspec, .init = setup, .fini = teardown);

static struct gs_jobspec *parse_ok(const char *text)
{
    struct gs_jobspec *spec = NULL;
    int rc = gs_jobspec_parse_toml(text, strlen(text), "job.toml", &spec, &errors);

    cr_assert_eq(rc, 0, "rc=%d errors:\n%s", rc, errors.data ? errors.data : "");
    cr_assert_not_null(spec);
    return spec;
}

/* Asserts the file is rejected and the messages contain want. */
static void parse_fails(const char *text, const char *want)
{
    struct gs_jobspec *spec = (struct gs_jobspec *)0x1;
    int rc = gs_jobspec_parse_toml(text, strlen(text), "job.toml", &spec, &errors);

    cr_assert_eq(rc, -EINVAL, "accepted:\n%s", text);
    cr_assert_eq(spec, (struct gs_jobspec *)0x1, "spec written on failure");
    cr_assert_not_null(errors.data);
    cr_assert_not_null(strstr(errors.data, want), "want '%s' in:\n%s", want, errors.data);
}

Test(jobspec, reads_the_full_example)
{
    struct gs_jobspec *s = parse_ok("name = \"gpt-small\"\n"
                                    "priority = 10\n"
                                    "depends_on = [\"afterok:41\", \"afterany:7\"]\n"
                                    "[resources]\n"
                                    "nodes = 2\n"
                                    "gpus_per_node = 4\n"
                                    "cpus_per_gpu = 8\n"
                                    "mem_per_node = \"64G\"\n"
                                    "time_limit = \"02:00:00\"\n"
                                    "exclusive = false\n"
                                    "constraint = \"h100\"\n"
                                    "[run]\n"
                                    "command = [\"python3\", \"train.py\", \"--epochs\", \"3\"]\n"
                                    "tasks_per_node = 4\n"
                                    "workdir = \".\"\n"
                                    "stdout = \"logs/%j-%t.out\"\n"
                                    "env = { NCCL_DEBUG = \"WARN\", OMP_NUM_THREADS = \"8\" }\n"
                                    "[restart]\n"
                                    "max_restarts = 2\n");

    cr_assert_str_eq(s->name, "gpt-small");
    cr_assert_eq(s->priority, 10);
    cr_assert_eq(s->ndeps, 2);
    cr_assert_eq(s->deps[0].type, GS_DEP_AFTEROK);
    cr_assert_eq(s->deps[0].job_id, 41);
    cr_assert_eq(s->deps[1].type, GS_DEP_AFTERANY);
    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->gpus_per_node, 4);
    cr_assert_eq(s->cpus_per_gpu, 8);
    cr_assert_eq(s->cpus_per_task, 0);
    cr_assert_eq(s->mem_per_node_mib, 64 * 1024);
    cr_assert_eq(s->time_limit_s, 7200);
    cr_assert_str_eq(s->constraint, "h100");
    cr_assert_eq(s->argc, 4);
    cr_assert_str_eq(s->argv[1], "train.py");
    cr_assert_null(s->argv[4]);
    cr_assert_eq(s->tasks_per_node, 4);
    cr_assert_str_eq(s->stdout_pattern, "logs/%j-%t.out");
    cr_assert_eq(s->nenv, 2);
    cr_assert_str_eq(s->env[0], "NCCL_DEBUG=WARN");
    cr_assert_str_eq(s->env[1], "OMP_NUM_THREADS=8");
    cr_assert_null(s->env[2]);
    cr_assert_eq(s->max_restarts, 2);
    cr_assert_eq(gs_jobspec_check(s, &(struct gs_error){0}), 0, "reader and check agree");
    gs_jobspec_free(s);
}

Test(jobspec, minimal_file_gets_defaults_and_name_from_file)
{
    struct gs_jobspec *s = parse_ok("[run]\nscript = \"\"\"\necho hi\n\"\"\"\n");

    cr_assert_str_eq(s->name, "job");
    cr_assert_eq(s->nodes, 1);
    cr_assert_eq(s->gpus_per_node, 0);
    cr_assert_eq(s->cpus_per_task, 1);
    cr_assert_eq(s->tasks_per_node, 1);
    cr_assert_eq(s->time_limit_s, GS_DURATION_INFINITE);
    cr_assert_null(s->argv);
    cr_assert_str_eq(s->script, "echo hi\n");
    cr_assert_str_eq(s->stdout_pattern, "gsched-%j-%t.out");
    cr_assert_null(s->stderr_pattern);
    cr_assert_eq(gs_jobspec_check(s, &(struct gs_error){0}), 0, "reader and check agree");
    gs_jobspec_free(s);
}

Test(jobspec, name_defaults_to_file_base_name)
{
    struct gs_jobspec *s = NULL;
    const char *text = "[run]\ncommand = [\"true\"]\n";

    cr_assert_eq(gs_jobspec_parse_toml(text, strlen(text), "jobs/train-7b.toml", &s, &errors), 0);
    cr_assert_str_eq(s->name, "train-7b");
    gs_jobspec_free(s);
}

Test(jobspec, accepts_integer_minutes_and_mib_and_per_gpu_tasks)
{
    struct gs_jobspec *s = parse_ok("[resources]\ngpus_per_node = 2\ntime_limit = 90\n"
                                    "mem_per_node = 4096\ntmp_per_node = 100\n"
                                    "[run]\ncommand = [\"true\"]\ntasks_per_node = \"per-gpu\"\n");

    cr_assert_eq(s->time_limit_s, 5400);
    cr_assert_eq(s->mem_per_node_mib, 4096);
    cr_assert_eq(s->tmp_per_node_mib, 100);
    cr_assert(s->tasks_per_gpu);
    gs_jobspec_free(s);
}

Test(jobspec, typo_in_key_is_reported_with_suggestion_and_place)
{
    parse_fails("[resources]\ngpu_per_node = 4\n[run]\ncommand = [\"true\"]\n",
                "job.toml:2:1: unknown key 'gpu_per_node' in resources (did you mean "
                "'resources.gpus_per_node'?)");
}

Test(jobspec, edit_distance_stops_at_its_limit)
{
    cr_assert_eq(gs_schema_edit_distance("gpus", "gpus", 2), 0);
    cr_assert_eq(gs_schema_edit_distance("gpu_per_node", "gpus_per_node", 2), 1);
    cr_assert_eq(gs_schema_edit_distance("ndoes", "nodes", 2), 1, "a transposition is one");
    cr_assert_eq(gs_schema_edit_distance("abc", "xyz", 1), 2, "past the limit: limit + 1");
    cr_assert_eq(gs_schema_edit_distance("a", "abcdef", 2), 3, "lengths too far apart");
    cr_assert_eq(gs_schema_edit_distance("kitten", "sitting", 9), 3);
    cr_assert_eq(gs_schema_edit_distance("kitten", "sitting", 2), 3);
}

Test(jobspec, key_in_wrong_section_points_to_the_right_one)
{
    parse_fails("gpus_per_node = 4\n[run]\ncommand = [\"true\"]\n",
                "job.toml:1:1: unknown key 'gpus_per_node' (did you mean "
                "'resources.gpus_per_node'?)");
}

Test(jobspec, wrong_type_names_the_field_and_position)
{
    parse_fails("[resources]\nnodes = 2\ngpus_per_node = \"four\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:3:17: resources.gpus_per_node must be an integer from 0 to 1024");
    gs_buf_reset(&errors);
    parse_fails("[resources]\nnodes = 0\n[run]\ncommand = [\"x\"]\n",
                "job.toml:2:9: resources.nodes must be a positive integer");
}

Test(jobspec, reports_every_problem_in_one_pass)
{
    parse_fails("priority = \"high\"\nbogus = 1\n[resources]\ntime_limit = \"2h30\"\n"
                "[run]\ncommand = [\"x\", 3]\n",
                "job.toml:1:12: priority must be an integer");
    cr_assert_not_null(strstr(errors.data, "job.toml:2:1: unknown key 'bogus'"));
    cr_assert_not_null(strstr(errors.data, "job.toml:4:14: resources.time_limit must be a "
                                           "duration"));
    cr_assert_not_null(strstr(errors.data, "job.toml:6:17: run.command[1] must be a string, "
                                           "not integer"));
}

Test(jobspec, nice_is_read_and_checked)
{
    struct gs_jobspec *s = parse_ok("nice = -5\npriority = 3\n[run]\ncommand = [\"x\"]\n");
    struct gs_error err;

    cr_assert_eq(s->nice, -5, "negative is the scheduler's to refuse, not the reader's");
    cr_assert_eq(s->priority, 3);
    gs_jobspec_free(s);
    s = parse_ok("nice = 1000000\n[run]\ncommand = [\"x\"]\n");
    cr_assert_eq(s->nice, GS_JOBSPEC_NICE_MAX);
    s->nice = GS_JOBSPEC_NICE_MAX + 1;
    cr_assert_eq(gs_jobspec_check(s, &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, "nice must be from -1000000 to 1000000"), "%s", err.msg);
    gs_jobspec_free(s);
    s = parse_ok("[run]\ncommand = [\"x\"]\n");
    cr_assert_eq(s->nice, 0, "no nice: 0");
    gs_jobspec_free(s);

    parse_fails("nice = 1000001\n[run]\ncommand = [\"x\"]\n",
                "job.toml:1:8: nice must be an integer from -1000000 to 1000000");
    gs_buf_reset(&errors);
    parse_fails("name = \"a\"\nnice = -1000001\n[run]\ncommand = [\"x\"]\n",
                "job.toml:2:8: nice must be an integer from -1000000 to 1000000");
    gs_buf_reset(&errors);
    parse_fails("nice = \"low\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:1:8: nice must be an integer");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = [\"x\"]\nnice = 3\n",
                "job.toml:3:1: unknown key 'nice' in run (did you mean the top-level 'nice', "
                "before any [table]?)");
}

Test(jobspec, account_qos_partition_reservation_and_comment_are_read)
{
    struct gs_jobspec *s = parse_ok("account = \"nlp\"\nqos = \"high\"\npartition = \"gpu\"\n"
                                    "reservation = \"maint-2024.06_a\"\n"
                                    "comment = \"sweep 3, lr 3e-4\"\n"
                                    "[run]\ncommand = [\"x\"]\n");
    struct gs_error err;

    cr_assert_str_eq(s->account, "nlp");
    cr_assert_str_eq(s->qos, "high");
    cr_assert_str_eq(s->partition, "gpu");
    cr_assert_str_eq(s->reservation, "maint-2024.06_a");
    cr_assert_str_eq(s->comment, "sweep 3, lr 3e-4", "a comment is free text");
    cr_assert_eq(gs_jobspec_check(s, &err), 0, "%s", err.msg);
    gs_jobspec_free(s);
    s = parse_ok("[run]\ncommand = [\"x\"]\n");
    cr_assert_null(s->account);
    cr_assert_null(s->qos);
    cr_assert_null(s->partition);
    cr_assert_null(s->reservation, "none unless asked for");
    cr_assert_null(s->comment);
    gs_jobspec_free(s);
}

Test(jobspec, rejects_bad_names_at_their_place)
{
    parse_fails("name = \"a\"\nreservation = \"maint window\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:2:15: reservation must be one name of 1 to 128 letters, digits, "
                "'_', '.' or '-'");
    gs_buf_reset(&errors);
    parse_fails("reservation = \"a,b\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:1:15: reservation must be one name");
    gs_buf_reset(&errors);
    parse_fails("partition = \"\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:1:13: partition must not be empty");
    gs_buf_reset(&errors);
    parse_fails("account = \"a/b\"\nqos = 3\ncomment = \"\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:1:11: account must be one name");
    cr_assert_not_null(strstr(errors.data, "job.toml:2:7: qos must be a string, not integer"), "%s",
                       errors.data);
    cr_assert_not_null(strstr(errors.data, "job.toml:3:11: comment must not be empty"), "%s",
                       errors.data);
    gs_buf_reset(&errors);
    parse_fails("[resources]\nreservation = \"r\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:2:1: unknown key 'reservation' in resources (did you mean the "
                "top-level 'reservation', before any [table]?)");
}

Test(jobspec, check_refuses_a_reservation_that_is_not_one_name)
{
    struct gs_jobspec *s = parse_ok("[run]\ncommand = [\"x\"]\n");
    struct gs_error err;

    s->reservation = strdup("r1,r2");
    cr_assert_not_null(s->reservation);
    cr_assert_eq(gs_jobspec_check(s, &err), -EINVAL);
    cr_assert_not_null(strstr(err.msg, "reservation must be one name"), "%s", err.msg);
    gs_jobspec_free(s);
}

Test(jobspec, toml_syntax_error_carries_its_position)
{
    parse_fails("name = \"x\"\n[run\ncommand = [\"x\"]\n", "job.toml:2:");
}

Test(jobspec, rejects_missing_or_conflicting_run)
{
    parse_fails("name = \"x\"\n", "nothing to run: set run.command or run.script");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = [\"x\"]\nscript = \"echo\"\n",
                "job.toml:3:10: run.command and run.script are both set");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = []\n", "run.command must be a non-empty array");
    gs_buf_reset(&errors);
    parse_fails("[run]\nscript = \"  \\n\"\n", "run.script is empty");
}

Test(jobspec, rejects_inconsistent_resources)
{
    parse_fails("[resources]\ngpus_per_node = 1\ncpus_per_gpu = 2\ncpus_per_task = 2\n"
                "[run]\ncommand = [\"x\"]\n",
                "job.toml:4:17: resources.cpus_per_gpu and resources.cpus_per_task are both set");
    gs_buf_reset(&errors);
    parse_fails("[resources]\ncpus_per_gpu = 2\n[run]\ncommand = [\"x\"]\n",
                "resources.cpus_per_gpu needs resources.gpus_per_node > 0");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = [\"x\"]\ntasks_per_node = \"per-gpu\"\n",
                "needs resources.gpus_per_node > 0");
}

/* resources.constraint and prefer: node feature expressions (common/features.h). */
Test(jobspec, reads_feature_expressions_and_places_their_mistakes)
{
    struct gs_jobspec *s = parse_ok("[run]\ncommand = [\"x\"]\n[resources]\n"
                                    "constraint = \"(a100|h100)&ib\"\nprefer = \"nvl\"\n");

    cr_assert_str_eq(s->constraint, "(a100|h100)&ib");
    cr_assert_str_eq(s->prefer, "nvl");
    gs_jobspec_free(s);
    parse_fails("[run]\ncommand = [\"x\"]\n[resources]\nconstraint = \"a100&\"\n",
                "job.toml:4:14: resources.constraint: 'a100&': at character 6: a feature name "
                "expected after '&'");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = [\"x\"]\n[resources]\nprefer = \"ib&[a|b]\"\n",
                "job.toml:4:10: resources.prefer: 'ib&[a|b]': at character 4: a matching OR");
    gs_buf_reset(&errors);
}

Test(jobspec, reads_the_switch_count_and_its_wait)
{
    struct gs_jobspec *s = parse_ok("[run]\ncommand = [\"x\"]\n[placement]\nswitches = 1\n"
                                    "switch_wait = \"10m\"\n");

    cr_assert_eq(s->switches, 1);
    cr_assert(s->switch_wait_set);
    cr_assert_eq(s->switch_wait_s, 600);
    gs_jobspec_free(s);
    parse_fails("[run]\ncommand = [\"x\"]\n[placement]\nswitch_wait = \"2d\"\n",
                "job.toml:4:15: placement.switch_wait must be at most a day (86400 s)");
    gs_buf_reset(&errors);
}

Test(jobspec, rejects_bad_dependencies_patterns_and_env)
{
    parse_fails("depends_on = [\"afterbad:3\"]\n[run]\ncommand = [\"x\"]\n",
                "job.toml:1:15: depends_on: cannot read 'afterbad:3'");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = [\"x\"]\nstdout = \"out-%q.log\"\n",
                "run.stdout: unknown placeholder '%q'");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = [\"x\"]\nenv = { \"1BAD\" = \"v\" }\n",
                "job.toml:3:9: run.env: '1BAD' is not a valid environment variable name");
    gs_buf_reset(&errors);
    parse_fails("[run]\ncommand = [\"x\"]\nenv = { A = 1 }\n", "run.env.A must be a string");
    gs_buf_reset(&errors);
    parse_fails("resources = 3\n[run]\ncommand = [\"x\"]\n", "resources must be a table");
}

Test(jobspec, dependency_strings)
{
    struct gs_dep d;

    cr_assert_eq(gs_dep_parse("after:1", &d), 0);
    cr_assert_eq(d.type, GS_DEP_AFTER);
    cr_assert_eq(gs_dep_parse("afternotok:18446744073709551", &d), 0);
    cr_assert_eq(d.type, GS_DEP_AFTERNOTOK);
    cr_assert_eq(gs_dep_parse("afterok:", &d), -EINVAL);
    cr_assert_eq(gs_dep_parse("afterok:0", &d), -EINVAL);
    cr_assert_eq(gs_dep_parse("afterok:1x", &d), -EINVAL);
    cr_assert_eq(gs_dep_parse("41", &d), -EINVAL);
    cr_assert_eq(gs_dep_parse("afterok:99999999999999999999999", &d), -EINVAL);
    cr_assert_str_eq(gs_dep_type_name(GS_DEP_AFTERANY), "afterany");
}

/* Slurm's JOBID_TASK, JOBID_*, aftercorr and after's +MIN; each reads back as written. */
Test(jobspec, dependency_strings_on_array_tasks_round_trip)
{
    static const char *const good[] = {"afterok:42_3",
                                       "afterany:42_*",
                                       "aftercorr:42",
                                       "aftercorr:42_*",
                                       "after:42+10",
                                       "after:42_0+1",
                                       "afternotok:18446744073709551615_4294967295"};
    static const char *const bad[] = {
        "afterok:42_",  "afterok:42_x", "afterok:42__1", "afterok:42_*3",         "aftercorr:42_3",
        "afterok:42+5", "after:42+",    "after:42+5x",   "afterok:42_4294967296", "after:0_1"};
    char text[GS_DEP_TEXT_SIZE];
    struct gs_dep d;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(gs_dep_parse(good[i], &d), 0, "%s", good[i]);
        cr_assert(gs_dep_valid(&d), "%s", good[i]);
        cr_assert_str_eq(gs_dep_format(&d, text), good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(gs_dep_parse(bad[i], &d), -EINVAL, "%s", bad[i]);
    cr_assert_eq(gs_dep_parse("afterok:42_3", &d), 0);
    cr_assert_eq(d.target, GS_DEP_TASK);
    cr_assert_eq(d.task_id, 3);
    cr_assert_eq(d.job_id, 42);
}

Test(jobspec, kill_on_invalid_dep_is_a_boolean)
{
    struct gs_jobspec *spec = NULL;
    const char *yes = "kill_on_invalid_dep = true\ndepends_on = \"aftercorr:4\"\n"
                      "[run]\ncommand = [\"x\"]\n";

    cr_assert_eq(gs_jobspec_parse_toml(yes, strlen(yes), "job.toml", &spec, &errors), 0, "%s",
                 errors.data);
    cr_assert_eq(spec->kill_invalid_dep, GS_KILL_INVALID_DEP_YES);
    cr_assert_eq(spec->deps[0].type, GS_DEP_AFTERCORR);
    gs_jobspec_free(spec);
    parse_fails("kill_on_invalid_dep = \"yes\"\n[run]\ncommand = [\"x\"]\n",
                "job.toml:1:23: kill_on_invalid_dep");
}

Test(jobspec, output_patterns_expand_every_placeholder)
{
    struct gs_pattern_vars v = {
        .job_id = 42, .rank = 3, .node = "node2", .job_name = "gpt", .user = "ada"};

    cr_assert_eq(gs_jobspec_expand_pattern("logs/%x-%j-%t@%n.%u.100%%", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "logs/gpt-42-3@node2.ada.100%");
    gs_buf_reset(&errors);
    cr_assert_eq(gs_jobspec_expand_pattern("bad-%q", &v, &errors), -EINVAL);
    cr_assert_eq(gs_jobspec_expand_pattern("trailing-%", &v, &errors), -EINVAL);
}

Test(jobspec, slurm_patterns_take_sbatch_placeholders_and_widths)
{
    const char *q = "out.%q", *end = "out%", *gsched_only = "%A.%4a";

    cr_assert_null(gs_jobspec_slurm_bad_placeholder("plain"));
    cr_assert_null(gs_jobspec_slurm_bad_placeholder("%A_%4a.%N.%n.%t.%u.%J%%.%x-%j"));
    cr_assert_eq(gs_jobspec_slurm_bad_placeholder(q), q + 4);
    cr_assert_eq(gs_jobspec_slurm_bad_placeholder(end), end + 3);
    cr_assert_eq(gs_jobspec_bad_placeholder(gsched_only), gsched_only);
}

Test(jobspec, placement_gpu_affinity)
{
    struct gs_jobspec *spec = parse_ok("[run]\ncommand = [\"true\"]\n");

    cr_assert_eq(spec->gpu_affinity, GS_GPU_AFFINITY_PREFER, "prefer is the default");
    gs_jobspec_free(spec);
    spec = parse_ok("[placement]\ngpu_affinity = \"strict\"\n[run]\ncommand = [\"true\"]\n");
    cr_assert_eq(spec->gpu_affinity, GS_GPU_AFFINITY_STRICT);
    cr_assert_str_eq(gs_gpu_affinity_name(spec->gpu_affinity), "strict");
    gs_jobspec_free(spec);
    parse_fails("[placement]\ngpu_affinity = \"best\"\n[run]\ncommand = [\"true\"]\n",
                "job.toml:2:16: placement.gpu_affinity must be");
    parse_fails("[placement]\ngpu_afinity = \"any\"\n[run]\ncommand = [\"true\"]\n",
                "did you mean 'placement.gpu_affinity'");
}

Test(jobspec, open_mode_appends_unless_truncate_is_asked_for)
{
    struct gs_jobspec *spec = parse_ok("[run]\ncommand = [\"true\"]\n");

    cr_assert_not(spec->truncate_output, "append is a job file's default");
    gs_jobspec_free(spec);
    spec = parse_ok("[run]\ncommand = [\"true\"]\nopen_mode = \"truncate\"\n");
    cr_assert(spec->truncate_output);
    gs_jobspec_free(spec);
    spec = parse_ok("[run]\ncommand = [\"true\"]\nopen_mode = \"append\"\n");
    cr_assert_not(spec->truncate_output);
    gs_jobspec_free(spec);
    parse_fails("[run]\ncommand = [\"true\"]\nopen_mode = \"trunc\"\n",
                "job.toml:3:13: run.open_mode must be \"append\"");
}

Test(jobspec, mail_types_and_address)
{
    struct gs_jobspec *spec =
        parse_ok("[mail]\ntype = [\"begin\", \"END,FAIL\"]\nuser = \"a.b+c@x-y.org\"\n"
                 "[run]\ncommand = [\"true\"]\n");
    struct gs_buf text = GS_BUF_INIT;
    uint32_t bits;
    char why[240];

    cr_assert_eq(spec->mail_types, GS_MAIL_BEGIN | GS_MAIL_END | GS_MAIL_FAIL);
    cr_assert_str_eq(spec->mail_user, "a.b+c@x-y.org");
    gs_jobspec_free(spec);
    cr_assert_eq(gs_mail_types_parse("ALL,time_limit_90", &bits, why, sizeof(why)), 0);
    cr_assert_eq(bits, GS_MAIL_ALL | GS_MAIL_TIME_LIMIT_90);
    gs_mail_types_format(bits, &text);
    cr_assert_str_eq(text.data, "BEGIN,END,FAIL,REQUEUE,INVALID_DEPEND,STAGE_OUT,TIME_LIMIT_90");
    gs_buf_release(&text);
    cr_assert_eq(gs_mail_types_parse("NONE", &bits, why, sizeof(why)), 0);
    cr_assert_eq(bits, 0);
    gs_mail_types_format(0, &text);
    cr_assert_str_eq(text.data, "NONE");
    gs_buf_release(&text);
    cr_assert_eq(gs_mail_types_parse("END,,FAIL", &bits, why, sizeof(why)), -EINVAL);
    cr_assert_eq(gs_mail_types_parse("END,LATER", &bits, why, sizeof(why)), -EINVAL);
    cr_assert(strncmp(why, "'LATER' is not a mail type", 26) == 0, "%s", why);
    cr_assert_eq(gs_mail_user_check("-oProxy", why, sizeof(why)), -EINVAL);
    cr_assert_eq(gs_mail_user_check("a;b", why, sizeof(why)), -EINVAL);
    cr_assert_eq(gs_mail_user_check("", why, sizeof(why)), -EINVAL);
    cr_assert_eq(gs_mail_user_check("alice", why, sizeof(why)), 0);
    parse_fails("[mail]\ntype = \"END,SOON\"\n[run]\ncommand = [\"true\"]\n",
                "job.toml:2:8: mail.type: 'SOON' is not a mail type");
    parse_fails("[mail]\nuser = \"--x\"\n[run]\ncommand = [\"true\"]\n",
                "job.toml:2:8: mail.user: a mail address does not start with '-'");
    parse_fails("[mail]\nto = \"x\"\n[run]\ncommand = [\"true\"]\n", "job.toml:2:1: unknown key");
}

Test(jobspec, mpi_launcher)
{
    struct gs_jobspec *spec = parse_ok("[run]\ncommand = [\"true\"]\n");

    cr_assert_eq(spec->launcher, GS_LAUNCHER_NONE, "none is the default");
    cr_assert_not(gs_jobspec_runs_leader(spec));
    gs_jobspec_free(spec);
    spec = parse_ok("[resources]\nnodes = 2\n[run]\nlauncher = \"mpi\"\n"
                    "command = [\"gsched-train\", \"train\", \"c.toml\"]\n");
    cr_assert_eq(spec->launcher, GS_LAUNCHER_MPI);
    cr_assert_str_eq(gs_launcher_name(spec->launcher), "mpi");
    cr_assert(gs_jobspec_runs_leader(spec), "mpirun leads the job");
    cr_assert_eq(gs_jobspec_ntasks(spec), 2, "one rank per node");
    gs_jobspec_free(spec);
    spec = parse_ok("[run]\nlauncher = \"mpi\"\nscript = \"./a.out\"\n");
    cr_assert_eq(spec->launcher, GS_LAUNCHER_MPI);
    gs_jobspec_free(spec);
    parse_fails("[run]\nlauncher = \"mpich\"\ncommand = [\"true\"]\n",
                "job.toml:2:12: run.launcher must be \"none\"");
    parse_fails("[run]\nlauncher = 1\ncommand = [\"true\"]\n", "job.toml:2:12: run.launcher");
    parse_fails("[run]\nlaunch = \"mpi\"\ncommand = [\"true\"]\n", "did you mean 'run.launcher'");
}

/* One torchrun agent per node: no leader, the node's ranks are torchrun's. */
Test(jobspec, torchrun_launcher)
{
    struct gs_jobspec *spec =
        parse_ok("[resources]\nnodes = 2\n[run]\nlauncher = \"torchrun\"\ntasks_per_node = 4\n"
                 "command = [\"train.py\", \"--epochs\", \"3\"]\n");

    cr_assert_eq(spec->launcher, GS_LAUNCHER_TORCHRUN);
    cr_assert_str_eq(gs_launcher_name(spec->launcher), "torchrun");
    cr_assert_not(gs_jobspec_runs_leader(spec), "every node runs its own agent");
    cr_assert_eq(gs_jobspec_ntasks(spec), 8, "the ranks the agents start");
    gs_jobspec_free(spec);
    parse_fails("[run]\nlauncher = \"torchrun\"\nscript = \"python3 train.py\"\n",
                "run.launcher = \"torchrun\" runs run.command");
    parse_fails("[run]\nlauncher = \"torch\"\ncommand = [\"t.py\"]\n",
                "or \"torchrun\" (one torchrun per node starts them)");
}

/* sbatch's placeholders: %A/%a of arrays, %J of steps, %N the node's name, %n its index. */
Test(jobspec, slurm_output_patterns_as_sbatch_writes_them)
{
    struct gs_pattern_vars v = {.job_id = 125,
                                .rank = 0,
                                .node = "node3",
                                .job_name = "sweep",
                                .user = "ada",
                                .slurm = true,
                                .array_job_id = 120,
                                .array_task_id = 5,
                                .node_rank = 1};

    cr_assert_eq(gs_jobspec_expand_pattern("logs/%x_%A_%a.%j-%N-%n-%t.%u.%%", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "logs/sweep_120_5.125-node3-1-0.ada.%");
    gs_buf_reset(&errors);
    cr_assert_eq(gs_jobspec_expand_pattern("%4a-%3j", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "0005-125", "widths zero-pad as sbatch does");
    gs_buf_reset(&errors);

    /* Outside an array %A is the job id and %a Slurm's NO_VAL. */
    v.array_job_id = 0;
    cr_assert_eq(gs_jobspec_expand_pattern("%A_%a", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "125_4294967294");
    gs_buf_reset(&errors);

    /* %J is JOBID.STEP for srun steps (TaskRef.step s is Slurm's step s - 1). */
    cr_assert_eq(gs_jobspec_expand_pattern("%J", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "125");
    gs_buf_reset(&errors);
    cr_assert_eq(gs_jobspec_expand_pattern("%s", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "batch", "%%s of the batch shell, as Slurm names its step");
    gs_buf_reset(&errors);
    v.step = 3;
    cr_assert_eq(gs_jobspec_expand_pattern("%J", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "125.2");
    gs_buf_reset(&errors);
    cr_assert_eq(gs_jobspec_expand_pattern("%2s", &v, &errors), 0);
    cr_assert_str_eq(errors.data, "02");
    gs_buf_reset(&errors);
    cr_assert_null(gs_jobspec_slurm_bad_placeholder("o-%s-%4t"));

    cr_assert_eq(gs_jobspec_expand_pattern("%q", &v, &errors), -EINVAL);
    cr_assert_eq(gs_jobspec_expand_pattern("%4", &v, &errors), -EINVAL, "a width without a letter");
    /* gsched's own patterns take no widths and no %A. */
    v.slurm = false;
    gs_buf_reset(&errors);
    cr_assert_eq(gs_jobspec_expand_pattern("%A", &v, &errors), -EINVAL);
}

Test(jobspec, data_section)
{
    struct gs_jobspec *spec = parse_ok("[run]\ncommand = [\"true\"]\n");

    cr_assert_null(spec->data.manifest, "no dataset by default");
    cr_assert_eq(spec->data.tolerance, GS_DATA_TOLERANCE_DEFAULT);
    cr_assert_str_eq(spec->data.id, "", "resolved only by the CLI");
    gs_jobspec_free(spec);
    spec = parse_ok("[run]\ncommand = [\"true\"]\n[data]\nmanifest = \"/data/owt\"\n"
                    "stage = \"stream\"\ntolerance = 0.1\nseed = 7\n");
    cr_assert_str_eq(spec->data.manifest, "/data/owt");
    cr_assert_eq(spec->data.stage, GS_DATA_STAGE_STREAM);
    cr_assert_str_eq(gs_data_stage_name(spec->data.stage), "stream");
    cr_assert_float_eq(spec->data.tolerance, 0.1, 1e-12);
    cr_assert_eq(spec->data.seed, 7);
    cr_assert_not(spec->data.locality_wait_set, "the scheduler's wait unless it says");
    gs_jobspec_free(spec);
    spec = parse_ok("[run]\ncommand = [\"true\"]\n[data]\nmanifest = \"d\"\n"
                    "locality_wait = \"10m\"\n");
    cr_assert(spec->data.locality_wait_set);
    cr_assert_eq(spec->data.locality_wait_s, 600);
    gs_jobspec_free(spec);
    spec =
        parse_ok("[run]\ncommand = [\"true\"]\n[data]\nmanifest = \"d\"\nlocality_wait = \"0s\"\n");
    cr_assert(spec->data.locality_wait_set && spec->data.locality_wait_s == 0, "0s: never wait");
    gs_jobspec_free(spec);
    parse_fails("[run]\ncommand = [\"true\"]\n[data]\nmanifest = \"d\"\nlocality_wait = \"2d\"\n",
                "job.toml:5:17: data.locality_wait must be at most a day (86400 s)");
    parse_fails("[run]\ncommand = [\"true\"]\n[data]\nmanifest = \"\"\n",
                "job.toml:4:12: data.manifest must name a dataset directory");
    parse_fails("[run]\ncommand = [\"true\"]\n[data]\nmanifest = \"d\"\nstage = \"early\"\n",
                "job.toml:5:9: data.stage must be \"before\" or \"stream\", not \"early\"");
    parse_fails("[run]\ncommand = [\"true\"]\n[data]\nmanifest = \"d\"\ntolerance = 2\n",
                "job.toml:5:13: data.tolerance");
    parse_fails("[run]\ncommand = [\"true\"]\n[data]\nmanfiest = \"d\"\n",
                "did you mean 'data.manifest'");
}

Test(jobspec, data_ids)
{
    cr_assert(gs_data_id_valid("0123456789abcdef0123456789abcdef"));
    cr_assert_not(gs_data_id_valid("0123456789ABCDEF0123456789abcdef"), "lowercase only");
    cr_assert_not(gs_data_id_valid("0123456789abcdef0123456789abcde"), "31 digits");
    cr_assert_not(gs_data_id_valid("0123456789abcdef0123456789abcdef0"), "33 digits");
    cr_assert_not(gs_data_id_valid(""));
}

Test(jobspec, licenses_are_read_from_a_table_and_checked_at_their_place)
{
    struct gs_jobspec *s = parse_ok("[resources]\nlicenses = { matlab = 2, fluent = 1 }\n"
                                    "[run]\ncommand = [\"true\"]\n");

    cr_assert_eq(s->nlicenses, 2);
    cr_assert_str_eq(s->licenses[0].name, "matlab");
    cr_assert_eq(s->licenses[0].count, 2);
    cr_assert_str_eq(s->licenses[1].name, "fluent");
    cr_assert_eq(s->licenses[1].count, 1);
    gs_jobspec_free(s);
    parse_fails("[resources]\nlicenses = { matlab = 0 }\n[run]\ncommand = [\"true\"]\n",
                "job.toml:2:23: resources.licenses.matlab must be a positive integer");
    gs_buf_reset(&errors);
    parse_fails("[resources]\nlicenses = { \"two words\" = 1 }\n[run]\ncommand = [\"true\"]\n",
                "job.toml:2:14: resources.licenses: 'two words' must be one word");
    gs_buf_reset(&errors);
    parse_fails("[resources]\nlicenses = \"matlab:2\"\n[run]\ncommand = [\"true\"]\n",
                "job.toml:2:12: resources.licenses must be a table of license names and counts");
}

static void list_refused(const char *text, const char *want)
{
    struct gs_job_license *l = (struct gs_job_license *)0x1;
    size_t n = 7;
    char why[200];

    cr_assert_eq(gs_license_list_parse(text, &l, &n, why, sizeof(why)), -EINVAL, "%s", text);
    cr_assert_eq(l, (struct gs_job_license *)0x1, "%s: written on failure", text);
    cr_assert_eq(n, 7);
    cr_assert_not_null(strstr(why, want), "%s: want '%s' in '%s'", text, want, why);
}

Test(jobspec, a_slurm_license_list_is_parsed_and_its_mistakes_named)
{
    struct gs_job_license *l = NULL;
    struct gs_buf text = GS_BUF_INIT;
    size_t n = 0;
    char why[200];

    cr_assert_eq(gs_license_list_parse("matlab:2,fluent", &l, &n, why, sizeof(why)), 0);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(l[0].name, "matlab");
    cr_assert_eq(l[0].count, 2);
    cr_assert_eq(l[1].count, 1, "a count left out is 1");
    gs_license_list_format(l, n, &text);
    cr_assert_str_eq(text.data, "matlab:2,fluent:1");
    gs_buf_release(&text);
    gs_license_list_free(l, n);
    list_refused("matlab|fluent", "'|' (any one of several licenses) is not supported");
    list_refused("matlab@db", "'@' (a remote license server) is not supported");
    list_refused("matlab:0", "the count must be 1 to 1000000");
    list_refused("matlab:x", "the count after ':' must be a number");
    list_refused("matlab:", "the count after ':' must be a number");
    list_refused("matlab,,fluent", "an empty entry between commas");
    list_refused("matlab,", "an empty entry after the last comma");
    list_refused("matlab,matlab:2", "license 'matlab' is named twice");
    list_refused(":2", "license name '' must be one word");
    list_refused("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", "at most 16 licenses");
}

/* The cores a node gives a job: per GPU, per task, one task's with overcommit, at least
 * min_cpus_per_node. */
Test(jobspec, cores_per_node)
{
    struct gs_jobspec s = {.nodes = 1, .tasks_per_node = 4, .cpus_per_task = 2};

    cr_assert_eq(gs_jobspec_cores_per_node(&s), 8);
    s.overcommit = true;
    cr_assert_eq(gs_jobspec_cores_per_node(&s), 2, "one task's");
    s.min_cpus_per_node = 6;
    cr_assert_eq(gs_jobspec_cores_per_node(&s), 6, "--mincpus when more");
    s = (struct gs_jobspec){.nodes = 1, .gpus_per_node = 4, .cpus_per_gpu = 3, .tasks_per_node = 9};
    cr_assert_eq(gs_jobspec_cores_per_node(&s), 12);
    s = (struct gs_jobspec){.nodes = 1, .tasks_per_node = 3};
    cr_assert_eq(gs_jobspec_cores_per_node(&s), 3, "one CPU a task when none is said");
}
