/*
 * jobspec_print.c: printing a struct gs_jobspec for people (key = value lines, in job-file
 * terms: durations and sizes in their usual forms) and for programs (JSON with plain numbers:
 * seconds and MiB, null for unlimited).
 */
#include "cli/jobspec_print.h"

#include <stdio.h>
#include <string.h>

#include "cli/job_print.h"
#include "common/jobspec_license.h"
#include "common/jobspec_mail.h"
#include "common/units.h"

static void json_strv(struct gs_json *j, const char *key, char *const *v)
{
    gs_json_key(j, key);
    if (v == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_array_begin(j);
    for (size_t i = 0; v[i] != NULL; i++)
        gs_json_string(j, v[i]);
    gs_json_array_end(j);
}

static void json_deps(struct gs_json *j, const struct gs_jobspec *s)
{
    gs_json_key(j, "depends_on");
    gs_json_array_begin(j);
    for (size_t i = 0; i < s->ndeps; i++) {
        char dep[GS_DEP_TEXT_SIZE];

        gs_json_string(j, gs_dep_format(&s->deps[i], dep));
    }
    gs_json_array_end(j);
}

static void json_env(struct gs_json *j, const struct gs_jobspec *s)
{
    gs_json_key(j, "env");
    gs_json_object_begin(j);
    for (size_t i = 0; i < s->nenv; i++) {
        const char *eq = strchr(s->env[i], '=');
        char key[256];

        snprintf(key, sizeof(key), "%.*s", (int)(eq - s->env[i]), s->env[i]);
        gs_json_key(j, key);
        gs_json_string(j, eq + 1);
    }
    gs_json_object_end(j);
}

static void json_resources(struct gs_json *j, const struct gs_jobspec *s)
{
    gs_json_key(j, "resources");
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "nodes", s->nodes);
    gs_json_kv_uint(j, "gpus_per_node", s->gpus_per_node);
    gs_json_key(j, s->cpus_per_gpu > 0 ? "cpus_per_gpu" : "cpus_per_task");
    gs_json_uint(j, s->cpus_per_gpu > 0 ? s->cpus_per_gpu : s->cpus_per_task);
    gs_json_kv_uint(j, "mem_per_node_mib", s->mem_per_node_mib);
    if (s->tmp_per_node_mib > 0)
        gs_json_kv_uint(j, "tmp_per_node_mib", s->tmp_per_node_mib);
    if (s->min_cpus_per_node > 0)
        gs_json_kv_uint(j, "min_cpus_per_node", s->min_cpus_per_node);
    if (s->overcommit)
        gs_json_kv_bool(j, "overcommit", true);
    gs_json_key(j, "time_limit_s");
    if (s->time_limit_s == GS_DURATION_INFINITE)
        gs_json_null(j);
    else
        gs_json_uint(j, s->time_limit_s);
    gs_json_kv_bool(j, "exclusive", s->exclusive);
    gs_json_kv_string(j, "constraint", s->constraint);
    gs_json_key(j, "licenses");
    gs_json_object_begin(j);
    for (size_t i = 0; i < s->nlicenses; i++)
        gs_json_kv_uint(j, s->licenses[i].name, s->licenses[i].count);
    gs_json_object_end(j);
    gs_json_object_end(j);
}

static void json_run(struct gs_json *j, const struct gs_jobspec *s)
{
    gs_json_key(j, "run");
    gs_json_object_begin(j);
    json_strv(j, "command", s->argv);
    gs_json_kv_string(j, "script", s->script);
    gs_json_key(j, "tasks_per_node");
    if (s->tasks_per_gpu)
        gs_json_string(j, "per-gpu");
    else
        gs_json_uint(j, s->tasks_per_node);
    gs_json_kv_string(j, "launcher", gs_launcher_name(s->launcher));
    gs_json_kv_string(j, "workdir", s->workdir);
    gs_json_kv_string(j, "stdout", s->stdout_pattern);
    gs_json_kv_string(j, "stderr", s->stderr_pattern);
    if (s->stdin_pattern != NULL)
        gs_json_kv_string(j, "stdin", s->stdin_pattern);
    gs_json_kv_string(j, "open_mode", s->truncate_output ? "truncate" : "append");
    json_env(j, s);
    gs_json_object_end(j);
}

/* A heterogeneous job's further components, keys as in [resources] and [run]. */
static void json_het(struct gs_json *j, const struct gs_jobspec *s)
{
    gs_json_key(j, "het");
    gs_json_array_begin(j);
    for (uint32_t k = 0; k < s->nhet; k++) {
        const struct gs_het_component *c = &s->het[k];

        gs_json_object_begin(j);
        gs_json_kv_uint(j, "nodes", c->nodes);
        gs_json_kv_uint(j, "gpus_per_node", c->gpus_per_node);
        gs_json_key(j, c->cpus_per_gpu > 0 ? "cpus_per_gpu" : "cpus_per_task");
        gs_json_uint(j, c->cpus_per_gpu > 0 ? c->cpus_per_gpu : c->cpus_per_task);
        gs_json_kv_uint(j, "mem_per_node_mib", c->mem_per_node_mib);
        gs_json_kv_string(j, "constraint", c->constraint);
        gs_json_key(j, "tasks_per_node");
        if (c->tasks_per_gpu)
            gs_json_string(j, "per-gpu");
        else
            gs_json_uint(j, c->tasks_per_node);
        gs_json_kv_uint(j, "ntasks", c->ntasks);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
}

void cli_jobspec_json(struct gs_json *j, const struct gs_jobspec *s)
{
    gs_json_object_begin(j);
    gs_json_kv_string(j, "name", s->name);
    gs_json_kv_int(j, "priority", s->priority);
    gs_json_kv_int(j, "nice", s->nice);
    gs_json_kv_bool(j, "hold", s->hold);
    json_deps(j, s);
    if (s->kill_invalid_dep != GS_KILL_INVALID_DEP_DEFAULT)
        gs_json_kv_bool(j, "kill_on_invalid_dep", s->kill_invalid_dep == GS_KILL_INVALID_DEP_YES);
    json_resources(j, s);
    json_run(j, s);
    gs_json_key(j, "restart");
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "max_restarts", s->max_restarts);
    gs_json_object_end(j);
    gs_json_key(j, "placement");
    gs_json_object_begin(j);
    gs_json_kv_string(j, "gpu_affinity", gs_gpu_affinity_name(s->gpu_affinity));
    if (s->switches > 0) /* only when asked: a job's JSON without it stays as it was */
        gs_json_kv_uint(j, "switches", s->switches);
    if (s->switch_wait_set)
        gs_json_kv_uint(j, "switch_wait_s", s->switch_wait_s);
    gs_json_object_end(j);
    if (s->mail_types != 0) { /* only with mail: a job's JSON without it stays as it was */
        struct gs_buf types = GS_BUF_INIT;

        gs_mail_types_format(s->mail_types, &types);
        gs_json_key(j, "mail");
        gs_json_object_begin(j);
        gs_json_kv_string(j, "type", types.data);
        gs_json_kv_string(j, "user", s->mail_user);
        gs_json_object_end(j);
        gs_buf_release(&types);
    }
    /* Only a heterogeneous job has the key: an ordinary job's JSON stays as it was. */
    if (s->nhet > 0)
        json_het(j, s);
    gs_json_object_end(j);
}

/* Lines accumulate in out; the first failure sticks in rc. */
struct text {
    struct gs_buf *out;
    int rc;
};

static void text_line(struct text *t, const char *key, const char *value)
{
    if (t->rc == 0)
        t->rc = gs_buf_printf(t->out, "%-16s = %s\n", key, value);
}

static void text_strv(struct text *t, const char *key, char *const *v)
{
    struct gs_buf line = GS_BUF_INIT;
    int rc = gs_buf_append_str(&line, "");

    for (size_t i = 0; rc == 0 && v[i] != NULL; i++)
        rc = gs_buf_printf(&line, "%s%s", i > 0 ? " " : "", v[i]);
    if (rc < 0 && t->rc == 0)
        t->rc = rc;
    text_line(t, key, line.data);
    gs_buf_release(&line);
}

/* A heterogeneous job: one "component K = Nodes=... Tasks=..." line per component. */
static void text_het(struct text *t, const struct gs_jobspec *s)
{
    struct gs_buf line = GS_BUF_INIT;
    char key[32];

    for (uint32_t k = 0; s->nhet > 0 && k <= s->nhet; k++) {
        struct gs_jobspec view;
        struct gs_het_component c;
        int rc;

        gs_jobspec_het_view(s, k, &view);
        c = (struct gs_het_component){
            .nodes = view.nodes,
            .gpus_per_node = view.gpus_per_node,
            .cpus_per_gpu = view.cpus_per_gpu,
            .cpus_per_task = view.cpus_per_task,
            .mem_per_node_mib = view.mem_per_node_mib,
            .constraint = view.constraint,
            .tasks_per_node = view.tasks_per_node,
            .tasks_per_gpu = view.tasks_per_gpu,
            .ntasks = view.ntasks,
        };
        gs_buf_reset(&line);
        rc = cli_het_line(&line, &c);
        if (rc < 0 && t->rc == 0)
            t->rc = rc;
        snprintf(key, sizeof(key), "component %u", k);
        text_line(t, key, line.data != NULL ? line.data : "");
    }
    gs_buf_release(&line);
}

int cli_jobspec_text(struct gs_buf *out, const struct gs_jobspec *s)
{
    struct text t = {out, 0};
    char a[64], b[64];

    text_line(&t, "name", s->name);
    snprintf(a, sizeof(a), "%d", s->priority);
    text_line(&t, "priority", a);
    snprintf(a, sizeof(a), "%d", s->nice);
    text_line(&t, "nice", a);
    for (size_t i = 0; i < s->ndeps; i++)
        text_line(&t, "depends_on", gs_dep_format(&s->deps[i], a));
    snprintf(a, sizeof(a), "%u node(s) x %u GPU(s)", s->nodes, s->gpus_per_node);
    text_line(&t, "resources", a);
    snprintf(a, sizeof(a), "%u per %s", s->cpus_per_gpu ? s->cpus_per_gpu : s->cpus_per_task,
             s->cpus_per_gpu ? "GPU" : "task");
    if (s->overcommit)
        snprintf(a + strlen(a), sizeof(a) - strlen(a), ", one task's a node (overcommit)");
    if (s->min_cpus_per_node > 0)
        snprintf(a + strlen(a), sizeof(a) - strlen(a), ", at least %u a node",
                 s->min_cpus_per_node);
    text_line(&t, "cpus", a);
    text_line(&t, "mem_per_node",
              s->mem_per_node_mib ? gs_format_size(s->mem_per_node_mib << 20, b, sizeof(b))
                                  : "no request");
    if (s->tmp_per_node_mib > 0)
        text_line(&t, "tmp_per_node", gs_format_size(s->tmp_per_node_mib << 20, b, sizeof(b)));
    text_line(&t, "time_limit", gs_format_duration(s->time_limit_s, b, sizeof(b)));
    if (s->constraint != NULL)
        text_line(&t, "constraint", s->constraint);
    if (s->prefer != NULL)
        text_line(&t, "prefer", s->prefer);
    if (s->nlicenses > 0) {
        struct gs_buf l = GS_BUF_INIT;

        gs_license_list_format(s->licenses, s->nlicenses, &l);
        text_line(&t, "licenses", l.data != NULL ? l.data : "");
        gs_buf_release(&l);
    }
    text_line(&t, "gpu_affinity", gs_gpu_affinity_name(s->gpu_affinity));
    if (s->switches > 0) {
        char w[32], line[96];

        if (s->switch_wait_set)
            snprintf(line, sizeof(line), "at most %u, waited for up to %s", s->switches,
                     gs_format_duration(s->switch_wait_s, w, sizeof(w)));
        else
            snprintf(line, sizeof(line), "at most %u, waited for up to scheduler.max_switch_wait",
                     s->switches);
        text_line(&t, "switches", line);
    }
    if (s->mail_types != 0) {
        struct gs_buf m = GS_BUF_INIT;

        gs_mail_types_format(s->mail_types, &m);
        gs_buf_printf(&m, " to %s", s->mail_user != NULL ? s->mail_user : "the job's user");
        text_line(&t, "mail", m.data != NULL ? m.data : "");
        gs_buf_release(&m);
    }
    if (s->argv != NULL)
        text_strv(&t, "command", s->argv);
    else
        text_line(&t, "script", "(inline, /bin/sh)");
    snprintf(a, sizeof(a), "%u", s->tasks_per_node);
    text_line(&t, "tasks_per_node", s->tasks_per_gpu ? "per-gpu" : a);
    text_het(&t, s);
    if (s->launcher != GS_LAUNCHER_NONE)
        text_line(&t, "launcher", gs_launcher_name(s->launcher));
    text_line(&t, "stdout", s->stdout_pattern);
    if (s->stdin_pattern != NULL)
        text_line(&t, "stdin", s->stdin_pattern);
    if (s->truncate_output)
        text_line(&t, "open_mode", "truncate");
    for (size_t i = 0; i < s->nenv; i++)
        text_line(&t, "env", s->env[i]);
    return t.rc;
}
