/*
 * trace_philly.c: the Philly-derived traces Gavel ships (stanford-futuredata/gavel,
 * scheduler/traces/msr): one job a line, tab-separated, job_type, command, num_steps_arg,
 * needs_data_dir, total_steps, arrival_time (s), scale_factor (GPUs).
 *
 * The trace gives steps, not seconds: Gavel made total_steps from a run time drawn from
 * Philly times a measured V100 throughput. We turn them back into seconds with the step
 * time model below (one V100, a fixed per-step overhead plus the batch at the model's
 * sample rate), and for k > 1 GPUs divide by k x 0.9 (data parallel at 90 % efficiency on a
 * well-connected placement; total_steps counts every GPU's mini-batches). The rates are
 * round figures of public V100 fp32 training benchmarks, a model and not Gavel's
 * measurements: absolute times are approximate, their ratios within a model family hold.
 * Account: the model family (the trace has no users).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/readers.h"

#define STEP_OVERHEAD_S 0.010
#define SCALE_EFFICIENCY 0.9

struct model_rate {
    const char *family;
    double samples_per_s; /* 0: fixed step time */
    double step_s;        /* when samples_per_s is 0 */
};

static const struct model_rate rates[] = {
    {"ResNet-18", 4000, 0},        /* CIFAR-10 images */
    {"ResNet-50", 380, 0},         /* ImageNet images */
    {"Transformer", 3000, 0},      /* Multi30k sentence pairs */
    {"LM", 1500, 0},               /* WikiText-2 sequences of 35 tokens */
    {"Recommendation", 400000, 0}, /* ML-20M users through the autoencoder */
    {"A3C", 0, 0.025},             /* Pong, one update */
    {"CycleGAN", 0, 0.2},          /* monet2photo, one image pair */
};

/* Copies job_type's family (before " (") into out. */
static void family_of(const char *job_type, char *out, size_t size)
{
    const char *paren = strstr(job_type, " (");
    size_t len = paren != NULL ? (size_t)(paren - job_type) : strlen(job_type);

    snprintf(out, size, "%.*s", (int)len, job_type);
}

double gs_sim_philly_seconds(const char *job_type, double total_steps, uint32_t scale_factor)
{
    const char *bs = strstr(job_type, "batch size ");
    double batch = bs != NULL ? atof(bs + strlen("batch size ")) : 0, step_s = -1;
    double k = scale_factor > 1 ? scale_factor * SCALE_EFFICIENCY : 1;
    char family[64];

    family_of(job_type, family, sizeof(family));
    for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
        if (strcmp(family, rates[i].family) != 0)
            continue;
        if (rates[i].samples_per_s > 0 && batch > 0)
            step_s = STEP_OVERHEAD_S + batch / rates[i].samples_per_s;
        else if (rates[i].samples_per_s == 0)
            step_s = rates[i].step_s;
    }
    return step_s < 0 ? -1 : total_steps * step_s / k;
}

static int job_line(void *data, struct gs_sim_lines *at, char **f, int n)
{
    struct gs_sim_trace *t = data;
    struct gs_sim_job j = {.line = at->line};
    double steps, arrival, seconds;
    uint64_t scale;
    char family[64];
    int rc, account;

    if (n < 7)
        return gs_sim_lines_error(at, -EINVAL,
                                  "%d tab-separated fields, 7 expected (job_type,"
                                  "command,num_steps_arg,needs_data_dir,total_steps,"
                                  "arrival_time,scale_factor)",
                                  n);
    if ((rc = gs_sim_field_double(at, f[4], "total_steps", &steps)) < 0 ||
        (rc = gs_sim_field_double(at, f[5], "arrival_time", &arrival)) < 0 ||
        (rc = gs_sim_field_u64(at, f[6], "scale_factor", &scale)) < 0)
        return rc;
    if (scale == 0 || scale > 4096)
        return gs_sim_lines_error(at, -EINVAL, "scale_factor: %llu GPUs is impossible",
                                  (unsigned long long)scale);
    seconds = gs_sim_philly_seconds(f[0], steps, (uint32_t)scale);
    if (seconds < 0)
        return gs_sim_lines_error(at, -EINVAL,
                                  "job_type: '%s' is not in the step-time table "
                                  "(sim/trace_philly.c)",
                                  f[0]);
    family_of(f[0], family, sizeof(family));
    if ((account = gs_sim_trace_account(t, family)) < 0)
        return account;
    j.gpus = (uint32_t)scale;
    j.cores = j.gpus;
    j.submit_ms = (uint64_t)(arrival * 1000 + 0.5);
    j.duration_ms = seconds >= 1 ? (uint64_t)(seconds * 1000 + 0.5) : 1000;
    j.account = (uint32_t)account;
    j.key = gs_sim_hash((const char *)&j.line, sizeof(j.line));
    return gs_sim_trace_add_job(t, &j);
}

int gs_sim_read_philly(struct gs_sim_trace *t, const char *path, struct gs_buf *err)
{
    return gs_sim_read_lines(path, '\t', 0, 8, job_line, t, err);
}
