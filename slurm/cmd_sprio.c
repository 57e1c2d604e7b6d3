/*
 * cmd_sprio.c: `sprio` (also `gsched sprio`): what the pending jobs' priorities are made of,
 * laid out as Slurm's sprio with the multifactor plugin lays them out:
 *
 *               JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  (...)
 *                  43 gpu             1510          0        500        900        100  (...)
 *
 * then PARTITION (the partition factor) and NICE, 10 wide like the other numbers.
 *
 * The factors are gschedd's (JobInfo.priority_factors, already weighted), the priority
 * JobInfo.priority; SITE is always 0 (gsched has no site factor), and a job whose priority
 * root set (admin_set) shows that priority with zero factors, as Slurm shows it. Slurm
 * leaves out the columns of factors whose weight is 0; gschedd does not report the
 * weights, so every column always shows, and -n/--norm and -w/--weights, which need them,
 * are refused. Slurm's ASSOC and TRES factors do not exist here.
 *
 * Options as Slurm's: -j/--jobs [LIST] (also "sprio -j 42"), -u/--user LIST (adds USER, as
 * in Slurm), -p/--partition LIST, -h/--noheader, -l/--long (adds USER, NICE 11 wide), -o
 * FORMAT (%i %r %u %o %Y %S %A %F %J %P %Q %N), $SPRIO_FORMAT, -S/--sort (Slurm's letters, '-'
 * for descending: "-y" is highest priority first; default "i", job id); gsched's --json
 * ({"jobs": [{job_id, partition, user, priority, priority_factors}]}) and --socket. Jobs
 * come from the queue request squeue uses; only PENDING ones show. Every failure exits 1.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/sort.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"

#define CMD "sprio"

/* At most this many -S keys ("-y,i" is two). */
#define MAX_SORT_KEYS 16

enum field {
    F_JOBID,
    F_PARTITION,
    F_USER,
    F_ACCOUNT,
    F_PRIORITY,
    F_SITE,
    F_AGE,
    F_FAIRSHARE,
    F_JOBSIZE,
    F_PARTPRIO,
    F_QOS,
    F_NICE,
};

static const struct slurm_field fields[] = {
    [F_JOBID] = {'i', "JobID", "JOBID"},
    [F_PARTITION] = {'r', "Partition", "PARTITION"},
    [F_USER] = {'u', "User", "USER"},
    [F_ACCOUNT] = {'o', "Account", "ACCOUNT"},
    [F_PRIORITY] = {'Y', "Priority", "PRIORITY"},
    [F_SITE] = {'S', "Site", "SITE"},
    [F_AGE] = {'A', "Age", "AGE"},
    [F_FAIRSHARE] = {'F', "FairShare", "FAIRSHARE"},
    [F_JOBSIZE] = {'J', "JobSize", "JOBSIZE"},
    [F_PARTPRIO] = {'P', "PartitionPrio", "PARTITION"},
    [F_QOS] = {'Q', "QOS", "QOS"},
    [F_NICE] = {'N', "Nice", "NICE"},
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Slurm's widths: its default columns, -u adding USER after PARTITION, -l its long line. */
static const char default_format[] = "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.10N";
static const char users_format[] = "%.15i %9r %.8u %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.10N";
static const char long_format[] = "%.15i %9r %.8u %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.11N";

struct sort_key {
    char letter;
    bool descend;
};

struct sprio_args {
    struct slurm_filter filter;
    struct slurm_job_ref refs[SLURM_MAX_REFS];
    struct sort_key sort[MAX_SORT_KEYS];
    size_t nsort;
    const char *format, *socket_opt;
    bool noheader, long_out, json, jobs_flag, jobs_given;
};

/* A job's factors as sprio prints them: zero when root set its priority or none came. */
struct factors {
    double age, fairshare, job_size, partition;
    int nice;
    double qos;
};

static struct factors factors_of(const Gs__JobInfo *job)
{
    const Gs__PriorityFactors *pf = job->priority_factors;

    if (pf == NULL || pf->admin_set)
        return (struct factors){0};
    return (struct factors){pf->age, pf->fairshare, pf->job_size, pf->partition, pf->nice, pf->qos};
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static void usage(FILE *f)
{
    fputs("Usage: sprio [-j [jobs]] [-u users] [-p partitions] [-o format] [-S sort] [-h] [-l]\n"
          "             [--json] [--socket PATH]\n"
          "  -n/--norm and -w/--weights are not supported: gschedd does not report the weights.\n",
          f);
}

/* A component ("42+1") names its job's one row: a heterogeneous job's priority is whole. */
static int parse_jobs(struct sprio_args *a, const char *list)
{
    a->jobs_given = true;
    return slurm_jobs_option(CMD, list, a->refs, &a->filter.nrefs);
}

/* -S: Slurm's sort letters, each ascending unless '-' comes right before it. 0 or 1. */
static int parse_sort(struct sprio_args *a, const char *spec)
{
    static const char valid[] = "iruoNAaFfJjPpQqYy";

    a->nsort = 0;
    for (size_t i = 0; spec[i] != '\0'; i++) {
        char c = spec[i];

        if (c == ',' || c == '-' || c == '+')
            continue;
        if (strchr(valid, c) == NULL)
            return slurm_error(CMD, "Invalid sort specification: %c", c);
        if (a->nsort == MAX_SORT_KEYS)
            return slurm_error(CMD, "at most %d sort keys", MAX_SORT_KEYS);
        a->sort[a->nsort++] = (struct sort_key){c, i > 0 && spec[i - 1] == '-'};
    }
    return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, struct sprio_args *a)
{
    static const struct option opts[] = {
        {"noheader", no_argument, NULL, 'h'},
        {"jobs", optional_argument, NULL, 'j'},
        {"long", no_argument, NULL, 'l'},
        {"norm", no_argument, NULL, 'n'},
        {"format", required_argument, NULL, 'o'},
        {"sort", required_argument, NULL, 'S'},
        {"partition", required_argument, NULL, 'p'},
        {"user", required_argument, NULL, 'u'},
        {"users", required_argument, NULL, 'u'},
        {"weights", no_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'J'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'H'},
        {"usage", no_argument, NULL, 'U'},
        {NULL, 0, NULL, 0},
    };
    int c, status = -1;

    opterr = 0;
    optind = 1;
    while (status < 0 && (c = getopt_long(argc, argv, ":hj::lno:p:S:u:w", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            a->noheader = true;
            break;
        case 'j':
            a->jobs_flag = true;
            if (optarg != NULL)
                status = parse_jobs(a, optarg) == 0 ? -1 : 1;
            break;
        case 'l':
            a->long_out = true;
            break;
        case 'n':
        case 'w':
            status = slurm_error(CMD,
                                 "%s is not supported: gschedd does not report the priority "
                                 "weights",
                                 c == 'n' ? "-n/--norm" : "-w/--weights");
            break;
        case 'o':
            a->format = optarg;
            break;
        case 'S':
            status = parse_sort(a, optarg) == 0 ? -1 : 1;
            break;
        case 'p':
            a->filter.partitions = optarg;
            break;
        case 'u':
            a->filter.users = optarg;
            break;
        case 'J':
            a->json = true;
            break;
        case 's':
            a->socket_opt = optarg;
            break;
        case 'H':
        case 'U':
            usage(stdout);
            status = 0;
            break;
        default:
            status = slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    if (status >= 0)
        return status;
    /* As Slurm: "sprio -j 42" takes the operand as -j's list; any other operand is wrong. */
    if (a->jobs_flag && optind < argc && parse_jobs(a, argv[optind++]) != 0)
        return 1;
    if (optind < argc)
        return slurm_error(CMD, "Unrecognized option: %s", argv[optind]);
    if (a->long_out && a->format != NULL)
        return slurm_error(CMD, "Options -o(--format) and -l(--long) are mutually exclusive. "
                                "Please remove one and retry.");
    return -1;
}

/* A weighted factor as Slurm prints it: rounded to a whole number ("-0" as "0"). */
static int put_weighted(struct gs_buf *out, double v)
{
    return gs_buf_printf(out, "%.0f", v > -0.5 && v < 0.5 ? 0.0 : v);
}

static int value(void *ctx, int field, struct gs_buf *out)
{
    const Gs__JobInfo *job = ctx;
    struct factors f = factors_of(job);
    char buf[32];

    switch ((enum field)field) {
    case F_JOBID:
        return gs_buf_printf(out, "%llu", (unsigned long long)job->job_id);
    case F_PARTITION:
        return gs_buf_append_str(out, or_empty(job->partition));
    case F_USER:
        return gs_buf_append_str(out, slurm_user_name(job, buf, sizeof(buf)));
    case F_ACCOUNT:
        return gs_buf_append_str(out, or_empty(job->account));
    case F_PRIORITY:
        return gs_buf_printf(out, "%d", job->priority);
    case F_SITE:
        return gs_buf_append_str(out, "0");
    case F_AGE:
        return put_weighted(out, f.age);
    case F_FAIRSHARE:
        return put_weighted(out, f.fairshare);
    case F_JOBSIZE:
        return put_weighted(out, f.job_size);
    case F_PARTPRIO:
        return put_weighted(out, f.partition);
    case F_QOS:
        return put_weighted(out, f.qos);
    case F_NICE:
        return gs_buf_printf(out, "%d", f.nice);
    }
    return 0;
}

static int cmp_double(double x, double y)
{
    return x < y ? -1 : x > y;
}

/* One -S key: Slurm's letter, weighted and normalized letters sorting alike. */
static int cmp_key(const Gs__JobInfo *x, const Gs__JobInfo *y, char letter)
{
    struct factors fx = factors_of(x), fy = factors_of(y);
    char bx[32], by[32];

    switch (letter) {
    case 'i':
        return x->job_id < y->job_id ? -1 : x->job_id > y->job_id;
    case 'r':
        return strcmp(or_empty(x->partition), or_empty(y->partition));
    case 'u':
        return strcmp(slurm_user_name(x, bx, sizeof(bx)), slurm_user_name(y, by, sizeof(by)));
    case 'o':
        return strcmp(or_empty(x->account), or_empty(y->account));
    case 'N':
        return fx.nice < fy.nice ? -1 : fx.nice > fy.nice;
    case 'A':
    case 'a':
        return cmp_double(fx.age, fy.age);
    case 'F':
    case 'f':
        return cmp_double(fx.fairshare, fy.fairshare);
    case 'J':
    case 'j':
        return cmp_double(fx.job_size, fy.job_size);
    case 'P':
    case 'p':
        return cmp_double(fx.partition, fy.partition);
    case 'Q':
    case 'q':
        return cmp_double(fx.qos, fy.qos);
    default: /* 'Y', 'y' */
        return x->priority < y->priority ? -1 : x->priority > y->priority;
    }
}

struct sort_item {
    const Gs__JobInfo *job;
    const struct sprio_args *args;
};

/* The -S keys in order, the first deciding first; job id ascending breaks ties. */
static int by_sort_keys(const void *a, const void *b)
{
    const struct sort_item *x = a, *y = b;
    const struct sprio_args *args = x->args;

    for (size_t i = 0; i < args->nsort; i++) {
        int c = cmp_key(x->job, y->job, args->sort[i].letter);

        if (c != 0)
            return args->sort[i].descend ? -c : c;
    }
    return cmp_key(x->job, y->job, 'i');
}

static void put_factors(struct gs_json *j, const Gs__PriorityFactors *pf)
{
    if (pf == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_key(j, "age");
    gs_json_double(j, pf->age);
    gs_json_key(j, "fairshare");
    gs_json_double(j, pf->fairshare);
    gs_json_key(j, "job_size");
    gs_json_double(j, pf->job_size);
    gs_json_key(j, "partition");
    gs_json_double(j, pf->partition);
    gs_json_key(j, "qos");
    gs_json_double(j, pf->qos);
    gs_json_kv_int(j, "nice", pf->nice);
    gs_json_kv_bool(j, "admin_set", pf->admin_set);
    gs_json_object_end(j);
}

/*
 * --json: {"jobs": [{job_id, partition, user, priority, priority_factors}]}, the factors as
 * gschedd sent them (admin_set included; null when none came). Returns 0 or < 0.
 */
static int put_json(const struct sort_item *items, size_t n, struct gs_buf *out)
{
    struct gs_json j;
    char buf[32];
    int rc;

    gs_json_init(&j, out);
    gs_json_object_begin(&j);
    gs_json_key(&j, "jobs");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < n; i++) {
        const Gs__JobInfo *job = items[i].job;

        gs_json_object_begin(&j);
        gs_json_kv_uint(&j, "job_id", job->job_id);
        gs_json_kv_string(&j, "partition", or_empty(job->partition));
        gs_json_kv_string(&j, "user", slurm_user_name(job, buf, sizeof(buf)));
        gs_json_kv_int(&j, "priority", job->priority);
        gs_json_key(&j, "priority_factors");
        put_factors(&j, job->priority_factors);
        gs_json_object_end(&j);
    }
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    rc = gs_json_finish(&j);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

static int put_table(const struct slurm_format *fmt, bool noheader, const struct sort_item *items,
                     size_t n, struct gs_buf *out)
{
    int rc = noheader ? 0 : slurm_format_line(fmt, fields, NULL, NULL, out);

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = slurm_format_line(fmt, fields, value, (void *)items[i].job, out);
    return rc;
}

static int print_jobs(const struct sprio_args *a, const struct slurm_format *fmt,
                      const Gs__QueueReply *r)
{
    struct sort_item *items = calloc(r->n_jobs + 1, sizeof(*items));
    struct gs_buf out = GS_BUF_INIT;
    size_t n = 0;
    int rc = -ENOMEM, status;

    if (items == NULL)
        goto out;
    for (size_t i = 0; i < r->n_jobs; i++) {
        if (slurm_filter_match(&a->filter, r->jobs[i]))
            items[n++] = (struct sort_item){r->jobs[i], a};
    }
    gs_sort(items, n, sizeof(*items), by_sort_keys);
    if (a->json)
        rc = put_json(items, n, &out);
    else if (a->jobs_given && n == 0) /* Slurm's words when none of the jobs asked for waits */
        rc = gs_buf_append_str(&out, "Unable to find jobs matching user/id(s) specified\n");
    else
        rc = put_table(fmt, a->noheader, items, n, &out);
out:
    status = slurm_print(CMD, rc, &out);
    gs_buf_release(&out);
    free(items);
    return status;
}

int cli_cmd_sprio(int argc, char **argv)
{
    struct sprio_args a = {.sort = {{'i', false}}, .nsort = 1};
    struct slurm_format fmt = {0};
    Gs__Envelope *reply = NULL;
    const char *env_fmt = getenv("SPRIO_FORMAT"), *fallback = default_format;
    int status = parse_options(argc, argv, &a);

    if (status >= 0)
        goto out;
    a.filter.refs = a.refs;
    a.filter.states = 1u << GS__JOB_STATE__JOB_STATE_PENDING;
    /* The command line wins over $SPRIO_FORMAT, as in Slurm; -l and -u change the default. */
    if (a.format == NULL && !a.long_out && env_fmt != NULL && env_fmt[0] != '\0')
        a.format = env_fmt;
    if (a.long_out)
        fallback = long_format;
    else if (a.filter.users != NULL)
        fallback = users_format;
    status = slurm_format_choose(CMD, a.format, NULL, fallback, fields, NFIELDS, &fmt);
    if (status != 0)
        goto out;
    status = slurm_fetch_jobs(a.socket_opt, a.refs, a.filter.nrefs, false, &reply);
    if (status == 0)
        status = print_jobs(&a, &fmt, reply->queue_reply);
out:
    gs_proto_envelope_free(reply);
    slurm_format_release(&fmt);
    return status;
}
