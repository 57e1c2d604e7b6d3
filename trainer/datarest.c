/*
 * datarest.c: the samples an epoch read before a change of data assignment (datarest.h).
 * Only rank 0 holds the checkpoints and the old plans; it works the set out once and the
 * trainer hands it to every rank with the rest of the start state.
 */
#include "trainer/datarest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "sharding/rest.h"

void trn_data_plan_file(uint64_t digest, char *out, size_t size)
{
    snprintf(out, size, "data-plan-%016llx.toml", (unsigned long long)digest);
}

/* CKPT_DIR/data-plan-DIGEST.toml, where keep_plan (train.c) keeps it; NULL without memory. */
static char *old_plan_path(const char *dir, uint64_t digest)
{
    char name[48];
    size_t size = strlen(dir) + sizeof(name) + 2;
    char *p = malloc(size);

    trn_data_plan_file(digest, name, sizeof(name));
    if (p != NULL)
        snprintf(p, size, "%s/%s", dir, name);
    return p;
}

static void say(const struct trn_data_rest_in *in, const struct trn_state *st, uint64_t now,
                const char *what)
{
    if (in->out != NULL)
        fprintf(in->out,
                "data: the checkpoint's position (epoch %llu, sample %llu) was reached under "
                "another data assignment (digest %016llx, now %016llx): %s\n",
                (unsigned long long)st->data_epoch, (unsigned long long)st->data_sample,
                (unsigned long long)st->data_plan, (unsigned long long)now, what);
}

int trn_data_rest(const struct trn_data_rest_in *in, struct trn_state *st, uint64_t **rest)
{
    struct shard_assignment *a = NULL;
    struct shard_planfile *old = NULL;
    struct gs_error err = {0};
    uint64_t *bits = NULL, nbits = 0, now;
    char *path = NULL, why[sizeof(err.msg) + 64];
    int rc = 0;

    if (st->data_sample == 0)
        return 0;
    now = 0; /* without a plan */
    if (in->plan != NULL) {
        rc = shard_assignment_new(in->plan, in->manifest, &a, &err);
        if (rc < 0) /* the loader reports the plan's fault */
            return rc == -ENOMEM ? rc : 0;
        now = a->digest;
        shard_assignment_free(a);
    }
    if (now == st->data_plan)
        return 0;
    if (st->data_plan != 0) {
        path = old_plan_path(in->ckpt_dir, st->data_plan);
        if (path == NULL)
            return -ENOMEM;
        rc = shard_planfile_read(path, &old, &err);
    }
    if (rc == 0)
        rc = shard_rest_consumed(in->manifest, old, in->seq_len, in->seed, st->data_epoch,
                                 st->data_sample, st->data_rest_bits > 0 ? *rest : NULL, &bits,
                                 &nbits, &err);
    if (rc == -ENOMEM)
        goto out;
    if (rc < 0) {
        snprintf(why, sizeof(why), "%s; continuing at the start of epoch %llu", err.msg,
                 (unsigned long long)st->data_epoch + 1);
        say(in, st, now, why);
        rc = 0;
        goto out;
    }
    snprintf(why, sizeof(why), "epoch %llu goes on with the samples it has not read",
             (unsigned long long)st->data_epoch);
    say(in, st, now, why);
    free(*rest);
    *rest = bits;
    bits = NULL;
    st->data_rest_bits = nbits;
    st->data_sample = 0;
    st->data_plan = now;
out:
    free(bits);
    free(path);
    shard_planfile_free(old);
    return rc;
}
