/*
 * nvml_probe.c: the worker's GPU sampling (worker/nvml.c) against whatever NVML this machine
 * has, for bench/gpu_check.sh: run it beside a training job and it says whether the figures
 * gsched's heartbeats would carry are real there (utilisation, memory, power, the job's
 * process seen on its GPU). Until a GPU was lent, that code had only met the scripted
 * stand-in of tests/common/fake_nvml.c.
 *
 *     nvml_probe NGPUS SECONDS [PID]
 *
 * Samples GPUs 0..NGPUS-1 by index every 200 ms for SECONDS and prints one line per GPU:
 *     gpu=0 found=1 samples=50 util_max=97 mem_used_max_mib=31000 mem_total_mib=143771
 *     power_max_w=690 temp_max_c=61 sm_clock_max_mhz=1980 procs_max=1 pid_seen=1
 * (pid_seen: PID was among the GPU's compute processes in some sample; -1 without PID).
 * Exits 0, 2 when NVML cannot be loaded (no driver), 1 on bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "worker/nvml.h"

struct peak {
    int samples, util, procs, temp, pid_seen;
    uint64_t mem_used, mem_total;
    uint32_t power, clock;
    bool found;
};

static void take(struct peak *p, const struct wrk_nvml_sample *s, long pid)
{
    p->samples++;
    p->found = p->found || s->found;
    p->util = s->util_pct > p->util ? s->util_pct : p->util;
    p->procs = s->nprocs > p->procs ? s->nprocs : p->procs;
    p->temp = s->temperature_c > p->temp ? s->temperature_c : p->temp;
    p->mem_used = s->mem_used_mib > p->mem_used ? s->mem_used_mib : p->mem_used;
    p->mem_total = s->mem_total_mib;
    p->power = s->power_w > p->power ? s->power_w : p->power;
    p->clock = s->sm_clock_mhz > p->clock ? s->sm_clock_mhz : p->clock;
    for (int i = 0; pid > 0 && i < s->nprocs && i < WRK_NVML_MAX_PROCS; i++)
        p->pid_seen |= s->procs[i].pid == (uint32_t)pid;
}

int main(int argc, char **argv)
{
    int ngpus = argc > 2 ? atoi(argv[1]) : 0, seconds = argc > 2 ? atoi(argv[2]) : 0;
    long pid = argc > 3 ? atol(argv[3]) : 0;
    struct wrk_nvml_sample *s;
    struct wrk_nvml *nvml = NULL;
    struct peak *peak;
    uint64_t until;
    int rc;

    if (ngpus < 1 || ngpus > 64 || seconds < 1) {
        fprintf(stderr, "usage: nvml_probe NGPUS SECONDS [PID]\n");
        return 1;
    }
    rc = wrk_nvml_open(NULL, NULL, ngpus, &nvml);
    if (rc < 0) {
        fprintf(stderr, "nvml_probe: NVML cannot be loaded or initialised (no driver?)\n");
        return 2;
    }
    s = calloc((size_t)ngpus, sizeof(*s));
    peak = calloc((size_t)ngpus, sizeof(*peak));
    if (s == NULL || peak == NULL) {
        fprintf(stderr, "nvml_probe: out of memory\n");
        return 1;
    }
    for (int g = 0; g < ngpus; g++)
        peak[g] = (struct peak){.util = -1, .procs = -1, .temp = -1, .pid_seen = pid > 0 ? 0 : -1};
    until = gs_clock_mono_ms() + (uint64_t)seconds * 1000;
    while (gs_clock_mono_ms() < until) {
        wrk_nvml_sample(nvml, s);
        for (int g = 0; g < ngpus; g++)
            take(&peak[g], &s[g], pid);
        nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    }
    for (int g = 0; g < ngpus; g++)
        printf("gpu=%d found=%d samples=%d util_max=%d mem_used_max_mib=%llu mem_total_mib=%llu "
               "power_max_w=%u temp_max_c=%d sm_clock_max_mhz=%u procs_max=%d pid_seen=%d\n",
               g, peak[g].found, peak[g].samples, peak[g].util,
               (unsigned long long)peak[g].mem_used, (unsigned long long)peak[g].mem_total,
               peak[g].power, peak[g].temp, peak[g].clock, peak[g].procs, peak[g].pid_seen);
    wrk_nvml_close(nvml);
    free(s);
    free(peak);
    return 0;
}
