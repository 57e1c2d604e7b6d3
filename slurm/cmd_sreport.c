/*
 * cmd_sreport.c: `sreport [OPTIONS] cluster Utilization|AccountUtilizationByUser|
 * UserUtilizationByAccount [start=TIME] [end=TIME]` and `sreport [OPTIONS] user TopUsage
 * [start=TIME] [end=TIME] [TopCount=N]` (also `gsched sreport`): how the cluster's cores
 * (and with -T its GPUs) were used over a window, and by which accounts and users, as
 * Slurm's sreport reports it, from gschedd's node availability and job allocation history
 * (ReportRequest, answered with a ReportReply; by_user asks for the per-user figures the
 * user reports need).
 *
 * The reading of the command line and the layout are sreport_fmt.c's (pure, unit-tested);
 * this file sends the one request between them and looks up the Proper Name column (the
 * passwd entry's GECOS full name, up to its first comma, as Slurm's sreport shows it).
 * Options as Slurm's: -t/--time-format Seconds|Minutes|Hours|Percent|SecPer|MinPer|HourPer,
 * -T/--tres cpu,gres/gpu (also $SREPORT_TRES), -n/--noheader, -p/--parsable,
 * -P/--parsable2, -a/--all_clusters (a no-op: gschedd is one cluster); gsched adds --json
 * and --socket. The window defaults to Slurm's, midnight yesterday to midnight today (local
 * time), and TIME takes slurm_parse_date's forms (dates, "now", "today"), not Slurm's
 * relative ones. Not offered: Slurm's other reports, its "PLND Down" and "Planned" columns
 * (gschedd does not record them), TopUsage's Group. Every failure exits 1 with
 * "sreport: error: ...", as in Slurm.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <pwd.h>
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
          "               REPORT [start=TIME] [end=TIME]\n"
          "  REPORT: cluster Utilization, cluster AccountUtilizationByUser,\n"
          "          cluster UserUtilizationByAccount, user TopUsage [TopCount=N (default 10)]\n"
          "  FORMAT: Seconds, Minutes (default), Hours, Percent, SecPer, MinPer, HourPer.\n"
          "  TIME: YYYY-MM-DD[THH:MM[:SS]], now, today; default midnight yesterday to midnight\n"
          "  today. Jobs with no account count as root's. No PLND Down or Planned (gschedd\n"
          "  does not record them), no TopUsage Group.\n",
          f);
}

/* The Proper Name column: login's GECOS full name, up to its first comma; "" if unknown. */
static void gecos_name(void *ctx, const char *login, char *buf, size_t size)
{
    struct passwd pw, *found = NULL;
    char pwbuf[4096];

    (void)ctx;
    buf[0] = '\0';
    if (getpwnam_r(login, &pw, pwbuf, sizeof(pwbuf), &found) != 0 || found == NULL ||
        pw.pw_gecos == NULL)
        return;
    snprintf(buf, size, "%.*s", (int)strcspn(pw.pw_gecos, ","), pw.pw_gecos);
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
    req.by_user = slurm_sreport_by_user(&args);
    env.body_case = GS__ENVELOPE__BODY_REPORT_REQUEST;
    env.report_request = &req;
    status = slurm_call(args.socket_opt, &env, GS__ENVELOPE__BODY_REPORT_REPLY, &reply);
    if (status != 0)
        goto out;
    rc = slurm_sreport_format(reply->report_reply, &args, gecos_name, NULL, &out);
    status = slurm_print(CMD, rc, &out);
out:
    gs_proto_envelope_free(reply);
    gs_buf_release(&out);
    gs_buf_release(&err);
    return status;
}
