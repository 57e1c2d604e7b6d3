/*
 * cmd_sreport.c: `sreport [OPTIONS] cluster utilization [start=TIME] [end=TIME]` (also
 * `gsched sreport`): how the cluster's cores (and with -T its GPUs) were used over a window,
 * as Slurm's sreport reports it, from gschedd's node availability and job allocation
 * history (ReportRequest, answered with a ReportReply).
 *
 * The reading of the command line and the layout are sreport_fmt.c's (pure, unit-tested);
 * this file sends the one request between them. Options as Slurm's: -t/--time-format
 * Seconds|Minutes|Hours|Percent|SecPer|MinPer|HourPer, -T/--tres cpu,gres/gpu (also
 * $SREPORT_TRES), -n/--noheader, -p/--parsable, -P/--parsable2, -a/--all_clusters (a
 * no-op: gschedd is one cluster); gsched adds --json and --socket. The window defaults to
 * Slurm's, midnight yesterday to midnight today (local time), and TIME takes
 * slurm_parse_date's forms (dates, "now", "today"), not Slurm's relative ones. Only
 * `cluster utilization` is offered, and without Slurm's "PLND Down" and "Planned" columns,
 * which gschedd does not record. Every failure exits 1 with "sreport: error: ...", as in
 * Slurm.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"
#include "slurm/sreport_fmt.h"

#define CMD "sreport"

static void usage(FILE *f)
{
    fputs("Usage: sreport [-t FORMAT] [-T cpu,gres/gpu] [-n] [-p | -P] [--json] [--socket PATH]\n"
          "               cluster utilization [start=TIME] [end=TIME]\n"
          "  FORMAT: Seconds, Minutes (default), Hours, Percent, SecPer, MinPer, HourPer.\n"
          "  TIME: YYYY-MM-DD[THH:MM[:SS]], now, today; default midnight yesterday to midnight\n"
          "  today. Only 'cluster utilization' is offered, without PLND Down and Planned,\n"
          "  which gschedd does not record.\n",
          f);
}

int cli_cmd_sreport(int argc, char **argv)
{
    Gs__ReportRequest req = GS__REPORT_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Envelope *reply = NULL;
    struct gs_buf err = GS_BUF_INIT, out = GS_BUF_INIT;
    struct slurm_sreport_args args;
    int rc, status;

    rc = slurm_sreport_parse(argc, argv, getenv("SREPORT_TRES"), gs_clock_wall_ms(), &args, &err);
    if (rc < 0) {
        status = slurm_error(CMD, "%s", err.len > 0 ? err.data : strerror(-rc));
        goto out;
    }
    if (args.help) {
        usage(stdout);
        status = 0;
        goto out;
    }
    req.start_ms = args.start_ms;
    req.end_ms = args.end_ms;
    env.body_case = GS__ENVELOPE__BODY_REPORT_REQUEST;
    env.report_request = &req;
    status = slurm_call(args.socket_opt, &env, GS__ENVELOPE__BODY_REPORT_REPLY, &reply);
    if (status != 0)
        goto out;
    rc = slurm_sreport_format(reply->report_reply, &args, &out);
    status = slurm_print(CMD, rc, &out);
out:
    gs_proto_envelope_free(reply);
    gs_buf_release(&out);
    gs_buf_release(&err);
    return status;
}
