/*
 * main.c: gsched-simulate, the trace simulator. Reads a trace and a cluster (readers.h),
 * prepares them (trace.h: sort, --nodes, --load, shapes, accounts), replays the trace
 * under each policy asked for (run.h) with fifo-firstfit always among them as the
 * baseline, and prints the policies side by side (report.h). docs/simulator.md says what
 * every figure means.
 *
 *   gsched-simulate --trace FORMAT:FILE --cluster FILE [--policy LIST] [--nodes N]
 *                   [--load X] [--json] [--svg OUT.svg] [--seed S] [--accounts N]
 *                   [--links LAYOUT] [--config gsched.toml] [--urgent-share PCT]
 *                   [--checkpoint-interval DURATION] [--kill-grace DURATION]
 *                   [--datasets N] [--dataset-size SIZE] [--cache SIZE] [--copy-rate SIZE]
 *                   [--data-wait DURATION]
 *
 * Exit status: 0 done, 1 a file could not be read or the replay failed, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/json.h"
#include "common/units.h"
#include "sim/layout.h"
#include "sim/readers.h"
#include "sim/report.h"
#include "sim/run.h"

#define OPENB_DEFAULT_ACCOUNTS 8

struct options {
    char format[32];
    const char *trace_file;
    const char *cluster_file;
    const char *policies; /* comma-separated; NULL: all */
    size_t nodes;
    double load;
    bool json;
    const char *svg;
    uint64_t seed;
    uint32_t accounts; /* 0: from the trace */
    enum gs_sim_links links;
    const char *config;
    double urgent_share; /* 0..1 */
    struct gs_sim_preempt_model model;
    struct gs_sim_data_model data;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gsched-simulate --trace FORMAT:FILE --cluster FILE [--policy LIST]\n"
               "                       [--nodes N] [--load X] [--json] [--svg OUT.svg] [--seed S]\n"
               "                       [--accounts N] [--links LAYOUT] [--config gsched.toml]\n"
               "  FORMAT     tiresias (jobs CSV; --cluster its cluster CSV), openb (pods CSV;\n"
               "             --cluster its nodes CSV), philly-gavel (TSV; --cluster a TOML)\n"
               "  --cluster  the trace's cluster file, or a generic cluster (*.toml: nodes, gpus,\n"
               "             cores, mem_gib, switches, links)\n"
               "  --policy   comma-separated, default all:");
    for (size_t i = 0; i < gs_sim_npolicies; i++)
        fprintf(f, " %s", gs_sim_policies[i].name);
    fprintf(f,
            "\n"
            "  --nodes    keep the first N nodes   --load X  inter-arrival times / X\n"
            "  --accounts hash jobs over N accounts (openb: 8 by default)   --seed S  the "
            "hash's seed\n"
            "  --links    GPU layout of CSV clusters' nodes: nvswitch, pairs (default), "
            "pcie\n"
            "  --config   [priority] and [[account]] for multifactor (default: age 1000,\n"
            "             fair share 10000, 7-day max age and half-life, equal shares)\n"
            "  -preempt policies: --urgent-share PCT  jobs hashed into QOS urgent, tier 1\n"
            "             (default 10)   --checkpoint-interval D  every job checkpoints every D\n"
            "             of its run (default 30m; 0: never)   --kill-grace D  a victim holds\n"
            "             its GPUs D after it is preempted (default 30s); D as gsched.toml's\n"
            "             durations (30s, 30m, 1h; a bare number is minutes)\n"
            "  data: --datasets N  jobs read N datasets (by account; default 0: none)\n"
            "             --dataset-size SIZE (500G)  --cache SIZE per node (2T)\n"
            "             --copy-rate SIZE per second per node (1G)  --data-wait D (10m):\n"
            "             the -data policies' data_locality_wait\n");
}

/* A size option in bytes (500G, 2T, 1GiB), at least 1. */
static int parse_bytes(const char *opt, const char *text, uint64_t *ret)
{
    if (gs_parse_size(text, 1, ret) < 0 || *ret == 0) {
        fprintf(stderr, "gsched-simulate: %s: '%s' is not a size such as 500G\n", opt, text);
        return -EINVAL;
    }
    return 0;
}

static int parse_number(const char *opt, const char *text, double lo, double *ret)
{
    char *end;
    double v = strtod(text, &end);

    if (text[0] == '\0' || *end != '\0' || !(v >= lo)) {
        fprintf(stderr, "gsched-simulate: %s: '%s' is not a number >= %g\n", opt, text, lo);
        return -EINVAL;
    }
    *ret = v;
    return 0;
}

/* A duration option in milliseconds; infinite only where it means never (ret 0). */
static int parse_duration_ms(const char *opt, const char *text, bool infinite_ok, uint64_t *ret)
{
    uint64_t s;

    if (gs_parse_duration(text, &s) < 0 || (s == GS_DURATION_INFINITE && !infinite_ok) ||
        (s != GS_DURATION_INFINITE && s > UINT64_MAX / 1000 / 1000)) {
        fprintf(stderr, "gsched-simulate: %s: '%s' is not a duration (30s, 30m, 1h)\n", opt, text);
        return -EINVAL;
    }
    *ret = s == GS_DURATION_INFINITE ? 0 : s * 1000;
    return 0;
}

static int parse_trace(struct options *o, const char *arg)
{
    const char *colon = strchr(arg, ':');

    if (colon == NULL || colon == arg || (size_t)(colon - arg) >= sizeof(o->format) ||
        colon[1] == '\0') {
        fprintf(stderr, "gsched-simulate: --trace wants FORMAT:FILE, not '%s'\n", arg);
        return -EINVAL;
    }
    snprintf(o->format, sizeof(o->format), "%.*s", (int)(colon - arg), arg);
    o->trace_file = colon + 1;
    if (strcmp(o->format, "tiresias") != 0 && strcmp(o->format, "openb") != 0 &&
        strcmp(o->format, "philly-gavel") != 0) {
        fprintf(stderr, "gsched-simulate: trace format '%s': tiresias, openb or philly-gavel\n",
                o->format);
        return -EINVAL;
    }
    return 0;
}

static int parse_option(struct options *o, int opt, const char *arg)
{
    uint64_t v64;
    double v;
    int rc = 0;

    switch (opt) {
    case 't':
        return parse_trace(o, arg);
    case 'c':
        o->cluster_file = arg;
        return 0;
    case 'p':
        o->policies = arg;
        return 0;
    case 'n':
        if ((rc = parse_number("--nodes", arg, 1, &v)) == 0)
            o->nodes = (size_t)v;
        return rc;
    case 'l':
        if ((rc = parse_number("--load", arg, 1e-6, &v)) == 0)
            o->load = v;
        return rc;
    case 'j':
        o->json = true;
        return 0;
    case 's':
        o->svg = arg;
        return 0;
    case 'S':
        if ((rc = parse_number("--seed", arg, 0, &v)) == 0)
            o->seed = (uint64_t)v;
        return rc;
    case 'a':
        if ((rc = parse_number("--accounts", arg, 1, &v)) == 0)
            o->accounts = v > 4096 ? 4096 : (uint32_t)v;
        return rc;
    case 'L':
        if (gs_sim_layout_parse(arg, &o->links) == 0)
            return 0;
        fprintf(stderr, "gsched-simulate: --links: nvswitch, pairs or pcie, not '%s'\n", arg);
        return -EINVAL;
    case 'C':
        o->config = arg;
        return 0;
    case 'u':
        if ((rc = parse_number("--urgent-share", arg, 0, &v)) == 0 && v > 100) {
            fprintf(stderr, "gsched-simulate: --urgent-share: a percentage, 0-100\n");
            rc = -EINVAL;
        }
        if (rc == 0)
            o->urgent_share = v / 100;
        return rc;
    case 'k':
        return parse_duration_ms("--checkpoint-interval", arg, true, &o->model.checkpoint_ms);
    case 'g':
        return parse_duration_ms("--kill-grace", arg, false, &o->model.kill_grace_ms);
    case 'D':
        if ((rc = parse_number("--datasets", arg, 0, &v)) == 0)
            o->data.datasets = v > 1e6 ? 1000000 : (uint32_t)v;
        return rc;
    case 'Z':
        return parse_bytes("--dataset-size", arg, &o->data.dataset_bytes);
    case 'K':
        return parse_bytes("--cache", arg, &o->data.cache_bytes);
    case 'R':
        return parse_bytes("--copy-rate", arg, &o->data.copy_rate);
    case 'W':
        if ((rc = parse_duration_ms("--data-wait", arg, false, &v64)) == 0)
            o->data.wait_s = v64 / 1000;
        return rc;
    default:
        return -EINVAL;
    }
}

static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {{"trace", required_argument, NULL, 't'},
                                             {"cluster", required_argument, NULL, 'c'},
                                             {"policy", required_argument, NULL, 'p'},
                                             {"nodes", required_argument, NULL, 'n'},
                                             {"load", required_argument, NULL, 'l'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"svg", required_argument, NULL, 's'},
                                             {"seed", required_argument, NULL, 'S'},
                                             {"accounts", required_argument, NULL, 'a'},
                                             {"links", required_argument, NULL, 'L'},
                                             {"config", required_argument, NULL, 'C'},
                                             {"urgent-share", required_argument, NULL, 'u'},
                                             {"checkpoint-interval", required_argument, NULL, 'k'},
                                             {"kill-grace", required_argument, NULL, 'g'},
                                             {"datasets", required_argument, NULL, 'D'},
                                             {"dataset-size", required_argument, NULL, 'Z'},
                                             {"cache", required_argument, NULL, 'K'},
                                             {"copy-rate", required_argument, NULL, 'R'},
                                             {"data-wait", required_argument, NULL, 'W'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int opt;

    *o = (struct options){.load = 1.0,
                          .links = GS_SIM_LINKS_PAIRS,
                          .urgent_share = GS_SIM_DEFAULT_URGENT_SHARE,
                          .model = {GS_SIM_DEFAULT_CHECKPOINT_MS, GS_SIM_DEFAULT_KILL_GRACE_MS},
                          .data = {.dataset_bytes = GS_SIM_DEFAULT_DATASET_BYTES,
                                   .cache_bytes = GS_SIM_DEFAULT_CACHE_BYTES,
                                   .copy_rate = GS_SIM_DEFAULT_COPY_RATE,
                                   .wait_s = GS_SIM_DEFAULT_DATA_WAIT_S}};
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'h')
            return 1; /* main prints the usage and exits 0 */
        if (opt == '?' || parse_option(o, opt, optarg) < 0)
            return -EINVAL;
    }
    if (optind < argc || o->trace_file == NULL || o->cluster_file == NULL) {
        fprintf(stderr, "gsched-simulate: --trace and --cluster are needed\n");
        return -EINVAL;
    }
    return 0;
}

static bool is_toml(const char *path)
{
    size_t n = strlen(path);

    return n > 5 && strcmp(path + n - 5, ".toml") == 0;
}

/* Reads the trace and its cluster into t (problems appended to err). */
static int load(const struct options *o, struct gs_sim_trace *t, struct gs_buf *err)
{
    bool toml = is_toml(o->cluster_file);
    int rc;

    if (strcmp(o->format, "tiresias") == 0) {
        rc = toml ? gs_sim_read_cluster_toml(t, o->cluster_file, err)
                  : gs_sim_read_tiresias_cluster(t, o->cluster_file, o->links, err);
        return rc < 0 ? rc : gs_sim_read_tiresias_jobs(t, o->trace_file, err);
    }
    if (strcmp(o->format, "openb") == 0) {
        rc = toml ? gs_sim_read_cluster_toml(t, o->cluster_file, err)
                  : gs_sim_read_openb_nodes(t, o->cluster_file, o->links, err);
        return rc < 0 ? rc : gs_sim_read_openb_pods(t, o->trace_file, err);
    }
    if (!toml) {
        gs_buf_printf(err, "%s: philly-gavel needs a cluster TOML (*.toml; docs/simulator.md)\n",
                      o->cluster_file);
        return -EINVAL;
    }
    rc = gs_sim_read_cluster_toml(t, o->cluster_file, err);
    return rc < 0 ? rc : gs_sim_read_philly(t, o->trace_file, err);
}

static int prepare(const struct options *o, struct gs_sim_trace *t, struct gs_buf *err)
{
    uint32_t accounts = o->accounts;
    int rc;

    if (t->nnodes == 0 || t->njobs == 0) {
        gs_buf_printf(err, "%s: no %s\n", t->nnodes == 0 ? o->cluster_file : o->trace_file,
                      t->nnodes == 0 ? "nodes" : "jobs to replay");
        return -EINVAL;
    }
    gs_sim_trace_sort(t);
    gs_sim_trace_scale_load(t, o->load);
    gs_sim_trace_keep_nodes(t, o->nodes);
    gs_sim_trace_shape(t);
    if (accounts == 0 && strcmp(o->format, "openb") == 0)
        accounts = OPENB_DEFAULT_ACCOUNTS;
    /* Every policy sees the same jobs marked, so that their urgent jobs' waits compare. */
    gs_sim_trace_mark_urgent(t, o->urgent_share, o->seed);
    rc = accounts > 0 ? gs_sim_trace_hash_accounts(t, accounts, o->seed) : 0;
    if (rc == 0) /* after the accounts: a dataset is an account's */
        gs_sim_trace_assign_datasets(t, o->data.datasets, o->seed);
    return rc;
}

/* The default [priority] and one [[account]] per trace account, equal shares. */
static int default_config(const struct gs_sim_trace *t, struct gs_config *cfg, struct gs_buf *err)
{
    struct gs_buf text = GS_BUF_INIT;
    int rc;

    gs_buf_printf(&text, "[priority]\nweight_age = 1000\nweight_fairshare = 10000\n"
                         "max_age = \"7d\"\ndecay_half_life = \"7d\"\n");
    for (size_t i = 0; i < t->naccounts; i++) {
        gs_buf_printf(&text, "[[account]]\nname = ");
        gs_json_put_string(&text, t->accounts[i], strlen(t->accounts[i]));
        gs_buf_printf(&text, "\nshares = 1\n");
    }
    rc = text.data == NULL ? -ENOMEM : gs_config_parse(cfg, text.data, text.len, "(built-in)", err);
    gs_buf_release(&text);
    return rc;
}

/* Each trace account's share: its [[account]] shares over all of theirs (1 if undefined). */
static int account_shares(const struct gs_sim_trace *t, const struct gs_config *cfg, double **ret)
{
    double *shares = calloc(t->naccounts + 1, sizeof(double)), sum = 0;

    if (shares == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->naccounts; i++) {
        const struct gs_config_account *a = gs_config_account(cfg, t->accounts[i]);

        shares[i] = a != NULL ? a->shares : 1;
        sum += shares[i];
    }
    for (size_t i = 0; i < t->naccounts && sum > 0; i++)
        shares[i] /= sum;
    *ret = shares;
    return 0;
}

/* The policies asked for, fifo-firstfit first; the -data ones only with datasets. Returns
 * how many, or -EINVAL. */
static int pick_policies(const char *list, bool data, const struct gs_sim_policy **out)
{
    char copy[512], *save = NULL;
    int n = 1;

    out[0] = &gs_sim_policies[0];
    if (list == NULL || strcmp(list, "all") == 0) {
        for (size_t i = 1; i < gs_sim_npolicies; i++) {
            if (data || gs_sim_policies[i].data == GS_SIM_DATA_BLIND)
                out[n++] = &gs_sim_policies[i];
        }
        return n;
    }
    snprintf(copy, sizeof(copy), "%s", list);
    for (char *name = strtok_r(copy, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
        const struct gs_sim_policy *p = gs_sim_policy_find(name);
        bool dup = false;

        if (p == NULL) {
            fprintf(stderr, "gsched-simulate: --policy: unknown policy '%s'\n", name);
            return -EINVAL;
        }
        if (p->data != GS_SIM_DATA_BLIND && !data) {
            fprintf(stderr, "gsched-simulate: --policy: %s needs --datasets N (N >= 1)\n", name);
            return -EINVAL;
        }
        for (int k = 0; k < n; k++)
            dup = dup || out[k] == p;
        if (!dup)
            out[n++] = p;
    }
    return n;
}

static int write_file(const char *path, const struct gs_buf *b)
{
    FILE *f = fopen(path, "w");
    int rc = 0;

    if (f == NULL)
        return -errno;
    if (b->len > 0 && fwrite(b->data, 1, b->len, f) != b->len)
        rc = -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

struct sim {
    struct options o;
    struct gs_sim_trace trace;
    struct gs_config cfg;
    double *shares;
    const struct gs_sim_policy *policies[16];
    struct gs_sim_result results[16];
    int npolicies, nresults;
    struct gs_buf err, out;
};

static int replay(struct sim *s)
{
    for (int i = 0; i < s->npolicies; i++) {
        int rc = gs_sim_run(&s->trace, s->policies[i], &s->cfg, s->shares, &s->o.model, &s->o.data,
                            &s->results[i]);

        if (rc < 0) {
            gs_buf_printf(&s->err, "%s: replay failed: %s\n", s->policies[i]->name, strerror(-rc));
            return rc;
        }
        s->nresults++;
    }
    for (int i = 0; i < s->nresults; i++) {
        if (s->results[0].avg_jct_s > 0)
            s->results[i].jct_vs_baseline = s->results[i].avg_jct_s / s->results[0].avg_jct_s;
    }
    return 0;
}

static int report(struct sim *s)
{
    struct gs_sim_about about = {.format = s->o.format,
                                 .trace_file = s->o.trace_file,
                                 .cluster_file = s->o.cluster_file,
                                 .nodes = s->trace.nnodes,
                                 .gpus = gs_sim_trace_gpus(&s->trace),
                                 .jobs = s->trace.njobs,
                                 .skipped = s->trace.skipped,
                                 .accounts = s->trace.naccounts,
                                 .load = s->o.load,
                                 .seed = s->o.seed,
                                 .urgent_share = s->o.urgent_share,
                                 .model = s->o.model,
                                 .data = s->o.data};
    struct gs_buf svg = GS_BUF_INIT;
    int rc;

    rc = s->o.json ? gs_sim_report_json(&s->out, &about, s->results, (size_t)s->nresults)
                   : gs_sim_report_text(&s->out, &about, s->results, (size_t)s->nresults);
    if (rc == 0 && s->o.svg != NULL) {
        rc = gs_sim_report_svg(&svg, &about, s->results, (size_t)s->nresults);
        if (rc == 0 && (rc = write_file(s->o.svg, &svg)) < 0)
            gs_buf_printf(&s->err, "%s: %s\n", s->o.svg, strerror(-rc));
    }
    gs_buf_release(&svg);
    if (rc == 0 && s->out.len > 0)
        fwrite(s->out.data, 1, s->out.len, stdout);
    return rc;
}

static int simulate(struct sim *s)
{
    int rc = load(&s->o, &s->trace, &s->err);

    if (rc == 0)
        rc = prepare(&s->o, &s->trace, &s->err);
    if (rc == 0)
        rc = gs_config_init(&s->cfg);
    if (rc == 0)
        rc = s->o.config != NULL ? gs_config_load(&s->cfg, s->o.config, &s->err)
                                 : default_config(&s->trace, &s->cfg, &s->err);
    if (rc == 0)
        rc = account_shares(&s->trace, &s->cfg, &s->shares);
    if (rc == 0)
        rc = replay(s);
    if (rc == 0)
        rc = report(s);
    return rc;
}

int main(int argc, char **argv)
{
    static struct sim s; /* large: off the stack */
    int rc;

    rc = parse_args(argc, argv, &s.o);
    if (rc != 0) {
        usage(rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    s.npolicies = pick_policies(s.o.policies, s.o.data.datasets > 0, s.policies);
    if (s.npolicies < 0)
        return 2;
    rc = simulate(&s);
    if (rc < 0 && s.err.len > 0)
        fprintf(stderr, "%s", s.err.data);
    else if (rc < 0)
        fprintf(stderr, "gsched-simulate: %s\n", strerror(-rc));
    for (int i = 0; i < s.nresults; i++)
        gs_sim_result_release(&s.results[i]);
    free(s.shares);
    gs_config_release(&s.cfg);
    gs_sim_trace_release(&s.trace);
    gs_buf_release(&s.err);
    gs_buf_release(&s.out);
    return rc < 0 ? 1 : 0;
}
