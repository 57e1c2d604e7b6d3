/*
 * fnv.h: 64-bit FNV-1a, the hash of gschedd's in-memory tables and change keys. Fast and
 * simple, not keyed: for data the process itself holds, never for what a peer chooses to
 * collide. Digests that are stored or compared across hosts spell their byte order out
 * themselves (sharding/rest.c).
 */
#ifndef GS_FNV_H
#define GS_FNV_H

#include <stddef.h>
#include <stdint.h>

#define GS_FNV64_OFFSET UINT64_C(0xcbf29ce484222325)

/* h (GS_FNV64_OFFSET to start) on over len bytes of data. */
static inline uint64_t gs_fnv64(uint64_t h, const void *data, size_t len)
{
    const unsigned char *b = data;

    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

#endif
