/*
 * config.h: gsched-train's settings, from a TOML file (examples/train-small.toml) and then
 * `--section.key=value` overrides from the command line, each checked the same way: an
 * unknown key, a value of the wrong type or out of range, or settings that contradict each
 * other are errors naming FILE:LINE:COL (or the option), and nothing is trained.
 *
 * Every key and its default is in docs/trainer.md. Strings are owned by the config and
 * freed by trn_config_release(); the struct itself is the caller's.
 */
#ifndef TRN_CONFIG_H
#define TRN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

enum trn_device {
    TRN_DEVICE_AUTO = 0, /* CUDA when built with it and a device is visible, else the CPU */
    TRN_DEVICE_CPU,
    TRN_DEVICE_CUDA,
};

/* data.plan: whether a data plan from gsched-workerd (GSCHED_DATA_PLAN) is followed. */
enum trn_data_plan {
    TRN_DATA_PLAN_AUTO = 0, /* when GSCHED_DATA_PLAN is set: its plan over GSCHED_DATA_DIR */
    TRN_DATA_PLAN_OFF,      /* never: data.dir and the ranks' slices of one order */
};

enum trn_precision {
    TRN_PRECISION_FP32 = 0,
    TRN_PRECISION_BF16,
    TRN_PRECISION_FP16,
};

struct trn_config {
    /* top level */
    enum trn_precision precision;
    uint64_t seed;    /* weights init and dropout-free sampling */
    uint32_t threads; /* kernel threads; 0: OpenMP's default (OMP_NUM_THREADS, else every core) */
    char *out_dir;    /* metrics, plot, checkpoints unless given elsewhere; default "." */
    enum trn_device device;
    bool tf32;            /* fp32 matmuls on a GPU may use TF32 Tensor Cores */
    bool cuda_graph;      /* replay training micro-steps from CUDA Graphs on a GPU */
    bool attention_cudnn; /* attention = "cudnn": cuDNN's fused attention on a GPU */

    /* [model] */
    uint32_t layers, heads, channels, context, vocab; /* vocab as the data has it */

    /* [data] */
    char *data_dir; /* a `gsched shard build` dataset */
    uint64_t data_seed;
    uint32_t prefetch;
    enum trn_data_plan data_plan;
    uint32_t fetch_ahead;   /* streamed shards: hinted this many steps before they are read */
    uint32_t fetch_timeout; /* streamed shards: the longest wait for one, in seconds */

    /* [batch] */
    uint64_t global_tokens; /* per optimizer step, over every rank and micro-step */
    uint32_t micro;         /* sequences per micro-batch; 0: "auto" */
    uint64_t memory_mib;    /* budget for "auto" */

    /* [optim] */
    double lr, min_lr, weight_decay, beta1, beta2, eps, grad_clip; /* grad_clip 0: off */
    uint32_t warmup_steps, steps;

    /* [loss_scale] (fp16) */
    double scale_init, scale_growth, scale_backoff;
    uint32_t scale_interval;

    /* [eval] */
    uint32_t eval_every, eval_batches; /* every 0: never */

    /* [checkpoint] */
    char *ckpt_dir; /* NULL: out_dir/checkpoints */
    uint32_t ckpt_every, ckpt_keep;
    char *resume; /* "auto" (the newest in ckpt_dir, if any), "none", or a file */

    /* [ddp] (data parallelism, when started with several ranks) */
    uint32_t ddp_bucket_mib, ddp_first_bucket_mib;
    bool ddp_overlap;
    bool ddp_bf16;            /* allreduce = "bf16" */
    uint32_t ddp_check_every; /* compare the ranks' weights every N steps; 0: never */
    bool ddp_always;          /* buckets and all-reduces even with one rank (benchmarks) */

    /* [metrics] */
    char *metrics_file, *plot_file; /* NULL: out_dir/metrics.jsonl, out_dir/loss.svg */
    double peak_flops;              /* for MFU; 0: not reported */
    uint32_t log_every;

    /* [profile] (trainer/trace.h) */
    uint32_t profile_steps; /* steps traced; 0: no trace */
    uint32_t profile_start; /* the first, as metrics.jsonl's "step"; TRN_PROFILE_START_AUTO */
    char *profile_path;     /* NULL: out_dir/trace.json */
};

/* profile.start = "auto": after two warm-up steps of this process's run (fresh or resumed),
 * or earlier when fewer than profile.steps steps would be left (docs/trainer.md). */
#define TRN_PROFILE_START_AUTO UINT32_MAX

/* The defaults (docs/trainer.md), without strings that need allocating. */
void trn_config_defaults(struct trn_config *cfg);
void trn_config_release(struct trn_config *cfg);

/*
 * Reads a TOML document over cfg (whose defaults the caller set). filename names the place
 * in errors. Returns 0, -EINVAL with one "FILE:LINE:COL: ..." line per problem appended to
 * errors, or -ENOMEM / -errno for a file that cannot be read (trn_config_load).
 */
int trn_config_parse(struct trn_config *cfg, const char *text, size_t len, const char *filename,
                     struct gs_buf *errors);
int trn_config_load(struct trn_config *cfg, const char *path, struct gs_buf *errors);

/*
 * One command-line override, "section.key=value" (or "key=value" at the top level): value is
 * read as a TOML value, or as a string when it is not one (--data.dir=shards). Errors name
 * the option.
 */
int trn_config_override(struct trn_config *cfg, const char *assignment, struct gs_buf *errors);

/*
 * Checks what single keys cannot: heads divide channels, a micro-batch's tokens divide the
 * global batch, min_lr <= lr, warmup <= steps, a dataset named (data.dir, or with data.plan
 * "auto" GSCHED_DATA_PLAN and GSCHED_DATA_DIR in the environment)... Returns 0 or -EINVAL
 * with lines in errors.
 */
int trn_config_check(const struct trn_config *cfg, struct gs_buf *errors);

const char *trn_precision_name(enum trn_precision p);
const char *trn_device_name(enum trn_device d);
const char *trn_data_plan_name(enum trn_data_plan p);

/*
 * With data.plan "auto" and GSCHED_DATA_PLAN set (non-empty) in the environment: true, with
 * the plan file's path and GSCHED_DATA_DIR (NULL when unset or empty) borrowed from the
 * environment. Otherwise false and both NULL.
 */
bool trn_config_data_plan_env(const struct trn_config *cfg, const char **ret_plan,
                              const char **ret_dir);

#endif
