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
 *
 * Profiling (profile.steps, trainer/trace.h): during the profiled steps r->tr points at the
 * recorder and each phase above records a span into it (span(); ddp.c records the buckets);
 * outside them it is NULL and a phase's only cost is that test. The file is written after
 * the last profiled step.
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
#include "kernels/gpu.h"
#include "kernels/ops.h"
#include "sharding/loader.h"
#include "sharding/manifest.h"
#include "sharding/planfile.h"
#include "sharding/rest.h"
#include "common/clock.h"
#include "common/crc32c.h"
#include "trainer/ckpt.h"
#include "trainer/comm.h"
#include "trainer/datafetch.h"
#include "trainer/datarest.h"
#include "trainer/ddp.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/report.h"
#include "trainer/schedule.h"
#include "trainer/state.h"
#include "trainer/trace.h"

struct run {
    const struct trn_config *cfg;
    FILE *out;
    FILE *log; /* every rank's out, for the line each rank's trace file gets */
    struct gs_buf *err;
    struct trn_model_shape shape;
    enum gs_kern_dtype dt;
    uint32_t B, T, accum, world, rank;
    struct shard_manifest *manifest;
    struct shard_planfile *plan; /* GSCHED_DATA_PLAN's, or NULL: the ranks slice one order */
    const char *data_dir;        /* the dataset read: data.dir, or GSCHED_DATA_DIR with a plan */
    struct shard_loader *loader;
    struct trn_datafetch *fetch; /* GSCHED_DATA_STREAM=1 under a plan: the loader's shards */
    struct trn_model *model;
    struct trn_ckpt_writer *writer;
    struct trn_metrics *metrics;
    struct trn_report *report; /* rank 0 inside a gsched job: progress to gschedd */
    struct trn_state st;
    /* st.data_rest_bits > 0: the samples read in the rest's epoch (rest_epoch) before the
     * rest began (sharding/rest.h); checkpoints carry it while the position is in it. */
    uint64_t *rest;
    uint64_t rest_epoch;
    struct trn_lr_schedule lr;
    char *ckpt_dir, *metrics_path, *plot_path;
    bool has_val;
    uint64_t signal_at; /* GSCHED_TRAIN_SIGNAL_AT: raise SIGUSR1 after this step; 0 none */
    struct trn_comm *comm;
    struct trn_ddp *ddp;     /* with more than one rank */
    bool lead;               /* rank 0: it alone writes metrics, checkpoints and the plot */
    struct gs_kern_gpu *gpu; /* the rank's GPU, or NULL on the CPU */
    struct gpu_timer *timer; /* step-time split on the GPU */
    struct trn_trace *trace; /* profile.steps > 0: the recorder */
    struct trn_trace *tr;    /* the recorder during a profiled step, else NULL: spans go here */
    /* The recorder from the first profiled step until the trace is written, for the
     * loader's reader thread (NULL otherwise); freed only at teardown, after that thread. */
    _Atomic(struct trn_trace *) async_tr;
    bool trace_written;
    uint64_t prof_first, prof_end; /* the profiled steps, [first, end) */
    uint64_t prof_step;            /* the step being recorded */
    uint32_t prof_steps;           /* profiled steps run so far */
    char *trace_path;
};

/*
 * On a GPU the host only queues work, so a phase's host time says nothing: the step's split
 * comes from CUDA events recorded around each phase, read after the step's last wait.
 * Events per micro-step: before forward, before backward, after backward; then two around
 * the optimizer.
 */
struct gpu_timer {
    uint32_t micro; /* micro-steps per step */
    void **ev;      /* [3 * micro + 2] */
};

static void gpu_timer_free(struct gpu_timer *t)
{
    if (t == NULL)
        return;
    for (uint32_t i = 0; t->ev != NULL && i < 3 * t->micro + 2; i++)
        gs_kern_gpu_event_free(t->ev[i]);
    free(t->ev);
    free(t);
}

static int gpu_timer_new(uint32_t micro, struct gpu_timer **ret)
{
    struct gpu_timer *t = calloc(1, sizeof(*t));
    int rc = 0;

    if (t == NULL)
        return -ENOMEM;
    t->micro = micro;
    t->ev = calloc(3 * (size_t)micro + 2, sizeof(*t->ev));
    if (t->ev == NULL)
        rc = -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < 3 * micro + 2; i++)
        rc = gs_kern_gpu_event_new(true, &t->ev[i]);
    if (rc < 0) {
        gpu_timer_free(t);
        return rc;
    }
    *ret = t;
    return 0;
}

/* Records event i on the compute stream (nothing on the CPU). */
static void mark(struct run *r, uint32_t i)
{
    if (r->timer != NULL)
        gs_kern_gpu_event_record(r->timer->ev[i], gs_kern_gpu_stream(r->gpu));
}

static double gpu_ms(struct gpu_timer *t, uint32_t from, uint32_t to)
{
    float ms = 0;

    return gs_kern_gpu_event_ms(t->ev[from], t->ev[to], &ms) == 0 ? (double)ms : 0.0;
}

/* After the step's wait: the device's forward, backward and optimizer times. */
static void gpu_split(struct run *r, struct trn_step_record *rec)
{
    struct gpu_timer *t = r->timer;

    if (t == NULL)
        return;
    rec->fwd_ms = rec->bwd_ms = 0;
    for (uint32_t a = 0; a < t->micro; a++) {
        rec->fwd_ms += gpu_ms(t, 3 * a, 3 * a + 1);
        rec->bwd_ms += gpu_ms(t, 3 * a + 1, 3 * a + 2);
    }
    rec->optim_ms = gpu_ms(t, 3 * t->micro, 3 * t->micro + 1);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;

    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* While a step is profiled: now, for a span's start; else 0, without reading the clock. */
static uint64_t tnow(const struct run *r)
{
    return r->tr != NULL ? gs_clock_mono_ns() : 0;
}

#define NO_MICRO UINT32_MAX

/* A span of the profiled step from `from` to now; its arguments the step (metrics.jsonl's
 * "step") and the micro-step, unless NO_MICRO. Nothing when the step is not profiled. */
static void span(struct run *r, enum trn_trace_lane lane, const char *name, const char *cat,
                 uint64_t from, uint32_t micro)
{
    if (r->tr != NULL)
        trn_trace_span(r->tr, lane, name, cat, from, "step", (int64_t)r->prof_step,
                       micro != NO_MICRO ? "micro" : NULL, micro);
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
    bool gpu = r->gpu != NULL;
    struct gs_kern_gpu_info info;

    if (r->cfg->micro > 0) {
        if (seqs_per_rank % r->cfg->micro != 0) {
            gs_buf_printf(r->err, "batch.micro %u does not divide the %u sequences per step",
                          r->cfg->micro, seqs_per_rank);
            return -EINVAL;
        }
        r->B = r->cfg->micro;
        return 0;
    }
    /* On a GPU the budget is the device's free memory, less a tenth for the CUDA context,
     * cuBLASLt and NCCL, which allocate on their own. */
    if (gpu && gs_kern_gpu_info(r->gpu, &info) == 0)
        budget = info.free_bytes / 10 * 9;
    for (uint32_t b = seqs_per_rank; b >= 1; b--) {
        if (seqs_per_rank % b == 0 && trn_model_bytes_on(&r->shape, r->dt, b, gpu) <= budget) {
            r->B = b;
            return 0;
        }
    }
    gs_buf_printf(
        r->err, "%s %llu MiB cannot hold the model with even one sequence (%zu MiB needed)",
        gpu ? "the GPU's free memory" : "batch.memory", (unsigned long long)(budget >> 20),
        trn_model_bytes_on(&r->shape, r->dt, 1, gpu) / (1024 * 1024) + 1);
    return -ENOMEM;
}

/*
 * data.plan = "auto" with GSCHED_DATA_PLAN set (gsched-workerd, issue 19): the dataset is the
 * node's cache GSCHED_DATA_DIR, which may hold only the shards this node reads, so its
 * manifest is read without opening a shard (the loader opens this rank's own); the plan
 * must be for that dataset (its id, the SHA-256 of manifest.toml).
 */
static int open_plan(struct run *r, const char *plan_path, const char *dir)
{
    char id[SHARD_DATASET_ID_SIZE];
    struct gs_error gerr = {0};
    int rc;

    if (dir == NULL) {
        gs_buf_printf(r->err, "GSCHED_DATA_PLAN=%s is set without GSCHED_DATA_DIR", plan_path);
        return -EINVAL;
    }
    rc = shard_planfile_read(plan_path, &r->plan, &gerr);
    if (rc == 0)
        rc = shard_dataset_id(dir, id, &gerr);
    if (rc == 0)
        rc = shard_manifest_read(dir, &r->manifest, &gerr);
    if (rc < 0) {
        gs_buf_printf(r->err, "data plan: %s", gerr.msg);
        return rc;
    }
    if (strcmp(id, r->plan->dataset) != 0) {
        gs_buf_printf(r->err,
                      "data plan %s is for dataset %s, but GSCHED_DATA_DIR %s holds dataset %s "
                      "(the SHA-256 of its %s)",
                      plan_path, r->plan->dataset, dir, id, SHARD_MANIFEST_FILE);
        return -EINVAL;
    }
    r->data_dir = dir;
    if (r->log != NULL)
        fprintf(r->log, "data: rank %u reads GSCHED_DATA_DIR=%s, not data.dir, by the plan %s\n",
                r->rank, dir, plan_path);
    return 0;
}

static int open_data(struct run *r)
{
    const struct trn_config *cfg = r->cfg;
    const char *plan_path, *plan_dir;
    struct gs_error gerr = {0};
    int rc;

    if (trn_config_data_plan_env(cfg, &plan_path, &plan_dir)) {
        rc = open_plan(r, plan_path, plan_dir);
    } else {
        if (cfg->data_plan == TRN_DATA_PLAN_OFF && getenv("GSCHED_DATA_PLAN") != NULL &&
            r->out != NULL)
            fprintf(r->out, "data: data.plan = \"off\": GSCHED_DATA_PLAN ignored\n");
        r->data_dir = cfg->data_dir;
        rc = shard_manifest_load(cfg->data_dir, &r->manifest, &gerr);
        if (rc < 0)
            gs_buf_printf(r->err, "%s", gerr.msg);
    }
    if (rc < 0)
        return rc;
    if (r->manifest->vocab > cfg->vocab) {
        gs_buf_printf(r->err, "the dataset %s has a vocabulary of %u; model.vocab is %u",
                      r->data_dir, r->manifest->vocab, cfg->vocab);
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

/*
 * device = "auto" | "cpu" | "cuda": opens the rank's GPU, or leaves r->gpu NULL for the CPU.
 * The rank's device among those visible is its local rank modulo their count, so gsched's
 * workers (CUDA_VISIBLE_DEVICES per task) and a plain mpirun on a multi-GPU node both give
 * each rank its own GPU. Before the communicator, which NCCL ties to the device.
 */
static int open_device(struct run *r)
{
    enum trn_device want = r->cfg->device;
    int n = 0, dev, rc;

    if (want == TRN_DEVICE_CPU || (want == TRN_DEVICE_AUTO && !have_gpu()))
        return 0;
    if (!gs_kern_cuda_built()) {
        gs_buf_printf(r->err, "device = \"cuda\": this gsched-train was built without CUDA");
        return -ENODEV;
    }
    rc = gs_kern_dev_count(&n);
    if (rc == 0 && n == 0) {
        gs_buf_printf(r->err,
                      "device = \"cuda\": no CUDA device is visible "
                      "(CUDA_VISIBLE_DEVICES=%s)",
                      getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
        return -ENODEV;
    }
    dev = rc == 0 ? trn_comm_local_rank() % n : 0;
    if (rc == 0)
        rc = gs_kern_gpu_new(dev, &r->gpu);
    if (rc < 0) {
        gs_buf_printf(r->err, "device cuda:%d: %s", dev, gs_kern_dev_last_error());
        return rc;
    }
    gs_kern_gpu_set_tf32(r->gpu, r->cfg->tf32);
    return 0;
}

static void print_device(struct run *r)
{
    struct gs_kern_gpu_info info;

    if (r->out == NULL)
        return;
    if (r->gpu == NULL) {
        fprintf(r->out, "device: cpu\n");
        return;
    }
    if (gs_kern_gpu_info(r->gpu, &info) == 0)
        fprintf(r->out, "device: cuda:%d %s (sm_%d%d, %d SMs, %.1f GiB, %.1f GiB free)\n",
                gs_kern_gpu_device(r->gpu), info.name, info.major, info.minor, info.sms,
                (double)info.total_bytes / (1 << 30), (double)info.free_bytes / (1 << 30));
}

/* Whether the launcher started several ranks (mpirun, or gsched's one task per rank). */
static bool several_ranks(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = getenv(names[i]);

        if (v != NULL && atoi(v) > 1)
            return true;
    }
    return false;
}

/* CPU ranks talk through Open MPI (or alone); GPU ranks through NCCL, when there is anyone
 * to talk to or ddp.always asks for the path on one rank. */
static int open_comm(struct run *r)
{
    int rc;

    if (r->gpu != NULL && (several_ranks() || r->cfg->ddp_always))
        rc = trn_comm_new_gpu(gs_kern_gpu_device(r->gpu), gs_kern_gpu_stream(r->gpu), &r->comm);
    else
        rc = trn_comm_new(&r->comm);
    if (rc < 0)
        gs_buf_printf(r->err, "communication: %s", r->comm ? trn_comm_error(r->comm) : "");
    return rc;
}

/* What the train loader reads under a plan (every rank), and the resume rule's move (rank 0). */
static void note_data_start(struct run *r, const struct shard_loader_info *info)
{
    if (r->plan != NULL && r->log != NULL)
        fprintf(r->log,
                "data: rank %u reads %u of the plan's train shards (%u on its node), %llu "
                "samples; %llu steps an epoch on every rank\n",
                r->rank, info->shards, info->local_shards, (unsigned long long)info->samples,
                (unsigned long long)info->steps_per_epoch);
    if (info->rest_steps > 0 && r->log != NULL && r->plan != NULL)
        fprintf(r->log,
                "data: epoch %llu's rest: rank %u has %llu of its samples not read yet; %llu "
                "steps of them on every rank\n",
                (unsigned long long)info->epoch, r->rank, (unsigned long long)info->rest_samples,
                (unsigned long long)info->rest_steps);
    else if (info->rest_steps > 0 && r->log != NULL && r->lead)
        fprintf(r->log, "data: epoch %llu's rest: %llu samples not read yet; %llu steps of them\n",
                (unsigned long long)info->epoch, (unsigned long long)info->rest_samples,
                (unsigned long long)info->rest_steps);
    if (info->moved && r->out != NULL)
        fprintf(r->out,
                "data: the checkpoint's position (epoch %llu, sample %llu) was reached under "
                "another data assignment (digest %016llx, now %016llx): continuing at the "
                "start of epoch %llu\n",
                (unsigned long long)r->st.data_epoch, (unsigned long long)r->st.data_sample,
                (unsigned long long)r->st.data_plan, (unsigned long long)info->digest,
                (unsigned long long)info->epoch);
}

/*
 * GSCHED_DATA_STREAM=1 under a plan: the worker is still copying some of the node's shards,
 * so the train loader waits for its own through a fetcher (datafetch.h). Without the variable,
 * or without a plan, the loader needs every shard of this rank at start, as before.
 */
static int start_fetch(struct run *r, struct shard_loader_config *lc)
{
    struct trn_datafetch_config fc = {
        .manifest = r->manifest,
        .dataset = r->plan != NULL ? r->plan->dataset : "",
        .timeout_s = r->cfg->fetch_timeout,
        .rank = r->rank,
        .warn = r->log != NULL ? r->log : stderr,
    };
    int rc;

    if (r->plan == NULL || !trn_datafetch_env())
        return 0;
    rc = trn_datafetch_new(&fc, &r->fetch);
    if (rc < 0)
        return rc;
    lc->fetch = trn_datafetch_shard;
    lc->fetch_data = r->fetch;
    lc->fetch_ahead = r->cfg->fetch_ahead;
    return 0;
}

static void note_stream_start(struct run *r, const struct shard_loader_info *info)
{
    if (r->fetch == NULL || r->log == NULL)
        return;
    fprintf(r->log,
            "data: rank %u streams %u of its %u shards from its worker (ahead %u steps)%s\n",
            r->rank, info->absent_shards, info->shards, r->cfg->fetch_ahead,
            trn_datafetch_asks(r->fetch) ? "" : "; not in a job: waiting for the files only");
}

/* A loader's reader thread, per batch filled: a span named name on the loader lane while the
 * profile window is open (the batch's position and samples as its arguments). */
static void trace_fill(struct run *r, const struct shard_loader_fill *f, const char *name)
{
    struct trn_trace_event ev = {
        .name = name,
        .cat = "data",
        .lane = TRN_TRACE_LOADER,
        .start_ns = f->start_ns,
        .end_ns = f->end_ns,
        .args = {{"epoch", (int64_t)f->epoch},
                 {"sample", (int64_t)f->sample},
                 {"samples", (int64_t)f->samples}},
    };

    trn_trace_add(atomic_load(&r->async_tr), &ev);
}

static void on_fill(const struct shard_loader_fill *f, void *data)
{
    trace_fill(data, f, "fill batch");
}

/* A streamed shard the reader opened inside a fill: "wait for shard" when it waited for the
 * worker's copy, else "open shard"; its manifest index as the argument. */
static void on_open(const struct shard_loader_open *o, void *data)
{
    struct run *r = data;
    struct trn_trace_event ev = {
        .name = o->waited ? "wait for shard" : "open shard",
        .cat = "data",
        .lane = TRN_TRACE_LOADER,
        .start_ns = o->start_ns,
        .end_ns = o->end_ns,
        .args = {{"shard", (int64_t)o->shard}},
    };

    trn_trace_add(atomic_load(&r->async_tr), &ev);
}

/* The val loader of an eval, created and freed inside it. */
static void on_eval_fill(const struct shard_loader_fill *f, void *data)
{
    trace_fill(data, f, "fill eval batch");
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
        .plan = r->plan,
        .position_digest = r->st.data_plan,
        .consumed = r->st.data_rest_bits > 0 ? r->rest : NULL,
        .on_fill = on_fill,
        .on_open = on_open,
        .fill_data = r,
    };
    struct shard_loader_info info;
    struct gs_error gerr = {0};
    int rc;

    if (r->gpu != NULL) {
        lc.alloc = pinned_alloc;
        lc.release = pinned_release;
    }
    rc = start_fetch(r, &lc);
    if (rc == 0)
        rc = shard_loader_new(&lc, &r->loader, &gerr);
    if (rc < 0) {
        gs_buf_printf(r->err, "data: %s", gerr.msg[0] ? gerr.msg : strerror(-rc));
        return rc;
    }
    shard_loader_info(r->loader, &info);
    note_data_start(r, &info);
    note_stream_start(r, &info);
    /* The position now belongs to this assignment: checkpoints record its digest. */
    r->st.data_plan = info.digest;
    r->st.data_epoch = info.epoch;
    r->st.data_sample = info.sample;
    if (info.rest_steps == 0)
        r->st.data_rest_bits = 0; /* no rest to read: none, or moved on */
    r->rest_epoch = info.epoch;
    return 0;
}

/*
 * Under a data plan, rank 0 keeps the plan beside the checkpoints it writes, named by the
 * assignment's digest (CKPT_DIR/data-plan-DIGEST.toml): a checkpoint records the digest,
 * and this file says which shards each rank read under it. A failure costs a warning.
 */
static void keep_plan(struct run *r)
{
    struct gs_error gerr = {0};
    char name[64], *path;

    if (r->plan == NULL || !r->lead)
        return;
    trn_data_plan_file(r->st.data_plan, name, sizeof(name));
    path = join(r->ckpt_dir, name, name);
    if (path == NULL || shard_planfile_write(path, r->plan, &gerr) < 0)
        fprintf(r->log, "data: warning: the data plan is not kept beside the checkpoints: %s\n",
                gerr.msg[0] != '\0' ? gerr.msg : "out of memory");
    free(path);
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
        rc = trn_state_load(tf, path, r->model, &r->st, &r->rest, r->err);
    if (rc == 0)
        fprintf(r->out, "resuming from %s at step %llu\n", path, (unsigned long long)r->st.step);
    trn_tf_close(tf);
    free(path);
    return rc;
}

/* Resumed under another data assignment inside an epoch: the epoch's rest (datarest.h). */
static int data_rest(struct run *r)
{
    struct trn_data_rest_in in = {.manifest = r->manifest,
                                  .plan = r->plan,
                                  .ckpt_dir = r->ckpt_dir,
                                  .seq_len = r->T,
                                  .seed = r->cfg->data_seed,
                                  .out = r->out};
    int rc = trn_data_rest(&in, &r->st, &r->rest);

    if (rc < 0)
        gs_buf_printf(r->err, "data: %s", strerror(-rc));
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
    if (rc == 0 && r->st.data_rest_bits > 0 && !r->lead) {
        free(r->rest);
        r->rest = malloc(shard_rest_words(r->st.data_rest_bits) * sizeof(*r->rest));
        if (r->rest == NULL)
            return -ENOMEM;
    }
    if (rc == 0 && r->st.data_rest_bits > 0)
        rc = trn_comm_broadcast(r->comm, r->rest,
                                shard_rest_words(r->st.data_rest_bits) * sizeof(*r->rest), 0);
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

    if (rc == -ENOTSUP && o.bf16)
        gs_buf_printf(r->err,
                      "ddp.allreduce = \"bf16\" is not supported on GPUs yet (use \"fp32\")");
    else if (rc < 0)
        gs_buf_printf(r->err, "data parallel: %s", strerror(-rc));
    return rc;
}

/* Sums n doubles over the ranks, in place (nothing to do alone); in a profiled step a span
 * named what on the comm lane, from the call to the sum's arrival. */
static int sum_over_ranks(struct run *r, double *v, size_t n, const char *what)
{
    struct trn_comm_req *req;
    uint64_t from = tnow(r);
    int rc;

    if (r->world == 1)
        return 0;
    rc = trn_comm_allreduce(r->comm, v, n, TRN_COMM_F64, false, &req);
    if (rc == 0)
        rc = trn_comm_wait(r->comm, req, NULL, NULL);
    if (rc < 0 && r->err->len == 0)
        gs_buf_printf(r->err, "all-reduce: %s", trn_comm_error(r->comm));
    span(r, TRN_TRACE_COMM, what, "comm", from, NO_MICRO);
    return rc;
}

/* Every ddp.check_every steps: the ranks' weights must be bitwise equal. */
static int check_in_step(struct run *r)
{
    uint32_t crc, lead_crc;
    double differ;
    uint64_t from = tnow(r), bcast;
    int rc = trn_model_fetch(r->model); /* a GPU's weights to the host first */

    if (rc < 0)
        return rc;
    crc = gs_crc32c(0, trn_model_params(r->model), trn_model_nparams(r->model) * sizeof(float));
    lead_crc = crc;
    bcast = tnow(r);
    rc = trn_comm_broadcast(r->comm, &lead_crc, sizeof(lead_crc), 0);
    span(r, TRN_TRACE_COMM, "broadcast weights checksum", "comm", bcast, NO_MICRO);
    differ = lead_crc != crc ? 1.0 : 0.0;
    if (rc == 0)
        rc = sum_over_ranks(r, &differ, 1, "all-reduce weights check");
    if (rc == 0 && differ > 0) {
        gs_buf_printf(r->err,
                      "step %llu: the weights differ between ranks (%g ranks disagree with "
                      "rank 0; this one's checksum %08X, rank 0's %08X)",
                      (unsigned long long)r->st.step, differ, crc, lead_crc);
        rc = -EPROTO;
    }
    span(r, TRN_TRACE_COMPUTE, "weights check", "comm", from, NO_MICRO);
    return rc;
}

/* --- profiling (profile.steps, trainer/trace.h) ------------------------------------------- */

/* Rank 0 writes path itself, rank r path with "-rank<r>" before a final ".json" (or at the
 * end), so that every rank's file can sit in one directory. */
static char *rank_path(const char *path, uint32_t rank)
{
    size_t len = strlen(path), size = len + 32;
    size_t stem = len >= 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
    char *p = malloc(size);

    if (p == NULL)
        return NULL;
    if (rank == 0)
        snprintf(p, size, "%s", path);
    else
        snprintf(p, size, "%.*s-rank%u%s", (int)stem, path, rank, path + stem);
    return p;
}

/* profile.start, or "auto": two steps into this run, fresh or resumed (its first steps touch
 * fresh memory and capture graphs), moved earlier when fewer than profile.steps are left. */
static void profile_window(struct run *r)
{
    const struct trn_config *cfg = r->cfg;
    uint64_t first = r->st.step, n = cfg->profile_steps, start = cfg->profile_start;

    if (cfg->profile_start == TRN_PROFILE_START_AUTO) {
        start = first + 2;
        if (start + n > cfg->steps)
            start = cfg->steps > n ? cfg->steps - n : 0;
        if (start < first)
            start = first;
    }
    r->prof_first = start;
    r->prof_end = start + n;
}

/* At most this many spans (about 90 MiB); a longer profile drops the rest, and says so. */
#define PROFILE_MAX_EVENTS ((size_t)1 << 20)

/* The recorder, with room for every span a profiled step records (step(), its helpers, the
 * small collectives and the loop in trn_train: 16, and a checkpoint's write in 4 parts; per
 * micro-step 3, and a loader fill; per bucket its all-reduce and a flow's two ends; the
 * model's parts, layers + 2 per pass, two passes a micro-step; an eval's batches' forward
 * passes with their parts, and its loader's fills), allocated now. */
static int start_profile(struct run *r, const char *out_dir)
{
    size_t parts = (size_t)trn_model_shape(r->model)->layers + 2;
    size_t evals =
        r->cfg->eval_every > 0 ? (size_t)r->cfg->eval_batches * (r->accum * (parts + 1) + 1) : 0;
    size_t per_step = 20 + 4 * (size_t)r->accum +
                      3 * (size_t)(r->ddp != NULL ? trn_ddp_buckets(r->ddp) : 0) +
                      parts * 2 * (size_t)r->accum + evals;
    size_t capacity = per_step * r->cfg->profile_steps;
    char *base = join(out_dir, r->cfg->profile_path, "trace.json");
    int rc;

    profile_window(r);
    r->trace_path = base != NULL ? rank_path(base, r->rank) : NULL;
    free(base);
    if (r->trace_path == NULL)
        return -ENOMEM;
    rc = trn_trace_new(r->rank, capacity < PROFILE_MAX_EVENTS ? capacity : PROFILE_MAX_EVENTS,
                       &r->trace);
    if (rc < 0)
        gs_buf_printf(r->err, "profile: %s", strerror(-rc));
    return rc;
}

/*
 * At the top of every step: whether its spans are recorded. Times count from the start of
 * the first profiled step, which every rank reaches just after the previous step's last
 * collective, so the ranks' files line up when loaded together.
 */
static void profile_step(struct run *r)
{
    bool on = r->trace != NULL && !r->trace_written && r->st.step >= r->prof_first &&
              r->st.step < r->prof_end;

    if (on && r->prof_steps == 0) {
        r->prof_first = r->st.step;
        trn_trace_set_origin(r->trace, gs_clock_mono_ns());
        /* The other threads' work goes on the timeline from here until it is written. */
        atomic_store(&r->async_tr, r->trace);
        if (r->writer != NULL)
            trn_ckpt_trace(r->writer, r->trace);
    }
    r->prof_steps += on;
    r->prof_step = r->st.step;
    r->tr = on ? r->trace : NULL;
    if (r->ddp != NULL)
        trn_ddp_trace(r->ddp, r->tr);
}

/* After the last profiled step, or at the end of a run that stopped first: the file, one line
 * saying where it is, and the recorder freed. A trace that cannot be written is a warning. */
static void finish_profile(struct run *r)
{
    static const char *const keys[] = {"world", "first_step", "steps", "micro_steps", "buckets"};
    int64_t values[] = {r->world, (int64_t)r->prof_first, r->prof_steps, r->accum,
                        r->ddp != NULL ? trn_ddp_buckets(r->ddp) : 0};
    int rc = 0;

    if (r->trace == NULL || r->trace_written)
        return;
    r->tr = NULL;
    r->trace_written = true;
    atomic_store(&r->async_tr, NULL); /* a span being added meanwhile is left out */
    if (r->writer != NULL)
        trn_ckpt_trace(r->writer, NULL);
    if (r->ddp != NULL)
        trn_ddp_trace(r->ddp, NULL);
    if (r->prof_steps > 0)
        rc = trn_trace_write(r->trace, r->trace_path, keys, values, 5);
    if (rc < 0)
        fprintf(stderr, "warning: profile: rank %u: %s: %s\n", r->rank, r->trace_path,
                strerror(-rc));
    else if (r->prof_steps == 0 && r->log != NULL)
        fprintf(r->log, "profile: rank %u: no step of %llu-%llu ran; no trace written\n", r->rank,
                (unsigned long long)r->prof_first, (unsigned long long)r->prof_end - 1);
    else if (r->log != NULL)
        fprintf(r->log,
                "profile: rank %u wrote %zu events (%llu dropped) of steps %llu-%llu to %s\n",
                r->rank, trn_trace_count(r->trace), (unsigned long long)trn_trace_dropped(r->trace),
                (unsigned long long)r->prof_first,
                (unsigned long long)(r->prof_first + r->prof_steps - 1), r->trace_path);
}

static int setup(struct run *r)
{
    const struct trn_config *cfg = r->cfg;
    const char *out_dir = cfg->out_dir != NULL ? cfg->out_dir : ".";
    uint32_t seqs = (uint32_t)(cfg->global_tokens / cfg->context);
    int rc;

    if (cfg->threads > 0)
        gs_kern_set_threads((int)cfg->threads); /* before any workspace is sized */
    rc = open_device(r);
    if (rc == 0)
        rc = open_comm(r);
    if (rc < 0)
        return rc;
    r->world = (uint32_t)trn_comm_size(r->comm);
    r->rank = (uint32_t)trn_comm_rank(r->comm);
    r->lead = r->rank == 0;
    if (!r->lead)
        r->out = NULL; /* one voice: rank 0's */
    print_device(r);
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
    rc = choose_micro(r, seqs / r->world);
    if (rc == 0)
        rc = open_data(r);
    if (rc < 0)
        return rc;
    r->accum = seqs / r->world / r->B;
    rc = trn_model_new_on(&r->shape, r->dt, r->B, r->gpu, &r->model);
    if (rc < 0) {
        gs_buf_printf(r->err, "model: %s%s%s", strerror(-rc), r->gpu != NULL ? ": " : "",
                      r->gpu != NULL ? gs_kern_dev_last_error() : "");
        return rc;
    }
    if (r->gpu != NULL && (rc = gpu_timer_new(r->accum, &r->timer)) < 0)
        return rc;
    if (cfg->cuda_graph && r->gpu != NULL)
        trn_model_use_graphs(r->model, true);
    else if (cfg->cuda_graph && r->out != NULL)
        fprintf(r->out, "cuda_graph: only on a GPU; training without graphs\n");
    if (cfg->attention_cudnn && r->gpu != NULL) {
        rc = trn_model_use_cudnn_attention(r->model);
        if (r->out != NULL && rc == 0)
            fprintf(r->out, "attention: cuDNN fused flash attention (%s)\n",
                    gs_kern_gpu_attention_engine(r->gpu));
        else if (r->out != NULL)
            fprintf(r->out, "attention: cuDNN refused (%s); using the kernels of our own\n",
                    gs_kern_dev_last_error());
    } else if (cfg->attention_cudnn && r->out != NULL) {
        fprintf(r->out, "attention: cudnn only on a GPU; using the CPU kernels\n");
    }
    trn_model_init(r->model, cfg->seed);
    rc = trn_model_sync(r->model);
    trn_loss_scaler_init(&r->st.scaler, cfg->scale_init, cfg->scale_growth, cfg->scale_backoff,
                         cfg->scale_interval);
    trn_rng_seed(&r->st.rng, cfg->seed);
    if (rc == 0 && r->lead)
        rc = resume(r);
    if (rc == 0 && r->lead)
        rc = data_rest(r);
    if (rc == 0 && r->world > 1)
        rc = share_state(r);
    if (rc == 0 && (r->world > 1 || cfg->ddp_always))
        rc = start_ddp(r);
    if (rc == 0)
        rc = start_loader(r);
    if (rc == 0 && cfg->profile_steps > 0)
        rc = start_profile(r, out_dir);
    if (rc == 0 && r->lead &&
        (rc = trn_ckpt_writer_new(r->ckpt_dir, cfg->ckpt_keep, &r->writer)) < 0)
        gs_buf_printf(r->err, "checkpoint.dir %s: %s", r->ckpt_dir, strerror(-rc));
    if (rc == 0)
        keep_plan(r);
    if (rc == 0 && r->lead &&
        (rc = trn_metrics_new(r->metrics_path, r->out, cfg->log_every, &r->metrics)) < 0)
        gs_buf_printf(r->err, "%s: %s", r->metrics_path, strerror(-rc));
    if (rc == 0 && r->lead)
        rc = trn_report_open(cfg->log_every, stderr, &r->report);
    r->lr = (struct trn_lr_schedule){cfg->lr, cfg->min_lr, cfg->warmup_steps, cfg->steps};
    if (rc == 0 && r->ddp != NULL && r->out != NULL)
        fprintf(r->out, "data parallel: %u ranks (%s), %u gradient buckets, overlap %s, %s\n",
                r->world, trn_comm_backend(r->comm), trn_ddp_buckets(r->ddp),
                cfg->ddp_overlap ? "on" : "off", cfg->ddp_bf16 ? "bf16" : "fp32");
    if (rc == 0 && r->out != NULL)
        fprintf(r->out,
                "model: %u layers, %u heads, %u channels, context %u, vocab %u (padded %u): "
                "%.2fM parameters, %s, threads: %d\n"
                "batch: %u sequences of %u tokens per step = micro-batch %u x %u accumulation "
                "steps; %.0f MiB of %s memory\n",
                cfg->layers, cfg->heads, cfg->channels, cfg->context, cfg->vocab,
                trn_vocab_padded(cfg->vocab), (double)trn_model_nparams(r->model) / 1e6,
                trn_precision_name(cfg->precision), gs_kern_threads(), seqs, r->T, r->B, r->accum,
                (double)trn_model_mem_bytes(r->model) / (1024.0 * 1024.0),
                r->gpu != NULL ? "device" : "model");
    return rc;
}

static void teardown(struct run *r)
{
    trn_ddp_free(r->ddp);
    trn_comm_free(r->comm);
    trn_metrics_free(r->metrics);
    trn_report_free(r->report);
    trn_ckpt_writer_free(r->writer);
    trn_datafetch_cancel(r->fetch); /* the reader may be waiting for a shard: let it go */
    shard_loader_free(r->loader);
    trn_datafetch_free(r->fetch);
    gpu_timer_free(r->timer);
    trn_trace_free(r->trace);
    free(r->trace_path);
    trn_model_free(r->model);
    gs_kern_gpu_free(r->gpu); /* after the model, whose arena lives on it */
    shard_manifest_free(r->manifest);
    shard_planfile_free(r->plan);
    free(r->rest);
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
    if (b->next_epoch != r->rest_epoch)
        r->st.data_rest_bits = 0; /* past the rest: whole epochs from here */
    return 0;
}

/* Micro-step a of a step: its batch, forward and backward (the last one armed for DDP). */
static int micro_step(struct run *r, uint32_t a, float scale, struct trn_step_record *rec)
{
    struct shard_loader_batch b;
    struct timespec t;
    uint64_t from = tnow(r);
    int rc = next_batch(r, &b, &rec->data_ms);

    span(r, TRN_TRACE_DATA, "data wait", "data", from, a);
    if (rc < 0)
        return rc;
    clock_gettime(CLOCK_MONOTONIC, &t);
    from = tnow(r);
    mark(r, 3 * a);
    trn_model_trace(r->model, r->tr, (int64_t)r->prof_step); /* the passes' parts too */
    rc = trn_model_forward(r->model, b.inputs, b.targets, b.samples, r->T,
                           scale / ((float)b.samples * (float)r->T * (float)r->accum), true, NULL);
    rec->fwd_ms += ms_since(&t);
    span(r, TRN_TRACE_COMPUTE, "forward", "compute", from, a);
    clock_gettime(CLOCK_MONOTONIC, &t);
    from = tnow(r);
    mark(r, 3 * a + 1);
    if (r->ddp != NULL && a + 1 == r->accum)
        trn_ddp_arm(r->ddp); /* only the last micro-step's gradients travel */
    if (rc == 0)
        rc = trn_model_backward(r->model);
    mark(r, 3 * a + 2);
    trn_model_trace(r->model, NULL, 0); /* not sampling's (evaluate() sets its own) */
    rec->bwd_ms += ms_since(&t);
    span(r, TRN_TRACE_COMPUTE, "backward", "compute", from, a);
    rec->tokens += (uint64_t)b.samples * r->T * r->world;
    return rc;
}

/* Waits for the gradient all-reduces still outstanding (even after an error rc: no request
 * may outlive the step) and takes their times; returns rc or the all-reduce's error. */
static int average_grads(struct run *r, int rc, struct trn_step_record *rec)
{
    struct trn_ddp_stats ds;
    int frc = trn_ddp_finish(r->ddp, &ds);

    if (rc == 0 && frc < 0) {
        rc = frc;
        gs_buf_printf(r->err, "step %llu: gradient all-reduce: %s",
                      (unsigned long long)r->st.step + 1, trn_comm_error(r->comm));
    }
    rec->comm_ms = (double)ds.comm_ns / 1e6;
    rec->exposed_ms = (double)ds.exposed_ns / 1e6;
    return rc;
}

/* The mean loss over the step's micro-batches and ranks (on a GPU: the host's first wait). */
static int step_loss(struct run *r, double *loss_sum)
{
    uint64_t from = tnow(r);
    int rc = trn_model_take_loss(r->model, loss_sum);

    if (rc == 0 && r->world > 1) {
        rc = sum_over_ranks(r, loss_sum, 1, "all-reduce loss");
        *loss_sum /= r->world;
    }
    span(r, TRN_TRACE_COMPUTE, "loss", "compute", from, NO_MICRO);
    return rc;
}

/* Unscale, inf/NaN check and clipping, then AdamW unless the fp16 scaler skips the step. */
static int update(struct run *r, float scale, double loss_sum, struct trn_step_record *rec)
{
    bool fp16 = r->dt == GS_KERN_F16, nonfinite = false, apply = true;
    float norm = 0;
    uint64_t from = tnow(r);
    int rc =
        trn_model_grad_prepare(r->model, 1.0f / scale, (float)r->cfg->grad_clip, &norm, &nonfinite);

    span(r, TRN_TRACE_COMPUTE, fp16 ? "unscale+clip" : "clip", "compute", from, NO_MICRO);
    if (rc == 0 && fp16)
        apply = trn_loss_scaler_update(&r->st.scaler, nonfinite);
    else if (rc == 0 && nonfinite) {
        gs_buf_printf(r->err, "step %llu: the gradients hold inf or NaN (loss %g): diverged",
                      (unsigned long long)r->st.step + 1, loss_sum);
        return -ERANGE;
    }
    rec->lr = trn_lr_at(&r->lr, r->st.step);
    if (rc == 0 && apply) {
        struct trn_adamw hp = {
            (float)rec->lr,     (float)r->cfg->beta1,        (float)r->cfg->beta2,
            (float)r->cfg->eps, (float)r->cfg->weight_decay, ++r->st.adam_t};

        from = tnow(r);
        rc = trn_model_adamw(r->model, &hp);
        span(r, TRN_TRACE_COMPUTE, "optimizer", "compute", from, NO_MICRO);
    }
    rec->grad_norm = norm;
    rec->skipped = !apply;
    return rc;
}

/* On a GPU, the end of the step: the host waits for the device to finish it, then reads the
 * all-reduces' times. */
static int gpu_finish(struct run *r, struct trn_step_record *rec)
{
    struct trn_ddp_stats ds = {0};
    uint64_t from = tnow(r);
    int rc = gs_kern_gpu_sync(r->gpu); /* an honest step time: the GPU has finished it */

    span(r, TRN_TRACE_COMPUTE, "gpu sync", "compute", from, NO_MICRO);
    if (rc == 0 && r->ddp != NULL) { /* known now that the GPU has run them */
        rc = trn_ddp_gpu_stats(r->ddp, &ds);
        rec->comm_ms = (double)ds.comm_ns / 1e6;
        rec->exposed_ms = (double)ds.exposed_ns / 1e6;
    }
    return rc;
}

static int step(struct run *r, struct trn_step_record *rec)
{
    bool fp16 = r->dt == GS_KERN_F16;
    float scale = fp16 ? (float)r->st.scaler.scale : 1.0f;
    struct timespec t0, t;
    double loss_sum = 0;
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = trn_model_zero_grads(r->model);
    for (uint32_t a = 0; rc == 0 && a < r->accum; a++)
        rc = micro_step(r, a, scale, rec);
    if (r->ddp != NULL)
        rc = average_grads(r, rc, rec);
    if (rc == 0)
        rc = step_loss(r, &loss_sum);
    rec->ranks = r->world;
    rec->data_parallel = r->ddp != NULL;
    if (rc < 0) {
        if (r->err->len == 0)
            gs_buf_printf(r->err, "step %llu: %s%s%s", (unsigned long long)r->st.step + 1,
                          strerror(-rc), r->gpu != NULL && rc == -EIO ? ": " : "",
                          r->gpu != NULL && rc == -EIO ? gs_kern_dev_last_error() : "");
        return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    mark(r, 3 * r->accum);
    rc = update(r, scale, loss_sum, rec);
    if (rc == -ERANGE)
        return rc;
    mark(r, 3 * r->accum + 1);
    if (rc == 0 && r->gpu != NULL)
        rc = gpu_finish(r, rec);
    rec->optim_ms = ms_since(&t);
    gpu_split(r, rec);
    rec->loss = loss_sum;
    rec->loss_scale = fp16 ? scale : 0;
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
        .on_fill = on_eval_fill,
        .fill_data = r,
    };
    struct shard_loader *l = NULL;
    struct gs_error gerr = {0};
    double acc[2] = {0, 0}; /* loss sum and samples, then over every rank */
    uint64_t from = tnow(r);
    /* Streaming: the val loader opens every val shard, so each must have arrived. */
    int rc = r->fetch != NULL ? trn_datafetch_split(r->fetch, SHARD_SPLIT_VAL, &gerr) : 0;

    if (rc == 0)
        rc = shard_loader_new(&lc, &l, &gerr);

    for (uint32_t i = 0; rc == 0 && i < r->cfg->eval_batches; i++) {
        struct shard_loader_batch b;
        double loss;

        rc = shard_loader_next(l, &b, &gerr);
        if (rc < 0 || b.end || b.samples == 0)
            break;
        for (uint32_t s0 = 0; rc == 0 && s0 < b.samples; s0 += r->B) {
            uint32_t n = b.samples - s0 < r->B ? b.samples - s0 : r->B;
            size_t at = (size_t)s0 * r->T;

            uint64_t fwd = tnow(r);

            /* Its parts on the timeline too, inside one "eval forward" per micro-batch. */
            trn_model_trace(r->model, r->tr, (int64_t)r->prof_step);
            rc = trn_model_forward(r->model, b.inputs + at, b.targets + at, n, r->T, 0, false,
                                   &loss);
            trn_model_trace(r->model, NULL, 0);
            span(r, TRN_TRACE_COMPUTE, "eval forward", "eval", fwd, NO_MICRO);
            acc[0] += loss * n;
            acc[1] += n;
        }
    }
    shard_loader_free(l);
    if (rc < 0) {
        gs_buf_printf(r->err, "eval: %s", gerr.msg[0] ? gerr.msg : strerror(-rc));
        return rc;
    }
    rc = sum_over_ranks(r, acc, 2, "all-reduce eval"); /* every rank reaches here */
    *ret_loss = acc[1] > 0 ? acc[0] / acc[1] : NAN;
    span(r, TRN_TRACE_COMPUTE, "eval", "eval", from, NO_MICRO);
    return rc;
}

/* MFU's denominator: metrics.peak_flops, else on a GPU its dense bf16 Tensor Core peak for
 * the world's GPUs (all alike), else none. */
static double peak_flops_of(struct run *r)
{
    struct gs_kern_gpu_info info;

    if (r->cfg->peak_flops > 0 || r->gpu == NULL)
        return r->cfg->peak_flops;
    if (gs_kern_gpu_info(r->gpu, &info) < 0 || info.bf16_peak_flops <= 0)
        return 0;
    return info.bf16_peak_flops * r->world;
}

/* The checkpoint's wait for the previous write: the first stall_ns of its span. */
static void stall_span(struct run *r, uint64_t from, uint64_t stall_ns)
{
    struct trn_trace_event ev = {
        .name = "checkpoint stall",
        .cat = "checkpoint",
        .lane = TRN_TRACE_CHECKPOINT,
        .start_ns = from,
        .end_ns = from + stall_ns,
        .args = {{"step", (int64_t)r->prof_step}},
    };

    if (r->tr != NULL)
        trn_trace_add(r->tr, &ev);
}

static int checkpoint(struct run *r, double *stall_ms)
{
    size_t size = trn_state_size(r->model, &r->st);
    uint64_t stall_ns = 0, from = tnow(r);
    void *buf;
    int rc = trn_ckpt_stage(r->writer, size, &buf, &stall_ns);

    stall_span(r, from, stall_ns);
    if (rc < 0 && rc != -ENOMEM)
        fprintf(r->out, "warning: the previous checkpoint failed: %s\n", strerror(-rc));
    if (rc == -ENOMEM)
        return rc;
    /* On a GPU the step stalls for the copy of weights and moments to the host, no longer:
     * the staging and the write go on behind the next steps. */
    rc = trn_model_fetch(r->model);
    if (rc == 0)
        rc = trn_state_save(r->model, &r->st, r->rest, buf, size);
    if (rc == 0)
        rc = trn_ckpt_submit(r->writer, r->st.step, size);
    *stall_ms += (double)stall_ns / 1e6;
    span(r, TRN_TRACE_CHECKPOINT, "checkpoint", "checkpoint", from, NO_MICRO);
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
    struct run r = {.cfg = cfg, .out = out, .log = out, .err = err};
    double flops_per_step, peak_flops = 0;
    bool stopped = false, graph_noted = false;
    int rc;

    memset(res, 0, sizeof(*res));
    res->eval_loss = NAN;
    rc = trn_config_check(cfg, err);
    if (rc == 0)
        rc = setup(&r);
    flops_per_step = trn_model_flops_per_token(&r.shape, r.T) * (double)cfg->global_tokens;
    if (rc == 0)
        peak_flops = peak_flops_of(&r);
    while (rc == 0 && r.st.step < cfg->steps && !stopped) {
        struct trn_step_record rec = {.step = r.st.step,
                                      .steps = cfg->steps,
                                      .flops = flops_per_step,
                                      .peak_flops = peak_flops};
        bool last;
        uint64_t from;

        profile_step(&r);
        from = tnow(&r);
        rc = step(&r, &rec);
        span(&r, TRN_TRACE_COMPUTE, "step", "step", from, NO_MICRO);
        if (rc < 0)
            break;
        if (!graph_noted && trn_model_graph_note(r.model)[0] != '\0' && r.out != NULL) {
            fprintf(r.out, "cuda_graph: the capture was refused (%s); training without graphs\n",
                    trn_model_graph_note(r.model));
            graph_noted = true;
        }
        r.st.step++;
        if (r.signal_at > 0 && r.st.step == r.signal_at)
            raise(SIGUSR1); /* handled like one from outside: the flag is set at once */
        last = r.st.step == cfg->steps;
        stopped = stop != NULL && *stop != 0;
        if (r.world > 1) { /* a signal may reach one rank first: stop together, or not at all */
            double any = stopped ? 1.0 : 0.0;

            rc = sum_over_ranks(&r, &any, 1, "all-reduce stop vote");
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
        if (r.gpu != NULL)
            rec.device_mem_bytes = trn_model_mem_bytes(r.model);
        if (rc == 0 && r.metrics != NULL)
            rc = trn_metrics_step(r.metrics, &rec);
        if (rc == 0 && r.writer != NULL)
            trn_report_checkpoint(r.report, trn_ckpt_last_done_ms(r.writer));
        if (rc == 0) /* never fails the run: a report that cannot go is dropped */
            trn_report_step(r.report, &rec, stopped);
        if (rc < 0 && err->len == 0)
            gs_buf_printf(err, "step %llu: %s", (unsigned long long)r.st.step, strerror(-rc));
        if (r.tr != NULL && r.st.step >= r.prof_end)
            finish_profile(&r);
    }
    finish_profile(&r); /* a run that ended before its profiled steps did */
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
