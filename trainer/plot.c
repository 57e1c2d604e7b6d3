/*
 * plot.c: SVG line charts (see plot.h). Ticks are "nice" numbers (1, 2 or 5 times a power of
 * ten) so that a glance at the axis reads; a series of thousands of points becomes one
 * polyline, which browsers draw quickly.
 */
#include "trainer/plot.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/buf.h"
#include "trainer/tensorfile.h"

#define W 800
#define H 450
#define LEFT 70
#define RIGHT 20
#define TOP 30
#define BOTTOM 50

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

int trn_series_add(struct trn_series *s, double x, double y)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        double *nx = realloc(s->x, cap * sizeof(*nx)), *ny;

        if (nx == NULL)
            return -ENOMEM;
        s->x = nx;
        ny = realloc(s->y, cap * sizeof(*ny));
        if (ny == NULL)
            return -ENOMEM;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
    return 0;
}

void trn_series_release(struct trn_series *s)
{
    free(s->x);
    free(s->y);
    s->x = s->y = NULL;
    s->n = s->cap = 0;
}

/* A round step giving about `want` ticks over span. */
static double nice_step(double span, int want)
{
    double raw = span / want, mag = pow(10, floor(log10(raw))), f = raw / mag;

    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

struct axes {
    double x0, x1, y0, y1;
};

static bool ranges(const struct trn_series *const *series, size_t n, struct axes *a)
{
    bool any = false;

    *a = (struct axes){INFINITY, -INFINITY, INFINITY, -INFINITY};
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < series[k]->n; i++) {
            double x = series[k]->x[i], y = series[k]->y[i];

            if (!isfinite(x) || !isfinite(y))
                continue;
            any = true;
            a->x0 = fmin(a->x0, x);
            a->x1 = fmax(a->x1, x);
            a->y0 = fmin(a->y0, y);
            a->y1 = fmax(a->y1, y);
        }
    }
    if (!any)
        *a = (struct axes){0, 1, 0, 1};
    if (a->x1 - a->x0 <= 0)
        a->x1 = a->x0 + 1;
    if (a->y1 - a->y0 <= 0)
        a->y1 = a->y0 + 1;
    return any;
}

static double px(const struct axes *a, double x)
{
    return LEFT + (x - a->x0) / (a->x1 - a->x0) * (W - LEFT - RIGHT);
}

static double py(const struct axes *a, double y)
{
    return H - BOTTOM - (y - a->y0) / (a->y1 - a->y0) * (H - TOP - BOTTOM);
}

static int axes_svg(struct gs_buf *b, const struct axes *a, const char *ylabel)
{
    double xs = nice_step(a->x1 - a->x0, 8), ys = nice_step(a->y1 - a->y0, 6);
    int rc = gs_buf_printf(b,
                           "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                           "stroke=\"#888\"/>\n",
                           LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM);

    for (double x = ceil(a->x0 / xs) * xs; rc == 0 && x <= a->x1 + xs * 1e-9; x += xs)
        rc = gs_buf_printf(b,
                           "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                           "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                           px(a, x), TOP, px(a, x), H - BOTTOM, px(a, x), H - BOTTOM + 18, x);
    for (double y = ceil(a->y0 / ys) * ys; rc == 0 && y <= a->y1 + ys * 1e-9; y += ys)
        rc = gs_buf_printf(b,
                           "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                           "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                           LEFT, py(a, y), W - RIGHT, py(a, y), LEFT - 6, py(a, y) + 4, y);
    if (rc == 0)
        rc = gs_buf_printf(b,
                           "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n"
                           "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" "
                           "transform=\"rotate(-90 16 %d)\">%s</text>\n",
                           (W + LEFT) / 2, H - 12, (H - BOTTOM + TOP) / 2, (H - BOTTOM + TOP) / 2,
                           ylabel);
    return rc;
}

static int series_svg(struct gs_buf *b, const struct axes *a, const struct trn_series *s,
                      const char *name, size_t k)
{
    const char *color = colors[k % (sizeof(colors) / sizeof(colors[0]))];
    int rc = gs_buf_printf(
        b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);

    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        if (isfinite(s->x[i]) && isfinite(s->y[i]))
            rc = gs_buf_printf(b, "%.1f,%.1f ", px(a, s->x[i]), py(a, s->y[i]));
    }
    if (rc == 0)
        rc = gs_buf_printf(b,
                           "\"/>\n<line x1=\"%d\" y1=\"%zu\" x2=\"%d\" y2=\"%zu\" stroke=\"%s\" "
                           "stroke-width=\"3\"/><text x=\"%d\" y=\"%zu\">%s</text>\n",
                           W - RIGHT - 110, TOP + 18 + 18 * k, W - RIGHT - 85, TOP + 18 + 18 * k,
                           color, W - RIGHT - 78, TOP + 22 + 18 * k, name);
    return rc;
}

int trn_plot_svg(const char *path, const char *ylabel, const struct trn_series *const *series,
                 const char *const *names, size_t n)
{
    struct gs_buf b = GS_BUF_INIT;
    struct axes a;
    int rc;

    ranges(series, n, &a);
    rc = gs_buf_printf(&b,
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                       "font-family=\"sans-serif\" font-size=\"12\">\n"
                       "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                       W, H);
    if (rc == 0)
        rc = axes_svg(&b, &a, ylabel);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        if (series[k]->n > 0)
            rc = series_svg(&b, &a, series[k], names[k], k);
    }
    if (rc == 0)
        rc = gs_buf_append_str(&b, "</svg>\n");
    if (rc == 0)
        rc = trn_write_file_durably(path, b.data, b.len);
    gs_buf_release(&b);
    return rc;
}
