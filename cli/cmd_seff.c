/*
 * cmd_seff.c: `gsched seff JOB` (also `seff JOB` through a link, as Slurm's contrib script):
 * how well a running or ended job used what it was given, from gschedd's telemetry:
 *
 *     Job ID: 42
 *     Cluster: gsched
 *     User/Group: alice/1000
 *     State: COMPLETED (exit code 0)
 *     Nodes: 1
 *     Cores per node: 4
 *     CPU Utilized: 00:03:10
 *     CPU Efficiency: 79.17% of 00:04:00 core-walltime
 *     Job Wall-clock time: 00:01:00
 *     Memory Utilized: 812.00 MB (largest task session on one node)
 *     GPUs: 2 allocated, 1 used
 *     GPU Utilization: 41.00% mean, 97% max over 0.03 GPU-hours
 *     GPU Idle: 50.00% of GPU time under the idle threshold (flagged 1 time)
 *     GPU Memory Peak: 3.00 GB
 *
 * Slurm's lines first, in its words, then the GPU lines. Figures telemetry never sent are
 * said to be unknown rather than printed as zero. --json prints {"job_id", ..., "usage"}.
 */
#include "cli/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "cli/usage_print.h"
#include "common/clock.h"
#include "common/error.h"

static void hms(uint64_t ms, char *out, size_t size)
{
    uint64_t s = ms / 1000;

    if (s >= 86400)
        snprintf(out, size, "%" PRIu64 "-%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 86400,
                 s / 3600 % 24, s / 60 % 60, s % 60);
    else
        snprintf(out, size, "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 3600, s / 60 % 60,
                 s % 60);
}

static void put_cpu(const Gs__JobUsage *u)
{
    char used[32], core_wall[32], wall[32];
    double eff = cli_usage_cpu_eff(u);

    hms(u->wall_ms, wall, sizeof(wall));
    if (eff < 0) {
        printf("CPU Utilized: unknown (no telemetry)\nCPU Efficiency: unknown\n");
    } else {
        hms(u->cpu_time_ms, used, sizeof(used));
        hms(u->wall_ms * u->cpus_alloc, core_wall, sizeof(core_wall));
        printf("CPU Utilized: %s\nCPU Efficiency: %.2f%% of %s core-walltime\n", used, eff,
               core_wall);
    }
    printf("Job Wall-clock time: %s\n", wall);
    if (u->telemetry)
        printf("Memory Utilized: %.2f MB (largest task session on one node)\n",
               (double)u->rss_peak_mib);
    else
        printf("Memory Utilized: unknown\n");
}

static void put_gpu(const Gs__JobUsage *u)
{
    if (u->gpus_alloc == 0)
        return;
    if (u->gpu_alloc_ms == 0) {
        printf("GPUs: %u allocated\nGPU Utilization: unknown (no GPU telemetry)\n", u->gpus_alloc);
        return;
    }
    printf("GPUs: %u allocated, %u used\n", u->gpus_alloc, u->gpus_used);
    printf("GPU Utilization: %.2f%% mean, %u%% max over %.2f GPU-hours\n", u->gpu_util_mean_pct,
           u->gpu_util_max_pct, (double)u->gpu_alloc_ms / 3.6e6);
    printf("GPU Idle: %.2f%% of GPU time under the idle threshold (flagged %u time%s)\n",
           100.0 * (double)u->gpu_idle_ms / (double)u->gpu_alloc_ms, u->idle_flags,
           u->idle_flags == 1 ? "" : "s");
    printf("GPU Memory Peak: %.2f GB\n", (double)u->gpu_mem_peak_mib / 1024.0);
    for (size_t i = 0; i < u->n_idle_gpus; i++)
        printf("GPU Idle Now: %s\n", u->idle_gpus[i]);
}

static void print_text(const Gs__JobInfo *job, const Gs__JobUsage *u)
{
    uint32_t nodes = job->resources != NULL ? job->resources->nodes : 0;

    printf("Job ID: %" PRIu64 "\n", job->job_id);
    printf("User/Group: %s/%u\n", job->user != NULL ? job->user->username : "?",
           job->user != NULL ? job->user->gid : 0);
    if (cli_job_state_final(job->state))
        printf("State: %s (exit code %d)\n", cli_job_state_name(job->state),
               cli_job_exit_status(job->state, job->signaled, job->exit_code, job->term_signal));
    else
        printf("State: %s\n", cli_job_shown_name(job));
    printf("Nodes: %u\n", nodes);
    printf("Cores per node: %u\n", nodes > 0 ? job->ncpus / nodes : job->ncpus);
    put_cpu(u);
    put_gpu(u);
}

static int print_json(const Gs__JobInfo *job)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    gs_json_init(&j, &out);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "job_id", job->job_id);
    gs_json_kv_string(&j, "state", cli_job_state_name(job->state));
    gs_json_kv_bool(&j, "suspended", job->suspended); /* "state" stays the wire's, as --json's */
    gs_json_key(&j, "cpu_efficiency_pct");
    if (job->usage != NULL && cli_usage_cpu_eff(job->usage) >= 0)
        gs_json_double(&j, cli_usage_cpu_eff(job->usage));
    else
        gs_json_null(&j);
    cli_usage_json(&j, job->usage);
    gs_json_object_end(&j);
    rc = cli_json_write(&j, &out, stdout);
    gs_buf_release(&out);
    return rc;
}

int cli_cmd_seff(int argc, char **argv)
{
    Gs__JobUsage none = GS__JOB_USAGE__INIT;
    Gs__Envelope *reply = NULL;
    const Gs__JobInfo *job;
    bool json;
    int rc = cli_show_fetch("seff", argc, argv, &json, &reply);

    if (rc != 0)
        return rc;
    job = reply->show_reply->job;
    if (job == NULL) {
        fprintf(stderr, "gsched seff: gschedd sent no job\n");
        rc = -EPROTO;
    } else if (json) {
        rc = print_json(job);
    } else if (job->start_time_ms == 0) {
        printf("Job ID: %" PRIu64 "\nState: %s\nThe job has not started: nothing to measure.\n",
               job->job_id, cli_job_shown_name(job));
    } else {
        print_text(job, job->usage != NULL ? job->usage : &none);
    }
    gs_proto_envelope_free(reply);
    return rc < 0 ? 1 : 0;
}
