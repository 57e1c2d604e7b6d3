/*
 * datafetch.c: shards asked of the worker and awaited (see datafetch.h). Each request is its
 * own connection through trn_gschedd_call (gschedd.h), like a progress report: the worker's
 * CLI socket speaks gschedd's protocol and answers a DataFetchRequest itself.
 *
 * What two threads share is only the bookkeeping of failed requests (failures in a row, the
 * one warning, a worker too old to ask) and the cancel flag, all atomics; everything else is
 * set in trn_datafetch_new and read only after.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/datafetch.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/clock.h"
#include "trainer/gschedd.h"

struct trn_datafetch {
    const struct shard_manifest *m;
    char dataset[64];
    uint64_t timeout_ms;
    uint32_t rank;
    FILE *warn;
    bool asks; /* in a job: socket_path and job_id are set */
    char socket_path[TRN_GSCHEDD_PATH_MAX];
    uint64_t job_id;

    atomic_uint failures;  /* requests failed in a row */
    atomic_bool warned;    /* the one warning is out */
    atomic_bool too_old;   /* the worker does not know the request: stop asking */
    atomic_bool cancelled; /* trn_datafetch_cancel */
};

bool trn_datafetch_env(void)
{
    const char *v = getenv("GSCHED_DATA_STREAM");

    return v != NULL && strcmp(v, "1") == 0;
}

int trn_datafetch_new(const struct trn_datafetch_config *cfg, struct trn_datafetch **ret)
{
    struct trn_datafetch *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -ENOMEM;
    f->m = cfg->manifest;
    snprintf(f->dataset, sizeof(f->dataset), "%s", cfg->dataset);
    f->timeout_ms = (uint64_t)cfg->timeout_s * 1000;
    f->rank = cfg->rank;
    f->warn = cfg->warn;
    f->asks = trn_gschedd_job(&f->job_id, f->socket_path, sizeof(f->socket_path)) == 0;
    atomic_init(&f->failures, 0);
    atomic_init(&f->warned, false);
    atomic_init(&f->too_old, false);
    atomic_init(&f->cancelled, false);
    *ret = f;
    return 0;
}

void trn_datafetch_free(struct trn_datafetch *f)
{
    free(f);
}

bool trn_datafetch_asks(const struct trn_datafetch *f)
{
    return f->asks;
}

void trn_datafetch_cancel(struct trn_datafetch *f)
{
    if (f != NULL)
        atomic_store(&f->cancelled, true);
}

/* A request that did not get an answer: counted, and said once. */
static void request_failed(struct trn_datafetch *f, int rc, const char *why)
{
    atomic_fetch_add(&f->failures, 1);
    if (rc == -EPROTONOSUPPORT)
        atomic_store(&f->too_old, true);
    if (f->warn == NULL || atomic_exchange(&f->warned, true))
        return;
    fprintf(f->warn,
            "data: rank %u: cannot ask the worker at %s for shards of job %llu: %s (rc=%d); "
            "waiting for its copies all the same, further failures are not shown\n",
            f->rank, f->socket_path, (unsigned long long)f->job_id, why, rc);
    fflush(f->warn);
}

/*
 * One DataFetchRequest for shard i. Returns 0 when asked, or when no answer came (above);
 * -EIO with err when the worker answered that staging it failed.
 */
static int ask(struct trn_datafetch *f, uint32_t i, struct gs_error *err)
{
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    Gs__DataFetchRequest req = GS__DATA_FETCH_REQUEST__INIT;
    const Gs__DataFetchReply *r;
    bool refused;
    char why[200];
    int rc;

    req.job_id = f->job_id;
    req.dataset = f->dataset;
    req.n_shards = 1;
    req.shards = &i;
    env.body_case = GS__ENVELOPE__BODY_DATA_FETCH_REQUEST;
    env.data_fetch_request = &req;
    rc = trn_gschedd_call(f->socket_path, &env, GS__ENVELOPE__BODY_DATA_FETCH_REPLY,
                          TRN_DATAFETCH_MIN_MINOR, TRN_DATAFETCH_EXCHANGE_MS, &reply, &refused, why,
                          sizeof(why));
    if (rc < 0) {
        request_failed(f, rc, why);
        return 0;
    }
    atomic_store(&f->failures, 0);
    r = reply->data_fetch_reply;
    if (r != NULL && r->error != NULL && r->error[0] != '\0')
        rc = gs_error_set(err, -EIO, 0, 0, "the worker could not stage shard %s of %s: %s",
                          f->m->shards[i].file, f->m->dir, r->error);
    gs_proto_envelope_free(reply);
    return rc;
}

static bool file_there(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Shard i's file in the directory, asked for every TRN_DATAFETCH_RESEND_MS (datafetch.h). */
static int wait_for(struct trn_datafetch *f, uint32_t i, struct gs_error *err)
{
    const struct shard_manifest_shard *s = &f->m->shards[i];
    uint64_t now = gs_clock_mono_ms(), deadline = now + f->timeout_ms, next_ask = now;
    int rc;

    for (;;) {
        if (f->asks && !atomic_load(&f->too_old) && now >= next_ask) {
            rc = ask(f, i, err);
            if (rc < 0)
                return rc;
            next_ask = gs_clock_mono_ms() + TRN_DATAFETCH_RESEND_MS;
        }
        if (file_there(s->path))
            return 0;
        if (atomic_load(&f->cancelled))
            return gs_error_set(err, -ECANCELED, 0, 0, "the wait for shard %s was cancelled",
                                s->path);
        now = gs_clock_mono_ms();
        if (now >= deadline)
            return gs_error_set(err, -ETIMEDOUT, 0, 0,
                                "shard %s (index %u) of dataset %s did not arrive in %s "
                                "within data.fetch_timeout (%llu s)",
                                s->file, i, f->dataset, f->m->dir,
                                (unsigned long long)(f->timeout_ms / 1000));
        sleep_ms(TRN_DATAFETCH_POLL_MS);
        now = gs_clock_mono_ms();
    }
}

int trn_datafetch_shard(uint32_t manifest_index, bool wait, struct gs_error *err, void *data)
{
    struct trn_datafetch *f = data;

    if (manifest_index >= f->m->nshards)
        return gs_error_set(err, -EINVAL, 0, 0, "no shard %u in %s (%zu shards)", manifest_index,
                            f->m->dir, f->m->nshards);
    if (wait)
        return wait_for(f, manifest_index, err);
    /* A hint: the wait for this shard will ask again, and report what the worker says. */
    if (f->asks && !atomic_load(&f->too_old) &&
        atomic_load(&f->failures) < TRN_DATAFETCH_MAX_FAILURES)
        (void)ask(f, manifest_index, err);
    gs_error_clear(err);
    return 0;
}

int trn_datafetch_split(struct trn_datafetch *f, enum shard_split split, struct gs_error *err)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < f->m->nshards; i++) {
        if (f->m->shards[i].split == split && !file_there(f->m->shards[i].path))
            rc = wait_for(f, (uint32_t)i, err);
    }
    return rc;
}
