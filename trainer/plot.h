/*
 * plot.h: line charts as standalone SVG files (the run's loss.svg), without a plotting
 * library: series of (x, y) points, axes with round tick values, a legend. Non-finite points
 * (a diverged loss) are left out of the lines and the axis ranges.
 */
#ifndef TRN_PLOT_H
#define TRN_PLOT_H

#include <stddef.h>

struct trn_series {
    double *x, *y;
    size_t n, cap;
};

/* Appends a point; 0 or -ENOMEM. A zeroed struct is an empty series. */
int trn_series_add(struct trn_series *s, double x, double y);
void trn_series_release(struct trn_series *s);

/* Writes the chart of n series (names for the legend) to path, durably. 0 or -errno. */
int trn_plot_svg(const char *path, const char *ylabel, const struct trn_series *const *series,
                 const char *const *names, size_t n);

#endif
