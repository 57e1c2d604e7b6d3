/*
 * config.c: reads gsched-train's TOML settings through common/schema.h, so that the trainer's
 * file gets the same errors as a job file (unknown key with a "did you mean", type and range
 * at FILE:LINE:COL). The keys are one table of descriptors (field offset, kind, range) read by
 * a handful of shared readers, rather than one function per key. Command-line overrides are
 * parsed as one-line TOML documents and read through the same table, after the file.
 */
#include "trainer/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/schema.h"
#include "common/toml.h"
#include "common/units.h"

enum field_kind {
    F_U32,
    F_U64,
    F_DOUBLE,
    F_STRING,
    F_SIZE_MIB,
    F_AUTO_U32, /* an integer from min to max, or "auto", stored as min - 1 (wrapping) */
    F_BOOL,
    F_ENUM,     /* one of choices, stored as its index in an enum (int-sized) member */
    F_TWO_WAYS, /* one of two choices, stored as a bool: true for the second */
};

struct field {
    const char *path; /* "optim.lr": section and key */
    enum field_kind kind;
    size_t offset;
    double min, max;
    const char *const *choices; /* F_ENUM, F_TWO_WAYS: the words, NULL-terminated */
};

/* The words of the enum-valued keys, in the order of their enums' values. */
static const char *const precisions[] = {"fp32", "bf16", "fp16", NULL};
static const char *const devices[] = {"auto", "cpu", "cuda", NULL};
static const char *const data_plans[] = {"auto", "off", NULL};
static const char *const allreduces[] = {"fp32", "bf16", NULL};
static const char *const attentions[] = {"own", "cudnn", NULL};
_Static_assert(TRN_PRECISION_FP16 == 2 && TRN_DEVICE_CUDA == 2 && TRN_DATA_PLAN_OFF == 1,
               "the word lists follow the enums");
_Static_assert(sizeof(enum trn_precision) == sizeof(int) &&
                   sizeof(enum trn_device) == sizeof(int) &&
                   sizeof(enum trn_data_plan) == sizeof(int),
               "F_ENUM stores an int");

#define U32_MAX 4294967295.0
#define I64_MAX 9.2e18
#define F(path, kind, member, min, max)                                                            \
    {                                                                                              \
        path, kind, offsetof(struct trn_config, member), min, max, NULL                            \
    }
#define CHOICE(path, kind, member, words)                                                          \
    {                                                                                              \
        path, kind, offsetof(struct trn_config, member), 0, 0, words                               \
    }

static const struct field fields[] = {
    CHOICE("precision", F_ENUM, precision, precisions),
    F("seed", F_U64, seed, 0, I64_MAX),
    F("threads", F_U32, threads, 0, 1024),
    F("out_dir", F_STRING, out_dir, 0, 0),
    CHOICE("device", F_ENUM, device, devices),
    F("tf32", F_BOOL, tf32, 0, 0),
    F("cuda_graph", F_BOOL, cuda_graph, 0, 0),
    CHOICE("attention", F_TWO_WAYS, attention_cudnn, attentions),
    F("model.layers", F_U32, layers, 1, 256),
    F("model.heads", F_U32, heads, 1, 256),
    F("model.channels", F_U32, channels, 1, 65536),
    F("model.context", F_U32, context, 1, 1048576),
    F("model.vocab", F_U32, vocab, 2, 16777216),
    F("data.dir", F_STRING, data_dir, 0, 0),
    F("data.seed", F_U64, data_seed, 0, I64_MAX),
    F("data.prefetch", F_U32, prefetch, 1, 64),
    CHOICE("data.plan", F_ENUM, data_plan, data_plans),
    F("data.fetch_ahead", F_U32, fetch_ahead, 1, 10000),
    F("data.fetch_timeout", F_U32, fetch_timeout, 1, 604800),
    F("batch.global_tokens", F_U64, global_tokens, 1, I64_MAX),
    F("batch.micro", F_AUTO_U32, micro, 1, 65536),
    F("batch.memory", F_SIZE_MIB, memory_mib, 0, 0),
    F("optim.lr", F_DOUBLE, lr, 0, 10),
    F("optim.min_lr", F_DOUBLE, min_lr, 0, 10),
    F("optim.weight_decay", F_DOUBLE, weight_decay, 0, 10),
    F("optim.beta1", F_DOUBLE, beta1, 0, 0.999999),
    F("optim.beta2", F_DOUBLE, beta2, 0, 0.999999999),
    F("optim.eps", F_DOUBLE, eps, 1e-30, 1),
    F("optim.grad_clip", F_DOUBLE, grad_clip, 0, 1e30),
    F("optim.warmup_steps", F_U32, warmup_steps, 0, U32_MAX),
    F("optim.steps", F_U32, steps, 1, U32_MAX),
    F("loss_scale.init", F_DOUBLE, scale_init, 1, 1e30),
    F("loss_scale.growth", F_DOUBLE, scale_growth, 1, 1e3),
    F("loss_scale.backoff", F_DOUBLE, scale_backoff, 1e-6, 0.999999),
    F("loss_scale.interval", F_U32, scale_interval, 1, U32_MAX),
    F("eval.every", F_U32, eval_every, 0, U32_MAX),
    F("eval.batches", F_U32, eval_batches, 1, U32_MAX),
    F("checkpoint.dir", F_STRING, ckpt_dir, 0, 0),
    F("checkpoint.every", F_U32, ckpt_every, 0, U32_MAX),
    F("checkpoint.keep", F_U32, ckpt_keep, 1, 1000),
    F("checkpoint.resume", F_STRING, resume, 0, 0),
    F("ddp.bucket_mib", F_U32, ddp_bucket_mib, 1, 4096),
    F("ddp.first_bucket_mib", F_U32, ddp_first_bucket_mib, 1, 4096),
    F("ddp.overlap", F_BOOL, ddp_overlap, 0, 0),
    CHOICE("ddp.allreduce", F_TWO_WAYS, ddp_bf16, allreduces),
    F("ddp.check_every", F_U32, ddp_check_every, 0, U32_MAX),
    F("ddp.always", F_BOOL, ddp_always, 0, 0),
    F("metrics.file", F_STRING, metrics_file, 0, 0),
    F("metrics.plot", F_STRING, plot_file, 0, 0),
    F("metrics.peak_flops", F_DOUBLE, peak_flops, 0, 1e20),
    F("metrics.log_every", F_U32, log_every, 1, U32_MAX),
    F("profile.steps", F_U32, profile_steps, 0, 100000),
    F("profile.start", F_AUTO_U32, profile_start, 0, U32_MAX - 1),
    F("profile.path", F_STRING, profile_path, 0, 0),
};

/* The descriptor of the key being read: section "" is the top level. */
static const struct field *current_field(const struct gs_schema_ctx *c)
{
    size_t slen = strlen(c->section);

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *p = fields[i].path;

        if (slen == 0 ? strcmp(p, c->key->key) == 0
                      : strncmp(p, c->section, slen) == 0 && p[slen] == '.' &&
                            strcmp(p + slen + 1, c->key->key) == 0)
            return &fields[i];
    }
    return NULL;
}

#define CFG(c) ((struct trn_config *)(c)->target)
#define AT(f, c, T) ((T *)((char *)CFG(c) + (f)->offset))

/* The index of v among f's choices; else -1, reported as `KEY must be "a", "b" or "c"`. */
static int choice(struct gs_schema_ctx *c, const struct gs_toml_value *v, const struct field *f)
{
    const char *s = NULL;
    char want[128] = "";
    size_t n = 0, len = 0;

    gs_toml_as_string(v, &s, NULL);
    for (; f->choices[n] != NULL; n++)
        if (s != NULL && strcmp(s, f->choices[n]) == 0)
            return (int)n;
    for (size_t i = 0; i < n && len < sizeof(want); i++)
        len += (size_t)snprintf(want + len, sizeof(want) - len, "%s\"%s\"",
                                i == 0      ? ""
                                : i + 1 < n ? ", "
                                            : " or ",
                                f->choices[i]);
    GS_SCHEMA_REPORT_AT(c, v, "%s must be %s", f->path, want);
    return -1;
}

static void rd_field(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    const struct field *f = current_field(c);
    const char *s = NULL;
    int64_t n = 0;
    uint32_t u32;
    double d;
    int k;

    if (f == NULL)
        return; /* every key of the tables below has a descriptor (test_config.c reads all) */
    switch (f->kind) {
    case F_U32:
        if (gs_schema_uint(c, v, f->path, (int64_t)f->min, (int64_t)f->max, &u32) == 0)
            *AT(f, c, uint32_t) = u32;
        return;
    case F_U64:
        if (gs_toml_as_int(v, &n) == 0 && n >= (int64_t)f->min && (double)n <= f->max)
            *AT(f, c, uint64_t) = (uint64_t)n;
        else
            GS_SCHEMA_REPORT_AT(c, v, "%s must be an integer from %.0f to %.0f", f->path, f->min,
                                f->max);
        return;
    case F_DOUBLE:
        if (gs_schema_double(c, v, f->path, f->min, f->max, &d) == 0)
            *AT(f, c, double) = d;
        return;
    case F_STRING:
        gs_schema_string(c, v, f->path, AT(f, c, char *));
        return;
    case F_SIZE_MIB:
        gs_schema_size_mib(c, v, f->path, AT(f, c, uint64_t));
        return;
    case F_BOOL:
        gs_schema_bool(c, v, f->path, AT(f, c, bool));
        return;
    case F_ENUM:
        if ((k = choice(c, v, f)) >= 0)
            *AT(f, c, int) = k;
        return;
    case F_TWO_WAYS:
        if ((k = choice(c, v, f)) >= 0)
            *AT(f, c, bool) = k == 1;
        return;
    case F_AUTO_U32: /* batch.micro's "auto" is 0, profile.start's UINT32_MAX */
        if (gs_toml_as_string(v, &s, NULL) == 0 && strcmp(s, "auto") == 0)
            *AT(f, c, uint32_t) = (uint32_t)((int64_t)f->min - 1);
        else if (gs_toml_as_int(v, &n) == 0 && n >= (int64_t)f->min && n <= (int64_t)f->max)
            *AT(f, c, uint32_t) = (uint32_t)n;
        else
            GS_SCHEMA_REPORT_AT(c, v, "%s must be \"auto\" or an integer from %.0f to %.0f",
                                f->path, f->min, f->max);
        return;
    }
}

static void rd_section(struct gs_schema_ctx *c, const struct gs_toml_value *v)
{
    gs_schema_read_section(c, v, c->key->key);
}

/* The tables common/schema.h walks: key names for its checks, all read by rd_field. */
static const struct gs_schema_key root_keys[] = {
    {"precision", rd_field},
    {"seed", rd_field},
    {"threads", rd_field},
    {"out_dir", rd_field},
    {"device", rd_field},
    {"tf32", rd_field},
    {"cuda_graph", rd_field},
    {"attention", rd_field},
    {"model", rd_section},
    {"data", rd_section},
    {"batch", rd_section},
    {"optim", rd_section},
    {"loss_scale", rd_section},
    {"eval", rd_section},
    {"checkpoint", rd_section},
    {"metrics", rd_section},
    {"ddp", rd_section},
    {"profile", rd_section},
    {NULL, NULL},
};
static const struct gs_schema_key model_keys[] = {
    {"layers", rd_field},  {"heads", rd_field}, {"channels", rd_field},
    {"context", rd_field}, {"vocab", rd_field}, {NULL, NULL},
};
static const struct gs_schema_key data_keys[] = {
    {"dir", rd_field},  {"seed", rd_field},        {"prefetch", rd_field},
    {"plan", rd_field}, {"fetch_ahead", rd_field}, {"fetch_timeout", rd_field},
    {NULL, NULL},
};
static const struct gs_schema_key batch_keys[] = {
    {"global_tokens", rd_field},
    {"micro", rd_field},
    {"memory", rd_field},
    {NULL, NULL},
};
static const struct gs_schema_key optim_keys[] = {
    {"lr", rd_field},           {"min_lr", rd_field},
    {"weight_decay", rd_field}, {"beta1", rd_field},
    {"beta2", rd_field},        {"eps", rd_field},
    {"grad_clip", rd_field},    {"warmup_steps", rd_field},
    {"steps", rd_field},        {NULL, NULL},
};
static const struct gs_schema_key scale_keys[] = {
    {"init", rd_field},     {"growth", rd_field}, {"backoff", rd_field},
    {"interval", rd_field}, {NULL, NULL},
};
static const struct gs_schema_key eval_keys[] = {
    {"every", rd_field},
    {"batches", rd_field},
    {NULL, NULL},
};
static const struct gs_schema_key ckpt_keys[] = {
    {"dir", rd_field}, {"every", rd_field}, {"keep", rd_field}, {"resume", rd_field}, {NULL, NULL},
};
static const struct gs_schema_key ddp_keys[] = {
    {"bucket_mib", rd_field},
    {"first_bucket_mib", rd_field},
    {"overlap", rd_field},
    {"allreduce", rd_field},
    {"check_every", rd_field},
    {"always", rd_field},
    {NULL, NULL},
};
static const struct gs_schema_key metrics_keys[] = {
    {"file", rd_field},      {"plot", rd_field}, {"peak_flops", rd_field},
    {"log_every", rd_field}, {NULL, NULL},
};

static const struct gs_schema_key profile_keys[] = {
    {"steps", rd_field},
    {"start", rd_field},
    {"path", rd_field},
    {NULL, NULL},
};

static const struct gs_schema_section sections[] = {
    {"", root_keys},       {"model", model_keys},     {"data", data_keys},
    {"batch", batch_keys}, {"optim", optim_keys},     {"loss_scale", scale_keys},
    {"eval", eval_keys},   {"checkpoint", ckpt_keys}, {"metrics", metrics_keys},
    {"ddp", ddp_keys},     {"profile", profile_keys},
};

void trn_config_defaults(struct trn_config *cfg)
{
    *cfg = (struct trn_config){
        .precision = TRN_PRECISION_FP32,
        .seed = 1337,
        .layers = 6,
        .heads = 6,
        .channels = 384,
        .context = 256,
        .vocab = 256,
        .data_seed = 1,
        .prefetch = 4,
        .fetch_ahead = 2,
        .fetch_timeout = 600,
        .global_tokens = 8 * 256,
        .micro = 0,
        .memory_mib = 4096,
        .lr = 6e-4,
        .min_lr = 6e-5,
        .weight_decay = 0.1,
        .beta1 = 0.9,
        .beta2 = 0.95,
        .eps = 1e-8,
        .grad_clip = 1.0,
        .warmup_steps = 100,
        .steps = 1000,
        .scale_init = 65536.0,
        .scale_growth = 2.0,
        .scale_backoff = 0.5,
        .scale_interval = 2000,
        .eval_every = 100,
        .eval_batches = 10,
        .ckpt_every = 0,
        .ckpt_keep = 3,
        .peak_flops = 0,
        .log_every = 1,
        .ddp_bucket_mib = 25,
        .ddp_first_bucket_mib = 1,
        .ddp_overlap = true,
        .ddp_check_every = 100,
        .profile_start = TRN_PROFILE_START_AUTO,
    };
}

void trn_config_release(struct trn_config *cfg)
{
    free(cfg->out_dir);
    free(cfg->data_dir);
    free(cfg->ckpt_dir);
    free(cfg->resume);
    free(cfg->metrics_file);
    free(cfg->plot_file);
    free(cfg->profile_path);
    cfg->out_dir = cfg->data_dir = cfg->ckpt_dir = cfg->resume = NULL;
    cfg->metrics_file = cfg->plot_file = cfg->profile_path = NULL;
}

int trn_config_parse(struct trn_config *cfg, const char *text, size_t len, const char *filename,
                     struct gs_buf *errors)
{
    return gs_schema_parse(text, len, filename, sections, sizeof(sections) / sizeof(sections[0]),
                           cfg, errors);
}

int trn_config_load(struct trn_config *cfg, const char *path, struct gs_buf *errors)
{
    return gs_schema_load(path, sections, sizeof(sections) / sizeof(sections[0]), cfg, errors);
}

/* value as a TOML basic string: backslashes and quotes escaped, control characters refused. */
static int quote(struct gs_buf *out, const char *value)
{
    int rc = gs_buf_append_str(out, "\"");

    for (const char *p = value; rc == 0 && *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20)
            return -EINVAL;
        if (*p == '"' || *p == '\\')
            rc = gs_buf_append_str(out, "\\");
        if (rc == 0)
            rc = gs_buf_append(out, p, 1);
    }
    return rc == 0 ? gs_buf_append_str(out, "\"") : rc;
}

/* The key part: bare keys and dots only, so that "a.b" cannot smuggle in more TOML. */
static bool bare_path(const char *s, size_t len)
{
    if (len == 0 || s[0] == '.' || s[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];

        if (!(ch == '.' || ch == '_' || ch == '-' || (ch >= 'a' && ch <= 'z') ||
              (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
            return false;
        if (ch == '.' && s[i + 1] == '.')
            return false;
    }
    return true;
}

/* Whether value is one TOML value on its own ("3e-4", "true", "[1, 2]", "\"x\""). */
static bool is_toml_value(const char *value)
{
    struct gs_buf probe = GS_BUF_INIT;
    struct gs_toml_doc *doc = NULL;
    bool ok = false;

    if (strpbrk(value, "\r\n") == NULL && gs_buf_printf(&probe, "v = %s", value) == 0 &&
        gs_toml_parse(probe.data, probe.len, &doc, NULL) == 0)
        ok = gs_toml_count(gs_toml_root(doc)) == 1;
    gs_toml_free(doc);
    gs_buf_release(&probe);
    return ok;
}

int trn_config_override(struct trn_config *cfg, const char *assignment, struct gs_buf *errors)
{
    const char *eq = strchr(assignment, '=');
    struct gs_buf text = GS_BUF_INIT, where = GS_BUF_INIT;
    size_t klen = eq != NULL ? (size_t)(eq - assignment) : 0;
    int rc;

    if (eq == NULL || !bare_path(assignment, klen)) {
        gs_buf_printf(errors, "--%s: expected --section.key=value\n", assignment);
        return -EINVAL;
    }
    rc = gs_buf_printf(&where, "option --%.*s", (int)klen, assignment);
    if (rc == 0)
        rc = gs_buf_printf(&text, "%.*s = ", (int)klen, assignment);
    /* A value that is no TOML value is a string: --data.dir=shards/web. */
    if (rc == 0)
        rc = is_toml_value(eq + 1) ? gs_buf_append_str(&text, eq + 1) : quote(&text, eq + 1);
    if (rc == -EINVAL)
        gs_buf_printf(errors, "--%s: control characters in the value\n", assignment);
    if (rc == 0)
        rc = trn_config_parse(cfg, text.data, text.len, where.data, errors);
    gs_buf_release(&text);
    gs_buf_release(&where);
    return rc;
}

int trn_config_check(const struct trn_config *cfg, struct gs_buf *errors)
{
    size_t before = errors->len;

    if (cfg->channels % cfg->heads != 0)
        gs_buf_printf(errors, "model.channels (%u) must be a multiple of model.heads (%u)\n",
                      cfg->channels, cfg->heads);
    if (cfg->global_tokens % cfg->context != 0)
        gs_buf_printf(errors,
                      "batch.global_tokens (%llu) must be a multiple of model.context (%u)\n",
                      (unsigned long long)cfg->global_tokens, cfg->context);
    else if (cfg->micro > 0 && (cfg->global_tokens / cfg->context) % cfg->micro != 0)
        gs_buf_printf(errors,
                      "batch.micro (%u) must divide the global batch of %llu sequences "
                      "(batch.global_tokens / model.context)\n",
                      cfg->micro, (unsigned long long)(cfg->global_tokens / cfg->context));
    if (cfg->min_lr > cfg->lr)
        gs_buf_printf(errors, "optim.min_lr (%g) must not exceed optim.lr (%g)\n", cfg->min_lr,
                      cfg->lr);
    if (cfg->warmup_steps > cfg->steps)
        gs_buf_printf(errors, "optim.warmup_steps (%u) must not exceed optim.steps (%u)\n",
                      cfg->warmup_steps, cfg->steps);
    if (cfg->data_dir == NULL && !trn_config_data_plan_env(cfg, NULL, NULL))
        gs_buf_printf(errors, "data.dir is required (a dataset from `gsched shard build`) "
                              "unless gsched-workerd gives a data plan (GSCHED_DATA_PLAN)\n");
    if (cfg->resume != NULL && strcmp(cfg->resume, "auto") != 0 &&
        strcmp(cfg->resume, "none") != 0 && cfg->resume[0] == '\0')
        gs_buf_printf(errors, "checkpoint.resume must be \"auto\", \"none\" or a file\n");
    return errors->len > before ? -EINVAL : 0;
}

const char *trn_device_name(enum trn_device d)
{
    return d == TRN_DEVICE_CPU ? "cpu" : d == TRN_DEVICE_CUDA ? "cuda" : "auto";
}

const char *trn_data_plan_name(enum trn_data_plan p)
{
    return p == TRN_DATA_PLAN_OFF ? "off" : "auto";
}

bool trn_config_data_plan_env(const struct trn_config *cfg, const char **ret_plan,
                              const char **ret_dir)
{
    const char *plan = getenv("GSCHED_DATA_PLAN"), *dir = getenv("GSCHED_DATA_DIR");
    bool on = cfg->data_plan == TRN_DATA_PLAN_AUTO && plan != NULL && plan[0] != '\0';

    if (ret_plan != NULL)
        *ret_plan = on ? plan : NULL;
    if (ret_dir != NULL)
        *ret_dir = on && dir != NULL && dir[0] != '\0' ? dir : NULL;
    return on;
}

const char *trn_precision_name(enum trn_precision p)
{
    switch (p) {
    case TRN_PRECISION_FP32:
        return "fp32";
    case TRN_PRECISION_BF16:
        return "bf16";
    case TRN_PRECISION_FP16:
        return "fp16";
    }
    return "?";
}
