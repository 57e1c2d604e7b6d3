/*
 * cpu_bind.c: --cpu-bind read and applied to one task (see cpu_bind.h). The syntax and the
 * meaning of each form follow Slurm's srun(1), over whole cores. "verbose" only sets a flag:
 * gschedd makes each task's report (scheduler/step_cpu_bind.c) and the worker writes it to
 * the task's stderr.
 */
#include "common/cpu_bind.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    enum gs_cpu_bind_kind kind;
    int list_base; /* 0: takes no list */
} kinds[] = {
    {"none", GS_CPU_BIND_NONE, 0},
    {"no", GS_CPU_BIND_NONE, 0},
    {"cores", GS_CPU_BIND_CORES, 0},
    {"sockets", GS_CPU_BIND_SOCKETS, 0},
    {"ldoms", GS_CPU_BIND_LDOMS, 0},
    {"rank", GS_CPU_BIND_RANK, 0},
    {"rank_ldom", GS_CPU_BIND_RANK_LDOM, 0},
    {"map_cpu:", GS_CPU_BIND_MAP_CPU, 10},
    {"mask_cpu:", GS_CPU_BIND_MASK_CPU, 16},
    {"map_ldom:", GS_CPU_BIND_MAP_LDOM, 10},
    {"mask_ldom:", GS_CPU_BIND_MASK_LDOM, 16},
};

int gs_cpu_bind_parse(const char *text, struct gs_cpu_bind *out, char *why, size_t why_size)
{
    const char *s = text;

    memset(out, 0, sizeof(*out));
    for (int k = 0; k < 2; k++) { /* "quiet," and "verbose," in either order */
        if (strncmp(s, "verbose", 7) == 0 && (s[7] == '\0' || s[7] == ',')) {
            out->verbose = true;
            s += s[7] == ',' ? 8 : 7;
        } else if (strncmp(s, "quiet", 5) == 0 && (s[5] == '\0' || s[5] == ',')) {
            s += s[5] == ',' ? 6 : 5;
        }
    }
    if (*s == '\0')
        return 0;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t len = strlen(kinds[i].name);

        if (kinds[i].list_base == 0 ? strcmp(s, kinds[i].name) != 0
                                    : strncmp(s, kinds[i].name, len) != 0)
            continue;
        out->kind = kinds[i].kind;
        if (kinds[i].list_base == 0)
            return 0;
        return gs_bind_list_parse(s + len, kinds[i].list_base, "--cpu-bind",
                                  strstr(kinds[i].name, "ldom") != NULL ? "NUMA node" : "core",
                                  out->list, &out->n, why, why_size);
    }
    if (strcmp(s, "threads") == 0 || strcmp(s, "boards") == 0) {
        snprintf(why, why_size,
                 "--cpu-bind: %s is not supported: gsched binds tasks to whole cores (cores, "
                 "sockets, ldoms, or a map or mask of cores)",
                 s);
        return -EINVAL;
    }
    snprintf(why, why_size,
             "--cpu-bind: '%s' is none of none, cores, sockets, ldoms, rank, rank_ldom, "
             "map_cpu:LIST, mask_cpu:LIST, map_ldom:LIST, mask_ldom:LIST (each may follow "
             "\"verbose,\")",
             s);
    return -EINVAL;
}

static bool holds(const uint32_t *v, size_t n, uint64_t x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

/* The step's cores whose key (socket or NUMA node) is one of the task's own cores' keys. */
static size_t same_key(const struct gs_cpu_bind_node *node, const uint32_t *key,
                       const uint32_t *own, size_t nown, uint32_t *out)
{
    size_t n = 0;

    for (size_t i = 0; i < node->n; i++) {
        bool near = false;

        for (size_t j = 0; j < node->n && !near; j++)
            near = key[j] == key[i] && holds(own, nown, node->cores[j]);
        if (near)
            out[n++] = node->cores[i];
    }
    return n;
}

/* The step's cores on the NUMA nodes in mask (bit d: NUMA node d). */
static size_t on_numa(const struct gs_cpu_bind_node *node, uint64_t mask, uint32_t *out)
{
    size_t n = 0;

    for (size_t i = 0; i < node->n; i++)
        if (node->numa[i] < 64 && (mask >> node->numa[i]) & 1)
            out[n++] = node->cores[i];
    return n;
}

/* The i-th NUMA node (ascending, wrapping) the step has cores on there. */
static uint32_t nth_numa(const struct gs_cpu_bind_node *node, uint32_t i)
{
    uint64_t seen = 0;
    uint32_t count, k = 0;

    for (size_t c = 0; c < node->n; c++)
        if (node->numa[c] < 64)
            seen |= 1ull << node->numa[c];
    count = (uint32_t)__builtin_popcountll(seen);
    if (count == 0)
        return 0;
    i %= count;
    for (uint32_t d = 0; d < 64; d++) {
        if (((seen >> d) & 1) && k++ == i)
            return d;
    }
    return 0;
}

static int no_core(char *why, size_t size, const char *what, uint64_t v)
{
    snprintf(why, size, "--cpu-bind: %s %" PRIu64 " names no core the step has on the node", what,
             v);
    return -ERANGE;
}

int gs_cpu_bind_task(const struct gs_cpu_bind *b, uint32_t local,
                     const struct gs_cpu_bind_node *node, const uint32_t *own, size_t nown,
                     uint32_t *out, size_t *nout, char *why, size_t why_size)
{
    uint64_t v = b->n > 0 ? b->list[local % b->n] : 0;

    *nout = 0;
    switch (b->kind) {
    case GS_CPU_BIND_CORES:
        memcpy(out, own, nown * sizeof(*out));
        *nout = nown;
        return 0;
    case GS_CPU_BIND_NONE:
        return 0;
    case GS_CPU_BIND_SOCKETS:
        *nout = same_key(node, node->socket, own, nown, out);
        return 0;
    case GS_CPU_BIND_LDOMS:
        *nout = same_key(node, node->numa, own, nown, out);
        return 0;
    case GS_CPU_BIND_RANK:
        if (node->n > 0)
            out[(*nout)++] = node->cores[local % node->n];
        return 0;
    case GS_CPU_BIND_RANK_LDOM:
        *nout = on_numa(node, 1ull << nth_numa(node, local), out);
        return 0;
    case GS_CPU_BIND_MAP_CPU:
        if (!holds(node->cores, node->n, v))
            return no_core(why, why_size, "map_cpu core", v);
        out[(*nout)++] = (uint32_t)v;
        return 0;
    case GS_CPU_BIND_MASK_CPU:
        for (uint32_t c = 0; c < 64; c++) {
            if (!((v >> c) & 1))
                continue;
            if (!holds(node->cores, node->n, c))
                return no_core(why, why_size, "mask_cpu bit", c);
            out[(*nout)++] = c;
        }
        return 0;
    case GS_CPU_BIND_MAP_LDOM:
        *nout = v < 64 ? on_numa(node, 1ull << v, out) : 0;
        return *nout > 0 ? 0 : no_core(why, why_size, "map_ldom NUMA node", v);
    case GS_CPU_BIND_MASK_LDOM:
        for (uint32_t d = 0; d < 64; d++)
            if (((v >> d) & 1) && on_numa(node, 1ull << d, out) == 0)
                return no_core(why, why_size, "mask_ldom NUMA node", d);
        *nout = on_numa(node, v, out);
        return 0;
    }
    return 0;
}
