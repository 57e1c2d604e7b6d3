/*
 * test_scontrol_resv.c: scontrol's reservation words (slurm/scontrol_resv.h) without a
 * daemon: a good create, each of Slurm's create rules (StartTime, Nodes, an end, users or
 * accounts; EndTime and Duration not both), unknown keys named, Duration=UNLIMITED, bad
 * hostlists, updates and their Duration without StartTime, the recurrence flags and the list
 * edits of an update (Users+=, Users=-NAME, Flags-=, ...) with their mixes refused; and the
 * record `scontrol show reservation` prints and the table of `sinfo -T`, in UTC so that the dates
 * are fixed.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slurm/scontrol_resv.h"

#define CREATE GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE
#define UPDATE GS__RESERVATION_ACTION__RESERVATION_ACTION_UPDATE

/* 2026-12-05T10:00:00Z, the "now" every parse is read at. */
#define NOW_MS UINT64_C(1796464800000)

static void utc(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
}

TestSuite(scontrol_resv, .init = utc);

static char why[512];

/* Parses the words given (a compound literal of them) for action; returns parse's result. */
#define PARSE(r, action, ...)                                                                      \
    scontrol_resv_parse((r), (action), (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)),    \
                        (char *[]){__VA_ARGS__}, NOW_MS, why, sizeof(why))

Test(scontrol_resv, reads_a_good_create)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "ReservationName=maint", "starttime=2026-12-05T12:00",
                       "Duration=1:30:00", "NODES=node[1-2]", "Users=alice,bob",
                       "Accounts=physics"),
                 0, "%s", why);
    cr_assert_eq(r.req.action, CREATE);
    cr_assert_eq(r.req.reservation, &r.resv);
    cr_assert_str_eq(r.resv.name, "maint");
    cr_assert_eq(r.resv.start_ms, NOW_MS + 2 * 3600 * 1000);
    cr_assert_eq(r.resv.end_ms, NOW_MS + 3 * 3600 * 1000 + 1800 * 1000);
    cr_assert_str_eq(r.resv.nodes, "node[1-2]");
    cr_assert_eq(r.resv.n_users, 2);
    cr_assert_str_eq(r.resv.users[0], "alice");
    cr_assert_str_eq(r.resv.users[1], "bob");
    cr_assert_eq(r.resv.n_accounts, 1);
    cr_assert_str_eq(r.resv.accounts[0], "physics");
    cr_assert(r.req.set_start && r.req.set_end && r.req.set_nodes && r.req.set_users &&
              r.req.set_accounts);
    cr_assert_not(r.end_from_start);
    scontrol_resv_release(&r);
}

Test(scontrol_resv, create_without_a_name_leaves_it_to_gschedd)
{
    struct scontrol_resv r;

    cr_assert_eq(
        PARSE(&r, CREATE, "StartTime=now+1hour", "EndTime=now+2hours", "Nodes=n3", "Accounts=bio"),
        0, "%s", why);
    cr_assert_str_eq(r.resv.name, "");
    cr_assert_eq(r.resv.start_ms, NOW_MS + 3600 * 1000);
    cr_assert_eq(r.resv.end_ms, NOW_MS + 7200 * 1000);
    cr_assert_eq(r.resv.n_users, 0);
    cr_assert_not(r.req.set_users);
    scontrol_resv_release(&r);
}

Test(scontrol_resv, refuses_a_create_without_nodes)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Users=alice"), -EINVAL);
    cr_assert(strstr(why, "Nodes=") != NULL, "%s", why);
    cr_assert_null(r.resv.users, "left empty");
}

Test(scontrol_resv, refuses_a_create_without_start_end_or_users)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "Duration=60", "Nodes=n1", "Users=alice"), -EINVAL);
    cr_assert(strstr(why, "StartTime=") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Nodes=n1", "Users=alice"), -EINVAL);
    cr_assert(strstr(why, "EndTime= or Duration=") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1"), -EINVAL);
    cr_assert(strstr(why, "Users= or Accounts=") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users="), -EINVAL);
    cr_assert(strstr(why, "Users= is empty") != NULL, "%s", why);
}

Test(scontrol_resv, refuses_end_time_and_duration_together)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "EndTime=now+1hour", "Duration=60", "Nodes=n1",
                       "Users=alice"),
                 -EINVAL);
    cr_assert(strstr(why, "EndTime=now+1hour and Duration=60") != NULL, "%s", why);
}

Test(scontrol_resv, refuses_an_end_before_the_start)
{
    struct scontrol_resv r;

    cr_assert_eq(
        PARSE(&r, CREATE, "StartTime=now+2hours", "EndTime=now+1hour", "Nodes=n1", "Users=alice"),
        -EINVAL);
    cr_assert(strstr(why, "not after StartTime") != NULL, "%s", why);
}

Test(scontrol_resv, names_an_unknown_key)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=alice",
                       "Flags=STATIC_ALLOC"),
                 -EINVAL);
    cr_assert(strstr(why, "Flags=STATIC_ALLOC: flag STATIC_ALLOC is not supported") != NULL, "%s",
              why);
    cr_assert_eq(PARSE(&r, CREATE, "BurstBuffer=1G"), -EINVAL);
    cr_assert(strstr(why, "'BurstBuffer'") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "CoreCnt=4"), -EINVAL);
    cr_assert(strstr(why, "'CoreCnt'") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "maint"), -EINVAL);
    cr_assert(strstr(why, "not KEY=VALUE") != NULL, "%s", why);
}

Test(scontrol_resv, duration_unlimited_means_no_end)
{
    struct scontrol_resv r;

    cr_assert_eq(
        PARSE(&r, CREATE, "StartTime=now", "Duration=UNLIMITED", "Nodes=n1", "Users=alice"), 0,
        "%s", why);
    cr_assert(r.req.set_end);
    cr_assert_eq(r.resv.end_ms, 0);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "duration=infinite", "Nodes=n1", "Users=alice"),
                 0, "%s", why);
    cr_assert_eq(r.resv.end_ms, 0);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=soon", "Nodes=n1", "Users=alice"),
                 -EINVAL);
    cr_assert(strstr(why, "Duration=soon") != NULL, "%s", why);
}

Test(scontrol_resv, refuses_a_bad_hostlist)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n[3-1]", "Users=alice"),
                 -EINVAL);
    cr_assert(strstr(why, "Nodes=n[3-1]") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n[1-", "Users=alice"),
                 -EINVAL);
    cr_assert(strstr(why, "Nodes=n[1-") != NULL, "%s", why);
}

Test(scontrol_resv, refuses_bad_times_and_lists)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=later", "Duration=60", "Nodes=n1", "Users=alice"),
                 -EINVAL);
    cr_assert(strstr(why, "StartTime=later") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=a,,b"),
                 -EINVAL);
    cr_assert(strstr(why, "empty name") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=+bob"),
                 -EINVAL);
    cr_assert(strstr(why, "+NAME") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "ReservationName=my resv", "StartTime=now", "Duration=60",
                       "Nodes=n1", "Users=alice"),
                 -EINVAL);
}

Test(scontrol_resv, update_sets_only_what_is_given)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=maint", "Nodes=n[1-4]", "Accounts="), 0, "%s",
                 why);
    cr_assert_eq(r.req.action, UPDATE);
    cr_assert_str_eq(r.resv.name, "maint");
    cr_assert(r.req.set_nodes && r.req.set_accounts);
    cr_assert_not(r.req.set_start || r.req.set_end || r.req.set_users);
    cr_assert_eq(r.resv.n_accounts, 0, "Accounts= empties the list");
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "Nodes=n1"), -EINVAL);
    cr_assert(strstr(why, "ReservationName=") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=maint"), -EINVAL);
    cr_assert(strstr(why, "nothing to update") != NULL, "%s", why);
}

Test(scontrol_resv, update_duration_without_start_is_left_to_the_caller)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, UPDATE, "Reservation=maint", "Duration=2:00:00"), 0, "%s", why);
    cr_assert(r.req.set_end);
    cr_assert_not(r.req.set_start);
    cr_assert(r.end_from_start);
    cr_assert_eq(r.duration_s, 7200);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=maint", "StartTime=now", "Duration=30"), 0);
    cr_assert_not(r.end_from_start);
    cr_assert_eq(r.resv.end_ms, NOW_MS + 1800 * 1000);
    scontrol_resv_release(&r);
}

static Gs__Reservation maint(void)
{
    static char *users[] = {"alice"};
    Gs__Reservation r = GS__RESERVATION__INIT;

    r.name = "maint";
    r.start_ms = NOW_MS;
    r.end_ms = NOW_MS + 3600 * 1000;
    r.nodes = "node[1-2]";
    r.node_count = 2;
    r.users = users;
    r.n_users = 1;
    r.active = true;
    return r;
}

Test(scontrol_resv, prints_slurms_record)
{
    static char *accounts[] = {"physics", "bio"};
    Gs__Reservation r = maint(), open = GS__RESERVATION__INIT;
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(scontrol_resv_record(&out, &r, false), 0);
    cr_assert_str_eq(out.data, "ReservationName=maint StartTime=2026-12-05T10:00:00 "
                               "EndTime=2026-12-05T11:00:00 Duration=01:00:00\n"
                               "   Nodes=node[1-2] NodeCnt=2 Users=alice Accounts=(null) "
                               "State=ACTIVE\n\n");
    r.flags = GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKDAY;
    gs_buf_reset(&out);
    cr_assert_eq(scontrol_resv_record(&out, &r, true), 0);
    cr_assert(strstr(out.data, " NodeCnt=2 Flags=WEEKDAY Users=alice ") != NULL, "%s", out.data);
    r.flags = 0;
    open.name = "future";
    open.start_ms = NOW_MS + 86400 * 1000;
    open.nodes = "n5";
    open.node_count = 1;
    open.accounts = accounts;
    open.n_accounts = 2;
    gs_buf_reset(&out);
    cr_assert_eq(scontrol_resv_record(&out, &open, true), 0);
    cr_assert_str_eq(out.data, "ReservationName=future StartTime=2026-12-06T10:00:00 "
                               "EndTime=Unknown Duration=UNLIMITED Nodes=n5 NodeCnt=1 "
                               "Users=(null) Accounts=physics,bio State=INACTIVE\n");
    gs_buf_release(&out);
}

Test(scontrol_resv, prints_sinfo_t_table)
{
    Gs__Reservation r = maint(), longer = maint(), *v[] = {&r, &longer};
    struct gs_buf out = GS_BUF_INIT;

    longer.name = "a-much-longer-name";
    longer.end_ms = NOW_MS + 2 * 86400 * 1000;
    longer.active = false;
    cr_assert_eq(scontrol_resv_table(&out, v, 1, true), 0);
    cr_assert_str_eq(out.data, "RESV_NAME     STATE           START_TIME             END_TIME     "
                               "DURATION  NODELIST\n"
                               "maint        ACTIVE  2026-12-05T10:00:00  2026-12-05T11:00:00     "
                               "01:00:00  node[1-2]\n");
    gs_buf_reset(&out);
    cr_assert_eq(scontrol_resv_table(&out, v, 2, false), 0);
    cr_assert_str_eq(out.data, "maint                 ACTIVE  2026-12-05T10:00:00  "
                               "2026-12-05T11:00:00     01:00:00  node[1-2]\n"
                               "a-much-longer-name  INACTIVE  2026-12-05T10:00:00  "
                               "2026-12-07T10:00:00   2-00:00:00  node[1-2]\n");
    gs_buf_release(&out);
}

Test(scontrol_resv, tres_gres_gpu_keeps_gpus_not_whole_nodes)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n[1-2]", "Users=alice",
                       "TRES=gres/gpu=4"),
                 0, "%s", why);
    cr_assert(r.req.set_gpus);
    cr_assert_eq(r.resv.gpus, 4, "in all: gschedd splits them over the nodes");
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "TRES=gres/gpu:0"), 0, "%s", why);
    cr_assert(r.req.set_gpus);
    cr_assert_eq(r.resv.gpus, 0, "back to whole nodes");
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "TRES=cpu=4"), -EINVAL);
    cr_assert(strstr(why, "only gres/gpu=N") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "TRES=gres/gpu=x"), -EINVAL);
    cr_assert(strstr(why, "count of GPUs") != NULL, "%s", why);
}

Test(scontrol_resv, reads_recurrence_flags)
{
    struct scontrol_resv r;

    cr_assert_eq(
        PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=alice", "flags=daily"),
        0, "%s", why);
    cr_assert(r.req.set_flags);
    cr_assert_eq(r.resv.flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_DAILY);
    scontrol_resv_release(&r);
    /* Two recurrences are gschedd's to refuse; the words themselves are fine. */
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Flags=HOURLY,Weekly"), 0, "%s", why);
    cr_assert_eq(r.resv.flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY |
                                   GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Flags="), 0, "%s", why);
    cr_assert(r.req.set_flags, "Flags= on update clears them");
    cr_assert_eq(r.resv.flags, 0);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=alice",
                       "Flags=DAILY,STATIC_ALLOC"),
                 -EINVAL);
    cr_assert(strstr(why, "flag STATIC_ALLOC is not supported") != NULL, "%s", why);
}

/* Licenses=: kept for the reservation's jobs; with them Nodes= may be left out. */
Test(scontrol_resv, reads_licenses_and_needs_no_nodes_with_them)
{
    struct scontrol_resv r;
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Users=alice",
                       "Licenses=matlab:2,fluent", "Flags=ANY_NODES"),
                 0, "%s", why);
    cr_assert(r.req.set_licenses);
    cr_assert_not(r.req.set_nodes);
    cr_assert_eq(r.resv.n_licenses, 2);
    cr_assert_str_eq(r.resv.licenses[0]->name, "matlab");
    cr_assert_eq(r.resv.licenses[0]->count, 2);
    cr_assert_str_eq(r.resv.licenses[1]->name, "fluent");
    cr_assert_eq(r.resv.licenses[1]->count, 1, "a name alone is one");
    cr_assert_eq(r.resv.flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_ANY_NODES);
    r.resv.name = "lic";
    cr_assert_eq(scontrol_resv_record(&out, &r.resv, true), 0);
    cr_assert(strstr(out.data, " Nodes=(null) NodeCnt=0 Licenses=matlab:2,fluent:1 "
                               "Flags=ANY_NODES Users=alice") != NULL,
              "%s", out.data);
    gs_buf_release(&out);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Users=alice"), -EINVAL);
    cr_assert(strstr(why, "Nodes= or Licenses= is required") != NULL, "%s", why);
    cr_assert_eq(
        PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Users=alice", "Licenses=matlab:0"),
        -EINVAL);
    cr_assert(strstr(why, "Licenses=matlab:0: ") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=lic", "Licenses=matlab:3"), 0, "%s", why);
    cr_assert(r.req.set_licenses);
    scontrol_resv_release(&r);
}

/* PURGE_COMP[=TIME]: Slurm's times; without one gschedd's default; only it takes a value. */
Test(scontrol_resv, reads_purge_comp_and_its_time)
{
    struct scontrol_resv r;
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=alice",
                       "Flags=overlap,purge_comp=2:30"),
                 0, "%s", why);
    cr_assert_eq(r.resv.flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_OVERLAP |
                                   GS__RESERVATION_FLAG__RESERVATION_FLAG_PURGE_COMP);
    cr_assert_eq(r.resv.purge_comp_s, 150, "MIN:SEC");
    r.resv.name = "p";
    cr_assert_eq(scontrol_resv_record(&out, &r.resv, true), 0);
    cr_assert(strstr(out.data, " Flags=OVERLAP,PURGE_COMP=00:02:30 ") != NULL, "%s", out.data);
    gs_buf_release(&out);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=alice",
                       "Flags=PURGE_COMP"),
                 0, "%s", why);
    cr_assert_eq(r.resv.purge_comp_s, 0, "gschedd's default");
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=p", "Flags+=PURGE_COMP=1-0"), 0, "%s", why);
    cr_assert_eq(r.req.add_flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_PURGE_COMP);
    cr_assert_eq(r.resv.purge_comp_s, 86400, "D-H");
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=alice",
                       "Flags=PURGE_COMP=soon"),
                 -EINVAL);
    cr_assert(strstr(why, "Flags=PURGE_COMP=soon: PURGE_COMP=soon: not a time") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users=alice",
                       "Flags=MAINT=5"),
                 -EINVAL);
    cr_assert(strstr(why, "flag MAINT=5 is not supported") != NULL, "%s", why);
}

/* Slurm's maintenance reservation: `Flags=maint,ignore_jobs`, shown back in upper case. */
Test(scontrol_resv, reads_maint_and_ignore_jobs)
{
    struct scontrol_resv r;
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=120", "Nodes=n[1-2]", "Users=root",
                       "flags=maint,ignore_jobs,flex,magnetic,replace_down,replace"),
                 0, "%s", why);
    cr_assert_eq(r.resv.flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_MAINT |
                                   GS__RESERVATION_FLAG__RESERVATION_FLAG_IGNORE_JOBS |
                                   GS__RESERVATION_FLAG__RESERVATION_FLAG_FLEX |
                                   GS__RESERVATION_FLAG__RESERVATION_FLAG_MAGNETIC |
                                   GS__RESERVATION_FLAG__RESERVATION_FLAG_REPLACE_DOWN |
                                   GS__RESERVATION_FLAG__RESERVATION_FLAG_REPLACE);
    r.resv.name = "m";
    cr_assert_eq(scontrol_resv_record(&out, &r.resv, true), 0);
    cr_assert(strstr(out.data, " Flags=MAINT,IGNORE_JOBS,FLEX,MAGNETIC,REPLACE_DOWN,REPLACE ") !=
                  NULL,
              "%s", out.data);
    gs_buf_release(&out);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Flags-=IGNORE_JOBS", "Flags+=overlap"), 0,
                 "%s", why);
    cr_assert_eq(r.req.remove_flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_IGNORE_JOBS);
    cr_assert_eq(r.req.add_flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_OVERLAP);
    scontrol_resv_release(&r);
}

Test(scontrol_resv, update_edits_the_stored_lists)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Users+=carol,dave", "users-=bob",
                       "Accounts=+ml", "Flags-=DAILY", "Flags+=weekday"),
                 0, "%s", why);
    cr_assert_not(r.req.set_users || r.req.set_accounts || r.req.set_flags);
    cr_assert_eq(r.req.n_add_users, 2);
    cr_assert_str_eq(r.req.add_users[0], "carol");
    cr_assert_str_eq(r.req.add_users[1], "dave");
    cr_assert_eq(r.req.n_remove_users, 1);
    cr_assert_str_eq(r.req.remove_users[0], "bob");
    cr_assert_eq(r.req.n_add_accounts, 1);
    cr_assert_str_eq(r.req.add_accounts[0], "ml");
    cr_assert_eq(r.req.n_remove_accounts, 0);
    cr_assert_eq(r.req.remove_flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_DAILY);
    cr_assert_eq(r.req.add_flags, GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKDAY);
    scontrol_resv_release(&r);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Accounts=-ml,-bio"), 0, "%s", why);
    cr_assert_eq(r.req.n_remove_accounts, 2);
    cr_assert_str_eq(r.req.remove_accounts[1], "bio");
    scontrol_resv_release(&r);
}

Test(scontrol_resv, refuses_edits_that_cannot_mean_one_thing)
{
    struct scontrol_resv r;

    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Users=+a,b"), -EINVAL);
    cr_assert(strstr(why, "Users=+a,b: give the whole list, or names to add") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Users=-a,+b"), -EINVAL);
    cr_assert(strstr(why, "not a mix") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Users+="), -EINVAL);
    cr_assert(strstr(why, "Users+= is empty") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Users+=-a"), -EINVAL);
    cr_assert(strstr(why, "Users+=-a: a name cannot start with '-'") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Users=+a", "Users+=b"), -EINVAL);
    cr_assert(strstr(why, "give names to add once") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Nodes+=n2"), -EINVAL);
    cr_assert(strstr(why, "only Users, Accounts and Flags take +=") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, CREATE, "StartTime=now", "Duration=60", "Nodes=n1", "Users+=a"),
                 -EINVAL);
    cr_assert(strstr(why, "+= edits a reservation") != NULL, "%s", why);
    cr_assert_eq(PARSE(&r, UPDATE, "ReservationName=m", "Users=-"), -EINVAL);
    cr_assert(strstr(why, "without a name") != NULL, "%s", why);
}
