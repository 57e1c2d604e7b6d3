/*
 * alloc.c: an allocation held from the submit host (alloc.h): the job from sbatch's
 * options, the AllocRequest and the AllocReply frames that follow it on one connection,
 * the AllocRelease at the end. What is said follows Slurm's salloc and srun word for word.
 */
#define _GNU_SOURCE /* asprintf */

#include "slurm/alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/error.h"
#include "proto/jobspec.h"

/* How long a pending allocation waits silently before saying it is queued, as Slurm's
 * salloc says nothing of a job that starts at once. */
#define ALLOC_QUIET_WAIT_MS 1000

/* --- the exchange ------------------------------------------------------------------------ */

static void free_env(char **env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

/* GRANTED's environment and nodes into al. */
static int take_grant(struct cli_alloc *al, const Gs__AllocReply *r)
{
    struct gs_buf nodes = GS_BUF_INIT;
    char **env = calloc(r->n_env + 1, sizeof(*env));
    int rc = env != NULL ? gs_buf_append_str(&nodes, "") : -ENOMEM;

    for (size_t i = 0, k = 0; rc == 0 && i < r->n_env; i++) {
        /* gschedd's own path to its socket, which this host may not have: salloc hands on
         * the way it reached gschedd instead (cmd_salloc.c). */
        if (strcmp(r->env[i]->key, "GSCHED_SOCKET") == 0)
            continue;
        if (asprintf(&env[k++], "%s=%s", r->env[i]->key, r->env[i]->value) < 0) {
            env[--k] = NULL;
            rc = -ENOMEM;
        }
    }
    for (size_t i = 0; rc == 0 && i < r->n_nodes; i++)
        rc = gs_buf_printf(&nodes, "%s%s", i > 0 ? "," : "", r->nodes[i]);
    if (rc < 0) {
        free_env(env);
        gs_buf_release(&nodes);
        fprintf(stderr, "%s: error: out of memory\n", al->prog);
        return rc;
    }
    al->env = env;
    al->nodes = gs_buf_detach(&nodes, NULL);
    return 0;
}

static void say_revoked(const struct cli_alloc *al, const Gs__AllocReply *r)
{
    if (r->state == GS__JOB_STATE__JOB_STATE_TIMEOUT)
        fprintf(stderr,
                "%s: Job %" PRIu64 " has exceeded its time limit and its allocation has been "
                "revoked.\n",
                al->prog, al->job_id);
    else
        fprintf(stderr, "%s: Job allocation %" PRIu64 " has been revoked.\n", al->prog, al->job_id);
}

/* One frame while waiting for the grant: 0 granted, 1 keep waiting, < 0 no allocation. */
static int on_wait_frame(struct cli_alloc *al, const Gs__Envelope *env, bool *said_pending)
{
    const Gs__AllocReply *r = env->alloc_reply;

    if (env->body_case == GS__ENVELOPE__BODY_ERROR) { /* each in its Slurm's words */
        fprintf(stderr, "%s: error: %s: %s\n", al->prog,
                strcmp(al->prog, "salloc") == 0 ? "Job submit/allocate failed"
                                                : "Unable to allocate resources",
                env->error->message);
        return -EINVAL;
    }
    if (env->body_case != GS__ENVELOPE__BODY_ALLOC_REPLY) {
        fprintf(stderr, "%s: error: gschedd answered with %s\n", al->prog,
                gs_proto_body_name(env->body_case));
        return -EPROTO;
    }
    al->job_id = r->job_id;
    if (r->event == GS__ALLOC_EVENT__ALLOC_EVENT_PENDING)
        return 1;
    if (r->event == GS__ALLOC_EVENT__ALLOC_EVENT_GRANTED) {
        if (*said_pending)
            fprintf(stderr, "%s: job %" PRIu64 " has been allocated resources\n", al->prog,
                    al->job_id);
        if (strcmp(al->prog, "salloc") == 0)
            fprintf(stderr, "salloc: Granted job allocation %" PRIu64 "\n", al->job_id);
        return take_grant(al, r);
    }
    say_revoked(al, r);
    return -ECANCELED;
}

static void say_pending(const struct cli_alloc *al, bool *said)
{
    if (*said || al->job_id == 0)
        return;
    *said = true;
    if (strcmp(al->prog, "salloc") == 0)
        fprintf(stderr, "salloc: Pending job allocation %" PRIu64 "\n", al->job_id);
    fprintf(stderr, "%s: job %" PRIu64 " queued and waiting for resources\n", al->prog, al->job_id);
}

int cli_alloc_immediate_value(const char *prog, const char *word, const char *value,
                              uint32_t *ret_s)
{
    unsigned long s = 1;
    char *end;

    if (value != NULL && (value[0] < '0' || value[0] > '9' ||
                          (s = strtoul(value, &end, 10), *end != '\0') || s == 0 || s > 86400)) {
        fprintf(stderr, "%s: error: %s: the seconds to wait, 1 to 86400\n", prog, word);
        return -EINVAL;
    }
    *ret_s = (uint32_t)s;
    return 0;
}

int cli_alloc_take_immediate(struct cli_alloc *al, char **opts, int *nopts)
{
    int kept = 0;

    for (int i = 0; i < *nopts; i++) {
        const char *w = opts[i], *value;

        if (strncmp(w, "-I", 2) == 0)
            value = w[2] != '\0' ? w + 2 : NULL;
        else if (strcmp(w, "--immediate") == 0 || strncmp(w, "--immediate=", 12) == 0)
            value = w[11] == '=' ? w + 12 : NULL;
        else {
            opts[kept++] = opts[i];
            continue;
        }
        if (cli_alloc_immediate_value(al->prog, w, value, &al->immediate_s) < 0)
            return -EINVAL;
    }
    *nopts = kept;
    return 0;
}

/* How long poll may wait now: until the pending notice, or until --immediate gives up. */
static int wait_ms(const struct cli_alloc *al, bool said, uint64_t since_ms)
{
    int64_t left = -1;

    if (al->immediate_s > 0)
        left = (int64_t)(since_ms + (uint64_t)al->immediate_s * 1000) - (int64_t)gs_clock_mono_ms();
    if (!said && (left < 0 || left > ALLOC_QUIET_WAIT_MS))
        return ALLOC_QUIET_WAIT_MS;
    return al->immediate_s == 0 ? -1 : left > 0 ? (int)left : 0;
}

/* Waits for GRANTED after the first reply; returns 0, or 1 (said). */
static int wait_grant(struct cli_alloc *al, Gs__Envelope *first, int sig_fd)
{
    uint64_t since_ms = gs_clock_mono_ms();
    bool said = false;
    int rc = on_wait_frame(al, first, &said);

    while (rc == 1) {
        struct pollfd p[2] = {{.fd = al->fd, .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};
        Gs__Envelope *env = NULL;
        int n = poll(p, sig_fd >= 0 ? 2 : 1, wait_ms(al, said, since_ms));
        unsigned char sig;

        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && al->immediate_s > 0 &&
            gs_clock_mono_ms() >= since_ms + (uint64_t)al->immediate_s * 1000) {
            /* Slurm's words; closing the connection cancels the job */
            fprintf(stderr,
                    "%s: error: Unable to allocate resources: job %" PRIu64
                    " not granted within %u second(s) (--immediate)\n",
                    al->prog, al->job_id, al->immediate_s);
            return 1;
        }
        if (n == 0) {
            say_pending(al, &said);
            continue;
        }
        if (sig_fd >= 0 && (p[1].revents & POLLIN) && read(sig_fd, &sig, 1) == 1) {
            fprintf(stderr, "%s: Job allocation %" PRIu64 " has been revoked.\n", al->prog,
                    al->job_id);
            return 1; /* closing the connection cancels it */
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        rc = gs_proto_read_fd(al->fd, 0, CLI_TIMEOUT_MS, &env);
        if (rc < 0) {
            fprintf(stderr, "%s: error: the connection to gschedd failed: %s\n", al->prog,
                    gs_proto_reason(rc));
            return 1;
        }
        rc = on_wait_frame(al, env, &said);
        gs_proto_envelope_free(env);
    }
    return rc == 0 ? 0 : 1;
}

int cli_alloc_get(struct cli_alloc *al, const struct gs_jobspec *spec, const char *socket_path,
                  int sig_fd)
{
    Gs__AllocRequest req = GS__ALLOC_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    struct gs_proto_jobspec_view view;
    int rc;

    al->fd = cli_connect(socket_path);
    if (al->fd < 0) {
        fprintf(stderr, "%s: error: cannot reach gschedd at %s: %s\n", al->prog, socket_path,
                gs_strerror(al->fd));
        return 1;
    }
    rc = gs_proto_jobspec_view_init(&view, spec);
    if (rc < 0) {
        fprintf(stderr, "%s: error: %s\n", al->prog, gs_strerror(rc));
        return 1;
    }
    req.spec = &view.spec;
    env.body_case = GS__ENVELOPE__BODY_ALLOC_REQUEST;
    env.alloc_request = &req;
    rc = cli_exchange(al->fd, &env, CLI_TIMEOUT_MS, &reply);
    gs_proto_jobspec_view_release(&view);
    if (rc < 0) {
        fprintf(stderr, "%s: error: gschedd at %s: %s\n", al->prog, socket_path,
                gs_proto_reason(rc));
        return 1;
    }
    rc = wait_grant(al, reply, sig_fd);
    gs_proto_envelope_free(reply);
    return rc;
}

int cli_alloc_poll(struct cli_alloc *al)
{
    Gs__Envelope *env = NULL;
    int rc = gs_proto_read_fd(al->fd, 0, CLI_TIMEOUT_MS, &env);

    if (rc < 0) {
        fprintf(stderr,
                "%s: error: Lost the connection to gschedd (%s): job allocation %" PRIu64
                " is gone\n",
                al->prog, gs_proto_reason(rc), al->job_id);
        return 1;
    }
    rc = 0;
    if (env->body_case == GS__ENVELOPE__BODY_ALLOC_REPLY &&
        env->alloc_reply->event == GS__ALLOC_EVENT__ALLOC_EVENT_REVOKED) {
        say_revoked(al, env->alloc_reply);
        rc = 1;
    }
    gs_proto_envelope_free(env);
    return rc;
}

int cli_alloc_release(struct cli_alloc *al, int exit_code, int term_signal, bool say)
{
    Gs__AllocRelease rel = GS__ALLOC_RELEASE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    int rc;

    if (say)
        fprintf(stderr, "%s: Relinquishing job allocation %" PRIu64 "\n", al->prog, al->job_id);
    rel.exit_code = exit_code;
    rel.term_signal = (uint32_t)term_signal;
    env.body_case = GS__ENVELOPE__BODY_ALLOC_RELEASE;
    env.alloc_release = &rel;
    rc = gs_proto_write_fd(al->fd, &env, CLI_TIMEOUT_MS);
    /* gschedd answers RELEASED once the end is stored, then closes. */
    while (rc == 0) {
        Gs__Envelope *got = NULL;

        rc = gs_proto_read_fd(al->fd, 0, CLI_TIMEOUT_MS, &got);
        if (rc == 0 && got->body_case == GS__ENVELOPE__BODY_ALLOC_REPLY &&
            got->alloc_reply->event == GS__ALLOC_EVENT__ALLOC_EVENT_RELEASED) {
            gs_proto_envelope_free(got);
            return 0;
        }
        if (rc == 0 && got->body_case == GS__ENVELOPE__BODY_ALLOC_REPLY &&
            got->alloc_reply->event == GS__ALLOC_EVENT__ALLOC_EVENT_REVOKED)
            say_revoked(al, got->alloc_reply); /* it ended before the release came */
        gs_proto_envelope_free(got);
    }
    if (rc == GS_PROTO_ERR_PEER_CLOSED)
        return 0; /* it ended under us, said */
    fprintf(stderr, "%s: error: releasing job allocation %" PRIu64 ": %s\n", al->prog, al->job_id,
            gs_proto_reason(rc));
    return rc;
}

void cli_alloc_release_fds(struct cli_alloc *al)
{
    if (al->fd >= 0)
        close(al->fd);
    al->fd = -1;
    free_env(al->env);
    al->env = NULL;
    free(al->nodes);
    al->nodes = NULL;
}
