/*
 * test_step_fmt.c: what sacct and sstat print and read of job steps (slurm/step_fmt.h): step
 * ids both ways ("batch" is wire step 0, "N" wire step N + 1), -j lists of JOB[.STEP] with
 * bracketed array ranges and components ("42+1.0"), which rows such a list selects,
 * Slurm's exact memory figures, and a suspended job's steps' state and time.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "slurm/slurm_het.h"
#include "slurm/step_fmt.h"

Test(step_fmt, step_ids_both_ways)
{
    char buf[16];
    uint32_t step = 99;

    cr_assert_str_eq(slurm_step_id(0, buf, sizeof(buf)), "batch");
    cr_assert_str_eq(slurm_step_id(1, buf, sizeof(buf)), "0");
    cr_assert_str_eq(slurm_step_id(13, buf, sizeof(buf)), "12");
    cr_assert_eq(slurm_step_parse("batch", &step), 0);
    cr_assert_eq(step, 0);
    cr_assert_eq(slurm_step_parse("0", &step), 0);
    cr_assert_eq(step, 1);
    cr_assert_eq(slurm_step_parse("12", &step), 0);
    cr_assert_eq(step, 13);
    cr_assert_eq(slurm_step_parse("", &step), -EINVAL);
    cr_assert_eq(slurm_step_parse("extern", &step), -EINVAL);
    cr_assert_eq(slurm_step_parse("1x", &step), -EINVAL);
    cr_assert_eq(slurm_step_parse("99999999999", &step), -EINVAL);
    cr_assert_eq(step, 13, "a refused word leaves the step as it was");
}

Test(step_fmt, lists_name_jobs_with_or_without_a_step)
{
    struct slurm_job_ref refs[5];
    uint32_t steps[5];
    size_t n = 0;
    char bad[16];

    cr_assert_eq(
        slurm_step_list_parse("42,42.0,50_[1,3].batch", refs, steps, 5, &n, bad, sizeof(bad)), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(refs[0].id, 42);
    cr_assert_eq(steps[0], SLURM_STEP_ANY);
    cr_assert_eq(refs[1].id, 42);
    cr_assert_eq(steps[1], 1);
    cr_assert_eq(refs[2].id, 50);
    cr_assert_eq(refs[2].nranges, 2);
    cr_assert_eq(steps[2], 0);
    /* Appends after what is there, up to the word at fault or the last that fits. */
    cr_assert_eq(slurm_step_list_parse("7,8.x", refs, steps, 5, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_str_eq(bad, "8.x");
    cr_assert_eq(n, 4);
    cr_assert_eq(slurm_step_list_parse("9,10", refs, steps, 5, &n, bad, sizeof(bad)), -E2BIG);
    cr_assert_eq(n, 5);
    cr_assert_str_eq(bad, "10");
    n = 0;
    cr_assert_eq(slurm_step_list_parse("x.0", refs, steps, 5, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_eq(n, 0);
}

Test(step_fmt, a_list_selects_the_job_row_and_its_steps_rows)
{
    struct slurm_job_ref refs[2] = {{.id = 42}, {.id = 43}};
    uint32_t steps[2] = {SLURM_STEP_ANY, 2};
    Gs__JobInfo j42 = GS__JOB_INFO__INIT, j43 = GS__JOB_INFO__INIT;

    j42.job_id = 42;
    j43.job_id = 43;
    cr_assert(slurm_step_job_selected(refs, steps, 0, &j43, NULL), "no list: everything");
    cr_assert(slurm_step_selected(refs, steps, 0, &j43, NULL, 5));
    cr_assert(slurm_step_job_selected(refs, steps, 2, &j42, NULL));
    cr_assert(slurm_step_selected(refs, steps, 2, &j42, NULL, 0));
    cr_assert(slurm_step_selected(refs, steps, 2, &j42, NULL, 7));
    cr_assert_not(slurm_step_job_selected(refs, steps, 2, &j43, NULL), "43.1 alone: no job row");
    cr_assert(slurm_step_selected(refs, steps, 2, &j43, NULL, 2));
    cr_assert_not(slurm_step_selected(refs, steps, 2, &j43, NULL, 1));
}

Test(step_fmt, a_component_word_selects_that_components_rows_alone)
{
    struct slurm_job_ref refs[3];
    uint32_t steps[3], het_nodes[2] = {1, 2};
    Gs__JobInfo whole = GS__JOB_INFO__INIT, plain = GS__JOB_INFO__INIT;
    struct slurm_het_part p0, p1;
    size_t n = 0;
    char bad[16];

    whole.job_id = 42;
    whole.het_nodes = het_nodes;
    whole.n_het_nodes = 2;
    plain.job_id = 43;
    slurm_het_part_init(&p0, &whole, 0);
    slurm_het_part_init(&p1, &whole, 1);
    cr_assert_eq(slurm_step_list_parse("42+1", refs, steps, 3, &n, bad, sizeof(bad)), 0);
    cr_assert(refs[0].het);
    cr_assert_eq(refs[0].het_offset, 1);
    cr_assert_eq(steps[0], SLURM_STEP_ANY);
    cr_assert_not(slurm_step_job_selected(refs, steps, n, &whole, &p0), "42+0's row");
    cr_assert_not(slurm_step_selected(refs, steps, n, &whole, &p0, 0), "42+0.batch");
    cr_assert(slurm_step_job_selected(refs, steps, n, &whole, &p1));
    cr_assert(slurm_step_selected(refs, steps, n, &whole, &p1, 1), "42+1.0");
    /* "42+1.0": that step's row under component 1, not the component's own row. */
    n = 0;
    cr_assert_eq(slurm_step_list_parse("42+1.0,43", refs, steps, 3, &n, bad, sizeof(bad)), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(steps[0], 1);
    cr_assert_not(slurm_step_job_selected(refs, steps, n, &whole, &p1));
    cr_assert(slurm_step_selected(refs, steps, n, &whole, &p1, 1));
    cr_assert_not(slurm_step_selected(refs, steps, n, &whole, &p1, 2));
    cr_assert_not(slurm_step_selected(refs, steps, n, &whole, &p0, 1));
    cr_assert(slurm_step_job_selected(refs, steps, n, &plain, NULL), "43 beside it");
    /* A plain "42" takes every component; an ordinary job has no component 0. */
    n = 0;
    cr_assert_eq(slurm_step_list_parse("42,43+0", refs, steps, 3, &n, bad, sizeof(bad)), 0);
    cr_assert(slurm_step_job_selected(refs, steps, n, &whole, &p0));
    cr_assert(slurm_step_job_selected(refs, steps, n, &whole, &p1));
    cr_assert_not(slurm_step_job_selected(refs, steps, n, &plain, NULL));
    n = 0;
    cr_assert_eq(slurm_step_list_parse("42+1.x", refs, steps, 3, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_eq(slurm_step_list_parse("42+.0", refs, steps, 3, &n, bad, sizeof(bad)), -EINVAL);
    cr_assert_str_eq(bad, "42+.0");
}

Test(step_fmt, a_steps_tres_is_what_it_was_given)
{
    Gs__StepInfo st = GS__STEP_INFO__INIT;
    struct gs_buf out = GS_BUF_INIT;

    st.nnodes = 2;
    cr_assert_eq(slurm_step_tres(&out, &st), 0);
    cr_assert_null(out.data, "an older gschedd's step says nothing");
    st.cpus = 8;
    cr_assert_eq(slurm_step_tres(&out, &st), 0);
    cr_assert_str_eq(out.data, "cpu=8,node=2");
    gs_buf_reset(&out);
    st.gpus = 2;
    cr_assert_eq(slurm_step_tres(&out, &st), 0);
    cr_assert_str_eq(out.data, "cpu=8,node=2,gres/gpu=2");
    gs_buf_release(&out);
}

Test(step_fmt, memory_figures_are_exact_as_slurms)
{
    char buf[32];

    cr_assert_str_eq(slurm_fmt_rss(0, buf, sizeof(buf)), "0");
    cr_assert_str_eq(slurm_fmt_rss(1000, buf, sizeof(buf)), "1000K");
    cr_assert_str_eq(slurm_fmt_rss(1024, buf, sizeof(buf)), "1024K");
    cr_assert_str_eq(slurm_fmt_rss(1536, buf, sizeof(buf)), "1536K");
    cr_assert_str_eq(slurm_fmt_rss(51200, buf, sizeof(buf)), "50M");
    cr_assert_str_eq(slurm_fmt_rss(64492, buf, sizeof(buf)), "64492K");
    cr_assert_str_eq(slurm_fmt_rss(2u * 1024 * 1024, buf, sizeof(buf)), "2G");
    cr_assert_str_eq(slurm_fmt_rss(1025ull * 1024 * 1024, buf, sizeof(buf)), "1025G");
    cr_assert_str_eq(slurm_fmt_rss(3ull << 40, buf, sizeof(buf)), "3P");
    cr_assert_str_eq(slurm_fmt_rss(5ull << 50, buf, sizeof(buf)), "5120P", "P is the largest unit");
}

Test(step_fmt, steps_of_a_suspended_job_are_suspended_and_stop_with_it)
{
    Gs__JobInfo job = GS__JOB_INFO__INIT;
    Gs__StepInfo batch = GS__STEP_INFO__INIT, late = GS__STEP_INFO__INIT,
                 done = GS__STEP_INFO__INIT;

    /* Started at 100 s, suspended for 60 s before, suspended again at 400 s: 240 s run. */
    job.state = GS__JOB_STATE__JOB_STATE_RUNNING;
    job.start_time_ms = 100000;
    job.suspended_ms = 60000;
    job.suspended = true;
    job.suspend_time_ms = 400000;
    batch.state = GS__JOB_STATE__JOB_STATE_RUNNING;
    batch.start_time_ms = 100000;
    late = batch;
    late.start_time_ms = 350000;
    done.state = GS__JOB_STATE__JOB_STATE_COMPLETED;
    done.start_time_ms = 110000;
    done.end_time_ms = 150000;
    cr_assert_str_eq(slurm_step_state_name(&job, &batch), "SUSPENDED");
    cr_assert_str_eq(slurm_step_state_name(&job, &done), "COMPLETED");
    cr_assert_eq(slurm_step_elapsed_s(&job, &batch, 900000), 240, "no longer than its job");
    cr_assert_eq(slurm_step_elapsed_s(&job, &late, 360000), 10);
    cr_assert_eq(slurm_step_elapsed_s(&job, &late, 900000), 50, "stopped where its job was");
    cr_assert_eq(slurm_step_elapsed_s(&job, &done, 900000), 40, "an ended step: its own span");
    batch.suspended_ms = 60000; /* gschedd 1.28 says it ran through the earlier suspension */
    cr_assert_eq(slurm_step_elapsed_s(&job, &batch, 900000), 240);
    job.suspended = false;
    job.suspend_time_ms = 0;
    cr_assert_str_eq(slurm_step_state_name(&job, &batch), "RUNNING");
    cr_assert_eq(slurm_step_elapsed_s(&job, &late, 360000), 10);
    /* Resumed, at 500 s: the job has run 340 s. A step started at 150 s that ran through
     * the 60 s suspension ran 290 s, not as long as its job. */
    late.start_time_ms = 150000;
    late.suspended_ms = 60000;
    cr_assert_eq(slurm_step_elapsed_s(&job, &late, 500000), 290);
    cr_assert_eq(slurm_step_elapsed_s(&job, &batch, 500000), 340);
    done.suspended_ms = 15000; /* an ended step that was suspended for part of its span */
    cr_assert_eq(slurm_step_elapsed_s(&job, &done, 900000), 25);
}
