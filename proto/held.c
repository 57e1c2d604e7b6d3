/*
 * held.c: a cache's holdings on the wire (held.h). Runs are left to protobuf-c's packed
 * varints, so a run costs two to six bytes and a bitmap one bit per shard; which is
 * shorter is counted exactly before anything is allocated.
 */
#include "proto/held.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool bit(const uint8_t *bits, uint32_t i)
{
    return bits[i / 8] >> (i % 8) & 1;
}

static size_t varint_size(uint32_t v)
{
    size_t n = 1;

    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/*
 * Walks the runs of bits: each (gap, length) pair goes to out when it is not NULL, and
 * their packed size to *ret_bytes. Returns how many numbers the pairs make (twice theirs).
 */
static size_t walk(const uint8_t *bits, uint32_t shards, uint32_t *out, size_t *ret_bytes)
{
    size_t n = 0, bytes = 0;
    uint32_t end = 0; /* of the previous run */

    for (uint32_t i = 0; i < shards;) {
        uint32_t start;

        if (bits[i / 8] == 0 && i % 8 == 0) { /* a whole empty byte: skip it at once */
            i += 8;
            continue;
        }
        if (!bit(bits, i)) {
            i++;
            continue;
        }
        start = i;
        while (i < shards && bit(bits, i))
            i++;
        if (out != NULL) {
            out[n] = start - end;
            out[n + 1] = i - start;
        }
        bytes += varint_size(start - end) + varint_size(i - start);
        n += 2;
        end = i;
    }
    *ret_bytes = bytes;
    return n;
}

int gs_held_wire_init(struct gs_held_wire *w, const uint8_t *bits, uint32_t shards, bool runs_ok)
{
    size_t len = ((size_t)shards + 7) / 8, bytes, n;

    memset(w, 0, sizeof(*w));
    w->bits.data = (uint8_t *)bits;
    w->bits.len = len;
    if (!runs_ok || bits == NULL)
        return 0;
    n = walk(bits, shards, NULL, &bytes);
    /* The packed field's own tag and length are there either way, near enough the same. */
    if (bytes >= len)
        return 0;
    if (n > 0) {
        w->runs = malloc(n * sizeof(*w->runs));
        if (w->runs == NULL)
            return -ENOMEM;
        walk(bits, shards, w->runs, &bytes);
    }
    w->nruns = n;
    w->bits.data = NULL;
    w->bits.len = 0;
    return 0;
}

void gs_held_wire_release(struct gs_held_wire *w)
{
    free(w->runs);
    memset(w, 0, sizeof(*w));
}

int gs_held_read(const ProtobufCBinaryData *held, const uint32_t *runs, size_t nruns,
                 uint32_t shards, uint8_t *bits)
{
    size_t len = ((size_t)shards + 7) / 8;
    uint64_t at = 0;

    if (shards > GS_HELD_MAX_SHARDS)
        return -EINVAL;
    memset(bits, 0, len);
    if (held->len != 0) {
        if (nruns != 0 || held->len != len)
            return -EINVAL;
        memcpy(bits, held->data, len);
        if (shards % 8 != 0 && bits[len - 1] >> (shards % 8) != 0)
            return -EINVAL;
        return 0;
    }
    if (nruns % 2 != 0)
        return -EINVAL;
    for (size_t k = 0; k < nruns; k += 2) {
        uint64_t start = at + runs[k], end = start + runs[k + 1];

        if (runs[k + 1] == 0 || end > shards)
            return -EINVAL;
        for (uint64_t i = start; i < end; i++)
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
        at = end;
    }
    return 0;
}

int gs_held_read_new(const ProtobufCBinaryData *held, const uint32_t *runs, size_t nruns,
                     uint32_t shards, uint8_t **ret)
{
    uint8_t *bits;
    int rc;

    *ret = NULL;
    if (shards > GS_HELD_MAX_SHARDS)
        return -EINVAL;
    bits = malloc((size_t)shards / 8 + 1);
    if (bits == NULL)
        return -ENOMEM;
    rc = gs_held_read(held, runs, nruns, shards, bits);
    if (rc < 0) {
        free(bits);
        return rc;
    }
    *ret = bits;
    return 0;
}

size_t gs_held_count(const uint8_t *bits, uint32_t shards)
{
    size_t n = 0, len = ((size_t)shards + 7) / 8;

    for (size_t i = 0; i < len; i++)
        n += (size_t)__builtin_popcount(bits[i]);
    return n;
}
