/*
 * jobspec.c: struct gs_jobspec and the job-file reader.
 *
 * The reader is a set of key readers over common/schema.h: each checks one key's type and
 * range and stores it in the spec; unknown keys and bad values are reported where they
 * stand, so one pass yields every problem in the file. Checks that involve several keys
 * (command vs script, cpus_per_gpu without GPUs) run after the walk.
 */
#include "common/jobspec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/features.h"
#include "common/jobspec_data.h"
#include "common/jobspec_license.h"
#include "common/jobspec_mail.h"
#include "common/schema.h"
#include "common/toml.h"
#include "common/units.h"

#define SPEC(c) ((struct gs_jobspec *)(c)->target)
#define REPORT_AT GS_SCHEMA_REPORT_AT

/* ---- the keys of each section ---- */

static void rd_name(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "name", &name) < 0)
        return;
    if (name != NULL && !gs_jobspec_name_ok(name)) {
        REPORT_AT(c, v, "name must be 1 to %d characters without '/', tabs or newlines",
                  GS_JOBSPEC_NAME_MAX);
        free(name);
        return;
    }
    free(SPEC(c)->name);
    SPEC(c)->name = name;
}

static void rd_priority(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    int64_t n;

    if (gs_toml_as_int(v, &n) < 0 || n < -GS_JOBSPEC_PRIORITY_MAX || n > GS_JOBSPEC_PRIORITY_MAX) {
        REPORT_AT(c, v, "priority must be an integer from %d to %d", -GS_JOBSPEC_PRIORITY_MAX,
                  GS_JOBSPEC_PRIORITY_MAX);
        return;
    }
    SPEC(c)->priority = (int32_t)n;
}

/* Slurm's --nice: subtracted from the priority; below 0 only for root (gschedd checks). */
static void rd_nice(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    int64_t n;

    if (gs_toml_as_int(v, &n) < 0 || n < -GS_JOBSPEC_NICE_MAX || n > GS_JOBSPEC_NICE_MAX) {
        REPORT_AT(c, v, "nice must be an integer from %d to %d", -GS_JOBSPEC_NICE_MAX,
                  GS_JOBSPEC_NICE_MAX);
        return;
    }
    SPEC(c)->nice = (int32_t)n;
}

static void rd_hold(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_bool(c, v, "hold", &SPEC(c)->hold);
}

static void rd_kill_on_invalid_dep(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    bool kill = false;

    if (gs_schema_bool(c, v, "kill_on_invalid_dep", &kill) == 0)
        SPEC(c)->kill_invalid_dep = kill ? GS_KILL_INVALID_DEP_YES : GS_KILL_INVALID_DEP_NO;
}

static void rd_depends_on(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const struct gs_toml_value **items = NULL;
    size_t n = 0;

    if (gs_schema_string_list(c, v, "depends_on", &items, &n) < 0)
        return;
    free(SPEC(c)->deps);
    SPEC(c)->ndeps = 0;
    SPEC(c)->deps = calloc(n > 0 ? n : 1, sizeof(*SPEC(c)->deps));
    if (SPEC(c)->deps == NULL) {
        c->enomem = true;
        free(items);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = NULL;

        gs_toml_as_string(items[i], &s, NULL);
        if (gs_dep_parse(s, &SPEC(c)->deps[SPEC(c)->ndeps]) < 0)
            REPORT_AT(c, items[i],
                      "depends_on: cannot read '%s' (write TYPE:JOBID, TYPE one of after, "
                      "afterok, afternotok, afterany, aftercorr; JOBID_TASK for one array "
                      "task)",
                      s);
        else
            SPEC(c)->ndeps++;
    }
    free(items);
}

/*
 * A non-empty string for key into *out; word: also one name as gs_jobspec_word_ok takes
 * it, since the scheduler compares these names with its configuration and a list or a
 * stray space would never match anything there.
 */
static void read_name(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *key,
                      bool word, char **out)
{
    char *value = NULL;

    if (gs_schema_string(c, v, key, &value) < 0 || value == NULL)
        return;
    if (value[0] == '\0') {
        REPORT_AT(c, v, "%s must not be empty (leave the key out for none)", key);
        goto out;
    }
    if (word && !gs_jobspec_word_ok(value)) {
        REPORT_AT(c, v, "%s must be one name of 1 to %d letters, digits, '_', '.' or '-'", key,
                  GS_JOBSPEC_NAME_MAX);
        goto out;
    }
    free(*out);
    *out = value;
    value = NULL;
out:
    free(value);
}

static void rd_account(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_name(c, v, "account", true, &SPEC(c)->account);
}

static void rd_qos(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_name(c, v, "qos", true, &SPEC(c)->qos);
}

static void rd_partition(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_name(c, v, "partition", true, &SPEC(c)->partition);
}

static void rd_reservation(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_name(c, v, "reservation", true, &SPEC(c)->reservation);
}

/* A workload characterization key, only recorded and shown (sbatch --wckey). */
static void rd_wckey(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_name(c, v, "wckey", true, &SPEC(c)->wckey);
}

/* Free text, only recorded and shown (sbatch --comment). */
static void rd_comment(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_name(c, v, "comment", false, &SPEC(c)->comment);
}

static void rd_nodes(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "resources.nodes", 1, GS_JOBSPEC_NODES_MAX, &SPEC(c)->nodes);
}

static void rd_gpus_per_node(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "resources.gpus_per_node", 0, GS_JOBSPEC_GPUS_MAX,
                   &SPEC(c)->gpus_per_node);
}

static void rd_cpus_per_gpu(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "resources.cpus_per_gpu", 1, GS_JOBSPEC_CPUS_MAX, &SPEC(c)->cpus_per_gpu);
}

static void rd_cpus_per_task(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "resources.cpus_per_task", 1, GS_JOBSPEC_CPUS_MAX,
                   &SPEC(c)->cpus_per_task);
}

static void rd_mem_per_node(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_size_mib(c, v, "resources.mem_per_node", &SPEC(c)->mem_per_node_mib);
}

static void rd_min_cpus_per_node(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "resources.min_cpus_per_node", 1, GS_JOBSPEC_CPUS_MAX,
                   &SPEC(c)->min_cpus_per_node);
}

static void rd_threads_per_core(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "resources.threads_per_core", 1, 64, &SPEC(c)->threads_per_core);
}

static void rd_overcommit(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_bool(c, v, "resources.overcommit", &SPEC(c)->overcommit);
}

static void rd_tmp_per_node(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_size_mib(c, v, "resources.tmp_per_node", &SPEC(c)->tmp_per_node_mib);
}

/* An integer time limit counts minutes, as Slurm's --time does. */
static void rd_time_limit(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_duration(c, v, "resources.time_limit", 60, false, &SPEC(c)->time_limit_s);
}

static void rd_exclusive(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_bool(c, v, "resources.exclusive", &SPEC(c)->exclusive);
}

/* A node feature expression (common/features.h) for key into *out. */
static void read_features(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *key,
                          char **out)
{
    char why[160];

    if (gs_schema_string(c, v, key, out) < 0 || *out == NULL)
        return;
    if (gs_features_check(*out, why, sizeof(why)) < 0)
        REPORT_AT(c, v, "%s: '%.200s': %s", key, *out, why);
}

static void rd_constraint(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_features(c, v, "resources.constraint", &SPEC(c)->constraint);
}

static void rd_prefer(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_features(c, v, "resources.prefer", &SPEC(c)->prefer);
}

static const struct gs_schema_key resources_keys[] = {
    {"nodes", rd_nodes},
    {"gpus_per_node", rd_gpus_per_node},
    {"cpus_per_gpu", rd_cpus_per_gpu},
    {"cpus_per_task", rd_cpus_per_task},
    {"mem_per_node", rd_mem_per_node},
    {"tmp_per_node", rd_tmp_per_node},
    {"min_cpus_per_node", rd_min_cpus_per_node},
    {"overcommit", rd_overcommit},
    {"threads_per_core", rd_threads_per_core},
    {"time_limit", rd_time_limit},
    {"exclusive", rd_exclusive},
    {"constraint", rd_constraint},
    {"prefer", rd_prefer},
    {"licenses", gs_jobspec_read_licenses},
    {NULL, NULL},
};

static void rd_command(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    struct gs_jobspec *spec = SPEC(c);

    if (gs_toml_type(v) != GS_TOML_ARRAY || gs_toml_count(v) == 0) {
        REPORT_AT(c, v,
                  "run.command must be a non-empty array of strings, e.g. "
                  "[\"python3\", \"train.py\"]");
        return;
    }
    if (gs_schema_strv(c, v, "run.command", &spec->argv, &spec->argc) < 0)
        return;
    if (spec->argv[0][0] == '\0')
        REPORT_AT(c, v, "run.command[0] must name a program");
}

static void rd_script(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    if (gs_schema_string(c, v, "run.script", &SPEC(c)->script) == 0 && SPEC(c)->script != NULL &&
        strspn(SPEC(c)->script, " \t\r\n") == strlen(SPEC(c)->script))
        REPORT_AT(c, v, "run.script is empty");
}

static void rd_tasks_per_node(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const char *s;

    if (gs_toml_as_string(v, &s, NULL) == 0) {
        if (strcmp(s, "per-gpu") == 0) {
            SPEC(c)->tasks_per_gpu = true;
            return;
        }
        REPORT_AT(c, v, "run.tasks_per_node must be a positive integer or \"per-gpu\"");
        return;
    }
    if (gs_schema_uint(c, v, "run.tasks_per_node", 1, GS_JOBSPEC_CPUS_MAX,
                       &SPEC(c)->tasks_per_node) == 0)
        SPEC(c)->tasks_per_gpu = false;
}

static void rd_workdir(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_string(c, v, "run.workdir", &SPEC(c)->workdir);
}

/* Output patterns take %j %t %n %x %u and %%; anything else is a typo worth catching. */
const char *gs_jobspec_bad_placeholder(const char *pattern)
{
    for (const char *p = pattern; *p != '\0'; p++) {
        if (*p != '%')
            continue;
        if (p[1] == '\0' || strchr("jtnxu%", p[1]) == NULL)
            return p;
        p++;
    }
    return NULL;
}

/* sbatch's patterns (slurm/sbatch.c) also take %J %A %a %N and widths ("%4a"). */
const char *gs_jobspec_slurm_bad_placeholder(const char *pattern)
{
    for (const char *p = pattern; *p != '\0'; p++) {
        const char *pct = p;

        if (*p != '%')
            continue;
        p++;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p == '\0' || strchr("jJAaxNnstu%", *p) == NULL)
            return pct;
    }
    return NULL;
}

bool gs_jobspec_name_ok(const char *name)
{
    return name[0] != '\0' && strlen(name) <= GS_JOBSPEC_NAME_MAX &&
           strpbrk(name, "\n\r\t/") == NULL;
}

bool gs_jobspec_word_ok(const char *word)
{
    size_t n = strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");

    return n > 0 && n <= GS_JOBSPEC_NAME_MAX && word[n] == '\0';
}

static void read_pattern(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *path,
                         char **out)
{
    const char *bad;

    if (gs_schema_string(c, v, path, out) < 0 || *out == NULL)
        return;
    bad = gs_jobspec_bad_placeholder(*out);
    if (bad != NULL)
        REPORT_AT(c, v,
                  "%s: unknown placeholder '%%%.1s' (use %%j job id, %%t task rank, "
                  "%%n node, %%x job name, %%u user, %%%% for %%)",
                  path, bad + 1);
}

static void rd_stdout(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_pattern(c, v, "run.stdout", &SPEC(c)->stdout_pattern);
}

static void rd_stdin(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_pattern(c, v, "run.stdin", &SPEC(c)->stdin_pattern);
}

static void rd_stderr(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    read_pattern(c, v, "run.stderr", &SPEC(c)->stderr_pattern);
}

bool gs_jobspec_env_name_ok(const char *s, size_t len)
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

static void rd_env(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    size_t n = gs_toml_count(v), k = 0;
    char **env;

    if (gs_toml_type(v) != GS_TOML_TABLE) {
        REPORT_AT(c, v, "run.env must be a table of strings, e.g. { NCCL_DEBUG = \"WARN\" }");
        return;
    }
    env = calloc(n + 1, sizeof(*env));
    if (env == NULL) {
        c->enomem = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        size_t klen;
        const char *key = gs_toml_key_at(v, i, &klen), *val;
        struct gs_buf kv = GS_BUF_INIT;

        if (!gs_jobspec_env_name_ok(key, klen)) {
            gs_schema_report(c, gs_toml_key_line(v, i), gs_toml_key_col(v, i),
                             "run.env: '%s' is not a valid environment variable name", key);
            continue;
        }
        if (gs_toml_as_string(gs_toml_at(v, i), &val, NULL) < 0) {
            REPORT_AT(c, gs_toml_at(v, i), "run.env.%s must be a string, not %s", key,
                      gs_toml_type_name(gs_toml_type(gs_toml_at(v, i))));
            continue;
        }
        if (gs_buf_printf(&kv, "%s=%s", key, val) < 0)
            c->enomem = true;
        env[k++] = gs_buf_detach(&kv, NULL);
    }
    gs_schema_strv_free(SPEC(c)->env);
    SPEC(c)->env = env;
    SPEC(c)->nenv = k;
}

const char *gs_launcher_name(enum gs_launcher l)
{
    return l == GS_LAUNCHER_MPI ? "mpi" : l == GS_LAUNCHER_TORCHRUN ? "torchrun" : "none";
}

int gs_launcher_parse(const char *name, enum gs_launcher *ret)
{
    if (strcmp(name, "none") == 0)
        *ret = GS_LAUNCHER_NONE;
    else if (strcmp(name, "mpi") == 0)
        *ret = GS_LAUNCHER_MPI;
    else if (strcmp(name, "torchrun") == 0)
        *ret = GS_LAUNCHER_TORCHRUN;
    else
        return -EINVAL;
    return 0;
}

bool gs_jobspec_runs_leader(const struct gs_jobspec *spec)
{
    return spec->batch || spec->launcher == GS_LAUNCHER_MPI;
}

static void rd_launcher(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *name = NULL;

    if (gs_schema_string(c, v, "run.launcher", &name) < 0 || name == NULL)
        return;
    if (gs_launcher_parse(name, &SPEC(c)->launcher) < 0)
        REPORT_AT(c, v,
                  "run.launcher must be \"none\" (gsched starts every task), \"mpi\" "
                  "(mpirun starts them through gsched) or \"torchrun\" (one torchrun per "
                  "node starts them), not \"%s\"",
                  name);
    free(name);
}

static void rd_open_mode(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    char *mode = NULL;

    if (gs_schema_string(c, v, "run.open_mode", &mode) < 0 || mode == NULL)
        return;
    if (strcmp(mode, "append") == 0 || strcmp(mode, "truncate") == 0)
        SPEC(c)->truncate_output = mode[0] == 't';
    else
        REPORT_AT(c, v,
                  "run.open_mode must be \"append\" (output files are added to) or "
                  "\"truncate\" (emptied when the job starts), not \"%s\"",
                  mode);
    free(mode);
}

static const struct gs_schema_key run_keys[] = {
    {"command", rd_command},     {"script", rd_script}, {"tasks_per_node", rd_tasks_per_node},
    {"workdir", rd_workdir},     {"stdout", rd_stdout}, {"stderr", rd_stderr},
    {"stdin", rd_stdin},         {"env", rd_env},       {"launcher", rd_launcher},
    {"open_mode", rd_open_mode}, {NULL, NULL},
};

static void rd_max_restarts(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "restart.max_restarts", 0, GS_JOBSPEC_RESTARTS_MAX,
                   &SPEC(c)->max_restarts);
}

static const struct gs_schema_key restart_keys[] = {
    {"max_restarts", rd_max_restarts},
    {NULL, NULL},
};

static const char *const affinity_names[] = {
    [GS_GPU_AFFINITY_PREFER] = "prefer",
    [GS_GPU_AFFINITY_STRICT] = "strict",
    [GS_GPU_AFFINITY_ANY] = "any",
};

const char *gs_gpu_affinity_name(enum gs_gpu_affinity a)
{
    return (unsigned)a <= GS_GPU_AFFINITY_ANY ? affinity_names[a] : "unknown";
}

static void rd_gpu_affinity(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const char *s;

    if (gs_toml_as_string(v, &s, NULL) == 0) {
        for (int a = GS_GPU_AFFINITY_PREFER; a <= GS_GPU_AFFINITY_ANY; a++) {
            if (strcmp(s, affinity_names[a]) == 0) {
                SPEC(c)->gpu_affinity = (enum gs_gpu_affinity)a;
                return;
            }
        }
    }
    REPORT_AT(c, v, "placement.gpu_affinity must be \"prefer\", \"strict\" or \"any\"");
}

static void rd_switches(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_uint(c, v, "placement.switches", 0, GS_JOBSPEC_NODES_MAX, &SPEC(c)->switches);
}

static void rd_switch_wait(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    uint64_t s;

    if (gs_schema_duration(c, v, "placement.switch_wait", 1, true, &s) < 0)
        return;
    if (s > GS_JOBSPEC_SWITCH_WAIT_MAX) {
        REPORT_AT(c, v, "placement.switch_wait must be at most a day (86400 s)");
        return;
    }
    SPEC(c)->switch_wait_s = (uint32_t)s;
    SPEC(c)->switch_wait_set = true;
}

static const struct gs_schema_key placement_keys[] = {
    {"gpu_affinity", rd_gpu_affinity},
    {"switches", rd_switches},
    {"switch_wait", rd_switch_wait},
    {NULL, NULL},
};

static void rd_placement(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "placement");
}

static void rd_resources(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "resources");
}

static void rd_run(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "run");
}

static void rd_restart(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "restart");
}

static void rd_data(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "data");
}

static void rd_mail(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, "mail");
}

static const struct gs_schema_key root_keys[] = {
    {"name", rd_name},
    {"priority", rd_priority},
    {"nice", rd_nice},
    {"hold", rd_hold},
    {"kill_on_invalid_dep", rd_kill_on_invalid_dep},
    {"depends_on", rd_depends_on},
    {"account", rd_account},
    {"qos", rd_qos},
    {"partition", rd_partition},
    {"reservation", rd_reservation},
    {"comment", rd_comment},
    {"wckey", rd_wckey},
    {"resources", rd_resources},
    {"run", rd_run},
    {"restart", rd_restart},
    {"placement", rd_placement},
    {"data", rd_data},
    {"mail", rd_mail},
    {NULL, NULL},
};

/* Every section, so that a key put in the wrong one gets pointed to the right one. */
static const struct gs_schema_section sections[] = {
    {"", root_keys},
    {"resources", resources_keys},
    {"run", run_keys},
    {"restart", restart_keys},
    {"placement", placement_keys},
    {"data", gs_jobspec_data_keys},
    {"mail", gs_jobspec_mail_keys},
};

/* ---- checks across keys, defaults that depend on other keys ---- */

static void check_whole(struct gs_schema_ctx *c, const struct gs_toml_value *root)
{
    struct gs_jobspec *s = SPEC(c);
    const struct gs_toml_value *run = gs_toml_get(root, "run");
    const struct gs_toml_value *res = gs_toml_get(root, "resources");
    const struct gs_toml_value *at_run = run != NULL ? run : root;

    if (s->argv == NULL && s->script == NULL && c->nerrors == 0)
        REPORT_AT(c, at_run, "the job has nothing to run: set run.command or run.script");
    if (s->argv != NULL && s->script != NULL)
        REPORT_AT(c, gs_toml_get(run, "script"),
                  "run.command and run.script are both set; keep one");
    if (s->launcher == GS_LAUNCHER_TORCHRUN && s->script != NULL)
        REPORT_AT(c, gs_toml_get(run, "script"),
                  "run.launcher = \"torchrun\" runs run.command (the training script and its "
                  "arguments, as torchrun takes them), not run.script");
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
        s->stdout_pattern = gs_schema_strdup(c, GS_JOBSPEC_DEFAULT_STDOUT);
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
    struct gs_jobspec *spec = NULL;
    struct gs_toml_doc *doc = NULL;
    struct gs_schema_ctx c;
    struct gs_error err;
    int rc;

    if (filename == NULL)
        filename = "<job>";
    rc = gs_toml_parse(text, len, &doc, &err);
    if (rc < 0) {
        gs_buf_printf(errors, "%s:%d:%d: %s\n", filename, err.line, err.col, err.msg);
        return rc;
    }
    spec = gs_jobspec_new();
    rc = -ENOMEM;
    if (spec == NULL)
        goto out;
    gs_schema_init(&c, errors, filename, sections, sizeof(sections) / sizeof(sections[0]), spec);
    gs_schema_read_section(&c, gs_toml_root(doc), "");
    check_whole(&c, gs_toml_root(doc));
    if (spec->name == NULL && default_name(spec, filename) < 0)
        c.enomem = true;
    rc = gs_schema_finish(&c);
    if (rc == 0) {
        *ret_spec = spec;
        spec = NULL;
    }
out:
    gs_jobspec_free(spec);
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
    gs_jobdata_init(&spec->data);
    return spec;
}

void gs_jobspec_free(struct gs_jobspec *spec)
{
    if (spec == NULL)
        return;
    free(spec->name);
    free(spec->deps);
    free(spec->constraint);
    free(spec->prefer);
    gs_license_list_free(spec->licenses, spec->nlicenses);
    free(spec->mail_user);
    gs_schema_strv_free(spec->argv);
    free(spec->script);
    free(spec->workdir);
    free(spec->stdout_pattern);
    free(spec->stderr_pattern);
    free(spec->stdin_pattern);
    free(spec->rlimits);
    gs_schema_strv_free(spec->env);
    free(spec->partition);
    free(spec->account);
    free(spec->qos);
    free(spec->comment);
    free(spec->wckey);
    free(spec->clusters);
    free(spec->reservation);
    gs_jobdata_release(&spec->data);
    free(spec->source);
    gs_schema_strv_free(spec->nodelist);
    gs_schema_strv_free(spec->exclude);
    free(spec->submit_dir);
    free(spec->submit_host);
    free(spec->array.task_ids);
    gs_jobspec_het_clear(spec);
    free(spec);
}

static const char *const dep_names[] = {"after", "afterok", "afternotok", "afterany", "aftercorr"};

const char *gs_dep_type_name(enum gs_dep_type type)
{
    if ((int)type < 0 || type > GS_DEP_AFTERCORR)
        return "unknown";
    return dep_names[type];
}

/* Decimal digits at *p, at most max; advances *p. 0, or -EINVAL for none or too large. */
static int read_number(const char **p, uint64_t max, uint64_t *ret)
{
    uint64_t v = 0;
    const char *s = *p;

    if (*s < '0' || *s > '9')
        return -EINVAL;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (max - (uint64_t)(*s - '0')) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *ret = v;
    return 0;
}

int gs_dep_parse(const char *text, struct gs_dep *ret_dep)
{
    const char *colon = strchr(text, ':'), *p;
    struct gs_dep d = {0};
    uint64_t v;
    int type = -1;

    if (colon == NULL)
        return -EINVAL;
    for (int t = GS_DEP_AFTER; t <= GS_DEP_AFTERCORR; t++) {
        if (strlen(dep_names[t]) == (size_t)(colon - text) &&
            strncmp(text, dep_names[t], (size_t)(colon - text)) == 0)
            type = t;
    }
    p = colon + 1;
    if (type < 0 || read_number(&p, UINT64_MAX, &d.job_id) < 0 || d.job_id == 0)
        return -EINVAL;
    d.type = (enum gs_dep_type)type;
    if (p[0] == '_' && p[1] == '*') {
        d.target = GS_DEP_ARRAY;
        p += 2;
    } else if (*p == '_') {
        p++;
        if (read_number(&p, UINT32_MAX, &v) < 0)
            return -EINVAL;
        d.target = GS_DEP_TASK;
        d.task_id = (uint32_t)v;
    }
    /* aftercorr pairs tasks: naming one of the other array's makes no sense */
    if (d.type == GS_DEP_AFTERCORR && d.target == GS_DEP_TASK)
        return -EINVAL;
    if (*p == '+' && d.type == GS_DEP_AFTER) {
        p++;
        if (read_number(&p, UINT32_MAX, &v) < 0)
            return -EINVAL;
        d.delay_min = (uint32_t)v;
    }
    if (*p != '\0')
        return -EINVAL;
    *ret_dep = d;
    return 0;
}

bool gs_dep_valid(const struct gs_dep *d)
{
    return d->job_id != 0 && (int)d->type >= GS_DEP_AFTER && d->type <= GS_DEP_AFTERCORR &&
           (unsigned)d->target <= GS_DEP_ARRAY &&
           !(d->type == GS_DEP_AFTERCORR && d->target == GS_DEP_TASK) &&
           (d->delay_min == 0 || d->type == GS_DEP_AFTER);
}

const char *gs_dep_format(const struct gs_dep *d, char buf[GS_DEP_TEXT_SIZE])
{
    int n = snprintf(buf, GS_DEP_TEXT_SIZE, "%s:%llu", gs_dep_type_name(d->type),
                     (unsigned long long)d->job_id);

    if (n > 0 && d->target == GS_DEP_TASK)
        n += snprintf(buf + n, GS_DEP_TEXT_SIZE - (size_t)n, "_%u", d->task_id);
    else if (n > 0 && d->target == GS_DEP_ARRAY)
        n += snprintf(buf + n, GS_DEP_TEXT_SIZE - (size_t)n, "_*");
    if (n > 0 && d->delay_min > 0)
        snprintf(buf + n, GS_DEP_TEXT_SIZE - (size_t)n, "+%u", d->delay_min);
    return buf;
}

static bool blank(const char *s)
{
    return s == NULL || strspn(s, " \t\r\n") == strlen(s);
}

static int check_resources(const struct gs_jobspec *s, struct gs_error *err)
{
    char why[160];

    if (s->nodes < 1 || s->nodes > GS_JOBSPEC_NODES_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "resources.nodes must be 1 to %d",
                            GS_JOBSPEC_NODES_MAX);
    if (s->gpus_per_node > GS_JOBSPEC_GPUS_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "resources.gpus_per_node must be 0 to %d",
                            GS_JOBSPEC_GPUS_MAX);
    if (s->cpus_per_gpu > GS_JOBSPEC_CPUS_MAX || s->cpus_per_task > GS_JOBSPEC_CPUS_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "cpus per GPU or task must be at most %d",
                            GS_JOBSPEC_CPUS_MAX);
    if ((s->cpus_per_gpu > 0) == (s->cpus_per_task > 0))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "exactly one of resources.cpus_per_gpu and cpus_per_task is set");
    if (s->cpus_per_gpu > 0 && s->gpus_per_node == 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "resources.cpus_per_gpu needs resources.gpus_per_node > 0");
    if (s->time_limit_s == 0)
        return gs_error_set(err, -EINVAL, 0, 0, "resources.time_limit must not be zero");
    if (gs_license_list_check(s->licenses, s->nlicenses, why, sizeof(why)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "resources.licenses: %s", why);
    return 0;
}

/* What a client may send in [mail]: gschedd hands the address to a program. */
static int check_mail(const struct gs_jobspec *s, struct gs_error *err)
{
    char why[120];

    if ((s->mail_types & ~(uint32_t)GS_MAIL_KNOWN) != 0)
        return gs_error_set(err, -EINVAL, 0, 0, "mail.type has an unknown type");
    if (s->mail_user != NULL && gs_mail_user_check(s->mail_user, why, sizeof(why)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "mail.user: %s", why);
    return 0;
}

static uint32_t tasks_max(const struct gs_jobspec *s)
{
    return gs_jobspec_tasks_per_node(s);
}

uint32_t gs_jobspec_ntasks(const struct gs_jobspec *s)
{
    uint32_t sum = 0;

    if (s->nhet == 0)
        return s->ntasks > 0 ? s->ntasks : s->nodes * gs_jobspec_tasks_per_node(s);
    for (uint32_t k = 0; k <= s->nhet; k++) {
        struct gs_jobspec view;

        gs_jobspec_het_view(s, k, &view);
        sum += gs_jobspec_ntasks(&view);
    }
    return sum;
}

uint32_t gs_jobspec_node_tasks(const struct gs_jobspec *s, uint32_t node)
{
    uint32_t n = s->nodes > 0 ? s->nodes : 1;

    if (s->nhet > 0) {
        uint32_t k = gs_jobspec_het_of_node(s, node);
        struct gs_jobspec view;

        gs_jobspec_het_view(s, k, &view);
        return gs_jobspec_node_tasks(&view, node - gs_jobspec_het_first_node(s, k));
    }

    if (s->ntasks == 0)
        return gs_jobspec_tasks_per_node(s);
    return s->ntasks / n + (node < s->ntasks % n ? 1 : 0);
}

static const char *bad_placeholder(const struct gs_jobspec *s, const char *pattern)
{
    return s->slurm ? gs_jobspec_slurm_bad_placeholder(pattern)
                    : gs_jobspec_bad_placeholder(pattern);
}

/* The fields only sbatch sets: names of nodes, the array, the warning signal. */
static int check_slurm(const struct gs_jobspec *s, struct gs_error *err)
{
    const struct gs_job_array *a = &s->array;

    for (size_t i = 0; i < s->nnodelist; i++) {
        if (s->nodelist[i][0] == '\0')
            return gs_error_set(err, -EINVAL, 0, 0, "resources.nodelist has an empty name");
    }
    for (size_t i = 0; i < s->nexclude; i++) {
        if (s->exclude[i][0] == '\0')
            return gs_error_set(err, -EINVAL, 0, 0, "resources.exclude has an empty name");
    }
    if (s->nnodelist > s->nodes)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "resources.nodelist names %zu nodes but the job asks for %u",
                            s->nnodelist, s->nodes);
    if (s->ntasks > 0 &&
        (s->ntasks < s->nodes || (uint64_t)s->ntasks > (uint64_t)s->nodes * tasks_max(s)))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "resources.ntasks %u does not fit %u nodes of at most %u tasks",
                            s->ntasks, s->nodes, tasks_max(s));
    for (size_t i = 1; i < a->ntask_ids; i++) {
        if (a->task_ids[i] <= a->task_ids[i - 1])
            return gs_error_set(err, -EINVAL, 0, 0, "array.task_ids must ascend");
    }
    if (s->warn_signal >= 65)
        return gs_error_set(err, -EINVAL, 0, 0, "run.warn_signal %u is not a signal",
                            s->warn_signal);
    return 0;
}

static int check_run(const struct gs_jobspec *s, struct gs_error *err)
{
    const char *bad;

    /* A batch job's argv is its script's arguments ($1 ...), possibly none. */
    if (s->batch && s->script == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "a batch job needs run.script");
    if (!s->batch && (s->argv != NULL) == (s->script != NULL))
        return gs_error_set(err, -EINVAL, 0, 0, "exactly one of run.command and run.script");
    if (!s->batch && s->argv != NULL && (s->argc == 0 || s->argv[0][0] == '\0'))
        return gs_error_set(err, -EINVAL, 0, 0, "run.command must name a program");
    if (s->script != NULL && blank(s->script))
        return gs_error_set(err, -EINVAL, 0, 0, "run.script is empty");
    if (s->tasks_per_gpu ? s->gpus_per_node == 0
                         : s->tasks_per_node < 1 || s->tasks_per_node > GS_JOBSPEC_CPUS_MAX)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "run.tasks_per_node must be 1 to %d, or "
                            "per-gpu with GPUs",
                            GS_JOBSPEC_CPUS_MAX);
    if (s->batch && s->script == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "run.batch needs a script");
    if (s->batch && s->launcher != GS_LAUNCHER_NONE)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "run.launcher is for job files; a batch script runs its launcher "
                            "itself (gsched mpirun, srun torchrun)");
    if (s->launcher == GS_LAUNCHER_TORCHRUN && s->script != NULL)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "run.launcher = \"torchrun\" runs run.command (the training script "
                            "and its arguments, as torchrun takes them), not run.script");
    if ((unsigned)s->launcher > GS_LAUNCHER_TORCHRUN)
        return gs_error_set(err, -EINVAL, 0, 0, "run.launcher %u is unknown",
                            (unsigned)s->launcher);
    if (s->stdout_pattern == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "run.stdout is missing");
    bad = bad_placeholder(s, s->stdout_pattern);
    if (bad == NULL && s->stderr_pattern != NULL)
        bad = bad_placeholder(s, s->stderr_pattern);
    if (bad == NULL && s->stdin_pattern != NULL)
        bad = bad_placeholder(s, s->stdin_pattern);
    if (bad != NULL)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "unknown placeholder '%.2s' in run.stdout, run.stderr or "
                            "run.stdin",
                            bad);
    for (size_t i = 0; i < s->nenv; i++) {
        const char *eq = strchr(s->env[i], '=');
        if (eq == NULL || !gs_jobspec_env_name_ok(s->env[i], (size_t)(eq - s->env[i])))
            return gs_error_set(err, -EINVAL, 0, 0, "run.env: '%s' is not NAME=VALUE", s->env[i]);
    }
    return 0;
}

int gs_jobspec_check(const struct gs_jobspec *s, struct gs_error *err)
{
    char why[160];
    int rc;

    if (s->name == NULL || !gs_jobspec_name_ok(s->name))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "name must be 1 to %d characters without '/', "
                            "tabs or newlines",
                            GS_JOBSPEC_NAME_MAX);
    if (s->priority < -GS_JOBSPEC_PRIORITY_MAX || s->priority > GS_JOBSPEC_PRIORITY_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "priority must be from %d to %d",
                            -GS_JOBSPEC_PRIORITY_MAX, GS_JOBSPEC_PRIORITY_MAX);
    if (s->deadline_ms != 0 && s->begin_ms > s->deadline_ms)
        return gs_error_set(err, -EINVAL, 0, 0, "the deadline comes before the begin time");
    if (s->nice < -GS_JOBSPEC_NICE_MAX || s->nice > GS_JOBSPEC_NICE_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "nice must be from %d to %d", -GS_JOBSPEC_NICE_MAX,
                            GS_JOBSPEC_NICE_MAX);
    for (size_t i = 0; i < s->ndeps; i++) {
        if (!gs_dep_valid(&s->deps[i]))
            return gs_error_set(err, -EINVAL, 0, 0, "depends_on[%zu] is not a valid dependency", i);
    }
    if (gs_features_check(s->constraint, why, sizeof(why)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "resources.constraint: %s", why);
    if (gs_features_check(s->prefer, why, sizeof(why)) < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "resources.prefer: %s", why);
    /* The scheduler matches it against reservation names: one word, as a job file takes it. */
    if (s->reservation != NULL && !gs_jobspec_word_ok(s->reservation))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "reservation must be one name of 1 to %d letters, digits, "
                            "'_', '.' or '-'",
                            GS_JOBSPEC_NAME_MAX);
    if ((unsigned)s->kill_invalid_dep > GS_KILL_INVALID_DEP_NO)
        return gs_error_set(err, -EINVAL, 0, 0, "kill_on_invalid_dep is not a known value");
    if ((unsigned)s->gpu_affinity > GS_GPU_AFFINITY_ANY)
        return gs_error_set(err, -EINVAL, 0, 0, "placement.gpu_affinity is not a known value");
    if (s->switches > GS_JOBSPEC_NODES_MAX || s->switch_wait_s > GS_JOBSPEC_SWITCH_WAIT_MAX)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "placement.switches must be at most %d and switch_wait at most a "
                            "day",
                            GS_JOBSPEC_NODES_MAX);
    if (s->max_restarts > GS_JOBSPEC_RESTARTS_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "restart.max_restarts must be at most %d",
                            GS_JOBSPEC_RESTARTS_MAX);
    rc = check_resources(s, err);
    if (rc == 0)
        rc = check_run(s, err);
    if (rc == 0)
        rc = gs_jobdata_check(&s->data, err);
    if (rc == 0)
        rc = check_slurm(s, err);
    if (rc == 0)
        rc = check_mail(s, err);
    return rc < 0 ? rc : gs_jobspec_het_check(s, err);
}

static int expand_one(char code, const struct gs_pattern_vars *v, struct gs_buf *out)
{
    switch (code) {
    case 'j':
        return gs_buf_printf(out, "%llu", (unsigned long long)v->job_id);
    case 't':
        return gs_buf_printf(out, "%u", v->rank);
    case 'n':
        return gs_buf_append_str(out, v->node != NULL ? v->node : "");
    case 'x':
        return gs_buf_append_str(out, v->job_name != NULL ? v->job_name : "");
    case 'u':
        return gs_buf_append_str(out, v->user != NULL ? v->user : "");
    case '%':
        return gs_buf_putc(out, '%');
    default:
        return -EINVAL;
    }
}

void gs_jobspec_pattern_vars(const struct gs_jobspec *spec, uint64_t job_id, uint32_t rank,
                             const char *node, uint32_t node_rank, const char *user,
                             struct gs_pattern_vars *ret)
{
    *ret = (struct gs_pattern_vars){
        .job_id = job_id,
        .rank = rank,
        .node = node,
        .job_name = spec->name,
        .user = user,
        .slurm = spec->slurm,
        .array_job_id = spec->array.array_job_id,
        .array_task_id = spec->array.task_id,
        .node_rank = node_rank,
    };
}

/* Slurm's NO_VAL: what %a stands for outside an array, as sbatch writes it. */
#define SLURM_NO_ARRAY_TASK 4294967294u

/* One Slurm placeholder, numbers zero-padded to width (sbatch's "%4a" is "0007"). */
static int expand_slurm(char code, int width, const struct gs_pattern_vars *v, struct gs_buf *out)
{
    unsigned long long num;

    switch (code) {
    case 'A':
        num = v->array_job_id != 0 ? v->array_job_id : v->job_id;
        break;
    case 'a':
        num = v->array_job_id != 0 ? v->array_task_id : SLURM_NO_ARRAY_TASK;
        break;
    case 'j':
        num = v->job_id;
        break;
    case 'J':
        if (v->step == 0)
            return gs_buf_printf(out, "%0*llu", width, (unsigned long long)v->job_id);
        return gs_buf_printf(out, "%0*llu.%u", width, (unsigned long long)v->job_id, v->step - 1);
    case 'n':
        num = v->node_rank;
        break;
    case 't':
        num = v->rank;
        break;
    case 'N':
        return gs_buf_append_str(out, v->node != NULL ? v->node : "");
    case 's': /* the batch shell's step is Slurm's "batch" */
        if (v->step == 0)
            return gs_buf_append_str(out, "batch");
        num = v->step - 1;
        break;
    default:
        return expand_one(code, v, out);
    }
    return gs_buf_printf(out, "%0*llu", width, num);
}

int gs_jobspec_expand_pattern(const char *pattern, const struct gs_pattern_vars *vars,
                              struct gs_buf *out)
{
    int rc = 0;

    for (const char *p = pattern; rc == 0 && *p != '\0'; p++) {
        int width = 0;

        if (*p != '%') {
            rc = gs_buf_putc(out, *p);
            continue;
        }
        p++;
        while (vars->slurm && *p >= '0' && *p <= '9' && width < 64)
            width = width * 10 + (*p++ - '0');
        if (*p == '\0')
            rc = -EINVAL;
        else if (vars->slurm)
            rc = strchr("jJAaxNnstu%", *p) != NULL ? expand_slurm(*p, width, vars, out) : -EINVAL;
        else
            rc = expand_one(*p, vars, out);
    }
    return rc;
}
