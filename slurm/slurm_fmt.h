/*
 * slurm_fmt.h: what the Slurm-named views (squeue, sinfo, sacct, scancel, scontrol) print
 * and read the way Slurm does, so that scripts written against Slurm's output parse
 * gsched's unchanged: state codes and names, Slurm's three time layouts, job ids with array
 * elements ("123_4", folded "123_[4-6,9]"), pending and end reasons in Slurm's words, and
 * the -o/--format ("%.18i %-10j") and -O/--Format ("JobID:.10,Name") field specifications
 * with Slurm's padding and truncation.
 *
 * Everything here is a pure function of its arguments (no clock, no daemon, no printing),
 * except the commands' error lines (slurm_error, slurm_opt_error). Thread-safe apart from
 * those. What the commands share beyond printing (requests to gschedd) is in slurm_cmd.h.
 * The state names and codes, the long time layout and local dates are job_print.h's, so the
 * gsched commands and the Slurm ones cannot drift apart.
 */
#ifndef GS_SLURM_SLURM_FMT_H
#define GS_SLURM_SLURM_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/frame.h"

/* --- job states ------------------------------------------------------------------------ */

/* squeue's compact codes: PD R CD F CA TO NF RQ; "?" for anything else. */
const char *slurm_state_code(Gs__JobState state);
/* squeue %T / sacct / scontrol: PENDING RUNNING COMPLETED ... REQUEUED; "UNKNOWN". */
const char *slurm_state_name(Gs__JobState state);
/* A state by name or code, any case ("pd", "Running"). Returns 0 or -EINVAL. */
int slurm_state_parse(const char *text, Gs__JobState *ret_state);
/*
 * A job's state as the views show it: slurm_state_code / slurm_state_name of its state,
 * but "S" / "SUSPENDED" for a suspended job, which the wire keeps RUNNING
 * (cli_job_shown_name).
 */
const char *slurm_job_state_code(const Gs__JobInfo *job);
const char *slurm_job_state_name(const Gs__JobInfo *job);

/*
 * The bit of a state mask that selects suspended jobs. They are RUNNING on the wire, yet
 * Slurm's SUSPENDED is a state of its own: RUNNING's bit (1 << RUNNING) selects only the
 * running jobs that are not suspended, this one only those that are. Above every JobState.
 */
#define SLURM_STATE_SUSPENDED (1u << 31)
/* The bit of mask job's shown state holds: SLURM_STATE_SUSPENDED, else 1 << state. */
uint32_t slurm_job_state_bit(const Gs__JobInfo *job);
/*
 * A comma-separated state list ("PD,r,S", "all"). Sets bit (1 << state) in *ret_mask for
 * each, SLURM_STATE_SUSPENDED for "S" / "SUSPENDED"; "all" sets every bit. Returns 0 or
 * -EINVAL with *ret_bad pointing at the bad word's start (the word runs to the next comma).
 */
int slurm_state_list_parse(const char *list, uint32_t *ret_mask, const char **ret_bad);

/* --- times ------------------------------------------------------------------------------ */

/* squeue/sinfo elapsed and limits: "0:05", "1:02:03", "2-03:04:05". Returns out. */
char *slurm_fmt_secs(uint64_t seconds, char *out, size_t size);
/* scontrol/sacct: "00:00:05", "01:02:03", "2-03:04:05". Returns out. */
char *slurm_fmt_secs_long(uint64_t seconds, char *out, size_t size);
/*
 * A time limit: 0 (none) prints infinite ("UNLIMITED" for squeue, sacct and scontrol,
 * "infinite" for sinfo), else slurm_fmt_secs (long_form: slurm_fmt_secs_long).
 */
char *slurm_fmt_limit(uint64_t seconds, bool long_form, const char *infinite, char *out,
                      size_t size);
/* Local time "2024-05-01T10:00:00"; 0 prints unknown ("N/A", "Unknown", "None"). */
char *slurm_fmt_date(uint64_t ms, const char *unknown, char *out, size_t size);
/*
 * A date as sacct -S/-E take it, in local time: "2024-05-01", "2024-05-01T10:00[:00]",
 * "now", "today"/"midnight" (relative forms such as "now-1days" are not read). now_ms is
 * "now". Returns 0 or -EINVAL.
 */
int slurm_parse_date(const char *text, uint64_t now_ms, uint64_t *ret_ms);

/* --- job ids and arrays ------------------------------------------------------------------- */

/* "42", or "123_4" for an array element (array_job_id _ array_task_id). Returns out. */
char *slurm_job_id(const Gs__JobInfo *job, char *out, size_t size);

#define SLURM_REF_MAX_RANGES 32

/*
 * A job as typed on a Slurm command line: "42", "123_4", "123_[1-3,7]", "123_*", or one
 * component of a heterogeneous job, "42+1". het is false in a zeroed ref, so a ref built
 * as {.id = 42} means the whole job, every component of it.
 */
struct slurm_job_ref {
    uint64_t id;
    size_t nranges; /* 0: the job, or every element of array id */
    uint32_t lo[SLURM_REF_MAX_RANGES], hi[SLURM_REF_MAX_RANGES];
    bool het;            /* "42+K": component het_offset alone (nranges is then 0) */
    uint32_t het_offset; /* K */
};

/*
 * Returns 0 or -EINVAL (not a job id, a bad or empty range, too many ranges, "42+" without
 * digits, a component of an array element "123_4+1").
 */
int slurm_job_ref_parse(const char *text, struct slurm_job_ref *ret);
/*
 * Parses a comma-separated job list ("42,123_4,123_[1,3],42+1": commas inside brackets
 * belong to the range) into refs[*n...], refs holding at most max. On failure the word at
 * fault (cut to bad_size) is in bad: -E2BIG when refs is full, -EINVAL when the word is not
 * a job (or 64 characters or longer); the refs before it stay added. Returns 0, -E2BIG or
 * -EINVAL.
 */
int slurm_job_list_parse(const char *list, struct slurm_job_ref *refs, size_t max, size_t *n,
                         char *bad, size_t bad_size);
/*
 * Whether job (as gschedd lists it, not a component's view) is what ref names: "42" is job
 * 42 or any element of array 42; "123_4" the element of array 123 with task id 4; "42+1"
 * job 42 when it is heterogeneous with a component 1. An ordinary job has no component,
 * not even 0: it shows as "42", never "42+0", so "42+0" names nothing in it (Slurm too
 * knows no "42+0" of a job that is not heterogeneous).
 */
bool slurm_job_ref_match(const struct slurm_job_ref *ref, const Gs__JobInfo *job);

/* s, or Slurm's "(null)" when it is NULL or empty. */
const char *slurm_or_null(const char *s);

/* Appends task ids (ascending) in Slurm's range syntax: {1,2,3,5} -> "1-3,5". 0/-ENOMEM. */
int slurm_fmt_ranges(struct gs_buf *out, const uint32_t *v, size_t n);

struct slurm_het_part;

/*
 * One squeue line: a job, the pending elements of one array folded together (tasks set,
 * ntasks >= 2: "123_[4-6,9]"), or one component of a heterogeneous job (het set: "42+1",
 * job its component seen as a job, slurm_het.h). rows point into the caller's jobs.
 */
struct slurm_row {
    const Gs__JobInfo *job; /* the first (listed) of the folded elements */
    uint32_t *tasks;        /* owned; NULL when not folded */
    size_t ntasks;
    struct slurm_het_part *het; /* owned; NULL but for a component's line */
};

/*
 * Lays out jobs as squeue lines, in their order: with fold, PENDING elements of one array
 * that share a reason fold into the line of the first of them; a heterogeneous job takes
 * a line per component, as Slurm's squeue shows it. Free with slurm_rows_free(). Returns
 * 0 or -ENOMEM.
 */
int slurm_rows_build(Gs__JobInfo *const *jobs, size_t n, bool fold, struct slurm_row **ret_rows,
                     size_t *ret_n);
void slurm_rows_free(struct slurm_row *rows, size_t n);
/* The row's JOBID: slurm_job_id, "123_[4-6,9]" for a folded row, "42+1" for a component.
 * Returns 0/-ENOMEM. */
int slurm_row_id(struct gs_buf *out, const struct slurm_row *row);

/* --- which jobs a command applies to ------------------------------------------------------ */

/* Whether the comma-separated list holds word exactly ("a,b" has "b", not "a,"). */
bool slurm_list_has(const char *list, const char *word);

/* squeue's, sacct's and scancel's filters; NULL lists and 0 masks let everything through. */
struct slurm_filter {
    const struct slurm_job_ref *refs; /* any of them */
    size_t nrefs;
    const char *users;      /* names or uids */
    const char *names;      /* job names */
    const char *partitions; /* partition names */
    const char *accounts;
    const char *qos;
    uint32_t states; /* bit (1 << JobState) */
};

bool slurm_filter_match(const struct slurm_filter *f, const Gs__JobInfo *job);
/*
 * Whether ref names component part of its job (slurm_het.h), for the views that show one
 * line or record per component: the job named whole ("42") or that component ("42+1").
 * part NULL (an ordinary job, whole its job): slurm_job_ref_match(ref, whole).
 */
bool slurm_job_ref_match_part(const struct slurm_job_ref *ref, const Gs__JobInfo *whole,
                              const struct slurm_het_part *part);
/*
 * Whether a line of a job that slurm_filter_match let through shows: an ordinary job's
 * (part NULL) always; component part's when f names no job or some ref matches it as
 * slurm_job_ref_match_part says ("-j 42+1" shows 42+1 alone, "-j 42+1,42" all of 42).
 */
bool slurm_filter_match_part(const struct slurm_filter *f, const struct slurm_het_part *part);
/* Whether f filters on anything besides job ids (users, names, states, ...). */
bool slurm_filter_narrows(const struct slurm_filter *f);

/* --- a job's numbers as the views show them ------------------------------------------------ */

/* Its user's name, else the uid ("1000"; 0 without a user). Returns the name or buf. */
const char *slurm_user_name(const Gs__JobInfo *job, char *buf, size_t size);
/* Nodes: those allocated, else those asked for (at least 1). */
uint32_t slurm_job_nodes(const Gs__JobInfo *job);
/*
 * Seconds run: 0 until started (and while pending again), then to its end, else to now;
 * the time it spent suspended left out, so it stands still while the job is suspended
 * (cli_job_run_s). Time left is its limit less this.
 */
uint64_t slurm_job_elapsed_s(const Gs__JobInfo *job, uint64_t now_ms);
/*
 * Its end time; for a running job with a limit, when the limit falls (as Slurm): its start
 * plus its limit plus the time it was suspended before. While it is suspended that is the
 * end it had when suspended; it moves on when it resumes, as Slurm's does. 0 unknown.
 */
uint64_t slurm_job_end_ms(const Gs__JobInfo *job);
/* Appends the memory per node asked for ("16G"), "0" when none. 0/-ENOMEM. */
int slurm_job_mem(struct gs_buf *out, const Gs__JobInfo *job);
/* Appends its trackable resources: "cpu=8,mem=16G,node=2,billing=8,gres/gpu=4". 0/-ENOMEM. */
int slurm_job_tres(struct gs_buf *out, const Gs__JobInfo *job);
/* Why an action on one job failed: gschedd's message, else strerror of its code. */
const char *slurm_result_message(const Gs__JobActionResult *res);

/* --- reasons and node lists -------------------------------------------------------------- */

/*
 * The reason in Slurm's words (squeue %r, scontrol Reason=): for a pending job gsched's
 * reason mapped ("Held" -> JobHeldUser, "" -> None; Resources, Priority, Dependency,
 * DependencyNeverSatisfied, JobArrayTaskLimit, BeginTime pass); for an ended one why it
 * ended (NonZeroExitCode, RaisedSignal:9(Killed), TimeLimit, NodeDown), else "None".
 */
const char *slurm_reason(const Gs__JobInfo *job, char *buf, size_t size);
/* Appends the allocation's node names as a compressed hostlist ("n[1-3]"). 0/-ENOMEM. */
int slurm_alloc_hostlist(struct gs_buf *out, Gs__NodeAllocation *const *alloc, size_t n);
/*
 * squeue's NODELIST(REASON): the nodes of a running (or completed, cancelled, node-failed)
 * job; "(Reason)" for a pending, failed or timed-out one. 0/-ENOMEM.
 */
int slurm_nodelist_reason(struct gs_buf *out, const Gs__JobInfo *job);

/* --- node states -------------------------------------------------------------------------- */

/* Slurm's node states, busiest first (the order sinfo's lines of one partition come in). */
enum slurm_node_state {
    SLURM_NODE_MIX,
    SLURM_NODE_ALLOC,
    SLURM_NODE_IDLE,
    SLURM_NODE_DRNG,
    SLURM_NODE_DRAIN,
    SLURM_NODE_DOWN,
    SLURM_NODE_UNK,
    SLURM_NODE_MAINT, /* up, in an active Flags=MAINT reservation */
    SLURM_NODE_NSTATES
};

/*
 * gsched's node mapped onto Slurm's states: UP with every core allocated is alloc (GPUs
 * decide for a node without cores), with some mix, with none idle; DRAINING drng, DRAINED
 * drain, DOWN down; NULL (configured, never registered) unk.
 */
enum slurm_node_state slurm_node_state(const Gs__NodeInfo *node);
/* The node named name in nodes, or NULL (configured in a partition, never registered). */
const Gs__NodeInfo *slurm_find_node(const Gs__NodesReply *nodes, const char *name);
/* sinfo %t: "mix" "alloc" "idle" "drng" "drain" "down" "unk" "maint". */
const char *slurm_node_state_short(enum slurm_node_state s);
/* sinfo %T: "mixed" "allocated" "idle" "draining" "drained" "down" "unknown" "maint". */
const char *slurm_node_state_long(enum slurm_node_state s);
/* scontrol State=: "MIXED" "ALLOCATED" "IDLE" "MIXED+DRAIN" "IDLE+DRAIN" "DOWN+NOT_RESPONDING";
 * for a node in maintenance, what it would be otherwise then "+MAINT" (into buf). */
const char *slurm_node_state_scontrol(const Gs__NodeInfo *node, char *buf, size_t size);

/* --- -o / -O field specifications ---------------------------------------------------------- */

/* A field a command can print: its -o letter (0: none), its -O name, its header. */
struct slurm_field {
    char letter;
    const char *name;
    const char *header;
};

#define SLURM_WIDTH_AUTO (-1) /* "%#P": the caller sets the width after a pass over rows */

/* A literal (field < 0) or a field with width (0: as wide as its value) and justification. */
struct slurm_item {
    int field; /* index into the command's field table, or -1 for literal text */
    int width;
    bool right;
    char *text; /* literal text, or -O's suffix after the field (owned, may be NULL) */
};

struct slurm_format {
    struct slurm_item *items;
    size_t n;
};

/*
 * Parses a -o format: literal text and "%[.|-][#|size]letter" specs ("%%" is a literal "%").
 * On -EINVAL writes why ("invalid field 'z'", "'%' at the end") into why. 0/-EINVAL/-ENOMEM.
 */
int slurm_format_parse(const char *spec, const struct slurm_field *fields, size_t nfields,
                       struct slurm_format *ret, char *why, size_t why_size);
/*
 * Parses a -O format: comma-separated "name[:[.][size][suffix]]", names any case, size 20
 * when not given (default_width). 0/-EINVAL (why says which)/-ENOMEM.
 */
int slurm_format_parse_names(const char *spec, const struct slurm_field *fields, size_t nfields,
                             int default_width, struct slurm_format *ret, char *why,
                             size_t why_size);
void slurm_format_release(struct slurm_format *f);
/* Whether the format shows field. */
bool slurm_format_has(const struct slurm_format *f, int field);

/* Appends value padded (or cut) to width, right-justified when right; width 0: as is. */
int slurm_cell(struct gs_buf *out, const char *value, int width, bool right);

/* Appends field's value for the line being printed. Returns 0 or < 0. */
typedef int (*slurm_value_fn)(void *ctx, int field, struct gs_buf *out);

/*
 * Appends one line (with '\n') of f: each field's value (value == NULL: its header) cut
 * or padded as the item says, literal text as is. Returns 0 or < 0.
 */
int slurm_format_line(const struct slurm_format *f, const struct slurm_field *fields,
                      slurm_value_fn value, void *ctx, struct gs_buf *out);

/* --- sacct's columns ----------------------------------------------------------------------- */

/*
 * Appends value in a sacct column: width > 0 right-justified, < 0 left, cut to |width|
 * with a '+' as the last character when longer; then a blank. Returns 0 or -ENOMEM.
 */
int slurm_sacct_cell(struct gs_buf *out, const char *value, int width);

/* --- the commands' errors -------------------------------------------------------------------- */

/* Prints "CMD: error: message" to stderr and returns 1, Slurm's status for every failure. */
int slurm_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * For getopt_long's failures (called with opterr 0 and an optstring starting with ':'): c
 * is what it returned ('?' or ':'), opt its optopt, arg argv[optind - 1]. Prints GNU
 * getopt's line ("CMD: unrecognized option '--x'") and "Try "CMD --help" ..."; returns 1.
 */
int slurm_opt_error(const char *cmd, int c, int opt, const char *arg);

#endif
