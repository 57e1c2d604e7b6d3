/*
 * trace.h: a recorder of what a rank did during a few profiled training steps, written as a
 * Chrome/Perfetto trace (the Trace Event Format that chrome://tracing and ui.perfetto.dev
 * load): one JSON file per rank whose process id is the rank and whose threads are lanes —
 * compute, comm, data, checkpoint, and the loader's and the checkpoint writer's own threads
 * — so that the overlap of communication with backward and the time spent waiting for data
 * or checkpoints, and what those threads did meanwhile, can be seen (docs/trainer.md,
 * Profiling).
 *
 * Every event is a complete span ("ph":"X"): a name and a category (static strings, never
 * copied: string literals), a lane, start and end on the monotonic clock (gs_clock_mono_ns)
 * and up to TRN_TRACE_MAX_ARGS integer arguments. They are appended to an array allocated
 * once by trn_trace_new, so recording allocates nothing and does no I/O; once it is full,
 * further events are only counted as dropped, and the file says how many. Timestamps in the
 * file are microseconds from the recorder's origin (trn_trace_set_origin; by default its
 * creation), so that ranks that set it at the same point line up when loaded together.
 *
 * Threads: trn_trace_add may be called from any thread at once (an atomic index hands out
 * the slots, and a slot counts once its event is in). trn_trace_write may run while other
 * threads still add: it writes the events complete when it looked.
 * A NULL recorder takes every call and does nothing, which is how a run without profiling
 * pays for it: one branch. The recorder is the caller's (trn_trace_new / trn_trace_free).
 */
#ifndef TRN_TRACE_H
#define TRN_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* The lanes: the trace's threads ("tid"), named in the file. */
enum trn_trace_lane {
    TRN_TRACE_COMPUTE = 0, /* the training thread: step, forward, backward, optimizer... */
    TRN_TRACE_COMM,        /* collectives as the communication thread ran them */
    TRN_TRACE_DATA,        /* waiting for the loader's next batch */
    TRN_TRACE_CHECKPOINT,  /* the training thread's part of a checkpoint, and its stall */
    TRN_TRACE_LOADER,      /* the loader's reader thread filling batches ahead */
    TRN_TRACE_CKPT_WRITER, /* the checkpoint writer thread: the file written durably */
    TRN_TRACE_LANES,
};

#define TRN_TRACE_MAX_ARGS 3

/* An integer argument shown with the event ("step": 4). key NULL ends the list. */
struct trn_trace_arg {
    const char *key; /* static */
    int64_t value;
};

struct trn_trace_event {
    const char *name, *cat; /* static strings */
    enum trn_trace_lane lane;
    uint64_t start_ns, end_ns; /* gs_clock_mono_ns(); end before start is taken as start */
    struct trn_trace_arg args[TRN_TRACE_MAX_ARGS];
    /* 0: a span ("X"). 's' or 'f': one end of a flow arrow (at start_ns, in the span that
     * encloses it on its lane), the two ends joined by flow_id. */
    char ph;
    uint64_t flow_id;
};

struct trn_trace;

/* A recorder for rank's events with room for capacity of them (at least 1). 0 or -ENOMEM. */
int trn_trace_new(uint32_t rank, size_t capacity, struct trn_trace **ret);
void trn_trace_free(struct trn_trace *t);

/* Times in the file count from origin_ns (a gs_clock_mono_ns() reading); events before it
 * are written at 0. Call it before recording. */
void trn_trace_set_origin(struct trn_trace *t, uint64_t origin_ns);

/* Appends a copy of *ev, or counts it as dropped when the recorder is full. Any thread. */
void trn_trace_add(struct trn_trace *t, const struct trn_trace_event *ev);

/* Appends a span from start_ns to now, with up to two arguments (key NULL: none). */
void trn_trace_span(struct trn_trace *t, enum trn_trace_lane lane, const char *name,
                    const char *cat, uint64_t start_ns, const char *key0, int64_t value0,
                    const char *key1, int64_t value1);

/*
 * A flow arrow from the span enclosing from_ns on lane from_lane to the span enclosing
 * (or starting at) to_ns on to_lane: what one thread handed another (a bucket's gradients
 * to its all-reduce). id tells it from the trace's other arrows.
 */
void trn_trace_flow(struct trn_trace *t, const char *name, const char *cat,
                    enum trn_trace_lane from_lane, uint64_t from_ns, enum trn_trace_lane to_lane,
                    uint64_t to_ns, uint64_t id);

/* Events recorded, and dropped for want of room (0 for NULL). */
size_t trn_trace_count(const struct trn_trace *t);
uint64_t trn_trace_dropped(const struct trn_trace *t);

/*
 * Writes the trace to path durably (a temporary file beside it, fsync, rename): metadata
 * naming the process "rank N" and its lanes, then the events by start time (of two that
 * start together, the longer first: the one containing the other), and "otherData" with
 * the producer, the rank, the counts and each pair of other_keys[i] / other_values[i]
 * (n_other of them; keys static). Allocates (a sorted copy, the text): call it after the
 * profiled steps. 0 or -errno; the recorder is unchanged and may be written again.
 */
int trn_trace_write(const struct trn_trace *t, const char *path, const char *const *other_keys,
                    const int64_t *other_values, size_t n_other);

#endif
