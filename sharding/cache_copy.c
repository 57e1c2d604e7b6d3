/*
 * cache_copy.c: the thread-side copy of the node-local shard cache (cache.h):
 * shard_cache_copy_run, which copies one shard from a file or a read callback (a peer fetch)
 * into ROOT/<id>/<file>.part, resuming a .part an earlier run left when it still starts with
 * the shard's header, keeping to the job's rate limit, then verifies the finished file
 * against the manifest's entry and renames it into place durably (fsync, rename, fsync of
 * the directory).
 *
 * Place. Staging is split in three: shard_cache_stage_begin (cache.c, the owner's thread)
 * fills a self-contained job (owned copies of the paths, the entry's numbers), pins the
 * dataset, marks the shard staging and reserves its bytes; this file's copy runs on any
 * thread (a thread of its own in the worker, worker/offload.h), and stops between two reads
 * when the job's cancel flag is set; shard_cache_stage_end (cache.c, the owner's
 * thread) records the result and unpins. The pin and the staging mark are what keep the
 * loop's trim and evict off the files the copy writes while it runs.
 *
 * Threading. Touches no struct shard_cache state (it never sees one): it reads and writes
 * only its job and the files the job names, so the loop may use the cache meanwhile. It
 * shares only pure helpers with cache.c (cache_internal.h). Sleeps to keep the rate; logs
 * nothing: errors come back in err, naming the shard.
 *
 * On disk the shard appears under its final name only complete and verified; a failure
 * leaves a .part to resume (source or disk errors) or nothing (-EBADMSG: the wrong bytes).
 */
#include "sharding/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/path.h"
#include "sharding/cache_internal.h"

#define COPY_CHUNK (1u << 20) /* bytes per read and write of a copy */
#define PACE_CHUNK_MIN 4096u  /* smallest chunk under a rate limit */

/* What one run of a copy holds open. */
struct copy_run {
    struct shard_cache_copy *job;
    int src_fd;  /* job->source_path, or -1 */
    int part_fd; /* job->part_path */
    unsigned char *buf;
    size_t chunk; /* bytes per read */
};

static int pwrite_all(int fd, const unsigned char *p, size_t len, uint64_t offset)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)offset);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

/* The header the shard must carry (the format of shard.c), so that a .part can be checked. */
static void expected_header(const struct shard_cache_copy *job, unsigned char p[SHARD_HEADER_SIZE])
{
    uint32_t crc;

    memset(p, 0, SHARD_HEADER_SIZE);
    memcpy(p, SHARD_MAGIC, 8);
    for (int i = 0; i < 4; i++) {
        p[8 + i] = (unsigned char)((uint32_t)SHARD_VERSION >> (8 * i));
        p[16 + i] = (unsigned char)(job->vocab >> (8 * i));
        p[32 + i] = (unsigned char)(job->crc32c >> (8 * i));
    }
    p[12] = (unsigned char)job->dtype;
    for (int i = 0; i < 8; i++)
        p[24 + i] = (unsigned char)(job->tokens >> (8 * i));
    crc = gs_crc32c(0, p, 60);
    for (int i = 0; i < 4; i++)
        p[60 + i] = (unsigned char)(crc >> (8 * i));
}

/*
 * Opens a file source and refuses one that is not a regular file or whose size is not the
 * shard's. O_NONBLOCK because the path is the job user's to choose: a FIFO would otherwise
 * hold the pool thread in open() until someone wrote to it (it has no effect on the reads
 * of a regular file).
 */
static int open_source(struct copy_run *r, struct gs_error *err)
{
    struct shard_cache_copy *job = r->job;
    struct stat sb;
    int rc;

    if (job->source_path == NULL)
        return 0;
    r->src_fd = open(job->source_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (r->src_fd < 0 || fstat(r->src_fd, &sb) < 0) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "shard %s: cannot open source %s: %s", job->path,
                            job->source_path, gs_strerror(rc));
    }
    if (!S_ISREG(sb.st_mode))
        return gs_error_set(err, -EINVAL, 0, 0, "shard %s: source %s is not a regular file",
                            job->path, job->source_path);
    if ((uint64_t)sb.st_size != job->bytes)
        return gs_error_set(err, -EBADMSG, 0, 0,
                            "shard %s: source %s is %lld bytes, the manifest's entry %" PRIu64,
                            job->path, job->source_path, (long long)sb.st_size, job->bytes);
    return 0;
}

/*
 * How much of an existing .part to keep: all of it when it is no longer than the shard and
 * starts with the shard's header (as far as it goes), else nothing.
 */
static uint64_t part_keep(const struct shard_cache_copy *job, int fd, uint64_t size)
{
    unsigned char want[SHARD_HEADER_SIZE], have[SHARD_HEADER_SIZE];
    size_t n = size < SHARD_HEADER_SIZE ? (size_t)size : SHARD_HEADER_SIZE;

    if (size == 0 || size > job->bytes)
        return 0;
    expected_header(job, want);
    if (pread(fd, have, n, 0) != (ssize_t)n || memcmp(have, want, n) != 0)
        return 0;
    return size;
}

/* Opens (or creates) the .part and decides where the copy starts. */
static int open_part(struct copy_run *r, uint64_t *ret_start, struct gs_error *err)
{
    struct shard_cache_copy *job = r->job;
    struct stat sb;
    uint64_t keep;
    int rc;

    r->part_fd = open(job->part_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (r->part_fd < 0 || fchmod(r->part_fd, 0644) < 0 || fstat(r->part_fd, &sb) < 0)
        goto out_errno;
    keep = part_keep(job, r->part_fd, (uint64_t)sb.st_size);
    if (keep != (uint64_t)sb.st_size && ftruncate(r->part_fd, 0) < 0)
        goto out_errno;
    *ret_start = keep;
    return 0;
out_errno:
    rc = -errno;
    return gs_error_set(err, rc, 0, 0, "shard %s: cannot open %s: %s", job->path, job->part_path,
                        gs_strerror(rc));
}

static void sleep_ns(uint64_t ns)
{
    struct timespec left = {.tv_sec = (time_t)(ns / 1000000000u),
                            .tv_nsec = (long)(ns % 1000000000u)};

    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
}

/* Sleeps until copying bytes since start_ns keeps to rate bytes per second. */
static void pace(uint64_t start_ns, uint64_t bytes, uint64_t rate)
{
    double due_ns, now_ns;

    if (rate == 0)
        return;
    due_ns = (double)bytes * 1e9 / (double)rate;
    now_ns = (double)(gs_clock_mono_ns() - start_ns);
    if (now_ns < due_ns)
        sleep_ns((uint64_t)(due_ns - now_ns));
}

/* Reads up to len source bytes at offset: *ret_got 0 at the source's end. */
static int read_source(struct copy_run *r, uint64_t offset, size_t len, size_t *ret_got,
                       struct gs_error *err)
{
    struct shard_cache_copy *job = r->job;
    ssize_t n;
    int rc;

    if (job->read != NULL) {
        rc = job->read(offset, r->buf, len, ret_got, err, job->read_data);
        if (rc == 0 && *ret_got > len)
            rc = gs_error_set(err, -EIO, 0, 0, "shard %s: source read %zu bytes of %zu asked",
                              job->path, *ret_got, len);
        return rc;
    }
    do
        n = pread(r->src_fd, r->buf, len, (off_t)offset);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        rc = -errno;
        return gs_error_set(err, rc, 0, 0, "shard %s: cannot read source %s: %s", job->path,
                            job->source_path, gs_strerror(rc));
    }
    *ret_got = (size_t)n;
    return 0;
}

/* Copies source bytes [start, job->bytes) into the .part, at the rate asked. */
static int copy_bytes(struct copy_run *r, uint64_t start, struct gs_error *err)
{
    struct shard_cache_copy *job = r->job;
    uint64_t start_ns = gs_clock_mono_ns();
    int rc;

    for (uint64_t at = start; at < job->bytes;) {
        size_t want = job->bytes - at < r->chunk ? (size_t)(job->bytes - at) : r->chunk, got = 0;

        if (job->cancel != NULL && atomic_load(job->cancel))
            return gs_error_set(err, -ECANCELED, 0, 0,
                                "shard %s: copy cancelled at %" PRIu64 " bytes (the .part is kept)",
                                job->path, at);
        rc = read_source(r, at, want, &got, err);
        if (rc < 0)
            return rc;
        if (got == 0)
            return gs_error_set(err, -EBADMSG, 0, 0,
                                "shard %s: the source ends at %" PRIu64 " bytes of %" PRIu64,
                                job->path, at, job->bytes);
        rc = pwrite_all(r->part_fd, r->buf, got, at);
        if (rc < 0)
            return gs_error_set(err, rc, 0, 0, "shard %s: cannot write %s: %s", job->path,
                                job->part_path, gs_strerror(rc));
        at += got;
        job->bytes_copied += got;
        if (job->progress != NULL)
            atomic_fetch_add(job->progress, got);
        pace(start_ns, job->bytes_copied, job->rate_bytes_per_s);
    }
    return 0;
}

/* The finished .part against the manifest's entry: -EBADMSG when it differs. */
static int verify_part(const struct shard_cache_copy *job, struct gs_error *err)
{
    const struct shard_header *h;
    struct shard_file *s;
    int rc = shard_open(job->part_path, SHARD_VERIFY, &s, err);

    if (rc < 0)
        return rc;
    h = shard_header(s);
    if (h->tokens != job->tokens || h->crc32c != job->crc32c || h->dtype != job->dtype ||
        h->vocab != job->vocab)
        rc = gs_error_set(err, -EBADMSG, 0, 0,
                          "shard %s: copy holds %" PRIu64 " %s tokens, crc32c %08" PRIx32
                          ", vocab %" PRIu32 "; the manifest says %" PRIu64 " %s, %08" PRIx32
                          ", %" PRIu32,
                          job->path, h->tokens, shard_dtype_name(h->dtype), h->crc32c, h->vocab,
                          job->tokens, shard_dtype_name(job->dtype), job->crc32c, job->vocab);
    shard_close(s);
    return rc;
}

/* fsync and close of the .part, verify, rename into place, fsync of the directory. */
static int finish_part(struct copy_run *r, struct gs_error *err)
{
    struct shard_cache_copy *job = r->job;
    struct stat sb;
    int rc = fsync(r->part_fd) < 0 ? -errno : 0;

    close(r->part_fd);
    r->part_fd = -1;
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "shard %s: cannot sync %s: %s", job->path,
                            job->part_path, gs_strerror(rc));
    rc = verify_part(job, err);
    if (rc < 0)
        return rc;
    if (rename(job->part_path, job->path) < 0 || stat(job->path, &sb) < 0)
        rc = -errno;
    if (rc == 0)
        rc = gs_path_fsync_parent(job->path);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "shard %s: cannot move the copy into place: %s",
                            job->path, gs_strerror(rc));
    job->mtime_ms = shard_cache_mtime_ms(&sb);
    return 0;
}

static size_t copy_chunk(uint64_t rate)
{
    uint64_t chunk = rate / 8; /* about 8 reads a second under a rate limit */

    if (rate == 0 || chunk > COPY_CHUNK)
        return COPY_CHUNK;
    return chunk < PACE_CHUNK_MIN ? PACE_CHUNK_MIN : (size_t)chunk;
}

int shard_cache_copy_run(struct shard_cache_copy *job, struct gs_error *err)
{
    struct copy_run r = {.job = job, .src_fd = -1, .part_fd = -1};
    uint64_t start = 0;
    int rc;

    job->resumed_from = job->bytes_copied = job->mtime_ms = 0;
    if ((job->source_path == NULL) == (job->read == NULL))
        return gs_error_set(err, -EINVAL, 0, 0, "shard %s: a copy needs exactly one source",
                            job->path);
    r.chunk = copy_chunk(job->rate_bytes_per_s);
    r.buf = malloc(r.chunk);
    if (r.buf == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "shard %s: out of memory", job->path);
        goto out;
    }
    rc = open_source(&r, err); /* a source of the wrong size: refused, nothing written */
    if (rc == 0)
        rc = open_part(&r, &start, err);
    if (rc < 0)
        goto out;
    job->resumed_from = start;
    rc = copy_bytes(&r, start, err);
    if (rc == 0)
        rc = finish_part(&r, err);
    if (rc == -EBADMSG)
        unlink(job->part_path); /* the wrong bytes: never resume from them */
out:
    if (r.src_fd >= 0)
        close(r.src_fd);
    if (r.part_fd >= 0)
        close(r.part_fd);
    free(r.buf);
    return rc;
}
