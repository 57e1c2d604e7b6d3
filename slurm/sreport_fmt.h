/*
 * sreport_fmt.h: sreport without the daemon: the command line read into the report, the
 * window and the layout asked for (slurm_sreport_parse), and gschedd's ReportReply laid out
 * as Slurm's sreport prints that report (slurm_sreport_format). The reports: `cluster
 * Utilization`, `cluster AccountUtilizationByUser`, `cluster UserUtilizationByAccount` and
 * `user TopUsage`. cmd_sreport.c joins the two with one request to gschedd; the unit tests
 * call them directly.
 *
 * Both are pure apart from the local time zone (the default window's midnights, the
 * header's dates), which they read as localtime_r does, and the Proper Name lookup, which
 * the caller passes in. They print nothing: errors and output go to the caller's buffers.
 * Thread-safe apart from getopt_long's globals, which slurm_sreport_parse uses as every
 * Slurm command does.
 */
#ifndef GS_SLURM_SREPORT_FMT_H
#define GS_SLURM_SREPORT_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/frame.h"

/* -t/--time-format: how each usage figure is shown. */
enum slurm_sreport_time {
    SLURM_SREPORT_MINUTES, /* the default */
    SLURM_SREPORT_SECONDS,
    SLURM_SREPORT_HOURS,
    SLURM_SREPORT_PERCENT, /* of Reported: "45.67%" */
    SLURM_SREPORT_SEC_PER, /* "123(45.67%)" */
    SLURM_SREPORT_MIN_PER,
    SLURM_SREPORT_HOUR_PER,
};

/* The report asked for. */
enum slurm_sreport_report {
    SLURM_SREPORT_UTILIZATION,     /* cluster Utilization: the cluster's time by state */
    SLURM_SREPORT_ACCOUNT_BY_USER, /* cluster AccountUtilizationByUser */
    SLURM_SREPORT_USER_BY_ACCOUNT, /* cluster UserUtilizationByAccount */
    SLURM_SREPORT_TOP_USAGE,       /* user TopUsage */
};

/* TopUsage's lines when TopCount= is not given, as in Slurm. */
#define SLURM_SREPORT_TOP_DEFAULT 10

enum slurm_sreport_parsable {
    SLURM_SREPORT_TABLE,
    SLURM_SREPORT_PARSABLE,  /* -p: '|' after every field */
    SLURM_SREPORT_PARSABLE2, /* -P: '|' between fields */
};

/* The TRES gschedd reports: "cpu" and "gres/gpu". */
#define SLURM_SREPORT_MAX_TRES 2

struct slurm_sreport_args {
    enum slurm_sreport_report report;
    uint32_t top_count;        /* TopUsage's TopCount= (parse sets the default; 0 reads as it) */
    uint64_t start_ms, end_ms; /* the window asked for, wall clock ms, start < end */
    enum slurm_sreport_time time_format;
    enum slurm_sreport_parsable parsable;
    bool noheader;                            /* -n */
    bool json;                                /* --json */
    bool help;                                /* -h/--help/--usage: print the usage, ask nothing */
    bool tres_set;                            /* -T or $SREPORT_TRES named the TRES */
    size_t ntres;                             /* >= 1 */
    const char *tres[SLURM_SREPORT_MAX_TRES]; /* "cpu", "gres/gpu" (static), in the order given */
    const char *socket_opt;                   /* --socket, borrowed from argv; NULL: default */
};

/*
 * Reads `sreport [OPTIONS] cluster Utilization|AccountUtilizationByUser|
 * UserUtilizationByAccount [start=TIME] [end=TIME]` or `sreport [OPTIONS] user TopUsage
 * [start=TIME] [end=TIME] [TopCount=N]` (words and keys in any case, with Slurm's
 * abbreviations; argv[0] the command's name; getopt_long permutes argv, so options may come
 * after the words). env_tres is $SREPORT_TRES (NULL: unset), which -T overrides, as in
 * Slurm. now_ms is the wall clock: the default window runs from midnight before end's day
 * to midnight today (local time), TIME is read by slurm_parse_date. Returns 0 with *ret
 * filled, or -EINVAL with the reason appended to err, one line without the
 * "sreport: error: " prefix or a newline, naming what was refused (an option, a report not
 * offered, a -t value, a TRES, a condition, a TopCount, a time).
 */
int slurm_sreport_parse(int argc, char **argv, const char *env_tres, uint64_t now_ms,
                        struct slurm_sreport_args *ret, struct gs_buf *err);

/* Whether args' report needs gschedd's per-user figures (ReportRequest.by_user). */
bool slurm_sreport_by_user(const struct slurm_sreport_args *args);

/*
 * The Proper Name of login for the user reports: written to buf (size > 0) NUL-terminated,
 * "" when unknown. cmd_sreport.c's looks up the passwd entry's GECOS full name; ctx is
 * the caller's.
 */
typedef void (*slurm_sreport_name_fn)(void *ctx, const char *login, char *buf, size_t size);

/*
 * Appends the report of reply as args ask: Slurm's title block (unless -n), the column
 * names, then the lines: for Utilization one per TRES of args->tres that the reply holds,
 * in args' order; for the user reports one per account, user or (user, account) and TRES
 * (sreport_fmt.c says which, in what order); or with args->json one JSON object and a
 * newline. name gives the Proper Name column (NULL: empty), called with name_ctx. Returns
 * 0 or -ENOMEM.
 */
int slurm_sreport_format(const Gs__ReportReply *reply, const struct slurm_sreport_args *args,
                         slurm_sreport_name_fn name, void *name_ctx, struct gs_buf *out);

#endif
