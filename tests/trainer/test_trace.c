/*
 * test_trace.c: the profiling recorder (trainer/trace.h). Its file is valid JSON in the Trace
 * Event Format (checked by a small JSON parser below: common/ only writes JSON), with the
 * rank as pid, the lanes named, the events in start order and microsecond times; a full
 * recorder counts what it drops and the file says so; appends from several threads at once
 * lose nothing; the file replaces an old one through a temporary file and a rename, and a
 * place that cannot be written is an error that leaves nothing behind.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "trainer/trace.h"

static char dir[] = "/tmp/trace-test-XXXXXX";
static char path[128];

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/trace.json", dir);
}

static void teardown(void)
{
    char cmd[96];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(trace, .init = setup, .fini = teardown);

/* --- a strict JSON parser: whether text is one JSON value and nothing else ----------------- */

static bool value(const char **p);

static void ws(const char **p)
{
    while (**p == ' ' || **p == '\n' || **p == '\r' || **p == '\t')
        (*p)++;
}

static bool string(const char **p)
{
    if (**p != '"')
        return false;
    for ((*p)++; **p != '"'; (*p)++) {
        if ((unsigned char)**p < 0x20)
            return false;
        if (**p == '\\' && (*++*p == '\0' || strchr("\"\\/bfnrtu", **p) == NULL))
            return false;
    }
    (*p)++;
    return true;
}

static bool number(const char **p)
{
    const char *s = *p;

    if (**p == '-')
        (*p)++;
    if (**p < '0' || **p > '9' || (**p == '0' && (*p)[1] >= '0' && (*p)[1] <= '9'))
        return false;
    strtod(s, (char **)p);
    return *p > s;
}

/* open items* close, items separated by commas; an object's items are "key": value. */
static bool items(const char **p, char close, bool keyed)
{
    (*p)++;
    ws(p);
    if (**p == close) {
        (*p)++;
        return true;
    }
    for (;;) {
        ws(p);
        if (keyed && !(string(p) && (ws(p), **p == ':') && (++*p, true)))
            return false;
        if (!value(p))
            return false;
        ws(p);
        if (**p == close) {
            (*p)++;
            return true;
        }
        if (**p != ',')
            return false;
        (*p)++;
    }
}

static bool value(const char **p)
{
    ws(p);
    switch (**p) {
    case '{':
        return items(p, '}', true);
    case '[':
        return items(p, ']', false);
    case '"':
        return string(p);
    case 't':
        return strncmp(*p, "true", 4) == 0 && (*p += 4, true);
    case 'f':
        return strncmp(*p, "false", 5) == 0 && (*p += 5, true);
    case 'n':
        return strncmp(*p, "null", 4) == 0 && (*p += 4, true);
    default:
        return number(p);
    }
}

static bool is_json(const char *text)
{
    const char *p = text;

    if (!value(&p))
        return false;
    ws(&p);
    return *p == '\0';
}

/* --- helpers ------------------------------------------------------------------------------ */

static char *slurp(const char *file)
{
    struct gs_buf b = GS_BUF_INIT;
    FILE *f = fopen(file, "r");

    cr_assert_not_null(f, "%s: %s", file, strerror(errno));
    cr_assert_eq(gs_buf_read_stream(&b, f), 0);
    fclose(f);
    return b.data; /* the caller frees */
}

/* A new recorder whose times count from origin. */
static struct trn_trace *recorder(uint32_t rank, size_t capacity, uint64_t origin)
{
    struct trn_trace *t = NULL;

    cr_assert_eq(trn_trace_new(rank, capacity, &t), 0);
    trn_trace_set_origin(t, origin);
    return t;
}

/* Writes t to path (no extra otherData), frees it, and returns the file's text (the caller
 * frees), which must be JSON. */
static char *written(struct trn_trace *t)
{
    char *text;

    cr_assert_eq(trn_trace_write(t, path, NULL, NULL, 0), 0);
    trn_trace_free(t);
    text = slurp(path);
    cr_assert(is_json(text), "not JSON:\n%s", text);
    return text;
}

static void add(struct trn_trace *t, enum trn_trace_lane lane, const char *name, uint64_t start,
                uint64_t end)
{
    struct trn_trace_event ev = {
        .name = name,
        .cat = "test",
        .lane = lane,
        .start_ns = start,
        .end_ns = end,
        .args = {{"step", 7}, {"micro", 1}},
    };

    trn_trace_add(t, &ev);
}

static size_t occurrences(const char *text, const char *what)
{
    size_t n = 0;

    for (const char *p = strstr(text, what); p != NULL; p = strstr(p + 1, what))
        n++;
    return n;
}

/* --- tests -------------------------------------------------------------------------------- */

Test(trace, writes_valid_json_with_events_in_start_order)
{
    static const char *const keys[] = {"world", "first_step"};
    const int64_t values[] = {2, 5};
    struct trn_trace *t = recorder(3, 16, 1000000);
    const char *fwd, *bwd, *step, *ar;
    char *text;

    /* Recorded as the trainer does: each span when it ends, the step last. */
    add(t, TRN_TRACE_COMPUTE, "forward", 1002000, 1003500);
    add(t, TRN_TRACE_COMPUTE, "backward", 1003500, 1009000);
    add(t, TRN_TRACE_COMM, "all-reduce", 1005000, 1010250);
    add(t, TRN_TRACE_COMPUTE, "step", 1001000, 1012000);
    cr_assert_eq(trn_trace_count(t), 4);
    cr_assert_eq(trn_trace_write(t, path, keys, values, 2), 0);
    text = slurp(path);
    cr_assert(is_json(text), "not JSON:\n%s", text);
    cr_assert_not_null(strstr(text, "{\"traceEvents\":["));
    cr_assert_not_null(strstr(text, "\"displayTimeUnit\":\"ms\""));
    cr_assert_not_null(strstr(text, "\"args\":{\"name\":\"rank 3\"}"));
    cr_assert_not_null(strstr(text, "\"tid\":1,\"args\":{\"name\":\"comm\"}"));
    cr_assert_not_null(strstr(text, "\"tid\":3,\"args\":{\"name\":\"checkpoint\"}"));
    cr_assert_not_null(strstr(text, "\"ts\":2.000,\"dur\":1.500,\"pid\":3,\"tid\":0,"
                                    "\"args\":{\"step\":7,\"micro\":1}"));
    cr_assert_not_null(strstr(text, "\"ts\":5.000,\"dur\":5.250,\"pid\":3,\"tid\":1"));
    cr_assert_not_null(strstr(text, "\"events\":4,\"dropped\":0,\"capacity\":16,"
                                    "\"world\":2,\"first_step\":5}"));
    cr_assert_eq(occurrences(text, "\"ph\":\"X\""), 4);
    step = strstr(text, "\"name\":\"step\"");
    fwd = strstr(text, "\"name\":\"forward\"");
    bwd = strstr(text, "\"name\":\"backward\"");
    ar = strstr(text, "\"name\":\"all-reduce\"");
    cr_assert(step != NULL && fwd != NULL && bwd != NULL && ar != NULL);
    cr_assert(step < fwd && fwd < bwd && bwd < ar, "not in start order:\n%s", text);
    free(text);
    trn_trace_free(t);
}

Test(trace, a_span_comes_before_what_it_contains_when_both_start_together)
{
    struct trn_trace *t = recorder(0, 4, 0);
    char *text;

    add(t, TRN_TRACE_CHECKPOINT, "checkpoint stall", 5000, 6000);
    add(t, TRN_TRACE_CHECKPOINT, "checkpoint", 5000, 9000);
    text = written(t);
    cr_assert(strstr(text, "\"checkpoint\",") < strstr(text, "\"checkpoint stall\""), "%s", text);
    free(text);
}

Test(trace, counts_what_a_full_recorder_drops_and_says_so)
{
    struct trn_trace *t = recorder(1, 2, 0);
    char *text;

    for (int i = 0; i < 5; i++)
        add(t, TRN_TRACE_DATA, "data wait", 1000 * (uint64_t)i, 1000 * (uint64_t)i + 10);
    cr_assert_eq(trn_trace_count(t), 2);
    cr_assert_eq(trn_trace_dropped(t), 3);
    text = written(t);
    cr_assert_not_null(strstr(text, "\"events\":2,\"dropped\":3,\"capacity\":2"));
    cr_assert_eq(occurrences(text, "\"ph\":\"X\""), 2);
    free(text);
}

struct appender {
    struct trn_trace *t;
    int lane;
};

static void *append_many(void *data)
{
    struct appender *a = data;

    for (int i = 0; i < 1000; i++)
        trn_trace_span(a->t, (enum trn_trace_lane)a->lane, "x", "test", 0, "i", i, NULL, 0);
    return NULL;
}

Test(trace, appends_from_several_threads_at_once_lose_nothing)
{
    struct appender a[4];
    pthread_t th[4];
    size_t per_lane[TRN_TRACE_LANES] = {0};
    struct trn_trace *t = recorder(0, 3000, 0);
    char *text;

    for (int i = 0; i < 4; i++) {
        a[i] = (struct appender){t, i};
        cr_assert_eq(pthread_create(&th[i], NULL, append_many, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(trn_trace_count(t), 3000);
    cr_assert_eq(trn_trace_dropped(t), 1000);
    text = written(t);
    for (int lane = 0; lane < TRN_TRACE_LANES; lane++) {
        char needle[48];

        snprintf(needle, sizeof(needle), "\"pid\":0,\"tid\":%d,\"args\":{\"i\"", lane);
        per_lane[lane] = occurrences(text, needle);
    }
    cr_assert_eq(per_lane[0] + per_lane[1] + per_lane[2] + per_lane[3], 3000);
    free(text);
}

/*
 * The loader's and the checkpoint writer's threads may still add while the trace is
 * written: each write is JSON holding only whole events, as many as it says, and a later
 * write has at least as many.
 */
Test(trace, a_write_while_threads_still_add_holds_whole_events_only)
{
    struct appender a[2];
    pthread_t th[2];
    struct trn_trace *t = recorder(0, 2000, 0);
    size_t before = 0;

    for (int i = 0; i < 2; i++) {
        a[i] = (struct appender){t, TRN_TRACE_LOADER + i};
        cr_assert_eq(pthread_create(&th[i], NULL, append_many, &a[i]), 0);
    }
    for (int round = 0; round < 20; round++) {
        char *text, count[64];
        size_t n;

        cr_assert_eq(trn_trace_write(t, path, NULL, NULL, 0), 0);
        text = slurp(path);
        n = occurrences(text, "\"ph\":\"X\"");
        cr_assert(is_json(text), "round %d: not JSON", round);
        snprintf(count, sizeof(count), "\"events\":%zu,", n);
        cr_assert_not_null(strstr(text, count), "round %d: %zu events written, not said", round, n);
        cr_assert_geq(n, before);
        before = n;
        free(text);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    char *text = written(t);
    cr_assert_eq(occurrences(text, "\"ph\":\"X\""), 2000, "every event once the threads ended");
    cr_assert_not_null(strstr(text, "\"tid\":4,\"args\":{\"name\":\"loader\"}"));
    cr_assert_not_null(strstr(text, "\"tid\":5,\"args\":{\"name\":\"checkpoint writer\"}"));
    free(text);
}

/* A flow arrow: its start on one lane, its end (bound to the span enclosing it) on another,
 * both with the arrow's id, after the spans they start with. */
Test(trace, a_flow_arrow_joins_two_lanes_by_its_id)
{
    struct trn_trace *t = recorder(2, 8, 0);
    const char *s, *f, *ar;
    char *text;

    add(t, TRN_TRACE_COMPUTE, "backward", 1000, 9000);
    add(t, TRN_TRACE_COMM, "all-reduce", 6000, 12000);
    trn_trace_flow(t, "gradients", "comm", TRN_TRACE_COMPUTE, 5000, TRN_TRACE_COMM, 6000, 7);
    text = written(t);
    s = strstr(text, "{\"ph\":\"s\",\"name\":\"gradients\",\"cat\":\"comm\",\"id\":7,"
                     "\"ts\":5.000,\"pid\":2,\"tid\":0}");
    f = strstr(text, "{\"ph\":\"f\",\"name\":\"gradients\",\"cat\":\"comm\",\"id\":7,"
                     "\"ts\":6.000,\"pid\":2,\"tid\":1,\"bp\":\"e\"}");
    ar = strstr(text, "\"name\":\"all-reduce\"");
    cr_assert(s != NULL && f != NULL && ar != NULL, "%s", text);
    cr_assert(s < f && ar < f, "the end after the span it binds to:\n%s", text);
    cr_assert_not_null(strstr(text, "\"events\":4,"), "%s", text);
    free(text);
}

Test(trace, replaces_an_old_file_through_a_temporary_one)
{
    struct trn_trace *t = NULL;
    char tmp[160], *text;
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    fputs("an older trace, much longer than an empty one will be ...................", f);
    fclose(f);
    cr_assert_eq(trn_trace_new(0, 1, &t), 0);
    text = written(t);
    cr_assert_null(strstr(text, "older"));
    cr_assert_eq(occurrences(text, "\"ph\":\"X\""), 0);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    cr_assert_eq(access(tmp, F_OK), -1, "the temporary file stayed");
    free(text);
}

Test(trace, a_place_that_cannot_be_written_is_an_error_and_leaves_nothing)
{
    struct trn_trace *t = NULL;
    char bad[160], tmp[170];

    snprintf(bad, sizeof(bad), "%s/no/such/dir/trace.json", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", bad);
    cr_assert_eq(trn_trace_new(0, 4, &t), 0);
    add(t, TRN_TRACE_COMPUTE, "forward", 0, 1);
    cr_assert_eq(trn_trace_write(t, bad, NULL, NULL, 0), -ENOENT);
    cr_assert_eq(access(tmp, F_OK), -1);
    trn_trace_free(t);
}

Test(trace, escapes_names_and_starts_events_before_the_origin_at_zero)
{
    struct trn_trace *t = recorder(0, 4, 10000);
    char *text;

    add(t, TRN_TRACE_COMPUTE, "a \"quoted\"\\name\n", 4000, 12000);
    text = written(t);
    cr_assert_not_null(strstr(text, "\"name\":\"a \\\"quoted\\\"\\\\name\\n\""), "%s", text);
    cr_assert_not_null(strstr(text, "\"ts\":0.000,\"dur\":8.000"), "%s", text);
    free(text);
}

Test(trace, a_null_recorder_takes_every_call_and_does_nothing)
{
    struct trn_trace_event ev = {.name = "x", .cat = "y"};

    trn_trace_add(NULL, &ev);
    trn_trace_span(NULL, TRN_TRACE_COMM, "x", "y", 0, "k", 1, NULL, 0);
    trn_trace_set_origin(NULL, 5);
    trn_trace_free(NULL);
    cr_assert_eq(trn_trace_count(NULL), 0);
    cr_assert_eq(trn_trace_dropped(NULL), 0);
}

Test(trace, the_json_checker_refuses_what_is_not_json)
{
    cr_assert(is_json("{\"a\":[1,2.5e3,-0.25,true,null,\"x\\n\"],\"b\":{}}"));
    cr_assert(!is_json("{\"a\":1,}"));
    cr_assert(!is_json("{\"a\":1"));
    cr_assert(!is_json("[1 2]"));
    cr_assert(!is_json("{\"a\":01}"));
    cr_assert(!is_json("\"tab\tinside\""));
    cr_assert(!is_json("{} {}"));
}
