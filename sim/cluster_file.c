/*
 * cluster_file.c: a generic cluster for gsched-simulate, in TOML, for traces that bring no
 * cluster of their own (philly-gavel) or to replay any trace on other hardware:
 *
 *     nodes = 16         # how many
 *     gpus = 8           # GPUs per node, 0-64
 *     cores = 64         # cores per node (default 64)
 *     mem_gib = 512      # memory per node (default 512)
 *     switches = 2       # network switches the nodes are spread over, in blocks (default 1)
 *     links = "pairs"    # GPU interconnect: "nvswitch", "pairs" or "pcie" (default "pairs")
 *
 * or several groups of such nodes, each a [[group]] with the same keys (switches are
 * numbered on from one group to the next). Nodes are named node1, node2, ... Errors name the
 * place: "FILE:LINE:COL: message".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/toml.h"
#include "sim/layout.h"
#include "sim/readers.h"

static const char *const group_keys[] = {"nodes", "gpus", "cores", "mem_gib", "switches", "links"};

struct group {
    int64_t nodes, gpus, cores, mem_gib, switches;
    enum gs_sim_links links;
};

__attribute__((format(printf, 5, 6))) static int fail(struct gs_buf *err, const char *path,
                                                      int line, int col, const char *fmt, ...)
{
    va_list ap;

    if (line > 0)
        gs_buf_printf(err, "%s:%d:%d: ", path, line, col);
    else
        gs_buf_printf(err, "%s: ", path);
    va_start(ap, fmt);
    gs_buf_vprintf(err, fmt, ap);
    va_end(ap);
    gs_buf_putc(err, '\n');
    return -EINVAL;
}

/* Reads integer key of table into *ret (left as is when absent), within lo..hi. */
static int int_key(const struct gs_toml_value *table, const char *key, int64_t lo, int64_t hi,
                   int64_t *ret, const char *path, struct gs_buf *err)
{
    const struct gs_toml_value *v = gs_toml_get(table, key);
    int64_t x;

    if (v == NULL)
        return 0;
    if (gs_toml_as_int(v, &x) < 0 || x < lo || x > hi) {
        gs_buf_printf(err, "%s:%d:%d: %s must be an integer from %lld to %lld\n", path,
                      gs_toml_line(v), gs_toml_col(v), key, (long long)lo, (long long)hi);
        return -EINVAL;
    }
    *ret = x;
    return 0;
}

static int read_group(const struct gs_toml_value *table, struct group *g, const char *path,
                      struct gs_buf *err)
{
    const struct gs_toml_value *links = gs_toml_get(table, "links");
    const char *name;
    int rc = 0;

    for (size_t i = 0; i < gs_toml_count(table); i++) {
        const char *key = gs_toml_key_at(table, i, NULL);
        bool known = false;

        for (size_t k = 0; k < sizeof(group_keys) / sizeof(group_keys[0]); k++)
            known = known || strcmp(key, group_keys[k]) == 0;
        if (!known)
            rc = fail(err, path, gs_toml_key_line(table, i), gs_toml_key_col(table, i),
                      "unknown key '%s' (nodes, gpus, cores, mem_gib, switches, links)", key);
    }
    if (gs_toml_get(table, "nodes") == NULL)
        rc = fail(err, path, gs_toml_line(table), gs_toml_col(table), "%s is missing", "nodes");
    if ((int_key(table, "nodes", 1, 100000, &g->nodes, path, err) |
         int_key(table, "gpus", 0, 64, &g->gpus, path, err) |
         int_key(table, "cores", 1, 1024, &g->cores, path, err) |
         int_key(table, "mem_gib", 1, INT64_C(1) << 30, &g->mem_gib, path, err) |
         int_key(table, "switches", 1, 100000, &g->switches, path, err)) != 0)
        rc = -EINVAL;
    if (links != NULL &&
        (gs_toml_as_string(links, &name, NULL) < 0 || gs_sim_layout_parse(name, &g->links) < 0))
        rc = fail(err, path, gs_toml_line(links), gs_toml_col(links),
                  "%s must be \"nvswitch\", \"pairs\" or \"pcie\"", "links");
    return rc;
}

static int add_group(struct gs_sim_trace *t, const struct group *g, int first_switch)
{
    struct gs_sim_node node = {.ngpus = (uint32_t)g->gpus,
                               .ncores = (uint32_t)g->cores,
                               .mem_mib = (uint64_t)g->mem_gib * 1024,
                               .links = g->links};
    int rc = 0;

    for (int64_t i = 0; rc == 0 && i < g->nodes; i++) {
        snprintf(node.name, sizeof(node.name), "node%zu", t->nnodes + 1);
        node.switch_id = first_switch + (int)(i * g->switches / g->nodes);
        rc = gs_sim_trace_add_node(t, &node);
    }
    return rc;
}

static int read_doc(struct gs_sim_trace *t, const struct gs_toml_value *root, const char *path,
                    struct gs_buf *err)
{
    const struct gs_toml_value *groups = gs_toml_get(root, "group");
    struct group g;
    int rc = 0, next_switch = 1;

    if (groups == NULL) {
        g = (struct group){0, 8, 64, 512, 1, GS_SIM_LINKS_PAIRS};
        rc = read_group(root, &g, path, err);
        return rc < 0 ? rc : add_group(t, &g, 1);
    }
    if (gs_toml_type(groups) != GS_TOML_ARRAY || gs_toml_count(root) != 1)
        return fail(err, path, gs_toml_line(groups), gs_toml_col(groups),
                    "%s must be [[group]] tables, with no other key at the top", "group");
    for (size_t i = 0; rc == 0 && i < gs_toml_count(groups); i++) {
        g = (struct group){0, 8, 64, 512, 1, GS_SIM_LINKS_PAIRS};
        rc = read_group(gs_toml_at(groups, i), &g, path, err);
        if (rc == 0)
            rc = add_group(t, &g, next_switch);
        next_switch += (int)g.switches;
    }
    return rc;
}

int gs_sim_read_cluster_toml(struct gs_sim_trace *t, const char *path, struct gs_buf *err)
{
    struct gs_buf text = GS_BUF_INIT;
    struct gs_toml_doc *doc = NULL;
    struct gs_error perr;
    FILE *f = fopen(path, "r");
    int rc;

    if (f == NULL) {
        rc = -errno;
        gs_buf_printf(err, "%s: %s\n", path, strerror(-rc));
        return rc;
    }
    rc = gs_buf_read_stream(&text, f);
    fclose(f);
    if (rc < 0) {
        gs_buf_printf(err, "%s: %s\n", path, gs_strerror(rc));
        goto out;
    }
    rc = gs_toml_parse(text.data != NULL ? text.data : "", text.len, &doc, &perr);
    if (rc < 0) {
        gs_buf_printf(err, "%s:%d:%d: %s\n", path, perr.line, perr.col, perr.msg);
        goto out;
    }
    rc = read_doc(t, gs_toml_root(doc), path, err);
out:
    gs_toml_free(doc);
    gs_buf_release(&text);
    return rc;
}
