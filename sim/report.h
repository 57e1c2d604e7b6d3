/*
 * report.h: what gsched-simulate prints: a text table of the policies side by side, the
 * same as JSON (--json), and an SVG of GPU allocation and queue length over time per policy
 * (--svg). Pure formatting into a gs_buf; main.c writes it out.
 */
#ifndef GS_SIM_REPORT_H
#define GS_SIM_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "sim/run.h"

/* What was replayed, for the headers. */
struct gs_sim_about {
    const char *format, *trace_file, *cluster_file;
    size_t nodes;
    uint64_t gpus;
    size_t jobs, skipped, accounts;
    double load;
    uint64_t seed;
    double urgent_share;               /* of the jobs, marked urgent (-preempt: tier 1) */
    struct gs_sim_preempt_model model; /* checkpoints and kill grace of the -preempt policies */
    struct gs_sim_data_model data;     /* datasets 0: jobs read no data */
};

int gs_sim_report_text(struct gs_buf *out, const struct gs_sim_about *about,
                       const struct gs_sim_result *results, size_t n);
int gs_sim_report_json(struct gs_buf *out, const struct gs_sim_about *about,
                       const struct gs_sim_result *results, size_t n);
int gs_sim_report_svg(struct gs_buf *out, const struct gs_sim_about *about,
                      const struct gs_sim_result *results, size_t n);

/*
 * Time-weighted means of results' allocated GPUs and pending jobs over nb equal buckets of
 * [0, span_ms) (arrays of nb entries): what the SVG draws.
 */
void gs_sim_series_buckets(const struct gs_sim_result *r, uint64_t span_ms, size_t nb,
                           double *alloc, double *pending);

#endif
