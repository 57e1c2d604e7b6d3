/*
 * telemetry.h: the worker's periodic view of its node, for the heartbeats: every GPU's
 * figures from NVML (worker/nvml.h), the node's CPU busy share, memory and load, and each
 * task's CPU time and resident memory (worker/procstat.h).
 *
 * A timer on the worker's loop starts a sample every interval; the sample itself (NVML
 * calls, /proc reads) runs in libuv's thread pool through uv_queue_work, and its result is
 * applied on the loop thread in the after-work callback. At most one sample is in flight: a
 * tick that finds one still running is skipped.
 *
 * Between two heartbeats the samples are summarised per GPU (mean and max SM utilisation,
 * mean memory-controller utilisation, latest and max memory used, mean power, latest
 * temperature, clock, ECC count and process list, OR of the throttle reasons, Xids seen)
 * and wrk_telemetry_fill() hands the summary to a heartbeat and starts a new one. A
 * heartbeat with no new sample since the previous one repeats the previous figures (with
 * no Xid counted twice), so heartbeats faster than the sampling do not flap to "unknown".
 * The processes of every session on the node are scanned once per heartbeat (with the
 * first sample after each fill), not at every sample.
 *
 * NVML is opened in wrk_telemetry_new(), on the caller's thread: the worker does it once at
 * start, before its loop runs. Without the library (a CPU node, or no driver) or without
 * GPUs the heartbeats carry no GPU figures and nvml = false; the CPU, memory and task
 * figures come all the same.
 *
 * Loop thread only. wrk_telemetry_close() stops sampling and frees the object once its
 * timer is closed and the sample in flight (if any) is over; the loop must run for that.
 */
#ifndef WRK_TELEMETRY_H
#define WRK_TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "proto/gsched.pb-c.h"

struct wrk_telemetry_opts {
    uint64_t interval_ms;       /* between samples; 0: only wrk_telemetry_sample_now() */
    int ngpus;                  /* gsched GPUs of the node */
    const char *const *bus_ids; /* ngpus PCI bus ids, "" for a synthetic GPU (found as NVML
                                 * index i); NULL: all synthetic. Read during new() only. */
    const char *nvml_library;   /* NULL: libnvidia-ml.so.1 (tests name another) */
};

struct wrk_telemetry;

/* Opens NVML (when there are GPUs) and starts sampling; the first sample starts at once.
 * NULL when out of memory. */
struct wrk_telemetry *wrk_telemetry_new(uv_loop_t *loop, const struct wrk_telemetry_opts *opts);
/* Stops sampling; closed(data) is called once the object is freed. Accepts NULL (closed is
 * then not called). */
void wrk_telemetry_close(struct wrk_telemetry *t, void (*closed)(void *data), void *data);

/* True when NVML was loaded: heartbeats then list every GPU of the node. */
bool wrk_telemetry_nvml(const struct wrk_telemetry *t);
/* How many of the node's GPUs NVML found (0 without NVML). */
int wrk_telemetry_nvml_gpus(const struct wrk_telemetry *t);
/* Samples completed since new(), for tests and logs. */
unsigned wrk_telemetry_samples(const struct wrk_telemetry *t);
/* Starts a sample now. Returns 0, -EBUSY when one is in flight, -ECANCELED once closing,
 * or libuv's error. */
int wrk_telemetry_sample_now(struct wrk_telemetry *t);

/*
 * Fills the heartbeat from the summary since the previous fill, then starts a new summary:
 * - cpu_util_pct, memory_used_mib, memory_total_mib, load_avg_x100 (0 until a sample);
 * - nvml, and with NVML gpus: every GPU of the node in gsched order, index = gsched index,
 *   samples = 0 (and temperature -1) for a GPU NVML has told nothing of. A process's job_id
 *   is the job of the running task whose session it is in;
 * - for each of hb->running (which the caller fills first: pid = the task's pid, which is
 *   its session id), cpu_time_ms and rss_mib of that session; 0 when not known yet.
 * hb->gpus and what it points to belong to t and stay valid until the next fill or close;
 * the caller must not free them (pack the heartbeat, then drop it). Returns 0.
 */
int wrk_telemetry_fill(struct wrk_telemetry *t, Gs__Heartbeat *hb);

#endif
