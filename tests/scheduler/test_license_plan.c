/*
 * test_license_plan.c: licenses over time in a pass: what is free now and as a walk passes
 * the holds' ends, reservations taking their counts over their run (and holds or
 * reservations added after them changing what they find), the window a job would run in,
 * a job past its limit, claims.
 */
#include <criterion/criterion.h>

#include "scheduler/license_plan.h"

static const uint32_t total[] = {4, 1};
static const struct sched_license_need one_a[] = {{0, 1}}, two_a[] = {{0, 2}}, four_a[] = {{0, 4}},
                                       a_and_b[] = {{0, 1}, {1, 1}};

Test(license_plan, holds_come_back_as_the_walk_passes_their_ends)
{
    struct sched_license_plan lp;
    struct sched_license_walk w;
    uint32_t two, one;

    cr_assert_eq(sched_license_plan_init(&lp, total, 2, 100, 4, 2), 0);
    two = sched_license_plan_hold(&lp, two_a, 1, 200);
    one = sched_license_plan_hold(&lp, one_a, 1, 150);
    cr_assert(two != SCHED_LICENSE_NO_HOLD && one != SCHED_LICENSE_NO_HOLD);
    cr_assert(sched_license_plan_free_now(&lp, one_a, 1));
    cr_assert_not(sched_license_plan_free_now(&lp, two_a, 1));
    cr_assert_eq(sched_license_walk_init(&w, &lp), 0);
    cr_assert_not(sched_license_walk_fits(&w, &lp, true, two_a, 1, 100, 300));
    sched_license_walk_back(&w, &lp, one, 150);
    cr_assert(sched_license_walk_fits(&w, &lp, true, two_a, 1, 150, 300));
    cr_assert_not(sched_license_walk_fits(&w, &lp, true, four_a, 1, 150, 300));
    sched_license_walk_back(&w, &lp, two, 200);
    cr_assert(sched_license_walk_fits(&w, &lp, true, four_a, 1, 200, 300));
    cr_assert(sched_license_walk_fits(&w, &lp, true, a_and_b, 2, 200, 300));
    cr_assert_eq(sched_license_plan_hold(&lp, one_a, 1, UINT64_MAX), SCHED_LICENSE_NO_HOLD,
                 "never given back");
    cr_assert_not(sched_license_plan_free_now(&lp, one_a, 1));
    sched_license_walk_release(&w);
    sched_license_plan_release(&lp);
}

Test(license_plan, a_reservation_takes_its_counts_over_its_run_and_the_window_sees_it)
{
    struct sched_license_plan lp;
    struct sched_license_walk w;

    cr_assert_eq(sched_license_plan_init(&lp, total, 2, 0, 4, 2), 0);
    sched_license_plan_reserve(&lp, four_a, 1, 100, 200);
    cr_assert(sched_license_plan_fits(&lp, one_a, 1, 100), "done by 100");
    cr_assert_not(sched_license_plan_fits(&lp, one_a, 1, 101));
    cr_assert(sched_license_plan_free_now(&lp, one_a, 1), "reservations aside");
    cr_assert_eq(sched_license_walk_init(&w, &lp), 0);
    cr_assert_not(sched_license_walk_fits(&w, &lp, true, one_a, 1, 150, 160));
    cr_assert(sched_license_walk_fits(&w, &lp, false, one_a, 1, 150, 160));
    cr_assert(sched_license_walk_fits(&w, &lp, true, four_a, 1, 200, 300));
    sched_license_walk_release(&w);
    sched_license_plan_release(&lp);
}

Test(license_plan, holds_and_reservations_added_later_change_what_a_reservation_finds)
{
    struct sched_license_plan lp;

    cr_assert_eq(sched_license_plan_init(&lp, total, 2, 0, 4, 2), 0);
    sched_license_plan_reserve(&lp, two_a, 1, 100, 200);
    cr_assert(sched_license_plan_fits(&lp, two_a, 1, 150), "two left at 100");
    sched_license_plan_hold(&lp, one_a, 1, 50); /* back by 100 */
    cr_assert(sched_license_plan_fits(&lp, two_a, 1, 150));
    sched_license_plan_hold(&lp, one_a, 1, 300); /* still held at 100 */
    cr_assert_not(sched_license_plan_fits(&lp, two_a, 1, 150));
    cr_assert(sched_license_plan_fits(&lp, one_a, 1, 150));
    sched_license_plan_reserve(&lp, one_a, 1, 50, 150); /* running at the first's start */
    cr_assert_not(sched_license_plan_fits(&lp, one_a, 1, 150), "none left at 100");
    cr_assert(sched_license_plan_fits(&lp, two_a, 1, 100), "two at 50 (one back, one taken)");
    cr_assert_not(sched_license_plan_fits(&lp, two_a, 1, 101));
    sched_license_plan_release(&lp);
}

Test(license_plan, a_job_past_its_limit_holds_until_after_now)
{
    struct sched_license_plan lp;
    struct sched_license_walk w;
    uint32_t late;

    cr_assert_eq(sched_license_plan_init(&lp, total, 2, 100, 4, 2), 0);
    late = sched_license_plan_hold(&lp, four_a, 1, 90); /* its limit was at 90; it runs still */
    cr_assert_eq(sched_license_walk_init(&w, &lp), 0);
    sched_license_walk_back(&w, &lp, late, 90);
    cr_assert_not(sched_license_walk_fits(&w, &lp, true, one_a, 1, 90, 200));
    cr_assert_not(sched_license_walk_fits(&w, &lp, true, one_a, 1, 100, 200));
    cr_assert(sched_license_walk_fits(&w, &lp, true, one_a, 1, 101, 200));
    sched_license_plan_reserve(&lp, four_a, 1, 150, 250);
    cr_assert(sched_license_plan_fits(&lp, four_a, 1, 400) == false);
    sched_license_walk_release(&w);
    sched_license_plan_release(&lp);
}

Test(license_plan, never_and_claims)
{
    struct sched_license_plan lp;
    const struct sched_license_need unknown[] = {{2, 1}}, five_a[] = {{0, 5}};

    cr_assert_eq(sched_license_plan_init(&lp, total, 2, 0, 4, 2), 0);
    cr_assert(sched_license_plan_ever(&lp, a_and_b, 2));
    cr_assert_not(sched_license_plan_ever(&lp, unknown, 1));
    cr_assert_not(sched_license_plan_ever(&lp, five_a, 1));
    cr_assert_not(sched_license_plan_free_now(&lp, five_a, 1));
    cr_assert_eq(sched_license_plan_hold(&lp, unknown, 1, 10), SCHED_LICENSE_NO_HOLD,
                 "left out, as a license since removed");
    cr_assert(sched_license_plan_free_now(&lp, four_a, 1));
    cr_assert_not(sched_license_plan_claimed(&lp, a_and_b, 2));
    sched_license_plan_claim(&lp, one_a, 1);
    cr_assert(sched_license_plan_claimed(&lp, a_and_b, 2));
    cr_assert_not(sched_license_plan_claimed(&lp, &a_and_b[1], 1));
    sched_license_plan_release(&lp);
}
