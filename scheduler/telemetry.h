/*
 * telemetry.h: gschedd's recent picture of every GPU, from the workers' heartbeats (each a
 * summary of the samples its worker took since the previous one, worker/telemetry.h): the
 * latest figures, a ring of the last SCHED_TEL_FINE summaries and one of SCHED_TEL_COARSE
 * one-minute buckets (the last hour), and the idle state of an allocated GPU.
 *
 * Idle: an allocated GPU whose busiest sample of a heartbeat stayed under the threshold
 * starts (or continues) a run under it; when the run has lasted the window the GPU is
 * flagged, and the flag clears with the first heartbeat over the threshold or when the GPU
 * changes hands. A GPU nobody holds is never flagged.
 *
 * Memory is fixed per GPU (about 3 KiB), allocated when a node first reports: bounded for
 * any run time. Pure bookkeeping: no I/O, no clock (callers pass the time). Loop thread only.
 */
#ifndef SCHED_TELEMETRY_H
#define SCHED_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_TEL_FINE 64   /* heartbeat summaries kept per GPU (about 2 min at 2 s) */
#define SCHED_TEL_COARSE 60 /* one-minute buckets kept per GPU: the last hour */
#define SCHED_TEL_PROCS 8   /* processes kept per GPU */

/* One heartbeat's summary of one GPU, as the rings keep it. */
struct sched_tel_sample {
    uint64_t at_ms;        /* wall clock gschedd received it */
    uint32_t mem_used_mib; /* latest */
    uint32_t mem_used_max_mib;
    uint16_t power_w;      /* 0 unknown */
    int16_t temperature_c; /* -1 unknown */
    uint8_t util_pct;      /* mean over the worker's samples */
    uint8_t util_max_pct;
    uint8_t mem_util_pct;
};

/* A minute of one GPU. */
struct sched_tel_bucket {
    uint64_t minute;   /* at_ms / 60000 */
    uint32_t util_sum; /* of the summaries' means */
    uint16_t count;    /* summaries in it */
    uint8_t util_max_pct;
    uint32_t mem_max_mib;
    uint32_t power_sum_w;
};

struct sched_tel_proc {
    uint32_t pid;
    uint64_t mem_mib;
    uint64_t job_id; /* 0: not a gsched task */
};

/* Everything the latest heartbeat said of one GPU. */
struct sched_tel_figures {
    struct sched_tel_sample s;
    uint64_t mem_total_mib;
    uint32_t sm_clock_mhz;
    uint64_t throttle_reasons;
    uint64_t ecc_uncorrected;
    uint32_t xid_last;
    uint32_t xid_count; /* in that heartbeat */
    uint32_t samples;   /* 0: the worker knew nothing of this GPU */
    uint32_t nprocs;    /* kept (at most SCHED_TEL_PROCS) */
    struct sched_tel_proc procs[SCHED_TEL_PROCS];
};

struct sched_tel_gpu {
    bool known; /* at least one summary with samples */
    struct sched_tel_figures latest;
    uint64_t xid_total; /* since gschedd started */
    struct sched_tel_sample fine[SCHED_TEL_FINE];
    uint32_t fine_next, fine_n;
    struct sched_tel_bucket coarse[SCHED_TEL_COARSE];
    uint32_t coarse_next, coarse_n;
    /* idle state, for the job that holds it */
    uint64_t owner;          /* job id, 0 none */
    uint64_t below_since_ms; /* start of the current run under the threshold, 0 none */
    bool flagged;
    uint64_t flagged_at_ms;
};

/* One node's telemetry. */
struct sched_tel_node {
    uint32_t ngpus;
    struct sched_tel_gpu *gpus; /* ngpus entries */
    bool nvml;                  /* its worker loaded NVML */
    uint64_t at_ms;             /* latest heartbeat with figures, 0 none */
    uint32_t cpu_util_pct;
    uint64_t mem_used_mib;
    uint64_t mem_total_mib;
};

enum sched_tel_idle {
    SCHED_TEL_IDLE_SAME = 0, /* no change */
    SCHED_TEL_IDLE_FLAGGED,  /* flagged now */
    SCHED_TEL_IDLE_CLEARED,  /* a flagged GPU is busy again (same owner) */
};

struct sched_tel;

/* threshold_pct and window_ms define idle (gsched.toml scheduler.idle_*). NULL: ENOMEM. */
struct sched_tel *sched_tel_new(uint32_t threshold_pct, uint64_t window_ms);
void sched_tel_free(struct sched_tel *t);
uint32_t sched_tel_threshold(const struct sched_tel *t);
uint64_t sched_tel_window_ms(const struct sched_tel *t);

/*
 * Node index's record with room for ngpus GPUs (made or resized; a resize forgets its
 * GPUs' history). NULL when out of memory.
 */
struct sched_tel_node *sched_tel_node(struct sched_tel *t, uint32_t node, uint32_t ngpus);
/* The record of node, or NULL when it never reported. */
const struct sched_tel_node *sched_tel_node_get(const struct sched_tel *t, uint32_t node);

/*
 * Records one heartbeat's figures of a GPU held by job owner (0: nobody), received at
 * now_ms, into the rings and the idle state. Returns the idle transition.
 */
enum sched_tel_idle sched_tel_record(struct sched_tel *t, struct sched_tel_gpu *g,
                                     const struct sched_tel_figures *f, uint64_t owner,
                                     uint64_t now_ms);

/*
 * The GPU's summaries with at_ms >= since_ms, oldest first, at most max of them into out.
 * Returns how many were written.
 */
size_t sched_tel_fine(const struct sched_tel_gpu *g, uint64_t since_ms,
                      struct sched_tel_sample *out, size_t max);
/* The same for the one-minute buckets. */
size_t sched_tel_coarse(const struct sched_tel_gpu *g, uint64_t since_ms,
                        struct sched_tel_bucket *out, size_t max);

#endif
