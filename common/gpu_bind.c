/*
 * gpu_bind.c: --gpu-bind read and applied to one task (see gpu_bind.h). The syntax and the
 * meaning of each form follow Slurm's srun(1). "verbose" only sets a flag: the report of
 * each task's binding is made by gschedd (scheduler/step_gpu_bind.c) and written by the
 * worker to the task's stderr.
 */
#include "common/gpu_bind.h"

#include "common/bind_list.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* why gets the message (a literal format, so that the compiler checks it); -EINVAL. */
#define BAD(why, size, ...) (snprintf((why), (size), __VA_ARGS__), -EINVAL)

static int parse_list(const char *s, int base, struct gs_gpu_bind *b, char *why, size_t size)
{
    return gs_bind_list_parse(s, base, "--gpu-bind", "GPU", b->list, &b->n, why, size);
}

static int parse_count(const char *s, uint32_t *out, char *why, size_t size)
{
    uint64_t v;

    if (!gs_bind_number(s, s + strlen(s), 10, &v) || v == 0 || v > 1024)
        return BAD(why, size, "--gpu-bind: '%s' is not a count from 1 to 1024", s);
    *out = (uint32_t)v;
    return 0;
}

int gs_gpu_bind_parse(const char *text, struct gs_gpu_bind *out, char *why, size_t why_size)
{
    const char *s = text;

    memset(out, 0, sizeof(*out));
    if (strncmp(s, "verbose", 7) == 0 && (s[7] == '\0' || s[7] == ',')) {
        out->verbose = true;
        s += s[7] == ',' ? 8 : 7;
    }
    if (*s == '\0' || strcmp(s, "none") == 0)
        return 0;
    if (strcmp(s, "closest") == 0) {
        out->kind = GS_GPU_BIND_CLOSEST;
        return 0;
    }
    if (strncmp(s, "single:", 7) == 0) {
        out->kind = GS_GPU_BIND_SINGLE;
        return parse_count(s + 7, &out->k, why, why_size);
    }
    if (strncmp(s, "per_task:", 9) == 0) {
        out->kind = GS_GPU_BIND_PER_TASK;
        return parse_count(s + 9, &out->k, why, why_size);
    }
    if (strncmp(s, "map_gpu:", 8) == 0) {
        out->kind = GS_GPU_BIND_MAP;
        return parse_list(s + 8, 10, out, why, why_size);
    }
    if (strncmp(s, "mask_gpu:", 9) == 0) {
        out->kind = GS_GPU_BIND_MASK;
        return parse_list(s + 9, 16, out, why, why_size);
    }
    return BAD(why, why_size,
               "--gpu-bind: '%s' is none of none, closest, single:K, per_task:K, map_gpu:LIST, "
               "mask_gpu:LIST (each may follow \"verbose,\")",
               s);
}

/* The step GPUs on the task's NUMA nodes, in order; all of them when none is known there. */
static size_t closest(size_t ngpus, const int16_t *gpu_numa, uint64_t task_numa, uint32_t *out)
{
    size_t n = 0;

    for (size_t g = 0; g < ngpus && task_numa != 0; g++) {
        int16_t numa = gpu_numa != NULL ? gpu_numa[g] : -1;

        if (numa >= 0 && numa < 64 && (task_numa >> numa) & 1)
            out[n++] = (uint32_t)g;
    }
    if (n == 0) {
        for (size_t g = 0; g < ngpus; g++)
            out[n++] = (uint32_t)g;
    }
    return n;
}

static int out_of_range(char *why, size_t size, const char *what, uint64_t v, size_t ngpus)
{
    snprintf(why, size,
             "--gpu-bind: %s %" PRIu64 " names a GPU the step does not have on the node "
             "(it has %zu there, 0-%zu)",
             what, v, ngpus, ngpus > 0 ? ngpus - 1 : 0);
    return -ERANGE;
}

int gs_gpu_bind_task(const struct gs_gpu_bind *b, uint32_t local, uint32_t peer, size_t ngpus,
                     const int16_t *gpu_numa, uint64_t task_numa, uint32_t *out, size_t *nout,
                     char *why, size_t why_size)
{
    size_t n = 0;

    if (ngpus == 0 || b->kind == GS_GPU_BIND_NONE) {
        for (size_t g = 0; g < ngpus; g++)
            out[n++] = (uint32_t)g;
    } else if (b->kind == GS_GPU_BIND_CLOSEST) {
        n = closest(ngpus, gpu_numa, task_numa, out);
    } else if (b->kind == GS_GPU_BIND_SINGLE) {
        n = closest(ngpus, gpu_numa, task_numa, out);
        out[0] = out[(peer / b->k) % n];
        n = 1;
    } else if (b->kind == GS_GPU_BIND_PER_TASK) {
        for (uint32_t i = 0; i < b->k && i < ngpus; i++)
            out[n++] = (uint32_t)(((size_t)local * b->k + i) % ngpus);
    } else if (b->kind == GS_GPU_BIND_MAP) {
        uint64_t id = b->list[local % b->n];

        if (id >= ngpus)
            return out_of_range(why, why_size, "map_gpu id", id, ngpus);
        out[n++] = (uint32_t)id;
    } else {
        uint64_t mask = b->list[local % b->n];

        if (ngpus < 64 && (mask >> ngpus) != 0)
            return out_of_range(why, why_size, "mask_gpu bit", 63 - (uint64_t)__builtin_clzll(mask),
                                ngpus);
        for (size_t g = 0; g < ngpus && g < 64; g++) {
            if ((mask >> g) & 1)
                out[n++] = (uint32_t)g;
        }
    }
    *nout = n;
    return 0;
}
