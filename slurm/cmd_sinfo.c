/*
 * cmd_sinfo.c: `sinfo` (also `gsched sinfo`): the cluster's partitions and nodes as Slurm's
 * sinfo shows them, one line per partition and node state, the default partition marked
 * with '*':
 *
 *     PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
 *     gpu*         up   infinite      1    mix n1
 *     gpu*         up   infinite      2   idle n[4-5]
 *
 * Options as Slurm's: -p PARTS, -N (one line per node and partition), -s (NODES(A/I/O/T)),
 * -t STATES, -n NODES (a hostlist), -h, -l (long state names), -o FORMAT (%P %R %a %l %D %t
 * %T %N %G %c %m %F %A %C %E %f %e, "%#P": as wide as the widest), -O FIELDS, and gsched's
 * --socket. Lines come in partition order (as configured), then busiest state first
 * (mix, alloc, idle, drng, drain, down). Node states are gsched's mapped onto Slurm's: an
 * UP node with every core allocated is alloc, with some mix, with none idle; DRAINING is
 * drng, DRAINED drain, DOWN (not heartbeating) down, a configured node that never
 * registered unk. Nodes are grouped by the fields shown: without a state field (-s, or a
 * -o without %t/%T) a partition is one line. Every failure exits 1, as in Slurm.
 *
 * -T / --reservation shows the advance reservations instead, Slurm's fixed layout
 * (scontrol_resv.h); as in Slurm, only -h of the other options applies to it:
 *
 *     RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST
 *     maint        ACTIVE  2026-12-05T10:00:00  2026-12-05T11:00:00     01:00:00  node[1-2]
 */
#include "slurm/commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hostlist.h"
#include "common/sort.h"
#include "slurm/scontrol_resv.h"
#include "slurm/scontrol_update.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"

#define CMD "sinfo"

enum field {
    F_PARTITION,
    F_PARTNAME,
    F_AVAIL,
    F_TIMELIMIT,
    F_NODES,
    F_STATE,
    F_STATELONG,
    F_NODELIST,
    F_GRES,
    F_CPUS,
    F_MEMORY,
    F_AIOT,
    F_AI,
    F_CPUSTATE,
    F_REASON,
    F_FEATURES,
    F_FREEMEM,
    F_TMPDISK,
};

static const struct slurm_field fields[] = {
    [F_PARTITION] = {'P', "Partition", "PARTITION"},
    [F_PARTNAME] = {'R', "PartitionName", "PARTITION"},
    [F_AVAIL] = {'a', "Available", "AVAIL"},
    [F_TIMELIMIT] = {'l', "Time", "TIMELIMIT"},
    [F_NODES] = {'D', "Nodes", "NODES"},
    [F_STATE] = {'t', "StateCompact", "STATE"},
    [F_STATELONG] = {'T', "StateLong", "STATE"},
    [F_NODELIST] = {'N', "NodeList", "NODELIST"},
    [F_GRES] = {'G', "Gres", "GRES"},
    [F_CPUS] = {'c', "CPUs", "CPUS"},
    [F_MEMORY] = {'m', "Memory", "MEMORY"},
    [F_AIOT] = {'F', "NodeAIOT", "NODES(A/I/O/T)"},
    [F_AI] = {'A', "NodeAI", "NODES(A/I)"},
    [F_CPUSTATE] = {'C', "CPUsState", "CPUS(A/I/O/T)"},
    [F_REASON] = {'E', "Reason", "REASON"},
    [F_FEATURES] = {'f', "Features", "AVAIL_FEATURES"},
    [F_FREEMEM] = {'e', "FreeMem", "FREE_MEM"},
    [F_TMPDISK] = {'d', "Disk", "TMP_DISK"},
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

struct sinfo_args {
    const char *partitions, *states, *nodes_expr, *format, *long_fields, *socket_opt;
    bool noheader, node_oriented, summarize, long_out, reservations;
    char **node_names; /* -n expanded */
    size_t nnode_names;
};

/* One output line: a partition's nodes that share what the line shows. */
struct group {
    const Gs__PartitionInfo *part;
    enum slurm_node_state state;
    const Gs__NodeInfo **nodes; /* NULL entries: configured but never registered */
    const char **names;
    size_t n;
};

static bool state_selected(const char *list, enum slurm_node_state s)
{
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");

        if ((strlen(slurm_node_state_short(s)) == len &&
             strncasecmp(p, slurm_node_state_short(s), len) == 0) ||
            (strlen(slurm_node_state_long(s)) == len &&
             strncasecmp(p, slurm_node_state_long(s), len) == 0) ||
            (len == 5 && strncasecmp(p, "drain", 5) == 0 &&
             (s == SLURM_NODE_DRAIN || s == SLURM_NODE_DRNG)) ||
            (len == 3 && strncasecmp(p, "all", 3) == 0))
            return true;
        if (p[len] == '\0')
            return false;
        p += len + 1;
    }
}

static int check_states(const char *list)
{
    static const char *const known[] = {"mix",  "mixed",    "alloc", "allocated", "idle",
                                        "drng", "draining", "drain", "drained",   "down",
                                        "unk",  "unknown",  "maint", "all"};

    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        bool ok = false;

        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
            ok |= strlen(known[i]) == len && strncasecmp(p, known[i], len) == 0;
        if (!ok)
            return slurm_error(CMD, "invalid node state specified: %.*s", (int)len, p);
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static bool node_wanted(const struct sinfo_args *a, const char *name)
{
    if (a->node_names == NULL)
        return true;
    for (size_t i = 0; i < a->nnode_names; i++) {
        if (strcmp(a->node_names[i], name) == 0)
            return true;
    }
    return false;
}

/* "n2" before "n10": the prefix, then the number it ends in, then the whole name. */
static int natural_cmp(const char *a, const char *b)
{
    size_t pa = strcspn(a, "0123456789"), pb = strcspn(b, "0123456789");
    int c;

    if (pa != pb || strncmp(a, b, pa) != 0)
        return strcmp(a, b);
    c = (int)strlen(a + pa) - (int)strlen(b + pb);
    return c != 0 ? c : strcmp(a, b);
}

struct value_ctx {
    const struct group *g;
};

static void count_aiot(const struct group *g, unsigned *al, unsigned *id, unsigned *ot)
{
    *al = *id = *ot = 0;
    for (size_t i = 0; i < g->n; i++) {
        enum slurm_node_state s = slurm_node_state(g->nodes[i]);

        if (s == SLURM_NODE_MIX || s == SLURM_NODE_ALLOC)
            (*al)++;
        else if (s == SLURM_NODE_IDLE)
            (*id)++;
        else
            (*ot)++;
    }
}

/* A per-node number for the group: "16" when every node has it, else "MIN+", as Slurm. */
static int min_plus(struct gs_buf *out, const struct group *g, int which)
{
    uint64_t lo = UINT64_MAX, hi = 0;

    for (size_t i = 0; i < g->n; i++) {
        const Gs__NodeInfo *n = g->nodes[i];
        uint64_t v = n == NULL            ? 0
                     : which == F_CPUS    ? n->cores_total
                     : which == F_MEMORY  ? n->memory_total_mib
                     : which == F_FREEMEM ? n->memory_free_mib
                     : which == F_TMPDISK ? n->tmp_disk_mib
                                          : n->gpus_total;

        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (g->n == 0)
        lo = hi = 0;
    if (which == F_GRES && hi == 0)
        return gs_buf_append_str(out, "(null)");
    return gs_buf_printf(out, "%s%llu%s", which == F_GRES ? "gpu:" : "", (unsigned long long)lo,
                         lo != hi ? "+" : "");
}

static int value(void *vctx, int field, struct gs_buf *out)
{
    const struct group *g = ((const struct value_ctx *)vctx)->g;
    const Gs__PartitionInfo *p = g->part;
    unsigned al, id, ot;
    char buf[64];

    switch ((enum field)field) {
    case F_PARTITION:
        return gs_buf_printf(out, "%s%s", p->name, p->is_default ? "*" : "");
    case F_PARTNAME:
        return gs_buf_append_str(out, p->name);
    case F_AVAIL:
        return gs_buf_append_str(out, p->up ? "up" : "down");
    case F_TIMELIMIT:
        return gs_buf_append_str(
            out, slurm_fmt_limit(p->max_time_s, false, "infinite", buf, sizeof(buf)));
    case F_NODES:
        return gs_buf_printf(out, "%zu", g->n);
    case F_STATE:
        return gs_buf_append_str(out, g->n > 0 ? slurm_node_state_short(g->state) : "n/a");
    case F_STATELONG:
        return gs_buf_append_str(out, g->n > 0 ? slurm_node_state_long(g->state) : "n/a");
    case F_NODELIST:
        return gs_hostlist_compress(g->names, g->n, out);
    case F_GRES:
    case F_CPUS:
    case F_MEMORY:
    case F_FREEMEM:
    case F_TMPDISK:
        return min_plus(out, g, field);
    case F_AIOT:
        count_aiot(g, &al, &id, &ot);
        return gs_buf_printf(out, "%u/%u/%u/%zu", al, id, ot, g->n);
    case F_AI:
        count_aiot(g, &al, &id, &ot);
        return gs_buf_printf(out, "%u/%u", al, id);
    case F_CPUSTATE: {
        unsigned long long a = 0, i = 0, o = 0, t = 0;

        for (size_t k = 0; k < g->n; k++) {
            const Gs__NodeInfo *n = g->nodes[k];
            enum slurm_node_state s = slurm_node_state(n);

            if (n == NULL)
                continue;
            t += n->cores_total;
            if (s == SLURM_NODE_MIX || s == SLURM_NODE_ALLOC || s == SLURM_NODE_IDLE) {
                a += n->cores_total - n->cores_free;
                i += n->cores_free;
            } else {
                o += n->cores_total;
            }
        }
        return gs_buf_printf(out, "%llu/%llu/%llu/%llu", a, i, o, t);
    }
    case F_REASON:
        for (size_t k = 0; k < g->n; k++) {
            if (g->nodes[k] != NULL && g->nodes[k]->reason != NULL && g->nodes[k]->reason[0])
                return gs_buf_append_str(out, g->nodes[k]->reason);
        }
        return gs_buf_append_str(out, "none");
    case F_FEATURES: {
        const Gs__NodeInfo *n = g->n > 0 ? g->nodes[0] : NULL;
        int rc = 0;

        if (n == NULL || n->n_features == 0)
            return gs_buf_append_str(out, "(null)");
        for (size_t k = 0; rc == 0 && k < n->n_features; k++)
            rc = gs_buf_printf(out, "%s%s", k > 0 ? "," : "", n->features[k]);
        return rc;
    }
    }
    return 0;
}

static void groups_free(struct group *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++) {
        free(v[i].nodes);
        free(v[i].names);
    }
    free(v);
}

struct pair {
    const Gs__PartitionInfo *part;
    const char *name;
    const Gs__NodeInfo *node;
    enum slurm_node_state state;
    size_t order; /* partition's index, then the node's in it */
};

static int by_group(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;

    if (x->order / 100000 != y->order / 100000)
        return x->order / 100000 < y->order / 100000 ? -1 : 1;
    if (x->state != y->state)
        return (int)x->state - (int)y->state;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int by_node(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    int c = natural_cmp(x->name, y->name);

    return c != 0 ? c : (x->order < y->order ? -1 : x->order > y->order);
}

/*
 * Every (partition, node) pair selected, grouped into lines: per node with -N, per state
 * when by_state, else per partition. Returns 0 or -ENOMEM.
 */
static int build_groups(const struct sinfo_args *a, const Gs__PartitionsReply *parts,
                        const Gs__NodesReply *nodes, bool by_state, struct group **ret,
                        size_t *ret_n)
{
    size_t np = 0, cap = 0, ng = 0;
    struct pair *pairs = NULL;
    struct group *groups = NULL;
    int rc = -ENOMEM;

    for (size_t i = 0; i < parts->n_partitions; i++)
        cap += parts->partitions[i]->n_nodes + 1;
    pairs = calloc(cap + 1, sizeof(*pairs));
    groups = calloc(cap + 1, sizeof(*groups));
    if (pairs == NULL || groups == NULL)
        goto out;
    for (size_t i = 0; i < parts->n_partitions; i++) {
        const Gs__PartitionInfo *p = parts->partitions[i];
        size_t before = np;

        if (a->partitions != NULL && !slurm_list_has(a->partitions, p->name))
            continue;
        for (size_t k = 0; k < p->n_nodes; k++) {
            const Gs__NodeInfo *n = slurm_find_node(nodes, p->nodes[k]);
            enum slurm_node_state s = slurm_node_state(n);

            if (!node_wanted(a, p->nodes[k]) ||
                (a->states != NULL && !state_selected(a->states, s)))
                continue;
            pairs[np++] =
                (struct pair){p, p->nodes[k], n, by_state ? s : SLURM_NODE_MIX, i * 100000 + k};
        }
        /* A partition without (matching) nodes still has its line, as in Slurm. */
        if (np == before && a->states == NULL && a->node_names == NULL && !a->node_oriented)
            pairs[np++] = (struct pair){p, NULL, NULL, SLURM_NODE_MIX, i * 100000};
    }
    gs_sort(pairs, np, sizeof(*pairs), a->node_oriented ? by_node : by_group);
    for (size_t i = 0; i < np; i++) {
        struct group *g = ng > 0 ? &groups[ng - 1] : NULL;

        if (g == NULL || a->node_oriented || g->part != pairs[i].part ||
            g->state != pairs[i].state) {
            g = &groups[ng++];
            g->part = pairs[i].part;
            g->state = pairs[i].state;
            g->nodes = calloc(np + 1, sizeof(*g->nodes));
            g->names = calloc(np + 1, sizeof(*g->names));
            if (g->nodes == NULL || g->names == NULL)
                goto out;
        }
        if (pairs[i].name == NULL)
            continue;
        g->nodes[g->n] = pairs[i].node;
        g->names[g->n++] = pairs[i].name;
    }
    *ret = groups;
    *ret_n = ng;
    groups = NULL;
    rc = 0;
out:
    groups_free(groups, ng);
    free(pairs);
    return rc;
}

/* "%#P" and "%#N": as wide as the widest value (or the header). */
static int resolve_auto_widths(struct slurm_format *fmt, const struct group *groups, size_t ng)
{
    struct gs_buf cell = GS_BUF_INIT;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < fmt->n; i++) {
        struct slurm_item *it = &fmt->items[i];
        size_t w;

        if (it->field < 0 || it->width != SLURM_WIDTH_AUTO)
            continue;
        w = strlen(fields[it->field].header);
        for (size_t k = 0; rc == 0 && k < ng; k++) {
            struct value_ctx ctx = {&groups[k]};

            gs_buf_reset(&cell);
            rc = value(&ctx, it->field, &cell);
            if (rc == 0 && cell.len > w)
                w = cell.len;
        }
        it->width = (int)w;
    }
    gs_buf_release(&cell);
    return rc;
}

static void usage(FILE *f)
{
    fputs("Usage: sinfo [-N] [-s] [-l] [-h] [-p partitions] [-t states] [-n nodes] [-o format]\n"
          "             [-O fields] [--socket PATH]\n"
          "       sinfo -T|--reservation [-h] [--socket PATH]\n",
          f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct sinfo_args *a)
{
    static const struct option opts[] = {
        {"Node", no_argument, NULL, 'N'},
        {"summarize", no_argument, NULL, 's'},
        {"long", no_argument, NULL, 'l'},
        {"noheader", no_argument, NULL, 'h'},
        {"partition", required_argument, NULL, 'p'},
        {"states", required_argument, NULL, 't'},
        {"nodes", required_argument, NULL, 'n'},
        {"format", required_argument, NULL, 'o'},
        {"Format", required_argument, NULL, 'O'},
        {"all", no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'H'},
        {"usage", no_argument, NULL, 'U'},
        {"socket", required_argument, NULL, 'S'},
        {"reservation", no_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    struct gs_error err;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":Nslhp:t:n:o:O:aT", opts, NULL)) != -1) {
        switch (c) {
        case 'N':
            a->node_oriented = true;
            break;
        case 's':
            a->summarize = true;
            break;
        case 'l':
            a->long_out = true;
            break;
        case 'h':
            a->noheader = true;
            break;
        case 'p':
            a->partitions = optarg;
            break;
        case 't':
            if (check_states(optarg) != 0)
                return 1;
            a->states = optarg;
            break;
        case 'n':
            a->nodes_expr = optarg;
            break;
        case 'o':
            a->format = optarg;
            break;
        case 'O':
            a->long_fields = optarg;
            break;
        case 'a':
            break;
        case 'T':
            a->reservations = true;
            break;
        case 'S':
            a->socket_opt = optarg;
            break;
        case 'H':
        case 'U':
            usage(stdout);
            return 0;
        default:
            return slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    if (optind < argc)
        return slurm_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (a->nodes_expr != NULL) {
        gs_error_clear(&err);
        if (gs_hostlist_expand(a->nodes_expr, &a->node_names, &a->nnode_names, &err) < 0)
            return slurm_error(CMD, "invalid node list '%s': %s", a->nodes_expr, err.msg);
    }
    return -1;
}

static const char *default_format(const struct sinfo_args *a)
{
    if (a->node_oriented)
        return a->long_out ? "%#N %.6D %#P %.11T" : "%#N %.6D %#P %6t";
    if (a->summarize)
        return "%#P %.5a %.10l %.16F %N";
    return a->long_out ? "%#P %.5a %.10l %.6D %.11T %N" : "%#P %.5a %.10l %.6D %.6t %N";
}

/* -T: every reservation, one line each, by start time as gschedd sends them. */
static int show_reservations(const struct sinfo_args *a)
{
    Gs__ReservationRequest req = GS__RESERVATION_REQUEST__INIT;
    Gs__Reservation all = GS__RESERVATION__INIT;
    Gs__Envelope *reply = NULL;
    const Gs__ReservationReply *rr;
    struct gs_buf out = GS_BUF_INIT;
    int status, rc;

    req.action = GS__RESERVATION_ACTION__RESERVATION_ACTION_SHOW;
    req.reservation = &all;
    status = scontrol_resv_call(CMD, a->socket_opt, &req, NULL, &reply);
    if (status != 0)
        return status;
    rr = reply->reservation_reply;
    rc = scontrol_resv_table(&out, rr->reservations, rr->n_reservations, !a->noheader);
    status = slurm_print(CMD, rc, &out);
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    return status;
}

int cli_cmd_sinfo(int argc, char **argv)
{
    struct sinfo_args a = {0};
    struct slurm_format fmt = {0};
    Gs__Envelope *parts = NULL, *nodes = NULL;
    struct group *groups = NULL;
    struct gs_buf out = GS_BUF_INIT;
    size_t ng = 0;
    int status = parse_args(argc, argv, &a), rc;

    if (status >= 0)
        goto out;
    if (a.reservations) {
        status = show_reservations(&a);
        goto out;
    }
    status = slurm_format_choose(CMD, a.format, a.long_fields, default_format(&a), fields, NFIELDS,
                                 &fmt);
    if (status != 0)
        goto out;
    status = slurm_fetch_cluster(a.socket_opt, &parts, &nodes);
    if (status != 0)
        goto out;
    rc = build_groups(&a, parts->partitions_reply, nodes->nodes_reply,
                      slurm_format_has(&fmt, F_STATE) || slurm_format_has(&fmt, F_STATELONG),
                      &groups, &ng);
    if (rc == 0)
        rc = resolve_auto_widths(&fmt, groups, ng);
    if (rc == 0 && !a.noheader)
        rc = slurm_format_line(&fmt, fields, NULL, NULL, &out);
    for (size_t i = 0; rc == 0 && i < ng; i++) {
        struct value_ctx ctx = {&groups[i]};

        rc = slurm_format_line(&fmt, fields, value, &ctx, &out);
    }
    status = slurm_print(CMD, rc, &out);
out:
    groups_free(groups, ng);
    gs_buf_release(&out);
    gs_proto_envelope_free(parts);
    gs_proto_envelope_free(nodes);
    gs_hostlist_free(a.node_names);
    slurm_format_release(&fmt);
    return status;
}
