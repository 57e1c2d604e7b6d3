/*
 * test_slurm_fmt.c: the Slurm formatting the views share (slurm/slurm_fmt.h): state codes,
 * the three time layouts, job ids and array folding, -o/-O specs with widths and their
 * malformed forms, Slurm's cutting and padding, reasons, and hostlists of allocations.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm_fmt.h"
#include "slurm/slurm_het.h"

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
    cr_assert_eq(slurm_job_ref_parse("42", &r), 0);
    cr_assert_not(r.het, "a plain id is the whole job");
}

Test(slurm_fmt, component_refs)
{
    struct slurm_job_ref r;

    cr_assert_eq(slurm_job_ref_parse("42+1", &r), 0);
    cr_assert_eq(r.id, 42);
    cr_assert(r.het);
    cr_assert_eq(r.het_offset, 1);
    cr_assert_eq(r.nranges, 0);
    cr_assert_eq(slurm_job_ref_parse("42+0", &r), 0);
    cr_assert(r.het);
    cr_assert_eq(r.het_offset, 0);
    cr_assert_eq(slurm_job_ref_parse("7+63", &r), 0);
    cr_assert_eq(r.het_offset, 63);
    cr_assert_eq(slurm_job_ref_parse("42+", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42+x", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42+1x", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42+-1", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42+1+2", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42+4294967296", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42_3+1", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42_[1-3]+1", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42_*+1", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("42+1_3", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("+1", &r), -EINVAL);
    cr_assert_eq(slurm_job_ref_parse("0+1", &r), -EINVAL);
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

Test(slurm_fmt, suspended_job_is_its_own_state_for_codes_filters_and_times)
{
    Gs__Resources r = GS__RESOURCES__INIT;
    Gs__JobInfo run = GS__JOB_INFO__INIT, susp = GS__JOB_INFO__INIT;
    struct slurm_filter f = {0};
    uint32_t mask = 0;
    const char *bad = NULL;

    r.time_limit_s = 3600;
    run.state = ST(RUNNING);
    run.resources = &r;
    run.start_time_ms = 100000;
    susp = run;
    susp.suspended = true;
    susp.suspend_time_ms = 400000;
    susp.suspended_ms = 60000;
    cr_assert_str_eq(slurm_job_state_code(&susp), "S");
    cr_assert_str_eq(slurm_job_state_name(&susp), "SUSPENDED");
    cr_assert_str_eq(slurm_job_state_code(&run), "R");
    cr_assert_str_eq(slurm_job_state_name(&run), "RUNNING");
    /* -t S, SUSPENDED: a bit of its own; R keeps meaning the running jobs not suspended. */
    cr_assert_eq(slurm_state_list_parse("S,pd", &mask, &bad), 0);
    cr_assert_eq(mask, SLURM_STATE_SUSPENDED | (1u << ST(PENDING)));
    cr_assert_eq(slurm_state_list_parse("suspended", &mask, &bad), 0);
    cr_assert_eq(mask, SLURM_STATE_SUSPENDED);
    f.states = mask;
    cr_assert(slurm_filter_match(&f, &susp));
    cr_assert_not(slurm_filter_match(&f, &run));
    f.states = 1u << ST(RUNNING);
    cr_assert_not(slurm_filter_match(&f, &susp));
    cr_assert(slurm_filter_match(&f, &run));
    cr_assert_eq(slurm_state_list_parse("all", &f.states, &bad), 0);
    cr_assert(slurm_filter_match(&f, &susp));
    /* 400 - 100 - 60 s run, however late it is; its end moved by its earlier suspension. */
    cr_assert_eq(slurm_job_elapsed_s(&susp, 500000), 240);
    cr_assert_eq(slurm_job_elapsed_s(&susp, 9000000), 240);
    cr_assert_eq(slurm_job_elapsed_s(&run, 500000), 400);
    cr_assert_eq(slurm_job_end_ms(&susp), 100000 + 60000 + 3600000);
    cr_assert_eq(slurm_job_end_ms(&run), 100000 + 3600000);
}

Test(slurm_fmt, node_states)
{
    Gs__NodeInfo n = GS__NODE_INFO__INIT;
    char buf[64];

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
    cr_assert_str_eq(slurm_node_state_scontrol(&n, buf, sizeof(buf)), "IDLE+DRAIN");
    n.maint = true; /* in a MAINT reservation: drained still says drain */
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(&n)), "drain");
    n.state = GS__NODE_STATE__NODE_STATE_UP;
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(&n)), "maint");
    cr_assert_str_eq(slurm_node_state_long(slurm_node_state(&n)), "maint");
    cr_assert_str_eq(slurm_node_state_scontrol(&n, buf, sizeof(buf)), "ALLOCATED+MAINT");
    n.maint = false;
    n.state = GS__NODE_STATE__NODE_STATE_DOWN;
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(&n)), "down");
    cr_assert_str_eq(slurm_node_state_short(slurm_node_state(NULL)), "unk");
}

/*
 * A heterogeneous job, 42: component 0 one node (n1: 2 cores, 1 GPU, 1 task), component 1
 * two (n2, n3: 4 cores and 2 GPUs each, 4096 MiB, 8 tasks), the allocation in that order.
 */
struct het_job {
    uint32_t cores[4], gpus[2], het_nodes[2], het_ntasks[2];
    Gs__NodeAllocation a[3], *p[3];
    Gs__Resources res;
    Gs__JobInfo job;
};

static void het_job(struct het_job *h, Gs__JobState state)
{
    static const char *const names[] = {"n1", "n2", "n3"};

    *h = (struct het_job){
        .cores = {0, 1, 2, 3}, .gpus = {0, 1}, .het_nodes = {1, 2}, .het_ntasks = {1, 8}};
    gs__resources__init(&h->res);
    h->res.nodes = 1;
    h->res.gpus_per_node = 1;
    h->res.cpus_case = GS__RESOURCES__CPUS_CPUS_PER_TASK;
    h->res.cpus_per_task = 2;
    h->res.mem_per_node_mib = 1024;
    gs__job_info__init(&h->job);
    h->job.job_id = 42;
    h->job.state = state;
    h->job.reason = "Resources";
    h->job.resources = &h->res;
    h->job.ntasks = 9;
    h->job.ncpus = 10;
    h->job.het_nodes = h->het_nodes;
    h->job.n_het_nodes = 2;
    h->job.het_ntasks = h->het_ntasks;
    h->job.n_het_ntasks = 2;
    for (int i = 0; i < 3; i++) {
        gs__node_allocation__init(&h->a[i]);
        h->a[i].node_name = (char *)names[i];
        h->a[i].cores = h->cores;
        h->a[i].n_cores = i == 0 ? 2 : 4;
        h->a[i].gpus = h->gpus;
        h->a[i].n_gpus = i == 0 ? 1 : 2;
        h->a[i].mem_mib = i == 0 ? 1024 : 4096;
        h->p[i] = &h->a[i];
    }
    if (state != ST(PENDING)) {
        h->job.allocation = h->p;
        h->job.n_allocation = 3;
    }
}

/* Appends what fn says of row's job to a fresh buffer and checks it. */
static void check_row(int (*fn)(struct gs_buf *, const Gs__JobInfo *), const Gs__JobInfo *job,
                      const char *want)
{
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_eq(fn(&b, job), 0);
    cr_assert_str_eq(b.data, want);
    gs_buf_release(&b);
}

Test(slurm_het, running_job_is_a_row_per_component_with_its_own_nodes_cpus_and_tasks)
{
    struct het_job h;
    Gs__JobInfo other = GS__JOB_INFO__INIT;
    Gs__JobInfo *jobs[] = {&h.job, &other};
    struct slurm_row *rows = NULL;
    struct gs_buf b = GS_BUF_INIT;
    size_t n = 0;

    het_job(&h, ST(RUNNING));
    other.job_id = 43;
    cr_assert_eq(slurm_rows_build(jobs, 2, true, &rows, &n), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(slurm_row_id(&b, &rows[0]), 0);
    cr_assert_str_eq(b.data, "42+0");
    gs_buf_reset(&b);
    cr_assert_eq(slurm_row_id(&b, &rows[1]), 0);
    cr_assert_str_eq(b.data, "42+1");
    gs_buf_reset(&b);
    cr_assert_eq(slurm_row_id(&b, &rows[2]), 0);
    cr_assert_str_eq(b.data, "43");
    cr_assert_null(rows[2].het);
    cr_assert_eq(rows[2].job, &other);
    check_row(slurm_nodelist_reason, rows[0].job, "n1");
    check_row(slurm_nodelist_reason, rows[1].job, "n[2-3]");
    cr_assert_eq(slurm_job_nodes(rows[0].job), 1);
    cr_assert_eq(slurm_job_nodes(rows[1].job), 2);
    cr_assert_eq(rows[0].job->ncpus, 2);
    cr_assert_eq(rows[1].job->ncpus, 8);
    cr_assert_eq(rows[0].job->ntasks, 1);
    cr_assert_eq(rows[1].job->ntasks, 8);
    /* Component 0's shape is the job's; component 1's, without the spec, its nodes'. */
    check_row(slurm_job_tres, rows[0].job, "cpu=2,mem=1G,node=1,billing=2,gres/gpu=1");
    check_row(slurm_job_tres, rows[1].job, "cpu=8,mem=8G,node=2,billing=8,gres/gpu=4");
    cr_assert_eq(rows[1].het->offset, 1);
    cr_assert_eq(rows[1].het->whole, &h.job);
    slurm_rows_free(rows, n);
    gs_buf_release(&b);
}

Test(slurm_het, pending_job_shows_each_components_nodes_and_shares_the_cpus_by_tasks)
{
    struct het_job h;
    struct slurm_het_part p0, p1;
    char id[32];

    het_job(&h, ST(PENDING));
    slurm_het_part_init(&p0, &h.job, 0);
    slurm_het_part_init(&p1, &h.job, 1);
    cr_assert_str_eq(slurm_het_job_id(&p1.job, &p1, id, sizeof(id)), "42+1");
    cr_assert_str_eq(slurm_het_job_id(&h.job, NULL, id, sizeof(id)), "42");
    check_row(slurm_nodelist_reason, &p1.job, "(Resources)");
    cr_assert_eq(slurm_job_nodes(&p0.job), 1);
    cr_assert_eq(slurm_job_nodes(&p1.job), 2);
    /* 10 CPUs over 1 + 8 tasks: 10 * 1/9 -> 1, the rest 9, adding up to the job's. */
    cr_assert_eq(p0.job.ncpus, 1);
    cr_assert_eq(p1.job.ncpus, 9);
    cr_assert_eq(p1.job.n_het_nodes, 0);
}

Test(slurm_het, a_component_ref_names_that_component_of_a_heterogeneous_job_alone)
{
    struct het_job h;
    Gs__JobInfo plain = GS__JOB_INFO__INIT, elem = GS__JOB_INFO__INIT;
    struct slurm_het_part p0, p1;
    struct slurm_job_ref refs[2];
    struct slurm_filter f = {.refs = refs};

    het_job(&h, ST(RUNNING));
    slurm_het_part_init(&p0, &h.job, 0);
    slurm_het_part_init(&p1, &h.job, 1);
    plain.job_id = 43;
    elem.job_id = 50;
    elem.array_job_id = 42;
    elem.array_task_id = 1;
    cr_assert_eq(slurm_job_ref_parse("42+1", &refs[0]), 0);
    /* The job as listed holds component 1; of its lines only 42+1's shows. */
    cr_assert(slurm_job_ref_match(&refs[0], &h.job));
    cr_assert_not(slurm_job_ref_match(&refs[0], &elem), "never an array's element");
    cr_assert(slurm_job_ref_match_part(&refs[0], &h.job, &p1));
    cr_assert_not(slurm_job_ref_match_part(&refs[0], &h.job, &p0));
    f.nrefs = 1;
    cr_assert(slurm_filter_match(&f, &h.job));
    cr_assert(slurm_filter_match_part(&f, &p1));
    cr_assert_not(slurm_filter_match_part(&f, &p0));
    cr_assert(slurm_filter_match_part(&f, NULL), "an ordinary job's line passed as a job");
    /* A component the job lacks names nothing, so the job is not even fetched as a match. */
    cr_assert_eq(slurm_job_ref_parse("42+2", &refs[0]), 0);
    cr_assert_not(slurm_job_ref_match(&refs[0], &h.job));
    cr_assert_not(slurm_filter_match(&f, &h.job));
    /* An ordinary job shows as "43", never "43+0": a component ref names none of it. */
    cr_assert_eq(slurm_job_ref_parse("43+0", &refs[0]), 0);
    cr_assert_not(slurm_job_ref_match(&refs[0], &plain));
    cr_assert_not(slurm_job_ref_match_part(&refs[0], &plain, NULL));
    cr_assert_not(slurm_filter_match(&f, &plain));
    /* "42+1,42": the whole job wins, every component's line shows. */
    cr_assert_eq(slurm_job_ref_parse("42+1", &refs[0]), 0);
    cr_assert_eq(slurm_job_ref_parse("42", &refs[1]), 0);
    f.nrefs = 2;
    cr_assert(slurm_filter_match_part(&f, &p0));
    cr_assert(slurm_filter_match_part(&f, &p1));
    cr_assert(slurm_job_ref_match_part(&refs[1], &h.job, &p0));
    /* No -j: everything. */
    f.nrefs = 0;
    cr_assert(slurm_filter_match_part(&f, &p0));
}

Test(slurm_het, spec_gives_each_components_shape_and_cpus)
{
    struct het_job h;
    Gs__RunSpec run = GS__RUN_SPEC__INIT;
    Gs__HetComponent c = GS__HET_COMPONENT__INIT, *cs[] = {&c};
    Gs__JobSpec spec = GS__JOB_SPEC__INIT;
    struct slurm_het_part p0, p1;

    het_job(&h, ST(PENDING));
    run.tasks_per_node = 1;
    c.nodes = 2;
    c.gpus_per_node = 4;
    c.cpus_case = GS__HET_COMPONENT__CPUS_CPUS_PER_GPU;
    c.cpus_per_gpu = 8;
    c.mem_per_node_mib = 16384;
    c.constraint = "h100";
    c.ntasks = 8;
    spec.resources = &h.res;
    spec.run = &run;
    spec.het = cs;
    spec.n_het = 1;
    h.job.spec = &spec;
    slurm_het_part_init(&p0, &h.job, 0);
    slurm_het_part_init(&p1, &h.job, 1);
    cr_assert_eq(p0.job.ncpus, 2);
    cr_assert_eq(p1.job.ncpus, 64);
    cr_assert_str_eq(p1.res.constraint, "h100");
    cr_assert_eq(p1.res.cpus_case, GS__RESOURCES__CPUS_CPUS_PER_GPU);
    check_row(slurm_job_tres, &p1.job, "cpu=64,mem=32G,node=2,billing=64,gres/gpu=8");
    check_row(slurm_job_mem, &p1.job, "16G");
}

/* Which component's rows step (on nodelist, given 12 CPUs) shows under, as a string
 * "0:NODES/N/CPUS 1:NODES/N/CPUS" (CPUS 0: not known for that component alone). */
static void check_step(const Gs__JobInfo *job, const char *nodelist, const char *want)
{
    Gs__StepInfo st = GS__STEP_INFO__INIT, view;
    struct gs_buf got = GS_BUF_INIT, nodes = GS_BUF_INIT;

    st.nodelist = (char *)nodelist;
    st.nnodes = 3;
    st.ntasks = 9;
    st.cpus = 12;
    cr_assert_eq(gs_buf_append_str(&got, ""), 0);
    for (uint32_t k = 0; k < 2; k++) {
        int rc = slurm_het_step_view(job, k, &st, &view, &nodes);

        cr_assert(rc == 0 || rc == 1);
        if (rc == 1) {
            cr_assert_eq(view.ntasks, 9);
            cr_assert_eq(gs_buf_printf(&got, "%s%u:%s/%u/%u", got.len > 0 ? " " : "", k,
                                       view.nodelist, view.nnodes, view.cpus),
                         0);
        }
    }
    cr_assert_str_eq(got.data, want, "step on '%s'", nodelist);
    gs_buf_release(&got);
    gs_buf_release(&nodes);
}

Test(slurm_het, steps_show_under_each_component_whose_nodes_they_ran_on)
{
    struct het_job h;

    het_job(&h, ST(COMPLETED));
    check_step(&h.job, "n1", "0:n1/1/12");         /* the batch shell: 42+0.batch */
    check_step(&h.job, "n[2-3]", "1:n[2-3]/2/12"); /* 42+1.0 */
    check_step(&h.job, "n3", "1:n3/1/12");
    check_step(&h.job, "n[1-3]", "0:n1/1/0 1:n[2-3]/2/0"); /* 42+0.1 and 42+1.1 */
    check_step(&h.job, "", "0:/3/12");                     /* nodes unknown: component 0's */
    check_step(&h.job, "elsewhere", "0:elsewhere/3/12");
}
