/*
 * test_sim_metrics.c: the statistics gsched-simulate reports: mean, nearest-rank
 * percentiles, Jain's fairness index, and the max-min fair division Jain's index is
 * measured against.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "sim/metrics.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

Test(sim_metrics, jain_is_one_for_equal_shares_and_one_over_n_for_one_taking_all)
{
    double equal[] = {2, 2, 2, 2}, one[] = {0, 0, 5, 0}, mixed[] = {1, 2, 3};

    cr_assert(NEAR(gs_sim_jain(equal, 4), 1));
    cr_assert(NEAR(gs_sim_jain(one, 4), 0.25));
    cr_assert(NEAR(gs_sim_jain(mixed, 3), 36.0 / 42.0));
    cr_assert(NEAR(gs_sim_jain(NULL, 0), 1), "nobody to be unfair to");
    cr_assert(NEAR(gs_sim_jain(one, 2), 1), "all zero");
}

Test(sim_metrics, percentile_is_the_nearest_rank)
{
    double v[100], four[] = {40, 10, 30, 20}, one[] = {7};

    for (int i = 0; i < 100; i++)
        v[i] = 100 - i; /* unsorted: 100..1 */
    cr_assert(NEAR(gs_sim_percentile(v, 100, 99), 99));
    cr_assert(NEAR(gs_sim_percentile(v, 100, 100), 100));
    cr_assert(NEAR(gs_sim_percentile(v, 100, 50), 50));
    cr_assert(NEAR(gs_sim_percentile(v, 100, 0.5), 1));
    cr_assert(NEAR(gs_sim_percentile(four, 4, 50), 20));
    cr_assert(NEAR(gs_sim_percentile(four, 4, 99), 40));
    cr_assert(NEAR(gs_sim_percentile(one, 1, 99), 7));
    cr_assert(NEAR(gs_sim_percentile(NULL, 0, 99), 0));
}

Test(sim_metrics, mean_of_nothing_is_zero)
{
    double v[] = {1, 2, 6};

    cr_assert(NEAR(gs_sim_mean(v, 3), 3));
    cr_assert(NEAR(gs_sim_mean(NULL, 0), 0));
}

Test(sim_metrics, fair_shares_give_what_one_does_not_need_to_the_others)
{
    double w[] = {1, 1, 1}, d[] = {2, 100, 100}, out[3];
    double w2[] = {1, 3}, d2[] = {100, 100}, out2[2];
    double w3[] = {1, 1, 1}, d3[] = {1, 0, 2}, out3[3];

    gs_sim_fair_shares(w, d, 3, 10, out);
    cr_assert(NEAR(out[0], 2) && NEAR(out[1], 4) && NEAR(out[2], 4), "%g %g %g", out[0], out[1],
              out[2]);
    gs_sim_fair_shares(w2, d2, 2, 8, out2);
    cr_assert(NEAR(out2[0], 2) && NEAR(out2[1], 6), "by weight");
    gs_sim_fair_shares(w3, d3, 3, 10, out3);
    cr_assert(NEAR(out3[0], 1) && NEAR(out3[1], 0) && NEAR(out3[2], 2),
              "everyone satisfied: nobody gets more than asked");
}
