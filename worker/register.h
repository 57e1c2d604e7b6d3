/*
 * register.h: the NodeRegister a worker sends after its hello: the node's topology (from
 * common/topo.h), its features, and the tasks it still runs (so that a restarted scheduler
 * reconciles instead of starting them twice).
 *
 * The message is built from malloc'd parts only, so the caller frees it whole with
 * wrk_register_free() (protobuf-c's free_unpacked with the default allocator).
 */
#ifndef WRK_REGISTER_H
#define WRK_REGISTER_H

#include "common/topo.h"
#include "proto/gsched.pb-c.h"

struct wrk_register_info {
    const struct gs_topo *topo;
    const char *node_name;
    const char *address;
    char *const *features; /* NULL-terminated, may be NULL */
    uint64_t worker_start_ms;
    uint64_t tmp_disk_mib; /* the size of worker.tmp_fs */
};

/* Returns 0 with a new message in *ret_msg, or -ENOMEM. */
int wrk_register_build(const struct wrk_register_info *info, Gs__NodeRegister **ret_msg);
/* Appends one running task (TaskRef, step included) to msg. Returns 0 or -ENOMEM. */
int wrk_register_add_running(Gs__NodeRegister *msg, uint64_t job_id, uint32_t step, uint32_t rank,
                             int32_t pid, uint64_t start_ms, uint32_t attempt);
void wrk_register_free(Gs__NodeRegister *msg);

#endif
