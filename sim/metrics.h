/*
 * metrics.h: the statistics gsched-simulate reports, pure functions over arrays: mean,
 * nearest-rank percentile, Jain's fairness index. run.c keeps the time-weighted sums.
 */
#ifndef GS_SIM_METRICS_H
#define GS_SIM_METRICS_H

#include <stddef.h>

/* The mean of n values; 0 for none. */
double gs_sim_mean(const double *v, size_t n);
/*
 * The p-th percentile (0 < p <= 100) by nearest rank: the smallest value with at least p %
 * of the values at or below it. Sorts v in place. 0 for none.
 */
double gs_sim_percentile(double *v, size_t n, double p);
/*
 * Jain's index (sum x)^2 / (n * sum x^2): 1 when all n values are equal, 1/n when one
 * holds everything. 1 for no values or all zero.
 */
double gs_sim_jain(const double *x, size_t n);

/*
 * Max-min fair division of capacity among n claimants with weights w and demands d (the
 * weighted water-filling: each gets at most its demand, and what one does not need is
 * shared among the others by weight) into out. Claimants with no demand or weight get 0.
 */
void gs_sim_fair_shares(const double *w, const double *d, size_t n, double capacity, double *out);

#endif
