/*
 * cmd_sbatch.c: `sbatch` (also `gsched sbatch`), submitting a Slurm batch script unchanged:
 *
 *     sbatch [OPTIONS] SCRIPT [ARGS...]     the script's #SBATCH lines, then OPTIONS over them
 *     sbatch [OPTIONS] --wrap "CMD"         CMD as a one-line sh script
 *     sbatch [OPTIONS] < SCRIPT             the script from standard input
 *     sbatch [OPTS0] : [OPTS1] ... SCRIPT    a heterogeneous job's components, as the
 *                                            script's "#SBATCH hetjob" lines separate them
 *
 * slurm/sbatch.c reads the options, slurm/sbatch_spec.c turns them into a gsched job;
 * this file reads the script, says what they found (each problem as "sbatch: error: ...",
 * exit 1, nothing sent), and sends a SubmitRequest as `gsched submit` does. On success it
 * prints "Submitted batch job N" (--parsable: "N"), as Slurm's sbatch. --test-only prints
 * the job as gsched would submit it (key=value lines, or one JSON object with --json) and
 * asks the scheduler whether it would take it, without queueing anything.
 *
 * gsched adds --json and --socket PATH; they and --wait (-W: wait for the job's end and
 * exit with its status, as Slurm's --wait) are taken out before the sbatch options are
 * read, which take #SBATCH --wait too. Usage errors of those exit 2. -h, --help and --usage
 * print the options the parser's own table holds (gs_sbatch_options_help), so the list
 * cannot claim one it does not take.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "cli/wait.h"
#include "common/error.h"
#include "common/json.h"
#include "common/path.h"
#include "slurm/sbatch.h"
#include "slurm/sbatch_spec.h"

#define CMD "sbatch"

extern char **environ;

/* The command line, split: gsched's own options, sbatch's, the script and its arguments. */
struct sbatch_args {
    const char *socket_opt;
    bool json;
    bool wait;
    char **opts; /* sbatch's options, borrowed from argv; the array is ours */
    int nopts;
    const char *script; /* NULL: --wrap or standard input */
    char **script_args; /* NULL-terminated, borrowed from argv */
    bool help;
};

__attribute__((format(printf, 1, 2))) static int usage(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, CMD ": error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see gsched --help)\n");
    return 2;
}

/*
 * Whether word (followed by a stand-in value) is the script, an option that takes the next
 * word as its value, or an option on its own: gs_sbatch_script_index's reading of it.
 */
static int word_kind(const char *word)
{
    char *probe[] = {(char *)word, "value", NULL};

    return gs_sbatch_script_index(2, probe); /* 0 script, 2 takes a value, 1 on its own */
}

/* sbatch --help: how it is called, then every option it takes, warns about or refuses. */
static int help(void)
{
    struct gs_buf out = GS_BUF_INIT;
    int rc;

    gs_buf_append_str(
        &out, "Usage: sbatch [OPTIONS] SCRIPT [ARGS...]   (also gsched sbatch)\n"
              "       sbatch [OPTIONS] --wrap=COMMAND\n"
              "       sbatch [OPTIONS] < SCRIPT\n"
              "       sbatch [OPTIONS] : [OPTIONS] ... SCRIPT   (heterogeneous job)\n"
              "Submits a batch script; its #SBATCH lines take the same options, the\n"
              "command line's over them. docs/slurm.md says what each does here.\n"
              "gsched's own: --json (the reply, or --test-only's job, as JSON),\n"
              "--socket PATH (gschedd's socket), -W, --wait (exit with the job's status).\n");
    rc = gs_sbatch_options_help(&out);
    if (rc == 0)
        fputs(out.data, stdout);
    else
        fprintf(stderr, CMD ": error: out of memory\n");
    gs_buf_release(&out);
    return rc == 0 ? 0 : 1;
}

/* Returns 0, or the exit status of a usage error. */
static int split_args(int argc, char **argv, struct sbatch_args *a)
{
    int i = 1;

    a->opts = calloc((size_t)argc + 1, sizeof(*a->opts));
    if (a->opts == NULL)
        return 1;
    while (i < argc) {
        const char *w = argv[i];

        if (strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0 || strcmp(w, "--usage") == 0) {
            a->help = true;
            return 0;
        } else if (strcmp(w, "--json") == 0) {
            a->json = true;
        } else if (strcmp(w, "--wait") == 0 || strcmp(w, "-W") == 0) {
            a->wait = true;
        } else if (strncmp(w, "--socket=", 9) == 0) {
            a->socket_opt = w + 9;
        } else if (strcmp(w, "--socket") == 0) {
            if (++i == argc)
                return usage("%s needs a value", w);
            a->socket_opt = argv[i];
        } else if (strcmp(w, "--") == 0) {
            i++;
            break;
        } else if (strcmp(w, ":") == 0) {
            a->opts[a->nopts++] = argv[i]; /* between components: the parser's to read */
        } else if (word_kind(w) == 0) {
            break;
        } else {
            a->opts[a->nopts++] = argv[i];
            if (word_kind(w) == 2 && i + 1 < argc)
                a->opts[a->nopts++] = argv[++i];
        }
        i++;
    }
    if (i < argc) {
        a->script = argv[i];
        a->script_args = argv + i + 1;
    }
    return 0;
}

/* --wrap among the options (by any unique prefix, as the parser reads it). */
static bool wraps(const struct sbatch_args *a)
{
    for (int i = 0; i < a->nopts; i++)
        if (strncmp(a->opts[i], "--wr", 4) == 0)
            return true;
    return false;
}

static int read_script(const char *path, struct gs_buf *out)
{
    FILE *f = path != NULL ? fopen(path, "rb") : stdin;
    int rc = 0;

    if (f == NULL) {
        rc = -errno;
        fprintf(stderr, CMD ": error: Unable to open file %s: %s\n", path, gs_strerror(rc));
        return rc;
    }
    rc = gs_buf_read_stream(out, f);
    if (f != stdin)
        fclose(f);
    if (rc < 0)
        fprintf(stderr, CMD ": error: %s: %s\n", path != NULL ? path : "standard input",
                gs_strerror(rc));
    return rc;
}

/* Prints each line of text as "sbatch: KIND: line". */
static void print_lines(const struct gs_buf *text, const char *kind)
{
    const char *p = text->data;

    while (p != NULL && *p != '\0') {
        size_t n = strcspn(p, "\n");

        fprintf(stderr, CMD ": %s%s%.*s\n", kind != NULL ? kind : "", kind != NULL ? ": " : "",
                (int)n, p);
        p += n + (p[n] == '\n');
    }
}

/* The fixed parts of the submitting environment. */
struct where {
    char cwd[4096];
    char host[256];
    const char *user;
};

static int where_init(struct where *w)
{
    const struct passwd *pw = getpwuid(getuid());

    if (getcwd(w->cwd, sizeof(w->cwd)) == NULL) {
        int rc = -errno;

        fprintf(stderr, CMD ": error: current directory: %s\n", gs_strerror(rc));
        return rc;
    }
    if (gethostname(w->host, sizeof(w->host)) < 0)
        snprintf(w->host, sizeof(w->host), "localhost");
    w->host[sizeof(w->host) - 1] = '\0';
    w->user = pw != NULL ? pw->pw_name : "";
    return 0;
}

/* -v: the options as read, one "sbatch: key=value" line each on stderr, as --test-only
 * names them. */
static void print_options(const struct gs_sbatch *sb)
{
    struct gs_buf kv = GS_BUF_INIT;

    if (gs_sbatch_to_kv(sb, &kv) == 0 && kv.data != NULL) {
        fprintf(stderr, CMD ": defined options\n");
        print_lines(&kv, NULL);
    }
    gs_buf_release(&kv);
}

/* Reads the script and the options into a spec; prints what is wrong. Returns 0 or < 0. */
static int build(const struct sbatch_args *a, const struct where *w, struct gs_sbatch **ret_sb,
                 struct gs_jobspec **ret_spec)
{
    struct gs_buf text = GS_BUF_INIT, errors = GS_BUF_INIT, warnings = GS_BUF_INIT;
    bool on_stdin = a->script == NULL && !wraps(a);
    const char *name = a->script != NULL ? a->script : "<stdin>";
    struct gs_sbatch_env env = {
        .cwd = w->cwd,
        .hostname = w->host,
        .user = w->user,
        .envp = environ,
        .script_on_stdin = on_stdin,
    };
    int rc = 0;

    if (a->script != NULL || on_stdin)
        rc = read_script(a->script, &text);
    if (rc < 0)
        goto out;
    rc =
        gs_sbatch_parse(a->script != NULL || on_stdin ? (text.data != NULL ? text.data : "") : NULL,
                        text.len, name, a->nopts, a->opts, ret_sb, &errors, &warnings);
    if (rc == 0)
        rc = gs_sbatch_to_jobspec(*ret_sb, text.data, a->script_args, &env, ret_spec, &errors,
                                  &warnings);
    if (rc < 0 || !(*ret_sb)->quiet) /* -Q: errors only */
        print_lines(&warnings, "warning");
    if (rc == 0 && (*ret_sb)->verbose)
        print_options(*ret_sb);
    print_lines(&errors, "error");
    if (rc < 0 && errors.len == 0)
        fprintf(stderr, CMD ": error: %s\n", gs_strerror(rc));
out:
    gs_buf_release(&text);
    gs_buf_release(&errors);
    gs_buf_release(&warnings);
    return rc;
}

/* ---- talking to gschedd ---- */

/* A refusal, as Slurm words it. */
static void refused(const Gs__ErrorReply *e)
{
    fprintf(stderr, CMD ": error: Batch job submission failed: %s\n", e->message);
    for (size_t i = 0; i < e->n_details; i++)
        fprintf(stderr, CMD ": error: %s\n", e->details[i]);
}

/*
 * Sends spec (validate_only for --test-only) to the scheduler --socket names, whose path
 * goes in path, and stores its SubmitReply in *ret_reply. Returns 0; 1 when it refused the
 * job (said as Slurm says it); < 0 when it could not be asked or gave no SubmitReply
 * (said).
 */
static int send_spec(const struct sbatch_args *a, const struct gs_jobspec *spec, const char *source,
                     bool validate_only, const char *user, char *path, size_t size,
                     Gs__Envelope **ret_reply)
{
    int rc = cli_socket_path(a->socket_opt, path, size);

    if (rc == 0)
        rc = cli_submit_send(path, spec, source, validate_only, user, CMD ": error", ret_reply);
    if (rc < 0)
        return rc;
    if ((*ret_reply)->body_case == GS__ENVELOPE__BODY_ERROR) {
        refused((*ret_reply)->error);
        return 1;
    }
    if ((*ret_reply)->body_case != GS__ENVELOPE__BODY_SUBMIT_REPLY) {
        fprintf(stderr, CMD ": error: gschedd answered with %s\n",
                gs_proto_body_name((*ret_reply)->body_case));
        return -EPROTO;
    }
    return 0;
}

static void print_reply_warnings(const Gs__SubmitReply *r)
{
    for (size_t i = 0; i < r->n_warnings; i++)
        fprintf(stderr, CMD ": warning: %s\n", r->warnings[i]);
}

static int print_submitted(const Gs__SubmitReply *r, const struct sbatch_args *a,
                           const struct gs_sbatch *sb)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc = 0;

    if (!sb->quiet)
        print_reply_warnings(r);
    if (a->json) {
        gs_json_init(&j, &out);
        gs_json_object_begin(&j);
        gs_json_kv_uint(&j, "job_id", r->job_id);
        gs_json_kv_uint(&j, "array_size", r->array_size);
        gs_json_kv_string(&j, "partition", r->partition);
        gs_json_kv_bool(&j, "retried", r->retried);
        cli_json_kv_strings(&j, "warnings", r->warnings, r->n_warnings);
        gs_json_object_end(&j);
        rc = cli_json_write(&j, &out, stdout);
    } else if (sb->parsable) {
        printf("%llu\n", (unsigned long long)r->job_id); /* JOBID=$(sbatch --parsable ...) */
    } else if (!sb->quiet) { /* -Q: Slurm's sbatch prints nothing on success */
        printf("Submitted batch job %llu\n", (unsigned long long)r->job_id);
    }
    fflush(stdout);
    gs_buf_release(&out);
    return rc;
}

/* ---- the two modes ---- */

static const char *script_label(const struct sbatch_args *a, const struct gs_sbatch *sb)
{
    if (sb->wrap != NULL)
        return "(wrap)";
    return a->script != NULL ? a->script : "(stdin)";
}

/*
 * When and where the scheduler expects the job to start, in Slurm's words ("Job N to start
 * at T using C processors on nodes L in partition P", without N: none was given), or why
 * it cannot say. A scheduler older than protocol 1.18 says neither.
 */
static void print_estimate(const Gs__SubmitReply *r)
{
    char at[32];

    if (r->n_preempts > 0) {
        fprintf(stderr,
                CMD ": Job would start now, at %s using %u processors in partition %s, "
                    "by preempting jobs ",
                cli_format_time(r->expected_start_ms, at, sizeof(at)), r->cpus, r->partition);
        for (size_t i = 0; i < r->n_preempts; i++)
            fprintf(stderr, "%s%llu", i > 0 ? "," : "", (unsigned long long)r->preempts[i]);
        fprintf(stderr, " on nodes %s\n", r->sched_nodes);
    } else if (r->expected_start_ms != 0 && r->sched_nodes[0] != '\0')
        fprintf(stderr, CMD ": Job would start%s at %s using %u processors on nodes %s%s%s\n",
                r->starts_now ? " now," : "", cli_format_time(r->expected_start_ms, at, sizeof(at)),
                r->cpus, r->sched_nodes, r->partition[0] != '\0' ? " in partition " : "",
                r->partition);
    else if (r->expected_start_ms != 0)
        fprintf(stderr, CMD ": Job would start at %s%s%s%s\n",
                cli_format_time(r->expected_start_ms, at, sizeof(at)),
                r->wait_reason[0] != '\0' ? " (" : "", r->wait_reason,
                r->wait_reason[0] != '\0' ? ")" : "");
    else if (r->wait_reason[0] != '\0')
        fprintf(stderr, CMD ": Job has no expected start: %s\n", r->wait_reason);
}

/*
 * --test-only: the local result on stdout, then the scheduler's opinion. Unreachable, it
 * leaves the local check standing, with a warning; a refusal is an error, as in Slurm.
 */
static int test_only(const struct sbatch_args *a, const struct where *w, const struct gs_sbatch *sb,
                     const struct gs_jobspec *spec)
{
    struct gs_buf out = GS_BUF_INIT;
    Gs__Envelope *reply = NULL;
    char path[256];
    int rc, status = 1;

    if (gs_sbatch_show(spec, sb, script_label(a, sb), w->user,
                       a->json ? GS_SBATCH_SHOW_JSON : GS_SBATCH_SHOW_KV, &out) < 0) {
        fprintf(stderr, CMD ": error: %s\n", gs_strerror(-ENOMEM));
        goto out;
    }
    fwrite(out.data, 1, out.len, stdout);
    fflush(stdout);
    rc = send_spec(a, spec, "", true, w->user, path, sizeof(path), &reply);
    if (rc < 0) {
        fprintf(stderr, CMD ": warning: no scheduler answered; the job was checked here only\n");
        status = 0;
        goto out;
    }
    if (rc > 0)
        goto out;
    print_reply_warnings(reply->submit_reply);
    print_estimate(reply->submit_reply);
    fprintf(stderr, CMD ": the scheduler would accept the job%s%s; nothing was submitted\n",
            reply->submit_reply->partition[0] != '\0' ? " in partition " : "",
            reply->submit_reply->partition);
    status = 0;
out:
    gs_proto_envelope_free(reply);
    gs_buf_release(&out);
    return status;
}

static int submit(const struct sbatch_args *a, const struct where *w, const struct gs_sbatch *sb,
                  const struct gs_jobspec *spec)
{
    struct gs_buf source = GS_BUF_INIT;
    Gs__Envelope *reply = NULL;
    uint64_t *ids = NULL;
    size_t n;
    char path[256];
    int status = 1;

    if (a->script != NULL && gs_path_absolute(w->cwd, a->script, &source) < 0)
        goto out;
    if (send_spec(a, spec, source.data != NULL ? source.data : "", false, w->user, path,
                  sizeof(path), &reply) != 0)
        goto out;
    if (print_submitted(reply->submit_reply, a, sb) < 0)
        goto out;
    status = 0;
    if (!a->wait && !sb->wait) /* the command line's, or #SBATCH --wait */
        goto out;
    /* An array's elements have consecutive ids from the first; --wait waits for all. */
    n = reply->submit_reply->array_size > 0 ? reply->submit_reply->array_size : 1;
    ids = calloc(n, sizeof(*ids));
    if (ids == NULL) {
        status = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        ids[i] = reply->submit_reply->job_id + i;
    status = cli_wait_jobs(path, ids, n,
                           &(struct cli_wait_opts){
                               .cmd = CMD,
                               .until = GS__WAIT_FOR__WAIT_FOR_END,
                               .poll_ms = 1000,
                               .json = a->json,
                               .lines = stderr, /* stdout holds the submission line */
                           });
out:
    free(ids);
    gs_proto_envelope_free(reply);
    gs_buf_release(&source);
    return status;
}

int cli_cmd_sbatch(int argc, char **argv)
{
    struct sbatch_args a = {0};
    struct gs_sbatch *sb = NULL;
    struct gs_jobspec *spec = NULL;
    struct where w;
    int status = split_args(argc, argv, &a);

    if (status != 0)
        goto out;
    if (a.help) {
        status = help();
        goto out;
    }
    status = 1;
    if (where_init(&w) < 0 || build(&a, &w, &sb, &spec) < 0)
        goto out;
    if (a.json && sb->parsable) {
        status = usage("%s and --parsable do not go together", "--json");
        goto out;
    }
    status = sb->test_only ? test_only(&a, &w, sb, spec) : submit(&a, &w, sb, spec);
out:
    gs_jobspec_free(spec);
    gs_sbatch_free(sb);
    free(a.opts);
    return status;
}
