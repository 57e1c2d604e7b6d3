/*
 * cmd_data.c: `gsched data`: the datasets in the nodes' shard caches (docs/data.md).
 *
 *     gsched data ls [-w NODES] [--json]
 *         NODE  DATASET       SHARDS  HELD  BYTES  CACHE  LAST USED  SOURCE
 *     gsched data stat DATASET|DIR [-w NODES] [--json]
 *         per node: the shards held (as index ranges), bytes held of the total
 *     gsched data warm DATASET|DIR -w NODES|--all [--wait] [--timeout SECONDS]
 *         stage the whole dataset onto those nodes' caches ahead of a job
 *     gsched data evict DATASET|DIR -w NODES|--all      (root)
 *
 * DATASET is an id (32 hex digits, as `ls` shows it) or a dataset directory, which is read
 * here (as the user who typed it) to find its id; warm needs the directory, and for an id
 * reads the one the nodes' caches say it came from (cli/data_resolve.h). NODES is a host
 * list ("n[1-4],g7").
 * Warm and evict are told to the workers and answered at once; `warm --wait` then asks
 * every second until each node holds every shard (or --timeout, default 600 s, passes).
 * Failures exit 1, bad usage 2.
 */
#include "cli/commands.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/data_resolve.h"
#include "cli/table.h"
#include "common/clock.h"
#include "common/hostlist.h"
#include "common/json.h"
#include "common/sort.h"
#include "common/units.h"
#include "proto/held.h"

#define CMD "data"
#define WARM_TIMEOUT_DEFAULT_S 600

enum {
    OPT_NODES = CLI_ARGS_OPERAND + 1,
    OPT_ALL,
    OPT_JSON,
    OPT_WAIT,
    OPT_TIMEOUT,
    OPT_SOCKET,
};

static const struct cli_opt opts[] = {
    {"--nodes", "-w", true, OPT_NODES},
    {"--all", NULL, false, OPT_ALL},
    {"--json", NULL, false, OPT_JSON},
    {"--wait", NULL, false, OPT_WAIT},
    {"--timeout", NULL, true, OPT_TIMEOUT},
    {"--socket", NULL, true, OPT_SOCKET},
    {NULL, NULL, false, 0},
};

struct data_args {
    Gs__DataOp op;
    const char *target; /* DATASET or DIR */
    char **nodes;       /* expanded host list, or NULL */
    size_t nnodes;
    bool all, json, wait;
    uint64_t timeout_s;
    const char *socket_opt;
    struct gs_jobdata data; /* the target resolved */
};

static int parse_op(const char *word, Gs__DataOp *op)
{
    static const struct {
        const char *name;
        Gs__DataOp op;
    } ops[] = {
        {"ls", GS__DATA_OP__DATA_OP_LIST},
        {"stat", GS__DATA_OP__DATA_OP_STAT},
        {"warm", GS__DATA_OP__DATA_OP_WARM},
        {"evict", GS__DATA_OP__DATA_OP_EVICT},
    };

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strcmp(word, ops[i].name) == 0) {
            *op = ops[i].op;
            return 0;
        }
    }
    return -EINVAL;
}

static int take_option(struct data_args *d, int id, const char *value)
{
    struct gs_error err = {0};

    switch (id) {
    case OPT_NODES:
        gs_hostlist_free(d->nodes);
        d->nodes = NULL;
        if (gs_hostlist_expand(value, &d->nodes, &d->nnodes, &err) < 0)
            return cli_usage_error(CMD, "bad --nodes '%s': %s", value, err.msg);
        return 0;
    case OPT_ALL:
        d->all = true;
        return 0;
    case OPT_JSON:
        d->json = true;
        return 0;
    case OPT_WAIT:
        d->wait = true;
        return 0;
    case OPT_TIMEOUT:
        if (cli_parse_u64(value, &d->timeout_s) < 0 || d->timeout_s == 0)
            return cli_usage_error(CMD, "bad --timeout '%s' (seconds, at least 1)", value);
        return 0;
    case OPT_SOCKET:
        d->socket_opt = value;
        return 0;
    default:
        return cli_usage_error(CMD, "unexpected option");
    }
}

/* Which operands and options each operation takes. */
static int check_args(const struct data_args *d)
{
    bool acts = d->op == GS__DATA_OP__DATA_OP_WARM || d->op == GS__DATA_OP__DATA_OP_EVICT;

    if (d->op != GS__DATA_OP__DATA_OP_LIST && d->target == NULL)
        return cli_usage_error(CMD, "which dataset? (an id or a dataset directory)");
    if (d->op == GS__DATA_OP__DATA_OP_LIST && d->target != NULL)
        return cli_usage_error(CMD, "ls takes no dataset ('%s'; see gsched data stat)", d->target);
    if (acts && d->nodes == NULL && !d->all)
        return cli_usage_error(CMD, "which nodes? (-w NODES or --all)");
    if (d->nodes != NULL && d->all)
        return cli_usage_error(CMD, "-w and --all: one or the other");
    if (!acts && d->all)
        return cli_usage_error(CMD, "--all is for warm and evict (ls and stat show every node)");
    if (d->wait && d->op != GS__DATA_OP__DATA_OP_WARM)
        return cli_usage_error(CMD, "--wait is for warm");
    if (d->json && acts)
        return cli_usage_error(CMD, "--json is for ls and stat");
    return 0;
}

static int parse_args(int argc, char **argv, struct data_args *d)
{
    struct cli_args a;
    int rc;

    if (argc < 2)
        return cli_usage_error(CMD, "ls, stat, warm or evict?");
    if (parse_op(argv[1], &d->op) < 0)
        return cli_usage_error(CMD, "unknown action '%s' (ls, stat, warm, evict)", argv[1]);
    d->timeout_s = WARM_TIMEOUT_DEFAULT_S;
    cli_args_init(&a, argc - 1, argv + 1);
    while ((rc = cli_args_next(&a, opts)) > 0) {
        if (rc == CLI_ARGS_OPERAND) {
            if (d->target != NULL)
                return cli_usage_error(CMD, "one dataset at a time ('%s')", a.value);
            d->target = a.value;
            continue;
        }
        rc = take_option(d, rc, a.value);
        if (rc != 0)
            return rc;
    }
    if (rc < 0)
        return cli_usage_error(CMD, "%s '%s'", a.why, a.bad);
    return check_args(d);
}

/* The target as an id; a directory is read (warm needs one: the workers copy from it). */
static int resolve_target(struct data_args *d)
{
    struct gs_error err = {0};

    if (d->target == NULL)
        return 0;
    if (gs_data_id_valid(d->target) && d->op != GS__DATA_OP__DATA_OP_WARM &&
        access(d->target, F_OK) < 0) {
        snprintf(d->data.id, sizeof(d->data.id), "%s", d->target);
        return 0;
    }
    if (cli_data_resolve(d->target, d->socket_opt, &d->data, &err) < 0) {
        fprintf(stderr, "gsched data: %s\n", err.msg);
        return -EINVAL;
    }
    return 0;
}

/*
 * h's shards as a bitmap (bitmap or runs on the wire, proto/held.h; the caller frees it).
 * NULL when out of memory or h does not read (call() has checked every reply's).
 */
static uint8_t *held_bits(const Gs__DatasetHolding *h)
{
    uint8_t *bits;

    return gs_held_read_new(&h->held, h->held_runs, h->n_held_runs, h->shards, &bits) == 0 ? bits
                                                                                           : NULL;
}

static int call(const struct data_args *d, Gs__Envelope **ret_reply)
{
    Gs__DataRequest req = GS__DATA_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char path[256];
    int rc;

    req.op = d->op;
    req.dataset = (char *)d->data.id;
    req.source = d->data.source != NULL ? d->data.source : "";
    req.n_nodes = d->nodes != NULL ? d->nnodes : 0;
    req.nodes = d->nodes;
    env.body_case = GS__ENVELOPE__BODY_DATA_REQUEST;
    env.data_request = &req;
    if (cli_socket_path(d->socket_opt, path, sizeof(path)) < 0)
        return -EINVAL;
    rc = cli_request(path, &env, ret_reply);
    if (rc == 0 && (*ret_reply)->body_case != GS__ENVELOPE__BODY_DATA_REPLY) {
        fprintf(stderr, "gsched data: gschedd answered with %s\n",
                gs_proto_body_name((*ret_reply)->body_case));
        gs_proto_envelope_free(*ret_reply);
        *ret_reply = NULL;
        return -EPROTO;
    }
    for (size_t i = 0; rc == 0 && i < (*ret_reply)->data_reply->n_holdings; i++) {
        const Gs__DataNodeHolding *r = (*ret_reply)->data_reply->holdings[i];
        uint8_t *bits = r->holding != NULL ? held_bits(r->holding) : NULL;

        if (bits == NULL) {
            fprintf(stderr,
                    "gsched data: gschedd's reply has a holding of node %s that does "
                    "not read (or memory ran out)\n",
                    r->node);
            gs_proto_envelope_free(*ret_reply);
            *ret_reply = NULL;
            return -EPROTO;
        }
        free(bits);
    }
    return rc;
}

static unsigned held_count(const Gs__DatasetHolding *h)
{
    uint8_t *bits = held_bits(h);
    unsigned n = bits != NULL ? (unsigned)gs_held_count(bits, h->shards) : 0;

    free(bits);
    return n;
}

/* "0-99,150" for the shards h holds. */
static int held_ranges(const Gs__DatasetHolding *h, struct gs_buf *out)
{
    uint8_t *bits = held_bits(h);
    int rc = bits != NULL ? 0 : -ENOMEM;
    uint32_t i = 0;

    while (rc == 0 && i < h->shards) {
        uint32_t start;

        if (!(bits[i / 8] >> (i % 8) & 1)) {
            i++;
            continue;
        }
        start = i;
        while (i < h->shards && (bits[i / 8] >> (i % 8) & 1))
            i++;
        rc = gs_buf_printf(out, "%s%u", out->len > 0 ? "," : "", start);
        if (rc == 0 && i - 1 > start)
            rc = gs_buf_printf(out, "-%u", i - 1);
    }
    if (rc == 0 && out->len == 0)
        rc = gs_buf_append_str(out, "-");
    free(bits);
    return rc;
}

static void size_text(uint64_t bytes, char *out, size_t size)
{
    if (bytes >= (1ull << 30))
        snprintf(out, size, "%.1fG", (double)bytes / (double)(1ull << 30));
    else if (bytes >= (1ull << 20))
        snprintf(out, size, "%.1fM", (double)bytes / (double)(1ull << 20));
    else if (bytes >= 1024)
        snprintf(out, size, "%.1fK", (double)bytes / 1024.0);
    else
        snprintf(out, size, "%lluB", (unsigned long long)bytes);
}

static void when_text(uint64_t ms, char *out, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms == 0 || localtime_r(&t, &tm) == NULL)
        snprintf(out, size, "-");
    else
        strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
}

static int table_row(struct cli_table *t, const Gs__DataNodeHolding *r, bool ranges)
{
    const Gs__DatasetHolding *h = r->holding;
    char a[32], b[32], c[32], held[32], when[32];
    struct gs_buf set = GS_BUF_INIT;
    int rc;

    size_text(h->bytes_held, a, sizeof(a));
    size_text(h->bytes_total, b, sizeof(b));
    size_text(r->used_bytes, c, sizeof(c));
    snprintf(held, sizeof(held), "%u", held_count(h));
    when_text(h->last_used_ms, when, sizeof(when));
    rc = ranges ? held_ranges(h, &set) : 0;
    if (rc == 0)
        rc = cli_table_add(t, r->node);
    if (rc == 0)
        rc = cli_table_add(t, h->dataset);
    if (rc == 0) {
        char shards[16];

        snprintf(shards, sizeof(shards), "%u", h->shards);
        rc = cli_table_add(t, shards);
    }
    if (rc == 0)
        rc = cli_table_add(t, held);
    if (rc == 0) {
        char bytes[72];

        snprintf(bytes, sizeof(bytes), "%s/%s", a, b);
        rc = cli_table_add(t, bytes);
    }
    if (rc == 0)
        rc = cli_table_add(t, ranges ? set.data : c);
    if (rc == 0)
        rc = cli_table_add(t, when);
    if (rc == 0)
        rc = cli_table_add(t, h->source[0] != '\0' ? h->source : "-");
    gs_buf_release(&set);
    return rc;
}

static int print_table(const Gs__DataReply *r, bool stat)
{
    static const char *const head[] = {"NODE",  "DATASET", "SHARDS",    "HELD",
                                       "BYTES", NULL,      "LAST_USED", "SOURCE"};
    struct cli_table t;
    struct gs_buf out = GS_BUF_INIT;
    int rc = 0;

    cli_table_init(&t, 8);
    for (size_t i = 0; rc == 0 && i < 8; i++)
        rc = cli_table_add(&t, head[i] != NULL ? head[i] : stat ? "HELD_SHARDS" : "CACHE");
    for (size_t i = 0; rc == 0 && i < r->n_holdings; i++)
        rc = table_row(&t, r->holdings[i], stat);
    if (rc == 0)
        rc = cli_table_render(&t, &out);
    if (rc == 0)
        fputs(out.data != NULL ? out.data : "", stdout);
    cli_table_release(&t);
    gs_buf_release(&out);
    return rc;
}

static int print_json(const Gs__DataReply *r)
{
    struct gs_buf out = GS_BUF_INIT, set = GS_BUF_INIT;
    struct gs_json j;
    int rc = 0;

    gs_json_init(&j, &out);
    gs_json_object_begin(&j);
    gs_json_key(&j, "holdings");
    gs_json_array_begin(&j);
    for (size_t i = 0; rc == 0 && i < r->n_holdings; i++) {
        const Gs__DatasetHolding *h = r->holdings[i]->holding;

        gs_buf_reset(&set);
        rc = held_ranges(h, &set);
        gs_json_object_begin(&j);
        gs_json_kv_string(&j, "node", r->holdings[i]->node);
        gs_json_kv_string(&j, "dataset", h->dataset);
        gs_json_kv_uint(&j, "shards", h->shards);
        gs_json_kv_uint(&j, "held", held_count(h));
        gs_json_kv_string(&j, "held_shards", set.data);
        gs_json_kv_uint(&j, "bytes_held", h->bytes_held);
        gs_json_kv_uint(&j, "bytes_total", h->bytes_total);
        gs_json_kv_uint(&j, "last_used_ms", h->last_used_ms);
        gs_json_kv_string(&j, "source", h->source);
        gs_json_kv_uint(&j, "cache_used_bytes", r->holdings[i]->used_bytes);
        gs_json_kv_uint(&j, "cache_cap_bytes", r->holdings[i]->cap_bytes);
        gs_json_object_end(&j);
    }
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    rc = rc < 0 ? rc : gs_json_finish(&j);
    if (rc == 0)
        printf("%s\n", out.data);
    gs_buf_release(&out);
    gs_buf_release(&set);
    return rc;
}

/* Whether every one of nodes holds all of the dataset's shards, by a stat reply. */
static bool all_held(const Gs__DataReply *r, char **nodes, size_t nnodes)
{
    for (size_t k = 0; k < nnodes; k++) {
        bool done = false;

        for (size_t i = 0; i < r->n_holdings && !done; i++) {
            const Gs__DatasetHolding *h = r->holdings[i]->holding;

            done = strcmp(r->holdings[i]->node, nodes[k]) == 0 && held_count(h) == h->shards;
        }
        if (!done)
            return false;
    }
    return true;
}

/* warm --wait: stat every second until the told nodes hold it all, or the timeout. */
static int wait_warm(struct data_args *d, char **told, size_t ntold)
{
    uint64_t deadline = gs_clock_mono_ms() + d->timeout_s * 1000;
    struct timespec second = {1, 0};

    d->op = GS__DATA_OP__DATA_OP_STAT;
    for (;;) {
        Gs__Envelope *reply = NULL;
        bool done;
        int rc = call(d, &reply);

        if (rc < 0)
            return rc;
        done = all_held(reply->data_reply, told, ntold);
        gs_proto_envelope_free(reply);
        if (done)
            return 0;
        if (gs_clock_mono_ms() >= deadline) {
            fprintf(stderr, "gsched data: warm: not every node holds %s after %llu s\n", d->data.id,
                    (unsigned long long)d->timeout_s);
            return -ETIMEDOUT;
        }
        nanosleep(&second, NULL);
    }
}

/* Names with their digit runs compared as numbers: node2 before node10. */
static int natural_cmp(const char *a, const char *b)
{
    while (*a != '\0' && *b != '\0') {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            size_t na = strspn(a, "0123456789"), nb = strspn(b, "0123456789");
            int c = na != nb ? (na < nb ? -1 : 1) : strncmp(a, b, na);

            if (c != 0)
                return c;
            a += na;
            b += nb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return (*a != '\0') - (*b != '\0');
}

/* By node name, then dataset. */
static int by_node(const void *pa, const void *pb)
{
    const Gs__DataNodeHolding *a = *(Gs__DataNodeHolding *const *)pa;
    const Gs__DataNodeHolding *b = *(Gs__DataNodeHolding *const *)pb;
    int c = natural_cmp(a->node, b->node);

    return c != 0 ? c : strcmp(a->holding->dataset, b->holding->dataset);
}

static int act(struct data_args *d)
{
    Gs__Envelope *reply = NULL;
    const Gs__DataReply *r;
    int rc = call(d, &reply);

    if (rc < 0)
        return rc;
    r = reply->data_reply;
    gs_sort(r->holdings, r->n_holdings, sizeof(*r->holdings), by_node);
    if (d->op == GS__DATA_OP__DATA_OP_LIST || d->op == GS__DATA_OP__DATA_OP_STAT) {
        rc = d->json ? print_json(r) : print_table(r, d->op == GS__DATA_OP__DATA_OP_STAT);
    } else {
        printf("%s %s: %zu node(s)", d->op == GS__DATA_OP__DATA_OP_WARM ? "warming" : "evicting",
               d->data.id, r->n_nodes);
        for (size_t i = 0; i < r->n_nodes; i++)
            printf("%s%s", i > 0 ? "," : " ", r->nodes[i]);
        printf("\n");
        fflush(stdout);
        if (d->wait)
            rc = wait_warm(d, r->nodes, r->n_nodes);
    }
    gs_proto_envelope_free(reply);
    return rc;
}

int cli_cmd_data(int argc, char **argv)
{
    struct data_args d = {0};
    int status;

    gs_jobdata_init(&d.data);
    status = parse_args(argc, argv, &d);
    if (status == 0)
        status = resolve_target(&d) < 0 || act(&d) < 0 ? 1 : 0;
    gs_hostlist_free(d.nodes);
    gs_jobdata_release(&d.data);
    return status;
}
