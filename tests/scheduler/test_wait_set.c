/*
 * test_wait_set.c: the jobs of one `gsched wait` (scheduler/wait_set.h): done only once
 * every job has got there whatever order they get there in, duplicates and ids gschedd no
 * longer holds included; a job that stops being there (requeued) holds the wait again until
 * it is back; ids of other jobs change nothing; and a set of 100,000 jobs reaching the end
 * one by one costs a number of lookups in proportion to their number.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "scheduler/wait_set.h"

#define MAX_ID 200000

static bool there[MAX_ID + 1];
static unsigned long lookups;

static bool is_there(uint64_t id, void *data)
{
    (void)data;
    lookups++;
    return id > MAX_ID || there[id]; /* past MAX_ID: "no longer held", so ended */
}

static void setup(void)
{
    for (size_t i = 0; i <= MAX_ID; i++)
        there[i] = false;
    lookups = 0;
}

TestSuite(wait_set, .init = setup);

static bool change(struct sched_wait_set *ws, uint64_t id, bool now)
{
    there[id] = now;
    return sched_wait_set_changed(ws, id, now, is_there, NULL);
}

Test(wait_set, done_once_all_are_there_in_any_order)
{
    uint64_t ids[] = {30, 10, 20, 10, 40};
    struct sched_wait_set ws;

    there[20] = true;
    cr_assert_eq(sched_wait_set_init(&ws, ids, 5, is_there, NULL), 0);
    cr_assert_not(sched_wait_set_done(&ws));
    cr_assert_not(change(&ws, 40, true));
    cr_assert_not(change(&ws, 30, true));
    cr_assert_not(change(&ws, 7, true), "not one of its jobs");
    cr_assert(change(&ws, 10, true), "the last one (given twice) got there");
    sched_wait_set_release(&ws);
}

Test(wait_set, jobs_no_longer_held_count_as_ended)
{
    uint64_t ids[] = {MAX_ID + 5, 3};
    struct sched_wait_set ws;

    cr_assert_eq(sched_wait_set_init(&ws, ids, 2, is_there, NULL), 0);
    cr_assert_not(sched_wait_set_done(&ws));
    cr_assert(change(&ws, 3, true));
    sched_wait_set_release(&ws);
    there[3] = true;
    cr_assert_eq(sched_wait_set_init(&ws, ids, 2, is_there, NULL), 0);
    cr_assert(sched_wait_set_done(&ws), "all there from the start");
    sched_wait_set_release(&ws);
}

/* wait --start on 1 and 2: 1 starts, is requeued (pending again), 2 starts: not done until 1
 * runs again; and a requeue past the cursor's place holds it too. */
Test(wait_set, a_requeued_job_holds_the_wait_again)
{
    uint64_t ids[] = {1, 2, 3};
    struct sched_wait_set ws;

    cr_assert_eq(sched_wait_set_init(&ws, ids, 3, is_there, NULL), 0);
    cr_assert_not(change(&ws, 1, true));
    cr_assert_not(change(&ws, 3, true));
    cr_assert_not(change(&ws, 1, false), "1 requeued");
    cr_assert_not(change(&ws, 2, true), "2 started, 1 is pending again");
    cr_assert_not(change(&ws, 3, false), "3 requeued");
    cr_assert_not(change(&ws, 1, true));
    cr_assert(change(&ws, 3, true));
    sched_wait_set_release(&ws);
}

Test(wait_set, many_jobs_cost_lookups_in_proportion)
{
    const size_t n = 100000;
    uint64_t *ids = malloc(n * sizeof(*ids));
    struct sched_wait_set ws;
    bool done = false;

    cr_assert_not_null(ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = n - i; /* given in reverse */
    cr_assert_eq(sched_wait_set_init(&ws, ids, n, is_there, NULL), 0);
    /* they end in an order that is neither theirs nor its reverse: evens, then odds */
    for (uint64_t id = 2; id <= n; id += 2)
        done = change(&ws, id, true);
    cr_assert_not(done);
    for (uint64_t id = 1; id <= n; id += 2)
        done = change(&ws, id, true);
    cr_assert(done);
    cr_assert_leq(lookups, 3 * n, "%lu lookups for %zu jobs", lookups, n);
    sched_wait_set_release(&ws);
    free(ids);
}
