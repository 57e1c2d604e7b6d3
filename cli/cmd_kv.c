/*
 * cmd_kv.c: `gsched kv put KEY VALUE | --file PATH` and `gsched kv get KEY [--timeout
 * SECONDS]`, the job's key/value store in gschedd (JobKvPut, JobKvGet in
 * proto/gsched.proto; scheduler/job_kv.h), so that the tasks of a shell-launched job
 * rendezvous as trainer/kv.h lets programs do: task 0 puts an address, the others get it.
 *
 * The job is $GSCHED_JOB_ID inside a job, or --job ID from outside (its owner or root);
 * the socket as for every job command (--socket, $GSCHED_SOCKET: inside a job, the node's
 * worker). A get that waits asks gschedd again every KV_ROUND_MS until the key is set or its
 * own timeout passes, so that no one exchange outlives the CLI's per-step timeout and a
 * timeout of "infinite" (until the job stops running) needs nothing special.
 *
 * Text output: put prints nothing, get the value as stored and a newline. --json: put
 * {"job_id","key","keys"}, get {"job_id","key","bytes","value"} with value a JSON string, or
 * null and "value_hex" when the value is not UTF-8 text.
 */
#include "cli/commands.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client.h"
#include "cli/job_json.h"
#include "cli/jobcmd.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/units.h"

/* The longest one JobKvGet waits in gschedd; well inside CLI_TIMEOUT_MS. */
#define KV_ROUND_MS 20000u
#define KV_FOREVER UINT64_MAX

static const char kv_usage[] =
    "usage: gsched kv put KEY VALUE [--job ID] [--json] [--socket PATH]\n"
    "       gsched kv put KEY --file PATH [--job ID] [--json] [--socket PATH]\n"
    "       gsched kv get KEY [--timeout SECONDS] [--job ID] [--json] [--socket PATH]\n"
    "\n"
    "The job's key/value store in gschedd, for the tasks of one job to rendezvous: one task\n"
    "puts a value (an address, an ncclUniqueId), the others get it, waiting for it to be set.\n"
    "Kept while the job runs, for its owner and root; a requeued job starts with none.\n"
    "Keys: 1 to 128 printable ASCII characters; values: up to 4096 bytes; 64 keys a job.\n"
    "\n"
    "  put KEY VALUE      set KEY (replacing its value); prints nothing\n"
    "  get KEY            print KEY's value and a newline\n"
    "options:\n"
    "  --job ID           the job (default: $GSCHED_JOB_ID, set inside a job)\n"
    "  --file PATH        put: the value is the file's bytes (- for standard input)\n"
    "  --timeout SECONDS  get: wait up to that long for KEY to be set (default 0: do not\n"
    "                     wait); also 500ms, 2m, 1h30m; infinite: until the job stops\n"
    "  --json             print the result as JSON\n"
    "  --socket PATH      gschedd's socket (default: $GSCHED_SOCKET, then as gsched --help)\n"
    "exit status: 0 done, 1 refused or not set in time, 2 bad usage\n";

struct kv_args {
    bool put;
    const char *key;
    const char *value; /* put: the VALUE operand */
    const char *file;  /* put: --file */
    uint64_t job_id;
    uint64_t timeout_ms; /* get: KV_FOREVER for infinite */
    const char *socket_opt;
    bool json;
};

static const struct cli_opt kv_opts[] = {
    {"--job", NULL, true, 'J'},   {"--file", NULL, true, 'f'},   {"--timeout", "-t", true, 't'},
    {"--json", NULL, false, 'j'}, {"--socket", NULL, true, 's'}, {"--help", "-h", false, 'h'},
    {NULL, NULL, false, 0},
};

/* --timeout: plain seconds ("30", "0.5"), else a duration as gsched wait takes ("2m"). */
static int parse_timeout(const char *text, uint64_t *ret_ms)
{
    uint64_t secs;
    char *end;
    double d;

    errno = 0;
    d = strtod(text, &end);
    if (end != text && *end == '\0' && errno == 0 && isfinite(d) && d >= 0 && d < 1e12) {
        *ret_ms = (uint64_t)(d * 1000.0 + 0.5);
        return 0;
    }
    if (strlen(text) > 2 && strcmp(text + strlen(text) - 2, "ms") == 0) {
        errno = 0;
        d = strtod(text, &end);
        if (end == text + strlen(text) - 2 && errno == 0 && d >= 0 && d < 1e15) {
            *ret_ms = (uint64_t)(d + 0.5);
            return 0;
        }
    }
    if (gs_parse_duration(text, &secs) < 0)
        return -EINVAL;
    *ret_ms = secs == GS_DURATION_INFINITE || secs > UINT64_MAX / 2000 ? KV_FOREVER : secs * 1000;
    return 0;
}

/* An operand: KEY, then VALUE for put. Returns 0 or the usage error's status. */
static int take_operand(struct kv_args *k, const char *cmd, const char *text)
{
    if (k->key == NULL) {
        k->key = text;
        return 0;
    }
    if (k->put && k->value == NULL && k->file == NULL) {
        k->value = text;
        return 0;
    }
    return cli_usage_error(cmd, "one key at a time: '%s' is one argument too many", text);
}

/* One option or operand; returns 0, or the usage error's status (-1: --help, exit 0). */
static int take_arg(struct kv_args *k, const char *cmd, int opt, const char *value)
{
    if (opt == CLI_ARGS_OPERAND)
        return take_operand(k, cmd, value);
    if (opt == 'h')
        return -1;
    if (opt == 'J' && cli_parse_job_id(value, &k->job_id) < 0)
        return cli_usage_error(cmd, "bad --job '%s' (a job id: 42)", value);
    if (opt == 't' && !k->put && parse_timeout(value, &k->timeout_ms) < 0)
        return cli_usage_error(cmd, "bad --timeout '%s' (seconds: 30, 0.5; or 500ms, 2m, infinite)",
                               value);
    if ((opt == 't' && k->put) || (opt == 'f' && !k->put))
        return cli_usage_error(cmd, "%s is for kv %s only", opt == 't' ? "--timeout" : "--file",
                               opt == 't' ? "get" : "put");
    if (opt == 'f' && k->value != NULL)
        return cli_usage_error(cmd, "the value is VALUE or --file, not both");
    if (opt == 'f')
        k->file = value;
    else if (opt == 'j')
        k->json = true;
    else if (opt == 's')
        k->socket_opt = value;
    return 0;
}

/* The job: --job, else $GSCHED_JOB_ID. Returns 0 or the usage error's status. */
static int resolve_job(struct kv_args *k, const char *cmd)
{
    const char *env = getenv("GSCHED_JOB_ID");

    if (k->job_id != 0)
        return 0;
    if (env == NULL || env[0] == '\0')
        return cli_usage_error(cmd, "which job? inside a job $GSCHED_JOB_ID says; from outside "
                                    "give --job ID");
    if (cli_parse_job_id(env, &k->job_id) < 0)
        return cli_usage_error(cmd, "GSCHED_JOB_ID='%s' is not a job id; give --job ID", env);
    return 0;
}

static int parse_args(int argc, char **argv, struct kv_args *k)
{
    const char *cmd = k->put ? "kv put" : "kv get";
    struct cli_args a;
    int opt = 0, status = 0;

    cli_args_init(&a, argc, argv);
    while (status == 0 && (opt = cli_args_next(&a, kv_opts)) > 0)
        status = take_arg(k, cmd, opt, a.value);
    if (status == 0 && opt < 0)
        status = cli_args_error(cmd, &a);
    if (status == 0 && k->key == NULL)
        status = cli_usage_error(cmd, "which key? (gsched %s KEY%s)", cmd, k->put ? " VALUE" : "");
    if (status == 0 && k->put && k->value == NULL && k->file == NULL)
        status = cli_usage_error(cmd, "what value? (gsched kv put KEY VALUE, or --file PATH)");
    if (status == 0)
        status = resolve_job(k, cmd);
    return status;
}

/* The bytes a UTF-8 sequence led by c takes after it, and the range of the first of them
 * (no overlong forms, no surrogates, nothing above U+10FFFF); false for no lead byte. */
static bool utf8_lead(unsigned char c, size_t *ret_more, unsigned char *ret_lo,
                      unsigned char *ret_hi)
{
    *ret_lo = 0x80;
    *ret_hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        *ret_more = 1;
    else if (c >= 0xE0 && c <= 0xEF)
        *ret_more = 2;
    else if (c >= 0xF0 && c <= 0xF4)
        *ret_more = 3;
    else
        return false;
    if (c == 0xE0)
        *ret_lo = 0xA0;
    else if (c == 0xED)
        *ret_hi = 0x9F;
    else if (c == 0xF0)
        *ret_lo = 0x90;
    else if (c == 0xF4)
        *ret_hi = 0x8F;
    return true;
}

/* Whether the n bytes at p are UTF-8 text a JSON string can carry. */
static bool utf8_text(const unsigned char *p, size_t n)
{
    unsigned char lo, hi;
    size_t more;

    for (size_t i = 0; i < n; i += more + 1) {
        more = 0;
        if (p[i] < 0x80)
            continue;
        if (!utf8_lead(p[i], &more, &lo, &hi) || n - i <= more || p[i + 1] < lo || p[i + 1] > hi)
            return false;
        for (size_t j = 2; j <= more; j++) {
            if ((p[i + j] & 0xC0) != 0x80)
                return false;
        }
    }
    return true;
}

static int print_value(const Gs__JobKvValue *v, bool json)
{
    static const char hex[] = "0123456789abcdef";
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc = 0;

    if (!json) {
        if ((v->value.len > 0 && fwrite(v->value.data, 1, v->value.len, stdout) != v->value.len) ||
            putchar('\n') == EOF || fflush(stdout) != 0)
            rc = -EIO;
        return rc;
    }
    gs_json_init(&j, &out);
    gs_json_object_begin(&j);
    gs_json_kv_uint(&j, "job_id", v->job_id);
    gs_json_kv_string(&j, "key", v->key);
    gs_json_kv_uint(&j, "bytes", v->value.len);
    gs_json_key(&j, "value");
    if (utf8_text(v->value.data, v->value.len)) {
        gs_json_stringn(&j, (const char *)v->value.data, v->value.len);
    } else {
        struct gs_buf hexbuf = GS_BUF_INIT;

        gs_json_null(&j);
        for (size_t i = 0; i < v->value.len && rc == 0; i++) {
            rc = gs_buf_putc(&hexbuf, hex[v->value.data[i] >> 4]);
            if (rc == 0)
                rc = gs_buf_putc(&hexbuf, hex[v->value.data[i] & 15]);
        }
        gs_json_key(&j, "value_hex");
        gs_json_stringn(&j, hexbuf.data != NULL ? hexbuf.data : "", hexbuf.len);
        gs_buf_release(&hexbuf);
    }
    gs_json_object_end(&j);
    if (rc == 0)
        rc = cli_json_write(&j, &out, stdout);
    gs_buf_release(&out);
    return rc;
}

static int do_put(const struct kv_args *k, const char *path)
{
    Gs__JobKvPut req = GS__JOB_KV_PUT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    struct gs_buf file = GS_BUF_INIT;
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc = 0;

    if (k->file != NULL && cli_read_file(k->file, &file) < 0)
        return 1;
    req.job_id = k->job_id;
    req.key = (char *)k->key;
    req.value.data = (uint8_t *)(k->file != NULL ? file.data : k->value);
    req.value.len = k->file != NULL ? file.len : strlen(k->value);
    env.body_case = GS__ENVELOPE__BODY_JOB_KV_PUT;
    env.job_kv_put = &req;
    rc = cli_call(path, &env, GS__ENVELOPE__BODY_JOB_KV_PUT_REPLY, &reply);
    if (rc == 0 && k->json) {
        gs_json_init(&j, &out);
        gs_json_object_begin(&j);
        gs_json_kv_uint(&j, "job_id", reply->job_kv_put_reply->job_id);
        gs_json_kv_string(&j, "key", k->key);
        gs_json_kv_uint(&j, "keys", reply->job_kv_put_reply->keys);
        gs_json_object_end(&j);
        rc = cli_json_write(&j, &out, stdout);
        if (rc < 0)
            fprintf(stderr, "gsched kv put: %s\n", gs_strerror(rc));
    }
    gs_proto_envelope_free(reply);
    gs_buf_release(&file);
    gs_buf_release(&out);
    return rc < 0 ? 1 : 0;
}

/*
 * One JobKvGet of at most wait_ms. Returns 0 with *ret_reply (a JobKvValue), 1 when the key
 * was not set in that time (ErrorReply -ETIMEDOUT, message in why), or < 0 having said why.
 */
static int get_round(const struct kv_args *k, const char *path, uint64_t wait_ms, char *why,
                     size_t size, Gs__Envelope **ret_reply)
{
    Gs__JobKvGet req = GS__JOB_KV_GET__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    int rc;

    req.job_id = k->job_id;
    req.key = (char *)k->key;
    req.timeout_ms = wait_ms;
    env.body_case = GS__ENVELOPE__BODY_JOB_KV_GET;
    env.job_kv_get = &req;
    rc = cli_request_raw(path, &env, &reply); /* an unreachable gschedd is printed */
    if (rc < 0)
        return rc;
    if (reply->body_case == GS__ENVELOPE__BODY_JOB_KV_VALUE) {
        *ret_reply = reply;
        return 0;
    }
    rc = -EPROTO;
    if (reply->body_case == GS__ENVELOPE__BODY_ERROR && reply->error->code == -ETIMEDOUT) {
        snprintf(why, size, "%s", reply->error->message);
        rc = 1;
    } else if (reply->body_case == GS__ENVELOPE__BODY_ERROR) {
        fprintf(stderr, "gsched: %s\n", reply->error->message);
    } else {
        fprintf(stderr, "gsched kv get: gschedd answered with %s\n",
                gs_proto_body_name(reply->body_case));
    }
    gs_proto_envelope_free(reply);
    return rc;
}

static int do_get(const struct kv_args *k, const char *path)
{
    uint64_t start = gs_clock_mono_ms(), waited, wait_ms;
    Gs__Envelope *reply = NULL;
    char why[256] = "";
    int rc;

    for (;;) {
        waited = gs_clock_mono_ms() - start;
        wait_ms = k->timeout_ms > waited ? k->timeout_ms - waited : 0;
        rc = get_round(k, path, wait_ms < KV_ROUND_MS ? wait_ms : KV_ROUND_MS, why, sizeof(why),
                       &reply);
        if (rc != 1 || wait_ms <= KV_ROUND_MS)
            break;
    }
    if (rc == 1 && k->timeout_ms == 0)
        fprintf(stderr, "gsched: %s\n", why);
    else if (rc == 1)
        fprintf(stderr, "gsched kv get: job %llu: key '%s' was not set within %.3g s\n",
                (unsigned long long)k->job_id, k->key, (double)k->timeout_ms / 1000.0);
    if (rc != 0)
        return 1;
    rc = print_value(reply->job_kv_value, k->json);
    if (rc < 0)
        fprintf(stderr, "gsched kv get: %s\n", gs_strerror(rc));
    gs_proto_envelope_free(reply);
    return rc < 0 ? 1 : 0;
}

int cli_cmd_kv(int argc, char **argv)
{
    struct kv_args k = {0};
    char path[256];
    int status;

    if (argc < 2)
        return cli_usage_error("kv", "put or get?");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(kv_usage, stdout);
        return 0;
    }
    if (strcmp(argv[1], "put") != 0 && strcmp(argv[1], "get") != 0)
        return cli_usage_error("kv", "unknown kv command '%s' (put or get)", argv[1]);
    k.put = strcmp(argv[1], "put") == 0;
    status = parse_args(argc - 1, argv + 1, &k);
    if (status == -1) {
        fputs(kv_usage, stdout);
        return 0;
    }
    if (status != 0)
        return status;
    if (cli_socket_path(k.socket_opt, path, sizeof(path)) < 0)
        return 1;
    return k.put ? do_put(&k, path) : do_get(&k, path);
}
