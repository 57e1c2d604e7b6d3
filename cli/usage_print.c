/*
 * usage_print.c: the text and JSON forms of a job's usage (usage_print.h). Percentages of
 * GPU time are of the time telemetry covered, not of the wall time: a job whose node sent
 * no figures for a while is judged on what was seen.
 */
#include "cli/usage_print.h"

#include <stdio.h>

static double hours(uint64_t ms)
{
    return (double)ms / 3.6e6;
}

double cli_usage_cpu_eff(const Gs__JobUsage *u)
{
    double core_ms = (double)u->cpus_alloc * (double)u->wall_ms;

    return u->telemetry && core_ms > 0 ? 100.0 * (double)u->cpu_time_ms / core_ms : -1;
}

static int put_gpus(struct gs_buf *out, const Gs__JobUsage *u)
{
    double idle =
        u->gpu_alloc_ms > 0 ? 100.0 * (double)u->gpu_idle_ms / (double)u->gpu_alloc_ms : 0;

    if (u->gpus_alloc == 0 || u->gpu_alloc_ms == 0)
        return gs_buf_printf(out, " GPUs=%u", u->gpus_alloc);
    return gs_buf_printf(out,
                         " GPUs=%u Used=%u GPUUtil=%.1f%% GPUUtilMax=%u%% GPUIdle=%.0f%% "
                         "GPUHours=%.3f GPUMemPeak=%lluM IdleFlags=%u",
                         u->gpus_alloc, u->gpus_used, u->gpu_util_mean_pct, u->gpu_util_max_pct,
                         idle, hours(u->gpu_alloc_ms), (unsigned long long)u->gpu_mem_peak_mib,
                         u->idle_flags);
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* What staging its dataset moved (JobDataReports), when it has one. */
static int put_data(struct gs_buf *out, const Gs__JobUsage *u)
{
    if (u->data_bytes_local + u->data_bytes_peer + u->data_bytes_source == 0)
        return 0;
    return gs_buf_printf(out, "   Data: Local=%.1fM Peer=%.1fM Source=%.1fM StageWait=%.2fs\n",
                         mib(u->data_bytes_local), mib(u->data_bytes_peer),
                         mib(u->data_bytes_source), (double)u->data_stage_ms / 1000.0);
}

int cli_usage_show(struct gs_buf *out, const Gs__JobUsage *u)
{
    double eff;
    int rc;

    if (u == NULL)
        return 0;
    if (!u->telemetry)
        return put_data(out, u);
    rc = gs_buf_append_str(out, "   Usage:");
    if (rc == 0)
        rc = put_gpus(out, u);
    eff = cli_usage_cpu_eff(u);
    if (rc == 0)
        rc = gs_buf_printf(out, " CPUTime=%.1fs", (double)u->cpu_time_ms / 1000.0);
    if (rc == 0 && eff >= 0)
        rc = gs_buf_printf(out, " CPUEff=%.1f%%", eff);
    if (rc == 0)
        rc = gs_buf_printf(out, " MaxRSS=%lluM\n", (unsigned long long)u->rss_peak_mib);
    if (rc == 0 && u->n_idle_gpus > 0) {
        rc = gs_buf_append_str(out, "   IdleGPUs=");
        for (size_t i = 0; rc == 0 && i < u->n_idle_gpus; i++)
            rc = gs_buf_printf(out, "%s%s", i > 0 ? "," : "", u->idle_gpus[i]);
        if (rc == 0)
            rc = gs_buf_putc(out, '\n');
    }
    return rc < 0 ? rc : put_data(out, u);
}

void cli_usage_json(struct gs_json *j, const Gs__JobUsage *u)
{
    gs_json_key(j, "usage");
    if (u == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_kv_bool(j, "telemetry", u->telemetry);
    gs_json_kv_uint(j, "gpus_alloc", u->gpus_alloc);
    gs_json_kv_uint(j, "gpus_used", u->gpus_used);
    gs_json_kv_uint(j, "gpu_alloc_ms", u->gpu_alloc_ms);
    gs_json_kv_uint(j, "gpu_idle_ms", u->gpu_idle_ms);
    gs_json_key(j, "gpu_util_mean_pct");
    gs_json_double(j, u->gpu_util_mean_pct);
    gs_json_kv_uint(j, "gpu_util_max_pct", u->gpu_util_max_pct);
    gs_json_kv_uint(j, "gpu_mem_peak_mib", u->gpu_mem_peak_mib);
    gs_json_kv_uint(j, "cpus_alloc", u->cpus_alloc);
    gs_json_kv_uint(j, "cpu_time_ms", u->cpu_time_ms);
    gs_json_kv_uint(j, "rss_peak_mib", u->rss_peak_mib);
    gs_json_kv_uint(j, "wall_ms", u->wall_ms);
    gs_json_kv_uint(j, "idle_flags", u->idle_flags);
    gs_json_kv_uint(j, "data_bytes_local", u->data_bytes_local);
    gs_json_kv_uint(j, "data_bytes_peer", u->data_bytes_peer);
    gs_json_kv_uint(j, "data_bytes_source", u->data_bytes_source);
    gs_json_kv_uint(j, "data_stage_ms", u->data_stage_ms);
    gs_json_key(j, "idle_gpus");
    gs_json_array_begin(j);
    for (size_t i = 0; i < u->n_idle_gpus; i++)
        gs_json_string(j, u->idle_gpus[i]);
    gs_json_array_end(j);
    gs_json_object_end(j);
}
