/*
 * sreport_fmt.c: the pure half of `sreport cluster utilization` (sreport_fmt.h): the
 * command line read as Slurm's sreport reads it, and gschedd's ReportReply laid out as
 * Slurm prints the report. cmd_sreport.c sends the request between the two.
 *
 * The layout, as Slurm's sreport (the title block unless -n; with -p/-P too, as Slurm
 * prints it there, only the column lines becoming '|'-separated):
 *
 *     --------------------------------------------------------------------------------
 *     Cluster Utilization 2026-12-04T00:00:00 - 2026-12-04T23:59:59
 *     Usage reported in CPU Minutes
 *     --------------------------------------------------------------------------------
 *       Cluster Allocate     Down     Idle Reported
 *     --------- -------- -------- -------- --------
 *        gsched     1234        0    56789    58023
 *
 * every field followed by a blank. The title's end is the window's end less a second, as
 * Slurm prints it. Cluster is 9 wide, TRES Name 14, both right-justified and cut with '+'
 * (Slurm's print_fields_str); a usage column is as wide as its largest figure has digits
 * in seconds, at least 8, and 9 more in the SecPer/MinPer/HourPer formats (room for
 * "(45.67%)"), so that no figure is ever cut; a column name longer than its column is cut
 * to it, as Slurm's header is ("Allocate"). With more than one TRES, or one other than
 * cpu, a TRES Name column follows Cluster and the unit line says "TRES Minutes"; one line
 * per TRES in the order -T gave them.
 *
 * Figures: gschedd sends resource-milliseconds; seconds, minutes and hours are rounded to
 * the nearest whole number as Slurm's "%.0f" does (halves to even), a percentage is of
 * Reported with 2 decimals ("0.00%" when nothing was reported).
 *
 * Not shown: Slurm's "PLND Down" and "Planned" columns, since gschedd records neither
 * planned downtime nor time held for pending jobs; Down is what nodes down or drained had
 * that no job held. gsched adds one title line when gschedd's history starts inside the
 * window ("History recorded since ...: earlier time is not counted"), only in the table
 * form so that -n/-p/-P keep Slurm's line count.
 */
#include "slurm/sreport_fmt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/json.h"
#include "slurm/slurm_fmt.h"

#define OFFERED "gsched's sreport offers only 'cluster utilization'"

#define DASHES "--------------------------------------------------------------------------------"

enum {
    OPT_JSON = 0x100,
    OPT_SOCKET,
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
        default:
            rc = option_refused(c, argv[optind - 1], err);
            break;
        }
    }
    return rc;
}

/* start= / end= (Slurm takes any prefix of the key, any case: "Start=", "s="). */
static int parse_condition(const char *word, const char **start, const char **end,
                           struct gs_buf *err)
{
    const char *eq = strchr(word, '=');
    size_t klen = eq != NULL ? (size_t)(eq - word) : 0;
    char key[8];

    if (klen > 0 && klen < sizeof(key)) {
        memcpy(key, word, klen);
        key[klen] = '\0';
        if (keyword(key, "start", 1)) {
            *start = eq + 1;
            return 0;
        }
        if (keyword(key, "end", 1)) {
            *end = eq + 1;
            return 0;
        }
    }
    gs_buf_printf(err,
                  "unknown condition '%s' for cluster utilization: only start= and end= "
                  "are offered",
                  word);
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

/* The window: end= else midnight today, start= else midnight the day before end's. */
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
    if (a->start_ms >= a->end_ms) {
        gs_buf_printf(err, "the window is empty: start %s is not before end %s",
                      slurm_fmt_date(a->start_ms, "0", from, sizeof(from)),
                      slurm_fmt_date(a->end_ms, "0", to, sizeof(to)));
        return -EINVAL;
    }
    return 0;
}

/* What follows the options: `cluster utilization [start=TIME] [end=TIME]`. */
static int parse_words(int argc, char **argv, uint64_t now_ms, struct slurm_sreport_args *a,
                       struct gs_buf *err)
{
    const char *start = NULL, *end = NULL;

    if (argc == 0) {
        gs_buf_printf(err, "no report given: " OFFERED);
        return -EINVAL;
    }
    if (!keyword(argv[0], "cluster", 2)) {
        gs_buf_printf(err, "report '%s%s%s' is not offered: " OFFERED, argv[0], argc > 1 ? " " : "",
                      argc > 1 ? argv[1] : "");
        return -EINVAL;
    }
    if (argc == 1) {
        gs_buf_printf(err, "too few arguments for keyword '%s': " OFFERED, argv[0]);
        return -EINVAL;
    }
    if (!keyword(argv[1], "utilization", 2)) {
        gs_buf_printf(err, "report '%s %s' is not offered: " OFFERED, argv[0], argv[1]);
        return -EINVAL;
    }
    for (int i = 2; i < argc; i++) {
        if (parse_condition(argv[i], &start, &end, err) < 0)
            return -EINVAL;
    }
    return parse_window(start, end, now_ms, a, err);
}

int slurm_sreport_parse(int argc, char **argv, const char *env_tres, uint64_t now_ms,
                        struct slurm_sreport_args *ret, struct gs_buf *err)
{
    struct slurm_sreport_args a = {.ntres = 1, .tres = {"cpu"}};
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

/* --- the report ---------------------------------------------------------------------------- */

enum column { C_CLUSTER, C_TRES, C_ALLOCATED, C_DOWN, C_IDLE, C_REPORTED, C_COUNT };

static const char *const column_names[C_COUNT] = {
    [C_CLUSTER] = "Cluster", [C_TRES] = "TRES Name", [C_ALLOCATED] = "Allocated",
    [C_DOWN] = "Down",       [C_IDLE] = "Idle",      [C_REPORTED] = "Reported",
};

struct layout {
    const struct slurm_sreport_args *args;
    bool tres_column; /* more than one TRES, or not cpu */
    int width[C_COUNT];
};

static bool per_format(enum slurm_sreport_time t)
{
    return t == SLURM_SREPORT_SEC_PER || t == SLURM_SREPORT_MIN_PER || t == SLURM_SREPORT_HOUR_PER;
}

static const char *unit_name(enum slurm_sreport_time t)
{
    switch (t) {
    case SLURM_SREPORT_SECONDS:
        return "Seconds";
    case SLURM_SREPORT_HOURS:
        return "Hours";
    case SLURM_SREPORT_PERCENT:
        return "Percentage of Total";
    case SLURM_SREPORT_SEC_PER:
        return "Seconds/Percentage of Total";
    case SLURM_SREPORT_MIN_PER:
        return "Minutes/Percentage of Total";
    case SLURM_SREPORT_HOUR_PER:
        return "Hours/Percentage of Total";
    case SLURM_SREPORT_MINUTES:
    default:
        return "Minutes";
    }
}

static const Gs__TresUsage *find_tres(const Gs__ReportReply *r, const char *name)
{
    for (size_t i = 0; i < r->n_tres; i++) {
        if (r->tres[i]->name != NULL && strcmp(r->tres[i]->name, name) == 0)
            return r->tres[i];
    }
    return NULL;
}

static uint64_t usage_ms(const Gs__TresUsage *t, enum column col)
{
    switch (col) {
    case C_ALLOCATED:
        return t->allocated;
    case C_DOWN:
        return t->down;
    case C_IDLE:
        return t->idle;
    default:
        return t->reported;
    }
}

/* Slurm's sreport_set_usage_col_width: the digits of the largest figure in seconds, >= 8. */
static int usage_width(uint64_t max_ms, enum slurm_sreport_time t)
{
    char digits[24];
    int width = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)(max_ms / 1000));

    if (width < 8)
        width = 8;
    return per_format(t) ? width + 9 : width;
}

static void layout_init(struct layout *l, const Gs__ReportReply *r,
                        const struct slurm_sreport_args *a)
{
    l->args = a;
    l->tres_column = a->ntres > 1 || strcmp(a->tres[0], "cpu") != 0;
    l->width[C_CLUSTER] = 9;
    l->width[C_TRES] = 14;
    for (int col = C_ALLOCATED; col <= C_REPORTED; col++) {
        uint64_t max_ms = 0;

        for (size_t i = 0; i < a->ntres; i++) {
            const Gs__TresUsage *t = find_tres(r, a->tres[i]);

            if (t != NULL && usage_ms(t, (enum column)col) > max_ms)
                max_ms = usage_ms(t, (enum column)col);
        }
        l->width[col] = usage_width(max_ms, a->time_format);
    }
}

/* A figure as -t asks: rounded seconds/minutes/hours, a percentage of reported_ms, or both. */
static void usage_text(uint64_t ms, uint64_t reported_ms, enum slurm_sreport_time t, char *buf,
                       size_t size)
{
    double pct = reported_ms > 0 ? (double)ms * 100.0 / (double)reported_ms : 0.0;
    double v;

    switch (t) {
    case SLURM_SREPORT_SECONDS:
    case SLURM_SREPORT_SEC_PER:
        v = (double)ms / 1000.0;
        break;
    case SLURM_SREPORT_HOURS:
    case SLURM_SREPORT_HOUR_PER:
        v = (double)ms / 3600000.0;
        break;
    default:
        v = (double)ms / 60000.0;
        break;
    }
    if (t == SLURM_SREPORT_PERCENT)
        snprintf(buf, size, "%.2f%%", pct);
    else if (per_format(t))
        snprintf(buf, size, "%.0f(%.2f%%)", v, pct);
    else
        snprintf(buf, size, "%.0f", v);
}

static bool shown(const struct layout *l, int col)
{
    return col != C_TRES || l->tres_column;
}

/* After a field: a blank in the table, '|' when parsable, nothing after -P's last. */
static void end_field(const struct layout *l, int col, struct gs_buf *out)
{
    if (l->args->parsable == SLURM_SREPORT_TABLE)
        gs_buf_putc(out, ' ');
    else if (l->args->parsable == SLURM_SREPORT_PARSABLE || col != C_REPORTED)
        gs_buf_putc(out, '|');
}

static void put_title(const struct layout *l, const Gs__ReportReply *r, struct gs_buf *out)
{
    enum slurm_sreport_time t = l->args->time_format;
    char from[32], to[32], since[32];

    gs_buf_printf(
        out, "%s\nCluster Utilization %s - %s\n", DASHES,
        slurm_fmt_date(r->start_ms, "Unknown", from, sizeof(from)),
        slurm_fmt_date(r->end_ms >= 1000 ? r->end_ms - 1000 : 0, "Unknown", to, sizeof(to)));
    if (t == SLURM_SREPORT_PERCENT)
        gs_buf_printf(out, "Usage reported in %s\n", unit_name(t));
    else
        gs_buf_printf(out, "Usage reported in %s %s\n", l->tres_column ? "TRES" : "CPU",
                      unit_name(t));
    if (l->args->parsable == SLURM_SREPORT_TABLE && r->known_since_ms > r->start_ms)
        gs_buf_printf(out, "History recorded since %s: earlier time is not counted\n",
                      slurm_fmt_date(r->known_since_ms, "Unknown", since, sizeof(since)));
    gs_buf_printf(out, "%s\n", DASHES);
}

/* The column names (cut to their columns, as Slurm's header), then the dashes. */
static void put_header(const struct layout *l, struct gs_buf *out)
{
    bool table = l->args->parsable == SLURM_SREPORT_TABLE;

    for (int col = 0; col < C_COUNT; col++) {
        if (!shown(l, col))
            continue;
        if (table)
            gs_buf_printf(out, "%*.*s", l->width[col], l->width[col], column_names[col]);
        else
            gs_buf_append_str(out, column_names[col]);
        end_field(l, col, out);
    }
    gs_buf_putc(out, '\n');
    if (!table)
        return;
    for (int col = 0; col < C_COUNT; col++) {
        if (!shown(l, col))
            continue;
        for (int i = 0; i < l->width[col]; i++)
            gs_buf_putc(out, '-');
        gs_buf_putc(out, ' ');
    }
    gs_buf_putc(out, '\n');
}

/* A text field: cut with '+' and padded in the table (Slurm's print_fields_str). */
static void put_text(const struct layout *l, int col, const char *text, struct gs_buf *out)
{
    if (l->args->parsable == SLURM_SREPORT_TABLE) {
        slurm_sacct_cell(out, text, l->width[col]);
        return;
    }
    gs_buf_append_str(out, text);
    end_field(l, col, out);
}

static void put_row(const struct layout *l, const char *cluster, const Gs__TresUsage *t,
                    struct gs_buf *out)
{
    char text[64];

    put_text(l, C_CLUSTER, cluster, out);
    if (l->tres_column)
        put_text(l, C_TRES, t->name, out);
    for (int col = C_ALLOCATED; col <= C_REPORTED; col++) {
        usage_text(usage_ms(t, (enum column)col), t->reported, l->args->time_format, text,
                   sizeof(text));
        /* Never cut: the width fits every figure, and a wider one pushes the line right. */
        if (l->args->parsable == SLURM_SREPORT_TABLE)
            gs_buf_printf(out, "%*s", l->width[col], text);
        else
            gs_buf_append_str(out, text);
        end_field(l, col, out);
    }
    gs_buf_putc(out, '\n');
}

static void put_json_tres(struct gs_json *j, const Gs__TresUsage *t)
{
    gs_json_object_begin(j);
    gs_json_kv_string(j, "name", t->name != NULL ? t->name : "");
    gs_json_kv_uint(j, "allocated_ms", t->allocated);
    gs_json_kv_uint(j, "down_ms", t->down);
    gs_json_kv_uint(j, "idle_ms", t->idle);
    gs_json_kv_uint(j, "reported_ms", t->reported);
    gs_json_object_end(j);
}

/* --json: the reply; its TRES those -T (or $SREPORT_TRES) named, else every one. */
static int put_json(const Gs__ReportReply *r, const struct slurm_sreport_args *a,
                    struct gs_buf *out)
{
    struct gs_json j;
    int rc;

    gs_json_init(&j, out);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "start_ms", r->start_ms);
    gs_json_kv_uint(&j, "end_ms", r->end_ms);
    gs_json_kv_uint(&j, "known_since_ms", r->known_since_ms);
    gs_json_kv_string(&j, "cluster", r->cluster != NULL ? r->cluster : "");
    gs_json_key(&j, "tres");
    gs_json_array_begin(&j);
    if (a->tres_set) {
        for (size_t i = 0; i < a->ntres; i++) {
            const Gs__TresUsage *t = find_tres(r, a->tres[i]);

            if (t != NULL)
                put_json_tres(&j, t);
        }
    } else {
        for (size_t i = 0; i < r->n_tres; i++)
            put_json_tres(&j, r->tres[i]);
    }
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

int slurm_sreport_format(const Gs__ReportReply *reply, const struct slurm_sreport_args *args,
                         struct gs_buf *out)
{
    const char *cluster = reply->cluster != NULL ? reply->cluster : "";
    struct layout l;

    if (args->json)
        return put_json(reply, args, out);
    layout_init(&l, reply, args);
    if (!args->noheader) {
        put_title(&l, reply, out);
        put_header(&l, out);
    }
    /* A TRES gschedd has no record of gets no line, as in Slurm. */
    for (size_t i = 0; i < args->ntres; i++) {
        const Gs__TresUsage *t = find_tres(reply, args->tres[i]);

        if (t != NULL)
            put_row(&l, cluster, t, out);
    }
    return gs_buf_error(out);
}
