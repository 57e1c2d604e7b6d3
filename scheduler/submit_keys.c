/*
 * submit_keys.c: the (uid, key) -> job table of submit_keys.h: open addressing with linear
 * probing, FNV-1a over the uid and the key, grown at 70 % full; dropping an entry re-inserts
 * the run after it so that probes never stop early.
 */
#include "scheduler/submit_keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"

struct entry {
    char *key; /* owned; NULL: empty slot */
    uint32_t uid;
    uint64_t job_id;
};

struct sched_submit_keys {
    struct entry *slots;
    size_t cap; /* a power of two */
    size_t n;
};

struct sched_submit_keys *sched_submit_keys_new(void)
{
    struct sched_submit_keys *k = calloc(1, sizeof(*k));

    if (k == NULL)
        return NULL;
    k->cap = 64;
    k->slots = calloc(k->cap, sizeof(*k->slots));
    if (k->slots == NULL) {
        free(k);
        return NULL;
    }
    return k;
}

void sched_submit_keys_free(struct sched_submit_keys *k)
{
    if (k == NULL)
        return;
    for (size_t i = 0; i < k->cap; i++)
        free(k->slots[i].key);
    free(k->slots);
    free(k);
}

bool sched_submit_key_ok(const char *key)
{
    size_t len = key != NULL ? strlen(key) : 0;

    if (len == 0 || len > SCHED_SUBMIT_KEY_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (key[i] < 0x21 || key[i] > 0x7e)
            return false;
    return true;
}

static uint64_t hash(uint32_t uid, const char *key)
{
    unsigned char le[4] = {(unsigned char)uid, (unsigned char)(uid >> 8),
                           (unsigned char)(uid >> 16), (unsigned char)(uid >> 24)};

    return gs_fnv64(gs_fnv64(GS_FNV64_OFFSET, le, sizeof(le)), key, strlen(key));
}

/* The slot of (uid, key), or the empty slot where it would go. */
static struct entry *find(const struct sched_submit_keys *k, uint32_t uid, const char *key)
{
    size_t i = (size_t)hash(uid, key) & (k->cap - 1);

    while (k->slots[i].key != NULL && (k->slots[i].uid != uid || strcmp(k->slots[i].key, key) != 0))
        i = (i + 1) & (k->cap - 1);
    return &k->slots[i];
}

static int grow(struct sched_submit_keys *k)
{
    struct entry *old = k->slots;
    size_t old_cap = k->cap;
    struct entry *slots = calloc(old_cap * 2, sizeof(*slots));

    if (slots == NULL)
        return -ENOMEM;
    k->slots = slots;
    k->cap = old_cap * 2;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key != NULL)
            *find(k, old[i].uid, old[i].key) = old[i];
    free(old);
    return 0;
}

int sched_submit_keys_put(struct sched_submit_keys *k, uint32_t uid, const char *key,
                          uint64_t job_id)
{
    struct entry *e;

    if ((k->n + 1) * 10 > k->cap * 7 && grow(k) < 0)
        return -ENOMEM;
    e = find(k, uid, key);
    if (e->key != NULL)
        return -EEXIST;
    e->key = strdup(key);
    if (e->key == NULL)
        return -ENOMEM;
    e->uid = uid;
    e->job_id = job_id;
    k->n++;
    return 0;
}

uint64_t sched_submit_keys_get(const struct sched_submit_keys *k, uint32_t uid, const char *key)
{
    const struct entry *e = find(k, uid, key);

    return e->key != NULL ? e->job_id : 0;
}

void sched_submit_keys_drop(struct sched_submit_keys *k, uint32_t uid, const char *key)
{
    struct entry *e = find(k, uid, key);
    size_t i;

    if (e->key == NULL)
        return;
    free(e->key);
    e->key = NULL;
    k->n--;
    /* The entries after it in its run may have probed past it: put them back. */
    for (i = ((size_t)(e - k->slots) + 1) & (k->cap - 1); k->slots[i].key != NULL;
         i = (i + 1) & (k->cap - 1)) {
        struct entry moved = k->slots[i];

        k->slots[i].key = NULL;
        *find(k, moved.uid, moved.key) = moved;
    }
}

size_t sched_submit_keys_count(const struct sched_submit_keys *k)
{
    return k->n;
}
