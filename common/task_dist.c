/*
 * task_dist.c: Slurm's --distribution read, and the ranks and core order it gives a step's
 * tasks (see task_dist.h). Both the CLI (srun, sbatch) and gschedd's step layout use it, so
 * that what srun accepts is exactly what gschedd can lay out.
 */
#include "common/task_dist.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DIST_MAX_CORES 1024 /* per node, as gschedd keeps them; more: left in socket order */

static bool word_is(const char *p, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(p, word, len) == 0;
}

static int parse_nodes(const char *p, size_t len, struct gs_dist *out, char *why, size_t size)
{
    char *end;
    unsigned long n;

    if (len == 0 || word_is(p, len, "*") || word_is(p, len, "block"))
        out->nodes = GS_DIST_BLOCK;
    else if (word_is(p, len, "cyclic"))
        out->nodes = GS_DIST_CYCLIC;
    else if (word_is(p, len, "arbitrary"))
        out->nodes = GS_DIST_ARBITRARY;
    else if (len >= 5 && strncasecmp(p, "plane", 5) == 0) {
        if (len == 5 || p[5] != '=') {
            snprintf(why, size, "--distribution: plane needs its size: plane=N");
            return -EINVAL;
        }
        n = strtoul(p + 6, &end, 10);
        if (end != p + len || p[6] < '0' || p[6] > '9' || n == 0 || n > 1000000) {
            snprintf(why, size, "--distribution: plane=%.*s: the size is a whole number >= 1",
                     (int)(len - 6), p + 6);
            return -EINVAL;
        }
        out->nodes = GS_DIST_PLANE;
        out->plane = (uint32_t)n;
    } else {
        snprintf(why, size,
                 "--distribution: '%.*s' is not a node distribution (block, cyclic, plane=N, "
                 "arbitrary or *)",
                 (int)len, p);
        return -EINVAL;
    }
    return 0;
}

static int parse_sockets(const char *p, size_t len, struct gs_dist *out, char *why, size_t size)
{
    if (len == 0 || word_is(p, len, "*") || word_is(p, len, "cyclic"))
        out->sockets = GS_DIST_SOCKETS_CYCLIC;
    else if (word_is(p, len, "block"))
        out->sockets = GS_DIST_SOCKETS_BLOCK;
    else if (word_is(p, len, "fcyclic"))
        out->sockets = GS_DIST_SOCKETS_FCYCLIC;
    else {
        snprintf(why, size,
                 "--distribution: '%.*s' is not a socket distribution (block, cyclic, fcyclic "
                 "or *)",
                 (int)len, p);
        return -EINVAL;
    }
    return 0;
}

int gs_dist_parse(const char *text, struct gs_dist *out, char *why, size_t why_size)
{
    const char *comma = strchr(text, ','), *end = comma != NULL ? comma : text + strlen(text);
    const char *level[3] = {text, NULL, NULL};
    size_t len[3] = {0, 0, 0}, nlevels = 1;
    int rc;

    memset(out, 0, sizeof(*out));
    if (comma != NULL && !word_is(comma + 1, strlen(comma + 1), "NoPack")) {
        snprintf(why, why_size,
                 word_is(comma + 1, strlen(comma + 1), "Pack")
                     ? "--distribution: ,Pack is not supported: gsched spreads a step's tasks "
                       "evenly over its nodes (NoPack)"
                     : "--distribution: ',%s': only ,NoPack may follow the levels",
                 comma + 1);
        return -EINVAL;
    }
    for (const char *p = text; p < end; p++) {
        if (*p != ':')
            continue;
        if (nlevels == 3) {
            snprintf(why, why_size, "--distribution: '%.*s' has more than three levels",
                     (int)(end - text), text);
            return -EINVAL;
        }
        len[nlevels - 1] = (size_t)(p - level[nlevels - 1]);
        level[nlevels++] = p + 1;
    }
    len[nlevels - 1] = (size_t)(end - level[nlevels - 1]);
    rc = parse_nodes(level[0], len[0], out, why, why_size);
    if (rc == 0 && nlevels > 1 && out->nodes == GS_DIST_PLANE) {
        snprintf(why, why_size, "--distribution: plane=N takes no socket or core level");
        return -EINVAL;
    }
    if (rc == 0 && nlevels > 1)
        rc = parse_sockets(level[1], len[1], out, why, why_size);
    if (rc == 0 && nlevels > 2 && !(len[2] == 0 || word_is(level[2], len[2], "*"))) {
        snprintf(why, why_size,
                 "--distribution: the core level '%.*s' is not supported: gsched binds each "
                 "task to whole logical CPUs (give * or leave it out)",
                 (int)len[2], level[2]);
        return -EINVAL;
    }
    return rc;
}

void gs_dist_ranks(const struct gs_dist *d, const uint32_t *counts, size_t n, uint32_t *ranks)
{
    uint32_t r = 0, most = 0, step = 1;
    size_t off = 0;

    if (d->nodes == GS_DIST_BLOCK || d->nodes == GS_DIST_ARBITRARY) {
        for (size_t i = 0; i < n; i++)
            for (uint32_t l = 0; l < counts[i]; l++)
                ranks[off++] = r++;
        return;
    }
    if (d->nodes == GS_DIST_PLANE)
        step = d->plane;
    for (size_t i = 0; i < n; i++)
        most = counts[i] > most ? counts[i] : most;
    /* Rounds of `step` tasks a node: each node in turn takes its next ones (fewer at its end). */
    for (uint32_t base = 0; base < most; base += step) {
        off = 0;
        for (size_t i = 0; i < n; i++) {
            for (uint32_t l = base; l < base + step && l < counts[i]; l++)
                ranks[off + l] = r++;
            off += counts[i];
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The next socket group from g (wrapping) with a core left, or ngroups when none has. */
static size_t next_group(const size_t *pos, const size_t *end, size_t ngroups, size_t g)
{
    for (size_t k = 0; k < ngroups; k++) {
        size_t at = (g + k) % ngroups;

        if (pos[at] < end[at])
            return at;
    }
    return ngroups;
}

void gs_dist_cores(enum gs_dist_sockets how, const uint32_t *cores, const uint32_t *socket,
                   size_t n, uint32_t ntasks, uint32_t per, uint32_t *out)
{
    uint64_t keys[DIST_MAX_CORES];
    size_t pos[DIST_MAX_CORES], end[DIST_MAX_CORES], ngroups = 0, at = 0, cur = 0;

    if (n > DIST_MAX_CORES) {
        memcpy(out, cores, n * sizeof(*out));
        return;
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint64_t)socket[i] << 32 | cores[i];
    qsort(keys, n, sizeof(*keys), cmp_u64);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || keys[i] >> 32 != keys[i - 1] >> 32) {
            pos[ngroups] = i;
            end[ngroups++] = i;
        }
        end[ngroups - 1]++;
    }
    if (how == GS_DIST_SOCKETS_BLOCK || ngroups < 2 || per == 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = (uint32_t)keys[i];
        return;
    }
    for (uint32_t l = 0; l < ntasks && (size_t)(l + 1) * per <= n; l++) {
        size_t g = next_group(pos, end, ngroups, cur);

        for (uint32_t c = 0; c < per && g < ngroups; c++) {
            out[at++] = (uint32_t)keys[pos[g]++];
            /* cyclic stays on the task's socket while it has cores; fcyclic moves on */
            g = next_group(pos, end, ngroups, how == GS_DIST_SOCKETS_FCYCLIC ? g + 1 : g);
        }
        cur = how == GS_DIST_SOCKETS_FCYCLIC ? g : cur + 1;
    }
    for (size_t g = 0; g < ngroups; g++) /* the cores no task binds to */
        while (pos[g] < end[g])
            out[at++] = (uint32_t)keys[pos[g]++];
}
