/*
 * sbatch.c: reading sbatch options from a batch script's #SBATCH lines and from the command
 * line (sbatch.h documents the behaviour). The layers, top to bottom:
 *   - value parsers (array, gres, gpus, signal, dependency, export, output patterns), pure;
 *   - the option table: one row per option, naming its setter and the field it writes;
 *   - dispatch: getopt_long-style reading of one list of words (a directive line or argv);
 *   - the script scan: which lines are directives, and their words (quotes, # comments).
 * A heterogeneous job's components ('hetjob' lines, ':' words) are read one after another
 * into structs of their own: the setters write the component being read (ctx.sb), and a
 * whole-job option met in a later component is only compared with component 0's.
 * Problems are collected in a struct ctx rather than returned at the first one, so that a
 * user sees everything wrong with a script at once; the struct is handed out only when
 * there were none.
 */
#include "slurm/sbatch.h"

#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/features.h"
#include "common/hostlist.h"
#include "common/jobspec_mail.h"
#include "common/mem_bind.h"
#include "common/rlimit_names.h"
#include "common/schema.h"
#include "common/signals.h"
#include "common/units.h"
#include "common/sort.h"
#include "common/task_dist.h"
#include "slurm/sbatch_internal.h"

/* ---- small helpers ---- */

/* Reads one or more digits at *p as a uint32_t, advancing *p. */
static int read_u32(const char **p, uint32_t *ret)
{
    const char *s = *p;
    uint64_t v = 0;

    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    for (; isdigit((unsigned char)*s); s++) {
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > UINT32_MAX)
            return -ERANGE;
    }
    *p = s;
    *ret = (uint32_t)v;
    return 0;
}

/* The whole of s is a number. */
static int whole_u32(const char *s, uint32_t *ret)
{
    uint32_t v;

    if (read_u32(&s, &v) < 0 || *s != '\0')
        return -EINVAL;
    *ret = v;
    return 0;
}

static char *dup_range(const char *s, const char *end)
{
    size_t n = (size_t)(end - s);
    char *out = malloc(n + 1);

    if (out == NULL)
        return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

static void strv_free(char **v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

void gs_sbatch_words_free(char **words)
{
    strv_free(words);
}

/* Appends s to the NULL-terminated *v of *n entries, taking ownership of s. */
static int strv_push(char ***v, size_t *n, char *s)
{
    char **grown;

    if (s == NULL)
        return -ENOMEM;
    grown = realloc(*v, (*n + 2) * sizeof(*grown));
    if (grown == NULL) {
        free(s);
        return -ENOMEM;
    }
    grown[(*n)++] = s;
    grown[*n] = NULL;
    *v = grown;
    return 0;
}

/* ---- --array ---- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* One element of an array list: A, A-B or A-B:STEP, ending at ',' or end. */
static int read_array_range(const char **p, const char *end, uint32_t *lo, uint32_t *hi,
                            uint32_t *step, struct gs_error *err)
{
    const char *s = *p;

    *step = 1;
    if (read_u32(&s, lo) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "expected a task id at '%.*s'", (int)(end - s), s);
    *hi = *lo;
    if (*s == '-' && (s++, read_u32(&s, hi) < 0))
        return gs_error_set(err, -EINVAL, 0, 0, "expected a task id after '-'");
    if (*s == ':' && (s++, read_u32(&s, step) < 0 || *step == 0))
        return gs_error_set(err, -EINVAL, 0, 0, "the step after ':' must be a number >= 1");
    if (s != end && *s != ',')
        return gs_error_set(err, -EINVAL, 0, 0, "unexpected '%c' in task range", *s);
    if (*hi < *lo)
        return gs_error_set(err, -EINVAL, 0, 0, "range %u-%u runs backwards", *lo, *hi);
    if (*hi > GS_SBATCH_ARRAY_ID_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "task id %u is above the limit %d", *hi,
                            GS_SBATCH_ARRAY_ID_MAX);
    *p = s;
    return 0;
}

/* Walks the list [text, end) counting ids, and storing them when ids is not NULL. */
static int walk_array(const char *text, const char *end, uint32_t *ids, size_t *ret_n,
                      struct gs_error *err)
{
    const char *p = text;
    size_t n = 0;

    for (;;) {
        uint32_t lo, hi, step;
        int rc = read_array_range(&p, end, &lo, &hi, &step, err);

        if (rc < 0)
            return rc;
        if (n + (hi - lo) / step + 1 > GS_SBATCH_ARRAY_MAX_IDS)
            return gs_error_set(err, -EINVAL, 0, 0, "more than %d task ids",
                                GS_SBATCH_ARRAY_MAX_IDS);
        for (uint64_t id = lo; id <= hi; id += step)
            if (ids != NULL)
                ids[n++] = (uint32_t)id;
            else
                n++;
        if (p == end)
            break;
        p++; /* the ',' */
    }
    *ret_n = n;
    return 0;
}

int gs_sbatch_parse_array(const char *text, struct gs_sbatch_array *ret, struct gs_error *err)
{
    const char *pct = strchr(text, '%');
    const char *end = pct != NULL ? pct : text + strlen(text);
    uint32_t throttle = 0, *ids;
    size_t n = 0, kept = 0;
    int rc;

    if (pct != NULL && (whole_u32(pct + 1, &throttle) < 0 || throttle == 0))
        return gs_error_set(err, -EINVAL, 0, 0, "the throttle after '%%' must be a number >= 1");
    rc = walk_array(text, end, NULL, &n, err);
    if (rc < 0)
        return rc;
    ids = malloc(n * sizeof(*ids));
    if (ids == NULL)
        return -ENOMEM;
    walk_array(text, end, ids, &n, err);
    gs_sort(ids, n, sizeof(*ids), cmp_u32);
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || ids[kept - 1] != ids[i])
            ids[kept++] = ids[i];
    ret->ids = ids;
    ret->n = kept;
    ret->throttle = throttle;
    return 0;
}

void gs_sbatch_array_release(struct gs_sbatch_array *array)
{
    if (array == NULL)
        return;
    free(array->ids);
    *array = (struct gs_sbatch_array){0};
}

/* ---- GPUs: --gres, --gpus* ---- */

/* GPU types as Slurm's gres.conf names them: a letter, then letters, digits, '_', '.', '-'. */
static bool gpu_type_ok(const char *s, size_t len)
{
    if (len == 0 || len >= GS_SBATCH_GPU_TYPE_MAX || !isalpha((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("_.-", s[i]) == NULL)
            return false;
    return true;
}

static int set_gpu_type(struct gs_sbatch_gpus *g, const char *s, size_t len, struct gs_error *err)
{
    if (!gpu_type_ok(s, len))
        return gs_error_set(err, -EINVAL, 0, 0, "'%.*s' is neither a GPU count nor a GPU type",
                            (int)len, s);
    memcpy(g->type, s, len);
    g->type[len] = '\0';
    return 0;
}

static int gpu_count(const char *s, uint32_t min, struct gs_sbatch_gpus *g, struct gs_error *err)
{
    if (whole_u32(s, &g->count) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "GPU count '%s' is not a number", s);
    if (g->count < min || g->count > GS_JOBSPEC_GPUS_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "GPU count must be %u to %d", min,
                            GS_JOBSPEC_GPUS_MAX);
    return 0;
}

int gs_sbatch_parse_gpus(const char *text, struct gs_sbatch_gpus *ret, struct gs_error *err)
{
    const char *colon = strrchr(text, ':');
    struct gs_sbatch_gpus g = {{0}, 0};
    int rc;

    if (colon != NULL && (rc = set_gpu_type(&g, text, (size_t)(colon - text), err)) < 0)
        return rc;
    rc = gpu_count(colon != NULL ? colon + 1 : text, 1, &g, err);
    if (rc < 0)
        return rc;
    *ret = g;
    return 0;
}

/* The part of a gres entry after "gpu": "", ":N", ":TYPE" or ":TYPE:N" (N may be 0). */
static int gres_gpu_entry(char *rest, struct gs_sbatch_gpus *g, struct gs_error *err)
{
    char *second;

    g->count = 1;
    if (*rest == '\0')
        return 0;
    if (*rest != ':' || rest[1] == '\0')
        return gs_error_set(err, -EINVAL, 0, 0, "write gpu[:TYPE][:COUNT]");
    rest++;
    second = strchr(rest, ':');
    if (second == NULL && isdigit((unsigned char)*rest))
        return gpu_count(rest, 0, g, err);
    if (second == NULL)
        return set_gpu_type(g, rest, strlen(rest), err);
    if (set_gpu_type(g, rest, (size_t)(second - rest), err) < 0)
        return err != NULL ? err->code : -EINVAL;
    return gpu_count(second + 1, 0, g, err);
}

int gs_sbatch_parse_gres(const char *text, struct gs_sbatch_gpus *ret, bool *ret_other,
                         struct gs_error *err)
{
    struct gs_sbatch_gpus g = {{0}, 0};
    bool other = false, seen_gpu = false;
    char *copy = strdup(text), *save = NULL, *entry;
    int rc = 0;

    if (copy == NULL)
        return -ENOMEM;
    if (copy[0] == '\0' || copy[strlen(copy) - 1] == ',' || strstr(copy, ",,") != NULL) {
        rc = gs_error_set(err, -EINVAL, 0, 0, "empty entry in the gres list");
        goto out;
    }
    for (entry = strtok_r(copy, ",", &save); entry != NULL; entry = strtok_r(NULL, ",", &save)) {
        size_t name_len = strcspn(entry, ":");

        if (name_len != 3 || strncmp(entry, "gpu", 3) != 0) {
            other = true; /* NICs, licenses-as-gres: not scheduled by gsched */
            continue;
        }
        if (seen_gpu) {
            rc = gs_error_set(err, -EINVAL, 0, 0, "gpu is named twice");
            goto out;
        }
        seen_gpu = true;
        rc = gres_gpu_entry(entry + 3, &g, err);
        if (rc < 0)
            goto out;
    }
    *ret = g;
    *ret_other = other;
out:
    free(copy);
    return rc;
}

/* ---- --signal ---- */

int gs_sbatch_parse_signal(const char *text, struct gs_sbatch_signal *ret, struct gs_error *err)
{
    struct gs_sbatch_signal sig = {0, GS_SBATCH_SIGNAL_DEFAULT_S, false, false};
    const char *colon = strchr(text, ':'), *sig_start = text, *at;
    uint32_t secs;

    if (colon != NULL) {
        size_t n = (size_t)(colon - text);

        if (n == 0 || n > 2 || strspn(text, "BR") < n)
            return gs_error_set(err, -EINVAL, 0, 0, "the prefix before ':' must be B, R or BR");
        sig.batch_only = memchr(text, 'B', n) != NULL;
        sig.reservation_overlap = memchr(text, 'R', n) != NULL;
        sig_start = colon + 1;
    }
    at = strchr(sig_start, '@');
    if (gs_signal_parse(sig_start, at != NULL ? (size_t)(at - sig_start) : strlen(sig_start),
                        &sig.signo) < 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "unknown signal (a number 1-64 or a name such as USR1, SIGTERM)");
    if (at != NULL) {
        if (whole_u32(at + 1, &secs) < 0 || secs > GS_SBATCH_SIGNAL_MAX_S)
            return gs_error_set(err, -EINVAL, 0, 0, "the time after '@' must be 0 to %d seconds",
                                GS_SBATCH_SIGNAL_MAX_S);
        sig.seconds = secs;
    }
    *ret = sig;
    return 0;
}

/* ---- --dependency ---- */

static int push_term(struct gs_sbatch_deps *d, const struct gs_sbatch_dep_term *t)
{
    struct gs_sbatch_dep_term *grown = realloc(d->terms, (d->n + 1) * sizeof(*grown));

    if (grown == NULL)
        return -ENOMEM;
    grown[d->n++] = *t;
    d->terms = grown;
    return 0;
}

/*
 * One job of a TYPE:ID[:ID...] element, [s, end): JOBID, JOBID_TASK (one array task) or
 * JOBID_* (the whole array); "+MIN" only after "after".
 */
static int dep_job(struct gs_sbatch_deps *d, const char *type, size_t type_len, const char *s,
                   const char *end, struct gs_error *err)
{
    struct gs_sbatch_dep_term t = {false, {GS_DEP_AFTER, 0, 0, GS_DEP_JOB, 0}};
    const char *plus = memchr(s, '+', (size_t)(end - s)),
               *under = memchr(s, '_', (size_t)(end - s)), *id_end = plus ? plus : end;
    char buf[GS_DEP_TEXT_SIZE];

    if (plus != NULL) {
        const char *p = plus + 1;
        uint32_t minutes;

        if (type_len != 5 || strncmp(type, "after", 5) != 0)
            return gs_error_set(err, -EINVAL, 0, 0, "'+MINUTES' is only allowed after 'after:'");
        if (read_u32(&p, &minutes) < 0 || p != end)
            return gs_error_set(err, -EINVAL, 0, 0, "expected minutes after '+'");
    }
    if (under != NULL && type_len == 9 && strncmp(type, "aftercorr", 9) == 0 &&
        !(id_end - under == 2 && under[1] == '*'))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "aftercorr pairs each task with the other array's task of the same "
                            "id: name the array (%.*s), not one of its tasks",
                            (int)(under - s), s);
    if (type_len + (size_t)(end - s) + 2 > sizeof(buf))
        return gs_error_set(err, -EINVAL, 0, 0, "'%.*s' is not a job id", (int)(id_end - s), s);
    snprintf(buf, sizeof(buf), "%.*s:%.*s", (int)type_len, type, (int)(end - s), s);
    if (gs_dep_parse(buf, &t.dep) < 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "'%.*s' is not a job id (JOBID, JOBID_TASK for one array task, "
                            "JOBID_* for all)",
                            (int)(id_end - s), s);
    return push_term(d, &t);
}

/* Calls fn on each sep-separated item of text (first: whether it is the first). */
static int each_item(const char *text, char sep,
                     int (*fn)(void *ctx, const char *s, const char *end, bool first,
                               struct gs_error *err),
                     void *ctx, struct gs_error *err)
{
    const char *s = text;

    for (bool first = true;; first = false) {
        const char *end = strchr(s, sep);
        int rc;

        if (end == NULL)
            end = s + strlen(s);
        rc = fn(ctx, s, end, first, err);
        if (rc < 0 || *end == '\0')
            return rc;
        s = end + 1;
    }
}

/* One element: "singleton" or TYPE:ID[:ID...]. */
static int dep_element(void *ctx, const char *s, const char *end, bool first, struct gs_error *err)
{
    struct gs_sbatch_deps *d = ctx;
    const char *colon = memchr(s, ':', (size_t)(end - s));
    struct gs_dep probe;
    char buf[32];
    int rc;

    (void)first;
    if (end - s == 9 && strncmp(s, "singleton", 9) == 0)
        return push_term(d, &(struct gs_sbatch_dep_term){.singleton = true});
    if (colon == NULL || colon == s || colon + 1 == end)
        return gs_error_set(err, -EINVAL, 0, 0, "'%.*s' is not TYPE:JOBID or singleton",
                            (int)(end - s), s);
    snprintf(buf, sizeof(buf), "%.*s:1", (int)(colon - s), s);
    if (gs_dep_parse(buf, &probe) < 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "unknown dependency type '%.*s' (after, afterok, afternotok, "
                            "afterany, aftercorr, singleton)",
                            (int)(colon - s), s);
    for (const char *id = colon + 1; id < end;) {
        const char *id_end = memchr(id, ':', (size_t)(end - id));

        if (id_end == NULL)
            id_end = end;
        rc = dep_job(d, s, (size_t)(colon - s), id, id_end, err);
        if (rc < 0)
            return rc;
        id = id_end + 1;
    }
    return 0;
}

int gs_sbatch_parse_dependency(const char *text, struct gs_sbatch_deps *ret, struct gs_error *err)
{
    struct gs_sbatch_deps d = {GS_SBATCH_DEP_ALL, NULL, 0};
    bool any = strchr(text, '?') != NULL;
    char sep = any ? '?' : ',';
    int rc = 0;

    if (any && strchr(text, ',') != NULL)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "use ',' (all must hold) or '?' (any may hold), not both");
    d.op = any ? GS_SBATCH_DEP_ANY : GS_SBATCH_DEP_ALL;
    rc = each_item(text, sep, dep_element, &d, err);
    if (rc < 0)
        goto out;
    *ret = d;
    return 0;
out:
    gs_sbatch_deps_release(&d);
    return rc;
}

void gs_sbatch_deps_release(struct gs_sbatch_deps *deps)
{
    if (deps == NULL)
        return;
    free(deps->terms);
    *deps = (struct gs_sbatch_deps){GS_SBATCH_DEP_ALL, NULL, 0};
}

/* ---- --export ---- */

static int export_item(void *ctx, const char *s, const char *end, bool first, struct gs_error *err)
{
    struct gs_sbatch_export *e = ctx;
    size_t len = (size_t)(end - s), name_len;
    const char *eq = memchr(s, '=', len);

    if ((len == 3 && strncasecmp(s, "ALL", 3) == 0) ||
        (len == 4 && strncasecmp(s, "NONE", 4) == 0)) {
        if (!first)
            return gs_error_set(err, -EINVAL, 0, 0, "ALL or NONE must come first");
        e->mode = len == 3 ? GS_SBATCH_EXPORT_ALL : GS_SBATCH_EXPORT_NONE;
        return 0;
    }
    name_len = eq != NULL ? (size_t)(eq - s) : len;
    if (!gs_jobspec_env_name_ok(s, name_len))
        return gs_error_set(err, -EINVAL, 0, 0, "'%.*s' is not a variable name", (int)name_len, s);
    return strv_push(&e->vars, &e->n, dup_range(s, end));
}

int gs_sbatch_parse_export(const char *text, struct gs_sbatch_export *ret, struct gs_error *err)
{
    /* Without ALL first, sbatch exports only the listed variables. */
    struct gs_sbatch_export e = {GS_SBATCH_EXPORT_NONE, NULL, 0};
    int rc = each_item(text, ',', export_item, &e, err);

    if (rc < 0)
        goto out;
    *ret = e;
    return 0;
out:
    gs_sbatch_export_release(&e);
    return rc;
}

void gs_sbatch_export_release(struct gs_sbatch_export *exp)
{
    if (exp == NULL)
        return;
    strv_free(exp->vars);
    *exp = (struct gs_sbatch_export){GS_SBATCH_EXPORT_ALL, NULL, 0};
}

/* ---- the option table ---- */

/* The state of one gs_sbatch_parse call. */
struct ctx {
    struct gs_sbatch *job; /* the request: component 0, owning the others */
    struct gs_sbatch *sb;  /* the component being read, which the setters write */
    size_t comp;           /* its index: 0 is job itself, k is job->het[k - 1] */
    const char *file;      /* names the script in messages */
    int line;              /* of the directive being read; 0 on the command line */
    enum gs_sbatch_source source;
    int set_line[GS_SBATCH_OPT_COUNT]; /* where each option was last set, for conflicts */
    /* Component 0's value of each option as last given ("" without one), so that a later
     * component may repeat a whole-job option when it says the same. */
    char *job_text[GS_SBATCH_OPT_COUNT];
    /* Where components past GS_JOBSPEC_HET_MAX are read, once that error is reported. */
    struct gs_sbatch overflow;
    struct gs_buf *errors, *warnings;
    int nerrors;
    int rc; /* -ENOMEM once an allocation failed */
};

enum arg_kind { ARG_NONE, ARG_REQUIRED, ARG_OPTIONAL };

struct opt_def;
typedef int (*opt_setter)(struct ctx *c, const struct opt_def *d, const char *value,
                          struct gs_error *err);

struct opt_def {
    const char *name;
    char short_name; /* 0 for none */
    enum arg_kind arg;
    int id;           /* enum gs_sbatch_opt; -1 for options that set nothing */
    opt_setter set;   /* NULL: accepted with a warning that says note */
    size_t field;     /* offset in struct gs_sbatch for the generic setters */
    uint32_t max;     /* for counts; for flags, the value to store */
    int group;        /* options of one group exclude each other; 0 for none */
    const char *note; /* for warned or unsupported options: why */
};

#define FIELD(f) offsetof(struct gs_sbatch, f)
#define AT(c, d, type) ((type *)(void *)((char *)(c)->sb + (d)->field))

enum { GROUP_NONE, GROUP_MEM, GROUP_CPUS };

static int set_string(struct ctx *c, const struct opt_def *d, const char *value,
                      struct gs_error *err)
{
    char **field = AT(c, d, char *), *copy;

    if (value[0] == '\0')
        return gs_error_set(err, -EINVAL, 0, 0, "needs a non-empty value");
    copy = strdup(value);
    if (copy == NULL)
        return -ENOMEM;
    free(*field);
    *field = copy;
    return 0;
}

static int set_job_name(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    if (!gs_jobspec_name_ok(value))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "a job name is 1 to %d characters without '/', tabs or newlines",
                            GS_JOBSPEC_NAME_MAX);
    return set_string(c, d, value, err);
}

static int set_count(struct ctx *c, const struct opt_def *d, const char *value,
                     struct gs_error *err)
{
    uint32_t n;

    if (whole_u32(value, &n) < 0 || n < 1 || n > d->max)
        return gs_error_set(err, -EINVAL, 0, 0, "'%s' is not a count from 1 to %u", value, d->max);
    *AT(c, d, uint32_t) = n;
    return 0;
}

/* --mail-type=END,FAIL (common/jobspec_mail.h's names). */
static int set_mail_type(struct ctx *c, const struct opt_def *d, const char *value,
                         struct gs_error *err)
{
    char why[240];

    if (gs_mail_types_parse(value, AT(c, d, uint32_t), why, sizeof(why)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "%s", why);
    return 0;
}

/* --mail-user=ADDRESS: given to the mail program as an argument, so checked here too. */
static int set_mail_user(struct ctx *c, const struct opt_def *d, const char *value,
                         struct gs_error *err)
{
    char why[120];

    if (gs_mail_user_check(value, why, sizeof(why)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "%s", why);
    return set_string(c, d, value, err);
}

/* --open-mode=append|truncate (a prefix will do, any case, as Slurm reads it). */
static int set_open_mode(struct ctx *c, const struct opt_def *d, const char *value,
                         struct gs_error *err)
{
    size_t n = strlen(value);

    if (n > 0 && strncasecmp(value, "append", n) == 0)
        *AT(c, d, bool) = true;
    else if (n > 0 && strncasecmp(value, "truncate", n) == 0)
        *AT(c, d, bool) = false;
    else
        return gs_error_set(err, -EINVAL, 0, 0, "must be append or truncate");
    return 0;
}

/* A string option its reader (parsed: its return) checked: the reader's why, less its
 * "--option: ", as the error, else the value kept. Read now, so a typo names its line. */
static int set_checked(struct ctx *c, const struct opt_def *d, const char *value, int parsed,
                       const char *why, struct gs_error *err)
{
    const char *colon = strstr(why, ": ");

    if (parsed < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "%s",
                            strncmp(why, "--", 2) == 0 && colon != NULL ? colon + 2 : why);
    return set_string(c, d, value, err);
}

/* One name, as a job file's account or wckey is (--wckey). */
static int set_word(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    if (!gs_jobspec_word_ok(value))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "one name of 1 to %d letters, digits, '_', '.' or '-'",
                            GS_JOBSPEC_NAME_MAX);
    return set_string(c, d, value, err);
}

/* -C/--constraint, --prefer: a node feature expression (common/features.h). */
static int set_features(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    char why[160];

    if (gs_features_check(value, why, sizeof(why)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "%s", why);
    return set_string(c, d, value, err);
}

/* -m/--distribution: the job's steps apply it (SLURM_DISTRIBUTION). */
static int set_distribution(struct ctx *c, const struct opt_def *d, const char *value,
                            struct gs_error *err)
{
    struct gs_dist dist;
    char why[256] = "";

    return set_checked(c, d, value, gs_dist_parse(value, &dist, why, sizeof(why)), why, err);
}

/* --mem-bind: the job's steps apply it (SLURM_MEM_BIND). */
static int set_mem_bind(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    struct gs_mem_bind b;
    char why[256] = "";

    return set_checked(c, d, value, gs_mem_bind_parse(value, &b, why, sizeof(why)), why, err);
}

/* --propagate[=ALL|NONE|NAME,...]: which of the shell's limits (common/rlimit_names.h). */
static int set_propagate(struct ctx *c, const struct opt_def *d, const char *value,
                         struct gs_error *err)
{
    uint32_t mask = 0;

    if (value == NULL || value[0] == '\0' || strcasecmp(value, "ALL") == 0)
        mask = (1u << GS_RLIMIT_COUNT) - 1;
    else if (strcasecmp(value, "NONE") != 0) {
        for (const char *p = value; *p != '\0';) {
            size_t len = strcspn(p, ","), i = 0;
            char name[16];

            snprintf(name, sizeof(name), "%.*s", (int)(len < 15 ? len : 15), p);
            while (i < GS_RLIMIT_COUNT && strcasecmp(name, gs_rlimit_name(i)) != 0)
                i++;
            if (len >= 15 || i == GS_RLIMIT_COUNT)
                return gs_error_set(err, -EINVAL, 0, 0,
                                    "'%.*s' is none of ALL, NONE, AS, CORE, CPU, DATA, FSIZE, "
                                    "MEMLOCK, NOFILE, NPROC, RSS, STACK",
                                    (int)len, p);
            mask |= 1u << i;
            p += len + (p[len] == ',');
        }
    }
    *AT(c, d, uint32_t) = mask;
    return 0;
}

/* --ntasks-per-core=1: what gsched gives every task (whole cores of its own); more is not. */
static int set_per_core(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    if (strcmp(value, "1") != 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "gsched gives each task whole cores of its own: only 1 is supported");
    *AT(c, d, uint32_t) = 1;
    return 0;
}

/* --switches=N[@TIME]: N a count, TIME as --time takes it (at most a day). */
static int set_switches(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    const char *at = strchr(value, '@');
    char count[24];
    uint64_t n = 0, s = 0;
    char *end;

    (void)d;
    if ((at != NULL ? (size_t)(at - value) : strlen(value)) >= sizeof(count))
        return gs_error_set(err, -EINVAL, 0, 0, "'%s' is not COUNT[@TIME]", value);
    snprintf(count, sizeof(count), "%.*s", at != NULL ? (int)(at - value) : (int)strlen(value),
             value);
    if (count[0] < '0' || count[0] > '9' || (n = strtoull(count, &end, 10), *end != '\0') ||
        n > GS_JOBSPEC_NODES_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "'%s': COUNT must be a number of switches, 0 to %d",
                            value, GS_JOBSPEC_NODES_MAX);
    if (at != NULL && (gs_parse_duration(at + 1, &s) < 0 || s > GS_JOBSPEC_SWITCH_WAIT_MAX))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "'%s': TIME must be a time of at most a day (MIN, MIN:SEC, H:M:S, "
                            "D-H, D-H:M, D-H:M:S)",
                            value);
    c->sb->switches.count = (uint32_t)n;
    c->sb->switches.wait_set = at != NULL;
    c->sb->switches.wait_s = (uint32_t)s;
    return 0;
}

/* -k/--no-kill[=off]. */
static int set_no_kill(struct ctx *c, const struct opt_def *d, const char *value,
                       struct gs_error *err)
{
    if (value != NULL && strcasecmp(value, "off") != 0 && strcasecmp(value, "on") != 0)
        return gs_error_set(err, -EINVAL, 0, 0, "must be off (or nothing)");
    *AT(c, d, bool) = value == NULL || strcasecmp(value, "on") == 0;
    return 0;
}

__attribute__((format(printf, 3, 4))) static void warn(struct ctx *c, const char *shown,
                                                       const char *fmt, ...);

/* --hint=nomultithread (one hardware thread a core, as --threads-per-core=1), multithread
 * (all of them, the default); compute_bound is Slurm's whole cores per task, each task bound
 * to its cores, which is what every job gets here; memory_bound's one core per socket is not
 * done, and is warned about. */
static int set_hint(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    if (strcmp(value, "nomultithread") == 0 || strcmp(value, "multithread") == 0 ||
        strcmp(value, "compute_bound") == 0) {
        *AT(c, d, uint32_t) = value[0] == 'n' ? 1 : 0;
        return 0;
    }
    if (strcmp(value, "memory_bound") != 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "must be nomultithread, multithread, compute_bound or memory_bound");
    warn(c, "--hint=memory_bound", "ignored: tasks are not spread one core per socket");
    return 0;
}

/* 0 or 1 (--wait-all-nodes). */
static int set_zero_one(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
        return gs_error_set(err, -EINVAL, 0, 0, "must be 0 or 1");
    *AT(c, d, bool) = value[0] == '1';
    return 0;
}

/* --kill-on-invalid-dep=yes|no */
static int set_kill_invalid_dep(struct ctx *c, const struct opt_def *d, const char *value,
                                struct gs_error *err)
{
    if (strcasecmp(value, "yes") == 0)
        *AT(c, d, enum gs_kill_invalid_dep) = GS_KILL_INVALID_DEP_YES;
    else if (strcasecmp(value, "no") == 0)
        *AT(c, d, enum gs_kill_invalid_dep) = GS_KILL_INVALID_DEP_NO;
    else
        return gs_error_set(err, -EINVAL, 0, 0, "must be yes or no");
    return 0;
}

static int set_flag(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    (void)value;
    (void)err;
    *AT(c, d, bool) = d->max != 0;
    return 0;
}

static int set_nodes(struct ctx *c, const struct opt_def *d, const char *value,
                     struct gs_error *err)
{
    const char *p = value;
    uint32_t lo, hi;
    bool ok;

    (void)d;
    ok = read_u32(&p, &lo) == 0;
    hi = lo;
    if (ok && *p == '-')
        ok = (p++, read_u32(&p, &hi) == 0);
    if (!ok || *p != '\0')
        return gs_error_set(err, -EINVAL, 0, 0, "'%s' is not a node count (write N or MIN-MAX)",
                            value);
    if (lo < 1 || hi < lo || hi > GS_JOBSPEC_NODES_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "node counts must be 1 to %d, MIN <= MAX",
                            GS_JOBSPEC_NODES_MAX);
    c->sb->nodes_min = lo;
    c->sb->nodes_max = hi;
    return 0;
}

static int set_gpus(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    return gs_sbatch_parse_gpus(value, AT(c, d, struct gs_sbatch_gpus), err);
}

static int set_gres(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    (void)d;
    return gs_sbatch_parse_gres(value, &c->sb->gres, &c->sb->gres_other, err);
}

static int set_mem(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    uint64_t bytes;
    int rc = gs_parse_size(value, GS_MIB, &bytes);

    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "'%s' is not a size (a number of MiB, or 64G, 512M)",
                            value);
    if (bytes == 0 && d->id != GS_SBATCH_OPT_MEM && d->id != GS_SBATCH_OPT_TMP)
        return gs_error_set(err, -EINVAL, 0, 0, "must be more than 0");
    *AT(c, d, uint64_t) = (bytes + GS_MIB - 1) / GS_MIB;
    return 0;
}

static int set_time(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    uint64_t s;

    if (gs_parse_duration(value, &s) < 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "'%s' is not a time (MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S)", value);
    *AT(c, d, uint64_t) = s;
    return 0;
}

/* A host file's names as one hostlist (gs_hostlist_read_file), its failure said in err. */
static int read_host_file(const char *path, struct gs_buf *list, struct gs_error *err)
{
    int rc = gs_hostlist_read_file(path, list);

    if (rc == -ENODATA)
        return gs_error_set(err, -EINVAL, 0, 0, "the host file %s names no node", path);
    if (rc < 0 && rc != -ENOMEM)
        return gs_error_set(err, rc, 0, 0, "cannot read the host file %s: %s", path,
                            gs_strerror(rc));
    return rc;
}

/* Drops the repeats of a name list, keeping each first; the new count. */
static size_t distinct(char **names, size_t n)
{
    size_t kept = 0;

    for (size_t i = 0; i < n; i++) {
        bool seen = false;

        for (size_t k = 0; k < kept && !seen; k++)
            seen = strcmp(names[k], names[i]) == 0;
        if (seen)
            free(names[i]);
        else
            names[kept++] = names[i];
    }
    if (names != NULL)
        names[kept] = NULL;
    return kept;
}

/* -w/-x LIST, or a host file (a value with '/', as Slurm reads it; --nodefile always). */
static int set_hostlist(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    bool excl = d->id == GS_SBATCH_OPT_EXCLUDE;
    char ***names = excl ? &c->sb->exclude_names : &c->sb->nodelist_names;
    size_t *n = excl ? &c->sb->exclude_n : &c->sb->nodelist_n;
    struct gs_buf list = GS_BUF_INIT;
    char **expanded = NULL;
    size_t count;
    int rc = 0;

    if (strchr(value, '/') != NULL || strcmp(d->name, "nodefile") == 0)
        rc = read_host_file(value, &list, err);
    else
        rc = gs_buf_append_str(&list, value);
    if (rc == 0)
        rc = gs_hostlist_expand(list.data, &expanded, &count, err);
    if (rc == 0)
        rc = set_string(c, d, list.data, err);
    gs_buf_release(&list);
    if (rc < 0) {
        gs_hostlist_free(expanded);
        return rc;
    }
    gs_hostlist_free(*names);
    *names = expanded;
    *n = distinct(expanded, count);
    return 0;
}

static int set_pattern(struct ctx *c, const struct opt_def *d, const char *value,
                       struct gs_error *err)
{
    const char *bad = gs_jobspec_slurm_bad_placeholder(value);

    if (bad != NULL)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "unknown placeholder '%.2s' (known: %%j %%J %%A %%a %%x %%N %%n %%t "
                            "%%u %%%%)",
                            bad);
    return set_string(c, d, value, err);
}

static int set_array(struct ctx *c, const struct opt_def *d, const char *value,
                     struct gs_error *err)
{
    struct gs_sbatch_array a;
    int rc = gs_sbatch_parse_array(value, &a, err);

    (void)d;
    if (rc < 0)
        return rc;
    gs_sbatch_array_release(&c->sb->array);
    c->sb->array = a;
    return 0;
}

static int set_dependency(struct ctx *c, const struct opt_def *d, const char *value,
                          struct gs_error *err)
{
    struct gs_sbatch_deps deps;
    int rc = gs_sbatch_parse_dependency(value, &deps, err);

    (void)d;
    if (rc < 0)
        return rc;
    gs_sbatch_deps_release(&c->sb->deps);
    c->sb->deps = deps;
    return 0;
}

static int set_signal(struct ctx *c, const struct opt_def *d, const char *value,
                      struct gs_error *err)
{
    (void)d;
    return gs_sbatch_parse_signal(value, &c->sb->signal, err);
}

static int set_export(struct ctx *c, const struct opt_def *d, const char *value,
                      struct gs_error *err)
{
    struct gs_sbatch_export e;
    int rc = gs_sbatch_parse_export(value, &e, err);

    (void)d;
    if (rc < 0)
        return rc;
    gs_sbatch_export_release(&c->sb->export_env);
    c->sb->export_env = e;
    return 0;
}

/* A signed whole number from -max to max ("+5" too) into *ret; 0 or -EINVAL. */
static int whole_signed(const char *value, uint32_t max, int32_t *ret)
{
    const char *p = value;
    bool negative = false;
    uint32_t n;

    if (*p == '-' || *p == '+')
        negative = *p++ == '-';
    if (whole_u32(p, &n) < 0 || n > max || n > INT32_MAX)
        return -EINVAL;
    *ret = negative ? -(int32_t)n : (int32_t)n;
    return 0;
}

/* --nice[=N]: N may be negative (gschedd allows that to root only); no value is 100. */
static int set_nice(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    (void)d;
    if (value == NULL) {
        c->sb->nice = GS_SBATCH_NICE_DEFAULT;
        return 0;
    }
    if (whole_signed(value, GS_JOBSPEC_NICE_MAX, &c->sb->nice) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "'%s' is not an adjustment from %d to %d", value,
                            -GS_JOBSPEC_NICE_MAX, GS_JOBSPEC_NICE_MAX);
    return 0;
}

/* --priority=N: a number (Slurm's TOP, over the user's other jobs, is not offered). */
static int set_priority(struct ctx *c, const struct opt_def *d, const char *value,
                        struct gs_error *err)
{
    (void)d;
    if (strcasecmp(value, "TOP") == 0)
        return gs_error_set(err, -EINVAL, 0, 0, "TOP is not supported: give a number");
    if (whole_signed(value, GS_JOBSPEC_PRIORITY_MAX, &c->sb->priority) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "'%s' is not a priority from %d to %d", value,
                            -GS_JOBSPEC_PRIORITY_MAX, GS_JOBSPEC_PRIORITY_MAX);
    return 0;
}

/* --begin and --deadline, read against the clock now (gschedd: BeginTime; a job that could
 * not end by its deadline is cancelled while pending). */
static int set_begin(struct ctx *c, const struct opt_def *d, const char *value,
                     struct gs_error *err)
{
    return gs_sbatch_parse_begin(
        value, gs_clock_wall_ms(),
        d->id == GS_SBATCH_OPT_DEADLINE ? &c->sb->deadline_ms : &c->sb->begin_ms, err);
}

/* --exclusive: whole nodes. =user asks only that no other user's job shares them: whole
 * nodes meet that (the user's own jobs do not share them either), said in a warning. */
static int set_exclusive(struct ctx *c, const struct opt_def *d, const char *value,
                         struct gs_error *err)
{
    (void)d;
    if (value != NULL && strcmp(value, "user") == 0)
        warn(c, "--exclusive=user",
             "taken as --exclusive: the job's nodes run no other job, its user's neither");
    else if (value != NULL)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "only --exclusive (whole nodes) and =user are supported, not =%s",
                            value);
    c->sb->exclusive = true;
    return 0;
}

static int set_wrap(struct ctx *c, const struct opt_def *d, const char *value, struct gs_error *err)
{
    if (c->source != GS_SBATCH_FROM_CLI)
        return gs_error_set(err, -EINVAL, 0, 0, "only allowed on the command line");
    return set_string(c, d, value, err);
}

static int unsupported(struct ctx *c, const struct opt_def *d, const char *value,
                       struct gs_error *err)
{
    (void)c;
    (void)value;
    return gs_error_set(err, -ENOTSUP, 0, 0, "a Slurm option gsched does not support%s%s",
                        d->note != NULL ? ": " : "", d->note != NULL ? d->note : "");
}

#define REQ ARG_REQUIRED
#define OPT(name, sh, id, fn, fld, max, group)                                                     \
    {                                                                                              \
        name, sh, REQ, GS_SBATCH_OPT_##id, fn, FIELD(fld), max, group, NULL                        \
    }
#define FLAG(name, sh, id, fld, value)                                                             \
    {                                                                                              \
        name, sh, ARG_NONE, GS_SBATCH_OPT_##id, set_flag, FIELD(fld), value, GROUP_NONE, NULL      \
    }
#define WARNED(name, arg, note)                                                                    \
    {                                                                                              \
        name, 0, arg, -1, NULL, 0, 0, GROUP_NONE, note                                             \
    }
#define UNSUPPORTED(name, sh, arg, note)                                                           \
    {                                                                                              \
        name, sh, arg, -1, unsupported, 0, 0, GROUP_NONE, note                                     \
    }

static const struct opt_def options[] = {
    OPT("job-name", 'J', JOB_NAME, set_job_name, job_name, 0, GROUP_NONE),
    OPT("nodes", 'N', NODES, set_nodes, nodes_min, 0, GROUP_NONE),
    OPT("ntasks", 'n', NTASKS, set_count, ntasks, 1000000, GROUP_NONE),
    OPT("ntasks-per-node", 0, NTASKS_PER_NODE, set_count, ntasks_per_node, GS_JOBSPEC_CPUS_MAX,
        GROUP_NONE),
    OPT("ntasks-per-gpu", 0, NTASKS_PER_GPU, set_count, ntasks_per_gpu, GS_JOBSPEC_CPUS_MAX,
        GROUP_NONE),
    OPT("cpus-per-task", 'c', CPUS_PER_TASK, set_count, cpus_per_task, GS_JOBSPEC_CPUS_MAX,
        GROUP_CPUS),
    OPT("cpus-per-gpu", 0, CPUS_PER_GPU, set_count, cpus_per_gpu, GS_JOBSPEC_CPUS_MAX, GROUP_CPUS),
    OPT("gres", 0, GRES, set_gres, gres, 0, GROUP_NONE),
    OPT("gpus", 'G', GPUS, set_gpus, gpus, 0, GROUP_NONE),
    OPT("gpus-per-node", 0, GPUS_PER_NODE, set_gpus, gpus_per_node, 0, GROUP_NONE),
    OPT("gpus-per-task", 0, GPUS_PER_TASK, set_gpus, gpus_per_task, 0, GROUP_NONE),
    OPT("gpu-bind", 0, GPU_BIND, set_string, gpu_bind, 0, GROUP_NONE),
    OPT("distribution", 'm', DISTRIBUTION, set_distribution, distribution, 0, GROUP_NONE),
    OPT("mem-bind", 0, MEM_BIND, set_mem_bind, mem_bind, 0, GROUP_NONE),
    OPT("mem", 0, MEM, set_mem, mem_mib, 0, GROUP_MEM),
    OPT("mem-per-cpu", 0, MEM_PER_CPU, set_mem, mem_per_cpu_mib, 0, GROUP_MEM),
    OPT("mem-per-gpu", 0, MEM_PER_GPU, set_mem, mem_per_gpu_mib, 0, GROUP_MEM),
    OPT("tmp", 0, TMP, set_mem, tmp_mib, 0, GROUP_NONE),
    OPT("mincpus", 0, MINCPUS, set_count, mincpus, GS_JOBSPEC_CPUS_MAX, GROUP_NONE),
    FLAG("overcommit", 'O', OVERCOMMIT, overcommit, 1),
    OPT("time", 't', TIME, set_time, time_limit_s, 0, GROUP_NONE),
    OPT("time-min", 0, TIME_MIN, set_time, time_min_s, 0, GROUP_NONE),
    OPT("partition", 'p', PARTITION, set_string, partition, 0, GROUP_NONE),
    OPT("account", 'A', ACCOUNT, set_string, account, 0, GROUP_NONE),
    OPT("qos", 'q', QOS, set_string, qos, 0, GROUP_NONE),
    OPT("constraint", 'C', CONSTRAINT, set_features, constraint, 0, GROUP_NONE),
    OPT("nodelist", 'w', NODELIST, set_hostlist, nodelist, 0, GROUP_NONE),
    OPT("nodefile", 'F', NODELIST, set_hostlist, nodelist, 0, GROUP_NONE),
    OPT("exclude", 'x', EXCLUDE, set_hostlist, exclude, 0, GROUP_NONE),
    {"exclusive", 0, ARG_OPTIONAL, GS_SBATCH_OPT_EXCLUSIVE, set_exclusive, 0, 0, GROUP_NONE, NULL},
    OPT("output", 'o', OUTPUT, set_pattern, output, 0, GROUP_NONE),
    OPT("input", 'i', INPUT, set_pattern, input, 0, GROUP_NONE),
    OPT("error", 'e', ERROR, set_pattern, error, 0, GROUP_NONE),
    OPT("chdir", 'D', CHDIR, set_string, chdir, 0, GROUP_NONE),
    OPT("array", 'a', ARRAY, set_array, array, 0, GROUP_NONE),
    OPT("dependency", 'd', DEPENDENCY, set_dependency, deps, 0, GROUP_NONE),
    FLAG("requeue", 0, REQUEUE, requeue, 1),
    FLAG("no-requeue", 0, REQUEUE, requeue, 0),
    OPT("signal", 0, SIGNAL, set_signal, signal, 0, GROUP_NONE),
    OPT("export", 0, EXPORT, set_export, export_env, 0, GROUP_NONE),
    OPT("reservation", 0, RESERVATION, set_string, reservation, 0, GROUP_NONE),
    OPT("licenses", 'L', LICENSES, set_string, licenses, 0, GROUP_NONE),
    OPT("gres-flags", 0, GRES_FLAGS, set_string, gres_flags, 0, GROUP_NONE),
    OPT("comment", 0, COMMENT, set_string, comment, 0, GROUP_NONE),
    OPT("wckey", 0, WCKEY, set_word, wckey, 0, GROUP_NONE),
    OPT("prefer", 0, PREFER, set_features, prefer, 0, GROUP_NONE),
    OPT("clusters", 'M', CLUSTERS, set_string, clusters, 0, GROUP_NONE),
    OPT("ntasks-per-core", 0, NTASKS_PER_CORE, set_per_core, ntasks_per_core, 0, GROUP_NONE),
    FLAG("hold", 'H', HOLD, hold, 1),
    {"nice", 0, ARG_OPTIONAL, GS_SBATCH_OPT_NICE, set_nice, FIELD(nice), 0, GROUP_NONE, NULL},
    OPT("priority", 0, PRIORITY, set_priority, priority, 0, GROUP_NONE),
    FLAG("wait", 'W', WAIT, wait, 1),
    FLAG("test-only", 0, TEST_ONLY, test_only, 1),
    OPT("wrap", 0, WRAP, set_wrap, wrap, 0, GROUP_NONE),
    FLAG("parsable", 0, PARSABLE, parsable, 1),
    FLAG("quiet", 'Q', QUIET, quiet, 1),
    FLAG("use-min-nodes", 0, USE_MIN_NODES, use_min_nodes, 1),
    FLAG("verbose", 'v', VERBOSE, verbose, 1),
    OPT("wait-all-nodes", 0, WAIT_ALL_NODES, set_zero_one, wait_all_nodes, 0, GROUP_NONE),
    {"propagate", 0, ARG_OPTIONAL, GS_SBATCH_OPT_PROPAGATE, set_propagate, FIELD(propagate), 0,
     GROUP_NONE, NULL},
    OPT("mail-type", 0, MAIL_TYPE, set_mail_type, mail_types, 0, GROUP_NONE),
    OPT("mail-user", 0, MAIL_USER, set_mail_user, mail_user, 0, GROUP_NONE),
    OPT("open-mode", 0, OPEN_MODE, set_open_mode, open_append, 0, GROUP_NONE),
    OPT("kill-on-invalid-dep", 0, KILL_ON_INVALID_DEP, set_kill_invalid_dep, kill_invalid_dep, 0,
        GROUP_NONE),
    WARNED("get-user-env", ARG_OPTIONAL, "jobs get the submitting environment"),
    OPT("hint", 0, THREADS_PER_CORE, set_hint, threads_per_core, 0, GROUP_NONE),
    OPT("threads-per-core", 0, THREADS_PER_CORE, set_count, threads_per_core, 64, GROUP_NONE),
    OPT("begin", 'b', BEGIN, set_begin, begin_ms, 0, GROUP_NONE),
    OPT("deadline", 0, DEADLINE, set_begin, deadline_ms, 0, GROUP_NONE),
    {"no-kill", 'k', ARG_OPTIONAL, GS_SBATCH_OPT_NO_KILL, set_no_kill, FIELD(no_kill), 0,
     GROUP_NONE, NULL},
    OPT("switches", 0, SWITCHES, set_switches, switches, 0, GROUP_NONE),
    UNSUPPORTED("ntasks-per-socket", 0, REQ, NULL),
    {"oversubscribe", 's', ARG_NONE, -1, NULL, 0, 0, GROUP_NONE,
     "jobs never share cores or GPUs here (as under Slurm's default OverSubscribe=NO)"},
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/* One option as a help line: "  -J, --job-name=VALUE" (no value: no "="; optional: "[=V]"). */
static void help_line(const struct opt_def *d, struct gs_buf *out)
{
    if (d->short_name != 0)
        gs_buf_printf(out, "  -%c, --%s", d->short_name, d->name);
    else
        gs_buf_printf(out, "      --%s", d->name);
    gs_buf_append_str(out, d->arg == REQ ? "=VALUE" : d->arg == ARG_OPTIONAL ? "[=VALUE]" : "");
    if (d->note != NULL)
        gs_buf_printf(out, "   (%s)", d->note);
    gs_buf_putc(out, '\n');
}

int gs_sbatch_options_help(struct gs_buf *out)
{
    static const char *const part[] = {"Options:\n",
                                       "Accepted, with a warning that they change nothing:\n",
                                       "Refused (Slurm's, not done here):\n"};

    for (int k = 0; k < 3; k++) {
        gs_buf_append_str(out, part[k]);
        for (size_t i = 0; i < NOPTIONS; i++) {
            const struct opt_def *d = &options[i];
            int kind = d->set == unsupported ? 2 : d->set == NULL ? 1 : 0;

            if (kind == k)
                help_line(d, out);
        }
    }
    return gs_buf_error(out);
}

/* ---- reporting ---- */

__attribute__((format(printf, 4, 0))) static void
vreport(struct ctx *c, struct gs_buf *to, const char *shown, const char *fmt, va_list ap)
{
    int rc = 0;

    if (to == NULL)
        return;
    if (c->line > 0)
        rc = gs_buf_printf(to, "%s:%d: ", c->file, c->line);
    else if (c->source == GS_SBATCH_FROM_CLI)
        rc = gs_buf_append_str(to, "command line: ");
    else
        rc = gs_buf_printf(to, "%s: ", c->file);
    if (rc == 0 && shown != NULL)
        rc = gs_buf_printf(to, "%s: ", shown);
    if (rc == 0)
        rc = gs_buf_vprintf(to, fmt, ap);
    if (rc == 0)
        rc = gs_buf_putc(to, '\n');
    if (rc < 0)
        c->rc = rc;
}

__attribute__((format(printf, 3, 4))) static void report(struct ctx *c, const char *shown,
                                                         const char *fmt, ...)
{
    va_list ap;

    c->nerrors++;
    va_start(ap, fmt);
    vreport(c, c->errors, shown, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void warn(struct ctx *c, const char *shown,
                                                       const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(c, c->warnings, shown, fmt, ap);
    va_end(ap);
}

/* ---- dispatch ---- */

static const struct opt_def *by_short(char ch)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (options[i].short_name == ch && ch != 0)
            return &options[i];
    return NULL;
}

/* Exact name, else a unique prefix (as getopt_long allows); NULL with *ambiguous set. */
static const struct opt_def *by_long(const char *name, size_t len, bool *ambiguous)
{
    const struct opt_def *found = NULL;
    int matches = 0;

    *ambiguous = false;
    for (size_t i = 0; i < NOPTIONS; i++) {
        if (strncmp(options[i].name, name, len) != 0)
            continue;
        if (options[i].name[len] == '\0')
            return &options[i];
        matches++;
        found = &options[i];
    }
    *ambiguous = matches > 1;
    return matches == 1 ? found : NULL;
}

static void report_unknown_long(struct ctx *c, const char *shown, const char *name, size_t len,
                                bool ambiguous)
{
    char key[32];
    int best = len <= 4 ? 1 : 2;
    const char *hint = NULL;

    snprintf(key, sizeof(key), "%.*s", (int)len, name);
    if (ambiguous) {
        report(c, shown, "ambiguous option (several start with --%s)", key);
        return;
    }
    for (size_t i = 0; i < NOPTIONS; i++) {
        int dist = gs_schema_edit_distance(key, options[i].name, best);

        if (dist <= best) {
            best = dist;
            hint = options[i].name;
        }
    }
    if (hint != NULL)
        report(c, shown, "unknown option (did you mean --%s?)", hint);
    else
        report(c, shown, "unknown option");
}

/* Before setting d: a member of its group set in this source conflicts; one set in a source
 * of lower precedence is dropped, so that the command line's choice stands alone. */
static bool group_allows(struct ctx *c, const struct opt_def *d, const char *shown)
{
    for (size_t i = 0; d->group != GROUP_NONE && i < NOPTIONS; i++) {
        const struct opt_def *o = &options[i];

        if (o->group != d->group || o->id == d->id || c->sb->set_by[o->id] == GS_SBATCH_UNSET)
            continue;
        if (c->sb->set_by[o->id] == c->source) {
            if (c->set_line[o->id] > 0)
                report(c, shown, "conflicts with --%s (line %d); use only one", o->name,
                       c->set_line[o->id]);
            else
                report(c, shown, "conflicts with --%s; use only one", o->name);
            return false;
        }
        c->sb->set_by[o->id] = GS_SBATCH_UNSET;
        if (o->group == GROUP_MEM)
            *(uint64_t *)(void *)((char *)c->sb + o->field) = 0;
        else
            *(uint32_t *)(void *)((char *)c->sb + o->field) = 0;
    }
    return true;
}

bool gs_sbatch_opt_per_component(enum gs_sbatch_opt id)
{
    switch (id) {
    case GS_SBATCH_OPT_NODES:
    case GS_SBATCH_OPT_NTASKS:
    case GS_SBATCH_OPT_NTASKS_PER_NODE:
    case GS_SBATCH_OPT_NTASKS_PER_GPU:
    case GS_SBATCH_OPT_CPUS_PER_TASK:
    case GS_SBATCH_OPT_CPUS_PER_GPU:
    case GS_SBATCH_OPT_GRES:
    case GS_SBATCH_OPT_GPUS:
    case GS_SBATCH_OPT_GPUS_PER_NODE:
    case GS_SBATCH_OPT_GPUS_PER_TASK:
    case GS_SBATCH_OPT_MEM:
    case GS_SBATCH_OPT_MEM_PER_CPU:
    case GS_SBATCH_OPT_MEM_PER_GPU:
    case GS_SBATCH_OPT_CONSTRAINT:
        return true;
    default:
        return false;
    }
}

/* Why a heterogeneous job cannot have option id (-w, --array); NULL when it can. */
static const char *not_het(int id)
{
    if (id == GS_SBATCH_OPT_NODELIST)
        return "a heterogeneous job takes no node list in gsched (each component gets nodes of "
               "its shape); use --constraint or --exclude";
    if (id == GS_SBATCH_OPT_ARRAY)
        return "a heterogeneous job cannot be a job array";
    return NULL;
}

/* Whether value, given for whole-job option d in a later component, is what component 0
 * has: the same words, or for flags and times the same meaning (-t 60, -t 1:00:00). */
static bool same_as_job(const struct ctx *c, const struct opt_def *d, const char *value)
{
    const char *job_field = (const char *)c->job + d->field;
    uint64_t seconds;

    if (c->job->set_by[d->id] == GS_SBATCH_UNSET || c->job_text[d->id] == NULL)
        return false;
    if (d->set == set_flag)
        return *(const bool *)(const void *)job_field == (d->max != 0);
    if (d->set == set_time && gs_parse_duration(value, &seconds) == 0)
        return seconds == *(const uint64_t *)(const void *)job_field;
    return strcmp(c->job_text[d->id], value != NULL ? value : "") == 0;
}

/* A whole-job option in a later component: scripts repeat -p or -A in each component, so
 * the job's own value again is accepted (and changes nothing); another is an error. */
static void later_component(struct ctx *c, const struct opt_def *d, const char *value,
                            const char *shown)
{
    if (not_het(d->id) != NULL)
        report(c, shown, "%s", not_het(d->id));
    else if (!same_as_job(c, d, value))
        report(c, shown,
               "'--%s' applies to the whole heterogeneous job in gsched: give it before the "
               "first %s",
               d->name, c->source == GS_SBATCH_FROM_CLI ? "':'" : "'hetjob' line");
}

/* Keeps component 0's value of option id as given, for later_component. */
static void remember(struct ctx *c, int id, const char *value)
{
    char *copy = strdup(value != NULL ? value : "");

    if (copy == NULL) {
        c->rc = -ENOMEM;
        return;
    }
    free(c->job_text[id]);
    c->job_text[id] = copy;
}

static void apply(struct ctx *c, const struct opt_def *d, const char *value, const char *shown)
{
    struct gs_error err;
    int rc;

    gs_error_clear(&err);
    if (d->set == NULL) {
        warn(c, shown, "ignored: %s", d->note);
        return;
    }
    if (c->comp > 0 && d->id >= 0 && !gs_sbatch_opt_per_component(d->id)) {
        later_component(c, d, value, shown);
        return;
    }
    if (!group_allows(c, d, shown))
        return;
    rc = d->set(c, d, value, &err);
    if (rc == -ENOMEM) {
        c->rc = rc;
        return;
    }
    if (rc < 0) {
        report(c, shown, "%s", err.msg[0] != '\0' ? err.msg : gs_strerror(rc));
        return;
    }
    if (d->id >= 0) {
        c->sb->set_by[d->id] = c->source;
        c->set_line[d->id] = c->line;
    }
    if (d->id >= 0 && c->comp == 0)
        remember(c, d->id, value);
}

/* How the user wrote an option and its value, for messages: "-N 2", "--nodes=x". */
static void shown_form(char *out, size_t size, const char *word, const char *next)
{
    if (next != NULL)
        snprintf(out, size, "%s %s", word, next);
    else
        snprintf(out, size, "%s", word);
}

/* One "--name[=value]" word; returns how many following words it used as its value. */
static int long_option(struct ctx *c, const char *word, const char *next)
{
    const char *name = word + 2, *eq = strchr(name, '=');
    size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
    const char *value = eq != NULL ? eq + 1 : NULL;
    bool ambiguous;
    const struct opt_def *d = by_long(name, len, &ambiguous);
    char shown[256];

    shown_form(shown, sizeof(shown), word, NULL);
    if (d == NULL) {
        report_unknown_long(c, shown, name, len, ambiguous);
        return 0;
    }
    if (d->arg == ARG_NONE && value != NULL) {
        report(c, shown, "takes no value");
        return 0;
    }
    if (d->arg == ARG_REQUIRED && value == NULL) {
        if (next == NULL) {
            report(c, shown, "needs a value");
            return 0;
        }
        shown_form(shown, sizeof(shown), word, next);
        apply(c, d, next, shown);
        return 1;
    }
    apply(c, d, value, shown);
    return 0;
}

/* One "-X..." word: clustered flags, then at most one option with its value. */
static int short_options(struct ctx *c, const char *word, const char *next)
{
    char shown[256];

    for (const char *p = word + 1; *p != '\0'; p++) {
        const struct opt_def *d = by_short(*p);

        snprintf(shown, sizeof(shown), "-%c", *p);
        if (d == NULL) {
            const struct opt_def *other =
                by_short((char)(islower((unsigned char)*p) ? toupper((unsigned char)*p)
                                                           : tolower((unsigned char)*p)));
            if (other != NULL)
                report(c, shown, "unknown option (did you mean -%c?)", other->short_name);
            else
                report(c, shown, "unknown option");
            return 0;
        }
        if (d->arg == ARG_NONE) {
            apply(c, d, NULL, shown);
            continue;
        }
        if (p[1] != '\0') {
            snprintf(shown, sizeof(shown), "-%s", p);
            apply(c, d, p + 1, shown);
            return 0;
        }
        if (d->arg == ARG_OPTIONAL) { /* as getopt's "k::": a value only when attached */
            apply(c, d, NULL, shown);
            continue;
        }
        if (next == NULL) {
            report(c, shown, "needs a value");
            return 0;
        }
        snprintf(shown, sizeof(shown), "-%c %s", *p, next);
        apply(c, d, next, shown);
        return 1;
    }
    return 0;
}

static bool is_het_word(const char *w)
{
    return strcmp(w, "hetjob") == 0 || strcmp(w, "packjob") == 0;
}

static void sbatch_release(struct gs_sbatch *sb);

/*
 * A 'hetjob' line or a ':' word: the options after it describe the next component, from
 * the defaults (an empty struct); on the command line, over the script's component of the
 * same index. Past GS_JOBSPEC_HET_MAX components, one error, and the rest are read into a
 * scratch component so that their own problems are still reported.
 */
static void next_component(struct ctx *c)
{
    struct gs_sbatch *grown;

    c->comp++;
    if (c->comp <= c->job->nhet) {
        c->sb = &c->job->het[c->comp - 1];
        return;
    }
    if (c->comp >= GS_JOBSPEC_HET_MAX) {
        if (c->comp == GS_JOBSPEC_HET_MAX)
            report(c, NULL, "a heterogeneous job has at most %d components", GS_JOBSPEC_HET_MAX);
        sbatch_release(&c->overflow);
        c->sb = &c->overflow;
        return;
    }
    grown = realloc(c->job->het, (c->job->nhet + 1) * sizeof(*grown));
    if (grown == NULL) {
        c->rc = -ENOMEM;
        return;
    }
    memset(&grown[c->job->nhet], 0, sizeof(*grown));
    c->job->het = grown;
    c->sb = &grown[c->job->nhet++];
}

static void parse_words(struct ctx *c, char *const *words, int n)
{
    bool ended = false;

    for (int i = 0; i < n && c->rc == 0; i++) {
        const char *w = words[i], *next = i + 1 < n ? words[i + 1] : NULL;

        if (!ended && c->source == GS_SBATCH_FROM_CLI && strcmp(w, "--") == 0)
            ended = true;
        else if (!ended && w[0] == '-' && w[1] == '-' && w[2] != '\0')
            i += long_option(c, w, next);
        else if (!ended && w[0] == '-' && w[1] != '\0')
            i += short_options(c, w, next);
        else if (!ended && c->source == GS_SBATCH_FROM_CLI && strcmp(w, ":") == 0)
            next_component(c);
        else if (c->source != GS_SBATCH_FROM_CLI && is_het_word(w))
            report(c, NULL,
                   "'%s' goes on a line of its own: it ends one component of a heterogeneous "
                   "job, and the lines after it describe the next",
                   w);
        else
            report(c, NULL, "unexpected argument '%s' (not an option)", w);
    }
}

/* ---- the script ---- */

int gs_sbatch_split_words(const char *p, const char *end, char ***ret_words, size_t *ret_n,
                          struct gs_error *err)
{
    char **words = NULL;
    size_t n = 0;
    int rc = 0;

    for (;;) {
        struct gs_buf w = GS_BUF_INIT;
        char quote = 0;

        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end || *p == '#')
            break;
        for (; p < end && (quote != 0 || (*p != ' ' && *p != '\t')) && rc == 0; p++) {
            if (quote != 0 && *p == quote)
                quote = 0;
            else if (quote == 0 && (*p == '"' || *p == '\''))
                quote = *p;
            else
                rc = gs_buf_putc(&w, *p);
        }
        if (rc == 0 && quote != 0)
            rc = gs_error_set(err, -EINVAL, 0, 0, "unterminated %c quote", quote);
        if (rc == 0)
            rc = strv_push(&words, &n, gs_buf_detach(&w, NULL));
        gs_buf_release(&w);
        if (rc < 0)
            goto out;
    }
    *ret_words = words;
    *ret_n = n;
    return 0;
out:
    strv_free(words);
    return rc;
}

static void directive(struct ctx *c, const char *p, const char *end)
{
    struct gs_error err;
    char **words = NULL;
    size_t n = 0;
    int rc;

    gs_error_clear(&err);
    rc = gs_sbatch_split_words(p, end, &words, &n, &err);
    if (rc == -ENOMEM)
        c->rc = rc;
    else if (rc < 0)
        report(c, NULL, "%s", err.msg);
    else if (n == 1 && is_het_word(words[0]))
        next_component(c);
    else
        parse_words(c, words, (int)n);
    strv_free(words);
}

static bool is_directive(const char *line, const char *end)
{
    size_t len = (size_t)(end - line);

    if (len < 7 || (strncmp(line, "#SBATCH", 7) != 0 && strncmp(line, "#GSCHED", 7) != 0))
        return false;
    return len == 7 || line[7] == ' ' || line[7] == '\t';
}

/* sbatch refuses these scripts outright; so do we, rather than run them differently. */
static bool script_shape_ok(struct ctx *c, const char *text, size_t len)
{
    const char *cr = memchr(text, '\r', len);

    c->line = 1;
    if (len < 2 || text[0] != '#' || text[1] != '!')
        report(c, NULL, "the first line must start with #! and the path of an interpreter");
    if (memchr(text, '\0', len) != NULL) {
        c->line = 0;
        report(c, NULL, "the script contains a NUL byte");
        return false;
    }
    if (cr != NULL) {
        c->line = 1;
        for (const char *p = text; p < cr; p++)
            c->line += *p == '\n';
        report(c, NULL, "DOS line breaks (\\r\\n); convert the script with dos2unix");
    }
    c->line = 0;
    return true;
}

static void scan_script(struct ctx *c, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    int ignored = 0, first_ignored = 0, first_command = 0;

    if (!script_shape_ok(c, text, len))
        return;
    for (int line = 1; p < end && c->rc == 0; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *q = p;

        if (eol == NULL)
            eol = end;
        while (q < eol && isspace((unsigned char)*q))
            q++;
        c->line = line;
        if (is_directive(p, eol) && first_command == 0) {
            directive(c, p + 7, eol);
        } else if (is_directive(p, eol)) {
            if (ignored++ == 0)
                first_ignored = line;
        } else if (q < eol && *q != '#' && first_command == 0) {
            first_command = line;
        }
        p = eol + 1;
    }
    c->line = first_ignored;
    if (ignored > 0)
        warn(c, NULL, "%d #SBATCH line%s after the first command (line %d) ignored, as sbatch does",
             ignored, ignored == 1 ? "" : "s", first_command);
    c->line = 0;
}

/* What a heterogeneous job cannot have, reported where component 0 was given it (a later
 * component's was reported at its line). */
static void check_het(struct ctx *c)
{
    static const enum gs_sbatch_opt refused[] = {GS_SBATCH_OPT_NODELIST, GS_SBATCH_OPT_ARRAY};

    for (size_t i = 0; c->job->nhet > 0 && i < sizeof(refused) / sizeof(refused[0]); i++) {
        enum gs_sbatch_opt id = refused[i];

        if (c->job->set_by[id] == GS_SBATCH_UNSET)
            continue;
        c->source = c->job->set_by[id];
        c->line = c->set_line[id];
        report(c, id == GS_SBATCH_OPT_NODELIST ? "--nodelist" : "--array", "%s", not_het(id));
    }
}

/* Checks that need both sources: the script or --wrap, and limits against each other. */
static void check_whole(struct ctx *c, bool have_script)
{
    struct gs_sbatch *sb = c->job;
    char a[32], b[32];

    check_het(c);

    c->source = GS_SBATCH_FROM_CLI;
    c->line = 0;
    if (sb->wrap != NULL && have_script)
        report(c, "--wrap", "cannot be combined with a batch script");
    if (sb->wrap == NULL && !have_script)
        report(c, NULL, "no batch script and no --wrap");
    if (sb->set_by[GS_SBATCH_OPT_TIME] == GS_SBATCH_UNSET ||
        sb->set_by[GS_SBATCH_OPT_TIME_MIN] == GS_SBATCH_UNSET || sb->time_min_s <= sb->time_limit_s)
        return;
    c->source = sb->set_by[GS_SBATCH_OPT_TIME_MIN];
    c->line = c->set_line[GS_SBATCH_OPT_TIME_MIN];
    report(c, "--time-min", "%s is longer than --time %s",
           gs_format_duration(sb->time_min_s, a, sizeof(a)),
           gs_format_duration(sb->time_limit_s, b, sizeof(b)));
}

/* Frees what sb owns, its components too, leaving it empty. */
static void sbatch_release(struct gs_sbatch *sb)
{
    free(sb->script_name);
    free(sb->wrap);
    free(sb->job_name);
    free(sb->gpu_bind);
    free(sb->distribution);
    free(sb->mem_bind);
    free(sb->partition);
    free(sb->account);
    free(sb->qos);
    free(sb->constraint);
    free(sb->reservation);
    free(sb->licenses);
    free(sb->gres_flags);
    free(sb->comment);
    free(sb->wckey);
    free(sb->prefer);
    free(sb->clusters);
    free(sb->mail_user);
    free(sb->nodelist);
    gs_hostlist_free(sb->nodelist_names);
    free(sb->exclude);
    gs_hostlist_free(sb->exclude_names);
    free(sb->output);
    free(sb->error);
    free(sb->input);
    free(sb->chdir);
    gs_sbatch_array_release(&sb->array);
    gs_sbatch_deps_release(&sb->deps);
    gs_sbatch_export_release(&sb->export_env);
    for (size_t k = 0; k < sb->nhet; k++)
        sbatch_release(&sb->het[k]);
    free(sb->het);
    memset(sb, 0, sizeof(*sb));
}

void gs_sbatch_free(struct gs_sbatch *sb)
{
    if (sb == NULL)
        return;
    sbatch_release(sb);
    free(sb);
}

int gs_sbatch_parse(const char *script_text, size_t len, const char *script_name, int argc,
                    char *const *argv, struct gs_sbatch **ret, struct gs_buf *errors,
                    struct gs_buf *warnings)
{
    struct ctx c = {0};
    int rc;

    c.job = calloc(1, sizeof(*c.job));
    if (c.job == NULL)
        return -ENOMEM;
    c.sb = c.job;
    c.file = script_name != NULL ? script_name : "script";
    c.errors = errors;
    c.warnings = warnings;
    if (script_text != NULL) {
        c.source = GS_SBATCH_FROM_SCRIPT;
        scan_script(&c, script_text, len);
        c.job->script_name = strdup(c.file);
        if (c.job->script_name == NULL)
            c.rc = -ENOMEM;
    }
    /* The command line's components start again at 0, over the script's. */
    c.source = GS_SBATCH_FROM_CLI;
    c.line = 0;
    c.comp = 0;
    c.sb = c.job;
    if (c.rc == 0)
        parse_words(&c, argv, argc);
    if (c.rc == 0)
        check_whole(&c, script_text != NULL);
    rc = c.rc != 0 ? c.rc : c.nerrors > 0 ? -EINVAL : 0;
    if (rc < 0)
        goto out;
    *ret = c.job;
    c.job = NULL;
out:
    gs_sbatch_free(c.job);
    for (size_t i = 0; i < GS_SBATCH_OPT_COUNT; i++)
        free(c.job_text[i]);
    sbatch_release(&c.overflow);
    return rc;
}

int gs_sbatch_script_index(int argc, char *const *argv)
{
    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        const struct opt_def *d;
        bool ambiguous;

        if (strcmp(w, "--") == 0)
            return i + 1;
        if (w[0] != '-' || w[1] == '\0')
            return i;
        if (w[1] == '-') {
            d = by_long(w + 2, strcspn(w + 2, "="), &ambiguous);
            if (d != NULL && d->arg == ARG_REQUIRED && strchr(w, '=') == NULL)
                i++;
            continue;
        }
        for (const char *p = w + 1; *p != '\0'; p++) {
            d = by_short(*p);
            if (d != NULL && d->arg != ARG_NONE) {
                i += p[1] == '\0';
                break;
            }
        }
    }
    return argc;
}

/* ---- --test-only output ---- */

/* Appends "key=value\n" unless an earlier append failed; returns the sticky status. */
__attribute__((format(printf, 4, 5))) static int kv(struct gs_buf *out, int rc, const char *key,
                                                    const char *fmt, ...)
{
    va_list ap;

    if (rc < 0)
        return rc;
    rc = gs_buf_printf(out, "%s=", key);
    va_start(ap, fmt);
    if (rc == 0)
        rc = gs_buf_vprintf(out, fmt, ap);
    va_end(ap);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

static bool is_set(const struct gs_sbatch *sb, enum gs_sbatch_opt id)
{
    return sb->set_by[id] != GS_SBATCH_UNSET;
}

static int kv_gpus(struct gs_buf *out, int rc, const char *key, const struct gs_sbatch_gpus *g,
                   const char *prefix)
{
    return kv(out, rc, key, "%s%s%s%u", prefix, g->type, g->type[0] != '\0' ? ":" : "", g->count);
}

static int kv_size(struct gs_buf *out, int rc, const char *key, uint64_t mib)
{
    char text[32];

    return kv(out, rc, key, "%s", gs_format_size(mib * GS_MIB, text, sizeof(text)));
}

static int kv_time(struct gs_buf *out, int rc, const char *key, uint64_t seconds)
{
    char text[32];

    return kv(out, rc, key, "%s", gs_format_duration(seconds, text, sizeof(text)));
}

int gs_sbatch_runs_text(struct gs_buf *out, const uint32_t *ids, size_t n)
{
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;

        while (j + 1 < n && ids[j + 1] == ids[j] + 1)
            j++;
        rc = gs_buf_printf(out, "%s%u", i > 0 ? "," : "", ids[i]);
        if (rc == 0 && j > i)
            rc = gs_buf_printf(out, "-%u", ids[j]);
        i = j + 1;
    }
    return rc;
}

/* The ids as runs: "0-3,7,9-11". */
static int kv_array(struct gs_buf *out, int rc, const struct gs_sbatch_array *a)
{
    if (rc == 0)
        rc = gs_buf_append_str(out, "array=");
    if (rc == 0)
        rc = gs_sbatch_runs_text(out, a->ids, a->n);
    if (rc == 0)
        rc = gs_buf_putc(out, '\n');
    rc = kv(out, rc, "array_tasks", "%zu", a->n);
    if (a->throttle > 0)
        rc = kv(out, rc, "array_throttle", "%u", a->throttle);
    return rc;
}

static int kv_deps(struct gs_buf *out, int rc, const struct gs_sbatch_deps *d)
{
    char text[GS_DEP_TEXT_SIZE];

    if (rc == 0)
        rc = gs_buf_append_str(out, "dependency=");
    for (size_t i = 0; i < d->n && rc == 0; i++) {
        const struct gs_sbatch_dep_term *t = &d->terms[i];
        const char *sep = i == 0 ? "" : d->op == GS_SBATCH_DEP_ANY ? "?" : ",";

        if (t->singleton)
            rc = gs_buf_printf(out, "%ssingleton", sep);
        else
            rc = gs_buf_printf(out, "%s%s", sep, gs_dep_format(&t->dep, text));
    }
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

static int kv_signal(struct gs_buf *out, int rc, const struct gs_sbatch_signal *s)
{
    const char *name = gs_signal_name(s->signo);
    char num[16];

    snprintf(num, sizeof(num), "%d", s->signo);
    return kv(out, rc, "signal", "%s%s%s%s@%u", s->batch_only ? "B" : "",
              s->reservation_overlap ? "R" : "", s->batch_only || s->reservation_overlap ? ":" : "",
              name != NULL ? name : num, s->seconds);
}

static int kv_export(struct gs_buf *out, int rc, const struct gs_sbatch_export *e)
{
    rc = kv(out, rc, "export", "%s", e->mode == GS_SBATCH_EXPORT_ALL ? "ALL" : "NONE");
    for (size_t i = 0; i < e->n; i++)
        rc = kv(out, rc, "export_var", "%s", e->vars[i]);
    return rc;
}

static int kv_resources(const struct gs_sbatch *sb, struct gs_buf *out, int rc)
{
    if (is_set(sb, GS_SBATCH_OPT_NODES) && sb->nodes_min == sb->nodes_max)
        rc = kv(out, rc, "nodes", "%u", sb->nodes_min);
    else if (is_set(sb, GS_SBATCH_OPT_NODES))
        rc = kv(out, rc, "nodes", "%u-%u", sb->nodes_min, sb->nodes_max);
    if (is_set(sb, GS_SBATCH_OPT_NTASKS))
        rc = kv(out, rc, "ntasks", "%u", sb->ntasks);
    if (is_set(sb, GS_SBATCH_OPT_NTASKS_PER_NODE))
        rc = kv(out, rc, "ntasks_per_node", "%u", sb->ntasks_per_node);
    if (is_set(sb, GS_SBATCH_OPT_NTASKS_PER_GPU))
        rc = kv(out, rc, "ntasks_per_gpu", "%u", sb->ntasks_per_gpu);
    if (is_set(sb, GS_SBATCH_OPT_CPUS_PER_TASK))
        rc = kv(out, rc, "cpus_per_task", "%u", sb->cpus_per_task);
    if (is_set(sb, GS_SBATCH_OPT_CPUS_PER_GPU))
        rc = kv(out, rc, "cpus_per_gpu", "%u", sb->cpus_per_gpu);
    if (is_set(sb, GS_SBATCH_OPT_GRES))
        rc = kv_gpus(out, rc, "gres", &sb->gres, "gpu:");
    if (is_set(sb, GS_SBATCH_OPT_GPUS))
        rc = kv_gpus(out, rc, "gpus", &sb->gpus, "");
    if (is_set(sb, GS_SBATCH_OPT_GPUS_PER_NODE))
        rc = kv_gpus(out, rc, "gpus_per_node", &sb->gpus_per_node, "");
    if (is_set(sb, GS_SBATCH_OPT_GPUS_PER_TASK))
        rc = kv_gpus(out, rc, "gpus_per_task", &sb->gpus_per_task, "");
    if (is_set(sb, GS_SBATCH_OPT_MEM) && sb->mem_mib == 0)
        rc = kv(out, rc, "mem", "all");
    else if (is_set(sb, GS_SBATCH_OPT_MEM))
        rc = kv_size(out, rc, "mem", sb->mem_mib);
    if (is_set(sb, GS_SBATCH_OPT_TMP))
        rc = kv_size(out, rc, "tmp", sb->tmp_mib);
    if (is_set(sb, GS_SBATCH_OPT_MEM_PER_CPU))
        rc = kv_size(out, rc, "mem_per_cpu", sb->mem_per_cpu_mib);
    if (is_set(sb, GS_SBATCH_OPT_MEM_PER_GPU))
        rc = kv_size(out, rc, "mem_per_gpu", sb->mem_per_gpu_mib);
    if (is_set(sb, GS_SBATCH_OPT_TIME))
        rc = kv_time(out, rc, "time_limit", sb->time_limit_s);
    if (is_set(sb, GS_SBATCH_OPT_TIME_MIN))
        rc = kv_time(out, rc, "time_min", sb->time_min_s);
    if (is_set(sb, GS_SBATCH_OPT_EXCLUSIVE))
        rc = kv(out, rc, "exclusive", "yes");
    if (is_set(sb, GS_SBATCH_OPT_MINCPUS))
        rc = kv(out, rc, "mincpus", "%u", sb->mincpus);
    if (is_set(sb, GS_SBATCH_OPT_OVERCOMMIT))
        rc = kv(out, rc, "overcommit", "yes");
    return rc;
}

/* The string options, in the order kv lines print them. */
static const struct {
    const char *key;
    enum gs_sbatch_opt id;
    size_t field;
} kv_strings[] = {
    {"gpu_bind", GS_SBATCH_OPT_GPU_BIND, FIELD(gpu_bind)},
    {"distribution", GS_SBATCH_OPT_DISTRIBUTION, FIELD(distribution)},
    {"mem_bind", GS_SBATCH_OPT_MEM_BIND, FIELD(mem_bind)},
    {"partition", GS_SBATCH_OPT_PARTITION, FIELD(partition)},
    {"account", GS_SBATCH_OPT_ACCOUNT, FIELD(account)},
    {"qos", GS_SBATCH_OPT_QOS, FIELD(qos)},
    {"constraint", GS_SBATCH_OPT_CONSTRAINT, FIELD(constraint)},
    {"reservation", GS_SBATCH_OPT_RESERVATION, FIELD(reservation)},
    {"licenses", GS_SBATCH_OPT_LICENSES, FIELD(licenses)},
    {"gres_flags", GS_SBATCH_OPT_GRES_FLAGS, FIELD(gres_flags)},
    {"comment", GS_SBATCH_OPT_COMMENT, FIELD(comment)},
    {"wckey", GS_SBATCH_OPT_WCKEY, FIELD(wckey)},
    {"prefer", GS_SBATCH_OPT_PREFER, FIELD(prefer)},
    {"clusters", GS_SBATCH_OPT_CLUSTERS, FIELD(clusters)},
    {"nodelist", GS_SBATCH_OPT_NODELIST, FIELD(nodelist)},
    {"exclude", GS_SBATCH_OPT_EXCLUDE, FIELD(exclude)},
    {"output", GS_SBATCH_OPT_OUTPUT, FIELD(output)},
    {"error", GS_SBATCH_OPT_ERROR, FIELD(error)},
    {"input", GS_SBATCH_OPT_INPUT, FIELD(input)},
    {"chdir", GS_SBATCH_OPT_CHDIR, FIELD(chdir)},
};

static int kv_job(const struct gs_sbatch *sb, struct gs_buf *out, int rc)
{
    for (size_t i = 0; i < sizeof(kv_strings) / sizeof(kv_strings[0]); i++) {
        const char *value = *(char *const *)(const void *)((const char *)sb + kv_strings[i].field);

        if (is_set(sb, kv_strings[i].id))
            rc = kv(out, rc, kv_strings[i].key, "%s", value);
    }
    if (is_set(sb, GS_SBATCH_OPT_ARRAY))
        rc = kv_array(out, rc, &sb->array);
    if (is_set(sb, GS_SBATCH_OPT_DEPENDENCY))
        rc = kv_deps(out, rc, &sb->deps);
    if (is_set(sb, GS_SBATCH_OPT_REQUEUE))
        rc = kv(out, rc, "requeue", "%s", sb->requeue ? "yes" : "no");
    if (is_set(sb, GS_SBATCH_OPT_SIGNAL))
        rc = kv_signal(out, rc, &sb->signal);
    if (is_set(sb, GS_SBATCH_OPT_EXPORT))
        rc = kv_export(out, rc, &sb->export_env);
    if (is_set(sb, GS_SBATCH_OPT_HOLD))
        rc = kv(out, rc, "hold", "yes");
    if (is_set(sb, GS_SBATCH_OPT_NICE))
        rc = kv(out, rc, "nice", "%d", sb->nice);
    if (is_set(sb, GS_SBATCH_OPT_PRIORITY))
        rc = kv(out, rc, "priority", "%d", sb->priority);
    if (is_set(sb, GS_SBATCH_OPT_WAIT))
        rc = kv(out, rc, "wait", "yes");
    if (is_set(sb, GS_SBATCH_OPT_BEGIN))
        rc = kv(out, rc, "begin_ms", "%llu", (unsigned long long)sb->begin_ms);
    if (is_set(sb, GS_SBATCH_OPT_DEADLINE))
        rc = kv(out, rc, "deadline_ms", "%llu", (unsigned long long)sb->deadline_ms);
    if (is_set(sb, GS_SBATCH_OPT_SWITCHES) && sb->switches.wait_set)
        rc = kv(out, rc, "switches", "%u@%us", sb->switches.count, sb->switches.wait_s);
    else if (is_set(sb, GS_SBATCH_OPT_SWITCHES))
        rc = kv(out, rc, "switches", "%u", sb->switches.count);
    return rc;
}

/* Component k's options, as kv_resources and kv_job write them, as "hetK.key=value". */
static int kv_component(const struct gs_sbatch *comp, size_t k, struct gs_buf *out)
{
    struct gs_buf lines = GS_BUF_INIT;
    int rc = kv_job(comp, &lines, kv_resources(comp, &lines, 0));

    for (const char *p = lines.data; rc == 0 && p != NULL && *p != '\0';) {
        int n = (int)strcspn(p, "\n");

        rc = gs_buf_printf(out, "het%zu.%.*s\n", k, n, p);
        p += n + (p[n] == '\n');
    }
    gs_buf_release(&lines);
    return rc;
}

int gs_sbatch_to_kv(const struct gs_sbatch *sb, struct gs_buf *out)
{
    int rc = 0;

    if (sb->wrap != NULL)
        rc = kv(out, rc, "wrap", "%s", sb->wrap);
    else
        rc = kv(out, rc, "script", "%s", sb->script_name);
    if (is_set(sb, GS_SBATCH_OPT_JOB_NAME))
        rc = kv(out, rc, "job_name", "%s", sb->job_name);
    rc = kv_job(sb, out, kv_resources(sb, out, rc));
    if (sb->nhet > 0)
        rc = kv(out, rc, "het_size", "%zu", sb->nhet + 1);
    for (size_t k = 0; k < sb->nhet && rc == 0; k++)
        rc = kv_component(&sb->het[k], k + 1, out);
    return rc;
}
