/*
 * jobcmd.c: what the job subcommands share (see jobcmd.h). cli_request (client.c) already
 * reports unreachable daemons and ErrorReplies, details included; this adds the check that
 * the answer is the one asked for, which each command would otherwise repeat.
 */
#include "cli/jobcmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/client.h"
#include "cli/commands.h"

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
