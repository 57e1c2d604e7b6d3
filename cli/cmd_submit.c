/*
 * cmd_submit.c: `gsched submit FILE.toml [--wait] [--json] [--parsable] [--hold]
 * [--socket PATH]`: reads the job file exactly as `gsched check` does (any problem is
 * printed as FILE:LINE:COL and nothing is sent), makes its paths absolute (gschedd and the
 * workers do not run in the user's directory), adds who submits, and sends a
 * SubmitRequest. With --wait it then waits for the job's end like `gsched wait` and exits
 * with the job's status.
 */
#include "cli/commands.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/data_resolve.h"
#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "cli/wait.h"
#include "common/error.h"
#include "common/jobspec.h"
#include "common/path.h"
#include "common/toml.h"

struct submit_args {
    const char *file;
    const char *socket_opt;
    bool wait;
    bool json;
    bool parsable;
    bool hold;
    bool no_export;
};

static const struct cli_opt submit_opts[] = {
    {"--wait", "-W", false, 'w'}, {"--json", NULL, false, 'j'},  {"--parsable", NULL, false, 'p'},
    {"--hold", "-H", false, 'H'}, {"--socket", NULL, true, 's'}, {"--no-export", NULL, false, 'E'},
    {NULL, NULL, false, 0},
};

/* Returns 0, or the exit status of a usage error. */
static int parse_args(int argc, char **argv, struct submit_args *s)
{
    struct cli_args a;
    int opt;

    cli_args_init(&a, argc, argv);
    while ((opt = cli_args_next(&a, submit_opts)) > 0) {
        if (opt == CLI_ARGS_OPERAND && s->file != NULL)
            return cli_usage_error("submit", "one job file at a time ('%s')", a.value);
        if (opt == CLI_ARGS_OPERAND)
            s->file = a.value;
        else if (opt == 'w')
            s->wait = true;
        else if (opt == 'j')
            s->json = true;
        else if (opt == 'p')
            s->parsable = true;
        else if (opt == 'H')
            s->hold = true;
        else if (opt == 'E')
            s->no_export = true;
        else if (opt == 's')
            s->socket_opt = a.value;
    }
    if (opt < 0)
        return cli_args_error("submit", &a);
    if (s->file == NULL)
        return cli_usage_error("submit", "which job file? (gsched submit JOB.toml)");
    if (s->json && s->parsable)
        return cli_usage_error("submit", "--json and --parsable do not go together");
    return 0;
}

static bool is_stdin(const char *file)
{
    return strcmp(file, "-") == 0;
}

static int load_spec(const char *file, struct gs_jobspec **ret_spec)
{
    struct gs_buf text = GS_BUF_INIT, errors = GS_BUF_INIT;
    int rc = cli_read_file(file, &text); /* says why itself */

    if (rc < 0)
        goto out;
    rc = gs_jobspec_parse_toml(text.data != NULL ? text.data : "", text.len,
                               is_stdin(file) ? "<stdin>" : file, ret_spec, &errors);
    if (rc < 0 && errors.len > 0)
        fputs(errors.data, stderr);
    else if (rc < 0)
        fprintf(stderr, "gsched submit: %s: %s\n", file, gs_strerror(rc));
out:
    gs_buf_release(&text);
    gs_buf_release(&errors);
    return rc;
}

/*
 * Replaces the spec's workdir by its absolute form (the current directory when unset) and
 * appends the job file's absolute path to source ("" for standard input).
 */
static int absolute_paths(struct gs_jobspec *spec, const char *file, struct gs_buf *source)
{
    struct gs_buf workdir = GS_BUF_INIT;
    char cwd[4096];
    int rc;

    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        rc = -errno;
        fprintf(stderr, "gsched submit: current directory: %s\n", gs_strerror(rc));
        return rc;
    }
    rc = gs_path_absolute(cwd, spec->workdir != NULL ? spec->workdir : ".", &workdir);
    if (rc == 0 && !is_stdin(file))
        rc = gs_path_absolute(cwd, file, source);
    if (rc == 0) {
        free(spec->workdir);
        spec->workdir = gs_buf_detach(&workdir, NULL);
        rc = spec->workdir != NULL ? 0 : -ENOMEM;
    }
    if (rc < 0)
        fprintf(stderr, "gsched submit: %s\n", gs_strerror(rc));
    gs_buf_release(&workdir);
    return rc;
}

/*
 * [data] manifest: the dataset read here, as the submitting user, so that a missing or
 * malformed dataset is an error now and gschedd gets its id, shard count and bytes.
 */
static int resolve_data(struct gs_jobspec *spec, const char *file, const char *socket_opt)
{
    struct gs_error err = {0};
    int rc;

    if (spec->data.manifest == NULL)
        return 0;
    rc = cli_data_resolve(spec->data.manifest, socket_opt, &spec->data, &err);
    if (rc < 0)
        fprintf(stderr, "gsched submit: %s: data.manifest: %s\n", is_stdin(file) ? "-" : file,
                err.msg);
    return rc;
}

static int print_submitted(const Gs__SubmitReply *r, const struct submit_args *s)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc = 0;

    for (size_t i = 0; i < r->n_warnings; i++)
        fprintf(stderr, "gsched submit: warning: %s\n", r->warnings[i]);
    if (s->parsable) {
        printf("%llu\n", (unsigned long long)r->job_id);
    } else if (!s->json) {
        printf("Submitted job %llu\n", (unsigned long long)r->job_id);
    } else {
        gs_json_init(&j, &out);
        gs_json_object_begin(&j);
        gs_json_kv_uint(&j, "job_id", r->job_id);
        gs_json_kv_string(&j, "state", cli_job_state_name(r->state));
        gs_json_kv_bool(&j, "retried", r->retried);
        cli_json_kv_strings(&j, "warnings", r->warnings, r->n_warnings);
        gs_json_object_end(&j);
        rc = cli_json_write(&j, &out, stdout);
    }
    fflush(stdout);
    gs_buf_release(&out);
    return rc;
}

/* Sends the spec; on success stores the new job's id. */
/*
 * The scheduler's reason for refusing a job starts with the field it is about
 * ("resources.gpus_per_node: no node ..."): printed at that field's place in the file, the
 * way the file's own mistakes are, or after the file's name when the field was left out.
 */
static void print_refusal(const char *file, const char *message)
{
    struct gs_buf text = GS_BUF_INIT, field = GS_BUF_INIT;
    const char *colon = strstr(message, ": "), *name = is_stdin(file) ? "<stdin>" : file;
    const struct gs_toml_value *v = NULL;
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    size_t n = colon != NULL ? (size_t)(colon - message) : 0;

    if (n == 0 || strspn(message, "abcdefghijklmnopqrstuvwxyz_.") != n ||
        gs_buf_append(&field, message, n) < 0) {
        fprintf(stderr, "gsched submit: %s: %s\n", name, message);
        goto out;
    }
    if (!is_stdin(file) && cli_read_file(file, &text) == 0 &&
        gs_toml_parse(text.data != NULL ? text.data : "", text.len, &doc, &err) == 0)
        v = gs_toml_get_path(gs_toml_root(doc), field.data);
    if (v != NULL)
        fprintf(stderr, "%s:%d:%d: %s\n", name, gs_toml_line(v), gs_toml_col(v), message);
    else
        fprintf(stderr, "%s: %s\n", name, message);
out:
    gs_toml_free(doc);
    gs_buf_release(&text);
    gs_buf_release(&field);
}

static int send_spec(const char *path, const struct gs_jobspec *spec, const char *source,
                     const struct submit_args *s, uint64_t *ret_id)
{
    const struct passwd *pw = getpwuid(getuid());
    Gs__Envelope *reply = NULL;
    int rc = cli_submit_send(path, spec, source, false, pw != NULL ? pw->pw_name : "",
                             "gsched submit", &reply);

    if (rc == 0 && reply->body_case == GS__ENVELOPE__BODY_ERROR) {
        print_refusal(s->file, reply->error->message);
        for (size_t i = 0; i < reply->error->n_details; i++)
            fprintf(stderr, "%s\n", reply->error->details[i]);
        rc = reply->error->code < 0 ? reply->error->code : -EIO;
    } else if (rc == 0 && reply->body_case != GS__ENVELOPE__BODY_SUBMIT_REPLY) {
        fprintf(stderr, "gsched: gschedd answered with %s\n", gs_proto_body_name(reply->body_case));
        rc = -EPROTO;
    }
    if (rc == 0)
        rc = print_submitted(reply->submit_reply, s);
    if (rc == 0)
        *ret_id = reply->submit_reply->job_id;
    gs_proto_envelope_free(reply);
    return rc;
}

extern char **environ;

/*
 * The submitter's environment goes with the job, as sbatch's --export=ALL does, so a task
 * finds the same PATH (a virtualenv's python), PYTHONPATH and so on; the job file's env
 * wins over it, and names a job file could not hold (bash's exported functions) stay out.
 */
static int export_environment(struct gs_jobspec *spec)
{
    size_t n = 0, k = 0;
    char **v;

    for (char **e = environ; e != NULL && *e != NULL; e++)
        n++;
    v = calloc(n + spec->nenv + 1, sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - environ[i]) : 0;
        bool overridden = false;

        if (eq == NULL || !gs_jobspec_env_name_ok(environ[i], klen))
            continue;
        for (size_t j = 0; j < spec->nenv && !overridden; j++)
            overridden = strncmp(spec->env[j], environ[i], klen + 1) == 0;
        if (!overridden && (v[k] = strdup(environ[i])) != NULL)
            k++;
    }
    for (size_t j = 0; j < spec->nenv; j++)
        v[k++] = spec->env[j];
    free(spec->env);
    spec->env = v;
    spec->nenv = k;
    return 0;
}

int cli_cmd_submit(int argc, char **argv)
{
    struct submit_args s = {0};
    struct gs_jobspec *spec = NULL;
    struct gs_buf source = GS_BUF_INIT;
    char path[256];
    uint64_t id = 0;
    int status = parse_args(argc, argv, &s);

    if (status != 0)
        return status;
    status = 1;
    if (load_spec(s.file, &spec) < 0 || absolute_paths(spec, s.file, &source) < 0 ||
        resolve_data(spec, s.file, s.socket_opt) < 0)
        goto out;
    if (s.hold)
        spec->hold = true;
    if (!s.no_export && export_environment(spec) < 0)
        goto out;
    if (cli_socket_path(s.socket_opt, path, sizeof(path)) < 0 ||
        send_spec(path, spec, source.data != NULL ? source.data : "", &s, &id) < 0)
        goto out;
    status = 0;
    if (s.wait) {
        struct cli_wait_opts o = {
            .cmd = "submit",
            .until = GS__WAIT_FOR__WAIT_FOR_END,
            .poll_ms = 1000,
            .json = s.json,
            .lines = s.parsable ? stderr : stdout, /* stdout holds just the id */
        };

        status = cli_wait_jobs(path, &id, 1, &o);
    }
out:
    gs_jobspec_free(spec);
    gs_buf_release(&source);
    return status;
}
