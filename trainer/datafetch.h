/*
 * datafetch.h: a job's shards streamed into the train loader (issue 19, docs/data.md
 * "Streaming"). With [data] stage = "stream" the node's worker starts the ranks at once with
 * GSCHED_DATA_STREAM=1 beside GSCHED_DATA_DIR and GSCHED_DATA_PLAN, and copies the node's
 * missing shards into GSCHED_DATA_DIR in the background, each appearing there by rename,
 * complete and verified. A task may ask it (on GSCHED_SOCKET, the worker's CLI socket) to move
 * shards to the front of its queue: a DataFetchRequest {job, dataset, shards}, answered at
 * once by a DataFetchReply {held, error}. The worker never holds a request; waiting for a
 * file is this side's job.
 *
 * A struct trn_datafetch is the loader's fetch callback (sharding/loader.h, stream mode):
 * trn_datafetch_shard(i, false) sends one request for shard i and returns; (i, true) sends
 * one, then checks every TRN_DATAFETCH_POLL_MS whether the shard's file is in the dataset's
 * directory, asking again every TRN_DATAFETCH_RESEND_MS, until it is there (0), the reply
 * carries an error (-EIO with it), data.fetch_timeout passes (-ETIMEDOUT) or the fetcher is
 * cancelled (-ECANCELED). A worker that cannot be reached or refuses a request is no failure:
 * its copies go on without being asked, so the waits go on too (one warning line, then
 * silence); outside a job (GSCHED_JOB_ID or GSCHED_SOCKET unset) nothing is sent at all.
 *
 * Ownership: the caller frees the fetcher with trn_datafetch_free(), after the loader that
 * calls it. The manifest is borrowed and must outlive it. Threading: trn_datafetch_shard()
 * and trn_datafetch_split() may run on two threads at once (the loader's reader, the
 * evaluation); trn_datafetch_cancel() on any thread. Nothing is logged per shard.
 */
#ifndef TRN_DATAFETCH_H
#define TRN_DATAFETCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "sharding/manifest.h"

#define TRN_DATAFETCH_POLL_MS 20       /* how often a wait looks for the file */
#define TRN_DATAFETCH_RESEND_MS 2000   /* how often a wait asks the worker again */
#define TRN_DATAFETCH_EXCHANGE_MS 2000 /* one request and its reply, at most */
#define TRN_DATAFETCH_MIN_MINOR 9      /* DataFetchRequest: protocol 1.9 */
#define TRN_DATAFETCH_MAX_FAILURES 3   /* hints are dropped after this many failures in a row */

struct trn_datafetch_config {
    const struct shard_manifest *manifest; /* GSCHED_DATA_DIR's; borrowed */
    const char *dataset;                   /* the plan's dataset id; copied */
    uint32_t timeout_s;                    /* data.fetch_timeout: the longest wait for a shard */
    uint32_t rank;                         /* for the warning line */
    FILE *warn;                            /* where the one warning goes; NULL: nowhere */
};

struct trn_datafetch;

/* Whether the worker streams this job's shards: GSCHED_DATA_STREAM is "1". */
bool trn_datafetch_env(void);

/*
 * A fetcher for cfg's dataset, asking the worker of this job (trn_gschedd_job) when in one.
 * Returns 0 with *ret (trn_datafetch_free), or -ENOMEM.
 */
int trn_datafetch_new(const struct trn_datafetch_config *cfg, struct trn_datafetch **ret);
void trn_datafetch_free(struct trn_datafetch *f); /* NULL allowed */

/* Whether requests go to a worker (GSCHED_JOB_ID and GSCHED_SOCKET were usable). */
bool trn_datafetch_asks(const struct trn_datafetch *f);

/*
 * The loader's shard_loader_fetch_fn, data a struct trn_datafetch: manifest shard
 * manifest_index, hinted (wait false: returns 0 once asked, whatever the answer) or awaited
 * (wait true: above). Errors name the shard's file and the dataset's directory in err.
 */
int trn_datafetch_shard(uint32_t manifest_index, bool wait, struct gs_error *err, void *data);

/*
 * Waits, as trn_datafetch_shard(i, true) does, for every shard of split whose file is not in
 * the directory (each asked for in manifest order). For the val split, which the val loader
 * opens whole. Returns 0 or the first wait's error.
 */
int trn_datafetch_split(struct trn_datafetch *f, enum shard_split split, struct gs_error *err);

/* Makes every wait in progress, and every later one, return -ECANCELED within a poll. */
void trn_datafetch_cancel(struct trn_datafetch *f); /* NULL allowed */

#endif
