/*
 * cache.c: the node-local shard cache (cache.h): dataset ids, the scan of the root, the
 * holdings bookkeeping (LRU, pins, cap, generations) and the loop-side halves of staging
 * (stage_begin, stage_end); the copy between them is cache_copy.c.
 *
 * In memory. The cache holds an array of datasets (pointers, so a dataset stays put while
 * the array grows); each has its parsed manifest (whose dir is ROOT/<id>, so every entry's
 * path is the cached file's) and one record per listed shard: its bytes, whether it is held
 * or being staged, and its last-used time. The cache-wide sums (bytes used, bytes reserved
 * by copies in flight) are kept up to date by the few functions that change a record:
 * mark_held, drop_shard and the stage pair. Nothing here is shared with another thread.
 *
 * On disk the truth is the files: a shard is held only once its complete, verified copy has
 * been renamed to its final name, so a crash leaves a .part (resumed later) or nothing, and
 * a restart's scan rebuilds the same holdings. Recency lives in the files' mtimes.
 *
 * The copy (shard_cache_copy_run, cache_copy.c) is the only part that runs off the owner's
 * thread. stage_begin gives it every fact it needs in its job (owned copies of the paths, the
 * manifest entry's numbers) and it reads nothing else, so the loop may add, trim or evict
 * other shards meanwhile; its dataset is pinned and its shard marked staging, so neither can
 * be removed under it. The two files share only pure helpers (cache_internal.h).
 */
#include "sharding/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "common/path.h"
#include "common/sort.h"
#include "sharding/cache_internal.h"

#define MANIFEST_TMP_PREFIX "manifest.toml.tmp-"
/* Room for ROOT/<id>/manifest.toml.tmp-XXXXXX past a root that passed shard_cache_open. */
#define DIR_PATH_MAX (PATH_MAX + 64)

struct cached_shard {
    uint64_t bytes;        /* SHARD_HEADER_SIZE + tokens x width */
    uint64_t last_used_ms; /* wall clock; meaningful while held */
    bool held;
    bool staging; /* between stage_begin and stage_end */
};

struct cached_dataset {
    char id[SHARD_DATASET_ID_SIZE];
    char *dir;                       /* ROOT/<id> */
    struct shard_manifest *manifest; /* its dir is dir */
    struct cached_shard *shards;     /* manifest->nshards */
    size_t held;
    uint64_t bytes_held, bytes_total;
    uint64_t generation;
    unsigned pins;
};

struct shard_cache {
    char *root;
    uint64_t cap;      /* 0: none */
    uint64_t used;     /* bytes of held shards */
    uint64_t reserved; /* bytes of copies in flight */
    uint64_t generation;
    struct cached_dataset **datasets;
    size_t ndatasets, datasets_cap;
    char (*removed)[SHARD_DATASET_ID_SIZE]; /* oldest first */
    size_t nremoved, removed_cap;
    struct shard_cache_scan_stats stats;
};

/* --- small file helpers --- */

/* a/b into out. Returns 0 or -ENAMETOOLONG. */
static int path_join(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s/%s", a, b);

    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Shared with cache_copy.c (cache_internal.h). */
uint64_t shard_cache_mtime_ms(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000u + (uint64_t)st->st_mtim.tv_nsec / 1000000u;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Appends the whole file at path to text. Returns 0 or -errno, err naming the file. */
static int read_whole(const char *path, struct gs_buf *text, struct gs_error *err)
{
    int rc = gs_path_read_all(path, text);

    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "%s: cannot read: %s", path, gs_strerror(rc));
    return rc;
}

/* Writes len bytes to path durably (gs_path_replace), 0644. */
static int write_atomic(const char *path, const void *data, size_t len, struct gs_error *err)
{
    int rc = gs_path_replace(path, data, len, 0644);

    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "%s: cannot write: %s", path, gs_strerror(rc));
    return rc;
}

/* Makes one directory of mode. Returns 1 when made, 0 when it was there, or -errno. */
static int make_dir(const char *path, mode_t mode)
{
    struct stat st;

    if (mkdir(path, mode) == 0)
        return chmod(path, mode) < 0 ? -errno : 1; /* whatever the umask */
    if (errno != EEXIST)
        return -errno;
    if (stat(path, &st) < 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* mkdir -p. Returns 0 or -errno. */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    int rc;

    if (len == 0)
        return -EINVAL;
    if (len >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/' || p[-1] == '/')
            continue;
        *p = '\0';
        rc = make_dir(buf, 0755);
        *p = '/';
        if (rc < 0)
            return rc;
    }
    rc = make_dir(buf, 0755);
    return rc < 0 ? rc : 0;
}

/* --- dataset ids --- */

int shard_dataset_id_bytes(const void *buf, size_t len, char out[SHARD_DATASET_ID_SIZE])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 16)
        return -EIO;
    for (size_t i = 0; i < 16; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[32] = '\0';
    return 0;
}

int shard_dataset_id(const char *dir, char out[SHARD_DATASET_ID_SIZE], struct gs_error *err)
{
    struct gs_buf text = GS_BUF_INIT;
    char path[PATH_MAX];
    int rc = path_join(path, sizeof(path), dir, SHARD_MANIFEST_FILE);

    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "%s: name too long", dir);
        goto out;
    }
    rc = read_whole(path, &text, err);
    if (rc < 0)
        goto out;
    rc = shard_dataset_id_bytes(text.data != NULL ? text.data : "", text.len, out);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "%s: cannot hash (OpenSSL SHA-256 failed)", path);
out:
    gs_buf_release(&text);
    return rc;
}

bool shard_dataset_id_valid(const char *s)
{
    return s != NULL && gs_data_id_valid(s); /* the rule jobs' [data] ids follow too */
}

/* --- datasets in memory --- */

static void dataset_free(struct cached_dataset *d)
{
    if (d == NULL)
        return;
    shard_manifest_free(d->manifest);
    free(d->shards);
    free(d->dir);
    free(d);
}

static struct cached_dataset *dataset_at(const struct shard_cache *c, size_t ds)
{
    return ds < c->ndatasets ? c->datasets[ds] : NULL;
}

static struct cached_shard *shard_at(const struct shard_cache *c, size_t ds, size_t shard)
{
    struct cached_dataset *d = dataset_at(c, ds);

    return d != NULL && shard < d->manifest->nshards ? &d->shards[shard] : NULL;
}

/* Records shard i of d as held (it is not yet). */
static void mark_held(struct shard_cache *c, struct cached_dataset *d, size_t i,
                      uint64_t last_used_ms)
{
    d->shards[i].held = true;
    d->shards[i].last_used_ms = last_used_ms;
    d->held++;
    d->bytes_held += d->shards[i].bytes;
    c->used += d->shards[i].bytes;
    d->generation = ++c->generation;
}

/* Unlinks held shard i of d and records it gone. */
static int drop_shard(struct shard_cache *c, struct cached_dataset *d, size_t i,
                      struct gs_error *err)
{
    const char *path = d->manifest->shards[i].path;
    int rc;

    if (unlink(path) < 0 && errno != ENOENT) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "shard %s: cannot remove: %s", path, gs_strerror(rc));
    }
    d->shards[i].held = false;
    d->held--;
    d->bytes_held -= d->shards[i].bytes;
    c->used -= d->shards[i].bytes;
    d->generation = ++c->generation;
    return 0;
}

/*
 * Whether every listed name can live in a cache directory beside the manifest copy and the
 * .part files: none ends in .part (it could be another's partial copy) or starts with
 * manifest.toml. Fills each record's bytes (rejecting sizes past 2^64).
 */
static int size_shards(struct cached_dataset *d, struct gs_error *err)
{
    const struct shard_manifest *m = d->manifest;

    for (size_t i = 0; i < m->nshards; i++) {
        const struct shard_manifest_shard *e = &m->shards[i];
        uint64_t width = (uint64_t)e->dtype;

        if (has_suffix(e->file, SHARD_CACHE_PART_SUFFIX) ||
            strncmp(e->file, SHARD_MANIFEST_FILE, strlen(SHARD_MANIFEST_FILE)) == 0)
            return gs_error_set(err, -EINVAL, 0, 0,
                                "%s/%s: shard file '%s' is a name the cache keeps for itself",
                                m->dir, SHARD_MANIFEST_FILE, e->file);
        if (e->tokens > (UINT64_MAX - SHARD_HEADER_SIZE) / width)
            return gs_error_set(err, -EINVAL, 0, 0, "%s/%s: shard %s: impossible token count",
                                m->dir, SHARD_MANIFEST_FILE, e->file);
        d->shards[i].bytes = SHARD_HEADER_SIZE + e->tokens * width;
        d->bytes_total += d->shards[i].bytes;
    }
    return 0;
}

/*
 * Checks the file of shard i, if any: held when its header and size match the entry,
 * removed when it is a damaged or foreign shard (-EBADMSG), left alone when it cannot be
 * checked for another reason. Counts into st; d's sums only (the cache's come at insert).
 */
static int check_file(struct cached_dataset *d, size_t i, struct shard_cache_scan_stats *st,
                      struct gs_error *err)
{
    const char *path = d->manifest->shards[i].path;
    struct gs_error check_err;
    struct stat sb;
    int rc;

    if (stat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
        return 0;
    rc = shard_manifest_check_shard(d->manifest, i, 0, &check_err);
    if (rc == -ENOMEM)
        return gs_error_set(err, rc, 0, 0, "shard %s: out of memory", path);
    if (rc == 0) {
        d->shards[i].held = true;
        d->shards[i].last_used_ms = shard_cache_mtime_ms(&sb);
        d->held++;
        d->bytes_held += d->shards[i].bytes;
        st->shards_held++;
        st->bytes_held += d->shards[i].bytes;
        return 0;
    }
    if (rc != -EBADMSG) {
        st->ignored++;
        return 0;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "shard %s: damaged, and cannot remove it: %s", path,
                            gs_strerror(rc));
    }
    st->files_removed++;
    return 0;
}

/* Makes room for one more dataset pointer. */
static int grow_datasets(struct shard_cache *c)
{
    struct cached_dataset **grown;
    size_t cap;

    if (c->ndatasets < c->datasets_cap)
        return 0;
    cap = c->datasets_cap ? 2 * c->datasets_cap : 16;
    grown = realloc(c->datasets, cap * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    c->datasets = grown;
    c->datasets_cap = cap;
    return 0;
}

/*
 * Loads ROOT/<id>, whose manifest copy is in place and of that id: parses it and sizes its
 * shards (no file opened). Returns 0 with *ret (dataset_free), -EINVAL for a manifest that
 * does not parse or cannot be cached, or -errno.
 */
static int load_dataset(const struct shard_cache *c, const char *id, struct cached_dataset **ret,
                        struct gs_error *err)
{
    struct cached_dataset *d = calloc(1, sizeof(*d));
    size_t dir_len = strlen(c->root) + SHARD_DATASET_ID_SIZE + 1;
    int rc;

    if (d == NULL || (d->dir = malloc(dir_len)) == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "%s: out of memory", c->root);
        goto out_free;
    }
    snprintf(d->id, sizeof(d->id), "%s", id);
    snprintf(d->dir, dir_len, "%s/%s", c->root, id);
    rc = shard_manifest_read(d->dir, &d->manifest, err);
    if (rc < 0)
        goto out_free;
    d->shards = calloc(d->manifest->nshards + 1, sizeof(*d->shards));
    if (d->shards == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "%s: out of memory", d->dir);
        goto out_free;
    }
    rc = size_shards(d, err);
    if (rc < 0)
        goto out_free;
    *ret = d;
    return 0;
out_free:
    dataset_free(d);
    return rc;
}

/* check_file for every listed shard. */
static int check_files(struct cached_dataset *d, struct shard_cache_scan_stats *st,
                       struct gs_error *err)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < d->manifest->nshards; i++)
        rc = check_file(d, i, st, err);
    return rc;
}

/* Appends d (checked) to the cache, which owns it from then on. Returns 0 or -ENOMEM. */
static int insert_dataset(struct shard_cache *c, struct cached_dataset *d, size_t *ret_ds,
                          struct gs_error *err)
{
    if (grow_datasets(c) < 0)
        return gs_error_set(err, -ENOMEM, 0, 0, "%s: out of memory", c->root);
    c->used += d->bytes_held;
    d->generation = ++c->generation;
    c->datasets[c->ndatasets] = d;
    *ret_ds = c->ndatasets++;
    return 0;
}

/* --- open: the scan --- */

/* Whether ROOT/<name>/manifest.toml holds the manifest of id name. */
static bool manifest_matches(const char *dir, const char *name)
{
    char id[SHARD_DATASET_ID_SIZE];

    return shard_dataset_id(dir, id, NULL) == 0 && strcmp(id, name) == 0;
}

/* Counts .part files and removes stale manifest temporaries in a dataset directory. */
static void tidy_dataset_dir(const char *dir, struct shard_cache_scan_stats *st)
{
    DIR *dh = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];

    if (dh == NULL)
        return;
    while ((e = readdir(dh)) != NULL) {
        if (has_suffix(e->d_name, SHARD_CACHE_PART_SUFFIX)) {
            st->parts++;
        } else if (strncmp(e->d_name, MANIFEST_TMP_PREFIX, strlen(MANIFEST_TMP_PREFIX)) == 0 &&
                   path_join(path, sizeof(path), dir, e->d_name) == 0 && unlink(path) == 0) {
            st->files_removed++;
        }
    }
    closedir(dh);
}

/*
 * One entry of the root: a dataset, or something left alone. Fails only for -ENOMEM and a
 * damaged shard that cannot be removed.
 */
static int scan_entry(struct shard_cache *c, const char *name, struct gs_error *err)
{
    struct shard_cache_scan_stats *st = &c->stats;
    struct cached_dataset *d = NULL;
    char dir[PATH_MAX];
    struct stat sb;
    size_t ds;
    int rc;

    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    if (!shard_dataset_id_valid(name) || path_join(dir, sizeof(dir), c->root, name) < 0 ||
        stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || !manifest_matches(dir, name)) {
        st->ignored++;
        return 0;
    }
    rc = load_dataset(c, name, &d, err);
    if (rc < 0) {
        if (rc == -ENOMEM)
            return rc;
        st->ignored++; /* a manifest of the right id that this gsched cannot use */
        return 0;
    }
    rc = check_files(d, st, err);
    if (rc == 0)
        rc = insert_dataset(c, d, &ds, err);
    if (rc < 0) {
        dataset_free(d);
        return rc;
    }
    tidy_dataset_dir(dir, st);
    st->datasets++;
    return 0;
}

static int dataset_id_cmp(const void *a, const void *b)
{
    const struct cached_dataset *const *x = a, *const *y = b;

    return strcmp((*x)->id, (*y)->id);
}

/* Every entry of the root; the datasets found end up in id order, whatever readdir's. */
static int scan_root(struct shard_cache *c, struct gs_error *err)
{
    DIR *dh = opendir(c->root);
    struct dirent *e;
    int rc = 0;

    if (dh == NULL) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "%s: cannot read: %s", c->root, gs_strerror(rc));
    }
    while (rc == 0 && (e = readdir(dh)) != NULL)
        rc = scan_entry(c, e->d_name, err);
    closedir(dh);
    gs_sort(c->datasets, c->ndatasets, sizeof(c->datasets[0]), dataset_id_cmp);
    return rc;
}

int shard_cache_open(const char *root, uint64_t cap_bytes, struct shard_cache **ret,
                     struct gs_error *err)
{
    struct shard_cache *c = calloc(1, sizeof(*c));
    int rc;

    if (c == NULL || (c->root = strdup(root)) == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "%s: out of memory", root);
        goto out_free;
    }
    c->cap = cap_bytes;
    if (strlen(root) + 2 * SHARD_DATASET_ID_SIZE + 2 >= PATH_MAX) { /* ROOT/<id>/manifest... */
        rc = gs_error_set(err, -ENAMETOOLONG, 0, 0, "%s: name too long", root);
        goto out_free;
    }
    rc = make_dirs(root);
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "%s: cannot create: %s", root, gs_strerror(rc));
        goto out_free;
    }
    rc = scan_root(c, err);
    if (rc < 0)
        goto out_free;
    *ret = c;
    return 0;
out_free:
    shard_cache_close(c);
    return rc;
}

void shard_cache_close(struct shard_cache *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->ndatasets; i++)
        dataset_free(c->datasets[i]);
    free(c->datasets);
    free(c->removed);
    free(c->root);
    free(c);
}

/* --- queries --- */

const struct shard_cache_scan_stats *shard_cache_scan_stats(const struct shard_cache *c)
{
    return &c->stats;
}

const char *shard_cache_root(const struct shard_cache *c)
{
    return c->root;
}

uint64_t shard_cache_cap(const struct shard_cache *c)
{
    return c->cap;
}

uint64_t shard_cache_bytes_used(const struct shard_cache *c)
{
    return c->used;
}

uint64_t shard_cache_bytes_reserved(const struct shard_cache *c)
{
    return c->reserved;
}

uint64_t shard_cache_generation(const struct shard_cache *c)
{
    return c->generation;
}

size_t shard_cache_count(const struct shard_cache *c)
{
    return c->ndatasets;
}

int shard_cache_find(const struct shard_cache *c, const char *id, size_t *ret_ds)
{
    for (size_t i = 0; i < c->ndatasets; i++) {
        if (strcmp(c->datasets[i]->id, id) == 0) {
            *ret_ds = i;
            return 0;
        }
    }
    return -ENOENT;
}

int shard_cache_dataset(const struct shard_cache *c, size_t ds,
                        struct shard_cache_dataset_info *ret)
{
    const struct cached_dataset *d = dataset_at(c, ds);
    uint64_t last = 0;

    if (d == NULL)
        return -EINVAL;
    for (size_t i = 0; i < d->manifest->nshards; i++) {
        if (d->shards[i].held && d->shards[i].last_used_ms > last)
            last = d->shards[i].last_used_ms;
    }
    *ret = (struct shard_cache_dataset_info){.id = d->id,
                                             .dir = d->dir,
                                             .manifest = d->manifest,
                                             .nshards = d->manifest->nshards,
                                             .shards_held = d->held,
                                             .bytes_held = d->bytes_held,
                                             .bytes_total = d->bytes_total,
                                             .last_used_ms = last,
                                             .generation = d->generation,
                                             .pins = d->pins};
    return 0;
}

bool shard_cache_holds(const struct shard_cache *c, size_t ds, size_t shard)
{
    const struct cached_shard *s = shard_at(c, ds, shard);

    return s != NULL && s->held;
}

uint64_t shard_cache_shard_bytes(const struct shard_cache *c, size_t ds, size_t shard)
{
    const struct cached_shard *s = shard_at(c, ds, shard);

    return s != NULL ? s->bytes : 0;
}

uint64_t shard_cache_shard_last_used(const struct shard_cache *c, size_t ds, size_t shard)
{
    const struct cached_shard *s = shard_at(c, ds, shard);

    return s != NULL && s->held ? s->last_used_ms : 0;
}

int shard_cache_bitmap(const struct shard_cache *c, size_t ds, uint8_t *bits, size_t nbytes)
{
    const struct cached_dataset *d = dataset_at(c, ds);

    if (d == NULL)
        return -EINVAL;
    if (nbytes < (d->manifest->nshards + 7) / 8)
        return -ENOBUFS;
    if (nbytes > 0)
        memset(bits, 0, nbytes);
    for (size_t i = 0; i < d->manifest->nshards; i++) {
        if (d->shards[i].held)
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    return 0;
}

bool shard_cache_pop_removed(struct shard_cache *c, char out[SHARD_DATASET_ID_SIZE])
{
    if (c->nremoved == 0)
        return false;
    memcpy(out, c->removed[0], SHARD_DATASET_ID_SIZE);
    c->nremoved--;
    memmove(c->removed[0], c->removed[1], c->nremoved * sizeof(c->removed[0]));
    return true;
}

/* --- adding datasets --- */

/*
 * Puts a manifest copy of id at ROOT/<id>/manifest.toml unless one of that id is there.
 * *ret_made_dir / *ret_wrote say what it created, for the caller's undo. A new directory is
 * made 0700: who else may read it is the caller's to say (shard_cache_add_dataset), and
 * until then nobody sees the manifest's names and checksums.
 */
static int place_manifest(struct shard_cache *c, const char *id, const void *buf, size_t len,
                          bool *ret_made_dir, bool *ret_wrote, struct gs_error *err)
{
    char dir[PATH_MAX], path[DIR_PATH_MAX];
    int rc;

    *ret_made_dir = *ret_wrote = false;
    snprintf(dir, sizeof(dir), "%s/%s", c->root, id); /* fits: checked at open */
    rc = make_dir(dir, 0700);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "%s: cannot create: %s", dir, gs_strerror(rc));
    *ret_made_dir = rc == 1;
    if (*ret_made_dir && (rc = gs_path_fsync_parent(dir)) < 0)
        return gs_error_set(err, rc, 0, 0, "%s: cannot sync: %s", c->root, gs_strerror(rc));
    if (manifest_matches(dir, id))
        return 0;
    snprintf(path, sizeof(path), "%s/%s", dir, SHARD_MANIFEST_FILE);
    rc = write_atomic(path, buf, len, err);
    *ret_wrote = rc == 0;
    return rc;
}

/* Removes what place_manifest created. */
static void unplace_manifest(struct shard_cache *c, const char *id, bool made_dir, bool wrote)
{
    char dir[PATH_MAX], path[DIR_PATH_MAX];

    snprintf(dir, sizeof(dir), "%s/%s", c->root, id);
    snprintf(path, sizeof(path), "%s/%s", dir, SHARD_MANIFEST_FILE);
    if (wrote)
        unlink(path);
    if (made_dir)
        rmdir(dir);
}

/* Loads, checks and inserts ROOT/<id> once its manifest copy is in place. */
static int register_dataset(struct shard_cache *c, const char *id, size_t *ret_ds,
                            struct gs_error *err)
{
    struct shard_cache_scan_stats st = {0};
    struct cached_dataset *d = NULL;
    int rc = load_dataset(c, id, &d, err);

    if (rc == 0)
        rc = check_files(d, &st, err);
    if (rc == 0)
        rc = insert_dataset(c, d, ret_ds, err);
    if (rc < 0)
        dataset_free(d);
    return rc;
}

int shard_cache_add_manifest_bytes(struct shard_cache *c, const void *buf, size_t len,
                                   size_t *ret_ds, struct gs_error *err)
{
    char id[SHARD_DATASET_ID_SIZE];
    bool made_dir = false, wrote = false;
    size_t ds;
    int rc = shard_dataset_id_bytes(buf, len, id);

    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "manifest: cannot hash (OpenSSL SHA-256 failed)");
    if (shard_cache_find(c, id, &ds) < 0) {
        rc = place_manifest(c, id, buf, len, &made_dir, &wrote, err);
        if (rc == 0)
            rc = register_dataset(c, id, &ds, err);
        if (rc < 0) {
            unplace_manifest(c, id, made_dir, wrote);
            return rc;
        }
    }
    if (ret_ds != NULL)
        *ret_ds = ds;
    return 0;
}

int shard_cache_add_dataset(struct shard_cache *c, const char *source_dir, size_t *ret_ds,
                            struct gs_error *err)
{
    struct shard_manifest *m = NULL;
    struct gs_buf text = GS_BUF_INIT;
    char path[PATH_MAX];
    int rc = shard_manifest_read(source_dir, &m, err); /* errors name the source */

    if (rc < 0)
        goto out;
    rc = path_join(path, sizeof(path), source_dir, SHARD_MANIFEST_FILE);
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "%s: name too long", source_dir);
        goto out;
    }
    rc = read_whole(path, &text, err);
    if (rc == 0)
        rc = shard_cache_add_manifest_bytes(c, text.data != NULL ? text.data : "", text.len, ret_ds,
                                            err);
out:
    gs_buf_release(&text);
    shard_manifest_free(m);
    return rc;
}

/* --- recency, pins, eviction --- */

int shard_cache_touch(struct shard_cache *c, size_t ds, size_t shard, uint64_t now_ms,
                      struct gs_error *err)
{
    struct cached_shard *s = shard_at(c, ds, shard);
    struct timespec times[2];
    const char *path;
    int rc;

    if (s == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "no dataset %zu shard %zu", ds, shard);
    path = c->datasets[ds]->manifest->shards[shard].path;
    if (!s->held)
        return gs_error_set(err, -ENOENT, 0, 0, "shard %s: not held", path);
    s->last_used_ms = now_ms;
    times[0] = (struct timespec){.tv_sec = 0, .tv_nsec = UTIME_OMIT};
    times[1] = (struct timespec){.tv_sec = (time_t)(now_ms / 1000),
                                 .tv_nsec = (long)(now_ms % 1000) * 1000000L};
    if (utimensat(AT_FDCWD, path, times, 0) < 0) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "shard %s: cannot set its mtime: %s", path,
                            gs_strerror(rc));
    }
    return 0;
}

int shard_cache_pin_dataset(struct shard_cache *c, size_t ds)
{
    struct cached_dataset *d = dataset_at(c, ds);

    if (d == NULL || d->pins == UINT_MAX)
        return -EINVAL;
    d->pins++;
    return 0;
}

int shard_cache_unpin_dataset(struct shard_cache *c, size_t ds)
{
    struct cached_dataset *d = dataset_at(c, ds);

    if (d == NULL || d->pins == 0)
        return -EINVAL;
    d->pins--;
    return 0;
}

/* A shard trim may evict. */
struct victim {
    uint64_t last_used_ms;
    const char *id;
    size_t ds, shard;
};

static int victim_cmp(const void *a, const void *b)
{
    const struct victim *x = a, *y = b;
    int by_id;

    if (x->last_used_ms != y->last_used_ms)
        return x->last_used_ms < y->last_used_ms ? -1 : 1;
    by_id = strcmp(x->id, y->id);
    if (by_id != 0)
        return by_id;
    return x->shard < y->shard ? -1 : x->shard > y->shard;
}

/* Every held shard of an unpinned dataset, not being staged, into *ret (malloc'd). */
static int list_victims(const struct shard_cache *c, struct victim **ret, size_t *ret_n,
                        uint64_t *ret_bytes)
{
    size_t n = 0, max = 0;
    uint64_t bytes = 0;
    struct victim *v;

    for (size_t ds = 0; ds < c->ndatasets; ds++)
        max += c->datasets[ds]->held;
    v = malloc((max + 1) * sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    for (size_t ds = 0; ds < c->ndatasets; ds++) {
        const struct cached_dataset *d = c->datasets[ds];

        for (size_t i = 0; d->pins == 0 && i < d->manifest->nshards; i++) {
            if (!d->shards[i].held || d->shards[i].staging)
                continue;
            v[n++] = (struct victim){d->shards[i].last_used_ms, d->id, ds, i};
            bytes += d->shards[i].bytes;
        }
    }
    gs_sort(v, n, sizeof(*v), victim_cmp);
    *ret = v;
    *ret_n = n;
    *ret_bytes = bytes;
    return 0;
}

int shard_cache_trim(struct shard_cache *c, uint64_t need_bytes, shard_cache_evicted_fn evicted,
                     void *data, size_t *ret_evicted, struct gs_error *err)
{
    struct victim *v = NULL;
    uint64_t excess, evictable;
    size_t n = 0, done = 0;
    int rc = 0;

    if (c->cap != 0 && need_bytes > c->cap)
        return gs_error_set(err, -ENOSPC, 0, 0,
                            "cache %s: %" PRIu64 " bytes wanted, the cap is %" PRIu64, c->root,
                            need_bytes, c->cap);
    if (c->cap == 0 || c->used + c->reserved + need_bytes <= c->cap)
        goto out_done;
    excess = c->used + c->reserved + need_bytes - c->cap;
    if (list_victims(c, &v, &n, &evictable) < 0)
        return gs_error_set(err, -ENOMEM, 0, 0, "cache %s: out of memory", c->root);
    if (evictable < excess) {
        rc = gs_error_set(err, -ENOSPC, 0, 0,
                          "cache %s: %" PRIu64 " bytes to free, %" PRIu64
                          " in shards that may be evicted",
                          c->root, excess, evictable);
        goto out;
    }
    for (uint64_t freed = 0; freed < excess; done++) {
        struct cached_dataset *d = c->datasets[v[done].ds];

        freed += d->shards[v[done].shard].bytes;
        rc = drop_shard(c, d, v[done].shard, err);
        if (rc < 0)
            goto out;
        if (evicted != NULL)
            evicted(c, v[done].ds, v[done].shard, data);
    }
out_done:
    if (ret_evicted != NULL)
        *ret_evicted = done;
out:
    free(v);
    return rc;
}

/* Removes every file of a dataset directory but the manifest copy (held shards first). */
static int remove_files(struct shard_cache *c, struct cached_dataset *d, struct gs_error *err)
{
    DIR *dh;
    struct dirent *e;
    struct stat sb;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < d->manifest->nshards; i++) {
        if (d->shards[i].held)
            rc = drop_shard(c, d, i, err);
    }
    if (rc < 0)
        return rc;
    dh = opendir(d->dir);
    if (dh == NULL) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "%s: cannot read: %s", d->dir, gs_strerror(rc));
    }
    while (rc == 0 && (e = readdir(dh)) != NULL) {
        if (strcmp(e->d_name, SHARD_MANIFEST_FILE) == 0 ||
            fstatat(dirfd(dh), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(sb.st_mode))
            continue;
        if (unlinkat(dirfd(dh), e->d_name, 0) < 0 && errno != ENOENT) {
            rc = -errno;
            gs_error_set(err, rc, 0, 0, "%s/%s: cannot remove: %s", d->dir, e->d_name,
                         gs_strerror(rc));
        }
    }
    closedir(dh);
    return rc;
}

/* Evicts dataset ds whole: its files, its manifest copy, its directory, its record. */
static int drop_dataset(struct shard_cache *c, size_t ds, struct gs_error *err)
{
    struct cached_dataset *d = c->datasets[ds];
    char path[DIR_PATH_MAX];
    int rc;

    if (c->nremoved == c->removed_cap) { /* room first: nothing may fail after the unlink */
        size_t cap = c->removed_cap ? 2 * c->removed_cap : 8;
        void *grown = realloc(c->removed, cap * sizeof(c->removed[0]));

        if (grown == NULL)
            return gs_error_set(err, -ENOMEM, 0, 0, "cache %s: out of memory", c->root);
        c->removed = grown;
        c->removed_cap = cap;
    }
    rc = remove_files(c, d, err);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/%s", d->dir, SHARD_MANIFEST_FILE);
    if (unlink(path) < 0 && errno != ENOENT) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "%s: cannot remove: %s", path, gs_strerror(rc));
    }
    memcpy(c->removed[c->nremoved++], d->id, SHARD_DATASET_ID_SIZE);
    c->generation++;
    c->ndatasets--;
    memmove(&c->datasets[ds], &c->datasets[ds + 1], (c->ndatasets - ds) * sizeof(d));
    rc = rmdir(d->dir) < 0 ? -errno : gs_path_fsync_parent(d->dir);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "%s: cannot remove: %s", d->dir, gs_strerror(rc));
    dataset_free(d);
    return rc;
}

/* Evicts one shard: its file if held, and any .part of it. */
static int evict_shard(struct shard_cache *c, struct cached_dataset *d, size_t i,
                       struct gs_error *err)
{
    const char *path = d->manifest->shards[i].path;
    char part[PATH_MAX];

    if (d->shards[i].staging)
        return gs_error_set(err, -EBUSY, 0, 0, "shard %s: being staged", path);
    if (snprintf(part, sizeof(part), "%s%s", path, SHARD_CACHE_PART_SUFFIX) < (int)sizeof(part))
        unlink(part);
    if (!d->shards[i].held)
        return gs_error_set(err, -ENOENT, 0, 0, "shard %s: not held", path);
    return drop_shard(c, d, i, err);
}

int shard_cache_evict(struct shard_cache *c, size_t ds, size_t shard, struct gs_error *err)
{
    struct cached_dataset *d = dataset_at(c, ds);

    if (d == NULL || (shard != SHARD_CACHE_ALL && shard >= d->manifest->nshards))
        return gs_error_set(err, -EINVAL, 0, 0, "no dataset %zu shard %zu", ds, shard);
    if (d->pins > 0)
        return gs_error_set(err, -EBUSY, 0, 0, "dataset %s: pinned (%u)", d->id, d->pins);
    if (shard == SHARD_CACHE_ALL)
        return drop_dataset(c, ds, err);
    return evict_shard(c, d, shard, err);
}

/* --- staging, on the owner's thread --- */

int shard_cache_stage_begin(struct shard_cache *c, size_t ds, size_t shard,
                            struct shard_cache_copy *job, struct gs_error *err)
{
    struct cached_dataset *d = dataset_at(c, ds);
    const struct shard_manifest_shard *e;
    struct cached_shard *s = shard_at(c, ds, shard);
    size_t part_len;

    if (s == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "no dataset %zu shard %zu", ds, shard);
    e = &d->manifest->shards[shard];
    if (s->held)
        return gs_error_set(err, -EEXIST, 0, 0, "shard %s: already held", e->path);
    if (s->staging)
        return gs_error_set(err, -EBUSY, 0, 0, "shard %s: already being staged", e->path);
    if (c->cap != 0 && c->used + c->reserved + s->bytes > c->cap)
        return gs_error_set(err, -ENOSPC, 0, 0,
                            "shard %s: %" PRIu64 " bytes do not fit under the cap (%" PRIu64
                            " used, %" PRIu64 " reserved, cap %" PRIu64 ")",
                            e->path, s->bytes, c->used, c->reserved, c->cap);
    *job = (struct shard_cache_copy){.shard = shard,
                                     .bytes = s->bytes,
                                     .tokens = e->tokens,
                                     .crc32c = e->crc32c,
                                     .dtype = e->dtype,
                                     .vocab = e->vocab};
    memcpy(job->dataset_id, d->id, SHARD_DATASET_ID_SIZE);
    part_len = strlen(e->path) + sizeof(SHARD_CACHE_PART_SUFFIX);
    job->path = strdup(e->path);
    job->part_path = malloc(part_len);
    if (job->path == NULL || job->part_path == NULL) {
        free(job->path);
        free(job->part_path);
        *job = (struct shard_cache_copy){0};
        return gs_error_set(err, -ENOMEM, 0, 0, "shard %s: out of memory", e->path);
    }
    snprintf(job->part_path, part_len, "%s%s", e->path, SHARD_CACHE_PART_SUFFIX);
    s->staging = true;
    d->pins++;
    c->reserved += s->bytes;
    return 0;
}

void shard_cache_stage_end(struct shard_cache *c, struct shard_cache_copy *job, int result)
{
    struct cached_dataset *d;
    size_t ds;

    if (shard_cache_find(c, job->dataset_id, &ds) == 0) {
        d = c->datasets[ds];
        if (job->shard < d->manifest->nshards && d->shards[job->shard].staging) {
            d->shards[job->shard].staging = false;
            d->pins--;
            c->reserved -= d->shards[job->shard].bytes;
            if (result == 0)
                mark_held(c, d, job->shard, job->mtime_ms);
        }
    }
    free(job->path);
    free(job->part_path);
    *job = (struct shard_cache_copy){0};
}
