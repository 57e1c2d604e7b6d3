/*
 * metrics.c: mean, percentile and Jain's index for gsched-simulate's report (see
 * metrics.h).
 */
#include "sim/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/sort.h"

double gs_sim_mean(const double *v, size_t n)
{
    double sum = 0;

    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return n > 0 ? sum / (double)n : 0;
}

static int by_value(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;

    return a < b ? -1 : a > b;
}

double gs_sim_percentile(double *v, size_t n, double p)
{
    size_t rank;

    if (n == 0)
        return 0;
    gs_sort(v, n, sizeof(*v), by_value);
    rank = (size_t)ceil(p * (double)n / 100.0 - 1e-9); /* 99 % of 100 is 99, not 100 */
    rank = rank < 1 ? 1 : rank > n ? n : rank;
    return v[rank - 1];
}

double gs_sim_jain(const double *x, size_t n)
{
    double sum = 0, sq = 0;

    for (size_t i = 0; i < n; i++) {
        sum += x[i];
        sq += x[i] * x[i];
    }
    return n > 0 && sq > 0 ? sum * sum / ((double)n * sq) : 1;
}

void gs_sim_fair_shares(const double *w, const double *d, size_t n, double capacity, double *out)
{
    bool changed = true;
    double left = capacity, level = 0;

    for (size_t i = 0; i < n; i++)
        out[i] = -1; /* not settled */
    for (size_t i = 0; i < n; i++) {
        if (w[i] <= 0 || d[i] <= 0)
            out[i] = 0;
    }
    while (changed) {
        double weights = 0;

        changed = false;
        for (size_t i = 0; i < n; i++)
            weights += out[i] < 0 ? w[i] : 0;
        if (weights <= 0)
            break;
        level = left / weights;
        for (size_t i = 0; i < n; i++) {
            if (out[i] < 0 && d[i] <= level * w[i]) {
                out[i] = d[i]; /* satisfied: the rest goes to the others */
                left -= d[i];
                changed = true;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (out[i] < 0)
            out[i] = level * w[i];
    }
}
