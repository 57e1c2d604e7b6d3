/*
 * trace.c: the profiling recorder (see trace.h). The array of events is allocated once; an
 * append claims the next slot with one atomic increment, so threads never wait on each other
 * and a full recorder costs an increment of the dropped count. The JSON is built in memory
 * when the trace is written (after the profiled steps) and goes to disk through
 * trn_write_file_durably, as every file the trainer writes.
 *
 * The file's shape, one rank:
 *
 *     {"traceEvents":[
 *       {"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"rank 1"}},
 *       {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"comm"}}, ...,
 *       {"name":"backward","cat":"compute","ph":"X","ts":1234.567,"dur":89.012,"pid":1,
 *        "tid":0,"args":{"step":2,"micro":0}}, ...],
 *      "displayTimeUnit":"ms",
 *      "otherData":{"producer":"gsched-train","rank":1,"events":57,"dropped":0,...}}
 *
 * ts and dur are microseconds with nanosecond digits, from the recorder's origin. Events are
 * written in order of their start (recorded in order of their end, a span after the spans
 * inside it), a span before those it contains, which is the order viewers nest them in.
 */
#include "trainer/trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/json.h"
#include "trainer/tensorfile.h"

struct trn_trace {
    uint32_t rank;
    uint64_t origin_ns;
    size_t capacity;
    atomic_size_t next; /* slots handed out; beyond capacity they were dropped */
    atomic_uint_least64_t dropped;
    struct trn_trace_event *ev;
    atomic_bool *ready; /* per slot: its event is in (another thread may be writing it) */
};

static const char *const lane_names[TRN_TRACE_LANES] = {
    "compute", "comm", "data", "checkpoint", "loader", "checkpoint writer"};

int trn_trace_new(uint32_t rank, size_t capacity, struct trn_trace **ret)
{
    struct trn_trace *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return -ENOMEM;
    t->capacity = capacity > 0 ? capacity : 1;
    t->ev = calloc(t->capacity, sizeof(*t->ev));
    t->ready = calloc(t->capacity, sizeof(*t->ready));
    if (t->ev == NULL || t->ready == NULL) {
        free(t->ev);
        free(t->ready);
        free(t);
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->capacity; i++)
        atomic_init(&t->ready[i], false);
    t->rank = rank;
    t->origin_ns = gs_clock_mono_ns();
    atomic_init(&t->next, 0);
    atomic_init(&t->dropped, 0);
    *ret = t;
    return 0;
}

void trn_trace_free(struct trn_trace *t)
{
    if (t == NULL)
        return;
    free(t->ev);
    free(t->ready);
    free(t);
}

void trn_trace_set_origin(struct trn_trace *t, uint64_t origin_ns)
{
    if (t != NULL)
        t->origin_ns = origin_ns;
}

void trn_trace_add(struct trn_trace *t, const struct trn_trace_event *ev)
{
    size_t i;

    if (t == NULL)
        return;
    i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (i < t->capacity) {
        t->ev[i] = *ev;
        atomic_store_explicit(&t->ready[i], true, memory_order_release);
    } else
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
}

void trn_trace_span(struct trn_trace *t, enum trn_trace_lane lane, const char *name,
                    const char *cat, uint64_t start_ns, const char *key0, int64_t value0,
                    const char *key1, int64_t value1)
{
    struct trn_trace_event ev = {
        .name = name,
        .cat = cat,
        .lane = lane,
        .start_ns = start_ns,
        .args = {{key0, value0}, {key0 != NULL ? key1 : NULL, value1}},
    };

    if (t == NULL)
        return;
    ev.end_ns = gs_clock_mono_ns();
    trn_trace_add(t, &ev);
}

void trn_trace_flow(struct trn_trace *t, const char *name, const char *cat,
                    enum trn_trace_lane from_lane, uint64_t from_ns, enum trn_trace_lane to_lane,
                    uint64_t to_ns, uint64_t id)
{
    struct trn_trace_event ev = {.name = name,
                                 .cat = cat,
                                 .lane = from_lane,
                                 .start_ns = from_ns,
                                 .end_ns = from_ns,
                                 .ph = 's',
                                 .flow_id = id};

    trn_trace_add(t, &ev);
    ev.lane = to_lane;
    ev.start_ns = ev.end_ns = to_ns;
    ev.ph = 'f';
    trn_trace_add(t, &ev);
}

size_t trn_trace_count(const struct trn_trace *t)
{
    size_t n;

    if (t == NULL)
        return 0;
    n = atomic_load_explicit(&t->next, memory_order_acquire);
    return n < t->capacity ? n : t->capacity;
}

uint64_t trn_trace_dropped(const struct trn_trace *t)
{
    return t == NULL ? 0 : atomic_load_explicit(&t->dropped, memory_order_relaxed);
}

/* The file being built: a buffer and the first error, after which every write is a no-op. */
struct out {
    struct gs_buf b;
    int rc;
};

__attribute__((format(printf, 2, 3))) static void emitf(struct out *o, const char *fmt, ...)
{
    va_list ap;

    if (o->rc < 0)
        return;
    va_start(ap, fmt);
    o->rc = gs_buf_vprintf(&o->b, fmt, ap);
    va_end(ap);
}

/* A JSON string literal (names come from the code, but are escaped all the same). */
static void emit_str(struct out *o, const char *s)
{
    if (o->rc == 0)
        o->rc = gs_json_put_string(&o->b, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

/* ,"key":1234.567 — microseconds from nanoseconds, exactly, without float rounding. */
static void emit_us(struct out *o, const char *key, uint64_t ns)
{
    emitf(o, ",\"%s\":%llu.%03llu", key, (unsigned long long)(ns / 1000),
          (unsigned long long)(ns % 1000));
}

/* SEP{"ph":"M","name":NAME,"pid":rank,"tid":tid,"args":{ARG:value or number}} */
static void emit_meta(struct out *o, const char *sep, uint32_t rank, const char *name, uint32_t tid,
                      const char *arg, const char *value, int64_t number)
{
    emitf(o, "%s{\"ph\":\"M\",\"name\":", sep);
    emit_str(o, name);
    emitf(o, ",\"pid\":%u,\"tid\":%u,\"args\":{\"%s\":", rank, tid, arg);
    if (value != NULL)
        emit_str(o, value);
    else
        emitf(o, "%lld", (long long)number);
    emitf(o, "}}");
}

/* The process is "rank N", its threads the lanes, both sorted in that order. */
static void emit_metadata(struct out *o, uint32_t rank)
{
    char pname[32];

    snprintf(pname, sizeof(pname), "rank %u", rank);
    emit_meta(o, "", rank, "process_name", 0, "name", pname, 0);
    emit_meta(o, ",\n", rank, "process_sort_index", 0, "sort_index", NULL, rank);
    for (uint32_t lane = 0; lane < TRN_TRACE_LANES; lane++) {
        emit_meta(o, ",\n", rank, "thread_name", lane, "name", lane_names[lane], 0);
        emit_meta(o, ",\n", rank, "thread_sort_index", lane, "sort_index", NULL, lane);
    }
}

static void emit_event(struct out *o, const struct trn_trace *t, const struct trn_trace_event *e)
{
    uint64_t start = e->start_ns > t->origin_ns ? e->start_ns - t->origin_ns : 0;
    uint64_t dur = e->end_ns > e->start_ns ? e->end_ns - e->start_ns : 0;

    if (e->ph == 's' || e->ph == 'f') { /* a flow's end binds to the span enclosing it */
        emitf(o, ",\n{\"ph\":\"%c\",\"name\":", e->ph);
        emit_str(o, e->name);
        emitf(o, ",\"cat\":");
        emit_str(o, e->cat);
        emitf(o, ",\"id\":%llu", (unsigned long long)e->flow_id);
        emit_us(o, "ts", start);
        emitf(o, ",\"pid\":%u,\"tid\":%u%s}", t->rank, (unsigned)e->lane,
              e->ph == 'f' ? ",\"bp\":\"e\"" : "");
        return;
    }
    emitf(o, ",\n{\"ph\":\"X\",\"name\":");
    emit_str(o, e->name);
    emitf(o, ",\"cat\":");
    emit_str(o, e->cat);
    emit_us(o, "ts", start);
    emit_us(o, "dur", dur);
    emitf(o, ",\"pid\":%u,\"tid\":%u,\"args\":{", t->rank, (unsigned)e->lane);
    for (int i = 0; i < TRN_TRACE_MAX_ARGS && e->args[i].key != NULL; i++) {
        emitf(o, "%s", i > 0 ? "," : "");
        emit_str(o, e->args[i].key);
        emitf(o, ":%lld", (long long)e->args[i].value);
    }
    emitf(o, "}}");
}

static void emit_other(struct out *o, const struct trn_trace *t, size_t events,
                       const char *const *keys, const int64_t *values, size_t n)
{
    emitf(o,
          "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"gsched-train\","
          "\"rank\":%u,\"events\":%zu,\"dropped\":%llu,\"capacity\":%zu",
          t->rank, events, (unsigned long long)trn_trace_dropped(t), t->capacity);
    for (size_t i = 0; i < n; i++) {
        emitf(o, ",");
        emit_str(o, keys[i]);
        emitf(o, ":%lld", (long long)values[i]);
    }
    emitf(o, "}}\n");
}

/* By start, and a span before those it contains when they start together (viewers nest
 * spans in the order they meet them). */
static int by_start(const void *a, const void *b)
{
    const struct trn_trace_event *x = a, *y = b;

    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns > y->end_ns ? -1 : 1;
    return 0;
}

int trn_trace_write(const struct trn_trace *t, const char *path, const char *const *other_keys,
                    const int64_t *other_values, size_t n_other)
{
    struct out o = {GS_BUF_INIT, 0};
    size_t slots = trn_trace_count(t), n = 0;
    struct trn_trace_event *sorted = malloc(slots * sizeof(*sorted) + 1);

    if (sorted == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < slots; i++) { /* those still being added are left out */
        if (atomic_load_explicit(&t->ready[i], memory_order_acquire))
            sorted[n++] = t->ev[i];
    }
    qsort(sorted, n, sizeof(*sorted), by_start);
    o.rc = gs_buf_reserve(&o.b, 4096 + n * 160); /* one reservation, not many doublings */
    emitf(&o, "{\"traceEvents\":[\n");
    emit_metadata(&o, t->rank);
    for (size_t i = 0; i < n; i++)
        emit_event(&o, t, &sorted[i]);
    emit_other(&o, t, n, other_keys, other_values, n_other);
    if (o.rc == 0)
        o.rc = trn_write_file_durably(path, o.b.data, o.b.len);
    gs_buf_release(&o.b);
    free(sorted);
    return o.rc;
}
