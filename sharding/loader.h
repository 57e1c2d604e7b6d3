/*
 * loader.h: the trainer's batches, read from a dataset (manifest.h) by a background thread
 * into a ring of prefetched buffers.
 *
 * Samples. A sample is a window of T + 1 consecutive tokens of one shard: inputs are its
 * first T tokens, targets the last T (the inputs shifted by one). Windows start every T
 * tokens (sample k of a shard covers tokens kT .. kT+T), so a shard of n tokens holds
 * (n - 1) / T samples and no window crosses a shard's end. Samples are numbered over the
 * split's shards in manifest order: the global sample ids.
 *
 * Order (train). Epoch e visits every train sample once, in a permutation defined only by
 * (seed, e) and the number of samples: Fisher-Yates driven by splitmix64 seeded from
 * seed and e (loader.c). It does not depend on the number of ranks.
 *
 * Steps. A step takes global_batch consecutive entries of that order. A position is
 * (epoch, sample): the index into epoch's order where the next step begins. When fewer than
 * global_batch entries are left in an epoch, they are skipped and the step begins the next
 * epoch at 0 (every step is full; a few samples per epoch go unseen, a different few each
 * epoch). A position need not be a multiple of global_batch, so a run may resume with
 * another global_batch too.
 *
 * Ranks. With world W (global_batch divisible by W, else shard_loader_new fails), rank r takes
 * entries [r B/W, (r+1) B/W) of each step's B = global_batch entries, B/W samples per rank.
 * So the ranks' batches of a step, concatenated in rank order, are exactly the batch a
 * W = 1 loader delivers at that step, and a run resumed at the same position with another W
 * reads the same global samples.
 *
 * Eval (split val). One sequential pass over the val samples in id order, from position
 * sample (epoch unused), global_batch per step; the last step may be short: of its n samples
 * rank r takes [r n/W, (r+1) n/W) (possibly none). After the last step, shard_loader_next()
 * delivers a batch with end set and no samples.
 *
 * Plan mode (cfg.plan set, split train; issue 19, docs/data.md). The shards come from the
 * job's data plan file (planfile.h) instead of the slicing above: shard_plan() on
 * shard_planfile_input(plan, manifest) assigns every train shard to one rank, and rank r
 * opens and reads only its own (the manifest may be a node's partial cache: the other
 * shards' files need not exist). world must be the plan's rank count. Rank r's samples are
 * the windows of its shards (same rule as above), numbered over them in manifest order.
 * Epoch e's order for rank r is a Fisher-Yates permutation of its samples driven by
 * splitmix64 from (seed, e, r) (shard_loader_rank_permutation). A step takes global_batch /
 * world = b entries of it on every rank. Every rank computes every rank's sample count n_r
 * from the same plan, so without talking they agree on L = min over r of n_r and on
 * floor(L / b) steps per epoch; a rank's entries past the epoch's last step are skipped.
 * Fewer than b samples on some rank (floor(L / b) = 0) is -EINVAL at shard_loader_new.
 * Positions keep their meaning of global samples consumed: sample = steps done in the epoch
 * x global_batch, and rank r's next entry is sample / world, so checkpoints store the same
 * (epoch, sample). Resuming with the same plan (the same assignment) and world reads the
 * same samples in the same order; global_batch may change (its steps take b' entries from
 * sample / world on).
 *
 * The assignment's digest. In plan mode the loader hashes what fixes the assignment: the
 * dataset id, the rank count and each rank's train shards (manifest indices, ascending),
 * 64-bit FNV-1a, never 0; without a plan (or for val) the digest is 0. A caller records it
 * with the position (shard_loader_info) and passes it back as cfg.position_digest when it
 * resumes. The rule: when cfg.position_digest differs from this loader's digest and
 * cfg.sample > 0, the loader starts at (cfg.epoch + 1, 0), the next epoch's start, since
 * the rest of an epoch under another assignment has no defined order; with cfg.sample = 0 it
 * starts at (cfg.epoch, 0). shard_loader_info says whether it moved. This covers a plan
 * that changed, a plan-mode checkpoint resumed without a plan and a checkpoint from before
 * digests (0) resumed with one; a fresh start (0, 0) is never moved.
 *
 * The rest of an epoch (train, cfg.consumed set; rest.h). A caller that resumes under
 * another assignment in the middle of epoch e works out the samples e read already
 * (shard_rest_consumed, from the old plan or none and the position) and starts the new
 * loader at (e, 0) with them as cfg.consumed. Epoch e then reads only the others. In plan
 * mode rank r's order is its permutation from (seed, e, r) of its samples not read, and
 * each rank takes the steps the one with fewest such samples has (rest_steps); without a
 * plan the epoch's order is the permutation from (seed, e) of the split's samples not read,
 * sliced by step and rank as any epoch's. Positions count within that rest (a checkpoint of
 * (e, s) resumes there when cfg.consumed and the digest are the same again). Epochs after
 * it read everything, as always. A rest of less than a step starts at (e + 1, 0). No
 * sample is read twice in an epoch; in plan mode a rank with more left than the fewest
 * skips the excess, as a rank with more samples does in any epoch.
 *
 * Stream mode (plan mode with cfg.fetch set; issue 19, docs/data.md "Streaming"). The node's
 * worker is still copying some of this rank's train shards into the directory (each appears
 * by rename, complete and verified), and cfg.fetch asks it for one. shard_loader_new does
 * not open a train shard of this rank whose file is absent (-ENOENT): it numbers its samples
 * from the manifest's token count (a shard's file, once there, must agree: it is checked
 * against the manifest when opened). Before it fills a step the reader hints
 * (fetch(i, false)) every absent shard not hinted yet that the step fetch_ahead steps later
 * reads, in the order that step reads them, and before its first step those of the first
 * fetch_ahead steps too; a hint is skipped for a file already there. When a read needs a
 * shard not yet opened, the reader opens it if its file is there, else calls fetch(i, true)
 * and opens it then. The batches are those of the same loader with every shard there from
 * the start, byte for byte: only when a shard is opened changes. An error from fetch (or
 * from opening the shard) ends the reader like a read error; the consumer gets it, naming
 * the shard. Val loaders and loaders without a plan ignore fetch.
 *
 * Tokens are delivered as int32, whatever the shard dtype (ids are below 2^31, shard.h).
 *
 * Threading. One consumer thread calls shard_loader_next(); one reader thread (pthread) fills
 * the ring, and alone calls cfg.fetch. prefetch is the number of buffers in the ring: the batch
 * returned by shard_loader_next() occupies one until the next call, so prefetch = 1 means no
 * read-ahead and prefetch = k reads up to k - 1 batches ahead. Buffers come from the caller's
 * allocator (e.g. pinned host memory for the CUDA path), malloc by default, and are released with
 * it in shard_loader_free(), which stops and joins the reader (so a fetch(wait true) in
 * progress must return first: a caller whose waits are long makes them cancellable).
 *
 * Errors. A shard that fails to read ends the reader; the consumer gets the error (naming
 * the shard) from shard_loader_next() when it reaches that batch, and on every call after.
 */
#ifndef SHARD_LOADER_H
#define SHARD_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sharding/manifest.h"
#include "sharding/planfile.h"

/* Allocates size bytes of batch buffer, or NULL. */
typedef void *(*shard_loader_alloc_fn)(size_t size, void *data);
typedef void (*shard_loader_release_fn)(void *ptr, void *data);

/*
 * Stream mode: manifest shard manifest_index, a train shard of this rank whose file is not in
 * the directory yet. wait false: a hint that it will be read fetch_ahead steps from now
 * (return at once; an error ends the reader). wait true: return 0 once the file is in place,
 * or a negative errno with err naming the shard. Called from the reader thread only.
 */
typedef int (*shard_loader_fetch_fn)(uint32_t manifest_index, bool wait, struct gs_error *err,
                                     void *data);

/*
 * Told by the reader thread of each batch it filled: from when it began (start_ns, the
 * monotonic clock) to when the batch was ready (end_ns), its position and its samples; for
 * a profiler's timeline. Called from the reader thread only, without the loader's lock.
 */
struct shard_loader_fill {
    uint64_t start_ns, end_ns;
    uint64_t epoch, sample;
    uint32_t samples;
};
typedef void (*shard_loader_fill_fn)(const struct shard_loader_fill *fill, void *data);

/*
 * Told by the reader thread of each shard it opened while filling a batch (stream mode: one
 * not in place at start; the others are opened by shard_loader_new): from when it began
 * (start_ns) through the wait for its file, when it was absent (waited: asked for with
 * wait), to the file open and checked (end_ns); inside that batch's fill. Reader thread
 * only, without the loader's lock; for a profiler's timeline.
 */
struct shard_loader_open {
    uint64_t start_ns, end_ns;
    uint32_t shard; /* manifest index */
    bool waited;
};
typedef void (*shard_loader_open_fn)(const struct shard_loader_open *open, void *data);

struct shard_loader_config {
    const struct shard_manifest *manifest; /* borrowed: outlives the loader */
    enum shard_split split;                /* train: shuffled epochs; val: one sequential pass */
    uint32_t seq_len;                      /* T, >= 1 */
    uint32_t global_batch;                 /* samples per step over every rank, >= 1 */
    uint32_t rank, world;                  /* 0 <= rank < world; world 0 counts as 1 */
    uint64_t seed;
    uint64_t epoch, sample;          /* where to start: the position of the first step */
    uint32_t prefetch;               /* ring buffers, >= 1; 0 means 2 */
    shard_loader_alloc_fn alloc;     /* NULL: malloc */
    shard_loader_release_fn release; /* NULL: free (set both or neither) */
    void *alloc_data;
    /* Plan mode (above); NULL: ranks slice the seeded order. Borrowed, read only while
     * shard_loader_new runs. Ignored for split val. */
    const struct shard_planfile *plan;
    /* The assignment digest recorded with (epoch, sample); 0 when none was (the rule above). */
    uint64_t position_digest;
    /* Train: epoch's samples read already under another assignment (the rest of an epoch,
     * above; a bitmap over the dataset's train ids, rest.h), or NULL. Borrowed, read only
     * while shard_loader_new runs. */
    const uint64_t *consumed;
    /* Stream mode (above), plan mode's train split only. NULL: every shard of this rank must
     * be there at start. fetch_data is passed to fetch and not freed. */
    shard_loader_fetch_fn fetch;
    void *fetch_data;
    uint32_t fetch_ahead;         /* steps between a hint and the step that reads it; 0 means 2 */
    shard_loader_fill_fn on_fill; /* NULL: none */
    shard_loader_open_fn on_open; /* NULL: none */
    void *fill_data;              /* passed to on_fill and on_open */
};

struct shard_loader_batch {
    const int32_t *inputs;            /* samples x seq_len ids, row-major */
    const int32_t *targets;           /* samples x seq_len ids: inputs shifted by one */
    uint32_t samples;                 /* this rank's share; global_batch / world for train */
    bool end;                         /* val: the pass is over (no samples) */
    uint64_t epoch, sample;           /* position of this step */
    uint64_t next_epoch, next_sample; /* position of the step after it (resume here) */
    uint64_t wait_ns;                 /* how long shard_loader_next blocked for this batch */
};

struct shard_loader;

/*
 * Starts a loader at cfg's position. Returns 0, or -EINVAL for a bad configuration (err
 * names the setting: "global_batch 30 does not divide by world 4", "world 2 is not the
 * plan's 4 ranks"), a split without a sample, a plan that leaves a rank less than a step,
 * a position past the epoch, or a shard that does not open (err names it; in stream mode a
 * train shard of this rank that is absent is not an error, its file is awaited); -ENOMEM.
 */
int shard_loader_new(const struct shard_loader_config *cfg, struct shard_loader **ret_loader,
                     struct gs_error *err);
/* Stops and joins the reader, releases the buffers; NULL allowed. */
void shard_loader_free(struct shard_loader *l);

/*
 * The next batch, valid until the next call or shard_loader_free(). Blocks until the reader has
 * it (the time is in batch->wait_ns). Returns 0, or the reader's error (err names the
 * shard), then the same error on every later call.
 */
int shard_loader_next(struct shard_loader *l, struct shard_loader_batch *batch,
                      struct gs_error *err);

/* Samples in the loader's split (plan mode: this rank's). */
uint64_t shard_loader_samples(const struct shard_loader *l);
/* Total time shard_loader_next() has blocked, over every batch so far. */
uint64_t shard_loader_wait_ns(const struct shard_loader *l);

/* What a loader reads and where it started; for logs, metrics and checkpoints. */
struct shard_loader_info {
    uint64_t digest;          /* the assignment's digest; 0 without a plan */
    uint32_t shards;          /* shards this rank opened (plan mode: its train shards) */
    uint32_t local_shards;    /* plan mode: of them, held by the rank's node per the plan */
    uint64_t samples;         /* this rank's samples (without a plan: the split's) */
    uint64_t steps_per_epoch; /* train: full steps an epoch has, the same on every rank */
    uint64_t epoch, sample;   /* the position of the first step */
    bool moved;               /* the digest rule moved that start to the next epoch */
    uint64_t rest_samples;    /* with cfg.consumed: this rank's samples left in the start epoch */
    uint64_t rest_steps;      /* ... and the steps every rank takes of them (0: moved on) */
    /* Stream mode; 0 otherwise. The last three grow as the reader goes (read them again). */
    uint32_t absent_shards;  /* of shards, those whose files were not there at start */
    uint32_t fetched_shards; /* of those, opened since (arrived before use, or waited for) */
    uint32_t fetch_waits;    /* calls to fetch(wait true): reads that had to wait */
    uint64_t fetch_wait_ns;  /* the reader's time in those calls */
};

/* Any thread; the stream counters are the reader's latest. */
void shard_loader_info(const struct shard_loader *l, struct shard_loader_info *ret);

/*
 * The epoch's order: order[i] is the global sample id at index i of epoch's permutation of
 * n samples. Exposed for tests and tools; the loader uses the same function.
 */
int shard_loader_permutation(uint64_t seed, uint64_t epoch, uint64_t n, uint64_t *order);
/* Plan mode's order of rank's n samples in epoch (its own seeding of the same shuffle). */
int shard_loader_rank_permutation(uint64_t seed, uint64_t epoch, uint32_t rank, uint64_t n,
                                  uint64_t *order);

#endif
