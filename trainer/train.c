/*
 * train.c: the training loop (see train.h). One optimizer step is `accum` micro-steps of B
 * sequences each: the loader's own "step" is one micro-batch, so its position (saved in
 * checkpoints) counts samples and does not depend on how they were grouped into steps.
 *
 * Per step: zero the gradients; per micro-batch take the next batch (the wait is the data
 * time), forward with the classifier's gradient scaled by loss_scale / (B*T*accum), backward;
 * then unscale and check for inf/NaN, clip to the global norm, and apply AdamW at the
 * schedule's learning rate, unless the fp16 scaler says to skip the step. Evaluation and
 * checkpoints come after the step they follow; a checkpoint copies the state into the
 * writer's staging buffer and the write itself overlaps the next steps.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "kernels/device.h"
#include "kernels/ops.h"
#include "sharding/loader.h"
#include "sharding/manifest.h"
#include "common/crc32c.h"
#include "trainer/ckpt.h"
#include "trainer/comm.h"
#include "trainer/ddp.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/report.h"
#include "trainer/schedule.h"
#include "trainer/state.h"

struct run {
    const struct trn_config *cfg;
    FILE *out;
    struct gs_buf *err;
    struct trn_model_shape shape;
    enum gs_kern_dtype dt;
    uint32_t B, T, accum, world, rank;
    struct shard_manifest *manifest;
    struct shard_loader *loader;
    struct trn_model *model;
    struct trn_ckpt_writer *writer;
    struct trn_metrics *metrics;
    struct trn_report *report; /* rank 0 inside a gsched job: progress to gschedd */
    struct trn_state st;
    struct trn_lr_schedule lr;
    char *ckpt_dir, *metrics_path, *plot_path;
    bool has_val;
    uint64_t signal_at; /* GSCHED_TRAIN_SIGNAL_AT: raise SIGUSR1 after this step; 0 none */
    struct trn_comm *comm;
    struct trn_ddp *ddp; /* with more than one rank */
    bool lead;           /* rank 0: it alone writes metrics, checkpoints and the plot */
};

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;

    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;

    return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0;
}

/* dir/name, or name itself when it is absolute; NULL name gives dir/fallback. */
static char *join(const char *dir, const char *name, const char *fallback)
{
    const char *n = name != NULL ? name : fallback;
    size_t len = strlen(dir) + strlen(n) + 2;
    char *p = malloc(len);

    if (p == NULL)
        return NULL;
    if (n[0] == '/')
        snprintf(p, len, "%s", n);
    else
        snprintf(p, len, "%s/%s", dir, n);
    return p;
}

static enum gs_kern_dtype dtype_of(enum trn_precision p)
{
    return p == TRN_PRECISION_BF16   ? GS_KERN_BF16
           : p == TRN_PRECISION_FP16 ? GS_KERN_F16
                                     : GS_KERN_F32;
}

/* Micro-batch size: as configured, or the largest divisor of the rank's sequences per step
 * whose model fits in the memory budget. */
static int choose_micro(struct run *r, uint32_t seqs_per_rank)
{
    uint64_t budget = r->cfg->memory_mib * 1024 * 1024;

    if (r->cfg->micro > 0) {
        if (seqs_per_rank % r->cfg->micro != 0) {
            gs_buf_printf(r->err, "batch.micro %u does not divide the %u sequences per step",
                          r->cfg->micro, seqs_per_rank);
            return -EINVAL;
        }
        r->B = r->cfg->micro;
        return 0;
    }
    for (uint32_t b = seqs_per_rank; b >= 1; b--) {
        if (seqs_per_rank % b == 0 && trn_model_bytes(&r->shape, r->dt, b) <= budget) {
            r->B = b;
            return 0;
        }
    }
    gs_buf_printf(r->err,
                  "batch.memory %llu MiB cannot hold the model with even one sequence "
                  "(%zu MiB needed)",
                  (unsigned long long)r->cfg->memory_mib,
                  trn_model_bytes(&r->shape, r->dt, 1) / (1024 * 1024) + 1);
    return -ENOMEM;
}

static int open_data(struct run *r)
{
    const struct trn_config *cfg = r->cfg;
    struct gs_error gerr = {0};
    int rc = shard_manifest_load(cfg->data_dir, &r->manifest, &gerr);

    if (rc < 0) {
        gs_buf_printf(r->err, "%s", gerr.msg);
        return rc;
    }
    if (r->manifest->vocab > cfg->vocab) {
        gs_buf_printf(r->err, "the dataset %s has a vocabulary of %u; model.vocab is %u",
                      cfg->data_dir, r->manifest->vocab, cfg->vocab);
        return -EINVAL;
    }
    r->has_val = shard_manifest_tokens(r->manifest, SHARD_SPLIT_VAL) > r->T;
    return 0;
}

/* The loader's batch buffers in page-locked memory, for the copies to a GPU. */
static void *pinned_alloc(size_t size, void *data)
{
    void *p = NULL;

    (void)data;
    return gs_kern_host_alloc(size, &p) == 0 ? p : NULL;
}

static void pinned_release(void *ptr, void *data)
{
    (void)data;
    gs_kern_host_free(ptr);
}

/* Whether a GPU is there to copy batches to: CUDA built and a device found. */
static bool have_gpu(void)
{
    int n = 0;

    return gs_kern_cuda_built() && gs_kern_dev_count(&n) == 0 && n > 0;
}

static int start_loader(struct run *r)
{
    struct shard_loader_config lc = {
        .manifest = r->manifest,
        .split = SHARD_SPLIT_TRAIN,
        .seq_len = r->T,
        .global_batch = r->B * r->world,
        .rank = r->rank,
        .world = r->world,
        .seed = r->cfg->data_seed,
        .epoch = r->st.data_epoch,
        .sample = r->st.data_sample,
        .prefetch = r->cfg->prefetch,
    };
    struct gs_error gerr = {0};
    int rc;

    if (have_gpu()) {
        lc.alloc = pinned_alloc;
        lc.release = pinned_release;
    }
    rc = shard_loader_new(&lc, &r->loader, &gerr);

    if (rc < 0)
        gs_buf_printf(r->err, "data: %s", gerr.msg);
    return rc;
}

/* resume = "none": fresh; "auto" (the default): the newest checkpoint if any; else a file. */
static int resume(struct run *r)
{
    const char *how = r->cfg->resume != NULL ? r->cfg->resume : "auto";
    struct trn_tf *tf = NULL;
    char *path = NULL;
    uint64_t step;
    int rc;

    if (strcmp(how, "none") == 0)
        return 0;
    if (strcmp(how, "auto") == 0) {
        rc = trn_ckpt_find_latest(r->ckpt_dir, &path, &step);
        if (rc == -ENOENT)
            return 0;
        if (rc < 0) {
            gs_buf_printf(r->err, "%s: %s", r->ckpt_dir, strerror(-rc));
            return rc;
        }
    } else {
        path = strdup(how);
        if (path == NULL)
            return -ENOMEM;
    }
    rc = trn_tf_open(path, &tf, r->err);
    if (rc == 0)
        rc = trn_state_load(tf, path, r->model, &r->st, r->err);
    if (rc == 0)
        fprintf(r->out, "resuming from %s at step %llu\n", path, (unsigned long long)r->st.step);
    trn_tf_close(tf);
    free(path);
    return rc;
}

/* Rank 0's weights, optimizer state and counters (fresh or resumed) to every rank. */
static int share_state(struct run *r)
{
    size_t bytes = trn_model_nparams(r->model) * sizeof(float);
    int rc = trn_comm_broadcast(r->comm, trn_model_params(r->model), bytes, 0);

    if (rc == 0)
        rc = trn_comm_broadcast(r->comm, trn_model_adam_m(r->model), bytes, 0);
    if (rc == 0)
        rc = trn_comm_broadcast(r->comm, trn_model_adam_v(r->model), bytes, 0);
    if (rc == 0)
        rc = trn_comm_broadcast(r->comm, &r->st, sizeof(r->st), 0);
    if (rc == 0)
        rc = trn_model_sync(r->model);
    if (rc < 0)
        gs_buf_printf(r->err, "sharing the start state: %s", trn_comm_error(r->comm));
    return rc;
}

static int start_ddp(struct run *r)
{
    struct trn_ddp_opts o = {
        .bucket_bytes = (size_t)r->cfg->ddp_bucket_mib << 20,
        .first_bucket_bytes = (size_t)r->cfg->ddp_first_bucket_mib << 20,
        .overlap = r->cfg->ddp_overlap,
        .bf16 = r->cfg->ddp_bf16,
    };
    int rc = trn_ddp_new(r->comm, r->model, &o, &r->ddp);

    if (rc < 0)
        gs_buf_printf(r->err, "data parallel: %s", strerror(-rc));
    return rc;
}

/* Sums n doubles over the ranks, in place (nothing to do alone). */
static int sum_over_ranks(struct run *r, double *v, size_t n)
{
    struct trn_comm_req *req;
    int rc;

    if (r->world == 1)
        return 0;
    rc = trn_comm_allreduce(r->comm, v, n, TRN_COMM_F64, false, &req);
    if (rc == 0)
        rc = trn_comm_wait(r->comm, req, NULL, NULL);
    if (rc < 0 && r->err->len == 0)
        gs_buf_printf(r->err, "all-reduce: %s", trn_comm_error(r->comm));
    return rc;
}

/* Every ddp.check_every steps: the ranks' weights must be bitwise equal. */
static int check_in_step(struct run *r)
{
    uint32_t crc =
        gs_crc32c(0, trn_model_params(r->model), trn_model_nparams(r->model) * sizeof(float));
    uint32_t lead_crc = crc;
    double differ;
    int rc = trn_comm_broadcast(r->comm, &lead_crc, sizeof(lead_crc), 0);

    differ = lead_crc != crc ? 1.0 : 0.0;
    if (rc == 0)
        rc = sum_over_ranks(r, &differ, 1);
    if (rc == 0 && differ > 0) {
        gs_buf_printf(r->err,
                      "step %llu: the weights differ between ranks (%g ranks disagree with "
                      "rank 0; this one's checksum %08X, rank 0's %08X)",
                      (unsigned long long)r->st.step, differ, crc, lead_crc);
        rc = -EPROTO;
    }
    return rc;
}

static int setup(struct run *r)
{
    const struct trn_config *cfg = r->cfg;
    const char *out_dir = cfg->out_dir != NULL ? cfg->out_dir : ".";
    uint32_t seqs = (uint32_t)(cfg->global_tokens / cfg->context);
    int rc;

    rc = trn_comm_new(&r->comm);
    if (rc < 0) {
        gs_buf_printf(r->err, "communication: %s", r->comm ? trn_comm_error(r->comm) : "");
        return rc;
    }
    r->world = (uint32_t)trn_comm_size(r->comm);
    r->rank = (uint32_t)trn_comm_rank(r->comm);
    r->lead = r->rank == 0;
    if (!r->lead)
        r->out = NULL; /* one voice: rank 0's */
    if (seqs % r->world != 0) {
        gs_buf_printf(r->err, "the %u sequences of a step do not divide between %u ranks", seqs,
                      r->world);
        return -EINVAL;
    }
    /* A test aid: the batch system's warning signal at an exact step (tests/trainer). */
    if (getenv("GSCHED_TRAIN_SIGNAL_AT") != NULL)
        r->signal_at = strtoull(getenv("GSCHED_TRAIN_SIGNAL_AT"), NULL, 10);
    r->T = cfg->context;
    r->dt = dtype_of(cfg->precision);
    r->shape =
        (struct trn_model_shape){cfg->layers, cfg->heads, cfg->channels, cfg->context, cfg->vocab};
    if (r->lead && mkdir(out_dir, 0755) < 0 && errno != EEXIST) {
        gs_buf_printf(r->err, "out_dir %s: %s", out_dir, strerror(errno));
        return -errno;
    }
    r->ckpt_dir = join(out_dir, cfg->ckpt_dir, "checkpoints");
    r->metrics_path = join(out_dir, cfg->metrics_file, "metrics.jsonl");
    r->plot_path = join(out_dir, cfg->plot_file, "loss.svg");
    if (r->ckpt_dir == NULL || r->metrics_path == NULL || r->plot_path == NULL)
        return -ENOMEM;
    if (cfg->threads > 0)
        gs_kern_set_threads((int)cfg->threads); /* before any workspace is sized */
    rc = choose_micro(r, seqs / r->world);
    if (rc == 0)
        rc = open_data(r);
    if (rc < 0)
        return rc;
    r->accum = seqs / r->world / r->B;
    rc = trn_model_new(&r->shape, r->dt, r->B, &r->model);
    if (rc < 0) {
        gs_buf_printf(r->err, "model: %s", strerror(-rc));
        return rc;
    }
    trn_model_init(r->model, cfg->seed);
    rc = trn_model_sync(r->model);
    trn_loss_scaler_init(&r->st.scaler, cfg->scale_init, cfg->scale_growth, cfg->scale_backoff,
                         cfg->scale_interval);
    trn_rng_seed(&r->st.rng, cfg->seed);
    if (rc == 0 && r->lead)
        rc = resume(r);
    if (rc == 0 && r->world > 1)
        rc = share_state(r);
    if (rc == 0 && r->world > 1)
        rc = start_ddp(r);
    if (rc == 0)
        rc = start_loader(r);
    if (rc == 0 && r->lead &&
        (rc = trn_ckpt_writer_new(r->ckpt_dir, cfg->ckpt_keep, &r->writer)) < 0)
        gs_buf_printf(r->err, "checkpoint.dir %s: %s", r->ckpt_dir, strerror(-rc));
    if (rc == 0 && r->lead &&
        (rc = trn_metrics_new(r->metrics_path, r->out, cfg->log_every, &r->metrics)) < 0)
        gs_buf_printf(r->err, "%s: %s", r->metrics_path, strerror(-rc));
    if (rc == 0 && r->lead)
        rc = trn_report_open(cfg->log_every, stderr, &r->report);
    r->lr = (struct trn_lr_schedule){cfg->lr, cfg->min_lr, cfg->warmup_steps, cfg->steps};
    if (rc == 0 && r->world > 1 && r->out != NULL)
        fprintf(r->out, "data parallel: %u ranks (%s), %u gradient buckets, overlap %s, %s\n",
                r->world, trn_comm_backend(r->comm), trn_ddp_buckets(r->ddp),
                cfg->ddp_overlap ? "on" : "off", cfg->ddp_bf16 ? "bf16" : "fp32");
    if (rc == 0 && r->out != NULL)
        fprintf(r->out,
                "model: %u layers, %u heads, %u channels, context %u, vocab %u (padded %u): "
                "%.2fM parameters, %s, threads: %d\n"
                "batch: %u sequences of %u tokens per step = micro-batch %u x %u accumulation "
                "steps; %.0f MiB of model memory\n",
                cfg->layers, cfg->heads, cfg->channels, cfg->context, cfg->vocab,
                trn_vocab_padded(cfg->vocab), (double)trn_model_nparams(r->model) / 1e6,
                trn_precision_name(cfg->precision), gs_kern_threads(), seqs, r->T, r->B, r->accum,
                (double)trn_model_bytes(&r->shape, r->dt, r->B) / (1024.0 * 1024.0));
    return rc;
}

static void teardown(struct run *r)
{
    trn_ddp_free(r->ddp);
    trn_comm_free(r->comm);
    trn_metrics_free(r->metrics);
    trn_report_free(r->report);
    trn_ckpt_writer_free(r->writer);
    shard_loader_free(r->loader);
    trn_model_free(r->model);
    shard_manifest_free(r->manifest);
    free(r->ckpt_dir);
    free(r->metrics_path);
    free(r->plot_path);
}

/* --- one step -------------------------------------------------------------------------------- */

static int next_batch(struct run *r, struct shard_loader_batch *b, double *data_ms)
{
    struct gs_error gerr = {0};
    int rc = shard_loader_next(r->loader, b, &gerr);

    if (rc < 0) {
        gs_buf_printf(r->err, "data: %s", gerr.msg);
        return rc;
    }
    *data_ms += (double)b->wait_ns / 1e6;
    r->st.data_epoch = b->next_epoch;
    r->st.data_sample = b->next_sample;
    return 0;
}

static int step(struct run *r, struct trn_step_record *rec)
{
    bool fp16 = r->dt == GS_KERN_F16, nonfinite = false, apply = true;
    float scale = fp16 ? (float)r->st.scaler.scale : 1.0f, norm = 0;
    struct timespec t0, t;
    double loss_sum = 0;
    int rc = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    trn_model_zero_grads(r->model);
    for (uint32_t a = 0; rc == 0 && a < r->accum; a++) {
        struct shard_loader_batch b;
        double loss = 0;

        rc = next_batch(r, &b, &rec->data_ms);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (rc == 0)
            rc = trn_model_forward(r->model, b.inputs, b.targets, b.samples, r->T,
                                   scale / ((float)b.samples * (float)r->T * (float)r->accum), true,
                                   &loss);
        rec->fwd_ms += ms_since(&t);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (r->ddp != NULL && a + 1 == r->accum)
            trn_ddp_arm(r->ddp); /* only the last micro-step's gradients travel */
        if (rc == 0)
            rc = trn_model_backward(r->model);
        rec->bwd_ms += ms_since(&t);
        loss_sum += loss;
        rec->tokens += (uint64_t)b.samples * r->T * r->world;
    }
    if (r->ddp != NULL) {
        struct trn_ddp_stats ds;
        int frc = trn_ddp_finish(r->ddp, &ds); /* even after an error: no request outlives */

        if (rc == 0 && frc < 0) {
            rc = frc;
            gs_buf_printf(r->err, "step %llu: gradient all-reduce: %s",
                          (unsigned long long)r->st.step + 1, trn_comm_error(r->comm));
        }
        rec->comm_ms = (double)ds.comm_ns / 1e6;
        rec->exposed_ms = (double)ds.exposed_ns / 1e6;
    }
    if (rc == 0 && r->world > 1) {
        rc = sum_over_ranks(r, &loss_sum, 1);
        loss_sum /= r->world;
    }
    rec->ranks = r->world;
    if (rc < 0) {
        if (r->err->len == 0)
            gs_buf_printf(r->err, "step %llu: %s", (unsigned long long)r->st.step + 1,
                          strerror(-rc));
        return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    rc =
        trn_model_grad_prepare(r->model, 1.0f / scale, (float)r->cfg->grad_clip, &norm, &nonfinite);
    if (rc == 0 && fp16)
        apply = trn_loss_scaler_update(&r->st.scaler, nonfinite);
    else if (rc == 0 && nonfinite) {
        gs_buf_printf(r->err, "step %llu: the gradients hold inf or NaN (loss %g): diverged",
                      (unsigned long long)r->st.step + 1, loss_sum / r->accum);
        return -ERANGE;
    }
    rec->lr = trn_lr_at(&r->lr, r->st.step);
    if (rc == 0 && apply) {
        struct trn_adamw hp = {
            (float)rec->lr,     (float)r->cfg->beta1,        (float)r->cfg->beta2,
            (float)r->cfg->eps, (float)r->cfg->weight_decay, ++r->st.adam_t};

        rc = trn_model_adamw(r->model, &hp);
    }
    rec->optim_ms = ms_since(&t);
    rec->loss = loss_sum / r->accum;
    rec->grad_norm = norm;
    rec->loss_scale = fp16 ? scale : 0;
    rec->skipped = !apply;
    rec->step_ms = ms_since(&t0);
    return rc;
}

/*
 * Mean loss over up to eval.batches batches of the val split, from its start. A batch is an
 * optimizer step's worth of sequences over every rank, so what is evaluated does not depend
 * on the number of ranks; each rank runs its share micro-batch by micro-batch.
 */
static int evaluate(struct run *r, double *ret_loss)
{
    struct shard_loader_config lc = {
        .manifest = r->manifest,
        .split = SHARD_SPLIT_VAL,
        .seq_len = r->T,
        .global_batch = r->B * r->accum * r->world,
        .rank = r->rank,
        .world = r->world,
        .prefetch = 2,
    };
    struct shard_loader *l = NULL;
    struct gs_error gerr = {0};
    double acc[2] = {0, 0}; /* loss sum and samples, then over every rank */
    int rc = shard_loader_new(&lc, &l, &gerr);

    for (uint32_t i = 0; rc == 0 && i < r->cfg->eval_batches; i++) {
        struct shard_loader_batch b;
        double loss;

        rc = shard_loader_next(l, &b, &gerr);
        if (rc < 0 || b.end || b.samples == 0)
            break;
        for (uint32_t s0 = 0; rc == 0 && s0 < b.samples; s0 += r->B) {
            uint32_t n = b.samples - s0 < r->B ? b.samples - s0 : r->B;
            size_t at = (size_t)s0 * r->T;

            rc = trn_model_forward(r->model, b.inputs + at, b.targets + at, n, r->T, 0, false,
                                   &loss);
            acc[0] += loss * n;
            acc[1] += n;
        }
    }
    shard_loader_free(l);
    if (rc < 0) {
        gs_buf_printf(r->err, "eval: %s", gerr.msg[0] ? gerr.msg : strerror(-rc));
        return rc;
    }
    rc = sum_over_ranks(r, acc, 2); /* every rank reaches here: no collective above */
    *ret_loss = acc[1] > 0 ? acc[0] / acc[1] : NAN;
    return rc;
}

static int checkpoint(struct run *r, double *stall_ms)
{
    size_t size = trn_state_size(r->model);
    uint64_t stall_ns = 0;
    void *buf;
    int rc = trn_ckpt_stage(r->writer, size, &buf, &stall_ns);

    if (rc < 0 && rc != -ENOMEM)
        fprintf(r->out, "warning: the previous checkpoint failed: %s\n", strerror(-rc));
    if (rc == -ENOMEM)
        return rc;
    rc = trn_state_save(r->model, &r->st, buf, size);
    if (rc == 0)
        rc = trn_ckpt_submit(r->writer, r->st.step, size);
    *stall_ms += (double)stall_ns / 1e6;
    return rc;
}

static int finish_checkpoints(struct run *r, struct trn_run_result *res)
{
    int rc = trn_ckpt_flush(r->writer, NULL);

    if (rc < 0) {
        gs_buf_printf(r->err, "checkpoint: %s", strerror(-rc));
        return rc;
    }
    if (trn_ckpt_last_path(r->writer) != NULL)
        snprintf(res->ckpt_path, sizeof(res->ckpt_path), "%s", trn_ckpt_last_path(r->writer));
    return 0;
}

int trn_train(const struct trn_config *cfg, volatile sig_atomic_t *stop, FILE *out,
              struct trn_run_result *res, struct gs_buf *err)
{
    struct run r = {.cfg = cfg, .out = out, .err = err};
    double flops_per_step;
    bool stopped = false;
    int rc;

    memset(res, 0, sizeof(*res));
    res->eval_loss = NAN;
    rc = trn_config_check(cfg, err);
    if (rc == 0)
        rc = setup(&r);
    flops_per_step = trn_model_flops_per_token(&r.shape, r.T) * (double)cfg->global_tokens;
    while (rc == 0 && r.st.step < cfg->steps && !stopped) {
        struct trn_step_record rec = {.step = r.st.step,
                                      .steps = cfg->steps,
                                      .flops = flops_per_step,
                                      .peak_flops = cfg->peak_flops};
        bool last;

        rc = step(&r, &rec);
        if (rc < 0)
            break;
        r.st.step++;
        if (r.signal_at > 0 && r.st.step == r.signal_at)
            raise(SIGUSR1); /* handled like one from outside: the flag is set at once */
        last = r.st.step == cfg->steps;
        stopped = stop != NULL && *stop != 0;
        if (r.world > 1) { /* a signal may reach one rank first: stop together, or not at all */
            double any = stopped ? 1.0 : 0.0;

            rc = sum_over_ranks(&r, &any, 1);
            stopped = any > 0;
            if (rc == 0 && cfg->ddp_check_every > 0 &&
                (r.st.step % cfg->ddp_check_every == 0 || last))
                rc = check_in_step(&r);
        }
        res->final_loss = rec.loss;
        if (rc == 0 && r.has_val && cfg->eval_every > 0 &&
            (r.st.step % cfg->eval_every == 0 || last)) {
            rc = evaluate(&r, &res->eval_loss);
            if (rc == 0 && r.metrics != NULL)
                rc = trn_metrics_eval(r.metrics, rec.step, res->eval_loss);
            if (rc == 0)
                trn_report_eval(r.report, r.st.step, res->eval_loss);
        }
        if (rc == 0 && r.lead &&
            ((cfg->ckpt_every > 0 && (r.st.step % cfg->ckpt_every == 0 || last)) || stopped))
            rc = checkpoint(&r, &rec.ckpt_ms);
        rec.peak_mem_bytes = peak_rss_bytes();
        if (rc == 0 && r.metrics != NULL)
            rc = trn_metrics_step(r.metrics, &rec);
        if (rc == 0) /* never fails the run: a report that cannot go is dropped */
            trn_report_step(r.report, &rec, stopped);
        if (rc < 0 && err->len == 0)
            gs_buf_printf(err, "step %llu: %s", (unsigned long long)r.st.step, strerror(-rc));
    }
    if (r.writer != NULL && rc == 0)
        rc = finish_checkpoints(&r, res);
    if (r.metrics != NULL && rc == 0) {
        rc = trn_metrics_plot(r.metrics, r.plot_path);
        if (rc == 0)
            snprintf(res->plot_path, sizeof(res->plot_path), "%s", r.plot_path);
        else
            gs_buf_printf(err, "%s: %s", r.plot_path, strerror(-rc));
    }
    res->steps_done = r.st.step;
    res->lead = r.lead;
    teardown(&r);
    if (rc == 0 && stopped && res->steps_done < cfg->steps)
        return TRN_EXIT_REQUEUE;
    return rc;
}
