/*
 * cmd_sdiag.c: `sdiag` (also `gsched sdiag`): gschedd's scheduling diagnostics in the layout
 * of Slurm's sdiag, so an operator's habits and scripts carry over:
 *
 *     *******************************************************
 *     sdiag output at Mon Dec 07 00:35:00 2026 (1796603700)
 *     Data since      Mon Dec 07 00:00:00 2026 (1796601600)
 *     *******************************************************
 *     Nodes:                4
 *     ...
 *     Jobs submitted: 14
 *     ...
 *     Main schedule statistics (microseconds):
 *             Last cycle:   256
 *
 * The counters (DiagReply) run from gschedd's start or root's last `sdiag -r` (--reset,
 * which prints "Reset scheduling statistics"); --json prints the reply's fields as they are.
 * What Slurm shows of its own machinery (agent queues, RPC statistics by user, the
 * backfill thread's depth and times) gsched has no counterpart of and leaves out: one loop
 * plans in full each pass, backfill included. Errors exit 1, as Slurm's.
 */
#include "slurm/commands.h"

#include <getopt.h>
#include <stdio.h>
#include <time.h>

#include "common/json.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"

#define CMD "sdiag"

struct sdiag_args {
    const char *socket_opt;
    bool reset, json;
};

static void usage(FILE *f)
{
    fputs("Usage: sdiag [-r | --reset] [--json] [--socket PATH]\n"
          "  -r, --reset   count again from now (root)\n",
          f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, struct sdiag_args *a)
{
    static const struct option opts[] = {
        {"reset", no_argument, NULL, 'r'},        {"json", no_argument, NULL, 'J'},
        {"socket", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
        {"usage", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":rh", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            a->reset = true;
            break;
        case 'J':
            a->json = true;
            break;
        case 's':
            a->socket_opt = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    if (optind < argc)
        return slurm_error(CMD, "unexpected argument '%s'", argv[optind]);
    return -1;
}

/* Slurm's "Mon Dec 07 00:35:00 2026 (1796603700)": ctime's layout, local time, then seconds. */
static void put_when(struct gs_buf *out, const char *label, uint64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char text[64] = "";

    if (localtime_r(&t, &tm) != NULL)
        strftime(text, sizeof(text), "%a %b %d %H:%M:%S %Y", &tm);
    gs_buf_printf(out, "%s%s (%lld)\n", label, text, (long long)t);
}

static void put_text(struct gs_buf *out, const Gs__DiagReply *r)
{
    uint64_t minutes = r->now_ms > r->since_ms ? (r->now_ms - r->since_ms) / 60000 : 0;

    gs_buf_append_str(out, "*******************************************************\n");
    put_when(out, "sdiag output at ", r->now_ms);
    put_when(out, "Data since      ", r->since_ms);
    gs_buf_append_str(out, "*******************************************************\n");
    gs_buf_printf(out, "Nodes:                %u\n", r->nodes);
    gs_buf_printf(out, "CLI connections:      %u\n\n", r->cli_connections);
    gs_buf_printf(out, "Jobs submitted: %llu\n", (unsigned long long)r->jobs_submitted);
    gs_buf_printf(out, "Jobs started:   %llu\n", (unsigned long long)r->jobs_started);
    gs_buf_printf(out, "Jobs completed: %llu\n", (unsigned long long)r->jobs_completed);
    gs_buf_printf(out, "Jobs canceled:  %llu\n", (unsigned long long)r->jobs_cancelled);
    gs_buf_printf(out, "Jobs failed:    %llu\n\n", (unsigned long long)r->jobs_failed);
    put_when(out, "Job states ts:  ", r->now_ms);
    gs_buf_printf(out, "Jobs pending:   %u\n", r->jobs_pending);
    gs_buf_printf(out, "Jobs running:   %u\n\n", r->jobs_running);
    gs_buf_append_str(out, "Main schedule statistics (microseconds):\n");
    gs_buf_printf(out, "\tLast cycle:   %llu\n", (unsigned long long)r->plan_last_us);
    gs_buf_printf(out, "\tMax cycle:    %llu\n", (unsigned long long)r->plan_max_us);
    gs_buf_printf(out, "\tTotal cycles: %llu\n", (unsigned long long)r->plan_passes);
    gs_buf_printf(out, "\tMean cycle:   %llu\n",
                  (unsigned long long)(r->plan_passes > 0 ? r->plan_sum_us / r->plan_passes : 0));
    gs_buf_printf(out, "\tCycles per minute: %llu\n",
                  (unsigned long long)(minutes > 0 ? r->plan_passes / minutes : r->plan_passes));
    gs_buf_printf(out, "\tLast queue length: %u\n\n", r->plan_last_queue);
    gs_buf_append_str(out, "Backfilling stats\n");
    gs_buf_printf(out, "\tTotal backfilled jobs (since last stats cycle start): %llu\n\n",
                  (unsigned long long)r->jobs_backfilled);
    gs_buf_printf(out, "Preemptions: %llu\n", (unsigned long long)r->preemptions);
}

static int put_json(struct gs_buf *out, const Gs__DiagReply *r)
{
    struct gs_json j;
    int rc;

    gs_json_init(&j, out);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "now_ms", r->now_ms);
    gs_json_kv_uint(&j, "since_ms", r->since_ms);
    gs_json_kv_uint(&j, "jobs_submitted", r->jobs_submitted);
    gs_json_kv_uint(&j, "jobs_started", r->jobs_started);
    gs_json_kv_uint(&j, "jobs_completed", r->jobs_completed);
    gs_json_kv_uint(&j, "jobs_cancelled", r->jobs_cancelled);
    gs_json_kv_uint(&j, "jobs_failed", r->jobs_failed);
    gs_json_kv_uint(&j, "jobs_pending", r->jobs_pending);
    gs_json_kv_uint(&j, "jobs_running", r->jobs_running);
    gs_json_kv_uint(&j, "jobs_backfilled", r->jobs_backfilled);
    gs_json_kv_uint(&j, "preemptions", r->preemptions);
    gs_json_kv_uint(&j, "plan_passes", r->plan_passes);
    gs_json_kv_uint(&j, "plan_last_us", r->plan_last_us);
    gs_json_kv_uint(&j, "plan_max_us", r->plan_max_us);
    gs_json_kv_uint(&j, "plan_sum_us", r->plan_sum_us);
    gs_json_kv_uint(&j, "plan_last_queue", r->plan_last_queue);
    gs_json_kv_uint(&j, "nodes", r->nodes);
    gs_json_kv_uint(&j, "cli_connections", r->cli_connections);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

int cli_cmd_sdiag(int argc, char **argv)
{
    struct sdiag_args a = {0};
    Gs__DiagRequest req = GS__DIAG_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    struct gs_buf out = GS_BUF_INIT;
    int status = parse_options(argc, argv, &a), rc;

    if (status >= 0)
        return status;
    req.reset = a.reset;
    env.body_case = GS__ENVELOPE__BODY_DIAG_REQUEST;
    env.diag_request = &req;
    status = slurm_call_as(CMD, a.socket_opt, &env, GS__ENVELOPE__BODY_DIAG_REPLY, NULL, &reply);
    if (status != 0)
        return status;
    if (a.json) {
        rc = put_json(&out, reply->diag_reply);
    } else if (a.reset) {
        rc = gs_buf_append_str(&out, "Reset scheduling statistics\n");
    } else {
        put_text(&out, reply->diag_reply);
        rc = gs_buf_error(&out);
    }
    status = slurm_print(CMD, rc, &out);
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    return status;
}
