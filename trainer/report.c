/*
 * report.c: progress reports to gschedd (see report.h). Each report is its own connection,
 * as every gsched CLI request is: hello, one JobProgressReport, one reply. The socket is
 * non-blocking from the start, so that even a connect to a listener whose backlog is full
 * fails at once instead of holding the step; every later wait is against one deadline.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/report.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"
#include "proto/frame.h"

struct trn_report {
    char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    uint64_t job_id;
    uint32_t every;
    FILE *warn;
    bool warned;       /* the one warning line is out */
    bool off;          /* refused, or failing too often: no more reports */
    unsigned failures; /* in a row */
    bool eval_due;     /* an evaluation since the last report */
    double eval_loss;  /* 0: none yet, as on the wire */
    uint64_t eval_step;
};

int trn_report_open(uint32_t every, FILE *warn, struct trn_report **ret)
{
    const char *id = getenv("GSCHED_JOB_ID"), *sock = getenv("GSCHED_SOCKET");
    struct trn_report *r;
    unsigned long long job_id;
    char *end;

    *ret = NULL;
    if (id == NULL || id[0] == '\0' || sock == NULL || sock[0] == '\0')
        return 0;
    errno = 0;
    job_id = strtoull(id, &end, 10);
    /* Not a job id we could report for, or a path no Unix socket can have: not in a job. */
    if (errno != 0 || *end != '\0' || job_id == 0 || strlen(sock) >= sizeof(r->socket_path))
        return 0;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -ENOMEM;
    memcpy(r->socket_path, sock, strlen(sock) + 1);
    r->job_id = job_id;
    r->every = every > 0 ? every : 1;
    r->warn = warn;
    *ret = r;
    return 0;
}

void trn_report_free(struct trn_report *r)
{
    free(r);
}

void trn_report_eval(struct trn_report *r, uint64_t step, double loss)
{
    if (r == NULL)
        return;
    r->eval_due = true;
    r->eval_loss = loss;
    r->eval_step = step;
}

/* Milliseconds left before deadline, at least 1 so that a last poll still looks. */
static int left_ms(uint64_t deadline)
{
    uint64_t now = gs_clock_mono_ms();

    return now + 1 >= deadline ? 1 : (int)(deadline - now);
}

static int connect_nonblocking(const char *path, uint64_t deadline)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct pollfd pfd;
    socklen_t len = sizeof(int);
    int fd, err = 0, rc = 0;

    if (strlen(path) >= sizeof(sun.sun_path))
        return -ENAMETOOLONG;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
        return fd;
    if (errno != EINPROGRESS) { /* EAGAIN: the listener's backlog is full; give up now */
        rc = -errno;
        goto out;
    }
    pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
    rc = poll(&pfd, 1, left_ms(deadline));
    if (rc == 0)
        rc = -ETIMEDOUT;
    else if (rc < 0)
        rc = -errno;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        rc = -errno;
    else
        rc = err != 0 ? -err : 0;
out:
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int trn_report_send(const char *socket_path, const Gs__JobProgressReport *msg, int timeout_ms,
                    bool *ret_refused, char *why, size_t size)
{
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 1);
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int fd, rc;

    snprintf(why, size, "%s", "");
    if (ret_refused != NULL)
        *ret_refused = false;
    env.request_id = 1;
    env.body_case = GS__ENVELOPE__BODY_JOB_PROGRESS_REPORT;
    env.job_progress_report = (Gs__JobProgressReport *)msg;
    fd = connect_nonblocking(socket_path, deadline);
    if (fd < 0) {
        snprintf(why, size, "cannot connect: %s", gs_strerror(fd));
        return fd;
    }
    rc =
        gs_proto_handshake_fd(fd, GS__ROLE__ROLE_CLI, "gsched-train",
                              GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER), left_ms(deadline), NULL);
    if (rc == 0)
        rc = gs_proto_write_fd(fd, &env, left_ms(deadline));
    if (rc == 0)
        rc = gs_proto_read_fd(fd, 0, left_ms(deadline), &reply);
    if (rc < 0) {
        snprintf(why, size, "%s", gs_proto_reason(rc));
        goto out;
    }
    if (reply->body_case == GS__ENVELOPE__BODY_ERROR) {
        rc = reply->error->code < 0 ? reply->error->code : -EIO;
        snprintf(why, size, "%s", reply->error->message);
        if (ret_refused != NULL)
            *ret_refused = true;
    } else if (reply->body_case != GS__ENVELOPE__BODY_JOB_PROGRESS_REPLY) {
        rc = -EPROTO;
        snprintf(why, size, "unexpected %s reply", gs_proto_body_name(reply->body_case));
    }
out:
    gs_proto_envelope_free(reply);
    close(fd);
    return rc;
}

/* 1 - exposed / total, within [0, 1], as the metrics line has it. */
static double overlap_of(const struct trn_step_record *rec)
{
    double o = rec->comm_ms > 0 ? 1.0 - rec->exposed_ms / rec->comm_ms : 1.0;

    return o < 0 ? 0 : o;
}

static void fill(const struct trn_report *r, const struct trn_step_record *rec,
                 Gs__JobProgressReport *m)
{
    double secs = rec->step_ms / 1000.0;

    gs__job_progress_report__init(m);
    m->job_id = r->job_id;
    m->step = rec->step + 1; /* steps done: the last report of a full run says steps/steps */
    m->steps = rec->steps;
    m->loss = rec->loss;
    m->tokens_per_s = secs > 0 ? (double)rec->tokens / secs : 0;
    m->ranks = rec->ranks;
    if (rec->ranks > 1) {
        m->comm_ms = rec->comm_ms;
        m->comm_exposed_ms = rec->exposed_ms;
        m->overlap = overlap_of(rec);
    }
    m->eval_loss = r->eval_loss;
    m->eval_step = r->eval_step;
    m->lr = rec->lr;
}

void trn_report_step(struct trn_report *r, const struct trn_step_record *rec, bool force)
{
    Gs__JobProgressReport msg;
    bool refused;
    char why[160];
    int rc;

    if (r == NULL || r->off)
        return;
    if (!force && !r->eval_due && rec->step % r->every != 0 && rec->step + 1 != rec->steps)
        return;
    fill(r, rec, &msg);
    rc = trn_report_send(r->socket_path, &msg, TRN_REPORT_TIMEOUT_MS, &refused, why, sizeof(why));
    if (rc == 0) {
        r->failures = 0;
        r->eval_due = false;
        return;
    }
    /* A refusal is gschedd's considered answer (not the owner, job not running, a gschedd
     * too old to know the message): asking again will not change it. A transport failure
     * may pass (a worker reconnecting), but not forever: each costs up to the timeout. */
    r->failures++;
    if (refused || r->failures >= TRN_REPORT_MAX_FAILURES)
        r->off = true;
    if (r->warn != NULL && !r->warned) {
        fprintf(r->warn,
                "gsched-train: warning: progress report for job %llu to %s failed: %s "
                "(rc=%d); training goes on%s\n",
                (unsigned long long)r->job_id, r->socket_path, why, rc,
                r->off ? ", reports are off" : ", further failures are not shown");
        fflush(r->warn);
        r->warned = true;
    }
}
