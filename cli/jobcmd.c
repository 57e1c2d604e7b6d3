/*
 * jobcmd.c: what the job subcommands share (see jobcmd.h). cli_request (client.c) already
 * reports unreachable daemons and ErrorReplies, details included; this adds the check that
 * the answer is the one asked for, which each command would otherwise repeat, and the
 * SubmitRequest that `gsched submit` and `sbatch` both send; and cli_usage_error, the
 * usage message of every gsched subcommand (commands.h).
 */
#include "cli/jobcmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "common/error.h"
#include "proto/jobspec.h"

/* How long a submit keeps trying after gschedd went away mid-request (it may be restarting). */
#define SUBMIT_RETRY_MS 30000

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "gsched %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see gsched --help)\n");
    return 2;
}

int cli_call(const char *socket_path, Gs__Envelope *req, Gs__Envelope__BodyCase want,
             Gs__Envelope **ret_reply)
{
    Gs__Envelope *reply = NULL;
    int rc = cli_request(socket_path, req, &reply);

    if (rc < 0)
        return rc;
    if (reply->body_case != want) {
        fprintf(stderr, "gsched: gschedd answered with %s, not %s\n",
                gs_proto_body_name(reply->body_case), gs_proto_body_name(want));
        gs_proto_envelope_free(reply);
        return -EPROTO;
    }
    *ret_reply = reply;
    return 0;
}

/* Who submits, as the SubmitRequest carries it. */
struct submitter {
    Gs__UserIdentity pb;
    uint32_t *groups;
    char *username;
};

/* The supplementary groups; none when the system will not say. */
static int fill_groups(struct submitter *s)
{
    int n = getgroups(0, NULL);
    gid_t *gids;

    if (n <= 0)
        return 0;
    gids = calloc((size_t)n, sizeof(*gids));
    s->groups = calloc((size_t)n, sizeof(*s->groups));
    if (gids == NULL || s->groups == NULL) {
        free(gids);
        return -ENOMEM;
    }
    n = getgroups(n, gids);
    for (int i = 0; i < n; i++)
        s->groups[i] = (uint32_t)gids[i];
    s->pb.n_groups = n > 0 ? (size_t)n : 0;
    s->pb.groups = s->groups;
    free(gids);
    return 0;
}

static int submitter_init(struct submitter *s, const char *user)
{
    memset(s, 0, sizeof(*s));
    gs__user_identity__init(&s->pb);
    s->pb.uid = (uint32_t)getuid();
    s->pb.gid = (uint32_t)getgid();
    s->username = strdup(user);
    if (s->username == NULL)
        return -ENOMEM;
    s->pb.username = s->username;
    return fill_groups(s);
}

static void submitter_release(struct submitter *s)
{
    free(s->groups);
    free(s->username);
}

/* A fresh client key: 128 random bits in hex, from the kernel's generator. */
static int new_client_key(char key[33])
{
    unsigned char bytes[16];
    size_t got = 0;

    while (got < sizeof(bytes)) {
        ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);

        if (n < 0 && errno != EINTR)
            return -errno;
        got += n > 0 ? (size_t)n : 0;
    }
    for (size_t i = 0; i < sizeof(bytes); i++)
        snprintf(key + 2 * i, 3, "%02x", bytes[i]);
    return 0;
}

int cli_submit_send(const char *socket_path, const struct gs_jobspec *spec, const char *source,
                    bool validate_only, const char *user, const char *prefix,
                    Gs__Envelope **ret_reply)
{
    Gs__SubmitRequest req = GS__SUBMIT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct gs_proto_jobspec_view view;
    struct submitter who;
    const char *given = getenv("GSCHED_SUBMIT_KEY");
    char key[33];
    int rc = submitter_init(&who, user);

    if (rc == 0 && (given == NULL || given[0] == '\0'))
        rc = new_client_key(key);
    if (rc == 0)
        rc = gs_proto_jobspec_view_init(&view, spec);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", prefix, gs_strerror(rc));
        goto out;
    }
    view.spec.user = &who.pb;
    req.spec = &view.spec;
    req.validate_only = validate_only;
    req.source_file = (char *)source;
    /* The same key on every retry: a submit whose reply was lost queues nothing twice. */
    req.client_key = given != NULL && given[0] != '\0' ? (char *)given : key;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REQUEST;
    env.submit_request = &req;
    rc = cli_request_retried(socket_path, &env, SUBMIT_RETRY_MS, ret_reply);
    gs_proto_jobspec_view_release(&view);
out:
    submitter_release(&who);
    return rc;
}

void cli_json_kv_strings(struct gs_json *j, const char *key, char *const *v, size_t n)
{
    gs_json_key(j, key);
    gs_json_array_begin(j);
    for (size_t i = 0; i < n; i++)
        gs_json_string(j, v[i]);
    gs_json_array_end(j);
}

int cli_args_error(const char *cmd, const struct cli_args *a)
{
    return cli_usage_error(cmd, "%s '%s'", a->why, a->bad);
}

int cli_job_ids_add(struct cli_job_ids *v, const char *text)
{
    uint64_t id;

    if (cli_parse_job_id(text, &id) < 0)
        return -EINVAL;
    if (v->n == v->cap) {
        size_t cap = v->cap > 0 ? v->cap * 2 : 16;
        uint64_t *ids = realloc(v->ids, cap * sizeof(*ids));

        if (ids == NULL)
            return -ENOMEM;
        v->ids = ids;
        v->cap = cap;
    }
    v->ids[v->n++] = id;
    return 0;
}

void cli_job_ids_release(struct cli_job_ids *v)
{
    free(v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

int cli_job_ids_take(struct cli_job_ids *v, const char *cmd, const struct cli_args *a)
{
    int rc = cli_job_ids_add(v, a->value);

    if (rc == -EINVAL)
        return cli_usage_error(cmd, "not a job id: '%s'", a->value);
    if (rc < 0) {
        fprintf(stderr, "gsched %s: out of memory\n", cmd);
        return 1;
    }
    return 0;
}

void cli_sleep_ms(uint64_t ms)
{
    struct timespec left = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};

    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
}

static const struct cli_opt show_opts[] = {
    {"--json", NULL, false, 'j'},
    {"--socket", NULL, true, 's'},
    {NULL, NULL, false, 0},
};

int cli_show_fetch(const char *cmd, int argc, char **argv, bool *ret_json, Gs__Envelope **ret_reply)
{
    Gs__ShowRequest req = GS__SHOW_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    const char *socket_opt = NULL;
    struct cli_args a;
    bool have_id = false;
    char path[256];
    int opt;

    *ret_json = false;
    cli_args_init(&a, argc, argv);
    while ((opt = cli_args_next(&a, show_opts)) > 0) {
        if (opt == CLI_ARGS_OPERAND && have_id)
            return cli_usage_error(cmd, "one job at a time ('%s')", a.value);
        if (opt == CLI_ARGS_OPERAND && cli_parse_job_id(a.value, &req.job_id) < 0)
            return cli_usage_error(cmd, "not a job id: '%s'", a.value);
        if (opt == CLI_ARGS_OPERAND)
            have_id = true;
        else if (opt == 'j')
            *ret_json = true;
        else if (opt == 's')
            socket_opt = a.value;
    }
    if (opt < 0)
        return cli_args_error(cmd, &a);
    if (!have_id)
        return cli_usage_error(cmd, "which job? (gsched %s JOB)", cmd);
    if (cli_socket_path(socket_opt, path, sizeof(path)) < 0)
        return 1;
    env.body_case = GS__ENVELOPE__BODY_SHOW_REQUEST;
    env.show_request = &req;
    return cli_call(path, &env, GS__ENVELOPE__BODY_SHOW_REPLY, ret_reply) < 0 ? 1 : 0;
}
