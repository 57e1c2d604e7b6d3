/*
 * step_fmt.c: job steps as sacct and sstat print and read them (step_fmt.h): step ids,
 * -j lists of JOB[.STEP], which rows such a list asks for, Slurm's memory figures, a step's
 * state and time within its job. Pure.
 */
#include "slurm/step_fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/job_print.h"

char *slurm_step_id(uint32_t step, char *out, size_t size)
{
    if (step == 0)
        snprintf(out, size, "batch");
    else
        snprintf(out, size, "%" PRIu32, step - 1);
    return out;
}

int slurm_step_parse(const char *text, uint32_t *ret_step)
{
    uint64_t v = 0;
    const char *p = text;

    if (strcmp(text, "batch") == 0) {
        *ret_step = 0;
        return 0;
    }
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint64_t)(*p - '0');
        if (v >= UINT32_MAX - 1)
            return -EINVAL;
    }
    if (p == text || *p != '\0')
        return -EINVAL;
    *ret_step = (uint32_t)v + 1;
    return 0;
}

/* One word "JOB[.STEP]" (len bytes of p) into *ref and *step. 0 or -EINVAL. */
static int parse_word(const char *p, size_t len, struct slurm_job_ref *ref, uint32_t *step)
{
    char word[64];
    char *dot;

    if (len >= sizeof(word))
        return -EINVAL;
    memcpy(word, p, len);
    word[len] = '\0';
    *step = SLURM_STEP_ANY;
    dot = strrchr(word, '.');
    if (dot != NULL) {
        *dot = '\0';
        if (slurm_step_parse(dot + 1, step) < 0)
            return -EINVAL;
    }
    return slurm_job_ref_parse(word, ref);
}

/* The length of the word at p: up to a comma outside brackets. */
static size_t word_len(const char *p)
{
    size_t len = 0;
    int depth = 0;

    for (; p[len] != '\0' && (p[len] != ',' || depth > 0); len++) {
        if (p[len] == '[')
            depth++;
        else if (p[len] == ']' && depth > 0)
            depth--;
    }
    return len;
}

int slurm_step_list_parse(const char *list, struct slurm_job_ref *refs, uint32_t *steps, size_t max,
                          size_t *n, char *bad, size_t bad_size)
{
    for (const char *p = list; *p != '\0';) {
        size_t len = word_len(p);

        snprintf(bad, bad_size, "%.*s", (int)len, p);
        if (*n == max)
            return -E2BIG;
        if (parse_word(p, len, &refs[*n], &steps[*n]) < 0)
            return -EINVAL;
        (*n)++;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

bool slurm_step_job_selected(const struct slurm_job_ref *refs, const uint32_t *steps, size_t n,
                             const Gs__JobInfo *job, const struct slurm_het_part *part)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        if (steps[i] == SLURM_STEP_ANY && slurm_job_ref_match_part(&refs[i], job, part))
            return true;
    }
    return false;
}

bool slurm_step_selected(const struct slurm_job_ref *refs, const uint32_t *steps, size_t n,
                         const Gs__JobInfo *job, const struct slurm_het_part *part, uint32_t step)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        if ((steps[i] == SLURM_STEP_ANY || steps[i] == step) &&
            slurm_job_ref_match_part(&refs[i], job, part))
            return true;
    }
    return false;
}

char *slurm_fmt_rss(uint64_t kib, char *out, size_t size)
{
    static const char units[] = "KMGTP";
    size_t unit = 0;

    if (kib == 0) {
        snprintf(out, size, "0");
        return out;
    }
    /* Slurm's exact conversion (sacct's and sstat's default): never a rounded figure. */
    while (kib > 1024 && kib % 1024 == 0 && unit + 1 < sizeof(units) - 1) {
        kib /= 1024;
        unit++;
    }
    snprintf(out, size, "%" PRIu64 "%c", kib, units[unit]);
    return out;
}

int slurm_step_tres(struct gs_buf *out, const Gs__StepInfo *st)
{
    if (st->cpus == 0)
        return gs_buf_error(out);
    gs_buf_printf(out, "cpu=%u,node=%u", st->cpus, st->nnodes);
    if (st->gpus > 0)
        gs_buf_printf(out, ",gres/gpu=%u", st->gpus);
    return gs_buf_error(out);
}

const char *slurm_step_state_name(const Gs__JobInfo *job, const Gs__StepInfo *st)
{
    if (st->state == GS__JOB_STATE__JOB_STATE_RUNNING && cli_job_suspended(job))
        return slurm_job_state_name(job);
    return slurm_state_name(st->state);
}

uint64_t slurm_step_elapsed_s(const Gs__JobInfo *job, const Gs__StepInfo *st, uint64_t now_ms)
{
    uint64_t end = st->end_time_ms != 0 ? st->end_time_ms : now_ms, step_s, job_s;

    /* A running step of a suspended job stands still where the job was stopped. */
    if (st->end_time_ms == 0 && cli_job_suspended(job) && job->suspend_time_ms != 0 &&
        job->suspend_time_ms < end)
        end = job->suspend_time_ms;
    step_s = end > st->start_time_ms + st->suspended_ms
                 ? (end - st->start_time_ms - st->suspended_ms) / 1000
                 : 0;
    /*
     * A step runs only while its job does (this also bounds it where a gschedd before 1.28
     * kept no step's suspended time). An ended step keeps its own span: its job may be
     * pending again (0) or show another attempt.
     */
    if (st->end_time_ms != 0 || job->state != GS__JOB_STATE__JOB_STATE_RUNNING)
        return step_s;
    job_s = slurm_job_elapsed_s(job, now_ms);
    return step_s < job_s ? step_s : job_s;
}
