/*
 * test_slurm_fmt.c: the Slurm formatting the views share (slurm/slurm_fmt.h): state codes,
 * the three time layouts, job ids and array folding, -o/-O specs with widths and their
 * malformed forms, Slurm's cutting and padding, reasons, and hostlists of allocations.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm_fmt.h"

#define ST(x) GS__JOB_STATE__JOB_STATE_##x

Test(slurm_fmt, state_codes_and_names)
{
    Gs__JobState st;
    uint32_t mask = 0;
    const char *bad = NULL;

    cr_assert_str_eq(slurm_state_code(ST(PENDING)), "PD");
    cr_assert_str_eq(slurm_state_code(ST(RUNNING)), "R");
    cr_assert_str_eq(slurm_state_code(ST(COMPLETED)), "CD");
    cr_assert_str_eq(slurm_state_code(ST(FAILED)), "F");
    cr_assert_str_eq(slurm_state_code(ST(CANCELLED)), "CA");
    cr_assert_str_eq(slurm_state_code(ST(TIMEOUT)), "TO");
    cr_assert_str_eq(slurm_state_code(ST(NODE_FAIL)), "NF");
    cr_assert_str_eq(slurm_state_code(ST(REQUEUED)), "RQ");
    cr_assert_str_eq(slurm_state_code((Gs__JobState)99), "?");
    cr_assert_str_eq(slurm_state_name(ST(NODE_FAIL)), "NODE_FAIL");
    cr_assert_eq(slurm_state_parse("pd", &st), 0);
    cr_assert_eq(st, ST(PENDING));
    cr_assert_eq(slurm_state_parse("Running", &st), 0);
    cr_assert_eq(st, ST(RUNNING));
    cr_assert_eq(slurm_state_parse("bogus", &st), -EINVAL);
    cr_assert_eq(slurm_state_list_parse("PD,r", &mask, &bad), 0);
    cr_assert_eq(mask, (1u << ST(PENDING)) | (1u << ST(RUNNING)));
    cr_assert_eq(slurm_state_list_parse("all", &mask, &bad), 0);
    cr_assert_eq(mask, UINT32_MAX);
    cr_assert_eq(slurm_state_list_parse("PD,nope", &mask, &bad), -EINVAL);
    cr_assert_str_eq(bad, "nope");
    cr_assert_eq(slurm_state_list_parse("PD,", &mask, &bad), -EINVAL);
}

Test(slurm_fmt, times)
{
    char b[32];

    cr_assert_str_eq(slurm_fmt_secs(0, b, sizeof(b)), "0:00");
    cr_assert_str_eq(slurm_fmt_secs(65, b, sizeof(b)), "1:05");
    cr_assert_str_eq(slurm_fmt_secs(3723, b, sizeof(b)), "1:02:03");
    cr_assert_str_eq(slurm_fmt_secs(2 * 86400 + 3 * 3600 + 4 * 60 + 5, b, sizeof(b)), "2-03:04:05");
    cr_assert_str_eq(slurm_fmt_secs_long(5, b, sizeof(b)), "00:00:05");
    cr_assert_str_eq(slurm_fmt_secs_long(86400, b, sizeof(b)), "1-00:00:00");
    cr_assert_str_eq(slurm_fmt_limit(0, false, "infinite", b, sizeof(b)), "infinite");
    cr_assert_str_eq(slurm_fmt_limit(0, true, "UNLIMITED", b, sizeof(b)), "UNLIMITED");
    cr_assert_str_eq(slurm_fmt_limit(1800, false, "infinite", b, sizeof(b)), "30:00");
    cr_assert_str_eq(slurm_fmt_limit(1800, true, "UNLIMITED", b, sizeof(b)), "00:30:00");
    cr_assert_str_eq(slurm_fmt_date(0, "N/A", b, sizeof(b)), "N/A");
}

Test(slurm_fmt, dates)
{
    uint64_t a, b, now = 1714557600000ULL;

    cr_assert_eq(slurm_parse_date("2024-05-01", now, &a), 0);
    cr_assert_eq(slurm_parse_date("2024-05-01T10:30", now, &b), 0);
    cr_assert_eq(b - a, (10 * 3600 + 30 * 60) * 1000ULL);
    cr_assert_eq(slurm_parse_date("2024-05-01T10:30:15", now, &b), 0);
    cr_assert_eq(b - a, (10 * 3600 + 30 * 60 + 15) * 1000ULL);
    cr_assert_eq(slurm_parse_date("now", now, &b), 0);
    cr_assert_eq(b, now);
    cr_assert_eq(slurm_parse_date("today", now, &b), 0);
    cr_assert(b <= now && now - b < 86400000ULL + 3600000ULL);
    cr_assert_eq(slurm_parse_date("2024-13-01", now, &b), -EINVAL);
    cr_assert_eq(slurm_parse_date("2024-05-01T", now, &b), -EINVAL);
    cr_assert_eq(slurm_parse_date("yesterday", now, &b), -EINVAL);
    cr_assert_eq(slurm_parse_date("2024-05-01x", now, &b), -EINVAL);
}

Test(slurm_fmt, job_refs)
{
    struct slurm_job_ref r;
    Gs__JobInfo e = GS__JOB_INFO__INIT, plain = GS__JOB_INFO__INIT;
    char id[32];

    e.job_id = 127;
    e.array_job_id = 123;
    e.array_task_id = 4;
    plain.job_id = 42;
    cr_assert_str_eq(slurm_job_id(&e, id, sizeof(id)), "123_4");
    cr_assert_str_eq(slurm_job_id(&plain, id, sizeof(id)), "42");
    cr_assert_eq(slurm_job_ref_parse("123", &r), 0);
    cr_assert(slurm_job_ref_match(&r, &e));
    cr_assert_not(slurm_job_ref_match(&r, &plain));
    cr_assert_eq(slurm_job_ref_parse("127", &r), 0);
    cr_assert(slurm_job_ref_match(&r, &e));
    cr_assert_eq(slurm_job_ref_parse("123_4", &r), 0);
    cr_assert_eq(r.nranges, 1);
    cr_assert(slurm_job_ref_match(&r, &e));
    cr_assert_eq(slurm_job_ref_parse("123_[1-3,7]", &r), 0);
    cr_assert_eq(r.nranges, 2);
    cr_assert_not(slurm_job_ref_match(&r, &e));
    cr_assert_eq(slurm_job_ref_parse("123_[1-5]", &r), 0);
    cr_assert(slurm_job_ref_match(&r, &e));
    cr_assert_eq(slurm_job_ref_parse("123_*", &r), 0);
    cr_assert_eq(r.nranges, 0);
    cr_assert_eq(slurm_job_ref_parse("0", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("12x", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("123_", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("123_[3-1]", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("123_[1-3", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("123_1-3", &r), -EINVAL);
}

static void check_ranges(const uint32_t *v, size_t n, const char *want)
{
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_eq(slurm_fmt_ranges(&b, v, n), 0);
    cr_assert_str_eq(b.data != NULL ? b.data : "", want);
    gs_buf_release(&b);
}

Test(slurm_fmt, ranges)
{
    check_ranges((uint32_t[]){4, 5, 6, 9}, 4, "4-6,9");
    check_ranges((uint32_t[]){1, 2}, 2, "1-2");
    check_ranges((uint32_t[]){7}, 1, "7");
    check_ranges(NULL, 0, "");
}

static Gs__JobInfo element(uint64_t id, uint32_t task, Gs__JobState st, const char *reason)
{
    Gs__JobInfo j = GS__JOB_INFO__INIT;

    j.job_id = id;
    j.array_job_id = 50;
    j.array_task_id = task;
    j.state = st;
    j.reason = (char *)reason;
    return j;
}

Test(slurm_fmt, array_folding)
{
    Gs__JobInfo run = element(50, 0, ST(RUNNING), "");
    Gs__JobInfo p1 = element(51, 1, ST(PENDING), "JobArrayTaskLimit");
    Gs__JobInfo p9 = element(59, 9, ST(PENDING), "JobArrayTaskLimit");
    Gs__JobInfo p2 = element(52, 2, ST(PENDING), "JobArrayTaskLimit");
    Gs__JobInfo held = element(53, 3, ST(PENDING), "Held");
    Gs__JobInfo other = GS__JOB_INFO__INIT;
    Gs__JobInfo *jobs[] = {&run, &p1, &p9, &held, &other, &p2};
    struct slurm_row *rows = NULL;
    struct gs_buf b = GS_BUF_INIT;
    size_t n = 0;

    other.job_id = 60;
    other.state = ST(PENDING);
    cr_assert_eq(slurm_rows_build(jobs, 6, true, &rows, &n), 0);
    cr_assert_eq(n, 4);
    cr_assert_eq(rows[0].job, &run);
    cr_assert_eq(rows[1].job, &p1);
    cr_assert_eq(slurm_row_id(&b, &rows[1]), 0);
    cr_assert_str_eq(b.data, "50_[1-2,9]");
    gs_buf_reset(&b);
    cr_assert_eq(slurm_row_id(&b, &rows[2]), 0);
    cr_assert_str_eq(b.data, "50_3"); /* a lone element with its own reason */
    gs_buf_reset(&b);
    cr_assert_eq(slurm_row_id(&b, &rows[3]), 0);
    cr_assert_str_eq(b.data, "60");
    slurm_rows_free(rows, n);
    /* squeue -r: no folding. */
    cr_assert_eq(slurm_rows_build(jobs, 6, false, &rows, &n), 0);
    cr_assert_eq(n, 6);
    slurm_rows_free(rows, n);
    gs_buf_release(&b);
}

enum { F_ID, F_NAME, F_STATE };

static const struct slurm_field fields[] = {
    [F_ID] = {'i', "JobID", "JOBID"},
    [F_NAME] = {'j', "Name", "NAME"},
    [F_STATE] = {'t', "StateCompact", "ST"},
};

static int test_value(void *ctx, int field, struct gs_buf *out)
{
    (void)ctx;
    return gs_buf_append_str(out, field == F_ID ? "42" : field == F_NAME ? "a-long-name" : "R");
}

static char *render(const char *spec, bool names, bool header)
{
    struct slurm_format f;
    struct gs_buf b = GS_BUF_INIT;
    char why[128];
    int rc = names ? slurm_format_parse_names(spec, fields, 3, 20, &f, why, sizeof(why))
                   : slurm_format_parse(spec, fields, 3, &f, why, sizeof(why));

    cr_assert_eq(rc, 0, "%s: %s", spec, why);
    cr_assert_eq(slurm_format_line(&f, fields, header ? NULL : test_value, NULL, &b), 0);
    slurm_format_release(&f);
    return gs_buf_detach(&b, NULL);
}

static void check_render(const char *spec, bool names, bool header, const char *want)
{
    char *got = render(spec, names, header);

    cr_assert_str_eq(got, want, "%s", spec);
    free(got);
}

Test(slurm_fmt, percent_specs)
{
    check_render("%.18i %.9j %.2t", false, true, "             JOBID      NAME ST\n");
    check_render("%.18i %.8j %.2t", false, false, "                42 a-long-n  R\n");
    check_render("%-6i|%j", false, false, "42    |a-long-name\n");
    check_render("%i%%", false, false, "42%\n");
    check_render("id=%i", false, false, "id=42\n");
}

Test(slurm_fmt, malformed_specs)
{
    struct slurm_format f;
    char why[128];

    cr_assert_eq(slurm_format_parse("%.18z", fields, 3, &f, why, sizeof(why)), -EINVAL);
    cr_assert(strstr(why, "'%z'") != NULL, "%s", why);
    cr_assert_eq(slurm_format_parse("%i %", fields, 3, &f, why, sizeof(why)), -EINVAL);
    cr_assert(strstr(why, "at the end") != NULL, "%s", why);
    cr_assert_eq(slurm_format_parse("%.10", fields, 3, &f, why, sizeof(why)), -EINVAL);
    cr_assert_eq(slurm_format_parse("", fields, 3, &f, why, sizeof(why)), -EINVAL);
    cr_assert_eq(slurm_format_parse_names("JobID,Bogus", fields, 3, 20, &f, why, sizeof(why)),
                 -EINVAL);
    cr_assert(strstr(why, "'Bogus'") != NULL, "%s", why);
    cr_assert_eq(slurm_format_parse_names("JobID:.", fields, 3, 20, &f, why, sizeof(why)), -EINVAL);
}

Test(slurm_fmt, auto_width_is_marked)
{
    struct slurm_format f;
    char why[128];

    cr_assert_eq(slurm_format_parse("%#i %.5j", fields, 3, &f, why, sizeof(why)), 0);
    cr_assert_eq(f.items[0].width, SLURM_WIDTH_AUTO);
    cr_assert(slurm_format_has(&f, F_NAME));
    cr_assert_not(slurm_format_has(&f, F_STATE));
    slurm_format_release(&f);
}

Test(slurm_fmt, long_names)
{
    /* -O fields run into each other unless a suffix or the padding separates them. */
    check_render("jobid:6,NAME:.4,StateCompact", true, true, "JOBID NAMEST                  \n");
    check_render("JobID:6|,Name:.4", true, false, "42    |a-lo\n");
}

Test(slurm_fmt, sacct_cells)
{
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_eq(slurm_sacct_cell(&b, "42", -12), 0);
    cr_assert_eq(slurm_sacct_cell(&b, "train", 10), 0);
    cr_assert_eq(slurm_sacct_cell(&b, "CANCELLED by 1000", 10), 0);
    cr_assert_str_eq(b.data, "42                train CANCELLED+ ");
    gs_buf_release(&b);
}

Test(slurm_fmt, reasons)
{
    Gs__JobInfo j = GS__JOB_INFO__INIT;
    char buf[64];

    j.state = ST(PENDING);
    j.reason = "";
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "None");
    j.reason = "Held";
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "JobHeldUser");
    j.reason = "Dependency";
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "Dependency");
    j.held = true;
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "JobHeldUser");
    j.held = false;
    j.state = ST(FAILED);
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "NonZeroExitCode");
    j.signaled = true;
    j.term_signal = 9;
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "RaisedSignal:9(Killed)");
    j.state = ST(TIMEOUT);
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "TimeLimit");
    j.state = ST(COMPLETED);
    cr_assert_str_eq(slurm_reason(&j, buf, sizeof(buf)), "None");
}

Test(slurm_fmt, nodelists)
{
    Gs__NodeAllocation a[4], *p[4];
    const char *names[] = {"gpu03", "gpu01", "gpu02", "login"};
    Gs__JobInfo j = GS__JOB_INFO__INIT;
    struct gs_buf b = GS_BUF_INIT;

    for (int i = 0; i < 4; i++) {
        gs__node_allocation__init(&a[i]);
        a[i].node_name = (char *)names[i];
        p[i] = &a[i];
    }
    cr_assert_eq(slurm_alloc_hostlist(&b, p, 4), 0);
    cr_assert_str_eq(b.data, "gpu[01-03],login");
    gs_buf_reset(&b);
    j.state = ST(RUNNING);
    j.allocation = p;
    j.n_allocation = 3;
    cr_assert_eq(slurm_nodelist_reason(&b, &j), 0);
    cr_assert_str_eq(b.data, "gpu[01-03]");
    gs_buf_reset(&b);
    j.state = ST(PENDING);
    j.reason = "Priority";
    cr_assert_eq(slurm_nodelist_reason(&b, &j), 0);
    cr_assert_str_eq(b.data, "(Priority)");
    gs_buf_release(&b);
}

Test(slurm_fmt, filters)
{
    Gs__UserIdentity u = GS__USER_IDENTITY__INIT;
    Gs__JobInfo j = GS__JOB_INFO__INIT;
    struct slurm_filter f = {0};

    u.uid = 1000;
    u.username = "alice";
    j.job_id = 42;
    j.user = &u;
    j.name = "train";
    j.partition = "gpu";
    j.state = ST(RUNNING);
    cr_assert(slurm_filter_match(&f, &j));
    f.users = "bob,1000";
    cr_assert(slurm_filter_match(&f, &j));
    f.users = "bob,alic";
    cr_assert_not(slurm_filter_match(&f, &j));
    f.users = NULL;
    f.partitions = "debug,gpu";
    f.states = 1u << ST(PENDING);
    cr_assert_not(slurm_filter_match(&f, &j));
    f.states |= 1u << ST(RUNNING);
    cr_assert(slurm_filter_match(&f, &j));
    cr_assert(slurm_list_has("a,b", "b"));
    cr_assert_not(slurm_list_has("a,b", "a,"));
}

Test(slurm_fmt, node_states)
{
    Gs__NodeInfo n = GS__NODE_INFO__INIT;

    n.state = GS__NODE_STATE__NODE_STATE_UP;
    n.cores_total = 16;
    n.cores_free = 16;
    n.gpus_total = 4;
    n.gpus_free = 4;
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(&n)), "idle");
    n.cores_free = 8;
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(&n)), "mix");
    n.cores_free = 0;
    cr_assert_str_eq(slurm_node_state_long(slurm_node_state(&n)), "allocated");
    n.state = GS__NODE_STATE__NODE_STATE_DRAINED;
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(&n)), "drain");
    cr_assert_str_eq(slurm_node_state_scontrol(slurm_node_state(&n)), "IDLE+DRAIN");
    n.state = GS__NODE_STATE__NODE_STATE_DOWN;
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(&n)), "down");
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(NULL)), "unk");
}
