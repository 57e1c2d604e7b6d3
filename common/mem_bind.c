/*
 * mem_bind.c: --mem-bind read and applied to one task (see mem_bind.h), with Slurm's
 * srun(1) syntax and meanings over the NUMA nodes a node's topology reports.
 */
#include "common/mem_bind.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool word(const char *p, size_t len, const char *w)
{
    return len == strlen(w) && strncmp(p, w, len) == 0;
}

/* The kind word p (len bytes) names; 0 when it is none of them. */
static bool kind_word(const char *p, size_t len, enum gs_mem_bind_kind *kind)
{
    if (word(p, len, "none") || word(p, len, "no"))
        *kind = GS_MEM_BIND_NONE;
    else if (word(p, len, "local"))
        *kind = GS_MEM_BIND_LOCAL;
    else if (word(p, len, "rank"))
        *kind = GS_MEM_BIND_RANK;
    else
        return false;
    return true;
}

int gs_mem_bind_parse(const char *text, struct gs_mem_bind *out, char *why, size_t why_size)
{
    const char *p = text;
    bool have_kind = false;

    memset(out, 0, sizeof(*out));
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        enum gs_mem_bind_kind kind;
        bool map = strncmp(p, "map_mem:", 8) == 0, mask = strncmp(p, "mask_mem:", 9) == 0;

        if (map || mask) { /* the list takes the rest, commas and all */
            if (have_kind)
                goto two_kinds;
            out->kind = map ? GS_MEM_BIND_MAP : GS_MEM_BIND_MASK;
            return gs_bind_list_parse(p + (map ? 8 : 9), map ? 10 : 16, "--mem-bind", "NUMA node",
                                      out->list, &out->n, why, why_size);
        }
        if (word(p, len, "verbose") || word(p, len, "v")) {
            out->verbose = true;
        } else if (word(p, len, "prefer") || word(p, len, "p")) {
            out->prefer = true;
        } else if (word(p, len, "quiet") || word(p, len, "q") || word(p, len, "sort") ||
                   word(p, len, "nosort")) {
            /* quiet is the default; sort and nosort tune KNL's memory modes */
        } else if (kind_word(p, len, &kind)) {
            if (have_kind)
                goto two_kinds;
            out->kind = kind;
            have_kind = true;
        } else {
            snprintf(why, why_size,
                     "--mem-bind: '%.*s' is none of none, local, rank, map_mem:LIST, "
                     "mask_mem:LIST, prefer, verbose, quiet, sort, nosort",
                     (int)len, p);
            return -EINVAL;
        }
        p += len;
        if (*p == ',' && *++p == '\0') {
            snprintf(why, why_size, "--mem-bind: '%s' ends with a comma", text);
            return -EINVAL;
        }
    }
    if (out->prefer && out->kind == GS_MEM_BIND_NONE) {
        snprintf(why, why_size, "--mem-bind: prefer with none prefers nothing");
        return -EINVAL;
    }
    if (out->prefer && out->kind == GS_MEM_BIND_DEFAULT)
        out->kind = GS_MEM_BIND_LOCAL; /* "prefer" alone: the task's own nodes, preferred */
    return 0;
two_kinds:
    snprintf(why, why_size, "--mem-bind: '%s' names two of none, local, rank, map_mem and mask_mem",
             text);
    return -EINVAL;
}

/* The i-th (wrapping) NUMA node of mask, as a one-bit mask; 0 when mask is empty. */
static uint64_t nth_bit(uint64_t mask, uint32_t i)
{
    uint32_t count = (uint32_t)__builtin_popcountll(mask);

    if (count == 0)
        return 0;
    i %= count;
    for (uint64_t m = mask; m != 0; m &= m - 1) {
        if (i-- == 0)
            return m & -m;
    }
    return 0;
}

int gs_mem_bind_task(const struct gs_mem_bind *b, uint32_t local, uint64_t task_numa,
                     uint64_t node_numa, uint64_t *ret_mask, char *why, size_t why_size)
{
    uint64_t v = b->n > 0 ? b->list[local % b->n] : 0, want = 0;

    *ret_mask = 0;
    switch (b->kind) {
    case GS_MEM_BIND_DEFAULT:
    case GS_MEM_BIND_NONE:
        return 0;
    case GS_MEM_BIND_LOCAL:
        *ret_mask = task_numa;
        return 0;
    case GS_MEM_BIND_RANK:
        *ret_mask = nth_bit(node_numa, local);
        return 0;
    case GS_MEM_BIND_MAP:
        if (v >= 64) {
            snprintf(why, why_size, "--mem-bind: map_mem NUMA node %" PRIu64 " is past 63", v);
            return -ERANGE;
        }
        want = 1ull << v;
        break;
    case GS_MEM_BIND_MASK:
        want = v;
        break;
    }
    if (node_numa != 0 && (want & ~node_numa) != 0) {
        snprintf(why, why_size,
                 "--mem-bind: %s NUMA node %d is not one of the node's (mask 0x%" PRIx64 ")",
                 b->kind == GS_MEM_BIND_MAP ? "map_mem" : "mask_mem",
                 __builtin_ctzll(want & ~node_numa), node_numa);
        return -ERANGE;
    }
    *ret_mask = want;
    return 0;
}
