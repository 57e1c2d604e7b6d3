/*
 * slurm_fmt.c: Slurm's ways of writing jobs, times and field layouts (see slurm_fmt.h),
 * shared by cmd_squeue.c, cmd_sinfo.c, cmd_sacct.c, cmd_scancel.c and cmd_scontrol.c so the
 * five agree with each other and with Slurm. The layouts follow Slurm's documented
 * defaults; where Slurm's text is ambiguous the comment says which reading was taken.
 */
#include "slurm/slurm_fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/job_print.h"
#include "common/hostlist.h"
#include "common/units.h"
#include "common/sort.h"
#include "slurm/slurm_het.h"

/* --- job states ------------------------------------------------------------------------ */

/* job_print.c holds the one table of names and codes; Slurm has no "UNSPECIFIED". */
const char *slurm_state_code(Gs__JobState state)
{
    return cli_job_state_code(state);
}

const char *slurm_state_name(Gs__JobState state)
{
    return state == GS__JOB_STATE__JOB_STATE_UNSPECIFIED ? "UNKNOWN" : cli_job_state_name(state);
}

int slurm_state_parse(const char *text, Gs__JobState *ret_state)
{
    return cli_job_state_parse(text, ret_state);
}

const char *slurm_job_state_code(const Gs__JobInfo *job)
{
    return cli_job_suspended(job) ? cli_job_shown_code(job) : slurm_state_code(job->state);
}

const char *slurm_job_state_name(const Gs__JobInfo *job)
{
    return cli_job_suspended(job) ? cli_job_shown_name(job) : slurm_state_name(job->state);
}

uint32_t slurm_job_state_bit(const Gs__JobInfo *job)
{
    if (cli_job_suspended(job))
        return SLURM_STATE_SUSPENDED;
    return (unsigned)job->state < 31 ? 1u << job->state : 0;
}

int slurm_state_list_parse(const char *list, uint32_t *ret_mask, const char **ret_bad)
{
    uint32_t mask = 0;
    char word[32];

    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        Gs__JobState st;
        bool suspended;

        if (len == 0 || len >= sizeof(word))
            goto bad;
        memcpy(word, p, len);
        word[len] = '\0';
        if (strcasecmp(word, "all") == 0)
            mask |= UINT32_MAX;
        else if (cli_job_shown_parse(word, &st, &suspended) == 0)
            mask |= suspended ? SLURM_STATE_SUSPENDED : 1u << st;
        else
            goto bad;
        p += len;
        if (*p == '\0')
            break;
        p++;
        continue;
    bad:
        *ret_bad = p;
        return -EINVAL;
    }
    *ret_mask = mask;
    return 0;
}

/* --- times ------------------------------------------------------------------------------ */

char *slurm_fmt_secs(uint64_t seconds, char *out, size_t size)
{
    unsigned long long h = seconds / 3600, m = seconds / 60 % 60, s = seconds % 60;

    /* From a day on as the long form ("2-03:04:05"); below that squeue drops leading zeros. */
    if (h >= 24)
        return slurm_fmt_secs_long(seconds, out, size);
    if (h > 0)
        snprintf(out, size, "%llu:%02llu:%02llu", h, m, s);
    else
        snprintf(out, size, "%llu:%02llu", m, s);
    return out;
}

char *slurm_fmt_secs_long(uint64_t seconds, char *out, size_t size)
{
    return cli_format_elapsed(seconds, out, size); /* the gsched commands' layout too */
}

char *slurm_fmt_limit(uint64_t seconds, bool long_form, const char *infinite, char *out,
                      size_t size)
{
    if (seconds == 0) {
        snprintf(out, size, "%s", infinite);
        return out;
    }
    return long_form ? slurm_fmt_secs_long(seconds, out, size) : slurm_fmt_secs(seconds, out, size);
}

char *slurm_fmt_date(uint64_t ms, const char *unknown, char *out, size_t size)
{
    return cli_format_time_or(ms, unknown, out, size);
}

/* Reads exactly n digits into *v; returns the text after them or NULL. */
static const char *digits(const char *p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, p++) {
        if (*p < '0' || *p > '9')
            return NULL;
        *v = *v * 10 + (*p - '0');
    }
    return p;
}

int slurm_parse_date(const char *text, uint64_t now_ms, uint64_t *ret_ms)
{
    struct tm tm = {.tm_isdst = -1};
    time_t now = (time_t)(now_ms / 1000), t;
    const char *p = text;
    int y, mo, d, h = 0, mi = 0, s = 0;

    if (strcasecmp(text, "now") == 0) {
        *ret_ms = now_ms;
        return 0;
    }
    if (strcasecmp(text, "today") == 0 || strcasecmp(text, "midnight") == 0) {
        if (localtime_r(&now, &tm) == NULL)
            return -EINVAL;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_isdst = -1;
        goto convert;
    }
    if ((p = digits(p, 4, &y)) == NULL || *p++ != '-' || (p = digits(p, 2, &mo)) == NULL ||
        *p++ != '-' || (p = digits(p, 2, &d)) == NULL)
        return -EINVAL;
    if (*p == 'T') {
        if ((p = digits(p + 1, 2, &h)) == NULL || *p++ != ':' || (p = digits(p, 2, &mi)) == NULL)
            return -EINVAL;
        if (*p == ':' && (p = digits(p + 1, 2, &s)) == NULL)
            return -EINVAL;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return -EINVAL;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
convert:
    t = mktime(&tm);
    if (t == (time_t)-1 || t < 0)
        return -EINVAL;
    *ret_ms = (uint64_t)t * 1000;
    return 0;
}

/* --- job ids and arrays ------------------------------------------------------------------- */

char *slurm_job_id(const Gs__JobInfo *job, char *out, size_t size)
{
    if (job->array_job_id != 0)
        snprintf(out, size, "%llu_%u", (unsigned long long)job->array_job_id, job->array_task_id);
    else
        snprintf(out, size, "%llu", (unsigned long long)job->job_id);
    return out;
}

/* A decimal number up to max; returns the text after it or NULL. */
static const char *number(const char *p, uint64_t max, uint64_t *v)
{
    const char *start = p;

    *v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (*v > (max - (uint64_t)(*p - '0')) / 10)
            return NULL;
        *v = *v * 10 + (uint64_t)(*p - '0');
    }
    return p > start ? p : NULL;
}

static int add_range(struct slurm_job_ref *r, uint64_t lo, uint64_t hi)
{
    if (lo > hi || r->nranges == SLURM_REF_MAX_RANGES)
        return -EINVAL;
    r->lo[r->nranges] = (uint32_t)lo;
    r->hi[r->nranges] = (uint32_t)hi;
    r->nranges++;
    return 0;
}

int slurm_job_ref_parse(const char *text, struct slurm_job_ref *ret)
{
    struct slurm_job_ref r = {0};
    const char *p = number(text, UINT64_MAX, &r.id);
    uint64_t lo, hi;
    bool bracket;

    if (p == NULL || r.id == 0)
        return -EINVAL;
    if (*p == '\0')
        goto done;
    if (*p == '+') {
        /* "42+K": digits to the end, since a heterogeneous job is never an array element. */
        if ((p = number(p + 1, UINT32_MAX, &lo)) == NULL || *p != '\0')
            return -EINVAL;
        r.het = true;
        r.het_offset = (uint32_t)lo;
        goto done;
    }
    if (*p++ != '_')
        return -EINVAL;
    if (strcmp(p, "*") == 0)
        goto done; /* every element, as the bare array id */
    bracket = *p == '[';
    if (bracket)
        p++;
    for (;;) {
        if ((p = number(p, UINT32_MAX, &lo)) == NULL)
            return -EINVAL;
        hi = lo;
        if (*p == '-' && (p = number(p + 1, UINT32_MAX, &hi)) == NULL)
            return -EINVAL;
        if (add_range(&r, lo, hi) < 0)
            return -EINVAL;
        if (*p != ',' || !bracket)
            break;
        p++;
    }
    if (bracket && *p++ != ']')
        return -EINVAL;
    if (*p != '\0' || (!bracket && r.lo[0] != r.hi[0]))
        return -EINVAL;
done:
    *ret = r;
    return 0;
}

int slurm_job_list_parse(const char *list, struct slurm_job_ref *refs, size_t max, size_t *n,
                         char *bad, size_t bad_size)
{
    char word[64];

    for (const char *p = list; *p != '\0';) {
        size_t len = 0;
        int depth = 0;

        while (p[len] != '\0' && (p[len] != ',' || depth > 0)) {
            depth += p[len] == '[' ? 1 : p[len] == ']' ? -1 : 0;
            len++;
        }
        snprintf(word, sizeof(word), "%.*s", (int)len, p);
        snprintf(bad, bad_size, "%s", word);
        if (*n == max)
            return -E2BIG;
        if (len >= sizeof(word) || slurm_job_ref_parse(word, &refs[*n]) < 0)
            return -EINVAL;
        (*n)++;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

bool slurm_job_ref_match(const struct slurm_job_ref *ref, const Gs__JobInfo *job)
{
    /* The job's own id only: "123+1" never names an element of array 123. */
    if (ref->het)
        return job->job_id == ref->id && ref->het_offset < slurm_het_count(job);
    if (ref->nranges == 0)
        return job->job_id == ref->id || job->array_job_id == ref->id;
    if (job->array_job_id != ref->id)
        return false;
    for (size_t i = 0; i < ref->nranges; i++) {
        if (job->array_task_id >= ref->lo[i] && job->array_task_id <= ref->hi[i])
            return true;
    }
    return false;
}

const char *slurm_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "(null)";
}

int slurm_fmt_ranges(struct gs_buf *out, const uint32_t *v, size_t n)
{
    /* Slurm writes any run of two or more as a range ("1-2"), unlike gsched's GPU lists. */
    return cli_format_ranges(out, v, n, 2);
}

static const char *str_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static bool foldable(const Gs__JobInfo *job)
{
    return job->array_job_id != 0 && job->state == GS__JOB_STATE__JOB_STATE_PENDING;
}

static bool same_fold(const Gs__JobInfo *a, const Gs__JobInfo *b)
{
    return a->array_job_id == b->array_job_id && a->held == b->held &&
           strcmp(str_or_empty(a->reason), str_or_empty(b->reason)) == 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* A heterogeneous job's lines, one per component, from rows[*nrows] on. 0 or -ENOMEM. */
static int add_het_rows(const Gs__JobInfo *job, struct slurm_row *rows, size_t *nrows)
{
    for (uint32_t k = 0; k < slurm_het_count(job); k++) {
        struct slurm_row *row = &rows[*nrows];

        row->het = malloc(sizeof(*row->het));
        if (row->het == NULL)
            return -ENOMEM;
        slurm_het_part_init(row->het, job, k);
        row->job = &row->het->job;
        (*nrows)++;
    }
    return 0;
}

int slurm_rows_build(Gs__JobInfo *const *jobs, size_t n, bool fold, struct slurm_row **ret_rows,
                     size_t *ret_n)
{
    struct slurm_row *rows = NULL;
    bool *taken = calloc(n + 1, sizeof(*taken));
    size_t nrows = 0, cap = n;
    int rc = -ENOMEM;

    for (size_t i = 0; i < n; i++)
        cap += slurm_het_count(jobs[i]); /* one more line than needed per such job */
    rows = calloc(cap + 1, sizeof(*rows));
    if (rows == NULL || taken == NULL)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct slurm_row *row;
        size_t count = 1;

        if (taken[i])
            continue;
        taken[i] = true;
        if (slurm_het_count(jobs[i]) > 0) {
            if (add_het_rows(jobs[i], rows, &nrows) < 0)
                goto out;
            continue;
        }
        row = &rows[nrows++];
        row->job = jobs[i];
        if (!fold || !foldable(jobs[i]))
            continue;
        for (size_t k = i + 1; k < n; k++)
            count += !taken[k] && foldable(jobs[k]) && same_fold(jobs[i], jobs[k]);
        if (count < 2)
            continue; /* a lone pending element shows as itself: "123_4" */
        row->tasks = malloc(count * sizeof(*row->tasks));
        if (row->tasks == NULL)
            goto out;
        row->tasks[row->ntasks++] = jobs[i]->array_task_id;
        for (size_t k = i + 1; k < n; k++) {
            if (!taken[k] && foldable(jobs[k]) && same_fold(jobs[i], jobs[k])) {
                row->tasks[row->ntasks++] = jobs[k]->array_task_id;
                taken[k] = true;
            }
        }
        gs_sort(row->tasks, row->ntasks, sizeof(*row->tasks), cmp_u32);
    }
    *ret_rows = rows;
    *ret_n = nrows;
    rows = NULL;
    rc = 0;
out:
    if (rows != NULL)
        slurm_rows_free(rows, nrows);
    free(taken);
    return rc;
}

void slurm_rows_free(struct slurm_row *rows, size_t n)
{
    for (size_t i = 0; rows != NULL && i < n; i++) {
        free(rows[i].tasks);
        free(rows[i].het);
    }
    free(rows);
}

int slurm_row_id(struct gs_buf *out, const struct slurm_row *row)
{
    char id[48];
    int rc;

    if (row->ntasks == 0)
        return gs_buf_append_str(out, slurm_het_job_id(row->job, row->het, id, sizeof(id)));
    rc = gs_buf_printf(out, "%llu_[", (unsigned long long)row->job->array_job_id);
    if (rc == 0)
        rc = slurm_fmt_ranges(out, row->tasks, row->ntasks);
    return rc == 0 ? gs_buf_putc(out, ']') : rc;
}

/* --- which jobs a command applies to ------------------------------------------------------ */

bool slurm_list_has(const char *list, const char *word)
{
    size_t wlen = strlen(word);

    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");

        if (len == wlen && strncmp(p, word, len) == 0)
            return true;
        if (p[len] == '\0')
            return false;
        p += len + 1;
    }
}

static bool user_matches(const char *list, const Gs__JobInfo *job)
{
    char uid[16];

    if (job->user == NULL)
        return false;
    snprintf(uid, sizeof(uid), "%u", job->user->uid);
    return (job->user->username != NULL && job->user->username[0] != '\0' &&
            slurm_list_has(list, job->user->username)) ||
           slurm_list_has(list, uid);
}

bool slurm_filter_match(const struct slurm_filter *f, const Gs__JobInfo *job)
{
    bool any = f->nrefs == 0;

    for (size_t i = 0; !any && i < f->nrefs; i++)
        any = slurm_job_ref_match(&f->refs[i], job);
    if (!any)
        return false;
    if (f->states != 0 && (f->states & slurm_job_state_bit(job)) == 0)
        return false;
    if (f->users != NULL && !user_matches(f->users, job))
        return false;
    if (f->names != NULL && !slurm_list_has(f->names, str_or_empty(job->name)))
        return false;
    if (f->partitions != NULL && !slurm_list_has(f->partitions, str_or_empty(job->partition)))
        return false;
    if (f->accounts != NULL && !slurm_list_has(f->accounts, str_or_empty(job->account)))
        return false;
    return f->qos == NULL || slurm_list_has(f->qos, str_or_empty(job->qos));
}

bool slurm_job_ref_match_part(const struct slurm_job_ref *ref, const Gs__JobInfo *whole,
                              const struct slurm_het_part *part)
{
    /* A component's view has no het_nodes: the whole job says which components there are. */
    if (!slurm_job_ref_match(ref, part != NULL ? part->whole : whole))
        return false;
    return part == NULL || !ref->het || ref->het_offset == part->offset;
}

bool slurm_filter_match_part(const struct slurm_filter *f, const struct slurm_het_part *part)
{
    if (part == NULL || f->nrefs == 0)
        return true;
    for (size_t i = 0; i < f->nrefs; i++) {
        if (slurm_job_ref_match_part(&f->refs[i], part->whole, part))
            return true;
    }
    return false;
}

bool slurm_filter_narrows(const struct slurm_filter *f)
{
    return f->users != NULL || f->names != NULL || f->states != 0 || f->partitions != NULL ||
           f->accounts != NULL || f->qos != NULL;
}

/* --- a job's numbers as the views show them ------------------------------------------------ */

const char *slurm_user_name(const Gs__JobInfo *job, char *buf, size_t size)
{
    if (job->user != NULL && job->user->username != NULL && job->user->username[0] != '\0')
        return job->user->username;
    snprintf(buf, size, "%u", job->user != NULL ? job->user->uid : 0);
    return buf;
}

uint32_t slurm_job_nodes(const Gs__JobInfo *job)
{
    if (job->n_allocation > 0)
        return (uint32_t)job->n_allocation;
    return job->resources != NULL && job->resources->nodes > 0 ? job->resources->nodes : 1;
}

uint64_t slurm_job_elapsed_s(const Gs__JobInfo *job, uint64_t now_ms)
{
    /*
     * Unlike gsched's own commands, a job that started and has no end time yet counts to
     * now whatever its state says: cli_job_run_s does exactly that for RUNNING.
     */
    Gs__JobState as = job->state == GS__JOB_STATE__JOB_STATE_PENDING
                          ? GS__JOB_STATE__JOB_STATE_PENDING
                          : GS__JOB_STATE__JOB_STATE_RUNNING;

    return cli_job_run_s(job, as, now_ms);
}

uint64_t slurm_job_end_ms(const Gs__JobInfo *job)
{
    uint64_t limit = job->resources != NULL ? job->resources->time_limit_s : 0;

    /* Time suspended does not count against the limit: the end moves on by as much. */
    if (job->end_time_ms == 0 && job->state == GS__JOB_STATE__JOB_STATE_RUNNING && limit > 0)
        return job->start_time_ms + job->suspended_ms + limit * 1000;
    return job->end_time_ms;
}

int slurm_job_mem(struct gs_buf *out, const Gs__JobInfo *job)
{
    const Gs__Resources *res = job->resources;
    char size[32];

    if (res == NULL || res->mem_per_node_mib == 0)
        return gs_buf_append_str(out, "0");
    return gs_buf_append_str(out,
                             gs_format_size(res->mem_per_node_mib * GS_MIB, size, sizeof(size)));
}

int slurm_job_tres(struct gs_buf *out, const Gs__JobInfo *job)
{
    const Gs__Resources *r = job->resources;
    uint32_t nodes = slurm_job_nodes(job);
    char size[32];

    gs_buf_printf(out, "cpu=%u", job->ncpus);
    if (r != NULL && r->mem_per_node_mib > 0)
        gs_buf_printf(out, ",mem=%s",
                      gs_format_size(r->mem_per_node_mib * nodes * GS_MIB, size, sizeof(size)));
    gs_buf_printf(out, ",node=%u,billing=%u", nodes, job->ncpus);
    if (r != NULL && r->gpus_per_node > 0)
        gs_buf_printf(out, ",gres/gpu=%u", r->gpus_per_node * nodes);
    return gs_buf_error(out);
}

const char *slurm_result_message(const Gs__JobActionResult *res)
{
    return res->message != NULL && res->message[0] != '\0' ? res->message : strerror(-res->code);
}

/* --- reasons and node lists -------------------------------------------------------------- */

const char *slurm_reason(const Gs__JobInfo *job, char *buf, size_t size)
{
    const char *r = job->reason != NULL ? job->reason : "";

    switch (job->state) {
    case GS__JOB_STATE__JOB_STATE_PENDING:
    case GS__JOB_STATE__JOB_STATE_REQUEUED:
        /* gschedd's pending reasons are Slurm's names already, except for holds. */
        if (job->held || strcmp(r, "Held") == 0)
            return "JobHeldUser";
        return r[0] != '\0' ? r : "None";
    case GS__JOB_STATE__JOB_STATE_FAILED:
        if (!job->signaled)
            return "NonZeroExitCode";
        snprintf(buf, size, "RaisedSignal:%u(%s)", job->term_signal,
                 strsignal((int)job->term_signal));
        return buf;
    case GS__JOB_STATE__JOB_STATE_TIMEOUT:
        return "TimeLimit";
    case GS__JOB_STATE__JOB_STATE_NODE_FAIL:
        return "NodeDown";
    case GS__JOB_STATE__JOB_STATE_OUT_OF_MEMORY:
        return "OutOfMemory";
    default:
        return "None";
    }
}

int slurm_alloc_hostlist(struct gs_buf *out, Gs__NodeAllocation *const *alloc, size_t n)
{
    const char **names = calloc(n + 1, sizeof(*names));
    int rc;

    if (names == NULL)
        return gs_buf_fail(out, -ENOMEM);
    for (size_t i = 0; i < n; i++)
        names[i] = alloc[i]->node_name != NULL ? alloc[i]->node_name : "";
    rc = gs_hostlist_compress(names, n, out);
    free(names);
    return rc;
}

int slurm_nodelist_reason(struct gs_buf *out, const Gs__JobInfo *job)
{
    char buf[64];

    /* Slurm: pending, failed and timed-out jobs show why; the others where they ran. */
    switch (job->state) {
    case GS__JOB_STATE__JOB_STATE_PENDING:
    case GS__JOB_STATE__JOB_STATE_REQUEUED:
    case GS__JOB_STATE__JOB_STATE_FAILED:
    case GS__JOB_STATE__JOB_STATE_TIMEOUT:
    case GS__JOB_STATE__JOB_STATE_OUT_OF_MEMORY:
        return gs_buf_printf(out, "(%s)", slurm_reason(job, buf, sizeof(buf)));
    default:
        return slurm_alloc_hostlist(out, job->allocation, job->n_allocation);
    }
}

/* --- node states -------------------------------------------------------------------------- */

/* As slurm_node_state, maintenance aside. */
static enum slurm_node_state base_state(const Gs__NodeInfo *n)
{
    bool busy, full;

    if (n == NULL)
        return SLURM_NODE_UNK;
    switch (n->state) {
    case GS__NODE_STATE__NODE_STATE_DOWN:
        return SLURM_NODE_DOWN;
    case GS__NODE_STATE__NODE_STATE_DRAINING:
        return SLURM_NODE_DRNG;
    case GS__NODE_STATE__NODE_STATE_DRAINED:
        return SLURM_NODE_DRAIN;
    case GS__NODE_STATE__NODE_STATE_UP:
        break;
    default:
        return SLURM_NODE_UNK;
    }
    busy = n->cores_free < n->cores_total || n->gpus_free < n->gpus_total || n->n_running_jobs > 0;
    /* Slurm counts CPUs: a node is allocated once every core is, whatever its GPUs. */
    full = n->cores_total > 0 ? n->cores_free == 0 : n->gpus_total > 0 && n->gpus_free == 0;
    return !busy ? SLURM_NODE_IDLE : full ? SLURM_NODE_ALLOC : SLURM_NODE_MIX;
}

/* Slurm's sinfo shows a node of a MAINT reservation as "maint" unless it is down or
 * drained; scontrol adds +MAINT to its state. */
enum slurm_node_state slurm_node_state(const Gs__NodeInfo *n)
{
    enum slurm_node_state s = base_state(n);

    return n != NULL && n->maint && s <= SLURM_NODE_IDLE ? SLURM_NODE_MAINT : s;
}

const char *slurm_node_state_short(enum slurm_node_state s)
{
    static const char *const names[] = {"mix",   "alloc", "idle", "drng",
                                        "drain", "down",  "unk",  "maint"};

    return (unsigned)s < SLURM_NODE_NSTATES ? names[s] : "unk";
}

const char *slurm_node_state_long(enum slurm_node_state s)
{
    static const char *const names[] = {"mixed",   "allocated", "idle",    "draining",
                                        "drained", "down",      "unknown", "maint"};

    return (unsigned)s < SLURM_NODE_NSTATES ? names[s] : "unknown";
}

const char *slurm_node_state_scontrol(const Gs__NodeInfo *node, char *buf, size_t size)
{
    static const char *const names[] = {"MIXED",       "ALLOCATED",  "IDLE",
                                        "MIXED+DRAIN", "IDLE+DRAIN", "DOWN+NOT_RESPONDING",
                                        "UNKNOWN"};
    enum slurm_node_state s = base_state(node);
    const char *name = (unsigned)s < SLURM_NODE_UNK ? names[s] : "UNKNOWN";

    snprintf(buf, size, "%s%s", name, slurm_node_state(node) == SLURM_NODE_MAINT ? "+MAINT" : "");
    return buf;
}

const Gs__NodeInfo *slurm_find_node(const Gs__NodesReply *nodes, const char *name)
{
    for (size_t i = 0; i < nodes->n_nodes; i++) {
        if (strcmp(nodes->nodes[i]->name, name) == 0)
            return nodes->nodes[i];
    }
    return NULL;
}

/* --- -o / -O field specifications ---------------------------------------------------------- */

static int push_item(struct slurm_format *f, int field, int width, bool right, const char *text,
                     size_t len)
{
    struct slurm_item *v = realloc(f->items, (f->n + 1) * sizeof(*v));
    char *copy = NULL;

    if (v == NULL)
        return -ENOMEM;
    f->items = v;
    if (text != NULL) {
        copy = malloc(len + 1);
        if (copy == NULL)
            return -ENOMEM;
        memcpy(copy, text, len);
        copy[len] = '\0';
    }
    f->items[f->n++] =
        (struct slurm_item){.field = field, .width = width, .right = right, .text = copy};
    return 0;
}

/* Appends literal text to the last literal item, or starts one. */
static int push_text(struct slurm_format *f, const char *text, size_t len)
{
    struct slurm_item *last = f->n > 0 ? &f->items[f->n - 1] : NULL;
    size_t old;
    char *grown;

    if (len == 0)
        return 0;
    if (last == NULL || last->field >= 0)
        return push_item(f, -1, 0, false, text, len);
    old = strlen(last->text);
    grown = realloc(last->text, old + len + 1);
    if (grown == NULL)
        return -ENOMEM;
    memcpy(grown + old, text, len);
    grown[old + len] = '\0';
    last->text = grown;
    return 0;
}

int slurm_format_parse(const char *spec, const struct slurm_field *fields, size_t nfields,
                       struct slurm_format *ret, char *why, size_t why_size)
{
    struct slurm_format f = {0};
    const char *p = spec;
    int rc = 0;

    while (rc == 0 && *p != '\0') {
        size_t lit = strcspn(p, "%");
        bool right = false;
        int width = 0, field = -1;

        rc = push_text(&f, p, lit);
        p += lit;
        if (rc < 0 || *p == '\0')
            break;
        p++; /* the '%' */
        if (*p == '%') {
            rc = push_text(&f, "%", 1);
            p++;
            continue;
        }
        if (*p == '.') {
            right = true;
            p++;
        } else if (*p == '-') {
            p++; /* left, the default: "%-10j" as printf writes it */
        }
        if (*p == '#') {
            width = SLURM_WIDTH_AUTO;
            p++;
        } else {
            while (*p >= '0' && *p <= '9' && width < 100000)
                width = width * 10 + (*p++ - '0');
        }
        if (*p == '\0') {
            snprintf(why, why_size, "'%%' without a field letter at the end of '%s'", spec);
            rc = -EINVAL;
            break;
        }
        for (size_t i = 0; i < nfields; i++) {
            if (fields[i].letter == *p)
                field = (int)i;
        }
        if (field < 0) {
            snprintf(why, why_size, "invalid field '%%%c' in format '%s'", *p, spec);
            rc = -EINVAL;
            break;
        }
        rc = push_item(&f, field, width, right, NULL, 0);
        p++;
    }
    if (rc == 0 && f.n == 0) {
        snprintf(why, why_size, "empty format");
        rc = -EINVAL;
    }
    if (rc < 0) {
        slurm_format_release(&f);
        return rc;
    }
    *ret = f;
    return 0;
}

int slurm_format_parse_names(const char *spec, const struct slurm_field *fields, size_t nfields,
                             int default_width, struct slurm_format *ret, char *why,
                             size_t why_size)
{
    struct slurm_format f = {0};
    const char *p = spec;
    int rc = 0;

    while (rc == 0) {
        size_t len = strcspn(p, ",:");
        int field = -1, width = default_width;
        bool right = false;
        const char *suffix = "";
        size_t slen = 0;

        for (size_t i = 0; i < nfields; i++) {
            if (fields[i].name != NULL && strlen(fields[i].name) == len &&
                strncasecmp(fields[i].name, p, len) == 0)
                field = (int)i;
        }
        if (field < 0) {
            snprintf(why, why_size, "invalid field '%.*s' in format '%s'", (int)len, p, spec);
            rc = -EINVAL;
            break;
        }
        p += len;
        if (*p == ':') {
            p++;
            if (*p == '.') {
                right = true;
                p++;
            }
            if (*p >= '0' && *p <= '9') {
                width = 0;
                while (*p >= '0' && *p <= '9' && width < 100000)
                    width = width * 10 + (*p++ - '0');
            } else if (right) {
                snprintf(why, why_size, "'.' needs a size in format '%s'", spec);
                rc = -EINVAL;
                break;
            }
            suffix = p;
            slen = strcspn(p, ",");
            p += slen;
        }
        rc = push_item(&f, field, width, right, suffix, slen);
        if (*p != ',')
            break;
        p++;
    }
    if (rc < 0) {
        slurm_format_release(&f);
        return rc;
    }
    *ret = f;
    return 0;
}

void slurm_format_release(struct slurm_format *f)
{
    for (size_t i = 0; f != NULL && i < f->n; i++)
        free(f->items[i].text);
    if (f != NULL) {
        free(f->items);
        f->items = NULL;
        f->n = 0;
    }
}

bool slurm_format_has(const struct slurm_format *f, int field)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->items[i].field == field)
            return true;
    }
    return false;
}

int slurm_cell(struct gs_buf *out, const char *value, int width, bool right)
{
    size_t len = strlen(value);

    if (width <= 0)
        return gs_buf_append_str(out, value);
    /* Slurm cuts a value to its field (%.8j shows 8 characters of a longer name). */
    if (len > (size_t)width)
        len = (size_t)width;
    return gs_buf_printf(out, right ? "%*.*s" : "%-*.*s", width, (int)len, value);
}

int slurm_format_line(const struct slurm_format *f, const struct slurm_field *fields,
                      slurm_value_fn value, void *ctx, struct gs_buf *out)
{
    struct gs_buf cell = GS_BUF_INIT;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < f->n; i++) {
        const struct slurm_item *it = &f->items[i];

        if (it->field < 0) {
            rc = gs_buf_append_str(out, it->text);
            continue;
        }
        gs_buf_reset(&cell);
        if (value == NULL)
            rc = gs_buf_append_str(&cell, fields[it->field].header);
        else
            rc = value(ctx, it->field, &cell);
        if (rc == 0)
            rc = slurm_cell(out, cell.data != NULL ? cell.data : "", it->width, it->right);
        if (rc == 0 && it->text != NULL)
            rc = gs_buf_append_str(out, it->text);
    }
    if (rc == 0)
        rc = gs_buf_putc(out, '\n');
    gs_buf_release(&cell);
    return rc;
}

/* --- sacct's columns ----------------------------------------------------------------------- */

int slurm_sacct_cell(struct gs_buf *out, const char *value, int width)
{
    size_t w = (size_t)(width < 0 ? -width : width), len = strlen(value);

    if (len > w && w > 0)
        return gs_buf_printf(out, "%.*s+ ", (int)(w - 1), value);
    return gs_buf_printf(out, width < 0 ? "%-*s " : "%*s ", (int)w, value);
}

/* --- the commands' errors -------------------------------------------------------------------- */

int slurm_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: error: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int slurm_opt_error(const char *cmd, int c, int opt, const char *arg)
{
    if (c == ':')
        fprintf(stderr, "%s: option '%s' requires an argument\n", cmd, arg);
    else if (opt != 0)
        fprintf(stderr, "%s: invalid option -- '%c'\n", cmd, opt);
    else
        fprintf(stderr, "%s: unrecognized option '%s'\n", cmd, arg);
    fprintf(stderr, "Try \"%s --help\" for more information\n", cmd);
    return 1;
}
