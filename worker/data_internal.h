/*
 * data_internal.h: what the worker's data files share (worker_data.c: the cache, its
 * reports and copies, warm and evict, the peers' data port; data_launch.c: launches with a
 * dataset, their plan files, pins, streaming and the loaders' fetch requests; data_access.c:
 * the job user's permission to read a source). Not for other folders. Loop thread only,
 * except a copy's work function (worker_data.c), which touches only its struct data_copy.
 */
#ifndef WRK_DATA_INTERNAL_H
#define WRK_DATA_INTERNAL_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/error.h"
#include "proto/auth.h"
#include "proto/gsched.pb-c.h"
#include "sharding/cache.h"
#include "sharding/planfile.h"
#include "worker/offload.h"

struct wrk_ctx;
struct wrk_peer_server;

/* One shard to copy into the cache. */
struct data_copy {
    struct data_copy *next;
    struct wrk_data *d; /* the loop's side only: a copy's thread may outlive it */
    struct shard_cache_copy job;
    atomic_bool cancel; /* job.cancel: set when the worker stops, or the copy is given up */
    atomic_uint_least64_t progress; /* job.progress */
    uint64_t seen;                  /* progress at the loop's last look */
    uint64_t moved_ms;              /* mono: when the loop saw it move (at first, the start) */
    bool given_up;            /* stuck past worker.data_stall: off the count, its launch told */
    void (*gate)(void *data); /* tests: wrk_opts.data_copy_gate, on the copy's thread */
    void *gate_data;
    /* What the thread needs of the worker, copied: it may run on after the worker's stop. */
    struct gs_proto_auth_key key;
    char node_name[256];
    char dataset[SHARD_DATASET_ID_SIZE];
    size_t shard;
    struct data_stage *owner; /* the launch waiting for it; NULL for a warm */
    char source[PATH_MAX];    /* SOURCE/<file> */
    char peer_host[256];      /* "" none */
    uint16_t peer_port;
    uid_t uid; /* whose permission reads the source */
    gid_t gid;
    char user[64];
    bool from_peer;       /* the copy came from the peer */
    char peer_error[256]; /* why the peer's copy failed, "" when it did not */
    uint64_t bytes;       /* the shard's file size, for the launch's figures */
    bool val;             /* a val shard of its owner's */
    int result;
    struct gs_error err;
};

/* A launch waiting for its shards. */
struct data_stage {
    struct data_stage *next;
    uint64_t job_id;
    uint32_t attempt;
    uint64_t request_id;
    Gs__LaunchTasks *msg; /* owned copy */
    char dataset[SHARD_DATASET_ID_SIZE];
    char plan_path[PATH_MAX];
    char data_dir[PATH_MAX];
    struct shard_planfile *pf;
    size_t pending;
    int failed;
    char why[512];
    bool cancelled;
    uint64_t started_ms;
    uint64_t bytes_local, bytes_peer, bytes_source;
    uint32_t shards_read, shards_fetched;
    struct data_step_wait *steps; /* srun steps of the job that came meanwhile */
    bool stream;                  /* started its tasks at once; copies go on behind them */
    bool launched;
    size_t val_pending;   /* of pending, val shards (a streaming job waits for those) */
    uint64_t launched_ms; /* mono: when a streaming job's tasks started */
};

/* A running job's hold on its dataset and plan file, until its last task here ends. */
struct data_pin {
    struct data_pin *next;
    uint64_t job_id;
    char dataset[SHARD_DATASET_ID_SIZE];
    char plan_path[PATH_MAX];
    char data_dir[PATH_MAX];
    /* A leader job's node (batch script, mpirun): its srun steps come and go, so the pin
     * lasts until the job's end (SignalTasks of all its steps), not its tasks'. */
    bool until_end;
    char failed[512]; /* staging failed: its steps fail with this; "" when staged */
    bool stream;      /* [data] stage = "stream": its tasks run while its shards arrive */
    uid_t uid;        /* the job's user: who may ask for its shards (DataFetchRequest) */
    gid_t gid;
    char user[64];
    char source[PATH_MAX];
};

/* A srun step's launch waiting for its job's data on this node. */
struct data_step_wait {
    struct data_step_wait *next;
    Gs__LaunchTasks *msg; /* owned copy */
    uint64_t request_id;
};

struct wrk_data {
    struct wrk_ctx *w;
    struct shard_cache *cache;
    struct wrk_peer_server *peer;
    uint64_t rate;
    struct data_copy *queue, *queue_tail;
    struct data_copy *running;      /* copies in flight, linked by next */
    struct wrk_offload *copies;     /* their threads (worker/offload.h) */
    unsigned nrunning, max_running; /* running: copies in flight not given up */
    unsigned ngiven_up;             /* copies given up whose threads have not returned */
    uint64_t stall_ms;              /* worker.data_stall */
    uv_timer_t stall_timer;         /* looks for stuck copies while any run */
    void (*copy_gate)(void *data);  /* wrk_opts.data_copy_gate */
    void *copy_gate_data;
    struct data_stage *stages;
    struct data_pin *pins;
    uint64_t reported_gen; /* the cache generation the last report covered */
    bool report_full;      /* the next report replaces gschedd's view */
    uv_timer_t report_timer;
    bool closing;
    /* Where each dataset was last staged from, for the reports (memory only: "" after a
     * restart until it is used again). */
    struct data_source {
        char id[SHARD_DATASET_ID_SIZE];
        char *dir;
    } * sources;
    size_t nsources;
};

/* worker_data.c */
/* Starts queued copies while fewer than max_running run. */
void wrk_data_kick(struct wrk_data *d);
/* Whether a copy of (dataset, shard) is in flight. */
bool wrk_data_in_flight(const struct wrk_data *d, const char *dataset, size_t shard);
/*
 * Queues a copy of shard (file in dataset's source_dir), from peer_host:peer_port first when
 * given, for user, on behalf of owner (NULL: a warm or a fetch request). 0 or < 0.
 */
int wrk_data_enqueue(struct wrk_data *d, const char *dataset, size_t shard, const char *source_dir,
                     const char *file, const char *peer_host, uint32_t peer_port,
                     const Gs__UserIdentity *user, struct data_stage *owner);
/* Adds source's dataset to the cache for user; 0 with *ret_ds, or < 0 with why. */
int wrk_data_add_dataset(struct wrk_data *d, const char *source, const Gs__UserIdentity *user,
                         size_t *ret_ds, char *why, size_t size);
/* The cache changed: a holdings report goes within a moment. */
void wrk_data_holdings_changed(struct wrk_data *d);

/* data_launch.c */
/* A launch's copies are over (or its streaming tasks may start): go on with it. */
void wrk_data_stage_check(struct wrk_data *d, struct data_stage *st);
/* A streaming job's copy failed: its loaders' next fetch request hears why. */
void wrk_data_stream_failed(struct wrk_data *d, uint64_t job_id, const char *why);
void wrk_data_stage_free(struct data_stage *st);

/* data_access.c */
/*
 * Whether user (uid, gid, name; gid -1 and name NULL: no passwd entry, no group) may read
 * path: every directory above it searchable and the file itself readable (a directory:
 * readable and searchable). A root worker asks the kernel, opening path as the user would
 * (their fsuid, fsgid and groups, on a thread of its own): ACLs count. Otherwise, or when
 * those ids cannot be taken, by the permission bits. This is how the worker honours the job
 * user's rights over a source.
 */
bool wrk_data_user_may_read(const char *path, uid_t uid, gid_t gid, const char *user);

/* Who may read a cached dataset: its directory's owner, group and mode. */
struct wrk_data_access {
    uid_t uid;
    gid_t gid;
    mode_t mode;
};

/*
 * The cache directory's access for a dataset whose source manifest is `manifest`, so that
 * the cache lets read no one the source would not: 0755 root:root when every user may read
 * the manifest (each directory above it searchable, the file readable, by its owner, its
 * group and others alike); else 0750 root:G when every member of G, the manifest's group,
 * may (by the group's bits where a file is G's, else by both the group's and others', and
 * by the owner's); else 0700 U:root when its owner U may (wrk_data_user_may_read for U);
 * else 0700 root:root. By the permission bits and the ACL entries (the group bits of a file
 * with an extended ACL are its mask: its owning group's entry counts instead, and a named
 * entry that denies keeps "every user" or "every member" from holding); -errno when a
 * stat or an ACL read fails.
 */
int wrk_data_source_access(const char *manifest, struct wrk_data_access *ret);
/* Gives dir (a cached dataset's directory) that access and no named ACL entries, narrowing
 * it to root's alone first so that no moment grants both the old and the new readers. 0 or
 * -errno. */
int wrk_data_apply_access(const char *dir, const struct wrk_data_access *a);
/*
 * Lets a's readers into dir as well as those it lets in: nothing when every user may read
 * it; a's access when a lets every user in or dir let in root alone; else a POSIX ACL entry
 * (read and search) for a's group, or for its owner when a is the owner's alone. *ret_changed
 * says whether dir changed. 0, or -errno (-ENOTSUP: the filesystem has no ACLs).
 */
int wrk_data_widen_access(const char *dir, const struct wrk_data_access *a, bool *ret_changed);
/* Lets uid read dir by a named ACL entry of its own (read and search) unless it has one;
 * *ret_changed says whether it was added. 0, or -errno (-ENOTSUP: no ACLs there). */
int wrk_data_let_user_in(const char *dir, uid_t uid, bool *ret_changed);

#endif
