/*
 * live.h: the pieces of live_fuzz, the load tool that fuzzes running daemons (tests/fuzz/
 * README.md, "Live daemons"): where the libFuzzer harnesses of this folder call the parsers
 * in-process, live_fuzz starts a real gschedd (or gsched-workerd), built with ASan+UBSan,
 * and sends it sequences of mutated but well-framed messages over real TCP and Unix
 * connections, checking after every batch that it is alive, has printed no sanitizer
 * report, and still answers a valid request.
 *
 *   live_mutate.c  the seeded PRNG and the message mutator, which walks protobuf-c's
 *                  descriptors (field values, out-of-range enums, huge and negative numbers,
 *                  absent or extra submessages, random body cases) and the frame's bytes
 *   live_wire.c    connections: frames written as they are (broken ones too), replies read
 *                  through proto/frame.h's decoder, the keyed handshake (proto/auth.h), and
 *                  the record of what was sent, for printing and --replay
 *   live_daemon.c  a daemon as a child process: its stderr read by a thread that spots
 *                  sanitizer reports and counts the distinct log lines (the coverage figure)
 *   live_cli.c     the CLI's requests, valid to start from
 *   live_sched.c   target "sched": fake workers and CLIs against gschedd
 *   live_worker.c  target "worker": a fake gschedd, and CLIs on the worker's socket
 *   live_fuzz.c    main: options, batches, liveness checks, failures, the report
 *
 * Each target also restarts its daemon now and then (gschedd on a fresh state directory once
 * 2000 jobs were submitted, the worker every 100 checks on the same log directory), and
 * after each regression file; a stop is checked like the last one (leaks, a hang, a status).
 *
 * Everything runs on one thread (the log readers aside); connections are non-blocking and
 * every wait has a deadline. Messages are owned protobuf-c trees (malloc'd, freed with
 * lf_free), so the mutator may replace any part of them.
 */
#ifndef GS_TESTS_FUZZ_LIVE_H
#define GS_TESTS_FUZZ_LIVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"
#include "proto/auth.h"
#include "proto/frame.h"
#include "proto/seal.h"

/* ---- live_mutate.c: randomness and mutation ---- */

/* xoshiro256**, seeded through splitmix64: the same seed gives the same stream. */
struct lf_rng {
    uint64_t s[4];
};

void lf_rng_seed(struct lf_rng *r, uint64_t seed);
uint64_t lf_rand(struct lf_rng *r);
/* Uniform in [0, n); 0 when n is 0. */
uint64_t lf_below(struct lf_rng *r, uint64_t n);
/* True with probability percent/100. */
bool lf_chance(struct lf_rng *r, unsigned percent);

/* Values a mutation draws on besides its own: what the daemons said (job ids, request ids,
 * node names), so that mutated messages name things that exist. */
#define LF_DICT_NUMS 64
#define LF_DICT_STRS 32
struct lf_dict {
    uint64_t nums[LF_DICT_NUMS];
    unsigned nnums, next_num;
    char strs[LF_DICT_STRS][64];
    unsigned nstrs, next_str;
};

void lf_dict_num(struct lf_dict *d, uint64_t v);
void lf_dict_str(struct lf_dict *d, const char *s);

/* Owned messages: allocated with malloc, freed with protobuf-c's free_unpacked. */
void *lf_new(const ProtobufCMessageDescriptor *desc);
void lf_free(void *msg); /* NULL allowed */
char *lf_strdup(const char *s);
/* A deep copy, or NULL. */
void *lf_copy(const void *msg);
/* Appends *elt (of size bytes) to the array *arr of *n elements; 0 or -ENOMEM. */
int lf_push(void *arr, size_t *n, size_t size, const void *elt);
#define LF_PUSH(arr, n, elt) lf_push(&(arr), &(n), sizeof(*(arr)), &(elt))
/* Sets bytes to a malloc'd copy of data. */
void lf_set_bytes(ProtobufCBinaryData *b, const void *data, size_t len);

/* An Envelope owning body (of the type the body case says); request_id as given. */
Gs__Envelope *lf_envelope(Gs__Envelope__BodyCase body_case, void *body, uint64_t request_id);

/* Fills msg's fields at random (nested messages to depth levels). */
void lf_fill(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *msg, int depth);
/* A random envelope: any body case, filled at random. */
Gs__Envelope *lf_random_envelope(struct lf_rng *r, const struct lf_dict *d);
/* 1 to 4 structural mutations of msg, anywhere in its tree. */
void lf_mutate(struct lf_rng *r, const struct lf_dict *d, ProtobufCMessage *msg);

/* The frame of env (header and payload) appended to out; protobuf-c packs whatever the tree
 * holds, out-of-range values included. */
void lf_pack_frame(const Gs__Envelope *env, struct gs_buf *out);
/* Byte-level damage inside frame's payload (bit flips, bytes set, inserted, deleted,
 * truncated), with the header fixed up: the frame stays well-framed. */
void lf_mutate_payload(struct lf_rng *r, struct gs_buf *frame);

/* ---- live_wire.c: connections ---- */

enum lf_kind {
    LF_KIND_WORKER = 0, /* to gschedd's worker port, as a worker */
    LF_KIND_CLI = 1,    /* to gschedd's CLI socket */
    LF_KIND_SCHED = 2,  /* accepted from gsched-workerd: we are its gschedd */
    LF_KIND_WCLI = 3,   /* to gsched-workerd's CLI socket */
};

struct lf_record;

struct lf_conn {
    int fd; /* -1: not open */
    unsigned id;
    enum lf_kind kind;
    struct gs_proto_decoder dec;
    struct gs_buf inbox; /* bytes read while a write waited, not decoded yet */
    struct gs_buf held;  /* a frame held back, to go after the next one (reordering) */
    struct gs_buf last;  /* the last frame sent, to send again (duplication) */
    bool eof;            /* the peer closed or the link broke */
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE];      /* in our last Hello */
    uint8_t peer_nonce[GS_PROTO_AUTH_NONCE_SIZE]; /* in the peer's Hello */
    bool have_peer_nonce;
    bool peer_hello;       /* the peer's Hello was read */
    bool bad_frame;        /* the peer sent an undecodable frame */
    Gs__Role role;         /* ours, for the proof */
    char name[64];         /* ours, for the proof */
    struct lf_record *rec; /* where sends are written down */
    /* A keyed link's seal (proto/seal.h): lf_conn_write seals every whole frame once our
     * proof is out, and the decoder opens the peer's once its proof came. */
    struct gs_proto_seal seal;
    bool sealed;      /* seal derived (our proof sent) */
    bool peer_proved; /* the peer's AuthProof was read */
};

/* Called with each envelope the peer sends (borrowed). */
typedef void (*lf_on_env)(struct lf_conn *c, const Gs__Envelope *env, void *data);

void lf_conn_init(struct lf_conn *c, unsigned id, enum lf_kind kind, struct lf_record *rec);
int lf_conn_tcp(struct lf_conn *c, uint16_t port);
int lf_conn_unix(struct lf_conn *c, const char *path);
/* Takes an accepted descriptor. */
void lf_conn_adopt(struct lf_conn *c, int fd);
void lf_conn_close(struct lf_conn *c);
/* Writes bytes as they are, within 5 s; 0, or -EPIPE once the peer is gone (c->eof). */
int lf_conn_write(struct lf_conn *c, const void *p, size_t n);
/* Writes the frame in chunks of 1 to max_chunk bytes, each its own write. */
int lf_conn_write_chunked(struct lf_conn *c, const struct gs_buf *frame, size_t max_chunk,
                          struct lf_rng *r);
/* Packs env and writes it. */
int lf_conn_send(struct lf_conn *c, const Gs__Envelope *env);
/* Our Hello (role, name, a fresh nonce when keyed); recorded. */
int lf_conn_hello(struct lf_conn *c, Gs__Role role, const char *name, bool keyed);
/* A valid AuthProof for the Hellos exchanged (waits up to timeout_ms for the peer's). */
int lf_conn_proof(struct lf_conn *c, const struct gs_proto_auth_key *key, int timeout_ms,
                  lf_on_env cb, void *data);
/* Reads what has arrived, waiting up to timeout_ms for the first bytes (0: none), and hands
 * each envelope to cb; returns envelopes read, or -EPIPE once the peer is gone. */
int lf_conn_poll(struct lf_conn *c, int timeout_ms, lf_on_env cb, void *data);
/* Waits up to timeout_ms for an envelope for which want(env) is true; 1 found, 0 not. */
typedef bool (*lf_want)(const Gs__Envelope *env, uint64_t arg);
int lf_conn_wait(struct lf_conn *c, int timeout_ms, lf_want want, uint64_t arg, lf_on_env cb,
                 void *data);

/* What was sent in this batch, to print and replay on failure: one line per action,
 *   open ID KIND            connect (sched: worker port or CLI socket; worker: its CLI socket)
 *   accept ID               wait for gsched-workerd to connect to us
 *   send ID HEX             these bytes, as written
 *   proof ID                a valid AuthProof for the Hellos on ID
 *   close ID                close it
 *   # text                  a comment (the sequence and its seed)
 */
struct lf_record {
    struct gs_buf text;
    size_t lines;
    bool on; /* false while replaying or checking liveness */
};

void lf_record_line(struct lf_record *rec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void lf_record_send(struct lf_record *rec, unsigned id, const void *p, size_t n);
/* Prints the record, one line per action with the frames decoded in short, at most
 * max_lines lines. */
void lf_record_print(const struct lf_record *rec, FILE *f, size_t max_lines);

/* ---- live_daemon.c: daemons ---- */

#define LF_TAIL_SIZE (32u * 1024u)
#define LF_REPORT_SIZE (256u * 1024u)

struct lf_daemon {
    const char *name;
    pid_t pid;
    int log_fd;     /* the read end of its stderr */
    FILE *log_copy; /* every line also goes here (WORK/NAME.log) */
    pthread_t reader;
    bool reader_started;
    pthread_mutex_t lock;
    char tail[LF_TAIL_SIZE]; /* its last lines, circular */
    size_t tail_pos;
    bool tail_wrapped;
    struct gs_buf report; /* from the first sanitizer line on */
    atomic_bool sanitizer;
    atomic_bool eof;
    atomic_ulong lines;
    /* The coverage figure: distinct log lines with numbers and values taken out. */
    uint64_t *templates;
    size_t ntemplates, templates_cap;
    int exit_status; /* as waitpid said, once exited */
    bool exited;
};

/* Once, before the first start; lf_daemon_release() at the end. */
void lf_daemon_init(struct lf_daemon *d);
/* Starts it (again: what it logged before counts on, in the tail, the log copy and the
 * templates; the sanitizer flag is cleared). */
int lf_daemon_start(struct lf_daemon *d, const char *name, char *const argv[],
                    const char *log_path);
/* Whether it still runs (reaps it when not). */
bool lf_daemon_alive(struct lf_daemon *d);
/* SIGTERM, then SIGKILL after timeout_ms; reads its stderr to the end. True when it exited
 * by itself, false when it had to be killed. */
bool lf_daemon_stop(struct lf_daemon *d, int timeout_ms);
/* What a daemon stopped with SIGTERM left wrong: a sanitizer report, a kill, an exit status
 * other than 0; 0 when nothing, else -1 with why. */
int lf_daemon_stopped_well(struct lf_daemon *d, bool by_itself, char *why, size_t size);
void lf_daemon_release(struct lf_daemon *d);
size_t lf_daemon_templates(struct lf_daemon *d);
/* One line saying how it ended, or that it runs. */
void lf_daemon_describe(struct lf_daemon *d, char *out, size_t size);
void lf_daemon_print_tail(struct lf_daemon *d, FILE *f);

/* ---- live_fuzz.c: the run ---- */

enum lf_target {
    LF_TARGET_SCHED = 0,
    LF_TARGET_WORKER = 1,
};

struct lf_stats {
    uint64_t messages;  /* frames written: the executions */
    uint64_t sequences; /* connections (or link sessions) driven */
    uint64_t replies;   /* envelopes read back */
    uint64_t checks;    /* liveness checks passed */
    uint64_t closed_by_peer;
    uint32_t bodies_sent[128];  /* per body case (below 128), sent */
    uint32_t bodies_heard[128]; /* per body case, received */
    uint32_t error_codes[256];  /* ErrorReply codes seen, by -code */
};

struct lf_run;

/* A step's "waiting for the daemon": after twice as many such steps in a row as sequences
 * run (likely every one of them waiting), the batch pauses a millisecond instead of
 * spinning. */
#define LF_STEP_WAIT 2

/* What a target provides. */
struct lf_target_ops {
    const char *name;
    int (*start)(struct lf_run *run); /* config, key, daemon; 0 or -errno */
    int (*sequence)(struct lf_run *run, unsigned slot, uint64_t index); /* begins one */
    /* 1 more to come, LF_STEP_WAIT more to come but nothing done yet, 0 done, < 0 failure */
    int (*step)(struct lf_run *run, unsigned slot);
    void (*end)(struct lf_run *run, unsigned slot); /* closes what the sequence opened */
    int (*check)(struct lf_run *run, char *why, size_t why_size); /* liveness; 0 alive */
    int (*replay_open)(struct lf_run *run, struct lf_conn *c, const char *kind);
    void (*tick)(struct lf_run *run); /* after every step and replayed action; may be NULL */
    /* Stops the daemon (checked as at the end) and starts a fresh one; 0 or -1 with why. */
    int (*restart)(struct lf_run *run, char *why, size_t why_size);
    /* Stops the daemon: 0, or -1 with why when it stopped badly (lf_daemon_stopped_well). */
    int (*stop)(struct lf_run *run, char *why, size_t why_size);
};

#define LF_MAX_PARALLEL 8

struct lf_run {
    /* options */
    enum lf_target target;
    const char *bin_dir;
    uint64_t seed;
    uint64_t max_messages;
    uint64_t max_seconds;
    unsigned batch;
    unsigned parallel;
    const char *replay_path;
    const char *regress_dir;
    bool verbose;
    const char *log_level;
    char work[256];
    /* shared state */
    const struct lf_target_ops *ops;
    struct gs_proto_auth_key key;
    char key_path[320];
    char config_path[320];
    uint16_t port;
    struct lf_daemon daemon;
    struct lf_rng rng; /* interleaving and batch-level choices */
    struct lf_dict dict;
    struct lf_stats stats;
    struct lf_record rec;
    unsigned next_conn_id;
    uint64_t started_ms;
    unsigned submits; /* since the last clean-up (target sched) */
    Gs__JobSpec *job_templates[8];
    unsigned njob_templates;
    void *target_state; /* the target's own */
};

/* How much of lf_send's damage a message gets, in percent. */
struct lf_damage {
    unsigned mutate; /* structural mutation (lf_mutate) */
    unsigned bytes;  /* byte-level damage to the packed payload (lf_mutate_payload) */
    unsigned stream; /* chunked, duplicated, reordered, or a frame that breaks the stream */
    /* After mutation, before packing: what must hold whatever the mutation did (the
     * worker target keeps launched tasks unprivileged and short); may be NULL. */
    void (*fixup)(Gs__Envelope *env);
};

/*
 * Sends env (owned: freed here) on c, damaged as d says, counting it. Returns 0 when sent
 * (or held back to follow the next frame), 1 when what was written breaks the stream (a
 * truncated, oversized or empty frame, garbage: the caller ends the sequence), or -EPIPE
 * when the peer is gone.
 */
int lf_send(struct lf_run *run, struct lf_rng *r, struct lf_conn *c, Gs__Envelope *env,
            const struct lf_damage *d);
/* Sends whatever c holds back (a reordered frame). */
int lf_flush_held(struct lf_conn *c);
/* live_cli.c: the job templates (parsed job files and an sbatch script, their workdir
 * given); 0 or -errno. */
int lf_cli_init(struct lf_run *run, const char *workdir);
void lf_cli_release(struct lf_run *run);
/* One CLI request (request_id 1-4), valid or now and then any body at all. */
Gs__Envelope *lf_cli_request(struct lf_run *run, struct lf_rng *r);

/* Counts what one envelope is (sent or heard). */
void lf_count_sent(struct lf_run *run, const Gs__Envelope *env);
void lf_count_heard(struct lf_run *run, const Gs__Envelope *env);
/* Writes WORK/NAME with text; 0 or -errno. */
int lf_write_file(const struct lf_run *run, const char *name, const char *text);
/* Removes path and everything under it (no symbolic link followed). */
void lf_remove_tree(const char *path);
/* A free loopback TCP port, or 0. */
uint16_t lf_free_port(void);

extern const struct lf_target_ops lf_target_sched;
extern const struct lf_target_ops lf_target_worker;

#endif
