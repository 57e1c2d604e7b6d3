/*
 * test_slurm_shared.c: the pieces the Slurm views took over from one another when their
 * repeated code was merged (slurm/slurm_fmt.h): job lists with bracketed ranges and
 * heterogeneous components ("42+1"), the filter's
 * "narrows" test, a job's nodes, elapsed time, end time, memory and TRES, user names, and
 * the range writer job_print.c and slurm_fmt.c now share with their two run lengths.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cli/job_print.h"
#include "slurm/slurm_fmt.h"

#define ST(x) GS__JOB_STATE__JOB_STATE_##x

Test(slurm_shared, job_lists)
{
    struct slurm_job_ref refs[3];
    size_t n = 0;
    char bad[16];

    cr_assert_eq(slurm_job_list_parse("42,50_[1,3-4]", refs, 3, &n, bad, sizeof(bad)), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(refs[0].id, 42);
    cr_assert_eq(refs[0].nranges, 0);
    cr_assert_eq(refs[1].id, 50);
    cr_assert_eq(refs[1].nranges, 2);
    /* Appends after what is there; the third fits, the fourth does not. */
    cr_assert_eq(slurm_job_list_parse("7,8", refs, 3, &n, bad, sizeof(bad)), -E2BIG);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(bad, "8");
    n = 0;
    cr_assert_eq(slurm_job_list_parse("1,x2,3", refs, 3, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(bad, "x2");
    n = 0;
    cr_assert_eq(slurm_job_list_parse("1,,2", refs, 3, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_str_eq(bad, "");
    n = 0;
    cr_assert_eq(slurm_job_list_parse("", refs, 3, &n, bad, sizeof(bad)), 0);
    cr_assert_eq(n, 0);
}

Test(slurm_shared, job_lists_with_components)
{
    struct slurm_job_ref refs[3];
    size_t n = 0;
    char bad[16];

    cr_assert_eq(slurm_job_list_parse("42+1,43,50_[1,3]", refs, 3, &n, bad, sizeof(bad)), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(refs[0].id, 42);
    cr_assert(refs[0].het);
    cr_assert_eq(refs[0].het_offset, 1);
    cr_assert_eq(refs[0].nranges, 0);
    cr_assert_eq(refs[1].id, 43);
    cr_assert_not(refs[1].het, "a plain id after a component's is the whole job");
    cr_assert_not(refs[2].het);
    cr_assert_eq(refs[2].nranges, 2);
    n = 0;
    cr_assert_eq(slurm_job_list_parse("43,42+", refs, 3, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(bad, "42+");
    n = 0;
    cr_assert_eq(slurm_job_list_parse("42_3+1,43", refs, 3, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_eq(n, 0);
    cr_assert_str_eq(bad, "42_3+1");
}

Test(slurm_shared, filter_narrows)
{
    struct slurm_job_ref ref = {.id = 1};
    struct slurm_filter f = {.refs = &ref, .nrefs = 1};

    cr_assert(!slurm_filter_narrows(&f));
    f.qos = "normal";
    cr_assert(slurm_filter_narrows(&f));
    f.qos = NULL;
    f.states = 1u << ST(PENDING);
    cr_assert(slurm_filter_narrows(&f));
}

Test(slurm_shared, job_numbers)
{
    Gs__Resources res = GS__RESOURCES__INIT;
    Gs__UserIdentity user = GS__USER_IDENTITY__INIT;
    Gs__JobInfo job = GS__JOB_INFO__INIT;
    struct gs_buf out = GS_BUF_INIT;
    char buf[32];

    res.nodes = 2;
    res.gpus_per_node = 4;
    res.mem_per_node_mib = 1024;
    res.time_limit_s = 60;
    job.resources = &res;
    job.ncpus = 8;
    job.state = ST(PENDING);
    cr_assert_eq(slurm_job_nodes(&job), 2);
    cr_assert_eq(slurm_job_elapsed_s(&job, 5000), 0);
    /* Started, no end yet: counts to now whatever the state (a cancelled job being killed). */
    job.state = ST(CANCELLED);
    job.start_time_ms = 1000;
    cr_assert_eq(slurm_job_elapsed_s(&job, 11000), 10);
    cr_assert_eq(slurm_job_end_ms(&job), 0);
    job.state = ST(RUNNING);
    cr_assert_eq(slurm_job_end_ms(&job), 61000);
    job.end_time_ms = 4000;
    cr_assert_eq(slurm_job_elapsed_s(&job, 11000), 3);
    cr_assert_eq(slurm_job_end_ms(&job), 4000);
    cr_assert_eq(slurm_job_tres(&out, &job), 0);
    cr_assert_str_eq(out.data, "cpu=8,mem=2G,node=2,billing=8,gres/gpu=8");
    gs_buf_reset(&out);
    cr_assert_eq(slurm_job_mem(&out, &job), 0);
    cr_assert_str_eq(out.data, "1G");
    cr_assert_str_eq(slurm_user_name(&job, buf, sizeof(buf)), "0");
    user.uid = 1000;
    job.user = &user;
    cr_assert_str_eq(slurm_user_name(&job, buf, sizeof(buf)), "1000");
    user.username = "alice";
    cr_assert_str_eq(slurm_user_name(&job, buf, sizeof(buf)), "alice");
    gs_buf_release(&out);
}

Test(slurm_shared, ranges_and_results)
{
    const uint32_t v[] = {0, 1, 3, 4, 5, 9};
    Gs__JobActionResult res = GS__JOB_ACTION_RESULT__INIT;
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(cli_format_ranges(&out, v, 6, 2), 0);
    cr_assert_str_eq(out.data, "0-1,3-5,9");
    gs_buf_reset(&out);
    cr_assert_eq(cli_format_indices(&out, v, 6), 0);
    cr_assert_str_eq(out.data, "0,1,3-5,9");
    gs_buf_release(&out);
    res.code = -ENOENT;
    cr_assert_str_eq(slurm_result_message(&res), strerror(ENOENT));
    res.message = "job is pending";
    cr_assert_str_eq(slurm_result_message(&res), "job is pending");
}
