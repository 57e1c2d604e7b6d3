/*
 * cmd_logs.c: `gsched logs JOB [-f|--follow] [--task N] [--stderr] [--tail BYTES]
 * [--socket PATH]`: one task's output file, copied raw to stdout. gschedd forwards each
 * LogsRequest to the worker that ran the task, which answers with a chunk of the file;
 * the CLI asks for the next chunk from where the last one ended until it reaches the end
 * of the file, and with --follow goes on polling (every LOGS_POLL_MS) until the task has
 * ended and everything it wrote has been read.
 */
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/jobcmd.h"
#include "common/units.h"

#define LOGS_POLL_MS 200

struct logs_args {
    Gs__LogsRequest req;
    const char *socket_opt;
    bool follow;
};

static const struct cli_opt logs_opts[] = {
    {"--follow", "-f", false, 'f'}, {"--task", NULL, true, 't'},   {"--stderr", NULL, false, 'e'},
    {"--tail", NULL, true, 'T'},    {"--socket", NULL, true, 's'}, {NULL, NULL, false, 0},
};

/* One option or operand; returns 0 or the usage error's status. */
static int take_arg(struct logs_args *l, int opt, const char *value, bool *have_id)
{
    uint64_t n;

    if (opt == CLI_ARGS_OPERAND && *have_id)
        return cli_usage_error("logs", "one job at a time ('%s')", value);
    if (opt == CLI_ARGS_OPERAND && cli_parse_job_id(value, &l->req.job_id) < 0)
        return cli_usage_error("logs", "not a job id: '%s'", value);
    if (opt == 't' && (cli_parse_u64(value, &n) < 0 || n > UINT32_MAX))
        return cli_usage_error("logs", "not a task rank: '%s'", value);
    if (opt == 'T' && gs_parse_size(value, 1, &n) < 0)
        return cli_usage_error("logs", "bad --tail '%s' (bytes: 4096, 64K, 1M)", value);
    if (opt == CLI_ARGS_OPERAND)
        *have_id = true;
    else if (opt == 'f')
        l->follow = true;
    else if (opt == 't')
        l->req.rank = (uint32_t)n;
    else if (opt == 'e')
        l->req.stream = GS__LOG_STREAM__LOG_STREAM_STDERR;
    else if (opt == 's')
        l->socket_opt = value;
    if (opt == 'T') {
        l->req.offset = n;
        l->req.from_end = true;
    }
    return 0;
}

static int parse_args(int argc, char **argv, struct logs_args *l)
{
    struct cli_args a;
    bool have_id = false;
    int opt = 0, status = 0;

    cli_args_init(&a, argc, argv);
    while (status == 0 && (opt = cli_args_next(&a, logs_opts)) > 0)
        status = take_arg(l, opt, a.value, &have_id);
    if (status == 0 && opt < 0)
        status = cli_args_error("logs", &a);
    if (status == 0 && !have_id)
        status = cli_usage_error("logs", "which job? (gsched logs JOB)");
    return status;
}

/*
 * One chunk: written to stdout, the request moved on past it. Returns 1 when more is
 * already there, 0 at the end of the file (*ret_finished: and the task has ended), or < 0
 * having said why.
 */
static int read_chunk(const char *path, Gs__LogsRequest *req, bool *ret_finished)
{
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    const Gs__LogsReply *r;
    int rc;

    env.body_case = GS__ENVELOPE__BODY_LOGS_REQUEST;
    env.logs_request = req;
    rc = cli_call(path, &env, GS__ENVELOPE__BODY_LOGS_REPLY, &reply);
    if (rc < 0)
        return rc;
    r = reply->logs_reply;
    if (r->data.len > 0 &&
        (fwrite(r->data.data, 1, r->data.len, stdout) != r->data.len || fflush(stdout) != 0)) {
        fprintf(stderr, "gsched logs: cannot write to stdout\n");
        rc = -EIO;
    }
    /* Later requests count from the start of the file, from where this chunk ended. */
    req->offset = r->offset + r->data.len;
    req->from_end = false;
    *ret_finished = r->finished;
    /* An empty chunk short of the end (a file cut short) must not make us spin. */
    if (rc == 0)
        rc = !r->eof && r->data.len > 0 ? 1 : 0;
    gs_proto_envelope_free(reply);
    return rc;
}

int cli_cmd_logs(int argc, char **argv)
{
    struct logs_args l = {.req = GS__LOGS_REQUEST__INIT};
    bool finished = false;
    char path[256];
    int status = parse_args(argc, argv, &l), rc;

    if (status != 0)
        return status;
    if (cli_socket_path(l.socket_opt, path, sizeof(path)) < 0)
        return 1;
    for (;;) {
        rc = read_chunk(path, &l.req, &finished);
        if (rc < 0)
            return 1;
        if (rc == 1)
            continue;
        if (!l.follow || finished)
            return 0;
        cli_sleep_ms(LOGS_POLL_MS);
    }
}
