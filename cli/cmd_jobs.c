/*
 * cmd_jobs.c: the commands that act on listed jobs and answer with one result per job:
 *
 *     gsched cancel JOB... [--signal SIG] [--reason TEXT] [--verbose] [--json]
 *     gsched hold JOB... [--verbose] [--json]
 *     gsched release JOB... [--verbose] [--json]
 *     gsched suspend JOB... [--verbose] [--json]
 *     gsched resume JOB... [--verbose] [--json]
 *
 * (all with [--socket PATH]). suspend stops every task of running jobs, which keep their
 * nodes and GPUs; resume continues them (root only: gschedd refuses others, per job). Each
 * job that could not be acted on is named on stderr ("gsched cancel: job 7: no such job")
 * and makes the exit status 1; the others are quiet unless --verbose. --json prints every
 * result as an array of JobActionResult objects.
 * Job ids are required: an empty selector would select every job.
 */
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "common/error.h"

enum action { ACTION_CANCEL, ACTION_HOLD, ACTION_RELEASE, ACTION_SUSPEND, ACTION_RESUME };

struct action_args {
    enum action action;
    const char *cmd;
    struct cli_job_ids jobs;
    uint32_t signal; /* cancel only: 0 ends the job, else only this signal is sent */
    const char *reason;
    const char *socket_opt;
    bool verbose;
    bool json;
};

static const struct cli_opt cancel_opts[] = {
    {"--signal", "-s", true, 'S'}, {"--reason", NULL, true, 'r'}, {"--verbose", "-v", false, 'v'},
    {"--json", NULL, false, 'j'},  {"--socket", NULL, true, 's'}, {NULL, NULL, false, 0},
};

static const struct cli_opt hold_opts[] = {
    {"--verbose", "-v", false, 'v'},
    {"--json", NULL, false, 'j'},
    {"--socket", NULL, true, 's'},
    {NULL, NULL, false, 0},
};

/* Returns 0, or the exit status to leave with. */
static int parse_args(int argc, char **argv, struct action_args *x)
{
    const struct cli_opt *opts = x->action == ACTION_CANCEL ? cancel_opts : hold_opts;
    struct cli_args a;
    int opt = 0, status = 0;

    cli_args_init(&a, argc, argv);
    while (status == 0 && (opt = cli_args_next(&a, opts)) > 0) {
        if (opt == CLI_ARGS_OPERAND)
            status = cli_job_ids_take(&x->jobs, x->cmd, &a);
        else if (opt == 'S' && cli_parse_signal(a.value, &x->signal) < 0)
            status = cli_usage_error(x->cmd, "unknown signal '%s' (TERM, USR1, 10...)", a.value);
        else if (opt == 'r')
            x->reason = a.value;
        else if (opt == 'v')
            x->verbose = true;
        else if (opt == 'j')
            x->json = true;
        else if (opt == 's')
            x->socket_opt = a.value;
    }
    if (status == 0 && opt < 0)
        status = cli_args_error(x->cmd, &a);
    if (status == 0 && x->jobs.n == 0)
        status = cli_usage_error(x->cmd, "which jobs? (gsched %s JOB...)", x->cmd);
    return status;
}

/* The request bodies, one of which build_request fills; the caller's storage. */
struct requests {
    Gs__CancelRequest cancel;
    Gs__HoldRequest hold;
    Gs__ReleaseRequest release;
    Gs__SuspendRequest suspend;
};

/* The request for x, borrowing sel (and x's strings); the reply body it must get back. */
static Gs__Envelope__BodyCase build_request(const struct action_args *x, Gs__Envelope *env,
                                            Gs__JobSelector *sel, struct requests *q)
{
    switch (x->action) {
    case ACTION_CANCEL:
        q->cancel.selector = sel;
        q->cancel.signal = x->signal;
        q->cancel.reason = (char *)(x->reason != NULL ? x->reason : "");
        env->body_case = GS__ENVELOPE__BODY_CANCEL_REQUEST;
        env->cancel_request = &q->cancel;
        return GS__ENVELOPE__BODY_CANCEL_REPLY;
    case ACTION_HOLD:
        q->hold.selector = sel;
        env->body_case = GS__ENVELOPE__BODY_HOLD_REQUEST;
        env->hold_request = &q->hold;
        return GS__ENVELOPE__BODY_HOLD_REPLY;
    case ACTION_SUSPEND:
    case ACTION_RESUME:
        q->suspend.selector = sel;
        q->suspend.resume = x->action == ACTION_RESUME;
        env->body_case = GS__ENVELOPE__BODY_SUSPEND_REQUEST;
        env->suspend_request = &q->suspend;
        return GS__ENVELOPE__BODY_SUSPEND_REPLY;
    default:
        q->release.selector = sel;
        env->body_case = GS__ENVELOPE__BODY_RELEASE_REQUEST;
        env->release_request = &q->release;
        return GS__ENVELOPE__BODY_RELEASE_REPLY;
    }
}

static const Gs__JobActionReply *action_reply(const Gs__Envelope *reply)
{
    switch (reply->body_case) {
    case GS__ENVELOPE__BODY_CANCEL_REPLY:
        return reply->cancel_reply;
    case GS__ENVELOPE__BODY_HOLD_REPLY:
        return reply->hold_reply;
    case GS__ENVELOPE__BODY_SUSPEND_REPLY:
        return reply->suspend_reply;
    default:
        return reply->release_reply;
    }
}

static const char *done_word(const struct action_args *x)
{
    switch (x->action) {
    case ACTION_CANCEL:
        return x->signal != 0 ? "signalled" : "cancelled";
    case ACTION_HOLD:
        return "held";
    case ACTION_SUSPEND:
        return "suspended";
    case ACTION_RESUME:
        return "resumed";
    default:
        return "released";
    }
}

/*
 * The state a job that was acted on is in. The wire keeps a suspended job RUNNING; one
 * suspend succeeded on is suspended, which is what people are shown (cli_job_shown_name).
 */
static const char *done_state(const struct action_args *x, const Gs__JobActionResult *r)
{
    if (x->action == ACTION_SUSPEND && r->state == GS__JOB_STATE__JOB_STATE_RUNNING)
        return "SUSPENDED";
    return cli_job_state_name(r->state);
}

/* Says what happened to one job; returns true when it failed. */
static bool report_result(const struct action_args *x, const Gs__JobActionResult *r)
{
    const char *msg = r->message != NULL && r->message[0] != '\0' ? r->message : NULL;

    if (r->code == 0) {
        if (x->verbose && !x->json)
            printf("job %llu: %s (%s)\n", (unsigned long long)r->job_id, done_word(x),
                   done_state(x, r));
        return false;
    }
    /* gschedd may or may not have named the job in its message already. */
    if (msg != NULL && strncmp(msg, "job ", 4) == 0)
        fprintf(stderr, "gsched %s: %s\n", x->cmd, msg);
    else
        fprintf(stderr, "gsched %s: job %llu: %s\n", x->cmd, (unsigned long long)r->job_id,
                msg != NULL ? msg : gs_strerror(r->code < 0 ? r->code : -EIO));
    return true;
}

static bool answered(const Gs__JobActionReply *r, uint64_t id)
{
    for (size_t i = 0; i < r->n_results; i++) {
        if (r->results[i]->job_id == id)
            return true;
    }
    return false;
}

/* Returns the exit status: 1 when any job failed or went unanswered. */
static int report(const struct action_args *x, const Gs__JobActionReply *r)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    bool failed = false;

    for (size_t i = 0; i < r->n_results; i++)
        failed |= report_result(x, r->results[i]);
    for (size_t i = 0; i < x->jobs.n; i++) {
        if (answered(r, x->jobs.ids[i]))
            continue;
        fprintf(stderr, "gsched %s: job %llu: no result from gschedd\n", x->cmd,
                (unsigned long long)x->jobs.ids[i]);
        failed = true;
    }
    if (x->json) {
        gs_json_init(&j, &out);
        gs_json_array_begin(&j);
        for (size_t i = 0; i < r->n_results; i++)
            cli_json_action_result(&j, r->results[i]);
        gs_json_array_end(&j);
        if (cli_json_write(&j, &out, stdout) < 0)
            failed = true;
        gs_buf_release(&out);
    }
    return failed ? 1 : 0;
}

static int run_action(enum action action, int argc, char **argv)
{
    struct action_args x = {.action = action, .cmd = argv[0]};
    Gs__JobSelector sel = GS__JOB_SELECTOR__INIT;
    struct requests q = {GS__CANCEL_REQUEST__INIT, GS__HOLD_REQUEST__INIT,
                         GS__RELEASE_REQUEST__INIT, GS__SUSPEND_REQUEST__INIT};
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    Gs__Envelope__BodyCase want;
    char path[256];
    int status = parse_args(argc, argv, &x);

    if (status != 0)
        goto out;
    status = 1;
    sel.job_ids = x.jobs.ids;
    sel.n_job_ids = x.jobs.n;
    want = build_request(&x, &env, &sel, &q);
    if (cli_socket_path(x.socket_opt, path, sizeof(path)) < 0 ||
        cli_call(path, &env, want, &reply) < 0)
        goto out;
    status = report(&x, action_reply(reply));
out:
    gs_proto_envelope_free(reply);
    cli_job_ids_release(&x.jobs);
    return status;
}

int cli_cmd_cancel(int argc, char **argv)
{
    return run_action(ACTION_CANCEL, argc, argv);
}

int cli_cmd_hold(int argc, char **argv)
{
    return run_action(ACTION_HOLD, argc, argv);
}

int cli_cmd_release(int argc, char **argv)
{
    return run_action(ACTION_RELEASE, argc, argv);
}

int cli_cmd_suspend(int argc, char **argv)
{
    return run_action(ACTION_SUSPEND, argc, argv);
}

int cli_cmd_resume(int argc, char **argv)
{
    return run_action(ACTION_RESUME, argc, argv);
}
