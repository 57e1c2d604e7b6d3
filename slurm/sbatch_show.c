/*
 * sbatch_show.c: the --test-only view of a job sbatch_spec.c built (gs_sbatch_show,
 * documented in sbatch_spec.h): every key, always, as "key=value" lines or one JSON object,
 * in Slurm's notation where Slurm has one (times, hostlists, arrays, dependencies,
 * signals), and the output paths as the first task would get them. `sbatch --test-only`
 * (slurm/cmd_sbatch.c) prints it before asking the scheduler; tests compare it.
 */
#include "slurm/sbatch_spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/hostlist.h"
#include "common/jobspec_license.h"
#include "common/jobspec_mail.h"
#include "common/json.h"
#include "common/path.h"
#include "common/signals.h"
#include "common/units.h"
#include "slurm/sbatch_internal.h"

/* One writer for both formats: kv lines, or the members of one JSON object. */
struct show {
    enum gs_sbatch_show_format format;
    struct gs_buf *out;
    struct gs_json j;
    struct gs_buf value; /* scratch for values built piecewise */
    int rc;
};

static void show_str(struct show *s, const char *key, const char *v)
{
    if (s->rc < 0)
        return;
    if (s->format == GS_SBATCH_SHOW_JSON)
        gs_json_kv_string(&s->j, key, v != NULL && v[0] != '\0' ? v : NULL);
    else
        s->rc = gs_buf_printf(s->out, "%s=%s\n", key, v != NULL ? v : "");
}

static void show_uint(struct show *s, const char *key, uint64_t v)
{
    if (s->rc < 0)
        return;
    if (s->format == GS_SBATCH_SHOW_JSON)
        gs_json_kv_uint(&s->j, key, v);
    else
        s->rc = gs_buf_printf(s->out, "%s=%llu\n", key, (unsigned long long)v);
}

static void show_int(struct show *s, const char *key, int64_t v)
{
    if (s->rc < 0)
        return;
    if (s->format == GS_SBATCH_SHOW_JSON)
        gs_json_kv_int(&s->j, key, v);
    else
        s->rc = gs_buf_printf(s->out, "%s=%lld\n", key, (long long)v);
}

static void show_bool(struct show *s, const char *key, bool v)
{
    if (s->rc < 0)
        return;
    if (s->format == GS_SBATCH_SHOW_JSON)
        gs_json_kv_bool(&s->j, key, v);
    else
        s->rc = gs_buf_printf(s->out, "%s=%s\n", key, v ? "yes" : "no");
}

/* Shows the scratch value under key, and empties it. */
static void show_value(struct show *s, const char *key, int rc)
{
    if (rc < 0 && s->rc == 0)
        s->rc = rc;
    show_str(s, key, s->value.data);
    gs_buf_reset(&s->value);
}

/* Slurm's [D-]HH:MM:SS, or UNLIMITED. */
static int slurm_time(struct gs_buf *out, uint64_t t)
{
    uint64_t d = t / 86400, h = t / 3600 % 24, m = t / 60 % 60, sec = t % 60;

    if (t == GS_DURATION_INFINITE)
        return gs_buf_append_str(out, "UNLIMITED");
    if (d > 0 && gs_buf_printf(out, "%llu-", (unsigned long long)d) < 0)
        return -ENOMEM;
    return gs_buf_printf(out, "%02llu:%02llu:%02llu", (unsigned long long)h, (unsigned long long)m,
                         (unsigned long long)sec);
}

static int array_text(struct gs_buf *out, const struct gs_job_array *a)
{
    uint32_t step = a->ntask_ids > 1 ? a->task_ids[1] - a->task_ids[0] : 1;
    bool even = true;
    int rc = 0;

    for (size_t i = 2; i < a->ntask_ids && even; i++)
        even = a->task_ids[i] - a->task_ids[i - 1] == step;
    if (a->ntask_ids == 1) {
        rc = gs_buf_printf(out, "%u", a->task_ids[0]);
    } else if (even) {
        rc = gs_buf_printf(out, "%u-%u", a->task_ids[0], a->task_ids[a->ntask_ids - 1]);
        if (rc == 0 && step > 1)
            rc = gs_buf_printf(out, ":%u", step);
    } else {
        rc = gs_sbatch_runs_text(out, a->task_ids, a->ntask_ids);
    }
    if (rc == 0 && a->throttle > 0)
        rc = gs_buf_printf(out, "%%%u", a->throttle);
    return rc;
}

static int deps_text(struct gs_buf *out, const struct gs_jobspec *spec)
{
    const char *sep = spec->depends_any ? "?" : ",";
    char text[GS_DEP_TEXT_SIZE];
    int rc = 0;

    for (size_t i = 0; i < spec->ndeps && rc == 0; i++)
        rc = gs_buf_printf(out, "%s%s", i > 0 ? sep : "", gs_dep_format(&spec->deps[i], text));
    if (rc == 0 && spec->singleton)
        rc = gs_buf_printf(out, "%ssingleton", spec->ndeps > 0 ? sep : "");
    return rc;
}

static int signal_text(struct gs_buf *out, const struct gs_jobspec *spec)
{
    const char *name = gs_signal_name((int)spec->warn_signal);

    if (spec->warn_signal == 0)
        return 0;
    if (spec->warn_batch_only && gs_buf_append_str(out, "B:") < 0)
        return -ENOMEM;
    if (name != NULL)
        return gs_buf_printf(out, "%s@%u", name, spec->warn_before_s);
    return gs_buf_printf(out, "%u@%u", spec->warn_signal, spec->warn_before_s);
}

static int hostlist_text(struct gs_buf *out, char **names, size_t n)
{
    return n > 0 ? gs_hostlist_compress((const char *const *)names, n, out) : 0;
}

/*
 * An output pattern for the first task of the first element, made absolute against the
 * working directory: what is known now filled in, the job id and node name left as written.
 */
static int pattern_path(struct gs_buf *out, const char *pattern, const struct gs_jobspec *spec,
                        const char *user)
{
    struct gs_buf filled = GS_BUF_INIT;
    int rc = 0;

    for (const char *p = pattern; *p != '\0' && rc == 0; p++) {
        const char *start = p;
        unsigned width = 0;

        if (*p != '%') {
            rc = gs_buf_putc(&filled, *p);
            continue;
        }
        for (p++; *p >= '0' && *p <= '9'; p++)
            width = width < 100 ? width * 10 + (unsigned)(*p - '0') : width;
        switch (*p) {
        case 'x':
            rc = gs_buf_append_str(&filled, spec->name != NULL ? spec->name : "");
            break;
        case 'u':
            rc = gs_buf_append_str(&filled, user != NULL ? user : "");
            break;
        case 'a': /* Slurm's NO_VAL for a job that is no array element */
            rc = gs_buf_printf(&filled, "%0*u", (int)width,
                               spec->array.ntask_ids > 0 ? spec->array.task_ids[0] : 4294967294u);
            break;
        case 'n':
        case 't':
            rc = gs_buf_printf(&filled, "%0*u", (int)width, 0u);
            break;
        case '%':
            rc = gs_buf_putc(&filled, '%');
            break;
        case '\0': /* a lone '%' at the end: kept */
            rc = gs_buf_append(&filled, start, (size_t)(p - start));
            p--;
            break;
        default:
            rc = gs_buf_append(&filled, start, (size_t)(p - start + 1));
            break;
        }
    }
    if (rc == 0)
        rc = gs_path_absolute(spec->workdir != NULL ? spec->workdir : "/",
                              filled.data != NULL ? filled.data : "", out);
    gs_buf_release(&filled);
    return rc;
}

static int export_text(struct gs_buf *out, const struct gs_sbatch *sb)
{
    const struct gs_sbatch_export *e = &sb->export_env;
    bool all =
        sb->set_by[GS_SBATCH_OPT_EXPORT] == GS_SBATCH_UNSET || e->mode == GS_SBATCH_EXPORT_ALL;
    int rc = gs_buf_append_str(out, all ? "ALL" : "NONE");

    for (size_t i = 0; i < e->n && rc == 0; i++)
        rc = gs_buf_printf(out, ",%.*s", (int)strcspn(e->vars[i], "="), e->vars[i]);
    return rc;
}

/* prefix and name, as one key: "het1_nodes". */
static const char *prefixed(char *buf, size_t size, const char *prefix, const char *name)
{
    snprintf(buf, size, "%s%s", prefix, name);
    return buf;
}

/* One component's nodes and tasks, CPUs, GPUs and memory (view: that component alone). */
static void show_shape(struct show *s, const char *prefix, const struct gs_jobspec *view)
{
    char key[64];

    show_uint(s, prefixed(key, sizeof(key), prefix, "nodes"), view->nodes);
    show_uint(s, prefixed(key, sizeof(key), prefix, "ntasks"), gs_jobspec_ntasks(view));
    show_uint(s, prefixed(key, sizeof(key), prefix, "tasks_per_node"),
              gs_jobspec_tasks_per_node(view));
    show_uint(s, prefixed(key, sizeof(key), prefix, "cpus_per_task"), view->cpus_per_task);
    show_uint(s, prefixed(key, sizeof(key), prefix, "cpus_per_gpu"), view->cpus_per_gpu);
    show_uint(s, prefixed(key, sizeof(key), prefix, "gpus_per_node"), view->gpus_per_node);
    show_uint(s, prefixed(key, sizeof(key), prefix, "gpus_per_task"), view->gpus_per_task);
    show_uint(s, prefixed(key, sizeof(key), prefix, "mem_per_node_mib"), view->mem_per_node_mib);
}

/*
 * A heterogeneous job's further components, after the whole job's keys: het_size, then
 * each one's shape and constraint as hetK_ keys, or in JSON objects of a "het" array.
 */
static void show_het(struct show *s, const struct gs_jobspec *spec)
{
    bool json = s->format == GS_SBATCH_SHOW_JSON;
    char prefix[32] = "", key[64];

    if (spec->nhet == 0)
        return;
    show_uint(s, "het_size", (uint64_t)spec->nhet + 1);
    if (json) {
        gs_json_key(&s->j, "het");
        gs_json_array_begin(&s->j);
    }
    for (uint32_t k = 1; k <= spec->nhet; k++) {
        struct gs_jobspec view;

        gs_jobspec_het_view(spec, k, &view);
        if (json)
            gs_json_object_begin(&s->j);
        else
            snprintf(prefix, sizeof(prefix), "het%u_", k);
        show_shape(s, prefix, &view);
        show_str(s, prefixed(key, sizeof(key), prefix, "constraint"), view.constraint);
        if (json)
            gs_json_object_end(&s->j);
    }
    if (json)
        gs_json_array_end(&s->j);
}

static void show_resources(struct show *s, const struct gs_jobspec *spec)
{
    struct gs_jobspec first;

    gs_jobspec_het_view(spec, 0, &first);
    show_shape(s, "", &first);
    show_value(s, "time_limit", slurm_time(&s->value, spec->time_limit_s));
    show_value(s, "time_min", spec->time_min_s > 0 ? slurm_time(&s->value, spec->time_min_s) : 0);
    show_str(s, "partition", spec->partition);
    show_str(s, "account", spec->account);
    show_str(s, "qos", spec->qos);
    show_str(s, "constraint", spec->constraint);
    show_str(s, "reservation", spec->reservation);
    gs_license_list_format(spec->licenses, spec->nlicenses, &s->value);
    show_value(s, "licenses", gs_buf_error(&s->value));
    show_value(s, "nodelist", hostlist_text(&s->value, spec->nodelist, spec->nnodelist));
    show_value(s, "exclude", hostlist_text(&s->value, spec->exclude, spec->nexclude));
    show_bool(s, "exclusive", spec->exclusive);
}

static void show_job(struct show *s, const struct gs_jobspec *spec, const struct gs_sbatch *sb,
                     const char *user)
{
    const char *err = spec->stderr_pattern != NULL ? spec->stderr_pattern : spec->stdout_pattern;

    show_value(s, "array", spec->array.ntask_ids > 0 ? array_text(&s->value, &spec->array) : 0);
    show_uint(s, "array_size", spec->array.ntask_ids);
    show_value(s, "dependency", deps_text(&s->value, spec));
    show_str(s, "kill_on_invalid_dep",
             spec->kill_invalid_dep == GS_KILL_INVALID_DEP_YES  ? "yes"
             : spec->kill_invalid_dep == GS_KILL_INVALID_DEP_NO ? "no"
                                                                : "");
    show_bool(s, "hold", spec->hold);
    show_int(s, "nice", spec->nice);
    show_bool(s, "requeue", spec->max_restarts > 0);
    show_uint(s, "max_restarts", spec->max_restarts);
    if (spec->switches > 0)
        show_uint(s, "switches", spec->switches);
    if (spec->switch_wait_set)
        show_uint(s, "switch_wait_s", spec->switch_wait_s);
    show_value(s, "signal", signal_text(&s->value, spec));
    show_str(s, "workdir", spec->workdir);
    show_str(s, "stdout", spec->stdout_pattern);
    show_str(s, "stderr", spec->stderr_pattern);
    show_str(s, "open_mode", spec->truncate_output ? "truncate" : "append");
    gs_mail_types_format(spec->mail_types, &s->value);
    show_value(s, "mail_type", gs_buf_error(&s->value));
    show_str(s, "mail_user", spec->mail_user);
    show_value(s, "stdout_path", pattern_path(&s->value, spec->stdout_pattern, spec, user));
    show_value(s, "stderr_path", pattern_path(&s->value, err, spec, user));
    show_value(s, "export", export_text(&s->value, sb));
}

int gs_sbatch_show(const struct gs_jobspec *spec, const struct gs_sbatch *sb, const char *script,
                   const char *user, enum gs_sbatch_show_format format, struct gs_buf *out)
{
    struct show s = {.format = format, .out = out, .value = GS_BUF_INIT};
    int rc;

    if (format == GS_SBATCH_SHOW_JSON) {
        gs_json_init(&s.j, out);
        gs_json_object_begin(&s.j);
    }
    show_str(&s, "job_name", spec->name);
    show_str(&s, "script", script);
    show_resources(&s, spec);
    show_job(&s, spec, sb, user);
    show_het(&s, spec);
    rc = s.rc;
    if (format == GS_SBATCH_SHOW_JSON) {
        gs_json_object_end(&s.j);
        if (rc == 0)
            rc = gs_json_finish(&s.j);
        if (rc == 0)
            rc = gs_buf_putc(out, '\n');
    }
    gs_buf_release(&s.value);
    return rc;
}
