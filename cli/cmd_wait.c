/*
 * cmd_wait.c: `gsched wait JOB... [--timeout DUR] [--start] [--json] [--socket PATH]` and
 * the waiting loop behind it and `gsched submit --wait` (see wait.h). Each job's latest
 * JobStateChange is copied out of the reply it came in, so replies can be freed as the loop
 * goes; its node list is fetched once, with a QueueRequest, when it is first seen running,
 * because WaitReply says when a job runs but not where.
 */
#include "cli/wait.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "common/clock.h"
#include "common/units.h"

/* Requests closer together than this are spaced out, in case gschedd answers at once. */
#define MIN_REQUEST_INTERVAL_MS 200
#define LIVE_POLL_MS 1000

struct waited {
    Gs__JobStateChange last; /* reason is our own copy; valid when seen */
    bool seen;
    bool done;
    char *nodes; /* "n1,n2" once known, "" when it could not be had */
};

struct wait_ctx {
    const char *socket_path;
    const struct cli_wait_opts *o;
    struct waited *jobs;
    size_t n;
    bool live;  /* the status line is rewritten in place on stderr */
    bool drawn; /* and is on the screen now, the cursor after it */
};

static bool reached(Gs__JobState state, Gs__WaitFor until)
{
    if (cli_job_state_final(state))
        return true;
    return until == GS__WAIT_FOR__WAIT_FOR_START && state == GS__JOB_STATE__JOB_STATE_RUNNING;
}

/* Copies c into w; returns 1 when the state changed, 0 when not, -ENOMEM. */
static int record(struct waited *w, const Gs__JobStateChange *c)
{
    bool changed = !w->seen || w->last.state != c->state || w->last.suspended != c->suspended;
    char *reason = strdup(c->reason != NULL ? c->reason : "");

    if (reason == NULL)
        return -ENOMEM;
    if (w->seen)
        free(w->last.reason);
    w->last = *c;
    /* The copy must not point into the reply it came from, which is freed next. */
    w->last.base.n_unknown_fields = 0;
    w->last.base.unknown_fields = NULL;
    w->last.reason = reason;
    w->seen = true;
    return changed ? 1 : 0;
}

/* The job's node names from a QueueRequest for it alone; "" when that fails. */
static char *fetch_nodes(const char *socket_path, uint64_t id)
{
    Gs__QueueRequest req = GS__QUEUE_REQUEST__INIT;
    Gs__JobSelector sel = GS__JOB_SELECTOR__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    struct gs_buf list = GS_BUF_INIT;
    char *nodes;

    sel.job_ids = &id;
    sel.n_job_ids = 1;
    req.selector = &sel;
    req.include_finished = true;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REQUEST;
    env.queue_request = &req;
    if (cli_call(socket_path, &env, GS__ENVELOPE__BODY_QUEUE_REPLY, &reply) == 0 &&
        reply->queue_reply->n_jobs > 0) {
        const Gs__JobInfo *job = reply->queue_reply->jobs[0];

        cli_job_nodelist(&list, job->allocation, job->n_allocation, false);
    }
    gs_proto_envelope_free(reply);
    nodes = strdup(list.data != NULL ? list.data : "");
    gs_buf_release(&list);
    return nodes;
}

static void print_line(FILE *f, const struct waited *w, bool end)
{
    struct gs_buf line = GS_BUF_INIT;
    uint64_t now = gs_clock_wall_ms();
    int rc;

    if (end && cli_job_state_final(w->last.state))
        rc = cli_job_end_line(&line, &w->last, now);
    else
        rc = cli_job_status_line(&line, &w->last, w->nodes, now);
    if (rc == 0)
        fprintf(f, "%s\n", line.data);
    fflush(f);
    gs_buf_release(&line);
}

static void clear_live(struct wait_ctx *c)
{
    if (c->drawn)
        fputs("\r\033[K", stderr);
    c->drawn = false;
}

static void redraw_live(struct wait_ctx *c)
{
    struct gs_buf line = GS_BUF_INIT;

    if (!c->live || c->jobs[0].done || !c->jobs[0].seen)
        return;
    if (cli_job_status_line(&line, &c->jobs[0].last, c->jobs[0].nodes, gs_clock_wall_ms()) == 0) {
        fprintf(stderr, "\r\033[K%s", line.data);
        c->drawn = true;
    }
    fflush(stderr);
    gs_buf_release(&line);
}

static struct waited *find(struct wait_ctx *c, uint64_t id)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->jobs[i].last.job_id == id)
            return &c->jobs[i];
    }
    return NULL;
}

static int take_change(struct wait_ctx *c, const Gs__JobStateChange *change)
{
    struct waited *w = find(c, change->job_id);
    int changed;

    if (w == NULL || w->done)
        return 0; /* not asked for, or already reported */
    changed = record(w, change);
    if (changed < 0)
        return changed;
    if (changed && change->state == GS__JOB_STATE__JOB_STATE_RUNNING && w->nodes == NULL)
        w->nodes = fetch_nodes(c->socket_path, w->last.job_id);
    w->done = reached(change->state, c->o->until);
    if (w->done && !c->o->json) {
        clear_live(c);
        print_line(c->o->lines, w, true);
    } else if (changed && !w->done && !c->live) {
        print_line(stderr, w, false);
    }
    return 0;
}

/* One WaitRequest for the jobs not there yet, of at most timeout_ms. */
static int wait_once(struct wait_ctx *c, uint64_t timeout_ms)
{
    Gs__WaitRequest req = GS__WAIT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    uint64_t *ids = calloc(c->n, sizeof(*ids));
    int rc;

    if (ids == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->jobs[i].done)
            ids[req.n_job_ids++] = c->jobs[i].last.job_id;
    }
    req.job_ids = ids;
    req.until = c->o->until;
    req.timeout_ms = timeout_ms;
    env.body_case = GS__ENVELOPE__BODY_WAIT_REQUEST;
    env.wait_request = &req;
    rc = cli_call(c->socket_path, &env, GS__ENVELOPE__BODY_WAIT_REPLY, &reply);
    for (size_t i = 0; rc == 0 && i < reply->wait_reply->n_jobs; i++)
        rc = take_change(c, reply->wait_reply->jobs[i]);
    gs_proto_envelope_free(reply);
    free(ids);
    return rc;
}

static size_t count_waiting(const struct wait_ctx *c)
{
    size_t k = 0;

    for (size_t i = 0; i < c->n; i++)
        k += !c->jobs[i].done;
    return k;
}

/* Asks until every job got there (0), the deadline passed (-ETIMEDOUT), or a failure. */
static int wait_loop(struct wait_ctx *c)
{
    uint64_t deadline = c->o->timeout_ms > 0 ? gs_clock_mono_ms() + c->o->timeout_ms : 0;
    uint64_t poll_ms = c->live && c->o->poll_ms > LIVE_POLL_MS ? LIVE_POLL_MS : c->o->poll_ms;
    int rc = 0;

    while (rc == 0 && count_waiting(c) > 0) {
        uint64_t start = gs_clock_mono_ms(), per = poll_ms, took;

        if (deadline > 0 && start >= deadline)
            return -ETIMEDOUT;
        if (deadline > 0 && deadline - start < per)
            per = deadline - start;
        rc = wait_once(c, per);
        redraw_live(c);
        took = gs_clock_mono_ms() - start;
        if (rc == 0 && count_waiting(c) > 0 && took < MIN_REQUEST_INTERVAL_MS)
            cli_sleep_ms(MIN_REQUEST_INTERVAL_MS - took);
    }
    return rc;
}

static void report_timeout(const struct wait_ctx *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct waited *w = &c->jobs[i];

        if (w->done)
            continue;
        fprintf(stderr, "gsched %s: timed out waiting for job %llu", c->o->cmd,
                (unsigned long long)w->last.job_id);
        if (w->seen) {
            fputs(": ", stderr);
            print_line(stderr, w, false);
        } else {
            fputc('\n', stderr);
        }
    }
}

static int print_json(const struct wait_ctx *c, bool timed_out)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    gs_json_init(&j, &out);
    gs_json_object_begin(&j);
    gs_json_key(&j, "jobs");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < c->n; i++) {
        if (c->jobs[i].seen)
            cli_json_state_change(&j, &c->jobs[i].last);
    }
    gs_json_array_end(&j);
    gs_json_kv_bool(&j, "timed_out", timed_out);
    gs_json_object_end(&j);
    rc = cli_json_write(&j, &out, stdout);
    gs_buf_release(&out);
    return rc;
}

static int exit_status(const struct wait_ctx *c)
{
    if (c->n == 1) {
        const Gs__JobStateChange *s = &c->jobs[0].last;

        if (!cli_job_state_final(s->state))
            return 0; /* waited for its start, and it runs */
        return cli_job_exit_status(s->state, s->signaled, s->exit_code, s->term_signal);
    }
    for (size_t i = 0; i < c->n; i++) {
        Gs__JobState state = c->jobs[i].last.state;

        if (cli_job_state_final(state) && state != GS__JOB_STATE__JOB_STATE_COMPLETED)
            return 1;
    }
    return 0;
}

int cli_wait_jobs(const char *socket_path, const uint64_t *ids, size_t n,
                  const struct cli_wait_opts *opts)
{
    struct wait_ctx c = {.socket_path = socket_path, .o = opts, .n = n};
    int rc, status = 1;

    c.jobs = calloc(n, sizeof(*c.jobs));
    if (c.jobs == NULL) {
        fprintf(stderr, "gsched %s: out of memory\n", opts->cmd);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        gs__job_state_change__init(&c.jobs[i].last);
        c.jobs[i].last.job_id = ids[i];
    }
    c.live = n == 1 && isatty(STDERR_FILENO);
    rc = wait_loop(&c);
    clear_live(&c);
    if (rc == -ETIMEDOUT)
        report_timeout(&c);
    if ((rc == 0 || rc == -ETIMEDOUT) && opts->json && print_json(&c, rc == -ETIMEDOUT) < 0)
        rc = -EIO;
    if (rc == 0)
        status = exit_status(&c);
    for (size_t i = 0; i < n; i++) {
        if (c.jobs[i].seen)
            free(c.jobs[i].last.reason);
        free(c.jobs[i].nodes);
    }
    free(c.jobs);
    return status;
}

static const struct cli_opt wait_opts[] = {
    {"--timeout", "-t", true, 't'}, {"--start", NULL, false, 'S'}, {"--json", NULL, false, 'j'},
    {"--socket", NULL, true, 's'},  {NULL, NULL, false, 0},
};

struct wait_args {
    struct cli_wait_opts o;
    struct cli_job_ids jobs;
    const char *socket_opt;
};

/* Returns 0, or the exit status to leave with. */
static int parse_args(int argc, char **argv, struct wait_args *w)
{
    uint64_t timeout_s = 0;
    struct cli_args a;
    int opt = 0, status = 0;

    cli_args_init(&a, argc, argv);
    while (status == 0 && (opt = cli_args_next(&a, wait_opts)) > 0) {
        if (opt == CLI_ARGS_OPERAND)
            status = cli_job_ids_take(&w->jobs, "wait", &a);
        else if (opt == 't' && gs_parse_duration(a.value, &timeout_s) < 0)
            status = cli_usage_error("wait", "bad --timeout '%s' (30s, 5m, 1h30m)", a.value);
        else if (opt == 'S')
            w->o.until = GS__WAIT_FOR__WAIT_FOR_START;
        else if (opt == 'j')
            w->o.json = true;
        else if (opt == 's')
            w->socket_opt = a.value;
    }
    if (status == 0 && opt < 0)
        status = cli_args_error("wait", &a);
    if (status == 0 && w->jobs.n == 0)
        status = cli_usage_error("wait", "which jobs? (gsched wait JOB...)");
    /* A bare number is minutes, as everywhere durations are typed; "infinite" is none. */
    w->o.timeout_ms = timeout_s > UINT64_MAX / 1000 ? 0 : timeout_s * 1000;
    return status;
}

int cli_cmd_wait(int argc, char **argv)
{
    struct wait_args w = {.o = {.cmd = "wait", .poll_ms = 10000, .lines = stdout}};
    char path[256];
    int status = parse_args(argc, argv, &w);

    if (status == 0)
        status = cli_socket_path(w.socket_opt, path, sizeof(path)) < 0
                     ? 1
                     : cli_wait_jobs(path, w.jobs.ids, w.jobs.n, &w.o);
    cli_job_ids_release(&w.jobs);
    return status;
}
