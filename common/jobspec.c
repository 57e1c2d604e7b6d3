/*
 * jobspec.c: struct gs_jobspec and the job-file reader.
 *
 * The reader walks the TOML tree against a table of known keys per section. Each key has a
 * reader that checks the value's type and range and stores it; anything else is reported
 * where it stands, so one pass yields every problem in the file. Checks that involve
 * several keys (command vs script, cpus_per_gpu without GPUs) run after the walk.
 */
#include "common/jobspec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/toml.h"
#include "common/units.h"

#define MAX_REPORTED 20

struct ctx {
    struct gs_jobspec *spec;
    struct gs_buf *errors;
    const char *filename;
    int nerrors;
    int enomem;
};

static void report(struct ctx *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report(struct ctx *c, int line, int col, const char *fmt, ...)
{
    va_list ap;

    c->nerrors++;
    if (c->nerrors > MAX_REPORTED)
        return;
    if (gs_buf_printf(c->errors, "%s:%d:%d: ", c->filename, line, col) < 0)
        c->enomem = 1;
    va_start(ap, fmt);
    if (gs_buf_vprintf(c->errors, fmt, ap) < 0)
        c->enomem = 1;
    va_end(ap);
    if (gs_buf_putc(c->errors, '\n') < 0)
        c->enomem = 1;
}

#define REPORT_AT(c, v, ...) report((c), gs_toml_line(v), gs_toml_col(v), __VA_ARGS__)

static const char *type_of(const struct gs_toml_value *v)
{
    return gs_toml_type_name(gs_toml_type(v));
}

static char *dup_or_flag(struct ctx *c, const char *s)
{
    char *d = strdup(s);

    if (d == NULL)
        c->enomem = 1;
    return d;
}

/* ---- typed readers shared by the keys ---- */

static int read_string(struct ctx *c, const struct gs_toml_value *v, const char *path, char **out)
{
    const char *s;
    size_t len;

    if (gs_toml_as_string(v, &s, &len) < 0) {
        REPORT_AT(c, v, "%s must be a string, not %s", path, type_of(v));
        return -EINVAL;
    }
    if (strlen(s) != len) {
        REPORT_AT(c, v, "%s must not contain a NUL character", path);
        return -EINVAL;
    }
    free(*out);
    *out = dup_or_flag(c, s);
    return 0;
}

static int read_uint(struct ctx *c, const struct gs_toml_value *v, const char *path, int64_t min,
                     int64_t max, uint32_t *out)
{
    int64_t n;

    if (gs_toml_as_int(v, &n) < 0 || n < min || n > max) {
        if (min == 1 && gs_toml_type(v) == GS_TOML_INTEGER && n < 1)
            REPORT_AT(c, v, "%s must be a positive integer", path);
        else
            REPORT_AT(c, v, "%s must be an integer from %lld to %lld", path, (long long)min,
                      (long long)max);
        return -EINVAL;
    }
    *out = (uint32_t)n;
    return 0;
}

static int read_bool(struct ctx *c, const struct gs_toml_value *v, const char *path, bool *out)
{
    if (gs_toml_as_bool(v, out) < 0) {
        REPORT_AT(c, v, "%s must be true or false, not %s", path, type_of(v));
        return -EINVAL;
    }
    return 0;
}

/* A list of strings, or one string standing for a list of one. */
static int read_string_list(struct ctx *c, const struct gs_toml_value *v, const char *path,
                            const struct gs_toml_value ***ret_items, size_t *ret_n)
{
    size_t n = gs_toml_type(v) == GS_TOML_ARRAY ? gs_toml_count(v) : 1;
    const struct gs_toml_value **items;

    if (gs_toml_type(v) != GS_TOML_ARRAY && gs_toml_type(v) != GS_TOML_STRING) {
        REPORT_AT(c, v, "%s must be an array of strings, not %s", path, type_of(v));
        return -EINVAL;
    }
    items = calloc(n > 0 ? n : 1, sizeof(*items));
    if (items == NULL) {
        c->enomem = 1;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        items[i] = gs_toml_type(v) == GS_TOML_ARRAY ? gs_toml_at(v, i) : v;
        if (gs_toml_type(items[i]) != GS_TOML_STRING) {
            REPORT_AT(c, items[i], "%s[%zu] must be a string, not %s", path, i, type_of(items[i]));
            free(items);
            return -EINVAL;
        }
    }
    *ret_items = items;
    *ret_n = n;
    return 0;
}

/* ---- the keys of each section ---- */

struct key_def {
    const char *key;
    void (*read)(struct ctx *c, const struct gs_toml_value *v);
};

static void read_section(struct ctx *c, const struct gs_toml_value *table, const char *section,
                         const struct key_def *keys);

static void rd_name(struct ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (read_string(c, v, "name", &name) < 0)
        return;
    if (name != NULL && (name[0] == '\0' || strlen(name) > GS_JOBSPEC_NAME_MAX ||
                         strpbrk(name, "\n\r\t/") != NULL)) {
        REPORT_AT(c, v, "name must be 1 to %d characters without '/', tabs or newlines",
                  GS_JOBSPEC_NAME_MAX);
        free(name);
        return;
    }
    free(c->spec->name);
    c->spec->name = name;
}

static void rd_priority(struct ctx *c, const struct gs_toml_value *v)
{
    int64_t n;

    if (gs_toml_as_int(v, &n) < 0 || n < -GS_JOBSPEC_PRIORITY_MAX || n > GS_JOBSPEC_PRIORITY_MAX) {
        REPORT_AT(c, v, "priority must be an integer from %d to %d", -GS_JOBSPEC_PRIORITY_MAX,
                  GS_JOBSPEC_PRIORITY_MAX);
        return;
    }
    c->spec->priority = (int32_t)n;
}

static void rd_hold(struct ctx *c, const struct gs_toml_value *v)
{
    read_bool(c, v, "hold", &c->spec->hold);
}

static void rd_depends_on(struct ctx *c, const struct gs_toml_value *v)
{
    const struct gs_toml_value **items = NULL;
    size_t n = 0;

    if (read_string_list(c, v, "depends_on", &items, &n) < 0)
        return;
    free(c->spec->deps);
    c->spec->ndeps = 0;
    c->spec->deps = calloc(n > 0 ? n : 1, sizeof(*c->spec->deps));
    if (c->spec->deps == NULL) {
        c->enomem = 1;
        free(items);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = NULL;

        gs_toml_as_string(items[i], &s, NULL);
        if (gs_dep_parse(s, &c->spec->deps[c->spec->ndeps]) < 0)
            REPORT_AT(c, items[i],
                      "depends_on: cannot read '%s' (write TYPE:JOBID, TYPE one of after, "
                      "afterok, afternotok, afterany)",
                      s);
        else
            c->spec->ndeps++;
    }
    free(items);
}

static void rd_nodes(struct ctx *c, const struct gs_toml_value *v)
{
    read_uint(c, v, "resources.nodes", 1, 100000, &c->spec->nodes);
}

static void rd_gpus_per_node(struct ctx *c, const struct gs_toml_value *v)
{
    read_uint(c, v, "resources.gpus_per_node", 0, 1024, &c->spec->gpus_per_node);
}

static void rd_cpus_per_gpu(struct ctx *c, const struct gs_toml_value *v)
{
    read_uint(c, v, "resources.cpus_per_gpu", 1, 4096, &c->spec->cpus_per_gpu);
}

static void rd_cpus_per_task(struct ctx *c, const struct gs_toml_value *v)
{
    read_uint(c, v, "resources.cpus_per_task", 1, 4096, &c->spec->cpus_per_task);
}

static void rd_mem_per_node(struct ctx *c, const struct gs_toml_value *v)
{
    uint64_t bytes;
    int64_t mib;
    const char *s;

    if (gs_toml_as_int(v, &mib) == 0 && mib >= 0) {
        c->spec->mem_per_node_mib = (uint64_t)mib;
        return;
    }
    if (gs_toml_as_string(v, &s, NULL) == 0 && gs_parse_size(s, GS_MIB, &bytes) == 0) {
        c->spec->mem_per_node_mib = (bytes + GS_MIB - 1) / GS_MIB;
        return;
    }
    REPORT_AT(c, v,
              "resources.mem_per_node must be a size such as \"64G\" or \"512MiB\" (or "
              "an integer number of MiB)");
}

static void rd_time_limit(struct ctx *c, const struct gs_toml_value *v)
{
    int64_t minutes;
    const char *s;

    if (gs_toml_as_int(v, &minutes) == 0 && minutes > 0 && minutes < INT64_MAX / 60) {
        c->spec->time_limit_s = (uint64_t)minutes * 60;
        return;
    }
    if (gs_toml_as_string(v, &s, NULL) == 0 && gs_parse_duration(s, &c->spec->time_limit_s) == 0 &&
        c->spec->time_limit_s > 0)
        return;
    REPORT_AT(c, v,
              "resources.time_limit must be a duration such as \"02:00:00\", "
              "\"2-12:00:00\", \"90m\" or \"unlimited\" (an integer means minutes)");
}

static void rd_exclusive(struct ctx *c, const struct gs_toml_value *v)
{
    read_bool(c, v, "resources.exclusive", &c->spec->exclusive);
}

static void rd_constraint(struct ctx *c, const struct gs_toml_value *v)
{
    read_string(c, v, "resources.constraint", &c->spec->constraint);
}

static const struct key_def resources_keys[] = {
    {"nodes", rd_nodes},
    {"gpus_per_node", rd_gpus_per_node},
    {"cpus_per_gpu", rd_cpus_per_gpu},
    {"cpus_per_task", rd_cpus_per_task},
    {"mem_per_node", rd_mem_per_node},
    {"time_limit", rd_time_limit},
    {"exclusive", rd_exclusive},
    {"constraint", rd_constraint},
    {NULL, NULL},
};

static void free_strv(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

static void rd_command(struct ctx *c, const struct gs_toml_value *v)
{
    const struct gs_toml_value **items = NULL;
    size_t n = 0;
    char **argv;

    if (read_string_list(c, v, "run.command", &items, &n) < 0)
        return;
    if (n == 0 || gs_toml_type(v) != GS_TOML_ARRAY) {
        REPORT_AT(c, v,
                  "run.command must be a non-empty array of strings, e.g. "
                  "[\"python3\", \"train.py\"]");
        free(items);
        return;
    }
    argv = calloc(n + 1, sizeof(*argv));
    if (argv == NULL)
        c->enomem = 1;
    for (size_t i = 0; argv != NULL && i < n; i++) {
        const char *s = NULL;

        gs_toml_as_string(items[i], &s, NULL);
        argv[i] = dup_or_flag(c, s);
    }
    free(items);
    free_strv(c->spec->argv);
    c->spec->argv = argv;
    c->spec->argc = argv != NULL ? n : 0;
    if (argv != NULL && argv[0] != NULL && argv[0][0] == '\0')
        REPORT_AT(c, v, "run.command[0] must name a program");
}

static void rd_script(struct ctx *c, const struct gs_toml_value *v)
{
    if (read_string(c, v, "run.script", &c->spec->script) == 0 && c->spec->script != NULL &&
        strspn(c->spec->script, " \t\r\n") == strlen(c->spec->script))
        REPORT_AT(c, v, "run.script is empty");
}

static void rd_tasks_per_node(struct ctx *c, const struct gs_toml_value *v)
{
    const char *s;

    if (gs_toml_as_string(v, &s, NULL) == 0) {
        if (strcmp(s, "per-gpu") == 0) {
            c->spec->tasks_per_gpu = true;
            return;
        }
        REPORT_AT(c, v, "run.tasks_per_node must be a positive integer or \"per-gpu\"");
        return;
    }
    if (read_uint(c, v, "run.tasks_per_node", 1, 4096, &c->spec->tasks_per_node) == 0)
        c->spec->tasks_per_gpu = false;
}

static void rd_workdir(struct ctx *c, const struct gs_toml_value *v)
{
    read_string(c, v, "run.workdir", &c->spec->workdir);
}

/* Output patterns take %j %t %n %x %u and %%; anything else is a typo worth catching. */
static void read_pattern(struct ctx *c, const struct gs_toml_value *v, const char *path, char **out)
{
    if (read_string(c, v, path, out) < 0 || *out == NULL)
        return;
    for (const char *p = *out; *p != '\0'; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == '\0' || strchr("jtnxu%", *p) == NULL) {
            REPORT_AT(c, v,
                      "%s: unknown placeholder '%%%.1s' (use %%j job id, %%t task rank, "
                      "%%n node, %%x job name, %%u user, %%%% for %%)",
                      path, p);
            return;
        }
    }
}

static void rd_stdout(struct ctx *c, const struct gs_toml_value *v)
{
    read_pattern(c, v, "run.stdout", &c->spec->stdout_pattern);
}

static void rd_stderr(struct ctx *c, const struct gs_toml_value *v)
{
    read_pattern(c, v, "run.stderr", &c->spec->stderr_pattern);
}

static bool is_env_name(const char *s, size_t len)
{
    if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9')))
            return false;
    }
    return true;
}

static void rd_env(struct ctx *c, const struct gs_toml_value *v)
{
    size_t n = gs_toml_count(v), k = 0;
    char **env;

    if (gs_toml_type(v) != GS_TOML_TABLE) {
        REPORT_AT(c, v, "run.env must be a table of strings, e.g. { NCCL_DEBUG = \"WARN\" }");
        return;
    }
    env = calloc(n + 1, sizeof(*env));
    if (env == NULL) {
        c->enomem = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        size_t klen;
        const char *key = gs_toml_key_at(v, i, &klen), *val;
        struct gs_buf kv = GS_BUF_INIT;

        if (!is_env_name(key, klen)) {
            report(c, gs_toml_key_line(v, i), gs_toml_key_col(v, i),
                   "run.env: '%s' is not a valid environment variable name", key);
            continue;
        }
        if (gs_toml_as_string(gs_toml_at(v, i), &val, NULL) < 0) {
            REPORT_AT(c, gs_toml_at(v, i), "run.env.%s must be a string, not %s", key,
                      type_of(gs_toml_at(v, i)));
            continue;
        }
        if (gs_buf_printf(&kv, "%s=%s", key, val) < 0)
            c->enomem = 1;
        env[k++] = gs_buf_detach(&kv, NULL);
    }
    free_strv(c->spec->env);
    c->spec->env = env;
    c->spec->nenv = k;
}

static const struct key_def run_keys[] = {
    {"command", rd_command}, {"script", rd_script}, {"tasks_per_node", rd_tasks_per_node},
    {"workdir", rd_workdir}, {"stdout", rd_stdout}, {"stderr", rd_stderr},
    {"env", rd_env},         {NULL, NULL},
};

static void rd_max_restarts(struct ctx *c, const struct gs_toml_value *v)
{
    read_uint(c, v, "restart.max_restarts", 0, 1000, &c->spec->max_restarts);
}

static const struct key_def restart_keys[] = {
    {"max_restarts", rd_max_restarts},
    {NULL, NULL},
};

static void rd_resources(struct ctx *c, const struct gs_toml_value *v)
{
    read_section(c, v, "resources", resources_keys);
}

static void rd_run(struct ctx *c, const struct gs_toml_value *v)
{
    read_section(c, v, "run", run_keys);
}

static void rd_restart(struct ctx *c, const struct gs_toml_value *v)
{
    read_section(c, v, "restart", restart_keys);
}

static const struct key_def root_keys[] = {
    {"name", rd_name},           {"priority", rd_priority},
    {"hold", rd_hold},           {"depends_on", rd_depends_on},
    {"resources", rd_resources}, {"run", rd_run},
    {"restart", rd_restart},     {NULL, NULL},
};

/* Every section, to suggest "resources.gpus_per_node" for a key put in the wrong one. */
static const struct {
    const char *name;
    const struct key_def *keys;
} sections[] = {
    {"", root_keys},
    {"resources", resources_keys},
    {"run", run_keys},
    {"restart", restart_keys},
};

/* ---- unknown keys and suggestions ---- */

/* Optimal string alignment distance (Levenshtein plus adjacent swaps), capped at 9. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int d[32][32];

    if (la >= 32 || lb >= 32)
        return 9;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1], best = d[i - 1][j - 1] + cost;

            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb] > 9 ? 9 : d[la][lb];
}

/* The closest known key: in this section, or the same name in another section. */
static void suggest(const char *key, const char *section, char *out, size_t size)
{
    int best = strlen(key) <= 4 ? 1 : 2;

    out[0] = '\0';
    for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
        bool here = strcmp(sections[s].name, section) == 0;

        for (const struct key_def *k = sections[s].keys; k->key != NULL; k++) {
            int dist = edit_distance(key, k->key);

            if (here && dist <= best && dist > 0) {
                best = dist;
                snprintf(out, size, "%s%s%s", section, section[0] ? "." : "", k->key);
            } else if (!here && dist == 0) {
                snprintf(out, size, "%s%s%s", sections[s].name, sections[s].name[0] ? "." : "",
                         k->key);
                return;
            }
        }
    }
}

static void report_unknown(struct ctx *c, const struct gs_toml_value *table, size_t i,
                           const char *section)
{
    const char *key = gs_toml_key_at(table, i, NULL);
    char hint[96];

    suggest(key, section, hint, sizeof(hint));
    if (hint[0] != '\0')
        report(c, gs_toml_key_line(table, i), gs_toml_key_col(table, i),
               "unknown key '%s'%s%s (did you mean '%s'?)", key, section[0] ? " in " : "", section,
               hint);
    else
        report(c, gs_toml_key_line(table, i), gs_toml_key_col(table, i), "unknown key '%s'%s%s",
               key, section[0] ? " in " : "", section);
}

static void read_section(struct ctx *c, const struct gs_toml_value *table, const char *section,
                         const struct key_def *keys)
{
    if (gs_toml_type(table) != GS_TOML_TABLE) {
        REPORT_AT(c, table, "%s must be a table ([%s]), not %s", section, section, type_of(table));
        return;
    }
    for (size_t i = 0; i < gs_toml_count(table); i++) {
        size_t klen;
        const char *key = gs_toml_key_at(table, i, &klen);
        const struct key_def *k = keys;

        while (k->key != NULL && (strlen(k->key) != klen || strcmp(k->key, key) != 0))
            k++;
        if (k->key == NULL)
            report_unknown(c, table, i, section);
        else
            k->read(c, gs_toml_at(table, i));
    }
}

/* ---- checks across keys, defaults that depend on other keys ---- */

static void check_whole(struct ctx *c, const struct gs_toml_value *root)
{
    struct gs_jobspec *s = c->spec;
    const struct gs_toml_value *run = gs_toml_get(root, "run");
    const struct gs_toml_value *res = gs_toml_get(root, "resources");
    const struct gs_toml_value *at_run = run != NULL ? run : root;

    if (s->argv == NULL && s->script == NULL && c->nerrors == 0)
        REPORT_AT(c, at_run, "the job has nothing to run: set run.command or run.script");
    if (s->argv != NULL && s->script != NULL)
        REPORT_AT(c, gs_toml_get(run, "script"),
                  "run.command and run.script are both set; keep one");
    if (s->cpus_per_gpu > 0 && s->cpus_per_task > 0)
        REPORT_AT(c, gs_toml_get(res, "cpus_per_task"),
                  "resources.cpus_per_gpu and resources.cpus_per_task are both set; keep one");
    if (s->cpus_per_gpu > 0 && s->gpus_per_node == 0)
        REPORT_AT(c, gs_toml_get(res, "cpus_per_gpu"),
                  "resources.cpus_per_gpu needs resources.gpus_per_node > 0");
    if (s->tasks_per_gpu && s->gpus_per_node == 0)
        REPORT_AT(c, gs_toml_get(run, "tasks_per_node"),
                  "run.tasks_per_node = \"per-gpu\" needs resources.gpus_per_node > 0");
    if (s->cpus_per_gpu == 0 && s->cpus_per_task == 0)
        s->cpus_per_task = 1;
    if (s->stdout_pattern == NULL)
        s->stdout_pattern = dup_or_flag(c, GS_JOBSPEC_DEFAULT_STDOUT);
}

/* The job's default name: the file's base name without ".toml", as sbatch names jobs. */
static int default_name(struct gs_jobspec *spec, const char *filename)
{
    const char *base = strrchr(filename, '/');
    size_t len;

    base = base != NULL ? base + 1 : filename;
    len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".toml") == 0)
        len -= 5;
    if (len == 0 || len > GS_JOBSPEC_NAME_MAX) {
        base = "job";
        len = 3;
    }
    spec->name = strndup(base, len);
    return spec->name != NULL ? 0 : -ENOMEM;
}

int gs_jobspec_parse_toml(const char *text, size_t len, const char *filename,
                          struct gs_jobspec **ret_spec, struct gs_buf *errors)
{
    struct ctx c = {.errors = errors, .filename = filename != NULL ? filename : "<job>"};
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    int rc;

    rc = gs_toml_parse(text, len, &doc, &err);
    if (rc < 0) {
        report(&c, err.line, err.col, "%s", err.msg);
        return rc;
    }
    c.spec = gs_jobspec_new();
    rc = -ENOMEM;
    if (c.spec == NULL)
        goto out;
    read_section(&c, gs_toml_root(doc), "", root_keys);
    check_whole(&c, gs_toml_root(doc));
    if (c.nerrors > MAX_REPORTED)
        gs_buf_printf(errors, "%s: %d more problems not shown\n", c.filename,
                      c.nerrors - MAX_REPORTED);
    if (c.enomem || (c.spec->name == NULL && default_name(c.spec, c.filename) < 0))
        goto out;
    rc = c.nerrors > 0 ? -EINVAL : 0;
    if (rc == 0) {
        *ret_spec = c.spec;
        c.spec = NULL;
    }
out:
    gs_jobspec_free(c.spec);
    gs_toml_free(doc);
    return rc;
}

/* ---- the struct ---- */

struct gs_jobspec *gs_jobspec_new(void)
{
    struct gs_jobspec *spec = calloc(1, sizeof(*spec));

    if (spec == NULL)
        return NULL;
    spec->nodes = 1;
    spec->tasks_per_node = 1;
    spec->time_limit_s = GS_DURATION_INFINITE;
    return spec;
}

void gs_jobspec_free(struct gs_jobspec *spec)
{
    if (spec == NULL)
        return;
    free(spec->name);
    free(spec->deps);
    free(spec->constraint);
    free_strv(spec->argv);
    free(spec->script);
    free(spec->workdir);
    free(spec->stdout_pattern);
    free(spec->stderr_pattern);
    free_strv(spec->env);
    free(spec);
}

static const char *const dep_names[] = {"after", "afterok", "afternotok", "afterany"};

const char *gs_dep_type_name(enum gs_dep_type type)
{
    if ((int)type < 0 || type > GS_DEP_AFTERANY)
        return "unknown";
    return dep_names[type];
}

int gs_dep_parse(const char *text, struct gs_dep *ret_dep)
{
    const char *colon = strchr(text, ':');
    unsigned long long id = 0;
    size_t len;

    if (colon == NULL || colon[1] == '\0')
        return -EINVAL;
    len = (size_t)(colon - text);
    for (const char *p = colon + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || id > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        id = id * 10 + (unsigned long long)(*p - '0');
    }
    if (id == 0)
        return -EINVAL;
    for (int t = GS_DEP_AFTER; t <= GS_DEP_AFTERANY; t++) {
        if (strlen(dep_names[t]) == len && strncmp(text, dep_names[t], len) == 0) {
            ret_dep->type = (enum gs_dep_type)t;
            ret_dep->job_id = id;
            return 0;
        }
    }
    return -EINVAL;
}
