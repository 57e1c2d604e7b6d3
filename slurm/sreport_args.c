/*
 * sreport_args.c: sreport's command line read as Slurm's sreport reads it (sreport_fmt.h:
 * slurm_sreport_parse): the options (-t, -T and $SREPORT_TRES, -n, -p, -P, --json, --socket),
 * the report's words with Slurm's abbreviations, its conditions (start=, end=, TopCount=) and
 * the default window. Pure: sreport_fmt.c lays out the reply, cmd_sreport.c asks gschedd.
 */
#include "slurm/sreport_fmt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "slurm/slurm_fmt.h"

#define OFFERED                                                                                    \
    "gsched's sreport offers 'cluster Utilization', 'cluster AccountUtilizationByUser', "          \
    "'cluster UserUtilizationByAccount' and 'user TopUsage'"

enum {
    OPT_JSON = 0x100,
    OPT_SOCKET,
    OPT_GROUP,
};

static const char *const report_names[] = {
    [SLURM_SREPORT_UTILIZATION] = "cluster Utilization",
    [SLURM_SREPORT_ACCOUNT_BY_USER] = "cluster AccountUtilizationByUser",
    [SLURM_SREPORT_USER_BY_ACCOUNT] = "cluster UserUtilizationByAccount",
    [SLURM_SREPORT_TOP_USAGE] = "user TopUsage",
};

/* --- the command line ---------------------------------------------------------------------- */

/* Slurm's keyword matching: word is name, or a prefix of it at least min long, in any case. */
static bool keyword(const char *word, const char *name, size_t min)
{
    size_t len = strlen(word);

    return len >= min && len <= strlen(name) && strncasecmp(word, name, len) == 0;
}

static const struct {
    const char *name;
    size_t min; /* the shortest prefix Slurm takes */
    enum slurm_sreport_time format;
} time_formats[] = {
    {"SecPer", 6, SLURM_SREPORT_SEC_PER},   {"MinPer", 6, SLURM_SREPORT_MIN_PER},
    {"HourPer", 6, SLURM_SREPORT_HOUR_PER}, {"Seconds", 1, SLURM_SREPORT_SECONDS},
    {"Minutes", 1, SLURM_SREPORT_MINUTES},  {"Hours", 1, SLURM_SREPORT_HOURS},
    {"Percent", 1, SLURM_SREPORT_PERCENT},
};

static int parse_time_format(const char *word, struct slurm_sreport_args *a, struct gs_buf *err)
{
    for (size_t i = 0; i < sizeof(time_formats) / sizeof(time_formats[0]); i++) {
        if (keyword(word, time_formats[i].name, time_formats[i].min)) {
            a->time_format = time_formats[i].format;
            return 0;
        }
    }
    gs_buf_printf(err,
                  "unknown time format '%s': use Seconds, Minutes, Hours, Percent, SecPer, "
                  "MinPer or HourPer",
                  word);
    return -EINVAL;
}

/* One TRES as typed ("cpu", "gres/gpu", "gpu", any case): its name in the reply, or NULL. */
static const char *tres_name(const char *word, size_t len)
{
    if (len == 3 && strncasecmp(word, "cpu", 3) == 0)
        return "cpu";
    if ((len == 8 && strncasecmp(word, "gres/gpu", 8) == 0) ||
        (len == 3 && strncasecmp(word, "gpu", 3) == 0))
        return "gres/gpu";
    return NULL;
}

/* A comma-separated TRES list from from ("-T", "SREPORT_TRES"); each TRES once, in order. */
static int parse_tres(const char *list, const char *from, struct slurm_sreport_args *a,
                      struct gs_buf *err)
{
    const char *p = list;

    a->ntres = 0;
    a->tres_set = true;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *name = tres_name(p, len);
        bool listed = false;

        if (name == NULL) {
            gs_buf_printf(err, "unknown TRES '%.*s' in %s %s: gschedd reports cpu and gres/gpu",
                          (int)len, p, from, list);
            return -EINVAL;
        }
        for (size_t i = 0; i < a->ntres; i++)
            listed = listed || strcmp(a->tres[i], name) == 0;
        if (!listed)
            a->tres[a->ntres++] = name;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* getopt_long's refusal (c is '?' or ':'), named as GNU getopt names it. */
static int option_refused(int c, const char *arg, struct gs_buf *err)
{
    if (c == ':')
        gs_buf_printf(err, "option '%s' requires an argument", arg);
    else if (optopt != 0)
        gs_buf_printf(err,
                      "invalid option -- '%c' (" OFFERED ", with -t, -T, -n, -p, -P, "
                      "--json, --socket)",
                      optopt);
    else
        gs_buf_printf(err,
                      "unrecognized option '%s' (" OFFERED ", with -t, -T, -n, -p, -P, "
                      "--json, --socket)",
                      arg);
    return -EINVAL;
}

/* The options; *ret_tres gets the last -T. Leaves optind at the first word. */
static int parse_options(int argc, char **argv, struct slurm_sreport_args *a, const char **ret_tres,
                         struct gs_buf *err)
{
    static const struct option opts[] = {
        {"all_clusters", no_argument, NULL, 'a'},
        {"noheader", no_argument, NULL, 'n'},
        {"parsable", no_argument, NULL, 'p'},
        {"parsable2", no_argument, NULL, 'P'},
        {"time-format", required_argument, NULL, 't'},
        {"tres", required_argument, NULL, 'T'},
        {"json", no_argument, NULL, OPT_JSON},
        {"socket", required_argument, NULL, OPT_SOCKET},
        {"group", no_argument, NULL, OPT_GROUP},
        {"help", no_argument, NULL, 'h'},
        {"usage", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = 0;

    opterr = 0;
    optind = 0; /* glibc: start afresh, a half-read "-np" of an earlier call included */
    while (rc == 0 && (c = getopt_long(argc, argv, ":ahnpPt:T:", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            break; /* every cluster: gschedd has one */
        case 'h':
            a->help = true;
            break;
        case 'n':
            a->noheader = true;
            break;
        case 'p':
            a->parsable = SLURM_SREPORT_PARSABLE;
            break;
        case 'P':
            a->parsable = SLURM_SREPORT_PARSABLE2;
            break;
        case 't':
            rc = parse_time_format(optarg, a, err);
            break;
        case 'T':
            *ret_tres = optarg;
            break;
        case OPT_JSON:
            a->json = true;
            break;
        case OPT_SOCKET:
            a->socket_opt = optarg;
            break;
        case OPT_GROUP:
            gs_buf_printf(err,
                          "option '%s' is not offered: gsched's TopUsage always gives one "
                          "line per user, their accounts summed",
                          argv[optind - 1]);
            rc = -EINVAL;
            break;
        default:
            rc = option_refused(c, argv[optind - 1], err);
            break;
        }
    }
    return rc;
}

/* The report's two words, `cluster REPORT` or `user REPORT`, with Slurm's abbreviations. */
static int parse_report(int argc, char **argv, struct slurm_sreport_args *a, struct gs_buf *err)
{
    bool cluster, user;

    if (argc == 0) {
        gs_buf_printf(err, "no report given: " OFFERED);
        return -EINVAL;
    }
    cluster = keyword(argv[0], "cluster", 2);
    user = keyword(argv[0], "user", 1);
    if (!cluster && !user) {
        gs_buf_printf(err, "report '%s%s%s' is not offered: " OFFERED, argv[0], argc > 1 ? " " : "",
                      argc > 1 ? argv[1] : "");
        return -EINVAL;
    }
    if (argc == 1) {
        gs_buf_printf(err, "too few arguments for keyword '%s': " OFFERED, argv[0]);
        return -EINVAL;
    }
    if (cluster && keyword(argv[1], "utilization", 2))
        a->report = SLURM_SREPORT_UTILIZATION;
    else if (cluster && keyword(argv[1], "accountutilizationbyuser", 1))
        a->report = SLURM_SREPORT_ACCOUNT_BY_USER;
    else if (cluster &&
             (keyword(argv[1], "userutilizationbyaccount", 18) || keyword(argv[1], "ua", 2)))
        a->report = SLURM_SREPORT_USER_BY_ACCOUNT;
    else if (user && keyword(argv[1], "topusage", 1))
        a->report = SLURM_SREPORT_TOP_USAGE;
    else {
        gs_buf_printf(err, "report '%s %s' is not offered: " OFFERED, argv[0], argv[1]);
        return -EINVAL;
    }
    return 0;
}

/* TopCount=N: a whole number from 1 (Slurm's get_uint takes it up to 2^32 - 1). */
static int parse_top_count(const char *word, const char *text, struct slurm_sreport_args *a,
                           struct gs_buf *err)
{
    uint64_t n = 0;
    const char *p;

    for (p = text; *p >= '0' && *p <= '9' && n <= UINT32_MAX; p++)
        n = n * 10 + (uint64_t)(*p - '0');
    if (p == text || *p != '\0' || n == 0 || n > UINT32_MAX) {
        gs_buf_printf(err, "invalid TopCount '%s': use a whole number from 1 to 4294967295", word);
        return -EINVAL;
    }
    a->top_count = (uint32_t)n;
    return 0;
}

/* The window's words, kept until the report's words are all read. */
struct window_words {
    const char *start, *end;
};

/*
 * start= / end=, and TopCount= for TopUsage (Slurm takes any prefix of the key, any case:
 * "Start=", "s=", "t="). Slurm's Group (TopUsage: a line per user rather than per user and
 * account) is refused, gsched's lines being a user's always.
 */
static int parse_condition(const char *word, struct window_words *w, struct slurm_sreport_args *a,
                           struct gs_buf *err)
{
    const char *eq = strchr(word, '=');
    size_t klen = eq != NULL ? (size_t)(eq - word) : 0;
    bool top = a->report == SLURM_SREPORT_TOP_USAGE;
    char key[16];

    if (eq == NULL && top && keyword(word, "group", 1)) {
        gs_buf_printf(err,
                      "condition '%s' (Group) is not offered: gsched's TopUsage always gives "
                      "one line per user, their accounts summed",
                      word);
        return -EINVAL;
    }
    if (klen > 0 && klen < sizeof(key)) {
        memcpy(key, word, klen);
        key[klen] = '\0';
        if (keyword(key, "start", 1)) {
            w->start = eq + 1;
            return 0;
        }
        if (keyword(key, "end", 1)) {
            w->end = eq + 1;
            return 0;
        }
        if (keyword(key, "topcount", 1)) {
            if (top)
                return parse_top_count(word, eq + 1, a, err);
            gs_buf_printf(err, "condition '%s' is not offered for %s: TopCount= is %s's", word,
                          report_names[a->report], report_names[SLURM_SREPORT_TOP_USAGE]);
            return -EINVAL;
        }
    }
    gs_buf_printf(err, "unknown condition '%s' for %s: only %s are offered", word,
                  report_names[a->report], top ? "start=, end= and TopCount=" : "start= and end=");
    return -EINVAL;
}

static int parse_time(const char *key, const char *text, uint64_t now_ms, uint64_t *ret_ms,
                      struct gs_buf *err)
{
    if (slurm_parse_date(text, now_ms, ret_ms) == 0)
        return 0;
    gs_buf_printf(err,
                  "invalid %s= time '%s': use YYYY-MM-DD[THH:MM[:SS]], now, today or "
                  "midnight",
                  key, text);
    return -EINVAL;
}

/* Local midnight of the day before ms's day, as Slurm's default start. */
static int midnight_before(uint64_t ms, uint64_t *ret_ms)
{
    time_t t = (time_t)(ms / 1000), m;
    struct tm tm;

    if (localtime_r(&t, &tm) == NULL)
        return -EINVAL;
    tm.tm_mday -= 1;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    tm.tm_isdst = -1;
    m = mktime(&tm);
    if (m == (time_t)-1 || m < 0)
        return -EINVAL;
    *ret_ms = (uint64_t)m * 1000;
    return 0;
}

/* The window: end= else midnight today, start= else midnight the day before end's. A
 * start= at or after today's midnight without an end= runs to now (start=today: today so
 * far), where Slurm's default end would leave nothing. */
static int parse_window(const char *start, const char *end, uint64_t now_ms,
                        struct slurm_sreport_args *a, struct gs_buf *err)
{
    char from[32], to[32];
    int rc;

    rc = end != NULL ? parse_time("end", end, now_ms, &a->end_ms, err)
                     : slurm_parse_date("today", now_ms, &a->end_ms);
    if (rc == 0)
        rc = start != NULL ? parse_time("start", start, now_ms, &a->start_ms, err)
                           : midnight_before(a->end_ms, &a->start_ms);
    if (rc < 0) {
        if (err->len == 0)
            gs_buf_printf(err, "cannot work out the local midnights of the default window");
        return -EINVAL;
    }
    if (end == NULL && start != NULL && a->start_ms >= a->end_ms && a->start_ms < now_ms)
        a->end_ms = now_ms;
    if (a->start_ms >= a->end_ms) {
        gs_buf_printf(err, "the window is empty: start %s is not before end %s",
                      slurm_fmt_date(a->start_ms, "0", from, sizeof(from)),
                      slurm_fmt_date(a->end_ms, "0", to, sizeof(to)));
        return -EINVAL;
    }
    return 0;
}

/* What follows the options: the report, then its conditions. */
static int parse_words(int argc, char **argv, uint64_t now_ms, struct slurm_sreport_args *a,
                       struct gs_buf *err)
{
    struct window_words w = {NULL, NULL};

    if (parse_report(argc, argv, a, err) < 0)
        return -EINVAL;
    for (int i = 2; i < argc; i++) {
        if (parse_condition(argv[i], &w, a, err) < 0)
            return -EINVAL;
    }
    return parse_window(w.start, w.end, now_ms, a, err);
}

int slurm_sreport_parse(int argc, char **argv, const char *env_tres, uint64_t now_ms,
                        struct slurm_sreport_args *ret, struct gs_buf *err)
{
    struct slurm_sreport_args a = {
        .top_count = SLURM_SREPORT_TOP_DEFAULT, .ntres = 1, .tres = {"cpu"}};
    const char *tres = NULL;
    int rc;

    rc = parse_options(argc, argv, &a, &tres, err);
    if (rc < 0 || a.help)
        goto out;
    if (tres == NULL && env_tres != NULL && env_tres[0] != '\0')
        rc = parse_tres(env_tres, "SREPORT_TRES", &a, err);
    else if (tres != NULL)
        rc = parse_tres(tres, "-T", &a, err);
    if (rc == 0)
        rc = parse_words(argc - optind, argv + optind, now_ms, &a, err);
out:
    if (rc == 0)
        *ret = a;
    return rc;
}

bool slurm_sreport_by_user(const struct slurm_sreport_args *args)
{
    return args->report != SLURM_SREPORT_UTILIZATION;
}
