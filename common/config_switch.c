/*
 * config_switch.c: [[switch]] in gsched.toml (common/config.h): the network switches and
 * the nodes under each, as Slurm's topology.conf gives them, which gschedd uses to keep a
 * multi-node job under one switch. config.c registers the reader and, once the whole
 * document is read, calls gs_config_index_switches.
 *
 * Sites list thousands of nodes per switch, and gschedd asks which switch a node is under
 * each time one registers, so the nodes are kept in one array sorted by name, searched by
 * bisection. Building it is also where a node under two switches is found: checking each
 * node against every node read before was quadratic (a 40,000-node switch took 30 s).
 */
#include "common/config_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "common/sort.h"

#define CFG(c) ((struct gs_config *)(c)->target)

/* One node of the index: its name (borrowed from its switch), switch, and place there. */
struct gs_config_switch_node {
    const char *name;
    uint32_t sw;
    uint32_t pos;
};

static struct gs_config_switch *current_switch(struct gs_schema_ctx *c)
{
    return &CFG(c)->switches[CFG(c)->nswitches - 1];
}

static void rd_switch_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "switch.name", &current_switch(c)->name);
}

/* Where nodes stands is kept for gs_config_index_switches' report of a node under two. */
static void rd_switch_nodes(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_config_switch *sw = current_switch(c);

    sw->nodes_line = gs_toml_line(v);
    sw->nodes_col = gs_toml_col(v);
    gs_config_read_node_lists(c, v, "switch.nodes", &sw->nodes, &sw->nnodes);
}

const struct gs_schema_key gs_config_switch_keys[] = {
    {"name", rd_switch_name},
    {"nodes", rd_switch_nodes},
    {NULL, NULL},
};

static bool add_switch(struct gs_schema_ctx *c)
{
    static const struct gs_config_switch none;
    struct gs_config_switch *sw =
        gs_config_append(c, CFG(c)->switches, &CFG(c)->nswitches, sizeof(*sw), &none);

    if (sw != NULL)
        CFG(c)->switches = sw;
    return sw != NULL;
}

static void after_switch(struct gs_schema_ctx *c, const struct gs_toml_value *t)
{
    if (current_switch(c)->name == NULL)
        GS_SCHEMA_REPORT_AT(c, t, "switch needs a name");
}

void gs_config_read_switches(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_config_read_tables(c, v, "switch", CFG(c)->nswitches, GS_CONFIG_MAX_SWITCHES, add_switch,
                          after_switch);
}

/* By name, then by switch and place, so that a name's first entry is where it was first. */
static int by_name(const void *a, const void *b)
{
    const struct gs_config_switch_node *x = a, *y = b;
    int d = strcmp(x->name, y->name);

    if (d != 0)
        return d;
    if (x->sw != y->sw)
        return x->sw < y->sw ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* In file order, for the reports. */
static int by_place(const void *a, const void *b)
{
    const struct gs_config_switch_node *x = a, *y = b;

    if (x->sw != y->sw)
        return x->sw < y->sw ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static const char *switch_name(const struct gs_config *cfg, uint32_t sw)
{
    return cfg->switches[sw].name != NULL ? cfg->switches[sw].name : "(unnamed)";
}

/*
 * Reports each node listed under a switch after it was listed under another (a node
 * named twice under one switch is harmless), naming the switch it was first under. The
 * reports come in file order. idx is the sorted index of n entries; dups has room for n.
 */
static void report_twice_listed(struct gs_schema_ctx *c, const struct gs_config_switch_node *idx,
                                size_t n, struct gs_config_switch_node *dups)
{
    const struct gs_config *cfg = CFG(c);
    size_t ndups = 0, first = 0;

    for (size_t i = 1; i < n; i++) {
        if (strcmp(idx[i].name, idx[first].name) != 0) {
            first = i;
            continue;
        }
        if (idx[i].sw != idx[first].sw)
            dups[ndups++] = idx[i];
    }
    gs_sort(dups, ndups, sizeof(*dups), by_place);
    for (size_t i = 0; i < ndups; i++) {
        const struct gs_config_switch *sw = &cfg->switches[dups[i].sw];
        int other = gs_config_switch_of(cfg, dups[i].name);

        gs_schema_report(c, sw->nodes_line, sw->nodes_col,
                         "switch.nodes: %s is under switch '%s' already", dups[i].name,
                         switch_name(cfg, (uint32_t)other));
    }
}

void gs_config_index_switches(struct gs_schema_ctx *c)
{
    struct gs_config *cfg = CFG(c);
    struct gs_config_switch_node *idx = NULL, *dups = NULL;
    size_t n = 0;

    for (size_t i = 0; i < cfg->nswitches; i++)
        n += cfg->switches[i].nnodes;
    if (n == 0)
        return;
    idx = malloc(n * sizeof(*idx));
    dups = malloc(n * sizeof(*dups));
    if (idx == NULL || dups == NULL) {
        c->enomem = true;
        goto out;
    }
    n = 0;
    for (size_t i = 0; i < cfg->nswitches; i++) {
        for (size_t j = 0; j < cfg->switches[i].nnodes; j++)
            idx[n++] =
                (struct gs_config_switch_node){cfg->switches[i].nodes[j], (uint32_t)i, (uint32_t)j};
    }
    gs_sort(idx, n, sizeof(*idx), by_name);
    free(cfg->switch_index); /* a second gs_config_parse over cfg: its switches were added */
    cfg->switch_index = idx;
    cfg->nswitch_index = n;
    idx = NULL;
    report_twice_listed(c, cfg->switch_index, n, dups);
out:
    free(idx);
    free(dups);
}

/* Bisection to the first entry of node's name: the switch it was first listed under. */
int gs_config_switch_of(const struct gs_config *cfg, const char *node)
{
    size_t lo = 0, hi = cfg->nswitch_index;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (strcmp(cfg->switch_index[mid].name, node) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < cfg->nswitch_index && strcmp(cfg->switch_index[lo].name, node) == 0)
        return (int)cfg->switch_index[lo].sw;
    return -1;
}

void gs_config_switches_free(struct gs_config *cfg)
{
    for (size_t i = 0; i < cfg->nswitches; i++) {
        free(cfg->switches[i].name);
        gs_hostlist_free(cfg->switches[i].nodes);
    }
    free(cfg->switches);
    free(cfg->switch_index);
    cfg->switches = NULL;
    cfg->nswitches = 0;
    cfg->switch_index = NULL;
    cfg->nswitch_index = 0;
}
