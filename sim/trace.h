/*
 * trace.h: what gsched-simulate replays: a cluster (nodes with GPUs, cores, memory, a network
 * switch and a GPU link layout) and a list of jobs (submit time, run time on a
 * well-connected placement, shape, account), read from public GPU-cluster traces.
 *
 * The readers (trace_tiresias.c, trace_openb.c, trace_philly.c, cluster_file.c) append to
 * one struct gs_sim_trace; trace.c then sorts the jobs by submit time, keeps the first N
 * nodes (--nodes), compresses arrivals (--load) and spreads jobs wider than a node over
 * whole nodes. Every time is in milliseconds from the trace's first submit. Problems with
 * a file are reported as "FILE:LINE: message" lines appended to an error buffer.
 *
 * The trace owns its arrays and strings; gs_sim_trace_release() frees them. Pure data: no
 * scheduler state, no clock. Single-threaded.
 */
#ifndef GS_SIM_TRACE_H
#define GS_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* A node's GPU interconnect (layout.h builds the link matrix from it). */
enum gs_sim_links {
    GS_SIM_LINKS_NVSWITCH = 0, /* every pair over NVLink through NVSwitch */
    GS_SIM_LINKS_PAIRS,        /* NVLink pairs (0-1, 2-3, ...), PCIe between them */
    GS_SIM_LINKS_PCIE,         /* PCIe only: pairs share a switch, halves a socket */
};

#define GS_SIM_NODE_NAME_MAX 48

struct gs_sim_node {
    char name[GS_SIM_NODE_NAME_MAX];
    uint32_t ngpus;
    uint32_t ncores;
    uint64_t mem_mib;
    int switch_id; /* network switch, from 1 */
    enum gs_sim_links links;
};

struct gs_sim_job {
    uint64_t submit_ms;
    uint64_t duration_ms; /* its run time on a well-connected placement, >= 1000 */
    uint32_t gpus;        /* in all */
    uint32_t cores;       /* in all, >= 1 */
    uint64_t mem_mib;     /* in all; 0: no memory request */
    /* Set by gs_sim_trace_shape(): */
    uint32_t nodes;
    uint32_t gpus_per_node;
    uint32_t cores_per_node;
    uint64_t mem_per_node_mib;
    uint32_t account; /* index into the trace's accounts */
    uint64_t key;     /* hash of its name in the trace, for --accounts N */
    uint32_t line;    /* where it was read */
    bool impossible;  /* no set of nodes of the cluster could ever hold it */
    bool urgent;      /* QOS "urgent" (tier 1) under the -preempt policies (mark_urgent) */
    uint32_t dataset; /* the dataset it reads (assign_datasets; --datasets) */
};

struct gs_sim_trace {
    struct gs_sim_node *nodes;
    size_t nnodes, nodes_cap;
    struct gs_sim_job *jobs;
    size_t njobs, jobs_cap;
    char **accounts; /* owned names */
    size_t naccounts, accounts_cap;
    size_t skipped; /* trace lines with no run time to replay (never scheduled) */
};

void gs_sim_trace_init(struct gs_sim_trace *t);
void gs_sim_trace_release(struct gs_sim_trace *t);

/* Appends a node (copied) / a job (copied). Return 0 or -ENOMEM. */
int gs_sim_trace_add_node(struct gs_sim_trace *t, const struct gs_sim_node *node);
int gs_sim_trace_add_job(struct gs_sim_trace *t, const struct gs_sim_job *job);
/* The index of the account named (added when new; characters other than letters, digits,
 * ".", "_" and "-" made "_", as gsched.toml wants one word), or -ENOMEM. */
int gs_sim_trace_account(struct gs_sim_trace *t, const char *name);
/* FNV-1a of len bytes of s: a job's key. */
uint64_t gs_sim_hash(const char *s, size_t len);

/*
 * Replaces the accounts by n accounts "acct0".."acct{n-1}", each job going to the one its
 * key (mixed with seed) hashes to. Returns 0, -EINVAL for n == 0, -ENOMEM.
 */
int gs_sim_trace_hash_accounts(struct gs_sim_trace *t, uint32_t n, uint64_t seed);

/*
 * Marks about share (0..1) of the jobs urgent, each by its key mixed with seed (a mix other
 * than the accounts' hash, so urgency does not follow the account): the same jobs whatever
 * the cluster, --load or --nodes. Returns how many are marked.
 */
size_t gs_sim_trace_mark_urgent(struct gs_sim_trace *t, double share, uint64_t seed);

/*
 * Each job's dataset, 0..datasets-1 (datasets >= 1): its account's, the accounts hashed
 * onto them with seed (a mix of its own), so a model's jobs read one dataset.
 */
void gs_sim_trace_assign_datasets(struct gs_sim_trace *t, uint32_t datasets, uint64_t seed);

/* Sorts the jobs by submit time (ties by trace line) and makes the first submit time 0. */
void gs_sim_trace_sort(struct gs_sim_trace *t);
/* Keeps the first n nodes (n == 0 or n >= nnodes: all). */
void gs_sim_trace_keep_nodes(struct gs_sim_trace *t, size_t n);
/* Scales the gaps between submits by 1/load (load > 0; jobs sorted). */
void gs_sim_trace_scale_load(struct gs_sim_trace *t, double load);
/*
 * Gives each job its shape on this cluster: on one node when it fits the largest node's
 * GPUs, else over the fewest nodes that split it evenly (12 GPUs on 8-GPU nodes: 2 x 6),
 * its cores and memory divided alike (rounded up). A job needing more nodes than there
 * are is marked impossible (the simulator also asks the cluster). Returns the number of
 * impossible jobs.
 */
size_t gs_sim_trace_shape(struct gs_sim_trace *t);
/* GPUs of all nodes. */
uint64_t gs_sim_trace_gpus(const struct gs_sim_trace *t);

/*
 * Line reader for the trace files: calls fn with each data line split at sep (up to
 * maxf fields; the line buffer is the reader's), after skip_header header lines. fn
 * returns 0 or a negative errno, having appended "PATH:LINE: message" to err (use
 * gs_sim_lines_error). Returns 0, fn's error, or -errno when the file cannot be read
 * (named in err).
 */
struct gs_sim_lines {
    const char *path;
    uint32_t line;
    struct gs_buf *err;
};
typedef int (*gs_sim_line_fn)(void *data, struct gs_sim_lines *at, char **fields, int nfields);
int gs_sim_read_lines(const char *path, char sep, int skip_header, int maxf, gs_sim_line_fn fn,
                      void *data, struct gs_buf *err);
/* Appends "PATH:LINE: message\n" to at->err and returns code. */
int gs_sim_lines_error(struct gs_sim_lines *at, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Field parsers: 0 or -EINVAL (and a message naming what) for a malformed number. */
int gs_sim_field_u64(struct gs_sim_lines *at, const char *text, const char *what, uint64_t *ret);
int gs_sim_field_double(struct gs_sim_lines *at, const char *text, const char *what, double *ret);

#endif
