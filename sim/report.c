/*
 * report.c: gsched-simulate's output (see report.h): the text table, JSON through
 * common/json.h, and a hand-written SVG (two panels sharing the time axis: GPU allocation
 * and queue length, one polyline per policy).
 */
#include "sim/report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/units.h"
#include "sim/model.h"

#define SVG_W 960
#define SVG_PANEL_H 240
#define SVG_LEFT 70
#define SVG_RIGHT 20
#define SVG_TOP 50
#define SVG_GAP 60
#define SVG_BUCKETS 400

#define SVG_LEGEND_COLS 5
#define SVG_LEGEND_W 175
#define SVG_LEGEND_ROW 20

static const char *const colors[] = {"#7f7f7f", "#1f77b4", "#d62728", "#bcbd22", "#17becf",
                                     "#9467bd", "#ff7f0e", "#2ca02c", "#e377c2", "#8c564b"};

/* A duration the way a person reads it: 213s, 8.1h, 3.2d. */
static const char *human(double s, char *out, size_t size)
{
    if (s < 1000)
        snprintf(out, size, "%.0fs", s);
    else if (s < 100 * 3600.0)
        snprintf(out, size, "%.1fh", s / 3600);
    else
        snprintf(out, size, "%.1fd", s / 86400);
    return out;
}

static bool any_preempt(const struct gs_sim_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (res[i].preempt)
            return true;
    }
    return false;
}

/* The urgent jobs' waits under every policy, and how preemption was modelled. */
static void text_preemption(struct gs_buf *out, const struct gs_sim_about *a,
                            const struct gs_sim_result *res, size_t n)
{
    char b[2][32];

    gs_buf_printf(out, "urgent jobs (%.1f%% marked; QOS urgent, tier 1, under -preempt), avg wait:",
                  100 * a->urgent_share);
    for (size_t i = 0; i < n; i++)
        gs_buf_printf(out, " %s=%s", res[i].policy, human(res[i].urgent_avg_wait_s, b[0], 32));
    gs_buf_printf(out, "\n");
    if (!any_preempt(res, n))
        return;
    gs_buf_printf(out,
                  "preemption: checkpoints every %s of a run (lost: GPU-hours since the last), "
                  "kill grace %s; preempted jobs:",
                  a->model.checkpoint_ms > 0 ? human(a->model.checkpoint_ms / 1000.0, b[0], 32)
                                             : "never",
                  human(a->model.kill_grace_ms / 1000.0, b[1], 32));
    for (size_t i = 0; i < n; i++) {
        if (res[i].preempt)
            gs_buf_printf(out, " %s=%zu", res[i].policy, res[i].preempted_jobs);
    }
    gs_buf_printf(out, "\n");
}

/* The data model, and what each policy copied. */
static void text_data(struct gs_buf *out, const struct gs_sim_about *a,
                      const struct gs_sim_result *res, size_t n)
{
    char b[4][32];

    if (a->data.datasets == 0)
        return;
    gs_buf_printf(out,
                  "data: %u datasets of %s (by account), caches of %s per node, copies at %s/s "
                  "per node, data wait %s; copied, mean copy per start:",
                  a->data.datasets, gs_format_size(a->data.dataset_bytes, b[0], 32),
                  gs_format_size(a->data.cache_bytes, b[1], 32),
                  gs_format_size(a->data.copy_rate, b[2], 32),
                  human((double)a->data.wait_s, b[3], 32));
    for (size_t i = 0; i < n; i++)
        gs_buf_printf(out, " %s=%s,%s", res[i].policy,
                      gs_format_size(res[i].copied_bytes, b[0], 32),
                      human(res[i].avg_copy_s, b[1], 32));
    gs_buf_printf(out, "\n");
}

int gs_sim_report_text(struct gs_buf *out, const struct gs_sim_about *a,
                       const struct gs_sim_result *res, size_t n)
{
    char b[6][32];

    gs_buf_printf(out,
                  "trace %s:%s on %s: %zu nodes, %llu GPUs; %zu jobs (%zu trace lines "
                  "skipped), %zu accounts, load x%.2f\n",
                  a->format, a->trace_file, a->cluster_file, a->nodes, (unsigned long long)a->gpus,
                  a->jobs, a->skipped, a->accounts, a->load);
    gs_buf_printf(out, "%-24s %6s %6s %8s %8s %8s %8s %8s %7s %6s %8s %6s %7s %8s %7s %9s\n",
                  "policy", "jobs", "done", "avg_jct", "p99_jct", "avg_wait", "p99_wait",
                  "makespan", "alloc_q", "util", "stranded", "jain", "stretch", "jct/fifo",
                  "preempt", "gpuh_lost");
    for (size_t i = 0; i < n; i++) {
        const struct gs_sim_result *r = &res[i];

        gs_buf_printf(out, "%-24s %6zu %6zu %8s %8s %8s %8s %8s %6.1f%% %5.1f%% %8.1f %6.3f %7.3f ",
                      r->policy, r->jobs, r->finished, human(r->avg_jct_s, b[0], 32),
                      human(r->p99_jct_s, b[1], 32), human(r->avg_wait_s, b[2], 32),
                      human(r->p99_wait_s, b[3], 32), human(r->makespan_s, b[4], 32),
                      100 * r->alloc_queued, 100 * r->util, r->stranded_gpus, r->jain,
                      r->avg_stretch);
        if (r->jct_vs_baseline > 0)
            gs_buf_printf(out, "%8.3f", r->jct_vs_baseline);
        else
            gs_buf_printf(out, "%8s", "-");
        gs_buf_printf(out, " %7zu %9.2f\n", r->preemptions, r->gpu_hours_lost);
    }
    gs_buf_printf(out, "impossible (never fit this cluster):");
    for (size_t i = 0; i < n; i++)
        gs_buf_printf(out, " %s=%zu", res[i].policy, res[i].impossible);
    gs_buf_printf(out, "\n");
    text_preemption(out, a, res, n);
    text_data(out, a, res, n);
    return gs_buf_printf(out, "alloc_q: allocated GPUs / all while a job waits; stranded: "
                              "mean free GPUs while a job waits; preempt: victims requeued, "
                              "gpuh_lost: their work since the last checkpoint; "
                              "docs/simulator.md\n");
}

static void json_num(struct gs_json *j, const char *key, double v)
{
    gs_json_key(j, key);
    gs_json_double(j, v);
}

static void json_result(struct gs_json *j, const struct gs_sim_result *r)
{
    gs_json_object_begin(j);
    gs_json_kv_string(j, "policy", r->policy);
    gs_json_kv_uint(j, "jobs", r->jobs);
    gs_json_kv_uint(j, "finished", r->finished);
    gs_json_kv_uint(j, "impossible", r->impossible);
    gs_json_kv_uint(j, "timeouts", r->timeouts);
    gs_json_kv_uint(j, "passes", r->passes);
    json_num(j, "avg_jct_s", r->avg_jct_s);
    json_num(j, "p99_jct_s", r->p99_jct_s);
    json_num(j, "avg_wait_s", r->avg_wait_s);
    json_num(j, "p99_wait_s", r->p99_wait_s);
    json_num(j, "makespan_s", r->makespan_s);
    json_num(j, "alloc_while_queued", r->alloc_queued);
    json_num(j, "util", r->util);
    json_num(j, "stranded_gpus", r->stranded_gpus);
    json_num(j, "queued_share", r->queued_share);
    json_num(j, "jain", r->jain);
    json_num(j, "avg_stretch", r->avg_stretch);
    gs_json_key(j, "jct_vs_fifo");
    if (r->jct_vs_baseline > 0)
        gs_json_double(j, r->jct_vs_baseline);
    else
        gs_json_null(j);
    gs_json_kv_string(j, "preemption", r->preempt ? "on" : "off");
    gs_json_kv_uint(j, "preemptions", r->preemptions);
    gs_json_kv_uint(j, "preempted_jobs", r->preempted_jobs);
    json_num(j, "gpu_hours_lost", r->gpu_hours_lost);
    gs_json_kv_uint(j, "urgent_jobs", r->urgent);
    json_num(j, "urgent_avg_wait_s", r->urgent_avg_wait_s);
    json_num(j, "urgent_avg_jct_s", r->urgent_avg_jct_s);
    gs_json_kv_uint(j, "copied_bytes", r->copied_bytes);
    gs_json_kv_uint(j, "copies", r->copies);
    json_num(j, "avg_copy_s", r->avg_copy_s);
    gs_json_object_end(j);
}

int gs_sim_report_json(struct gs_buf *out, const struct gs_sim_about *a,
                       const struct gs_sim_result *res, size_t n)
{
    struct gs_json j;
    int rc;

    gs_json_init(&j, out);
    gs_json_object_begin(&j);
    gs_json_kv_string(&j, "format", a->format);
    gs_json_kv_string(&j, "trace", a->trace_file);
    gs_json_kv_string(&j, "cluster", a->cluster_file);
    gs_json_kv_uint(&j, "nodes", a->nodes);
    gs_json_kv_uint(&j, "gpus", a->gpus);
    gs_json_kv_uint(&j, "trace_jobs", a->jobs);
    gs_json_kv_uint(&j, "skipped_lines", a->skipped);
    gs_json_kv_uint(&j, "accounts", a->accounts);
    json_num(&j, "load", a->load);
    gs_json_kv_uint(&j, "seed", a->seed);
    json_num(&j, "limit_factor", GS_SIM_LIMIT_FACTOR);
    json_num(&j, "urgent_share", a->urgent_share);
    json_num(&j, "checkpoint_interval_s", (double)a->model.checkpoint_ms / 1000.0);
    json_num(&j, "kill_grace_s", (double)a->model.kill_grace_ms / 1000.0);
    gs_json_kv_uint(&j, "datasets", a->data.datasets);
    gs_json_kv_uint(&j, "dataset_bytes", a->data.datasets > 0 ? a->data.dataset_bytes : 0);
    gs_json_kv_uint(&j, "cache_bytes", a->data.datasets > 0 ? a->data.cache_bytes : 0);
    gs_json_kv_uint(&j, "copy_rate", a->data.datasets > 0 ? a->data.copy_rate : 0);
    gs_json_kv_uint(&j, "data_wait_s", a->data.datasets > 0 ? a->data.wait_s : 0);
    gs_json_key(&j, "policies");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < n; i++)
        json_result(&j, &res[i]);
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    return rc < 0 ? rc : gs_buf_putc(out, '\n');
}

void gs_sim_series_buckets(const struct gs_sim_result *r, uint64_t span_ms, size_t nb,
                           double *alloc, double *pending)
{
    double w = nb > 0 ? (double)span_ms / (double)nb : 0;

    memset(alloc, 0, nb * sizeof(*alloc));
    memset(pending, 0, nb * sizeof(*pending));
    if (w <= 0)
        return;
    for (size_t i = 0; i < r->nseries; i++) {
        const struct gs_sim_point *p = &r->series[i];
        double t0 = (double)p->t_ms;
        double t1 = i + 1 < r->nseries ? (double)r->series[i + 1].t_ms : (double)span_ms;

        t1 = t1 < (double)span_ms ? t1 : (double)span_ms;
        for (size_t b = (size_t)(t0 / w); b < nb && (double)b * w < t1; b++) {
            double lo = fmax(t0, (double)b * w), hi = fmin(t1, (double)(b + 1) * w);

            if (hi <= lo)
                continue;
            alloc[b] += (hi - lo) * p->alloc_gpus / w;
            pending[b] += (hi - lo) * p->pending / w;
        }
    }
}

/* One panel's frame, title and y ticks; y runs 0..ymax. */
static void svg_panel(struct gs_buf *out, int top, const char *title, double ymax, bool percent)
{
    int w = SVG_W - SVG_LEFT - SVG_RIGHT;

    gs_buf_printf(out, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", SVG_LEFT,
                  top - 8, title);
    gs_buf_printf(out,
                  "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                  "stroke=\"#444\"/>\n",
                  SVG_LEFT, top, w, SVG_PANEL_H);
    for (int k = 0; k <= 4; k++) {
        double y = top + SVG_PANEL_H - SVG_PANEL_H * k / 4.0, v = ymax * k / 4.0;

        gs_buf_printf(out,
                      "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                      "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
                      SVG_LEFT, y, SVG_LEFT + w, y, SVG_LEFT - 6, y + 4);
        if (percent)
            gs_buf_printf(out, "%.0f%%</text>\n", 100 * v);
        else
            gs_buf_printf(out, "%.0f</text>\n", v);
    }
}

static void svg_time_axis(struct gs_buf *out, int y, uint64_t span_ms)
{
    int w = SVG_W - SVG_LEFT - SVG_RIGHT;
    double span_h = (double)span_ms / 3.6e6;
    bool days = span_h > 72;

    for (int k = 0; k <= 5; k++) {
        double x = SVG_LEFT + w * k / 5.0, v = span_h * k / 5.0;

        gs_buf_printf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.1f%s</text>\n", x, y,
                      days ? v / 24 : v, days ? "d" : "h");
    }
}

static void svg_line(struct gs_buf *out, const double *v, size_t nb, int top, double ymax,
                     const char *color)
{
    int w = SVG_W - SVG_LEFT - SVG_RIGHT;

    gs_buf_printf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"",
                  color);
    for (size_t b = 0; b < nb; b++) {
        double x = SVG_LEFT + w * (b + 0.5) / (double)nb;
        double y = top + SVG_PANEL_H - SVG_PANEL_H * (ymax > 0 ? fmin(v[b] / ymax, 1) : 0);

        gs_buf_printf(out, "%.1f,%.1f ", x, y);
    }
    gs_buf_printf(out, "\"/>\n");
}

/*
 * Every result's series in SVG_BUCKETS buckets of [0, span) into alloc (as a share of the
 * GPUs) and pend; returns the queue axis' top (a multiple of 4).
 */
static double svg_buckets(const struct gs_sim_about *a, const struct gs_sim_result *res, size_t n,
                          uint64_t span, double *alloc, double *pend)
{
    double qmax = 1;

    for (size_t i = 0; i < n; i++) {
        gs_sim_series_buckets(&res[i], span, SVG_BUCKETS, alloc + i * SVG_BUCKETS,
                              pend + i * SVG_BUCKETS);
        for (size_t b = 0; b < SVG_BUCKETS; b++) {
            alloc[i * SVG_BUCKETS + b] /= a->gpus > 0 ? (double)a->gpus : 1;
            qmax = fmax(qmax, pend[i * SVG_BUCKETS + b]);
        }
    }
    return ceil(qmax / 4) * 4;
}

static void svg_header(struct gs_buf *out, const struct gs_sim_about *a, int h)
{
    gs_buf_printf(out,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                  "<text x=\"%d\" y=\"20\" font-size=\"14\">gsched-simulate: %s, %zu nodes, "
                  "%llu GPUs, %zu jobs, load x%.2f</text>\n",
                  SVG_W, h, SVG_W, h, SVG_LEFT, a->format, a->nodes, (unsigned long long)a->gpus,
                  a->jobs, a->load);
}

int gs_sim_report_svg(struct gs_buf *out, const struct gs_sim_about *a,
                      const struct gs_sim_result *res, size_t n)
{
    double *alloc = calloc(n * SVG_BUCKETS + 1, sizeof(double));
    double *pend = calloc(n * SVG_BUCKETS + 1, sizeof(double));
    int rows = n > 0 ? (int)((n + SVG_LEGEND_COLS - 1) / SVG_LEGEND_COLS) : 1;
    int top2 = SVG_TOP + SVG_PANEL_H + SVG_GAP;
    int h = top2 + SVG_PANEL_H + 70 + (rows - 1) * SVG_LEGEND_ROW, rc = -ENOMEM;
    uint64_t span = 1;
    double qmax;

    if (alloc == NULL || pend == NULL)
        goto out;
    for (size_t i = 0; i < n; i++)
        span = (uint64_t)(res[i].makespan_s * 1000) > span ? (uint64_t)(res[i].makespan_s * 1000)
                                                           : span;
    qmax = svg_buckets(a, res, n, span, alloc, pend);
    svg_header(out, a, h);
    svg_panel(out, SVG_TOP, "GPUs allocated (share of all)", 1, true);
    svg_panel(out, top2, "jobs waiting", qmax, false);
    svg_time_axis(out, SVG_TOP + SVG_PANEL_H + 16, span);
    svg_time_axis(out, top2 + SVG_PANEL_H + 16, span);
    for (size_t i = 0; i < n; i++) {
        const char *color = colors[i % (sizeof(colors) / sizeof(colors[0]))];
        size_t x = SVG_LEFT + (i % SVG_LEGEND_COLS) * SVG_LEGEND_W;
        int y = h - 28 - (rows - 1 - (int)(i / SVG_LEGEND_COLS)) * SVG_LEGEND_ROW;

        svg_line(out, alloc + i * SVG_BUCKETS, SVG_BUCKETS, SVG_TOP, 1, color);
        svg_line(out, pend + i * SVG_BUCKETS, SVG_BUCKETS, top2, qmax, color);
        gs_buf_printf(out,
                      "<rect x=\"%zu\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                      "<text x=\"%zu\" y=\"%d\">%s</text>\n",
                      x, y, color, x + 16, y + 10, res[i].policy);
    }
    rc = gs_buf_printf(out, "</svg>\n");
out:
    free(alloc);
    free(pend);
    return rc;
}
