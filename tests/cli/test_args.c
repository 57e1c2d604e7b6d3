/*
 * test_args.c: reading gsched's command lines: options in any order and both value forms,
 * unknown and incomplete options named, job ids, signals, and paths made absolute.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "cli/args.h"
#include "common/path.h"

static const struct cli_opt opts[] = {
    {"--json", NULL, false, 'j'},
    {"--follow", "-f", false, 'f'},
    {"--socket", NULL, true, 's'},
    {NULL, NULL, false, 0},
};

Test(cli_args, reads_options_between_operands_in_both_value_forms)
{
    char *argv[] = {"cancel",           "7",      "--socket", "/a.sock", "-f", "8",
                    "--socket=/b.sock", "--json", "-"};
    struct cli_args a;

    cli_args_init(&a, 9, argv);
    cr_assert_eq(cli_args_next(&a, opts), CLI_ARGS_OPERAND);
    cr_assert_str_eq(a.value, "7");
    cr_assert_eq(cli_args_next(&a, opts), 's');
    cr_assert_str_eq(a.value, "/a.sock");
    cr_assert_eq(cli_args_next(&a, opts), 'f');
    cr_assert_eq(cli_args_next(&a, opts), CLI_ARGS_OPERAND);
    cr_assert_str_eq(a.value, "8");
    cr_assert_eq(cli_args_next(&a, opts), 's');
    cr_assert_str_eq(a.value, "/b.sock");
    cr_assert_eq(cli_args_next(&a, opts), 'j');
    cr_assert_eq(cli_args_next(&a, opts), CLI_ARGS_OPERAND, "'-' alone is an operand");
    cr_assert_str_eq(a.value, "-");
    cr_assert_eq(cli_args_next(&a, opts), 0);
}

Test(cli_args, double_dash_makes_the_rest_operands)
{
    char *argv[] = {"logs", "--", "--json"};
    struct cli_args a;

    cli_args_init(&a, 3, argv);
    cr_assert_eq(cli_args_next(&a, opts), CLI_ARGS_OPERAND);
    cr_assert_str_eq(a.value, "--json");
    cr_assert_eq(cli_args_next(&a, opts), 0);
}

static void fails_with(int argc, char **argv, const char *bad, const char *why)
{
    struct cli_args a;
    int rc;

    cli_args_init(&a, argc, argv);
    while ((rc = cli_args_next(&a, opts)) > 0)
        ;
    cr_assert_eq(rc, -EINVAL);
    cr_assert_str_eq(a.bad, bad);
    cr_assert_str_eq(a.why, why);
}

Test(cli_args, names_unknown_options_and_missing_values)
{
    char *unknown[] = {"queue", "--jsn"};
    char *missing[] = {"queue", "--json", "--socket"};
    char *extra[] = {"queue", "--json=yes"};
    char *prefix[] = {"queue", "--js"};

    fails_with(2, unknown, "--jsn", "unknown option");
    fails_with(3, missing, "--socket", "option needs a value");
    fails_with(2, extra, "--json=yes", "option takes no value");
    fails_with(2, prefix, "--js", "unknown option");
}

Test(cli_args, job_ids_are_positive_decimal_numbers_only)
{
    uint64_t id = 5;

    cr_assert_eq(cli_parse_job_id("42", &id), 0);
    cr_assert_eq(id, 42);
    cr_assert_eq(cli_parse_job_id("18446744073709551615", &id), 0);
    cr_assert_eq(id, UINT64_MAX);
    id = 5;
    cr_assert_eq(cli_parse_job_id("0", &id), -EINVAL);
    cr_assert_eq(cli_parse_job_id("-1", &id), -EINVAL);
    cr_assert_eq(cli_parse_job_id("+3", &id), -EINVAL);
    cr_assert_eq(cli_parse_job_id(" 3", &id), -EINVAL);
    cr_assert_eq(cli_parse_job_id("3x", &id), -EINVAL);
    cr_assert_eq(cli_parse_job_id("", &id), -EINVAL);
    cr_assert_eq(cli_parse_job_id("18446744073709551616", &id), -EINVAL);
    cr_assert_eq(id, 5, "output written on failure");
}

Test(cli_args, signals_by_name_with_or_without_sig_or_by_number)
{
    uint32_t sig = 0;

    cr_assert_eq(cli_parse_signal("TERM", &sig), 0);
    cr_assert_eq(sig, SIGTERM);
    cr_assert_eq(cli_parse_signal("SIGUSR1", &sig), 0);
    cr_assert_eq(sig, SIGUSR1);
    cr_assert_eq(cli_parse_signal("kill", &sig), 0);
    cr_assert_eq(sig, SIGKILL);
    cr_assert_eq(cli_parse_signal("10", &sig), 0);
    cr_assert_eq(sig, 10);
    sig = 3;
    cr_assert_eq(cli_parse_signal("0", &sig), -EINVAL);
    cr_assert_eq(cli_parse_signal("65", &sig), -EINVAL);
    cr_assert_eq(cli_parse_signal("SIG", &sig), -EINVAL);
    cr_assert_eq(cli_parse_signal("TERMX", &sig), -EINVAL);
    cr_assert_eq(sig, 3);
    cr_assert_str_eq(cli_signal_name(SIGTERM), "TERM");
    cr_assert_null(cli_signal_name(50));
}

static void absolute(const char *cwd, const char *path, const char *want)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(gs_path_absolute(cwd, path, &out), 0, "%s + %s", cwd, path);
    cr_assert_str_eq(out.data, want, "%s + %s", cwd, path);
    gs_buf_release(&out);
}

Test(cli_args, resolves_paths_against_cwd_lexically)
{
    absolute("/home/alice", "job.toml", "/home/alice/job.toml");
    absolute("/home/alice", "./runs/../job.toml", "/home/alice/job.toml");
    absolute("/home/alice/", "../bob//x/", "/home/bob/x");
    absolute("/home/alice", ".", "/home/alice");
    absolute("/home/alice", "/etc/./gsched/", "/etc/gsched");
    absolute("/home/alice", "../../../..", "/");
    absolute("/", ".", "/");
    absolute("relative", "/abs", "/abs");
}

Test(cli_args, refuses_a_relative_cwd_and_leaves_the_buffer_as_it_was)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(gs_buf_append_str(&out, "keep"), 0);
    cr_assert_eq(gs_path_absolute("here", "job.toml", &out), -EINVAL);
    cr_assert_str_eq(out.data, "keep");
    cr_assert_eq(gs_path_absolute("/w", "a", &out), 0);
    cr_assert_str_eq(out.data, "keep/w/a", "appends");
    gs_buf_release(&out);
}
