/*
 * pmi_internal.h: what the PMI server's parts share (worker/pmi.h is the server's face):
 * pmi.c keeps the steps, their key/value spaces, the connections and the barriers; pmi1.c
 * and pmi2.c read requests in the PMI-1 and PMI-2 wire protocols and answer them. A
 * connection starts in PMI-1 (even a PMI-2 client sends its first request, init, that way)
 * and turns PMI-2 when that init asks for version 2.
 */
#ifndef WRK_PMI_INTERNAL_H
#define WRK_PMI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "worker/pmi.h"

#define PMI_LINE_MAX (64u << 10)  /* the longest request either protocol takes */
#define PMI_BYTES_MAX (64u << 20) /* a step's keys and values, node attributes too */
/* Keys a step holds, its space's and this node's new puts each; node attributes and waiting
 * gets, each. Far past what MPI libraries put (a few per rank), and a bound on the work a
 * task can make the root-run worker's loop do for one request. */
#define PMI_KEYS_MAX (1u << 20)
#define PMI_ATTRS_MAX 4096u
/* The longest value a PMI-1 get_maxes promises (MPICH cuts longer values into several keys
 * itself); PMI_process_mapping longer than this is not given. */
#define PMI_VALLEN_MAX 1024
/* The length before each PMI-2 request and answer: 6 decimal digits, space padded. */
#define PMI2_LEN_SIZE 6

/* One key and its value, in one allocation (key first). */
struct pmi_kv {
    char *key;
    char *value;
    uint64_t order; /* later puts win */
};

struct pmi_step;

/* A local rank's connection: the worker's end of its socket pair. */
struct pmi_conn {
    uv_pipe_t pipe;
    struct wrk_pmi *p;
    struct pmi_step *st; /* NULL once its step is gone */
    struct pmi_conn *next;
    uint32_t rank;
    int version; /* of the wire protocol: 1, or 2 from a PMI-2 init on */
    bool in_barrier;
    bool in_mcmd;         /* PMI-1: reading a multi-line request to its endcmd */
    char fence_thrid[32]; /* PMI-2: the kvs-fence's thrid, echoed in its answer */
    struct gs_buf in;
    char rbuf[4096];
};

/* A PMI-2 info-getnodeattr waiting for its key to be put on this node. */
struct pmi_wait {
    struct pmi_conn *c;
    char *key;
    char thrid[32];
};

struct pmi_step {
    struct pmi_step *next;
    uint64_t job_id;
    uint32_t step, attempt;
    uint32_t size;       /* ranks in the step */
    uint32_t nlocal;     /* of them here */
    uint32_t in_barrier; /* local ranks in the barrier */
    uint32_t seq;        /* the next fence's number */
    bool fencing;        /* the part is with gschedd */
    char kvsname[48];
    char *mapping; /* PMI_process_mapping; NULL when too long to give */
    uint32_t *rank_nodes;
    uint32_t here;
    struct pmi_conn *conns;
    struct pmi_kv *kv; /* sorted by key, unique */
    size_t nkv, cap_kv;
    struct pmi_kv *puts; /* this node's since the last barrier */
    size_t nputs, cap_puts;
    struct pmi_kv *attrs; /* PMI-2 node attributes, this node's alone */
    size_t nattrs, cap_attrs;
    struct pmi_wait *waits;
    size_t nwaits, cap_waits;
    size_t bytes; /* of keys and values held */
    uint64_t order;
};

struct wrk_pmi {
    uv_loop_t *loop;
    wrk_pmix_fence_cb fence;
    wrk_pmix_abort_cb abort_cb;
    void *data;
    struct pmi_step *steps;
    size_t handles; /* connections not yet closed */
    bool closing;
};

/* A request's key=value pairs, as either protocol's reader splits them (in place). */
#define PMI_ARGS_MAX 32
struct pmi_args {
    size_t n;
    const char *k[PMI_ARGS_MAX];
    const char *v[PMI_ARGS_MAX];
};

/* pmi.c */

/* The value of key in a, or NULL. */
const char *pmi_arg(const struct pmi_args *a, const char *key);
/* Makes room in *arr (of elem-byte entries, *cap of them) for one more after n, doubling;
 * more than max refused. 0, -ENOSPC or -ENOMEM. */
int pmi_grow(void *arr, size_t *cap, size_t n, size_t elem, size_t max);

/* Sends len bytes of text to c as they are; a failure closes c. */
void pmi_write(struct pmi_conn *c, const char *text, size_t len);
void pmi_conn_close(struct pmi_conn *c);
/* A rank's put into the step's space, given to the others at the next barrier: 0, or < 0
 * with *why saying what is wrong with it. */
int pmi_put(struct pmi_step *st, const char *key, const char *value, const char **why);
/* A key's value (PMI_process_mapping the step's), or NULL. */
const char *pmi_get(const struct pmi_step *st, const char *key);
/* c's rank enters the barrier; the last local rank to come sends the node's part. */
void pmi_barrier_in(struct pmi_conn *c);
/* A rank's PMI_Abort: its step's tasks end here and elsewhere. */
void pmi_abort(struct pmi_conn *c, int code, const char *msg);
/* Makes kv from key and value; 0 or -ENOMEM. */
int pmi_kv_make(struct pmi_kv *kv, const char *key, size_t klen, const char *value, size_t vlen,
                uint64_t order);
void pmi_kv_free(struct pmi_kv *v, size_t n);

/* pmi1.c: one request line (its newline cut, the text changed in place); the answer to a
 * barrier (code 0, or why it failed). */
void pmi1_request(struct pmi_conn *c, char *line);
void pmi1_fence_out(struct pmi_conn *c, int code);

/* pmi2.c: one request's text (after its length, NUL-terminated, changed in place); the
 * answer to a kvs-fence; c going away (its waits end). */
void pmi2_request(struct pmi_conn *c, char *text, size_t len);
void pmi2_fence_out(struct pmi_conn *c, int code);
void pmi2_conn_gone(struct pmi_conn *c);

#endif
