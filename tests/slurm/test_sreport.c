/*
 * test_sreport.c: sreport without a daemon (slurm/sreport_fmt.h): a ReportReply built in
 * memory laid out exactly as Slurm's sreport prints each report (cluster Utilization in
 * each time format and layout: table, -n, -p, -P, two TRES, --json, gsched's history line;
 * cluster AccountUtilizationByUser, cluster UserUtilizationByAccount and user TopUsage with
 * fixed Proper Names: table, -P, -p, percentages, two TRES, no usage, TopCount, jobs with no
 * account shown as root), and the command line read or refused with the refused word
 * named. The clock is UTC so that the dates and midnights are the same everywhere.
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
    Gs__UserUsage users[6];
    Gs__UserUsage *uptrs[6];
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

static void user_set(struct reply *rep, size_t i, const char *account, const char *user,
                     uint64_t cpu_min, uint64_t gpu_min)
{
    gs__user_usage__init(&rep->users[i]);
    rep->users[i].account = (char *)account;
    rep->users[i].user = (char *)user;
    rep->users[i].cpu = cpu_min * MIN_MS;
    rep->users[i].gpu = gpu_min * MIN_MS;
    rep->uptrs[i] = &rep->users[i];
    rep->r.users = rep->uptrs;
    if (rep->r.n_users < i + 1)
        rep->r.n_users = i + 1;
}

/*
 * The per-user figures (core- and GPU-minutes), in gschedd's order: carol's jobs named no
 * account, bob's ran under two.
 */
static void users_init(struct reply *rep)
{
    user_set(rep, 0, "", "carol", 30, 0);
    user_set(rep, 1, "chem", "bob", 200, 60);
    user_set(rep, 2, "physics", "alice", 300, 120);
    user_set(rep, 3, "physics", "bob", 100, 0);
}

/* Fixed Proper Names: bob's too long for the column, carol unknown; counts the lookups. */
static void names(void *ctx, const char *login, char *buf, size_t size)
{
    int *calls = ctx;

    if (calls != NULL)
        (*calls)++;
    if (strcmp(login, "alice") == 0)
        snprintf(buf, size, "Alice Smith");
    else if (strcmp(login, "bob") == 0)
        snprintf(buf, size, "Bob Jones-Fitzgerald");
    else
        buf[0] = '\0';
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

    cr_assert_eq(slurm_sreport_format(&rep->r, a, names, NULL, &out), 0);
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
                  "  Cluster Allocate     Down PLND Dow     Idle Reported \n"
                  "--------- -------- -------- -------- -------- -------- \n"
                  "   gsched     1234        0        0    56789    58023 \n");
}

/* A MAINT reservation's time: its own column, between Down and Idle, as in Slurm. */
Test(sreport, planned_down_has_its_column)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.time_format = SLURM_SREPORT_SECONDS;
    a.noheader = true;
    usage_set(&rep.tres[0], "cpu", 1000, 2000, 3000, 10000);
    rep.tres[0].plnd_down = 4000;
    expect(&rep, &a, "   gsched        1        2        4        3       10 \n");
    a.parsable = SLURM_SREPORT_PARSABLE2;
    a.time_format = SLURM_SREPORT_PERCENT;
    expect(&rep, &a, "gsched|10.00%|20.00%|40.00%|30.00%|100.00%\n");
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
                  "  Cluster Allocate     Down PLND Dow     Idle Reported \n"
                  "--------- -------- -------- -------- -------- -------- \n"
                  "   gsched        1        2        0        0        4 \n");
}

Test(sreport, seconds_round_and_wide_figures_widen_their_column)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.time_format = SLURM_SREPORT_SECONDS;
    a.noheader = true;
    usage_set(&rep.tres[0], "cpu", 1499, 1500, 2500, 5499);
    expect(&rep, &a, "   gsched        1        2        0        2        5 \n");

    /* 123456789 s is 9 digits: Allocated is 9 wide, its name whole; 10 digits for Reported. */
    a.noheader = false;
    usage_set(&rep.tres[0], "cpu", 123456789012ULL, 0, 1000000000000ULL, 1123456789012ULL);
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Seconds\n" DASHES
                  "  Cluster Allocated     Down PLND Dow       Idle   Reported \n"
                  "--------- --------- -------- -------- ---------- ---------- \n"
                  "   gsched 123456789        0        0 1000000000 1123456789 \n");
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
                  "  Cluster Allocate     Down PLND Dow     Idle Reported \n"
                  "--------- -------- -------- -------- -------- -------- \n"
                  "   gsched    2.13%    0.00%    0.00%   97.87%  100.00% \n");

    /* Nothing reported: 0.00% throughout, no division by zero. */
    a.noheader = true;
    usage_set(&rep.tres[0], "cpu", 0, 0, 0, 0);
    expect(&rep, &a, "   gsched    0.00%    0.00%    0.00%    0.00%    0.00% \n");
}

Test(sreport, minper_shows_both)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.time_format = SLURM_SREPORT_MIN_PER;
    expect(&rep, &a,
           DASHES
           "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
           "Usage reported in CPU Minutes/Percentage of Total\n" DASHES
           "  Cluster         Allocated              Down         PLND Down              Idle "
           "         Reported \n"
           "--------- ----------------- ----------------- ----------------- ----------------- "
           "----------------- \n"
           "   gsched       1234(2.13%)          0(0.00%)          0(0.00%)     56789(97.87%) "
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
                  "Usage reported in CPU Minutes\n" DASHES
                  "Cluster|Allocated|Down|PLND Down|Idle|Reported\n"
                  "gsched|1234|0|0|56789|58023\n");
    a.noheader = true;
    expect(&rep, &a, "gsched|1234|0|0|56789|58023\n");
    a.parsable = SLURM_SREPORT_PARSABLE;
    expect(&rep, &a, "gsched|1234|0|0|56789|58023|\n");
    a.noheader = false;
    expect(&rep, &a,
           DASHES "Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59\n"
                  "Usage reported in CPU Minutes\n" DASHES
                  "Cluster|Allocated|Down|PLND Down|Idle|Reported|\n"
                  "gsched|1234|0|0|56789|58023|\n");
}

Test(sreport, noheader_is_the_lines_alone)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;

    reply_init(&rep);
    a.noheader = true;
    rep.r.known_since_ms = DEC04 + 6 * 3600000ULL;
    expect(&rep, &a, "   gsched     1234        0        0    56789    58023 \n");
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
                  "  Cluster      TRES Name Allocate     Down PLND Dow     Idle Reported \n"
                  "--------- -------------- -------- -------- -------- -------- -------- \n"
                  "   gsched            cpu     1234        0        0    56789    58023 \n"
                  "   gsched       gres/gpu      600       60        0      780     1440 \n");

    /* In the order given; a TRES alone but not cpu keeps the column. */
    a.noheader = true;
    a.tres[0] = "gres/gpu";
    a.tres[1] = "cpu";
    expect(&rep, &a,
           "   gsched       gres/gpu      600       60        0      780     1440 \n"
           "   gsched            cpu     1234        0        0    56789    58023 \n");
    a.ntres = 1;
    a.parsable = SLURM_SREPORT_PARSABLE2;
    a.time_format = SLURM_SREPORT_PERCENT;
    expect(&rep, &a, "gsched|gres/gpu|41.67%|4.17%|0.00%|54.17%|100.00%\n");
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
                  "  Cluster Allocate     Down PLND Dow     Idle Reported \n"
                  "--------- -------- -------- -------- -------- -------- \n"
                  "   gsched     1234        0        0    56789    58023 \n");
}

Test(sreport, end_cut_to_now_is_shown_less_a_second)
{
    struct slurm_sreport_args a = args_default();
    struct reply rep;
    struct gs_buf out = GS_BUF_INIT;

    reply_init(&rep);
    rep.r.end_ms = DEC04 + 12 * 3600000ULL + 500;
    cr_assert_eq(slurm_sreport_format(&rep.r, &a, NULL, NULL, &out), 0);
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
    expect(
        &rep, &a,
        "{\"start_ms\":1796342400000,\"end_ms\":1796428800000,"
        "\"known_since_ms\":1796338800000,\"cluster\":\"gsched\",\"tres\":["
        "{\"name\":\"cpu\",\"allocated_ms\":74040000,\"down_ms\":0,\"plnd_down_ms\":0,"
        "\"idle_ms\":3407340000,\"reported_ms\":3481380000},"
        "{\"name\":\"gres/gpu\",\"allocated_ms\":36000000,\"down_ms\":3600000,\"plnd_down_ms\":0,"
        "\"idle_ms\":46800000,\"reported_ms\":86400000}]}\n");
    /* -T picks. */
    a.tres_set = true;
    a.tres[0] = "gres/gpu";
    expect(
        &rep, &a,
        "{\"start_ms\":1796342400000,\"end_ms\":1796428800000,"
        "\"known_since_ms\":1796338800000,\"cluster\":\"gsched\",\"tres\":["
        "{\"name\":\"gres/gpu\",\"allocated_ms\":36000000,\"down_ms\":3600000,\"plnd_down_ms\":0,"
        "\"idle_ms\":46800000,\"reported_ms\":86400000}]}\n");
}

/* --- the user reports ---------------------------------------------------------------------- */

static struct slurm_sreport_args args_report(enum slurm_sreport_report report)
{
    struct slurm_sreport_args a = args_default();

    a.report = report;
    a.top_count = SLURM_SREPORT_TOP_DEFAULT;
    return a;
}

#define WINDOW "2026-12-04T00:00:00 - 2026-12-04T23:59:59 (86400 secs)\n"

Test(sreport, account_by_user_as_slurm)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_ACCOUNT_BY_USER);
    struct reply rep;

    reply_init(&rep);
    users_init(&rep);
    /* root (carol's jobs named no account) first, then the accounts by name; each account's
     * total, then its users by login. */
    expect(&rep, &a,
           DASHES "Cluster/Account/User Utilization " WINDOW
                  "Usage reported in CPU Minutes\n" DASHES
                  "  Cluster         Account     Login     Proper Name     Used \n"
                  "--------- --------------- --------- --------------- -------- \n"
                  "   gsched            root                                 30 \n"
                  "   gsched            root     carol                       30 \n"
                  "   gsched            chem                                200 \n"
                  "   gsched            chem       bob Bob Jones-Fitz+      200 \n"
                  "   gsched         physics                                400 \n"
                  "   gsched         physics     alice     Alice Smith      300 \n"
                  "   gsched         physics       bob Bob Jones-Fitz+      100 \n");
}

Test(sreport, account_by_user_parsable)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_ACCOUNT_BY_USER);
    struct reply rep;

    reply_init(&rep);
    users_init(&rep);
    a.parsable = SLURM_SREPORT_PARSABLE2;
    /* Names whole, the title block kept, as for Utilization; no history line. */
    rep.r.known_since_ms = DEC04 + 6 * 3600000ULL;
    expect(&rep, &a,
           DASHES "Cluster/Account/User Utilization " WINDOW
                  "Usage reported in CPU Minutes\n" DASHES
                  "Cluster|Account|Login|Proper Name|Used\n"
                  "gsched|root|||30\n"
                  "gsched|root|carol||30\n"
                  "gsched|chem|||200\n"
                  "gsched|chem|bob|Bob Jones-Fitzgerald|200\n"
                  "gsched|physics|||400\n"
                  "gsched|physics|alice|Alice Smith|300\n"
                  "gsched|physics|bob|Bob Jones-Fitzgerald|100\n");
    a.parsable = SLURM_SREPORT_PARSABLE;
    a.noheader = true;
    a.time_format = SLURM_SREPORT_HOURS;
    expect(&rep, &a,
           "gsched|root|||0|\n"
           "gsched|root|carol||0|\n"
           "gsched|chem|||3|\n"
           "gsched|chem|bob|Bob Jones-Fitzgerald|3|\n"
           "gsched|physics|||7|\n"
           "gsched|physics|alice|Alice Smith|5|\n"
           "gsched|physics|bob|Bob Jones-Fitzgerald|2|\n");
}

Test(sreport, account_by_user_two_tres_in_percent_of_reported)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_ACCOUNT_BY_USER);
    struct reply rep;
    struct gs_buf out = GS_BUF_INIT;
    int calls = 0;

    reply_init(&rep);
    users_init(&rep);
    a.ntres = 2;
    a.tres[1] = "gres/gpu";
    a.time_format = SLURM_SREPORT_PERCENT;
    /* Of each TRES's Reported: 58023 core-minutes, 1440 GPU-minutes. */
    expect(&rep, &a,
           DASHES "Cluster/Account/User Utilization " WINDOW
                  "Usage reported in Percentage of Total\n" DASHES
                  "  Cluster         Account     Login     Proper Name      TRES Name     Used \n"
                  "--------- --------------- --------- --------------- -------------- -------- \n"
                  "   gsched            root                                      cpu    0.05% \n"
                  "   gsched            root                                 gres/gpu    0.00% \n"
                  "   gsched            root     carol                            cpu    0.05% \n"
                  "   gsched            root     carol                       gres/gpu    0.00% \n"
                  "   gsched            chem                                      cpu    0.34% \n"
                  "   gsched            chem                                 gres/gpu    4.17% \n"
                  "   gsched            chem       bob Bob Jones-Fitz+            cpu    0.34% \n"
                  "   gsched            chem       bob Bob Jones-Fitz+       gres/gpu    4.17% \n"
                  "   gsched         physics                                      cpu    0.69% \n"
                  "   gsched         physics                                 gres/gpu    8.33% \n"
                  "   gsched         physics     alice     Alice Smith            cpu    0.52% \n"
                  "   gsched         physics     alice     Alice Smith       gres/gpu    8.33% \n"
                  "   gsched         physics       bob Bob Jones-Fitz+            cpu    0.17% \n"
                  "   gsched         physics       bob Bob Jones-Fitz+       gres/gpu    0.00% \n");

    /* One lookup per user line, none for the accounts' lines. */
    cr_assert_eq(slurm_sreport_format(&rep.r, &a, names, &calls, &out), 0);
    cr_assert_eq(calls, 4);
    gs_buf_release(&out);

    /* gres/gpu alone: the TRES Name column stays, in TRES units. */
    a.ntres = 1;
    a.tres[0] = "gres/gpu";
    a.time_format = SLURM_SREPORT_MINUTES;
    a.parsable = SLURM_SREPORT_PARSABLE2;
    expect(&rep, &a,
           DASHES "Cluster/Account/User Utilization " WINDOW
                  "Usage reported in TRES Minutes\n" DASHES
                  "Cluster|Account|Login|Proper Name|TRES Name|Used\n"
                  "gsched|root|||gres/gpu|0\n"
                  "gsched|root|carol||gres/gpu|0\n"
                  "gsched|chem|||gres/gpu|60\n"
                  "gsched|chem|bob|Bob Jones-Fitzgerald|gres/gpu|60\n"
                  "gsched|physics|||gres/gpu|120\n"
                  "gsched|physics|alice|Alice Smith|gres/gpu|120\n"
                  "gsched|physics|bob|Bob Jones-Fitzgerald|gres/gpu|0\n");
}

Test(sreport, no_account_and_root_are_one_account)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_ACCOUNT_BY_USER);
    struct reply rep;

    reply_init(&rep);
    /* Out of order, and "root" named as well as none: one root, listed first. */
    user_set(&rep, 0, "aaa", "dave", 5, 0);
    user_set(&rep, 1, "root", "carol", 10, 0);
    user_set(&rep, 2, "aaa", "carol", 1, 0);
    user_set(&rep, 3, "", "carol", 30, 0);
    a.parsable = SLURM_SREPORT_PARSABLE2;
    a.noheader = true;
    expect(&rep, &a,
           "gsched|root|||40\n"
           "gsched|root|carol||40\n"
           "gsched|aaa|||6\n"
           "gsched|aaa|carol||1\n"
           "gsched|aaa|dave||5\n");
    a.report = SLURM_SREPORT_USER_BY_ACCOUNT;
    expect(&rep, &a,
           "gsched|carol||root|40\n"
           "gsched|dave||aaa|5\n"
           "gsched|carol||aaa|1\n");
    a.report = SLURM_SREPORT_TOP_USAGE;
    expect(&rep, &a,
           "gsched|carol||root,aaa|41\n"
           "gsched|dave||aaa|5\n");
}

Test(sreport, user_by_account_by_used)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_USER_BY_ACCOUNT);
    struct reply rep;

    reply_init(&rep);
    users_init(&rep);
    expect(&rep, &a,
           DASHES "Cluster/User/Account Utilization " WINDOW
                  "Usage reported in CPU Minutes\n" DASHES
                  "  Cluster     Login     Proper Name         Account     Used \n"
                  "--------- --------- --------------- --------------- -------- \n"
                  "   gsched     alice     Alice Smith         physics      300 \n"
                  "   gsched       bob Bob Jones-Fitz+            chem      200 \n"
                  "   gsched       bob Bob Jones-Fitz+         physics      100 \n"
                  "   gsched     carol                            root       30 \n");

    /* Ties by login, then account. */
    a.noheader = true;
    a.parsable = SLURM_SREPORT_PARSABLE2;
    user_set(&rep, 0, "", "carol", 200, 0);
    user_set(&rep, 2, "physics", "alice", 200, 0);
    user_set(&rep, 3, "physics", "bob", 200, 0);
    expect(&rep, &a,
           "gsched|alice|Alice Smith|physics|200\n"
           "gsched|bob|Bob Jones-Fitzgerald|chem|200\n"
           "gsched|bob|Bob Jones-Fitzgerald|physics|200\n"
           "gsched|carol||root|200\n");

    /* Two TRES: sorted by the first given, a line per TRES in -T's order. */
    users_init(&rep);
    a.ntres = 2;
    a.tres[0] = "gres/gpu";
    a.tres[1] = "cpu";
    expect(&rep, &a,
           "gsched|alice|Alice Smith|physics|gres/gpu|120\n"
           "gsched|alice|Alice Smith|physics|cpu|300\n"
           "gsched|bob|Bob Jones-Fitzgerald|chem|gres/gpu|60\n"
           "gsched|bob|Bob Jones-Fitzgerald|chem|cpu|200\n"
           "gsched|bob|Bob Jones-Fitzgerald|physics|gres/gpu|0\n"
           "gsched|bob|Bob Jones-Fitzgerald|physics|cpu|100\n"
           "gsched|carol||root|gres/gpu|0\n"
           "gsched|carol||root|cpu|30\n");
}

Test(sreport, user_by_account_minper)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_USER_BY_ACCOUNT);
    struct reply rep;

    reply_init(&rep);
    users_init(&rep);
    a.time_format = SLURM_SREPORT_MIN_PER;
    expect(&rep, &a,
           DASHES "Cluster/User/Account Utilization " WINDOW
                  "Usage reported in CPU Minutes/Percentage of Total\n" DASHES
                  "  Cluster     Login     Proper Name         Account              Used \n"
                  "--------- --------- --------------- --------------- ----------------- \n"
                  "   gsched     alice     Alice Smith         physics        300(0.52%) \n"
                  "   gsched       bob Bob Jones-Fitz+            chem        200(0.34%) \n"
                  "   gsched       bob Bob Jones-Fitz+         physics        100(0.17%) \n"
                  "   gsched     carol                            root         30(0.05%) \n");
}

Test(sreport, top_usage_sums_a_users_accounts)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_TOP_USAGE);
    struct reply rep;

    reply_init(&rep);
    users_init(&rep);
    /* bob: 200 + 100 under chem and physics, level with alice: by login. */
    expect(&rep, &a,
           DASHES "Top 10 Users " WINDOW "Usage reported in CPU Minutes\n" DASHES
                  "  Cluster     Login     Proper Name         Account     Used \n"
                  "--------- --------- --------------- --------------- -------- \n"
                  "   gsched     alice     Alice Smith         physics      300 \n"
                  "   gsched       bob Bob Jones-Fitz+    chem,physics      300 \n"
                  "   gsched     carol                            root       30 \n");
}

Test(sreport, top_usage_topcount)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_TOP_USAGE);
    struct reply rep;

    reply_init(&rep);
    users_init(&rep);
    a.top_count = 2;
    a.parsable = SLURM_SREPORT_PARSABLE2;
    expect(&rep, &a,
           DASHES "Top 2 Users " WINDOW "Usage reported in CPU Minutes\n" DASHES
                  "Cluster|Login|Proper Name|Account|Used\n"
                  "gsched|alice|Alice Smith|physics|300\n"
                  "gsched|bob|Bob Jones-Fitzgerald|chem,physics|300\n");

    /* By GPU time: one line, its TRES named; Used sized by the figures shown. */
    a.top_count = 1;
    a.parsable = SLURM_SREPORT_TABLE;
    a.noheader = true;
    a.tres[0] = "gres/gpu";
    expect(&rep, &a,
           "   gsched     alice     Alice Smith         physics       gres/gpu      120 \n");

    /* Two TRES: the top by the first given, each with its lines in -T's order. */
    a.top_count = 2;
    a.ntres = 2;
    a.tres[1] = "cpu";
    a.parsable = SLURM_SREPORT_PARSABLE;
    expect(&rep, &a,
           "gsched|alice|Alice Smith|physics|gres/gpu|120|\n"
           "gsched|alice|Alice Smith|physics|cpu|300|\n"
           "gsched|bob|Bob Jones-Fitzgerald|chem,physics|gres/gpu|60|\n"
           "gsched|bob|Bob Jones-Fitzgerald|chem,physics|cpu|300|\n");
}

Test(sreport, no_usage_is_the_header_lines_alone)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_ACCOUNT_BY_USER);
    struct reply rep;
    struct gs_buf out = GS_BUF_INIT;

    reply_init(&rep);
    expect(&rep, &a,
           DASHES "Cluster/Account/User Utilization " WINDOW
                  "Usage reported in CPU Minutes\n" DASHES
                  "  Cluster         Account     Login     Proper Name     Used \n"
                  "--------- --------------- --------- --------------- -------- \n");
    a.report = SLURM_SREPORT_USER_BY_ACCOUNT;
    a.parsable = SLURM_SREPORT_PARSABLE2;
    expect(&rep, &a,
           DASHES "Cluster/User/Account Utilization " WINDOW
                  "Usage reported in CPU Minutes\n" DASHES
                  "Cluster|Login|Proper Name|Account|Used\n");
    a.report = SLURM_SREPORT_TOP_USAGE;
    a.parsable = SLURM_SREPORT_TABLE;
    expect(&rep, &a,
           DASHES "Top 10 Users " WINDOW "Usage reported in CPU Minutes\n" DASHES
                  "  Cluster     Login     Proper Name         Account     Used \n"
                  "--------- --------- --------------- --------------- -------- \n");

    /* -n: nothing at all. */
    a.noheader = true;
    cr_assert_eq(slurm_sreport_format(&rep.r, &a, names, NULL, &out), 0);
    cr_assert_eq(out.len, 0);

    /* A TRES gschedd has no record of gets no line, whatever the users' figures. */
    users_init(&rep);
    rep.r.n_tres = 1;
    a.tres[0] = "gres/gpu";
    cr_assert_eq(slurm_sreport_format(&rep.r, &a, names, NULL, &out), 0);
    cr_assert_eq(out.len, 0);
    gs_buf_release(&out);
}

Test(sreport, user_reports_title_counts_the_window_cut_to_now)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_TOP_USAGE);
    struct reply rep;
    struct gs_buf out = GS_BUF_INIT;

    reply_init(&rep);
    rep.r.end_ms = DEC04 + 12 * 3600000ULL + 500;
    cr_assert_eq(slurm_sreport_format(&rep.r, &a, NULL, NULL, &out), 0);
    cr_assert_not_null(strstr(
        out.data, "\nTop 10 Users 2026-12-04T00:00:00 - 2026-12-04T11:59:59 (43200 secs)\n"));
    gs_buf_release(&out);
}

Test(sreport, user_reports_json_is_the_reply_with_its_users)
{
    struct slurm_sreport_args a = args_report(SLURM_SREPORT_TOP_USAGE);
    struct reply rep;

    reply_init(&rep);
    users_init(&rep);
    a.json = true;
    a.tres_set = true;
    /* Every user as gschedd sent them, TopCount or not; the account "" as sent. */
    a.top_count = 1;
    expect(&rep, &a,
           "{\"start_ms\":1796342400000,\"end_ms\":1796428800000,"
           "\"known_since_ms\":1796338800000,\"cluster\":\"gsched\",\"tres\":["
           "{\"name\":\"cpu\",\"allocated_ms\":74040000,\"down_ms\":0,\"plnd_down_ms\":0,"
           "\"idle_ms\":3407340000,\"reported_ms\":3481380000}],\"users\":["
           "{\"account\":\"\",\"user\":\"carol\",\"cpu_ms\":1800000,\"gpu_ms\":0},"
           "{\"account\":\"chem\",\"user\":\"bob\",\"cpu_ms\":12000000,\"gpu_ms\":3600000},"
           "{\"account\":\"physics\",\"user\":\"alice\",\"cpu_ms\":18000000,"
           "\"gpu_ms\":7200000},"
           "{\"account\":\"physics\",\"user\":\"bob\",\"cpu_ms\":6000000,\"gpu_ms\":0}]}\n");
    a.report = SLURM_SREPORT_ACCOUNT_BY_USER;
    rep.r.n_users = 0;
    expect(&rep, &a,
           "{\"start_ms\":1796342400000,\"end_ms\":1796428800000,"
           "\"known_since_ms\":1796338800000,\"cluster\":\"gsched\",\"tres\":["
           "{\"name\":\"cpu\",\"allocated_ms\":74040000,\"down_ms\":0,\"plnd_down_ms\":0,"
           "\"idle_ms\":3407340000,\"reported_ms\":3481380000}],\"users\":[]}\n");
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

Test(sreport, start_today_without_an_end_runs_to_now)
{
    char *argv[] = {"sreport", "cluster", "utilization", "start=today"};
    char *both[] = {"sreport", "cluster", "utilization", "start=today", "end=today"};
    struct slurm_sreport_args a;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(parse(NARGS(argv), argv, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.start_ms, DEC05);
    cr_assert_eq(a.end_ms, NOW, "today so far");
    gs_buf_release(&err);
    expect_refusal(NARGS(both), both, "the window is empty");
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

#define OFFERED_ALL                                                                                \
    "offers 'cluster Utilization', 'cluster AccountUtilizationByUser', "                           \
    "'cluster UserUtilizationByAccount' and 'user TopUsage'"

Test(sreport, refuses_other_reports)
{
    char *user[] = {"sreport", "user", "bogus"};
    char *job[] = {"sreport", "job", "sizesbyaccount"};
    char *wckey[] = {"sreport", "cluster", "UserUtilizationByWckey"};
    char *qos[] = {"sreport", "cluster", "AccountUtilizationByQOS"};
    char *ambiguous[] = {"sreport", "cluster", "UserUtilization"};
    char *user_util[] = {"sreport", "user", "utilization"};
    char *none[] = {"sreport"};
    char *cluster_only[] = {"sreport", "-t", "hours", "cluster"};
    char *user_only[] = {"sreport", "user"};

    expect_refusal(NARGS(user), user, "'user bogus' is not offered");
    expect_refusal(NARGS(user), user, OFFERED_ALL);
    expect_refusal(NARGS(job), job, "'job sizesbyaccount'");
    expect_refusal(NARGS(wckey), wckey, "'cluster UserUtilizationByWckey'");
    expect_refusal(NARGS(qos), qos, "'cluster AccountUtilizationByQOS'");
    expect_refusal(NARGS(ambiguous), ambiguous, "'cluster UserUtilization'");
    expect_refusal(NARGS(user_util), user_util, "'user utilization'");
    expect_refusal(NARGS(none), none, OFFERED_ALL);
    expect_refusal(NARGS(cluster_only), cluster_only, "'cluster'");
    expect_refusal(NARGS(user_only), user_only, "too few arguments for keyword 'user'");
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
    expect_refusal(NARGS(long_opt), long_opt, OFFERED_ALL);
    expect_refusal(NARGS(short_opt), short_opt, "'x'");
    expect_refusal(NARGS(cond), cond, "'clusters=a'");
    expect_refusal(NARGS(word), word, "'tree'");
}

Test(sreport, parses_the_user_reports)
{
    char *abu[] = {"sreport", "cluster", "AccountUtilizationByUser", "start=2026-12-01"};
    char *abu_short[] = {"sreport", "CL", "a"};
    char *uba[] = {"sreport", "cluster", "userutilizationbyaccount"};
    char *uba_18[] = {"sreport", "cluster", "UserUtilizationByA"};
    char *ua[] = {"sreport", "cluster", "UA", "e=2026-12-05"};
    char *top[] = {"sreport", "-P", "user", "TopUsage"};
    char *top_count[] = {"sreport", "u", "top", "TopCount=3", "-T", "gpu"};
    char *top_short[] = {"sreport", "User", "t", "TOPCOUNT=4294967295", "t=7", "s=2026-12-01"};
    char *util[] = {"sreport", "cluster", "ut"};
    struct slurm_sreport_args a;
    struct gs_buf err = GS_BUF_INIT;

    cr_assert_eq(parse(NARGS(abu), abu, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_ACCOUNT_BY_USER);
    cr_assert_eq(a.start_ms, 1796083200000ULL);
    cr_assert_eq(a.end_ms, DEC05);
    cr_assert(slurm_sreport_by_user(&a));
    cr_assert_eq(parse(NARGS(abu_short), abu_short, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_ACCOUNT_BY_USER);
    cr_assert_eq(parse(NARGS(uba), uba, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_USER_BY_ACCOUNT);
    cr_assert(slurm_sreport_by_user(&a));
    cr_assert_eq(parse(NARGS(uba_18), uba_18, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_USER_BY_ACCOUNT);
    cr_assert_eq(parse(NARGS(ua), ua, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_USER_BY_ACCOUNT);
    cr_assert_eq(a.start_ms, DEC04, "midnight before end's day");
    cr_assert_eq(a.end_ms, DEC05);

    cr_assert_eq(parse(NARGS(top), top, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_TOP_USAGE);
    cr_assert_eq(a.top_count, 10, "Slurm's default");
    cr_assert_eq(a.parsable, SLURM_SREPORT_PARSABLE2);
    cr_assert(slurm_sreport_by_user(&a));
    cr_assert_eq(parse(NARGS(top_count), top_count, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_TOP_USAGE);
    cr_assert_eq(a.top_count, 3);
    cr_assert_str_eq(a.tres[0], "gres/gpu");
    cr_assert_eq(parse(NARGS(top_short), top_short, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.top_count, 7, "the last TopCount");
    cr_assert_eq(a.start_ms, 1796083200000ULL);

    cr_assert_eq(parse(NARGS(util), util, NULL, &a, &err), 0, "%s", err.data);
    cr_assert_eq(a.report, SLURM_SREPORT_UTILIZATION);
    cr_assert_not(slurm_sreport_by_user(&a));
    gs_buf_release(&err);
}

Test(sreport, refuses_a_bad_topcount)
{
    char *zero[] = {"sreport", "user", "topusage", "TopCount=0"};
    char *word[] = {"sreport", "user", "topusage", "TopCount=ten"};
    char *empty[] = {"sreport", "user", "topusage", "topcount="};
    char *negative[] = {"sreport", "user", "topusage", "t=-1"};
    char *big[] = {"sreport", "user", "topusage", "TopCount=4294967296"};
    char *trailing[] = {"sreport", "user", "topusage", "TopCount=5x"};

    expect_refusal(NARGS(zero), zero, "invalid TopCount 'TopCount=0'");
    expect_refusal(NARGS(word), word, "'TopCount=ten'");
    expect_refusal(NARGS(empty), empty, "'topcount='");
    expect_refusal(NARGS(negative), negative, "'t=-1'");
    expect_refusal(NARGS(big), big, "'TopCount=4294967296'");
    expect_refusal(NARGS(trailing), trailing, "'TopCount=5x'");
}

Test(sreport, refuses_topcount_and_group_where_not_offered)
{
    char *abu[] = {"sreport", "cluster", "AccountUtilizationByUser", "TopCount=5"};
    char *util[] = {"sreport", "cluster", "utilization", "top=5"};
    char *group[] = {"sreport", "user", "topusage", "Group"};
    char *group_opt[] = {"sreport", "--group", "user", "topusage"};
    char *cond[] = {"sreport", "user", "topusage", "users=alice"};
    char *uba_cond[] = {"sreport", "cluster", "ua", "accounts=physics"};

    expect_refusal(NARGS(abu), abu,
                   "'TopCount=5' is not offered for cluster "
                   "AccountUtilizationByUser: TopCount= is user TopUsage's");
    expect_refusal(NARGS(util), util, "'top=5' is not offered for cluster Utilization");
    expect_refusal(NARGS(group), group, "condition 'Group' (Group) is not offered");
    expect_refusal(NARGS(group_opt), group_opt, "option '--group' is not offered");
    expect_refusal(NARGS(cond), cond,
                   "unknown condition 'users=alice' for user TopUsage: only start=, end= and "
                   "TopCount= are offered");
    expect_refusal(NARGS(uba_cond), uba_cond,
                   "unknown condition 'accounts=physics' for cluster UserUtilizationByAccount");
}
