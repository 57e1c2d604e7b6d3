/*
 * sched_load.c: load generator for bench/sched_throughput.sh. Submits N copies of one job
 * file to a running gschedd over its Unix socket, keeping C submits in flight at once (as
 * many users and scripts do), waits until all have ended, then reads each job's history
 * and prints, as key=value lines:
 *
 *   submitted=N submit_s=... submit_jobs_per_s=...       (until the last SubmitReply)
 *   completed=N e2e_s=... e2e_jobs_per_s=...             (first submit to last job ended)
 *   latency_median_ms=... latency_p99_ms=...             (submit sent -> task started)
 *   failed=K                                              (jobs that did not COMPLETE)
 *
 * Latency is measured from the moment the submit was sent (this process, wall clock) to the
 * task's start time as its worker reported it (millisecond resolution, same machine).
 *
 * usage: sched_load --socket PATH -n N [-c C] JOB.toml
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "proto/conn.h"
#include "proto/frame.h"
#include "proto/jobspec.h"

struct load {
    uv_loop_t loop;
    const char *socket;
    size_t n, c;
    size_t started, done;
    Gs__JobSpec *spec;
    uint64_t *ids;
    double *sent_ms;
    double t0, t_submitted;
    int failures;
};

struct req {
    struct load *l;
    size_t i;
    uv_connect_t connect;
    struct gs_proto_conn *conn;
};

static double now_ms(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec * 1000.0 + (double)tv.tv_usec / 1000.0;
}

static void next_submit(struct load *l);

static void on_ready(struct gs_proto_conn *conn, const Gs__Hello *peer, void *data)
{
    struct req *r = data;
    Gs__SubmitRequest sr = GS__SUBMIT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    (void)peer;
    sr.spec = r->l->spec;
    env.request_id = 1;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REQUEST;
    env.submit_request = &sr;
    r->l->sent_ms[r->i] = now_ms();
    if (gs_proto_conn_send(conn, &env) < 0)
        gs_proto_conn_close(conn);
}

static void on_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct req *r = data;

    if (env->body_case == GS__ENVELOPE__BODY_SUBMIT_REPLY)
        r->l->ids[r->i] = env->submit_reply->job_id;
    else if (env->body_case == GS__ENVELOPE__BODY_ERROR)
        fprintf(stderr, "sched_load: submit refused: %s\n", env->error->message);
    gs_proto_conn_close(conn);
}

static void on_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct req *r = data;
    struct load *l = r->l;

    (void)conn;
    (void)status;
    if (l->ids[r->i] == 0)
        l->failures++;
    free(r);
    if (++l->done == l->n)
        l->t_submitted = now_ms();
    next_submit(l);
}

static void on_connect(uv_connect_t *creq, int status)
{
    struct req *r = creq->data;

    if (status < 0 || gs_proto_conn_start(r->conn) < 0)
        gs_proto_conn_close(r->conn);
}

static void next_submit(struct load *l)
{
    struct gs_proto_conn_opts opts = {.role = GS__ROLE__ROLE_CLI,
                                      .name = "sched_load",
                                      .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER),
                                      .on_ready = on_ready,
                                      .on_message = on_message,
                                      .on_close = on_close};
    struct req *r;

    if (l->started >= l->n)
        return;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return;
    r->l = l;
    r->i = l->started++;
    opts.data = r;
    r->conn = gs_proto_conn_new(&l->loop, GS_PROTO_PIPE, &opts);
    if (r->conn == NULL) {
        free(r);
        l->failures++;
        return;
    }
    r->connect.data = r;
    uv_pipe_connect(&r->connect, (uv_pipe_t *)gs_proto_conn_stream(r->conn), l->socket, on_connect);
}

/* One blocking request on a fresh connection; the reply is the caller's to free. */
static int request(const char *path, Gs__Envelope *env, Gs__Envelope **ret)
{
    int fd = -1, rc;
    struct sockaddr_un sun = {.sun_family = AF_UNIX};

    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        rc = -errno;
        goto out;
    }
    rc = gs_proto_handshake_fd(fd, GS__ROLE__ROLE_CLI, "sched_load",
                               GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER), 60000, NULL);
    if (rc == 0)
        rc = gs_proto_write_fd(fd, env, 60000);
    if (rc == 0)
        rc = gs_proto_read_fd(fd, 0, 600000, ret);
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Waits for every job, then collects each one's task start time. */
static int collect(struct load *l, double *lat, size_t *nlat, double *ret_last_end)
{
    Gs__WaitRequest wr = GS__WAIT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int rc;

    wr.job_ids = l->ids;
    wr.n_job_ids = l->n;
    env.request_id = 1;
    env.body_case = GS__ENVELOPE__BODY_WAIT_REQUEST;
    env.wait_request = &wr;
    rc = request(l->socket, &env, &reply);
    if (rc < 0 || reply->body_case != GS__ENVELOPE__BODY_WAIT_REPLY) {
        fprintf(stderr, "sched_load: wait failed (%d)\n", rc);
        gs_proto_envelope_free(reply);
        return rc < 0 ? rc : -EPROTO;
    }
    gs_proto_envelope_free(reply);
    *nlat = 0;
    for (size_t i = 0; i < l->n; i++) {
        Gs__ShowRequest sr = GS__SHOW_REQUEST__INIT;
        Gs__Envelope e = GS__ENVELOPE__INIT;

        sr.job_id = l->ids[i];
        e.request_id = 1;
        e.body_case = GS__ENVELOPE__BODY_SHOW_REQUEST;
        e.show_request = &sr;
        reply = NULL;
        if (request(l->socket, &e, &reply) == 0 &&
            reply->body_case == GS__ENVELOPE__BODY_SHOW_REPLY) {
            const Gs__ShowReply *s = reply->show_reply;
            if (s->job->state != GS__JOB_STATE__JOB_STATE_COMPLETED)
                l->failures++;
            if (s->n_task_exits > 0 && s->task_exits[0]->start_time_ms > 0)
                lat[(*nlat)++] = (double)s->task_exits[0]->start_time_ms - l->sent_ms[i];
            if (s->job->end_time_ms > *ret_last_end)
                *ret_last_end = (double)s->job->end_time_ms;
        }
        gs_proto_envelope_free(reply);
    }
    return 0;
}

static int load_spec(const char *path, struct gs_jobspec **ret)
{
    struct gs_buf text = GS_BUF_INIT, errors = GS_BUF_INIT;
    char chunk[4096], cwd[4096];
    FILE *f = fopen(path, "rb");
    size_t k;
    int rc = -errno;

    if (f == NULL)
        return rc;
    rc = 0;
    while (rc == 0 && (k = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = gs_buf_append(&text, chunk, k);
    fclose(f);
    if (rc == 0)
        rc = gs_jobspec_parse_toml(text.data, text.len, path, ret, &errors);
    if (rc < 0 && errors.data != NULL)
        fputs(errors.data, stderr);
    if (rc == 0 && (*ret)->workdir == NULL && getcwd(cwd, sizeof(cwd)) != NULL)
        (*ret)->workdir = strdup(cwd);
    gs_buf_release(&text);
    gs_buf_release(&errors);
    return rc;
}

int main(int argc, char **argv)
{
    struct load l = {.c = 32};
    struct gs_jobspec *spec = NULL;
    struct gs_proto_jobspec_view view;
    const char *path = NULL;
    double *lat = NULL, t_end;
    size_t nlat = 0;
    int rc = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
            l.socket = argv[++i];
        else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            l.n = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            l.c = strtoul(argv[++i], NULL, 10);
        else
            path = argv[i];
    }
    if (l.socket == NULL || path == NULL || l.n == 0 || l.c == 0) {
        fprintf(stderr, "usage: sched_load --socket PATH -n N [-c C] JOB.toml\n");
        return 2;
    }
    if (load_spec(path, &spec) < 0 || gs_proto_jobspec_view_init(&view, spec) < 0)
        return 1;
    l.spec = &view.spec;
    l.ids = calloc(l.n, sizeof(*l.ids));
    l.sent_ms = calloc(l.n, sizeof(*l.sent_ms));
    lat = calloc(l.n, sizeof(*lat));
    if (l.ids == NULL || l.sent_ms == NULL || lat == NULL)
        goto out;
    uv_loop_init(&l.loop);
    l.t0 = now_ms();
    for (size_t i = 0; i < l.c; i++)
        next_submit(&l);
    uv_run(&l.loop, UV_RUN_DEFAULT);
    uv_loop_close(&l.loop);
    if (l.failures > 0) {
        fprintf(stderr, "sched_load: %d submits failed\n", l.failures);
        goto out;
    }
    t_end = 0;
    if (collect(&l, lat, &nlat, &t_end) < 0)
        goto out;
    qsort(lat, nlat, sizeof(*lat), cmp_double);
    printf("submitted=%zu submit_s=%.3f submit_jobs_per_s=%.0f\n", l.n,
           (l.t_submitted - l.t0) / 1000.0, l.n * 1000.0 / (l.t_submitted - l.t0));
    printf("completed=%zu e2e_s=%.3f e2e_jobs_per_s=%.0f\n", l.n, (t_end - l.t0) / 1000.0,
           l.n * 1000.0 / (t_end - l.t0));
    printf("latency_median_ms=%.1f latency_p99_ms=%.1f\n", nlat ? lat[nlat / 2] : -1.0,
           nlat ? lat[(nlat * 99) / 100 < nlat ? (nlat * 99) / 100 : nlat - 1] : -1.0);
    printf("failed=%d\n", l.failures);
    rc = l.failures > 0;
out:
    gs_proto_jobspec_view_release(&view);
    gs_jobspec_free(spec);
    free(l.ids);
    free(l.sent_ms);
    free(lat);
    return rc;
}
