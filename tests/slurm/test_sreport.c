/*
 * test_sreport.c: `sreport cluster utilization` without a daemon (slurm/sreport_fmt.h):
 * a ReportReply built in memory laid out exactly as Slurm's sreport prints it in each
 * time format and layout (table, -n, -p, -P, two TRES, --json, gsched's history line),
 * and the command line read or refused with the refused word named. The clock is UTC so
 * that the dates and midnights are the same everywhere.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slurm/sreport_fmt.h"

#define DEC04 1796342400000ULL /* 2026-12-04T00:00:00Z */
#define DEC05 1796428800000ULL /* 2026-12-05T00:00:00Z */
#define MIN_MS 60000ULL

#define DASHES "--------------------------------------------------------------------------------\n"

static void utc(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
}

TestSuite(sreport, .init = utc);

/* A reply for 2026-12-04 with cpu (and gres/gpu) usage, owned by the caller's stack. */
struct reply {
    Gs__ReportReply r;
    Gs__TresUsage tres[2];
    Gs__TresUsage *ptrs[2];
};

static void usage_set(Gs__TresUsage *t, const char *name, uint64_t allocated, uint64_t down,
                      uint64_t idle, uint64_t reported)
{
    gs__tres_usage__init(t);
    t->name = (char *)name;
    t->allocated = allocated;
    t->down = down;
    t->idle = idle;
    t->reported = reported;
}

/* cpu: 1234 core-minutes allocated, 56789 idle, 58023 reported; gres/gpu: 600, 60, 780, 1440. */
static void reply_init(struct reply *rep)
{
    gs__report_reply__init(&rep->r);
    rep->r.start_ms = DEC04;
    rep->r.end_ms = DEC05;
    rep->r.known_since_ms = DEC04 - 3600000;
    rep->r.cluster = (char *)"gsched";
    usage_set(&rep->tres[0], "cpu", 1234 * MIN_MS, 0, 56789 * MIN_MS, 58023 * MIN_MS);
    usage_set(&rep->tres[1], "gres/gpu", 600 * MIN_MS, 60 * MIN_MS, 780 * MIN_MS, 1440 * MIN_MS);
    rep->ptrs[0] = &rep->tres[0];
    rep->ptrs[1] = &rep->tres[1];
    rep->r.tres = rep->ptrs;
    rep->r.n_tres = 2;
}

static struct slurm_sreport_args args_default(void)
{
    struct slurm_sreport_args a = {.ntres = 1, .tres = {"cpu"}};

    a.start_ms = DEC04;
    a.end_ms = DEC05;
    return a;
}

/* Formats and compares the whole output. */
static void expect(const struct reply *rep, const struct slurm_sreport_args *a, const char *want)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(slurm_sreport_format(&rep->r, a, &out), 0);
    cr_assert_not_null(out.data);
    cr_assert_str_eq(out.data, want);
    gs_buf_release(&out);
}

Test(sreport, default_minutes_as_slurm)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Minutes\n" DASHES
                  "  Cluster Allocate     Down     Idle Reported \n"
                  "--------- -------- -------- -------- -------- \n"
                  "   gsched     1234        0    56789    58023 \n");
}

Test(sreport, hours_round_to_nearest_as_printf)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.time_format = SLURM_SREPORT_HOURS;
    /* 1.4999997 h, 1.5000003 h, an exact half (to even, as Slurm's "%.0f"), 3.5 h. */
    usage_set(&rep.tres[0], "cpu", 5399999, 5400001, 1800000, 12600000);
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Hours\n" DASHES
                  "  Cluster Allocate     Down     Idle Reported \n"
                  "--------- -------- -------- -------- -------- \n"
                  "   gsched        1        2        0        4 \n");
}

Test(sreport, seconds_round_and_wide_figures_widen_their_column)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.time_format = SLURM_SREPORT_SECONDS;
    a.noheader = true;
    usage_set(&rep.tres[0], "cpu", 1499, 1500, 2500, 5499);
    expect(&rep, &a, "   gsched        1        2        2        5 \n");

    /* 123456789 s is 9 digits: Allocated is 9 wide, its name whole; 10 digits for Reported. */
    a.noheader = false;
    usage_set(&rep.tres[0], "cpu", 123456789012ULL, 0, 1000000000000ULL, 1123456789012ULL);
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Seconds\n" DASHES
                  "  Cluster Allocated     Down       Idle   Reported \n"
                  "--------- --------- -------- ---------- ---------- \n"
                  "   gsched 123456789        0 1000000000 1123456789 \n");
}

Test(sreport, percent_of_reported)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.time_format = SLURM_SREPORT_PERCENT;
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in Percentage of Total\n" DASHES
                  "  Cluster Allocate     Down     Idle Reported \n"
                  "--------- -------- -------- -------- -------- \n"
                  "   gsched    2.13%    0.00%   97.87%  100.00% \n");

    /* Nothing reported: 0.00% throughout, no division by zero. */
    a.noheader = true;
    usage_set(&rep.tres[0], "cpu", 0, 0, 0, 0);
    expect(&rep, &a, "   gsched    0.00%    0.00%    0.00%    0.00% \n");
}

Test(sreport, minper_shows_both)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.time_format = SLURM_SREPORT_MIN_PER;
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Minutes/Percentage of Total\n" DASHES
                  "  Cluster         Allocated              Down              Idle "
                  "         Reported \n"
                  "--------- ----------------- ----------------- ----------------- "
                  "----------------- \n"
                  "   gsched       1234(2.13%)          0(0.00%)     56789(97.87%) "
                  "   58023(100.00%) \n");
}

Test(sreport, parsable2_and_parsable)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.parsable = SLURM_SREPORT_PARSABLE2;
    /* Slurm keeps the title block with -P (only -n drops it); gsched's history line is not
     * in it, so the line count is Slurm's. */
    rep.r.known_since_ms = DEC04 + 6 * 3600000ULL;
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Minutes\n" DASHES "Cluster|Allocated|Down|Idle|Reported\n"
                  "gsched|1234|0|56789|58023\n");
    a.noheader = true;
    expect(&rep, &a, "gsched|1234|0|56789|58023\n");
    a.parsable = SLURM_SREPORT_PARSABLE;
    expect(&rep, &a, "gsched|1234|0|56789|58023|\n");
    a.noheader = false;
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Minutes\n" DASHES "Cluster|Allocated|Down|Idle|Reported|\n"
                  "gsched|1234|0|56789|58023|\n");
}

Test(sreport, noheader_is_the_lines_alone)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.noheader = true;
    rep.r.known_since_ms = DEC04 + 6 * 3600000ULL;
    expect(&rep, &a, "   gsched     1234        0    56789    58023 \n");
}

Test(sreport, two_tres_get_a_tres_name_column)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.ntres = 2;
    a.tres[1] = "gres/gpu";
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in TRES Minutes\n" DASHES
                  "  Cluster      TRES Name Allocate     Down     Idle Reported \n"
                  "--------- -------------- -------- -------- -------- -------- \n"
                  "   gsched            cpu     1234        0    56789    58023 \n"
                  "   gsched       gres/gpu      600       60      780     1440 \n");

    /* In the order given; a TRES alone but not cpu keeps the column. */
    a.noheader = true;
    a.tres[0] = "gres/gpu";
    a.tres[1] = "cpu";
    expect(&rep, &a,
           "   gsched       gres/gpu      600       60      780     1440 \n"
           "   gsched            cpu     1234        0    56789    58023 \n");
    a.ntres = 1;
    a.parsable = SLURM_SREPORT_PARSABLE2;
    a.time_format = SLURM_SREPORT_PERCENT;
    expect(&rep, &a, "gsched|gres/gpu|41.67%|4.17%|54.17%|100.00%\n");
}

Test(sreport, history_line_when_history_starts_inside_the_window)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    rep.r.known_since_ms = DEC04 + 6 * 3600000ULL;
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Minutes\n"
                  "History recorded since 2026-12-04T06:00:00: earlier time is not counted\n" DASHES
                  "  Cluster Allocate     Down     Idle Reported \n"
                  "--------- -------- -------- -------- -------- \n"
                  "   gsched     1234        0    56789    58023 \n");
}

Test(sreport, end_cut_to_now_is_shown_less_a_second)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;
    struct gs_buf out = GS_BUF_INIT;

    reply_init(&rep);
    rep.r.end_ms = DEC04 + 12 * 3600000ULL + 500;
    cr_assert_eq(slurm_sreport_format(&rep.r, &a, &out), 0);
    cr_assert_not_null(
        strstr(out.data, "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T11:59:59\n"));
    gs_buf_release(&out);
}

Test(sreport, json_is_the_reply)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.json = true;
    expect(&rep, &a,
           "{\"start_ms\":1796342400000,\"end_ms\":1796428800000,"
           "\"known_since_ms\":1796338800000,\"cluster\":\"gsched\",\"tres\":["
           "{\"name\":\"cpu\",\"allocated_ms\":74040000,\"down_ms\":0,"
           "\"idle_ms\":3407340000,\"reported_ms\":3481380000},"
           "{\"name\":\"gres/gpu\",\"allocated_ms\":36000000,\"down_ms\":3600000,"
           "\"idle_ms\":46800000,\"reported_ms\":86400000}]}\n");
    /* -T picks. */
    a.tres_set = true;
    a.tres[0] = "gres/gpu";
    expect(&rep, &a,
           "{\"start_ms\":1796342400000,\"end_ms\":1796428800000,"
           "\"known_since_ms\":1796338800000,\"cluster\":\"gsched\",\"tres\":["
           "{\"name\":\"gres/gpu\",\"allocated_ms\":36000000,\"down_ms\":3600000,"
           "\"idle_ms\":46800000,\"reported_ms\":86400000}]}\n");
}

/* --- the command line ---------------------------------------------------------------------- */

#define NOW 1796478300000ULL /* 2026-12-05T13:45:00Z */
#define NARGS(v) ((int)(sizeof(v) / sizeof((v)[0])))

/* Parses argv; returns its code, the error (if any) in *err. */
static int parse(int argc, char **argv, const char *env_tres, struct slurm_sreport_args *a,
                 struct gs_buf *err)
{
    gs_buf_reset(err);
    return slurm_sreport_parse(argc, argv, env_tres, NOW, a, err);
}

static void expect_refusal(int argc, char **argv, const char *named)
{
    struct slurm_sreport_args a;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(parse(argc, argv, NULL, &a, &err), -EINVAL);
    cr_assert_not_null(err.data);
    cr_assert_not_null(strstr(err.data, named), "'%s' does not name '%s'", err.data, named);
    cr_assert_null(strchr(err.data, '\n'));
    gs_buf_release(&err);
}

Test(sreport, parses_the_default_window)
{
    char *argv[] = {"sreport", "cluster", "utilization"};
    struct slurm_sreport_args a;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(parse(NARGS(argv), argv, NULL, &a, &err), 0);
    cr_assert_eq(a.start_ms, DEC04, "midnight yesterday");
    cr_assert_eq(a.end_ms, DEC05, "midnight today");
    cr_assert_eq(a.time_format, SLURM_SREPORT_MINUTES);
    cr_assert_eq(a.parsable, SLURM_SREPORT_TABLE);
    cr_assert_eq(a.ntres, 1);
    cr_assert_str_eq(a.tres[0], "cpu");
    cr_assert_not(a.tres_set);
    cr_assert_not(a.noheader || a.json || a.help);
    cr_assert_null(a.socket_opt);
    gs_buf_release(&err);
}

Test(sreport, parses_slurms_spellings_and_options_after_the_words)
{
    char *argv[] = {
        "sreport", "Cluster", "Utilization", "Start=2026-12-01",        "END=2026-12-02T12:00",
        "-t",      "hourper", "-nP",         "--tres=GPU,cpu,gres/gpu", "--socket",
        "/s.sock"};
    char *argv2[] = {"sreport", "--json", "cl", "ut", "s=2026-12-04T12:00"};
    struct slurm_sreport_args a;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(parse(NARGS(argv), argv, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.start_ms, 1796083200000ULL);
    cr_assert_eq(a.end_ms, 1796212800000ULL);
    cr_assert_eq(a.time_format, SLURM_SREPORT_HOUR_PER);
    cr_assert_eq(a.parsable, SLURM_SREPORT_PARSABLE2);
    cr_assert(a.noheader);
    cr_assert(a.tres_set);
    cr_assert_eq(a.ntres, 2, "each TRES once");
    cr_assert_str_eq(a.tres[0], "gres/gpu");
    cr_assert_str_eq(a.tres[1], "cpu");
    cr_assert_str_eq(a.socket_opt, "/s.sock");

    /* Abbreviations as Slurm takes them; end defaults to midnight today. */
    cr_assert_eq(parse(NARGS(argv2), argv2, NULL, &a, &err), 0, "%s", err.data);
    cr_assert(a.json);
    cr_assert_eq(a.start_ms, 1796385600000ULL);
    cr_assert_eq(a.end_ms, DEC05);
    gs_buf_release(&err);
}

Test(sreport, reads_sreport_tres_unless_dash_t)
{
    char *argv[] = {"sreport", "cluster", "utilization"};
    char *argv_t[] = {"sreport", "-T", "cpu", "cluster", "utilization"};
    struct slurm_sreport_args a;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(parse(NARGS(argv), argv, "gres/gpu", &a, &err), 0);
    cr_assert_eq(a.ntres, 1);
    cr_assert_str_eq(a.tres[0], "gres/gpu");
    cr_assert_eq(parse(NARGS(argv_t), argv_t, "bogus", &a, &err), 0, "-T wins: %s", err.data);
    cr_assert_str_eq(a.tres[0], "cpu");
    cr_assert_eq(parse(NARGS(argv), argv, "mem", &a, &err), -EINVAL);
    cr_assert_not_null(strstr(err.data, "SREPORT_TRES"));
    gs_buf_release(&err);
}

Test(sreport, help_asks_nothing)
{
    char *argv[] = {"sreport", "--help"};
    struct slurm_sreport_args a;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(parse(NARGS(argv), argv, NULL, &a, &err), 0);
    cr_assert(a.help);
    gs_buf_release(&err);
}

Test(sreport, refuses_other_reports)
{
    char *user[] = {"sreport", "user", "topusage"};
    char *job[] = {"sreport", "job", "sizesbyaccount"};
    char *acct[] = {"sreport", "cluster", "AccountUtilizationByUser"};
    char *none[] = {"sreport"};
    char *cluster_only[] = {"sreport", "-t", "hours", "cluster"};

    expect_refusal(NARGS(user), user, "'user topusage' is not offered");
    expect_refusal(NARGS(user), user, "only 'cluster utilization'");
    expect_refusal(NARGS(job), job, "'job sizesbyaccount'");
    expect_refusal(NARGS(acct), acct, "'cluster AccountUtilizationByUser'");
    expect_refusal(NARGS(none), none, "only 'cluster utilization'");
    expect_refusal(NARGS(cluster_only), cluster_only, "'cluster'");
}

Test(sreport, refuses_an_unknown_time_format)
{
    char *argv[] = {"sreport", "-t", "fortnights", "cluster", "utilization"};
    char *missing[] = {"sreport", "cluster", "utilization", "-t"};

    expect_refusal(NARGS(argv), argv, "'fortnights'");
    expect_refusal(NARGS(missing), missing, "'-t' requires an argument");
}

Test(sreport, refuses_an_unknown_tres)
{
    char *argv[] = {"sreport", "-T", "cpu,mem", "cluster", "utilization"};
    char *empty[] = {"sreport", "--tres=cpu,", "cluster", "utilization"};

    expect_refusal(NARGS(argv), argv, "'mem'");
    expect_refusal(NARGS(empty), empty, "''");
}

Test(sreport, refuses_a_bad_time)
{
    char *start[] = {"sreport", "cluster", "utilization", "start=2026-13-01"};
    char *end[] = {"sreport", "cluster", "utilization", "end=yesterday"};
    char *empty[] = {"sreport", "cluster", "utilization", "start=2026-12-05", "end=2026-12-05"};

    expect_refusal(NARGS(start), start, "start= time '2026-13-01'");
    expect_refusal(NARGS(end), end, "end= time 'yesterday'");
    expect_refusal(NARGS(empty), empty, "the window is empty");
}

Test(sreport, refuses_unknown_options_and_conditions)
{
    char *long_opt[] = {"sreport", "--bogus", "cluster", "utilization"};
    char *short_opt[] = {"sreport", "-x", "cluster", "utilization"};
    char *cond[] = {"sreport", "cluster", "utilization", "clusters=a"};
    char *word[] = {"sreport", "cluster", "utilization", "tree"};

    expect_refusal(NARGS(long_opt), long_opt, "'--bogus'");
    expect_refusal(NARGS(long_opt), long_opt, "only 'cluster utilization'");
    expect_refusal(NARGS(short_opt), short_opt, "'x'");
    expect_refusal(NARGS(cond), cond, "'clusters=a'");
    expect_refusal(NARGS(word), word, "'tree'");
}
