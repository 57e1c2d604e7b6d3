/*
 * held.h: which shards of a dataset a cache holds, as it travels (DatasetHolding.held and
 * held_runs, DataPeer's the same). Caches hold few of a big dataset's shards, and a launch
 * carries one holding per node of the job, so a bitmap of every shard per node grows as
 * nodes times shards; runs of held shards grow with what is held. The sender picks the
 * shorter of the two for each holding; receivers read either.
 */
#ifndef GS_PROTO_HELD_H
#define GS_PROTO_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* A holding of more shards is refused (a plan file's shard indices stay below it too). */
#define GS_HELD_MAX_SHARDS (UINT32_C(1) << 24)

/*
 * A holding's wire form, for a message built to send. bits is borrowed from the caller's
 * bitmap; runs is this struct's own (gs_held_wire_release).
 */
struct gs_held_wire {
    ProtobufCBinaryData bits; /* the bitmap, or empty when runs carry it */
    uint32_t *runs;           /* gap, length, gap, length, ...; NULL with the bitmap */
    size_t nruns;
};

/*
 * Fills w for the bitmap bits of shards shards ((shards + 7) / 8 bytes, bit i of byte i / 8
 * least significant first; borrowed until w is released): as runs when runs_ok (the
 * receiver speaks GS_PROTO_MINOR_HELD_RUNS) and they pack shorter, else the bitmap.
 * 0 or -ENOMEM.
 */
int gs_held_wire_init(struct gs_held_wire *w, const uint8_t *bits, uint32_t shards, bool runs_ok);
void gs_held_wire_release(struct gs_held_wire *w);

/*
 * Reads a received holding into bits ((shards + 7) / 8 bytes, all written). Runs are
 * alternately a gap (shards not held, from the end of the previous run or from 0) and a
 * length (shards held, at least 1). 0, or -EINVAL for more than GS_HELD_MAX_SHARDS
 * shards, a bitmap of another size, both forms at once, an odd number of runs, an empty run, runs
 * past shards or a bit set past them.
 */
int gs_held_read(const ProtobufCBinaryData *held, const uint32_t *runs, size_t nruns,
                 uint32_t shards, uint8_t *bits);

/* The same into a bitmap of its own (*ret, the caller frees it): 0, gs_held_read's -EINVAL
 * (checked before anything is allocated for a count past GS_HELD_MAX_SHARDS), or -ENOMEM. */
int gs_held_read_new(const ProtobufCBinaryData *held, const uint32_t *runs, size_t nruns,
                     uint32_t shards, uint8_t **ret);

/* Shards set in a bitmap of shards shards. */
size_t gs_held_count(const uint8_t *bits, uint32_t shards);

#endif
