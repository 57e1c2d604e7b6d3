/*
 * exits_file.c: unacknowledged task exits kept on disk, as a journal (see exits_file.h).
 *
 * Durability is what the file is for, so an exit's record is synced before the exit is
 * sent; fdatasync suffices, the file being opened for appending (the size it grows to is
 * part of what fdatasync writes). A whole file is written only when the journal is opened
 * and when it is compacted, through gs_path_replace (temporary file, fsync, rename).
 */
#define _GNU_SOURCE /* fdatasync is POSIX, O_CLOEXEC */

#include "worker/exits_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/log.h"
#include "common/path.h"
#include "proto/frame.h"

#define MAGIC "GSEXIT1\n"
#define MAGIC_LEN 8
#define MAX_FILE (64u << 20)
#define MAX_RECORD (1u << 20)
#define KIND_EXIT 'E'
#define KIND_ACK 'A'

struct wrk_exits_file {
    char *path;
    int fd; /* O_WRONLY | O_APPEND */
    size_t size;
};

/* The loaded exits while a journal is replayed. */
struct loaded {
    Gs__TaskExit **v;
    size_t n, cap;
};

static void loaded_free(struct loaded *l)
{
    for (size_t i = 0; i < l->n; i++)
        gs__task_exit__free_unpacked(l->v[i], NULL);
    free(l->v);
    *l = (struct loaded){0};
}

/* Takes e (unpacked) into l. */
static int loaded_add(struct loaded *l, Gs__TaskExit *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        Gs__TaskExit **v = realloc(l->v, cap * sizeof(*v));

        if (v == NULL) {
            gs__task_exit__free_unpacked(e, NULL);
            return -ENOMEM;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
    return 0;
}

static bool same_task(const Gs__TaskExit *e, const Gs__TaskRef *r)
{
    return e->job_id == r->job_id && e->step == r->step && e->rank == r->rank &&
           e->attempt == r->attempt;
}

static void loaded_ack(struct loaded *l, const Gs__TaskRef *r)
{
    for (size_t i = 0; i < l->n; i++) {
        if (same_task(l->v[i], r)) {
            gs__task_exit__free_unpacked(l->v[i], NULL);
            memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(l->v[0]));
            l->n--;
            return;
        }
    }
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Replays the records of data[MAGIC_LEN..len) into l; the first damaged one ends them. */
static int replay(const char *path, const uint8_t *data, size_t len, struct loaded *l)
{
    size_t at = MAGIC_LEN;
    int rc = 0;

    while (rc == 0 && len - at >= 8) {
        uint32_t blen = get_le32(data + at), crc = get_le32(data + at + 4);
        const uint8_t *body = data + at + 8;

        if (blen == 0 || blen > MAX_RECORD || blen > len - at - 8 ||
            gs_crc32c(0, body, blen) != crc)
            break;
        if (body[0] == KIND_EXIT) {
            Gs__TaskExit *e = gs__task_exit__unpack(NULL, blen - 1, body + 1);

            if (e == NULL)
                break;
            rc = loaded_add(l, e);
        } else if (body[0] == KIND_ACK) {
            Gs__TaskRef *r = gs__task_ref__unpack(NULL, blen - 1, body + 1);

            if (r == NULL)
                break;
            loaded_ack(l, r);
            gs__task_ref__free_unpacked(r, NULL);
        } else {
            break;
        }
        at += 8 + blen;
    }
    if (rc == 0 && at < len)
        GS_LOG(GS_LOG_WARN,
               "path=%s offset=%zu bytes=%zu journal ends in a damaged record, dropped", path, at,
               len - at);
    return rc;
}

/* The format earlier workers wrote: one packed NodeRegister of unacked_exits. */
static int load_legacy(const uint8_t *data, size_t len, struct loaded *l)
{
    Gs__NodeRegister *msg = gs__node_register__unpack(NULL, len, data);
    int rc = 0;

    if (msg == NULL)
        return -EBADMSG;
    for (size_t i = 0; rc == 0 && i < msg->n_unacked_exits; i++) {
        Gs__TaskExit *e = gs_proto_task_exit_copy(msg->unacked_exits[i]);

        rc = e != NULL ? loaded_add(l, e) : -ENOMEM;
    }
    gs__node_register__free_unpacked(msg, NULL);
    return rc;
}

static int load(const char *path, struct loaded *l)
{
    struct gs_buf b = GS_BUF_INIT;
    int rc = gs_path_read_all(path, &b);

    if (rc == -ENOENT)
        return 0;
    if (rc == 0 && b.len > MAX_FILE)
        rc = -EFBIG;
    if (rc == 0 && b.len >= MAGIC_LEN && memcmp(b.data, MAGIC, MAGIC_LEN) == 0)
        rc = replay(path, (const uint8_t *)b.data, b.len, l);
    else if (rc == 0 && b.len > 0)
        rc = load_legacy((const uint8_t *)b.data, b.len, l);
    gs_buf_release(&b);
    if (rc < 0)
        loaded_free(l);
    return rc;
}

/* Appends one record of kind with the packed message to b. */
static int put_record(struct gs_buf *b, char kind, const ProtobufCMessage *msg)
{
    size_t size = protobuf_c_message_get_packed_size(msg), at = b->len;
    uint8_t head[8] = {0}, *body;

    if (size + 1 > MAX_RECORD)
        return -EMSGSIZE;
    if (gs_buf_append(b, head, sizeof(head)) < 0 || gs_buf_reserve(b, size + 1) < 0)
        return -ENOMEM;
    body = (uint8_t *)b->data + at + 8;
    body[0] = (uint8_t)kind;
    protobuf_c_message_pack(msg, body + 1);
    b->len += size + 1;
    b->data[b->len] = '\0'; /* as gs_buf keeps it */
    put_le32((uint8_t *)b->data + at, (uint32_t)(size + 1));
    put_le32((uint8_t *)b->data + at + 4, gs_crc32c(0, body, size + 1));
    return 0;
}

/* Replaces the file with the header and an exit record each, durably; the journal's
 * descriptor (reopened) appends to the new file. */
static int rewrite(struct wrk_exits_file *f, Gs__TaskExit *const *exits, size_t n)
{
    struct gs_buf b = GS_BUF_INIT;
    int rc = gs_buf_append(&b, MAGIC, MAGIC_LEN), fd;

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_record(&b, KIND_EXIT, &exits[i]->base);
    if (rc == 0)
        rc = gs_path_replace(f->path, b.data, b.len, 0600);
    if (rc == 0) {
        fd = open(f->path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0) {
            rc = -errno;
        } else {
            if (f->fd >= 0)
                close(f->fd);
            f->fd = fd;
            f->size = b.len;
        }
    }
    gs_buf_release(&b);
    return rc;
}

int wrk_exits_open(const char *path, struct wrk_exits_file **ret, Gs__TaskExit ***ret_exits,
                   size_t *ret_n)
{
    struct wrk_exits_file *f = calloc(1, sizeof(*f));
    struct loaded l = {0};
    int rc;

    *ret = NULL;
    *ret_exits = NULL;
    *ret_n = 0;
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return -ENOMEM;
    }
    f->fd = -1;
    rc = load(path, &l);
    if (rc == 0)
        rc = rewrite(f, l.v, l.n);
    if (rc < 0) {
        loaded_free(&l);
        wrk_exits_close(f);
        return rc;
    }
    *ret = f;
    *ret_exits = l.v;
    *ret_n = l.n;
    return 0;
}

void wrk_exits_close(struct wrk_exits_file *f)
{
    if (f == NULL)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f->path);
    free(f);
}

/* Appends b's records; on a failed write the file is cut back to where it was, so that no
 * partial record sits before later ones. */
static int append(struct wrk_exits_file *f, const struct gs_buf *b, bool sync)
{
    int rc = gs_write_all(f->fd, b->data, b->len);

    if (rc == 0 && sync && fdatasync(f->fd) < 0)
        rc = -errno;
    if (rc < 0) {
        (void)!ftruncate(f->fd, (off_t)f->size);
        return rc;
    }
    f->size += b->len;
    return 0;
}

int wrk_exits_add(struct wrk_exits_file *f, const Gs__TaskExit *e)
{
    struct gs_buf b = GS_BUF_INIT;
    int rc = put_record(&b, KIND_EXIT, &e->base);

    if (rc == 0)
        rc = append(f, &b, true);
    gs_buf_release(&b);
    return rc;
}

int wrk_exits_ack(struct wrk_exits_file *f, Gs__TaskRef *const *refs, size_t n,
                  Gs__TaskExit *const *left, size_t nleft)
{
    struct gs_buf b = GS_BUF_INIT;
    int rc = 0;

    if (nleft == 0) { /* nothing to keep: back to the header */
        if (ftruncate(f->fd, MAGIC_LEN) < 0)
            return -errno;
        f->size = MAGIC_LEN;
        return 0;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_record(&b, KIND_ACK, &refs[i]->base);
    if (rc == 0 && f->size + b.len > WRK_EXITS_COMPACT)
        rc = rewrite(f, left, nleft);
    else if (rc == 0)
        rc = append(f, &b, false);
    gs_buf_release(&b);
    return rc;
}

size_t wrk_exits_size(const struct wrk_exits_file *f)
{
    return f->size;
}
